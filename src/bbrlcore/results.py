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

from . import stats
from .errors import BBRLError
from .formats import artefacts

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


def merge_tables(tables: list[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate run tables (missing counter columns become null) and sort them."""
    if not tables:
        raise BBRLError("merge: no run tables")
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
    tables = []
    for p in paths:
        table, meta = artefacts.read_artefact(p, None)
        if meta.get("kind") not in ("run", "merged"):
            raise BBRLError(f"{p}: a {meta.get('kind')!r} artefact, expected a run table")
        tables.append(table)
    return merge_tables(tables)


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
