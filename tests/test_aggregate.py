"""Statistics across experiments (bbrlcore.analysis.aggregate) and the Holm variant of "among the
best": estimators against hand-computed values, the resampling against the expanded
data, the coverage of the intervals on simulated data, the tables and ``bbrl aggregate``."""

from __future__ import annotations

import copy
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps
from scipy.optimize import brentq

from bbrlcore import __version__
from bbrlcore import plan as P
from bbrlcore.analysis import aggregate as A
from bbrlcore.analysis import constraints as analysis
from bbrlcore.analysis import stats
from bbrlcore.analysis.results import summary_table
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------
# Synthetic merged tables


def run_table(exp, alg, agent, returns, online=0.5, steps=250, offline=0.0, compat=False):
    """A run table with every column a run table has (bbrlcore.protocol.RUN_COLUMNS)."""
    n = len(returns)
    test, prior = exp.split("-")
    return pl.DataFrame({
        "experiment": [exp] * n, "test": [test] * n, "prior": [prior] * n,
        "algorithm": [alg] * n, "agent": [agent] * n, "params": [json.dumps({})] * n,
        "compat": [compat] * n, "mdp_index": np.arange(n, dtype=np.int64),
        "discounted_return": np.asarray(returns, dtype=float),
        "online_time_s": np.full(n, online), "n_steps": np.full(n, steps, dtype=np.int64),
        "offline_time_s": np.full(n, offline),
        "seed": np.arange(n, dtype=np.int64) + 1000, "gamma": np.full(n, 0.95),
        "horizon": np.full(n, steps, dtype=np.int64), "test_seed": np.zeros(n, dtype=np.int64),
        "bbrlcore_version": [__version__] * n,
    })


def synthetic(n=13, exps=("GC-GC", "GC-UGC", "Grid-Grid"), seed=0):
    """Random ~10, Optimal ~20, e-greedy eps=0.1 ~15 (1 ms/decision), eps=0.5 ~13
    (0.1 ms/decision), BEB ~17 (10 ms/decision, 5 s offline) and its compat variant ~16.
    Experiments of the same test share the per-MDP base (they play the same MDPs)."""
    rng = np.random.default_rng(seed)
    base, parts = {}, []
    for exp in exps:
        b = base.setdefault(exp.split("-")[0], rng.normal(0, 1, n))
        parts += [
            run_table(exp, "random", "random", 10 + b + rng.normal(0, 1, n)),
            run_table(exp, "optimal", "optimal", 20 + b + rng.normal(0, 1, n)),
            run_table(exp, "e-greedy", "e-greedy__epsilon=0.1", 15 + b + rng.normal(0, 1, n),
                      online=0.25),
            run_table(exp, "e-greedy", "e-greedy__epsilon=0.5", 13 + b + rng.normal(0, 1, n),
                      online=0.025),
            run_table(exp, "beb", "beb__beta=1", 17 + b + rng.normal(0, 2, n), online=2.5,
                      offline=5.0),
            run_table(exp, "beb", "beb__beta=1__compat=true", 16 + b + rng.normal(0, 2, n),
                      online=2.5, offline=5.0, compat=True),
        ]
    return pl.concat(parts)


# ---------------------------------------------------------------------------------------
# Point estimators: hand-computed values


@pytest.mark.parametrize(("x", "expected"), [
    ([1.0, 2.0, 3.0, 100.0], 2.5),  # n = 4: drop 1 each end
    ([0.0, 1.0, 2.0, 100.0, 4.0], 7.0 / 3.0),  # n = 5: floor(5/4) = 1 each end
    ([5.0, -1.0, 3.0, 9.0, 0.0, 2.0, 7.0], 17.0 / 5.0),  # n = 7: drop -1 and 9
    (list(range(10)), 4.5),  # n = 10: drop 2 each end, mean of 2..7
    ([3.0, 1.0, 2.0], 2.0),  # n = 3: floor(3/4) = 0, the plain mean
])
def test_iqm_hand_values_and_scipy_trim_mean(x, expected):
    assert A.iqm(np.array(x)) == pytest.approx(expected)
    assert A.iqm(np.array(x)) == pytest.approx(sps.trim_mean(x, 0.25))


def test_iqm_pools_strata():
    # pooled 0, 1, 2, 3, 10, 20 (n = 6, one dropped each end): mean of 1, 2, 3, 10
    assert A.iqm([np.array([0.0, 10.0]), np.array([1.0, 2.0, 3.0, 20.0])]) == 4.0


def test_mean_and_median_are_over_per_stratum_means():
    strata = [np.array([0.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0]), np.array([0.2])]
    assert A.aggregate_mean(strata) == pytest.approx((0.5 + 1.0 + 0.2) / 3)
    assert A.aggregate_median(strata) == pytest.approx(0.5)
    # rliable's (runs x tasks) layout: one stratum per column
    m = np.array([[0.0, 1.0, 4.0], [1.0, 1.0, 0.0]])
    assert A.aggregate_mean(m) == pytest.approx((0.5 + 1.0 + 2.0) / 3)
    assert A.aggregate_median(m) == pytest.approx(1.0)


def test_optimality_gap_clips_at_one():
    # 1 - mean(0.5, 1, 0.8, 1) = 0.175: the 1.5 does not compensate for the 0.5
    assert A.optimality_gap(np.array([0.5, 1.5, 0.8, 1.0])) == pytest.approx(0.175)
    assert A.optimality_gap(np.array([0.5, 1.5]), gamma=2.0) == pytest.approx(1.0)


def test_performance_profile_is_the_fraction_strictly_above():
    x = np.array([0.0, 0.5, 1.0, 1.2])
    assert A.performance_profile(x, [-1.0, 0.0, 0.5, 1.1, 2.0]).tolist() == [
        1.0, 0.75, 0.5, 0.25, 0.0]


def test_probability_of_improvement_hand_value_and_ties():
    # pairs: 1>0, 1<2, 3>0, 3>2 -> 3/4
    assert A.probability_of_improvement(np.array([1.0, 3.0]), np.array([0.0, 2.0])) == 0.75
    # ties count one half: 1 vs (1, 0) -> (0.5 + 1) / 2
    assert A.probability_of_improvement(np.array([1.0]), np.array([1.0, 0.0])) == 0.75
    # averaged over strata: 1 and 0
    assert A.probability_of_improvement([np.array([2.0]), np.array([0.0])],
                                        [np.array([1.0]), np.array([1.0])]) == 0.5
    x = np.array([3.0, 1.0, 2.0])
    assert A.probability_of_improvement(x, x) == 0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_probability_of_improvement_is_rliables_mann_whitney(seed):
    """rliable: per task, scipy's Mann-Whitney U (alternative greater) / (n_x n_y)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=(7, 3)).astype(float)  # ties on purpose
    y = rng.integers(0, 5, size=(9, 3)).astype(float)
    ref = np.mean([sps.mannwhitneyu(x[:, t], y[:, t], alternative="greater").statistic
                   / (7 * 9) for t in range(3)])
    assert A.probability_of_improvement(x, y) == pytest.approx(ref)
    assert A.probability_of_improvement(x, y) + A.probability_of_improvement(y, x) == (
        pytest.approx(1.0))


def test_paired_probability_of_improvement():
    x, y = np.array([1.0, 3.0, 0.0, 2.0]), np.array([0.0, 3.0, 1.0, 1.0])
    # wins on MDPs 0 and 3, a tie on 1, a loss on 2: (1 + 0.5 + 0 + 1) / 4
    assert A.paired_probability_of_improvement(x, y) == 0.625
    with pytest.raises(BBRLError, match="different sizes"):
        A.paired_probability_of_improvement(x, y[:3])


def test_estimators_refuse_bad_arrays():
    with pytest.raises(BBRLError, match="empty"):
        A.iqm(np.array([]))
    with pytest.raises(BBRLError, match="NaN"):
        A.aggregate_mean(np.array([1.0, np.nan]))
    with pytest.raises(BBRLError, match="3-D"):
        A.iqm(np.zeros((2, 2, 2)))


# ---------------------------------------------------------------------------------------
# The resampling: counts give exactly the statistics of the resampled data


def test_stratified_indices_keep_strata_sizes_and_are_seeded():
    idx = A.stratified_indices([3, 7, 1], n_resamples=300, seed=5)
    assert [a.shape for a in idx] == [(300, 3), (300, 7), (300, 1)]
    assert all(a.min() >= 0 and a.max() < n for a, n in zip(idx, [3, 7, 1], strict=True))
    assert (idx[2] == 0).all()
    # every index of a stratum is drawn about equally often
    assert np.bincount(idx[1].ravel(), minlength=7) / idx[1].size == pytest.approx(
        np.full(7, 1 / 7), abs=0.02)
    again = A.stratified_indices([3, 7, 1], n_resamples=300, seed=5)
    assert all((a == b).all() for a, b in zip(idx, again, strict=True))
    other = A.stratified_indices([3, 7, 1], n_resamples=300, seed=6)
    assert not (idx[1] == other[1]).all()
    # counts of a resample sum to the stratum's size
    c = A._counts(idx[1])
    assert (c.sum(axis=1) == 7).all()
    with pytest.raises(BBRLError, match="n_resamples=10"):
        A.stratified_indices([3], n_resamples=10)
    with pytest.raises(BBRLError, match="at least one"):
        A.stratified_indices([3, 0], n_resamples=100)


def _problem(X, stratum=None, taus=(0.0, 0.5, 1.0)):
    stratum = list(range(len(X))) if stratum is None else stratum
    sizes = [X[stratum.index(s)].shape[0] for s in sorted(set(stratum))]
    return A._Problem([f"e{i}" for i in range(len(X))],
                      [f"f{j}" for j in range(X[0].shape[1])], X, stratum, sizes,
                      np.asarray(taus, dtype=float))


def test_weighted_statistics_equal_those_of_the_resampled_data():
    """A replicate is counts; each statistic of it must equal the array estimator on the
    data the indices select (IQM with non-multiple-of-4 sizes, ties included)."""
    rng = np.random.default_rng(11)
    X = [np.round(rng.normal(0.5, 0.4, (n, 3)), 1) for n in (5, 6, 7)]  # 18 pooled
    p = _problem(X)
    idx = A.stratified_indices(p.sizes, n_resamples=100, seed=3)
    res = A._evaluate(p, [A._counts(i) for i in idx])
    for r in range(0, 100, 9):
        rs = [x[i[r]] for x, i in zip(X, idx, strict=True)]  # resampled data
        for f in range(3):
            col = [s[:, f] for s in rs]
            assert res["mean"][r, f] == pytest.approx(A.aggregate_mean(col))
            assert res["median"][r, f] == pytest.approx(A.aggregate_median(col))
            assert res["iqm"][r, f] == pytest.approx(A.iqm(col))
            assert res["optimality_gap"][r, f] == pytest.approx(A.optimality_gap(col))
            assert res["profile"][r, f] == pytest.approx(
                A.performance_profile(col, p.taus))
        for q, (i, j) in enumerate(p.pairs):
            xi, xj = [s[:, i] for s in rs], [s[:, j] for s in rs]
            assert res["improvement"][r, q] == pytest.approx(
                A.probability_of_improvement(xi, xj))
            assert res["paired"][r, q] == pytest.approx(
                A.paired_probability_of_improvement(xi, xj))


def test_shared_test_sets_share_the_resampled_indices():
    m = synthetic(n=6, exps=("GC-GC", "GC-UGC", "Grid-Grid"))
    prob, _ = A._problem(A.normalised_scores(m), A.best_agents(m), None)
    assert prob.experiments == ["GC-GC", "GC-UGC", "Grid-Grid"]
    assert prob.stratum == [0, 0, 1] and prob.sizes == [6, 6]


def test_single_stratum_mean_interval_matches_scipy_bootstrap():
    """With one stratum the stratified bootstrap is the ordinary one: the percentile
    interval of the mean agrees with scipy.stats.bootstrap's to Monte Carlo error."""
    x = np.random.default_rng(2).normal(0.4, 0.3, 40)
    p = _problem([x[:, None]])
    _, lo, hi = A._bootstrap(p, 20000, 0, 0.95)
    ref = sps.bootstrap((x,), np.mean, n_resamples=20000, method="percentile",
                        rng=np.random.default_rng(1)).confidence_interval
    assert lo["mean"][0] == pytest.approx(ref.low, abs=0.006)
    assert hi["mean"][0] == pytest.approx(ref.high, abs=0.006)


# ---------------------------------------------------------------------------------------
# Coverage of the intervals on simulated data with a known truth


def _mixture_iqm(mus, sd):
    """Interquartile mean of an equal mixture of N(mu, sd): E[X | q25 < X < q75]."""
    mus = np.asarray(mus, dtype=float)

    def cdf(x):
        return float(np.mean(sps.norm.cdf((x - mus) / sd)))

    q25 = brentq(lambda x: cdf(x) - 0.25, -50, 50)
    q75 = brentq(lambda x: cdf(x) - 0.75, -50, 50)
    a, b = (q25 - mus) / sd, (q75 - mus) / sd
    part = mus * (sps.norm.cdf(b) - sps.norm.cdf(a)) + sd * (sps.norm.pdf(a) - sps.norm.pdf(b))
    return float(np.mean(part) / 0.5)


def coverage(n_datasets=600, n_resamples=300, n=50, seed=0):
    """Fractions of 95% intervals covering the truth: the mean and the IQM of family 0,
    and the paired probability of improvement of family 0 over family 1."""
    mus, sd, delta = [0.2, 0.5, 0.9], 0.3, 0.25
    true_mean = float(np.mean(mus))
    true_iqm = _mixture_iqm(mus, sd)
    true_paired = float(sps.norm.sf(delta / 0.2))  # P(X0 > X1), X1 - X0 ~ N(delta, 0.2)
    rng = np.random.default_rng(seed)
    hits = np.zeros(3)
    for k in range(n_datasets):
        X = []
        for mu in mus:
            x0 = rng.normal(mu, sd, n)
            X.append(np.column_stack([x0, x0 + rng.normal(delta, 0.2, n)]))
        _, lo, hi = A._bootstrap(_problem(X), n_resamples, k, 0.95)
        hits += [lo["mean"][0] <= true_mean <= hi["mean"][0],
                 lo["iqm"][0] <= true_iqm <= hi["iqm"][0],
                 lo["paired"][0] <= true_paired <= hi["paired"][0]]
    return hits / n_datasets


def test_intervals_cover_the_truth_at_about_their_nominal_rate():
    rates = coverage()
    assert np.all((rates >= 0.90) & (rates <= 0.99)), rates


# ---------------------------------------------------------------------------------------
# Normalisation and best agents


def test_normalised_scores_use_the_experiment_means():
    m = pl.concat([
        run_table("GC-GC", "random", "random", [1.0, 3.0]),
        run_table("GC-GC", "optimal", "optimal", [11.0, 13.0]),
        run_table("GC-GC", "e-greedy", "e-greedy__epsilon=0.1", [7.0, 2.0]),
    ])
    t = A.normalised_scores(m)
    eg = t.filter(pl.col("algorithm") == "e-greedy").sort("mdp_index")
    assert eg["normalised_score"].to_list() == pytest.approx([0.5, 0.0])
    assert eg["random_mean"][0] == 2.0 and eg["optimal_mean"][0] == 12.0
    assert eg["family"][0] == "e-Greedy"
    means = t.group_by("algorithm").agg(pl.col("normalised_score").mean())
    got = dict(means.iter_rows())
    assert got["random"] == pytest.approx(0.0) and got["optimal"] == pytest.approx(1.0)


def test_normalised_means_match_the_summary_and_keep_paired_z():
    m = synthetic()
    t = A.normalised_scores(m)
    s = summary_table(m)
    per_agent = t.group_by("experiment", "agent").agg(pl.col("normalised_score").mean())
    j = s.join(per_agent, on=["experiment", "agent"], suffix="_mdp")
    assert j["normalised_score"].to_numpy() == pytest.approx(
        j["normalised_score_mdp"].to_numpy())

    def col(frame, agent, c):
        return frame.filter((pl.col("experiment") == "GC-GC") & (pl.col("agent") == agent)
                            ).sort("mdp_index")[c].to_numpy()

    a, b = "beb__beta=1", "e-greedy__epsilon=0.1"
    assert stats.paired_z(col(t, a, "normalised_score"), col(t, b, "normalised_score")) == (
        pytest.approx(stats.paired_z(col(m, a, "discounted_return"),
                                     col(m, b, "discounted_return"))))


def test_normalisation_refuses_what_it_cannot_do():
    ok = synthetic(n=4, exps=("GC-GC",))
    with pytest.raises(BBRLError, match="experiment GC-GC: no Optimal agent"):
        A.normalised_scores(ok.filter(pl.col("algorithm") != "optimal"))
    worse = ok.with_columns(
        pl.when(pl.col("algorithm") == "optimal").then(0.0)
        .otherwise(pl.col("discounted_return")).alias("discounted_return"))
    with pytest.raises(BBRLError, match="not above Random"):
        A.normalised_scores(worse)
    with pytest.raises(BBRLError, match="no column mdp_index"):
        A.normalised_scores(ok.drop("mdp_index"))
    with pytest.raises(BBRLError, match="more than once"):
        A.normalised_scores(pl.concat([ok, ok.filter(pl.col("algorithm") == "random")]))
    with pytest.raises(BBRLError, match="empty"):
        A.normalised_scores(ok.clear())


def test_best_agents_within_bounds():
    m = synthetic()
    b = A.best_agents(m)
    assert set(b["family"]) == {"Random", "e-Greedy", "BEB", "BEB (compat)"}  # no Optimal
    assert b.filter(pl.col("family") == "e-Greedy")["agent"].unique().to_list() == [
        "e-greedy__epsilon=0.1"]
    # 1 ms per decision is over a 0.5 ms bound: the 0.1 ms agent is the best left
    b2 = A.best_agents(m, online_bound=5e-4)
    assert b2.filter(pl.col("family") == "e-Greedy")["agent"].unique().to_list() == [
        "e-greedy__epsilon=0.5"]
    assert "BEB" not in set(b2["family"])
    assert "BEB" not in set(A.best_agents(m, offline_bound=1.0)["family"])
    # compat variants compete within their algorithm on request
    merged = A.best_agents(m, separate_compat=False)
    assert set(merged["family"]) == {"Random", "e-Greedy", "BEB"}
    with pytest.raises(BBRLError, match="online_bound=-1"):
        A.best_agents(m, online_bound=-1)


def test_families_missing_an_experiment_are_left_out():
    m = synthetic()
    # BEB only fits the bounds where it is fast: make it slow on Grid-Grid
    m = m.with_columns(pl.when((pl.col("experiment") == "Grid-Grid")
                               & (pl.col("agent") == "beb__beta=1"))
                       .then(1000.0).otherwise(pl.col("online_time_s")).alias("online_time_s"))
    agg = A.compute(m, n_resamples=100, online_bound=1.0)
    assert agg.excluded == {"BEB": ["Grid-Grid"]}
    assert "BEB" not in agg.tables["metrics"]["family"].to_list()
    assert agg.meta["excluded"] == {"BEB": ["Grid-Grid"]}
    with pytest.raises(BBRLError, match="no agent within the time bounds"):
        A.compute(m, n_resamples=100, online_bound=1e-9)


def test_unpaired_runs_are_refused():
    m = synthetic(n=5).filter(~((pl.col("agent") == "beb__beta=1")
                                & (pl.col("mdp_index") == 4) & (pl.col("experiment") == "GC-GC")))
    with pytest.raises(BBRLError, match=r"^aggregate: experiment GC-GC: agent beb__beta=1 "
                       r"lacks test MDP 4 \(of 0-4\); run its missing chunks$"):
        A.compute(m, n_resamples=100)


# ---------------------------------------------------------------------------------------
# The tables


@pytest.fixture(scope="module")
def agg():
    return A.compute(synthetic(), n_resamples=300, seed=4)


def test_tables_have_the_documented_columns(agg):
    t = agg.tables
    assert set(t) == set(A.TABLE_FILES)
    assert t["metrics"].columns == ["family", "n_experiments", "n_scores"] + [
        f"{m}{s}" for m in A.METRICS for s in ("", "_ci_low", "_ci_high")]
    assert t["profiles"].columns == ["family", "tau", "fraction", "ci_low", "ci_high"]
    assert t["improvement"].columns == [
        "family_x", "family_y", "probability", "ci_low", "ci_high", "paired_probability",
        "paired_ci_low", "paired_ci_high"]
    assert t["best_agents"].columns[:7] == [
        "experiment", "test", "prior", "family", "algorithm", "compat", "agent"]
    assert t["among_best"].columns == [
        "experiment", "family", "agent", "mean", "z", "p_value", "p_adjusted", "among_best",
        "reference", "correction", "alpha", "familywise_error"]
    met = t["metrics"]
    assert met["n_experiments"].to_list() == [3] * 4 and met["n_scores"][0] == 39
    for m in A.METRICS:
        assert (met[f"{m}_ci_low"] <= met[m]).all() and (met[m] <= met[f"{m}_ci_high"]).all()
    assert met["family"][0] == "BEB"  # best IQM first
    # ordered pairs: all of them, complementary
    imp = t["improvement"]
    assert imp.height == 4 * 3
    both = imp.join(imp, left_on=["family_x", "family_y"], right_on=["family_y", "family_x"])
    assert (both["probability"] + both["probability_right"]).to_numpy() == pytest.approx(1.0)
    assert (both["ci_low"] + both["ci_high_right"]).to_numpy() == pytest.approx(1.0)


def test_point_estimates_equal_the_array_estimators(agg):
    """The engine's point estimates against the estimators applied to the best agents'
    normalised scores (3 experiments x 13 MDPs: IQM over 39, not a multiple of 4)."""
    norm, best = agg.tables["normalised"], agg.tables["best_agents"]
    met = agg.tables["metrics"]
    strata = {}
    for r in best.iter_rows(named=True):
        s = norm.filter((pl.col("experiment") == r["experiment"])
                        & (pl.col("agent") == r["agent"])).sort("mdp_index")
        strata.setdefault(r["family"], []).append(s["normalised_score"].to_numpy())
    for fam, x in strata.items():
        row = met.filter(pl.col("family") == fam).row(0, named=True)
        assert row["mean"] == pytest.approx(A.aggregate_mean(x))
        assert row["median"] == pytest.approx(A.aggregate_median(x))
        assert row["iqm"] == pytest.approx(sps.trim_mean(np.concatenate(x), 0.25))
        assert row["optimality_gap"] == pytest.approx(A.optimality_gap(x))
        prof = agg.tables["profiles"].filter(pl.col("family") == fam)
        assert prof["fraction"].to_numpy() == pytest.approx(
            A.performance_profile(x, prof["tau"].to_numpy()))
    r = agg.tables["improvement"].filter((pl.col("family_x") == "BEB")
                                         & (pl.col("family_y") == "e-Greedy")).row(0, named=True)
    assert r["probability"] == pytest.approx(
        A.probability_of_improvement(strata["BEB"], strata["e-Greedy"]))
    assert r["paired_probability"] == pytest.approx(
        A.paired_probability_of_improvement(strata["BEB"], strata["e-Greedy"]))


def test_same_seed_same_tables_other_seed_other_intervals(agg):
    again = A.compute(synthetic(), n_resamples=300, seed=4)
    for k in agg.tables:
        assert agg.tables[k].equals(again.tables[k]), k
    other = A.compute(synthetic(), n_resamples=300, seed=5).tables["metrics"]
    met = agg.tables["metrics"]
    assert other["iqm"].to_numpy() == pytest.approx(met["iqm"].to_numpy())
    assert not np.allclose(other["iqm_ci_low"].to_numpy(), met["iqm_ci_low"].to_numpy())


def test_compute_checks_its_arguments():
    m = synthetic(n=4)
    for kw, msg in [({"n_resamples": 99}, "n_resamples=99"), ({"seed": -1}, "seed=-1"),
                    ({"confidence": 1.0}, "confidence=1.0"),
                    ({"correction": "bonferroni"}, "correction='bonferroni'"),
                    ({"alpha": 0.0}, "alpha=0.0"), ({"taus": []}, "taus")]:
        with pytest.raises(BBRLError, match=msg):
            A.compute(m, **kw)
    with pytest.raises(BBRLError, match="polars DataFrame"):
        A.compute(m.to_dicts())


def test_write_tables_records_the_settings(agg, tmp_path):
    paths = A.write_tables(agg, tmp_path / "data")
    assert sorted(p.name for p in paths.values()) == sorted(A.TABLE_FILES.values())
    t, meta = artefacts.read_artefact(paths["metrics"], "aggregate")
    assert t.equals(agg.tables["metrics"])
    assert meta["table"] == "metrics" and meta["seed"] == 4 and meta["n_resamples"] == 300
    assert meta["correction"] == "none" and meta["offline_bound_s"] is None
    assert meta["strata"] == [["GC-GC", "GC-UGC"], ["Grid-Grid"]]
    with pytest.raises(BBRLError, match="not a directory"):
        A.write_tables(agg, paths["metrics"])


# ---------------------------------------------------------------------------------------
# Multiple comparisons: Holm


def _holm_by_definition(p, alpha):
    """Holm (1979) literally: H_(i) is rejected iff p_(j) < alpha / (m - j + 1) for all
    j <= i (1-based ranks of the sorted p-values)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rej = [False] * m
    for rank, i in enumerate(order):
        if all(p[order[j]] < alpha / (m - j) for j in range(rank + 1)):
            rej[i] = True
    return rej


def test_holm_hand_worked_example():
    # sorted 0.01 < 0.05/4, 0.015 < 0.05/3, 0.03 >= 0.05/2: stop; 0.04 kept although < 0.05
    p = [0.04, 0.01, 0.03, 0.015]
    assert stats.holm(p, 0.05).tolist() == [False, True, False, True]
    assert stats.holm_adjusted(p) == pytest.approx([0.06, 0.04, 0.06, 0.045])
    assert stats.holm([0.001, 0.02], 0.05).tolist() == [True, True]  # 0.02 < 0.05/1
    assert stats.holm([0.03, 0.02], 0.05).tolist() == [True, True]  # 0.02 < 0.025, 0.03 < 0.05
    assert stats.holm([0.03, 0.026], 0.05).tolist() == [False, False]  # 0.026 >= 0.025
    assert stats.holm([np.nan, 0.001], 0.05).tolist() == [False, True]
    assert stats.holm([], 0.05).tolist() == []


@pytest.mark.parametrize("seed", range(5))
def test_holm_against_its_definition_and_adjusted_pvalues(seed):
    rng = np.random.default_rng(seed)
    p = list(rng.uniform(0, 0.08, 7) ** 1.5)
    rej = stats.holm(p, 0.05)
    assert rej.tolist() == _holm_by_definition(p, 0.05)
    assert (stats.holm_adjusted(p) < 0.05).tolist() == rej.tolist()
    # never more than the uncorrected tests, never less than Bonferroni
    assert not np.any(rej & ~(np.array(p) < 0.05))
    assert not np.any((np.array(p) < 0.05 / 7) & ~rej)


def test_familywise_error_levels():
    assert stats.familywise_error(3, 0.05) == pytest.approx(0.15)
    assert stats.familywise_error(30, 0.05) == 1.0
    assert stats.familywise_error(3, 0.05, "holm") == 0.05
    assert stats.familywise_error(0, 0.05) == 0.0
    with pytest.raises(BBRLError, match="correction='sidak'"):
        stats.familywise_error(3, 0.05, "sidak")


def _with_z(ref, zs, rng):
    """Returns whose paired Z against ``ref`` is exactly each of ``zs``."""
    n = ref.size
    out = []
    for z in zs:
        u = rng.normal(size=n)
        u = (u - u.mean()) / u.std(ddof=1)
        out.append(ref - (z / math.sqrt(n) + u))  # d = ref - x has mean z/sqrt(n), sd 1
    return out


def test_among_best_holm_keeps_what_the_uncorrected_test_drops():
    """z = 2.0, 1.8, 1.7 (p = 0.023, 0.036, 0.045): each is > 1.645, so the paper's
    procedure drops all three; Holm compares 0.023 with 0.05/3 and stops: keeps all."""
    rng = np.random.default_rng(0)
    ref = rng.normal(10, 1, 100)
    a, b, c = _with_z(ref, [2.0, 1.8, 1.7], rng)
    ret = {"r": ref, "a": a, "b": b, "c": c}
    scores = pl.DataFrame({
        "family": ["R", "A", "B", "C"], "agent": list("rabc"),
        "mean": [float(ret[k].mean()) for k in "rabc"],
        "offline_time_s": [0.0] * 4, "online_time_per_decision_s": [0.0] * 4})
    assert stats.paired_z(ref, a) == pytest.approx(2.0)
    none = analysis.among_best(scores, ret, 0.05)
    assert set(none.filter(pl.col("among_best"))["family"]) == {"R"}
    assert none.equals(analysis.among_best(scores, ret, 0.05, correction="none"))
    holm = analysis.among_best(scores, ret, 0.05, correction="holm")
    assert set(holm.filter(pl.col("among_best"))["family"]) == {"R", "A", "B", "C"}
    assert holm.columns == none.columns
    # a larger gap is rejected by both
    ret["a"] = _with_z(ref, [5.0], rng)[0]
    holm = analysis.among_best(scores, ret, 0.05, correction="holm")
    assert set(holm.filter(pl.col("among_best"))["family"]) == {"R", "B", "C"}
    with pytest.raises(BBRLError, match="correction"):
        analysis.among_best(scores, ret, 0.05, correction="bh")
    cmap = analysis.constraint_map(scores, ret, 0.05, 2, correction="holm")
    assert set(cmap.filter(pl.col("among_best"))["family"]) == {"R", "B", "C"}


def test_among_best_table_states_the_level():
    m = synthetic()
    none = A.among_best_table(m)
    holm = A.among_best_table(m, correction="holm")
    # 3 contenders against the reference in each experiment
    assert none["familywise_error"].unique().to_list() == [pytest.approx(0.15)]
    assert holm["familywise_error"].unique().to_list() == [0.05]
    nonref = holm.filter(~pl.col("reference"))
    assert (nonref["p_adjusted"] >= nonref["p_value"]).all()
    assert nonref["p_value"].to_numpy() == pytest.approx(
        sps.norm.sf(nonref["z"].to_numpy()))
    # Holm never keeps fewer families among the best
    assert holm["among_best"].sum() >= none["among_best"].sum()


# ---------------------------------------------------------------------------------------
# Configuration keys


BASE = {"experiments": [{"test": "GC", "prior": "GC"}], "algorithms": {"random": {}}}


def test_config_statistics_keys_defaults_and_checks():
    plan = P.load(copy.deepcopy(BASE))
    c = plan.config
    assert (c["alpha"], c["multiple_comparisons"], c["bootstrap_resamples"],
            c["bootstrap_seed"]) == (0.05, "none", 2000, 0)
    assert P.load({**BASE, "multiple_comparisons": "holm", "bootstrap_resamples": "5e3"}
                  ).config["bootstrap_resamples"] == 5000
    for key, value, msg in [("bootstrap_resamples", 50, "bootstrap_resamples=50: must be >= 100"),
                            ("bootstrap_seed", -1, "bootstrap_seed=-1: must be >= 0"),
                            ("bootstrap_seed", 1.5, "bootstrap_seed=1.5: expected an integer"),
                            ("multiple_comparisons", "bh", "multiple_comparisons='bh'"),
                            ("alpha", 1.5, "alpha=1.5: must be in (0, 1)")]:
        with pytest.raises(BBRLError) as exc:
            P.load({**copy.deepcopy(BASE), key: value})
        assert str(exc.value).startswith("config.yaml: ") and msg in str(exc.value)
        assert "\n" not in str(exc.value)


def test_config_schema_knows_the_statistics_keys():
    import jsonschema
    import yaml

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(P.load(ROOT / "config.yaml").config, schema)
    for key, bad in [("bootstrap_resamples", 10), ("multiple_comparisons", "bh"),
                     ("alpha", 1.0), ("bootstrap_seed", -2)]:
        cfg = {**P.load(ROOT / "config.yaml").config, key: bad}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(cfg, schema)


# ---------------------------------------------------------------------------------------
# bbrl aggregate


def _cli(bbrl_cmd, env, cwd, *args):
    return subprocess.run(bbrl_cmd + ["aggregate", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_cli_prints_and_writes_the_tables(tmp_path, bbrl_cmd, env_with_cache):
    artefacts.write_artefact(tmp_path / "merged.parquet", synthetic(), "merged",
                             {"experiments": ["GC-GC", "GC-UGC", "Grid-Grid"]})
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "merged.parquet", "--resamples", "200",
             "--seed", "3", "--correction", "holm", "--online-bound", "0.005", "-o", "data")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for s in ("IQM", "optimality gap", "P(X > Y)", "tau=0.5", "Holm step-down",
              "200 resamples, seed 3", "online bound 0.005 s", "GC-GC, GC-UGC; Grid-Grid"):
        assert s in out, s
    assert "BEB" not in out.split("Aggregate")[1]  # 10 ms per decision is over the bound
    assert "e-Greedy" in out
    met, meta = artefacts.read_artefact(tmp_path / "data" / "aggregate-metrics.parquet",
                                        "aggregate")
    assert meta["online_bound_s"] == 0.005 and meta["correction"] == "holm"
    assert set(met["family"]) == {"Random", "e-Greedy"}


def test_cli_bad_input_is_one_line_exit_2(tmp_path, bbrl_cmd, env_with_cache):
    m = synthetic(n=4).filter(pl.col("algorithm") != "random")
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100")
    assert r.returncode == 2
    assert r.stderr.startswith("bbrl: error: experiment GC-GC: no Random agent")
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "10")
    assert r.returncode == 2 and "--resamples 10: must be >= 100" in r.stderr
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "missing.parquet")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_cli_versus_prints_one_algorithm_against_every_other(tmp_path, bbrl_cmd,
                                                             env_with_cache):
    """Issue 25: ``--versus NAME`` prints P(NAME > Y) and P(Y > NAME) with intervals for
    every other algorithm Y; an unknown name is one line listing the algorithms."""
    from synthetic_runs import learning_runs

    m = learning_runs(("GC-GC", "GC-UGC"), n=10, T=8)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100",
             "--versus", "beb (compat)")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("BEB (compat) against every other algorithm")[1]
    lines = [ln for ln in block.split("-----\n", 1)[1].splitlines() if ln.strip()]
    others = ["Random", "e-Greedy", "Soft-max", "BAMCP", "BEB", "PSRL", "BOSS"]
    assert sorted(ln.split("  ")[0] for ln in lines) == sorted(others)
    assert "P(BEB (compat) > Y)" in block and "P(Y > BEB (compat))" in block
    from bbrlcore.cli.aggregate import _ci

    agg = A.compute(m, n_resamples=100)
    v = A.versus(agg, "BEB (compat)")
    for row in v.iter_rows(named=True):
        line = next(ln for ln in lines if ln.startswith(row["opponent"] + "  "))
        assert _ci(row["probability"], row["ci_low"], row["ci_high"]) in line
        assert _ci(row["reverse_probability"], row["reverse_ci_low"],
                   row["reverse_ci_high"]) in line
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100",
             "--versus", "mine")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr.startswith("bbrl: error: --versus 'mine': no such algorithm")
    assert "Random, e-Greedy, Soft-max, BAMCP, BEB, BEB (compat), PSRL, BOSS" in r.stderr


def test_cli_versus_takes_a_plugins_display_name(tmp_path, bbrl_cmd, env_with_cache):
    """Issue 33: ``--versus`` takes the name the report shows for a plugin (its declared
    display name, with ``--plugins REF`` as the report gets it), its id, any case; an
    unknown name is one line listing the algorithms and saying how a plugin's display
    name becomes known."""
    from synthetic_runs import ALGORITHMS, learning_runs

    (tmp_path / "pm.py").write_text(
        "from bbrlcore.agents import Param, PythonAgent\n\n\n"
        "class PM(PythonAgent):\n"
        "    name = 'pm-bonus'\n"
        "    display_name = 'PM + count bonus'\n"
        "    params = (Param('beta', float, default=1.0),)\n\n"
        "    def act(self, state):\n"
        "        return 0\n")
    algs = [a for a in ALGORITHMS if a[0] != "boss"] + [
        ("pm-bonus", "pm-bonus__beta=1", False, 0.1, 0.9, 5.0, 0.0)]
    m = learning_runs(("GC-GC", "GC-UGC"), algorithms=algs, n=10, T=8)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    for name in ("PM + count bonus", "pm + COUNT bonus", "pm-bonus"):
        r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100",
                 "--plugins", "pm.py:PM", "--versus", name)
        assert r.returncode == 0, (name, r.stderr)
        assert "PM + count bonus against every other algorithm" in r.stdout, name
        assert "pm-bonus" not in r.stdout  # the tables show it by its display name
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100",
             "--versus", "PM + count bonus")  # its display name is unknown without --plugins
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("bbrl: error: --versus 'PM + count bonus': no such algorithm")
    assert "pm-bonus" in r.stderr and "--plugins REF" in r.stderr
    r = _cli(bbrl_cmd, env_with_cache, tmp_path, "m.parquet", "--resamples", "100",
             "--versus", "pm-bonus")  # its id works without
    assert r.returncode == 0, r.stderr


def test_find_family_refuses_an_ambiguous_name_in_one_line():
    with pytest.raises(BBRLError) as exc:
        A.find_family("mine", ["Random", "Mine", "MINE"])
    assert str(exc.value) == ("--versus 'mine': ambiguous: it names MINE and Mine (give one "
                              "as written)")
    assert A.find_family("Mine", ["Mine", "MINE"]) == "Mine"
