"""Export: statistics, the paper's figures and tables, an HTML and a LaTeX report.

:func:`build` turns merged run tables (every agent, every test MDP) and their test sets
into ``index.html`` (self-contained, figures embedded), ``report.tex`` (booktabs tables,
figures as PDF), the figures as PNG and PDF, and every number a figure or table shows as
Parquet under ``data/`` so any plot can be redone with polars. When the results hold
configurations of the paper's tables, a section "Against the published numbers" puts each
published row beside ours with a verdict, and the time-constraint sequences beside the
paper's (:func:`published_section`, :mod:`bbrlcore.analysis.published`; ``data/published.parquet``
and ``data/published-sequences.parquet``); when they hold Colosseum's benchmark instances
run with its indicators, a section "Against Colosseum's published tables" puts its Tables
11-14 beside bbrl's expected normalised regret (:func:`colosseum_section`,
:mod:`bbrlcore.analysis.colosseum_published`; ``data/colosseum-published.parquet``). The
score (``score``: the discounted return, the paper's, or the undiscounted sum of rewards)
is the report's choice, used everywhere but in
the published comparison (always discounted). Learning curves (:func:`curves_section`,
:mod:`bbrlcore.analysis.curves`) need the runs' per-step rewards: each experiment's page
shows its algorithms' curves, the summary page the IQM of the normalised score against
time and, along each ladder of a problem family, the curves of each size side by side
(``data/curves.parquet``, ``data/curves-aggregate.parquet``). The probability of
improvement is a matrix of P(X > Y); ``versus`` draws one algorithm against every other
(``data/versus.parquet``).

Differences from the original ``BBRL-export`` (03 §2–4, §7), all deliberate:

* intervals are mean ± 1.96·s/√N (the paper's "2σ/N" is a typo; the original code agrees);
* "among the best" uses the one-sided paired Z-test at level α (1.645 at 5%), each family
  compared with the reference on its own (the original stops at the first significant
  difference and uses the two-sided 1.96), identical return lists are "not different"
  (the original's NaN counted as different);
* online time per decision divides by the steps actually taken (the original hard-codes
  250) and is the same unit in every experiment (the original's scale compounds);
* the bounds grid covers the smallest and the largest observed times, so the slowest
  agents appear; an empty cell is shown empty (the original drew it as the first class);
* the scatter plots have error bars and show agents with (near) zero time at a floor
  marked "≈0" (the original's log axis dropped them);
* compat variants are families of their own ("BEB (compat)"), beside the algorithm.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

if TYPE_CHECKING:
    import jinja2

from bbrlcore import __version__
from bbrlcore.analysis import constraints, stats
from bbrlcore.analysis import published as P
from bbrlcore.analysis.results import (
    REFERENCE_TEXT,
    above_reference,
    check_coverage,
    check_test_sets,
    reference_agents,
    reference_warning,
    score_column,
    summary_table,
)
from bbrlcore.analysis.selection import (
    selection_of,
    selection_text,
    without_validation,
)
from bbrlcore.errors import BBRLError
from bbrlcore.formats.artefacts import atomic_path
from bbrlcore.mdp import hardness
from bbrlcore.report import figures
from bbrlcore.report import interactive as I

TEMPLATES = Path(__file__).parent / "templates"


def _save(fig, base: Path) -> dict[str, str]:
    """The static figure as PNG (HTML links, ``snakemake --report``) and PDF (LaTeX)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(base.with_suffix(".png"), bbox_inches="tight")
    fig.savefig(base.with_suffix(".pdf"), bbox_inches="tight")
    figures.plt.close(fig)
    return {"png": base.with_suffix(".png").name, "pdf": base.with_suffix(".pdf").name}


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        df.write_parquet(tmp)


def _time(s: float | None) -> str:
    if s is None or not np.isfinite(s):
        return "–"
    return figures._fmt_time(float(s))


def _params_text(agent: str) -> str:
    """Parameters in the agent's declaration order, from its id (compat is the family)."""
    parts = [p for p in agent.split("__")[1:] if p != "compat=true"]
    return ", ".join(parts) or "–"


#: Below this offline time (seconds) an agent does not learn offline: when no agent of an
#: experiment spends more, its score-against-offline-time figure (one vertical pile at
#: "≈0") is left out.
OFFLINE_NEGLIGIBLE_S = 1e-3
#: What the learning-curve sections say when the runs have no per-step rewards.
NO_REWARDS = ("Learning curves need per-step rewards; these runs were made before bbrl "
              "recorded them.")
#: The report's score (``score``): its wording on the pages.
SCORE_TEXT = {"discounted": "mean discounted return (the paper's score)",
              "undiscounted": "mean undiscounted sum of rewards over the horizon"}
SCORE_AXIS = {"discounted": "mean discounted return", "undiscounted": "mean sum of rewards"}


def experiment_section(
    exp: str, summary: pl.DataFrame, merged: pl.DataFrame, out: Path, alpha: float,
    n_bounds: int, styles: dict[str, Any], correction: str = "none",
    score: str = "discounted", curves: dict[str, Any] | None = None,
    above: pl.DataFrame | None = None, among: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Tables and figures of one experiment (static for LaTeX, interactive for HTML),
    ranked by ``score`` (``summary`` must be of that score). ``curves``: the learning
    curves (``{"table": the curves table}``, or ``{"reason": why there are none}``);
    ``above``: the agents above their reference
    (:func:`bbrlcore.analysis.results.above_reference`), flagged in the table; ``among``:
    "among the best" of every experiment
    (:func:`bbrlcore.analysis.aggregate.among_best_table`, computed once by
    :func:`analyse`; computed here for this experiment when not given)."""
    col = score_column(score, merged)
    s = summary.filter(pl.col("experiment") == exp)
    m = merged.filter(pl.col("experiment") == exp).sort("mdp_index")
    returns = {a: g.sort("mdp_index")[col].cast(pl.Float64).to_numpy()
               for (a,), g in m.group_by(["agent"])}
    test, prior = s["test"][0], s["prior"][0]
    kind = "accurate" if test == prior else "inaccurate"
    title = f"{exp} ({kind} prior)"
    data_dir = out / "data"
    fig_dir = out / "figures"
    ylabel = f"{SCORE_AXIS[score]} (95% interval)"

    # no agent learns offline: the offline figure would be one vertical pile at "≈0"
    offline_shown = bool(s["offline_time_s"].max() > OFFLINE_NEGLIGIBLE_S)
    f1, d1 = figures.time_vs_score(s, "offline_time_s", "offline time", title, styles,
                                   ylabel)
    _write_parquet(d1, data_dir / f"{exp}-offline.parquet")
    if offline_shown:
        fig_off = _save(f1, fig_dir / f"{exp}-offline")
    else:
        figures.plt.close(f1)
        fig_off = None
    f2, d2 = figures.time_vs_score(s, "online_time_per_decision_s",
                                   "online time per decision", title, styles, ylabel)
    fig_on = _save(f2, fig_dir / f"{exp}-online")
    _write_parquet(d2, data_dir / f"{exp}-online.parquet")
    # Optimal knows the test MDP: an upper reference, not a contender
    contenders = s.filter(pl.col("algorithm") != "optimal")
    cmap = constraints.constraint_map(contenders, returns, alpha, n_bounds, correction)
    _write_parquet(cmap, data_dir / f"{exp}-constraint-map.parquet")
    fig_map = _save(figures.constraint_map_figure(cmap, title, styles, score),
                    fig_dir / f"{exp}-constraint-map")
    times = s.select("agent", "offline_time_s", "online_time_per_decision_s")
    yaxis = f"score ({SCORE_AXIS[score]})"
    interactive = {
        "online": I.to_json(I.time_vs_score(
            d2.join(times.drop("online_time_per_decision_s"), on="agent", how="left"),
            "online time per decision (s)", f"{title}: score against online time", styles,
            yaxis)),
        "map": I.to_json(I.constraint_map(cmap, title, styles, score)),
    }
    if offline_shown:
        interactive["offline"] = I.to_json(I.time_vs_score(
            d1.join(times, on="agent", how="left"), "offline time (s)",
            f"{title}: score against offline time", styles, yaxis))

    curve_sec: dict[str, Any] = {"available": False,
                                 "reason": (curves or {}).get("reason", NO_REWARDS)}
    table_c = (curves or {}).get("table")
    # what the curves left out in this experiment, and why (one sentence each)
    mine = [w for w in (curves or {}).get("left_out_items", []) if w.experiment == exp]
    if table_c is not None:
        ct = table_c.filter(pl.col("experiment") == exp)
        if ct.is_empty():
            whole = [w.reason for w in mine if w.agent is None and w.what is None] or [
                f"{w.family} (agent {w.agent}): {w.reason}" for w in mine]
            curve_sec["reason"] = ("No learning curves for this experiment: "
                                   + ("; ".join(whole) or "no algorithm has a curve here")
                                   + ".")
        else:
            panels = [(exp, title)]
            # the views the tables allow (without Random or Optimal: no normalised score)
            views = tuple(v for v in ("cumulative", "normalised", "shortfall")
                          if ct[v].drop_nulls().len())
            curve_sec = {
                "available": True,
                "figure": I.to_json(I.learning_curves(
                    ct, panels, styles, score, title=f"{title}: learning curves")),
                "fig": _save(figures.learning_curves_figure(ct, panels, styles, score,
                                                            views),
                             fig_dir / f"{exp}-curves"),
                "T": int(ct["t"].max())}
    curve_sec["left_out"] = ([f"{w.what}: {w.reason}" for w in mine if w.what is not None]
                             + [f"{w.family} (agent {w.agent}): {w.reason}" for w in mine
                                if w.agent is not None])

    if among is None:
        best = constraints.among_best(contenders, returns, alpha, correction=correction)
    else:
        best = among.filter(pl.col("experiment") == exp).select(
            "family", "agent", "mean", "z", "among_best", "reference")
    oracle = s.filter(pl.col("algorithm") == "optimal").select(
        "family", "agent", "mean", pl.lit(None, pl.Float64).alias("z"),
        pl.lit(False).alias("among_best"), pl.lit(False).alias("reference"))
    table = (
        pl.concat([best, oracle])
        .join(s.drop(["mean", "family"]), on="agent", how="left")
        .with_columns(pl.col("family").replace_strict(
            {f: i for i, f in enumerate(styles)}, default=99).alias("_o"))
        .sort("_o").drop("_o")
    )
    _write_parquet(table, data_dir / f"{exp}-best.parquet")
    refs = reference_agents(s, score)
    reference = refs["agent"][0] if refs.height else None
    over = {} if above is None else {
        r["agent"]: r for r in above.filter(pl.col("experiment") == exp).iter_rows(named=True)}
    rows = []
    for r in table.iter_rows(named=True):
        half = (r["ci_high"] - r["ci_low"]) / 2
        flag = over.get(r["agent"])
        rows.append({
            "family": r["family"], "params": _params_text(r["agent"]),
            "mean": f"{r['mean']:.2f}", "half": f"{half:.2f}",
            "offline": _time(r["offline_time_s"]),
            "online": _time(r["online_time_per_decision_s"]),
            "normalised": "–" if r["normalised_score"] is None
            else f"{r['normalised_score']:.3f}",
            "shortfall": "–" if r["shortfall"] is None else f"{r['shortfall']:.2f}",
            "bold": bool(r["among_best"]), "z": r["z"],
            "above": None if flag is None else _above_text(flag),
            "reference": r["agent"] == reference,
            "grid": r.get("grid_size"),
            "validation": "–" if r.get("validation_mean") is None
            else f"{r['validation_mean']:.2f}",
        })
    empty_cells = int(cmap.filter(pl.col("family").is_null()).height)
    n_compared = max(int(best.height) - 1, 0)
    ref_row = refs.row(0, named=True) if refs.height else None
    return {"name": exp, "test": test, "prior": prior, "kind": kind, "title": title,
            "reference": ref_row,
            "above": [_above_text(r) for r in over.values()],
            "page": f"experiments/{exp}.html",
            "n_agents": s.height, "n_mdps": int(s["n"].max()), "rows": rows,
            "fig_offline": fig_off, "fig_online": fig_on, "fig_map": fig_map,
            "offline_shown": offline_shown,
            "interactive": interactive, "n_compared": n_compared, "curves": curve_sec,
            "fwer": stats.familywise_error(n_compared, alpha, correction),
            "best_by_family": {r["family"]: r for r in rows},
            "empty_cells": empty_cells, "n_cells": int(cmap.select(
                "offline_index", "online_index").unique().height)}


def _above_text(r: dict[str, Any]) -> str:
    """One flagged agent (a row of :func:`bbrlcore.analysis.results.above_reference`) as
    the pages say it."""
    sig = ("significantly: the reference is not optimal for this score, or the runs are "
           "wrong" if r["significant"] else "within sampling noise")
    return (f"{r['agent']} scores {r['normalised_score']:.3f} in {r['experiment']}: "
            f"{r['difference']:+.3g} [{r['difference_low']:+.3g}, "
            f"{r['difference_high']:+.3g}] above {r['reference']} per test MDP, {sig}")


#: The paper's experiments in the order of its tables.
PAPER_ORDER = ["GC-GC", "GDL-GDL", "Grid-Grid", "GC-UGC", "GDL-UGDL", "Grid-UGrid"]


def _score(m: float | None, h: float | None) -> str:
    return "–" if m is None else f"{m:.2f} ± {h:.2f}"


def _z(z: float | None) -> str:
    if z is None or np.isnan(z):
        return "–"
    return "∞" if np.isinf(z) and z > 0 else ("−∞" if np.isinf(z) else f"{z:+.1f}")


def published_section(
    summary: pl.DataFrame, merged: pl.DataFrame, out: Path, alpha: float
) -> dict[str, Any] | None:
    """"Against the published numbers": the comparison table (:func:`bbrlcore.analysis.published.
    compare`) and the time-constraint sequences beside the paper's, written to
    ``data/published.parquet`` and ``data/published-sequences.parquet``; None when the
    results hold no published configuration and no experiment of the paper."""
    table = P.compare(summary)
    _write_parquet(table, out / "data" / "published.parquet")
    returns: dict[str, dict[str, np.ndarray]] = {}
    for (exp, agent), g in merged.group_by(["experiment", "agent"]):
        returns.setdefault(str(exp), {})[str(agent)] = (
            g.sort("mdp_index")["discounted_return"].to_numpy())
    seqs = P.sequences(summary, returns, alpha)
    _write_parquet(seqs, out / "data" / "published-sequences.parquet")
    if table.is_empty() and seqs.is_empty():
        return None
    notes: list[str] = []
    experiments = []
    rank = {e: i for i, e in enumerate(PAPER_ORDER)}
    for exp in sorted(table["experiment"].unique().to_list(), key=lambda e: rank.get(e, 99)):
        rows = []
        for r in table.filter(pl.col("experiment") == exp).iter_rows(named=True):
            note = ""
            if r["reasons"]:
                if r["reasons"] not in notes:
                    notes.append(r["reasons"])
                note = str(notes.index(r["reasons"]) + 1)
            ref = _score(r["reference_mean"], r["reference_halfwidth"])
            if (r["reference_runs"] or 0) > 1:
                ref += f" ({r['reference_runs']} runs pooled)"
            rows.append({
                "agent": r["paper_agent"], "published": _score(r["published_mean"],
                                                               r["published_halfwidth"]),
                "compat": _score(r["mean_compat"], r["halfwidth_compat"]),
                "z_compat": _z(r["z_compat"]),
                "default": _score(r["mean_default"], r["halfwidth_default"]),
                "z_default": _z(r["z_default"]),
                "verdict": r["verdict"] or "–", "variant": r["variant"],
                "agrees": r["verdict"] == "agrees",
                "reference": ref, "z_reference": _z(r["z_reference"]), "note": note,
            })
        kind = "accurate" if exp.split("-")[0] == exp.split("-")[1] else "inaccurate"
        experiments.append({"name": exp, "kind": kind, "rows": rows,
                            "n": int(table.filter(pl.col("experiment") == exp)["n"].max())})
    agree, total = P.counts(table)
    return {"experiments": experiments, "agree": agree, "total": total, "notes": notes,
            "citation": P.CITATION, "selection_note": P.SELECTION_BIAS_NOTE,
            "sequence_note": P.SEQUENCE_NOTE, "agree_z": f"{P.AGREE_Z:g}",
            "sequences": sorted(seqs.to_dicts(),
                                key=lambda r: rank.get(r["experiment"], 99))}


def colosseum_section(merged: pl.DataFrame, out: Path) -> dict[str, Any] | None:
    """"Against Colosseum's published tables": Colosseum's Tables 11-14 beside bbrl's
    expected normalised regret (:func:`bbrlcore.analysis.colosseum_published.compare`),
    written to ``data/colosseum-published.parquet``; None when the results hold no
    Colosseum instance."""
    from bbrlcore.analysis import colosseum_published as CP

    table = CP.compare(merged)
    if table.is_empty():
        return None
    _write_parquet(table, out / "data" / "colosseum-published.parquet")
    notes: list[str] = []
    settings = []
    from bbrlcore.mdp.families.colosseum_instances import SETTINGS

    for code in ("EC", "EE", "CC", "CE"):
        part = table.filter(pl.col("setting") == code)
        if part.is_empty():
            continue
        rows = []
        for r in part.filter(pl.col("verdict") != "not run").iter_rows(named=True):
            marks = []
            for text in (r["why"] if r["verdict"] not in ("agrees", "differs") else None,
                         r["note"]):
                if text:
                    if text not in notes:
                        notes.append(text)
                    marks.append(str(notes.index(text) + 1))
            done = "?" if r["completed"] is None else str(r["completed"])
            rows.append({
                "instance": r["instance"], "mdp": r["colosseum_mdp"],
                "colosseum_agent": r["colosseum_agent"], "agent": r["agent"],
                "published": f"{r['published_mean']:.2f} ± {r['published_std']:.2f}",
                "completed": f"{done}/{CP.SEEDS}",
                "ours": "–" if r["mean"] is None else
                        f"{r['mean']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                        if r["ci_low"] is not None else f"{r['mean']:.3f}",
                "n": r["n"], "z": _z(r["z"]), "verdict": r["verdict"],
                "agrees": r["verdict"] == "agrees", "notes": ", ".join(marks)})
        settings.append({"code": code, "name": SETTINGS[code],
                         "table": int(part["table"][0]), "rows": rows,
                         "not_run": CP.not_run(part)})
    return {"settings": settings, "notes": notes, "counts": CP.counts(table),
            "counts_text": CP.counts_text(table), "citation": CP.CITATION,
            "agree_z": f"{CP.AGREE_Z:g}", "limit": CP.LIMIT_MINUTES, "horizon": CP.HORIZON}


def reference_section(summary: pl.DataFrame, score: str,
                      above: pl.DataFrame) -> dict[str, Any]:
    """What the pages say about the reference of the normalised scores: ``text`` (the
    Optimal of ``score``: :data:`bbrlcore.analysis.results.REFERENCE_TEXT`), ``warning``
    (one line when some experiment has only an Optimal of the other criterion:
    :func:`bbrlcore.analysis.results.reference_warning`; else None), and ``above`` (every
    agent whose normalised score is above 1, as a sentence)."""
    refs = reference_agents(summary, score)
    return {"text": REFERENCE_TEXT[score], "warning": reference_warning(refs, score),
            "above": [_above_text(r) for r in above.iter_rows(named=True)],
            "n_significant": int(above["significant"].sum()) if above.height else 0}


def problems_section(
    h: pl.DataFrame, summary: pl.DataFrame, out: Path, styles: dict[str, Any],
    families: list[str], score: str = "discounted", regrets: pl.DataFrame | None = None,
) -> dict[str, Any] | None:
    """"Problems and hardness" (:mod:`bbrlcore.report.problems`): the hardness map, the
    scores against hardness and along the ladders, their tables written to
    ``data/hardness-map.parquet``, ``data/score-hardness.parquet`` and
    ``data/score-size.parquet``; None when no experiment has a test set. ``regrets``
    (:func:`bbrlcore.analysis.exploration.regret_summary`): each algorithm's regret is
    placed against hardness and along the ladders too, where the runs carry references."""
    from bbrlcore.report import problems as PR

    hmap = PR.hardness_map(h, summary)
    if hmap.is_empty():
        return None
    scores = PR.score_table(summary, hmap, families, regrets)
    ladder = PR.ladder_table(scores)
    data, figs = out / "data", out / "figures"
    _write_parquet(hmap, data / "hardness-map.parquet")
    _write_parquet(scores, data / "score-hardness.parquet")
    _write_parquet(ladder, data / "score-size.parquet")
    scored = scores.filter(pl.col("normalised_score").is_not_null())
    sec: dict[str, Any] = {
        "n_tests": hmap.height, "n_ladders": len(PR.ladders(ladder)),
        "fig_map": _save(figures.hardness_map_figure(hmap), figs / "hardness-map"),
        "map": I.to_json(I.hardness_map(hmap)), "scored": not scored.is_empty(),
        "ladders": PR.ladders(ladder)}
    if sec["scored"]:
        sec["fig_scores"] = _save(figures.score_vs_hardness_figure(scores, styles, score),
                                  figs / "score-hardness")
        sec["scores"] = I.to_json(I.score_vs_hardness(scores, styles, score))
    if sec["scored"] and not ladder.filter(pl.col("normalised_score").is_not_null()).is_empty():
        sec["fig_sizes"] = _save(figures.score_vs_size_figure(ladder, styles, score),
                                 figs / "score-size")
        sec["sizes"] = I.to_json(I.score_vs_size(ladder, styles, score))
    # the regret (Colosseum's normalised regret per step) against hardness and size
    reg, reg_ladder = PR.regret_view(scores), PR.regret_view(ladder)
    if not reg.is_empty():
        sec["fig_regret"] = _save(figures.score_vs_hardness_figure(
            reg, styles, score, ylabel=figures.REGRET_LABEL), figs / "regret-hardness")
        sec["regret"] = I.to_json(I.score_vs_hardness(
            reg, styles, score, ylabel=figures.REGRET_LABEL, what="normalised regret"))
    if not reg_ladder.is_empty():
        sec["fig_regret_sizes"] = _save(figures.score_vs_size_figure(
            reg_ladder, styles, score, ylabel=figures.REGRET_LABEL), figs / "regret-size")
        sec["regret_sizes"] = I.to_json(I.score_vs_size(
            reg_ladder, styles, score, ylabel=figures.REGRET_LABEL))
    return sec


def aggregates_section(
    merged: pl.DataFrame, out: Path, styles: dict[str, Any], alpha: float, correction: str,
    n_resamples: int, seed: int, score: str = "discounted", versus: str | None = None,
    aggregates: Any = None,
) -> dict[str, Any]:
    """Statistics across experiments (:mod:`bbrlcore.analysis.aggregate`, by ``score``): the
    tables written to ``data/aggregate-*.parquet``, interactive figures (the probability of
    improvement as a matrix), and rows for the pages; without Random and Optimal in every
    experiment (the normalisation), a note saying so. ``versus`` (a family): that
    algorithm against every other (:func:`bbrlcore.analysis.aggregate.versus`, written to
    ``data/versus.parquet``). ``aggregates``: what :func:`analyse` computed (the
    :class:`~bbrlcore.analysis.aggregate.Aggregates`, or the reason there are none);
    computed here when not given."""
    from bbrlcore.analysis import aggregate as A
    from bbrlcore.errors import BBRLError

    if aggregates is None:
        try:
            aggregates = A.compute(merged, n_resamples=n_resamples, seed=seed, alpha=alpha,
                                   correction=correction, score=score)
        except BBRLError as exc:
            aggregates = str(exc)
    if isinstance(aggregates, str):
        return {"available": False, "reason": aggregates}
    agg = aggregates
    A.write_tables(agg, out / "data")
    metrics = agg.tables["metrics"]
    if metrics.is_empty():
        return {"available": False, "reason": "no algorithm has an agent in every experiment"}
    rows = []
    for r in metrics.iter_rows(named=True):
        rows.append({"family": r["family"], "n": r["n_experiments"], **{
            m: f"{r[m]:.3f} [{r[f'{m}_ci_low']:.3f}, {r[f'{m}_ci_high']:.3f}]"
            for m in I.METRICS}})
    imp = agg.tables["improvement"]
    pairs = [{"x": r["family_x"], "y": r["family_y"],
              "p": f"{r['probability']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
              "paired": f"{r['paired_probability']:.3f} [{r['paired_ci_low']:.3f}, "
                        f"{r['paired_ci_high']:.3f}]"}
             for r in imp.iter_rows(named=True)]
    order = metrics["family"].to_list()  # best IQM first
    figs = {"metrics": I.to_json(I.aggregate_metrics(metrics, styles, score)),
            "profiles": I.to_json(I.performance_profiles(agg.tables["profiles"], styles,
                                                         score)),
            "improvement": I.to_json(I.improvement(imp, order, score))}
    sec: dict[str, Any] = {
        "available": True, "rows": rows, "pairs": pairs,
        "excluded": agg.excluded, "meta": agg.meta,
        "n_resamples": n_resamples, "seed": seed, "n_families": len(order),
        "figures": figs,
        "fig_improvement": _save(figures.improvement_matrix_figure(imp, order, score),
                                 out / "figures" / "improvement-matrix"),
        "versus": None}
    if versus is not None:
        try:
            v = A.versus(agg, versus, "versus")
        except BBRLError as exc:  # left out of the aggregates (checked known before)
            sec["versus"] = {"available": False, "name": versus, "reason": str(exc)}
        else:
            _write_parquet(v, out / "data" / "versus.parquet")
            figs["versus"] = I.to_json(I.versus(v, score))
            counts = {k: int((v["verdict"] == k).sum()) for k in ("better", "worse", "unclear")}
            sec["versus"] = {"available": True, "name": v["family"][0], **counts,
                             "n": v.height,
                             "fig": _save(figures.versus_figure(v, score),
                                          out / "figures" / "versus")}
    return sec


def curves_section(
    merged: pl.DataFrame, summary: pl.DataFrame, out: Path, styles: dict[str, Any],
    score: str, n_resamples: int, seed: int, curves: Any = None,
) -> dict[str, Any]:
    """Learning curves (:mod:`bbrlcore.analysis.curves`, by ``score``, with the report's
    bootstrap settings): the tables written to ``data/curves.parquet`` and
    ``data/curves-aggregate.parquet``; the IQM of the normalised score against time across
    experiments (rliable's sample-efficiency curve) and, along each ladder
    (:func:`bbrlcore.report.problems.experiment_ladders`), the curves of each size side by
    side. ``available`` false with a one-sentence ``reason`` when the runs have no per-step
    rewards (:data:`NO_REWARDS`) or the curves cannot be made; ``table`` is the curves
    table for the experiment pages; ``left_out`` says, one line each, which experiments
    and agents have no curve and why (:attr:`bbrlcore.analysis.curves.Curves.left_out`;
    also printed on stderr). ``curves``: what :func:`analyse` computed (the
    :class:`~bbrlcore.analysis.curves.Curves`, or the reason there are none); computed
    here when not given."""
    from bbrlcore.analysis import curves as C
    from bbrlcore.report.problems import experiment_ladders

    if curves is None:
        curves = _curves_of(merged, score, n_resamples, seed)
    if isinstance(curves, str):
        return {"available": False, "reason": curves}
    c = curves
    for what in c.left_out:  # said on stderr and on the pages that show the curves
        print(f"bbrl: warning: left out of the learning curves: {what}", file=sys.stderr)
    C.write_tables(c, out / "data")
    table, agg = c.tables["curves"], c.tables["aggregate"]
    figs = out / "figures"
    sec: dict[str, Any] = {"available": True, "table": table, "score": score,
                           "T": int(table["t"].max()) if table.height else 0,
                           "horizon": horizon_text(table.group_by("experiment").agg(
                               pl.col("t").max())["t"].to_list()),
                           "n_resamples": n_resamples, "seed": seed, "aggregate": None,
                           "ladders": [], "left_out": [str(w) for w in c.left_out],
                           "left_out_items": c.left_out}
    if not agg.is_empty():
        sec["aggregate"] = {
            "figure": I.to_json(I.iqm_curves(agg, styles, score)),
            "fig": _save(figures.iqm_curves_figure(agg, styles, score), figs / "curves-iqm"),
            "n_experiments": int(agg["n_experiments"].max()),
            "families": len(agg["family"].unique())}
    present = set(table["experiment"].unique().to_list())
    for k, (name, rungs) in enumerate(experiment_ladders(summary)):
        panels = [(exp, f"size {size}") for size, exp in rungs if exp in present]
        if len(panels) < 2:
            continue
        sec["ladders"].append({
            "name": name, "sizes": [size for size, exp in rungs if exp in present],
            "figure": I.to_json(I.learning_curves(table, panels, styles, score,
                                                  view="normalised", title=name)),
            "fig": _save(figures.learning_curves_figure(table, panels, styles, score),
                         figs / f"curves-ladder-{k + 1}"),
            "id": f"fig-curves-ladder-{k + 1}"})
        # Colosseum's normalised regret against time, each size side by side, log axes
        with_reg = [p for p in panels if table.filter(
            (pl.col("experiment") == p[0]) & pl.col("normalised_regret").is_not_null()
            & (pl.col("family") != "Optimal")).height]
        if len(with_reg) >= 2:
            sec["ladders"][-1]["regret"] = {
                "figure": I.to_json(I.regret_curves(table, with_reg, styles,
                                                    title=f"{name}: regret")),
                "fig": _save(figures.regret_curves_figure(table, with_reg, styles),
                             figs / f"regret-ladder-{k + 1}"),
                "id": f"fig-regret-ladder-{k + 1}"}
    # the DeepSea scores per DeepSea ladder: bsuite's (exactly as bsuite computes it) and
    # bbrl's (the regret's learning time with paired intervals, its figure)
    sec["deepsea"] = deepsea_items(c.tables, styles, figs)
    return sec


def deepsea_items(tables: dict[str, pl.DataFrame], styles: dict[str, Any],
                  figs: Path) -> list[dict[str, Any]]:
    """The report's DeepSea scores, one item per DeepSea ladder, from the curves' tables
    (:func:`bbrlcore.analysis.exploration.bsuite_deepsea_scores` and
    :func:`~bbrlcore.analysis.exploration.bbrl_deepsea_scores`): ``name``, ``bsuite``
    (bsuite's score per family, with ``learning``: its learning episode by size),
    ``bsuite_note`` (why bsuite's score is not given, when it is given for no family),
    ``summary`` (bbrl's score per family) and bbrl's "episodes to learn" figure
    (``figure``, ``fig``, ``id``) where bbrl's score has rows; the figures go to
    ``figs``."""

    ds, dsum = tables["deepsea"], tables["deepsea_summary"]
    bsum = tables.get("bsuite_deepsea_summary")
    bsizes = tables.get("bsuite_deepsea")
    ladders = ds["ladder"].unique(maintain_order=True).to_list()
    if bsum is not None:
        ladders += [x for x in bsum["ladder"].unique(maintain_order=True).to_list()
                    if x not in ladders]
    items = []
    for k, name in enumerate(ladders):
        d = ds.filter(pl.col("ladder") == name)
        item: dict[str, Any] = {"name": name, "id": f"fig-deepsea-{k + 1}",
                                "summary": dsum.filter(pl.col("ladder") == name).to_dicts(),
                                "bsuite": []}
        if bsum is not None and bsizes is not None:
            for r in bsum.filter(pl.col("ladder") == name).to_dicts():
                per = bsizes.filter((pl.col("ladder") == name)
                                    & (pl.col("family") == r["family"]))
                r["learning"] = ", ".join(
                    f"{s['size']}: {s['episode'] if s['solved'] else '–'}"
                    for s in per.iter_rows(named=True))
                item["bsuite"].append(r)
            if item["bsuite"] and all(r["score"] is None for r in item["bsuite"]):
                r = item["bsuite"][0]
                item["bsuite_note"] = (r["note"] + (f" (sizes run: {r['off_sweep']})"
                                                    if r["off_sweep"] else ""))
                item["bsuite"] = []
        if d.height:
            item["figure"] = I.to_json(I.episodes_to_learn(d, styles, title=name))
            item["fig"] = _save(figures.episodes_to_learn_figure(d, styles),
                                figs / f"deepsea-{k + 1}")
        items.append(item)
    return items


def _curves_of(merged: pl.DataFrame, score: str, n_resamples: int, seed: int,
               best: pl.DataFrame | None = None) -> Any:
    """The learning curves of ``merged`` (:func:`bbrlcore.analysis.curves.curves`), or
    the one sentence saying why there are none."""
    from bbrlcore.analysis import curves as C

    if "rewards" not in merged.columns:
        return NO_REWARDS
    try:
        return C.curves(merged, score=score, n_resamples=n_resamples, seed=seed, best=best,
                        resamples_option="--bootstrap-resamples")
    except BBRLError as exc:
        print(f"bbrl: warning: no learning curves in the report: {exc}", file=sys.stderr)
        return f"No learning curves: {exc}."


@dataclass
class Analysis:
    """The analysis tables a report draws, each computed once from the merged runs
    (:func:`analyse`); the sections render from them and compute nothing again.

    ``summary`` (with the report's ``family``), ``best`` (each family's best agent per
    experiment, :func:`bbrlcore.analysis.aggregate.best_agents`), ``among`` ("among the
    best" per experiment, :func:`bbrlcore.analysis.aggregate.among_best_table`),
    ``aggregates`` (:func:`bbrlcore.analysis.aggregate.compute`, or why there are none),
    ``curves`` (:func:`bbrlcore.analysis.curves.curves`, or why there are none), ``above``
    (:func:`bbrlcore.analysis.results.above_reference`) and ``published`` (the summary
    by the discounted return, the published comparison's score)."""

    summary: pl.DataFrame
    best: pl.DataFrame
    among: pl.DataFrame
    aggregates: Any
    curves: Any
    above: pl.DataFrame
    published: pl.DataFrame


def analyse(merged: pl.DataFrame, summary: pl.DataFrame, score: str = "discounted",
            alpha: float = 0.05, correction: str = "none", n_resamples: int = 2000,
            seed: int = 0) -> Analysis:
    """Every analysis table of a report, once: the summary of ``merged`` by ``score``
    (``summary``, checked by :func:`build`) feeds the best agents, "among the best", the
    aggregates and the learning curves, which used to choose the best agents and
    summarise the runs again each (:class:`Analysis`). Each family's best agent is
    chosen as ``summary`` says (:mod:`bbrlcore.analysis.selection`: on the test MDPs, or
    on validation MDPs); the published comparison always on the test MDPs (the
    paper's selection)."""
    from bbrlcore.analysis import aggregate as A

    summary = constraints.with_family(summary)
    best = A.best_agents(merged, score=score, summary=summary)
    among = A.among_best_table(merged, alpha, correction, score=score, summary=summary)
    try:
        aggregates: Any = A.compute(merged, n_resamples=n_resamples, seed=seed, alpha=alpha,
                                    correction=correction, score=score, summary=summary,
                                    best=best, among=among)
    except BBRLError as exc:
        aggregates = str(exc)
    # the published numbers are compared on the paper's selection (the test MDPs)
    published = without_validation(summary) if score == "discounted" else \
        constraints.with_family(summary_table(merged, "discounted"))
    return Analysis(summary=summary, best=best, among=among, aggregates=aggregates,
                    curves=_curves_of(merged, score, n_resamples, seed, best),
                    above=above_reference(summary, merged, score), published=published)


def build(
    merged: pl.DataFrame,
    summary: pl.DataFrame,
    out_dir: str | Path,
    test_sets: list | None = None,
    alpha: float = 0.05,
    n_bounds: int = 8,
    pdf: bool = True,
    correction: str = "none",
    bootstrap_resamples: int = 2000,
    bootstrap_seed: int = 0,
    display_names: Mapping[str, str] | None = None,
    score: str = "discounted",
    versus: str | None = None,
    resamples_option: str = "bootstrap_resamples",
) -> Path:
    """Write the report into ``out_dir``; return the path of ``index.html``.

    ``index.html`` is the summary page (statistics across experiments, the best agent of
    each algorithm per experiment, the published numbers, hardness), with a page per
    experiment under ``experiments/``; the figures are interactive (plotly.js, copied
    beside the pages: the report opens from disk with no network). ``report.tex`` has the
    same tables and static figures. ``correction`` (``none``: the paper's procedure, or
    ``holm``) decides "among the best"; ``bootstrap_*`` the aggregates' intervals;
    ``display_names`` the names shown for algorithms beyond the built-ins (the plugins'
    declared ``display_name``, :func:`bbrlcore.analysis.constraints.display_names`).
    ``score`` (``discounted``: the paper's, or ``undiscounted``: the sum of rewards over
    the horizon) is what the summary, "among the best", the time-constraint maps, the
    aggregates and the learning curves use (``summary`` must be of that score:
    :func:`bbrlcore.analysis.results.summary_table`); the published numbers are always
    compared on the discounted return (the paper's). Each algorithm's configuration is
    chosen as ``summary`` says: on the test MDPs (the paper's selection), or on validation
    MDPs when it was chosen on them
    (:func:`bbrlcore.analysis.selection.choose_on_validation`); every page says which,
    and the tables give each algorithm's grid size. ``versus`` (an algorithm, as the
    report names it or by its id) adds, at the top of the statistics across experiments,
    that algorithm against every other (P(versus > Y) with intervals). Learning curves
    need the runs' per-step rewards (column ``rewards``); without them their sections
    say so (:data:`NO_REWARDS`).

    Refused before anything is written (:class:`BBRLError`): an unknown ``score``, a
    ``summary`` of another score, an unknown ``versus`` (one line listing the
    algorithms), agents of one experiment
    measured on different test MDPs (:func:`bbrlcore.analysis.results.check_coverage`),
    test sets other than the ones the runs were played on
    (:func:`bbrlcore.analysis.results.check_test_sets`), more bootstrap resamples than
    memory holds (the aggregates' and the learning curves', computed from the tables'
    sizes: one line naming ``resamples_option``, the memory needed and the limit). The
    report is built in a staging directory beside ``out_dir`` and moved into it only when
    complete: a report that fails, is interrupted or terminated (SIGTERM, SIGHUP) leaves
    ``out_dir`` as it was and removes its staging directory; one killed outright
    (SIGKILL, a crash) leaves its staging directory, which the next report into
    ``out_dir`` on the same machine removes.
    """
    stats.check_correction(correction)
    # everything that can be checked is checked before anything is written
    score_column(score, merged)
    if "score" in summary.columns and summary.height:
        made = sorted(set(summary["score"].drop_nulls().to_list()) - {score})
        if made:
            raise BBRLError(f"report: the summary was made with score={made[0]}, the report "
                            f"uses score={score} (summary_table(merged, {score!r}))")
    check_coverage(merged, "report")
    if test_sets:
        check_test_sets(merged, test_sets, [f"test set {i + 1} ({ts.test.short_name})"
                                            for i, ts in enumerate(test_sets)])
    from bbrlcore.analysis import aggregate as A
    from bbrlcore.analysis import curves as C

    A.check_bootstrap_memory(merged, bootstrap_resamples, resamples_option, score=score)
    if "rewards" in merged.columns:
        C.check_bootstrap_memory(merged, bootstrap_resamples, resamples_option)
    out = Path(out_dir)
    with constraints.display_names(display_names or {}):
        if versus is not None:
            from bbrlcore.analysis.aggregate import find_family

            contenders = constraints.with_family(
                summary.filter(pl.col("algorithm") != "optimal"))
            versus = find_family(versus, contenders["family"].unique().to_list(), "versus")
        with _staged_directory(out) as stage:
            _build_into(stage, merged, summary, test_sets, alpha, n_bounds, pdf, correction,
                        bootstrap_resamples, bootstrap_seed, score, versus)
    return out / "index.html"


def _build_into(out: Path, merged: pl.DataFrame, summary: pl.DataFrame,
                test_sets: list | None, alpha: float, n_bounds: int, pdf: bool,
                correction: str, bootstrap_resamples: int, bootstrap_seed: int,
                score: str = "discounted", versus: str | None = None) -> None:
    """:func:`build`'s work, in the (empty, staging) directory ``out``."""
    import jinja2

    # every analysis table once; the sections below only draw them
    an = analyse(merged, summary, score, alpha, correction, bootstrap_resamples,
                 bootstrap_seed)
    summary = an.summary
    fams = constraints.family_order(summary["family"].to_list())
    styles = figures.style_map(fams)
    _write_parquet(summary, out / "data" / "summary.parquet")
    exps = summary["experiment"].unique().to_list()
    # the reference of the normalised scores, and who beats it (never silent)
    _write_parquet(an.above, out / "data" / "above-reference.parquet")
    reference = reference_section(summary, score, an.above)
    curves = curves_section(merged, summary, out, styles, score, bootstrap_resamples,
                            bootstrap_seed, an.curves)
    sections = {e: experiment_section(e, summary, merged, out, alpha, n_bounds, styles,
                                      correction, score, curves, an.above, an.among)
                for e in exps}
    # group by test distribution: accurate and inaccurate side by side
    tests: dict[str, dict[str, Any]] = {}
    for sec in sections.values():
        tests.setdefault(sec["test"], {"test": sec["test"], "accurate": None,
                                       "inaccurate": []})
        if sec["kind"] == "accurate":
            tests[sec["test"]]["accurate"] = sec
        else:
            tests[sec["test"]]["inaccurate"].append(sec)
    order = ["GC", "GDL", "Grid"]
    groups = sorted(tests.values(), key=lambda g: (order.index(g["test"])
                                                   if g["test"] in order else 9, g["test"]))
    ordered = [sec for g in groups for sec in
               ([g["accurate"]] if g["accurate"] else []) + g["inaccurate"]]
    hard = problems_sec = None
    if test_sets:
        from bbrlcore.report.problems import test_order

        # (test sets of one distribution in several settings hold the same MDPs)
        one = {ts.test.short_name: ts for ts in reversed(test_sets)}
        h = pl.concat([hardness.hardness_table(ts, progress=_progress)
                       for ts in reversed(one.values())])
        order = {t: i for i, t in enumerate(test_order(h["test"].unique().to_list()))}
        h = h.sort(pl.col("test").replace_strict(order, return_dtype=pl.Int64), "mdp_index")
        _write_parquet(h, out / "data" / "hardness.parquet")
        stats_rows = []
        for (t,), g in h.group_by(["test"], maintain_order=True):
            v, d = g["optimal_value"], g["diameter"].filter(g["diameter"].is_finite())
            stats_rows.append({
                "test": t, "n": g.height,
                "value": "undefined (γ = 1)" if v.null_count() == len(v) else
                         f"{v.mean():.2f} (median {v.median():.2f}, "
                         f"{v.quantile(0.05):.2f}–{v.quantile(0.95):.2f})",
                "diameter": f"{d.median():.1f} (5–95%: {d.quantile(0.05):.1f}–"
                            f"{d.quantile(0.95):.1f})" if len(d) else "∞",
                "infinite": int((~g["diameter"].is_finite()).sum()),
                "unreachable": f"{g['unreachable_states'].min()}–"
                               f"{g['unreachable_states'].max()}",
            })
        hard = {"rows": stats_rows,
                "fig": _save(figures.hardness_figure(h), out / "figures" / "hardness")}
        from bbrlcore.analysis.exploration import regret_summary

        problems_sec = problems_section(h, summary, out, styles, fams, score,
                                        regret_summary(merged))
    # the paper's numbers are discounted returns: compared on that score whatever the report's
    published = published_section(an.published, merged, out, alpha)
    colosseum = colosseum_section(merged, out)
    agg = aggregates_section(merged, out, styles, alpha, correction, bootstrap_resamples,
                             bootstrap_seed, score, versus, an.aggregates)
    I.write_library(out)
    matrix_families = [f for f in fams if any(f in sec["best_by_family"] for sec in ordered)]
    env = html_environment()
    fwer_over = [sec for sec in ordered if sec["fwer"] > alpha + 1e-12]
    # (experiments of several horizons: each T, or their range; issue 41)
    horizon = (horizon_text(merged["horizon"].drop_nulls().to_list())
               if "horizon" in merged.columns else None)
    chosen = selection_of(summary)
    n_val: int | str | None = None
    if chosen == "validation":  # (experiments of several validation sizes: the range)
        ns = sorted({int(v) for v in summary["validation_n"].drop_nulls().to_list()})
        n_val = (ns[0] if len(ns) == 1 else f"{ns[0]} to {ns[-1]} (by experiment)"
                 if ns else None)
    selection = {"kind": chosen, "text": selection_text(chosen, n_val)}
    grids: dict[str, list[int]] = {}
    for sec in ordered:
        for f, r in sec["best_by_family"].items():
            if r.get("grid") is not None and r["grid"] not in grids.setdefault(f, []):
                grids[f].append(r["grid"])
    grid_of = {f: "–" if not g else (str(g[0]) if len(g) == 1 else f"{min(g)}–{max(g)}")
               for f, g in grids.items()}
    ctx = {"groups": groups, "experiments": ordered, "version": __version__, "alpha": alpha,
           "selection": selection, "grid_of": grid_of,
           "correction": correction, "hardness": hard, "problems": problems_sec,
           "families": fams, "score": score, "score_text": SCORE_TEXT[score],
           "horizon": horizon, "curves": {k: v for k, v in curves.items()
                                           if k not in ("table", "left_out_items")},
           "reference": reference,
           "fwer_over": bool(fwer_over),
           "matrix_families": matrix_families, "aggregates": agg,
           "notes": (__doc__ or "").split("\n\n", 2)[2], "published": published,
           "colosseum": colosseum}
    html = env.get_template("index.html.j2").render(root="", **ctx)
    with atomic_path(out / "index.html") as tmp:
        tmp.write_text(html)
    page = env.get_template("experiment.html.j2")
    for sec in ordered:
        with atomic_path(out / sec["page"]) as tmp:
            tmp.write_text(page.render(root="../", sec=sec, **ctx))
    tex_env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), block_start_string="((*",
        block_end_string="*))", variable_start_string="(((", variable_end_string=")))",
        comment_start_string="((#", comment_end_string="#))", autoescape=False)
    tex_env.filters["tex"] = _tex_escape
    tex = tex_env.get_template("report.tex.j2").render(**ctx)
    with atomic_path(out / "report.tex") as tmp:
        tmp.write_text(tex)
    if pdf and shutil.which("pdflatex"):
        compile_latex(out)


def html_environment() -> jinja2.Environment:
    """The Jinja environment of the report's HTML pages: every value is HTML-escaped
    (the templates are ``*.html.j2``; an algorithm, plugin or distribution name is text,
    never markup); the figures' JSON is inserted with ``|safe``, ``</`` escaped."""
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                              autoescape=jinja2.select_autoescape(["html", "html.j2"]))


def horizon_text(horizons: Iterable[int]) -> dict[str, str] | None:
    """How the report states the horizon T of several experiments: ``{"html": ...,
    "tex": ...}``, one T when they share it, else each T (up to four) or the range, "by
    experiment"; None without any.

    >>> horizon_text([250, 250])["html"]
    'T = 250'
    >>> horizon_text([200000, 100000, 140000])["html"]
    'T = 100000, 140000 or 200000, by experiment'
    >>> horizon_text(range(100, 700, 100))["tex"]
    '$T = 100$ to $600$, by experiment'
    """
    hs = sorted({int(h) for h in horizons})
    if not hs:
        return None
    if len(hs) == 1:
        return {"html": f"T = {hs[0]}", "tex": f"$T = {hs[0]}$"}
    if len(hs) <= 4:
        listed = ", ".join(str(h) for h in hs[:-1]) + f" or {hs[-1]}"
        return {"html": f"T = {listed}, by experiment",
                "tex": f"$T = {listed.replace(' or ', '$ or $')}$, by experiment"}
    return {"html": f"T = {hs[0]} to {hs[-1]}, by experiment",
            "tex": f"$T = {hs[0]}$ to ${hs[-1]}$, by experiment"}


def _stage_base(out: Path) -> str:
    """The staging directories of a report into ``out`` begin with this, then the
    process id: the report's name and this machine's, so that a staging directory left
    by a report killed outright is known for one (:func:`_remove_stale`)."""
    host = socket.gethostname().replace(".", "-") or "host"
    return f".{out.name}.{host}."


def _remove_stale(out: Path) -> None:
    """Remove the staging directories beside ``out`` that reports killed outright
    (SIGKILL, a crash: no handler runs) left behind: those of this machine whose process
    is gone (a staging directory of another machine, or of a running process, stays)."""
    base = _stage_base(out)
    try:
        entries = list(out.parent.iterdir()) if out.parent.is_dir() else []
    except OSError:
        return
    for d in entries:
        name = d.name
        if not (name.startswith(base) and name.endswith(".tmp") and d.is_dir()
                and not d.is_symlink()):
            continue
        pid = name[len(base):].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # gone: its staging directory is a leftover
            shutil.rmtree(d, ignore_errors=True)
        except OSError:  # (another user's running process)
            continue


#: The record of the outermost :func:`_terminate_as_exception` block in force (blocks
#: within it share its handlers and its record).
_TERM: dict[str, int] | None = None


@contextmanager
def _terminate_as_exception() -> Iterator[dict[str, int]]:
    """Within the block, SIGTERM and SIGHUP (a job's time limit, a closed terminal)
    raise ``SystemExit`` in the main thread instead of ending the process at once, so
    that the staging directory is removed; the former handlers are restored after. The
    yielded dict records the signal (``signum``): a library that swallows the
    ``SystemExit`` (polars does, in a function it calls back) turns it into another
    error, or into a ``SystemExit`` whose code is its message, which the caller then
    ends as the signal would have (:func:`ended_as_signal`). Only the first signal
    raises: a later one (a scheduler repeating it) is recorded, and the clean-up it
    would interrupt goes on. A block within another shares the outer one's handlers
    and record; within :func:`_signals_held` the signal is recorded only."""
    import signal
    import threading

    global _TERM
    if _TERM is not None:
        yield _TERM
        return
    state: dict[str, int] = {}
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def stop(signum: int, frame: Any) -> None:
        if "signum" in state:
            return
        state["signum"] = signum
        if "held" not in state:  # (:func:`_signals_held`)
            raise SystemExit(128 + signum)

    saved = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            saved[sig] = signal.signal(sig, stop)
        except (ValueError, OSError):
            pass
    _TERM = state
    try:
        yield state
    finally:
        _TERM = None
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextmanager
def _signals_held(term: dict[str, int]) -> Iterator[None]:
    """Within the block, a SIGTERM or SIGHUP (handled by the
    :func:`_terminate_as_exception` block whose record is ``term``) is recorded but
    raises nothing; one that arrived raises its ``SystemExit`` when the block ends: a
    report being moved into place is moved whole before the signal ends the process."""
    term["held"] = 1
    try:
        yield
    finally:
        del term["held"]
    if "signum" in term:
        raise SystemExit(128 + term["signum"])


@contextmanager
def ended_as_signal() -> Iterator[dict[str, int]]:
    """Within the block, a SIGTERM or SIGHUP ends the block with ``SystemExit(128 +
    signum)`` (143 for SIGTERM: the exit status of a process killed by it, as a shell or
    a scheduler reports it), wherever it lands: whatever exception comes out of the
    block once the signal has arrived (a library's error wrapping it, a ``SystemExit``
    whose code is a message) is replaced by that one, and a signal that some code
    swallowed altogether ends the block as soon as it completes. ``finally`` clauses
    and context managers inside the block run as for any exception. The yielded dict
    records the signal (``signum``), for a block that must not go on once it arrived.
    ``bbrl report`` runs within it, and so does :func:`build`'s staging directory
    (removed, the report not moved into place)."""
    with _terminate_as_exception() as term:
        try:
            yield term
        except BaseException:
            if "signum" in term:
                raise SystemExit(128 + term["signum"]) from None
            raise
        if "signum" in term:  # swallowed on the way, and the work went on to its end
            raise SystemExit(128 + term["signum"])


def _progress(message: str) -> None:
    """Where a long computation of the report announces its estimated time (stderr)."""
    print(message, file=sys.stderr, flush=True)


@contextmanager
def _staged_directory(out: Path) -> Iterator[Path]:
    """Yield an empty staging directory beside ``out``; on success move what was written
    into ``out`` (file by file, each an atomic rename; files already in ``out`` that the
    report does not write stay). On any error, an interruption or a SIGTERM or SIGHUP
    nothing is moved, the staging directory is removed, and so are the directories
    created for it: a report that fails leaves the output directory as it was (or
    absent); a signal that arrives while the finished report is moved waits until it is
    moved whole (:func:`_signals_held`). Staging directories left by reports killed
    outright are removed first (:func:`_remove_stale`)."""
    out = Path(out)
    created: list[Path] = []
    anc = out.parent if str(out.parent) else Path(".")
    while not anc.exists():
        created.append(anc)
        anc = anc.parent
    stage: Path | None = None
    try:
        with ended_as_signal() as term:
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                _remove_stale(out)
                stage = Path(tempfile.mkdtemp(prefix=f"{_stage_base(out)}{os.getpid()}.",
                                              suffix=".tmp",
                                              dir=out.parent))
            except OSError as exc:
                raise BBRLError(f"{out}: cannot write ({exc.strerror or exc})") from None
            yield stage
            if "signum" in term:  # swallowed on the way: what was written may be wrong
                raise SystemExit(128 + term["signum"])
            with _signals_held(term):  # a complete report or none, then the signal
                _move_into(stage, out)
    except BaseException as exc:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for d in created:  # innermost first
            try:
                d.rmdir()
            except OSError:
                break
        if stage is not None:  # name the report's path, not the staging directory's
            if isinstance(exc, BBRLError) and str(stage) in str(exc):
                raise BBRLError(str(exc).replace(str(stage), str(out))) from None
            if isinstance(exc, OSError) and exc.filename and str(stage) in str(exc.filename):
                exc.filename = str(exc.filename).replace(str(stage), str(out))
        raise
    shutil.rmtree(stage, ignore_errors=True)


def _move_into(stage: Path, out: Path) -> None:
    """Move the tree ``stage`` into ``out`` (checked first: no file where a directory
    goes, nor a directory where a file goes)."""
    pairs = [(src, out / src.relative_to(stage)) for src in sorted(stage.rglob("*"))]
    if out.exists() and not out.is_dir():
        raise BBRLError(f"{out}: cannot write the output directory: a file is there")
    for src, dst in pairs:
        if src.is_dir() and dst.exists() and not dst.is_dir():
            raise BBRLError(f"{dst}: cannot write the report's directory: a file is there")
        if not src.is_dir() and dst.is_dir():
            raise BBRLError(f"{dst}: cannot write the report's file: a directory is there")
    try:
        out.mkdir(parents=True, exist_ok=True)
        for src, dst in pairs:
            if src.is_dir():
                dst.mkdir(exist_ok=True)
            else:
                os.replace(src, dst)
    except OSError as exc:
        raise BBRLError(f"{out}: cannot write ({exc.strerror or exc})") from None


def compile_latex(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
        cwd=out, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\~{}", "^": r"\^{}", "µ": r"$\mu$",
        "–": "--", "≈": r"$\approx$", "∞": r"$\infty$", "·": r"$\cdot$", "√": r"$\surd$",
        "α": r"$\alpha$", "±": r"$\pm$", "γ": r"$\gamma$", "σ": r"$\sigma$", "→": r"$\to$",
        "ε": r"$\varepsilon$", "δ": r"$\delta$", "β": r"$\beta$", "τ": r"$\tau$",
        "−": r"$-$", "ë": r"\"e", "§": r"\S{}", "²": r"$^2$"}


def _tex_escape(s: Any) -> str:
    return "".join(_TEX.get(c, c) for c in str(s))
