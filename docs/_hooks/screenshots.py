"""Regenerate the report screenshots of the documentation (docs/images/report-*.png).

A real report, made in one process (no workflow, so that it takes minutes, not an hour):
eleven algorithms, one configuration each (the quick preset's), on four of the paper's
experiments, N = 50, T = 250; then headless Chromium (Debian's ``chromium``) takes the
pages and Pillow crops and quantises them (small PNGs, committed). Run from the
repository's root::

    .venv/bin/python docs/_hooks/screenshots.py /tmp/bbrl-shots

Not run by the tests or by ``make docs`` (the images are committed).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl

from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
AGENTS = [("random", {}), ("e-greedy", {"epsilon": "0.1"}), ("soft-max", {"tau": "0.05"}),
          ("beb", {"beta": "2.5"}), ("sboss", {"epsilon": "1", "delta": "1"}),
          ("bamcp", {"K": "50", "D": "15"}), ("bfs3", {"K": "10", "C": "2", "D": "15"}),
          ("psrl", {}), ("mbie-eb", {"beta": "2.5"}), ("bolt", {"eta": "5"}),
          ("optimal", {})]
EXPERIMENTS = [("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("GC", "UGC")]


def runs(out: Path) -> tuple[list[Path], list[Path]]:
    merged, sets = [], {}
    for test, prior in EXPERIMENTS:
        if test not in sets:
            ts = E.new_test_set(D.load_test(test), 50, 0.95, 250, seed=0)
            sets[test] = (ts, out / f"ts-{test}.parquet")
            E.write_test_set(ts, sets[test][1])
        tables = []
        for name, params in AGENTS:
            agent = E.train_agent(name, params, D.load(prior), progress=False)
            tables.append(E.run_agent(sets[test][0], agent, progress=False))
        path = out / f"{test}-{prior}.parquet"
        E.write_run(pl.concat(tables, how="diagonal"), path, {"screenshots": True})
        merged.append(path)
    return merged, [p for _, p in sets.values()]


def shoot(page: Path, png: Path, height: int) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("screenshots: chromium not found (apt-get install -y chromium)")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size=1280,{height}",
                    "--virtual-time-budget=8000", f"--screenshot={png}", page.as_uri()],
                   check=True, capture_output=True)


def save(im, name: str, width: int | None = None) -> None:
    from PIL import Image

    if width and im.size[0] > width:
        im = im.resize((width, round(im.size[1] * width / im.size[0])), Image.LANCZOS)
    im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
        IMAGES / name, optimize=True)


def main(out: Path) -> None:
    from PIL import Image

    out.mkdir(parents=True, exist_ok=True)
    merged, sets = runs(out)
    report = out / "report"
    subprocess.run([str(Path(sys.executable).parent / "bbrl"), "report", *map(str, merged),
                    "--test-sets", *map(str, sets), "--no-pdf", "-o", str(report)],
                   check=True)
    shoot(report / "index.html", out / "top.png", 1000)
    shoot(report / "index.html", out / "tall.png", 2600)
    shoot(report / "experiments" / "Grid-Grid.html", out / "experiment.png", 1000)
    tall = Image.open(out / "tall.png")
    # the crops follow the report's layout at 1280 px: check the images after a change
    save(Image.open(out / "top.png"), "report-summary.png", 1000)
    save(tall.crop((0, 470, 1280, 950)), "report-aggregates.png", 1000)
    save(tall.crop((0, 1722, 800, 2215)), "report-improvement.png")
    save(Image.open(out / "experiment.png"), "report-experiment.png", 1000)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/bbrl-shots"))
