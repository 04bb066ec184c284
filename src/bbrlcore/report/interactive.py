"""The HTML report's interactive figures: plotly.js specifications built from the tables.

Each function takes a table of :mod:`bbrlcore.analysis.constraints` or
:mod:`bbrlcore.analysis.aggregate` and returns a plain ``{"data": [...], "layout": {...}}`` figure
(JSON-able; the page draws it with ``Plotly.newPlot``). Hovering a point shows the agent
id, its parameters, its score with the 95% interval and its offline and online times;
clicking a family in the legend hides or shows it; the score-against-time figures have
buttons switching the time axis between log and linear, the learning curves buttons
switching the view (cumulative reward, normalised score, cumulative shortfall against
the Optimal agent).

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
                  styles: dict[str, tuple[str, str, bool]],
                  ylabel: str = "score (mean discounted return)") -> dict[str, Any]:
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
              "yaxis": {"title": {"text": ylabel}},
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
                   styles: dict[str, tuple[str, str, bool]],
                   score: str = "discounted") -> dict[str, Any]:
    """The time-constraint map as a grid, drawn from the table of
    :func:`bbrlcore.analysis.constraints.constraint_map` and nothing else.

    Each cell shows the (short) names of the families whose ``among_best`` is true in it
    (as the static figure: :func:`bbrlcore.report.figures.cell_lines`), its colour
    (``z``) their number; hovering lists them in full, then the families whose best agent
    fits the bounds but is significantly worse than the reference. A cell where no agent
    fits (``family`` null) is a gap: ``z`` null, "no agent within these bounds".
    """
    from bbrlcore.report.figures import SCORE_NAMES, cell_lines, map_cells

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
    names = map_cells(cmap, styles)
    most = max((len(v) for v in names.values()), default=1)
    per_line = max(1, math.ceil(math.sqrt(most)))
    z, hover, label = [], [], []
    for j in ys:
        zr, tr, lr = [], [], []
        for i in xs:
            b, w = best.get((i, j), []), worse.get((i, j), [])
            if not b and not w:
                zr.append(None)
                tr.append(MAP_EMPTY)
                lr.append("")
                continue
            zr.append(len(b))
            tr.append(MAP_BEST + ", ".join(b)
                      + (f"<br>{MAP_WORSE}" + ", ".join(w) if w else ""))
            lr.append("<br>".join(cell_lines(names.get((j, i), []), per_line)))
        z.append(zr)
        hover.append(tr)
        label.append(lr)
    n_lines = max((len(t.split("<br>")) for row in label for t in row if t), default=1)
    return {
        "data": [{"type": "heatmap", "z": z, "text": label, "customdata": hover,
                  "texttemplate": "%{text}", "textfont": {"size": 10, "color": "#111"},
                  "x": [_fmt(xb[i]) for i in xs], "y": [_fmt(yb[j]) for j in ys],
                  # light colours: the names stay readable on every cell
                  "colorscale": [[0.0, "#f7fbff"], [1.0, "#9ecae1"]], "zauto": False,
                  "zmin": 0,
                  "zmax": max([v for row in z for v in row if v is not None], default=1),
                  "showscale": True, "hoverongaps": False, "xgap": 1, "ygap": 1,
                  "colorbar": {"title": {"text": "among the best"}, "dtick": 1},
                  "hovertemplate": "offline ≤ %{y}, online/decision ≤ %{x}<br>"
                                   "%{customdata}<extra></extra>"}],
        "layout": {"title": {"text": f"time-constraint map, {title}: among the best by the "
                                     f"{SCORE_NAMES.get(score, score)}",
                             "font": {"size": 14}},
                   "xaxis": {"title": {"text": "online time per decision bound"},
                             "type": "category"},
                   "yaxis": {"title": {"text": "offline time bound"}, "type": "category"},
                   "height": max(420, 120 + len(ys) * (16 * n_lines + 14)),
                   "margin": {"t": 50, "r": 10}},
    }


#: The aggregate metrics drawn, with their labels.
METRICS = {"iqm": "IQM", "median": "median", "mean": "mean",
           "optimality_gap": "optimality gap"}


def aggregate_metrics(metrics: pl.DataFrame,
                      styles: dict[str, tuple[str, str, bool]],
                      score: str = "discounted") -> dict[str, Any]:
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
                                  "title": {"text": f"{label} (normalised, "
                                                    f"{_score_name(score)})"}}
        layout[f"yaxis{axis}"] = {"anchor": f"x{axis}", "showticklabels": k == 0,
                                  "autorange": "reversed", "type": "category"}
    return {"data": traces, "layout": layout}


def performance_profiles(profiles: pl.DataFrame,
                         styles: dict[str, tuple[str, str, bool]],
                         score: str = "discounted") -> dict[str, Any]:
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
        "xaxis": {"title": {"text": f"normalised score τ ({_score_name(score)}; Random = 0, "
                                    "Optimal = 1)"}},
        "yaxis": {"title": {"text": "fraction of runs with score > τ"}, "range": [0, 1.02]},
        "height": 420, "margin": {"t": 30}, "legend": {"itemclick": "toggle"}}}


#: Colours of :func:`versus`'s verdicts (the interval of P(NAME > Y) above, below or
#: across 0.5).
VERDICT_COLOURS = {"better": "#1a7f37", "worse": "#c0392b", "unclear": "#7f7f7f"}


def improvement(table: pl.DataFrame, order: list[str] | None = None,
                score: str = "discounted") -> dict[str, Any]:
    """P(X > Y) as a matrix: row X, column Y (``order``: the families' order, default
    their order in ``table``), the cell's colour and label the probability (0.5: no
    difference; blue above, red below), its hover the 95% interval and the paired version
    (same test MDP); the diagonal is empty. One cell per ordered pair of the
    ``improvement`` table of :func:`bbrlcore.analysis.aggregate.compute`."""
    fams = list(order) if order else list(dict.fromkeys(
        table["family_x"].to_list() + table["family_y"].to_list()))
    cell = {(r["family_x"], r["family_y"]): r for r in table.iter_rows(named=True)}
    z, text = [], []
    for x in fams:
        zr, tr = [], []
        for y in fams:
            r = cell.get((x, y))
            if r is None:
                zr.append(None)
                tr.append("")
                continue
            zr.append(r["probability"])
            tr.append(f"P({x} > {y}) = {r['probability']:.3f} "
                      f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]<br>paired (same test MDP): "
                      f"{r['paired_probability']:.3f} [{r['paired_ci_low']:.3f}, "
                      f"{r['paired_ci_high']:.3f}]")
        z.append(zr)
        text.append(tr)
    n = len(fams)
    width = max((len(f) for f in fams), default=8)
    return {"data": [{
        "type": "heatmap", "z": z, "x": fams, "y": fams, "text": text,
        "texttemplate": "%{z:.2f}", "textfont": {"size": 10 if n <= 10 else 8},
        # plotly's RdBu runs blue to red: reversed, X better (above 0.5) is blue
        "colorscale": "RdBu", "reversescale": True, "zmin": 0, "zmax": 1, "zmid": 0.5,
        "hoverongaps": False,
        "xgap": 1, "ygap": 1,
        "colorbar": {"title": {"text": "P(X > Y)"}, "tickvals": [0, 0.25, 0.5, 0.75, 1]},
        "hovertemplate": "%{text}<extra></extra>"}],
        "layout": {"xaxis": {"type": "category", "side": "bottom", "tickangle": -40},
                   "yaxis": {"type": "category", "autorange": "reversed"},
                   "height": 170 + 30 * n + 6 * width,
                   "margin": {"t": 30, "l": 40 + 7 * width, "b": 60 + 6 * width},
                   "title": {"text": "probability of improvement P(X > Y): row X, column Y "
                                     f"({_score_name(score)})",
                             "font": {"size": 13}, "x": 0.0, "xanchor": "left"}}}


def versus(v: pl.DataFrame, score: str = "discounted") -> dict[str, Any]:
    """One algorithm against every other (the table of
    :func:`bbrlcore.analysis.aggregate.versus`, in its order): a row per opponent Y with
    P(NAME > Y) and its 95% interval (filled circle, coloured by the verdict of
    :data:`VERDICT_COLOURS`) and the paired version (same test MDP, hollow diamond just
    below), the value and interval written at the right; 0.5 (no difference) dotted."""
    name = v["family"][0] if v.height else ""
    opp = v["opponent"].to_list()
    ys = list(range(len(opp)))
    colours = [VERDICT_COLOURS[x] for x in v["verdict"]]
    p, pp = v["probability"].to_list(), v["paired_probability"].to_list()
    words = {"better": f"{name} better", "worse": f"{name} worse",
             "unclear": "no clear difference"}
    custom = [[o, r["ci_low"], r["ci_high"], words[r["verdict"]]]
              for o, r in zip(opp, v.iter_rows(named=True), strict=True)]
    pcustom = [[o, r["paired_ci_low"], r["paired_ci_high"]]
               for o, r in zip(opp, v.iter_rows(named=True), strict=True)]
    traces = [
        {"type": "scatter", "mode": "markers", "name": f"P({name} > Y)",
         "x": p, "y": ys, "customdata": custom,
         "error_x": {"type": "data", "symmetric": False,
                     "array": [h - x for h, x in zip(v["ci_high"], p, strict=True)],
                     "arrayminus": [x - lo for lo, x in zip(v["ci_low"], p, strict=True)],
                     "color": "#444", "thickness": 1.5, "width": 4},
         "marker": {"color": colours, "size": 11, "line": {"color": "#333", "width": 1}},
         "hovertemplate": f"P({name} > %{{customdata[0]}}) = %{{x:.3f}} "
                          "[%{customdata[1]:.3f}, %{customdata[2]:.3f}]: "
                          "%{customdata[3]}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "name": "paired (same test MDP)",
         "x": pp, "y": [y + 0.28 for y in ys], "customdata": pcustom,
         "error_x": {"type": "data", "symmetric": False,
                     "array": [h - x for h, x in zip(v["paired_ci_high"], pp, strict=True)],
                     "arrayminus": [x - lo for lo, x in
                                    zip(v["paired_ci_low"], pp, strict=True)],
                     "color": "#999", "thickness": 1, "width": 2},
         "marker": {"color": "#555", "symbol": "diamond-open", "size": 8,
                    "line": {"color": "#555", "width": 1.5}},
         "hovertemplate": f"paired P({name} > %{{customdata[0]}}) = %{{x:.3f}} "
                          "[%{customdata[1]:.3f}, %{customdata[2]:.3f}]<extra></extra>"},
    ]
    notes = [{"xref": "paper", "x": 1.01, "y": y, "yref": "y", "xanchor": "left",
              "showarrow": False, "font": {"size": 11, "color": c},
              "text": f"{x:.2f} [{lo:.2f}, {hi:.2f}]"}
             for y, x, lo, hi, c in zip(ys, p, v["ci_low"], v["ci_high"], colours,
                                        strict=True)]
    notes += [{"xref": "x", "x": 0.98, "yref": "paper", "y": 1.0, "xanchor": "right",
               "yanchor": "bottom", "showarrow": False,
               "font": {"size": 11, "color": VERDICT_COLOURS["better"]},
               "text": f"{name} better →"},
              {"xref": "x", "x": 0.02, "yref": "paper", "y": 1.0, "xanchor": "left",
               "yanchor": "bottom", "showarrow": False,
               "font": {"size": 11, "color": VERDICT_COLOURS["worse"]},
               "text": f"← {name} worse"}]
    width = max((len(o) for o in opp), default=8)
    return {"data": traces, "layout": {
        "title": {"text": f"{name} against every other algorithm: P({name} > Y)",
                  "font": {"size": 14}, "x": 0.0, "xanchor": "left"},
        "xaxis": {"title": {"text": f"probability that {name} beats Y (0.5: no difference; "
                                    f"normalised {_score_name(score)})"},
                  "range": [-0.02, 1.02], "dtick": 0.1, "zeroline": False},
        "yaxis": {"tickvals": ys, "ticktext": opp, "range": [len(opp) - 0.4, -0.6],
                  "zeroline": False},
        "shapes": [{"type": "line", "x0": 0.5, "x1": 0.5, "y0": 0, "y1": 1, "yref": "paper",
                    "line": {"dash": "dot", "color": "#666"}}],
        "annotations": notes, "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "y": -58 / (34 * max(len(opp), 1)),
                   "yanchor": "top"},
        "height": 150 + 34 * len(opp),
        "margin": {"t": 60, "l": 30 + 7 * width, "r": 130, "b": 90}}}


def _score_name(score: str) -> str:
    from bbrlcore.report.figures import SCORE_NAMES

    return SCORE_NAMES.get(score, score)


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


def _normalised_error(g: pl.DataFrame) -> dict[str, Any]:
    """Plotly error bars of the 95% intervals of ``g``'s normalised scores."""
    y = g["normalised_score"].to_list()
    return {"type": "data", "symmetric": False, "thickness": 1, "width": 2,
            "array": [_gap(h, v) for h, v in zip(g["normalised_high"], y, strict=True)],
            "arrayminus": [_gap(v, lo) for lo, v in zip(g["normalised_low"], y, strict=True)]}


def score_vs_hardness(scores: pl.DataFrame,
                      styles: dict[str, tuple[str, str, bool]],
                      score: str = "discounted", ylabel: str | None = None,
                      what: str = "normalised score") -> dict[str, Any]:
    """Each algorithm's normalised score (its best agent per experiment) with its 95%
    interval against a hardness measure of the experiment's test set; buttons switch the
    measure (diameter, value norm, gaps) and the axis scale (the table of
    :func:`bbrlcore.report.problems.score_table`). ``ylabel`` and ``what`` (the hover's
    name of the value): what ``normalised_score`` holds when it is not the score (the
    regret view, :func:`bbrlcore.report.problems.regret_view`)."""
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
            "error_y": {**_normalised_error(g), "color": styles[fam][0]},
            "customdata": [[r["experiment"], r["agent"], r["prior_kind"],
                            _num(r["normalised_low"]), _num(r["normalised_high"])]
                           for r in g.iter_rows(named=True)],
            "hovertemplate": "<b>%{customdata[0]}</b> (%{customdata[2]} prior)<br>"
                             f"%{{customdata[1]}}<br>{what} %{{y:.3f}} "
                             "[%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>x %{x:.4g}"
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
        "yaxis": {"title": {"text": (ylabel.replace("\n", " ") + ", 95% interval") if ylabel else
                            f"normalised score ({_score_name(score)}; Random = 0, "
                            "Optimal = 1), 95% interval"}},
        "updatemenus": [measure_menu, *_log_buttons()], "height": 480,
        "margin": {"t": 50, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"}}}


def score_vs_size(ladder: pl.DataFrame,
                  styles: dict[str, tuple[str, str, bool]],
                  score: str = "discounted", ylabel: str | None = None) -> dict[str, Any]:
    """Along each ladder (a problem, a setting, a kind of prior): each algorithm's
    normalised score with its 95% interval against the size, one panel per ladder, two
    panels a row, all on one y-range (the table of
    :func:`bbrlcore.report.problems.ladder_table`)."""
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
                                  "title": {"text": ylabel.replace("\n", "<br>") if ylabel else
                                            f"normalised score ({_score_name(score)})",
                                            "font": {"size": 10 if ylabel is None else 8}}}
        if k:
            layout[f"yaxis{axis}"]["matches"] = "y"
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
                "error_y": {**_normalised_error(h), "color": colour},
                "xaxis": f"x{axis}", "yaxis": f"y{axis}", "marker": _marker(styles[fam]),
                "line": {"color": colour, "width": 1.5,
                         "dash": "dash" if fam.endswith("(compat)") else "solid"},
                "customdata": [[r["experiment"], r["agent"], _num(r["normalised_low"]),
                                _num(r["normalised_high"])] for r in h.iter_rows(named=True)],
                "hovertemplate": "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>size %{x}: "
                                 "%{y:.3f} [%{customdata[2]:.3f}, %{customdata[3]:.3f}]"
                                 f"<extra>{fam}</extra>"})
            shown.add(fam)
    return {"data": traces, "layout": layout}


# ---------------------------------------------------------------------------------------
# Learning curves (tables of bbrlcore.analysis.curves)

#: The views of a learning-curve figure: the column of the ``curves`` table (with its
#: ``_low``/``_high`` band) -> the button's label.
CURVE_VIEWS = {"cumulative": "cumulative reward", "normalised": "normalised score",
               "shortfall": "cumulative shortfall"}


def curve_labels(score: str, short: bool = False) -> dict[str, str]:
    """The y-axis label of each view of :data:`CURVE_VIEWS` for ``score``, which every
    view names (``short``: for small panels, without the details).

    >>> curve_labels("undiscounted", short=True)["cumulative"]
    'mean sum of rewards so far'
    """
    acc = "discounted" if score == "discounted" else "sum of rewards"
    so_far = "discounted return so far" if score == "discounted" else "sum of rewards so far"
    if short:
        return {"cumulative": f"mean {so_far}", "normalised": f"normalised score ({acc})",
                "shortfall": f"cumulative shortfall ({acc})"}
    return {"cumulative": f"mean {so_far} (cumulative reward)",
            "normalised": f"normalised score ({acc}; Random = 0, Optimal = 1 at each t)",
            "shortfall": f"cumulative shortfall against Optimal ({acc})"}


def _families_in(styles: dict[str, Any], present: set[str]) -> list[str]:
    return [f for f in styles if f in present] + sorted(present - set(styles))


def even_points(table: pl.DataFrame) -> pl.DataFrame:
    """The rows of a ``curves`` table at its evenly spaced points, the ones a linear time
    axis draws (``even_grid``; a table without the column: all of them); the log-spaced
    points of a long curve are for logarithmic time axes
    (:func:`bbrlcore.analysis.curves.curve_positions`)."""
    return table.filter(pl.col("even_grid")) if "even_grid" in table.columns else table


def _curve_view(h: pl.DataFrame, col: str) -> tuple[list[Any], list[Any], list[Any],
                                                    list[Any], list[Any]]:
    """(band x, band y, line x, line y, line customdata) of one family's view: the band a
    closed polygon over the times where it is defined (high forwards, low backwards)."""
    t = h["t"].to_list()
    y, lo, hi = h[col].to_list(), h[f"{col}_low"].to_list(), h[f"{col}_high"].to_list()
    ok = [i for i in range(len(t)) if lo[i] is not None and hi[i] is not None]
    bx = [t[i] for i in ok] + [t[i] for i in reversed(ok)]
    by = [hi[i] for i in ok] + [lo[i] for i in reversed(ok)]
    return bx, by, t, y, [[a, b] for a, b in zip(lo, hi, strict=True)]


def learning_curves(table: pl.DataFrame, panels: list[tuple[str, str]],
                    styles: dict[str, tuple[str, str, bool]], score: str,
                    view: str = "cumulative", title: str | None = None) -> dict[str, Any]:
    """Learning curves of each family's best agent and Optimal, one panel per experiment
    of ``panels`` (``(experiment, panel title)``; several: small multiples, up to four a
    row, on one y-range), from the ``curves`` table of
    :func:`bbrlcore.analysis.curves.curves`: each
    family a line with its paired bootstrap band (clicking the legend hides or shows it
    in every panel); buttons switch the view (:data:`CURVE_VIEWS`: mean cumulative reward,
    normalised score, cumulative shortfall against the Optimal agent), ``view`` is the
    first shown.

    Every view's data are in the buttons (``args[0]``: ``x``, ``y``, ``customdata``, one
    entry per trace, band then line for each family of each panel); each trace's ``meta``
    is ``[experiment, family, "band" | "line"]``."""
    table = even_points(table)  # (a linear time axis: the evenly spaced points)
    n = len(panels)
    labels = curve_labels(score, short=n > 1)
    cols = min(n, 4) if n else 1
    rows = max(1, -(-n // cols))
    views: dict[str, dict[str, list[Any]]] = {v: {"x": [], "y": [], "customdata": []}
                                               for v in CURVE_VIEWS}
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "height": 110 + 320 * rows if n > 1 else 470,
        "margin": {"t": 70 if title else 50, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        "annotations": [], "hovermode": "closest"}
    if title:
        layout["title"] = {"text": title, "font": {"size": 14}, "x": 0.0, "xanchor": "left",
                           "y": 0.99, "yanchor": "top"}
    shown: set[str] = set()
    for k, (exp, name) in enumerate(panels):
        axis = "" if k == 0 else str(k + 1)
        r, c = divmod(k, cols)
        x0, x1 = c / cols + (0.05 if cols > 1 else 0.0), (c + 1) / cols - 0.01
        y1 = 1 - r / rows - (0.07 / rows if n > 1 else 0.0)
        y0 = 1 - (r + 1) / rows + (0.12 / rows if n > 1 else 0.0)
        layout[f"xaxis{axis}"] = {"domain": [x0, x1], "anchor": f"y{axis}",
                                  "title": {"text": "t (steps)", "font": {"size": 11},
                                            "standoff": 4}}
        layout[f"yaxis{axis}"] = {"domain": [y0, y1], "anchor": f"x{axis}"}
        if n > 1:
            layout["annotations"].append({
                "text": f"<b>{name}</b>", "showarrow": False, "xref": "paper",
                "yref": "paper", "x": (x0 + x1) / 2, "y": y1, "xanchor": "center",
                "yanchor": "bottom", "font": {"size": 11}})
        g = table.filter(pl.col("experiment") == exp)
        for fam in _families_in(styles, set(g["family"].to_list())):
            h = g.filter(pl.col("family") == fam).sort("t")
            colour = styles.get(fam, ("#333", "o", True))[0]
            agent = h["agent"][0]
            for v in CURVE_VIEWS:
                bx, by, lx, ly, cd = _curve_view(h, v)
                views[v]["x"] += [bx, lx]
                views[v]["y"] += [by, ly]
                views[v]["customdata"] += [[], cd]
            common = {"legendgroup": fam, "xaxis": f"x{axis}", "yaxis": f"y{axis}"}
            traces.append({"type": "scatter", "mode": "lines", "name": fam,
                           "showlegend": False, "hoverinfo": "skip", "fill": "toself",
                           "fillcolor": _rgba(colour, 0.15), "line": {"width": 0},
                           "meta": [exp, fam, "band"], **common})
            traces.append({
                "type": "scatter", "mode": "lines", "name": fam,
                "showlegend": fam not in shown, "meta": [exp, fam, "line"],
                "line": {"color": colour, "width": 2,
                         "dash": "dash" if fam.endswith("(compat)") else "solid"},
                "hovertemplate": f"<b>{fam}</b> ({agent})<br>t = %{{x}}: %{{y:.4g}} "
                                 "[%{customdata[0]:.4g}, %{customdata[1]:.4g}]"
                                 f"<extra>{name}</extra>", **common})
            shown.add(fam)
    for i, tr in enumerate(traces):
        for key in ("x", "y", "customdata"):
            tr[key] = views[view][key][i]
    axes = [f"yaxis{'' if k == 0 else k + 1}" for k in range(n)]
    first_col = [a for k, a in enumerate(axes) if k % cols == 0]
    for a in axes[1:]:  # small multiples on one y-range (whichever view is shown)
        layout[a]["matches"] = "y"

    def titles(v: str) -> dict[str, Any]:
        return {f"{a}.title.text": labels[v] if a in first_col else "" for a in axes}

    for a in first_col:
        layout[a]["title"] = {"text": labels[view], "font": {"size": 11}}
    layout["updatemenus"] = [{
        "type": "buttons", "direction": "right", "x": 1.0, "xanchor": "right",
        "y": 1.0, "yanchor": "bottom", "showactive": True,
        "active": list(CURVE_VIEWS).index(view), "pad": {"r": 0, "t": 0, "b": 22 if n > 1
                                                         else 4},
        "font": {"size": 11},
        "buttons": [{"label": label, "method": "update",
                     "args": [views[v], titles(v)]} for v, label in CURVE_VIEWS.items()]}]
    return {"data": traces, "layout": layout}


#: The regret figures' symmetric-logarithmic y axis (signed values) is linear within
#: ± this (one step's, or one episode's, regret of the worst policy), logarithmic beyond.
SYMLOG_LINEAR = 1.0


def regret_is_signed(table: pl.DataFrame, panels: list[tuple[str, str]]) -> bool:
    """Whether the normalised regret that :func:`regret_curves` draws for ``panels``
    (Optimal left out) has a value of 0 or below, its bands included: the figures then
    use a symmetric-logarithmic y axis instead of a logarithmic one."""
    g = table.filter(pl.col("experiment").is_in([e for e, _ in panels])
                     & (pl.col("family") != "Optimal")
                     & pl.col("normalised_regret").is_not_null())
    return bool(g.select(pl.min_horizontal(
        pl.col("normalised_regret").min(), pl.col("normalised_regret_low").min(),
        pl.col("normalised_regret_high").min()) <= 0).item()) if g.height else False


def symlog(v: float | None) -> float | None:
    """A value's position on the symmetric-logarithmic axis of the regret figures (as
    matplotlib's ``symlog`` with ``linthresh`` :data:`SYMLOG_LINEAR`): linear within it,
    then one unit per decade; None stays None.

    >>> [symlog(v) for v in (-100.0, -0.5, 0.0, 1.0, 10.0, None)]
    [-3.0, -0.5, 0.0, 1.0, 2.0, None]
    """
    if v is None or not math.isfinite(v):
        return None
    c = SYMLOG_LINEAR
    a = abs(v)
    return v / c if a <= c else math.copysign(1.0 + math.log10(a / c), v)


def _symlog_ticks(values: list[float]) -> dict[str, Any]:
    """``tickvals`` and ``ticktext`` of a symmetric-logarithmic axis holding ``values``
    (positions given by :func:`symlog`): 0, ±the linear limit and each decade beyond it
    up to the largest magnitude."""
    c = SYMLOG_LINEAR
    top = max([abs(v) for v in values if v is not None and math.isfinite(v)] or [c])
    mags = [c * 10.0 ** k for k in range(0, max(0, math.ceil(math.log10(max(top, c) / c))) + 1)]
    lo = min([v for v in values if v is not None and math.isfinite(v)] or [0.0])
    vals = sorted({0.0, *mags, *([-m for m in mags] if lo < 0 else [])})
    return {"tickvals": [symlog(v) for v in vals],
            "ticktext": [f"{v:g}" if abs(v) < 1e4 else f"{v:.0e}" for v in vals]}


def regret_curves(table: pl.DataFrame, panels: list[tuple[str, str]],
                  styles: dict[str, tuple[str, str, bool]], title: str | None = None
                  ) -> dict[str, Any]:
    """Colosseum's normalised cumulative regret against time, log axes, one panel per
    experiment of ``panels`` (a ladder's sizes side by side, up to four a row, one
    y-range), each family's best agent with its paired bootstrap band (the ``curves``
    table's ``normalised_regret``); Random's is the uniformly random policy's, beside
    the others as in Colosseum's figures; Optimal (about 0) is left out. The y axis is
    logarithmic while every value drawn is positive; with a value of 0 or below
    (:func:`regret_is_signed`: an agent ahead of the optimal policy's expected reward
    for a while) it is symmetric-logarithmic as the static figure's (plotly has no such
    axis: the values are placed by :func:`symlog`, the ticks say the real values, and
    so does the hover). Each trace's ``meta`` is ``[experiment, family, "band" |
    "line"]``."""
    signed = regret_is_signed(table, panels)
    drawn: list[float] = []
    n = len(panels)
    cols = min(n, 4) if n else 1
    rows = max(1, -(-n // cols))
    label = "normalised cumulative regret (Colosseum's: Σ regret / (optimal − worst))"
    if signed:
        label += f"; symlog: linear within ±{SYMLOG_LINEAR:g}"
    layout: dict[str, Any] = {
        "height": 110 + 320 * rows, "margin": {"t": 70 if title else 50, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        "annotations": [], "hovermode": "closest"}
    if title:
        layout["title"] = {"text": title, "font": {"size": 14}, "x": 0.0, "xanchor": "left",
                           "y": 0.99, "yanchor": "top"}
    traces: list[dict[str, Any]] = []
    shown: set[str] = set()
    for k, (exp, name) in enumerate(panels):
        axis = "" if k == 0 else str(k + 1)
        r, c = divmod(k, cols)
        x0, x1 = c / cols + (0.05 if cols > 1 else 0.0), (c + 1) / cols - 0.01
        y1 = 1 - r / rows - 0.07 / rows
        y0 = 1 - (r + 1) / rows + 0.12 / rows
        g = table.filter((pl.col("experiment") == exp) & (pl.col("family") != "Optimal")
                         & pl.col("normalised_regret").is_not_null())
        episodic = g.height > 0 and g["episodes"].null_count() == 0
        xname = "episodes" if episodic else "t (steps)"
        layout[f"xaxis{axis}"] = {"domain": [x0, x1], "anchor": f"y{axis}", "type": "log",
                                  "title": {"text": xname, "font": {"size": 11},
                                            "standoff": 4}}
        layout[f"yaxis{axis}"] = {"domain": [y0, y1], "anchor": f"x{axis}",
                                  "type": "linear" if signed else "log"}
        if k % cols == 0:
            layout[f"yaxis{axis}"]["title"] = {"text": label, "font": {"size": 10}}
        if k:
            layout[f"yaxis{axis}"]["matches"] = "y"
        layout["annotations"].append({
            "text": f"<b>{name}</b>", "showarrow": False, "xref": "paper",
            "yref": "paper", "x": (x0 + x1) / 2, "y": y1, "xanchor": "center",
            "yanchor": "bottom", "font": {"size": 11}})
        for fam in _families_in(styles, set(g["family"].to_list())):
            h = g.filter(pl.col("family") == fam).sort("t")
            if episodic:
                h = h.with_columns(pl.col("episodes").alias("t"))
            colour = styles.get(fam, ("#333", "o", True))[0]
            bx, by, lx, ly, cd = _curve_view(h, "normalised_regret")
            hover_y = "%{y:.4g}"
            if signed:  # (positions on the symmetric-log axis; the hover the real value)
                drawn += [v for v in by + ly if v is not None]
                cd = [[a, b, v] for (a, b), v in zip(cd, ly, strict=True)]
                by, ly = [symlog(v) for v in by], [symlog(v) for v in ly]
                hover_y = "%{customdata[2]:.4g}"
            common = {"legendgroup": fam, "xaxis": f"x{axis}", "yaxis": f"y{axis}"}
            traces.append({"type": "scatter", "mode": "lines", "name": fam, "x": bx,
                           "y": by, "showlegend": False, "hoverinfo": "skip",
                           "fill": "toself", "fillcolor": _rgba(colour, 0.15),
                           "line": {"width": 0}, "meta": [exp, fam, "band"], **common})
            traces.append({
                "type": "scatter", "mode": "lines", "name": fam, "x": lx, "y": ly,
                "customdata": cd, "showlegend": fam not in shown,
                "meta": [exp, fam, "line"],
                "line": {"color": colour, "width": 2,
                         "dash": "dash" if fam.endswith("(compat)") else "solid"},
                "hovertemplate": f"<b>{fam}</b> ({h['agent'][0]})<br>{xname} = %{{x}}: "
                                 f"{hover_y} [%{{customdata[0]:.4g}}, %{{customdata[1]:.4g}}]"
                                 f"<extra>{name}</extra>", **common})
            shown.add(fam)
    if signed:
        ticks = _symlog_ticks(drawn)
        for k in range(n):
            layout[f"yaxis{'' if k == 0 else k + 1}"].update(ticks)
    return {"data": traces, "layout": layout}


def episodes_to_learn(ds: pl.DataFrame, styles: dict[str, tuple[str, str, bool]],
                      title: str | None = None) -> dict[str, Any]:
    """bbrl's "episodes to learn against size" (bsuite's figure, of bbrl's DeepSea
    score) for one DeepSea ladder (rows of the ``deepsea`` table of
    :func:`bbrlcore.analysis.exploration.bbrl_deepsea_scores`), log
    axes: each algorithm's first episode at which the average regret falls below 0.9,
    with its bootstrap interval; one that does not learn within the interaction at its
    last episode, marked with a cross; dithering's 2^N dashed."""
    from bbrlcore.analysis.exploration import undecided_text

    traces: list[dict[str, Any]] = []
    for fam in [f for f in styles if f in set(ds["family"])]:
        h = ds.filter(pl.col("family") == fam).sort("size")
        learned = h["learning_episode"].is_not_null().to_list()
        y = [le if ok else e for le, e, ok in zip(h["learning_episode"], h["episodes"],
                                                  learned, strict=True)]
        hi = [v if v is not None else e for v, e in zip(h["learning_high"], h["episodes"],
                                                         strict=True)]
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": fam, "x": h["size"].to_list(),
            "y": y, "marker": {**_marker(styles[fam]),
                               "symbol": ["circle" if ok else "x" for ok in learned]},
            "line": {"color": styles[fam][0], "width": 1.5},
            "error_y": {"type": "data", "symmetric": False, "thickness": 1, "width": 2,
                        "color": styles[fam][0],
                        "array": [_gap(b, a) for a, b in zip(y, hi, strict=True)],
                        "arrayminus": [_gap(a, b) for a, b in zip(y, h["learning_low"],
                                                                  strict=True)]},
            "customdata": [[r["experiment"], r["agent"], "learned" if r["learned"] else
                            ("not learned" if r["decided"] else "undecided: "
                             + undecided_text(r["episodes"], r["size"]))]
                           for r in h.iter_rows(named=True)],
            "hovertemplate": "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>size %{x}: "
                             "%{y} episodes (%{customdata[2]})" f"<extra>{fam}</extra>"})
    sizes = sorted(set(ds["size"].to_list()))
    if sizes:
        top = float(ds["episodes"].max()) * 2
        traces.append({"type": "scatter", "mode": "lines", "name": "2^N (dithering)",
                       "x": sizes, "y": [min(2.0 ** n, top) for n in sizes],
                       "line": {"color": "black", "dash": "dash", "width": 1.5},
                       "opacity": 0.5, "hoverinfo": "skip"})
    layout: dict[str, Any] = {
        "xaxis": {"type": "log", "title": {"text": "DeepSea size N"},
                  "tickvals": sizes},
        "yaxis": {"type": "log", "title": {
            "text": "episodes until average regret < 0.9 (bbrl's DeepSea score)"}},
        "height": 460, "margin": {"t": 60 if title else 40, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"}}
    if title:
        layout["title"] = {"text": title, "font": {"size": 14}, "x": 0.0, "xanchor": "left",
                           "xref": "paper"}
    return {"data": traces, "layout": layout}


def iqm_curves(agg: pl.DataFrame, styles: dict[str, tuple[str, str, bool]],
               score: str) -> dict[str, Any]:
    """rliable's sample-efficiency curve: each family's IQM of the normalised score
    against t across experiments, with its stratified bootstrap band (the ``aggregate``
    table of :func:`bbrlcore.analysis.curves.curves`); each trace's ``meta`` is
    ``[family, "band" | "line"]``."""
    acc = "discounted" if score == "discounted" else "sum of rewards"
    traces = []
    for fam in _families_in(styles, set(agg["family"].to_list())):
        g = agg.filter(pl.col("family") == fam).sort("t")
        colour = styles.get(fam, ("#333",))[0]
        t = g["t"].to_list()
        n_exp = int(g["n_experiments"][0])
        traces.append({"type": "scatter", "mode": "lines", "x": t + t[::-1],
                       "y": g["iqm_high"].to_list() + g["iqm_low"].to_list()[::-1],
                       "fill": "toself", "fillcolor": _rgba(colour, 0.15),
                       "line": {"width": 0}, "legendgroup": fam, "showlegend": False,
                       "hoverinfo": "skip", "name": fam, "meta": [fam, "band"]})
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": fam, "legendgroup": fam,
            "x": t, "y": g["iqm"].to_list(), "meta": [fam, "line"],
            "customdata": [[a, b] for a, b in zip(g["iqm_low"], g["iqm_high"], strict=True)],
            "marker": {**_marker(styles.get(fam, ("#333", "o", True))), "size": 5},
            "line": {"color": colour, "width": 2,
                     "dash": "dash" if fam.endswith("(compat)") else "solid"},
            "hovertemplate": f"<b>{fam}</b><br>t = %{{x}}: IQM %{{y:.3f}} "
                             "[%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                             f" ({n_exp} experiments)<extra></extra>"})
    return {"data": traces, "layout": {
        "xaxis": {"title": {"text": "t (steps)"}},
        "yaxis": {"title": {"text": f"IQM of the normalised score ({acc})"}},
        "height": 440, "margin": {"t": 30, "r": 10},
        "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"}}}
