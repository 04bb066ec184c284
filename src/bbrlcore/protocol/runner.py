"""Running: one trajectory per test MDP, timed; run tables.

**Recording.** Every player writes the reward of each step into an array the runner
gives it. Up to :data:`MAX_RECORDED_STEPS` steps per trajectory the run table keeps them
all (``rewards``); a longer interaction (up to 10⁸ steps) keeps, per trajectory, the
cumulative undiscounted reward at its checkpoints (``checkpoints``: every
``checkpoint_every`` steps, the episode ends of an episodic interaction) and each
episode's return (``episode_returns``), computed from one buffer of T steps reused for
every trajectory), outside the timed region. The discounted
return and the undiscounted sum (``undiscounted_return``) are over all T steps in every
setting.

**Regret.** A test set drawn with its reference values (:mod:`bbrlcore.mdp.references`)
gives every row the optimal, worst and uniformly random policy's expected reward per
step (continuing: ρ*, ρ⁻, ρᵘ) or per episode (episodic: V*_H(s₀), V⁻_H(s₀), Vᵘ_H(s₀)):
``optimal_reference``, ``worst_reference``, ``random_reference``; and the trajectory's
``regret``, T·ρ* − Σ r (continuing) or Σ_e (V*_H(s₀) − G_e) = E·V*_H(s₀) − Σ r
(episodic). With them the regret at any checkpoint t is exactly t·ρ* − C(t) (e·V*_H(s₀) −
C(eH)), which :mod:`bbrlcore.analysis.curves` draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bbrlcore.protocol.test_sets import TestSet
    from bbrlcore.protocol.training import TrainedAgent

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numba import njit

from bbrlcore import __version__, agents, crash, seeds
from bbrlcore.agents.base import on_rows, records_rewards
from bbrlcore.errors import BBRLError, building
from bbrlcore.formats import artefacts
from bbrlcore.protocol.test_sets import MAX_RECORDED_STEPS, default_checkpoint_every

__all__ = ["MAX_RECORDED_STEPS", "RUN_COLUMNS", "run_agent", "read_run", "write_run"]

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


#: The cost model's estimate of a job, in seconds: a number, None (no estimate), or a
#: function computing it when first needed (the model costs ≈ 0.2 s to load, which a
#: job of a few seconds need not pay: it is asked only after :data:`OVERRUN_MIN_S`).
Expected = float | None | Callable[[], float | None]


class Overrun:
    """Watches a run or a training against the cost model's estimate (``expected_s``)."""

    def __init__(self, what: str, expected_s: Expected) -> None:
        self.what = what
        self._source = expected_s
        self._expected: float | None = None
        self._resolved = False
        self.warned = False

    @property
    def expected(self) -> float | None:
        """The estimate in seconds (None: none); computed on first use."""
        if not self._resolved:
            self._resolved = True
            e = self._source() if callable(self._source) else self._source
            self._expected = float(e) if e and e > 0 else None
        return self._expected

    def check(self, elapsed: float, final: bool = False) -> None:
        if elapsed < OVERRUN_MIN_S or self.expected is None:
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
    expected_s: Expected = None,
    cpu_times: list[float] | None = None,
    log_every: int | None = None,
) -> pl.DataFrame:
    """Play one trajectory of ``agent`` on each selected test MDP; one row per MDP, with
    its discounted return, its per-step rewards (``rewards``, float32; up to
    :data:`MAX_RECORDED_STEPS` steps) and their sum (``undiscounted_return``, float64,
    accumulated step by step from the rewards as played; both null for a player that does
    not record them, see :func:`bbrlcore.agents.base.records_rewards`), and the
    interaction's settings and checkpoints (the module docstring; :data:`RUN_COLUMNS`).

    ``expected_s`` (the cost model's estimate for these trajectories, or a function
    computing it when first needed) makes a run that lasts more than
    :data:`OVERRUN_FACTOR` times longer say so on stderr. Anything the
    agent's code prints goes to stderr; an error of the agent's code is one
    :class:`BBRLError` naming the agent, the test MDP and the step. ``cpu_times``: a list
    that gets the process CPU seconds of each trajectory (its timed region), beside its
    wall time ``online_time_s`` (a probe's, :mod:`bbrlcore.plan.probe`).

    ``log_every`` L (None: not requested) asks for Colosseum's expected indicators
    (:mod:`bbrlcore.mdp.indicators`): the agent's current policy evaluated exactly on
    the test MDP every L steps inside its trajectory kernel
    (:attr:`~bbrlcore.agents.base.Algorithm.indicator_player`; the trajectory is the same
    as without), in the columns of :data:`INDICATOR_COLUMNS`. An algorithm without one
    gets null columns and one line on stderr saying the indicators are unavailable."""
    from bbrlcore.agents.api import AgentError, plugin_output

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
    alg.check_episodic(ts.episode_length, source=f"agent {agent.agent_id}",
                       params=agent.params)
    idx = np.arange(ts.n_mdps) if mdps is None else np.asarray(list(mdps), dtype=np.int64)
    trained = _as_trained(agent)
    # a player on sparse rows gets the test MDPs' values on the test layout; one written
    # before them (Algorithm.sparse False) dense arrays, if the problem affords them
    sparse = alg.sparse
    if not sparse:
        check_dense(ts, f"agent {agent.agent_id}")

    def mdp(i: int) -> np.ndarray:
        return np.ascontiguousarray(ts.mdps[i] if sparse else ts.dense(i))

    with building(f"the player of {agent.agent_id} on {ts.test.short_name}"):
        play = alg.make_player(agent.prior, agent.params, trained,
                               ts.episode(dense=not sparse))
    records = records_rewards(play)  # (a third party's play(P, seed) records none)
    call = on_rows(play) if records else play  # (this function's rows need no check)
    ind = None  # Colosseum's indicators: the player that computes them
    if log_every is not None:
        log_every = check_log_every(log_every, "log_every")
        if alg.indicator_player is not None and records:
            with building(f"the player of {agent.agent_id} on {ts.test.short_name}"):
                ind = alg.indicator_player(agent.prior, agent.params, trained,
                                           ts.episode(dense=not sparse), log_every)
            if ind is not None:  # (None: unavailable for these parameters)
                call = ind
    tseeds = seeds.trajectory_seeds(ts.seed, agent.agent_id, idx)
    # what the process is doing, for the line of a crash (bbrlcore.crash; nothing outside
    # a watched `bbrl run`)
    origin = f"plugin {agent.ref}" if agent.ref else "built-in"
    crash.doing(f"playing agent {agent.agent_id} ({origin}) on "
                f"{ts.test.short_name}-{agent.prior.short_name}")
    # compile (or load from the numba cache) outside the timed region
    if len(idx):
        crash.at_mdp(int(idx[0]))
        # (one step; an episodic interaction: one episode, so that the player of the
        # setting is built: episodic PSRL at gamma 1 has no continuing form)
        w = max(1, ts.episode_length)
        with building(f"the player of {agent.agent_id} on {ts.test.short_name}"):
            warm = (alg.make_player(agent.prior, agent.params, trained,
                                    ts.episode(horizon=w, dense=not sparse))
                    if ind is None else
                    alg.indicator_player(agent.prior, agent.params, trained,
                                         ts.episode(horizon=w, dense=not sparse),
                                         log_every))
        try:
            with plugin_output():
                if records_rewards(warm):
                    warm(mdp(idx[0]), int(tseeds[0]), np.empty(w))
                else:
                    warm(mdp(idx[0]), int(tseeds[0]))
        except AgentError:  # (a shortened trajectory: its place, e.g. counter_values
            pass  # "after step w - 1", is not the real one's; played in full below)
    n = len(idx)
    T, H, E = ts.horizon, ts.episode_length, ts.episodes
    every = ts.checkpoint_every
    steps = T <= MAX_RECORDED_STEPS  # every step's reward kept in the table
    if every is None and not steps:
        every = default_checkpoint_every(T)
    # short trajectories: one row per trajectory, written by the kernel; long ones: one
    # buffer of T steps for all of them, summed after each (NaN: a step left unset)
    with building(f"the rewards of {n} trajectories of {T} steps"):
        rewards = np.full((n, T) if records and steps else (0, 0), np.nan)
    buf = np.full(T if records and not steps else 0, np.nan)
    ck = np.empty((n, T // every) if records and every else (0, 0))
    ep_ret = np.empty((n, E) if records and H > 0 else (0, 0))
    totals = np.empty(n if records else 0)
    returns = np.empty(n)
    times = np.empty(n)
    counters = np.zeros((n, len(alg.counters)), dtype=np.int64)
    ind_values = np.full((n, len(INDICATOR_VALUES) + 1), np.nan)
    name = label or f"{agent.agent_id} {ts.test.short_name}-{agent.prior.short_name}{ts.tag}"
    overrun = Overrun(f"run {name}", expected_s)
    expected = overrun.expected if progress else None
    if expected and expected >= 5.0:  # long runs: say what to expect
        print(f"[run {name}] {n} trajectories, about {expected:.3g} s expected (cost model)",
              file=sys.stderr, flush=True)
    t_start = time.perf_counter()
    last = t_start
    with plugin_output():  # the agent's prints go to stderr
        for k, i in enumerate(idx):
            P = mdp(i)
            # (the kernel writes into this row)
            row = (rewards[k] if steps else buf) if records else None
            crash.at_mdp(int(i))
            c0 = time.process_time() if cpu_times is not None else 0.0
            t0 = time.perf_counter()
            try:
                if ind is not None:
                    ret, cnt, ind_values[k] = call(P, int(tseeds[k]), row)
                elif records:
                    ret, cnt = call(P, int(tseeds[k]), row)
                else:
                    ret, cnt = call(P, int(tseeds[k]))
            except AgentError as exc:  # (the place, for a diagnostic run after a crash)
                crash.error_at(exc.error, exc.hook, exc.place, int(i))
                raise BBRLError(f"agent {agent.agent_id}, test MDP {int(i)}: {exc}") from None
            times[k] = time.perf_counter() - t0
            if cpu_times is not None:
                cpu_times.append(time.process_time() - c0)
            returns[k] = ret
            if records:  # (outside the timed region)
                totals[k], bad = aggregate(row, every or 0, H, ck[k] if every else ck,
                                           ep_ret[k] if H else ep_ret, not steps)
                if bad >= 0 and not steps:  # (the table's rows: checked below)
                    raise BBRLError(f"agent {agent.agent_id}, test MDP {int(i)}: the reward "
                                    f"of step {bad} is not finite (a player given a rewards "
                                    "array must fill it with the finite reward of every "
                                    "step)")
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
    if records:
        unset = ~np.isfinite(rewards).all(axis=1)
        if unset.any():
            k = int(np.argmax(unset))
            t = int(np.argmax(~np.isfinite(rewards[k])))
            raise BBRLError(f"agent {agent.agent_id}, test MDP {int(idx[k])}: the reward of "
                            f"step {t} is {rewards[k, t]} (a player given a rewards array "
                            "must fill it with the finite reward of every step)")
    experiment = f"{ts.test.short_name}-{agent.prior.short_name}{ts.tag}"
    if alg.run_note is not None and n:
        note = alg.run_note(agent.params, {c: int(counters[:, j].sum())
                                           for j, c in enumerate(alg.counters)}, n * T)
        if note:
            print(f"bbrl: note: {agent.agent_id} on {experiment}: {note}", file=sys.stderr)
    if log_every is not None and ind is None and n:
        why = ("it does not expose its current policy (Algorithm.indicator_player; a "
               "Python plugin: a policy(self) method; a compiled one: an @njit "
               "policy(state, out))" if records else
               "its player records no rewards")
        print(f"bbrl: note: {agent.agent_id} on {experiment}: Colosseum's expected "
              f"indicators are unavailable for this agent: {why}; their columns are null",
              file=sys.stderr)
    refs = ts.reference_values()
    if refs is not None:
        opt_r, worst_r, rand_r = (v[idx] for v in refs)
        # the reference's expected total over the interaction, minus what was collected
        regret = (opt_r * (E if H > 0 else T) - totals) if records else np.full(n, np.nan)
    else:
        opt_r = worst_r = rand_r = regret = np.full(n, np.nan)

    def nullable(v: np.ndarray) -> list[float | None]:
        return [None if not np.isfinite(x) else float(x) for x in v]

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
        "n_steps": np.full(n, T, dtype=np.int64),
        "offline_time_s": np.full(n, agent.offline_time_s),
        "seed": tseeds.astype(np.int64),
        "gamma": np.full(n, ts.gamma),
        "horizon": np.full(n, ts.horizon, dtype=np.int64),
        "test_seed": np.full(n, ts.seed, dtype=np.int64),
        "bbrlcore_version": [__version__] * n,
        "undiscounted_return": totals if records else [None] * n,
        "rewards": rewards_series(rewards) if records and steps else [None] * n,
        "episode_length": np.full(n, H, dtype=np.int64),
        "episodes": np.full(n, E, dtype=np.int64),
        "checkpoint_every": np.full(n, every or 0, dtype=np.int64) if every else [None] * n,
        "checkpoints": (list_series("checkpoints", ck) if records and every
                        else [None] * n),
        "episode_returns": (list_series("episode_returns", ep_ret) if records and H
                            else [None] * n),
        "optimal_reference": nullable(opt_r),
        "worst_reference": nullable(worst_r),
        "random_reference": nullable(rand_r),
        "regret": nullable(regret),
    }
    cols["log_every"] = [log_every] * n
    for j, c in enumerate(INDICATOR_VALUES):
        cols[c] = nullable(ind_values[:, j])
    stop = ind_values[:, -1]
    cols["training_stop_step"] = [None if not np.isfinite(v) or v < 0 else int(v)
                                  for v in stop]
    for j, c in enumerate(alg.counters):
        cols[c] = counters[:, j]
    return pl.DataFrame(cols).cast(RUN_COLUMNS)  # type: ignore[arg-type]


#: Largest test MDP given as a dense (nX, nU, nX) array to a player written before
#: sparse rows (:attr:`bbrlcore.agents.base.Algorithm.sparse` False), in entries.
MAX_DENSE_ENTRIES = 50_000_000


def check_dense(ts: TestSet, who: str) -> None:
    """Refuse, with the size, dense test MDPs too large for memory."""
    nX, nU = ts.test.n_states, ts.test.n_actions
    if nX * nU * nX > MAX_DENSE_ENTRIES:
        raise BBRLError(f"{who} plays dense (nX, nU, nX) MDPs (its Algorithm is not "
                        f"sparse): {ts.test.short_name} would need {nX * nU * nX * 8 / 2**20:,.0f}"
                        " MB per MDP; write it on sparse rows (Algorithm(..., sparse=True))")


def undiscounted_returns(rewards: np.ndarray) -> np.ndarray:
    """The sum of each row of ``rewards`` (trajectories × steps, float64), accumulated in
    step order like the discounted return (``s += r``; numpy's ``sum`` adds pairwise).

    Examples
    --------
    >>> undiscounted_returns(np.array([[1.0, 2.0, 3.5], [0.0, 0.0, 1.0]])).tolist()
    [6.5, 1.0]
    """
    if rewards.shape[1] == 0:
        return np.zeros(rewards.shape[0])
    return np.cumsum(rewards, axis=1)[:, -1].copy()


@njit(cache=True, error_model="numpy")
def aggregate(rewards, every, episode_length, checkpoints, episode_returns, consume):
    """One pass over a trajectory's ``rewards``: their sum (``s += r``, step by step, as
    :func:`undiscounted_returns`), the cumulative sum after every ``every`` steps into
    ``checkpoints`` (0: none), each episode's return into ``episode_returns``
    (``episode_length`` 0: none), and the first step whose reward is not finite (-1:
    none). ``consume`` sets every value read back to NaN (a buffer reused for the next
    trajectory then shows a step its player leaves unset).

    Examples
    --------
    >>> r = np.array([1.0, 2.0, 3.0, 4.0])
    >>> ck, ep = np.empty(2), np.empty(2)
    >>> s, bad = aggregate(r, 2, 2, ck, ep, False)
    >>> float(s), int(bad), ck.tolist(), ep.tolist()
    (10.0, -1, [3.0, 10.0], [3.0, 7.0])
    """
    T = rewards.shape[0]
    # blocks with no branch inside: an episode (episodic), else a checkpoint interval,
    # else the whole trajectory (each divides T); a checkpoint ends every `per` blocks
    block = episode_length if episode_length > 0 else (every if every > 0 else max(T, 1))
    per = every // block if every > 0 else -1
    s = 0.0
    bad = -1
    j = 0
    m = 0
    for b in range(T // block):
        lo = b * block
        e = 0.0
        for t in range(lo, lo + block):
            r = rewards[t]
            s += r
            e += r
        if bad < 0 and not np.isfinite(e):  # (a NaN or an infinity: the first one)
            for t in range(lo, lo + block):
                if not np.isfinite(rewards[t]):
                    bad = t
                    break
        if consume:
            rewards[lo:lo + block] = np.nan
        if episode_length > 0:
            episode_returns[m] = e
            m += 1
        if per > 0 and (b + 1) % per == 0:
            checkpoints[j] = s
            j += 1
    return s, bad


def list_series(name: str, values: np.ndarray) -> pl.Series:
    """Each row of ``values`` (rows × k, float64) as a list of float64.

    >>> list_series("checkpoints", np.array([[1.0, 3.0]])).to_list()
    [[1.0, 3.0]]
    """
    n, k = values.shape
    if n == 0 or k == 0:
        return pl.Series(name, [[]] * n, dtype=pl.List(pl.Float64))
    flat = pl.Series(name, np.ascontiguousarray(values, dtype=np.float64).reshape(-1))
    return flat.reshape((n, k)).cast(pl.List(pl.Float64))


def rewards_series(rewards: np.ndarray) -> pl.Series:
    """The ``rewards`` column: each row of ``rewards`` (trajectories × steps) as a list of
    float32 (the run table's type, :data:`RUN_COLUMNS`).

    Examples
    --------
    >>> rewards_series(np.array([[1.0, 0.5]])).to_list()
    [[1.0, 0.5]]
    """
    n, T = rewards.shape
    if n == 0 or T == 0:
        return pl.Series("rewards", [[]] * n, dtype=pl.List(pl.Float32))
    flat = pl.Series("rewards", np.ascontiguousarray(rewards, dtype=np.float32).reshape(-1))
    return flat.reshape((n, T)).cast(pl.List(pl.Float32))


def _as_trained(agent: TrainedAgent):
    from bbrlcore.agents.base import Trained

    return Trained(info=agent.info, table=agent.table)


#: Columns every run table has, with their types (agent counters come on top).
RUN_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
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
    # the reward of every step, as played (float32: exact for the paper's rewards), and
    # their sum in float64; null where the player records no rewards (a third party's
    # play(P, seed)); absent from run tables written before bbrl recorded them
    "undiscounted_return": pl.Float64,
    "rewards": pl.List(pl.Float32),
    # the interaction's settings (bbrlcore.protocol.test_sets.Interaction): H (0:
    # continuing), E (1: continuing), n (null: per-step rewards only); the cumulative
    # undiscounted reward at steps n, 2n, ..., T (null: not recorded) and, episodic, each
    # episode's undiscounted return (null otherwise); absent from run tables written
    # before them, which read as continuing
    "episode_length": pl.Int64,
    "episodes": pl.Int64,
    "checkpoint_every": pl.Int64,
    "checkpoints": pl.List(pl.Float64),
    "episode_returns": pl.List(pl.Float64),
    # the test MDP's reference values in the interaction's setting and the trajectory's
    # regret against the optimal one (module docstring; null where the test set has no
    # references); absent from run tables written before them
    "optimal_reference": pl.Float64,
    "worst_reference": pl.Float64,
    "random_reference": pl.Float64,
    "regret": pl.Float64,
    # Colosseum's indicators (bbrlcore.mdp.indicators), when the run asked for them:
    # the interval L and the final row's cumulative values; null otherwise, and for an
    # agent that does not expose its policy; absent from run tables written before them
    "log_every": pl.Int64,
    "expected_regret": pl.Float64,
    "normalised_expected_regret": pl.Float64,
    "expected_reward": pl.Float64,
    "normalised_expected_reward": pl.Float64,
    "normalised_reward": pl.Float64,
    "training_stop_step": pl.Int64,
}

#: Colosseum's indicators a player computes, in the order of its values
#: (:data:`bbrlcore.agents._indicators.COLUMNS`).
INDICATOR_VALUES = ("expected_regret", "normalised_expected_regret", "expected_reward",
                    "normalised_expected_reward", "normalised_reward")
#: The run table's columns of Colosseum's indicators.
INDICATOR_COLUMNS = ("log_every", *INDICATOR_VALUES, "training_stop_step")


def check_log_every(value: object, where: str) -> int:
    """``log_every`` checked: an integer >= 1 (Colosseum's benchmark: 100).

    >>> check_log_every(100, "log_every")
    100
    >>> check_log_every(0, "log_every")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: log_every=0: must be an integer >= 1 (the steps between ...
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise BBRLError(f"{where}={value!r}: must be an integer >= 1 (the steps between two "
                        "of Colosseum's evaluations of the agent's policy; its benchmark's: "
                        "100)")
    return int(value)


#: What each column of :data:`RUN_COLUMNS` holds (the documentation's column reference is
#: generated from this and :data:`RUN_COLUMNS`; a test checks that every column has one).
RUN_COLUMN_DOCS: dict[str, str] = {
    "experiment": "the experiment's name, `{test}-{prior}` (e.g. `GC-UGC`)",
    "test": "the test distribution's name (the test MDPs were drawn from it)",
    "prior": "the prior's name (the distribution the agent was trained on)",
    "algorithm": "the algorithm's name: a built-in's (`beb`) or a plugin's",
    "agent": "the agent's id: the algorithm and every parameter, defaults included "
             "(`bamcp__K=50__D=15`); also the name of its files",
    "params": "the agent's parameters, as a JSON object",
    "compat": "whether the agent runs in compat mode (the original library's quirks)",
    "mdp_index": "the test MDP's index in its test set, 0 to N − 1",
    "discounted_return": "the return Σ γᵗ rₜ over the T steps, summed in step order in "
                         "float64 (the paper's score, `score: discounted`)",
    "online_time_s": "wall-clock seconds of the trajectory: reset and every decision, "
                     "numba compilation excluded",
    "n_steps": "steps played (always the horizon T)",
    "offline_time_s": "wall-clock seconds of the agent's offline learning (the same on "
                      "every row of an agent)",
    "seed": "the integer that seeded the trajectory (from `SeedSequence([test_seed, "
            "sha256(agent), mdp_index])`)",
    "gamma": "the discount factor γ of the test set",
    "horizon": "the horizon T of the test set",
    "test_seed": "the seed the test set was drawn with",
    "bbrlcore_version": "the bbrlcore version that played the trajectory",
    "undiscounted_return": "Σ rₜ over the T steps, float64 (`score: undiscounted`); null "
                           "where the player records no rewards",
    "rewards": "the reward of every step, as played (float32: exact for the paper's "
               "rewards); null where the player records no rewards, and for interactions "
               "longer than `MAX_RECORDED_STEPS` (10,000) steps (their checkpoints are kept)",
    "episode_length": "H, the steps of an episode: the environment returns to its initial "
                      "state after every H steps (0: a continuing interaction)",
    "episodes": "E, the episodes of the interaction (T = E × H; 1 when continuing)",
    "checkpoint_every": "n: `checkpoints` holds the cumulative reward every n steps (null: "
                        "per-step rewards only)",
    "checkpoints": "the cumulative undiscounted reward at steps n, 2n, …, T (episodic: at "
                   "every episode's end unless n says otherwise); null when not recorded",
    "episode_returns": "each episode's undiscounted return, in order (episodic only; null "
                       "otherwise)",
    "optimal_reference": "the optimal policy's expected reward per step (continuing: the "
                         "optimal gain ρ*) or per episode (episodic: V*_H(s₀)) on this test "
                         "MDP, exact (`bbrlcore.mdp.references`); null where the test set "
                         "has no references",
    "worst_reference": "the same for the worst policy (ρ⁻, V⁻_H(s₀)): Colosseum's "
                       "normalisation divides the regret by optimal − worst",
    "random_reference": "the same for the uniformly random policy (ρᵘ, Vᵘ_H(s₀))",
    "regret": "T·ρ* − Σ rₜ (continuing) or Σₑ (V*_H(s₀) − Gₑ) (episodic): the "
              "trajectory's regret against the optimal policy's expected reward; null "
              "without references or rewards",
    "log_every": "L: the run asked for Colosseum's indicators, its current policy "
                 "evaluated exactly every L steps (Colosseum's benchmark: 100); null: not "
                 "asked",
    "expected_regret": "Colosseum's cumulative regret: Σ over its rows of the steps each "
                       "stands for × the per-step expected regret of the agent's current "
                       "policy (episodic: (V*₀(s) − V^π₀(s))/H for the episode's start s; "
                       "continuing: ρ* − ρ^π from the current state, 0 within 10⁻³); null "
                       "when not asked or unavailable for the agent",
    "normalised_expected_regret": "the same, each row's regret divided by V*₀(s) − V⁻₀(s) "
                                  "(episodic) or ρ* − ρ⁻ (continuing): Colosseum's table "
                                  "metric is this value / T",
    "expected_reward": "Σ over the rows of the steps each stands for × the expected reward "
                       "per step of the agent's current policy (Colosseum's cumulative "
                       "expected reward)",
    "normalised_expected_reward": "(expected_reward − (T − 1)·ρ⁻) / (ρ* − ρ⁻), per-step "
                                  "references (episodic: the references / H)",
    "normalised_reward": "(undiscounted_return − (T − 1)·ρ⁻) / (ρ* − ρ⁻): Colosseum's "
                         "normalised cumulative reward, of the rewards collected",
    "training_stop_step": "the step from which Colosseum would stop training the agent "
                          "(its policy judged optimal: the last 10 rows' normalised regrets "
                          "near 0 past a fifth of T); bbrl's agent keeps learning, the "
                          "indicators reuse one evaluation from there as Colosseum's do; "
                          "null: never, or not asked",
}

#: Agent counters: extra integer columns of the run tables of the algorithms that count
#: something per trajectory (:attr:`bbrlcore.agents.base.Algorithm.counters`), with what
#: each counts (a test checks that every built-in's counters are here).
COUNTER_DOCS: dict[str, str] = {
    "formula_failures": "OPPS-DS and `formula`: evaluations of the formula (one per action "
                        "and decision) that were undefined (NaN, a division by zero, ...) "
                        "and scored −∞",
    "resamples": "SBOSS, BOSS and PSRL: how many times the agent drew models from its "
                 "posterior during the trajectory (the first draw included)",
    "policies": "UCRL2: its episodes (policies computed by extended value iteration) "
                "during the trajectory",
    "evi_sweeps": "UCRL2: sweeps of extended value iteration during the trajectory",
    "evi_capped": "UCRL2: extended value iterations stopped at their sweep cap before "
                  "reaching their span criterion (0 expected)",
    "tied_steps": "UCRL2: steps whose action tied with another under the optimistic "
                  "values (a tie broken at random; the run says so in one line when they "
                  "are 90 % of its steps or more)",
}

#: Columns of :data:`RUN_COLUMNS` that run tables written before bbrl recorded per-step
#: rewards lack (they still read, merge and summarise; the missing values are null).
RECORDED_SINCE_REWARDS = ("undiscounted_return", "rewards")
#: Columns of :data:`RUN_COLUMNS` that run tables written before long and episodic
#: interactions lack: they read as continuing (:data:`SETTING_DEFAULTS`).
RECORDED_SINCE_EPISODES = ("episode_length", "episodes", "checkpoint_every", "checkpoints",
                           "episode_returns", "optimal_reference", "worst_reference",
                           "random_reference", "regret")
#: The values of those columns in a table written before them (a continuing interaction
#: with per-step rewards only).
SETTING_DEFAULTS: dict[str, Any] = {"episode_length": 0, "episodes": 1,
                                    "checkpoint_every": None, "checkpoints": None,
                                    "episode_returns": None, "optimal_reference": None,
                                    "worst_reference": None, "random_reference": None,
                                    "regret": None, "log_every": None,
                                    "expected_regret": None,
                                    "normalised_expected_regret": None,
                                    "expected_reward": None,
                                    "normalised_expected_reward": None,
                                    "normalised_reward": None,
                                    "training_stop_step": None}


def with_settings(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` with the columns of :data:`RECORDED_SINCE_EPISODES` and
    :data:`INDICATOR_COLUMNS` it lacks (a table written before them: continuing, no
    indicators, :data:`SETTING_DEFAULTS`).

    >>> with_settings(pl.DataFrame({"agent": ["a"]})).row(0)[:10]
    ('a', 0, 1, None, None, None, None, None, None, None)
    >>> with_settings(pl.DataFrame({"agent": ["a"]})).width
    17
    """
    missing = [c for c in (*RECORDED_SINCE_EPISODES, *INDICATOR_COLUMNS)
               if c not in table.columns]
    if not missing:
        return table
    return table.with_columns(pl.lit(SETTING_DEFAULTS[c], dtype=RUN_COLUMNS[c]).alias(c)
                              for c in missing)

#: Columns whose values depend on timing (excluded when comparing runs).
TIMING_COLUMNS = ("online_time_s", "offline_time_s")


def score_summary(table: pl.DataFrame) -> str:
    """What a run table's trajectories scored, in the words of their setting (what ``bbrl
    run`` and a workflow job print): the paper's protocol (a continuing interaction
    without checkpoints) is scored by the discounted return, its mean as always; an
    episodic or a long one (checkpoints) by the sum of its rewards, with the mean return
    of an episode when episodic and the mean regret when the test set has references
    (the discounted return of 10,000 steps is its first hundred steps').

    >>> t = pl.DataFrame({"discounted_return": [0.0063, 0.0065], "episode_length": [10] * 2,
    ...                   "episodes": [500] * 2, "checkpoint_every": [10] * 2,
    ...                   "undiscounted_return": [488.0, 490.0], "regret": [12.0, 10.0]})
    >>> score_summary(t)
    'mean undiscounted return 489 over 500 episodes (0.978 an episode), mean regret 11'
    >>> score_summary(t.with_columns(episode_length=0, episodes=1, checkpoint_every=None))
    'mean return 0.0064'
    """
    table = with_settings(table)
    disc = f"mean return {table['discounted_return'].mean():.4g}"
    if not len(table):
        return disc
    H, E = int(table["episode_length"][0]), int(table["episodes"][0])
    every = table["checkpoint_every"][0]
    und = table["undiscounted_return"] if "undiscounted_return" in table.columns else None
    if (not H and every is None) or und is None or und.null_count() == len(table):
        return disc  # (the paper's protocol; or a player that records no rewards)
    u = float(und.mean())
    if H:
        out = f"mean undiscounted return {u:.4g} over {E:,} episodes ({u / E:.4g} an episode)"
    else:
        T = int(table["horizon"][0]) if "horizon" in table.columns else 0
        out = f"mean undiscounted return {u:.4g}" + (f" over {T:,} steps" if T else "")
    regret = table["regret"]
    if regret.null_count() < len(table):
        out += f", mean regret {float(regret.mean()):.4g}"
    return out


def run_meta(ts: TestSet, agent: TrainedAgent, mdps: range) -> dict[str, Any]:
    """The metadata of a run artefact: the agent, its parameters, the experiment, the
    test set's seed and size, and the slice of test MDPs played."""
    return {
        "agent": agent.agent_id,
        "algorithm": agent.algorithm,
        "params": agent.params,
        "experiment": f"{ts.test.short_name}-{agent.prior.short_name}{ts.tag}",
        "test_seed": ts.seed,
        "n_mdps": ts.n_mdps,
        "mdps": [mdps.start, mdps.stop],
    }


def write_run(table: pl.DataFrame, path: str | Path, meta: dict[str, Any]) -> None:
    """Write a run table (:func:`run_agent`) with its metadata (:func:`run_meta`),
    atomically; in a watched ``bbrl run`` or ``batch``, it appears at ``path`` once the
    process has exited cleanly (:func:`bbrlcore.crash.publish`)."""
    artefacts.write_artefact(path, table, "run", meta, publish=True)


def read_run(path: str | Path) -> pl.DataFrame:
    table, _ = artefacts.read_artefact(path, "run")
    return table
