r"""R-max for the bbrl benchmark, written twice: as a Python agent and compiled.

R-max (Brafman & Tennenholtz, "R-MAX — A General Polynomial Time Algorithm for
Near-Optimal Reinforcement Learning", JMLR 3, 2002) is the classic PAC exploration
algorithm the paper's agents do not include. In bbrl's protocol the reward function is
known and transitions are learned, so:

* a state-action pair is **known** once it has been tried ``m`` times; its model is the
  empirical distribution of the observed next states, :math:`\hat P(y|x,u) =
  n(x,u,y)/n(x,u)` (R-max is frequentist: it ignores the Dirichlet prior);
* an **unknown** pair is optimistic: it is believed to lead to a fictitious state paying
  the largest reward :math:`R_{max}` forever, :math:`Q(x,u) = R_{max}/(1-\gamma)`;
* the agent acts greedily in that model (exact ties broken at random) and **re-plans only
  when a pair becomes known** (value iteration of the known part, unknown pairs held at
  their optimistic value, until the largest change is at most 0.01).

Parameter: ``m`` (int ≥ 1), the visits that make a pair known.

:class:`RMax` is the Python agent (numpy; easy to read and change), :class:`RMaxCompiled`
the same algorithm with numba functions that bbrl compiles into its trajectory loop (the
fast path). They draw from different generators, so they agree in distribution, not
trajectory by trajectory.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents import CompiledAgent, Param, PythonAgent, at_least_one

__version__ = "0.1.0"

#: Stopping tolerance of value iteration (largest change of a Q-value).
TOLERANCE = 0.01
#: Largest number of sweeps of one re-planning.
MAX_SWEEPS = 10_000

PARAMS = (Param("m", int, required=True, check=at_least_one,
                doc="visits after which a state-action pair is known"),)


def _setting_check(params, prior, gamma, horizon):
    if not gamma < 1.0:
        return "needs a discount factor < 1 (its optimistic value is Rmax / (1 - gamma))"
    return None


class RMax(PythonAgent):
    """R-max (Brafman & Tennenholtz 2002) as a Python agent (see the module docstring)."""

    name = "rmax"
    params = PARAMS
    setting_check = staticmethod(_setting_check)

    def reset(self) -> None:
        nX, nU = self.n_states, self.n_actions
        self.R = np.asarray(self.prior.reward, dtype=float)
        self.vmax = float(self.R.max()) / (1.0 - self.gamma)
        self.counts = np.zeros((nX, nU, nX))
        self.n = np.zeros((nX, nU))
        self.known = np.zeros((nX, nU), dtype=bool)
        self.q = np.full((nX, nU), self.vmax)

    def act(self, state: int) -> int:
        q = self.q[state]
        best = np.flatnonzero(q == q.max())
        return int(best[0] if len(best) == 1 else self.rng.choice(best))

    def observe(self, state: int, action: int, next_state: int, reward: float) -> None:
        if self.known[state, action]:
            return  # a known pair's model is frozen (R-max)
        self.counts[state, action, next_state] += 1.0
        self.n[state, action] += 1.0
        if self.n[state, action] >= self.p["m"]:
            self.known[state, action] = True
            self._plan()

    def _plan(self) -> None:
        known = self.known
        P = np.where(known[:, :, None], self.counts / np.maximum(self.n, 1.0)[:, :, None], 0.0)
        r = (P * self.R).sum(axis=2)
        q = self.q
        for _ in range(MAX_SWEEPS):
            new = np.where(known, r + self.gamma * P @ q.max(axis=1), self.vmax)
            done = np.abs(new - q).max() <= TOLERANCE
            q = new
            if done:
                break
        self.q = q


# ---------------------------------------------------------------------------------------
# The compiled version: the same algorithm as numba functions over arrays


@njit(cache=True)
def _reset(setup):
    reward, m, gamma = setup
    nX, nU, _ = reward.shape
    vmax = reward.max() / (1.0 - gamma)
    counts = np.zeros((nX, nU, nX))
    n = np.zeros((nX, nU))
    known = np.zeros((nX, nU), dtype=np.bool_)
    q = np.full((nX, nU), vmax)
    params = np.array([float(m), gamma, vmax])
    return counts, n, known, q, reward, params


@njit(cache=True)
def _act(state, x):
    q = state[3]
    nU = q.shape[1]
    best = q[x, 0]
    count = 1
    for u in range(1, nU):
        if q[x, u] > best:
            best = q[x, u]
            count = 1
        elif q[x, u] == best:
            count += 1
    pick = 0 if count == 1 else np.random.randint(0, count)
    for u in range(nU):
        if q[x, u] == best:
            if pick == 0:
                return u
            pick -= 1
    return 0


@njit(cache=True)
def _plan(counts, n, known, q, reward, gamma, vmax):
    nX, nU, _ = reward.shape
    v = np.empty(nX)
    for _sweep in range(MAX_SWEEPS):
        for y in range(nX):
            v[y] = q[y].max()
        change = 0.0
        for x in range(nX):
            for u in range(nU):
                if not known[x, u]:
                    continue
                s = 0.0
                for y in range(nX):
                    c = counts[x, u, y]
                    if c > 0.0:
                        s += c * (reward[x, u, y] + gamma * v[y])
                new = s / n[x, u]
                d = abs(new - q[x, u])
                if d > change:
                    change = d
                q[x, u] = new
        if change <= TOLERANCE:
            return


@njit(cache=True)
def _observe(state, x, u, y, r):
    counts, n, known, q, reward, params = state
    if known[x, u]:
        return
    counts[x, u, y] += 1.0
    n[x, u] += 1.0
    if n[x, u] >= params[0]:
        known[x, u] = True
        _plan(counts, n, known, q, reward, params[1], params[2])


class RMaxCompiled(CompiledAgent):
    """R-max compiled by bbrl into its trajectory loop (see the module docstring)."""

    name = "rmax-jit"
    params = PARAMS
    setting_check = staticmethod(_setting_check)
    reset = _reset
    act = _act
    observe = _observe

    def setup(self) -> tuple:
        return (np.ascontiguousarray(self.prior.reward, dtype=np.float64),
                int(self.p["m"]), float(self.gamma))
