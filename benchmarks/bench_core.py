"""Online speed of the model-based agents of the core (issue 2's benchmark).

Milliseconds per 250-step trajectory (γ = 0.95) over 100 test MDPs, numba cache warm
(compilation excluded, as in the run tables), for e-Greedy (ε = 0), Soft-max (τ = 0.1),
BEB (β = 0.5) and SBOSS (ε = 1, δ = 1, default and compat) on the six experiments of the
paper, next to the original C++ library measured on this machine class.

    .venv/bin/python benchmarks/bench_core.py [--n-mdps 100] [--repeats 5]

Writes ``benchmarks/results/core_agents.json`` (read by the cost model) and
``benchmarks/results/core_agents.md``. The best of ``--repeats`` passes is kept (the
machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from bbrlcore import __version__, agents
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D

EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]

#: Original library, ms per trajectory (issue 2), keyed by prior.
REFERENCE = {
    "e-greedy__epsilon=0": {"GC": 3.9, "GDL": 2.3, "Grid": 22.8, "UGC": 9.1, "UGDL": 8.4,
                            "UGrid": 91.7},
    "beb__beta=0.5": {"GC": 4.2, "GDL": 6.2, "Grid": 124.6, "UGC": 4.5, "UGDL": 6.8,
                      "UGrid": 66.7},
    "soft-max__tau=0.1": {"GC": 3.7, "GDL": 2.6, "Grid": 21.3, "UGC": 8.6, "UGDL": 7.9,
                          "UGrid": 86.1},
    "sboss__epsilon=1__delta=1__compat=true": {"GC": 0.045, "GDL": 0.17, "Grid": 0.87,
                                               "UGC": 3.2, "UGDL": 4.2, "UGrid": 75.6},
}

AGENTS = [
    ("e-greedy", {"epsilon": "0"}),
    ("soft-max", {"tau": "0.1"}),
    ("soft-max", {"tau": "0.1", "compat": "true"}),
    ("beb", {"beta": "0.5"}),
    ("beb", {"beta": "0.5", "compat": "true"}),
    ("sboss", {"epsilon": "1", "delta": "1"}),
    ("sboss", {"epsilon": "1", "delta": "1", "compat": "true"}),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-mdps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    installed = set(agents.available())
    rows = []
    for test, prior in EXPERIMENTS:
        ts = E.new_test_set(D.builtin(test), args.n_mdps, 0.95, 250, seed=1)
        for alg, params in AGENTS:
            if alg not in installed:
                print(f"skip {alg}: not installed", file=sys.stderr)
                continue
            agent = E.train_agent(alg, params, D.builtin(prior), progress=False)
            best = float("inf")
            for _ in range(args.repeats):
                run = E.run_agent(ts, agent, progress=False)
                best = min(best, 1000 * float(run["online_time_s"].mean()))
            ref = REFERENCE.get(agent.agent_id.replace("__compat=true", "")
                                if alg in ("soft-max", "beb") else agent.agent_id, {}).get(prior)
            if alg == "sboss" and "compat" not in agent.agent_id:
                ref = None  # default SBOSS resamples: only reported (issue 2)
            rows.append({"algorithm": alg, "agent": agent.agent_id, "test": test,
                         "prior": prior, "ms_per_trajectory": round(best, 4),
                         "reference_ms": ref,
                         "speedup": round(ref / best, 2) if ref else None,
                         "mean_return": round(float(run["discounted_return"].mean()), 4)})
            print(f"{agent.agent_id:42s} {test}-{prior:6s} {best:9.3f} ms"
                  + (f"  (ref {ref}, x{ref / best:.1f})" if ref else ""), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": "core_agents", "bbrlcore_version": __version__,
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
            "python": platform.python_version(), "n_mdps": args.n_mdps, "horizon": 250,
            "repeats": args.repeats, "statistic": "best of repeats of the mean",
            "calibration": False}
    (out / "core_agents.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Core agents: ms per 250-step trajectory ({args.n_mdps} MDPs, best of "
             f"{args.repeats}, {meta['date']}, bbrlcore {__version__})", "",
             "| agent | experiment | ms/trajectory | original | speed-up |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['agent']} | {r['test']}-{r['prior']} | {r['ms_per_trajectory']:.3f}"
                     f" | {r['reference_ms'] if r['reference_ms'] is not None else '–'}"
                     f" | {('×' + str(r['speedup'])) if r['speedup'] else '–'} |")
    (out / "core_agents.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
