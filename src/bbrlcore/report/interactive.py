"""The HTML report's interactive figures: plotly.js specifications built from the tables.

Each function takes a table of :mod:`bbrlcore.analysis.constraints` or
:mod:`bbrlcore.analysis.aggregate` and returns a plain ``{"data": [...], "layout": {...}}`` figure
(JSON-able; the page draws it with ``Plotly.newPlot``). Hovering a point shows the agent
id, its parameters, its score with the 95% interval and its offline and online times;
clicking a family in the legend hides or shows it; the score-against-time figures have
buttons switching the time axis between log and linear.

**Library.** plotly.js, from the ``plotly`` Python package (MIT licence, released every
few weeks), which ships the minified library: :func:`write_library` copies it once into
the report directory and every page loads it by a relative path, so the report opens from
disk with no network. It was chosen over Bokeh (no built-in log/linear switch) and
Vega-Lite (its standalone HTML export needs another converter package): the library is
one file of about 4.6 MB, written once per report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

#: matplotlib marker -> plotly symbol (the static figures' markers, kept alike)
SYMBOLS = {"o": "circle", "s": "square", "^": "triangle-up", "D": "diamond",
           "v": "triangle-down", "P": "cross", "X": "x", "<": "triangle-left",
           ">": "triangle-right", "h": "hexagon", "*": "star", "p": "pentagon",
           "d": "diamond-tall"}

LIBRARY = "plotly.min.js"

_HOVER = ("<b>%{customdata[0]}</b><br>%{customdata[1]}<br>score %{y:.3f} "
          "[%{customdata[2]:.3f}, %{customdata[3]:.3f}]<br>offline %{customdata[4]}"
          "<br>online / decision %{customdata[5]}<extra>%{fullData.name}</extra>")


def write_library(out: Path) -> Path:
    """Copy plotly.js into ``out`` (once) and return its path."""
    from plotly.offline import get_plotlyjs

    from bbrlcore.formats.artefacts import atomic_path

    path = Path(out) / LIBRARY
    js = get_plotlyjs()
    if not path.exists() or path.stat().st_size != len(js.encode()):
        with atomic_path(path) as tmp:
            tmp.write_text(js)
    return path


def _fmt(s: float | None) -> str:
    from bbrlcore.report.figures import _fmt_time

    if s is None or not math.isfinite(s):
        return "–"
    return _fmt_time(float(s))


def _marker(style: tuple[str, str, bool]) -> dict[str, Any]:
    colour, marker, filled = style
    symbol = SYMBOLS.get(marker, "circle") + ("" if filled else "-open")
    return {"color": colour, "symbol": symbol, "size": 8,
            "line": {"color": colour, "width": 1.5}}


def _axis_buttons(axis: str) -> list[dict[str, Any]]:
    return [{"type": "buttons", "direction": "right", "x": 1.0, "xanchor": "right",
             "y": 1.02, "yanchor": "bottom", "showactive": True, "active": 0,
             "pad": {"r": 0, "t": 0}, "font": {"size": 11},
             "buttons": [
                 {"label": "log time", "method": "relayout", "args": [{f"{axis}.type": "log"}]},
                 {"label": "linear time", "method": "relayout",
                  "args": [{f"{axis}.type": "linear"}]}]}]


def time_vs_score(data: pl.DataFrame, xlabel: str, title: str,
                  styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """Every agent: x = a time (``x_plotted``: zero times at the "≈0" floor), y = mean
    with its interval, one trace per family (the table of
    :func:`bbrlcore.report.figures.time_vs_score`)."""
    traces = []
    for fam in styles:
        g = data.filter(pl.col("family") == fam)
        if g.is_empty():
            continue
        custom = [[r["agent"], _params(r["agent"]), r["ci_low"], r["ci_high"],
                   _fmt(r.get("offline_time_s")), _fmt(r.get("online_time_per_decision_s"))]
                  for r in g.iter_rows(named=True)]
        mean = g["mean"].to_list()
        traces.append({
            "type": "scatter", "mode": "markers", "name": fam,
            "x": g["x_plotted"].to_list(), "y": mean,
            "error_y": {"type": "data", "symmetric": False,
                        "array": [h - m for h, m in zip(g["ci_high"], mean, strict=True)],
                        "arrayminus": [m - lo for lo, m in zip(g["ci_low"], mean, strict=True)],
                        "thickness": 1, "width": 0, "color": styles[fam][0]},
            "marker": _marker(styles[fam]), "customdata": custom, "hovertemplate": _HOVER,
        })
    layout = {"title": {"text": title, "font": {"size": 14}, "x": 0.0, "xanchor": "left",
                        "y": 0.98},
              "xaxis": {"type": "log", "title": {"text": xlabel}},
              "yaxis": {"title": {"text": "score (mean discounted return)"}},
              "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
              "updatemenus": _axis_buttons("xaxis"), "margin": {"t": 70, "r": 10},
              "height": 460}
    return {"data": traces, "layout": layout}


def _params(agent: str) -> str:
    parts = [p for p in agent.split("__")[1:] if p != "compat=true"]
    return ", ".join(parts) or "no parameters"


#: The hover text of a map's cell: no agent fits; the families among the best; the families
#: within the bounds whose best agent is significantly worse than the reference.
MAP_EMPTY = "no agent within these bounds"
MAP_BEST = "among the best: "
MAP_WORSE = "within the bounds, not among the best: "


def constraint_map(cmap: pl.DataFrame, title: str,
                   styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """The time-constraint map as a grid, drawn from the table of
    :func:`bbrlcore.analysis.constraints.constraint_map` and nothing else.

    A cell's colour (``z``) counts the families whose ``among_best`` is true in that cell
    (the static figure's markers); hovering lists them, then the families whose best agent
    fits the bounds but is significantly worse than the reference. A cell where no agent
    fits (``family`` null) is a gap: ``z`` null, "no agent within these bounds".
    """
    best: dict[tuple[int, int], list[str]] = {}
    worse: dict[tuple[int, int], list[str]] = {}
    xb: dict[int, float] = {}
    yb: dict[int, float] = {}
    for r in cmap.iter_rows(named=True):
        key = (r["online_index"], r["offline_index"])
        best.setdefault(key, [])
        worse.setdefault(key, [])
        xb[r["online_index"]] = r["online_bound_s"]
        yb[r["offline_index"]] = r["offline_bound_s"]
        if r.get("family") is not None:
            (best if r["among_best"] else worse)[key].append(r["family"])
    xs, ys = sorted(xb), sorted(yb)
    z, text = [], []
    for j in ys:
        zr, tr = [], []
        for i in xs:
            b, w = best.get((i, j), []), worse.get((i, j), [])
            if not b and not w:
                zr.append(None)
                tr.append(MAP_EMPTY)
                continue
            zr.append(len(b))
            tr.append(MAP_BEST + ", ".join(b)
                      + (f"<br>{MAP_WORSE}" + ", ".join(w) if w else ""))
        z.append(zr)
        text.append(tr)
    return {
        "data": [{"type": "heatmap", "z": z, "text": text,
                  "x": [_fmt(xb[i]) for i in xs], "y": [_fmt(yb[j]) for j in ys],
                  "colorscale": "Blues", "reversescale": True, "zauto": False, "zmin": 0,
                  "zmax": max([v for row in z for v in row if v is not None], default=1),
                  "showscale": True, "hoverongaps": False,
                  "colorbar": {"title": {"text": "among the best"}, "dtick": 1},
                  "hovertemplate": "offline ≤ %{y}, online/decision ≤ %{x}<br>%{text}"
                                   "<extra></extra>"}],
        "layout": {"title": {"text": f"time-constraint map, {title}", "font": {"size": 14}},
                   "xaxis": {"title": {"text": "online time per decision bound"},
                             "type": "category"},
                   "yaxis": {"title": {"text": "offline time bound"}, "type": "category"},
                   "height": 420, "margin": {"t": 50, "r": 10}},
    }


#: The aggregate metrics drawn, with their labels.
METRICS = {"iqm": "IQM", "median": "median", "mean": "mean",
           "optimality_gap": "optimality gap"}


def aggregate_metrics(metrics: pl.DataFrame,
                      styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """Each algorithm's aggregate normalised scores across experiments, one panel per
    metric, with their 95% stratified-bootstrap intervals."""
    traces = []
    fams = metrics["family"].to_list()
    n = len(METRICS)
    for k, (m, label) in enumerate(METRICS.items()):
        axis = "" if k == 0 else str(k + 1)
        for fam in fams:
            r = metrics.filter(pl.col("family") == fam).row(0, named=True)
            v, lo, hi = r[m], r[f"{m}_ci_low"], r[f"{m}_ci_high"]
            traces.append({
                "type": "scatter", "mode": "markers", "name": fam, "legendgroup": fam,
                "showlegend": False, "x": [v], "y": [fam],
                "error_x": {"type": "data", "symmetric": False, "array": [hi - v],
                            "arrayminus": [v - lo], "color": styles.get(fam, ("#333",))[0]},
                "marker": _marker(styles.get(fam, ("#333", "o", True))),
                "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                "hovertemplate": f"<b>{fam}</b><br>{label} %{{x:.3f}} [{lo:.3f}, {hi:.3f}]"
                                 "<extra></extra>"})
    layout: dict[str, Any] = {"height": 110 + 34 * max(len(fams), 3),
                              "margin": {"t": 20, "b": 60,
                                         "l": 20 + 7 * max((len(f) for f in fams), default=8)},
                              "showlegend": False}
    for k, label in enumerate(METRICS.values()):
        axis = "" if k == 0 else str(k + 1)
        lo, hi = k / n + 0.02, (k + 1) / n - 0.02
        layout[f"xaxis{axis}"] = {"domain": [lo, hi], "anchor": f"y{axis}",
                                  "title": {"text": f"{label} (normalised)"}}
        layout[f"yaxis{axis}"] = {"anchor": f"x{axis}", "showticklabels": k == 0,
                                  "autorange": "reversed", "type": "category"}
    return {"data": traces, "layout": layout}


def performance_profiles(profiles: pl.DataFrame,
                         styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """Fraction of (experiment, test MDP) normalised scores above τ, per algorithm, with
    its 95% band."""
    traces = []
    for fam in profiles["family"].unique(maintain_order=True).to_list():
        g = profiles.filter(pl.col("family") == fam).sort("tau")
        colour = styles.get(fam, ("#333",))[0]
        tau = g["tau"].to_list()
        traces.append({"type": "scatter", "mode": "lines", "x": tau + tau[::-1],
                       "y": g["ci_high"].to_list() + g["ci_low"].to_list()[::-1],
                       "fill": "toself", "fillcolor": _rgba(colour, 0.15),
                       "line": {"width": 0}, "legendgroup": fam, "showlegend": False,
                       "hoverinfo": "skip", "name": fam})
        dash = "dash" if fam.endswith("(compat)") else "solid"
        traces.append({"type": "scatter", "mode": "lines", "name": fam, "legendgroup": fam,
                       "x": tau, "y": g["fraction"].to_list(),
                       "line": {"color": colour, "width": 2, "dash": dash},
                       "hovertemplate": f"<b>{fam}</b><br>τ %{{x:.2f}}: %{{y:.3f}}"
                                        "<extra></extra>"})
    return {"data": traces, "layout": {
        "xaxis": {"title": {"text": "normalised score τ (Random = 0, Optimal = 1)"}},
        "yaxis": {"title": {"text": "fraction of runs with score > τ"}, "range": [0, 1.02]},
        "height": 420, "margin": {"t": 30}, "legend": {"itemclick": "toggle"}}}


def improvement(table: pl.DataFrame) -> dict[str, Any]:
    """P(X > Y) for each ordered pair of algorithms with its 95% interval (rliable's
    definition; 0.5 = no difference)."""
    t = table.sort(["family_x", "family_y"])
    labels = [f"{a} > {b}" for a, b in zip(t["family_x"], t["family_y"], strict=True)]
    p = t["probability"].to_list()
    return {"data": [{
        "type": "scatter", "mode": "markers", "x": p, "y": labels,
        "error_x": {"type": "data", "symmetric": False,
                    "array": [h - v for h, v in zip(t["ci_high"], p, strict=True)],
                    "arrayminus": [v - lo for lo, v in zip(t["ci_low"], p, strict=True)]},
        "marker": {"color": "#4c72b0", "size": 7},
        "hovertemplate": "%{y}: %{x:.3f}<extra></extra>"}],
        "layout": {"xaxis": {"title": {"text": "probability of improvement P(X > Y)"},
                             "range": [0, 1]},
                   "yaxis": {"autorange": "reversed", "type": "category"},
                   "shapes": [{"type": "line", "x0": 0.5, "x1": 0.5, "y0": 0, "y1": 1,
                               "yref": "paper", "line": {"dash": "dot", "color": "#888"}}],
                   "height": 80 + 18 * len(labels), "margin": {"t": 30, "l": 220}}}


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def to_json(fig: dict[str, Any]) -> str:
    """The figure as JSON for a page (non-finite numbers as null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(fig), allow_nan=False).replace("</", "<\\/")


# ---------------------------------------------------------------------------------------
# Problems and hardness (tables of bbrlcore.report.problems)


def _num(v: Any) -> Any:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def hardness_map(hmap: pl.DataFrame) -> dict[str, Any]:
    """Every test set placed by its hardness (Colosseum's Fig. 17/18): x = median value
    norm, y = median diameter, bars from 5 % to 95 % over its MDPs, one trace per problem
    (the table of :func:`bbrlcore.report.problems.hardness_map`)."""
    from bbrlcore.report.figures import problem_colours

    colours = problem_colours(hmap["problem"].unique(maintain_order=True).to_list())
    traces = []
    for problem, colour in colours.items():
        g = hmap.filter(pl.col("problem") == problem)
        x, y = g["value_norm"].to_list(), g["diameter"].to_list()
        custom = [[r["test"], r["experiments"], r["n_mdps"], r["n_infinite"],
                   _num(r["optimal_value"]), _num(r["suboptimality_gaps"])]
                  for r in g.iter_rows(named=True)]
        traces.append({
            "type": "scatter", "mode": "markers+text", "name": problem,
            "x": x, "y": y, "text": g["test"].to_list(), "textposition": "top center",
            "textfont": {"size": 9, "color": colour},
            "error_x": {"type": "data", "symmetric": False,
                        "array": [_gap(h, v) for h, v in zip(g["value_norm_q95"], x, strict=True)],
                        "arrayminus": [_gap(v, lo) for lo, v in
                                       zip(g["value_norm_q05"], x, strict=True)],
                        "thickness": 1, "width": 0, "color": colour},
            "error_y": {"type": "data", "symmetric": False,
                        "array": [_gap(h, v) for h, v in zip(g["diameter_q95"], y, strict=True)],
                        "arrayminus": [_gap(v, lo) for lo, v in
                                       zip(g["diameter_q05"], y, strict=True)],
                        "thickness": 1, "width": 0, "color": colour},
            "marker": {"color": colour, "size": 9},
            "customdata": custom,
            "hovertemplate": "<b>%{customdata[0]}</b> (%{customdata[2]} MDPs)<br>diameter "
                             "%{y:.4g} (median; %{customdata[3]} infinite)<br>value norm "
                             "%{x:.4g}<br>optimal value %{customdata[4]:.4g}<br>Σ 1/gap "
                             "%{customdata[5]:.4g}<br>%{customdata[1]}<extra></extra>"})
    return {"data": traces, "layout": {
        "xaxis": {"title": {"text": "environmental value norm (median over the MDPs)"}},
        "yaxis": {"title": {"text": "diameter (median over the MDPs)"}},
        "updatemenus": _log_buttons(), "height": 480, "margin": {"t": 40, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"}}}


def _gap(a: Any, b: Any) -> Any:
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b):
        return None
    return max(a - b, 0.0)


def _log_buttons() -> list[dict[str, Any]]:
    return [{"type": "buttons", "direction": "right", "x": 1.0, "xanchor": "right",
             "y": 1.02, "yanchor": "bottom", "showactive": True, "active": 0,
             "pad": {"r": 0, "t": 0}, "font": {"size": 11},
             "buttons": [
                 {"label": "linear", "method": "relayout",
                  "args": [{"xaxis.type": "linear", "yaxis.type": "linear"}]},
                 {"label": "log", "method": "relayout",
                  "args": [{"xaxis.type": "log", "yaxis.type": "log"}]}]}]


def score_vs_hardness(scores: pl.DataFrame,
                      styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """Each algorithm's normalised score (its best agent per experiment) against a
    hardness measure of the experiment's test set; buttons switch the measure (diameter,
    value norm, gaps) and the axis scale (the table of
    :func:`bbrlcore.report.problems.score_table`)."""
    from bbrlcore.report.problems import MEASURES

    s = scores.filter(pl.col("normalised_score").is_not_null())
    fams = [f for f in styles if f in set(s["family"])]
    traces, xs = [], {m: [] for m in MEASURES}
    for fam in fams:
        g = s.filter(pl.col("family") == fam)
        for m in MEASURES:
            xs[m].append(g[m].to_list())
        traces.append({
            "type": "scatter", "mode": "markers", "name": fam,
            "x": g["diameter"].to_list(), "y": g["normalised_score"].to_list(),
            "marker": _marker(styles[fam]),
            "customdata": [[r["experiment"], r["agent"], r["prior_kind"]]
                           for r in g.iter_rows(named=True)],
            "hovertemplate": "<b>%{customdata[0]}</b> (%{customdata[2]} prior)<br>"
                             "%{customdata[1]}<br>normalised score %{y:.3f}<br>x %{x:.4g}"
                             f"<extra>{fam}</extra>"})
    measure_menu = {
        "type": "buttons", "direction": "right", "x": 0.0, "xanchor": "left", "y": 1.02,
        "yanchor": "bottom", "showactive": True, "active": 0, "pad": {"r": 0, "t": 0},
        "font": {"size": 11},
        "buttons": [{"label": label.split(" (")[0], "method": "update",
                     "args": [{"x": xs[m]}, {"xaxis.title.text": label}]}
                    for m, label in MEASURES.items()]}
    return {"data": traces, "layout": {
        "xaxis": {"title": {"text": MEASURES["diameter"]}},
        "yaxis": {"title": {"text": "normalised score (Random = 0, Optimal = 1)"}},
        "updatemenus": [measure_menu, *_log_buttons()], "height": 480,
        "margin": {"t": 50, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"}}}


def score_vs_size(ladder: pl.DataFrame,
                  styles: dict[str, tuple[str, str, bool]]) -> dict[str, Any]:
    """Along each ladder (a problem, a setting, a kind of prior): each algorithm's
    normalised score against the size, one panel per ladder, two panels a row (the table
    of :func:`bbrlcore.report.problems.ladder_table`)."""
    from bbrlcore.report.problems import ladders

    names = ladders(ladder)
    cols = 2 if len(names) > 1 else 1
    rows = max(1, -(-len(names) // cols))
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"height": 80 + 290 * rows, "margin": {"t": 40, "r": 10},
                              "legend": {"itemclick": "toggle",
                                         "itemdoubleclick": "toggleothers"},
                              "annotations": []}
    shown: set[str] = set()
    for k, name in enumerate(names):
        axis = "" if k == 0 else str(k + 1)
        r, c = divmod(k, cols)
        x0, x1 = c / cols + 0.04, (c + 1) / cols - 0.02
        y1 = 1 - r / rows - 0.06 / rows
        y0 = 1 - (r + 1) / rows + 0.24 / rows
        layout[f"xaxis{axis}"] = {"domain": [x0, x1], "anchor": f"y{axis}",
                                  "title": {"text": "size", "font": {"size": 10},
                                            "standoff": 4}}
        layout[f"yaxis{axis}"] = {"domain": [y0, y1], "anchor": f"x{axis}",
                                  "title": {"text": "normalised score", "font": {"size": 10}}}
        layout["annotations"].append({
            "text": f"<b>{name}</b>", "showarrow": False, "xref": "paper", "yref": "paper",
            "x": (x0 + x1) / 2, "y": y1, "xanchor": "center", "yanchor": "bottom",
            "font": {"size": 11}})
        g = ladder.filter(pl.col("ladder") == name)
        for fam in [f for f in styles if f in set(g["family"])]:
            h = g.filter(pl.col("family") == fam).sort("size")
            colour = styles[fam][0]
            traces.append({
                "type": "scatter", "mode": "lines+markers", "name": fam,
                "legendgroup": fam, "showlegend": fam not in shown,
                "x": h["size"].to_list(), "y": h["normalised_score"].to_list(),
                "xaxis": f"x{axis}", "yaxis": f"y{axis}", "marker": _marker(styles[fam]),
                "line": {"color": colour, "width": 1.5,
                         "dash": "dash" if fam.endswith("(compat)") else "solid"},
                "customdata": [[r["experiment"], r["agent"]] for r in h.iter_rows(named=True)],
                "hovertemplate": "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>size %{x}: "
                                 f"%{{y:.3f}}<extra>{fam}</extra>"})
            shown.add(fam)
    return {"data": traces, "layout": layout}
