"""Compile the analysis' numba kernels into numba's cache (``bbrl warmup``; the
algorithms': :mod:`bbrlcore.protocol.warmup`): a family's test sets with their reference
values (continuing and episodic), its hardness measures, and the bootstrap of the
aggregate metrics over a tiny merged table."""

from __future__ import annotations

import time


def warm_analysis() -> float:
    """Compile the analysis' kernels: a family's test set with its reference values
    (continuing and episodic), its hardness measures, and the bootstrap of the aggregate
    metrics over a tiny merged table. Returns the seconds it took."""
    import polars as pl

    from bbrlcore import protocol as E
    from bbrlcore.analysis import aggregate
    from bbrlcore.mdp import distributions as D
    from bbrlcore.mdp import hardness as H

    t0 = time.perf_counter()
    fam = D.load_test("DeepSea-4")
    E.new_test_set(fam, 1, 0.95, 8, 0, episode_length=4)
    ts = E.new_test_set(fam, 2, 0.95, 8, 0)
    H.hardness_table(ts)
    gc = D.load_test("GC")
    ts = E.new_test_set(gc, 4, 0.95, 5, 0)
    runs = []
    for name, params in (("random", {}), ("e-greedy", {"epsilon": 0.5}), ("optimal", {})):
        agent = E.train_agent(name, dict(params), gc, horizon=5, progress=False,
                              source="warmup")
        runs.append(E.run_agent(ts, agent, progress=False, label="GC-GC"))
    aggregate.compute(pl.concat(runs, how="diagonal"), n_resamples=100, seed=0)
    return time.perf_counter() - t0
