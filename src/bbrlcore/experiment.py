"""Test sets and the experiment protocol: drawing, storing and running (spec 01 §3).

A **test set** is N MDPs drawn from a test distribution, with the discount factor γ, the
horizon T and the seed that drew them. An **experiment** pairs a test set with the prior
an agent was trained on, named ``{test}-{prior}`` (``GC-GC`` accurate, ``GC-UGC``
inaccurate); both experiments of a test distribution share its test set, so agents are
paired across priors too.

Running an agent plays **one trajectory per test MDP**: the agent is reset to its prior,
then acts for exactly T steps; the trajectory's return is
:math:`\\sum_{t=0}^{T-1} \\gamma^t r_t`. Agents know the reward function and learn
transitions only. Each trajectory runs inside one numba call; its wall time (reset, every
decision and every environment step; not compilation, generator construction nor I/O) is
the trajectory's ``online_time_s``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from . import __version__, agents, seeds
from .agents.base import Episode
from .distributions import FDMDistribution
from .errors import BBRLError
from .formats import artefacts

if TYPE_CHECKING:
    from .mdp.families import FamilyDistribution


@dataclass(frozen=True, eq=False)
class TestSet:
    """N test MDPs drawn from ``test`` with their γ, T and seed.

    ``test`` is an FDM distribution or a problem family's test distribution with a drawn
    structure (:class:`bbrlcore.mdp.families.FamilyDistribution`).

    ``mdps`` has shape (N, nX, nU, nX); MDP ``i`` is drawn with the generator
    :func:`bbrlcore.seeds.mdp_rng` ``(seed, i)``, so a smaller test set with the same seed
    is a prefix of a larger one.
    """

    test: FDMDistribution | FamilyDistribution
    mdps: np.ndarray
    gamma: float
    horizon: int
    seed: int

    __test__ = False  # not a pytest class

    @property
    def n_mdps(self) -> int:
        return int(self.mdps.shape[0])

    def episode(self, horizon: int | None = None) -> Episode:
        return Episode(
            R=np.ascontiguousarray(self.test.reward),
            Rstd=np.ascontiguousarray(self.test.reward_std),
            gaussian=self.test.reward_type == "gaussian",
            initial_state=self.test.initial_state,
            gamma=self.gamma,
            horizon=self.horizon if horizon is None else horizon,
        )


def new_test_set(
    test: FDMDistribution | FamilyDistribution, n_mdps: int, gamma: float, horizon: int,
    seed: int
) -> TestSet:
    """Draw a test set (checks the parameters with clear errors)."""
    if not 1 <= n_mdps <= MAX_MDPS:
        raise BBRLError(f"--n-mdps must be in [1, {MAX_MDPS}], got {n_mdps}")
    if not (0 < gamma <= 1):
        raise BBRLError(f"--gamma must be in (0, 1], got {gamma}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {MAX_HORIZON}], got {horizon}")
    seeds.check_seed(seed, "--seed")
    mdps = np.stack([test.draw_mdp(seeds.mdp_rng(seed, i)) for i in range(n_mdps)])
    return TestSet(test, mdps, float(gamma), int(horizon), int(seed))


def write_test_set(ts: TestSet, path: str | Path) -> None:
    nX, nU = ts.test.n_states, ts.test.n_actions
    table = pl.DataFrame(
        {
            "mdp_index": np.arange(ts.n_mdps, dtype=np.int64),
            "P": ts.mdps.reshape(ts.n_mdps, nX * nU * nX),
        }
    )
    meta = {
        "test": ts.test.short_name,
        "test_distribution": ts.test.to_dict(),
        "n_mdps": ts.n_mdps,
        "gamma": ts.gamma,
        "horizon": ts.horizon,
        "seed": ts.seed,
    }
    artefacts.write_artefact(path, table, "test-set", meta)


def read_test_set(path: str | Path) -> TestSet:
    """Read a test-set artefact, validating its contents: the embedded test distribution,
    γ, T and seed, one row per MDP index ``0..N-1``, and every MDP row a probability
    distribution (finite, non-negative, summing to one within :data:`ROW_SUM_TOLERANCE`).
    Any problem is one :class:`BBRLError` naming the file (and the MDP and row)."""
    table, meta = artefacts.read_artefact(path, "test-set")
    m = artefacts.MetaReader(path, meta, "test-set")
    regen = artefacts.REGENERATE["test-set"]
    test = _embedded_test_distribution(m.dict("test_distribution"), str(path))
    n = m.int("n_mdps", lo=1, hi=MAX_MDPS)
    gamma = m.float("gamma", lo=0.0, hi=1.0, lo_open=True)
    horizon = m.int("horizon", lo=1, hi=MAX_HORIZON)
    seed = m.int("seed", lo=0, hi=seeds.MAX_SEED)
    nX, nU = test.n_states, test.n_actions
    if set(table.columns) < {"mdp_index", "P"}:
        raise BBRLError(f"{path}: test-set table lacks the mdp_index or P column; {regen}")
    if len(table) != n:
        raise BBRLError(f"{path}: {len(table)} MDP rows, but the metadata says n_mdps={n}; "
                        f"{regen}")
    try:
        table = table.sort("mdp_index")
        idx = table["mdp_index"].to_numpy()
        if not np.array_equal(idx, np.arange(n)):
            raise BBRLError(f"{path}: mdp_index is not 0..{n - 1} (each once); {regen}")
        P = np.asarray(table["P"].to_numpy(), dtype=np.float64)
        if P.shape != (n, nX * nU * nX):
            raise BBRLError(f"{path}: MDP rows hold {P.shape[1:] or 'ragged'} values, expected "
                            f"{nX * nU * nX} ({nX} states x {nU} actions); {regen}")
    except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed test-set artefact ({exc}); {regen}") from None
    mdps = P.reshape(n, nX, nU, nX)
    check_mdps(mdps, str(path))
    return TestSet(test, mdps, gamma, horizon, seed)


def _embedded_test_distribution(
    d: dict[str, Any], source: str
) -> FDMDistribution | FamilyDistribution:
    """The embedded test distribution: a problem family's (a ``"family"`` key: rebuilt from
    the family and its parameters) or an FDM."""
    if "family" in d:
        from .mdp.families import from_dict

        return from_dict(d, source)
    return FDMDistribution.from_dict(d, source)


#: Tolerance on the sum of each transition row of a test MDP.
ROW_SUM_TOLERANCE = 1e-9
#: Limits of a test set (larger values are refused with a clear error).
MAX_MDPS = 10_000_000
MAX_HORIZON = 100_000_000


def check_mdps(mdps: np.ndarray, source: str) -> None:
    """Every row ``P[i, x, u, :]`` finite, non-negative and summing to one; else one
    :class:`BBRLError` naming ``source``, the MDP and the row."""
    bad_val = ~np.isfinite(mdps) | (mdps < 0)
    if bad_val.any():
        i, x, u, y = (int(v) for v in np.argwhere(bad_val)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}): P(y={y}) = {mdps[i, x, u, y]} "
                        "is not a probability; " + artefacts.REGENERATE["test-set"])
    err = np.abs(mdps.sum(axis=3) - 1.0)
    if (err > ROW_SUM_TOLERANCE).any():
        i, x, u = (int(v) for v in np.argwhere(err > ROW_SUM_TOLERANCE)[0])
        raise BBRLError(f"{source}: MDP {i}, row (x={x}, u={u}) sums to "
                        f"{mdps[i, x, u].sum():.12g}, not 1; " + artefacts.REGENERATE["test-set"])


# ---------------------------------------------------------------------------------------
# Trained agents


@dataclass(frozen=True, eq=False)
class TrainedAgent:
    """An agent after offline learning, as stored in an agent artefact."""

    algorithm: str
    agent_id: str
    params: dict[str, Any]
    prior: FDMDistribution
    offline_time_s: float
    seed: int
    gamma: float
    horizon: int
    info: dict[str, Any]
    table: pl.DataFrame | None = None
    #: how another process finds a plugin algorithm again (its registry ``ref``; "" for
    #: a built-in, found by its name) and the fingerprint of the plugin's code
    ref: str = ""
    fingerprint: str = ""


def train_agent(
    algorithm: str,
    raw_params: dict[str, Any],
    prior: FDMDistribution,
    *,
    seed: int = 0,
    gamma: float = 0.95,
    horizon: int = 250,
    checkpoint: str | None = None,
    checkpoint_every: float = 60.0,
    progress: bool = True,
    source: str = "--param",
    expected_s: float | None = None,
) -> TrainedAgent:
    """Offline learning of ``algorithm`` on ``prior`` (timed: ``offline_time_s``).

    ``expected_s`` (the cost model's estimate) makes a training that lasts more than
    :data:`OVERRUN_FACTOR` times longer say so on stderr."""
    from .agents.base import TrainContext, Trained

    entry = agents.registry.entry(algorithm)
    alg = entry.algorithm
    params = alg.parse_params(raw_params, source=source)
    if not (0 < gamma <= 1):
        raise BBRLError(f"--gamma must be in (0, 1], got {gamma}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {MAX_HORIZON}], got {horizon}")
    seeds.check_seed(seed, "--seed")
    alg.check_setting(params, prior, gamma, horizon,
                      source="" if source == "--param" else source)
    overrun = Overrun(f"training {alg.agent_id(params)}", expected_s)
    ctx = TrainContext(
        seed=seed,
        gamma=gamma,
        horizon=horizon,
        progress=_train_progress(alg.agent_id(params), overrun) if progress else None,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
    )
    if alg.train is None:  # nothing to learn offline (the prior is kept as it is)
        trained, elapsed = Trained(), 0.0
    else:
        t0 = time.perf_counter()
        trained = alg.train(prior, params, ctx)
        elapsed = time.perf_counter() - t0
        overrun.check(elapsed, final=True)
    elapsed = float(trained.info.pop("_offline_time_s", elapsed))
    agent_id = trained.info.pop("_agent_id", None) or alg.agent_id(params)
    return TrainedAgent(
        algorithm=alg.name,
        agent_id=agent_id,
        params=params,
        prior=prior,
        offline_time_s=elapsed,
        seed=seed,
        gamma=gamma,
        horizon=horizon,
        info=trained.info,
        table=trained.table,
        ref="" if entry.builtin else entry.ref,
        fingerprint=entry.fingerprint,
    )


def _train_progress(agent_id: str, overrun: Overrun) -> Callable[[int, int], None]:
    state = {"t0": time.perf_counter(), "last": 0.0}

    def report(done: int, total: int) -> None:
        overrun.check(time.perf_counter() - state["t0"])
        now = time.perf_counter()
        if done < total and now - state["last"] < 2.0:
            return
        state["last"] = now
        el = now - state["t0"]
        eta = el / done * (total - done) if done else float("nan")
        print(
            f"[train {agent_id}] {done}/{total} ({100 * done / max(total, 1):.0f}%), "
            f"elapsed {el:.1f} s, ~{eta:.0f} s left",
            file=sys.stderr,
            flush=True,
        )

    return report


def write_agent(agent: TrainedAgent, path: str | Path) -> None:
    row = {
        "algorithm": [agent.algorithm],
        "agent": [agent.agent_id],
        "params": [json.dumps(agent.params, sort_keys=True)],
        "prior": [agent.prior.short_name],
        "offline_time_s": [agent.offline_time_s],
        "seed": [agent.seed],
        "gamma": [agent.gamma],
        "horizon": [agent.horizon],
        "info": [json.dumps(agent.info, sort_keys=True)],
    }
    table = pl.DataFrame(row)
    if agent.table is not None:
        table = table.with_columns(pl.Series("learned", [agent.table.to_dicts()]))
    meta = {
        "algorithm": agent.algorithm,
        "agent": agent.agent_id,
        "params": agent.params,
        "prior_distribution": agent.prior.to_dict(),
        "offline_time_s": agent.offline_time_s,
        "seed": agent.seed,
        "gamma": agent.gamma,
        "horizon": agent.horizon,
        "info": agent.info,
    }
    if agent.ref:
        meta["plugin"] = {"ref": agent.ref, "fingerprint": agent.fingerprint}
    artefacts.write_artefact(path, table, "agent", meta)


def read_agent(path: str | Path) -> TrainedAgent:
    """Read an agent artefact, validating its metadata (algorithm, parameters re-checked
    by the algorithm, prior, times, seed, γ, T): one :class:`BBRLError` naming the file on
    any problem."""
    table, meta = artefacts.read_artefact(path, "agent")
    m = artefacts.MetaReader(path, meta, "agent")
    name = m.str("algorithm")
    plugin = m.dict("plugin", default={})
    ref = plugin.get("ref", "")
    if not isinstance(ref, str):
        raise m.fail("plugin", "must hold the plugin's reference as a string")
    try:
        entry = agents.registry.entry(ref or name)
    except BBRLError as exc:
        raise BBRLError(f"{path}: {exc}") from None
    alg = entry.algorithm
    if alg.name != name:
        raise m.fail("algorithm", f"{name!r} is not the algorithm {ref!r} defines "
                     f"({alg.name!r})")
    fingerprint = plugin.get("fingerprint", "")
    if ref and fingerprint != entry.fingerprint:
        print(f"bbrl: warning: {path} was trained with other code of plugin {name} "
              f"(fingerprint {fingerprint}, now {entry.fingerprint})", file=sys.stderr)
    params = alg.parse_params(m.dict("params"), source=f"{path}: params", stored=True)
    prior = FDMDistribution.from_dict(m.dict("prior_distribution"), str(path))
    agent_id = m.str("agent")
    if agent_id.split("__", 1)[0] != alg.name:
        raise m.fail("agent", f"{agent_id!r} is not an id of {alg.name}")
    try:
        learned = None
        if "learned" in table.columns:
            learned = pl.DataFrame(table["learned"][0].to_list())
    except (ValueError, TypeError, IndexError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed agent artefact ({exc}); "
                        f"{artefacts.REGENERATE['agent']}") from None
    return TrainedAgent(
        algorithm=alg.name,
        agent_id=agent_id,
        params=params,
        prior=prior,
        offline_time_s=m.float("offline_time_s", lo=0.0),
        seed=m.int("seed", lo=0, hi=seeds.MAX_SEED),
        gamma=m.float("gamma", lo=0.0, hi=1.0, lo_open=True),
        horizon=m.int("horizon", lo=1, hi=MAX_HORIZON),
        info=m.dict("info", default={}),
        table=learned,
        ref=ref,
        fingerprint=entry.fingerprint if ref else "",
    )


# ---------------------------------------------------------------------------------------
# Running


def parse_slice(spec: str | None, n: int) -> range:
    """``"a:b"`` (Python slice, either side optional) over ``range(n)``."""
    if spec is None or spec == "":
        return range(n)
    if ":" not in spec:
        raise BBRLError(f"--mdps {spec!r}: expected START:STOP (for example 0:100)")
    a, b = spec.split(":", 1)
    try:
        start = int(a) if a.strip() else 0
        stop = int(b) if b.strip() else n
    except ValueError:
        raise BBRLError(f"--mdps {spec!r}: START and STOP must be integers") from None
    if not (0 <= start <= stop <= n):
        raise BBRLError(f"--mdps {spec!r}: must satisfy 0 <= START <= STOP <= {n}")
    return range(start, stop)


#: A run or a training lasting more than this many times its estimate says so on stderr
#: (the job's log), while it runs and at its end.
OVERRUN_FACTOR = 3.0
#: ... once it has lasted at least this many seconds (small jobs are all noise).
OVERRUN_MIN_S = 30.0


class Overrun:
    """Watches a run or a training against the cost model's estimate (``expected_s``)."""

    def __init__(self, what: str, expected_s: float | None) -> None:
        self.what = what
        self.expected = expected_s if expected_s and expected_s > 0 else None
        self.warned = False

    def check(self, elapsed: float, final: bool = False) -> None:
        if self.expected is None or elapsed < OVERRUN_MIN_S:
            return
        ratio = elapsed / self.expected
        if ratio <= OVERRUN_FACTOR or (self.warned and not final):
            return
        self.warned = True
        when = "took" if final else "has run for"
        print(
            f"bbrl: warning: {self.what} {when} {elapsed:.0f} s, {ratio:.1f} times the cost "
            f"model's estimate of {self.expected:.3g} s for the whole job; a cluster time "
            "limit derived from it may be too short (the workflow lengthens it on retry; "
            "benchmarks/bench_cost.py recalibrates the model)",
            file=sys.stderr,
            flush=True,
        )


def run_agent(
    ts: TestSet,
    agent: TrainedAgent,
    mdps: range | None = None,
    *,
    progress: bool = True,
    label: str | None = None,
    expected_s: float | None = None,
) -> pl.DataFrame:
    """Play one trajectory of ``agent`` on each selected test MDP; one row per MDP.

    ``expected_s`` (the cost model's estimate for these trajectories) makes a run that
    lasts more than :data:`OVERRUN_FACTOR` times longer say so on stderr. Anything the
    agent's code prints goes to stderr; an error of the agent's code is one
    :class:`BBRLError` naming the agent, the test MDP and the step."""
    from .agents.api import AgentError, plugin_output

    alg = agents.get(agent.ref or agent.algorithm)
    if agent.prior.n_states != ts.test.n_states or agent.prior.n_actions != ts.test.n_actions:
        raise BBRLError(
            f"agent prior {agent.prior.short_name} has {agent.prior.n_states} states and "
            f"{agent.prior.n_actions} actions; test set {ts.test.short_name} has "
            f"{ts.test.n_states} and {ts.test.n_actions}"
        )
    if agent.gamma != ts.gamma or agent.horizon != ts.horizon:
        if alg.train is not None:
            print(
                f"bbrl: warning: agent {agent.agent_id} was trained with gamma={agent.gamma}, "
                f"horizon={agent.horizon}; the test set uses gamma={ts.gamma}, "
                f"horizon={ts.horizon}",
                file=sys.stderr,
            )
    alg.check_setting(agent.params, agent.prior, ts.gamma, ts.horizon,
                      source=f"agent {agent.agent_id}")
    idx = np.arange(ts.n_mdps) if mdps is None else np.asarray(list(mdps), dtype=np.int64)
    trained = _as_trained(agent)
    play = alg.make_player(agent.prior, agent.params, trained, ts.episode())
    tseeds = seeds.trajectory_seeds(ts.seed, agent.agent_id, idx)
    # compile (or load from the numba cache) outside the timed region
    if len(idx):
        warm = alg.make_player(agent.prior, agent.params, trained, ts.episode(horizon=1))
        try:
            with plugin_output():
                warm(np.ascontiguousarray(ts.mdps[idx[0]]), int(tseeds[0]))
        except AgentError as exc:
            raise BBRLError(f"agent {agent.agent_id}, test MDP {int(idx[0])}: {exc}") from None
    n = len(idx)
    returns = np.empty(n)
    times = np.empty(n)
    counters = np.zeros((n, len(alg.counters)), dtype=np.int64)
    name = label or f"{agent.agent_id} {ts.test.short_name}-{agent.prior.short_name}"
    overrun = Overrun(f"run {name}", expected_s)
    if progress and expected_s and expected_s >= 5.0:  # long runs: say what to expect
        print(f"[run {name}] {n} trajectories, about {expected_s:.3g} s expected (cost model)",
              file=sys.stderr, flush=True)
    t_start = time.perf_counter()
    last = t_start
    with plugin_output():  # the agent's prints go to stderr
        for k, i in enumerate(idx):
            P = np.ascontiguousarray(ts.mdps[i])
            t0 = time.perf_counter()
            try:
                ret, cnt = play(P, int(tseeds[k]))
            except AgentError as exc:
                raise BBRLError(f"agent {agent.agent_id}, test MDP {int(i)}: {exc}") from None
            times[k] = time.perf_counter() - t0
            returns[k] = ret
            if len(alg.counters):
                counters[k, :] = cnt
            now = time.perf_counter()
            overrun.check(now - t_start, final=k + 1 == n)
            if progress and (now - last >= 5.0 or (k + 1 == n and now - t_start >= 5.0)):
                last = now
                el = now - t_start
                eta = el / (k + 1) * (n - k - 1)
                print(
                    f"[run {name}] {k + 1}/{n} MDPs, elapsed {el:.1f} s, ~{eta:.0f} s left",
                    file=sys.stderr,
                    flush=True,
                )
    if not np.isfinite(returns).all():
        bad = idx[~np.isfinite(returns)]
        raise BBRLError(f"agent {agent.agent_id} produced a non-finite return on MDPs {bad[:5]}")
    experiment = f"{ts.test.short_name}-{agent.prior.short_name}"
    cols: dict[str, Any] = {
        "experiment": [experiment] * n,
        "test": [ts.test.short_name] * n,
        "prior": [agent.prior.short_name] * n,
        "algorithm": [agent.algorithm] * n,
        "agent": [agent.agent_id] * n,
        "params": [json.dumps(agent.params, sort_keys=True)] * n,
        "compat": [bool(agent.params.get("compat", False))] * n,
        "mdp_index": idx.astype(np.int64),
        "discounted_return": returns,
        "online_time_s": times,
        "n_steps": np.full(n, ts.horizon, dtype=np.int64),
        "offline_time_s": np.full(n, agent.offline_time_s),
        "seed": tseeds.astype(np.int64),
        "gamma": np.full(n, ts.gamma),
        "horizon": np.full(n, ts.horizon, dtype=np.int64),
        "test_seed": np.full(n, ts.seed, dtype=np.int64),
        "bbrlcore_version": [__version__] * n,
    }
    for j, c in enumerate(alg.counters):
        cols[c] = counters[:, j]
    return pl.DataFrame(cols).cast(RUN_COLUMNS)  # type: ignore[arg-type]


def _as_trained(agent: TrainedAgent):
    from .agents.base import Trained

    return Trained(info=agent.info, table=agent.table)


#: Columns every run table has, with their types (agent counters come on top).
RUN_COLUMNS: dict[str, type[pl.DataType]] = {
    "experiment": pl.String,
    "test": pl.String,
    "prior": pl.String,
    "algorithm": pl.String,
    "agent": pl.String,
    "params": pl.String,
    "compat": pl.Boolean,
    "mdp_index": pl.Int64,
    "discounted_return": pl.Float64,
    "online_time_s": pl.Float64,
    "n_steps": pl.Int64,
    "offline_time_s": pl.Float64,
    "seed": pl.Int64,
    "gamma": pl.Float64,
    "horizon": pl.Int64,
    "test_seed": pl.Int64,
    "bbrlcore_version": pl.String,
}

#: Columns whose values depend on timing (excluded when comparing runs).
TIMING_COLUMNS = ("online_time_s", "offline_time_s")


def write_run(table: pl.DataFrame, path: str | Path, meta: dict[str, Any]) -> None:
    artefacts.write_artefact(path, table, "run", meta)


def read_run(path: str | Path) -> pl.DataFrame:
    table, _ = artefacts.read_artefact(path, "run")
    return table
