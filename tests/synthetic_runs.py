"""Synthetic merged run tables WITH per-step rewards, for the report's tests (learning
curves, the comparison of one algorithm with the others): no agent is trained or run, so
a report of eight algorithms on a ladder of sizes builds in seconds.

Each agent succeeds at step t with probability ``d_i * p(t)`` (reward 1, else 0), where
``d_i`` is the test MDP's ease (shared by every agent: the runs are paired) and
``p(t) = end + (start - end) * exp(-t / tau)`` its learning curve; Random and Optimal have
flat curves (0.1 and 0.9).
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: (algorithm, agent id, compat, p(0), p(T), tau, offline time in seconds)
ALGORITHMS = (
    ("random", "random", False, 0.1, 0.1, 1.0, 0.0),
    ("optimal", "optimal", False, 0.9, 0.9, 1.0, 0.0),
    ("e-greedy", "e-greedy__epsilon=0.1", False, 0.2, 0.55, 20.0, 0.0),
    ("e-greedy", "e-greedy__epsilon=0.5", False, 0.15, 0.4, 20.0, 0.0),
    ("soft-max", "soft-max__tau=0.1", False, 0.2, 0.5, 15.0, 0.0),
    ("beb", "beb__beta=1", False, 0.1, 0.8, 12.0, 0.0),
    ("beb", "beb__beta=1__compat=true", True, 0.1, 0.7, 12.0, 0.0),
    ("bamcp", "bamcp__K=10__depth=5", False, 0.25, 0.75, 8.0, 0.0),
    ("psrl", "psrl", False, 0.15, 0.85, 10.0, 0.0),
    ("boss", "boss__K=2__B=5", False, 0.12, 0.6, 25.0, 0.0),
)


#: Every built-in algorithm at cheap parameters, ``(name, raw parameters)``, compat
#: variants where their kernel differs: what tests/test_rewards.py and
#: tests/test_episodes.py run through each built-in (real agents, not synthetic runs).
BUILTINS = [
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.1"}),
    ("soft-max", {"tau": "0.1"}), ("soft-max", {"tau": "1", "compat": "true"}),
    ("beb", {"beta": "0.5"}), ("sboss", {"epsilon": "1", "delta": "1"}),
    ("sboss", {"epsilon": "1", "delta": "1", "compat": "true"}),
    ("formula", {"formula": "Q2/Q0"}), ("opps-ds", {"formula_set": "F2", "n_draws": "12"}),
    ("bamcp", {"K": "10", "D": "5"}), ("bfs3", {"K": "4", "C": "2", "D": "3"}),
    ("psrl", {}), ("boss", {"K": "2", "B": "2"}), ("bolt", {"eta": "1"}),
    ("mbie-eb", {"beta": "1"}),
]
#: pytest ids of :data:`BUILTINS`
BUILTIN_IDS = ["-".join([a, *v.values()]) for a, v in BUILTINS]


def learning_runs(experiments=("GC-GC", "GC-UGC"), algorithms=ALGORITHMS, n: int = 20,
                  T: int = 30, gamma: float = 0.95, seed: int = 0,
                  offline: dict[tuple[str, str], float] | None = None,
                  rewards: bool = True) -> pl.DataFrame:
    """A merged run table: every agent of ``algorithms`` on ``n`` test MDPs of each
    experiment (``TEST-PRIOR``, the test being the part before the first dash that makes a
    known prefix: ``DeepSea-10-UDeepSea-10`` -> test ``DeepSea-10``). ``offline`` gives
    some agents an offline time ((experiment, agent id) -> seconds); ``rewards=False`` leaves the
    ``rewards`` and ``undiscounted_return`` columns out (a table made before bbrl recorded
    them)."""
    from bbrlcore import __version__

    rng = np.random.default_rng(seed)
    rows = []
    t = np.arange(T)
    for e_i, exp in enumerate(experiments):
        test, prior = _split(exp)
        ease = rng.uniform(0.7, 1.0, n)
        for alg, agent, compat, p0, p1, tau, off in algorithms:
            p = p1 + (p0 - p1) * np.exp(-t / tau)
            if prior != test and alg not in ("random", "optimal"):  # a worse prior learns slower
                p = p1 + (p0 - p1) * np.exp(-t / (2 * tau))
            for i in range(n):
                r = (rng.random(T) < ease[i] * p).astype(np.float32)
                ret, disc = 0.0, 1.0
                for x in r:
                    ret += disc * float(x)
                    disc *= gamma
                row = {"experiment": exp, "test": test, "prior": prior, "algorithm": alg,
                       "agent": agent, "params": "{}", "compat": compat, "mdp_index": i,
                       "discounted_return": ret,
                       "online_time_s": 1e-3 * (1 + e_i) * (1 + len(agent) / 10),
                       "n_steps": T,
                       "offline_time_s": (offline or {}).get((exp, agent), off),
                       "seed": 0, "gamma": gamma, "horizon": T, "test_seed": 0,
                       "bbrlcore_version": __version__}
                if rewards:
                    row["undiscounted_return"] = float(r.astype(np.float64).sum())
                    row["rewards"] = r.tolist()
                rows.append(row)
    df = pl.DataFrame(rows)
    if rewards:
        df = df.with_columns(pl.col("rewards").cast(pl.List(pl.Float32)))
    return df


def _split(exp: str) -> tuple[str, str]:
    """``GC-UGC`` -> (GC, UGC); ``DeepSea-10-UDeepSea-10`` -> (DeepSea-10, UDeepSea-10)."""
    parts = exp.split("-")
    for k in range(1, len(parts)):
        test, prior = "-".join(parts[:k]), "-".join(parts[k:])
        if prior in (test, "U" + test):
            return test, prior
    return parts[0], "-".join(parts[1:])
