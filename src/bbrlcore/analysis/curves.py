r"""Learning curves, regret and shortfall over time, from the per-step rewards of the run
tables.

A run table records, for every trajectory, its rewards :math:`r_0, \dots, r_{T-1}`
(column ``rewards``, float32). From them, for agent *a* on test MDP *i* of experiment *e*,
the **cumulative reward** after *t* steps (``score="undiscounted"``, the sum of rewards of
Dearden et al. 1998 and Guez et al. 2012) or the discounted return accumulated so far
(``score="discounted"``, the paper's score; at *t* = T it is the trajectory's
``discounted_return``):

.. math:: C_{a,e,i}(t) = \sum_{s<t} r_s \qquad\text{or}\qquad
          C_{a,e,i}(t) = \sum_{s<t} \gamma^s r_s .

Per experiment and family (its best agent, as :func:`bbrlcore.analysis.aggregate.best_agents`
selects it; and Optimal, the reference), at every time *t* of a grid (at most
:data:`MAX_POINTS` evenly spaced times, and for a long curve every time up to the
:data:`LOG_EVERY`-th and log-spaced ones beyond, which figures with a logarithmic time
axis draw: :func:`curve_positions`):

* the **mean cumulative reward** :math:`\bar C_{a,e}(t)` of the score (the discounted
  return so far, or the sum of rewards so far: the score everywhere, as the rest of the
  report);
* the **normalised score** against time, Random = 0 and Optimal = 1 *at each t*, on the
  same test MDPs, :math:`x_{a,e,i}(t) = (C_{a,e,i}(t) - \bar C_{R,e}(t)) / (\bar
  C_{O,e}(t) - \bar C_{R,e}(t))` — undefined (null) while Optimal's gain over Random is
  below :data:`MIN_GAIN_FRACTION` of its gain at T (the first steps of many problems,
  where the ratio is noise); at *t* = T it is the summary's ``normalised_score`` (with
  the score of the same kind);
* the **cumulative shortfall** ``shortfall`` against the Optimal agent, paired on the
  test MDPs, :math:`\frac1{N_e}\sum_i (C_{O,e,i}(t) - C_{a,e,i}(t))`: how far below the
  Optimal agent's own realised trajectory (which knows the MDP) the agent's score is
  (not the regret, which is against the optimal policy's exact expected value);
* where the runs carry their test MDPs' **reference values** (test sets drawn with them,
  :mod:`bbrlcore.mdp.references`): the **regret** ``regret``, against the
  optimal policy's exact expected reward, as the run tables' ``regret`` (at *t* = T it is
  their mean), :math:`t\rho^*_i - U_{a,e,i}(t)` (continuing) or
  :math:`e V^*_{H,i}(s_0) - U_{a,e,i}(eH)` after e episodes (episodic), U the
  undiscounted cumulative reward, exact at every time of the curve (the steps, the
  checkpoints); and **Colosseum's per-step normalised cumulative regret**
  ``normalised_regret`` (Conserva & Rauber 2022, App. C): each step's (episode's) regret
  divided by the gap between the optimal and the worst policy, :math:`\rho^*_i -
  \rho^-_i` (:math:`V^*_H - V^-_H`), summed, so that it grows by at most about 1 a step
  (episode) and by 0 once the agent acts optimally; ``normalised_regret / t`` (``/ e``)
  is Colosseum's table value, about 0 (optimal all along) to 1 (as bad as possible). The
  Random agent's curve, drawn beside the others, is the uniformly random policy's, as in
  Colosseum's figures. An episodic experiment's curves are at its episode ends (``t`` in
  steps, ``episodes`` = t / H).

Each comes with a **paired bootstrap band**: a replicate draws the experiment's test MDPs
with replacement once and applies them to every family and to Optimal (the shortfall's
pairs); the normalising means of Random and Optimal are held at their values, as the
aggregates hold them (:mod:`bbrlcore.analysis.aggregate`): the bands are conditional on
them. The band is the percentile interval. Each experiment's replicates come from the
bootstrap seed and the experiment's name, so its bands do not depend on which other
experiments are drawn with it. Where Optimal has gained little on Random, the normalised
score divides by a small gap: its bands are then wide, and say so (below a tenth of the
final gain it is left undefined, above).

The reference is the Optimal agent of the score
(:func:`bbrlcore.analysis.results.reference_agents`): with ``score="undiscounted"``, the
policy optimal for the sum of rewards over the horizon (backward induction,
``optimal__criterion=undiscounted``), whose expected sum no agent exceeds at t = T. Runs
that hold only the discounted Optimal are normalised by it, and the report says so: an
agent may then collect more undiscounted reward than that reference (normalised scores
above 1 and negative shortfall that a true reference would not give). At t < T even the
right reference can be beaten for a while (it plans for T, not for t): a normalised
score above 1 early on is not an error.

An agent without per-step rewards (a table written before bbrl recorded them, or a
player that records none) has no curve; an experiment whose Random or Optimal has none
has no curves; an experiment without Random or Optimal has the curves its tables allow:
the cumulative score, and where its runs carry their references the regret, the
normalised regret and bbrl's DeepSea score (bsuite's needs no references), but no
normalised score (it needs Random and Optimal; null) and, without Optimal, no shortfall
against it (null); it is then left
out of the IQM across experiments. The others are drawn, and what is left out is said,
with the reason (:attr:`Curves.left_out`; ``bbrl curves`` and the report print it).
The rewards of the agents drawn are checked against their returns and γ
(:func:`bbrlcore.analysis.results.check_rewards`). A **long** interaction (more than
:data:`~bbrlcore.protocol.runner.MAX_RECORDED_STEPS` steps) records its cumulative
reward at checkpoints instead (``checkpoints``, every ``checkpoint_every`` steps; the
episode ends of an episodic one): its curves are those of the undiscounted score at the
checkpoints, exact there (:func:`checkpoint_matrix`; ``score="discounted"`` is refused
in one line for it).

Across experiments: the **IQM of the normalised score against time** with stratified
bootstrap bands, rliable's sample-efficiency curve (Agarwal et al. 2021, Fig. 8), using the
same strata (experiments sharing a test set resample the same MDPs) and the same
IQM kernel as the aggregates, at the points of a coarser grid; only when every
experiment is measured at the same times (a ladder played for a number of episodes has a
horizon per size: its experiments get their curves, the IQM across them is left out and
said). On episodic DeepSea experiments, **bsuite's DeepSea score** exactly as bsuite
computes it and **bbrl's DeepSea score** beside it (:mod:`bbrlcore.analysis.exploration`).

Tables (``curves`` returns them; :func:`write_tables` writes them as Parquet artefacts):

=============  ========================================================================
``curves``     one row per experiment × family × t: ``experiment, test, prior, family,
               algorithm, compat, agent, n, t, episodes, even_grid, cumulative,
               cumulative_low,
               cumulative_high, normalised, normalised_low, normalised_high, shortfall,
               shortfall_low, shortfall_high, regret, regret_low, regret_high,
               normalised_regret, normalised_regret_low, normalised_regret_high,
               score`` (:data:`CURVE_COLUMN_DOCS`; the regret and the normalised
               regret null without references, the shortfall without Optimal;
               ``even_grid``: the point is one of the evenly spaced ones that linear
               time axes draw, false for the log-spaced points of a long curve,
               :func:`curve_positions`)
``aggregate``  one row per family × t: ``family, n_experiments, t, iqm, iqm_low,
               iqm_high, score``
``deepsea``    bbrl's DeepSea score (the regret's learning time, paired intervals) per
               experiment × family
               (:func:`bbrlcore.analysis.exploration.bbrl_deepsea_scores`), and
``deepsea_summary``  per DeepSea ladder × family (empty without episodic DeepSea)
``bsuite_deepsea``  bsuite's DeepSea score, exactly as bsuite computes it, per ladder ×
               family × size (:func:`bbrlcore.analysis.exploration.bsuite_deepsea_scores`),
               and
``bsuite_deepsea_summary``  per ladder × family: bsuite's score
=============  ========================================================================
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bbrlcore.analysis.estimators import (
    BLOCK,
    DEFAULT_RESAMPLES,
    _check_resampling,
    _counts,
    _experiment_seed,
    _index_blocks,
    _pooled_kernel,
    check_memory,
)
from bbrlcore.analysis.results import reference_agents
from bbrlcore.errors import BBRLError
from bbrlcore.protocol.runner import MAX_RECORDED_STEPS, with_settings

#: What a curve accumulates: the discounted return so far (the paper's score) or the sum
#: of rewards (Dearden et al.'s and Guez et al.'s tables).
SCORES = ("discounted", "undiscounted")
#: Most time points of a per-experiment curve and of the aggregate curve.
MAX_POINTS = 100
AGGREGATE_POINTS = 25
#: A curve whose evenly spaced points keep fewer than one of its times (steps,
#: checkpoints or episode ends) in this many also gets log-spaced points, for the figures
#: with a logarithmic time axis (:func:`curve_positions`): its first times, where
#: learning shows, would fall between its first two evenly spaced points.
LOG_SPARSE = 4
#: Those log-spaced points: every time up to this many (steps, checkpoints or episodes),
#: then ``points`` log-spaced times beyond, up to the last.
LOG_EVERY = 200
#: The normalised score at t is defined once Optimal's mean gain over Random has reached
#: this fraction of its gain at T. Before, it divides by a small and noisy gap (the first
#: steps of a problem whose reward is far from the start: RiverSwim's gap is 0 until the
#: far end is reached): a per-MDP score of ±100 at t = 3 would set the scale of a figure
#: whose question is the score after learning. With a tenth, that ratio's noise is at
#: most ten times the final one's; on a problem whose rewards come at an even rate it
#: leaves out the first tenth of the horizon.
MIN_GAIN_FRACTION = 0.1
#: Tables of :func:`curves`, and the file each gets from :func:`write_tables`.
TABLE_FILES = {"curves": "curves.parquet", "aggregate": "curves-aggregate.parquet",
               "deepsea": "curves-deepsea.parquet",
               "deepsea_summary": "curves-deepsea-summary.parquet",
               "bsuite_deepsea": "curves-bsuite-deepsea.parquet",
               "bsuite_deepsea_summary": "curves-bsuite-deepsea-summary.parquet"}


def check_score(score: str) -> str:
    """``score`` if it is one of :data:`SCORES`; else one line naming it."""
    if score not in SCORES:
        raise BBRLError(f"score={score!r}: expected one of {', '.join(SCORES)}")
    return score


def time_grid(horizon: int, points: int = MAX_POINTS) -> np.ndarray:
    """At most ``points`` times in 1..T, evenly spread, always with 1 and T.

    Examples
    --------
    >>> time_grid(5).tolist(), time_grid(250, 5).tolist()
    ([1, 2, 3, 4, 5], [1, 63, 126, 188, 250])
    """
    if horizon < 1:
        raise BBRLError(f"horizon={horizon}: must be >= 1")
    return np.unique(np.round(np.linspace(1, horizon, min(horizon, points))).astype(np.int64))


def reward_matrix(runs: pl.DataFrame, source: str = "runs") -> np.ndarray:
    """The ``rewards`` lists of ``runs`` as a float64 (rows, T) matrix; one line naming
    ``source`` when the column is missing (tables written before it was recorded) or its
    lists are not all of the horizon's length."""
    if "rewards" not in runs.columns:
        raise BBRLError(f"{source}: no per-step rewards (column 'rewards'): these runs were "
                        "made before bbrl recorded them; run them again for learning curves")
    lens = runs["rewards"].list.len()
    if lens.null_count() or (lens != runs["horizon"]).any():
        bad = runs.filter(lens.ne_missing(runs["horizon"])).row(0, named=True)
        raise BBRLError(f"{source}: experiment {bad['experiment']}, agent {bad['agent']}, "
                        f"MDP {bad['mdp_index']}: rewards do not hold horizon="
                        f"{bad['horizon']} values")
    T = int(runs["horizon"][0]) if runs.height else 0
    flat = runs["rewards"].explode().cast(pl.Float64).to_numpy()
    return flat.reshape(runs.height, T)


def checkpoint_matrix(runs: pl.DataFrame, source: str = "runs"
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The ``checkpoints`` lists of ``runs`` (one setting: one ``checkpoint_every`` n and
    horizon T) as a float64 (rows, T / n) matrix of cumulative undiscounted rewards, and
    the times n, 2n, ..., T they are taken at; one line naming ``source`` when a row has
    none.

    >>> runs = pl.DataFrame({"checkpoints": [[1.0, 3.0]], "checkpoint_every": [2],
    ...                      "horizon": [4]})
    >>> C, t = checkpoint_matrix(runs)
    >>> C.tolist(), t.tolist()
    ([[1.0, 3.0]], [2, 4])
    """
    if "checkpoints" not in runs.columns or runs["checkpoints"].null_count():
        raise BBRLError(f"{source}: no checkpoints (column 'checkpoints') where the per-step "
                        "rewards are not recorded; run them again with checkpoint_every")
    every = runs["checkpoint_every"].unique().to_list()
    T = int(runs["horizon"][0]) if runs.height else 0
    if len(every) != 1 or every[0] is None:
        raise BBRLError(f"{source}: checkpoints every {sorted(map(str, every))} steps: one "
                        "setting per experiment")
    n = int(every[0])
    flat = runs["checkpoints"].explode().cast(pl.Float64).to_numpy()
    return flat.reshape(runs.height, T // n), np.arange(n, T + 1, n, dtype=np.int64)


def curve_positions(n_times: int, points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The points of a curve among its ``n_times`` times (steps, checkpoints or episode
    ends, in order): ``(positions, even)``, the indices of the points (increasing) and
    whether each is one of the at most ``points`` evenly spaced ones (the first and last
    included: what linear time axes draw, as :func:`time_grid`). When those keep fewer
    than one time in :data:`LOG_SPARSE`, the curve also has every time up to the
    :data:`LOG_EVERY`-th and ``points`` log-spaced ones beyond (``even`` false where a
    point is of those only): a logarithmic time axis then shows the first episodes too.

    Examples
    --------
    >>> pos, even = curve_positions(250)  # (the paper's T = 250: evenly spaced only)
    >>> len(pos), bool(even.all())
    (100, True)
    >>> pos, even = curve_positions(10_000)  # (bsuite's 10,000 episodes)
    >>> (pos[:5] + 1).tolist(), int(even.sum()), (pos[even][:3] + 1).tolist()
    ([1, 2, 3, 4, 5], 100, [1, 102, 203])
    """
    even_pos = _positions(np.arange(n_times), points)
    if n_times <= LOG_SPARSE * points:
        return even_pos, np.ones(even_pos.size, dtype=bool)
    first = np.arange(min(n_times, LOG_EVERY))
    beyond = np.round(np.geomspace(LOG_EVERY, n_times, points)).astype(np.int64) - 1
    pos = np.unique(np.concatenate([even_pos, first, beyond]))
    return pos, np.isin(pos, even_pos)


def _positions(times: np.ndarray, points: int) -> np.ndarray:
    """At most ``points`` indices into ``times``, evenly spread, the first and last
    included (on times 1..T: :func:`time_grid`)."""
    K = len(times)
    return np.unique(np.round(np.linspace(0, K - 1, min(K, points))).astype(np.int64))


def cumulative(rewards: np.ndarray, gamma: float, score: str) -> np.ndarray:
    """(rows, T) rewards -> (rows, T) cumulative values C(t) for t = 1..T (column t-1),
    accumulated in the order the trajectory kernels accumulate the return (so
    ``C(T)`` of ``score="discounted"`` is the recorded ``discounted_return`` exactly,
    for rewards that float32 holds exactly).

    Examples
    --------
    >>> cumulative(np.array([[1.0, 1.0, 1.0]]), 0.5, "discounted").tolist()
    [[1.0, 1.5, 1.75]]
    >>> cumulative(np.array([[1.0, 1.0, 1.0]]), 0.5, "undiscounted").tolist()
    [[1.0, 2.0, 3.0]]
    """
    check_score(score)
    r = np.asarray(rewards, dtype=np.float64)
    if score == "undiscounted":
        return np.cumsum(r, axis=1)
    out = np.empty_like(r)
    acc = np.zeros(r.shape[0])
    disc = 1.0
    for t in range(r.shape[1]):  # ret += disc * r; disc *= gamma, as the kernels do
        acc = acc + disc * r[:, t]
        out[:, t] = acc
        disc *= gamma
    return out


@dataclass(frozen=True)
class LeftOut:
    """An experiment, or an agent of one, that :func:`curves` leaves out, and why
    (``agent`` None: the whole experiment; ``experiment`` None: a family left out of the
    curve across experiments). ``str()`` is one line.

    Examples
    --------
    >>> print(LeftOut("GC-GC", "no Random agent"))
    experiment GC-GC: no learning curves: no Random agent
    >>> print(LeftOut("GC-GC", "it has no per-step rewards", "psrl", "PSRL"))
    experiment GC-GC: no learning curve for PSRL (agent psrl): it has no per-step rewards
    >>> print(LeftOut("GC-GC", "no Random agent", what="no normalised score"))
    experiment GC-GC: no normalised score: no Random agent
    """

    experiment: str | None
    reason: str
    agent: str | None = None
    family: str | None = None
    #: What the experiment's curves lack (its other curves are drawn), when not all of
    #: them are left out: "no normalised score".
    what: str | None = None

    def __str__(self) -> str:
        if self.what is not None:
            return f"experiment {self.experiment}: {self.what}: {self.reason}"
        if self.experiment is None:
            return f"{self.family}: left out of the IQM across experiments: {self.reason}"
        if self.agent is None:
            return f"experiment {self.experiment}: no learning curves: {self.reason}"
        return (f"experiment {self.experiment}: no learning curve for {self.family} (agent "
                f"{self.agent}): {self.reason}")


@dataclass
class Curves:
    """What :func:`curves` returns: ``tables`` (``curves``, ``aggregate``), ``meta``, and
    what was left out and why (``left_out``: experiments whose Random or Optimal has no
    rewards, the curves that experiments without Random or Optimal lack, agents without
    per-step rewards on some test MDPs, families left out of the IQM across experiments;
    :class:`LeftOut`, one line each)."""

    tables: dict[str, pl.DataFrame]
    meta: dict[str, Any] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)


def curves(
    merged: pl.DataFrame,
    score: str = "discounted",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    offline_bound: float | None = None,
    online_bound: float | None = None,
    separate_compat: bool = True,
    points: int = MAX_POINTS,
    aggregate_points: int = AGGREGATE_POINTS,
    resamples_option: str = "n_resamples",
    best: pl.DataFrame | None = None,
) -> Curves:
    """Learning curves of every family's best agent, per experiment and across them.

    Parameters
    ----------
    merged : polars.DataFrame
        Merged run table(s) with the ``rewards`` column (the normalised score of an
        experiment needs its Random and Optimal: the module docstring).
    score : {"discounted", "undiscounted"}
        What is accumulated (the module docstring); also what selects the best agents.
    n_resamples, seed, confidence
        The bootstrap (as :func:`bbrlcore.analysis.aggregate.compute`).
    offline_bound, online_bound, separate_compat
        The best-agent selection (as the aggregates).
    points, aggregate_points
        Most time points per curve (:func:`time_grid`).
    resamples_option
        How the caller names ``n_resamples`` (``--resamples``): more resamples than memory
        holds (:func:`bootstrap_bytes`) are refused before the bootstrap, in one line
        naming it.
    best : polars.DataFrame, optional
        The best agents (:func:`bbrlcore.analysis.aggregate.best_agents` of ``merged``
        with these settings) when the caller has them: ``merged`` is then taken as
        checked, and they are not chosen again.

    Returns
    -------
    Curves
        ``tables["curves"]``, ``tables["aggregate"]`` (columns in the module docstring).

    Examples
    --------
    >>> from bbrlcore.analysis.curves import _example_runs
    >>> c = curves(_example_runs(), n_resamples=100, points=5)
    >>> t = c.tables["curves"].filter(pl.col("family") == "Optimal")
    >>> t["t"].to_list(), t["normalised"].to_list()[-1], t["shortfall"].to_list()[-1]
    ([1, 2, 3, 4], 1.0, 0.0)
    """
    from bbrlcore.analysis import aggregate as A

    check_score(score)
    _check_resampling(n_resamples, seed, confidence)
    if best is None:
        A._check_merged(merged)
    if best is None:
        best = A.best_agents(merged, offline_bound=offline_bound, online_bound=online_bound,
                             separate_compat=separate_compat, score=score)
    left_out: list[LeftOut] = []
    # an experiment without Random or Optimal has curves of what its tables allow (the
    # cumulative score, the regret against its references, the DeepSea scores),
    # not the normalised score (nor the shortfall against Optimal without Optimal): said in
    # one line each (left_out)
    refs = (merged.filter(pl.col("algorithm").is_in(["random", "optimal"]))
            .group_by("experiment").agg(pl.col("algorithm").unique()))
    have = {e: set(a) for e, a in refs.iter_rows()}
    for exp in sorted(set(best["experiment"].to_list())):
        note = _missing_references(have.get(exp, set()))
        if note:
            left_out.append(LeftOut(exp, note[1], what=note[0]))
    needed = _needed(merged, best)
    table = with_settings(merged.join(needed, on=["experiment", "agent"], how="semi"))
    # long interactions record checkpoints, not every step: their curves are the
    # undiscounted score at the checkpoints (experiment by experiment: a report may hold
    # the paper's experiments beside long ones)
    long = table.filter(pl.col("horizon") > MAX_RECORDED_STEPS)
    if long.height and score == "discounted":
        e = long["experiment"][0]
        raise BBRLError(f"curves: experiment {e} records its rewards at checkpoints (T = "
                        f"{int(long['horizon'][0]):,} > {MAX_RECORDED_STEPS:,} steps), not at "
                        "every step: its learning curves are of the undiscounted score "
                        "(score=undiscounted)")
    is_long = pl.col("horizon") > MAX_RECORDED_STEPS
    if "rewards" not in table.columns and table.filter(~is_long).height:
        reward_matrix(table, "merged run table")  # (the error naming the missing column)
    if "rewards" not in table.columns:
        table = table.with_columns(pl.lit(None, dtype=pl.List(pl.Float32)).alias("rewards"))
    # agents without per-step rewards on some MDP (older tables, players that record
    # none) have no curve; an experiment whose Random or Optimal lacks them has none
    missing_col = pl.when(is_long).then(pl.col("checkpoints").is_null()).otherwise(
        pl.col("rewards").is_null())
    lacking = (table.filter(missing_col)
               .group_by("experiment", "agent", "algorithm", maintain_order=True)
               .agg(pl.col("mdp_index"))
               .join(table.group_by("experiment", "agent").agg(pl.len().alias("_n")),
                     on=["experiment", "agent"]).sort("experiment", "agent"))
    if lacking.height:
        from bbrlcore.analysis.results import index_ranges

        fam = best.select("experiment", "agent", "family")
        no_ref = sorted(set(lacking.filter(pl.col("algorithm").is_in(
            ["random", "optimal"]))["experiment"].to_list()))
        for r in lacking.iter_rows(named=True):
            where = ("on any test MDP" if len(r["mdp_index"]) == r["_n"] else
                     f"on test MDPs {index_ranges(r['mdp_index'])} (of {r['_n']})")
            why = (f"no per-step rewards {where} (a table written before bbrl recorded "
                   "them, or a player that records none)")
            if r["algorithm"] in ("random", "optimal"):
                left_out.append(LeftOut(r["experiment"], f"{r['algorithm'].capitalize()} "
                                                         f"(agent {r['agent']}) has {why}"))
            elif r["experiment"] not in no_ref:
                f = fam.filter((pl.col("experiment") == r["experiment"])
                               & (pl.col("agent") == r["agent"]))["family"]
                left_out.append(LeftOut(r["experiment"], f"it has {why}", r["agent"],
                                        f[0] if f.len() else r["algorithm"]))
        before = set(best["experiment"].to_list()) - set(no_ref)
        best = best.join(lacking.select("experiment", "agent"), on=["experiment", "agent"],
                         how="anti").filter(~pl.col("experiment").is_in(no_ref))
        for exp in sorted(before - set(best["experiment"].to_list())):
            left_out.append(LeftOut(exp, "no algorithm's best agent has per-step rewards"))
        if best.is_empty():
            raise BBRLError(f"curves: {left_out[-1] if left_out else 'no curve'}; run it "
                            "again for learning curves")
        needed = _needed(merged.filter(pl.col("experiment").is_in(
            best["experiment"].unique().to_list())), best)
        table = table.join(needed, on=["experiment", "agent"], how="semi")
    from bbrlcore.analysis.results import check_rewards

    check_rewards(table, "merged run table")  # (rewards, returns and gamma agree)
    table = table.with_row_index("_row")
    a = (1.0 - confidence) / 2.0
    rows: list[dict[str, Any]] = []
    strata: dict[tuple[Any, ...], int] = {}
    agg_scores: dict[str, dict[str, np.ndarray]] = {}
    iqm_exps: list[str] = []
    agg_stratum: list[int] = []
    agg_sizes: list[int] = []
    agg_grid = None
    agg_differ: str | None = None
    exps = best["experiment"].unique(maintain_order=True).to_list()
    per_exp = (table.filter(pl.col("experiment").is_in(exps)).group_by("experiment")
               .agg(pl.col("mdp_index").n_unique().alias("n"),
                    pl.col("horizon").first().alias("T"),
                    pl.col("checkpoint_every").first().alias("every")))
    sizes = per_exp["n"].to_list()
    width = max([(int(T) if int(T) <= MAX_RECORDED_STEPS else int(T) // int(k or 1))
                 for T, k in zip(per_exp["T"], per_exp["every"], strict=True)] or [1])
    # (the columns of the cumulative matrices: every step, or the checkpoints)
    check_memory(*bootstrap_bytes(sizes, width, points, aggregate_points), n_resamples,
                 resamples_option, "the learning curves' bootstrap")
    for exp in exps:
        m = table.filter(pl.col("experiment") == exp)
        gamma = float(m["gamma"][0])
        T = int(m["horizon"][0])
        H = int(m["episode_length"][0] or 0)
        steps = T <= MAX_RECORDED_STEPS
        if steps:
            R = reward_matrix(m, "merged run table")
            times = np.arange(1, T + 1, dtype=np.int64)
            if H > 0:  # an episodic interaction: its curves at the episode ends
                times = times[H - 1::H]
        else:
            R, times = checkpoint_matrix(m, "merged run table")
        local = {r: k for k, r in enumerate(m["_row"].to_list())}
        # (indices into the times of C's columns: the evenly spaced points, and the
        # log-spaced ones of a long curve)
        gi, even = curve_positions(times.size, points)
        grid = times[gi]
        agi = _positions(times, aggregate_points)
        ag = times[agi]

        # an episodic run's checkpoints at every episode end (float64, as the kernels
        # summed them) give the undiscounted cumulative there exactly, where the per-step
        # rewards are float32
        at_ends = None
        if steps and H > 0 and m["checkpoints"].null_count() == 0 and m.height and \
                int(m["checkpoint_every"].fill_null(0).min()) == H == \
                int(m["checkpoint_every"].fill_null(0).max()):
            at_ends = checkpoint_matrix(m, "merged run table")[0]

        def cum_of(agent: str, m: pl.DataFrame = m, gamma: float = gamma, R=R,
                   times=times, steps=steps, local=local, at_ends=at_ends
                   ) -> tuple[np.ndarray, np.ndarray]:
            """(score's cumulative, undiscounted cumulative) at ``times``, (N, K)."""
            g = m.filter(pl.col("agent") == agent).sort("mdp_index")
            sel = [local[r] for r in g["_row"].to_list()]
            rows_ = R[sel]
            if not steps:  # (cumulative undiscounted rewards at the checkpoints)
                return rows_, rows_
            und = (at_ends[sel] if at_ends is not None
                   else np.cumsum(rows_, axis=1)[:, times - 1])
            if score == "undiscounted":
                return und, und
            return cumulative(rows_, gamma, score)[:, times - 1], und

        rands = m.filter(pl.col("algorithm") == "random")["agent"]
        opts = reference_agents(m, score)["agent"]
        rand = rands[0] if rands.len() else None
        opt = opts[0] if opts.len() else None
        # the normalised score needs Random and Optimal, the shortfall against Optimal needs
        # Optimal (an experiment without them: said in left_out; its curves are the rest)
        Co = cum_of(opt)[0] if opt is not None else None
        # (the test MDPs' references, copied into every row: Random's, else any agent's)
        ref = m.filter(pl.col("agent") == (rand if rand is not None
                                           else m.sort("agent")["agent"][0])).sort("mdp_index")
        N = ref.height
        if rand is not None and Co is not None:
            Cr = cum_of(rand)[0]
            span = Co.mean(axis=0) - Cr.mean(axis=0)  # (K,)
            ok = (span > 1e-12 * max(1.0, float(np.abs(Co).max(initial=0.0))))
            ok &= span >= MIN_GAIN_FRACTION * span[-1]
        else:
            Cr = np.zeros((N, times.size))
            span = np.ones(times.size)
            ok = np.zeros(times.size, dtype=bool)
        has_opt = Co is not None
        if Co is None:
            Co = np.zeros((N, times.size))
        # the exact references of every test MDP (the test set's, copied into each row):
        # regret t rho* - C(t) (episodic: e V*_H - C(eH)), normalised by optimal - worst
        rho = ref["optimal_reference"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        low_ref = ref["worst_reference"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        has_ref = bool(np.isfinite(rho).all())
        gap = rho - low_ref
        normalisable = has_ref and bool(
            (np.isfinite(gap) & (gap > 1e-12 * (1.0 + np.abs(rho)))).all())
        units = (times // H if H > 0 else times).astype(np.float64)  # episodes or steps
        # the IQM across experiments pools the normalised scores: only the experiments
        # that have them enter it
        in_iqm = rand is not None and has_opt
        if in_iqm:
            if agg_grid is None:
                agg_grid = ag
            elif not np.array_equal(agg_grid, ag) and agg_differ is None:
                agg_differ = (f"experiment {exp} is measured at other times (T = {T:,}"
                              + (f", episodes of {H}" if H else "") + ") than "
                              f"{iqm_exps[0]}: the IQM across experiments needs one time "
                              "grid")
            key = (str(m["test"][0]), int(m["test_seed"][0]) if "test_seed" in m.columns
                   else -1, N)
            if key not in strata:
                strata[key] = len(agg_sizes)
                agg_sizes.append(N)
            agg_stratum.append(strata[key])
            iqm_exps.append(exp)
        # every replicate's counts of the test MDPs, one row each (the same draws for
        # every family: paired)
        W = np.concatenate([_counts(i[0]) for i in _index_blocks(
            [N], n_resamples, _experiment_seed(seed, exp))])
        g0 = gi
        opt_row = {"test": str(m["test"][0]), "prior": str(m["prior"][0]),
                   "family": "Optimal", "algorithm": "optimal", "compat": False,
                   "agent": opt}
        for r in [*best.filter(pl.col("experiment") == exp).iter_rows(named=True),
                  *([opt_row] if has_opt else [])]:
            C, U = cum_of(r["agent"])
            X = np.where(ok, (C - Cr.mean(axis=0)) / np.where(ok, span, 1.0), np.nan)
            short = Co - C  # the shortfall against the Optimal agent
            RR = (rho[:, None] * units[None, :] - U) if has_ref else np.zeros_like(U)
            NR = RR / np.where(normalisable, gap, 1.0)[:, None] if normalisable \
                else np.zeros_like(U)
            # bands on the grid: paired replicates (the same MDP draws for every family);
            # the normalising means are fixed, as in the aggregates (the intervals are
            # conditional on them)
            Cg, Cog = C[:, g0], Co[:, g0]
            Xg = np.where(ok[g0], X[:, g0], 0.0)
            # the five views' replicates by one product
            G = grid.size
            reps = W @ np.hstack([Cg, Xg, Cog - Cg, RR[:, g0], NR[:, g0]]) / N
            lo_, hi_ = np.quantile(reps, [a, 1 - a], axis=0)
            lc, lx, ls, lrr, lnr = (lo_[k * G:(k + 1) * G] for k in range(5))
            hc, hx, hs, hrr, hnr = (hi_[k * G:(k + 1) * G] for k in range(5))
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # (columns of no score)
                xm = (np.nanmean(X[:, g0], axis=0) if ok[g0].any()
                      else np.full(grid.size, np.nan))
            for k, (t, j) in enumerate(zip(grid, gi, strict=True)):
                valid = bool(ok[j])
                rows.append({
                    "experiment": exp, "test": r["test"], "prior": r["prior"],
                    "family": r["family"], "algorithm": r["algorithm"],
                    "compat": r["compat"], "agent": r["agent"], "n": N, "t": int(t),
                    "episodes": int(t // H) if H > 0 else None,
                    "even_grid": bool(even[k]),
                    "cumulative": float(C[:, j].mean()),
                    "cumulative_low": float(lc[k]), "cumulative_high": float(hc[k]),
                    "normalised": float(xm[k]) if valid else None,
                    "normalised_low": float(lx[k]) if valid else None,
                    "normalised_high": float(hx[k]) if valid else None,
                    "shortfall": float(short[:, j].mean()) if has_opt else None,
                    "shortfall_low": float(ls[k]) if has_opt else None,
                    "shortfall_high": float(hs[k]) if has_opt else None,
                    "regret": float(RR[:, j].mean()) if has_ref else None,
                    "regret_low": float(lrr[k]) if has_ref else None,
                    "regret_high": float(hrr[k]) if has_ref else None,
                    "normalised_regret": float(NR[:, j].mean()) if normalisable else None,
                    "normalised_regret_low": float(lnr[k]) if normalisable else None,
                    "normalised_regret_high": float(hnr[k]) if normalisable else None,
                    "score": score,
                })
            if in_iqm:
                agg_scores.setdefault(r["family"], {})[exp] = X[:, agi]
    curves_t = pl.DataFrame(rows, schema=_CURVE_SCHEMA)
    if agg_differ is not None:
        left_out.append(LeftOut(None, agg_differ, family="every algorithm"))
        agg_scores = {}
    pooled = {fam: [x.get(e) for e in iqm_exps] for fam, x in agg_scores.items()}
    for fam, per_exp in pooled.items():
        absent = [e for e, x in zip(iqm_exps, per_exp, strict=True) if x is None]
        if absent:
            left_out.append(LeftOut(None, f"no curve in {', '.join(absent)} (the IQM "
                                          "pools every experiment)", family=fam))
    agg_t = _aggregate(pooled, agg_stratum, agg_sizes, agg_grid, n_resamples, seed,
                       confidence, score)
    from bbrlcore.analysis.exploration import bbrl_deepsea_scores, bsuite_deepsea_scores

    ds = bbrl_deepsea_scores(table, best, n_resamples, seed, confidence)
    bs = bsuite_deepsea_scores(table, best)
    return Curves({"curves": curves_t, "aggregate": agg_t, **ds, **bs},
                  {"score": score, "n_resamples": n_resamples, "seed": seed,
                   "confidence": confidence, "offline_bound": offline_bound,
                   "online_bound": online_bound, "separate_compat": separate_compat},
                  left_out)


#: Each column of the ``curves`` table: its type and what it holds (the documentation's
#: column reference is generated from this; a test checks it against a real table). Every
#: value is a mean over the experiment's test MDPs at time ``t``; ``_low``, ``_high``: its
#: paired bootstrap band (the module docstring).
CURVE_COLUMN_DOCS: dict[str, tuple[Any, str]] = {
    "experiment": (pl.Utf8, "the experiment's name"),
    "test": (pl.Utf8, "the test distribution's name"),
    "prior": (pl.Utf8, "the prior's name"),
    "family": (pl.Utf8, "the algorithm family drawn (its best agent), or `Optimal`"),
    "algorithm": (pl.Utf8, "the agent's algorithm"),
    "compat": (pl.Boolean, "whether the agent runs in compat mode"),
    "agent": (pl.Utf8, "the agent's id"),
    "n": (pl.Int64, "test MDPs, N"),
    "t": (pl.Int64, "time: steps played (an episodic experiment: at episode ends)"),
    "episodes": (pl.Int64, "episodes played, t / H; null when continuing"),
    "even_grid": (pl.Boolean, "whether the point is one of the evenly spaced ones that "
                              "linear time axes draw (false: a log-spaced point of a long "
                              "curve)"),
    "cumulative": (pl.Float64, "the score accumulated up to t (discounted return or sum of "
                               "rewards so far, as `score` says)"),
    "cumulative_low": (pl.Float64, "its band's low end"),
    "cumulative_high": (pl.Float64, "its band's high end"),
    "normalised": (pl.Float64, "the normalised score at t, Random = 0 and Optimal = 1 at "
                               "each t; null without both agents, or while Optimal's gain "
                               "over Random is below a tenth of its final gain"),
    "normalised_low": (pl.Float64, "its band's low end"),
    "normalised_high": (pl.Float64, "its band's high end"),
    "shortfall": (pl.Float64, "how far below the Optimal agent: the Optimal agent's "
                              "cumulative score − the agent's, paired on each test MDP (the "
                              "Optimal agent's realised rewards, not the optimal policy's "
                              "exact value: `regret` is against that); null without Optimal"),
    "shortfall_low": (pl.Float64, "its band's low end"),
    "shortfall_high": (pl.Float64, "its band's high end"),
    "regret": (pl.Float64, "the regret against the optimal policy's exact expected value, "
                           "undiscounted: t·ρ* − Σ rewards so far (continuing) or "
                           "e·V*_H(s₀) − Σ rewards so far after e episodes (episodic); at "
                           "the last t the mean of the run tables' `regret`; null without "
                           "the test MDPs' references"),
    "regret_low": (pl.Float64, "its band's low end"),
    "regret_high": (pl.Float64, "its band's high end"),
    "normalised_regret": (pl.Float64, "Colosseum's normalised cumulative regret: each "
                                      "step's (episode's) `regret` divided by optimal − "
                                      "worst (ρ* − ρ⁻, or V*_H − V⁻_H), summed; null "
                                      "without the references or where they coincide"),
    "normalised_regret_low": (pl.Float64, "its band's low end"),
    "normalised_regret_high": (pl.Float64, "its band's high end"),
    "score": (pl.Utf8, "the score `cumulative`, `normalised` and `shortfall` measure: "
                       "`discounted` or `undiscounted` (`regret` is always undiscounted)"),
}
_CURVE_SCHEMA: dict[str, Any] = {c: t for c, (t, _) in CURVE_COLUMN_DOCS.items()}
_AGG_SCHEMA: dict[str, Any] = {"family": pl.Utf8, "n_experiments": pl.Int64, "t": pl.Int64,
                               "iqm": pl.Float64, "iqm_low": pl.Float64,
                               "iqm_high": pl.Float64, "score": pl.Utf8}


def _aggregate(scores: dict[str, list[np.ndarray | None]], stratum: list[int],
               sizes: list[int], grid: np.ndarray | None, n_resamples: int, seed: int,
               confidence: float, score: str) -> pl.DataFrame:
    """IQM of the pooled normalised scores at each aggregate time, with stratified
    bootstrap bands; a family enters only where it has every experiment and the score is
    defined in all of them."""
    rows: list[dict[str, Any]] = []
    if grid is None:
        return pl.DataFrame(schema=_AGG_SCHEMA)
    a = (1.0 - confidence) / 2.0
    for fam, per_exp in scores.items():
        if any(x is None for x in per_exp):
            continue
        X = [np.asarray(x) for x in per_exp]  # (N_e, G) each
        pooled = np.concatenate(X, axis=0)
        cols = np.flatnonzero(np.isfinite(pooled).all(axis=0))
        if cols.size == 0:
            continue
        P = np.ascontiguousarray(pooled[:, cols])
        order = np.ascontiguousarray(np.argsort(P, axis=0, kind="stable"))
        vals = np.ascontiguousarray(np.take_along_axis(P, order, 0))
        n = P.shape[0]
        k = int(0.25 * n)
        pos = np.zeros((cols.size, 0), dtype=np.int64)
        point = np.empty((1, cols.size))
        _pooled_kernel(np.ones((1, n)), order, vals, pos, k, point, np.empty((1, 0, 0)))
        reps = []
        for blk in _index_blocks(sizes, n_resamples, seed):
            sc = [_counts(i) for i in blk]
            cp = np.ascontiguousarray(np.concatenate([sc[s] for s in stratum], axis=1))
            out = np.empty((cp.shape[0], cols.size))
            _pooled_kernel(cp, order, vals, pos, k, out, np.empty((cp.shape[0], 0, 0)))
            reps.append(out)
        lo, hi = np.quantile(np.concatenate(reps), [a, 1 - a], axis=0)
        for j, c in enumerate(cols):
            rows.append({"family": fam, "n_experiments": len(X), "t": int(grid[c]),
                         "iqm": float(point[0, j]), "iqm_low": float(lo[j]),
                         "iqm_high": float(hi[j]), "score": score})
    return pl.DataFrame(rows, schema=_AGG_SCHEMA)


def bootstrap_bytes(sizes: list[int], horizon: int, points: int = MAX_POINTS,
                    aggregate_points: int = AGGREGATE_POINTS) -> tuple[float, float]:
    """``(bytes per resample, fixed bytes)`` :func:`curves` allocates for experiments of
    ``sizes`` test MDPs: an experiment's resampled counts (one per MDP) are kept while its
    families are drawn, with each family's replicates of its five curves at every point
    of the grid and the copies ``np.concatenate`` and ``np.quantile`` make of them (twelve
    a point in all: seven were measured for three curves, 1.35 GB at 10^6 resamples of 10
    MDPs and 20 points against 1.2 GB estimated, 0.33 GB of it the process); the curve
    across experiments keeps its replicates at each point of its grid, with copies (four).

    Examples
    --------
    >>> bootstrap_bytes([500], 250)  # 500 MDPs: 500 counts + 12 x 100 points a resample
    (13600.0, 3072000.0)
    """
    G = curve_positions(max(1, horizon), points)[0].size
    Ga = time_grid(max(1, horizon), aggregate_points).size
    n = max(sizes, default=0)
    return (8.0 * max(n + 12 * G, 4 * Ga),
            8.0 * BLOCK * (sum(sizes) + n + 5 * G))


def check_bootstrap_memory(merged: pl.DataFrame, n_resamples: int,
                           option: str = "n_resamples", points: int = MAX_POINTS) -> None:
    """Refuse, before any work, resamples of the curves' bootstrap that memory cannot
    hold (:func:`bootstrap_bytes` of every experiment of ``merged``: a bound, whichever
    experiments get curves), in one line naming ``option``."""
    if merged.is_empty() or "horizon" not in merged.columns:
        return
    sizes = (merged.group_by("experiment").agg(pl.col("mdp_index").n_unique())
             ["mdp_index"].to_list())
    check_memory(*bootstrap_bytes(sizes, int(merged["horizon"].max() or 1), points),
                 n_resamples, option, "the learning curves' bootstrap")


def _missing_references(have: set[str]) -> tuple[str, str] | None:
    """What the curves of an experiment whose reference agents are ``have`` (among
    ``random``, ``optimal``) lack, and why: ``(what, reason)`` for :class:`LeftOut`, or
    None when it has both.

    >>> _missing_references({"optimal"})[0]
    'no normalised score'
    >>> _missing_references(set())[1].split(" (")[0]
    'no Random and no Optimal agent'
    """
    missing = [n for a, n in (("random", "Random"), ("optimal", "Optimal")) if a not in have]
    if not missing:
        return None
    what = "no normalised score" + (" and no shortfall against Optimal"
                                    if "Optimal" in missing else "")
    return what, (f"no {' and no '.join(missing)} agent (the normalised score needs Random "
                  "and Optimal; drawn: the cumulative score and, where the runs carry their "
                  "test MDPs' references, the regret and bbrl's DeepSea score)")


def _needed(merged: pl.DataFrame, best: pl.DataFrame) -> pl.DataFrame:
    """(experiment, agent) pairs a curve needs: each family's best agent, Random, Optimal."""
    ref = merged.filter(pl.col("algorithm").is_in(["random", "optimal"])).select(
        "experiment", "agent")
    return pl.concat([best.select("experiment", "agent"), ref]).unique()


def curve_agents(merged: pl.DataFrame, score: str = "discounted",
                 offline_bound: float | None = None, online_bound: float | None = None,
                 separate_compat: bool = True, summary: pl.DataFrame | None = None
                 ) -> set[tuple[str, str]]:
    """The (experiment, agent) pairs whose per-step rewards :func:`curves` reads (each
    family's best agent by ``score``, Random and Optimal), so that a caller reads only
    those (:func:`bbrlcore.analysis.results.attach_rewards`); empty when the best agents
    cannot be chosen (the curves then say why). ``summary``: as
    :func:`bbrlcore.analysis.aggregate.best_agents` takes it."""
    from bbrlcore.analysis import aggregate as A

    try:
        best = A.best_agents(merged, offline_bound=offline_bound, online_bound=online_bound,
                             separate_compat=separate_compat, score=score, summary=summary)
    except BBRLError:
        return set()
    return set(_needed(merged, best).iter_rows())


def write_tables(c: Curves, out_dir: str | Path) -> dict[str, Path]:
    """Write the tables as Parquet artefacts of kind ``curves`` (atomic), recording the
    settings; returns the paths."""
    from bbrlcore.formats import artefacts

    out = Path(out_dir)
    paths = {}
    for name, file in TABLE_FILES.items():
        p = out / file
        artefacts.write_artefact(p, c.tables[name], "curves", {"table": name, **c.meta})
        paths[name] = p
    return paths


def _example_runs(T: int = 4, n: int = 6) -> pl.DataFrame:
    """A tiny merged table (Random, Optimal, one learner) for the docstring examples."""
    rng = np.random.default_rng(0)
    rows = []
    for alg, agent, p in (("random", "random", 0.2), ("optimal", "optimal", 0.9),
                          ("e-greedy", "e-greedy__epsilon=0.1", 0.6)):
        for i in range(n):
            r = (rng.random(T) < p).astype(np.float32)
            disc = float(sum(0.95 ** s * float(x) for s, x in enumerate(r)))
            rows.append({"experiment": "GC-GC", "test": "GC", "prior": "GC",
                         "algorithm": alg, "agent": agent, "compat": False,
                         "params": "{}", "mdp_index": i, "discounted_return": disc,
                         "undiscounted_return": float(r.sum()), "online_time_s": 1e-3,
                         "n_steps": T, "offline_time_s": 0.0, "gamma": 0.95,
                         "horizon": T, "test_seed": 0, "rewards": r.tolist()})
    return pl.DataFrame(rows).with_columns(pl.col("rewards").cast(pl.List(pl.Float32)))

