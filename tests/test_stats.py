"""Statistics of 00-decisions §3: interval, paired Z-test, summary table."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from bbrlcore.analysis import stats
from bbrlcore.analysis.results import merge_tables, summary_table
from bbrlcore.errors import BBRLError


def test_mean_ci_is_mean_pm_196_sample_std_over_sqrt_n():
    rng = np.random.default_rng(3)
    x = rng.normal(5.0, 2.0, size=37)
    m, lo, hi = stats.mean_ci(x)
    half = 1.96 * np.std(x, ddof=1) / math.sqrt(len(x))
    assert m == pytest.approx(x.mean())
    assert lo == pytest.approx(x.mean() - half)
    assert hi == pytest.approx(x.mean() + half)


def test_mean_ci_single_value_and_empty():
    assert stats.mean_ci([2.5]) == (2.5, 2.5, 2.5)
    with pytest.raises(BBRLError):
        stats.mean_ci([])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paired_z_equals_scipy_ttest_rel(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(1.0, 1.0, 50)
    b = a + rng.normal(-0.2, 0.5, 50)
    assert stats.paired_z(a, b) == pytest.approx(sps.ttest_rel(a, b).statistic, rel=1e-12)


def test_identical_lists_are_not_different():
    a = [1.0, 2.0, 3.0, 4.0]
    assert stats.paired_z(a, a) == 0.0
    assert not stats.significantly_better(a, a)
    assert not stats.significantly_different(a, a)


def test_one_sided_decision_uses_normal_quantile():
    assert stats.z_threshold(0.05) == pytest.approx(1.6448536, rel=1e-6)
    rng = np.random.default_rng(7)
    b = rng.normal(0, 1, 200)
    a = b + 0.5 + rng.normal(0, 0.1, 200)
    assert stats.significantly_better(a, b)
    assert not stats.significantly_better(b, a)
    assert stats.significantly_different(b, a)
    with pytest.raises(BBRLError):
        stats.z_threshold(1.5)


def test_paired_z_constant_nonzero_difference_is_infinite():
    assert stats.paired_z([2.0, 3.0], [1.0, 2.0]) == math.inf


def _run_table(exp, alg, agent, returns, steps=250, offline=0.0):
    n = len(returns)
    return pl.DataFrame(
        {
            "experiment": [exp] * n,
            "test": [exp.split("-")[0]] * n,
            "prior": [exp.split("-")[1]] * n,
            "algorithm": [alg] * n,
            "agent": [agent] * n,
            "params": [json.dumps({})] * n,
            "compat": [False] * n,
            "mdp_index": np.arange(n, dtype=np.int64),
            "discounted_return": np.asarray(returns, dtype=float),
            "online_time_s": np.full(n, 0.5),
            "n_steps": np.full(n, steps, dtype=np.int64),
            "offline_time_s": np.full(n, offline),
        }
    )


def test_summary_normalises_random_zero_optimal_one_and_shortfall():
    t = merge_tables(
        [
            _run_table("GC-GC", "random", "random", [1.0, 3.0]),
            _run_table("GC-GC", "optimal", "optimal", [11.0, 13.0]),
            _run_table("GC-GC", "e-greedy", "e-greedy__epsilon=0.1", [6.0, 8.0], steps=100),
            _run_table("GC-UGC", "e-greedy", "e-greedy__epsilon=0.1", [6.0, 8.0]),
        ]
    )
    s = summary_table(t)
    assert s.columns == [
        "experiment", "test", "prior", "algorithm", "agent", "params", "compat", "grid_size",
        "n", "mean",
        "ci_low", "ci_high", "offline_time_s", "online_time_per_decision_s",
        "normalised_score", "shortfall", "score",
    ]
    row = s.filter((pl.col("experiment") == "GC-GC") & (pl.col("algorithm") == "e-greedy"))
    assert row["normalised_score"][0] == pytest.approx(0.5)
    assert row["shortfall"][0] == pytest.approx(5.0)  # Optimal's mean 12 − 7
    assert row["online_time_per_decision_s"][0] == pytest.approx(0.5 / 100)
    assert row["n"][0] == 2
    opt = s.filter((pl.col("experiment") == "GC-GC") & (pl.col("algorithm") == "optimal"))
    assert opt["normalised_score"][0] == pytest.approx(1.0)
    other = s.filter(pl.col("experiment") == "GC-UGC")
    assert other["normalised_score"][0] is None and other["shortfall"][0] is None


def test_merge_refuses_overlapping_chunks():
    a = _run_table("GC-GC", "random", "random", [1.0, 2.0])
    with pytest.raises(BBRLError, match="more than once"):
        merge_tables([a, a])
