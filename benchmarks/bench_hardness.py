"""Speed of Colosseum's hardness measures (``bbrlcore.mdp.hardness``).

Times, per MDP, the four measures on plain arrays with the numba cache warm (compilation
excluded): building the sparse rows, the optimal values (Gauss–Seidel value iteration),
the environmental value norm and the sum of the reciprocals of the sub-optimality gaps
(given V*, Q*), the diameter, and the whole :func:`measures` call; and the report's
former diameter (``tests/reference_hardness._diameter``, dense policy iteration per target) where
it finishes in reasonable time — elsewhere estimated as one target's time (the last
reachable state) times the number of reachable states (``≈`` in the table). MDPs:

* ``chain-n``: a deterministic chain of n states (action 0 right, action 1 left, the ends
  stay), reward 1 for staying at the right end; diameter n − 1.
* ``deepsea-N``: an N×N grid of states (row, column), two actions, down-left and
  down-right (the column clipped to the grid), the bottom row returning to the top-left
  state (the initial state); reward 1 on entering the bottom-right cell, −0.01/N for
  each right move. Only the cells with column ≤ row are reachable. ``deepsea-N-p0.1``
  mixes in Colosseum's ``p_rand = 0.1`` (P' = 0.9 P + 0.1 · mean over actions of P):
  two successors per row.
* ``grid-mean``: the paper's Grid distribution's mean model; ``grid-draws``: 20 MDPs
  drawn from it (mean time per MDP).
* ``DeepSea-50``, ``Taxi-8``, ``Taxi-13`` ``(drawn)``: a test MDP of the problem family
  (its drawn structure and Dirichlet rows), the largest Taxi among them.
* :data:`LARGE` (issue 33): the diameter alone of a drawn test MDP of RiverSwim 250 to
  5,000, FrozenLake-40 and DeepSea-70 with ``p_rand`` 0.5, and the largest sizes of the
  grid families, on its sparse rows (seconds, one run each).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_hardness.py [--repeats 3]

Writes ``benchmarks/results/hardness.json`` and ``benchmarks/results/hardness.md``; the
best of ``--repeats`` passes is kept (the machine may be shared). γ = 0.95.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bbrlcore import __version__
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import hardness as H

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import reference_hardness as analysis  # noqa: E402  (the former dense diameter)

GAMMA = 0.95


def chain(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    P = np.zeros((n, 2, n))
    for x in range(n):
        P[x, 0, min(x + 1, n - 1)] = 1.0
        P[x, 1, max(x - 1, 0)] = 1.0
    R = np.zeros((n, 2, n))
    R[n - 1, 0, n - 1] = 1.0
    return P, R, 0


def deepsea(N: int, p_rand: float = 0.0) -> tuple[np.ndarray, np.ndarray, int]:
    n = N * N
    P = np.zeros((n, 2, n))
    R = np.zeros((n, 2, n))
    goal = (N - 1) * N + (N - 1)
    for r in range(N):
        for c in range(N):
            x = r * N + c
            for u, dc in ((0, -1), (1, 1)):
                y = 0 if r == N - 1 else (r + 1) * N + min(max(c + dc, 0), N - 1)
                P[x, u, y] = 1.0
                if u == 1:
                    R[x, u, :] = -0.01 / N
                R[x, u, goal] = 1.0
    if p_rand > 0:
        P = (1 - p_rand) * P + p_rand * P.mean(axis=1, keepdims=True)
    return P, R, 0


def best_of(repeats: int, f) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return 1000 * best, out


def time_one(name: str, P, R, x0: int, repeats: int, old: bool) -> dict:
    P = np.ascontiguousarray(P)
    nX, nU, _ = P.shape
    t_rows, rows = best_of(repeats, lambda: H.sparse_rows(P))
    t_rbar, rbar = best_of(repeats, lambda: H.expected_rewards(R, *rows, nU))

    t_val, (V, Q, _) = best_of(repeats, lambda: H.optimal_values_rows(*rows, rbar, GAMMA))
    mask = H.reachable_mask(*rows, nU, x0)
    t_norm, norm = best_of(repeats, lambda: H.value_norm_kernel(*rows, nU, V, Q, mask, False))
    t_gaps, (gaps, _) = best_of(repeats, lambda: H.gaps_kernel(Q, mask, H.GAP_RTOL, 0.0))
    t_diam, d = best_of(repeats, lambda: H.diameter_rows(*rows, nU, x0))
    t_all, m = best_of(repeats, lambda: H.measures(P, R, GAMMA, x0))
    row = {"mdp": name, "n_states": nX, "n_actions": nU, "nnz": int(rows[1].shape[0]),
           "reachable_states": nX - d.unreachable_states, "optimal_value": float(V[x0]),
           "diameter": d.value, "unreachable_states": d.unreachable_states,
           "diameter_relative_error": d.relative_error, "diameter_sweeps": d.sweeps,
           "diameter_policy_iterations": d.policy_iterations,
           "diameter_targets_solved": d.targets_solved, "value_norm": float(norm),
           "suboptimality_gaps": float(gaps),
           "ms_sparse_rows": round(t_rows, 4), "ms_expected_rewards": round(t_rbar, 4),
           "ms_optimal_values": round(t_val, 4), "ms_value_norm": round(t_norm, 4),
           "ms_gaps": round(t_gaps, 4), "ms_diameter": round(t_diam, 4),
           "ms_measures_total": round(t_all, 4), "ms_old_diameter": None}
    assert m.diameter == row["diameter"]
    if old:
        t_old, (dold, _) = best_of(repeats, lambda: analysis._diameter(P, x0))
        row["ms_old_diameter"] = round(t_old, 4)
        row["old_diameter"] = float(dold)
    else:  # one target (the last reachable state) times the number of targets, once
        last = int(np.flatnonzero(mask)[-1])
        t_one, _ = best_of(1, lambda: analysis._hitting_times(P, last))
        row["ms_old_diameter_estimate"] = round(t_one * row["reachable_states"], 1)
    old_ms = row["ms_old_diameter"] or f"≈ {row.get('ms_old_diameter_estimate')}"
    print(f"{name:18s} nX={nX:5d} D={row['diameter']:10.4f} diam {t_diam:9.3f} ms  "
          f"values {t_val:8.3f} ms  total {t_all:9.3f} ms  former {old_ms} ms", flush=True)
    return row


#: Issue 33's large stochastic MDPs, then the largest size of each family that allows one
#: (a drawn test MDP each, on its sparse rows; the dense array is never built).
LARGE = ("RiverSwim-250", "RiverSwim-500", "RiverSwim-1000", "RiverSwim-2000",
         "FrozenLake-40-prand0.5", "DeepSea-70-prand0.5", "RiverSwim-5000",
         "DeepSea-70", "DeepSea-70-prand0.1", "FrozenLake-59", "Grid-59", "SimpleGrid-56",
         "MiniGridEmpty-31", "Taxi-13")


def time_large(name: str) -> dict:
    """The diameter of one test MDP of ``name`` (seconds, one run: minutes before)."""
    from bbrlcore import protocol as E
    from bbrlcore.mdp import families as F

    prob, _ = F.from_name(name)
    ts = E.new_test_set(prob.test, 1, GAMMA, 10, seed=0)
    lay = ts.layout
    ip, ix, pb, _ = H.csr_of_rows(lay.succ, lay.nsucc, ts.mdps[0],
                                  np.ascontiguousarray(ts.test.reward_rows))
    t0 = time.perf_counter()
    d = H.diameter_rows(ip, ix, pb, lay.succ.shape[1], int(ts.test.initial_state))
    s = time.perf_counter() - t0
    row = {"mdp": name, "n_states": int(lay.succ.shape[0]),
           "reachable_states": int(lay.succ.shape[0]) - d.unreachable_states,
           "diameter": d.value, "diameter_relative_error": d.relative_error,
           "targets_solved": d.targets_solved, "policy_iterations": d.policy_iterations,
           "s_diameter": round(s, 3)}
    print(f"{name:24s} reachable {row['reachable_states']:5d}  D={d.value:.6g} "
          f"(rel. error {d.relative_error:.1g})  {d.targets_solved} targets solved  "
          f"{s:.2f} s", flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--large-only", action="store_true",
                    help="only the diameters of the large family MDPs (LARGE), printed")
    args = ap.parse_args()
    # warm the numba cache (compilation excluded from the timings)
    P, R, x0 = chain(3)
    H.measures(P, R, GAMMA, x0)
    analysis._diameter(P, x0)

    # the sparse policy iteration too (a model of more than DENSE_MAX_STATES states)
    big = np.zeros((150, 2, 150))
    big[:, 0] = np.roll(np.eye(150), 1, axis=1) * 0.5 + np.eye(150) * 0.5
    big[:, 1] = np.eye(150)
    H.diameter(big, 0, method="pi")
    time_large("RiverSwim-150")  # and the family path (not recorded)

    large = [time_large(name) for name in LARGE]
    if args.large_only:
        return 0  # printed only
    rows = []
    for n in (100, 1000):
        rows.append(time_one(f"chain-{n}", *chain(n), args.repeats, old=n <= 100))
    rows.extend(small_rows(args.repeats))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": "hardness", "bbrlcore_version": __version__,
            "date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
            "python": platform.python_version(), "gamma": GAMMA, "repeats": args.repeats,
            "statistic": "best of repeats, milliseconds per MDP, numba cache warm"}
    lines = [f"# Hardness measures: ms per MDP (best of {args.repeats}, γ = {GAMMA}, "
             f"{meta['date']}, bbrlcore {__version__})", "",
             "| MDP | states (reachable) | nnz | diameter | value norm | Σ 1/Δ | rows | V*, Q* "
             "| value norm | gaps | diameter | all four | former diameter |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        old = (f"≈ {r['ms_old_diameter_estimate']:.0f}" if r["ms_old_diameter"] is None
               else f"{r['ms_old_diameter']:.2f}")
        lines.append(
            f"| {r['mdp']} | {r['n_states']} ({r['reachable_states']}) | {r['nnz']} | "
            f"{r['diameter']:.4g} | {r['value_norm']:.4g} | {r['suboptimality_gaps']:.4g} | "
            f"{r['ms_sparse_rows']:.3f} | {r['ms_optimal_values']:.3f} | "
            f"{r['ms_value_norm']:.3f} | {r['ms_gaps']:.3f} | {r['ms_diameter']:.3f} | "
            f"{r['ms_measures_total']:.3f} | {old} |")
    lines += ["", "## Diameters of large stochastic test MDPs (issue 33; one drawn MDP each, "
              "seconds, one run)", "",
              "| MDP | states (reachable) | diameter | certified rel. error | targets solved "
              "| policy iterations | seconds |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in large:
        lines.append(f"| {r['mdp']} | {r['n_states']} ({r['reachable_states']}) | "
                     f"{r['diameter']:.6g} | {r['diameter_relative_error']:.1g} | "
                     f"{r['targets_solved']} | {r['policy_iterations']} | "
                     f"{r['s_diameter']:.2f} |")
    (out / "hardness.json").write_text(json.dumps({"meta": meta, "rows": rows,
                                                   "large": large}, indent=1))
    (out / "hardness.md").write_text("\n".join(lines) + "\n")
    return 0


def small_rows(repeats: int) -> list[dict]:
    """Every measure of the synthetic MDPs, Grid and three drawn family MDPs, beside the
    former dense diameter."""
    rows = []
    for N in (10, 30, 50):
        rows.append(time_one(f"deepsea-{N}", *deepsea(N), repeats, old=N <= 10))
    for N in (10, 30, 50):
        rows.append(time_one(f"deepsea-{N}-p0.1", *deepsea(N, 0.1), repeats, old=N <= 10))
    g = D.builtin("Grid")
    rows.append(time_one("grid-mean", g.mean_model(), g.reward, g.initial_state, repeats,
                         old=True))
    draws = [time_one(f"grid-draw-{s}", g.draw_mdp(np.random.default_rng(s)), g.reward,
                      g.initial_state, repeats, old=True) for s in range(20)]
    mean = {k: (float(np.mean([r[k] for r in draws])) if k.startswith("ms_") else v)
            for k, v in draws[0].items()}
    for k in ("diameter", "value_norm", "suboptimality_gaps", "optimal_value"):
        mean[k] = float(np.median([r[k] for r in draws]))
    mean["mdp"] = "grid-draws (20, mean ms, median measures)"
    rows.append(mean)
    # test MDPs of the problem families at their large sizes (issue 27): drawn from the
    # family's test distribution (DeepSea's drawn action mapping, Taxi's locations)
    from bbrlcore import protocol as E
    from bbrlcore.mdp import families as F

    for fam, size in (("deepsea", 50), ("taxi", 8), ("taxi", 13)):
        prob = F.make(fam, size=size)
        ts = E.new_test_set(prob.test, 1, GAMMA, 10, seed=0)
        rows.append(time_one(f"{prob.test.short_name} (drawn)", ts.dense(0),
                             prob.test.reward, prob.test.initial_state,
                             max(1, repeats - 2), old=False))
    return rows


if __name__ == "__main__":
    sys.exit(main())
