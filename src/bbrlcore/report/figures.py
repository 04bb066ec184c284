"""The report's figures (matplotlib): score against offline time, score against online time
per decision, and the time-constraint map. Each function takes the tables of
:mod:`bbrlcore.analysis.constraints` and returns a figure; the tables are saved beside them.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

#: What each score is, as the figures' axes say it (:data:`score_label`).
SCORE_NAMES = {"discounted": "discounted return", "undiscounted": "sum of rewards over T"}


def score_label(what: str, score: str) -> str:
    """An axis title naming the score the figure shows: ``what`` followed by the score.

    >>> score_label("normalised score", "undiscounted")
    'normalised score (sum of rewards over T)'
    """
    return f"{what} ({SCORE_NAMES.get(score, score)})"


def short_name(family: str, limit: int = 10) -> str:
    """An algorithm's name short enough for a cell of the time-constraint map: the compat
    variant as ``NAME-c``, names longer than ``limit`` characters cut with an ellipsis.

    >>> short_name("BEB (compat)"), short_name("e-Greedy"), short_name("PM + count bonus")
    ('BEB-c', 'e-Greedy', 'PM + coun…')
    """
    base = family[:-len(" (compat)")] if family.endswith(" (compat)") else family
    suffix = "-c" if base != family else ""
    if len(base) + len(suffix) > limit:
        base = base[:max(1, limit - len(suffix) - 1)] + "…"
    return base + suffix


_COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
            "#8c8c8c", "#ccb974", "#64b5cd", "#1b9e77", "#d95f02", "#7570b3"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p", "d"]


def style_map(families: list[str]) -> dict[str, tuple[str, str, bool]]:
    """A stable (colour, marker, filled) per family; compat variants share their
    algorithm's colour and marker, drawn hollow. Any number of algorithms (built-ins and
    plugins) get distinct (colour, marker) pairs: the colour cycles through the palette,
    the marker shifts by one at each turn of it (up to 13 x 13 distinct pairs)."""
    bases = []
    for f in families:
        b = f.replace(" (compat)", "")
        if b not in bases:
            bases.append(b)
    out = {}
    for f in families:
        b = f.replace(" (compat)", "")
        k = bases.index(b)
        out[f] = (_COLOURS[k % len(_COLOURS)],
                  _MARKERS[(k + k // len(_COLOURS)) % len(_MARKERS)],
                  not f.endswith("(compat)"))
    return out


def _zero_floor(values: np.ndarray) -> float:
    """Where to draw times of (near) zero on a log axis: a decade below the smallest
    positive time."""
    pos = values[values > 0]
    return float(pos.min()) / 10 if pos.size else 1e-6


def time_vs_score(
    scores: pl.DataFrame, time_col: str, xlabel: str, title: str,
    styles: dict[str, tuple[str, str, bool]],
    ylabel: str = "mean discounted return (95% interval)",
) -> tuple[Figure, pl.DataFrame]:
    """Scatter of every agent: x = a time (log axis), y = mean score with its 95%
    interval. Agents with zero time are drawn at a floor marked "≈0"."""
    t = scores[time_col].to_numpy().astype(float)
    floor = _zero_floor(t)
    xs = np.where(t > floor, t, floor)
    data = scores.select(["family", "agent", "mean", "ci_low", "ci_high", time_col]).with_columns(
        pl.Series("x_plotted", xs))
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for fam in [f for f in styles if f in set(scores["family"])]:
        d = data.filter(pl.col("family") == fam)
        col, mk, filled = styles[fam]
        y = d["mean"].to_numpy()
        err = np.vstack([y - d["ci_low"].to_numpy(), d["ci_high"].to_numpy() - y])
        ax.errorbar(d["x_plotted"].to_numpy(), y, yerr=err, fmt=mk, color=col,
                    mfc=col if filled else "white", mec=col, ms=6, capsize=2, lw=0.8,
                    label=f"{fam} ({len(d)})", alpha=0.9)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if (t <= floor).any():
        # agents with (near) zero time sit at the floor, on a tick of their own
        ax.axvline(floor * 2.5, color="0.7", lw=0.6, ls=":")
        lo, hi = ax.get_xlim()
        ticks = [v for v in ax.get_xticks() if floor * 8 <= v <= hi]
        ax.set_xticks([floor, *ticks])
        ax.set_xticklabels(["≈0"] + [_fmt_time(v) for v in ticks])
        ax.set_xlim(floor / 2, hi)
    else:
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: _fmt_time(v)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", lw=0.4, alpha=0.5)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig, data


def _fmt_time(s: float) -> str:
    if s <= 0:
        return "0"
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def map_cells(cmap: pl.DataFrame, styles: dict[str, Any]) -> dict[tuple[int, int], list[str]]:
    """(offline index, online index) -> the families among the best in that cell, in the
    order of ``styles`` (then by name): what the map's cells say."""
    order = {f: i for i, f in enumerate(styles)}
    cells: dict[tuple[int, int], list[str]] = {}
    for r in cmap.filter(pl.col("among_best").fill_null(False)).iter_rows(named=True):
        cells.setdefault((r["offline_index"], r["online_index"]), []).append(r["family"])
    return {k: sorted(set(v), key=lambda f: (order.get(f, len(order)), f))
            for k, v in cells.items()}


def cell_lines(names: list[str], per_line: int) -> list[str]:
    """Short names (:func:`short_name`) of a cell, ``per_line`` to a line.

    >>> cell_lines(["BEB", "BEB (compat)", "Random"], 2)
    ['BEB, BEB-c', 'Random']
    """
    short = [short_name(n) for n in names]
    return [", ".join(short[i:i + per_line]) for i in range(0, len(short), per_line)]


def constraint_map_figure(
    cmap: pl.DataFrame, title: str, styles: dict[str, tuple[str, str, bool]],
    score: str = "discounted",
) -> Figure:
    """One cell per (online bound, offline bound); inside, the (short) names of the
    algorithms among the best with agents within both bounds, so that the figure reads
    without hovering (PNG, PDF). Empty cells (no agent within the bounds) are grey and
    say "none"; cells whose algorithms are all significantly worse than the best say
    nothing."""
    off = cmap.select("offline_index", "offline_bound_s").unique().sort("offline_index")
    on = cmap.select("online_index", "online_bound_s").unique().sort("online_index")
    n_off, n_on = len(off), len(on)
    cells = map_cells(cmap, styles)
    most = max((len(v) for v in cells.values()), default=1)
    per_line = max(1, math.ceil(math.sqrt(most)))
    lines = {k: cell_lines(v, per_line) for k, v in cells.items()}
    widest = max((len(ln) for v in lines.values() for ln in v), default=4)
    n_lines = max((len(v) for v in lines.values()), default=1)
    # a cell wide and tall enough for its names at 6 pt (about 0.06 inch a character)
    cw, ch = max(0.75, 0.062 * widest + 0.15), max(0.45, 0.12 * n_lines + 0.15)
    fig, ax = plt.subplots(figsize=(cw * n_on + 2.0, ch * n_off + 1.6), dpi=110)
    empty = {(r["offline_index"], r["online_index"]) for r in cmap.iter_rows(named=True)
             if r["family"] is None}
    for i in range(n_off):
        for j in range(n_on):
            gap = (i, j) in empty
            ax.add_patch(plt.Rectangle((j, i), 1, 1, fc="0.93" if gap else "white",
                                       ec="0.75", lw=0.5))
            if gap:
                ax.text(j + 0.5, i + 0.5, "none", ha="center", va="center", fontsize=6,
                        color="0.6")
            elif (i, j) in lines:
                ax.text(j + 0.5, i + 0.5, "\n".join(lines[(i, j)]), ha="center",
                        va="center", fontsize=6, linespacing=1.15)
    ax.set_xlim(0, n_on)
    ax.set_ylim(0, n_off)
    ax.set_xticks(np.arange(n_on) + 0.5)
    ax.set_xticklabels([_fmt_time(v) for v in on["online_bound_s"]], rotation=45, ha="right",
                       fontsize=7)
    ax.set_yticks(np.arange(n_off) + 0.5)
    ax.set_yticklabels([_fmt_time(v) for v in off["offline_bound_s"]], fontsize=7)
    ax.set_xlabel("online time bound (per decision)")
    ax.set_ylabel("offline time bound")
    ax.set_title(f"{title}: among the best by the {SCORE_NAMES.get(score, score)}",
                 fontsize=10)
    fig.tight_layout()
    return fig


def hardness_figure(h: pl.DataFrame) -> Figure:
    """Spread of the optimal value and of the diameter over each test set's MDPs, the test
    sets in reading order (:func:`bbrlcore.report.problems.test_order`: a family's sizes
    by number), one box each; the figure as wide as its names need, none overlapping."""
    from bbrlcore.report.problems import test_order

    tests = test_order(h["test"].unique(maintain_order=True).to_list())
    n = len(tests)
    longest = max((len(t) for t in tests), default=4)
    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 2 * (1.2 + 0.32 * n)),
                                            3.0 + 0.055 * longest), dpi=110)
    vals = [h.filter(pl.col("test") == t)["optimal_value"].to_numpy() for t in tests]
    axes[0].boxplot(vals)
    axes[0].set_ylabel("optimal value from the initial state")
    diam = [h.filter(pl.col("test") == t)["diameter"].to_numpy() for t in tests]
    diam = [d[np.isfinite(d)] for d in diam]
    axes[1].boxplot(diam)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("diameter (expected steps)")
    # upright names unless they could touch: then vertical (0.32 inch a box is more than
    # a line of 7 pt text, so vertical names never overlap)
    upright = n <= 3 and longest <= 8
    for ax in axes:
        ax.set_xticks(np.arange(1, n + 1))
        ax.set_xticklabels(tests, rotation=0 if upright else 90, fontsize=7)
        ax.grid(True, axis="y", lw=0.4, alpha=0.5)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------
# Problems and hardness (tables of bbrlcore.report.problems)


def problem_colours(problems: list[str]) -> dict[str, str]:
    """A colour per problem, in the order given."""
    return {p: _COLOURS[k % len(_COLOURS)] for k, p in enumerate(problems)}


def hardness_map_figure(hmap: pl.DataFrame) -> Figure:
    """Every test set by its median value norm (x) and median diameter (y), with the
    5–95 % range over its MDPs; one colour per problem, each point labelled."""
    colours = problem_colours(hmap["problem"].unique(maintain_order=True).to_list())
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for problem, col in colours.items():
        g = hmap.filter(pl.col("problem") == problem)
        x, y = g["value_norm"].to_numpy(), g["diameter"].to_numpy()
        xerr = np.vstack([x - g["value_norm_q05"].to_numpy(), g["value_norm_q95"].to_numpy() - x])
        yerr = np.vstack([y - g["diameter_q05"].to_numpy(), g["diameter_q95"].to_numpy() - y])
        fin = np.isfinite(x) & np.isfinite(y)
        ax.errorbar(x[fin], y[fin], xerr=np.where(np.isfinite(xerr), xerr, 0)[:, fin],
                    yerr=np.where(np.isfinite(yerr), yerr, 0)[:, fin], fmt="o", color=col,
                    ms=5, lw=0.7, capsize=0, label=problem, alpha=0.9)
        for t, xi, yi in zip(g["test"].to_list(), x, y, strict=True):
            if np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(t, (xi, yi), fontsize=6, color=col, xytext=(3, 3),
                            textcoords="offset points")
    ax.set_xlabel("environmental value norm (median over the MDPs)")
    ax.set_ylabel("diameter (median over the MDPs)")
    ax.grid(True, lw=0.4, alpha=0.5)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def _normalised_err(g: pl.DataFrame) -> np.ndarray:
    """(2, n) error bars of the normalised scores of ``g`` (its ``normalised_low`` and
    ``normalised_high``: the 95% interval; 0 where there is none)."""
    y = g["normalised_score"].to_numpy().astype(float)
    lo = g["normalised_low"].fill_null(float("nan")).to_numpy().astype(float)
    hi = g["normalised_high"].fill_null(float("nan")).to_numpy().astype(float)
    err = np.vstack([y - lo, hi - y])
    return np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)


#: The y-axis of the figures of Colosseum's normalised regret (it names the score: the
#: undiscounted regret against the optimal policy's exact value).
REGRET_LABEL = "Colosseum's normalised regret\nper step (episodic: per episode)"


def score_vs_hardness_figure(scores: pl.DataFrame,
                             styles: dict[str, tuple[str, str, bool]],
                             score: str = "discounted", ylabel: str | None = None
                             ) -> Figure:
    """Each algorithm's normalised score (best agent per experiment) with its 95%
    interval against the diameter, the value norm and the sum of reciprocal gaps of the
    test set, one panel each; ``ylabel``: what ``normalised_score`` holds when it is not
    the score (:data:`REGRET_LABEL`: the regret view of
    :func:`bbrlcore.report.problems.regret_view`)."""
    from bbrlcore.report.problems import MEASURES

    s = scores.filter(pl.col("normalised_score").is_not_null())
    fig, axes = plt.subplots(1, len(MEASURES), figsize=(11, 3.8), dpi=110, sharey=True)
    for ax, (m, label) in zip(axes, MEASURES.items(), strict=True):
        for fam in [f for f in styles if f in set(s["family"])]:
            g = s.filter(pl.col("family") == fam)
            col, mk, filled = styles[fam]
            ax.errorbar(g[m].to_numpy(), g["normalised_score"].to_numpy(),
                        yerr=_normalised_err(g), fmt=mk, color=col,
                        mfc=col if filled else "white", mec=col, ms=5, lw=0.7, capsize=1.5,
                        alpha=0.85, label=fam)
        ax.set_xlabel(label)
        xs = s[m].to_numpy().astype(float)
        if m == "suboptimality_gaps" and xs.size and (xs[np.isfinite(xs)] > 0).all():
            ax.set_xscale("log")  # sums of reciprocals span decades
        ax.grid(True, lw=0.4, alpha=0.5)
    axes[0].set_ylabel((ylabel or score_label("normalised score", score))
                       + ", 95% interval", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False)
    fig.tight_layout()
    return fig


def score_vs_size_figure(ladder: pl.DataFrame,
                         styles: dict[str, tuple[str, str, bool]],
                         score: str = "discounted", ylabel: str | None = None) -> Figure:
    """One panel per ladder: each algorithm's normalised score with its 95% interval
    against the size (``ylabel``: as :func:`score_vs_hardness_figure`)."""
    from bbrlcore.report.problems import ladders

    names = ladders(ladder)
    cols = 2 if len(names) > 1 else 1
    rows = max(1, -(-len(names) // cols))
    # one y-range for every ladder: normalised scores compare across problems
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols + 2, 2.8 * rows), dpi=110,
                             squeeze=False, sharey=True)
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        g = ladder.filter(pl.col("ladder") == name)
        fams = [f for f in styles if f in set(g["family"])]
        # the algorithms side by side at each size (dodged), so that their intervals show
        width = float(g["size"].max() - g["size"].min()) or 1.0
        for k, fam in enumerate(fams):
            h = g.filter(pl.col("family") == fam).sort("size")
            col, mk, filled = styles[fam]
            y = h["normalised_score"].to_numpy().astype(float)
            dodge = (k - (len(fams) - 1) / 2) * 0.012 * width
            ax.errorbar(h["size"].to_numpy() + dodge, y, yerr=_normalised_err(h),
                        fmt="-" + mk if filled else "--" + mk, color=col,
                        mfc=col if filled else "white", mec=col, ms=4, lw=1, capsize=1.5,
                        label=fam)
        ax.set_title(name, fontsize=8)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("size", fontsize=8)
        ax.set_ylabel(ylabel or score_label("normalised score", score), fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(True, lw=0.4, alpha=0.5)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, labels = {}, []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[lab] for lab in labels], labels, fontsize=7, loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------
# Learning curves (tables of bbrlcore.analysis.curves) and one algorithm against the others


def _legend_right(fig: Figure, axes: list) -> None:
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), fontsize=7, loc="center left",
               bbox_to_anchor=(1.0, 0.5), frameon=False)


def learning_curves_figure(table: pl.DataFrame, panels: list[tuple[str, str]],
                           styles: dict[str, tuple[str, str, bool]], score: str,
                           views: tuple[str, ...] = ("cumulative", "normalised", "shortfall"),
                           ) -> Figure:
    """Learning curves with their bands (the ``curves`` table): one experiment of
    ``panels`` gives one row of the ``views``; several (a ladder) give a column per
    experiment and a row per view (small multiples), each row on one y-range so that the
    sizes compare at a glance. The normalised score starts where it is defined (Optimal
    has gained a tenth of its final lead over Random:
    :data:`bbrlcore.analysis.curves.MIN_GAIN_FRACTION`), so the noise of the first steps
    does not set the scale; the axes name the score."""
    from bbrlcore.report.interactive import curve_labels, even_points

    labels = curve_labels(score, short=True)
    table = even_points(table)
    n = len(panels)
    single = n == 1
    nrows, ncols = (1, len(views)) if single else (len(views), n)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols + 1.8, 2.7 * nrows + 0.3),
                             dpi=110, squeeze=False, sharey=False if single else "row")
    for k, (exp, name) in enumerate(panels):
        g = table.filter(pl.col("experiment") == exp)
        fams = [f for f in styles if f in set(g["family"])]
        fams += sorted(set(g["family"]) - set(fams))
        for j, v in enumerate(views):
            ax = axes[0][j] if single else axes[j][k]
            for fam in fams:
                h = g.filter(pl.col("family") == fam).sort("t")
                col = styles.get(fam, ("#333",))[0]
                t = h["t"].to_numpy()
                y = h[v].to_numpy().astype(float)
                lo = h[f"{v}_low"].to_numpy().astype(float)
                hi = h[f"{v}_high"].to_numpy().astype(float)
                ax.fill_between(t, lo, hi, color=col, alpha=0.15, lw=0)
                ax.plot(t, y, color=col, lw=1.2, ls="--" if fam.endswith("(compat)") else "-",
                        label=fam)
            if single or j == 0:
                ax.set_title(labels[v] if single else name, fontsize=9 if single else 8)
            if single or k == 0:
                ax.set_ylabel(labels[v], fontsize=7)
            if single or j == len(views) - 1:
                ax.set_xlabel("t (steps)", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, lw=0.4, alpha=0.5)
    _legend_right(fig, list(axes.flat))
    fig.tight_layout()
    return fig


def _x_of(h: pl.DataFrame) -> tuple[np.ndarray, str]:
    """The time axis of a curve: its episodes (episodic) or its steps."""
    if "episodes" in h.columns and h["episodes"].null_count() == 0 and h.height:
        return h["episodes"].to_numpy(), "episodes"
    return h["t"].to_numpy(), "t (steps)"


def regret_curves_figure(table: pl.DataFrame, panels: list[tuple[str, str]],
                         styles: dict[str, tuple[str, str, bool]]) -> Figure:
    """Colosseum's normalised cumulative regret against time (log axes), one panel per
    experiment of ``panels`` side by side (a ladder's sizes) on one y-range, each family
    with its paired bootstrap band; Random's is the uniformly random policy's, drawn
    beside the others as Colosseum does; Optimal (about 0) is left out. The y axis is
    logarithmic while every value drawn (bands included) is positive; with a value of 0
    or below (an agent that does better than the optimal policy's expected reward for a
    while: a realised regret below 0) it is symmetric-logarithmic, linear within ±1
    (:data:`bbrlcore.report.interactive.SYMLOG_LINEAR`), so that signed values show as
    they are."""
    from bbrlcore.report.interactive import SYMLOG_LINEAR, regret_is_signed

    n = len(panels)
    signed = regret_is_signed(table, panels)
    fig, axes = plt.subplots(1, n, figsize=(3.4 * n + 1.8, 3.1), dpi=110, squeeze=False,
                             sharey=True)
    for k, (exp, name) in enumerate(panels):
        ax = axes[0][k]
        g = table.filter((pl.col("experiment") == exp) & (pl.col("family") != "Optimal")
                         & pl.col("normalised_regret").is_not_null())
        fams = [f for f in styles if f in set(g["family"])]
        xl = "t (steps)"
        for fam in fams:
            h = g.filter(pl.col("family") == fam).sort("t")
            col = styles.get(fam, ("#333",))[0]
            x, xl = _x_of(h)
            y = h["normalised_regret"].to_numpy().astype(float)
            floor = max(1e-3, float(np.nanmin(np.where(y > 0, y, np.inf))) / 10
                        if (y > 0).any() else 1e-3)
            if signed:  # (symmetric-log axis: every value as it is)
                floor = -np.inf
            lo = np.maximum(h["normalised_regret_low"].to_numpy().astype(float), floor)
            hi = np.maximum(h["normalised_regret_high"].to_numpy().astype(float), floor)
            ax.fill_between(x, lo, hi, color=col, alpha=0.15, lw=0)
            ax.plot(x, np.maximum(y, floor), color=col, lw=1.2,
                    ls="--" if fam.endswith("(compat)") else "-", label=fam)
        ax.set_xscale("log")
        if signed:
            ax.set_yscale("symlog", linthresh=SYMLOG_LINEAR)
            ax.axhline(0.0, color="0.5", lw=0.6)
        else:
            ax.set_yscale("log")
        ax.set_title(name, fontsize=8)
        ax.set_xlabel(xl, fontsize=8)
        if k == 0:
            ax.set_ylabel("normalised cumulative regret\n(Colosseum's: Σ regret / "
                          "(optimal − worst))"
                          + (f"\nsymlog: linear within ±{SYMLOG_LINEAR:g}" if signed else ""),
                          fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", lw=0.3, alpha=0.4)
    _legend_right(fig, list(axes.flat))
    fig.tight_layout()
    return fig


def episodes_to_learn_figure(ds: pl.DataFrame,
                             styles: dict[str, tuple[str, str, bool]]) -> Figure:
    """bbrl's "episodes to learn against size" (the form of bsuite's ``deep_sea``
    ``plot_scaling_log``, of bbrl's DeepSea score) for one DeepSea ladder (rows of the
    ``deepsea`` table of :func:`bbrlcore.analysis.exploration.bbrl_deepsea_scores`):
    each algorithm's first episode
    at which the average regret falls below 0.9, with its bootstrap interval, against
    the size, log axes; an algorithm that does not learn within the interaction is drawn
    at its last episode with a cross; dithering's 2^N episodes dashed."""
    fig, ax = plt.subplots(figsize=(6.8, 4.0), dpi=110)
    sizes = np.array(sorted(set(ds["size"].to_list())), dtype=float)
    fams = [f for f in styles if f in set(ds["family"])]
    width = float(sizes.max() / sizes.min()) if sizes.size else 1.0
    for k, fam in enumerate(fams):
        h = ds.filter(pl.col("family") == fam).sort("size")
        col, mk, filled = styles[fam]
        dodge = width ** ((k - (len(fams) - 1) / 2) * 0.01)
        x = h["size"].to_numpy().astype(float) * dodge
        learned = h["learning_episode"].is_not_null().to_numpy()
        y = np.where(learned, h["learning_episode"].fill_null(0).to_numpy(),
                     h["episodes"].to_numpy()).astype(float)
        lo = h["learning_low"].fill_null(np.nan).to_numpy().astype(float)
        hi = h["learning_high"].fill_null(np.nan).to_numpy().astype(float)
        hi = np.where(np.isfinite(hi), hi, h["episodes"].to_numpy())
        err = np.vstack([np.where(np.isfinite(lo), y - lo, 0.0), np.maximum(hi - y, 0.0)])
        ax.errorbar(x[learned], y[learned], yerr=err[:, learned], fmt="-" + mk, color=col,
                    mfc=col if filled else "white", mec=col, ms=5, lw=1, capsize=1.5,
                    label=fam)
        if (~learned).any():
            ax.plot(x[~learned], y[~learned], "x", color=col, ms=6, mew=1.5,
                    label=None if learned.any() else fam)
    if sizes.size:
        xs = np.linspace(sizes.min(), sizes.max(), 50)
        top = float(ds["episodes"].max()) * 2
        ax.plot(xs, np.minimum(2.0 ** xs, top), "--", color="black", alpha=0.4, lw=1.5,
                label="2^N (dithering)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if sizes.size:
        ax.set_ylim(0.8, float(ds["episodes"].max()) * 2)
    if sizes.size:
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("DeepSea size N (log scale)")
    ax.set_ylabel("episodes until average regret < 0.9\n(bbrl's DeepSea score; × : not "
                  "within the interaction)", fontsize=8)
    ax.grid(True, which="both", lw=0.3, alpha=0.4)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def iqm_curves_figure(agg: pl.DataFrame, styles: dict[str, tuple[str, str, bool]],
                      score: str) -> Figure:
    """IQM of the normalised score against t across experiments, with its stratified
    bootstrap band (the ``aggregate`` table of learning curves)."""
    acc = "discounted" if score == "discounted" else "sum of rewards"
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=110)
    fams = [f for f in styles if f in set(agg["family"])]
    fams += sorted(set(agg["family"]) - set(fams))
    for fam in fams:
        g = agg.filter(pl.col("family") == fam).sort("t")
        col, mk, filled = styles.get(fam, ("#333", "o", True))
        t = g["t"].to_numpy()
        ax.fill_between(t, g["iqm_low"].to_numpy(), g["iqm_high"].to_numpy(), color=col,
                        alpha=0.15, lw=0)
        ax.plot(t, g["iqm"].to_numpy(), "-" + mk if filled else "--" + mk, color=col,
                mfc=col if filled else "white", mec=col, ms=3, lw=1.2, label=fam)
    ax.set_xlabel("t (steps)")
    ax.set_ylabel(f"IQM of the normalised score ({acc})")
    ax.grid(True, lw=0.4, alpha=0.5)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def improvement_matrix_figure(table: pl.DataFrame, order: list[str],
                              score: str = "discounted") -> Figure:
    """P(X > Y) as a matrix (row X, column Y, the diagonal empty), each cell labelled."""
    n = len(order)
    cell = {(r["family_x"], r["family_y"]): r["probability"]
            for r in table.iter_rows(named=True)}
    z = np.full((n, n), np.nan)
    for i, x in enumerate(order):
        for j, y in enumerate(order):
            if (x, y) in cell:
                z[i, j] = cell[(x, y)]
    side = 1.2 + 0.42 * n
    fig, ax = plt.subplots(figsize=(side + 1.6, side), dpi=110)
    im = ax.imshow(np.ma.masked_invalid(z), cmap="RdBu", vmin=0, vmax=1)
    for i in range(n):
        for j in range(n):
            if np.isfinite(z[i, j]):
                ax.text(j, i, f"{z[i, j]:.2f}", ha="center", va="center",
                        fontsize=6 if n > 10 else 7,
                        color="white" if abs(z[i, j] - 0.5) > 0.35 else "black")
    ax.set_xticks(range(n))
    ax.set_xticklabels(order, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(n))
    ax.set_yticklabels(order, fontsize=7)
    ax.set_xlabel("Y")
    ax.set_ylabel("X")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04,
                 label=score_label("P(X > Y)", score))
    fig.tight_layout()
    return fig


def versus_figure(v: pl.DataFrame, score: str = "discounted") -> Figure:
    """One algorithm against every other (the table of
    :func:`bbrlcore.analysis.aggregate.versus`): P(NAME > Y) with its interval per row,
    coloured by the verdict, the paired version hollow below it."""
    from bbrlcore.report.interactive import VERDICT_COLOURS

    name = v["family"][0] if v.height else ""
    n = v.height
    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.34 * max(n, 1)), dpi=110)
    y = np.arange(n)
    p = v["probability"].to_numpy()
    err = np.vstack([p - v["ci_low"].to_numpy(), v["ci_high"].to_numpy() - p])
    pp = v["paired_probability"].to_numpy()
    perr = np.vstack([pp - v["paired_ci_low"].to_numpy(), v["paired_ci_high"].to_numpy() - pp])
    ax.errorbar(pp, y + 0.25, xerr=perr, fmt="D", color="0.5", mfc="white", ms=4, lw=0.8,
                capsize=1.5, label="paired (same test MDP)")
    for i, (x, verdict) in enumerate(zip(p, v["verdict"], strict=True)):
        ax.errorbar([x], [i], xerr=err[:, i:i + 1], fmt="o", color="0.25",
                    mfc=VERDICT_COLOURS[verdict], mec="0.2", ms=6, lw=1.1, capsize=2,
                    label=f"P({name} > Y)" if i == 0 else None)
    ax.axvline(0.5, color="0.5", ls=":", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(v["opponent"].to_list(), fontsize=8)
    ax.set_ylim(n - 0.5, -0.6)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(f"P({name} > Y): probability that {name} beats Y (0.5: no difference; "
                  f"{SCORE_NAMES.get(score, score)})", fontsize=8)
    ax.grid(True, axis="x", lw=0.4, alpha=0.5)
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2,
              frameon=False)
    fig.tight_layout()
    return fig
