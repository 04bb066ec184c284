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
    for page in pages:
        dom, log = _chromium(chromium, page, tmp_path, "--dump-dom")
        expected = page.read_text().count('class="bbrl-figure"')
        assert expected >= 3
        rendered = len(re.findall(r'class="bbrl-figure js-plotly-plot"', dom))
        assert rendered == expected, (page.name, rendered, expected)
        assert dom.count('class="main-svg"') >= expected  # each figure drew its SVG
        errors = [ln for ln in log.splitlines()
                  if "CONSOLE" in ln and ("ERROR" in ln or "Uncaught" in ln)]
        assert not errors, errors
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-summary.png"
    shot.unlink(missing_ok=True)
    _chromium(chromium, index, tmp_path, f"--screenshot={shot}", "--window-size=1400,2400")
    assert shot.exists() and shot.stat().st_size > 20_000
    _chromium(chromium, out / "experiments" / "GC-UGC.html", tmp_path,
              f"--screenshot={ARTIFACTS / 'report-experiment.png'}", "--window-size=1400,1800")


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
