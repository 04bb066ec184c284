r"""The public agent API: benchmark your own algorithm beside the paper's.

Three ways to write an algorithm, all found by the same registry
(:mod:`bbrlcore.agents.registry`) and run by the same protocol (one trajectory per test
MDP, starting from the prior; the package owns the loop, the environment, the seeding, the
return and the timing):

**A Python agent** (:class:`PythonAgent`): the original library's ``Agent`` in Python
names. ``train(prior, ctx)`` is offline learning (optional; what it returns is stored in
the agent artefact, its wall time is the offline time); ``reset()`` starts a trajectory
from the prior; ``act(state) -> action``; ``observe(state, action, next_state, reward)``.
Parameters are declared with :class:`~bbrlcore.agents.base.Param`, exactly like the
built-ins', so parsing, agent ids, configuration grids and error messages are the same::

    import numpy as np
    from bbrlcore.agents import Param, PythonAgent, in_unit_interval

    class Greedy(PythonAgent):
        "e-Greedy on the posterior mean (value iteration after every step)."
        name = "my-egreedy"
        params = (Param("epsilon", float, required=True, check=in_unit_interval),)

        def reset(self):
            self.counts = self.prior.theta.copy()
            self.q = self.solve()

        def act(self, state):
            if self.rng.random() < self.p["epsilon"]:
                return int(self.rng.integers(self.n_actions))
            return int(np.argmax(self.q[state]))

        def observe(self, state, action, next_state, reward):
            self.counts[state, action, next_state] += 1
            self.q = self.solve()
        ...

The agent sees ``self.p`` (its parsed parameters), ``self.prior`` (the
:class:`~bbrlcore.mdp.distributions.FDMDistribution` it was trained on: concentrations
``theta`` and the known rewards ``reward``), ``self.n_states``, ``self.n_actions``,
``self.gamma``, ``self.horizon``, ``self.learned`` (what ``train`` returned) and
``self.rng``, a :class:`numpy.random.Generator` made from the trajectory's seed (set
before each ``reset``). A state and an action are integers.

**A compiled agent** (:class:`CompiledAgent`): the fast path. ``reset``, ``act`` and
``observe`` are numba ``@njit`` functions over plain arrays, and the package compiles the
whole trajectory around them (:func:`trajectory_kernel`, once per agent and process), one
compiled call per trajectory like the built-ins. ``setup(prior, params, learned)``
(Python, once per run) returns a tuple of arrays and numbers; ``reset(setup) -> state``
builds the per-trajectory state (any numba value, e.g. a tuple of arrays) from it;
``act(state, x) -> int``; ``observe(state, x, u, y, r)`` updates it in place. Random
numbers inside them come from numba's ``np.random``, seeded with the trajectory's seed
before ``reset``. The loop is compiled once per process around the agent's functions; a
class may also name a cached kernel of the same loop (:attr:`CompiledAgent.trajectory`,
built with :func:`trajectory_loop`) so that no process compiles it again. The
algorithms beyond the paper (:mod:`~bbrlcore.agents.psrl`, :mod:`~bbrlcore.agents.boss`,
:mod:`~bbrlcore.agents.bolt`, :mod:`~bbrlcore.agents.mbie_eb`) are built-in compiled
agents written this way: examples of the API at full speed.

**A whole trajectory kernel**: an :class:`~bbrlcore.agents.base.Algorithm` with its own
``make_player``, as the built-ins do.

Errors of the user's code (an exception in ``act`` or ``observe``, an action that is not
an integer in ``[0, nU)``) stop the run with one line naming the algorithm, the test MDP
and the step. Anything a plugin prints goes to stderr (stdout carries bbrl's own
output).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import env_reset, env_reward, env_step
from bbrlcore.agents.base import (
    Algorithm,
    CostFeatures,
    Episode,
    OfflineCostFeatures,
    Param,
    TrainContext,
    Trained,
)
from bbrlcore.errors import BBRLError


class AgentError(BBRLError):
    """The user's agent code failed (or played an invalid action) during a trajectory.
    :func:`bbrlcore.protocol.run_agent` adds the test MDP to the message."""

    def __init__(self, message: str, step: int | None = None) -> None:
        super().__init__(message)
        self.step = step


@contextlib.contextmanager
def plugin_output() -> Iterator[None]:
    """What the user's code prints goes to stderr (stdout carries bbrl's own output)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


class _AgentBase:
    #: The algorithm's name (lowercase letters, digits and '-'): the first part of its
    #: agent ids (``name__param=value``).
    name: ClassVar[str] = ""
    #: Its parameters, in the order agent ids list them.
    params: ClassVar[tuple[Param, ...]] = ()
    #: Names of integer counters reported after each trajectory (extra run-table columns).
    counters: ClassVar[tuple[str, ...]] = ()
    #: Optional cross-field check ``(params, prior, gamma, horizon) -> error text | None``.
    setting_check: ClassVar[Callable[..., str | None] | None] = None
    #: Optional work amounts of a trajectory (:data:`~bbrlcore.agents.base.CostFeatures`);
    #: without them the cost model probes the algorithm.
    cost_features: ClassVar[CostFeatures | None] = None
    offline_cost_features: ClassVar[OfflineCostFeatures | None] = None

    def __init__(self, params: dict[str, Any], prior: Any, learned: Any = None,
                 gamma: float = 0.95, horizon: int = 250) -> None:
        self.p = params
        self.prior = prior
        self.learned = learned
        self.gamma = gamma
        self.horizon = horizon
        self.n_states = int(prior.n_states)
        self.n_actions = int(prior.n_actions)
        self.rng = np.random.default_rng(0)

    def train(self, prior: Any, ctx: TrainContext) -> Any:
        """Offline learning from ``prior`` (optional). Return anything JSON-able (numbers,
        strings, lists, dicts; numpy arrays become lists): it is stored in the agent
        artefact and given back as ``self.learned``. ``ctx`` has the seed, γ and horizon
        of offline learning and a ``progress(done, total)`` callback."""
        return None


class PythonAgent(_AgentBase):
    """Base class of an agent written in Python (see the module docstring)."""

    def reset(self) -> None:
        """Start a trajectory again from the prior (``self.rng`` is already set)."""

    def act(self, state: int) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
        """Learn from one transition."""

    def counter_values(self) -> tuple[int, ...]:
        """The values of :attr:`counters` after a trajectory."""
        return ()


class CompiledAgent(_AgentBase):
    """Base class of a compiled agent: ``reset``, ``act`` and ``observe`` are numba
    ``@njit`` functions (write them as ``staticmethod``\\ s or plain functions assigned to
    the class); ``setup`` prepares their inputs in Python (see the module docstring)."""

    reset: ClassVar[Any] = None
    act: ClassVar[Any] = None
    observe: ClassVar[Any] = None
    #: Optional ``@njit`` ``(state) -> int64 array`` of the :attr:`counters`.
    counter_values: ClassVar[Any] = None
    #: Optional cached kernel of the package's loop around these functions, so that no
    #: process compiles it again (:func:`trajectory_kernel` compiles a closure once per
    #: process, about 1-2 s). Define it in the module that defines ``reset``, ``act`` and
    #: ``observe`` (numba's cache follows that file), exactly as::
    #:
    #:     @njit(cache=True)
    #:     def trajectory(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon,
    #:                    seed, status):
    #:         return trajectory_loop(_reset, _act, _observe, _counters, setup, P, R,
    #:                                Rstd, gaussian, initial_state, gamma, horizon,
    #:                                seed, status)
    #:
    #: (``no_counters`` in place of ``_counters`` without counters).
    trajectory: ClassVar[Any] = None

    def setup(self) -> tuple:
        """Inputs of ``reset`` (a tuple of arrays and numbers), once per run. Default:
        ``(theta, reward)`` of the prior, as float64 arrays."""
        return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
                np.ascontiguousarray(self.prior.reward, dtype=np.float64))


# ---------------------------------------------------------------------------------------
# From a class to an Algorithm


def algorithm_of(cls: type, what: str) -> Algorithm:
    """The :class:`Algorithm` of a :class:`PythonAgent` or :class:`CompiledAgent`
    subclass (or of any class with an ``act`` method), checking what it must define."""
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise BBRLError(f"{what}: {cls.__name__} has no algorithm name (a class attribute "
                        "name = 'my-algorithm')")
    params = tuple(getattr(cls, "params", ()) or ())
    if not all(isinstance(p, Param) for p in params):
        raise BBRLError(f"{what}: {cls.__name__}.params must be a tuple of Param")
    counters = tuple(getattr(cls, "counters", ()) or ())
    compiled = isinstance(cls, type) and issubclass(cls, CompiledAgent)
    if compiled:
        missing = [m for m in ("reset", "act", "observe")
                   if not hasattr(getattr(cls, m, None), "py_func")]
        if missing:
            raise BBRLError(f"{what}: {cls.__name__} must define {', '.join(missing)} as numba "
                            "@njit functions (a CompiledAgent)")
        make_player = _compiled_player(cls, name, counters)
    else:
        for m in ("act",):
            if not callable(getattr(cls, m, None)) or getattr(cls, m) is PythonAgent.act:
                raise BBRLError(f"{what}: {cls.__name__} must define the method {m}(state)")
        make_player = _python_player(cls, name, counters)
    trains = getattr(cls, "train", None) not in (None, _AgentBase.train)
    return Algorithm(
        name=name,
        params=params,
        make_player=make_player,
        train=_trainer(cls, name) if trains else None,
        counters=counters,
        has_compat=any(p.name == "compat" for p in params),
        doc=(cls.__doc__ or "").strip(),
        setting_check=getattr(cls, "setting_check", None),
        cost_features=getattr(cls, "cost_features", None),
        offline_cost_features=getattr(cls, "offline_cost_features", None),
    )


def _instance(cls: type, params: dict, prior: Any, learned: Any, gamma: float,
              horizon: int) -> Any:
    if issubclass(cls, _AgentBase):
        return cls(params, prior, learned, gamma, horizon)
    obj = cls.__new__(cls)  # a duck-typed class: set the same attributes
    _AgentBase.__init__(obj, params, prior, learned, gamma, horizon)
    init = getattr(cls, "__init__", None)
    if init is not None and init is not object.__init__:
        try:
            init(obj)
        except TypeError:
            pass
    return obj


def _trainer(cls: type, name: str) -> Callable[..., Trained]:
    def train(prior: Any, params: dict, ctx: TrainContext) -> Trained:
        agent = _instance(cls, params, prior, None, ctx.gamma, ctx.horizon)
        try:
            with plugin_output():
                learned = agent.train(prior, ctx)
        except BBRLError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code
            raise BBRLError(f"{name}: train raised {type(exc).__name__}: "
                            f"{_first_line(exc)}") from None
        return Trained(info={"learned": _jsonable(learned, name)})

    return train


def _jsonable(v: Any, name: str) -> Any:
    import json

    def conv(o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(type(o).__name__)

    try:
        return json.loads(json.dumps(v, default=conv, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise BBRLError(f"{name}: train must return something JSON-able (numbers, strings, "
                        f"lists, dicts, numpy arrays), not {exc}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _action(a: Any, nU: int, name: str, step: int) -> int:
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
        raise AgentError(f"{name}: act returned {a!r} ({type(a).__name__}) at step {step}, "
                         f"expected an integer action in [0, {nU})", step)
    if not 0 <= a < nU:
        raise AgentError(f"{name}: act returned {int(a)} at step {step}, outside [0, {nU})",
                         step)
    return int(a)


def _python_player(cls: type, name: str, counters: tuple[str, ...]):
    def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
        learned = (trained.info or {}).get("learned") if trained is not None else None
        agent = _instance(cls, params, prior, learned, ep.gamma, ep.horizon)
        R, Rstd = np.asarray(ep.R), np.asarray(ep.Rstd)
        nC = len(counters)

        def play(P: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
            nX, nU, _ = P.shape
            env_ss, agent_ss = np.random.SeedSequence(int(seed)).spawn(2)
            env = np.random.Generator(np.random.PCG64(env_ss))
            agent.rng = np.random.Generator(np.random.PCG64(agent_ss))
            cdf = np.cumsum(P, axis=2)
            step = -1
            ret, disc = 0.0, 1.0
            # (run_agent sends the user's prints to stderr around the whole run)
            try:
                agent.reset()
                x = ep.initial_state if ep.initial_state >= 0 else int(env.integers(nX))
                for step in range(ep.horizon):
                    a = _action(agent.act(x), nU, name, step)
                    row = cdf[x, a]
                    y = min(int(np.searchsorted(row, env.random(), side="right")), nX - 1)
                    while P[x, a, y] == 0.0 and y > 0:  # rounding at the row's end
                        y -= 1
                    r = float(R[x, a, y])
                    if ep.gaussian:
                        r += float(Rstd[x, a, y]) * float(env.standard_normal())
                    ret += disc * r
                    disc *= ep.gamma
                    agent.observe(x, a, y, r)
                    x = y
                cnt = np.asarray(agent.counter_values(), dtype=np.int64) if nC else _NONE
            except AgentError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's code
                where = "reset" if step < 0 else f"step {step}"
                raise AgentError(f"{name}: {type(exc).__name__} at {where}: "
                                 f"{_first_line(exc)}", max(step, 0)) from None
            if cnt.shape != (nC,):
                raise AgentError(f"{name}: counter_values returned {cnt.size} values, "
                                 f"expected {nC} ({', '.join(counters)})")
            return ret, cnt

        return play

    return make_player


_NONE = np.zeros(0, dtype=np.int64)


@njit(error_model="numpy")
def compiled_trajectory(reset, act, observe, setup, P, R, Rstd, gaussian, initial_state,
                        gamma, horizon, seed, status):
    """One trajectory of a compiled agent: the built-ins' loop around its functions,
    given as arguments; returns ``(discounted return, final agent state)``.

    ``status[0]`` holds the step being played, ``status[1]`` an invalid action (the
    trajectory stops and returns with ``status[2] = 1``). Not cached: it takes functions as
    arguments, so it is compiled once per process for each agent (outside the timing).
    The package itself plays compiled agents with :func:`trajectory_kernel` (the same
    loop, specialised once per agent: no per-call cost for the function arguments).
    """
    np.random.seed(seed)
    nX, nU, _ = P.shape
    status[2] = 0
    state = reset(setup)
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    for t in range(horizon):
        status[0] = t
        u = act(state, x)
        if u < 0 or u >= nU:
            status[1] = u
            status[2] = 1
            return ret, state
        y = env_step(P, x, u)
        r = env_reward(R, Rstd, gaussian, x, u, y)
        ret += disc * r
        disc *= gamma
        observe(state, x, u, y, r)
        x = y
    return ret, state


@njit(error_model="numpy", inline="always")
def trajectory_loop(reset, act, observe, counter_values, setup, P, R, Rstd, gaussian,
                    initial_state, gamma, horizon, seed, status):
    """The package's trajectory loop around a compiled agent's functions (the loop of
    :func:`compiled_trajectory`), returning ``(discounted return,
    counter_values(final state))``.

    Inlined into its caller at compile time (``inline="always"``), so a kernel that calls
    it with module-level ``@njit`` functions is an ordinary function of arrays and numbers:
    :func:`trajectory_kernel` wraps it in a closure (compiled once per process), and an
    agent module can wrap it in a **cached** kernel of its own (``@njit(cache=True)``),
    which :class:`CompiledAgent` plays when the class sets ``trajectory`` to it.
    """
    np.random.seed(seed)
    nX, nU, _ = P.shape
    status[2] = 0
    state = reset(setup)
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    for t in range(horizon):
        status[0] = t
        u = act(state, x)
        if u < 0 or u >= nU:
            status[1] = u
            status[2] = 1
            return ret, counter_values(state)
        y = env_step(P, x, u)
        r = env_reward(R, Rstd, gaussian, x, u, y)
        ret += disc * r
        disc *= gamma
        observe(state, x, u, y, r)
        x = y
    return ret, counter_values(state)


@njit(error_model="numpy")
def no_counters(state):
    """``counter_values`` of an agent without counters: an empty int64 array."""
    return np.zeros(0, dtype=np.int64)


_KERNELS: dict[tuple[Any, ...], Any] = {}


def trajectory_kernel(reset: Any, act: Any, observe: Any, counter_values: Any = None) -> Any:
    """The trajectory loop (:func:`trajectory_loop`) specialised to one agent's ``@njit``
    functions: ``kernel(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed,
    status) -> (discounted return, counters)``, where ``counters`` is
    ``counter_values(state)`` (an empty int64 array without it).

    The functions are compile-time constants of the kernel (a closure), so a call only
    passes arrays and numbers: numba's dispatcher no longer types three function
    arguments (about 3 µs each) at every trajectory, and the agent's state is not boxed
    back into Python objects at the end (about 1 µs per array). Made once per process
    and agent (memoised) and compiled at its first call (outside the timing, but a closure
    is not cached: a class's own cached ``trajectory`` avoids that compilation).
    """
    count = counter_values if counter_values is not None else no_counters
    key = (reset, act, observe, count)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel

    @njit(error_model="numpy")
    def kernel(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, status):
        return trajectory_loop(reset, act, observe, count, setup, P, R, Rstd, gaussian,
                               initial_state, gamma, horizon, seed, status)

    _KERNELS[key] = kernel
    return kernel


def _compiled_player(cls: type, name: str, counters: tuple[str, ...]):
    def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
        learned = (trained.info or {}).get("learned") if trained is not None else None
        agent = _instance(cls, params, prior, learned, ep.gamma, ep.horizon)
        try:
            with plugin_output():
                setup = agent.setup()
        except BBRLError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code
            raise BBRLError(f"{name}: setup raised {type(exc).__name__}: "
                            f"{_first_line(exc)}") from None
        if not isinstance(setup, tuple):
            raise BBRLError(f"{name}: setup must return a tuple (the inputs of reset)")
        R = np.ascontiguousarray(ep.R, dtype=np.float64)
        Rstd = np.ascontiguousarray(ep.Rstd, dtype=np.float64)
        status = np.zeros(3, dtype=np.int64)
        nC = len(counters)
        count_fn = getattr(cls, "counter_values", None) if nC else None
        own = getattr(cls, "trajectory", None)
        if own is not None and hasattr(own, "py_func"):
            kernel = own  # the class's cached kernel of the same loop
        elif count_fn is not None and not hasattr(count_fn, "py_func"):
            # counters computed in Python from the final state: the generic loop
            def kernel(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed,
                       status):
                ret, state = compiled_trajectory(cls.reset, cls.act, cls.observe, setup, P,
                                                 R, Rstd, gaussian, initial_state, gamma,
                                                 horizon, seed, status)
                return ret, np.asarray(count_fn(state), dtype=np.int64)
        else:
            kernel = trajectory_kernel(cls.reset, cls.act, cls.observe, count_fn)
        gaussian, initial_state = bool(ep.gaussian), int(ep.initial_state)
        gamma, horizon = float(ep.gamma), int(ep.horizon)

        def play(P: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
            status[:] = 0
            try:  # (run_agent sends the user's prints to stderr around the whole run)
                ret, cnt = kernel(setup, np.ascontiguousarray(P, dtype=np.float64), R, Rstd,
                                  gaussian, initial_state, gamma, horizon, int(seed), status)
            except Exception as exc:  # noqa: BLE001 - the user's code (or its typing)
                from numba.core.errors import NumbaError

                if isinstance(exc, NumbaError):
                    raise BBRLError(f"{name}: its reset/act/observe do not compile with the "
                                    f"trajectory loop: {_numba_message(exc)}") from None
                raise AgentError(f"{name}: {type(exc).__name__} at step {int(status[0])}: "
                                 f"{_first_line(exc)}", int(status[0])) from None
            if status[2]:
                raise AgentError(f"{name}: act returned {int(status[1])} at step "
                                 f"{int(status[0])}, outside [0, {P.shape[1]})",
                                 int(status[0]))
            cnt = _NONE if nC and count_fn is None else np.asarray(cnt, dtype=np.int64)
            if cnt.shape != (nC,):
                raise AgentError(f"{name}: counter_values returned {cnt.size} values, "
                                 f"expected {nC}")
            return float(ret), cnt

        return play

    return make_player


def _numba_message(exc: BaseException) -> str:
    """The informative line of a numba typing error."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("During:", "File ", "^", "[1m", "\x1b")) and "<source" not in ln:
            return ln[:300]
    return lines[0][:300] if lines else type(exc).__name__

