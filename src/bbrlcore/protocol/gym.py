"""The benchmark's MDPs as gymnasium environments, and gymnasium-style agents benchmarked.

Needs the optional extra ``gymnasium`` (``pip install bbrlcore[gym]``).

* :class:`MDPEnv` is one test MDP as a :class:`gymnasium.Env`: discrete observations (the
  state) and actions, the reward of the transition, ``truncated`` after the horizon (the
  benchmark's episodes never terminate); ``env.prior`` is the prior the agent may use.
  ``info`` holds the step and, at the end of the episode, the discounted return the
  benchmark scores (``info["discounted_return"]``).
* :class:`TestSetEnv` plays a whole test set (or a test-set file), one MDP per episode
  (episode ``k`` uses MDP ``k mod N``), so your own training or evaluation loop sees
  exactly the benchmark's MDPs. ``reset(seed=s)`` is repeatable: it plays episode ``s``
  of that sequence (MDP ``s mod N``) with the environment's random numbers seeded by
  ``s``, and the next ``reset()`` moves on to MDP ``s + 1 mod N``; so
  ``reset(seed=0)`` then ``reset()`` at every episode plays the MDPs in order, the same
  way every time, and it passes gymnasium's ``check_env``.
* :func:`gymnasium_agent` turns an agent written against the gymnasium conventions
  (``act(observation) -> action`` and ``update(observation, action, reward,
  next_observation, terminated, truncated)``) into a benchmark algorithm, run by the
  Python-agent path (:class:`~bbrlcore.agents.PythonAgent`) with the package's protocol,
  seeding and timing.

Examples
--------
>>> from bbrlcore import protocol as E
>>> from bbrlcore.mdp import distributions as D
>>> from bbrlcore.protocol.gym import TestSetEnv
>>> env = TestSetEnv(E.new_test_set(D.builtin("GC"), 3, 0.95, 10, seed=0))
>>> obs, info = env.reset(seed=0)
>>> obs, info["mdp_index"], env.prior.short_name
(0, 0, 'GC')
>>> obs, reward, terminated, truncated, info = env.step(1)
>>> terminated, info["mdp_index"], info["step"]
(False, 0, 1)
>>> while not truncated:
...     obs, reward, terminated, truncated, info = env.step(0)
>>> info["step"], "discounted_return" in info
(10, True)
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from bbrlcore.agents.api import PythonAgent, _py_law_reward, _py_start
from bbrlcore.agents.base import Param
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import rows
from bbrlcore.mdp.distributions import as_real_array
from bbrlcore.protocol.test_sets import (
    MAX_HORIZON,
    ROW_SUM_TOLERANCE,
    TestSet,
    read_test_set,
)

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - the optional extra
    raise ImportError("bbrlcore.protocol.gym needs gymnasium: pip install 'bbrlcore[gym]'") from exc


def _number(value: Any, what: str, *, integer: bool) -> Any:
    """``value`` as a Python int (``integer``) or float; else one :class:`BBRLError`."""
    ok = (isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real))
    if isinstance(value, (bool, np.bool_)) or not ok:
        kind = "an integer" if integer else "a number"
        shown = repr(value).replace("\n", " ")
        raise BBRLError(f"{what} must be {kind}, got {shown[:40]}")
    return int(value) if integer else float(value)


def _array(value: Any, what: str) -> np.ndarray:
    """``value`` as a new float64 array; else one :class:`BBRLError` naming ``what``."""
    return np.array(as_real_array(value, what), dtype=np.float64)


def check_prior(prior: Any, n_states: int, n_actions: int, what: str) -> Any:
    """``prior`` as an :class:`~bbrlcore.mdp.distributions.FDMDistribution` of
    ``n_states`` states and ``n_actions`` actions (a name or a file is loaded as
    ``--prior`` is: :func:`~bbrlcore.mdp.distributions.load`), or None; else one
    :class:`BBRLError` naming ``what``.

    Examples
    --------
    >>> from bbrlcore.mdp import distributions as D
    >>> check_prior("UGC", 5, 3, "env").short_name
    'UGC'
    >>> check_prior("UGrid", 5, 3, "env")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: env: prior UGrid has 25 states and 4 actions; the MDPs have 5 and 3
    """
    from bbrlcore.mdp.distributions import FDMDistribution, load

    if prior is None:
        return None
    if isinstance(prior, (str, os.PathLike)):
        try:
            prior = load(prior)
        except BBRLError as exc:
            raise BBRLError(f"{what}: prior: {exc}") from None
    if not isinstance(prior, FDMDistribution):
        raise BBRLError(f"{what}: prior must be an FDM distribution (a name such as UGC, a "
                        "prior file, or bbrlcore.mdp.distributions.load(...)), got "
                        f"{type(prior).__name__}")
    if (prior.n_states, prior.n_actions) != (n_states, n_actions):
        raise BBRLError(f"{what}: prior {prior.short_name} has {prior.n_states} states and "
                        f"{prior.n_actions} actions; the MDPs have {n_states} and {n_actions}")
    return prior


def check_transitions(P: np.ndarray, what: str) -> None:
    """Every row ``P[x, u, :]`` finite, non-negative and summing to one (within
    :data:`~bbrlcore.protocol.test_sets.ROW_SUM_TOLERANCE`); else one :class:`BBRLError`
    naming ``what``, the row and the value."""
    bad = ~np.isfinite(P) | (P < 0)
    if bad.any():
        x, u, y = (int(v) for v in np.argwhere(bad)[0])
        raise BBRLError(f"{what}: row (x={x}, u={u}): P(y={y}) = {P[x, u, y]} is not a "
                        "probability")
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(P.sum(axis=2) - 1.0)
    if (err > ROW_SUM_TOLERANCE).any():
        x, u = (int(v) for v in np.argwhere(err > ROW_SUM_TOLERANCE)[0])
        raise BBRLError(f"{what}: row (x={x}, u={u}) sums to {P[x, u].sum():.12g}, not 1 "
                        "(each row P[x, u, :] must be a probability distribution)")


class MDPEnv(gymnasium.Env):
    """One MDP ``P[x, u, y]`` with rewards ``R[x, u, y]`` (see the module docstring).

    Any bad argument is one :class:`~bbrlcore.errors.BBRLError` naming it, and so is an
    action that is not an integer in ``[0, nU)`` (a bool included, as the benchmark's
    agents are refused one). ``step`` before ``reset`` (or after the end of an episode)
    raises :class:`gymnasium.error.ResetNeeded`, as gymnasium's ``OrderEnforcing``
    wrapper does.

    ``info`` (from ``reset`` and ``step``) holds ``"step"``, the number of steps taken in
    the episode (0 after ``reset``, T at its end) and, at the end of the episode
    (``truncated``), ``"discounted_return"``: :math:`\\sum_{t<T} \\gamma^t r_t`, the
    return the benchmark scores. :class:`TestSetEnv` adds ``"mdp_index"``.

    Parameters
    ----------
    P
        Transition probabilities, shape (nX, nU, nX): each row ``P[x, u, :]`` finite,
        non-negative and summing to one.
    R
        Mean reward of each transition, same shape, finite.
    initial_state
        The initial state of every episode, in ``0..nX-1``, or -1 for a uniformly drawn one.
    horizon
        Episode length T (``truncated`` after T steps), in ``[1, MAX_HORIZON]``.
    gamma
        Discount factor in (0, 1], used for ``info["discounted_return"]``.
    reward_std
        Standard deviation of each transition's (Gaussian) reward, or None (constant).
    reward_laws
        A :class:`~bbrlcore.mdp.environment.RewardLaws`: the transitions whose reward is
        drawn from a law (constant, Gaussian, Bernoulli, Beta), whose means must be ``R``'s;
        None: ``R`` (plus ``reward_std``'s Gaussian noise).
    starts
        A starting distribution ``(states, probs)`` drawn at every reset
        (:func:`~bbrlcore.mdp.environment.check_start`); None: ``initial_state``.
    prior
        The prior an agent may use (``env.prior``): an
        :class:`~bbrlcore.mdp.distributions.FDMDistribution` with the MDP's numbers of
        states and actions, a name or a file loaded as ``--prior`` is, or None.
    """

    metadata = {"render_modes": []}

    def __init__(self, P: np.ndarray, R: np.ndarray, *, initial_state: int = 0,
                 horizon: int = 250, gamma: float = 0.95, reward_std: np.ndarray | None = None,
                 prior: Any = None, reward_laws: Any = None, starts: Any = None) -> None:
        name = type(self).__name__
        P = _array(P, f"{name}: P")
        if P.ndim != 3 or P.shape[0] != P.shape[2] or 0 in P.shape:
            raise BBRLError(f"{name}: P must have shape (nX, nU, nX), got {P.shape}")
        self.R = _array(R, f"{name}: R")
        if self.R.shape != P.shape:
            raise BBRLError(f"{name}: P and R must have the same shape (nX, nU, nX), got "
                            f"{P.shape} and {self.R.shape}")
        if not np.isfinite(self.R).all():
            x, u, y = (int(v) for v in np.argwhere(~np.isfinite(self.R))[0])
            raise BBRLError(f"{name}: R({x},{u},{y}) = {self.R[x, u, y]} is not finite")
        nX, nU, _ = P.shape
        if reward_std is None:
            self.Rstd = np.zeros_like(self.R)
        else:
            self.Rstd = _array(reward_std, f"{name}: reward_std")
            if self.Rstd.shape != P.shape or not np.isfinite(self.Rstd).all() or (
                    self.Rstd < 0).any():
                raise BBRLError(f"{name}: reward_std must be finite, >= 0 and of shape "
                                f"{P.shape}")
        self.initial_state = _number(initial_state, f"{name}: initial_state", integer=True)
        if not -1 <= self.initial_state < nX:
            raise BBRLError(f"{name}: initial_state {self.initial_state} outside -1..{nX - 1} "
                            "(-1: drawn uniformly)")
        self.horizon = _number(horizon, f"{name}: horizon", integer=True)
        if not 1 <= self.horizon <= MAX_HORIZON:
            raise BBRLError(f"{name}: horizon must be in [1, {MAX_HORIZON}], got {self.horizon}")
        self.gamma = _number(gamma, f"{name}: gamma", integer=False)
        if not 0 < self.gamma <= 1:
            raise BBRLError(f"{name}: gamma must be in (0, 1], got {self.gamma}")
        self.prior = check_prior(prior, nX, nU, name)
        self.observation_space = spaces.Discrete(nX)
        self.action_space = spaces.Discrete(nU)
        check_transitions(P, f"{name}: P")
        # the environment steps on sparse rows (bbrlcore.mdp.rows): the transitions of P
        lay = rows.layout_of(P > 0)
        self._set_rows(lay, rows.gather(P, lay), rows.gather(self.R, lay),
                       rows.gather(self.Rstd, lay))
        self._set_environment(reward_laws, starts, name)
        self._x = 0
        self._t = 0
        self._return = 0.0
        self._discount = 1.0
        self._running = False  # between reset() and the end of the episode

    def _set_environment(self, laws: Any, starts: Any, name: str) -> None:
        """Draw rewards from ``laws`` and starts from ``starts`` (checked; None: none)."""
        from bbrlcore.mdp import environment as env

        nX, nU = self.layout.n_states, self.layout.n_actions
        self._laws_r = None
        if laws is not None:
            if not isinstance(laws, env.RewardLaws) or (laws.n_states, laws.n_actions) != (
                    nX, nU):
                raise BBRLError(f"{name}: reward_laws must be RewardLaws of {nX} states and "
                                f"{nU} actions")
            if (self._Rstd_r > 0).any():
                raise BBRLError(f"{name}: reward_laws and reward_std cannot both be given "
                                "(give Gaussian rewards as laws)")
            off = ~np.isclose(laws.means(), self._Rr[env._slots(
                laws.keys, self.layout, f"{name}: reward_laws")], rtol=1e-12, atol=1e-12)
            if off.any():
                raise BBRLError(f"{name}: reward_laws: the law of flat transition "
                                f"{int(laws.keys[np.argmax(off)])} does not have R's mean")
            self._laws_r = env.law_rows(laws, self.layout) if laws.size else None
        if starts is not None:
            starts = env.check_start(nX, starts[0], starts[1], f"{name}: starts")
        self._start = env.start_array(nX, int(self.initial_state), starts)

    def _set_rows(self, layout: rows.Layout, P: np.ndarray, R: np.ndarray,
                  Rstd: np.ndarray) -> None:
        """Step on ``P``, ``R``, ``Rstd`` given on ``layout``."""
        self.layout = layout
        self._P = P
        self._Rr = R
        self._Rstd_r = Rstd
        self._cdf = np.cumsum(P, axis=2)

    @property
    def P(self) -> np.ndarray:
        """The MDP being played as a dense (nX, nU, nX) array (built on use; the
        environment itself steps on its sparse rows, ``env.layout``)."""
        return rows.scatter(self._P, self.layout)

    def _info(self) -> dict[str, Any]:
        return {"step": self._t}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        nX = self.layout.n_states
        self._x = _py_start(self._start, nX, self.np_random)
        self._t = 0
        self._return, self._discount = 0.0, 1.0
        self._running = True
        return self._x, self._info()

    def step(self, action: int):
        if not self._running:
            raise gymnasium.error.ResetNeeded(
                f"{type(self).__name__}.step: cannot call env.step() before calling "
                "env.reset()" + (" (the episode has ended)" if self._t else ""))
        n = self.layout.n_actions
        if isinstance(action, (bool, np.bool_)) or (
                isinstance(action, np.ndarray) and action.dtype == np.bool_):
            raise BBRLError(f"{type(self).__name__}.step: action {action!r} is a bool, not "
                            f"an integer action in [0, {n})")
        if not self.action_space.contains(action):
            integer = isinstance(action, numbers.Integral) or (
                isinstance(action, np.ndarray) and action.shape == ()
                and np.issubdtype(action.dtype, np.integer))
            what = ("outside" if integer else
                    f"({type(action).__name__}) is not an integer action in")
            raise BBRLError(f"{type(self).__name__}.step: action {action!r} {what} "
                            f"[0, {n})")
        x, u = self._x, int(action)
        k = int(np.searchsorted(self._cdf[x, u], self.np_random.random(), side="right"))
        k = min(k, int(self.layout.nsucc[x, u]) - 1)
        while self._P[x, u, k] == 0.0 and k > 0:
            k -= 1
        y = int(self.layout.succ[x, u, k])
        r = float(self._Rr[x, u, k])
        if self._laws_r is not None:
            r = _py_law_reward(self._Rr, self._laws_r, x, u, k, self.np_random)
        elif self._Rstd_r[x, u, k] > 0:
            r += float(self._Rstd_r[x, u, k]) * float(self.np_random.standard_normal())
        self._x = y
        self._t += 1
        self._return += self._discount * r
        self._discount *= self.gamma
        truncated = self._t >= self.horizon
        info = self._info()
        if truncated:
            self._running = False
            info["discounted_return"] = self._return
        return y, r, False, truncated, info


def _accurate_prior(test: Any) -> Any:
    from bbrlcore.mdp.families import accurate_prior

    return accurate_prior(test)


class TestSetEnv(MDPEnv):
    """A test set as an environment: one of its MDPs per episode; ``env.prior`` is the
    test distribution's accurate prior (the test distribution itself when it is an FDM; a
    problem family's that draws its structure: its moment-matched FDM,
    :func:`bbrlcore.mdp.families.accurate_prior`) unless another is given (of the test
    set's numbers of states and actions: :func:`check_prior`).

    Which MDP an episode plays: episodes are numbered, and episode ``k`` plays MDP
    ``k mod N``. The first ``reset()`` is episode 0 and each later one the next episode;
    ``reset(seed=s)`` is episode ``s`` (MDP ``s mod N``), with the environment's random
    numbers (``np_random``: a drawn initial state, the transitions) seeded by ``s``, so
    the same seed plays the same MDP and the same draws every time (gymnasium's
    ``check_env`` asks this); ``options={"mdp_index": i}`` plays MDP ``i``. The episodes
    after any of these continue from it (MDP ``i + 1``, ...).

    >>> from bbrlcore import protocol as E
    >>> from bbrlcore.mdp import distributions as D
    >>> env = TestSetEnv(E.new_test_set(D.builtin("GC"), 3, 0.95, 5, seed=0))
    >>> [env.reset(seed=s)[1]["mdp_index"] for s in (0, 1, 2, 3, 1)]
    [0, 1, 2, 0, 1]
    >>> [env.reset()[1]["mdp_index"] for _ in range(3)]  # after episode 1: 2, 3, 4
    [2, 0, 1]
    >>> env.reset(options={"mdp_index": 2})[1]["mdp_index"], env.reset()[1]["mdp_index"]
    (2, 0)

    ``test_set`` is a :class:`~bbrlcore.protocol.TestSet` (``new_test_set``) or the path
    of a test-set artefact (``bbrl experiment new ... -o FILE``, read and validated with
    :func:`~bbrlcore.protocol.read_test_set`). ``info`` holds ``"mdp_index"`` besides
    what :class:`MDPEnv` gives.
    """

    __test__ = False  # not a pytest class

    def __init__(self, test_set: TestSet | str | os.PathLike[str], prior: Any = None) -> None:
        if isinstance(test_set, (str, os.PathLike)):
            test_set = read_test_set(test_set)
        elif not isinstance(test_set, TestSet):
            raise BBRLError(
                "TestSetEnv: expected a test set (bbrlcore.protocol.new_test_set or "
                "read_test_set) or the path of a test-set file (bbrl experiment new ... -o "
                f"FILE), got {type(test_set).__name__}")
        ts = test_set
        assert ts.layout is not None
        for i in range(ts.n_mdps):
            check_transitions(_array(ts.mdps[i], "TestSetEnv"), f"TestSetEnv: MDP {i}")
        self.test_set = ts
        self._mdp = 0
        # (the checks and spaces of MDPEnv on a one-state stand-in; the test set's MDPs,
        # on their sparse rows, are what the episodes play)
        nU = ts.test.n_actions
        super().__init__(np.ones((1, nU, 1)), np.zeros((1, nU, 1)),
                         initial_state=min(ts.test.initial_state, 0), horizon=ts.horizon,
                         gamma=ts.gamma)
        self.prior = (_accurate_prior(ts.test) if prior is None
                      else check_prior(prior, ts.test.n_states, nU, "TestSetEnv"))
        self.initial_state = ts.test.initial_state
        self.observation_space = spaces.Discrete(ts.test.n_states)
        self.R, self.Rstd = ts.test.reward, ts.test.reward_std
        self._set_rows(ts.layout, ts.mdps[0], np.asarray(ts.test.reward_rows),
                       np.asarray(ts.test.reward_std_rows))
        # (the test distribution's laws and starts: checked when they were given to it)
        from bbrlcore.mdp import environment as env

        laws = getattr(ts.test, "reward_laws", None)
        self._laws_r = None if laws is None else env.law_rows(laws, ts.layout)
        self._start = env.start_array(ts.test.n_states, int(ts.test.initial_state),
                                      getattr(ts.test, "starts", None))
        self._episode = 0

    def _info(self) -> dict[str, Any]:
        return {"mdp_index": self._mdp, "step": self._t}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        n = self.test_set.n_mdps
        if seed is not None:
            # (gymnasium refuses a seed that is not an integer >= 0, in super().reset)
            if isinstance(seed, (bool, np.bool_)) or not isinstance(
                    seed, numbers.Integral) or seed < 0:
                raise BBRLError(f"TestSetEnv.reset: seed {seed!r} must be an integer >= 0")
            seed = int(seed)  # (gymnasium's seeding takes a Python int only)
            self._episode = seed % n  # episode `seed` of the sequence
        i = (options or {}).get("mdp_index", self._episode % n)
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral) or not (
                0 <= i < n):
            raise BBRLError(f"TestSetEnv.reset: mdp_index {i!r} outside [0, {n})")
        self._mdp = int(i)
        self._set_rows(self.layout, np.asarray(self.test_set.mdps[self._mdp], dtype=float),
                       self._Rr, self._Rstd_r)
        self._episode = self._mdp + 1
        return super().reset(seed=seed, options=options)


def gymnasium_agent(
    name: str,
    factory: Callable[..., Any],
    params: tuple[Param, ...] = (),
    doc: str = "",
) -> type[PythonAgent]:
    """A benchmark algorithm from an agent written against the gymnasium conventions.

    ``factory(observation_space, action_space, prior=..., params=..., rng=..., gamma=...)``
    builds the agent at the start of every trajectory (the benchmark's reset); it must
    have ``act(observation) -> action`` and may have ``update(observation, action, reward,
    next_observation, terminated, truncated)``. The returned class is a
    :class:`~bbrlcore.agents.PythonAgent`: expose it as a plugin (``module:NAME``) or an
    entry point like any other.

    Examples
    --------
    >>> class Uniform:
    ...     def __init__(self, observation_space, action_space, **kw):
    ...         self.n, self.rng = action_space.n, kw["rng"]
    ...     def act(self, observation):
    ...         return int(self.rng.integers(self.n))
    >>> UniformAgent = gymnasium_agent("gym-uniform", Uniform)
    >>> UniformAgent.name
    'gym-uniform'
    """

    class GymnasiumAgent(PythonAgent):
        def reset(self) -> None:
            self.inner = factory(spaces.Discrete(self.n_states), spaces.Discrete(self.n_actions),
                                 prior=self.prior, params=self.p, rng=self.rng,
                                 gamma=self.gamma)
            self.t = 0
            self._update = getattr(self.inner, "update", None)

        def act(self, state: int) -> int:
            return self.inner.act(state)

        def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
            self.t += 1
            if self._update is not None:
                self._update(state, action, reward, next_state, False, self.t >= self.horizon)

    GymnasiumAgent.name = name
    GymnasiumAgent.params = tuple(params)
    GymnasiumAgent.__doc__ = doc or f"{name}: a gymnasium-style agent ({factory.__name__})"
    GymnasiumAgent.__name__ = GymnasiumAgent.__qualname__ = f"GymnasiumAgent[{name}]"
    return GymnasiumAgent
