"""The cost model behind the workflow's chunking and ``bbrl estimate``.

It estimates the wall time of one trajectory (``seconds_per_trajectory``) and of offline
learning (``offline_seconds``) from the algorithm, its parameters, the test distribution,
the prior and the horizon. The model has two layers:

1. **Structure** (built in): how the cost scales with the parameters. Value-iteration
   agents (e-Greedy, Soft-max, BEB, Optimal) cost a per-distribution amount taken from the
   original C++ program's timings (``shared/data/reference_scores.tsv``: ms per 250-step
   trajectory, N = 500); BAMCP scales with ``K * min(D, T)`` per decision, BFS3 with
   ``K * C * nU * min(D, T)``, SBOSS with the number of posterior samples (about
   ``0.05 / epsilon`` per pair) times the number of merged-model solves (every step when
   ``delta`` is small, once in compat mode), OPPS-DS online with about two model solves per
   step and offline with ``n_draws`` simulated trajectories on the prior.
2. **Calibration** (measured): every ``*.json`` file of the benchmarks' results directory
   (``benchmarks/results/`` of the repository, or the directory named by the environment
   variable ``BBRL_BENCHMARK_RESULTS``, or the ``results_dir`` argument) is read at run
   time. Any JSON object in them (at any depth) that has an ``algorithm`` key and one of
   the timing keys ``s_per_trajectory``, ``seconds_per_trajectory``,
   ``ms_per_trajectory``, ``ms_per_decision`` or ``s_per_decision`` is a measurement;
   optional keys ``params`` (object, or ``"k=v;k=v"`` text; else parsed from an agent id
   under ``agent``), ``test``, ``prior`` and
   ``horizon`` (default 250) describe it. For each algorithm the model is scaled by the
   median ratio measured / structural estimate over its measurements. Without any file the
   built-in figures are used as they are.

All figures are single-core wall times on the machine class of the benchmarks; they are
estimates to size jobs, not promises.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

#: Environment variable naming another benchmarks results directory.
RESULTS_ENV = "BBRL_BENCHMARK_RESULTS"

#: (states, actions) of the built-in distributions.
_SIZES = {
    "GC": (5, 3),
    "GDL": (5, 3),
    "Grid": (25, 4),
    "UGC": (5, 3),
    "UGDL": (5, 3),
    "UGrid": (25, 4),
}

#: ms per 250-step trajectory of a value-iteration agent (e-Greedy), by test distribution
#: and whether the prior is accurate; from the original program's timings.
_VI_MS = {
    ("GC", True): 4.5,
    ("GC", False): 9.0,
    ("GDL", True): 2.5,
    ("GDL", False): 8.0,
    ("Grid", True): 25.0,
    ("Grid", False): 90.0,
}

#: Multiplier of the value-iteration cost per algorithm (BEB's bonus slows convergence).
_VI_FACTOR = {"e-greedy": 1.0, "soft-max": 1.0, "beb": 1.6, "optimal": 0.05}

#: ms per (simulation x depth) unit of BAMCP on a 5-state, 3-action problem.
_BAMCP_UNIT_MS = 2.7e-4
#: ms per (rollout x depth x C x nU) unit of BFS3.
_BFS3_UNIT_MS = 2.0e-5
#: Random: ms per 250-step trajectory.
_RANDOM_MS = 0.02
#: Fixed seconds per job (process start, imports, loading numba's cache, I/O).
JOB_OVERHEAD_S = 3.0


# ---------------------------------------------------------------------------------------
# Structure


def _size(name: str) -> tuple[int, int]:
    if name in _SIZES:
        return _SIZES[name]
    try:  # a file or a user distribution: read it
        from . import distributions

        d = distributions.load(name)
        return d.n_states, d.n_actions
    except Exception:  # noqa: BLE001 - an estimate must not fail on an odd name
        return 5, 3


def _family(name: str) -> str:
    """The built-in test distribution a name stands for (GC for unknown names)."""
    base = name[1:] if name in ("UGC", "UGDL", "UGrid") else name
    return base if base in ("GC", "GDL", "Grid") else "GC"


def _vi_ms(test: str, prior: str | None) -> float:
    """ms per 250-step trajectory of a value-iteration agent, scaled by problem size."""
    fam = _family(test)
    accurate = prior is None or prior == test
    base = _VI_MS[(fam, accurate)]
    nX, nU = _size(test)
    fX, fU = _SIZES[fam]
    return base * (nX * nX * nU) / (fX * fX * fU)


def _num(params: Mapping[str, Any], key: str, default: float) -> float:
    v = params.get(key)
    if v is None:
        return default
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _structural_seconds(
    algorithm: str, params: Mapping[str, Any], test: str, horizon: int, prior: str | None
) -> float:
    """Uncalibrated seconds per trajectory."""
    T = max(int(horizon), 1)
    steps = T / 250.0
    nX, nU = _size(test)
    vi = _vi_ms(test, prior) * steps / 1000.0  # seconds per trajectory
    compat = bool(params.get("compat", False))
    if algorithm == "random":
        return _RANDOM_MS * steps / 1000.0
    if algorithm in _VI_FACTOR:
        f = _VI_FACTOR[algorithm]
        if algorithm == "beb" and _family(test) == "Grid":
            f = 4.0
        return vi * f
    if algorithm == "bamcp":
        K = _num(params, "K", 1)
        D = min(_num(params, "D", T), T)
        size = math.sqrt(nX * nU / 15.0)
        return T * K * D * _BAMCP_UNIT_MS * size / 1000.0
    if algorithm == "bfs3":
        K = _num(params, "K", 1)
        C = _num(params, "C", 1)
        D = min(_num(params, "D", T), T)
        size = math.sqrt(nX / 5.0)
        return T * K * D * C * nU * _BFS3_UNIT_MS * size / 1000.0
    if algorithm == "sboss":
        if compat:
            return vi * 0.05
        eps = max(_num(params, "epsilon", 1.0), 1e-12)
        delta = max(_num(params, "delta", 1.0), 1e-12)
        samples = min(1.0e6, max(1.0, 0.05 / eps))
        solves = 1.0 + (T - 1) * min(1.0, 0.1 / delta)
        per_solve = vi / T * 3.0  # a cold solve of the merged model, per sample
        return solves * per_solve * samples
    if algorithm == "opps-ds":
        return vi * 2.0
    # unknown algorithm: assume a value-iteration agent
    return vi


# ---------------------------------------------------------------------------------------
# Calibration


def default_results_dir() -> Path:
    """``$BBRL_BENCHMARK_RESULTS``, else ``benchmarks/results`` of the repository (the
    source tree's), else of the current directory."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    if repo.is_dir():
        return repo
    return Path("benchmarks") / "results"


_TIME_KEYS = {
    "s_per_trajectory": 1.0,
    "seconds_per_trajectory": 1.0,
    "ms_per_trajectory": 1e-3,
}
_DECISION_KEYS = {"s_per_decision": 1.0, "ms_per_decision": 1e-3}


def _walk(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def _parse_params(p: Any) -> dict[str, Any]:
    if isinstance(p, dict):
        return p
    if isinstance(p, str) and p:
        out = {}
        for item in p.replace(",", ";").split(";"):
            if "=" in item:
                k, v = item.split("=", 1)
                out[k.strip()] = v.strip()
        return out
    return {}


def measurements(results_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Timing records found in the benchmarks' JSON files (see the module docstring)."""
    d = Path(results_dir) if results_dir is not None else default_results_dir()
    out: list[dict[str, Any]] = []
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for rec in _walk(data):
            alg = rec.get("algorithm")
            if not isinstance(alg, str):
                continue
            horizon = int(_num(rec, "horizon", 250))
            secs = None
            for k, scale in _TIME_KEYS.items():
                if isinstance(rec.get(k), (int, float)):
                    secs = float(rec[k]) * scale
                    break
            if secs is None:
                for k, scale in _DECISION_KEYS.items():
                    if isinstance(rec.get(k), (int, float)):
                        secs = float(rec[k]) * scale * horizon
                        break
            if secs is None or not (secs > 0 and math.isfinite(secs)):
                continue
            params = _parse_params(rec.get("params"))
            if not params and isinstance(rec.get("agent"), str):  # an agent id
                params = _parse_params(rec["agent"].replace("__", ";"))
            out.append(
                {
                    "algorithm": alg,
                    "params": params,
                    "test": str(rec.get("test", rec.get("distribution", "GC"))),
                    "prior": rec.get("prior"),
                    "horizon": horizon,
                    "seconds": secs,
                    "file": f.name,
                }
            )
    return out


_CAL_CACHE: dict[Any, dict[str, float]] = {}


def calibration(results_dir: str | os.PathLike[str] | None = None) -> dict[str, float]:
    """Per-algorithm scale factors (median measured / structural) from the benchmarks."""
    d = Path(results_dir) if results_dir is not None else default_results_dir()
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    key = (str(d.resolve()) if d.exists() else str(d),
           tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    if key in _CAL_CACHE:
        return _CAL_CACHE[key]
    ratios: dict[str, list[float]] = {}
    for m in measurements(d):
        prior = m["prior"] if isinstance(m["prior"], str) else None
        est = _structural_seconds(m["algorithm"], m["params"], m["test"], m["horizon"], prior)
        if est > 0:
            ratios.setdefault(m["algorithm"], []).append(m["seconds"] / est)
    factors = {a: min(max(statistics.median(r), 1e-3), 1e3) for a, r in ratios.items()}
    _CAL_CACHE[key] = factors
    return factors


# ---------------------------------------------------------------------------------------
# Public estimates


def seconds_per_trajectory(
    algorithm: str,
    params: Mapping[str, Any],
    test: str,
    horizon: int = 250,
    prior: str | None = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> float:
    """Estimated seconds of one trajectory of ``horizon`` steps (online time).

    Parameters
    ----------
    algorithm, params
        The algorithm's name and its parameters (typed or as strings).
    test, prior
        Names of the test distribution and of the prior (``None``: the test's own).
    horizon
        Number of steps T.
    results_dir
        Benchmarks results directory used for calibration (default:
        :func:`default_results_dir`).
    """
    base = _structural_seconds(algorithm, params, test, horizon, prior)
    return base * calibration(results_dir).get(algorithm, 1.0)


def offline_seconds(
    algorithm: str,
    params: Mapping[str, Any],
    prior: str,
    horizon: int = 250,
    results_dir: str | os.PathLike[str] | None = None,
) -> float:
    """Estimated seconds of offline learning (only OPPS-DS learns offline)."""
    if algorithm != "opps-ds":
        return 0.0
    n_draws = _num(params, "n_draws", 1)
    per = seconds_per_trajectory(algorithm, params, prior, horizon, prior, results_dir)
    return n_draws * per


def run_seconds(
    algorithm: str,
    params: Mapping[str, Any],
    test: str,
    n_mdps: int,
    horizon: int = 250,
    prior: str | None = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> float:
    """Estimated seconds of running ``n_mdps`` trajectories (without job overhead)."""
    return n_mdps * seconds_per_trajectory(algorithm, params, test, horizon, prior, results_dir)
