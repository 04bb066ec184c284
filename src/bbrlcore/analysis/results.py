"""Run tables to results: merging chunks and the tidy summary.

* :func:`merge_tables` concatenates run tables (chunks of runs, or whole runs) into one
  table sorted by experiment, agent and test MDP; an (experiment, agent, MDP) present
  twice is an error, and so are agents of one experiment measured on different test MDPs
  (:func:`check_coverage`: a mean over 5 MDPs is not ranked against one over 10).
* :func:`read_runs` reads run or merged tables, each checked (:func:`check_run_table`:
  an ``mdp_index`` outside the test set whose size the table records, ``n_steps``
  different from the horizon) before they are merged.
* :func:`summary_table` gives one row per experiment × agent: ``experiment, test, prior,
  algorithm, agent, params, compat, grid_size, n, mean, ci_low, ci_high, offline_time_s,
  online_time_per_decision_s, normalised_score, shortfall, score`` (``grid_size``: how
  many configurations of its algorithm, compat variants apart, the experiment ran: its
  tuning budget; chosen on validation MDPs, :mod:`bbrlcore.analysis.selection` adds
  ``validation_mean`` and ``validation_n``). The interval is
  mean ± 1.96·s/√N; the normalised score puts Random at 0 and Optimal at 1 within each
  experiment (null when either is missing); the shortfall is the Optimal agent's mean
  minus the agent's mean, how far below the Optimal agent it scores (null without
  Optimal; not the regret, which the run tables' ``regret`` measures against the optimal
  policy's exact expected value). The Optimal is the score's reference
  (:func:`reference_agents`: optimal for the discounted return, or for the sum of
  rewards over the horizon).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from bbrlcore.analysis import stats
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.protocol.runner import (
    INDICATOR_COLUMNS,
    INDICATOR_VALUES,
    RECORDED_SINCE_EPISODES,
    RECORDED_SINCE_REWARDS,
    RUN_COLUMNS,
    with_settings,
)

#: Columns of the summary table, in order.
SUMMARY_COLUMNS = (
    "experiment",
    "test",
    "prior",
    "algorithm",
    "agent",
    "params",
    "compat",
    "grid_size",
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "offline_time_s",
    "online_time_per_decision_s",
    "normalised_score",
    "shortfall",
    "score",
)

#: Each column of the summary table: its type and what it holds (the documentation's
#: column reference is generated from this; a test checks it against a real summary).
SUMMARY_COLUMN_DOCS: dict[str, tuple[Any, str]] = {
    "experiment": (pl.String, "the experiment's name, `{test}-{prior}`"),
    "test": (pl.String, "the test distribution's name"),
    "prior": (pl.String, "the prior's name"),
    "algorithm": (pl.String, "the algorithm's name"),
    "agent": (pl.String, "the agent's id (the algorithm and every parameter, defaults "
                         "included)"),
    "params": (pl.String, "the agent's parameters, as a JSON object"),
    "compat": (pl.Boolean, "whether the agent runs in compat mode"),
    "grid_size": (pl.Int64, "how many configurations of the algorithm (compat variants "
                            "apart) the experiment runs: its tuning budget"),
    "n": (pl.Int64, "test MDPs, N"),
    "mean": (pl.Float64, "the mean score over the test MDPs (the score `score` names)"),
    "ci_low": (pl.Float64, "the low end of its 95% interval, mean − 1.96·s/√N"),
    "ci_high": (pl.Float64, "the high end of its 95% interval, mean + 1.96·s/√N"),
    "offline_time_s": (pl.Float64, "the agent's offline learning time, seconds"),
    "online_time_per_decision_s": (pl.Float64, "online time per decision, seconds: the "
                                   "trajectories' time over the steps taken"),
    "normalised_score": (pl.Float64, "(mean − Random's mean) / (Optimal's mean − Random's "
                         "mean) in the experiment; null without both references"),
    "shortfall": (pl.Float64, "how far below the Optimal agent: Optimal's mean − mean in the "
                              "experiment, of the score `score` names (the Optimal agent's "
                              "realised mean, not the optimal policy's exact value: the run "
                              "tables' `regret` is against that); null without Optimal"),
    "score": (pl.String, "the score `mean`, its interval, `normalised_score` and `shortfall` "
                         "measure: `discounted` (Σ γᵗ rₜ) or `undiscounted` (Σ rₜ)"),
}

#: The scores an analysis can rank agents by: the discounted return over the horizon (the
#: paper's, the default) or the undiscounted sum of rewards (Dearden et al. 1998, Guez et
#: al. 2012); run tables record both (``score`` in ``config.yaml``, ``--score``).
SCORES = ("discounted", "undiscounted")
#: The run-table column of each score.
SCORE_COLUMNS = {"discounted": "discounted_return", "undiscounted": "undiscounted_return"}


def score_column(score: str, table: pl.DataFrame | None = None) -> str:
    """The column holding ``score``; one line when ``score`` is unknown or ``table`` lacks
    the column (run tables written before bbrl recorded the undiscounted return).

    Examples
    --------
    >>> score_column("undiscounted")
    'undiscounted_return'
    """
    if score not in SCORE_COLUMNS:
        raise BBRLError(f"score={score!r}: expected one of {', '.join(SCORES)}")
    col = SCORE_COLUMNS[score]
    if isinstance(table, pl.DataFrame) and col not in table.columns:
        raise BBRLError(f"score={score}: the run tables have no {col} column (written before "
                        "bbrl recorded it); run them again, or use score=discounted")
    return col


def optimal_criterion(agent: str) -> str:
    """What an Optimal agent's policy is optimal for, from its id
    (:mod:`bbrlcore.agents.optimal`: ``optimal`` is the discounted criterion, the
    paper's; ``optimal__criterion=undiscounted`` the sum of rewards over the horizon).

    >>> optimal_criterion("optimal"), optimal_criterion("optimal__criterion=undiscounted")
    ('discounted', 'undiscounted')
    """
    for part in agent.split("__")[1:]:
        key, _, value = part.partition("=")
        if key == "criterion":
            return value
    return "discounted"


#: What each score's reference is, as the report says it.
REFERENCE_TEXT = {
    "discounted": "Optimal for the discounted return (the BBRL Q-iteration of the test MDP)",
    "undiscounted": "Optimal for the sum of rewards over the horizon (backward induction "
                    "over the remaining steps of the test MDP)",
}


def reference_agents(table: pl.DataFrame, score: str = "discounted") -> pl.DataFrame:
    """The Optimal agent that is the reference of ``score`` in each experiment of
    ``table`` (a run, merged or summary table): the one whose criterion is the score
    (:func:`optimal_criterion`), else the only other one, flagged.

    Returns one row per experiment with an Optimal agent: ``experiment``, ``agent`` (the
    reference), ``criterion`` (what it is optimal for) and ``matched`` (its criterion
    is the score: false when the runs hold only an Optimal of the other criterion, whose
    normalised scores may exceed 1 for the wrong reason; :func:`reference_warning`).

    Examples
    --------
    >>> t = pl.DataFrame({"experiment": ["E", "E", "F"], "algorithm": ["optimal"] * 3,
    ...                   "agent": ["optimal", "optimal__criterion=undiscounted", "optimal"]})
    >>> for row in reference_agents(t, "undiscounted").rows():
    ...     print(row)
    ('E', 'optimal__criterion=undiscounted', 'undiscounted', True)
    ('F', 'optimal', 'discounted', False)
    """
    score_column(score)
    rows = []
    opt = (table.filter(pl.col("algorithm") == "optimal").select("experiment", "agent")
           .unique().sort("experiment", "agent"))
    for (exp,), g in opt.group_by(["experiment"], maintain_order=True):
        agents = g["agent"].to_list()
        crit = {a: optimal_criterion(a) for a in agents}
        match = [a for a in agents if crit[a] == score]
        agent = match[0] if match else agents[0]
        rows.append({"experiment": exp, "agent": agent, "criterion": crit[agent],
                     "matched": bool(match)})
    return pl.DataFrame(rows, schema={"experiment": pl.Utf8, "agent": pl.Utf8,
                                      "criterion": pl.Utf8, "matched": pl.Boolean})


def reference_warning(refs: pl.DataFrame, score: str) -> str | None:
    """One line when some experiment's reference (:func:`reference_agents`) is an Optimal
    of another criterion than ``score``; None when every reference matches."""
    bad = refs.filter(~pl.col("matched"))
    if bad.is_empty():
        return None
    exps = bad["experiment"].to_list()
    shown = ", ".join(exps[:3]) + (f" and {len(exps) - 3} more" if len(exps) > 3 else "")
    other = bad["criterion"][0]
    return (f"score={score}, but the Optimal of {shown} is optimal for the {other} "
            f"criterion, not for the {score} score: its normalised scores and shortfalls are "
            f"against a reference that can be beaten (run optimal with criterion: {score}; "
            f"the workflow does when score: {score})")


def normalising_means(summary: pl.DataFrame, score: str = "discounted") -> pl.DataFrame:
    """Per experiment of a summary (:func:`summary_table` of ``score``) with Random and
    Optimal: ``experiment, random_mean, optimal_mean`` (the score's reference,
    :func:`reference_agents`), ``optimal_agent, criterion, matched``: what puts Random at
    0 and Optimal at 1 (a normalised interval is the summary's interval through the same
    affine map)."""
    rand = (summary.filter(pl.col("algorithm") == "random").group_by("experiment")
            .agg(pl.col("mean").first().alias("random_mean")))
    refs = reference_agents(summary, score)
    opt = refs.rename({"agent": "optimal_agent"}).join(
        summary.select("experiment", pl.col("agent").alias("optimal_agent"),
                       pl.col("mean").alias("optimal_mean")),
        on=["experiment", "optimal_agent"], how="left")
    return (rand.join(opt, on="experiment", how="inner")
            .filter(pl.col("optimal_mean") != pl.col("random_mean"))
            .select("experiment", "random_mean", "optimal_mean", "optimal_agent",
                    "criterion", "matched").sort("experiment"))


#: Columns of :func:`above_reference`.
ABOVE_REFERENCE_COLUMNS = ("experiment", "algorithm", "agent", "normalised_score",
                           "reference", "criterion", "matched", "difference",
                           "difference_low", "difference_high", "significant")


def above_reference(summary: pl.DataFrame, merged: pl.DataFrame,
                    score: str = "discounted") -> pl.DataFrame:
    """Every agent whose normalised score is above 1: it beat its experiment's Optimal
    (:func:`reference_agents`) on average, which a reference optimal for the score allows
    only by chance. One row each: ``experiment, algorithm, agent, normalised_score``, the
    ``reference`` (its id, ``criterion``, ``matched``), the paired mean ``difference``
    agent − reference of the score over the test MDPs with its 95% interval
    (``difference_low``, ``difference_high``: mean ± 1.96·s/√N of the per-MDP
    differences) and ``significant`` (the interval is above 0: more than sampling noise,
    so the reference is not optimal for the score, or the runs are wrong).

    ``summary`` is :func:`summary_table` of ``score``; ``merged`` the run table it was
    made from."""
    col = score_column(score, merged)
    schema = {"experiment": pl.Utf8, "algorithm": pl.Utf8, "agent": pl.Utf8,
              "normalised_score": pl.Float64, "reference": pl.Utf8, "criterion": pl.Utf8,
              "matched": pl.Boolean, "difference": pl.Float64, "difference_low": pl.Float64,
              "difference_high": pl.Float64, "significant": pl.Boolean}
    over = summary.filter((pl.col("algorithm") != "optimal")
                          & (pl.col("normalised_score") > 1.0))
    if over.is_empty():
        return pl.DataFrame(schema=schema)
    refs = {r["experiment"]: r for r in reference_agents(summary, score).iter_rows(named=True)}
    rows = []
    for r in over.sort("experiment", "agent").iter_rows(named=True):
        ref = refs[r["experiment"]]
        m = merged.filter(pl.col("experiment") == r["experiment"])
        pair = (m.filter(pl.col("agent") == r["agent"]).select("mdp_index", pl.col(col))
                .join(m.filter(pl.col("agent") == ref["agent"])
                      .select("mdp_index", pl.col(col).alias("_ref")), on="mdp_index"))
        d = (pair[col].cast(pl.Float64) - pair["_ref"].cast(pl.Float64)).to_numpy()
        mean, lo, hi = stats.mean_ci(d)
        rows.append({"experiment": r["experiment"], "algorithm": r["algorithm"],
                     "agent": r["agent"], "normalised_score": r["normalised_score"],
                     "reference": ref["agent"], "criterion": ref["criterion"],
                     "matched": ref["matched"], "difference": mean, "difference_low": lo,
                     "difference_high": hi, "significant": bool(lo > 0)})
    return pl.DataFrame(rows, schema=schema)


_KEY = ["experiment", "agent", "mdp_index"]

#: What must agree between all run tables of one experiment: its test set (test
#: distribution, seed, γ, T, the interaction's setting: H, E, n) and the bbrlcore version
#: that ran them.
SAME_WITHIN_EXPERIMENT = ("test", "test_seed", "gamma", "horizon", "episode_length",
                          "episodes", "checkpoint_every", "bbrlcore_version")


def check_run_table(table: pl.DataFrame, source: str,
                    n_mdps: int | dict[str, int] | None = None) -> None:
    """Columns and values of a run (or merged) table; one :class:`BBRLError` naming
    ``source``, the row and the value on any problem.

    Beyond the column types and finite values: ``mdp_index`` must be >= 0 and, when the
    test set's size ``n_mdps`` is known (run tables record it in their metadata; an
    integer, or experiment -> N), below it; ``n_steps`` must equal ``horizon`` (a
    trajectory lasts the horizon; the online time per decision divides by it).

    The per-step rewards (``rewards``, ``undiscounted_return``) are checked where the table
    has them (tables written before bbrl recorded them lack both,
    :data:`~bbrlcore.protocol.runner.RECORDED_SINCE_REWARDS`) by :func:`check_rewards`
    (each list holds ``horizon`` finite values that sum to the returns under the table's
    γ); both are null together, and only for every row of an agent of an experiment (a
    player that records none) or none."""
    hint = artefacts.REGENERATE["run"]
    for col, dtype in RUN_COLUMNS.items():
        if col not in table.columns:
            if (col in RECORDED_SINCE_REWARDS or col in RECORDED_SINCE_EPISODES
                    or col in INDICATOR_COLUMNS):
                continue
            raise BBRLError(f"{source}: run table lacks the column {col!r}; {hint}")
        if table[col].dtype != dtype:
            raise BBRLError(f"{source}: column {col!r} has type {table[col].dtype}, expected "
                            f"{dtype}; {hint}")
    for col in ("experiment", "agent", "mdp_index", "discounted_return", "online_time_s"):
        if table[col].null_count():
            raise BBRLError(f"{source}: column {col!r} has missing values; {hint}")
    checks = {
        "discounted_return": "finite",
        "online_time_s": "finite and >= 0",
        "offline_time_s": "finite and >= 0",
        "gamma": "in (0, 1]",
    }
    ret = table["discounted_return"].to_numpy()
    bad = {
        "discounted_return": ~np.isfinite(ret),
        "online_time_s": ~(table["online_time_s"].to_numpy() >= 0)
        | ~np.isfinite(table["online_time_s"].to_numpy()),
        "offline_time_s": ~(table["offline_time_s"].fill_null(0.0).to_numpy() >= 0)
        | ~np.isfinite(table["offline_time_s"].fill_null(0.0).to_numpy()),
        "gamma": ~((table["gamma"].fill_null(0.0).to_numpy() > 0)
                   & (table["gamma"].fill_null(0.0).to_numpy() <= 1)),
    }
    for col, mask in bad.items():
        if mask.any():
            row = table.row(int(np.argmax(mask)), named=True)
            raise BBRLError(f"{source}: {col} must be {checks[col]}, got {row[col]} "
                            f"(agent {row['agent']}, MDP {row['mdp_index']}); {hint}")
    idx = table["mdp_index"].to_numpy()
    if isinstance(n_mdps, dict):
        limit = table["experiment"].replace_strict(
            n_mdps, default=np.iinfo(np.int64).max, return_dtype=pl.Int64).to_numpy()
    else:
        limit = np.full(len(idx), np.iinfo(np.int64).max if n_mdps is None else n_mdps)
    outside = (idx < 0) | (idx >= limit)
    if outside.any():
        k = int(np.argmax(outside))
        row = table.row(k, named=True)
        n = int(limit[k])
        where = ("a negative index" if row["mdp_index"] < 0 else
                 f"outside the test set's MDPs 0-{n - 1} (n_mdps={n} recorded in the run "
                 "metadata)")
        raise BBRLError(f"{source}: row {k} (agent {row['agent']}): mdp_index "
                        f"{row['mdp_index']} is {where}; {hint}")
    for col in ("horizon", "n_steps"):
        low = (table[col].fill_null(1) < 1).to_numpy()
        if low.any():
            k = int(np.argmax(low))
            row = table.row(k, named=True)
            raise BBRLError(f"{source}: row {k} (agent {row['agent']}, MDP "
                            f"{row['mdp_index']}): {col} must be >= 1, got {row[col]}; {hint}")
    steps, horizon = table["n_steps"], table["horizon"]
    differ = (steps.is_not_null() & horizon.is_not_null() & (steps != horizon)).to_numpy()
    if differ.any():
        k = int(np.argmax(differ))
        row = table.row(k, named=True)
        raise BBRLError(f"{source}: row {k} (agent {row['agent']}, MDP {row['mdp_index']}): "
                        f"n_steps {row['n_steps']} differs from the horizon {row['horizon']} "
                        f"(every trajectory lasts the horizon); {hint}")
    _check_settings(table, source, hint)
    check_rewards(table, source)
    partly = _partly_recorded(table)
    if partly:
        e, a = partly
        have = next(c for c in RECORDED_SINCE_REWARDS if c in table.columns)
        raise BBRLError(f"{source}: experiment {e}, agent {a}: {have} is null on some test "
                        f"MDPs only (an agent records the rewards of all its trajectories or "
                        f"none: chunks from before and after bbrl recorded them?); {hint}")
    check_derived(table, source)


def _check_settings(table: pl.DataFrame, source: str, hint: str) -> None:
    """The interaction's settings and what they record, where the table has them
    (:data:`~bbrlcore.protocol.runner.RECORDED_SINCE_EPISODES`): H ≥ 0, E ≥ 1, T = E × H
    (episodic) or E = 1 (continuing), n dividing T (in multiples of H), one checkpoint
    every n steps (the last one the undiscounted return) and E episode returns."""
    if not any(c in table.columns for c in RECORDED_SINCE_EPISODES):
        return
    t = with_settings(table)
    H, E, T = t["episode_length"], t["episodes"], t["horizon"]
    n = t["checkpoint_every"]
    ck, ep = t["checkpoints"], t["episode_returns"]
    checks = [
        ((H.is_null() | (H < 0) | E.is_null() | (E < 1)),
         "episode_length must be >= 0 and episodes >= 1"),
        (((H > 0) & (H * E != T)) | ((H == 0) & (E != 1)),
         "horizon must be episodes x episode_length (episodic) and episodes 1 (continuing)"),
        (n.is_not_null() & ((n < 1) | (T % n.clip(1) != 0) | ((H > 0) & (n % H.clip(1) != 0))),
         "checkpoint_every must divide the horizon (in multiples of the episode length)"),
        (ck.is_not_null() & (n.is_null() | (ck.list.len() != T // n.clip(1))),
         "checkpoints must hold horizon / checkpoint_every values"),
        (ep.is_not_null() & (ep.list.len() != E),
         "episode_returns must hold one value per episode"),
        ((H > 0) & ep.is_null() & ck.is_not_null(),
         "an episodic trajectory with checkpoints must record its episode returns"),
    ]
    for mask, what in checks:
        bad = mask.fill_null(False).to_numpy()
        if bad.any():
            k = int(np.argmax(bad))
            row = table.select("agent", "mdp_index").row(k, named=True)
            raise BBRLError(f"{source}: row {k} (agent {row['agent']}, MDP "
                            f"{row['mdp_index']}): {what}; {hint}")
    if "undiscounted_return" in t.columns and ck.null_count() < len(t):
        last, u = ck.list.last(), t["undiscounted_return"]
        off = (last.is_not_null() & u.is_not_null()
               & ((last - u).abs() > 1e-9 * (1.0 + u.abs()))).fill_null(False).to_numpy()
        if off.any():
            k = int(np.argmax(off))
            row = table.select("agent", "mdp_index").row(k, named=True)
            raise BBRLError(f"{source}: row {k} (agent {row['agent']}, MDP "
                            f"{row['mdp_index']}): the last checkpoint {last[k]} is not the "
                            f"undiscounted return {u[k]}; {hint}")


#: The reference columns of a run table: one value per test MDP, from its test set.
REFERENCE_COLUMNS = ("optimal_reference", "worst_reference", "random_reference")


def check_derived(table: pl.DataFrame, source: str, first_row: int = 0) -> None:
    """Check the columns of a run table that are derived from others against their
    source, where no per-step rewards can (:func:`check_rewards` checks the episode
    returns and checkpoints against the rewards where the table has them): one
    :class:`BBRLError` naming ``source``, the row, the experiment, the agent, the MDP and
    what disagrees.

    * every value of ``checkpoints`` and ``episode_returns`` is finite (a null list is
      "not recorded"; a null or NaN inside one is refused), and so are the references
      (null where undefined) and ``regret``;
    * ``regret`` is the reference's expected total minus what was collected:
      ``optimal_reference`` × E − ``undiscounted_return`` (episodic) or
      ``optimal_reference`` × T − ``undiscounted_return`` (continuing), and it is null
      exactly where one of them is (within :data:`RETURNS_RTOL` of the terms' size);
    * an episodic row's ``episode_returns`` sum to ``undiscounted_return`` and their
      running sum at every ``checkpoint_every / episode_length`` episodes is the row's
      ``checkpoints`` (the long interactions, whose per-step rewards are not kept).

    Tables written before these columns lack them (nothing to check).

    Examples
    --------
    >>> t = pl.DataFrame({"experiment": ["E"], "agent": ["a"], "mdp_index": [0],
    ...                   "horizon": [4], "episode_length": [2], "episodes": [2],
    ...                   "checkpoint_every": [2], "undiscounted_return": [1.0],
    ...                   "checkpoints": [[0.0, 1.0]], "episode_returns": [[0.0, 1.0]],
    ...                   "optimal_reference": [1.0], "worst_reference": [0.0],
    ...                   "random_reference": [0.25], "regret": [1.0]})
    >>> check_derived(t, "ok.parquet")
    >>> check_derived(t.with_columns(regret=pl.lit(0.5)), "edited.parquet")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: edited.parquet: row 0 (experiment E, agent a, MDP 0): regret 0.5
    is not optimal_reference x episodes - undiscounted_return = 1 x 2 - 1 = 1 ...
    """
    if not any(c in table.columns for c in RECORDED_SINCE_EPISODES):
        return
    hint = artefacts.REGENERATE["run"]
    t = with_settings(table)

    def fail(k: int, what: str) -> None:
        row = t.select("experiment", "agent", "mdp_index").row(k, named=True)
        raise BBRLError(f"{source}: row {first_row + k} (experiment {row['experiment']}, "
                        f"agent {row['agent']}, MDP {row['mdp_index']}): {what}; {hint}")

    for col in (*REFERENCE_COLUMNS, "regret"):
        v = t[col]
        bad = (v.is_not_null() & ~v.is_finite().fill_null(True)).to_numpy()
        if bad.any():
            k = int(np.argmax(bad))
            fail(k, f"{col} must be finite (null where undefined), got {v[k]}")
    for col in ("checkpoints", "episode_returns"):
        v = t[col]
        if v.null_count() == t.height:
            continue
        ok = v.list.eval(pl.element().is_finite().fill_null(False)).list.all()
        bad = (v.is_not_null() & ~ok.fill_null(True)).to_numpy()
        if bad.any():
            k = int(np.argmax(bad))
            fail(k, f"{col} must hold finite values (a NaN, an infinity or a null)")
    if "undiscounted_return" in t.columns:
        _check_regret(t, fail)
    _check_episodes_against_checkpoints(t, fail)
    _check_indicators(t, fail)


def _check_indicators(t: pl.DataFrame, fail: Callable[[int, str], None]) -> None:
    """:func:`check_derived`'s Colosseum indicators (:data:`INDICATOR_COLUMNS`): null
    where ``log_every`` is (not asked), all recorded or all null otherwise (an agent
    whose policy is unknown), finite; the regrets ≥ 0; and, where the references are
    recorded, the normalised rewards recomputed from ``expected_reward`` and
    ``undiscounted_return`` with the per-step references (episodic: / H)."""
    L = t["log_every"]
    vals = [t[c] for c in INDICATOR_VALUES]
    for c, v in zip(INDICATOR_VALUES, vals, strict=True):
        bad = (v.is_not_null() & (L.is_null() | ~v.is_finite().fill_null(True))).to_numpy()
        if bad.any():
            k = int(np.argmax(bad))
            fail(k, f"{c} must be finite and recorded only where log_every is (got {v[k]}, "
                    f"log_every {L[k]})")
        odd = (v.is_null() != vals[0].is_null()).to_numpy()
        if odd.any():
            k = int(np.argmax(odd))
            fail(k, f"{c} and {INDICATOR_VALUES[0]} must be null together (the indicators "
                    "of an agent are all known or all unavailable)")
    for c in ("expected_regret", "normalised_expected_regret"):
        bad = (t[c] < 0).fill_null(False).to_numpy()
        if bad.any():
            k = int(np.argmax(bad))
            fail(k, f"{c} {t[c][k]} must be >= 0 (Colosseum's regret is clipped at 0)")
    have = (vals[0].is_not_null() & t["optimal_reference"].is_not_null()
            & t["worst_reference"].is_not_null()).to_numpy()
    if not have.any():
        return
    H = t["episode_length"].to_numpy()[have].astype(np.float64)
    per = np.where(H > 0, H, 1.0)
    o = t["optimal_reference"].to_numpy()[have].astype(np.float64) / per
    w = t["worst_reference"].to_numpy()[have].astype(np.float64) / per
    steps = t["horizon"].to_numpy()[have].astype(np.float64) - 1.0
    for col, src in (("normalised_expected_reward", "expected_reward"),
                     ("normalised_reward", "undiscounted_return")):
        if src not in t.columns:
            continue
        got = t[col].to_numpy()[have].astype(np.float64)
        base = t[src].to_numpy()[have].astype(np.float64)
        want = (base - steps * w) / (o - w)
        off = ~(np.abs(got - want) <= 1e-6 * (np.abs(want) + steps) + 1e-9)
        off &= np.isfinite(base)
        if off.any():
            j = int(np.argmax(off))
            k = int(np.flatnonzero(have)[j])
            fail(k, f"{col} {got[j]:.9g} is not ({src} - (horizon - 1) x worst) / (optimal "
                    f"- worst) = ({base[j]:.9g} - {steps[j]:.0f} x {w[j]:.9g}) / "
                    f"({o[j]:.9g} - {w[j]:.9g}) = {want[j]:.9g}, the references per step "
                    "(Colosseum's normalisation)")


def _check_regret(t: pl.DataFrame, fail: Callable[[int, str], None]) -> None:
    """:func:`check_derived`'s regret: recomputed from the references and the returns."""
    H, E, T = t["episode_length"], t["episodes"], t["horizon"]
    units = pl.select(pl.when(H > 0).then(E).otherwise(T).cast(pl.Float64)).to_series()
    opt, u, reg = t["optimal_reference"], t["undiscounted_return"], t["regret"]
    expected_null = (opt.is_null() | u.is_null()).to_numpy()
    is_null = reg.is_null().to_numpy()
    odd = expected_null != is_null
    if odd.any():
        k = int(np.argmax(odd))
        what = ("regret is recorded where optimal_reference or undiscounted_return is "
                f"null (got {reg[k]})" if expected_null[k] else
                "regret is null where optimal_reference and undiscounted_return are "
                "recorded (it is derived from them)")
        fail(k, what)
    have = ~expected_null
    if not have.any():
        return
    o = opt.to_numpy()[have].astype(np.float64)
    n = units.to_numpy()[have]
    uu = u.to_numpy()[have].astype(np.float64)
    r = reg.to_numpy()[have].astype(np.float64)
    want = o * n - uu
    off = ~(np.abs(r - want) <= RETURNS_RTOL * (np.abs(o * n) + np.abs(uu)) + RETURNS_ATOL)
    if off.any():
        j = int(np.argmax(off))
        k = int(np.flatnonzero(have)[j])
        per = "episodes" if int(t["episode_length"][k]) > 0 else "horizon"
        fail(k, f"regret {r[j]:.9g} is not optimal_reference x {per} - undiscounted_return "
                f"= {o[j]:.9g} x {n[j]:.9g} - {uu[j]:.9g} = {want[j]:.9g} (the regret is "
                "derived from them)")


#: Absolute floor of the agreement between episode returns and checkpoints, where the
#: per-step rewards are not kept (both are float64 sums of the same rewards, in two
#: orders): :data:`RETURNS_RTOL` relative to the sums of absolute values, plus this.
SUMS_ATOL = 1e-9


def _check_episodes_against_checkpoints(t: pl.DataFrame,
                                        fail: Callable[[int, str], None]) -> None:
    """:func:`check_derived`'s episodic rows without per-step rewards: the episode
    returns' sum is the undiscounted return and their running sum is the checkpoints
    (rows with rewards are checked against them by :func:`check_rewards`)."""
    rewards = t["rewards"] if "rewards" in t.columns else pl.Series([None] * t.height)
    sel = ((t["episode_length"] > 0) & t["episode_returns"].is_not_null()
           & rewards.is_null()).fill_null(False)
    if not sel.any() or "undiscounted_return" not in t.columns:
        return
    idx = np.flatnonzero(sel.to_numpy())
    sub = t[idx].with_row_index("_k")
    for (H, E, n), g in sub.group_by(["episode_length", "episodes", "checkpoint_every"]):
        for lo in range(0, g.height, max(1, CHECK_CHUNK_VALUES // max(int(E), 1))):
            c = g.slice(lo, max(1, CHECK_CHUNK_VALUES // max(int(E), 1)))
            G = c["episode_returns"].list.to_array(int(E)).to_numpy().astype(np.float64)
            cum, cabs = np.cumsum(G, axis=1), np.cumsum(np.abs(G), axis=1)
            rows = idx[c["_k"].to_numpy()]
            u = c["undiscounted_return"].to_numpy()
            have_u = ~np.isnan(u.astype(np.float64))
            off = have_u & ~(np.abs(cum[:, -1] - u) <= RETURNS_RTOL * (cabs[:, -1] + np.abs(u))
                             + SUMS_ATOL)
            if off.any():
                j = int(np.argmax(off))
                fail(int(rows[j]), f"episode_returns sum to {cum[j, -1]:.9g}, not the "
                                   f"undiscounted_return {u[j]:.9g} (the episode returns "
                                   "are derived from the rewards)")
            if n is None or c["checkpoints"].null_count() == c.height or n % H:
                continue
            per = int(n) // int(H)
            C = c["checkpoints"].list.to_array(int(E) // per).to_numpy()
            want, scale = cum[:, per - 1::per], cabs[:, per - 1::per]
            bad = ~(np.abs(C - want) <= RETURNS_RTOL * (scale + np.abs(C)) + SUMS_ATOL)
            bad = bad.any(axis=1)
            if bad.any():
                j = int(np.argmax(bad))
                e = int(np.argmax(~(np.abs(C[j] - want[j])
                                    <= RETURNS_RTOL * (scale[j] + np.abs(C[j])) + SUMS_ATOL)))
                fail(int(rows[j]), f"checkpoint {e} ({C[j, e]:.9g}, at step {(e + 1) * n}) "
                                   f"is not the sum of the episode returns up to it "
                                   f"({want[j, e]:.9g}): the checkpoints and episode returns "
                                   "are derived from the same rewards")


#: Tolerance of the agreement between a run table's per-step rewards and its returns
#: (:func:`check_rewards`): relative to the sum of the absolute (discounted) rewards, so
#: that cancelling rewards do not make it vanish, plus an absolute floor for all-zero
#: rewards. The rewards are stored in float32 (a relative rounding of at most 2^-24 ≈
#: 6e-8 each) while the kernels accumulate the float64 rewards, each in its own order: 1e-5
#: leaves two orders of magnitude for that, and a reward scaled, changed, dropped or
#: discounted with another γ is far outside it.
RETURNS_RTOL = 1e-5
RETURNS_ATOL = 1e-12
#: Per-step rewards checked at once (values): bounds the check's temporary arrays
#: (about 50 bytes a value) whatever the size of the table.
CHECK_CHUNK_VALUES = 1 << 20


def check_rewards(table: pl.DataFrame, source: str, first_row: int = 0) -> None:
    """Check that a run table's per-step rewards, its returns and its γ agree: the one
    place every reader (merge, summary, aggregate, curves, report) checks them, whoever
    wrote the table (the runner, a plugin's kernel, a hand).

    ``table`` holds ``rewards`` and ``undiscounted_return`` (or neither: tables written
    before bbrl recorded them, :data:`~bbrlcore.protocol.runner.RECORDED_SINCE_REWARDS`)
    beside ``experiment, agent, mdp_index, gamma, n_steps, discounted_return`` (checked
    before by :func:`check_run_table`); ``first_row`` is the index of its first row in
    ``source`` (a file read in batches). One :class:`BBRLError` naming ``source``, the
    row, the experiment, the agent and the MDP, and what disagrees, when:

    * ``rewards`` is not a list of float32 (the type :data:`RUN_COLUMNS` gives it);
    * ``undiscounted_return`` is not finite, or null where ``rewards`` is not (both are
      null together: a player that records no rewards);
    * a list does not hold ``n_steps`` (= horizon) values, or holds a NaN, an infinity
      or a null;
    * the rewards' sum is not ``undiscounted_return``, or their discounted sum
      :math:`\\sum_t \\gamma^t r_t` under the row's ``gamma`` is not
      ``discounted_return``: :math:`|R - \\hat R| \\le` :data:`RETURNS_RTOL`
      :math:`\\cdot \\sum_t \\gamma^t |r_t| +` :data:`RETURNS_ATOL` (relative to the
      sum of the absolute terms: float summation order differs between kernels, and the
      stored rewards are float32).

    Vectorised (numpy on the flattened lists, :data:`CHECK_CHUNK_VALUES` values at a
    time): a merged table of 25 million rewards (500 MDPs × 200 agents × 250 steps) is
    checked in about 0.4 s of CPU, 0.5 s read from its file batch by batch.

    Examples
    --------
    >>> t = pl.DataFrame({"experiment": ["E"], "agent": ["a"], "mdp_index": [0],
    ...                   "gamma": [0.5], "n_steps": [2], "discounted_return": [1.5],
    ...                   "undiscounted_return": [2.0]}).with_columns(
    ...     pl.Series("rewards", [[1.0, 1.0]], dtype=pl.List(pl.Float32)))
    >>> check_rewards(t, "ok.parquet")
    >>> check_rewards(t.with_columns(gamma=pl.lit(0.9)), "bad.parquet")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: bad.parquet: row 0 (experiment E, agent a, MDP 0):
    discounted_return 1.5 disagrees with its rewards: their discounted sum under gamma 0.9
    is 1.9 (relative tolerance 1e-05): ...
    """
    hint = artefacts.REGENERATE["run"]
    have = [c for c in RECORDED_SINCE_REWARDS if c in table.columns]
    if not have:
        return
    if "rewards" in have and table["rewards"].dtype != RUN_COLUMNS["rewards"]:
        raise BBRLError(f"{source}: column 'rewards' has type {table['rewards'].dtype}, "
                        f"expected {RUN_COLUMNS['rewards']}; {hint}")
    step = max(1, CHECK_CHUNK_VALUES // max(1, int(table["n_steps"].max() or 1)))
    for k in range(0, max(table.height, 1), step):
        _check_rewards_chunk(table.slice(k, step), source, first_row + k, hint)


def _check_rewards_chunk(table: pl.DataFrame, source: str, first_row: int,
                         hint: str) -> None:
    """:func:`check_rewards` on a slice of at most :data:`CHECK_CHUNK_VALUES` values."""
    have = [c for c in RECORDED_SINCE_REWARDS if c in table.columns]

    def fail(mask: np.ndarray, what: str) -> None:
        k = int(np.argmax(mask))
        row = table.select("experiment", "agent", "mdp_index").row(k, named=True)
        raise BBRLError(f"{source}: row {first_row + k} (experiment {row['experiment']}, "
                        f"agent {row['agent']}, MDP {row['mdp_index']}): {what}; {hint}")

    if "undiscounted_return" in have:
        u = table["undiscounted_return"]
        bad = (u.is_not_null() & ~u.is_finite().fill_null(True)).to_numpy()
        if bad.any():
            fail(bad, f"undiscounted_return must be finite, got "
                      f"{u[int(np.argmax(bad))]}")
    if "rewards" not in have:
        return
    r = table["rewards"]
    lengths = r.list.len()
    steps = table["n_steps"]
    wrong = (r.is_not_null() & steps.is_not_null() & (lengths != steps)).fill_null(
        False).to_numpy()
    if wrong.any():
        k = int(np.argmax(wrong))
        fail(wrong, f"rewards holds {lengths[k]} values, expected n_steps = horizon = "
                    f"{steps[k]} (one per step)")
    values = r.drop_nulls().explode()  # (fast path: every value, at once)
    if values.null_count() or not values.is_finite().all():
        finite = r.list.eval(pl.element().is_finite().fill_null(False)).list.all()
        bad = (r.is_not_null() & ~finite.fill_null(True)).to_numpy()
        fail(bad, "rewards must hold finite values (a NaN, an infinity or a null)")
    if len(have) == 2:
        differ = (r.is_null() != table["undiscounted_return"].is_null())
        if "checkpoints" in table.columns:  # (a long interaction: checkpoints, no steps)
            differ = differ & ~(r.is_null() & table["checkpoints"].is_not_null()
                                & table["undiscounted_return"].is_not_null())
        differ = differ.to_numpy()
        if differ.any():
            fail(differ, "rewards and undiscounted_return must be both recorded or both "
                         "null")
    has = r.is_not_null().to_numpy()
    if not has.any():
        return
    rows = np.flatnonzero(has)
    flat = values.to_numpy().astype(np.float64)
    lens = lengths.to_numpy()[rows].astype(np.int64)
    gamma = table["gamma"].to_numpy()[rows].astype(np.float64)
    disc, disc_scale, und, und_scale = _reward_sums(flat, lens, gamma)
    recorded = {"discounted_return": table["discounted_return"].to_numpy()[rows],
                "undiscounted_return": table["undiscounted_return"].to_numpy()[rows]}
    for col, sums, scale, how in (
            ("undiscounted_return", und, und_scale, "their sum is"),
            ("discounted_return", disc, disc_scale, "their discounted sum under gamma "
                                                    "{g:.9g} is")):
        off = ~(np.abs(recorded[col] - sums) <= RETURNS_RTOL * scale + RETURNS_ATOL)
        if off.any():
            j = int(np.argmax(off))
            mask = np.zeros(table.height, dtype=bool)
            mask[rows[j]] = True
            fail(mask, f"{col} {recorded[col][j]:.9g} disagrees with its rewards: "
                       f"{how.format(g=gamma[j])} {sums[j]:.9g} (relative tolerance "
                       f"{RETURNS_RTOL:g}): the rewards, returns and gamma of a run must "
                       "agree")
    _check_against_steps(table, flat, lens, rows, fail)


def _check_against_steps(table: pl.DataFrame, flat: np.ndarray, lens: np.ndarray,
                         rows: np.ndarray, fail: Callable[[np.ndarray, str], None]) -> None:
    """:func:`check_rewards`' episode returns and checkpoints: each episode's return is
    the sum of its H rewards and each checkpoint the running sum after its n steps
    (:data:`RETURNS_RTOL` relative to the sums of absolute rewards, which the stored
    float32 rewards round)."""
    cols = [c for c in ("episode_returns", "checkpoints") if c in table.columns]
    if not cols:
        return
    t = with_settings(table)
    starts = np.cumsum(lens) - lens
    H = t["episode_length"].to_numpy()[rows]
    n = t["checkpoint_every"].fill_null(0).to_numpy()[rows]
    for h, every, T in {(int(a), int(b), int(c)) for a, b, c in zip(H, n, lens, strict=True)}:
        sel = np.flatnonzero((H == h) & (n == every) & (lens == T))
        if T == 0 or not sel.size:
            continue
        M = flat[starts[sel][:, None] + np.arange(T)[None, :]]
        A = np.abs(M)
        checks = []
        if h > 0 and T % h == 0 and "episode_returns" in cols:
            checks.append(("episode_returns", "episode", M.reshape(-1, T // h, h).sum(axis=2),
                           A.reshape(-1, T // h, h).sum(axis=2), h))
        if every > 0 and T % every == 0 and "checkpoints" in cols:
            checks.append(("checkpoints", "checkpoint", np.cumsum(M, axis=1)[:, every - 1::every],
                           np.cumsum(A, axis=1)[:, every - 1::every], every))
        for col, what, want, scale, step in checks:
            series = t[col][rows[sel]]
            have = series.is_not_null().to_numpy()
            if not have.any():
                continue
            width = want.shape[1]
            if (series.filter(series.is_not_null()).list.len() != width).any():
                continue  # (a wrong length: check_run_table's settings check says so)
            rec = np.zeros_like(want)
            rec[have] = series.filter(series.is_not_null()).list.to_array(width).to_numpy()
            # (a value that is not finite: check_derived says so)
            bad = (have[:, None] & np.isfinite(rec)
                   & ~(np.abs(rec - want) <= RETURNS_RTOL * scale + RETURNS_ATOL))
            if bad.any():
                j, e = (int(v) for v in np.unravel_index(int(np.argmax(bad)), bad.shape))
                mask = np.zeros(table.height, dtype=bool)
                mask[rows[sel][j]] = True
                first = e * step if what == "episode" else 0
                where = (f"episode {e}" if what == "episode" else
                         f"checkpoint {e} (after step {(e + 1) * step - 1})")
                fail(mask, f"{col}: {where} is {rec[j, e]:.9g}, but the rewards of steps "
                           f"{first}-{(e + 1) * step - 1} sum to {want[j, e]:.9g} (relative "
                           f"tolerance "
                           f"{RETURNS_RTOL:g}): the {col} are derived from the rewards")


def _reward_sums(flat: np.ndarray, lens: np.ndarray, gamma: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of the flattened rewards ``flat`` (rows of ``lens`` values each, >= 0):
    the discounted sum under the row's ``gamma`` (discounts :math:`\\gamma^t` multiplied
    step by step, as the kernels do), the discounted sum of the absolute values, the sum
    and the sum of the absolute values."""
    n = lens.size
    ug, code = np.unique(gamma, return_inverse=True)
    T = int(lens.max(initial=0))
    W = np.cumprod(np.concatenate([np.ones((ug.size, 1)),
                                   np.repeat(ug[:, None], max(T - 1, 0), axis=1)], axis=1),
                   axis=1)[:, :T]  # W[g, t] = gamma_g^t
    absf = np.abs(flat)
    if n and T and np.all(lens == T):  # one horizon (the usual case): a matrix
        # (einsum, not BLAS's matrix product: its threads crawl on a loaded machine)
        M, A = flat.reshape(n, T), absf.reshape(n, T)
        if ug.size == 1:
            return (np.einsum("ij,j->i", M, W[0]), np.einsum("ij,j->i", A, W[0]),
                    M.sum(axis=1), A.sum(axis=1))
        Wr = W[code]
        return (np.einsum("ij,ij->i", M, Wr), np.einsum("ij,ij->i", A, Wr),
                M.sum(axis=1), A.sum(axis=1))
    out = [np.zeros(n) for _ in range(4)]
    nz = lens > 0
    if not nz.any():
        return tuple(out)  # type: ignore[return-value]
    starts = (np.cumsum(lens) - lens)[nz]
    pos = np.arange(flat.size) - np.repeat(np.cumsum(lens) - lens, lens)
    w = W[np.repeat(code, lens), pos]
    for o, v in zip(out, (flat * w, absf * w, flat, absf), strict=True):
        o[nz] = np.add.reduceat(v, starts)
    return tuple(out)  # type: ignore[return-value]


def _partly_recorded(table: pl.DataFrame) -> tuple[str, str] | None:
    """The first (experiment, agent) whose per-step rewards are null on some rows but
    not all; None when there is none (or the table has no rewards)."""
    col = next((c for c in RECORDED_SINCE_REWARDS if c in table.columns), None)
    if col is None or not table[col].null_count():
        return None
    partly = (table.group_by("experiment", "agent")
              .agg(pl.col(col).is_null().any().alias("some"),
                   pl.col(col).is_null().all().alias("all"))
              .filter(pl.col("some") & ~pl.col("all")).sort("experiment", "agent"))
    return None if partly.is_empty() else partly.select("experiment", "agent").row(0)


def index_ranges(indices) -> str:
    """Sorted test-MDP indices as ranges.

    Examples
    --------
    >>> index_ranges([5, 6, 7, 9, 0])
    '0, 5-7, 9'
    """
    idx = sorted({int(i) for i in indices})
    parts: list[str] = []
    k = 0
    while k < len(idx):
        j = k
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        parts.append(str(idx[k]) if j == k else f"{idx[k]}-{idx[j]}")
        k = j + 1
    if len(parts) > 8:
        parts = [*parts[:7], f"... ({len(parts) - 7} more ranges)"]
    return ", ".join(parts)


def check_coverage(merged: pl.DataFrame, command: str,
                   sources: dict[tuple[str, str], list[str]] | None = None) -> None:
    """Refuse agents of one experiment measured on different test MDPs.

    Every agent of an experiment must hold the same set of ``mdp_index`` values (the
    statistics pair agents on the test MDP: a mean over 5 MDPs is not ranked against one
    over 10). One :class:`BBRLError` naming ``command``, the experiment, the first agent
    (in id order) lacking MDPs that another agent holds, those MDPs and, with ``sources``
    ((experiment, agent) -> files), the files holding that agent.

    Examples
    --------
    >>> t = pl.DataFrame({"experiment": ["E"] * 3, "agent": ["a", "a", "b"],
    ...                   "mdp_index": [0, 1, 0]})
    >>> check_coverage(t, "merge")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: merge: experiment E: agent b lacks test MDP 1 (of 0-1); run its ...
    """
    if merged.is_empty():
        return
    per = (merged.select("experiment", "agent", "mdp_index").unique()
           .group_by("experiment", "agent").agg(pl.col("mdp_index").sort())
           .sort("experiment", "agent"))
    for (exp,), g in per.group_by(["experiment"], maintain_order=True):
        sets = {a: set(v) for a, v in zip(g["agent"], g["mdp_index"], strict=True)}
        union = set().union(*sets.values())
        for agent, have in sets.items():
            if have != union:
                files = (sources or {}).get((exp, agent), [])
                where = ""
                if files:
                    more = f" and {len(files) - 1} more" if len(files) > 1 else ""
                    where = f" in {files[0]}{more}"
                lack = union - have
                raise BBRLError(
                    f"{command}: experiment {exp}: agent {agent}{where} lacks test "
                    f"MDP{'s' if len(lack) > 1 else ''} {index_ranges(lack)} (of "
                    f"{index_ranges(union)}); run its missing chunks")


def merge_tables(tables: list[pl.DataFrame], sources: list[str] | None = None,
                 command: str = "merge") -> pl.DataFrame:
    """Concatenate run tables (missing counter columns become null, and so do the
    per-step rewards of tables written before bbrl recorded them) and sort them.

    Refuses an (experiment, agent, MDP) present twice, an agent of an experiment with
    per-step rewards on some test MDPs only (:func:`_check_rewards_alike`), run tables of
    one experiment that differ in their test set, γ, T or bbrlcore version
    (:data:`SAME_WITHIN_EXPERIMENT`), and agents of one experiment measured on different
    test MDPs (:func:`check_coverage`); ``sources`` (file names) are named in the error,
    which starts with ``command``.
    """
    if not tables:
        raise BBRLError(f"{command}: no run tables")
    sources = sources or [f"table {i}" for i in range(len(tables))]
    seen: dict[str, tuple[tuple[object, ...], str, str]] = {}
    holders: dict[tuple[str, str], list[str]] = {}
    tables = [with_settings(t) for t in tables]  # (older tables: continuing)
    for t, src in zip(tables, sources, strict=True):
        cols = [c for c in SAME_WITHIN_EXPERIMENT if c in t.columns]
        groups = (t.group_by(["experiment", *cols], maintain_order=True)
                  .agg(pl.col("agent").first()))
        for row in groups.iter_rows(named=True):
            exp = row["experiment"]
            key = tuple(row.get(c) for c in SAME_WITHIN_EXPERIMENT)
            if exp not in seen:
                seen[exp] = (key, src, row["agent"])
                continue
            first, first_src, first_agent = seen[exp]
            if key != first:
                diff = [f"{c} {a!r} vs {b!r}" for c, a, b in
                        zip(SAME_WITHIN_EXPERIMENT, first, key, strict=True) if a != b]
                where = (f"within {src}" if src == first_src else f"{first_src} vs {src}")
                raise BBRLError(
                    f"{command}: experiment {exp}: run tables from different test sets or "
                    f"versions ({where}: {', '.join(diff)}, agent {first_agent} vs agent "
                    f"{row['agent']}); rerun them alike"
                )
        for exp, agent in t.select("experiment", "agent").unique(maintain_order=True).rows():
            holders.setdefault((exp, agent), []).append(src)
    merged = pl.concat(tables, how="diagonal_relaxed")
    _check_rewards_alike(merged, command)
    dup = merged.select(_KEY).is_duplicated()
    if dup.any():
        row = merged.filter(dup).row(0, named=True)
        raise BBRLError(
            f"{command}: experiment {row['experiment']}, agent {row['agent']}, MDP "
            f"{row['mdp_index']} appears more than once (overlapping chunks?)"
        )
    check_coverage(merged, command, holders)
    check_references(merged, command, holders)
    return merged.sort(_KEY)


def check_references(merged: pl.DataFrame, command: str,
                     sources: dict[tuple[str, str], list[str]] | None = None) -> None:
    """Refuse agents of one experiment that record different references for one test MDP
    (:data:`REFERENCE_COLUMNS`: they come from the test set, one set per MDP) — an
    edited table, or one run on another test set — or references on some agents only.
    One :class:`BBRLError` naming ``command``, the experiment, the MDP, two agents that
    disagree (with ``sources``: their files) and the values.

    >>> t = pl.DataFrame({"experiment": ["E", "E"], "agent": ["a", "b"], "mdp_index": [0, 0],
    ...                   "optimal_reference": [0.99, 0.5], "worst_reference": [0.0, 0.0],
    ...                   "random_reference": [0.1, 0.1]})
    >>> check_references(t, "merge")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: merge: experiment E, test MDP 0: agents a and b record different
    references (optimal_reference 0.99 vs 0.5)...
    """
    if merged.is_empty() or not any(c in merged.columns for c in REFERENCE_COLUMNS):
        return
    t = with_settings(merged).select("experiment", "agent", "mdp_index", *REFERENCE_COLUMNS)
    sets = t.unique(["experiment", "mdp_index", *REFERENCE_COLUMNS], maintain_order=True)
    clash = sets.filter(pl.struct("experiment", "mdp_index").is_duplicated())
    if clash.is_empty():
        return
    first = clash.sort("experiment", "mdp_index").row(0, named=True)
    rows = (t.filter((pl.col("experiment") == first["experiment"])
                     & (pl.col("mdp_index") == first["mdp_index"])).sort("agent"))
    a = rows.row(0, named=True)
    b = next(r for r in rows.iter_rows(named=True)
             if any(r[c] != a[c] for c in REFERENCE_COLUMNS))
    diff = ", ".join(f"{c} {a[c]} vs {b[c]}" for c in REFERENCE_COLUMNS if a[c] != b[c])

    def who(r: dict) -> str:
        files = (sources or {}).get((r["experiment"], r["agent"]), [])
        return r["agent"] + (f" ({files[0]})" if files else "")

    raise BBRLError(
        f"{command}: experiment {a['experiment']}, test MDP {a['mdp_index']}: agents "
        f"{who(a)} and {who(b)} record different references ({diff}): a test MDP has one "
        "set of references, its test set's (an edited table, or runs of another test "
        "set?); rerun them from the experiment's test set")


def _check_rewards_alike(merged: pl.DataFrame, command: str) -> None:
    """Refuse an agent of an experiment whose rewards are recorded on some test MDPs but
    not on others (chunks run before and after bbrl recorded per-step rewards): its
    curves would average different MDPs. Tables with and without rewards merge otherwise
    (the missing values are null: older experiments, a player that records none)."""
    partly = _partly_recorded(merged)
    if partly:
        e, a = partly
        raise BBRLError(f"{command}: experiment {e}, agent {a}: run tables with and without "
                        "per-step rewards (some written before bbrl recorded them); rerun "
                        "them alike")


def _recorded_n_mdps(path: str, meta: dict, experiments: list[str]) -> dict[str, int]:
    """The test-set size each experiment of a run or merged table records in its metadata
    (``n_mdps``: an integer in a run table, experiment -> integer in a merged one); empty
    for tables written before it was recorded."""
    m = artefacts.MetaReader(path, meta, meta.get("kind"))
    if "n_mdps" not in meta:
        return {}
    if meta.get("kind") == "merged":
        raw = m.dict("n_mdps")
        sub = artefacts.MetaReader(path, raw, "merged")
        return {e: sub.int(e, lo=1) for e in raw}
    n = m.int("n_mdps", lo=1)
    return {e: n for e in experiments}


def read_runs_with_sizes(paths: list[str], command: str = "merge", rewards: bool = True
                         ) -> tuple[pl.DataFrame, dict[str, int]]:
    """:func:`read_runs`, and the size of each experiment's test set where the tables
    record it (experiment -> N; tables of one experiment recording different sizes are
    refused). ``rewards=False`` leaves the per-step ``rewards`` out (what needs no
    curves: the summary, the aggregates), and :func:`attach_rewards` adds them for the
    agents that need them."""
    tables, metas = [], []
    sizes: dict[str, tuple[int, str]] = {}
    for p in paths:
        table, meta = artefacts.read_artefact(p, None, () if rewards else ("rewards",))
        if meta.get("kind") not in ("run", "merged"):
            raise BBRLError(f"{p}: a {meta.get('kind')!r} artefact, expected a run table")
        exps = (table["experiment"].unique().to_list()
                if "experiment" in table.columns else [])
        for exp, n in _recorded_n_mdps(str(p), meta, exps).items():
            if exp in sizes and sizes[exp][0] != n:
                raise BBRLError(
                    f"{command}: experiment {exp}: run tables from different test sets "
                    f"({sizes[exp][1]} vs {p}: n_mdps {sizes[exp][0]} vs {n}); rerun them "
                    "alike")
            sizes.setdefault(exp, (n, str(p)))
        tables.append(table)
        metas.append(meta)
    n_mdps = {e: n for e, (n, _) in sizes.items()}
    for p, table in zip(paths, tables, strict=True):
        check_run_table(table, str(p), n_mdps)
        check_file_rewards(p, table)  # (read without them: batch by batch from the file)
    return merge_tables(tables, [str(p) for p in paths], command), n_mdps


def check_file_rewards(path: str | Path, table: pl.DataFrame) -> None:
    """:func:`check_rewards` on the run table ``path`` whose other columns ``table``
    holds (read without its per-step rewards: a whole configuration's are gigabytes):
    the file's ``rewards`` are read and checked in batches of
    :data:`CHECK_CHUNK_VALUES` values, and none is kept (a ``table`` read with its
    rewards was checked by :func:`check_run_table`). A file holding one of ``rewards``
    and ``undiscounted_return`` without the other is refused too."""
    import pyarrow as pa

    hint = artefacts.REGENERATE["run"]
    names = set(table.columns)
    try:
        with pq.ParquetFile(path) as f:
            names |= set(f.schema_arrow.names)
            if ("rewards" in names) != ("undiscounted_return" in names):
                one = "rewards" if "rewards" in names else "undiscounted_return"
                other = "undiscounted_return" if one == "rewards" else "rewards"
                raise BBRLError(f"{path}: run table has the column {one!r} but not {other!r} "
                                f"(both are recorded or neither); {hint}")
            if "rewards" not in names or "rewards" in table.columns:
                return  # (none, or read with the table: check_run_table checked them)
            field = f.schema_arrow.field("rewards")
            expected = RUN_COLUMNS["rewards"]
            found = _polars_type(field.type)
            if found != expected:
                raise BBRLError(f"{path}: column 'rewards' has type {found}, expected "
                                f"{expected}; {hint}")
            T = max(1, int(table["n_steps"].max() or 1)) if table.height else 1
            k = 0
            for batch in f.iter_batches(batch_size=max(1, CHECK_CHUNK_VALUES // T),
                                        columns=["rewards"]):
                col = pl.from_arrow(pa.Table.from_batches([batch]))["rewards"]
                chunk = table.slice(k, batch.num_rows).with_columns(col)
                check_rewards(chunk, str(path), k)
                k += batch.num_rows
    except BBRLError:
        raise
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise BBRLError(f"{path}: cannot read its rewards ({str(exc).splitlines()[0]}); "
                        f"{hint}") from None


def _polars_type(arrow_type) -> object:
    """The polars type of an arrow type (its text where polars has none)."""
    import pyarrow as pa

    try:
        return pl.from_arrow(pa.nulls(0, type=arrow_type)).dtype  # (pa.array imports pandas)
    except Exception:
        return str(arrow_type)


def read_runs(paths: list[str], command: str = "merge", rewards: bool = True
              ) -> pl.DataFrame:
    """Read run or merged tables (validated, see :func:`check_run_table`, against the
    test-set size they record) and merge them (:func:`merge_tables`); errors start with
    ``command``; ``rewards=False``: without the per-step rewards."""
    return read_runs_with_sizes(paths, command, rewards)[0]


def attach_rewards(merged: pl.DataFrame, paths: list[str], agents: set[tuple[str, str]]
                   ) -> pl.DataFrame:
    """``merged`` (read without rewards) with the per-step ``rewards`` of the (experiment,
    agent) pairs ``agents`` read from ``paths`` (null for the other rows): learning curves
    need the best agents', Random's and Optimal's, not every agent's (a whole
    configuration's rewards would be gigabytes)."""
    parts = []
    want = pl.DataFrame({"experiment": [e for e, _ in agents], "agent": [a for _, a in agents]},
                        schema={"experiment": pl.String, "agent": pl.String})
    for p in paths:
        if "rewards" not in pq.read_schema(p).names:
            continue
        parts.append(pl.scan_parquet(p).select("experiment", "agent", "mdp_index", "rewards")
                     .join(want.lazy(), on=["experiment", "agent"], how="semi").collect())
    if not parts:
        return merged
    r = pl.concat(parts).unique(["experiment", "agent", "mdp_index"], keep="first")
    return merged.drop("rewards", strict=False).join(
        r, on=["experiment", "agent", "mdp_index"], how="left")


def check_test_sets(merged: pl.DataFrame, test_sets: list, sources: list[str],
                    n_mdps: dict[str, int] | None = None, command: str = "report") -> None:
    """Refuse test sets that are not the ones the runs were played on.

    Each test set (a :class:`bbrlcore.protocol.test_sets.TestSet`, named by its entry of
    ``sources``) must be the test set of at least one experiment of ``merged`` (its
    ``test`` column, and the setting its name ends with: ``@label``, see
    :attr:`bbrlcore.protocol.test_sets.TestSet.tag`), with that experiment's seed, γ, T
    and size: the size recorded in the run tables' metadata (``n_mdps``, experiment -> N)
    or, where they do not record it, the largest MDP index + 1. Two test sets of one
    distribution in one setting are refused too.
    """
    first: dict[str, str] = {}
    recorded = [pl.col(c).first() if c in merged.columns else pl.lit(None).alias(c)
                for c in ("test_seed", "gamma", "horizon")]
    runs = (merged.group_by("experiment", "test", maintain_order=True)
            .agg(*recorded, pl.col("mdp_index").max().alias("_max"))
            .sort("experiment"))
    exp = pl.col("experiment")
    runs = runs.with_columns(
        pl.when(exp.str.contains("@", literal=True))
        .then(pl.lit("@") + exp.str.split("@").list.last())
        .otherwise(pl.lit("")).alias("_tag"))
    for ts, src in zip(test_sets, sources, strict=True):
        name = ts.test.short_name
        tag = getattr(ts, "tag", "")
        if name + tag in first:
            raise BBRLError(f"{src}: a second test set of {name + tag} (also "
                            f"{first[name + tag]}); give one test set per test distribution "
                            "and setting")
        first[name + tag] = src
        mine = runs.filter((pl.col("test") == name) & (pl.col("_tag") == tag))
        if mine.is_empty():
            have = ", ".join(sorted(set(runs["test"].to_list())))
            raise BBRLError(f"{src}: a test set of {name}, but no run is on {name} (the runs "
                            f"are on {have}); give the test sets the runs were played on")
        for r in mine.iter_rows(named=True):
            exp = r["experiment"]
            if n_mdps and exp in n_mdps:
                n_runs, how = n_mdps[exp], ""
            else:
                n_runs = int(r["_max"]) + 1
                how = " (largest MDP index + 1: the run tables do not record N)"
            diff = [f"{k} {a} vs {b}" + (how if k == "n_mdps" else "") for k, a, b in (
                ("seed", ts.seed, r["test_seed"]), ("n_mdps", ts.n_mdps, n_runs),
                ("gamma", ts.gamma, r["gamma"]), ("horizon", ts.horizon, r["horizon"]))
                if b is not None and a != b]
            if diff:
                raise BBRLError(
                    f"{src}: test set of {name} (seed {ts.seed}, n_mdps {ts.n_mdps}) is not "
                    f"the one experiment {exp} was run on ({', '.join(diff)}); give the "
                    "test set the runs were played on")
            _check_references_of(merged.filter(pl.col("experiment") == exp), ts, src, exp,
                                  command)


def _check_references_of(rows: pl.DataFrame, ts, src: str, exp: str, command: str) -> None:
    """The references the run rows ``rows`` of experiment ``exp`` record are their test
    set's (``ts``, named ``src``): :func:`check_test_sets`. Rows of tables written before
    references were recorded (no column) are not checked."""
    if not any(c in rows.columns for c in REFERENCE_COLUMNS) or rows.is_empty():
        return
    t = with_settings(rows)
    if t["optimal_reference"].null_count() == t.height and ts.references is None:
        return
    refs = ts.reference_values()
    idx = t["mdp_index"].to_numpy()
    for j, col in enumerate(REFERENCE_COLUMNS):
        have = t[col].fill_null(np.nan).to_numpy().astype(np.float64)
        want = (refs[j][idx] if refs is not None and idx.max(initial=-1) < ts.n_mdps
                else np.full(len(idx), np.nan))
        same = (np.isnan(have) & np.isnan(want)) | (
            np.abs(have - want) <= 1e-12 * (1.0 + np.abs(want)))
        if not same.all():
            k = int(np.argmax(~same))
            r = t.row(k, named=True)
            exp_v = "none" if np.isnan(want[k]) else f"{want[k]:.12g}"
            raise BBRLError(
                f"{command}: experiment {exp}, agent {r['agent']}, test MDP {r['mdp_index']}: "
                f"{col} {r[col]} is not its test set's ({src}: {exp_v}): the runs' "
                "references must be their test set's (an edited table?); rerun them from "
                "this test set")


def check_one_setting(merged: pl.DataFrame, command: str) -> None:
    """Refuse, in one line naming ``command``, the experiment and both settings, an
    experiment whose rows were played in different settings of the interaction (T, H,
    E, γ, checkpoint_every: :data:`SAME_WITHIN_EXPERIMENT`); tables written before the
    settings were recorded count as continuing.

    >>> t = pl.DataFrame({"experiment": ["E", "E"], "horizon": [250, 1000]})
    >>> check_one_setting(t, "summary")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: summary: experiment E: rows of different settings (horizon ...
    """
    t = with_settings(merged) if "horizon" in merged.columns else merged
    cols = [c for c in SAME_WITHIN_EXPERIMENT if c in t.columns and c != "bbrlcore_version"]
    if not cols or t.is_empty():
        return
    kinds = t.select("experiment", *cols).unique(maintain_order=True)
    many = kinds.filter(pl.col("experiment").is_duplicated())
    if many.is_empty():
        return
    a, b = many.row(0, named=True), many.row(1, named=True)
    diff = [f"{c} {a[c]!r} vs {b[c]!r}" for c in cols if a[c] != b[c]]
    raise BBRLError(f"{command}: experiment {a['experiment']}: rows of different settings "
                    f"({', '.join(diff)}): compare experiments of one setting each")


def summary_table(merged: pl.DataFrame, score: str = "discounted") -> pl.DataFrame:
    """The summary (one row per experiment × agent: mean score with its 95% interval,
    times, normalised score and shortfall against Optimal) from a merged run table (any
    number of experiments), ranking by ``score`` (:data:`SCORES`; the ``score`` column says
    which); agents of one experiment measured on different test MDPs are refused
    (:func:`check_coverage`)."""
    col = score_column(score, merged)
    missing = merged.filter(pl.col(col).is_null())
    if not missing.is_empty():
        r = missing.row(0, named=True)
        raise BBRLError(f"summary: score={score}: experiment {r['experiment']}, agent "
                        f"{r['agent']} has no {col} (run before bbrl recorded it, or by a "
                        "player that does not record rewards); run it again, or use "
                        "score=discounted")
    check_one_setting(merged, "summary")
    check_coverage(merged, "summary")
    rows = []
    for (exp, agent), g in merged.group_by(["experiment", "agent"], maintain_order=True):
        ret = g[col].to_numpy()
        mean, lo, hi = stats.mean_ci(ret)
        steps = np.maximum(g["n_steps"].to_numpy(), 1)
        per_dec = float(np.mean(g["online_time_s"].to_numpy() / steps))
        first = g.row(0, named=True)
        rows.append(
            {
                "experiment": exp,
                "test": first["test"],
                "prior": first["prior"],
                "algorithm": first["algorithm"],
                "agent": agent,
                "params": first["params"],
                "compat": bool(first["compat"]),
                "n": len(g),
                "mean": mean,
                "ci_low": lo,
                "ci_high": hi,
                "offline_time_s": float(first["offline_time_s"]),
                "online_time_per_decision_s": per_dec,
            }
        )
    if not rows:
        raise BBRLError("summary: the run tables are empty")
    s = pl.DataFrame(rows)
    ref = s.group_by("experiment").agg(
        pl.col("mean").filter(pl.col("algorithm") == "random").first().alias("_random"))
    opt = reference_agents(s, score).select("experiment", "agent").join(
        s.select("experiment", "agent", pl.col("mean").alias("_optimal")),
        on=["experiment", "agent"], how="left").drop("agent")
    s = s.join(ref, on="experiment", how="left").join(opt, on="experiment", how="left")
    span = pl.col("_optimal") - pl.col("_random")
    s = s.with_columns(
        pl.when(pl.col("_random").is_not_null() & pl.col("_optimal").is_not_null() & (span != 0))
        .then((pl.col("mean") - pl.col("_random")) / span)
        .otherwise(None)
        .cast(pl.Float64)
        .alias("normalised_score"),
        (pl.col("_optimal") - pl.col("mean")).cast(pl.Float64).alias("shortfall"),
        pl.lit(score).alias("score"),
        pl.col("agent").count().over(["experiment", "algorithm", "compat"]).cast(pl.Int64)
        .alias("grid_size"),
    )
    return s.select(SUMMARY_COLUMNS).sort(["experiment", "algorithm", "agent"])


def markdown(summary: pl.DataFrame) -> str:
    """A plain markdown table of the summary, best agent of each algorithm (compat
    variants apart) per experiment, chosen as the summary says
    (:mod:`bbrlcore.analysis.selection`: on the test MDPs, or on validation MDPs), with
    each algorithm's grid size."""
    from bbrlcore.analysis.choice import selection_key, selection_of, selection_text

    score = str(summary["score"][0]) if "score" in summary.columns and summary.height \
        else "discounted"
    what = "discounted return" if score == "discounted" else "sum of rewards"
    chosen = selection_of(summary)
    n_val = (int(summary["validation_n"].max() or 0) if chosen == "validation" else None)
    lines = [
        "# bbrl summary",
        "",
        f"Best configuration of each algorithm per experiment (mean {what} on the test "
        "MDPs, 95% interval, normalised score: Random = 0, Optimal = 1). "
        + selection_text(chosen, n_val),
        "",
    ]
    val = chosen == "validation"
    for exp in summary["experiment"].unique(maintain_order=True).to_list():
        g = summary.filter(pl.col("experiment") == exp)
        best = (
            g.sort([selection_key(g), pl.col("agent")], descending=[True, False])
            .group_by("algorithm", "compat", maintain_order=True)
            .first()
            .sort("mean", descending=True)
        )
        lines += [
            f"## {exp}",
            "",
            "| algorithm | grid | best agent | mean | 95% CI | "
            + ("validation mean | " if val else "")
            + "normalised | ms/decision | offline s |",
            "| --- | ---: | --- | ---: | --- | " + ("---: | " if val else "")
            + "---: | ---: | ---: |",
        ]
        for r in best.iter_rows(named=True):
            ns = "" if r["normalised_score"] is None else f"{r['normalised_score']:.3f}"
            vm = ""
            if val:
                vm = ("– | " if r["validation_mean"] is None
                      else f"{r['validation_mean']:.3f} | ")
            lines.append(
                f"| {r['algorithm']}{' (compat)' if r['compat'] else ''} | "
                f"{r.get('grid_size', '')} | {r['agent']} | "
                f"{r['mean']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {vm}{ns} | "
                f"{1000 * r['online_time_per_decision_s']:.4g} | {r['offline_time_s']:.3g} |"
            )
        lines.append("")
    return "\n".join(lines)
