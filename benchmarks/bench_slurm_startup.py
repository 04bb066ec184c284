"""What a SLURM job pays before and around its work: its Snakemake and its ``bbrl`` process.

Brings up the single-node Slurm cluster of the tests (``tests/slurm_cluster.py``: munged,
slurmctld and slurmd on loopback, installing the Debian packages when missing), runs a
preset (default ``tiny``) with ``--profile slurm`` plus the tests' override (fast status
checks), and for every job that ran a ``bbrl batch`` (the ``train_*``, ``run_*`` and
``validate_*`` jobs) compares three times:

* **job**: the job's wall time as Slurm records it (start to end, whole seconds);
* **bbrl**: the ``bbrl batch`` process's wall time, from its own log line
  (``bbrl batch: X s wall, CPU Y s``);
* **units**: the time inside its units (``N units done ... in Z s``).

``job - bbrl`` is what the job's own Snakemake costs (``srun``, Python, evaluating the
Snakefile and building the plan, checking the job's inputs and outputs); ``bbrl - units``
is the ``bbrl`` process's start-up (imports, reading the spec). Their sum is the job's
start-up, stated against ``chunk_budget_minutes`` (the longest a job is planned to run)
and ``bundle_minutes`` (what a job of cheap units is packed up to).

    .venv/bin/python benchmarks/bench_slurm_startup.py            # root: installs Slurm

Writes ``benchmarks/results/slurm_startup.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "slurm_startup.json"
sys.path.insert(0, str(ROOT / "tests"))

BBRL_WALL = re.compile(r"^bbrl batch: ([\d.]+) s wall", re.M)
UNITS_WALL = re.compile(r"units done \(\d+ computed\) in ([\d.]+) s")


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tiny")
    args = ap.parse_args()

    import yaml

    from bbrlcore.plan import DEFAULTS
    from slurm_cluster import SingleNodeSlurm
    from test_slurm import _workflow_copy

    work = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    wf = _workflow_copy(work / "wf")
    res = work / "results"
    cfg = yaml.safe_load((wf / "config.yaml").read_text())
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    cluster = SingleNodeSlurm(mem_mb=8000).start()
    try:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "slurm",
                            "--profile", "slurm-test", "--config", f"preset={args.preset}",
                            f"results_dir={res}"], cwd=wf, env=env, capture_output=True,
                           text=True)
        wall = time.perf_counter() - t0
        records = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%S|%e|%k"],
                                 capture_output=True, text=True).stdout
    finally:
        cluster.stop()
    if r.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    jobs = []
    for line in records.splitlines():
        jid, state, start, end, comment = line.split("|", 4)
        m = re.match(r"rule_((?:train|run|validate)_[A-Za-z0-9_]+?)(?:_wildcards.*)?$",
                     comment.strip())
        if state != "COMPLETED" or not m:
            continue
        log = (res / "logs" / ("training" if m[1].startswith("train") else "runs")
               / f"{m[1]}.log")
        if not log.exists():
            log = next(res.glob(f"logs/*/{m[1]}.log"), log)
        text = log.read_text() if log.exists() else ""
        bw, uw = BBRL_WALL.search(text), UNITS_WALL.search(text)
        if not (bw and uw):
            continue
        job = _seconds(end) - _seconds(start)
        jobs.append({"job": m[1], "slurm_id": int(jid), "job_wall_s": job,
                     "bbrl_wall_s": float(bw[1]), "units_wall_s": float(uw[1]),
                     "snakemake_in_job_s": round(job - float(bw[1]), 2),
                     "bbrl_startup_s": round(float(bw[1]) - float(uw[1]), 2)})
    if not jobs:
        raise SystemExit(f"no bbrl batch job found in Slurm's records:\n{records}")
    n = len(jobs)
    startup = sum(j["snakemake_in_job_s"] + j["bbrl_startup_s"] for j in jobs) / n
    worst = max(j["snakemake_in_job_s"] + j["bbrl_startup_s"] for j in jobs)
    budget = cfg.get("chunk_budget_minutes", DEFAULTS["chunk_budget_minutes"]) * 60
    bundle = cfg.get("bundle_minutes", DEFAULTS["bundle_minutes"]) * 60
    out = {
        "preset": args.preset,
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": platform.node(),
        "loadavg_before": os.getloadavg()[0],
        "workflow_wall_s": round(wall, 1),
        "jobs": jobs,
        "mean_startup_s": round(startup, 2),
        "max_startup_s": round(worst, 2),
        "mean_snakemake_in_job_s": round(sum(j["snakemake_in_job_s"] for j in jobs) / n, 2),
        "mean_bbrl_startup_s": round(sum(j["bbrl_startup_s"] for j in jobs) / n, 2),
        "chunk_budget_s": budget,
        "bundle_s": bundle,
        "max_startup_pct_of_chunk_budget": round(100 * worst / budget, 2),
        "max_startup_pct_of_bundle": round(100 * worst / bundle, 2),
    }
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{n} bbrl jobs under Slurm: start-up {startup:.1f} s on average (its Snakemake "
          f"{out['mean_snakemake_in_job_s']:.1f} s, bbrl {out['mean_bbrl_startup_s']:.1f} s)"
          f", at most {worst:.1f} s: {out['max_startup_pct_of_chunk_budget']:.2f} % of the "
          f"chunk budget ({budget / 60:.0f} min), {out['max_startup_pct_of_bundle']:.1f} % "
          f"of a bundle ({bundle / 60:.0f} min); wrote {RESULTS}")


if __name__ == "__main__":
    main()
