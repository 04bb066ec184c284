"""Your own algorithm in one file: e-Greedy written as a Python agent and as a compiled
agent, for the README's "Benchmark your own algorithm".

Use it by reference wherever bbrl takes an algorithm name::

    bbrl train --agent examples/my_agents.py:MyGreedy --param epsilon=0.1 --prior GC -o a.parquet
    bbrl agents examples/my_agents.py:MyGreedyJit

or in ``config.yaml``::

    algorithms:
      examples/my_agents.py:MyGreedyJit: {epsilon: [0.0, 0.1]}

Both play e-Greedy on the posterior mean (the paper's e-Greedy): counts initialised to the
prior's concentrations, the mean model solved by Q-iteration after every step, with
probability epsilon a uniformly random action, otherwise the greedy one (ties at random).
``MyGreedyJit`` calls bbrl's own numba kernels in the same order as the built-in
``e-greedy``, so it plays exactly the same trajectories; ``MyGreedy`` is plain numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents import CompiledAgent, Param, PythonAgent, in_unit_interval
from bbrlcore.agents._kernels import argmax_random_tie, model_init, model_update
from bbrlcore.mdp.solvers import q_solve

PARAMS = (Param("epsilon", float, required=True, check=in_unit_interval,
                doc="probability of a uniformly random action"),)


class MyGreedy(PythonAgent):
    """e-Greedy in Python: numpy value iteration of the posterior mean after every step."""

    name = "my-greedy"
    params = PARAMS

    def reset(self) -> None:
        self.counts = np.array(self.prior.theta, dtype=float)
        self.R = np.asarray(self.prior.reward, dtype=float)
        self.q = np.zeros((self.n_states, self.n_actions))
        self.solve()

    def solve(self) -> None:
        """Q-iteration of the mean model from the previous Q (tolerance 0.01, at most
        T + 1 sweeps), like bbrl's solver."""
        P = self.counts / self.counts.sum(axis=2, keepdims=True)
        r = (P * self.R).sum(axis=2)
        for _ in range(self.horizon + 1):
            new = r + self.gamma * P @ self.q.max(axis=1)
            done = np.abs(new - self.q).max() <= 0.01
            self.q = new
            if done:
                break

    def act(self, state: int) -> int:
        if self.rng.random() <= self.p["epsilon"]:
            return int(self.rng.integers(self.n_actions))
        q = self.q[state]
        return int(self.rng.choice(np.flatnonzero(q == q.max())))

    def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
        self.counts[state, action, next_state] += 1.0
        self.solve()


@njit(cache=True)
def _reset(setup):
    theta, Rm, gamma, horizon, epsilon = setup
    N, Np, Pm, supp, nsupp = model_init(theta)
    Q = np.zeros((theta.shape[0], theta.shape[1]))
    q_solve(Pm, Rm, supp, nsupp, gamma, horizon, Q)
    return N, Np, Pm, supp, nsupp, Q, Rm, np.array([gamma, epsilon]), horizon


@njit(cache=True)
def _act(state, x):
    Q, scal = state[5], state[7]
    if np.random.random() <= scal[1]:
        return np.random.randint(0, Q.shape[1])
    return argmax_random_tie(Q[x])


@njit(cache=True)
def _observe(state, x, u, y, r):
    N, Np, Pm, supp, nsupp, Q, Rm, scal, horizon = state
    model_update(N, Np, Pm, supp, nsupp, x, u, y)
    q_solve(Pm, Rm, supp, nsupp, scal[0], horizon, Q)


class MyGreedyJit(CompiledAgent):
    """e-Greedy compiled into bbrl's trajectory loop (the same kernels as the built-in)."""

    name = "my-greedy-jit"
    params = PARAMS
    reset = _reset
    act = _act
    observe = _observe

    def setup(self) -> tuple:
        return (np.ascontiguousarray(self.prior.theta, dtype=np.float64),
                np.ascontiguousarray(self.prior.reward, dtype=np.float64),
                float(self.gamma), int(self.horizon), float(self.p["epsilon"]))
