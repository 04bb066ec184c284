r"""Statistics across experiments: normalised scores, aggregate metrics with stratified
bootstrap intervals, performance profiles and probabilities of improvement.

The paper (Castronovo et al. 2016) compares agents one experiment at a time. This module
aggregates over experiments the way Agarwal et al. recommend ("Deep Reinforcement
Learning at the Edge of the Statistical Precipice", NeurIPS 2021, and their library
rliable), using what bbrl's design adds: every agent plays the *same* test MDPs, so
every comparison can be paired. Everything is a polars table ("tables first"); figures
are drawn from the tables.

Normalised score
----------------
For agent *a* on test MDP *i* of experiment *e*, with discounted return :math:`R_{a,e,i}`,

.. math:: x_{a,e,i} = \frac{R_{a,e,i} - \bar R_{\mathrm{Random},e}}
                           {\bar R_{\mathrm{Optimal},e} - \bar R_{\mathrm{Random},e}}

where :math:`\bar R` are the experiment's **means** of Random and Optimal over its N test
MDPs. Random scores 0 and Optimal 1 on average; a single MDP can score below 0 or above 1.
Why the means and not the per-MDP returns of Random and Optimal: each is one noisy
trajectory, so on a given MDP the span :math:`R_{\mathrm{Optimal},e,i} -
R_{\mathrm{Random},e,i}` can be near zero or negative (Random can be lucky, Optimal
unlucky) and the ratio explodes or changes sign. With the means the score is an affine
transform of the return within an experiment: orderings, paired differences, Z statistics
and per-experiment intervals are those of the returns, rescaled, and the mean of an
agent's per-MDP scores is exactly the ``normalised_score`` of ``summary.parquet``. The
normalising means are taken as fixed (the intervals are conditional on them), as rliable
does with its human and random reference scores.

Which agents are compared
-------------------------
Within each experiment, each **family** (an algorithm; its compat variant a family of its
own, as in the report, unless ``separate_compat=False``) is represented by its **best
agent**: the highest mean return among its agents within the offline-time and
online-time-per-decision bounds (ties broken by agent id). Optimal is the reference, not
a contender; Random is a contender (its scores are near 0). The paper's selection
(``selection: test``) chooses on the same test MDPs as the statistics, so the best
agent's scores are optimistic (the winner's curse), the more so the larger the family's
grid; with a summary chosen on validation MDPs (``selection: validation``,
:mod:`bbrlcore.analysis.selection`) the best agent is the one with the highest mean on
the validation MDPs and every statistic here uses its test scores, unbiased. The
best-agent table gives each family's ``grid_size`` (its tuning budget).

Aggregate metrics (Agarwal et al. 2021, §4; rliable's ``metrics``)
-----------------------------------------------------------------
With the best agent's scores :math:`x_{e,i}` (E experiments, :math:`N_e` MDPs each):

* **mean**: mean over experiments of the per-experiment mean score,
  :math:`\frac1E\sum_e \bar x_e` (each experiment weighs the same);
* **median**: median over experiments of :math:`\bar x_e` (with few experiments it moves in
  jumps and its interval is wide: Agarwal et al. recommend the IQM instead);
* **IQM**, the interquartile mean: the mean of the middle half of all pooled scores,
  ``scipy.stats.trim_mean(x, 0.25)``, which removes :math:`k = \lfloor n/4 \rfloor` scores
  from each end of the n pooled scores (so for n = 10 the mean of the 6 middle ones).
  Robust to outlying MDPs like the median, but uses half the data, so it is far less
  noisy than the median;
* **optimality gap**: :math:`\gamma - \frac1n\sum \min(x, \gamma)` with γ = 1, how far the
  scores fall short of Optimal's mean (scores above 1 do not compensate for others).

IQM, optimality gap and the performance profile pool every (experiment, MDP) score, as
rliable does; when experiments have different N, one with more MDPs weighs more.

**Performance profile** (run-score distribution): :math:`F(\tau)`, the fraction of pooled
scores above τ, over a grid of τ. An algorithm whose profile lies above another's
everywhere is better on every quantile (stochastic dominance).

**Probability of improvement** of family X over family Y: within experiment e,
:math:`P_e(X > Y) = \frac{1}{N_e^2}\sum_{i,j}\big(\mathbb 1[x_i > y_j] + \tfrac12
\mathbb 1[x_i = y_j]\big)`, the Mann–Whitney U statistic divided by :math:`N_e^2`; then
averaged over experiments. This is rliable's ``probability_of_improvement`` (column
``probability``): the chance that a random trajectory of X beats a random trajectory of Y
on the same distribution. bbrl's pairing allows a second, **paired** version (column
``paired_probability``): :math:`\frac1{N_e}\sum_i\big(\mathbb 1[x_i > y_i] +
\tfrac12\mathbb 1[x_i = y_i]\big)`, the chance that X beats Y *on the same test MDP*.
Both satisfy :math:`P(X>Y) + P(Y>X) = 1`.

Stratified bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, Chapman &
Hall 1993: the bootstrap of several samples and the percentile interval; Agarwal et al.
2021, §4 and their appendix)
------------------------------------------------------------------------------------------
Each experiment's test MDPs are an i.i.d. sample of its test distribution, and the
experiments are fixed: the **strata**. A replicate draws, in each stratum, :math:`N_e`
MDP indices uniformly with replacement and recomputes the metric; the 95% interval is the
2.5% and 97.5% percentiles of the replicates (the percentile method, rliable's default).
Two refinements of "strata = experiments" follow from bbrl's design:

* **paired**: a replicate draws its indices once and applies them to *every* family
  (Random and Optimal included), so differences and probabilities of improvement keep the
  pairing. rliable bootstraps each algorithm on its own (and X and Y independently for
  the probability of improvement), which is right for independent runs but discards the
  pairing here.
* **shared test sets**: the two experiments of a test distribution (GC-GC and GC-UGC)
  play the *same* test MDPs, so they are not independent samples. The resampling unit is
  the test set: experiments with the same ``test`` (and ``test_seed`` when recorded)
  and the same MDP indices share the drawn indices; an experiment with a test set of its
  own is its own stratum.

A resample is kept as **counts** (how often each MDP was drawn), so a metric of a
resample is a weighted statistic of the original scores: means are one matrix product,
and the IQM and the profiles use the sorted scores with cumulative counts, which gives
exactly ``trim_mean`` of the resampled data without sorting each replicate. Replicates
are drawn by ``numpy.random.default_rng(seed)`` in blocks of
:data:`bbrlcore.analysis.estimators.BLOCK`: the same seed and the same number of resamples
give the same tables on any machine.

Resampling library: a vectorised numpy stratified bootstrap, not rliable nor
``scipy.stats.bootstrap``, because

* rliable 1.2.0 installs with our pins but does not import: its dependency ``arch``
  (7.2.0) fails against pandas 3 (``deprecate_kwarg() missing 1 required positional
  argument``), which this environment has through snakemake-executor-plugin-slurm; it
  would also bring statsmodels, arch, seaborn, absl-py and their dependencies (about
  80 MB); its resampling draws from numpy's global random state (``np.random.choice``, so its
  ``random_state`` argument does not make runs reproducible), it needs the same number
  of runs for every task, and it does not pair algorithms (above);
* ``scipy.stats.bootstrap`` resamples observations jointly along one axis (``paired=True``
  pairs several samples, which we need) but has no strata: resampling the pooled MDPs
  would let one experiment's share of the data vary between replicates, which is not how
  the data were sampled (each experiment has exactly :math:`N_e` MDPs) and inflates the
  intervals of between-experiment metrics. It is used in the tests as a cross-check
  where the two coincide (a single stratum).

The estimators are rliable's definitions, computed with what rliable calls
(``scipy.stats.trim_mean``, ``scipy.stats.mannwhitneyu``'s U) and checked against both in
the tests; the bootstrap is numpy plus two small numba kernels (the IQM/profile pass and
the Mann–Whitney pass), about 1 s for the paper's size (6 experiments × 500 MDPs, 11
families, 2000 resamples) where plain numpy took 11 s. The tests check that a replicate's
statistics equal the estimators on the resampled data, and that the 95% intervals cover
a known truth at about 95% on simulated data (measured: 0.937 for the mean, 0.941 for the
IQM and 0.939 for the paired probability of improvement with 3 strata of 50 MDPs, 4000
datasets; 0.93, 0.93 and 0.91 with strata of 20: the percentile interval is slightly
narrow for small samples, as is well known, and approaches its level as N grows).

Multiple comparisons
--------------------
:func:`among_best_table` applies the paper's "among the best" per experiment (one-sided
paired Z-tests of each family's best agent against the reference) with ``correction=
"none"`` (the paper: each test at level α; family-wise error up to min(1, m·α) for m
comparisons) or ``"holm"`` (Holm 1979, step-down: family-wise error at most α); see
:mod:`bbrlcore.analysis.stats`. The table records the level used (``familywise_error``).

Tables (:func:`compute` returns them all; :func:`write_tables` writes them as bbrl
Parquet artefacts of kind ``aggregate``):

==================  =====================================================================
``normalised``      one row per experiment × agent × test MDP: ``experiment, test, prior,
                    algorithm, compat, family, agent, mdp_index, discounted_return,
                    random_mean, optimal_mean, normalised_score``
``best_agents``     one row per experiment × family: ``experiment, test, prior, family,
                    algorithm, compat, agent, n, mean, ci_low, ci_high,
                    normalised_score, offline_time_s, online_time_per_decision_s``
``metrics``         one row per family, best IQM first: ``family, n_experiments,
                    n_scores``, then for each of ``mean, median, iqm, optimality_gap``:
                    the estimate and its ``_ci_low``, ``_ci_high``
``profiles``        one row per family × τ: ``family, tau, fraction, ci_low, ci_high``
                    (pointwise bands)
``improvement``     one row per ordered pair: ``family_x, family_y, probability, ci_low,
                    ci_high, paired_probability, paired_ci_low, paired_ci_high``
``among_best``      one row per experiment × family: ``experiment, family, agent, mean,
                    z, p_value, p_adjusted, among_best, reference, correction, alpha,
                    familywise_error``
``regret``          one row per family, lowest IQM first: Colosseum's per-step
                    normalised regret at the end of the interaction
                    (:func:`regret_metrics`) over the experiments whose runs carry their
                    test MDPs' references: ``family, n_experiments, n_scores`` and
                    ``mean, median, iqm`` with their ``_ci_low``, ``_ci_high``
==================  =====================================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bbrlcore.analysis import stats
from bbrlcore.analysis.estimators import (  # noqa: F401 (re-exported: the public API)
    DEFAULT_RESAMPLES,
    METRICS,
    MIN_RESAMPLES,
    Strata,
    _bootstrap,
    _check_resampling,
    _counts,
    _evaluate,
    _Problem,
    aggregate_mean,
    aggregate_median,
    bootstrap_bytes,
    check_memory,
    iqm,
    optimality_gap,
    paired_probability_of_improvement,
    performance_profile,
    probability_of_improvement,
    stratified_indices,
)
from bbrlcore.analysis.results import score_column
from bbrlcore.errors import BBRLError

#: Columns the merged run table must have.
REQUIRED_COLUMNS = (
    "experiment", "test", "prior", "algorithm", "agent", "compat", "mdp_index",
    "discounted_return", "online_time_s", "n_steps", "offline_time_s",
)
#: Tables of :func:`compute`, and the file name each gets from :func:`write_tables`.
TABLE_FILES = {
    "normalised": "aggregate-normalised.parquet",
    "best_agents": "aggregate-best-agents.parquet",
    "metrics": "aggregate-metrics.parquet",
    "profiles": "aggregate-profiles.parquet",
    "improvement": "aggregate-improvement.parquet",
    "among_best": "aggregate-among-best.parquet",
    "regret": "aggregate-regret.parquet",
}

# ---------------------------------------------------------------------------------------
# Tables


def _check_merged(merged: pl.DataFrame, col: str = "discounted_return") -> None:
    if not isinstance(merged, pl.DataFrame):
        raise BBRLError(f"aggregate: expected a polars DataFrame, got {type(merged).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in merged.columns]
    if missing:
        raise BBRLError(f"aggregate: the table has no column {', '.join(missing)} "
                        "(expected a merged run table)")
    if merged.is_empty():
        raise BBRLError("aggregate: the merged run table is empty")
    dup = merged.select("experiment", "agent", "mdp_index").is_duplicated()
    if dup.any():
        r = merged.filter(dup).row(0, named=True)
        raise BBRLError(f"aggregate: experiment {r['experiment']}, agent {r['agent']}, MDP "
                        f"{r['mdp_index']} appears more than once (merge the chunks first)")
    bad = merged.filter(~pl.col(col).cast(pl.Float64).is_finite() | pl.col(col).is_null())
    if not bad.is_empty():
        r = bad.row(0, named=True)
        raise BBRLError(f"aggregate: experiment {r['experiment']}, agent {r['agent']}, MDP "
                        f"{r['mdp_index']}: {col} is {r[col]}")
    from bbrlcore.analysis.results import check_coverage, check_one_setting

    check_one_setting(merged, "aggregate")
    check_coverage(merged, "aggregate")


def _summary_of(merged: pl.DataFrame, score: str,
                summary: pl.DataFrame | None) -> pl.DataFrame:
    """``summary`` (the caller's summary of ``merged`` by ``score``: ``merged`` checked
    already), else ``merged`` checked and summarised; without a ``family`` column (the
    callers add theirs)."""
    if summary is None:
        from bbrlcore.analysis.results import summary_table

        _check_merged(merged, score_column(score, merged))
        return summary_table(merged, score)
    made = set(summary["score"].drop_nulls().to_list()) if "score" in summary.columns \
        else set()
    if made - {score}:
        raise BBRLError(f"aggregate: the summary given was made with score="
                        f"{sorted(made - {score})[0]}, expected score={score}")
    return summary.drop("family", strict=False)


def _family(algorithm: str, compat: bool, separate_compat: bool) -> str:
    from bbrlcore.analysis.constraints import display_name, family

    if separate_compat:
        return family(algorithm, bool(compat))
    return display_name(algorithm)


def _family_order(families: Sequence[str]) -> list[str]:
    from bbrlcore.analysis.constraints import family_order

    return family_order(list(families))


def _with_family(df: pl.DataFrame, separate_compat: bool) -> pl.DataFrame:
    pairs = df.select("algorithm", "compat").unique()
    fam = pairs.with_columns(
        pl.Series("family", [_family(a, bool(c), separate_compat)
                             for a, c in pairs.iter_rows()], dtype=pl.Utf8))
    return df.join(fam, on=["algorithm", "compat"], how="left")


def _bound(value: float | None, name: str) -> float:
    if value is None:
        return math.inf
    v = float(value)
    if math.isnan(v) or v < 0:
        raise BBRLError(f"{name}={value}: must be a number >= 0 (seconds)")
    return v


def _references(merged: pl.DataFrame, col: str = "discounted_return",
                score: str = "discounted") -> pl.DataFrame:
    """Per experiment: Random's and Optimal's mean return (checked); the Optimal is the
    score's reference (:func:`bbrlcore.analysis.results.reference_agents`)."""
    from bbrlcore.analysis.results import reference_agents

    refs = dict(reference_agents(merged, score).select("experiment", "agent").iter_rows())
    rows = []
    for (exp,), g in merged.group_by(["experiment"], maintain_order=True):
        ref = {}
        for alg, nice in (("random", "Random"), ("optimal", "Optimal")):
            a = g.filter(pl.col("algorithm") == alg)
            if alg == "optimal" and exp in refs:
                a = a.filter(pl.col("agent") == refs[exp])
            agents = a["agent"].unique().to_list()
            if not agents:
                raise BBRLError(f"experiment {exp}: no {nice} agent (algorithm {alg!r}); "
                                "normalised scores need Random and Optimal in every "
                                "experiment")
            if len(agents) > 1:
                raise BBRLError(f"experiment {exp}: {len(agents)} {nice} agents "
                                f"({', '.join(sorted(agents))}), expected one")
            ref[alg] = float(a[col].cast(pl.Float64).mean())
        if not ref["optimal"] > ref["random"]:
            raise BBRLError(
                f"experiment {exp}: Optimal's mean return ({ref['optimal']:.6g}) is not above "
                f"Random's ({ref['random']:.6g}); cannot normalise")
        rows.append({"experiment": exp, "random_mean": ref["random"],
                     "optimal_mean": ref["optimal"]})
    return pl.DataFrame(rows)


def normalised_scores(merged: pl.DataFrame, separate_compat: bool = True,
                      score: str = "discounted") -> pl.DataFrame:
    """Per-MDP normalised scores of every agent: Random's mean = 0, Optimal's mean = 1,
    of the ``score`` (``"discounted"``: the discounted return, the paper's; or
    ``"undiscounted"``: the sum of rewards; the returned table holds that column).

    Parameters
    ----------
    merged : polars.DataFrame
        A merged run table (columns :data:`REQUIRED_COLUMNS`), any number of experiments,
        each with a Random and an Optimal agent.
    separate_compat : bool
        Whether a compat variant is a family of its own (``"BEB (compat)"``).

    Returns
    -------
    polars.DataFrame
        ``experiment, test, prior, algorithm, compat, family, agent, mdp_index,
        discounted_return, random_mean, optimal_mean, normalised_score``, sorted by
        experiment, agent and MDP.

    Examples
    --------
    Random's returns 1 and 3 (mean 2), Optimal's 11 and 13 (mean 12): a return of 7 scores
    (7 − 2) / (12 − 2) = 0.5.
    """
    col = score_column(score, merged)
    _check_merged(merged, col)
    ref = _references(merged, col, score)
    t = _with_family(merged, separate_compat).join(ref, on="experiment", how="left")
    t = t.with_columns(
        ((pl.col(col).cast(pl.Float64) - pl.col("random_mean"))
         / (pl.col("optimal_mean") - pl.col("random_mean"))).alias("normalised_score"))
    return t.select(
        "experiment", "test", "prior", "algorithm", "compat", "family", "agent", "mdp_index",
        pl.col(col).cast(pl.Float64), "random_mean", "optimal_mean",
        "normalised_score",
    ).sort("experiment", "agent", "mdp_index")


def best_agents(
    merged: pl.DataFrame,
    offline_bound: float | None = None,
    online_bound: float | None = None,
    separate_compat: bool = True,
    score: str = "discounted",
    summary: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Each family's best agent in each experiment within the time bounds, by ``score``.

    The best agent has the highest mean return among the family's agents whose offline
    time is at most ``offline_bound`` seconds and whose mean online time per decision is at
    most ``online_bound`` seconds (``None``: no bound); ties go to the smaller agent id.
    The mean is the test MDPs' (the paper's selection), or the validation MDPs' when
    ``summary`` was chosen on them
    (:func:`bbrlcore.analysis.selection.choose_on_validation`; the times are the test
    runs'). Optimal is left out (it is the reference); a family with no agent within the
    bounds in an experiment has no row for it.

    Returns
    -------
    polars.DataFrame
        ``experiment, test, prior, family, algorithm, compat, agent, grid_size, n, mean,
        ci_low, ci_high, normalised_score, offline_time_s, online_time_per_decision_s``
        (the columns of ``summary.parquet``; ``grid_size``: the family's number of
        agents in the experiment, whatever the bounds; chosen on validation MDPs, then
        ``validation_mean, validation_n``), sorted by experiment and family.

    Examples
    --------
    With e-greedy agents of means 6 (0.001 s per decision) and 9 (0.1 s per decision),
    ``online_bound=0.01`` selects the first, no bound the second.

    ``summary``: the :func:`~bbrlcore.analysis.results.summary_table` of ``merged`` by
    ``score``, when the caller has it (then ``merged`` is taken as checked, and neither
    is computed again).
    """
    from bbrlcore.analysis.selection import (
        VALIDATION_COLUMNS,
        check_complete,
        selection_key,
        with_grid_sizes,
    )

    off = _bound(offline_bound, "offline_bound")
    on = _bound(online_bound, "online_bound")
    s = _summary_of(merged, score, summary).filter(pl.col("algorithm") != "optimal")
    s = with_grid_sizes(_with_family(s, separate_compat), ("family",))
    check_complete(s)
    s = s.filter(
        (pl.col("offline_time_s") <= off) & (pl.col("online_time_per_decision_s") <= on))
    cols = ["experiment", "test", "prior", "family", "algorithm", "compat", "agent",
            "grid_size", "n", "mean", "ci_low", "ci_high", "normalised_score",
            "offline_time_s", "online_time_per_decision_s"]
    cols += [c for c in VALIDATION_COLUMNS if c in s.columns]
    if s.is_empty():
        return pl.DataFrame(schema={c: s.schema[c] for c in cols})
    best = (s.sort([selection_key(s), pl.col("agent")], descending=[True, False])
            .group_by(["experiment", "family"], maintain_order=True).first())
    rank = {f: i for i, f in enumerate(_family_order(best["family"].unique().to_list()))}
    return (best.with_columns(pl.col("family").replace_strict(rank, return_dtype=pl.Int64)
                              .alias("_r"))
            .sort("experiment", "_r").select(cols))


def default_taus(scores: np.ndarray) -> np.ndarray:
    """τ grid of the profiles: from min(0, 1st percentile) to max(1, 99th percentile) of
    the scores, the ends rounded outwards to multiples of 0.05, in steps of 0.01 (0.05
    when that would exceed 401 points), so round thresholds such as 0.25 are on the grid.

    Examples
    --------
    >>> default_taus(np.array([0.2, 0.9]))[[0, 25, -1]].tolist()
    [0.0, 0.25, 1.0]
    """
    lo = min(0.0, float(np.quantile(scores, 0.01)))
    hi = max(1.0, float(np.quantile(scores, 0.99)))
    a, b = math.floor(lo * 20), math.ceil(hi * 20)  # in units of 0.05
    per = 5 if 5 * (b - a) + 1 <= 401 else 1
    return np.round(np.arange(a * per, b * per + 1) / (20 * per), 10)


@dataclass
class Aggregates:
    """What :func:`compute` returns: the tables (see the module docstring), the families
    left out of the cross-experiment tables because they lack an agent within the bounds
    in some experiment (family -> those experiments), and the settings that made them."""

    tables: dict[str, pl.DataFrame]
    excluded: dict[str, list[str]]
    meta: dict[str, Any]


def _problem(
    normalised: pl.DataFrame, best: pl.DataFrame, taus: Sequence[float] | None
) -> tuple[_Problem, dict[str, list[str]]]:
    experiments = sorted(best["experiment"].unique().to_list())
    all_exps = sorted(normalised["experiment"].unique().to_list())
    present = best.group_by("family").agg(pl.col("experiment"))
    excluded: dict[str, list[str]] = {}
    families = []
    for fam, exps in present.iter_rows():
        missing = sorted(set(all_exps) - set(exps))
        if missing:
            excluded[fam] = missing
        else:
            families.append(fam)
    if not families:
        raise BBRLError("aggregate: no algorithm has an agent within the time bounds in "
                        f"every experiment ({', '.join(all_exps)})")
    families = _family_order(families)
    experiments = all_exps
    X, keys = [], []
    for exp in experiments:
        agents = {r["family"]: r["agent"] for r in
                  best.filter(pl.col("experiment") == exp).iter_rows(named=True)}
        g = normalised.filter(pl.col("experiment") == exp)
        ref_idx = g.filter(pl.col("algorithm") == "random").sort("mdp_index")["mdp_index"]
        cols = []
        for fam in families:
            a = g.filter(pl.col("agent") == agents[fam]).sort("mdp_index")
            if not a["mdp_index"].equals(ref_idx):
                raise BBRLError(
                    f"experiment {exp}: agent {agents[fam]} has {a.height} test MDPs, Random "
                    f"has {len(ref_idx)} (or other indices): the scores cannot be paired; "
                    "merge every chunk of every run")
            cols.append(a["normalised_score"].to_numpy())
        X.append(np.column_stack(cols))
        first = g.row(0, named=True)
        keys.append((first["test"], first.get("test_seed"), tuple(ref_idx.to_list())))
    strata_keys: list[Any] = []
    stratum = []
    for key in keys:
        if key not in strata_keys:
            strata_keys.append(key)
        stratum.append(strata_keys.index(key))
    sizes = [len(k[2]) for k in strata_keys]
    pooled = np.concatenate(X, axis=0)
    t = default_taus(pooled) if taus is None else np.asarray(taus, dtype=np.float64).ravel()
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise BBRLError("taus: expected a non-empty list of finite thresholds")
    return _Problem(experiments, families, X, stratum, sizes, t), excluded


def among_best_table(
    merged: pl.DataFrame,
    alpha: float = 0.05,
    correction: str = "none",
    offline_bound: float | None = None,
    online_bound: float | None = None,
    separate_compat: bool = True,
    score: str = "discounted",
    summary: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The paper's "among the best" in every experiment, with a correction option (agents
    ranked and compared by ``score``; ``summary`` as :func:`best_agents` takes it: each
    family's agent chosen on the test MDPs or, when ``summary`` was chosen on them, the
    validation MDPs; compared on the test MDPs).

    Per experiment, :func:`bbrlcore.analysis.constraints.among_best` (Optimal left out) with
    one-sided p-values ``1 − Φ(z)``, Holm-adjusted ones when ``correction="holm"``, and
    the family-wise error level guaranteed for the m comparisons of the experiment
    (:func:`bbrlcore.analysis.stats.familywise_error`).

    Returns
    -------
    polars.DataFrame
        ``experiment, family, agent, mean, z, p_value, p_adjusted, among_best, reference,
        correction, alpha, familywise_error``.
    """
    from bbrlcore.analysis.constraints import among_best

    col = score_column(score, merged)
    stats.check_correction(correction)
    stats.z_threshold(alpha)  # checks alpha
    off = _bound(offline_bound, "offline_bound")
    on = _bound(online_bound, "online_bound")
    from bbrlcore.analysis.selection import check_complete

    s = _with_family(_summary_of(merged, score, summary).filter(
        pl.col("algorithm") != "optimal"), separate_compat)
    check_complete(s)
    parts = []
    for exp in sorted(s["experiment"].unique().to_list()):
        se = s.filter(pl.col("experiment") == exp)
        m = merged.filter(pl.col("experiment") == exp)
        returns = {a: g.sort("mdp_index")[col].cast(pl.Float64).to_numpy()
                   for (a,), g in m.group_by(["agent"])}
        b = among_best(se, returns, alpha, off, on, correction)
        if b.is_empty():
            continue
        p = np.array([np.nan if r else stats.z_pvalue(z)
                      for z, r in zip(b["z"], b["reference"], strict=True)])
        others = ~b["reference"].to_numpy()
        adj = p.copy()
        if correction == "holm":
            adj[others] = stats.holm_adjusted(p[others])
        m_cmp = int(others.sum())
        parts.append(b.select("family", "agent", "mean", "z").with_columns(
            pl.lit(exp).alias("experiment"),
            pl.Series("p_value", p, dtype=pl.Float64).fill_nan(None),
            pl.Series("p_adjusted", adj, dtype=pl.Float64).fill_nan(None),
            b["among_best"], b["reference"],
            pl.lit(correction).alias("correction"),
            pl.lit(float(alpha)).alias("alpha"),
            pl.lit(stats.familywise_error(m_cmp, alpha, correction)).alias("familywise_error"),
        ))
    cols = ["experiment", "family", "agent", "mean", "z", "p_value", "p_adjusted",
            "among_best", "reference", "correction", "alpha", "familywise_error"]
    if not parts:
        return pl.DataFrame(schema={"experiment": pl.Utf8, "family": pl.Utf8,
                                    "agent": pl.Utf8, "mean": pl.Float64, "z": pl.Float64,
                                    "p_value": pl.Float64, "p_adjusted": pl.Float64,
                                    "among_best": pl.Boolean, "reference": pl.Boolean,
                                    "correction": pl.Utf8, "alpha": pl.Float64,
                                    "familywise_error": pl.Float64})
    return pl.concat(parts).select(cols)


def compute(
    merged: pl.DataFrame,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    offline_bound: float | None = None,
    online_bound: float | None = None,
    confidence: float = 0.95,
    taus: Sequence[float] | None = None,
    alpha: float = 0.05,
    correction: str = "none",
    separate_compat: bool = True,
    score: str = "discounted",
    resamples_option: str = "n_resamples",
    summary: pl.DataFrame | None = None,
    best: pl.DataFrame | None = None,
    among: pl.DataFrame | None = None,
) -> Aggregates:
    """All the tables of the module docstring from a merged run table.

    Parameters
    ----------
    merged : polars.DataFrame
        Merged run table of one or more experiments, each with Random and Optimal.
    n_resamples : int
        Bootstrap replicates (>= 100; the ``bootstrap_resamples`` config key).
    seed : int
        Seed of the resampling (the ``bootstrap_seed`` config key).
    offline_bound, online_bound : float or None
        Time bounds (seconds; online per decision) of the best-agent selection.
    confidence : float
        Level of the percentile intervals (0.95).
    taus : sequence of float, optional
        Thresholds of the performance profiles (default :func:`default_taus`).
    alpha, correction : float, str
        Level and multiple-comparison correction (``"none"`` or ``"holm"``) of the
        ``among_best`` table.
    separate_compat : bool
        Whether compat variants are families of their own.
    resamples_option : str
        How the caller names ``n_resamples`` (``--resamples``): more resamples than
        memory holds are refused before the bootstrap, in one line naming it, the memory
        needed and the limit (:func:`bbrlcore.analysis.estimators.check_memory`).
    summary, best, among : polars.DataFrame, optional
        What the caller has already computed from ``merged`` with these settings: its
        :func:`~bbrlcore.analysis.results.summary_table` by ``score``, its
        :func:`best_agents` and its :func:`among_best_table` (a report computes them once
        for every section); each is computed here when not given.

    Returns
    -------
    Aggregates
        ``tables`` with keys ``normalised, best_agents, metrics, profiles, improvement,
        among_best``; ``excluded``; ``meta`` (what :func:`write_tables` records).

    Examples
    --------
    >>> agg = compute(merged, n_resamples=2000, seed=0)  # doctest: +SKIP
    >>> agg.tables["metrics"].select("family", "iqm", "iqm_ci_low", "iqm_ci_high")  # doctest: +SKIP
    """
    _check_resampling(n_resamples, seed, confidence)
    stats.check_correction(correction)
    stats.z_threshold(alpha)
    norm = normalised_scores(merged, separate_compat, score)  # (checks merged)
    if summary is None:
        from bbrlcore.analysis.results import summary_table

        summary = summary_table(merged, score)
    if best is None:
        best = best_agents(merged, offline_bound, online_bound, separate_compat, score,
                           summary)
    if best.is_empty():
        raise BBRLError("aggregate: no agent within the time bounds "
                        f"(offline <= {offline_bound} s, online <= {online_bound} s)")
    prob, excluded = _problem(norm, best, taus)
    point, low, high = _bootstrap(prob, int(n_resamples), int(seed), confidence,
                                  resamples_option)
    fams = prob.families
    n_scores = int(prob.pooled.shape[0])
    metrics: dict[str, Any] = {"family": fams, "n_experiments": [len(prob.X)] * len(fams),
                               "n_scores": [n_scores] * len(fams)}
    for m in METRICS:
        metrics[m] = point[m]
        metrics[f"{m}_ci_low"] = low[m]
        metrics[f"{m}_ci_high"] = high[m]
    metrics_t = (pl.DataFrame(metrics)
                 .with_columns(pl.col("n_experiments", "n_scores").cast(pl.Int64))
                 .sort(["iqm", "family"], descending=[True, False]))
    T = prob.taus.size
    profiles_t = pl.DataFrame({
        "family": np.repeat(fams, T),
        "tau": np.tile(prob.taus, len(fams)),
        "fraction": point["profile"].ravel(),
        "ci_low": low["profile"].ravel(),
        "ci_high": high["profile"].ravel(),
    })
    rows = []
    for q, (i, j) in enumerate(prob.pairs):
        for x, y, sign in ((i, j, False), (j, i, True)):
            def val(d: dict[str, np.ndarray], k: str, q: int = q, sign: bool = sign) -> float:
                return float(1.0 - d[k][q]) if sign else float(d[k][q])
            lo_k, hi_k = (high, low) if sign else (low, high)
            rows.append({
                "family_x": fams[x], "family_y": fams[y],
                "probability": val(point, "improvement"),
                "ci_low": val(lo_k, "improvement"), "ci_high": val(hi_k, "improvement"),
                "paired_probability": val(point, "paired"),
                "paired_ci_low": val(lo_k, "paired"), "paired_ci_high": val(hi_k, "paired"),
            })
    imp_schema = {"family_x": pl.Utf8, "family_y": pl.Utf8, "probability": pl.Float64,
                  "ci_low": pl.Float64, "ci_high": pl.Float64,
                  "paired_probability": pl.Float64, "paired_ci_low": pl.Float64,
                  "paired_ci_high": pl.Float64}
    rank = {f: i for i, f in enumerate(fams)}
    improvement_t = pl.DataFrame(rows, schema=imp_schema).sort(
        pl.col("family_x").replace_strict(rank, return_dtype=pl.Int64),
        pl.col("family_y").replace_strict(rank, return_dtype=pl.Int64))
    if among is None:
        among = among_best_table(merged, alpha, correction, offline_bound, online_bound,
                                 separate_compat, score, summary)
    meta = {
        "seed": int(seed), "n_resamples": int(n_resamples), "confidence": float(confidence),
        "offline_bound_s": offline_bound, "online_bound_s": online_bound,
        "alpha": float(alpha), "correction": correction,
        "separate_compat": bool(separate_compat), "score": score,
        "selection": "validation" if "validation_mean" in best.columns else "test",
        "normalisation": "experiment means of Random (0) and Optimal (1)",
        "interval": "percentile, stratified paired bootstrap (strata: test sets)",
        "experiments": prob.experiments, "families": fams,
        "excluded": excluded,
        "strata": [[e for e, s in zip(prob.experiments, prob.stratum, strict=True) if s == k]
                   for k in range(len(prob.sizes))],
    }
    regret_t, regret_exps = regret_metrics(merged, norm, best, n_resamples, seed,
                                           confidence, resamples_option)
    meta["regret_experiments"] = regret_exps
    tables = {"normalised": norm, "best_agents": best, "metrics": metrics_t,
              "profiles": profiles_t, "improvement": improvement_t, "among_best": among,
              "regret": regret_t}
    return Aggregates(tables, excluded, meta)


#: Columns of :func:`regret_metrics` (the ``regret`` table).
REGRET_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8, "n_experiments": pl.Int64, "n_scores": pl.Int64,
    **{f"{m}{k}": pl.Float64 for m in ("mean", "median", "iqm")
       for k in ("", "_ci_low", "_ci_high")}}


def regret_metrics(merged: pl.DataFrame, norm: pl.DataFrame, best: pl.DataFrame,
                   n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   confidence: float = 0.95, resamples_option: str = "n_resamples"
                   ) -> tuple[pl.DataFrame, list[str]]:
    """Colosseum's per-step normalised regret at the end of the interaction
    (:func:`bbrlcore.analysis.exploration.normalised_regrets`: 0 optimal all along, 1 as
    bad as possible) of each family's best agent, aggregated over the experiments whose
    runs carry their references: the mean over experiments, the median and the IQM of
    the pooled scores, with the stratified paired bootstrap of the normalised scores
    (module docstring). Returns the table (:data:`REGRET_SCHEMA`; empty when no
    experiment has references) and the experiments it covers."""
    from bbrlcore.analysis.exploration import normalised_regrets

    if "regret" not in merged.columns:
        return pl.DataFrame(schema=REGRET_SCHEMA), []
    nr = normalised_regrets(merged).select("experiment", "agent", "mdp_index",
                                           "normalised_regret")
    t = norm.drop("normalised_score").join(nr, on=["experiment", "agent", "mdp_index"],
                                           how="left")
    needed = pl.concat([best.select("experiment", "agent"),
                        t.filter(pl.col("algorithm") == "random").select(
                            "experiment", "agent").unique()])
    got = t.join(needed, on=["experiment", "agent"], how="semi")
    lacking = set(got.filter(pl.col("normalised_regret").is_null())["experiment"].to_list())
    exps = sorted(set(got["experiment"].to_list()) - lacking)
    if not exps:
        return pl.DataFrame(schema=REGRET_SCHEMA), []
    t = t.filter(pl.col("experiment").is_in(exps)).rename(
        {"normalised_regret": "normalised_score"})
    try:
        prob, _ = _problem(t, best.filter(pl.col("experiment").is_in(exps)), [0.0])
    except BBRLError:  # (no family in every one of these experiments)
        return pl.DataFrame(schema=REGRET_SCHEMA), exps
    point, low, high = _bootstrap(prob, int(n_resamples), int(seed), confidence,
                                  resamples_option)
    out: dict[str, Any] = {"family": prob.families,
                           "n_experiments": [len(prob.X)] * len(prob.families),
                           "n_scores": [int(prob.pooled.shape[0])] * len(prob.families)}
    for m in ("mean", "median", "iqm"):
        out[m], out[f"{m}_ci_low"], out[f"{m}_ci_high"] = point[m], low[m], high[m]
    return pl.DataFrame(out, schema=REGRET_SCHEMA).sort(["iqm", "family"]), exps


def check_bootstrap_memory(
    merged: pl.DataFrame, n_resamples: int, option: str = "n_resamples",
    offline_bound: float | None = None, online_bound: float | None = None,
    separate_compat: bool = True, score: str = "discounted",
) -> None:
    """Refuse, before any work, more resamples than memory holds for :func:`compute`'s
    bootstrap on ``merged`` (the bytes it would allocate,
    :func:`bbrlcore.analysis.estimators.bootstrap_bytes`, from the number of families,
    pairs, profile thresholds and test MDPs), in one line naming ``option``; nothing when
    the aggregates cannot be computed at all (:func:`compute` says why)."""
    try:
        norm = normalised_scores(merged, separate_compat, score)
        best = best_agents(merged, offline_bound, online_bound, separate_compat, score)
        prob, _ = _problem(norm, best, None)
    except BBRLError:
        return
    check_memory(*bootstrap_bytes(prob), n_resamples, option)


def aggregate_metrics(merged: pl.DataFrame, **kwargs: Any) -> pl.DataFrame:
    """The ``metrics`` table of :func:`compute` (same keyword arguments)."""
    return compute(merged, **kwargs).tables["metrics"]


def performance_profiles(merged: pl.DataFrame, **kwargs: Any) -> pl.DataFrame:
    """The ``profiles`` table of :func:`compute` (same keyword arguments)."""
    return compute(merged, **kwargs).tables["profiles"]


def improvement_probabilities(merged: pl.DataFrame, **kwargs: Any) -> pl.DataFrame:
    """The ``improvement`` table of :func:`compute` (same keyword arguments)."""
    return compute(merged, **kwargs).tables["improvement"]


def write_tables(agg: Aggregates, out_dir: str | Path) -> dict[str, Path]:
    """Write every table of ``agg`` into ``out_dir`` as a bbrl artefact of kind
    ``aggregate`` (file names :data:`TABLE_FILES`), recording the table's name and
    ``agg.meta`` (seed, resamples, bounds, correction, ...). Returns name -> path."""
    from bbrlcore.formats import artefacts

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BBRLError(f"{out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in agg.tables.items():
        path = out / TABLE_FILES[name]
        artefacts.write_artefact(path, table, "aggregate", {"table": name, **agg.meta})
        paths[name] = path
    return paths


# ---------------------------------------------------------------------------------------
# One algorithm against all the others ("how does mine compare?")

#: Columns of :func:`versus`.
VERSUS_COLUMNS = ("family", "opponent", "probability", "ci_low", "ci_high",
                  "reverse_probability", "reverse_ci_low", "reverse_ci_high",
                  "paired_probability", "paired_ci_low", "paired_ci_high", "verdict")


def find_family(name: str, families: Sequence[str], option: str = "--versus",
                hint: str = "") -> str:
    """The family that ``name`` designates among ``families``: its name as shown
    (``BEB (compat)``, a plugin's display name while
    :func:`bbrlcore.analysis.constraints.display_names` is in force), the same ignoring
    case, or an algorithm's id (``beb`` -> ``BEB``, a plugin's id -> its display name);
    else one line naming ``option`` and listing the families (then ``hint``); a name
    that matches several families only ignoring case is refused as ambiguous.

    Examples
    --------
    >>> find_family("beb", ["Random", "BEB", "BEB (compat)"])
    'BEB'
    >>> find_family("beb (COMPAT)", ["BEB", "BEB (compat)"])
    'BEB (compat)'
    >>> find_family("mine", ["Mine", "MINE"])
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: --versus 'mine': ambiguous: it names MINE and Mine ...
    """
    from bbrlcore.analysis.constraints import display_name

    fams = list(families)
    if name in fams:
        return name
    for cand in (name, display_name(name), display_name(name.casefold())):
        hits = sorted({f for f in fams if f.casefold() == cand.casefold()})
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise BBRLError(f"{option} {name!r}: ambiguous: it names {' and '.join(hits)} "
                            "(give one as written)")
    raise BBRLError(f"{option} {name!r}: no such algorithm in these results; the "
                    f"algorithms are: {', '.join(_family_order(fams))}{hint}")


def versus(agg: Aggregates, name: str, option: str = "--versus") -> pl.DataFrame:
    """One algorithm against every other: P(NAME > Y) for each other family Y, from the
    ``improvement`` table of :func:`compute` (its 95% interval; ``reverse_*`` is
    P(Y > NAME) = 1 − P(NAME > Y) with the interval mirrored; ``paired_*`` the paired
    version, same test MDP), best first. ``verdict`` reads the interval of
    ``probability``: ``better`` (above 0.5), ``worse`` (below 0.5) or ``unclear`` (it
    contains 0.5).

    ``name`` is found by :func:`find_family`; a family left out of the aggregates (no agent
    within the bounds in some experiment) is one line naming those experiments.

    Returns
    -------
    polars.DataFrame
        :data:`VERSUS_COLUMNS`, one row per other family.
    """
    fams = list(agg.meta.get("families", [])) + sorted(agg.excluded)
    fam = find_family(name, fams, option)
    if fam in agg.excluded:
        raise BBRLError(f"{option} {name!r}: {fam} has no agent within the bounds in "
                        f"{', '.join(agg.excluded[fam])}, so it is left out of the "
                        "comparisons across experiments")
    imp = agg.tables["improvement"].filter(pl.col("family_x") == fam)
    verdict = (pl.when(pl.col("ci_low") > 0.5).then(pl.lit("better"))
               .when(pl.col("ci_high") < 0.5).then(pl.lit("worse"))
               .otherwise(pl.lit("unclear")))
    return (imp.rename({"family_x": "family", "family_y": "opponent"})
            .with_columns((1.0 - pl.col("probability")).alias("reverse_probability"),
                          (1.0 - pl.col("ci_high")).alias("reverse_ci_low"),
                          (1.0 - pl.col("ci_low")).alias("reverse_ci_high"),
                          verdict.alias("verdict"))
            .sort(["probability", "opponent"], descending=[True, False])
            .select(VERSUS_COLUMNS))
