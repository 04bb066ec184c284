"""The report in a real browser, and its LaTeX compiled (issue "Statistics a reviewer
trusts"). Chromium and pdflatex come from Debian's packages, installed by the test when
missing (tests/system_tools.py); where they cannot be installed the tests skip with the
reason, except under CI=true, where they fail."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bbrlcore import protocol as E
from bbrlcore import report
from bbrlcore.analysis.results import merge_tables, summary_table
from bbrlcore.mdp import distributions as D
from synthetic_runs import learning_runs
from system_tools import require

ROOT = Path(__file__).resolve().parents[1]
#: Where the screenshots are kept (a test artefact; ignored by git).
ARTIFACTS = ROOT / "test-artifacts"

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
                  "--v=0", "--virtual-time-budget=8000", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser-report")
    tables, sets = [], []
    for test in ("GC", "GDL"):
        ts = E.new_test_set(D.builtin(test), 16, 0.95, 40, seed=2)
        sets.append(ts)  # the hardness sections' figures render too
        for prior in (test, "U" + test):
            for alg, params in [("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.1"}),
                                ("beb", {"beta": "1"}), ("beb", {"beta": "1", "compat": "true"})]:
                agent = E.train_agent(alg, params, D.builtin(prior), progress=False)
                tables.append(E.run_agent(ts, agent, progress=False))
    merged = merge_tables(tables)
    index = report.build(merged, summary_table(merged), out, sets, pdf=False,
                         bootstrap_resamples=300)
    return out, index


@pytest.fixture(scope="module")
def learning(tmp_path_factory):
    """A report of synthetic runs with per-step rewards (tests/synthetic_runs.py): eight
    algorithms (56 ordered pairs), a ladder of two sizes, one algorithm against the others."""
    out = tmp_path_factory.mktemp("browser-learning")
    merged = learning_runs(("GC-GC", "GC-UGC", "DeepSea-5-DeepSea-5", "DeepSea-10-DeepSea-10"),
                           offline={("GC-GC", "bamcp__K=10__depth=5"): 2.0})
    index = report.build(merged, summary_table(merged), out, pdf=False,
                         bootstrap_resamples=300, versus="psrl")
    return out, index


def _check_page(chromium: str, page: Path, tmp: Path, at_least: int) -> str:
    """Every interactive figure of ``page`` drew itself, with no console error; the DOM."""
    dom, log = _chromium(chromium, page, tmp, "--dump-dom")
    expected = page.read_text().count('class="bbrl-figure"')
    assert expected >= at_least, (page.name, expected)
    rendered = len(re.findall(r'class="bbrl-figure js-plotly-plot"', dom))
    assert rendered == expected, (page.name, rendered, expected)
    assert dom.count('class="main-svg"') >= expected  # each figure drew its SVG
    errors = [ln for ln in log.splitlines()
              if "CONSOLE" in ln and ("ERROR" in ln or "Uncaught" in ln)]
    assert not errors, errors
    return dom


def _chromium(chromium: str, page: Path, tmp: Path, *extra: str) -> tuple[str, str]:
    r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}",
                        *extra, page.as_uri()], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


def test_every_figure_renders_without_console_errors(built, tmp_path):
    chromium = require("chromium", ["chromium"])
    out, index = built
    pages = [index, *sorted((out / "experiments").glob("*.html"))]
    assert len(pages) == 5
    for page in pages:  # experiment pages: online, map (nothing learns offline here)
        _check_page(chromium, page, tmp_path, 2)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-summary.png"
    shot.unlink(missing_ok=True)
    _chromium(chromium, index, tmp_path, f"--screenshot={shot}", "--window-size=1400,2400")
    assert shot.exists() and shot.stat().st_size > 20_000
    _chromium(chromium, out / "experiments" / "GC-UGC.html", tmp_path,
              f"--screenshot={ARTIFACTS / 'report-experiment.png'}", "--window-size=1400,1800")


def test_curves_and_comparisons_render_without_console_errors(learning, tmp_path):
    """Issues 25 and 28 in a real browser: the learning curves (per experiment, the IQM
    against t, the ladder side by side), the P(X > Y) matrix and one algorithm against the
    others draw with no console error; screenshots kept in test-artifacts/."""
    chromium = require("chromium", ["chromium"])
    out, index = learning
    dom = _check_page(chromium, index, tmp_path, 6)
    for fig in ("fig-versus", "fig-improvement", "fig-curves-iqm", "fig-curves-ladder-1"):
        assert f'id="{fig}"' in dom, fig
    # the matrix drew its 56 labelled cells (8 algorithms), the versus its 7 rows
    matrix = dom.split('id="fig-improvement"')[1].split("</figure>")[0]
    assert len(re.findall(r'class="textpoint"', matrix)) >= 56 or matrix.count(">0.") >= 56
    for page in sorted((out / "experiments").glob("*.html")):
        page_dom = _check_page(chromium, page, tmp_path, 3)  # online, map, curves
        assert 'id="fig-curves"' in page_dom
        # the view buttons are there
        assert "normalised score" in page_dom and "cumulative shortfall" in page_dom
    ARTIFACTS.mkdir(exist_ok=True)
    shots = {"report-versus.png": (index, "1400,2000"),
             "report-matrix-curves.png": (index, "1400,4200"),
             "report-curves-experiment.png": (out / "experiments" / "GC-GC.html", "1400,2400")}
    for name, (page, size) in shots.items():
        shot = ARTIFACTS / name
        shot.unlink(missing_ok=True)
        _chromium(chromium, page, tmp_path, f"--screenshot={shot}", f"--window-size={size}")
        assert shot.exists() and shot.stat().st_size > 20_000, name


def test_curve_view_buttons_switch_in_the_browser(learning, tmp_path):
    """Pressing each view button of a learning-curve figure (``Plotly.update`` with the
    button's arguments, what a click does) redraws every trace with that view's data and
    axis title, with no console error."""
    chromium = require("chromium", ["chromium"])
    out, index = learning
    page = (out / "experiments" / "GC-GC.html").read_text()
    spec = page.split('id="fig-curves"><script type="application/json">')[1].split(
        "</script>")[0]
    ladder = index.read_text().split(
        'id="fig-curves-ladder-1"><script type="application/json">')[1].split("</script>")[0]
    harness = out / "buttons.html"
    harness.write_text("""<!DOCTYPE html><html><head><meta charset="utf-8">
<script src="plotly.min.js"></script></head><body><div id="a"></div><div id="b"></div>
<pre id="result">pending</pre><script>
async function run(id, spec) {
  var div = document.getElementById(id);
  await Plotly.newPlot(div, spec.data, spec.layout);
  var out = [];
  for (const b of spec.layout.updatemenus[0].buttons) {
    await Plotly.update(div, b.args[0], b.args[1]);
    var ok = div.data.every(function (tr, i) {
      return JSON.stringify(tr.y) === JSON.stringify(b.args[0].y[i]); });
    out.push(b.label + ":" + ok + ":" + div.layout.yaxis.title.text);
  }
  return out.join("|");
}
(async function () {
  var r = [await run("a", """ + spec + """), await run("b", """ + ladder + """)];
  document.getElementById("result").textContent = "done " + r.join(" || ");
})().catch(function (e) { console.error("harness: " + e); });
</script></body></html>""")
    dom, log = _chromium(chromium, harness, tmp_path, "--dump-dom")
    errors = [ln for ln in log.splitlines()
              if "CONSOLE" in ln and ("ERROR" in ln or "Uncaught" in ln)]
    assert not errors, errors
    result = dom.split('<pre id="result">')[1].split("</pre>")[0]
    assert result.startswith("done "), result
    # the axis names the score (issue 33): the report's, discounted
    for label in ("cumulative reward:true:mean discounted return so far",
                  "normalised score:true:normalised score",
                  "cumulative shortfall:true:cumulative shortfall"):
        assert result.count(label) == 2, (label, result)
    assert ":false:" not in result


def test_learning_report_latex_compiles(learning):
    require("pdflatex", ["texlive-latex-recommended"])
    out, _ = learning
    r = report.compile_latex(out)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (out / "report.pdf").stat().st_size > 20_000


def test_the_report_opens_with_no_network(built):
    """Nothing is fetched from the network: every script and image is a relative path."""
    out, index = built
    for page in [index, *(out / "experiments").glob("*.html")]:
        html = page.read_text()
        for src in re.findall(r'(?:src|href)="([^"]+)"', html):
            assert not src.startswith(("http:", "https:", "//")), (page.name, src)


def test_latex_report_compiles(built):
    require("pdflatex", ["texlive-latex-recommended"])
    out, _ = built
    r = report.compile_latex(out)
    assert r.returncode == 0, r.stdout[-3000:]
    pdf = out / "report.pdf"
    assert pdf.exists() and pdf.stat().st_size > 20_000
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
        assert int(re.search(r"Pages:\s+(\d+)", info).group(1)) >= 3
