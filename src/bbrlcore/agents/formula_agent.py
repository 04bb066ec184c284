r"""Formula agents: act greedily with respect to a formula of three Q-features.

A formula agent scores each action u in state x by a formula
:math:`f(Q_{mean}(x,u), Q_{self}(x,u), Q_{uniform}(x,u))` (variables ``X0 X1 X2``) and
plays the highest score, exact ties broken uniformly at random. The three features are the
Q-functions of three counting models of the transitions, each updated with
every observed transition and re-solved by the BBRL Q-iteration after **every** step:

* **QMean** (X0): initial counts = the prior's Dirichlet concentrations θ, i.e. the
  posterior-mean MDP;
* **QSelf** (X1): one pseudo-count on the self-loop, N(x,u,y) = [y == x];
* **QUniform** (X2): one pseudo-count everywhere, N(x,u,y) = 1.

All use the prior's known mean reward table. The Q-iteration (tolerance 0.01, at most T+1
sweeps) is warm-started from the previous step's Q, which reaches the same stopping test
in a few sweeps; only the features the formula reads are computed.

**Formula failures**: an action whose formula value is undefined (NaN,
log or square root of a negative, division by zero) scores −∞; if every action fails the
choice is uniform. The kernel counts failed evaluations (one per action and decision)
and returns the count as ``formula_failures``. During OPPS-DS training a trajectory stops
at its first failure (the arm is discarded anyway).

Paper: Castronovo, Maes, Fonteneau and Ernst, "Learning exploration/exploitation
strategies for single trajectory reinforcement learning", EWRL 2012; Castronovo et al.,
"Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016, §4.1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    argmax_random_tie,
    env_reset,
    env_reward,
    env_step,
    model_init,
    model_update,
)
from bbrlcore.agents.formulas import eval_rpn
from bbrlcore.mdp.solvers import q_solve


def feature_counts(theta: np.ndarray) -> np.ndarray:
    """Initial counts of the three features, shape (3, nX, nU, nX): θ, self-loop, ones."""
    nX, nU, _ = theta.shape
    c = np.zeros((3, nX, nU, nX))
    c[0] = theta
    for x in range(nX):
        c[1, x, :, x] = 1.0
    c[2] = 1.0
    return c


@njit(cache=True, error_model="numpy")
def initial_q(counts, Rm, used, gamma, horizon):
    """Q of each used feature's initial model, solved from zero; shape (3, nX, nU)."""
    _, nX, nU, _ = counts.shape
    Q = np.zeros((3, nX, nU))
    for k in range(3):
        if used[k]:
            N, Np, Pm, supp, nsupp = model_init(counts[k])
            q_solve(Pm, Rm, supp, nsupp, gamma, horizon, Q[k])
    return Q


@njit(cache=True, error_model="numpy")
def formula_trajectory(
    P, R, Rstd, gaussian, initial_state, gamma, horizon,
    codes, n_codes, used, counts, Rm, Qinit, solve_reset, stop_on_failure, rewards,
):  # fmt: skip
    """One trajectory of the formula agent on MDP ``P`` (numba RNG already seeded),
    writing the reward of step ``t`` into ``rewards[t]``.

    ``Qinit`` holds the features' Q at reset when ``solve_reset`` is False (OPPS-DS
    training reuses the prior's solution, identical for every pull); otherwise the reset
    solves each used feature from zero. Returns ``(discounted_return, n_failures)``.
    """
    nX, nU, _ = P.shape
    x = env_reset(initial_state, nX)
    Q = np.zeros((3, nX, nU))
    # counting models of the used features (unused ones keep zero Q and are never solved)
    N0, Np0, P0, s0, ns0 = model_init(counts[0])
    N1, Np1, P1, s1, ns1 = model_init(counts[1])
    N2, Np2, P2, s2, ns2 = model_init(counts[2])
    if solve_reset:
        if used[0]:
            q_solve(P0, Rm, s0, ns0, gamma, horizon, Q[0])
        if used[1]:
            q_solve(P1, Rm, s1, ns1, gamma, horizon, Q[1])
        if used[2]:
            q_solve(P2, Rm, s2, ns2, gamma, horizon, Q[2])
    else:
        Q[:] = Qinit
    stack = np.empty(max(n_codes, 1))
    scores = np.empty(nU)
    fails = 0
    ret = 0.0
    disc = 1.0
    for t in range(horizon):
        for u in range(nU):
            v, ok = eval_rpn(codes, n_codes, Q[0, x, u], Q[1, x, u], Q[2, x, u], stack)
            if ok and not np.isnan(v):
                scores[u] = v
            else:
                scores[u] = -np.inf
                fails += 1
        if fails > 0 and stop_on_failure:
            return ret, fails
        u = argmax_random_tie(scores)
        y = env_step(P, x, u)
        r = env_reward(R, Rstd, gaussian, x, u, y)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        if used[0]:
            model_update(N0, Np0, P0, s0, ns0, x, u, y)
            q_solve(P0, Rm, s0, ns0, gamma, horizon, Q[0])
        if used[1]:
            model_update(N1, Np1, P1, s1, ns1, x, u, y)
            q_solve(P1, Rm, s1, ns1, gamma, horizon, Q[1])
        if used[2]:
            model_update(N2, Np2, P2, s2, ns2, x, u, y)
            q_solve(P2, Rm, s2, ns2, gamma, horizon, Q[2])
        x = y
    return ret, fails


@njit(cache=True, error_model="numpy")
def play_formula(
    P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, codes, used, counts, Rm,
    rewards,
):  # fmt: skip
    """One test trajectory (reset solve included), seeded with ``seed``; the reward of
    step ``t`` goes to ``rewards[t]``."""
    np.random.seed(seed)
    Qdummy = np.zeros((3, P.shape[0], P.shape[1]))
    return formula_trajectory(
        P, R, Rstd, gaussian, initial_state, gamma, horizon,
        codes, codes.shape[0], used, counts, Rm, Qdummy, True, False, rewards,
    )  # fmt: skip
