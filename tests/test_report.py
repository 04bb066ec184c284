"""Export: the constraint map on synthetic agents with a known answer, figures, reports."""

import json
import shutil
import subprocess

import numpy as np
import polars as pl
import pytest

import reference_hardness  # the former dense diameter (tests/)
from bbrlcore import protocol as E
from bbrlcore import report
from bbrlcore.analysis import constraints as analysis
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import hardness
from bbrlcore.report import figures


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


def test_html_report(small_report):
    """A summary page up front (statistics across experiments, best agents, links), a page
    per experiment with its interactive figures, plotly.js beside them (no network)."""
    out, index, summary = small_report
    html = index.read_text()
    assert html.count("<h2") >= 3 and "GDL-UGDL" in html and "GDL-GDL" in html
    assert 'id="aggregates">Across experiments' in html and "Hardness" in html
    # metrics, profiles, improvement; the hardness map and scores against hardness (a
    # single GDL has no ladder of sizes)
    assert html.count('class="bbrl-figure"') == 5
    assert 'href="experiments/GDL-GDL.html"' in html and 'href="experiments/GDL-UGDL.html"' in html
    assert '<script src="plotly.min.js">' in html and "http" not in html.split("<body>")[0]
    assert (out / "plotly.min.js").stat().st_size > 1_000_000
    for exp in ("GDL-GDL", "GDL-UGDL"):
        page = (out / "experiments" / f"{exp}.html").read_text()
        assert page.count('class="bbrl-figure"') == 3  # offline, online, constraint map
        assert '<script src="../plotly.min.js">' in page
        assert "e-greedy__epsilon=0.1" in page  # hover data: the agent ids
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
    # per experiment 3, the hardness spread, the hardness map, scores against hardness
    assert "\\toprule" in tex and tex.count("\\includegraphics") == 2 * 3 + 1 + 2
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
    from bbrlcore.report import interactive as I

    trace = fig["data"][0]
    cells = _map_cells_from_table(cmap)
    offs = sorted(cmap["offline_index"].unique().to_list())
    ons = sorted(cmap["online_index"].unique().to_list())
    assert len(trace["z"]) == len(offs) and all(len(r) == len(ons) for r in trace["z"])
    for j, off in enumerate(offs):
        for i, on in enumerate(ons):
            z, text, want = trace["z"][j][i], trace["text"][j][i], cells[(on, off)]
            if want is None:
                assert z is None and text == I.MAP_EMPTY, (off, on)
                continue
            best, worse = want
            assert z == len(best), (off, on, z, best)
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
    loose = fig["data"][0]["text"][0][-1]
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
