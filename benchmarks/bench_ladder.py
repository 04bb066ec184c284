"""How each built-in algorithm's online time grows along a family's size ladder.

For every built-in algorithm at the ``quick`` preset's parameters (the paper's eight,
Optimal, ``formula`` and the four beyond the paper), on DeepSea N = 10 … 50 and RiverSwim
up to 100 states (accurate prior, γ = 0.95, T = 250), the online time per trajectory
(the mean over a few test MDPs, the better of two passes, compilation excluded), the
number of
non-zero transitions of the test MDPs and of the prior, and the growth exponent: the
slope of log(time) against log(non-zero transitions) along the ladder (1 = time in
proportion to the transitions that exist; 2 = in proportion to nX² for these families).

    .venv/bin/python benchmarks/bench_ladder.py [--families deepsea riverswim]
        [--n-mdps 10] [--algorithms bamcp beb ...] [--max-seconds 120]

Writes ``benchmarks/results/ladder.json`` and ``benchmarks/results/ladder.md``. Each
timed row is also a **calibration record** of the cost model (:mod:`bbrlcore.plan.cost`:
``algorithm``, ``params``, ``test``, ``prior``, ``horizon``, ``ms_per_trajectory``), so
``bbrl estimate`` covers these sizes, and ``benchmarks/bench_cost.py --report`` checks each
ladder point predicted without its own record. An algorithm whose trajectory exceeds
``--max-seconds`` at one size is not timed at larger ones (the table says so).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bbrlcore import __version__
from bbrlcore import protocol as E
from bbrlcore.mdp import families as F

ROOT = Path(__file__).resolve().parents[1]
LADDERS = {"deepsea": [10, 20, 30, 40, 50], "riverswim": [6, 12, 25, 50, 100]}
#: The quick preset's parameters (config.yaml), one configuration per algorithm.
AGENTS: list[tuple[str, dict]] = [
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": 0.1}),
    ("soft-max", {"tau": 0.05}), ("beb", {"beta": 2.5}),
    ("sboss", {"epsilon": 0.1, "delta": 1.0}),
    ("opps-ds", {"formula_set": "F2", "n_draws": 50}), ("formula", {"formula": "Q2/Q0"}),
    ("bamcp", {"K": 50, "D": 15}), ("bfs3", {"K": 10, "C": 2, "D": 15}),
    ("psrl", {"schedule": "doubling"}), ("boss", {"K": 5, "B": 5}), ("bolt", {"eta": 5.0}),
    ("mbie-eb", {"beta": 2.5}),
]


def nnz(a: np.ndarray) -> int:
    return int((np.asarray(a) > 0).sum())


def slope(x: list[float], y: list[float]) -> float | None:
    pts = [(math.log(a), math.log(b)) for a, b in zip(x, y, strict=True) if a > 0 and b > 0]
    if len(pts) < 2:
        return None
    X = np.array([p[0] for p in pts])
    Y = np.array([p[1] for p in pts])
    return float(np.polyfit(X, Y, 1)[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="+", default=list(LADDERS))
    ap.add_argument("--algorithms", nargs="+", default=[a for a, _ in AGENTS])
    ap.add_argument("--n-mdps", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ladder"))
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of the existing results of the algorithms not "
                         "measured now (re-measure one algorithm)")
    a = ap.parse_args()
    rows = []
    for fam in a.families:
        skip: set[str] = set()
        for size in LADDERS[fam]:
            p = F.make(fam, size=size)
            prior = p.prior("accurate")
            t0 = time.perf_counter()
            ts = E.new_test_set(p.test, a.n_mdps, 0.95, 250, seed=0)
            draw_s = time.perf_counter() - t0
            n_test = float(np.mean([nnz(ts.mdps[i]) for i in range(ts.n_mdps)]))
            for alg, params in AGENTS:
                if alg not in a.algorithms:
                    continue
                row = {"family": fam, "size": size, "states": p.test.n_states,
                       "actions": p.test.n_actions, "algorithm": alg, "params": params,
                       "nnz_test": n_test, "nnz_prior": nnz(prior.theta),
                       "dense": p.test.n_states ** 2 * p.test.n_actions,
                       "draw_s": round(draw_s, 4)}
                if alg in skip:
                    row["skipped"] = f"slower than {a.max_seconds:g} s at a smaller size"
                    rows.append(row)
                    continue
                try:
                    agent = E.train_agent(alg, dict(params), prior, gamma=0.95, horizon=250,
                                          progress=False)
                    E.run_agent(ts, agent, range(0, 1), progress=False)  # (compiled)
                    # the better of two passes over the test MDPs: mean and best trajectory
                    passes = [E.run_agent(ts, agent, progress=False)["online_time_s"]
                              for _ in range(2)]
                except Exception as exc:  # noqa: BLE001 - recorded in the table
                    row["error"] = str(exc).splitlines()[0][:200]
                    rows.append(row)
                    print(f"{fam}-{size} {alg}: {row['error']}", file=sys.stderr)
                    continue
                mean = min(float(t.mean()) for t in passes)
                best = min(float(t.min()) for t in passes)
                # a calibration record of the cost model (bbrlcore.plan.cost)
                row.update({"agent": agent.agent_id, "test": p.test.short_name,
                            "prior": prior.short_name, "horizon": 250, "gamma": 0.95,
                            "n_mdps": ts.n_mdps, "ms_per_trajectory": round(mean * 1e3, 6),
                            "best_s": best})
                if isinstance(agent.info.get("rpn"), str):  # the formula OPPS-DS learned
                    row["learned_formula"] = agent.info["rpn"]
                rows.append(row)
                print(f"{fam}-{size} ({p.test.n_states} states) {alg}: {mean * 1e3:.2f} ms "
                      f"(best {best * 1e3:.2f})", file=sys.stderr, flush=True)
                if mean > a.max_seconds:
                    skip.add(alg)
    if a.merge and Path(a.out + ".json").exists():
        kept = [r for r in json.loads(Path(a.out + ".json").read_text())["rows"]
                if not (r["algorithm"] in a.algorithms and r["family"] in a.families)]
        rows = kept + rows
        a.families = list(dict.fromkeys([r["family"] for r in rows]))
    growth = []
    for fam in a.families:
        for alg, _ in AGENTS:
            pts = [r for r in rows if r["family"] == fam and r["algorithm"] == alg
                   and "ms_per_trajectory" in r]
            if len(pts) >= 2:
                growth.append({"family": fam, "algorithm": alg, "sizes": [r["size"] for r in pts],
                               "exponent_nnz": slope([r["nnz_test"] for r in pts],
                                                     [r["ms_per_trajectory"] for r in pts]),
                               "exponent_nnz_prior": slope([r["nnz_prior"] for r in pts],
                                                           [r["ms_per_trajectory"] for r in pts])})
    out = {"meta": {"benchmark": "ladder", "date": time.strftime("%Y-%m-%d"),
                    "bbrlcore_version": __version__, "machine": platform.machine(),
                    "n_mdps": a.n_mdps},
           "rows": rows, "growth": growth}
    Path(a.out + ".json").write_text(json.dumps(out, indent=1))
    lines = ["# Online time along size ladders", "",
             f"bbrlcore {__version__}, {out['meta']['date']}, mean of {a.n_mdps} "
             "trajectories (the better of two passes; T = 250, γ = 0.95, accurate prior). "
             "Exponent: slope of log(time) against log(non-zero transitions of the test MDPs) "
             "along the ladder.", ""]
    for fam in a.families:
        sizes = LADDERS[fam]
        states = {r["size"]: r["states"] for r in rows if r["family"] == fam}
        lines += [f"## {fam}", "", "| algorithm | " + " | ".join(
            f"{s} ({states.get(s, '?')} states)" for s in sizes) + " | exponent |",
            "|---" * (len(sizes) + 2) + "|"]
        for alg, _ in AGENTS:
            cells = []
            for s in sizes:
                r = next((r for r in rows if r["family"] == fam and r["size"] == s
                          and r["algorithm"] == alg), None)
                if r is None:
                    cells.append("")
                elif "ms_per_trajectory" in r:
                    cells.append(f"{r['ms_per_trajectory']:.3g} ms")
                else:
                    cells.append("–")
            g = next((g for g in growth if g["family"] == fam and g["algorithm"] == alg), None)
            e = "" if g is None or g["exponent_nnz"] is None else f"{g['exponent_nnz']:.2f}"
            lines.append(f"| {alg} | " + " | ".join(cells) + f" | {e} |")
        lines.append("")
    Path(a.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
