"""Your own algorithm in one file: e-Greedy written as a Python agent and as a compiled
agent, for the documentation's tutorial "Your own algorithm".

Use it by reference wherever bbrl takes an algorithm name::

    bbrl train --agent examples/my_agents.py:MyGreedy --param epsilon=0.1 --prior GC -o a.parquet
    bbrl agents examples/my_agents.py:MyGreedyJit

or in ``config.yaml``::

    algorithms:
      examples/my_agents.py:MyGreedyJit: {epsilon: [0.0, 0.1]}

Both play e-Greedy on the posterior mean (the paper's e-Greedy): counts initialised to the
prior's concentrations, the mean model solved by Q-iteration after every step, with
probability epsilon a uniformly random action, otherwise the greedy one (ties at random).
Both are written with the public helpers of :mod:`bbrlcore.agents.bayes`: ``MyGreedy``
with its numpy functions (the posterior mean, the Q-function), ``MyGreedyJit`` with its
numba functions, the ones the built-in ``e-greedy`` is made of, called in the same order:
it plays exactly the same trajectories. bbrl compiles ``MyGreedyJit``'s trajectory loop
once (at ``bbrl train``) and caches it on disk: later processes load it. ``MyGreedyJit``
also exposes its current policy (greedy on its Q-values) by the optional ``@njit`` hook
``policy(state, out)``, for Colosseum's expected indicators (``bbrl run --indicators``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents import CompiledAgent, Param, PythonAgent, bayes, in_unit_interval

PARAMS = (Param("epsilon", float, required=True, check=in_unit_interval,
                doc="probability of a uniformly random action"),)


class MyGreedy(PythonAgent):
    """e-Greedy in Python: the posterior mean's Q-function solved after every step."""

    name = "my-greedy"
    display_name = "My e-Greedy"  # the report's name for it (optional)
    params = PARAMS

    def reset(self) -> None:
        self.counts = np.array(self.prior.theta, dtype=float)  # the Dirichlet posterior
        self.q = self.solve()

    def solve(self, q: np.ndarray | None = None) -> np.ndarray:
        """Q-iteration of the posterior mean, warm-started from ``q`` (tolerance 0.01,
        at most T + 1 sweeps), as bbrl's e-Greedy does."""
        P = bayes.mean_model(self.counts)
        return bayes.q_values(P, self.prior.reward, self.gamma, self.horizon, q)

    def act(self, state: int) -> int:
        if self.rng.random() <= self.p["epsilon"]:
            return int(self.rng.integers(self.n_actions))
        q = self.q[state]
        return int(self.rng.choice(np.flatnonzero(q == q.max())))

    def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
        self.counts[state, action, next_state] += 1.0  # the posterior update
        self.q = self.solve(self.q)


@njit(cache=True)
def _reset(setup):
    theta, Rm, gamma, horizon, epsilon = setup
    N, Np, Pm, supp, nsupp = bayes.mean_model_init(theta)
    Q = np.zeros((theta.shape[0], theta.shape[1]))
    bayes.q_solve(Pm, Rm, supp, nsupp, gamma, horizon, Q)
    return N, Np, Pm, supp, nsupp, Q, Rm, np.array([gamma, epsilon]), horizon


@njit(cache=True)
def _act(state, x):
    Q, scal = state[5], state[7]
    if np.random.random() <= scal[1]:
        return np.random.randint(0, Q.shape[1])
    return bayes.argmax_random_tie(Q[x])


@njit(cache=True)
def _observe(state, x, u, y, r):
    N, Np, Pm, supp, nsupp, Q, Rm, scal, horizon = state
    bayes.mean_model_update(N, Np, Pm, supp, nsupp, x, u, y)
    bayes.q_solve(Pm, Rm, supp, nsupp, scal[0], horizon, Q)


@njit(cache=True)
def _policy(state, out):
    """Its current best policy, for Colosseum's indicators (``bbrl run --indicators``):
    greedy on Q, exact ties uniform, written into ``out`` (Hp, nX, nU): Hp = 1 in a
    continuing interaction, H in an episodic one (the same policy at every step)."""
    Q = state[5]
    for x in range(Q.shape[0]):
        best = Q[x].max()
        ties = 0
        for u in range(Q.shape[1]):
            if Q[x, u] == best:
                ties += 1
        for h in range(out.shape[0]):
            for u in range(Q.shape[1]):
                out[h, x, u] = 1.0 / ties if Q[x, u] == best else 0.0


class MyGreedyJit(CompiledAgent):
    """e-Greedy compiled into bbrl's trajectory loop (the same kernels as the built-in)."""

    name = "my-greedy-jit"
    display_name = "My e-Greedy (compiled)"
    params = PARAMS
    reset = _reset
    act = _act
    observe = _observe
    policy = _policy  # optional: its current policy (Colosseum's indicators)

    def setup(self) -> tuple:
        return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
                np.ascontiguousarray(self.prior.reward, dtype=np.float64),
                float(self.gamma), int(self.horizon), float(self.p["epsilon"]))
