r"""The cost model behind the workflow's chunking, Slurm time limits and ``bbrl estimate``.

A trajectory's wall time is modelled as a non-negative combination of the **work its
kernel does**,

.. math::  t(\text{config}, \text{experiment}) \approx \sum_k c_{a,k}\,\phi_k(\text{config},
   \text{experiment}),

where the work amounts :math:`\phi_k` come from the algorithm itself
(:attr:`bbrlcore.agents.base.Algorithm.cost_features`: steps, Bellman backup terms,
simulated transitions, sampled probabilities, ...) and the unit prices :math:`c_{a,k}
\ge 0` of algorithm :math:`a` are fitted to **measurements**. The work amounts follow the
kernels: BAMCP counts ``T·K·D`` simulated transitions and their urn draws over the row's
support; BFS3 ``T·nU·C·max(1, K//C)·D`` node visits and the successors drawn or backed up
at each; SBOSS replays its own resampling rule (sample counts ``K(x,u)`` from the
posterior variances, the deviation test against δ, both modes) without drawing a sample to
count rebuilds and sampled probabilities; value-iteration agents count backup terms;
OPPS-DS training counts pulls (trajectories on the prior) and arms. An algorithm that
declares nothing (a plugin) costs a fixed part plus a part per step, priced per
configuration by a short **probe** (see :func:`probe_records_dir`).

Measurements are JSON records found (at any depth) in every ``*.json`` file of the
benchmarks' results directory (``benchmarks/results/``, or ``$BBRL_BENCHMARK_RESULTS``)
and of extra directories (a workflow's probes), except files whose top-level ``meta``
says ``"calibration": false`` (reports made by another protocol). A record is an object with
``algorithm``, the configuration (``params`` as an object or ``"k=v;k=v"`` text, or an
agent id under ``agent``), ``test`` and ``prior`` (distribution names), ``horizon``
(250), ``gamma`` (0.95), ``episode_length`` (0: continuing; H > 0: episodes of H steps,
which changes an episodic algorithm's work, PSRL's one model per episode) and a time:
``ms_per_trajectory``, ``s_per_trajectory``, ``seconds_per_trajectory``,
``ms_per_decision`` or ``s_per_decision`` (online), or ``offline_s`` (offline learning).

For each algorithm the prices minimise the squared **relative** error over its records
(non-negative least squares on rows scaled by 1/measured). :func:`quality` reports how
well that describes the kernels: the worst ratio between prediction and measurement when
each configuration is left out of the fit (leave-one-configuration-out), and the measured
range of every parameter, so ``bbrl estimate`` can say how many configurations of a plan
lie inside it.

All figures are single-core wall times on the machine class of the measurements; they
size jobs and budgets, they are not promises.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Environment variable naming another benchmarks results directory.
RESULTS_ENV = "BBRL_BENCHMARK_RESULTS"
#: Environment variable naming extra calibration directories (``os.pathsep``-separated),
#: e.g. a workflow's probes; the workflow sets it for its jobs.
EXTRA_ENV = "BBRL_COST_RECORDS"
#: Fixed CPU-seconds per job (process start, imports, loading numba's cached kernels,
#: the test set and the agent, I/O, and Snakemake's own work for the job): the quick
#: preset's 345 jobs took 21.5 CPU-minutes on 2026-11-26, 0.4 of them trajectories and
#: about 1.2 the report, ≈ 3.4 s a job; one ``bbrl run`` process alone takes 2.3–2.9 s
#: and a ``bbrl train`` of an algorithm without offline learning 1.4 s. (1.5 s on
#: 2026-11-24, before sparse rows, per-step rewards and the problem families.)
JOB_OVERHEAD_S = 3.0
#: Price of work of an algorithm without any measurement (a fixed part and a part per step).
UNCALIBRATED_S = {"trajectory": 1e-3, "steps": 1e-4, "job": 1.0, "pull_steps": 1e-5}


# ---------------------------------------------------------------------------------------
# Records


def default_results_dir() -> Path:
    """``$BBRL_BENCHMARK_RESULTS``, else ``benchmarks/results`` of the repository (the
    source tree's), else of the current directory."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
    if repo.is_dir():
        return repo
    return Path("benchmarks") / "results"


_ONLINE_KEYS = {"s_per_trajectory": 1.0, "seconds_per_trajectory": 1.0,
                "ms_per_trajectory": 1e-3}
_DECISION_KEYS = {"s_per_decision": 1.0, "ms_per_decision": 1e-3}


@dataclass(frozen=True)
class Record:
    """One measurement: a configuration on an experiment and its time (seconds)."""

    algorithm: str
    params: tuple[tuple[str, Any], ...]
    test: str
    prior: str
    horizon: int
    gamma: float
    seconds: float
    phase: str  # "online" (one trajectory) or "offline" (training)
    source: str
    #: what offline learning chose, when it changes the work (OPPS-DS: its formula)
    learned: tuple[tuple[str, Any], ...] = ()
    #: H of an episodic interaction (0: continuing)
    episode_length: int = 0

    @property
    def config(self) -> tuple[Any, ...]:
        return (self.algorithm, self.params, self.test, self.prior, self.horizon, self.phase,
                self.episode_length)


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


def _num(rec: Mapping[str, Any], key: str, default: float) -> float:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return default
    return float(v)


def records(*dirs: str | os.PathLike[str] | None) -> list[Record]:
    """Measurement records of the JSON files of ``dirs`` (see the module docstring)."""
    out: list[Record] = []
    for d in dirs:
        if d is None or not Path(d).is_dir():
            continue
        for f in sorted(Path(d).glob("*.json")):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            meta = data.get("meta") if isinstance(data, dict) else None
            if isinstance(meta, dict) and meta.get("calibration") is False:
                continue  # a report against the original, measured by another protocol
            for rec in _walk(data):
                r = _record(rec, f.name)
                if r is not None:
                    out.append(r)
    return out


def _record(rec: dict[str, Any], source: str) -> Record | None:
    alg = rec.get("algorithm")
    if not isinstance(alg, str):
        return None
    horizon = int(_num(rec, "horizon", 250))
    secs, phase = None, "online"
    for k, scale in _ONLINE_KEYS.items():
        if isinstance(rec.get(k), (int, float)) and not isinstance(rec.get(k), bool):
            secs = float(rec[k]) * scale
            break
    if secs is None:
        for k, scale in _DECISION_KEYS.items():
            if isinstance(rec.get(k), (int, float)) and not isinstance(rec.get(k), bool):
                secs = float(rec[k]) * scale * horizon
                break
    if secs is None and isinstance(rec.get("offline_s"), (int, float)):
        secs, phase = float(rec["offline_s"]), "offline"
    if secs is None or not (secs > 0 and math.isfinite(secs)):
        return None
    timed = rec.get("horizon_timed")
    if rec.get("extrapolated") and isinstance(timed, int) and 0 < timed < horizon:
        # a few decisions timed and scaled up: a record of what was timed (the cost of a
        # decision changes along a trajectory, so the scaled figure is not a measurement)
        secs, horizon = secs * timed / horizon, timed
    params = _parse_params(rec.get("params"))
    if not params and isinstance(rec.get("agent"), str):  # an agent id
        params = _parse_params(rec["agent"].replace("__", ";"))
    if isinstance(params.get("formula_set"), str):  # "F3@s1" in agent ids
        params = {**params, "formula_set": params["formula_set"].split("@", 1)[0]}
    test = rec.get("test", rec.get("distribution"))
    prior = rec.get("prior", test)
    if not isinstance(test, str) or not isinstance(prior, str):
        if phase == "offline" and isinstance(prior, str):
            test = prior
        else:
            return None
    keys = {"formula": "formula", "rpn": "rpn", "learned_formula": "rpn",
            "learned_infix": "infix"}
    learned = tuple(sorted((v, rec[k]) for k, v in keys.items() if isinstance(rec.get(k), str)))
    return Record(alg, tuple(sorted(params.items())), test, prior, horizon,
                  _num(rec, "gamma", 0.95), secs, phase, source, learned,
                  int(_num(rec, "episode_length", 0)))


# ---------------------------------------------------------------------------------------
# Work amounts


class Distributions:
    """Name -> distribution: the built-ins, a plan's own (``extra``), a problem family's
    name or a file path; always an FDM distribution (see :func:`as_fdm`)."""

    def __init__(self, extra: Mapping[str, Any] | None = None) -> None:
        self.extra = dict(extra or {})
        self._memo: dict[str, Any] = {}

    def __call__(self, name: Any) -> Any:
        if not isinstance(name, str):
            return as_fdm(name)  # already a distribution
        if name in self.extra:
            return as_fdm(self.extra[name])
        if name not in self._memo:
            from bbrlcore.mdp import distributions

            self._memo[name] = distributions.load(name)
        return self._memo[name]


def as_fdm(d: Any) -> Any:
    """The distribution the work amounts are computed on: ``d`` itself when it has
    Dirichlet concentrations (``theta``); a problem family's test distribution that draws
    its structure (no ``theta``) is represented by its accurate prior, an FDM with the
    test's mean model (:meth:`mean_model`), support (``theta > 0``), rewards and initial
    state: what an algorithm's ``cost_features`` reads of a test distribution (its values
    computed only if they are read)."""
    from bbrlcore.mdp.distributions import FDMDistribution

    if isinstance(d, FDMDistribution) or not hasattr(d, "accurate_prior"):
        return d
    return d.accurate_prior()


def _full_params(algorithm: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Typed parameters with the defaults (files are not looked up)."""
    from bbrlcore import agents

    alg = agents.get(algorithm)
    raw = {k: v for k, v in dict(params).items() if v is not None}
    return alg.parse_params(raw, source=f"{algorithm} cost", stored=True)


def features(
    algorithm: str, params: Mapping[str, Any], prior: Any, test: Any, gamma: float,
    horizon: int, learned: Mapping[str, Any] | None = None, episode_length: int = 0,
) -> dict[str, float]:
    """Work amounts of one trajectory of ``horizon`` steps (:attr:`Algorithm.cost_features`).
    ``learned`` is what offline learning chose when it is known (a trained agent's
    ``info``; OPPS-DS's formula decides which models it solves): passed to the
    algorithm's function when it takes a ``learned`` argument. ``episode_length`` H > 0:
    an episodic interaction (episodes of H steps), passed to the algorithm's function
    when it takes an ``episode_length`` argument (an algorithm whose work does not
    depend on the episodes, as every paper algorithm's, does not take it: its work over
    T steps is the same).

    >>> from bbrlcore.mdp import families
    >>> p = families.make("deepsea", size=10).prior("uniform")
    >>> f = features("psrl", {}, p, p, 0.95, 100_000, episode_length=10)
    >>> f["steps"], f["rebuilds"]  # (the episodic form: one model per episode)
    (100000.0, 10000.0)
    """
    import inspect

    from bbrlcore import agents
    from bbrlcore.agents.base import default_cost_features

    alg = agents.get(algorithm)
    fn = alg.cost_features or default_cost_features
    args = (_full_params(algorithm, params), as_fdm(prior), as_fdm(test), float(gamma),
            int(horizon))
    kw: dict[str, Any] = {}
    accepts = inspect.signature(fn).parameters
    if learned and "learned" in accepts:
        kw["learned"] = dict(learned)
    if episode_length and "episode_length" in accepts:
        kw["episode_length"] = int(episode_length)
    from bbrlcore.errors import building

    # (out of memory: one line naming the algorithm, its parameters and the setting)
    shown = ", ".join(f"{k}={v}" for k, v in args[0].items())
    what = (f"{algorithm}'s work amounts for the cost model ({shown or 'no parameters'}) on "
            f"{args[2].short_name} with the prior {args[1].short_name}, T = {args[4]:,} steps"
            + (f" in episodes of {int(episode_length)}" if episode_length else ""))
    if not getattr(fn, "__module__", "").startswith("bbrlcore."):
        with building(what, "computing"):
            return fn(*args, **kw)  # a plugin's: its code is not among bbrlcore's sources
    # bbrlcore's own: a pure function of its arguments and bbrlcore's sources, memoised
    # (a dry run plans the same work amounts every time; computing some loads numba)
    from bbrlcore.agents._memo import memo_features

    key = json.dumps([algorithm, sorted((k, repr(v)) for k, v in args[0].items()),
                      _content_digest(args[1]), _content_digest(args[2]), args[3], args[4],
                      sorted((k, repr(v)) for k, v in kw.items())])
    with building(what, "computing"):
        return memo_features("cost-features", key, lambda: fn(*args, **kw))


def _built_in_family(d: Any) -> bool:
    """Whether ``d``'s short name is that of one of bbrlcore's problem families (whose
    distributions its name and bbrlcore's sources determine)."""
    from bbrlcore.mdp import families

    try:
        return families.parse_name(d.short_name) is not None
    except Exception:  # noqa: BLE001  (a name no family reads: fingerprint the contents)
        return False


def _content_digest(d: Any) -> str:
    """A fingerprint of an FDM distribution's contents (sizes, initial state, reward
    type and entries), computed once per object. A lazy distribution not built yet (a
    problem family's, built by bbrlcore's code from the parameters its canonical name
    holds) is fingerprinted by its names: building it only for the key would cost what
    the memo saves (a DeepSea-70 prior is gigabytes)."""
    cached = d.__dict__.get("_content_digest")
    if cached is not None:
        return cached
    h = hashlib.sha256(repr((type(d).__name__, int(d.n_states), int(d.n_actions),
                             int(d.initial_state), str(d.reward_type))).encode())
    if "_data" not in d.__dict__ and "_build" in d.__dict__ and _built_in_family(d):
        h.update(repr(("lazy", str(d.name), str(d.short_name))).encode())
    else:
        e = d._data  # (Entries: keys and the values aligned with them)
        for a in (e.keys, e.theta, e.reward, e.variance):
            h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    d.__dict__["_content_digest"] = out = h.hexdigest()[:32]
    return out


def offline_features(
    algorithm: str, params: Mapping[str, Any], prior: Any, gamma: float, horizon: int
) -> dict[str, float]:
    """Work amounts of offline learning (:attr:`Algorithm.offline_cost_features`)."""
    from bbrlcore import agents

    alg = agents.get(algorithm)
    if alg.offline_cost_features is None:
        return {"job": 1.0}
    return alg.offline_cost_features(_full_params(algorithm, params), as_fdm(prior),
                                     float(gamma), int(horizon))


# ---------------------------------------------------------------------------------------
# Fitting


def _nnls_relative(F: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Non-negative prices minimising sum(((F @ c) - t) / t)^2."""
    from scipy.optimize import nnls

    A = F / t[:, None]
    scale = np.abs(A).max(axis=0)
    scale[scale == 0] = 1.0
    c, _ = nnls(A / scale, np.ones(len(t)), maxiter=50 * A.shape[1] + 100)
    return c / scale


@dataclass
class Fit:
    """Prices of one algorithm and phase, the local corrections, and their validation.

    A prediction is the priced work times a **local correction**: the geometric mean of
    measured/priced over the nearest measured configurations of the same experiment
    (distance in the parameters scaled to the measured ranges, on a log scale for positive
    ones; a categorical parameter that differs counts as a whole range). It carries what
    the work amounts miss (how many sweeps a warm-started solve needs on a given prior,
    how exploring a policy is); without a measured neighbour the priced work stands alone.
    """

    names: list[str]
    prices: np.ndarray
    n_records: int
    n_configs: int
    #: per configuration: (config, measured s, predicted in-sample, predicted left out)
    validation: list[tuple[tuple[Any, ...], float, float, float]] = field(default_factory=list)
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    experiments: set[tuple[str, str]] = field(default_factory=set)
    #: (test, prior) -> [(config, numeric params, categorical params, log residual)]
    residuals: dict[tuple[str, str], list[tuple[Any, dict[str, float], tuple[Any, ...],
                                                float]]] = field(default_factory=dict)
    #: whether some record is of an episodic interaction (``episode_length`` > 0)
    episodic: bool = False

    def priced(self, feats: Mapping[str, float], prices: np.ndarray | None = None) -> float:
        p = self.prices if prices is None else prices
        return float(sum(c * feats.get(n, 0.0) for n, c in zip(self.names, p, strict=True)))

    def correction(self, params: Mapping[str, Any], test: str, prior: str,
                   exclude: Any = None, horizon: int | None = None,
                   episode_length: int = 0) -> float:
        """exp(inverse-distance mean of the log residuals of the nearest measured
        configurations of the experiment); 1 without one. Where the configuration itself
        was measured (the same parameters), in several settings of the interaction (a
        probe at another horizon, a benchmark's long trajectories), its residual is
        taken in the query's setting: among its measurements of the same episode length
        (else of the same kind, episodic or continuing; else all), interpolated in log T
        between the horizons just below and above ``horizon``, the nearest one's outside
        them (``horizon`` None: its first measurement, as before)."""
        num, cat = _split(params)
        near = []
        same: list[tuple[int, int, float]] = []
        for cfg, n2, c2, res in self.residuals.get((test, prior), []):
            if cfg == exclude:
                continue  # categorical parameters that differ count as a whole range apart
            miss = sum(1.0 for a, b in zip(c2, cat, strict=False) if a != b) + abs(
                len(c2) - len(cat))
            d = math.hypot(self._distance(num, n2), miss)
            near.append((d, res))
            if d == 0.0:
                same.append((int(cfg[4]), int(cfg[6]), res))
        if same:
            return math.exp(_in_setting(same, horizon, episode_length))
        if not near:
            return 1.0
        near.sort(key=lambda v: v[0])
        near = near[:NEIGHBOURS]
        w = np.array([1.0 / d for d, _ in near])
        return math.exp(float(np.dot(w, [r for _, r in near]) / w.sum()))

    def _distance(self, a: dict[str, float], b: dict[str, float]) -> float:
        d = 0.0
        for k in set(a) | set(b):
            if k not in a or k not in b:
                d += 1.0
                continue
            lo, hi = self.ranges.get(k, (a[k], a[k]))
            if lo > 0:
                x, y, span = math.log(a[k]), math.log(b[k]), math.log(hi) - math.log(lo)
            else:
                x, y, span = a[k], b[k], hi - lo
            d += ((x - y) / span) ** 2 if span > 0 else 0.0
        return math.sqrt(d)

    @property
    def worst_ratio(self) -> float:
        """Worst max(pred/meas, meas/pred) with each configuration left out of the fit."""
        return max((_ratio(p, m) for _, m, _, p in self.validation), default=math.nan)

    @property
    def worst_ratio_in_sample(self) -> float:
        return max((_ratio(p, m) for _, m, p, _ in self.validation), default=math.nan)


#: Measured configurations a local correction averages over.
NEIGHBOURS = 2


def _in_setting(points: list[tuple[int, int, float]], horizon: int | None,
                episode_length: int) -> float:
    """The log residual of one measured configuration in the interaction's setting, from
    its measurements ``(T, H, log residual)`` (:meth:`Fit.correction`): those of the same
    H (else of the same kind, else all), interpolated in log T, the nearest horizon's
    beyond them.

    >>> pts = [(1_000, 10, 0.0), (100_000, 10, 1.0), (250, 0, 5.0)]
    >>> _in_setting(pts, 10**6, 10), round(_in_setting(pts, 10_000, 10), 6)
    (1.0, 0.5)
    >>> _in_setting(pts, 250, 0), _in_setting(pts, None, 0)  # (continuing; the first)
    (5.0, 0.0)
    >>> round(_in_setting(pts, 10_000, 20), 6)  # (no H = 20: the episodic ones)
    0.5
    """
    if horizon is None or len(points) == 1:
        return points[0][2]
    pts = ([p for p in points if p[1] == episode_length]
           or [p for p in points if (p[1] > 0) == (episode_length > 0)] or points)
    pts = sorted(pts)
    x = math.log(max(int(horizon), 1))
    if x <= math.log(pts[0][0]):
        return pts[0][2]
    for (t0, _, r0), (t1, _, r1) in zip(pts, pts[1:], strict=False):
        a, b = math.log(t0), math.log(t1)
        if x <= b:
            return r1 if b == a else r0 + (r1 - r0) * (x - a) / (b - a)
    return pts[-1][2]


def _split(params: Mapping[str, Any]) -> tuple[dict[str, float], tuple[Any, ...]]:
    """Numeric parameters (as floats) and the others (a hashable tuple)."""
    num, cat = {}, []
    for k, v in sorted(dict(params).items()):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            num[k] = float(v)
        else:
            cat.append((k, v))
    return num, tuple(cat)


def _ratio(pred: float, meas: float) -> float:
    if pred <= 0 or meas <= 0:
        return math.inf
    return max(pred / meas, meas / pred)


def _fit(rows: list[tuple[Record, dict[str, float], dict[str, Any]]]) -> Fit:
    """``rows``: (record, work amounts, full typed parameters)."""
    names = sorted({k for _, f, _ in rows for k in f})
    F = np.array([[f.get(n, 0.0) for n in names] for _, f, _ in rows], dtype=float)
    t = np.array([r.seconds for r, _, _ in rows], dtype=float)
    prices = _nnls_relative(F, t)
    configs: dict[tuple[Any, ...], list[int]] = {}
    for i, (r, _, full) in enumerate(rows):  # a configuration: typed parameters
        key = (r.algorithm, tuple(sorted(full.items())), r.test, r.prior, r.horizon, r.phase,
               r.episode_length)
        configs.setdefault(key, []).append(i)
    fit = Fit(names, prices, len(rows), len(configs))
    for r, _, full in rows:
        fit.experiments.add((r.test, r.prior))
        fit.episodic = fit.episodic or r.episode_length > 0
        for k, x in _split(full)[0].items():
            lo, hi = fit.ranges.get(k, (x, x))
            fit.ranges[k] = (min(lo, x), max(hi, x))

    def residuals(p: np.ndarray, skip: Any = None) -> dict:
        out: dict[tuple[str, str], list] = {}
        for cfg, idx in configs.items():
            if cfg == skip:
                continue
            r, _, full = rows[idx[0]]
            meas = float(np.exp(np.mean(np.log(t[idx]))))
            priced = max(float(F[idx[0]] @ p), 1e-12)
            num, cat = _split(full)
            out.setdefault((r.test, r.prior), []).append(
                (cfg, num, cat, math.log(meas / priced)))
        return out

    fit.residuals = residuals(prices)
    for cfg, idx in configs.items():
        r, _, full = rows[idx[0]]
        meas = float(np.exp(np.mean(np.log(t[idx]))))  # geometric mean of repeats
        keep = np.ones(len(rows), dtype=bool)
        keep[idx] = False
        loo_prices = _nnls_relative(F[keep], t[keep]) if keep.any() else prices
        loo = Fit(names, loo_prices, 0, 0, ranges=fit.ranges,
                  residuals=residuals(loo_prices, skip=cfg))
        pred_in = float(F[idx[0]] @ prices) * fit.correction(
            full, r.test, r.prior, horizon=r.horizon, episode_length=r.episode_length)
        pred_out = float(F[idx[0]] @ loo_prices) * loo.correction(
            full, r.test, r.prior, horizon=r.horizon, episode_length=r.episode_length)
        fit.validation.append((cfg, meas, pred_in, pred_out))
    return fit


class CostModel:
    """Prices per algorithm fitted to measurement records (see the module docstring).

    Parameters
    ----------
    recs
        Measurement records (:func:`records`).
    dists
        Distribution resolver for the records' and the queries' names (built-ins, files,
        or a plan's own distributions).
    """

    def __init__(self, recs: list[Record], dists: Distributions | None = None) -> None:
        self.dists = dists or Distributions()
        self.skipped: list[tuple[Record, str]] = []
        by: dict[tuple[str, str], list[tuple[Record, dict[str, float]]]] = {}
        from bbrlcore.errors import BBRLError

        for r in recs:
            try:
                prior = self.dists(r.prior)
                if r.phase == "online":
                    f = features(r.algorithm, dict(r.params), prior, self.dists(r.test),
                                 r.gamma, r.horizon, dict(r.learned), r.episode_length)
                else:
                    f = offline_features(r.algorithm, dict(r.params), prior, r.gamma,
                                         r.horizon)
            except BBRLError as exc:  # unknown algorithm or distribution, bad parameters
                self.skipped.append((r, str(exc)))
                continue
            by.setdefault((r.algorithm, r.phase), []).append(
                (r, f, _full_params(r.algorithm, dict(r.params))))
        self.fits = {key: _fit(rows) for key, rows in by.items()}

    # -- queries ---------------------------------------------------------------------
    def calibrated(self, algorithm: str, phase: str = "online") -> bool:
        return (algorithm, phase) in self.fits

    def seconds_per_trajectory(
        self, algorithm: str, params: Mapping[str, Any], test: Any, horizon: int = 250,
        prior: Any = None, gamma: float = 0.95, learned: Mapping[str, Any] | None = None,
        episode_length: int = 0,
    ) -> float:
        """Estimated seconds of one trajectory of ``horizon`` steps (online time), in
        episodes of ``episode_length`` steps when it is > 0; ``learned``: a trained
        agent's ``info`` when known (see :func:`features`)."""
        p = self.dists(prior if prior is not None else test)
        f = features(algorithm, params, p, self.dists(test), gamma, horizon, learned,
                     episode_length)
        fit = self.fits.get((algorithm, "online"))
        if fit is None:
            return sum(UNCALIBRATED_S.get(k, 0.0) * v for k, v in f.items())
        full = _full_params(algorithm, params)
        return max(fit.priced(f) * fit.correction(full, _name(test), _name(p),
                                                  horizon=horizon,
                                                  episode_length=episode_length), 1e-7)

    def offline_seconds(
        self, algorithm: str, params: Mapping[str, Any], prior: Any, horizon: int = 250,
        gamma: float = 0.95,
    ) -> float:
        """Estimated seconds of offline learning (0 for algorithms that only keep the
        prior and have no offline record)."""
        fit = self.fits.get((algorithm, "offline"))
        f = offline_features(algorithm, params, self.dists(prior), gamma, horizon)
        if fit is None:
            from bbrlcore import agents

            if agents.get(algorithm).train is None:
                return 0.0
            return sum(UNCALIBRATED_S.get(k, 0.0) * v for k, v in f.items())
        full = _full_params(algorithm, params)
        name = _name(self.dists(prior))
        return max(fit.priced(f) * fit.correction(full, name, name, horizon=horizon), 0.0)

    def in_range(self, algorithm: str, params: Mapping[str, Any], test: str,
                 prior: str) -> bool:
        """Whether a configuration lies inside the measured range: its experiment was
        measured, and each numeric parameter lies between its smallest and largest
        measured value."""
        fit = self.fits.get((algorithm, "online"))
        if fit is None or (test, prior) not in fit.experiments:
            return False
        for k, v in _full_params(algorithm, params).items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            lo, hi = fit.ranges.get(k, (v, v))
            if not lo <= float(v) <= hi:
                return False
        return True

    def quality(self, algorithm: str, phase: str = "online") -> Fit | None:
        return self.fits.get((algorithm, phase))


def _name(d: Any) -> str:
    return d if isinstance(d, str) else d.short_name


_MODELS: dict[Any, CostModel] = {}


def _dirs_key(dirs: list[Path]) -> tuple[Any, ...]:
    key = []
    for d in dirs:
        files = sorted(d.glob("*.json")) if d.is_dir() else []
        key.append((str(d.resolve()) if d.exists() else str(d),
                    tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)))
    return tuple(key)


def model(
    results_dir: str | os.PathLike[str] | None = None,
    extra_dirs: list[str | os.PathLike[str]] | None = None,
    dists: Mapping[str, Any] | None = None,
) -> CostModel:
    """The cost model calibrated by ``results_dir`` (default :func:`default_results_dir`)
    and ``extra_dirs`` (default: ``$BBRL_COST_RECORDS``), resolving the plan's own
    distributions ``dists``; memoised on the files' names, sizes and times."""
    dirs = [Path(results_dir) if results_dir is not None else default_results_dir()]
    if extra_dirs is None:
        extra_dirs = [p for p in os.environ.get(EXTRA_ENV, "").split(os.pathsep) if p]
    dirs += [Path(d) for d in extra_dirs]
    key = (_dirs_key(dirs), tuple(sorted((k, id(v)) for k, v in (dists or {}).items())))
    if key not in _MODELS:
        recs = records(*dirs)
        dd = Distributions(dists)
        path = _disk_cache_path(recs, dd)
        m = _load_cached(path, dd) if path is not None else None
        if m is None:
            m = CostModel(recs, dd)
            if path is not None:
                _store_cached(path, m)
        _MODELS[key] = m
    return _MODELS[key]


#: Fitted models kept on disk (``cache_base()/cost-<key>.pkl``), so that each of a
#: workflow's thousands of jobs does not refit (computing every record's work, BFS3's
#: probes included, takes seconds). Set ``BBRL_COST_CACHE=0`` to disable.
CACHE_ENV = "BBRL_COST_CACHE"


def _disk_cache_path(recs: list[Record], dists: Distributions) -> Path | None:
    """The cache file of a model fitted to ``recs``: keyed by bbrlcore's sources, the
    records, the fingerprints of the plugin algorithms they name and the arrays of the
    plan's own distributions they name (None: not cacheable)."""
    if os.environ.get(CACHE_ENV, "1") == "0":
        return None
    from bbrlcore import agents, cache_base, source_digest
    from bbrlcore.agents import registry
    from bbrlcore.errors import BBRLError

    h = hashlib.sha256(source_digest().encode())
    for r in recs:
        h.update(repr(r).encode())
    for name in sorted({r.algorithm for r in recs}):
        try:
            agents.get(name)
            h.update(f"{name}:{registry.entry(name).fingerprint}".encode())
        except BBRLError:
            h.update(f"{name}:?".encode())
    from bbrlcore.mdp import distributions as D
    from bbrlcore.mdp import families

    for name in sorted({n for r in recs for n in (r.test, r.prior)} & set(dists.extra)):
        if name in D.BUILTINS or families.parse_name(name) is not None:
            continue  # (named: the sources and the name decide it; nothing to build)
        d = as_fdm(dists.extra[name])
        try:  # (the stored entries: a large prior's dense arrays are never built)
            h.update(repr((d.n_states, d.n_actions)).encode())
            for arr in (d.entry_keys, d._data.theta, d._data.reward):
                h.update(np.ascontiguousarray(arr).tobytes())
            h.update(repr(getattr(d, "initial_state", None)).encode())
        except AttributeError:
            return None
    return Path(cache_base()) / f"cost-{h.hexdigest()[:24]}.pkl"


def _load_cached(path: Path, dists: Distributions) -> CostModel | None:
    try:
        with open(path, "rb") as fh:
            fits, skipped = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError,
            TypeError, ValueError):
        return None
    m = CostModel.__new__(CostModel)
    m.dists, m.fits, m.skipped = dists, fits, skipped
    return m


def _store_cached(path: Path, m: CostModel) -> None:
    """Written to a temporary file, then renamed (concurrent jobs may race: the last
    rename wins, every version is whole); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((m.fits, m.skipped), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------
# Module-level shortcuts (the default model)


def seconds_per_trajectory(
    algorithm: str,
    params: Mapping[str, Any],
    test: Any,
    horizon: int = 250,
    prior: Any = None,
    results_dir: str | os.PathLike[str] | None = None,
    gamma: float = 0.95,
) -> float:
    """Estimated seconds of one trajectory of ``horizon`` steps (online time).

    Parameters
    ----------
    algorithm, params
        The algorithm's name and its parameters (typed or as strings).
    test, prior
        The test distribution and the prior (names, or distributions; ``prior=None``: the
        test's own).
    horizon, gamma
        Number of steps T and the discount factor.
    results_dir
        Benchmarks results directory used for calibration (default:
        :func:`default_results_dir`).

    Examples
    --------
    >>> s = seconds_per_trajectory("bamcp", {"K": 500, "D": 15}, "GC")
    >>> 1e-4 < s < 10
    True
    """
    return model(results_dir).seconds_per_trajectory(algorithm, params, test, horizon,
                                                      prior, gamma)


def offline_seconds(
    algorithm: str,
    params: Mapping[str, Any],
    prior: Any,
    horizon: int = 250,
    results_dir: str | os.PathLike[str] | None = None,
    gamma: float = 0.95,
) -> float:
    """Estimated seconds of offline learning (only OPPS-DS and plugins learn offline)."""
    return model(results_dir).offline_seconds(algorithm, params, prior, horizon, gamma)


def run_seconds(
    algorithm: str,
    params: Mapping[str, Any],
    test: Any,
    n_mdps: int,
    horizon: int = 250,
    prior: Any = None,
    results_dir: str | os.PathLike[str] | None = None,
) -> float:
    """Estimated seconds of running ``n_mdps`` trajectories (without job overhead)."""
    return n_mdps * seconds_per_trajectory(algorithm, params, test, horizon, prior, results_dir)


# ---------------------------------------------------------------------------------------
# Colosseum's indicators: exact evaluations of the agent's policy


@dataclass(frozen=True)
class EvaluationRecord:
    """One measured exact evaluation (``benchmarks/bench_colosseum_evaluations.py``): the
    kernel's seconds on ``test`` (``episode_length`` H, 0: continuing) for a ``policy``
    (stochastic or deterministic) on ``transitions`` transitions."""

    test: str
    episode_length: int
    policy: str
    transitions: int
    seconds: float


def evaluation_records(*dirs: str | os.PathLike[str] | None) -> list[EvaluationRecord]:
    """The evaluation records of the JSON files of ``dirs`` (default: the benchmarks'
    results directory): objects of a top-level ``evaluation`` list with ``test``,
    ``episode_length``, ``policy``, ``transitions`` and ``kernel_us``."""
    out: list[EvaluationRecord] = []
    for d in dirs or (default_results_dir(),):
        if d is None or not Path(d).is_dir():
            continue
        for f in sorted(Path(d).glob("*.json")):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            rows = data.get("evaluation") if isinstance(data, dict) else None
            if not isinstance(rows, list):
                continue
            for r in rows:
                if not isinstance(r, dict) or not isinstance(r.get("test"), str):
                    continue
                us, tr = r.get("kernel_us"), r.get("transitions")
                if (isinstance(us, bool) or not isinstance(us, (int, float)) or us <= 0
                        or not isinstance(tr, int) or tr <= 0):
                    continue
                out.append(EvaluationRecord(r["test"], int(r.get("episode_length") or 0),
                                            str(r.get("policy", "")), tr, float(us) * 1e-6))
    return out


_EVAL_MEMO: dict[Any, Any] = {}


def evaluation_seconds(test: str, episode_length: int, dist: Any = None) -> float:
    """Seconds of one exact evaluation of an agent's policy on an MDP of ``test``
    (Colosseum's indicators, :mod:`bbrlcore.mdp.indicators`), in the interaction's
    setting (``episode_length`` H; 0: continuing): the measured figure of ``test`` in
    that setting (the costlier of the stochastic and the deterministic policy's), else the
    measurements' largest price per unit of work on that setting's evaluations, times
    the work of ``test`` (``dist``, its distribution, or loaded by name): episodic, H ×
    the transitions of its support (backward induction); continuing, its transitions
    (the chain; the dense GTH of a closed class makes larger chains dearer, which the
    largest price of the measured instances covers up to 625 states).

    >>> evaluation_seconds("Colosseum-EC-DeepSea-0", 5) > 0
    True
    """
    key = (default_results_dir(), os.environ.get(RESULTS_ENV))
    recs = _EVAL_MEMO.get(key)
    if recs is None:
        recs = _EVAL_MEMO[key] = evaluation_records()
    H = int(episode_length or 0)
    exact = [r.seconds for r in recs if r.test == test and r.episode_length == H]
    if exact:
        return max(exact)
    same = [r for r in recs if (r.episode_length > 0) == (H > 0)]
    if dist is None:
        dist = Distributions()(test)
    transitions = int(np.asarray(as_fdm(dist).support_layout.nsucc).sum())
    work = transitions * (H if H else 1)
    if not same:
        return 1e-8 * work  # (no measurement: about the DeepSea kernels' price)
    price = max(r.seconds / (r.transitions * (r.episode_length or 1)) for r in same)
    return price * work
