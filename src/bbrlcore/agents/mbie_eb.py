r"""MBIE-EB: Model-Based Interval Estimation with Exploration Bonus (Strehl & Littman 2008).

Beyond the paper (Castronovo et al. 2016 does not have it): a PAC-MDP algorithm, the
frequentist reference point beside the Bayesian agents. It ignores the prior's
concentrations (it uses the prior's known reward function only).

The agent counts its observed transitions :math:`c(x,u,y)`, :math:`n(x,u) = \sum_y
c(x,u,y)`, and plans after every transition in the **empirical model**
:math:`\hat P(y \mid x,u) = c(x,u,y)/n(x,u)` with the exploration bonus
:math:`\beta/\sqrt{n(x,u)}` added to the reward of every transition out of (x, u):

.. math::  Q(x,u) = \sum_y \hat P(y \mid x,u)\,\bigl(R(x,u,y) + \gamma V(y)\bigr)
   + \frac{\beta}{\sqrt{n(x,u)}}, \qquad V(y) = \max_v Q(y,v).

A pair never tried (n = 0) has no empirical model; the standard reading of the paper
gives it the largest possible value, :math:`Q(x,u) = R_{max}/(1-\gamma)` (its
initialisation; R-max's optimism), where :math:`R_{max}` is the largest reward of the
prior's reward table on the prior's support. It is computed exactly as R-max does: an
unknown pair moves to a fictitious absorbing state that pays :math:`R_{max}` forever, so
the model has :math:`n_X + 1` states. The model is solved at reset and after every
transition, like BEB's, to the Guez value iteration's tolerance (Euclidean change of a
sweep at most 1e-4, lowest action index wins ties) by warm-started policy iteration
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration`, BEB's solver, on the
:math:`(n_X+1)`-state model), and the agent plays the last sweep's greedy action. Only the
observed pair's row and bonus change after a transition. The counts are not capped (the
paper's analysis stops updating a pair after m visits to bound the sample complexity;
with m at least the horizon, the usual practical reading, the cap never binds).

With ``β = 0`` the agent is greedy in the empirical model (untried pairs optimistic).
Parameter: ``beta`` (float ≥ 0, required). γ < 1.

Paper: A. L. Strehl and M. L. Littman, "An analysis of model-based Interval Estimation
for Markov Decision Processes", Journal of Computer and System Sciences 74(8), 2008.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import model_update
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import Param, non_negative, support_sizes
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_policy_iteration


@njit(cache=True, error_model="numpy")
def _set_bonus(Rb, R, N, Np, supp, nsupp, beta, x, u):
    bonus = beta / math.sqrt(Np[x, u])
    for k in range(nsupp[x, u]):
        y = supp[x, u, k]
        Rb[x, u, y] = R[x, u, y] + bonus


@njit(cache=True, error_model="numpy")
def _reset(setup):
    R, fpar = setup  # R: (nX+1, nU, nX+1), the last state the fictitious one
    gamma, tol = fpar[0], fpar[2]
    nS, nU, _ = R.shape
    z = nS - 1
    N = np.zeros((nS, nU, nS))
    Np = np.zeros((nS, nU))
    P = np.zeros((nS, nU, nS))
    supp = np.zeros((nS, nU, nS), dtype=np.int64)
    nsupp = np.ones((nS, nU), dtype=np.int64)
    for x in range(nS):
        for u in range(nU):
            P[x, u, z] = 1.0  # untried: to the fictitious state (which loops)
            supp[x, u, 0] = z
    Rb = R.copy()
    V = np.zeros(nS)
    pi = np.zeros(nS, dtype=np.int64)
    A = np.empty((nS, nS))
    b = np.empty(nS)
    guez_policy_iteration(P, Rb, supp, nsupp, gamma, tol, V, pi, A, b)
    return N, Np, P, supp, nsupp, R, Rb, V, pi, A, b, fpar


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    return state[8][x]


@njit(cache=True, error_model="numpy", inline="always")
def _observe(state, x, u, y, r):
    N, Np, P, supp, nsupp, R, Rb, V, pi, A, b, fpar = state
    if Np[x, u] == 0.0:  # first visit: leave the fictitious state
        P[x, u, R.shape[0] - 1] = 0.0
        nsupp[x, u] = 0
    model_update(N, Np, P, supp, nsupp, x, u, y)
    _set_bonus(Rb, R, N, Np, supp, nsupp, fpar[1], x, u)
    guez_policy_iteration(P, Rb, supp, nsupp, fpar[0], fpar[2], V, pi, A, b)


def r_max(prior) -> float:
    """The largest reward of the prior's reward table on the prior's support."""
    theta = np.asarray(prior.theta)
    return float(np.asarray(prior.reward)[theta > 0].max())


def augmented_rewards(prior) -> np.ndarray:
    """The reward table of the (nX+1)-state model: the prior's, plus R_max on every
    transition to the fictitious state."""
    nX, nU = prior.n_states, prior.n_actions
    R = np.zeros((nX + 1, nU, nX + 1))
    R[:nX, :, :nX] = np.asarray(prior.reward, dtype=np.float64)
    R[:, :, nX] = r_max(prior)
    return R


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A policy iteration of the (nX+1)-state model at reset and after every step: sweeps
    over the empirical model's support (at most the prior's) and an (nX+1)^2 linear
    solve per evaluation, like BEB's."""
    B = float(support_sizes(prior.theta).sum())
    nS = prior.n_states + 1
    return {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * B,
            "solves": horizon * float(nS) ** 3}


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return ("needs a discount factor < 1 (untried pairs are worth R_max / (1 - gamma); "
                "the Guez value iteration would not converge)")
    return None


class MBIEEB(CompiledAgent):
    """MBIE-EB as a compiled agent (the module docstring states the algorithm)."""

    name = "mbie-eb"
    params = (Param("beta", float, required=True, check=non_negative,
                    doc="exploration bonus scale: beta / sqrt(n(x,u)) on the reward"),)
    setting_check = staticmethod(_setting_check)
    cost_features = staticmethod(cost_features)
    reset = _reset
    act = _act
    observe = _observe

    def setup(self) -> tuple:
        return (augmented_rewards(self.prior),
                np.array([float(self.gamma), float(self.p["beta"]), GUEZ_TOLERANCE]))


MBIEEB.__doc__ = __doc__  # what `bbrl agents mbie-eb` shows
