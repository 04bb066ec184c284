"""Speed of the tree-search agents (BAMCP, BFS3) against the original library.

1. ms per trajectory (T = 250, gamma = 0.95) at the settings the original library was
   timed at (figures from the C++ program, spec/issue 4), on ``N_MDPS`` test MDPs drawn
   from the accurate prior (``N_MDPS_GRID`` on Grid), each timed ``REPEATS`` times; the
   best repetition of the mean per trajectory is reported (the machine is shared, so the
   median is given too).
2. How the time per decision grows with K and D (BFS3 also C) on GC and Grid: a short
   trajectory (T = ``T_SCALING``) per setting, divided by T.

A calibration figure (ns per ``np.random.random()`` inside numba) is recorded so that
figures taken on a loaded machine can be compared. Run: ``python benchmarks/bench_tree_search.py``
(about 5-10 minutes); writes ``benchmarks/results/tree_search.{json,md}``.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np
from numba import njit

from bbrlcore import __version__
from bbrlcore.agents import bamcp, bfs3
from bbrlcore.agents.base import Episode
from bbrlcore.distributions import builtin
from bbrlcore.formats.artefacts import atomic_path

OUT = Path(__file__).resolve().parent / "results"
N_MDPS = 6
N_MDPS_GRID = 3
REPEATS = 3
T_SCALING = 10

#: ms per trajectory of the original C++ library (T = 250).
REFERENCE = [
    ("bamcp", {"K": 500, "D": 15}, "GC", 510),
    ("bamcp", {"K": 500, "D": 15}, "GDL", 961),
    ("bamcp", {"K": 500, "D": 15}, "Grid", 15781),
    ("bfs3", {"K": 1, "C": 15, "D": 25}, "GC", 393),
    ("bfs3", {"K": 1, "C": 15, "D": 25}, "GDL", 187),
    ("bfs3", {"K": 500, "C": 15, "D": 15}, "GC", 6190),
    ("bfs3", {"K": 500, "C": 15, "D": 15}, "GDL", 5337),
]
MODULES = {"bamcp": bamcp, "bfs3": bfs3}


@njit(cache=True)
def _uniforms(n):
    np.random.seed(0)
    s = 0.0
    for _ in range(n):
        s += np.random.random()
    return s


def calibration_ns() -> float:
    _uniforms(10)
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        _uniforms(5_000_000)
        best = min(best, (time.perf_counter() - t) / 5_000_000 * 1e9)
    return best


def _player(name: str, params: dict, dist: str, horizon: int):
    prior = builtin(dist)
    ep = Episode(prior.reward, prior.reward_std, False, prior.initial_state, 0.95, horizon)
    return MODULES[name].make_player(prior, params, None, ep), prior


def time_trajectories(name: str, params: dict, dist: str, n: int, horizon: int = 250):
    play, prior = _player(name, params, dist, horizon)
    rng = np.random.default_rng(12345)
    mdps = [prior.draw_mdp(rng) for _ in range(n)]
    play(mdps[0], 0)  # compile / load the cache
    reps = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for i, P in enumerate(mdps):
            play(P, 1000 + i)
        reps.append((time.perf_counter() - t) / n * 1000.0)
    return min(reps), statistics.median(reps)


def main() -> None:
    t_start = time.perf_counter()
    cal = calibration_ns()
    print(f"calibration: {cal:.1f} ns per np.random.random() in numba")
    ref_rows = []
    for name, params, dist, ref_ms in REFERENCE:
        n = N_MDPS_GRID if dist == "Grid" else N_MDPS
        best, med = time_trajectories(name, params, dist, n)
        row = {
            "agent": name,
            "params": params,
            "distribution": dist,
            "n_mdps": n,
            "ms_per_trajectory_best": round(best, 1),
            "ms_per_trajectory_median": round(med, 1),
            # the keys the cost model (bbrlcore.cost) reads
            "algorithm": name,
            "test": dist,
            "ms_per_trajectory": round(best, 1),
            "original_ms": ref_ms,
            "ratio_best": round(best / ref_ms, 3),
        }
        ref_rows.append(row)
        print(row)
    scaling = []
    for dist in ("GC", "Grid"):
        for D in (15, 50):
            for K in (500, 2500, 10000):
                settings = [("bamcp", {"K": K, "D": D})]
                settings += [("bfs3", {"K": K, "C": C, "D": D}) for C in (2, 15)]
                for name, params in settings:
                    best, med = time_trajectories(name, params, dist, 1, T_SCALING)
                    row = {
                        "agent": name,
                        "params": params,
                        "distribution": dist,
                        "decisions": T_SCALING,
                        "ms_per_decision_best": round(best / T_SCALING, 3),
                        "ms_per_decision_median": round(med / T_SCALING, 3),
                        "algorithm": name,
                        "test": dist,
                        "ms_per_decision": round(best / T_SCALING, 3),
                    }
                    scaling.append(row)
                    print(row)
    total = time.perf_counter() - t_start
    result = {
        "bbrlcore_version": __version__,
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "calibration_ns_per_uniform": round(cal, 2),
        "note": (
            "wall clock; best (and median) of repetitions on a shared 2-core machine; "
            "T = 250, gamma = 0.95 for the reference table; T = "
            f"{T_SCALING} trajectories divided by T for the scaling table"
        ),
        "reference": ref_rows,
        "scaling": scaling,
        "run_time_s": round(total, 1),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    with atomic_path(OUT / "tree_search.json") as p:
        p.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Tree-search agents: speed",
        "",
        f"bbrlcore {__version__}; calibration {cal:.1f} ns per `np.random.random()` in numba "
        "(about 11 ns when the machine is idle). Wall clock, best of "
        f"{REPEATS} repetitions (median in brackets), shared 2-core machine.",
        "",
        "## ms per trajectory (T = 250) vs the original library",
        "",
        "| agent | params | dist | MDPs | ms (best) | ms (median) | original ms | ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in ref_rows:
        ps = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(
            f"| {r['agent']} | {ps} | {r['distribution']} | {r['n_mdps']} | "
            f"{r['ms_per_trajectory_best']} | {r['ms_per_trajectory_median']} | "
            f"{r['original_ms']} | {r['ratio_best']} |"
        )
    lines += [
        "",
        f"## ms per decision (one trajectory of T = {T_SCALING}, divided by T)",
        "",
        "| agent | params | dist | ms/decision (best) | ms/decision (median) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in scaling:
        ps = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(
            f"| {r['agent']} | {ps} | {r['distribution']} | {r['ms_per_decision_best']} | "
            f"{r['ms_per_decision_median']} |"
        )
    lines += ["", f"Benchmark run time: {total:.0f} s.", ""]
    with atomic_path(OUT / "tree_search.md") as p:
        p.write_text("\n".join(lines))
    print(f"done in {total:.0f} s")


if __name__ == "__main__":
    main()
