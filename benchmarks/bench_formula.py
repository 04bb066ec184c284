"""Online speed of the fixed-formula agent (``formula``), the paper's OPPS-DS formulas.

Milliseconds per 250-step trajectory (γ = 0.95) over ``--n-mdps`` test MDPs, numba cache
warm (compilation excluded, as in the run tables), of the six formulas the paper's tables
name for OPPS-DS (``Q2/Q0``, ``max(Q0, Q2)``, ``Q0 + Q2``, ``Q0``, ``max(Q0, Q1)``,
``Q1 + Q2``) on each of the six experiments. The formula agent is the kernel OPPS-DS's
learned agent plays (``bench_opps.py`` times that one after training); this script
calibrates the cost model for the ``paper`` preset's formula agents.

    .venv/bin/python benchmarks/bench_formula.py [--n-mdps 50] [--repeats 3]

Writes ``benchmarks/results/formula_agent.json`` (read by the cost model) and
``benchmarks/results/formula_agent.md``. The best of ``--repeats`` passes is kept (the
machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from bbrlcore import __version__
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D

EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]
FORMULAS = ["Q2/Q0", "max(Q0, Q2)", "Q0 + Q2", "Q0", "max(Q0, Q1)", "Q1 + Q2"]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n-mdps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    rows = []
    for test, prior in EXPERIMENTS:
        ts = E.new_test_set(D.builtin(test), args.n_mdps, 0.95, 250, seed=1)
        for formula in FORMULAS:
            agent = E.train_agent("formula", {"formula": formula}, D.builtin(prior),
                                  progress=False)
            best = float("inf")
            for _ in range(args.repeats):
                run = E.run_agent(ts, agent, progress=False)
                best = min(best, 1000 * float(run["online_time_s"].mean()))
            rows.append({"algorithm": "formula", "agent": agent.agent_id,
                         "params": {"formula": agent.params["formula"]}, "formula": formula,
                         "test": test, "prior": prior, "ms_per_trajectory": round(best, 4),
                         "mean_return": round(float(run["discounted_return"].mean()), 4),
                         "formula_failures": int(run["formula_failures"].sum())})
            print(f"{agent.agent_id:32s} {test}-{prior:6s} {best:9.3f} ms", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": "formula_agent", "bbrlcore_version": __version__,
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
            "python": platform.python_version(), "n_mdps": args.n_mdps, "horizon": 250,
            "repeats": args.repeats, "statistic": "best of repeats of the mean"}
    (out / "formula_agent.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Formula agent: ms per 250-step trajectory ({args.n_mdps} MDPs, best of "
             f"{args.repeats}, {meta['date']}, bbrlcore {__version__})", "",
             "| formula | agent | experiment | ms/trajectory | mean return |",
             "|---|---|---|---:|---:|"]
    for r in rows:
        lines.append(f"| `{r['formula']}` | {r['agent']} | {r['test']}-{r['prior']} | "
                     f"{r['ms_per_trajectory']:.3f} | {r['mean_return']:.3f} |")
    (out / "formula_agent.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
