"""Online time of every built-in agent on the paper's six experiments, two source trees
compared in the same run (issue 27: no regression from the sparse rows).

Every built-in algorithm at the ``quick`` preset's parameters (compat variants included:
the agents of ``benchmarks/ab_identical.py``) on GC-GC ... Grid-UGrid, N test MDPs,
T = 250: the mean online time per trajectory, the best of a few passes in one process.
Processes of the tree ``--before`` (another ``src/``) and of this one alternate, round
after round (before/after, then after/before, ...), so both see the machine in the same
states; each side keeps its best round.

    git worktree add /tmp/before <commit>        # or any copy of an older src/
    .venv/bin/python benchmarks/bench_regression.py --before /tmp/before/src

Writes ``benchmarks/results/sparse_regression.json`` (``"calibration": false``) and
``.md``: per agent and experiment the two times and their ratio, and the ratio's median
and worst.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]
OUT = Path(__file__).parent / "results" / "sparse_regression"


def _agents() -> list[tuple[str, dict]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from ab_identical import AGENTS

    return AGENTS


def _time_here(n_mdps: int, passes: int, only: list[str] | None = None) -> dict:
    """Mean online ms per trajectory of each agent and experiment in this process's
    bbrlcore, the best of ``passes`` passes (compiled and warmed first)."""
    from bbrlcore import distributions as D
    from bbrlcore import experiment as E

    out = {}
    for test, prior in EXPERIMENTS:
        if only and f"{test}-{prior}" not in only:
            continue
        ts = E.new_test_set(D.builtin(test), n_mdps, 0.95, 250, seed=1)
        for alg, params in _agents():
            agent = E.train_agent(alg, dict(params), D.builtin(prior), seed=0, gamma=0.95,
                                  horizon=250, progress=False)
            E.run_agent(ts, agent, range(2), progress=False)  # compiled, caches warm
            best = float("inf")
            for _ in range(passes):
                run = E.run_agent(ts, agent, progress=False)
                best = min(best, 1000 * float(run["online_time_s"].mean()))
            out[f"{agent.agent_id} {test}-{prior}"] = best
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="src/ of the tree to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--n-mdps", type=int, default=30)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--experiments", nargs="+", help="only these (e.g. GDL-UGDL)")
    ap.add_argument("--_time", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._time:
        print(json.dumps(_time_here(a.n_mdps, a.passes, a.experiments)))
        return 0
    if not a.before:
        ap.error("--before SRC (the src/ of the tree to compare with) is required")
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"before": str(Path(a.before).resolve()), "after": here}
    best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    t0 = time.perf_counter()
    for r in range(a.rounds):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            env = dict(os.environ, PYTHONPATH=trees[side])
            extra = ["--experiments", *a.experiments] if a.experiments else []
            out = subprocess.run([sys.executable, __file__, "--_time", "--n-mdps",
                                  str(a.n_mdps), "--passes", str(a.passes), *extra],
                                 env=env, check=True, capture_output=True, text=True).stdout
            for key, ms in json.loads(out.strip().splitlines()[-1]).items():
                best[side][key] = min(best[side].get(key, float("inf")), ms)
            print(f"round {r + 1} {side} done ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    rows = []
    for key in best["after"]:
        b, aft = best["before"][key], best["after"][key]
        agent, exp = key.split(" ")
        rows.append({"agent": agent, "experiment": exp, "ms_before": round(b, 5),
                     "ms_after": round(aft, 5), "ratio": round(aft / b, 4)})
    ratios = [r["ratio"] for r in rows]
    data = {"meta": {"benchmark": "sparse_regression", "calibration": False,
                     "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
                     "python": platform.python_version(), "before": trees["before"],
                     "rounds": a.rounds, "passes": a.passes, "n_mdps": a.n_mdps,
                     "horizon": 250, "minutes": round((time.perf_counter() - t0) / 60, 1)},
            "ratio_median": round(statistics.median(ratios), 4), "ratio_max": max(ratios),
            "rows": rows}
    Path(a.out + ".json").write_text(json.dumps(data, indent=1))
    lines = ["# Online time before and after (same run)", "",
             f"{data['meta']['date']}, N = {a.n_mdps}, T = 250, best of {a.rounds} "
             f"alternating rounds of {a.passes} passes; ratio = after / before. Median "
             f"×{data['ratio_median']:.3f}, worst ×{data['ratio_max']:.3f}.", "",
             "| agent | " + " | ".join(f"{t}-{p}" for t, p in EXPERIMENTS) + " |",
             "|---" * (len(EXPERIMENTS) + 1) + "|"]
    for agent in dict.fromkeys(r["agent"] for r in rows):
        cells = []
        for t, p in EXPERIMENTS:
            r = next((r for r in rows if r["agent"] == agent and r["experiment"] == f"{t}-{p}"),
                     None)
            cells.append("–" if r is None else
                         f"{r['ms_before']:.3g} → {r['ms_after']:.3g} ms (×{r['ratio']:.2f})")
        lines.append(f"| {agent} | " + " | ".join(cells) + " |")
    Path(a.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
