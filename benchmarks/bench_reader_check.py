"""What checking a run table's rewards against its returns costs every reader (issue 33).

A merged table of N = 500 test MDPs x 200 agents x T = 250 steps (25 million rewards, the
scale of a full configuration's experiment; rewards 0/1 at each agent's rate, returns
their float64 sums) is written once as the workflow writes it; then
:func:`bbrlcore.analysis.results.read_runs` reads it as the readers do, without the
rewards (``summary``, ``aggregate``, ``curves``, ``report``: the rewards are checked from
the file batch by batch) and with them (``merge``), in this tree and, with ``--before
SRC``, in an older tree's ``src/`` (before the check), in alternating processes; the
median wall and CPU time of ``--rounds`` reads each::

    .venv/bin/python benchmarks/bench_reader_check.py --before /tmp/before/src

Prints the figures and writes ``benchmarks/results/reader_check.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def make_table(path: Path, n: int = 500, agents: int = 200, T: int = 250,
               gamma: float = 0.95) -> None:
    import numpy as np
    import polars as pl

    from bbrlcore import __version__
    from bbrlcore.protocol import runner as E

    rng = np.random.default_rng(0)
    rows = n * agents
    ids = ["random", "optimal"] + [f"e-greedy__epsilon={i}" for i in range(agents - 2)]
    algs = ["random", "optimal"] + ["e-greedy"] * (agents - 2)
    p = np.repeat(np.r_[0.1, 0.9, rng.uniform(0.2, 0.8, agents - 2)], n)
    R = (rng.random((rows, T)) < p[:, None]).astype(np.float64)
    w = np.cumprod(np.r_[1.0, np.full(T - 1, gamma)])
    table = pl.DataFrame({
        "experiment": ["GC-GC"] * rows, "test": ["GC"] * rows, "prior": ["GC"] * rows,
        "algorithm": np.repeat(algs, n), "agent": np.repeat(ids, n), "params": ["{}"] * rows,
        "compat": [False] * rows, "mdp_index": np.tile(np.arange(n), agents),
        "discounted_return": R @ w, "online_time_s": np.full(rows, 1e-3),
        "n_steps": np.full(rows, T), "offline_time_s": np.zeros(rows),
        "seed": np.zeros(rows, dtype=np.int64), "gamma": np.full(rows, gamma),
        "horizon": np.full(rows, T), "test_seed": np.zeros(rows, dtype=np.int64),
        "bbrlcore_version": [__version__] * rows,
        "undiscounted_return": R.sum(axis=1), "rewards": E.rewards_series(R),
    }).cast(E.RUN_COLUMNS)
    E.write_run(table, path, {"n_mdps": n})


CHILD = """
import json, sys, time
from bbrlcore.analysis import results as R
path, rounds = sys.argv[1], int(sys.argv[2])
R.read_runs([path], "summary", rewards=False)  # (imports, caches)
out = {}
for name, rw in (("without rewards (summary, aggregate, curves, report)", False),
                 ("with rewards (merge)", True)):
    wall, cpu = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        R.read_runs([path], "summary", rewards=rw)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    out[name] = {"wall_s": sorted(wall)[rounds // 2], "cpu_s": sorted(cpu)[rounds // 2]}
print(json.dumps(out))
"""


def measure(src: Path, path: Path, rounds: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), str(rounds)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="an older tree's src/ (before the check)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    trees = {"this tree": ROOT / "src"}
    if args.before:
        trees = {"before": args.before, **trees}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "merged.parquet"
        t0 = time.perf_counter()
        make_table(path)
        print(f"table: {path.stat().st_size / 1e6:.1f} MB on disk, written in "
              f"{time.perf_counter() - t0:.1f} s")
        got = {name: measure(src, path, args.rounds) for name, src in trees.items()}
    for tree, res in got.items():
        for what, v in res.items():
            print(f"{tree:10s} {what:55s} wall {v['wall_s']:.2f} s, cpu {v['cpu_s']:.2f} s")
    out = HERE / "results" / "reader_check.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": 100_000, "steps": 250, "rounds": args.rounds,
                               "results": got}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
