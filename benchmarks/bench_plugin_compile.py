"""Compiled plugins compile once, not once per process: wall time of the processes that
play a compiled plugin, with and without bbrl's kernel cache.

A compiled plugin (:class:`bbrlcore.agents.CompiledAgent`) is played through the
package's trajectory loop specialised to its functions. Before issue #25 that loop was a
closure compiled again in every process (each ``bbrl run``, each workflow run job); now it
is a cached kernel (``bbrlcore.agents._kernel_cache``), compiled when the agent is trained
and loaded by every later process. For each plugin (a fresh copy of its file, so its
kernel has never been compiled; bbrlcore's own kernels already in numba's cache), on GC
with N test MDPs, this times, in separate processes:

* ``train``: ``bbrl train`` (with the cache, it compiles the kernel);
* ``run 1``, ``run 2``: two ``bbrl run`` of the agent (the first and second process to
  play it after training), each also as the seconds **beyond its trajectories** (wall
  time minus the run table's ``online_time_s``: start-up, imports, loading or compiling);
* ``floor``: a process that does only what any tool built on numba and polars does
  (imports numpy, numba and polars, loads a small kernel from numba's cache and calls
  it; numba then imports scipy.linalg to check for a BLAS), timed just after: what no
  change to bbrl can go below;

once with the cache (the default) and once with ``BBRL_KERNEL_CACHE=0`` (every process
compiles, the former behaviour). The goal of issue #25: a second process spends at most
2 s beyond its trajectories.

    .venv/bin/python benchmarks/bench_plugin_compile.py [--n-mdps 5] [--repeat 1]

Writes ``benchmarks/results/plugin_compile.json`` (``"calibration": false``: not a record
of the cost model; rows name a ``plugin``, not an ``algorithm``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"

#: (label, source file, class, parameters, whether its own functions keep numba's cache)
PLUGINS = [
    ("MyGreedyJit", ROOT / "examples" / "my_agents.py", "MyGreedyJit", ["epsilon=0.1"], True),
    ("RMaxCompiled", ROOT / "examples" / "bbrl-rmax" / "src" / "bbrl_rmax" / "__init__.py",
     "RMaxCompiled", ["m=3"], True),
    # a plugin written without `cache=True` on its @njit functions (the common case): every
    # process compiles them, and, without bbrl's kernel cache, the trajectory loop too
    ("MyGreedyJit, no cache=True", ROOT / "examples" / "my_agents.py", "MyGreedyJit",
     ["epsilon=0.1"], False),
]


def _bbrl() -> str:
    here = Path(sys.executable).parent / "bbrl"
    return str(here) if here.exists() else "bbrl"


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([_bbrl(), *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"bbrl {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return wall


def _online(path: Path) -> float:
    import polars as pl

    return float(pl.read_parquet(path)["online_time_s"].sum())


def measure(label: str, src: Path, cls: str, params: list[str], cache: bool, n_mdps: int,
            work: Path, own_cache: bool = True, pairs: int = 1) -> list[dict]:
    env = dict(os.environ)
    env["BBRL_KERNEL_CACHE"] = "1" if cache else "0"
    # as on a researcher's machine, Python keeps the bytecode of the modules it compiles
    # (this machine's shell sets PYTHONDONTWRITEBYTECODE: every process compiled the
    # package's sources again, ≈ 0.2–0.4 s)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    d = work / uuid.uuid4().hex[:8]
    d.mkdir()
    # a fresh file: its kernel (and numba's cache of its own functions) never compiled
    plugin = d / f"plugin_{uuid.uuid4().hex[:8]}.py"
    text = src.read_text()
    if not own_cache:
        text = text.replace("cache=True", "cache=False")
    # its own algorithm name: the example package may be installed under the same one
    tag = uuid.uuid4().hex[:6]
    for name in ("rmax-jit", "rmax", "my-greedy-jit"):
        text = text.replace(f'name = "{name}"', f'name = "{name}-{tag}"')
    plugin.write_text(text)
    ref = f"{plugin}:{cls}"
    _timed(["experiment", "new", "--test", "GC", "--n-mdps", str(n_mdps), "-o",
            str(d / "ts.parquet")], d, env)
    rows = []
    train = _timed(["train", "--agent", ref, *sum((["--param", p] for p in params), []),
                    "--prior", "GC", "-q", "-o", str(d / "a.parquet")], d, env)
    rows.append({"plugin": label, "cache": cache, "process": "train", "wall_s": train})

    def run(k: int) -> dict:
        out = d / f"r{k}.parquet"
        wall = _timed(["run", "--experiment", str(d / "ts.parquet"), "--agent",
                       str(d / "a.parquet"), "-q", "-o", str(out)], d, env)
        online = _online(out)
        return {"plugin": label, "cache": cache, "process": f"run {k}", "wall_s": wall,
                "trajectories_s": online, "beyond_trajectories_s": wall - online}

    rows += [run(1), run(2)]
    # the floor on this machine at this moment: a process that does only what any
    # numba-and-polars tool does (FLOOR), run once untimed (it may compile its kernel),
    # then alternating with more `bbrl run` processes: the machine's speed drifts between
    # processes, so each pair is compared (later runs are "run 3", "run 4", ...)
    # (in a directory of its own: a file beside the plugin is part of its fingerprint,
    # bbrlcore.agents.registry.sibling_sources, and would make the next run recompile)
    (d / "floor").mkdir()
    floor = d / "floor" / "floor.py"
    floor.write_text(FLOOR)

    def run_floor() -> float:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, str(floor)], cwd=d, env=env, capture_output=True,
                           text=True)
        if r.returncode:
            raise SystemExit(f"the floor process failed:\n{r.stderr[-2000:]}")
        return time.perf_counter() - t0

    run_floor()
    for k in range(pairs):
        fl = run_floor()
        rows.append({"plugin": label, "cache": cache, "process": "floor", "wall_s": fl})
        r = run(k + 3)
        r["beyond_the_floor_s"] = r["beyond_trajectories_s"] - fl
        rows.append(r)
    return rows


def _median(xs: list[float]) -> float:
    import statistics

    return statistics.median(xs)


#: A process doing only what any tool built on numba and polars does (the floor).
FLOOR = """import numpy as np, polars as pl
from numba import njit

@njit(cache=True)
def f(a):
    s = 0.0
    for x in a:
        s += x
    return s

f(np.ones(3))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-mdps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=8,
                    help="runs alternating with the floor process, with the cache (default 8)")
    ap.add_argument("-o", "--out", default=str(RESULTS / "plugin_compile.json"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeat):
            for label, src, cls, params, own_cache in PLUGINS:
                for cache in (False, True):
                    got = measure(label, src, cls, params, cache, a.n_mdps, Path(tmp),
                                  own_cache, a.pairs if cache else 0)
                    rows += got
                    by = {r["process"]: r for r in got}
                    more = [r for r in got if "beyond_the_floor_s" in r]
                    tail = ""
                    if more:
                        fl = [r["wall_s"] for r in got if r["process"] == "floor"]
                        tail = (f"; {len(more)} more runs alternating with the floor: median "
                                f"{_median([r['beyond_trajectories_s'] for r in more]):.2f} s "
                                f"beyond their trajectories, the floor {_median(fl):.2f} s, "
                                "median difference "
                                f"{_median([r['beyond_the_floor_s'] for r in more]):.2f} s")
                    print(f"{label:27s} cache={'on ' if cache else 'off'} "
                          f"train {by['train']['wall_s']:5.1f} s, run 1 "
                          f"{by['run 1']['wall_s']:5.1f} s, run 2 {by['run 2']['wall_s']:5.1f} "
                          f"s ({by['run 2']['beyond_trajectories_s']:.2f} s beyond its "
                          f"trajectories){tail}", file=sys.stderr, flush=True)
    meta = {
        "calibration": False,
        "what": "wall time of bbrl train and two bbrl run processes of a compiled plugin, "
                "GC, with and without the kernel cache (BBRL_KERNEL_CACHE)",
        "n_mdps": a.n_mdps,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
    }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    later = [r for r in rows if "beyond_the_floor_s" in r]
    second = [r["beyond_trajectories_s"] for r in rows if r["cache"] and r["process"] == "run 2"]
    summary = {
        "run_2_beyond_trajectories_s": [min(second), max(second)],
        "later_runs_median_beyond_trajectories_s":
            _median([r["beyond_trajectories_s"] for r in later]) if later else None,
        "floor_median_s": _median([r["wall_s"] for r in rows if r["process"] == "floor"])
        if later else None,
        "median_beyond_the_floor_s":
            _median([r["beyond_the_floor_s"] for r in later]) if later else None,
    }
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1)
                   + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}; with the cache, a second process spends {min(second):.2f}-"
          f"{max(second):.2f} s beyond its trajectories (goal: 2 s); {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
