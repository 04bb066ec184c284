"""Export: the constraint map on synthetic agents with a known answer, figures, reports."""

import json
import shutil
import subprocess

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape  # the report's pages escape what they show

import reference_hardness  # the former dense diameter (tests/)
from bbrlcore import protocol as E
from bbrlcore import report
from bbrlcore.analysis import constraints as analysis
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import hardness
from bbrlcore.report import figures
from synthetic_runs import learning_runs  # runs with per-step rewards (tests/)


def synthetic(n=200, seed=0):
    """A: fast everything, mean 10. B: mean 20, 1 ms per decision. C: like B (paired noise
    only) but 100 s offline and fast online. Optimal: the oracle (not a contender)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 3, n)
    ret = {
        "a": base + 10,
        "b": base + 20 + rng.normal(0, 0.5, n),
        "c": base + 20 + rng.normal(0, 0.5, n),
    }
    scores = pl.DataFrame({
        "family": ["A", "B", "C"], "agent": ["a", "b", "c"],
        "mean": [float(ret[k].mean()) for k in "abc"],
        "offline_time_s": [0.0, 0.0, 100.0],
        "online_time_per_decision_s": [1e-6, 1e-3, 1e-6],
    })
    return scores, ret


def cell(cmap, off, on):
    c = cmap.filter((pl.col("offline_index") == off) & (pl.col("online_index") == on))
    return set(c.filter(pl.col("among_best"))["family"])


def test_constraint_map_known_answer():
    scores, ret = synthetic()
    cmap = analysis.constraint_map(scores, ret, alpha=0.05, n_bounds=4)
    n_off = cmap["offline_index"].max() + 1
    n_on = cmap["online_index"].max() + 1
    assert (n_off, n_on) == (1, 4)  # the only positive offline time is 100 s
    # tight online bound: A and C fit (C's 100 s is within the only offline bound)
    assert cell(cmap, 0, 0) == {"C"}
    # loose online bound: B and C tie, A is significantly worse
    assert cell(cmap, 0, n_on - 1) == {"B", "C"}
    # bounds cover the extremes: the slowest agents appear
    assert cmap["online_bound_s"].max() == 1e-3 and cmap["offline_bound_s"].max() == 100.0


def test_among_best_with_offline_bound():
    scores, ret = synthetic()
    assert set(analysis.among_best(scores, ret, 0.05, offline_bound=1.0, online_bound=1e-5)
               .filter(pl.col("among_best"))["family"]) == {"A"}
    assert set(analysis.among_best(scores, ret, 0.05, offline_bound=1.0)
               .filter(pl.col("among_best"))["family"]) == {"B"}
    empty = analysis.among_best(scores, ret, 0.05, online_bound=1e-9)
    assert empty.is_empty()


def test_identical_returns_are_not_different():
    scores, ret = synthetic()
    ret["c"] = ret["b"].copy()
    scores = scores.with_columns(pl.Series("mean", [float(ret[k].mean()) for k in "abc"]))
    best = analysis.among_best(scores, ret)
    assert set(best.filter(pl.col("among_best"))["family"]) == {"B", "C"}


def test_log_bounds_cover_extremes():
    b = analysis.log_bounds(np.array([0.0, 3e-6, 0.2, 40.0]), 5)
    assert b[0] == 3e-6 and b[-1] == 40.0 and len(b) == 5
    assert np.all(np.diff(np.log(b)) > 0)
    assert list(analysis.log_bounds(np.zeros(3), 5)) == [0.0]


def test_figure_has_one_point_per_agent():
    scores, ret = synthetic()
    s = scores.with_columns(ci_low=pl.col("mean") - 1, ci_high=pl.col("mean") + 1)
    styles = figures.style_map(["A", "B", "C"])
    fig, data = figures.time_vs_score(s, "offline_time_s", "offline", "t", styles)
    n_points = sum(len(c.lines[0].get_xdata()) for c in fig.axes[0].containers)
    assert n_points == 3 == data.height
    # zero times are drawn at a floor below the smallest positive time
    assert data["x_plotted"].min() > 0 and data["x_plotted"].min() < 100
    figures.plt.close(fig)


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    ts = E.new_test_set(D.builtin("GDL"), 20, 0.95, 40, seed=3)
    tables = []
    for prior in ("GDL", "UGDL"):
        for alg, params in [("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.1"}),
                            ("e-greedy", {"epsilon": "0.5"}), ("beb", {"beta": "1"}),
                            ("beb", {"beta": "1", "compat": "true"})]:
            agent = E.train_agent(alg, params, D.builtin(prior), progress=False)
            tables.append(E.run_agent(ts, agent, progress=False))
    from bbrlcore.analysis.results import merge_tables, summary_table

    merged = merge_tables(tables)
    summary = summary_table(merged)
    index = report.build(merged, summary, out, [ts], pdf=False)
    return out, index, summary


def _has_regret(out):
    """Whether the report's runs carry their regret (test sets with reference values)."""
    scores = out / "data" / "score-hardness.parquet"
    return scores.exists() and pl.read_parquet(scores)["normalised_regret"].null_count() == 0


def _has_rewards(out):
    """Whether the report's runs recorded per-step rewards (its learning curves)."""
    return (out / "data" / "curves.parquet").exists()


def test_html_report(small_report):
    """A summary page up front (statistics across experiments, best agents, links), a page
    per experiment with its interactive figures, plotly.js beside them (no network)."""
    out, index, summary = small_report
    html = index.read_text()
    curves = _has_rewards(out)
    assert html.count("<h2") >= 3 and "GDL-UGDL" in html and "GDL-GDL" in html
    assert 'id="aggregates">Across experiments' in html and "Hardness" in html
    # metrics, profiles, improvement; the hardness map and scores against hardness (a
    # single GDL has no ladder of sizes); the IQM against time with per-step rewards; the
    # test set carries its MDPs' reference values (the paper's protocol too): the regret
    # against hardness beside the score (issue 34)
    regret = _has_regret(out)
    assert regret  # (test sets are drawn with their references)
    assert html.count('class="bbrl-figure"') == 5 + curves + regret
    assert ('id="fig-regret-hardness"' in html) == regret
    assert (report.NO_REWARDS in html) != curves
    assert 'href="experiments/GDL-GDL.html"' in html and 'href="experiments/GDL-UGDL.html"' in html
    assert '<script src="plotly.min.js">' in html and "http" not in html.split("<body>")[0]
    assert (out / "plotly.min.js").stat().st_size > 1_000_000
    for exp in ("GDL-GDL", "GDL-UGDL"):
        page = (out / "experiments" / f"{exp}.html").read_text()
        # online, constraint map (and the learning curves); no agent learns offline here,
        # so no score-against-offline-time figure, and a sentence saying so
        assert page.count('class="bbrl-figure"') == 2 + curves
        assert 'id="fig-offline"' not in page and "No agent here learns offline" in page
        assert '<script src="../plotly.min.js">' in page
        assert "e-greedy__epsilon=0.1" in page  # hover data: the agent ids
        # the best agents' table: the summary's shortfall (Optimal's mean − mean), named
        # as the summary names it (issue 41: it was "regret", the run tables' other one)
        assert "<th>shortfall</th>" in page and "<th>regret</th>" not in page
        rnd = summary.filter((pl.col("experiment") == exp) & (pl.col("algorithm") == "random"))
        assert f'<td class="num">{rnd["shortfall"][0]:.2f}</td></tr>' in page
    for name in ["metrics", "profiles", "improvement", "normalised", "best-agents",
                 "among-best"]:
        assert (out / "data" / f"aggregate-{name}.parquet").exists(), name
    metrics = pl.read_parquet(out / "data" / "aggregate-metrics.parquet")
    assert {"iqm", "iqm_ci_low", "iqm_ci_high", "optimality_gap"} <= set(metrics.columns)
    for name in ["GDL-GDL-best", "GDL-UGDL-constraint-map", "GDL-GDL-offline",
                 "GDL-GDL-online", "hardness", "summary"]:
        assert (out / "data" / f"{name}.parquet").exists(), name
    best = pl.read_parquet(out / "data" / "GDL-GDL-best.parquet")
    # one row per family (BEB and BEB (compat) apart), the oracle never "among the best"
    assert sorted(best["family"]) == sorted(["Random", "e-Greedy", "BEB", "BEB (compat)",
                                             "Optimal"])
    assert not best.filter(pl.col("family") == "Optimal")["among_best"][0]
    # normalised scores: Random 0, Optimal 1
    s = summary.filter(pl.col("experiment") == "GDL-GDL")
    assert s.filter(pl.col("algorithm") == "random")["normalised_score"][0] == pytest.approx(0)
    assert s.filter(pl.col("algorithm") == "optimal")["normalised_score"][0] == pytest.approx(1)


def test_hardness_of_grid_reports_the_goal_unreachable():
    ts = E.new_test_set(D.builtin("Grid"), 4, 0.95, 10, seed=1)
    h = hardness.hardness_table(ts)
    assert (h["unreachable_states"] == 1).all()  # the goal cell 24 is never entered
    assert np.isfinite(h["diameter"].to_numpy()).all() and (h["diameter"] >= 8).all()
    g = hardness.hardness_table(E.new_test_set(D.builtin("GC"), 3, 0.95, 10, seed=1))
    assert (g["unreachable_states"] == 0).all()


def test_hitting_times_on_a_known_chain():
    # a 3-state chain: from 0 reach 2; action 0 advances with prob 0.5, action 1 with 0.25
    P = np.zeros((3, 2, 3))
    for s in range(2):
        P[s, 0, s], P[s, 0, s + 1] = 0.5, 0.5
        P[s, 1, s], P[s, 1, s + 1] = 0.75, 0.25
    P[2, :, 0] = 1.0
    h = reference_hardness._hitting_times(P, 2)
    assert h[1] == pytest.approx(2.0) and h[0] == pytest.approx(4.0)


def test_latex_report(small_report):
    out, _, _ = small_report
    tex = (out / "report.tex").read_text()
    assert tex.startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
    # per experiment 2 (online, map: nothing learns offline here) and its learning curves
    # when recorded, the P(X > Y) matrix (and the IQM against time), the hardness spread,
    # the hardness map, scores against hardness (and the regret against hardness: the
    # test set carries its reference values)
    c = _has_rewards(out)
    assert "\\toprule" in tex and tex.count("\\includegraphics") == (
        2 * (2 + c) + (1 + c) + 1 + 2 + _has_regret(out))
    assert tex.count("No agent here learns offline") == 2
    assert tex.count("& Normalised & Shortfall \\\\") == 2 and "& Regret" not in tex
    for line in tex.splitlines():
        if "includegraphics" in line:
            name = line.split("{figures/")[1].split("}")[0]
            assert (out / "figures" / name).exists(), name
    if shutil.which("pdflatex"):
        r = report.compile_latex(out)
        assert r.returncode == 0, r.stdout[-2000:]
        assert (out / "report.pdf").exists()


def test_summary_params_are_json(small_report):
    _, _, summary = small_report
    for p in summary["params"]:
        json.loads(p)


def test_cli_report_bad_alpha(tmp_path, bbrl_cmd, env_with_cache):
    r = subprocess.run(bbrl_cmd + ["report", "x.parquet", "--alpha", "2", "-o", str(tmp_path)],
                       capture_output=True, text=True, env=env_with_cache)
    assert r.returncode == 2 and "--alpha" in r.stderr


def _map_cells_from_table(cmap):
    """(online_index, offline_index) -> (families among the best, families within the
    bounds but not among the best), or None where no agent fits: what the table says."""
    out = {}
    for (on, off), g in cmap.group_by(["online_index", "offline_index"]):
        fams = g.filter(pl.col("family").is_not_null())
        out[(on, off)] = None if fams.is_empty() else (
            set(fams.filter(pl.col("among_best"))["family"]),
            set(fams.filter(~pl.col("among_best"))["family"]))
    return out


def _assert_map_figure_matches_table(fig, cmap):
    """The map's cells say the table's ``among_best``: the colour counts them, the cell
    writes their short names (readable without hovering, issue 33), the hover lists them
    and the families within the bounds that are not."""
    from bbrlcore.report import interactive as I

    trace = fig["data"][0]
    cells = _map_cells_from_table(cmap)
    offs = sorted(cmap["offline_index"].unique().to_list())
    ons = sorted(cmap["online_index"].unique().to_list())
    assert len(trace["z"]) == len(offs) and all(len(r) == len(ons) for r in trace["z"])
    assert trace["texttemplate"] == "%{text}"
    for j, off in enumerate(offs):
        for i, on in enumerate(ons):
            z, text, want = trace["z"][j][i], trace["customdata"][j][i], cells[(on, off)]
            label = trace["text"][j][i]
            if want is None:
                assert z is None and text == I.MAP_EMPTY and label == "", (off, on)
                continue
            best, worse = want
            assert z == len(best), (off, on, z, best)
            written = {n for line in label.split("<br>") for n in line.split(", ")}
            assert written == {figures.short_name(f) for f in best}, (off, on, label)
            first, *rest = text.split("<br>")
            assert first.startswith(I.MAP_BEST)
            assert set(first[len(I.MAP_BEST):].split(", ")) == best, (off, on, text)
            shown_worse = (set(rest[0][len(I.MAP_WORSE):].split(", ")) if rest else set())
            assert shown_worse == worse, (off, on, text)


def test_interactive_map_shows_what_the_table_says():
    """Issue #23: the interactive map coloured and listed every family within the bounds;
    it must show the table's ``among_best``, cell by cell. In the synthetic results, A fits
    every cell but is significantly worse than B and C once they fit."""
    from bbrlcore.report import interactive as I

    scores, ret = synthetic()
    cmap = analysis.constraint_map(scores, ret, alpha=0.05, n_bounds=4)
    # the case that broke: a cell where a family fits the bounds but is not among the best
    assert cmap.filter(pl.col("among_best") == False).height > 0  # noqa: E712
    fig = I.constraint_map(cmap, "t", figures.style_map(["A", "B", "C"]))
    _assert_map_figure_matches_table(fig, cmap)
    loose = fig["data"][0]["customdata"][0][-1]
    assert loose.split("<br>")[0] == I.MAP_BEST + "B, C" or \
        loose.split("<br>")[0] == I.MAP_BEST + "C, B"
    assert "A" not in loose.split("<br>")[0] and fig["data"][0]["z"][0][-1] == 2
    # an empty cell: no agent fits
    empty = pl.DataFrame([{"offline_index": 0, "online_index": 0, "offline_bound_s": 1e-9,
                           "online_bound_s": 1e-9}], schema=cmap.schema)
    _assert_map_figure_matches_table(I.constraint_map(empty, "t", {}), empty)


@pytest.mark.parametrize("exp", ["GDL-GDL", "GDL-UGDL"])
def test_report_map_page_matches_the_table(small_report, exp):
    """The map embedded in an experiment page is the one of ``*-constraint-map.parquet``."""
    out, _, _ = small_report
    cmap = pl.read_parquet(out / "data" / f"{exp}-constraint-map.parquet")
    page = (out / "experiments" / f"{exp}.html").read_text()
    spec = page.split('id="fig-map"><script type="application/json">')[1].split("</script>")[0]
    _assert_map_figure_matches_table(json.loads(spec.replace("<\\/", "</")), cmap)


# ---------------------------------------------------------------------------------------
# Learning curves, the score, one algorithm against the others (issues 25 and 28): reports
# of synthetic runs with per-step rewards (tests/synthetic_runs.py), no agent trained

LADDER = ("GC-GC", "GC-UGC", "DeepSea-5-DeepSea-5", "DeepSea-10-DeepSea-10")


def _spec(page_html, fig_id):
    """The plotly figure embedded in a page under ``fig_id``."""
    marker = f'id="{fig_id}"><script type="application/json">'
    assert marker in page_html, fig_id
    return json.loads(page_html.split(marker)[1].split("</script>")[0].replace("<\\/", "</"))


@pytest.fixture(scope="module")
def learning_report(tmp_path_factory):
    from bbrlcore.analysis.results import summary_table

    out = tmp_path_factory.mktemp("learning-report")
    merged = learning_runs(LADDER, offline={("GC-GC", "bamcp__K=10__depth=5"): 2.0})
    index = report.build(merged, summary_table(merged), out, pdf=False,
                         bootstrap_resamples=200, bootstrap_seed=4, versus="psrl")
    return out, index, merged


def _views(fig):
    """view -> {(meta...): (x, y, customdata)} from the figure's buttons."""
    menu = fig["layout"]["updatemenus"][0]
    out = {}
    for b, view in zip(menu["buttons"], ["cumulative", "normalised", "shortfall"], strict=True):
        data = b["args"][0]
        out[view] = {tuple(tr["meta"]): (x, y, cd) for tr, x, y, cd in zip(
            fig["data"], data["x"], data["y"], data["customdata"], strict=True)}
    return out


def _assert_curves_figure_matches_table(fig, table, experiments):
    """Every view of a learning-curve figure draws the ``curves`` table's rows of those
    experiments: each family's line (t, value, [low, high]) and band (high forwards, low
    backwards), nothing else."""
    views = _views(fig)
    t = table.filter(pl.col("experiment").is_in(experiments))
    keys = {(e, f) for e, f in t.select("experiment", "family").unique().iter_rows()}
    for view, traces in views.items():
        assert {(k[0], k[1]) for k in traces} == keys
        assert len(traces) == 2 * len(keys)
        for (exp, fam), g in t.group_by(["experiment", "family"]):
            g = g.sort("t")
            x, y, cd = traces[(exp, fam, "line")]
            assert x == g["t"].to_list() and y == g[view].to_list(), (view, exp, fam)
            assert cd == [[a, b] for a, b in zip(g[f"{view}_low"], g[f"{view}_high"],
                                                  strict=True)]
            ok = g.filter(pl.col(f"{view}_low").is_not_null())
            bx, by, _ = traces[(exp, fam, "band")]
            assert bx == ok["t"].to_list() + ok["t"].to_list()[::-1]
            assert by == ok[f"{view}_high"].to_list() + ok[f"{view}_low"].to_list()[::-1]
    # the figure first shows one of the views, as its active button says
    first = list(views)[fig["layout"]["updatemenus"][0]["active"]]
    for tr in fig["data"]:
        assert tr["y"] == views[first][tuple(tr["meta"])][1]


@pytest.mark.parametrize("exp", LADDER)
def test_learning_curves_page_draws_its_table(learning_report, exp):
    out, _, _ = learning_report
    from bbrlcore.formats import artefacts

    table, meta = artefacts.read_artefact(out / "data" / "curves.parquet", "curves")
    assert meta["n_resamples"] == 200 and meta["seed"] == 4 and meta["score"] == "discounted"
    page = (out / "experiments" / f"{exp}.html").read_text()
    fig = _spec(page, "fig-curves")
    _assert_curves_figure_matches_table(fig, table, [exp])
    # the best agent of each family and Optimal: the legend toggles a family's line and band
    fams = {tr["meta"][1] for tr in fig["data"]}
    assert "Optimal" in fams and "PSRL" in fams and "BEB (compat)" in fams
    assert all(tr["legendgroup"] == tr["meta"][1] for tr in fig["data"])
    assert [b["label"] for b in fig["layout"]["updatemenus"][0]["buttons"]] == [
        "cumulative reward", "normalised score", "cumulative shortfall"]
    assert (out / "figures" / f"{exp}-curves.pdf").exists()


def test_iqm_and_ladder_curves_draw_their_tables(learning_report):
    out, index, _ = learning_report
    html = index.read_text()
    table = pl.read_parquet(out / "data" / "curves.parquet")
    agg = pl.read_parquet(out / "data" / "curves-aggregate.parquet")
    fig = _spec(html, "fig-curves-iqm")
    lines = {tr["meta"][0]: tr for tr in fig["data"] if tr["meta"][1] == "line"}
    bands = {tr["meta"][0]: tr for tr in fig["data"] if tr["meta"][1] == "band"}
    assert set(lines) == set(bands) == set(agg["family"])
    for (fam,), g in agg.group_by(["family"]):
        g = g.sort("t")
        assert lines[fam]["x"] == g["t"].to_list() and lines[fam]["y"] == g["iqm"].to_list()
        assert bands[fam]["y"] == g["iqm_high"].to_list() + g["iqm_low"].to_list()[::-1]
    # one ladder (DeepSea, accurate prior, sizes 5 and 10), side by side, normalised first
    lad = _spec(html, "fig-curves-ladder-1")
    _assert_curves_figure_matches_table(
        lad, table, ["DeepSea-5-DeepSea-5", "DeepSea-10-DeepSea-10"])
    assert lad["layout"]["updatemenus"][0]["active"] == 1
    assert {tr["xaxis"] for tr in lad["data"]} == {"x", "x2"}
    assert "DeepSea, accurate prior" in lad["layout"]["title"]["text"]
    assert "fig-curves-ladder-2" not in html  # GC is not a ladder
    for f in ("curves-iqm.pdf", "curves-ladder-1.pdf"):
        assert (out / "figures" / f).exists()


def test_without_references_the_report_has_no_regret_figures(learning_report):
    """Run tables without their test MDPs' reference values (the paper's protocol as
    tables made before issue 34 hold it): the report is as it was, no regret against
    time, no bsuite's DeepSea score, nothing said about them."""
    out, index, merged = learning_report
    assert "optimal_reference" not in merged.columns
    html = index.read_text()
    assert "fig-curves-ladder-1" in html  # (a ladder: its learning curves are drawn)
    for gone in ("fig-regret-", "fig-deepsea-", "bsuite's DeepSea score", "Colosseum"):
        assert gone not in html, gone
    assert not list((out / "figures").glob("regret-*"))
    assert not list((out / "figures").glob("deepsea-*"))
    tex = (out / "report.tex").read_text()
    assert "regret-ladder" not in tex and "bsuite" not in tex


def test_improvement_matrix_one_cell_per_ordered_pair(learning_report):
    out, index, _ = learning_report
    imp = pl.read_parquet(out / "data" / "aggregate-improvement.parquet")
    metrics = pl.read_parquet(out / "data" / "aggregate-metrics.parquet")
    fig = _spec(index.read_text(), "fig-improvement")
    (trace,) = fig["data"]
    fams = metrics["family"].to_list()  # best IQM first
    n = len(fams)
    assert n == 8 and imp.height == 56 == n * (n - 1)
    assert trace["x"] == fams and trace["y"] == fams
    cells = [(i, j) for i in range(n) for j in range(n) if trace["z"][i][j] is not None]
    assert len(cells) == imp.height and all(i != j for i, j in cells)
    for r in imp.iter_rows(named=True):
        i, j = fams.index(r["family_x"]), fams.index(r["family_y"])
        assert trace["z"][i][j] == r["probability"]
        text = trace["text"][i][j]
        assert f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" in text
        assert f"paired (same test MDP): {r['paired_probability']:.3f}" in text
    assert (out / "figures" / "improvement-matrix.pdf").exists()


def test_versus_figure_draws_its_table(learning_report):
    out, index, _ = learning_report
    from bbrlcore.report import interactive as I

    v = pl.read_parquet(out / "data" / "versus.parquet")
    imp = pl.read_parquet(out / "data" / "aggregate-improvement.parquet")
    mine = imp.filter(pl.col("family_x") == "PSRL")
    assert v.height == 7 == mine.height and set(v["family"]) == {"PSRL"}
    assert set(v["opponent"]) == set(mine["family_y"])
    for r in v.iter_rows(named=True):
        m = mine.filter(pl.col("family_y") == r["opponent"]).row(0, named=True)
        assert r["probability"] == m["probability"]
        assert r["reverse_probability"] == pytest.approx(1 - m["probability"])
        assert r["reverse_ci_low"] == pytest.approx(1 - m["ci_high"])
        want = ("better" if m["ci_low"] > 0.5 else "worse" if m["ci_high"] < 0.5
                else "unclear")
        assert r["verdict"] == want
    assert v["probability"].is_sorted(descending=True)
    html = index.read_text()
    # at the top of the statistics across experiments: before the metrics
    assert html.index('id="fig-versus"') < html.index('id="fig-metrics"')
    fig = _spec(html, "fig-versus")
    main, paired = fig["data"]
    assert main["x"] == v["probability"].to_list()
    assert fig["layout"]["yaxis"]["ticktext"] == v["opponent"].to_list()
    assert main["marker"]["color"] == [I.VERDICT_COLOURS[x] for x in v["verdict"]]
    lo = [x - e for x, e in zip(main["x"], main["error_x"]["arrayminus"], strict=True)]
    assert lo == pytest.approx(v["ci_low"].to_list())
    assert paired["x"] == v["paired_probability"].to_list()
    counts = {k: int((v["verdict"] == k).sum()) for k in ("better", "worse", "unclear")}
    assert (f"PSRL is better than {counts['better']}, worse than {counts['worse']} and not "
            f"clearly different from {counts['unclear']}") in " ".join(html.split())


def test_offline_figure_hidden_when_nothing_learns_offline(learning_report):
    out, _, _ = learning_report
    shown = (out / "experiments" / "GC-GC.html").read_text()  # BAMCP: 2 s offline
    assert 'id="fig-offline"' in shown and "No agent here learns offline" not in shown
    assert (out / "figures" / "GC-GC-offline.pdf").exists()
    hidden = (out / "experiments" / "GC-UGC.html").read_text()  # every offline time 0
    assert 'id="fig-offline"' not in hidden and 'id="fig-online"' in hidden
    assert "No agent here learns offline" in hidden
    assert not (out / "figures" / "GC-UGC-offline.pdf").exists()
    assert (out / "data" / "GC-UGC-offline.parquet").exists()  # the table stays


def test_learning_report_latex(learning_report):
    out, _, _ = learning_report
    tex = (out / "report.tex").read_text()
    for name in ("GC-GC-curves", "GC-UGC-curves", "curves-iqm", "curves-ladder-1",
                 "versus", "improvement-matrix", "GC-GC-offline"):
        assert f"figures/{name}.pdf" in tex, name
    assert "figures/GC-UGC-offline.pdf" not in tex
    assert tex.count("No agent here learns offline") == 3  # every experiment but GC-GC
    assert "Score: the mean discounted return (the paper's score)" in tex
    for line in tex.splitlines():
        if "includegraphics" in line:
            assert (out / line.split("{")[-1].rstrip("}")).exists(), line
    if shutil.which("pdflatex"):
        r = report.compile_latex(out)
        assert r.returncode == 0, r.stdout[-2000:]


def test_familywise_error_points_to_holm(learning_report, tmp_path):
    from bbrlcore.analysis.results import summary_table

    out, index, _ = learning_report
    html = " ".join(index.read_text().split())
    sentence = html.split("Comparisons per experiment and the family-wise error level used")[1]
    sentence = sentence.split("</p>")[0]
    assert "<code>multiple_comparisons: holm</code> in config.yaml" in sentence
    assert "<code>bbrl report --correction holm</code>" in sentence
    assert "GC-GC: 7 comparisons, 0.35" in sentence
    page = " ".join((out / "experiments" / "GC-GC.html").read_text().split())
    assert "family-wise error level 0.35" in page and "--correction holm" in page
    assert "--correction holm" in (out / "report.tex").read_text()
    # with Holm, the level is alpha: nothing to point to
    m = learning_runs(("GC-GC",), n=8, T=6)
    idx = report.build(m, summary_table(m), tmp_path / "holm", pdf=False,
                       correction="holm", bootstrap_resamples=100)
    assert "bbrl report --correction holm" not in idx.read_text()


def test_without_rewards_the_sections_say_so(tmp_path):
    from bbrlcore.analysis.results import summary_table

    m = learning_runs(("GC-GC", "GC-UGC"), n=8, T=6, rewards=False)
    index = report.build(m, summary_table(m), tmp_path, pdf=False, bootstrap_resamples=100)
    html = index.read_text()
    assert report.NO_REWARDS == ("Learning curves need per-step rewards; these runs were "
                                 "made before bbrl recorded them.")
    assert html.count(report.NO_REWARDS) == 1 and 'id="fig-curves-iqm"' not in html
    for exp in ("GC-GC", "GC-UGC"):
        page = (tmp_path / "experiments" / f"{exp}.html").read_text()
        assert page.count(report.NO_REWARDS) == 1 and 'id="fig-curves"' not in page
    tex = (tmp_path / "report.tex").read_text()
    assert tex.count(report.NO_REWARDS) == 3
    assert not [ln for ln in tex.splitlines() if "includegraphics" in ln and "curves" in ln]
    assert not (tmp_path / "data" / "curves.parquet").exists()


def test_the_score_is_the_reports_choice(tmp_path):
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.errors import BBRLError
    from bbrlcore.formats import artefacts

    m = learning_runs(("GC-GC", "GC-UGC"), n=10, T=8)
    with pytest.raises(BBRLError, match="score='total'"):
        report.build(m, summary_table(m), tmp_path / "x", score="total")
    with pytest.raises(BBRLError, match="summary was made with score=discounted"):
        report.build(m, summary_table(m), tmp_path / "x", score="undiscounted")
    assert not (tmp_path / "x").exists()
    out = tmp_path / "u"
    index = report.build(m, summary_table(m, "undiscounted"), out, pdf=False,
                         score="undiscounted", bootstrap_resamples=100)
    assert (pl.read_parquet(out / "data" / "summary.parquet")["score"] == "undiscounted").all()
    best = pl.read_parquet(out / "data" / "GC-GC-best.parquet")
    g = m.filter(pl.col("experiment") == "GC-GC")
    for r in best.iter_rows(named=True):
        want = g.filter(pl.col("agent") == r["agent"])["undiscounted_return"].mean()
        assert r["mean"] == pytest.approx(want)
    _, meta = artefacts.read_artefact(out / "data" / "aggregate-metrics.parquet", "aggregate")
    assert meta["score"] == "undiscounted"
    _, meta = artefacts.read_artefact(out / "data" / "curves.parquet", "curves")
    assert meta["score"] == "undiscounted"
    html = index.read_text()
    assert "Score: the mean undiscounted sum of rewards over the horizon (T = 8)" in html
    assert "mean sum of rewards" in (out / "experiments" / "GC-GC.html").read_text()
    assert "undiscounted sum of rewards" in (out / "report.tex").read_text()


def test_versus_unknown_name_is_one_line_and_writes_nothing(tmp_path):
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.errors import BBRLError

    m = learning_runs(("GC-GC",), n=8, T=6)
    with pytest.raises(BBRLError) as e:
        report.build(m, summary_table(m), tmp_path / "r", versus="nope")
    msg = str(e.value)
    assert "\n" not in msg and "'nope'" in msg
    assert "Random, e-Greedy, Soft-max, BAMCP, BEB, BEB (compat), PSRL, BOSS" in msg
    assert "Optimal" not in msg  # the reference is no contender
    assert not (tmp_path / "r").exists()


def test_versus_of_a_family_left_out_is_a_note(tmp_path):
    from bbrlcore.analysis import aggregate as A
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.errors import BBRLError

    m = learning_runs(("GC-GC", "GC-UGC"), n=8, T=6).filter(
        ~((pl.col("experiment") == "GC-UGC") & (pl.col("algorithm") == "boss")))
    agg = A.compute(m, n_resamples=100)
    with pytest.raises(BBRLError, match="BOSS has no agent within the bounds in GC-UGC"):
        A.versus(agg, "boss")
    index = report.build(m, summary_table(m), tmp_path, pdf=False, bootstrap_resamples=100,
                         versus="BOSS")
    html = index.read_text()
    assert "BOSS has no agent within the bounds in GC-UGC" in html
    assert 'id="fig-versus"' not in html


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["Random", "e-Greedy", "BEB", "BEB (compat)", "PSRL", "OPPS-DS"]),
       st.lists(st.booleans(), min_size=12, max_size=12))
def test_find_family_ignores_case_and_takes_ids(name, upper):
    from bbrlcore.analysis.aggregate import find_family

    fams = ["Random", "e-Greedy", "BEB", "BEB (compat)", "PSRL", "OPPS-DS"]
    typed = "".join(c.upper() if u else c.lower() for c, u in zip(name, upper + [False] * 20,
                                                                  strict=False))
    assert find_family(typed, fams) == name
    assert find_family("e-greedy", fams) == "e-Greedy"
    assert find_family("opps-ds", fams) == "OPPS-DS"


def test_cli_report_score_and_versus(tmp_path, bbrl_cmd, env_with_cache):
    from bbrlcore.formats import artefacts

    m = learning_runs(("GC-GC", "GC-UGC"), n=8, T=6)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    base = bbrl_cmd + ["report", "m.parquet", "--no-pdf", "--bootstrap-resamples", "100"]
    r = subprocess.run(base + ["--versus", "nope", "-o", "bad"], capture_output=True,
                       text=True, env=env_with_cache, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "'nope': no such algorithm" in r.stderr and "PSRL, BOSS" in r.stderr
    assert not (tmp_path / "bad").exists()
    r = subprocess.run(base + ["--score", "undiscounted", "--versus", "PSRL", "-o", "ok"],
                       capture_output=True, text=True, env=env_with_cache, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "ok" / "index.html").read_text()
    assert "Score: the mean undiscounted sum of rewards" in html and 'id="fig-versus"' in html
    assert (pl.read_parquet(tmp_path / "ok" / "data" / "versus.parquet")["family"]
            == "PSRL").all()


def test_what_the_curves_leave_out_is_said_where_the_curves_are(tmp_path, capsys):
    """Issue 33: an experiment without Random, an agent without per-step rewards: the
    summary page lists them beside the curves, each experiment's page says why its
    curves (or one of them) are missing, stderr says it too."""
    from bbrlcore.analysis.results import summary_table

    m = learning_runs(("GC-GC", "GC-UGC", "Grid-Grid"), n=8, T=6)
    m = m.filter(~((pl.col("experiment") == "GC-UGC") & (pl.col("algorithm") == "random")))
    m = m.with_columns(pl.when((pl.col("experiment") == "Grid-Grid")
                               & (pl.col("algorithm") == "psrl")).then(None)
                       .otherwise(pl.col(c)).alias(c)
                       for c in ("rewards", "undiscounted_return"))
    capsys.readouterr()
    index = report.build(m, summary_table(m), tmp_path, pdf=False, bootstrap_resamples=100)
    no_random = ("experiment GC-UGC: no normalised score: no Random agent (the normalised "
                 "score needs Random and Optimal; drawn: the cumulative score and, where the "
                 "runs carry their test MDPs' references, the regret and bbrl's "
                 "DeepSea score)")
    no_psrl = ("experiment Grid-Grid: no learning curve for PSRL (agent psrl): it has no "
               "per-step rewards on any test MDP (a table written before bbrl recorded them, "
               "or a player that records none)")
    err = capsys.readouterr().err
    for line in (no_random, no_psrl):
        assert f"bbrl: warning: left out of the learning curves: {line}\n" in err
    html = index.read_text()
    assert "Left out of the learning curves:" in html
    assert f"<li>{escape(no_random)}</li>" in html and f"<li>{escape(no_psrl)}</li>" in html
    ugc = (tmp_path / "experiments" / "GC-UGC.html").read_text()
    # (issue 41: its other curves are drawn, and what they lack is said)
    assert 'id="fig-curves"' in ugc
    assert ("Left out of these curves: no normalised score: no Random agent (the "
            "normalised score needs Random and Optimal") in ugc
    grid = (tmp_path / "experiments" / "Grid-Grid.html").read_text()
    assert 'id="fig-curves"' in grid
    assert ("Left out of these curves: PSRL (agent psrl): it has no per-step rewards on any "
            "test MDP") in grid
    assert "Left out of these curves" not in (tmp_path / "experiments" / "GC-GC.html"
                                              ).read_text()
    tex = (tmp_path / "report.tex").read_text()
    assert "Left out of the learning curves:" in tex and "Left out of these curves: PSRL" in tex


# ---------------------------------------------------------------------------------------
# Resources: resample counts bounded by memory, the staging directory never left (issue 33)


@pytest.mark.parametrize("command, option", [
    ("curves", "--resamples"), ("aggregate", "--resamples"),
    ("report", "--bootstrap-resamples")])
def test_resamples_beyond_memory_are_one_line_before_any_work(tmp_path, capsys, monkeypatch,
                                                              command, option):
    """``--resamples 1000000000`` segfaulted at 6 GB (curves, report: leaving its staging
    directory) or ended in a MemoryError traceback (aggregate)."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    monkeypatch.chdir(tmp_path)
    artefacts.write_artefact("m.parquet", learning_runs(("GC-GC", "GC-UGC"), n=8, T=6),
                             "merged", {})
    extra = ["--no-pdf", "-o", "rep"] if command == "report" else []
    capsys.readouterr()
    assert main([command, "m.parquet", option, "1000000000", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"bbrl: error: {option} 1000000000: ")
    assert "bootstrap would need " in err[0] and " of memory, above the limit of " in err[0]
    assert "of the physical memory" in err[0] and "resamples fit" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.parquet"]


def test_the_memory_bound_is_the_least_of_the_limits_and_names_what_fits(monkeypatch):
    import resource

    from bbrlcore.analysis import aggregate as A
    from bbrlcore.analysis import estimators as S
    from bbrlcore.errors import BBRLError

    monkeypatch.setattr(resource, "getrlimit", lambda what: (2**30, resource.RLIM_INFINITY))
    limit, what = S.memory_limit()
    assert limit == 2**29 and "address-space limit (ulimit -v), 1.07 GB" in what
    m = learning_runs(("GC-GC", "GC-UGC"), n=8, T=6)
    prob, _ = A._problem(A.normalised_scores(m), A.best_agents(m), None)
    per, fixed = S.bootstrap_bytes(prob)
    most = int((2**29 - fixed) // per)
    A.check_bootstrap_memory(m, most, "--resamples")
    with pytest.raises(BBRLError, match=rf"^--resamples {most + 1}: the bootstrap would "
                       rf"need 537 MB of memory, above the limit of 537 MB \(0.5 of the "
                       rf"address-space limit \(ulimit -v\), 1.07 GB\); at most {most:,} "
                       "resamples fit$"):
        A.compute(m, n_resamples=most + 1, resamples_option="--resamples")


def test_the_bootstraps_memory_estimate_holds_what_they_allocate():
    """The bound is only as good as the estimate: numpy's allocations (traced) stay
    within it, and are not far below it."""
    import tracemalloc

    from bbrlcore.analysis import aggregate as A
    from bbrlcore.analysis import curves as C
    from bbrlcore.analysis import estimators as S

    m = learning_runs(("GC-GC", "GC-UGC"), n=12, T=40)
    R = 4000
    prob, _ = A._problem(A.normalised_scores(m), A.best_agents(m), None)
    A.compute(m, n_resamples=100)  # (compiled, warm)
    per, fixed = S.bootstrap_bytes(prob)
    tracemalloc.start()
    try:
        S._bootstrap(prob, R, 0, 0.95)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.5 * (per * R + fixed) < peak <= per * R + fixed
    sizes = [12, 12]
    per, fixed = C.bootstrap_bytes(sizes, 40)
    C.curves(m, n_resamples=100)
    tracemalloc.start()
    try:
        C.curves(m, n_resamples=R)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.4 * (per * R + fixed) < peak <= per * R + fixed


def _stages(d):
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


#: Where the signal tests hold ``bbrl report`` until the signal arrives
#: (tests/signalled_report.py), and the signal sent there.
SIGNAL_POINTS = [("inputs", "SIGTERM"), ("python", "SIGTERM"), ("python", "SIGHUP"),
                 ("polars", "SIGTERM"), ("swallowed", "SIGTERM"), ("moving", "SIGTERM")]


@pytest.mark.parametrize(("point", "sig"), SIGNAL_POINTS)
def test_a_terminated_report_ends_as_the_signal_wherever_it_lands(tmp_path, env_with_cache,
                                                                   point, sig):
    """SIGTERM (a job's time limit) or SIGHUP during the report ends it with 128 + the
    signal's number and removes the staging directory, wherever the signal lands: while
    the inputs are read, in the report's code, in a function polars calls back (polars
    turns the signal's SystemExit into one whose code is its message: the report ended
    with status 1), in code that swallows it (the report must not then be moved into
    place), while the finished report is moved over a former one (held: the report is
    moved whole first, not mixed with the former one's files).
    The report waits at each point for the signal (tests/signalled_report.py): the
    outcome does not depend on timing."""
    import signal
    import sys
    import time
    from pathlib import Path

    from bbrlcore.formats import artefacts

    artefacts.write_artefact(tmp_path / "m.parquet",
                             learning_runs(("GC-GC", "GC-UGC"), n=8, T=6), "merged", {})
    out = tmp_path / "out"
    if point == "moving":  # a former report there
        (out / "rep").mkdir(parents=True)
        (out / "rep" / "old.txt").write_text("kept\n")
    marker = tmp_path / "reached"
    helper = Path(__file__).with_name("signalled_report.py")
    proc = subprocess.Popen([sys.executable, str(helper), point, str(marker), "report",
                             "m.parquet", "--no-pdf", "--bootstrap-resamples", "100",
                             "-o", "out/rep"],
                            cwd=tmp_path, env=env_with_cache, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while not marker.exists() and proc.poll() is None:
            time.sleep(0.02)
        assert marker.exists(), proc.communicate()[1]
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + getattr(signal, sig), err
    if point == "moving":  # moved whole, then ended; no staging directory beside it
        assert (out / "rep" / "index.html").exists() and (out / "rep" / "old.txt").exists()
        assert sorted(p.name for p in out.iterdir()) == ["rep"]
    else:  # nothing written, not even the output's parent directory
        assert not out.exists(), sorted(out.rglob("*"))


def test_a_killed_reports_staging_directory_is_removed_by_the_next(tmp_path, bbrl_cmd,
                                                                    env_with_cache):
    """A staging directory left by a report killed outright (no handler runs) is removed
    by the next report on this machine, while one of a running process (or of another
    machine) stays."""
    import os
    import socket

    from bbrlcore.formats import artefacts

    artefacts.write_artefact(tmp_path / "m.parquet",
                             learning_runs(("GC-GC", "GC-UGC"), n=8, T=6), "merged", {})
    host = socket.gethostname().replace(".", "-")
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f".rep.{host}.{dead.pid}.abc.tmp"
    alive = tmp_path / f".rep.{host}.{os.getppid()}.xyz.tmp"
    other = tmp_path / f".rep.elsewhere.{dead.pid}.abc.tmp"
    for d in (gone, alive, other):
        (d / "data").mkdir(parents=True)
    r = subprocess.run(bbrl_cmd + ["report", "m.parquet", "--no-pdf",
                                   "--bootstrap-resamples", "100", "-o", "rep"],
                       cwd=tmp_path, env=env_with_cache, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert _stages(tmp_path) == sorted([alive.name, other.name])
    assert (tmp_path / "rep" / "index.html").exists()

# ---------------------------------------------------------------------------------------
# The report, read by a researcher (issue 33): one score everywhere, the reference of the
# score, normalised scores above 1 flagged, readable figures


def _axis_titles(fig):
    """Every axis title and the title of a plotly figure, as one text."""
    lay = fig["layout"]
    out = [str(lay.get("title", {}).get("text", ""))]
    for k, v in lay.items():
        if k.startswith(("xaxis", "yaxis")) and isinstance(v, dict):
            out.append(str(v.get("title", {}).get("text", "")))
    for m in lay.get("updatemenus", []):
        for b in m.get("buttons", []):
            for a in b.get("args", [])[1:]:
                out += [str(x) for x in a.values()] if isinstance(a, dict) else []
    return " | ".join(out)


@pytest.mark.parametrize("score", ["discounted", "undiscounted"])
def test_every_figure_names_the_score(score, tmp_path):
    """The score that ranks the agents is the one every figure draws and names: the
    experiment pages' learning curves accumulate it (not always the sum of rewards)."""
    from bbrlcore.analysis.results import summary_table

    m = learning_runs(("GC-GC", "DeepSea-5-DeepSea-5", "DeepSea-10-DeepSea-10"), n=8, T=10)
    index = report.build(m, summary_table(m, score), tmp_path, pdf=False, score=score,
                         bootstrap_resamples=100, versus="psrl")
    name = figures.SCORE_NAMES[score]
    so_far = "discounted return so far" if score == "discounted" else "sum of rewards so far"
    html = index.read_text()
    for fig_id in ("fig-metrics", "fig-profiles", "fig-improvement", "fig-versus"):
        assert name in _axis_titles(_spec(html, fig_id)), fig_id
    acc = "discounted" if score == "discounted" else "sum of rewards"
    assert acc in _axis_titles(_spec(html, "fig-curves-iqm"))
    lad = _axis_titles(_spec(html, "fig-curves-ladder-1"))
    assert so_far in lad and f"normalised score ({acc})" in lad
    page = (tmp_path / "experiments" / "GC-GC.html").read_text()
    assert name in _axis_titles(_spec(page, "fig-map"))
    assert ("discounted return" if score == "discounted" else "sum of rewards") in \
        _axis_titles(_spec(page, "fig-online"))
    curves = _spec(page, "fig-curves")
    assert so_far in _axis_titles(curves)
    assert curves["layout"]["updatemenus"][0]["active"] == 0  # the score's cumulative first
    table = pl.read_parquet(tmp_path / "data" / "curves.parquet")
    col = "discounted_return" if score == "discounted" else "undiscounted_return"
    g = m.filter((pl.col("experiment") == "GC-GC") & (pl.col("agent") == "psrl"))
    end = table.filter((pl.col("experiment") == "GC-GC") & (pl.col("agent") == "psrl")
                       & (pl.col("t") == 10))
    assert end["cumulative"][0] == pytest.approx(g[col].mean())


def _beaten_runs(n=30, T=20, better=0.97, optimal_agents=("optimal",)):
    """Synthetic runs in which an agent ('beb__beta=1', p = ``better``) beats Optimal
    (p = 0.9) on average; ``optimal_agents`` the ids of the Optimal agents (the second,
    if any, a little better: the undiscounted criterion's)."""
    from synthetic_runs import ALGORITHMS

    algs = [a for a in ALGORITHMS if a[0] not in ("optimal", "beb")]
    algs.append(("beb", "beb__beta=1", False, better, better, 1.0, 0.0))
    for k, agent in enumerate(optimal_agents):
        algs.append(("optimal", agent, False, 0.9 + 0.02 * k, 0.9 + 0.02 * k, 1.0, 0.0))
    return learning_runs(("GC-GC", "GC-UGC"), algorithms=tuple(algs), n=n, T=T)


def test_normalised_scores_above_one_are_flagged(tmp_path):
    """An agent that beats Optimal on average is listed at the top of the summary and of
    its experiment's page, with the paired difference and its interval, marked † in the
    tables (HTML and LaTeX), and in data/above-reference.parquet; none with an honest
    reference."""
    from bbrlcore.analysis.results import above_reference, summary_table

    m = _beaten_runs()
    s = summary_table(m)
    index = report.build(m, s, tmp_path / "r", pdf=False, bootstrap_resamples=100)
    above = pl.read_parquet(tmp_path / "r" / "data" / "above-reference.parquet")
    assert set(above["agent"]) == {"beb__beta=1"} and above.height == 2
    assert above["significant"].all() and (above["normalised_score"] > 1).all()
    for r in above.iter_rows(named=True):
        d = (m.filter((pl.col("experiment") == r["experiment"])
                      & (pl.col("agent") == "beb__beta=1")).sort("mdp_index")
             ["discounted_return"].to_numpy()
             - m.filter((pl.col("experiment") == r["experiment"])
                        & (pl.col("agent") == "optimal")).sort("mdp_index")
             ["discounted_return"].to_numpy())
        assert r["difference"] == pytest.approx(d.mean())
        half = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
        assert r["difference_low"] == pytest.approx(d.mean() - half)
    html = " ".join(index.read_text().split())
    assert 'id="above-reference"' in html and "Normalised scores above 1" in html
    assert "beb__beta=1 scores" in html and "beyond sampling noise" in html
    page = " ".join((tmp_path / "r" / "experiments" / "GC-GC.html").read_text().split())
    row = [p for p in page.split("<tr") if ">BEB<" in p][0]
    assert "†" in row and 'title="beb__beta=1 scores' in row
    tex = (tmp_path / "r" / "report.tex").read_text()
    assert "Normalised scores above 1" in tex and "$^\\dagger$" in tex
    # an agent below Optimal: nothing flagged
    honest = _beaten_runs(better=0.5)
    assert above_reference(summary_table(honest), honest).is_empty()
    index = report.build(honest, summary_table(honest), tmp_path / "h", pdf=False,
                         bootstrap_resamples=100)
    assert 'id="above-reference"' not in index.read_text()


def test_the_reference_is_the_optimal_of_the_score(tmp_path, bbrl_cmd, env_with_cache):
    """With the two Optimal agents, each score is normalised by its own (the page names
    it); with only the discounted one, the undiscounted report warns in one line on the
    pages and on stderr."""
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.formats import artefacts

    both = _beaten_runs(better=0.5, optimal_agents=("optimal",
                                                    "optimal__criterion=undiscounted"))
    for score, ref in (("discounted", "optimal"),
                       ("undiscounted", "optimal__criterion=undiscounted")):
        s = summary_table(both, score)
        assert s.filter(pl.col("agent") == ref)["normalised_score"].to_list() == [1.0, 1.0]
        out = tmp_path / score
        index = report.build(both, s, out, pdf=False, score=score, bootstrap_resamples=100)
        html = index.read_text()
        assert 'id="reference-warning"' not in html
        assert "Optimal for the sum of rewards over the horizon" in html or score != \
            "undiscounted"
        page = (out / "experiments" / "GC-GC.html").read_text()
        assert f"the\nreference being <code>{ref}</code>" in page or \
            f"reference being <code>{ref}</code>" in " ".join(page.split())
        norm = pl.read_parquet(out / "data" / "aggregate-normalised.parquet")
        r = norm.filter(pl.col("agent") == ref)
        assert r["normalised_score"].mean() == pytest.approx(1.0)
    only = _beaten_runs(better=0.5)
    index = report.build(only, summary_table(only, "undiscounted"), tmp_path / "w",
                         pdf=False, score="undiscounted", bootstrap_resamples=100)
    html = " ".join(index.read_text().split())
    assert 'id="reference-warning"' in html
    assert "optimal for the discounted criterion, not for the undiscounted score" in html
    assert "Warning, the reference" in (tmp_path / "w" / "report.tex").read_text()
    artefacts.write_artefact(tmp_path / "m.parquet", only, "merged", {})
    r = subprocess.run(bbrl_cmd + ["report", "m.parquet", "--no-pdf", "--score",
                                   "undiscounted", "--bootstrap-resamples", "100", "-o",
                                   "cli"], capture_output=True, text=True,
                       env=env_with_cache, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("bbrl: warning:")]
    assert len(warn) == 1 and "GC-GC, GC-UGC" in warn[0]


def test_experiments_of_several_horizons_are_said_so(tmp_path):
    """Issue 41: the report's header said "T = 200000" (the largest) for experiments of
    T = 100,000, 140,000 and 200,000; it gives each experiment's T (or their range), in
    the header of an undiscounted report and in the learning curves, HTML and LaTeX."""
    from bbrlcore.analysis.results import summary_table

    merged = pl.concat([learning_runs(("GC-GC",), n=6, T=6),
                        learning_runs(("GC-UGC",), n=6, T=8)])
    report.build(merged, summary_table(merged, "undiscounted"), tmp_path, pdf=False,
                 bootstrap_resamples=100, score="undiscounted")
    html = (tmp_path / "index.html").read_text()
    tex = (tmp_path / "report.tex").read_text()
    assert "(T = 6 or 8, by experiment)" in html
    assert html.count("T = 6 or 8, by experiment") == 2
    assert tex.count("($T = 6$ or $8$, by experiment)") == 2 and "$T = 8$)" not in tex
    assert report.horizon_text([250])["tex"] == "$T = 250$"  # (one T: as before)


def test_family_column_is_an_expression_equal_to_family_per_row():
    """``with_family`` called Python for every row inside polars (``map_elements``): a
    SIGTERM landing there came out of polars as another error. It is a polars expression
    now, giving each row's ``family(algorithm, compat)`` exactly: on a summary of real
    run tables (compat variants, Random, Optimal), with a plugin's display name, a null
    ``compat`` and no row at all."""
    from bbrlcore.analysis.results import summary_table

    s = summary_table(learning_runs(("GC-GC", "RiverSwim-6-URiverSwim-6"), n=4, T=6))
    s = pl.concat([s, s.head(2).with_columns(pl.lit("my-plugin").alias("algorithm"),
                                             pl.lit(None, pl.Boolean).alias("compat"))],
                  how="vertical_relaxed")
    assert s["compat"].sum() > 0 and s["compat"].null_count() == 2
    for shown in ({}, {"my-plugin": "Mine", "psrl": "PSRL-1"}):
        with analysis.display_names(shown):
            got = analysis.with_family(s)
            want = [analysis.family(a, bool(c)) for a, c in s.select("algorithm", "compat")
                    .iter_rows()]
            assert got["family"].to_list() == want
            assert got.drop("family").equals(s) and got["family"].dtype == pl.Utf8
            assert analysis.with_family(s.clear())["family"].dtype == pl.Utf8
    assert "Mine" not in analysis.with_family(s)["family"].to_list()


def test_hardness_boxes_in_size_order_without_overlap():
    """RiverSwim-12 came before RiverSwim-6 (names sorted as text) and the labels ran into
    each other: the sizes are in numeric order and no two labels overlap."""
    rng = np.random.default_rng(0)
    tests = ["RiverSwim-20", "GC", "RiverSwim-12", "DeepSea-10", "RiverSwim-6",
             "DeepSea-5", "RiverSwim-6-prand0.1", "UGrid"]
    h = pl.DataFrame({"test": [t for t in tests for _ in range(5)],
                      "mdp_index": [i for _ in tests for i in range(5)],
                      "optimal_value": rng.random(5 * len(tests)),
                      "diameter": rng.random(5 * len(tests)) * 10 + 1})
    fig = figures.hardness_figure(h)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels == ["GC", "UGrid", "DeepSea-5", "DeepSea-10", "RiverSwim-6",
                          "RiverSwim-12", "RiverSwim-20", "RiverSwim-6-prand0.1"]
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
        for a, b in zip(boxes, boxes[1:], strict=False):
            assert not a.overlaps(b)
    figures.plt.close(fig)


def test_static_constraint_map_writes_the_algorithms_in_its_cells():
    """The map's cells showed a marker per algorithm (a count in the HTML): the static
    figure (PNG, PDF) now writes the short names of the algorithms among the best."""
    scores, ret = synthetic()
    cmap = analysis.constraint_map(scores, ret, alpha=0.05, n_bounds=4)
    styles = figures.style_map(["A", "B", "C"])
    fig = figures.constraint_map_figure(cmap, "t", styles, "undiscounted")
    ax = fig.axes[0]
    written = {(int(t.get_position()[1]), int(t.get_position()[0])): t.get_text()
               for t in ax.texts}
    for (off, on), fams in figures.map_cells(cmap, styles).items():
        assert set(written[(off, on)].replace("\n", ", ").split(", ")) == set(fams)
    assert written[(0, 3)] in ("B, C", "B\nC")
    assert "sum of rewards" in ax.get_title()
    figures.plt.close(fig)


def _ladder_scores():
    """score_table rows of a DeepSea ladder (sizes 5, 10) from synthetic runs and a
    hand-made hardness table."""
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.report import problems as PR

    m = learning_runs(("DeepSea-5-DeepSea-5", "DeepSea-10-DeepSea-10"), n=12, T=10)
    s = report.constraints.with_family(summary_table(m))
    h = pl.DataFrame({"test": ["DeepSea-5"] * 3 + ["DeepSea-10"] * 3,
                      "mdp_index": [0, 1, 2] * 2, "optimal_value": [1.0] * 6,
                      "diameter": [5.0, 6, 7, 10, 11, 12], "value_norm": [0.1] * 6,
                      "suboptimality_gaps": [3.0] * 6})
    fams = report.constraints.family_order(s["family"].to_list())
    hmap = PR.hardness_map(h, s)
    scores = PR.score_table(s, hmap, fams)
    return m, s, scores, PR.ladder_table(scores), figures.style_map(fams)


def test_score_against_size_and_hardness_have_intervals():
    """The normalised scores along a ladder and against hardness carry their 95%
    interval: the summary's mean ± 1.96·s/√N through the normalisation, drawn as error
    bars in the static and the interactive figures."""
    from bbrlcore.report import interactive as I

    m, s, scores, ladder, styles = _ladder_scores()
    for r in scores.iter_rows(named=True):
        g = m.filter(pl.col("experiment") == r["experiment"])
        rand = g.filter(pl.col("algorithm") == "random")["discounted_return"].mean()
        opt = g.filter(pl.col("algorithm") == "optimal")["discounted_return"].mean()
        x = g.filter(pl.col("agent") == r["agent"])["discounted_return"].to_numpy()
        half = 1.96 * x.std(ddof=1) / np.sqrt(len(x))
        assert r["normalised_low"] == pytest.approx((x.mean() - half - rand) / (opt - rand))
        assert r["normalised_high"] == pytest.approx((x.mean() + half - rand) / (opt - rand))
    fig = I.score_vs_size(ladder, styles)
    for tr in fig["data"]:
        h = ladder.filter(pl.col("family") == tr["name"]).sort("size")
        assert tr["error_y"]["array"] == pytest.approx(
            (h["normalised_high"] - h["normalised_score"]).to_list())
        assert tr["error_y"]["arrayminus"] == pytest.approx(
            (h["normalised_score"] - h["normalised_low"]).to_list())
    assert "discounted return" in _axis_titles(fig)
    hard = I.score_vs_hardness(scores, styles, "undiscounted")
    assert all(len(tr["error_y"]["array"]) == len(tr["y"]) for tr in hard["data"])
    assert "sum of rewards" in _axis_titles(hard)
    for f in (figures.score_vs_size_figure(ladder, styles),
              figures.score_vs_hardness_figure(scores, styles)):
        bars = [c for ax in f.axes for c in ax.containers
                if isinstance(c, figures.matplotlib.container.ErrorbarContainer)]
        assert bars and all(c.has_yerr for c in bars)
        figures.plt.close(f)


def test_ladder_panels_share_their_y_range(learning_report):
    """The ladders' panels had y-ranges of their own: every view of a ladder is on one
    y-range (static: a shared axis per row; interactive: the axes match the first)."""
    out, index, _ = learning_report
    lad = _spec(index.read_text(), "fig-curves-ladder-1")
    assert lad["layout"]["yaxis2"]["matches"] == "y"
    table = pl.read_parquet(out / "data" / "curves.parquet")
    panels = [("DeepSea-5-DeepSea-5", "size 5"), ("DeepSea-10-DeepSea-10", "size 10")]
    fig = figures.learning_curves_figure(table, panels, figures.style_map(
        report.constraints.family_order(table["family"].unique().to_list())), "discounted")
    for row in fig.axes[:0] or [fig.axes[0:2], fig.axes[2:4], fig.axes[4:6]]:
        assert row[0].get_ylim() == row[1].get_ylim()
    figures.plt.close(fig)


def test_the_deepsea_scores_say_whose_score_is_which(tmp_path):
    """A DeepSea ladder of bsuite's sizes 10 and 12 (issue 43): the report shows bsuite's
    score, as bsuite computes it, beside bbrl's, each named, in HTML and LaTeX; a ladder
    off bsuite's sweep says in one sentence why bsuite's score is not given."""
    import jinja2

    from bbrlcore.analysis import exploration as X

    def tables(sizes, E):
        rows = []
        for size in sizes:
            for alg, agent, at in (("random", "random", None),
                                   ("e-greedy", "e-greedy__epsilon=0.1", 150)):
                for i in range(3):
                    G = (np.full(E, -0.005) if at is None else
                         np.where(np.arange(1, E + 1) >= at + i, 0.99, -0.005))
                    rows.append(X._deepsea_run(size, E, alg, agent, i, G))
        m = pl.DataFrame(rows)
        best = (m.select("experiment", "agent", "algorithm").unique(maintain_order=True)
                .with_columns(pl.col("algorithm").replace({"random": "Random",
                                                           "e-greedy": "e-Greedy"})
                              .alias("family")))
        return {**X.bbrl_deepsea_scores(m, best, n_resamples=100),
                **X.bsuite_deepsea_scores(m, best)}

    styles = figures.style_map(["Random", "e-Greedy"])
    items = report.deepsea_items(tables((10, 12), 1200), styles, tmp_path)
    assert len(items) == 1 and items[0]["name"] == "DeepSea, uniform prior"
    b = {r["family"]: r for r in items[0]["bsuite"]}
    # e-Greedy's first run: 149 bad episodes of its first 170 (0.876 < 0.9, at the logged
    # episode 170); Random never crosses and keeps its last logged episode, 1,200
    assert b["e-Greedy"]["learning"] == "10: 170, 12: 170" and b["e-Greedy"]["score"] == 1.0
    assert b["Random"]["learning"] == "10: –, 12: –" and b["Random"]["score"] == 0.0
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(report.TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html"]))
    html = env.from_string('{% from "_macros.html.j2" import deepsea_scores %}'
                           "{{ deepsea_scores(items) }}").render(items=items)
    assert "<strong>bsuite's DeepSea score</strong>, exactly as bsuite 0.3.6" in html
    assert "<strong>bbrl's DeepSea score</strong> (bbrl's many-MDP form, not " \
           "bsuite's number)" in html
    assert "<td>e-Greedy</td><td>1.00</td><td>2 of 2 (10–12)</td><td>10: 170, 12: 170</td>" \
           in html
    assert "not run: 14–50 (19 of 21)" in html
    assert html.index("bsuite's score</th>") < html.index("bbrl's score</th>")
    tex_env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(report.TEMPLATES), block_start_string="((*",
        block_end_string="*))", variable_start_string="(((", variable_end_string=")))",
        comment_start_string="((#", comment_end_string="#))", autoescape=False)
    tex_env.filters["tex"] = report._tex_escape
    tex = tex_env.from_string('((* from "_macros.tex.j2" import deepsea_scores *))'
                              "(((deepsea_scores(items))))").render(items=items)
    assert "bsuite's DeepSea score} exactly as bsuite 0.3.6" in tex
    assert ("Random: 0.00, 0 of 2 sizes beat dithering, unfinished; e-Greedy: 1.00, 2 of 2 "
            "sizes beat dithering, unfinished.") in tex
    assert "bbrl's DeepSea score (not bsuite's number)" in tex
    off = report.deepsea_items(tables((4,), 40), styles, tmp_path)[0]
    assert off["bsuite"] == [] and off["bsuite_note"] == (
        "no size of bsuite's sweep was run (sizes run: 4)")
    html = env.from_string('{% from "_macros.html.j2" import deepsea_scores %}'
                           "{{ deepsea_scores(items) }}").render(items=[off])
    assert "bsuite's DeepSea score: not given: no size of bsuite's sweep was run " \
           "(sizes run: 4)" in html


def test_html_pages_escape_what_they_show():
    """The report's HTML templates (``*.html.j2``) escape every value: a name holding
    markup (a plugin's, a distribution's) shows as text and cannot inject a tag."""
    env = report.html_environment()
    assert env.autoescape("index.html.j2") and env.autoescape("experiment.html.j2")
    html = env.from_string("<td>{{ name }}</td>").render(name="<script>x</script>")
    assert html == "<td>&lt;script&gt;x&lt;/script&gt;</td>"
