"""Run tables to results: merging chunks and the tidy summary.

* :func:`merge_tables` concatenates run tables (chunks of runs, or whole runs) into one
  table sorted by experiment, agent and test MDP; an (experiment, agent, MDP) present
  twice is an error, and so are agents of one experiment measured on different test MDPs
  (:func:`check_coverage`: a mean over 5 MDPs is not ranked against one over 10).
* :func:`read_runs` reads run or merged tables, each checked (:func:`check_run_table`:
  an ``mdp_index`` outside the test set whose size the table records, ``n_steps``
  different from the horizon) before they are merged.
* :func:`summary_table` gives one row per experiment × agent: ``experiment, test, prior,
  algorithm, agent, params, compat, n, mean, ci_low, ci_high, offline_time_s,
  online_time_per_decision_s, normalised_score, regret``. The interval is
  mean ± 1.96·s/√N; the normalised score puts Random at 0 and Optimal at 1 within each
  experiment (null when either is missing); the regret is the Optimal agent's mean minus
  the agent's mean (null without Optimal).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from bbrlcore.analysis import stats
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.protocol.runner import (
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
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "offline_time_s",
    "online_time_per_decision_s",
    "normalised_score",
    "regret",
    "score",
)

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
    :data:`~bbrlcore.protocol.runner.RECORDED_SINCE_REWARDS`): each list holds ``horizon``
    finite values and ``undiscounted_return`` is finite, both null together, and only for
    every row of an agent of an experiment (a player that records none) or none."""
    hint = artefacts.REGENERATE["run"]
    for col, dtype in RUN_COLUMNS.items():
        if col not in table.columns:
            if col in RECORDED_SINCE_REWARDS or col in RECORDED_SINCE_EPISODES:
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
    _check_rewards(table, source, hint)
    _check_settings(table, source, hint)


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


def _check_rewards(table: pl.DataFrame, source: str, hint: str) -> None:
    """The ``rewards`` and ``undiscounted_return`` columns of a run table, where it has
    them (see :func:`check_run_table`)."""
    have = [c for c in RECORDED_SINCE_REWARDS if c in table.columns]
    if not have:
        return

    def fail(mask: np.ndarray, what: str) -> None:
        k = int(np.argmax(mask))
        row = table.select("agent", "mdp_index").row(k, named=True)
        raise BBRLError(f"{source}: row {k} (agent {row['agent']}, MDP {row['mdp_index']}): "
                        f"{what}; {hint}")

    if "undiscounted_return" in have:
        u = table["undiscounted_return"]
        bad = (u.is_not_null() & ~u.is_finite().fill_null(True)).to_numpy()
        if bad.any():
            fail(bad, f"undiscounted_return must be finite, got "
                      f"{u[int(np.argmax(bad))]}")
    if "rewards" in have:
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
        differ = (table["rewards"].is_null() != table["undiscounted_return"].is_null())
        if "checkpoints" in table.columns:  # (a long interaction: checkpoints, no steps)
            differ = differ & ~(table["rewards"].is_null()
                                & table["checkpoints"].is_not_null()
                                & table["undiscounted_return"].is_not_null())
        differ = differ.to_numpy()
        if differ.any():
            fail(differ, "rewards and undiscounted_return must be both recorded or both "
                         "null")
    partly = _partly_recorded(table)
    if partly:
        e, a = partly
        raise BBRLError(f"{source}: experiment {e}, agent {a}: {have[0]} is null on some test "
                        f"MDPs only (an agent records the rewards of all its trajectories or "
                        f"none: chunks from before and after bbrl recorded them?); {hint}")


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
    seen: dict[str, tuple[tuple[object, ...], str]] = {}
    holders: dict[tuple[str, str], list[str]] = {}
    tables = [with_settings(t) for t in tables]  # (older tables: continuing)
    for t, src in zip(tables, sources, strict=True):
        cols = [c for c in SAME_WITHIN_EXPERIMENT if c in t.columns]
        groups = t.select(["experiment", *cols]).unique(maintain_order=True)
        for row in groups.iter_rows(named=True):
            exp = row["experiment"]
            key = tuple(row.get(c) for c in SAME_WITHIN_EXPERIMENT)
            if exp not in seen:
                seen[exp] = (key, src)
                continue
            first, first_src = seen[exp]
            if key != first:
                diff = [f"{c} {a!r} vs {b!r}" for c, a, b in
                        zip(SAME_WITHIN_EXPERIMENT, first, key, strict=True) if a != b]
                where = f"within {src}" if src == first_src else f"{first_src} vs {src}"
                raise BBRLError(
                    f"{command}: experiment {exp}: run tables from different test sets or "
                    f"versions ({where}: {', '.join(diff)}); rerun them alike"
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
    return merged.sort(_KEY)


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
    return merge_tables(tables, [str(p) for p in paths], command), n_mdps


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
    times, normalised score and regret) from a merged run table (any number of
    experiments), ranking by ``score`` (:data:`SCORES`; the ``score`` column says which);
    agents of one experiment measured on different test MDPs are refused
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
        pl.col("mean").filter(pl.col("algorithm") == "random").first().alias("_random"),
        pl.col("mean").filter(pl.col("algorithm") == "optimal").first().alias("_optimal"),
    )
    s = s.join(ref, on="experiment", how="left")
    span = pl.col("_optimal") - pl.col("_random")
    s = s.with_columns(
        pl.when(pl.col("_random").is_not_null() & pl.col("_optimal").is_not_null() & (span != 0))
        .then((pl.col("mean") - pl.col("_random")) / span)
        .otherwise(None)
        .cast(pl.Float64)
        .alias("normalised_score"),
        (pl.col("_optimal") - pl.col("mean")).cast(pl.Float64).alias("regret"),
        pl.lit(score).alias("score"),
    )
    return s.select(SUMMARY_COLUMNS).sort(["experiment", "algorithm", "agent"])


def markdown(summary: pl.DataFrame) -> str:
    """A plain markdown table of the summary, best agent of each algorithm per experiment."""
    lines = [
        "# bbrl summary",
        "",
        "Best configuration of each algorithm per experiment (mean discounted return, 95% "
        "interval, normalised score: Random = 0, Optimal = 1).",
        "",
    ]
    for exp in summary["experiment"].unique(maintain_order=True).to_list():
        g = summary.filter(pl.col("experiment") == exp)
        best = (
            g.sort("mean", descending=True)
            .group_by("algorithm", maintain_order=True)
            .first()
            .sort("mean", descending=True)
        )
        lines += [
            f"## {exp}",
            "",
            "| algorithm | best agent | mean | 95% CI | normalised | ms/decision | offline s |",
            "| --- | --- | ---: | --- | ---: | ---: | ---: |",
        ]
        for r in best.iter_rows(named=True):
            ns = "" if r["normalised_score"] is None else f"{r['normalised_score']:.3f}"
            lines.append(
                f"| {r['algorithm']} | {r['agent']} | {r['mean']:.3f} | "
                f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {ns} | "
                f"{1000 * r['online_time_per_decision_s']:.4g} | {r['offline_time_s']:.3g} |"
            )
        lines.append("")
    return "\n".join(lines)
