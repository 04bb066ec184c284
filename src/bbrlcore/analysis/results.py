"""Run tables to results: merging chunks and the tidy summary (00-decisions §5).

* :func:`merge_tables` concatenates run tables (chunks of runs, or whole runs) into one
  table sorted by experiment, agent and test MDP; an (experiment, agent, MDP) present
  twice is an error.
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

from bbrlcore.analysis import stats
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.protocol.runner import RUN_COLUMNS

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
)

_KEY = ["experiment", "agent", "mdp_index"]

#: What must agree between all run tables of one experiment: its test set (test
#: distribution, seed, γ, T) and the bbrlcore version that ran them.
SAME_WITHIN_EXPERIMENT = ("test", "test_seed", "gamma", "horizon", "bbrlcore_version")


def check_run_table(table: pl.DataFrame, source: str) -> None:
    """Columns and values of a run (or merged) table; one :class:`BBRLError` naming
    ``source`` on any problem."""
    hint = artefacts.REGENERATE["run"]
    for col, dtype in RUN_COLUMNS.items():
        if col not in table.columns:
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
    if (table["mdp_index"] < 0).any() or (table["n_steps"].fill_null(1) < 1).any() or (
            table["horizon"].fill_null(1) < 1).any():
        raise BBRLError(f"{source}: negative MDP index, or fewer than 1 step; {hint}")


def merge_tables(tables: list[pl.DataFrame], sources: list[str] | None = None) -> pl.DataFrame:
    """Concatenate run tables (missing counter columns become null) and sort them.

    Refuses an (experiment, agent, MDP) present twice, and run tables of one experiment
    that differ in their test set, γ, T or bbrlcore version
    (:data:`SAME_WITHIN_EXPERIMENT`); ``sources`` (file names) are named in the error.
    """
    if not tables:
        raise BBRLError("merge: no run tables")
    sources = sources or [f"table {i}" for i in range(len(tables))]
    seen: dict[str, tuple[tuple[object, ...], str]] = {}
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
                    f"merge: experiment {exp}: run tables from different test sets or "
                    f"versions ({where}: {', '.join(diff)}); rerun them alike"
                )
    merged = pl.concat(tables, how="diagonal_relaxed")
    dup = merged.select(_KEY).is_duplicated()
    if dup.any():
        row = merged.filter(dup).row(0, named=True)
        raise BBRLError(
            f"merge: experiment {row['experiment']}, agent {row['agent']}, MDP "
            f"{row['mdp_index']} appears more than once (overlapping chunks?)"
        )
    return merged.sort(_KEY)


def read_runs(paths: list[str]) -> pl.DataFrame:
    """Read run or merged tables (validated, see :func:`check_run_table`) and merge them
    (:func:`merge_tables`)."""
    tables = []
    for p in paths:
        table, meta = artefacts.read_artefact(p, None)
        if meta.get("kind") not in ("run", "merged"):
            raise BBRLError(f"{p}: a {meta.get('kind')!r} artefact, expected a run table")
        check_run_table(table, str(p))
        tables.append(table)
    return merge_tables(tables, [str(p) for p in paths])


def summary_table(merged: pl.DataFrame) -> pl.DataFrame:
    """The summary of 00-decisions §5 from a merged run table (any number of experiments)."""
    rows = []
    for (exp, agent), g in merged.group_by(["experiment", "agent"], maintain_order=True):
        ret = g["discounted_return"].to_numpy()
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
