"""The public agent API's speed: a compiled plugin against the built-in it re-implements.

``examples/my_agents.py`` writes e-Greedy twice: ``MyGreedyJit`` (a ``CompiledAgent``
calling bbrl's own kernels; the package compiles its trajectory loop around them) and
``MyGreedy`` (a ``PythonAgent`` in numpy). This measures milliseconds per 250-step
trajectory (ε = 0.1, γ = 0.95, numba cache warm, compilation excluded, best of
``--repeats`` passes) of the built-in ``e-greedy``, of ``MyGreedyJit`` (target: within
1.5× of the built-in on GC and Grid) and of ``MyGreedy`` (reported, with its cost per step),
on the six experiments.

    .venv/bin/python benchmarks/bench_plugins.py [--n-mdps 50] [--repeats 3]

Writes ``benchmarks/results/plugins.json`` and ``.md`` (their rows name the agent under
``agent_name``, not ``algorithm``: the cost model does not calibrate plugins from them).
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

ROOT = Path(__file__).resolve().parents[1]
MY = ROOT / "examples" / "my_agents.py"
EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC"),
               ("GDL", "UGDL"), ("Grid", "UGrid")]
AGENTS = [("e-greedy", "e-greedy"), ("my-greedy-jit", f"{MY}:MyGreedyJit"),
          ("my-greedy", f"{MY}:MyGreedy")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-mdps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for test, prior in EXPERIMENTS:
        ts = E.new_test_set(D.builtin(test), args.n_mdps, 0.95, 250, seed=1)
        for label, ref in AGENTS:
            agent = E.train_agent(ref, {"epsilon": "0.1"}, D.builtin(prior), progress=False)
            n = args.n_mdps if label != "my-greedy" else min(args.n_mdps, 10)
            best = float("inf")
            for _ in range(args.repeats):
                run = E.run_agent(ts, agent, range(n), progress=False)
                best = min(best, 1000 * float(run["online_time_s"].mean()))
            rows.append({"agent_name": label, "test": test, "prior": prior,
                         "ms_per_trajectory": round(best, 4),
                         "us_per_step": round(1000 * best / 250, 3),
                         "mean_return": round(float(run["discounted_return"].mean()), 4)})
            print(f"{label:15s} {test}-{prior:6s} {best:10.3f} ms", flush=True)
    by = {(r["agent_name"], r["test"], r["prior"]): r for r in rows}
    for r in rows:
        base = by[("e-greedy", r["test"], r["prior"])]["ms_per_trajectory"]
        r["ratio_to_builtin"] = round(r["ms_per_trajectory"] / base, 3)
    out = ROOT / "benchmarks" / "results"
    meta = {"benchmark": "plugins", "bbrlcore_version": __version__,
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
            "n_mdps": args.n_mdps, "repeats": args.repeats, "horizon": 250, "epsilon": 0.1}
    (out / "plugins.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Plugins against the built-in e-Greedy ({meta['date']}, ms per 250-step "
             f"trajectory, best of {args.repeats})", "",
             "| experiment | built-in e-greedy | MyGreedyJit (compiled) | ratio | "
             "MyGreedy (Python) | µs per step | ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    for test, prior in EXPERIMENTS:
        b, j, p = (by[(a, test, prior)] for a, _ in AGENTS)
        lines.append(f"| {test}-{prior} | {b['ms_per_trajectory']:.3f} | "
                     f"{j['ms_per_trajectory']:.3f} | ×{j['ratio_to_builtin']:.2f} | "
                     f"{p['ms_per_trajectory']:.2f} | {p['us_per_step']:.1f} | "
                     f"×{p['ratio_to_builtin']:.0f} |")
    (out / "plugins.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
