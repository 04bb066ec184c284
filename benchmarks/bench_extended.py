"""Online speed of the algorithms beyond the paper (issue 19), against BEB in the same run.

Milliseconds per 250-step trajectory (γ = 0.95) over 100 test MDPs, numba cache warm
(compilation excluded, as in the run tables), best of ``--repeats`` passes (the machine
may be shared; both sides of a ratio are measured in the same pass of the same process),
on the paper's six experiments, with the protocol of ``bench_core.py``:

* BEB (β = 0.5, ``bench_core.py``'s configuration): the reference of every ratio;
* PSRL (doubling rule, and a fixed period of 10 steps), BOLT (η = 5) and MBIE-EB
  (β = 2.5): planning comparable with BEB's — target **within 2× of BEB**;
* PSRL resampling at every step (``period=1``: a full posterior sample per step on top
  of BEB's planning) and BOSS (K = 5, B = 5 and K = 10, B = 1): reported, BOSS with its
  samplings per trajectory and the models they draw (K × samplings).

    .venv/bin/python benchmarks/bench_extended.py [--n-mdps 100] [--repeats 5]

Writes ``benchmarks/results/extended.json`` and ``extended.md``. The rows of the four
algorithms are cost-model records (``algorithm``, ``params``, ``test``, ``prior``,
``horizon``, ``gamma``, ``ms_per_trajectory``); BEB's reference rows name it under
``reference_algorithm`` instead, so they do not add to BEB's own calibration
(``bench_core.py``'s).
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

REFERENCE = ("beb", {"beta": 0.5})
#: (algorithm, parameters, held to the 2x target)
AGENTS: list[tuple[str, dict, bool]] = [
    ("psrl", {"schedule": "doubling"}, True),
    ("psrl", {"schedule": "fixed", "period": 10}, True),
    ("bolt", {"eta": 5.0}, True),
    ("mbie-eb", {"beta": 2.5}, True),
    ("psrl", {"schedule": "fixed", "period": 1}, False),
    ("boss", {"K": 5, "B": 5}, False),
    ("boss", {"K": 10, "B": 1}, False),
]
TARGET = 2.0


def timed(ts: E.TestSet, agent: E.TrainedAgent):
    """Mean online time (ms) of a pass over the test set, and the run."""
    run = E.run_agent(ts, agent, progress=False)
    return 1000 * float(run["online_time_s"].mean()), run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-mdps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    rows = []
    for test, prior in EXPERIMENTS:
        ts = E.new_test_set(D.builtin(test), args.n_mdps, 0.95, 250, seed=1)
        ref = E.train_agent(REFERENCE[0], {k: str(v) for k, v in REFERENCE[1].items()},
                            D.builtin(prior), progress=False)
        agents = [(alg, params, target,
                   E.train_agent(alg, {k: str(v) for k, v in params.items()},
                                 D.builtin(prior), progress=False))
                  for alg, params, target in AGENTS]
        for a in (ref, *(a for *_, a in agents)):  # compile outside the timing
            E.run_agent(ts, a, range(1), progress=False)
        best_ref = float("inf")
        best = [float("inf")] * len(agents)
        runs: list = [None] * len(agents)
        ref_run = None
        for _ in range(args.repeats):  # interleaved: each pass times BEB and every agent
            t, ref_run = timed(ts, ref)
            best_ref = min(best_ref, t)
            for i, (_alg, _p, _t, agent) in enumerate(agents):
                t, runs[i] = timed(ts, agent)
                best[i] = min(best[i], t)
        rows.append({"reference_algorithm": REFERENCE[0], "agent": ref.agent_id,
                     "params": REFERENCE[1], "test": test, "prior": prior, "horizon": 250,
                     "gamma": 0.95, "ms_per_trajectory": round(best_ref, 4),
                     "mean_return": round(float(ref_run["discounted_return"].mean()), 4)})
        print(f"{ref.agent_id:34s} {test}-{prior:6s} {best_ref:9.3f} ms", flush=True)
        for (alg, params, target, agent), ms, run in zip(agents, best, runs, strict=True):
            row = {"algorithm": alg, "agent": agent.agent_id, "params": params, "test": test,
                   "prior": prior, "horizon": 250, "gamma": 0.95,
                   "ms_per_trajectory": round(ms, 4),
                   "ratio_to_beb": round(ms / best_ref, 3), "target": TARGET if target else None,
                   "mean_return": round(float(run["discounted_return"].mean()), 4)}
            if "resamples" in run.columns:
                row["resamples"] = round(float(run["resamples"].mean()), 2)
                row["models_sampled"] = round(row["resamples"] * int(params.get("K", 1)), 2)
            rows.append(row)
            print(f"{agent.agent_id:34s} {test}-{prior:6s} {ms:9.3f} ms  x{ms / best_ref:.2f}"
                  + (f"  samples {row['models_sampled']}" if "resamples" in row else ""),
                  flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": "extended", "bbrlcore_version": __version__,
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
            "python": platform.python_version(), "n_mdps": args.n_mdps, "horizon": 250,
            "repeats": args.repeats, "statistic": "best of repeats of the mean",
            "reference": "beb__beta=0.5, timed in the same passes", "target": TARGET}
    (out / "extended.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "extended.md").write_text(report(rows, meta))
    return 0


def report(rows: list[dict], meta: dict) -> str:
    exps = [f"{t}-{p}" for t, p in EXPERIMENTS]
    lines = [f"# Beyond the paper: ms per 250-step trajectory ({meta['n_mdps']} MDPs, best "
             f"of {meta['repeats']}, {meta['date']}, bbrlcore {meta['bbrlcore_version']})", "",
             "Each cell: ms per trajectory (ratio to BEB β = 0.5 timed in the same passes). "
             f"Target: within {TARGET:g}× of BEB for the agents marked *target*.", "",
             "| agent | " + " | ".join(exps) + " |", "|---|" + "---:|" * len(exps)]
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["agent"], {})[f"{r['test']}-{r['prior']}"] = r
    worst = 0.0
    for agent, cells in by.items():
        first = next(iter(cells.values()))
        label = agent + (" (target)" if first.get("target") else "")
        out = []
        for e in exps:
            r = cells.get(e)
            if r is None:
                out.append("–")
            elif "ratio_to_beb" in r:
                out.append(f"{r['ms_per_trajectory']:.3f} (×{r['ratio_to_beb']:.2f})")
                if r.get("target"):
                    worst = max(worst, r["ratio_to_beb"])
            else:
                out.append(f"{r['ms_per_trajectory']:.3f}")
        lines.append(f"| {label} | " + " | ".join(out) + " |")
    lines += ["", f"Worst ratio to BEB among the agents held to the target: ×{worst:.2f}.", "",
              "Samplings per trajectory (mean over the MDPs) and models drawn "
              "(K × samplings):", "",
              "| agent | " + " | ".join(exps) + " |", "|---|" + "---:|" * len(exps)]
    for agent, cells in by.items():
        if "resamples" not in next(iter(cells.values())):
            continue
        lines.append(f"| {agent} | " + " | ".join(
            f"{cells[e]['resamples']:g} ({cells[e]['models_sampled']:g} models)"
            if e in cells else "–" for e in exps) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
