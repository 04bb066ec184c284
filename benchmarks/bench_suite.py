"""The test suite's time as CI sees it: ``bash .ci/run`` on a clean clone (issue 35's goal:
``make test`` within 15 minutes on 2 cores, every test run, Slurm tests included).

Clones the repository (a branch or commit, default the current ``HEAD``) into a temporary
directory beside a link to ``../shared`` (what the tests read), then runs ``CI=true bash
.ci/run`` there under ``/usr/bin/time -v`` with ``--durations=0``, and records:

* the whole run's wall time (install included: a fresh ``.venv``), its CPU seconds;
* the suite's time (the ``-m "not slurm"`` part over every core) and the real-Slurm
  tests' beside it, as pytest reports them;
* the suite's slowest test and its share of pytest's time limit (900 s);
* the **cache state**: bbrlcore's caches (``$XDG_CACHE_HOME/bbrlcore``: the cost model's
  memoised work amounts and probes) are keyed by the sources' digest, so the first run of
  a source tree on a machine computes them (*cold*) and a later clone of the same tree
  finds them (*warm*); numba's cache is keyed by the clone's path, so every clean clone
  compiles every kernel.

    .venv/bin/python benchmarks/bench_suite.py [--ref BRANCH] [--note TEXT]

Appends a row to ``benchmarks/results/suite.json`` (``"calibration": false``) and rewrites
``benchmarks/results/suite.md``. One run takes the suite's time (≈ 13 min here) and both
cores: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
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
RESULTS = Path(__file__).parent / "results"
TIMEOUT_S = 900  # pyproject.toml's pytest timeout


def _digest_cached(clone: Path) -> bool:
    """Whether bbrlcore's caches already hold entries of this source tree (warm)."""
    code = ("import bbrlcore as b, os; d = b.source_digest()[:12]; base = b.cache_base(); "
            "print(any(n.startswith('cost-features-') and n.endswith(d) "
            "for n in (os.listdir(base) if os.path.isdir(base) else [])))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=clone, env={**os.environ, "PYTHONPATH": str(clone / "src")})
    return out.stdout.strip() == "True"


def parse(log: str) -> dict:
    """The figures of a ``.ci/run`` log made with ``--durations=0`` under ``time -v``."""
    row: dict = {}
    # pytest's last lines: "1661 passed in 744.0s (0:12:23)", "2 passed, 1661 deselected
    # in 480.1s", "1 failed, 1660 passed in ..." (the suite: the one that ran most tests)
    runs = []
    for counts, seconds in re.findall(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s", log,
                                      flags=re.M):
        n = {w: int(k) for k, w in re.findall(r"(\d+) (\w+)", counts)}
        if "passed" in n or "failed" in n or "error" in n or "errors" in n:
            runs.append((n, float(seconds)))
    if runs:
        ran = [n.get("passed", 0) + n.get("failed", 0) for n, _ in runs]
        i = ran.index(max(ran))
        row["tests_passed"] = sum(n.get("passed", 0) for n, _ in runs)
        row["failed"] = sum(n.get("failed", 0) + n.get("error", 0) + n.get("errors", 0)
                            for n, _ in runs)
        row["suite_s"] = runs[i][1]
        others = [t for j, (_, t) in enumerate(runs) if j != i]
        if others:
            row["slurm_tests_s"] = others[0]
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", log)
    if wall:
        parts = [float(p) for p in wall.group(1).split(":")]
        row["wall_s"] = round(sum(p * 60 ** i for i, p in enumerate(reversed(parts))), 1)
    user = re.search(r"User time \(seconds\): ([\d.]+)", log)
    system = re.search(r"System time \(seconds\): ([\d.]+)", log)
    if user and system:
        row["cpu_s"] = round(float(user.group(1)) + float(system.group(1)), 1)
    # the slowest of the suite against pytest's limit (the Slurm tests set their own)
    durations = [(float(t), name) for t, name in
                 re.findall(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+)", log, flags=re.M)
                 if not name.startswith("tests/test_slurm.py")]
    if durations:
        t, name = max(durations)
        row["slowest_test"] = name
        row["slowest_s"] = t
        row["slowest_share_of_limit"] = round(t / TIMEOUT_S, 3)
    return row


def run(ref: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bbrl-suite-") as d:
        clone = Path(d) / "p"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", ref], cwd=clone, check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone,
                                capture_output=True, text=True, check=True).stdout.strip()
        shared = ROOT.parent / "shared"
        if shared.exists():
            (Path(d) / "shared").symlink_to(shared.resolve())
        warm = _digest_cached(clone)
        env = {**os.environ, "CI": "true", "PYTEST_ADDOPTS": "--durations=0"}
        t0 = time.time()
        p = subprocess.run(["/usr/bin/time", "-v", "bash", ".ci/run"], cwd=clone, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        row = {"commit": commit, "cost_caches": "warm" if warm else "cold",
               "returncode": p.returncode, **parse(p.stdout + p.stderr)}
        row.setdefault("wall_s", round(time.time() - t0, 1))
        return row


def _minutes(s: float | None) -> str:
    return "–" if s is None else f"{int(s // 60)} min {int(round(s % 60))} s"


def write_md(data: dict) -> None:
    lines = ["# `make test` on a clean clone (`bash .ci/run`, CI=true)", "",
             "Written by `benchmarks/bench_suite.py`; goal (issue 35): within 15 minutes "
             "on 2 cores, every test run. *cost caches*: bbrlcore's memoised cost-model "
             "work amounts of this source tree absent (cold: the first run of new sources) "
             "or present (warm); numba's cache is cold in every clean clone.", "",
             "| date | commit | cost caches | whole run | suite | Slurm tests beside | "
             "CPU s | tests | slowest test (share of the 900 s limit) | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        slow = (f"{r.get('slowest_s', 0):.0f} s {r.get('slowest_test', '')} "
                f"({r.get('slowest_share_of_limit', 0):.0%})")
        lines.append(
            f"| {r['date']} | {r['commit']} | {r['cost_caches']} | "
            f"**{_minutes(r.get('wall_s'))}** | {_minutes(r.get('suite_s'))} | "
            f"{_minutes(r.get('slurm_tests_s'))} | {r.get('cpu_s', '–')} | "
            f"{r.get('tests_passed', '–')} passed, {r.get('failed', 0)} failed | {slow} | "
            f"{r.get('note', '')} |")
    (RESULTS / "suite.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="HEAD", help="branch or commit to clone (default HEAD)")
    ap.add_argument("--note", default="", help="a note kept with the row")
    ap.add_argument("--log", type=Path, help="parse this .ci/run log instead of running")
    ap.add_argument("--commit", default="", help="with --log: the commit it ran")
    ap.add_argument("--cost-caches", choices=("warm", "cold"), default="cold",
                    help="with --log: the cache state it ran in")
    a = ap.parse_args(argv)
    if a.log:
        row = {"commit": a.commit, "cost_caches": a.cost_caches, "returncode": None,
               **parse(a.log.read_text())}
    else:
        row = run(a.ref)
    when = a.log.stat().st_mtime if a.log else time.time()  # (a log: when it ended)
    row = {"date": time.strftime("%Y-%m-%d %H:%M", time.localtime(when)), **row,
           "note": a.note}
    out = RESULTS / "suite.json"
    data = (json.loads(out.read_text()) if out.exists() else
            {"meta": {"calibration": False, "what": "bash .ci/run on a clean clone, CI=true",
                      "host": platform.node(), "cpus": os.cpu_count(),
                      "python": platform.python_version()}, "rows": []})
    data["rows"].append(row)
    out.write_text(json.dumps(data, indent=1) + "\n")
    write_md(data)
    print(json.dumps(row, indent=1))
    return 0 if row.get("failed", 1) == 0 and row.get("returncode") in (0, None) else 1


if __name__ == "__main__":
    sys.exit(main())
