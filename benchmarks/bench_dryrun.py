"""Start-up time of the workflow: ``snakemake -n`` on the full configuration.

Every Snakemake invocation parses the Snakefile and builds the DAG first (and so does
every job of ``--profile slurm``, and every submission from a login node): the plan, the
cost model, one estimate per (experiment, agent) to size the chunks, then Snakemake's own
DAG of the ~3,300 jobs. This times ``snakemake -n --quiet rules`` in the repository
(``config.yaml`` as it is, no preset), best of ``--repeat``, in two cases:

* **warm**: the caches of ``$XDG_CACHE_HOME/bbrlcore`` (the fitted cost model, the
  memoised BFS3 and SBOSS cost probes) already hold this source tree's entries (one
  untimed run fills them);
* **refit**: the fitted cost model's cache (``cost-*.pkl``) absent, the probes' kept, as
  after new benchmark records (each pass on a fresh copy of the cache directory);
* **cold**: each pass starts with an empty cache directory (a fresh ``XDG_CACHE_HOME``),
  as after any change of bbrlcore's sources, which key every cache.

numba's cache is kept in all three (``NUMBA_CACHE_DIR`` of the warm case): compiling the
kernels after a change of the sources is another matter.

    .venv/bin/python benchmarks/bench_dryrun.py [--repeat 3] [--only warm]

Writes ``benchmarks/results/dryrun.json`` (``"calibration": false``: not a record of the
cost model). ``--dump FILE`` instead writes every job of the dry run (rule, wildcards,
input, output, log, params, resources, shell command) as sorted JSON lines, to check that
a change of the planning code leaves the job list exactly as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
CMD = ["-n", "--quiet", "rules"]


def _snakemake() -> str:
    here = Path(sys.executable).parent / "snakemake"
    return str(here) if here.exists() else "snakemake"


def _caches() -> tuple[str, Path, str]:
    """numba's cache directory, bbrlcore's cache directory and the sources' digest (as
    the caches' names hold it)."""
    code = ("import os, bbrlcore as b; print(os.environ['NUMBA_CACHE_DIR']); "
            "print(b.cache_base()); print(b.source_digest()[:12])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    numba_dir, base, digest = out.stdout.split()
    return numba_dir, Path(base), digest


def dry_run(env: dict[str, str]) -> tuple[float, float, int]:
    """One ``snakemake -n``: (wall s, CPU s of the child, number of jobs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([_snakemake(), *CMD], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"snakemake -n failed:\n{proc.stderr[-3000:]}")
    m = re.search(r"^total\s+(\d+)\s*$", proc.stdout + proc.stderr, re.M)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(m.group(1)) if m else -1


def measure(case: str, repeat: int) -> dict:
    env = dict(os.environ)
    dry_run(env)  # fills the caches (and numba's)
    numba_dir, base, digest = _caches()
    env["NUMBA_CACHE_DIR"] = numba_dir
    walls, cpus, jobs = [], [], -1
    for i in range(repeat):
        tmp = None
        if case != "warm":
            tmp = tempfile.mkdtemp(prefix="bbrl-dryrun-cache-")
            env["XDG_CACHE_HOME"] = tmp
            if case == "refit":  # the probes' caches, not the fitted model's
                for d in base.glob(f"*-{digest}"):
                    if d.is_dir() and not d.name.startswith("numba-"):
                        shutil.copytree(d, Path(tmp) / "bbrlcore" / d.name)
        wall, cpu, jobs = dry_run(env)
        walls.append(round(wall, 2))
        cpus.append(round(cpu, 2))
        print(f"{case} pass {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, {jobs} jobs",
              flush=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"case": case, "jobs": jobs, "best_s": min(walls), "worst_s": max(walls),
            "wall_s": walls, "cpu_s": cpus, "repeat": repeat}


def dump(path: str) -> None:
    """Every job of the dry run, one sorted JSON line each (runs Snakemake in-process)."""
    from snakemake import cli
    from snakemake.jobs import Job

    rows: list[str] = []

    def record(job, *args, **kwargs):
        def named(nl):
            return {k: (list(v) if isinstance(v, list) else v) for k, v in nl.items()}

        rows.append(json.dumps({
            "rule": job.rule.name,
            "wildcards": dict(job.wildcards_dict),
            "input": sorted(map(str, job.input)),
            "output": sorted(map(str, job.output)),
            "log": sorted(map(str, job.log)),
            "params": named(job.params),
            "resources": named(job.resources),
            "threads": job.threads,
            "priority": job.priority,
            "shellcmd": job.shellcmd,
        }, sort_keys=True, default=repr))

    Job.log_info = record
    os.chdir(ROOT)
    try:
        cli.main(CMD)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    rows += estimates()
    Path(path).write_text("".join(r + "\n" for r in sorted(rows)))
    print(f"{len(rows)} jobs and estimates -> {path}")


def estimates() -> list[str]:
    """The plan's unrounded estimates (seconds per trajectory, offline seconds, chunks and
    time limits of the first three attempts) of every (experiment, agent) and (prior,
    agent), as JSON lines (``repr`` of the floats: exact)."""
    from bbrlcore import plan as bbrl_plan
    from bbrlcore.plan import probe

    plan = bbrl_plan.load(ROOT / "config.yaml")
    probe.ensure(plan, plan.config["results_dir"], run=False)
    out = []
    for exp in plan.experiments:
        for a in plan.agents_of(exp):
            spt = plan.seconds_per_trajectory(exp, a)
            out.append(json.dumps({
                "estimate": "run", "experiment": exp.name, "agent": a.key,
                "spt": repr(spt), "chunks": plan.chunks(exp, a),
                "runtime": [plan.runtime_minutes(60.0 * plan.run_minutes(exp, a, b - s), k)
                            for s, b in plan.chunks(exp, a) for k in (1, 2, 3)],
            }, sort_keys=True))
    for a in plan.agents:
        for prior in plan.priors_of(a):
            off = plan.offline_seconds(prior, a)
            out.append(json.dumps({
                "estimate": "train", "prior": prior, "agent": a.key, "offline": repr(off),
                "runtime": [plan.runtime_minutes(off, k) for k in (1, 2, 3)],
            }, sort_keys=True))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["warm", "refit", "cold"])
    ap.add_argument("--dump", metavar="FILE", help="write every job of the dry run, and stop")
    args = ap.parse_args()
    if args.dump:
        dump(args.dump)
        return
    cases = [args.only] if args.only else ["warm", "refit", "cold"]
    rows = [measure(c, args.repeat) for c in cases]
    out = {
        "meta": {
            "calibration": False,  # not a record of the cost model
            "what": "snakemake -n --quiet rules, full config.yaml, best of repeat",
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
        },
        "rows": rows,
    }
    try:
        import snakemake

        out["meta"]["snakemake"] = snakemake.__version__
    except (ImportError, AttributeError):
        pass
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dryrun.json").write_text(json.dumps(out, indent=1) + "\n")
    for r in rows:
        print(f"{r['case']}: {r['jobs']} jobs, best {r['best_s']:.2f} s "
              f"(worst {r['worst_s']:.2f} s of {r['repeat']})")


if __name__ == "__main__":
    main()
