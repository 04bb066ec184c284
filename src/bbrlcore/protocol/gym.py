"""The benchmark's MDPs as gymnasium environments, and gymnasium-style agents benchmarked.

Needs the optional extra ``gymnasium`` (``pip install bbrlcore[gym]``).

* :class:`MDPEnv` is one test MDP as a :class:`gymnasium.Env`: discrete observations (the
  state) and actions, the reward of the transition, ``truncated`` after the horizon (the
  benchmark's episodes never terminate); ``env.prior`` is the prior the agent may use.
* :class:`TestSetEnv` plays a whole test set, one MDP per episode (episode ``k`` uses MDP
  ``k mod N``), so your own training or evaluation loop sees exactly the benchmark's MDPs.
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
>>> obs, info = env.reset(seed=1)
>>> obs, info["mdp_index"], env.prior.short_name
(0, 0, 'GC')
>>> obs, reward, terminated, truncated, info = env.step(1)
>>> terminated
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bbrlcore.agents.api import PythonAgent
from bbrlcore.agents.base import Param
from bbrlcore.errors import BBRLError

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - the optional extra
    raise ImportError("bbrlcore.protocol.gym needs gymnasium: pip install 'bbrlcore[gym]'") from exc


class MDPEnv(gymnasium.Env):
    """One MDP ``P[x, u, y]`` with rewards ``R[x, u, y]`` (see the module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, P: np.ndarray, R: np.ndarray, *, initial_state: int = 0,
                 horizon: int = 250, gamma: float = 0.95, reward_std: np.ndarray | None = None,
                 prior: Any = None) -> None:
        self.P = np.asarray(P, dtype=float)
        self.R = np.asarray(R, dtype=float)
        if self.P.ndim != 3 or self.R.shape != self.P.shape:
            raise BBRLError(f"MDPEnv: P and R must have the same shape (nX, nU, nX), got "
                            f"{self.P.shape} and {self.R.shape}")
        nX, nU, _ = self.P.shape
        self.Rstd = np.zeros_like(self.R) if reward_std is None else np.asarray(reward_std)
        self.initial_state = int(initial_state)
        self.horizon = int(horizon)
        self.gamma = float(gamma)
        self.prior = prior
        self.observation_space = spaces.Discrete(nX)
        self.action_space = spaces.Discrete(nU)
        self._cdf = np.cumsum(self.P, axis=2)
        self._x = 0
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        nX = self.P.shape[0]
        self._x = (self.initial_state if self.initial_state >= 0
                   else int(self.np_random.integers(nX)))
        self._t = 0
        return self._x, {}

    def step(self, action: int):
        if not self.action_space.contains(action):
            raise BBRLError(f"MDPEnv.step: action {action!r} outside [0, {self.P.shape[1]})")
        x, u = self._x, int(action)
        y = int(np.searchsorted(self._cdf[x, u], self.np_random.random(), side="right"))
        y = min(y, self.P.shape[0] - 1)
        while self.P[x, u, y] == 0.0 and y > 0:
            y -= 1
        r = float(self.R[x, u, y])
        if self.Rstd[x, u, y] > 0:
            r += float(self.Rstd[x, u, y]) * float(self.np_random.standard_normal())
        self._x = y
        self._t += 1
        return y, r, False, self._t >= self.horizon, {}


def _accurate_prior(test: Any) -> Any:
    from bbrlcore.mdp.families import accurate_prior

    return accurate_prior(test)


class TestSetEnv(MDPEnv):
    """A test set as an environment: one of its MDPs per episode (the ``k``-th reset uses
    MDP ``k mod N``, or ``options={"mdp_index": i}``); ``env.prior`` is the test
    distribution's accurate prior (the test distribution itself when it is an FDM; a
    problem family's that draws its structure: its moment-matched FDM,
    :func:`bbrlcore.mdp.families.accurate_prior`) unless another is given."""

    __test__ = False  # not a pytest class

    def __init__(self, test_set: Any, prior: Any = None) -> None:
        ts = test_set
        super().__init__(ts.mdps[0], ts.test.reward, initial_state=ts.test.initial_state,
                         horizon=ts.horizon, gamma=ts.gamma, reward_std=ts.test.reward_std,
                         prior=_accurate_prior(ts.test) if prior is None else prior)
        self.test_set = ts
        self._episode = 0
        self._mdp = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        i = (options or {}).get("mdp_index", self._episode % self.test_set.n_mdps)
        if not 0 <= int(i) < self.test_set.n_mdps:
            raise BBRLError(f"TestSetEnv.reset: mdp_index {i} outside [0, "
                            f"{self.test_set.n_mdps})")
        self._mdp = int(i)
        self.P = np.asarray(self.test_set.mdps[self._mdp], dtype=float)
        self._cdf = np.cumsum(self.P, axis=2)
        self._episode += 1
        obs, info = super().reset(seed=seed, options=options)
        return obs, {"mdp_index": self._mdp}


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
