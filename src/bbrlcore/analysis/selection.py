"""Choosing each algorithm's configuration: on the test MDPs, or on validation MDPs.

The paper represents each algorithm in an experiment by its **best configuration**, the
one with the highest mean score, chosen on the very test MDPs whose score it then
reports. That estimate is biased upwards (the winner's curse), and the more so the larger
the algorithm's grid: an algorithm tried in two configurations gets two draws at a lucky
score, one tried in one gets none. bbrl can choose without peeking:

* ``selection: validation`` (``config.yaml``; ``--validation MERGED...`` of ``bbrl
  summary``, ``aggregate``, ``curves`` and ``report``): the configurations of every
  algorithm with more than one in an experiment also play a **validation set** (the
  same test distribution, another seed: :func:`bbrlcore.seeds.validation_seed`); each
  algorithm's configuration is the one with the highest mean score there, and the score
  reported is that configuration's on the test MDPs, which played no part in the choice
  (an unbiased estimate of what the chosen configuration scores on the distribution);
* ``selection: test`` (the paper's, its ``paper`` preset and the comparisons with the
  published numbers): chosen on the test MDPs.

Either way each algorithm's **grid size** (how many configurations it was tried in: its
tuning budget) is shown beside its score (``grid_size`` of the summary and the best-agent
tables), and the report says which selection it used.

Where the choice is made, it is made the same way (:func:`selection_key`): the best
agent of each family (an algorithm, its compat variant a family of its own) in the summary
(:func:`bbrlcore.analysis.results.summary_table`), "among the best", the time-constraint
maps, the aggregates, the learning curves, the scores against hardness. With time bounds
(the maps, ``--offline-bound``, ``--online-bound``) an agent is admissible by the times
measured on the test MDPs (those the report shows) and the admissible agent with the best
validation score is chosen. Ties go to the smaller agent id, as before.

In a table chosen on validation MDPs, ``validation_mean`` and ``validation_n`` are each
agent's mean score on the validation MDPs and their number (null for an algorithm with a
single configuration, which needs no choosing and has no validation runs).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from bbrlcore.analysis.choice import (  # noqa: F401 (re-exported: the public API)
    selection_key,
    selection_of,
    selection_text,
)
from bbrlcore.analysis.results import merge_tables, read_runs, score_column
from bbrlcore.errors import BBRLError

#: On which MDPs each algorithm's configuration is chosen.
SELECTIONS = ("test", "validation")
#: Columns a summary chosen on validation MDPs gains.
VALIDATION_COLUMNS = ("validation_mean", "validation_n")
#: What must be the same between an experiment's test runs and its validation runs
#: (where the run tables record it): the test distribution and prior, the protocol.
SAME_SETTING = ("test", "prior", "gamma", "horizon", "episode_length", "episodes",
                "checkpoint_every")


def with_grid_sizes(table: pl.DataFrame, by: Sequence[str] = ("algorithm", "compat")
                    ) -> pl.DataFrame:
    """``table`` (one row per experiment × agent) with ``grid_size``: how many agents its
    family (``by``: the algorithm and compat flag, or the report's ``family``) has in
    the experiment, its tuning budget.

    >>> t = pl.DataFrame({"experiment": ["E"] * 3, "algorithm": ["beb", "beb", "random"],
    ...                   "compat": [False] * 3, "agent": ["beb__beta=1", "beb__beta=2",
    ...                   "random"]})
    >>> with_grid_sizes(t)["grid_size"].to_list()
    [2, 2, 1]
    """
    return table.with_columns(
        pl.col("agent").count().over(["experiment", *by]).cast(pl.Int64).alias("grid_size"))


def read_validation(paths: Sequence[str], merged: pl.DataFrame,
                    command: str) -> pl.DataFrame:
    """The validation runs of ``paths`` (merged validation tables, or run tables), each
    file checked against the test runs ``merged`` (:func:`check_validation`), merged
    into one table (empty when ``paths`` is). Errors start with ``command``."""
    tables, sources = [], []
    for p in paths:
        t = read_runs([str(p)], f"{command} --validation", rewards=False)
        check_validation(merged, t, str(p))
        tables.append(t)
        sources.append(str(p))
    if not tables:
        return merged.clear()
    return merge_tables(tables, sources, f"{command} --validation")


def check_validation(merged: pl.DataFrame, validation: pl.DataFrame, source: str) -> None:
    """Refuse, in one line naming ``source``, validation runs that cannot choose for the
    test runs ``merged``: an experiment the test runs do not have; another test
    distribution, prior or protocol (:data:`SAME_SETTING`); the test set itself (the same
    seed: choosing there is peeking); an agent the test runs do not have.

    >>> t = pl.DataFrame({"experiment": ["GC-GC"], "test": ["GC"], "prior": ["GC"],
    ...                   "agent": ["beb"], "test_seed": [0], "gamma": [0.95]})
    >>> check_validation(t, t, "v.parquet")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: v.parquet: experiment GC-GC: validation runs on the test set ...
    """
    have = set(merged["experiment"].unique().to_list())
    for (exp,), v in validation.group_by(["experiment"], maintain_order=True):
        if exp not in have:
            raise BBRLError(f"{source}: validation runs of experiment {exp}, which the test "
                            f"runs do not have (they are of {', '.join(sorted(have))}): give "
                            "the validation tables of the experiments given")
        t = merged.filter(pl.col("experiment") == exp)
        for col in SAME_SETTING:
            if col in v.columns and col in t.columns:
                a, b = t[col].drop_nulls(), v[col].drop_nulls()
                if len(a) and len(b) and a[0] != b[0]:
                    raise BBRLError(
                        f"{source}: experiment {exp}: validation runs with {col} {b[0]!r}, "
                        f"the test runs' is {a[0]!r}: a validation table of another "
                        "distribution or setting (the validation set is drawn from the "
                        "test set's distribution, with its settings)")
        if "test_seed" in v.columns and "test_seed" in t.columns:
            seeds_v = set(v["test_seed"].drop_nulls().to_list())
            seeds_t = set(t["test_seed"].drop_nulls().to_list())
            same = sorted(seeds_v & seeds_t)
            if same:
                raise BBRLError(
                    f"{source}: experiment {exp}: validation runs on the test set itself "
                    f"(seed {same[0]}, the test runs' seed): configurations chosen there "
                    "would be chosen on the MDPs they are scored on; give the runs on the "
                    f"validation set (the workflow's merged_validation/{exp}.parquet)")
        extra = sorted(set(v["agent"].unique().to_list())
                       - set(t["agent"].unique().to_list()))
        if extra:
            raise BBRLError(f"{source}: experiment {exp}: validation runs of agent "
                            f"{extra[0]}, which the test runs do not have: validation and "
                            "test runs of the same configurations are needed")


def validation_means(validation: pl.DataFrame, score: str = "discounted") -> pl.DataFrame:
    """Per experiment and agent of the validation runs: ``validation_mean`` (the mean
    ``score``) and ``validation_n`` (the number of validation MDPs)."""
    col = score_column(score, validation)
    missing = validation.filter(pl.col(col).is_null())
    if not missing.is_empty():
        r = missing.row(0, named=True)
        raise BBRLError(f"--validation: score={score}: experiment {r['experiment']}, agent "
                        f"{r['agent']} has no {col} on its validation runs; run them again, "
                        "or use score=discounted")
    return (validation.group_by("experiment", "agent", maintain_order=True)
            .agg(pl.col(col).cast(pl.Float64).mean().alias("validation_mean"),
                 pl.len().cast(pl.Int64).alias("validation_n"))
            .sort("experiment", "agent"))


def choose_on_validation(summary: pl.DataFrame, validation: pl.DataFrame,
                         score: str = "discounted") -> pl.DataFrame:
    """``summary`` (:func:`bbrlcore.analysis.results.summary_table` of the test runs, by
    ``score``) with each agent's ``validation_mean`` and ``validation_n`` from the
    validation runs ``validation`` (checked by :func:`read_validation`): from then on,
    every best agent of the summary is chosen on them (:func:`selection_key`). A family
    (algorithm, compat variants apart) with several configurations in an experiment must
    have validation runs of each (:func:`check_complete`).

    Examples
    --------
    Two BEB configurations: the second is the better on the test MDPs, the first on the
    validation MDPs, so the first is BEB's and its test score is reported.

    >>> s = pl.DataFrame({"experiment": ["E", "E"], "algorithm": ["beb", "beb"],
    ...                   "compat": [False, False], "agent": ["beb__beta=1", "beb__beta=2"],
    ...                   "mean": [1.0, 2.0], "score": ["discounted"] * 2})
    >>> v = pl.DataFrame({"experiment": ["E"] * 2, "agent": ["beb__beta=1", "beb__beta=2"],
    ...                   "discounted_return": [3.0, 0.0]})
    >>> c = choose_on_validation(s, v)
    >>> c.sort(selection_key(c), descending=True)["agent"][0]
    'beb__beta=1'
    """
    drop = [c for c in VALIDATION_COLUMNS if c in summary.columns]
    out = summary.drop(drop)
    if "grid_size" not in out.columns:
        out = with_grid_sizes(out)
    if validation.height:
        means = validation_means(validation, score)
    else:
        means = pl.DataFrame(schema={"experiment": pl.Utf8, "agent": pl.Utf8,
                                     "validation_mean": pl.Float64,
                                     "validation_n": pl.Int64})
    out = out.join(means, on=["experiment", "agent"], how="left")
    check_complete(out, ("algorithm", "compat"))
    return out


def check_complete(table: pl.DataFrame, by: Sequence[str] = ("family",)) -> None:
    """Refuse a table chosen on validation MDPs where a family (``by``) with several
    agents in an experiment lacks the validation runs of one of them (Optimal, the
    reference, is never chosen): one line naming the experiment, the family and the
    agent. Nothing for a table chosen on the test MDPs."""
    if selection_of(table) != "validation" or table.is_empty():
        return
    t = table.filter(pl.col("algorithm") != "optimal").with_columns(
        pl.col("agent").count().over(["experiment", *by]).alias("_n"))
    bad = t.filter((pl.col("_n") > 1) & pl.col("validation_mean").is_null()).sort(
        "experiment", "agent")
    if bad.height:
        r = bad.row(0, named=True)
        fam = r.get("family") or r["algorithm"] + (" (compat)" if r.get("compat") else "")
        raise BBRLError(
            f"--validation: experiment {r['experiment']}: {fam} has {r['_n']} "
            f"configurations and no validation runs of {r['agent']}: give the validation "
            f"runs of every configuration (the workflow's merged_validation/"
            f"{r['experiment']}.parquet), or choose on the test MDPs (selection: test; "
            "without --validation)")


def without_validation(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` chosen on the test MDPs again (the paper's selection: the comparisons
    with the published numbers always use it)."""
    return table.drop([c for c in VALIDATION_COLUMNS if c in table.columns])


def validation_info(validation: pl.DataFrame) -> dict[str, object]:
    """What a report says of the validation runs: the number of validation MDPs per
    experiment (``n_mdps``, the largest), their seeds (``seeds``) and the experiments
    (``experiments``)."""
    if validation.is_empty():
        return {"n_mdps": 0, "seeds": [], "experiments": []}
    n = validation.group_by("experiment", "agent").agg(pl.len().alias("n"))["n"].max()
    seeds = (sorted(set(validation["test_seed"].drop_nulls().to_list()))
             if "test_seed" in validation.columns else [])
    return {"n_mdps": int(n or 0), "seeds": seeds,
            "experiments": sorted(validation["experiment"].unique().to_list())}


def chosen(summary: pl.DataFrame, merged: pl.DataFrame, paths: Sequence[str] | None,
           command: str, score: str = "discounted") -> pl.DataFrame:
    """What ``bbrl summary``, ``aggregate``, ``curves`` and ``report`` do with
    ``--validation MERGED...``: ``summary`` (of the test runs ``merged``) chosen on the
    validation runs of ``paths`` (:func:`read_validation`,
    :func:`choose_on_validation`); ``summary`` as it is (chosen on the test MDPs) when
    ``paths`` is None (no ``--validation``)."""
    if paths is None:
        return summary
    return choose_on_validation(summary, read_validation(paths, merged, command), score)
