"""Where a workflow run's time goes: wall time, total CPU, and the CPU inside the jobs.

Runs ``snakemake --cores CORES --config preset=PRESET`` from a fresh working directory
(the repository's ``config.yaml``) and reports:

* **wall** and **total CPU** (user + system of Snakemake and every process it started,
  from ``wait4``'s resource usage);
* **CPU inside the jobs' work**: what the ``bbrl batch`` jobs spent inside their units
  (training, trajectories, compiling or loading kernels: the last line of each job's log)
  and what ``bbrl report`` spent (its log's last line), against the rest (process
  start-up, imports, Snakemake's own scheduling and DAG);
* the number of jobs per rule kind.

A first pass (default; ``--no-warm`` skips it) runs the same preset once, untimed, so
that numba's cache and the cost model's probes hold this source tree's entries, as the
goal states ("with numba's cache warm"); its results are deleted before the timed run.
``--source DIR`` times another checkout (its ``.venv``), e.g. the tree
before a change, on the same machine in the same session:

    .venv/bin/python benchmarks/bench_workflow.py --preset quick
    .venv/bin/python benchmarks/bench_workflow.py --preset quick --source /work/base

Writes ``benchmarks/results/workflow.json`` (one record per preset and source, replacing
an older one of the same pair).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "workflow.json"


def timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> dict[str, float]:
    """Run ``cmd``; its wall time and the CPU of it and all its descendants."""
    t0 = time.perf_counter()
    with log.open("w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed: see {log}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime}


UNIT_CPU = re.compile(r"CPU ([\d.]+) s in units, ([\d.]+) s outside them")
REPORT_CPU = re.compile(r"^bbrl report: .* CPU ([\d.]+) s$", re.M)


def inside_jobs(results: Path) -> dict[str, float]:
    """CPU seconds the jobs report: inside the units of ``bbrl batch`` jobs, outside them
    (their start-up), and the report's."""
    units = startup = report = 0.0
    n = 0
    for log in (results / "logs").rglob("*.log"):
        text = log.read_text(errors="replace")
        m = UNIT_CPU.search(text)
        if m:
            units += float(m.group(1))
            startup += float(m.group(2))
            n += 1
    rlog = results / "logs" / "report.log"
    if rlog.exists():
        found = REPORT_CPU.findall(rlog.read_text(errors="replace"))
        report = float(found[-1]) if found else 0.0
    return {"batch_jobs": n, "units_cpu_s": units, "batch_startup_cpu_s": startup,
            "report_cpu_s": report}


def jobs_of(snakemake_log: str) -> dict[str, int]:
    m = re.search(r"job\s+count\n-+\s+-+\n(.*?)\ntotal\s+(\d+)", snakemake_log, re.S)
    out: dict[str, int] = {}
    if m:
        for line in m.group(1).splitlines():
            name, k = line.split()
            kind = re.sub(r"_\d+$", "", name)
            kind = "train" if kind.startswith("train_") else (
                "run" if kind.startswith("run_") else kind)
            out[kind] = out.get(kind, 0) + int(k)
        out["total"] = int(m.group(2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--source", type=Path, default=ROOT,
                    help="the checkout to time (its Snakefile, config.yaml and .venv)")
    ap.add_argument("--no-warm", dest="warm", action="store_false",
                    help="do not fill numba's cache with a tiny run first")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    args = ap.parse_args()
    src = args.source.resolve()
    snakemake = src / ".venv" / "bin" / "snakemake"
    env = dict(os.environ)
    env["PATH"] = f"{snakemake.parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NUMBA_CACHE_DIR", None)  # the checkout's own (keyed by its sources)
    wd = Path(tempfile.mkdtemp(prefix="bbrl-bench-workflow-"))
    try:
        base = [str(snakemake), "-s", str(src / "Snakefile"), "--directory", str(wd),
                "--configfile", str(src / "config.yaml"), "--cores", str(args.cores)]
        if args.warm:
            timed(base + ["--config", f"preset={args.preset}"], wd, env, wd / "warm.log")
            shutil.rmtree(wd / "results", ignore_errors=True)
            shutil.rmtree(wd / ".snakemake", ignore_errors=True)
        log = wd / "run.log"
        t = timed(base + ["--config", f"preset={args.preset}"], wd, env, log)
        inside = inside_jobs(wd / "results")
        jobs = jobs_of(log.read_text(errors="replace"))
    finally:
        if not args.keep:
            shutil.rmtree(wd, ignore_errors=True)
    work = inside["units_cpu_s"] + inside["report_cpu_s"]
    rec = {
        "preset": args.preset, "source": str(src), "cores": args.cores,
        "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
        "loadavg_before": os.getloadavg()[0], **t, **inside, "jobs": jobs,
        "work_cpu_s": work, "cpu_over_work": t["cpu_s"] / work if work else None,
    }
    print(json.dumps(rec, indent=2))
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    old = [r for r in old if (r["preset"], r["source"]) != (args.preset, str(src))]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(old + [rec], indent=2) + "\n")


if __name__ == "__main__":
    main()
