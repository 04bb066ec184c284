"""Benchmark: the whole ``bbrl formulas generate --max-size N`` process (wall time, peak RSS).

Runs the command as a subprocess (numba cache warmed by a first untimed run), ``--repeat``
times per size, and records the best and median wall time and the peak resident set size
(``ru_maxrss`` of the child, from ``os.wait4``). The reference C++ binary took 127 s and
1.47 GB for F6 (spec 02 §1.9); the requirement is at most 20 s and 700 MB.

Usage::

    python benchmarks/bench_formulas.py [--sizes 4 5 6] [--repeat 3]

writes ``benchmarks/results/formulas.json`` and ``formulas.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE = {2: (0.0, None), 3: (0.04, None), 4: (0.56, 11), 5: (8.3, 98), 6: (127.0, 1470)}
# A private numba cache: the package's default cache directory is keyed by the whole
# source tree, so an edit elsewhere in the package between runs would recompile.
ENV = dict(os.environ)
CMD = "import sys; from bbrlcore.cli import main; sys.exit(main())"


def run_once(size: int, out: str, extra: list[str]) -> tuple[float, float]:
    args = [sys.executable, "-c", CMD, "formulas", "generate", "--max-size", str(size),
            "-o", out, *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"generate --max-size {size} failed: {proc.stderr.read().decode()}")
    return wall, ru.ru_maxrss / 1024.0  # kB -> MB (Linux)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 5, 6])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference-rng", action="store_true")
    a = ap.parse_args()
    extra = ["--reference-rng"] if a.reference_rng else []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "f.parquet")
        ENV["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        run_once(2, out, extra)  # warm the numba cache
        for size in a.sizes:
            walls, rss = [], []
            for _ in range(a.repeat):
                w, r = run_once(size, out, extra)
                walls.append(w)
                rss.append(r)
            import polars as pl

            n = pl.read_parquet(out).height
            ref_t, ref_mb = REFERENCE.get(size, (None, None))
            rows.append({
                "max_size": size, "n_formulas": n, "repeats": a.repeat,
                "wall_s_best": round(min(walls), 3),
                "wall_s_median": round(statistics.median(walls), 3),
                "peak_rss_mb_max": round(max(rss), 1),
                "reference_wall_s": ref_t, "reference_rss_mb": ref_mb,
            })
            print(rows[-1], file=sys.stderr)
    res = {
        "benchmark": "bbrl formulas generate (whole process, numba cache warm)",
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                   f"{os.cpu_count()} cores (shared)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "reference_rng": a.reference_rng,
        "requirement": "F6: <= 20 s and <= 700 MB peak RSS",
        "results": rows,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "formulas.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        "# Formula-set generation (`bbrl formulas generate`, whole process, warm numba cache)",
        "",
        f"Measured {res['date']} on {res['machine']}; best and median of {a.repeat} runs; "
        "peak RSS is the child's ru_maxrss. Reference: the C++ binary (spec 02 §1.9).",
        "",
        "| max size | formulas | wall best (s) | wall median (s) | peak RSS (MB) | "
        "reference wall (s) | reference RSS (MB) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['max_size']} | {r['n_formulas']} | {r['wall_s_best']} | {r['wall_s_median']} "
            f"| {r['peak_rss_mb_max']} | {r['reference_wall_s']} | {r['reference_rss_mb'] or ''} |"
        )
    (HERE / "results" / "formulas.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
