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
the model has :math:`n_X + 1` states. The model is solved after every transition (and
once per player for the start, where nothing is tried), like BEB's, to the Guez value
iteration's tolerance (Euclidean change of a sweep at most 1e-4, lowest action index
wins ties) by warm-started policy iteration
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration_rows`, BEB's solver, on the
:math:`(n_X+1)`-state model; by warm-started sweeps alone, same stopping test, on models
too large for dense LU evaluations, :func:`~bbrlcore.mdp.solvers.lu_affordable`), and
the agent plays the last sweep's greedy action. Only the observed pair's row and bonus
change after a transition.

**Sparse rows.** The counts, the empirical model and the rewards live on the agent's
padded rows (:mod:`bbrlcore.mdp.rows`: the prior's support joined with the test MDPs'
transitions, every transition the agent can observe) plus one slot per row for the
fictitious state (the last successor, :math:`n_X`): a sweep costs one term per
transition, not :math:`n_X^2`; an unobserved slot has probability 0 (a zero term, as the
dense zero it stands for), and an observation finds its slot by binary search.

The counts are not capped (the paper's analysis stops updating a pair after m visits to
bound the sample complexity; with m at least the horizon, the usual practical reading,
the cap never binds).

**Rewards.** Under a prior that knows the rewards (the paper's protocol) :math:`R` is
the prior's reward table. Under a prior whose rewards are unknown (``+rbeta``,
``+rnig``, :mod:`bbrlcore.mdp.reward_prior`; their hyper-parameters play no part) the
agent plays the paper's model, the **empirical mean reward** :math:`\hat R(x,u)` of the
rewards observed after (x, u) on every transition out of it, and its single bonus
:math:`\beta/\sqrt{n(x,u)}` is MBIE-EB's joint interval for the reward and the
transitions (Strehl & Littman 2008: the bonus replaces MBIE's two confidence
intervals, the reward's :math:`\sqrt{\ln(2/\delta_R)/(2n)}` included); :math:`R_{max}`
of an untried pair is then the top of the prior's reward range
(:func:`~bbrlcore.mdp.reward_prior.reward_range`).

With ``β = 0`` the agent is greedy in the empirical model (untried pairs optimistic).
Parameter: ``beta`` (float ≥ 0, required). γ < 1.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state (done by the package's loop,
:func:`~bbrlcore.agents.api.trajectory_loop_rows`); the counts and the optimistic model
are kept, and it plans with the test set's γ.

Paper: A. L. Strehl and M. L. Littman, "An analysis of model-based Interval Estimation
for Markov Decision Processes", Journal of Computer and System Sciences 74(8), 2008.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import likeliest_slot
from bbrlcore.agents._posterior import lu_buffer
from bbrlcore.agents._rewards import empirical_init, empirical_update
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import Param, non_negative
from bbrlcore.mdp.reward_prior import REWARD_PRIORS, reward_range
from bbrlcore.mdp.rows import slot_of
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_policy_iteration_rows, lu_affordable


@njit(cache=True, error_model="numpy")
def _model(succ, nsucc, R):
    """The model before any observation, on **compact rows**: row (x, u) lists only the
    successors the agent has seen (``cs[x, u, :cn[x, u]]``, increasing), with their counts
    ``cN``, probabilities ``cP`` and rewards ``cR`` (those of the layout ``succ``,
    ``nsucc``: the prior's support and a last slot to the fictitious state); an untried
    row holds the fictitious state alone (probability 1, its reward R_max), whose own rows
    loop on it. The sums of a sweep then run over what was seen, as the dense model's
    support did, not over the prior's whole support."""
    nS, nU, W = succ.shape
    cs = np.zeros((nS, nU, W), dtype=np.int64)
    cn = np.ones((nS, nU), dtype=np.int64)
    cN = np.zeros((nS, nU, W))
    cP = np.zeros((nS, nU, W))
    cR = np.zeros((nS, nU, W))
    for x in range(nS):
        for u in range(nU):
            last = nsucc[x, u] - 1
            cs[x, u, 0] = succ[x, u, last]
            cP[x, u, 0] = 1.0
            cR[x, u, 0] = R[x, u, last]
    return cs, cn, cN, cP, cR


@njit(cache=True, error_model="numpy")
def _observe_compact(succ, nsucc, R, cs, cn, cN, Np, cP, cR, x, u, y):
    """One more observation of (x, u, y) on the compact rows (``y`` inserted in order at
    its first sighting, the fictitious state dropped at the row's first visit)."""
    if Np[x, u] == 0.0:  # first visit: leave the fictitious state
        cn[x, u] = 0
    n = cn[x, u]
    j = 0
    while j < n and cs[x, u, j] < y:
        j += 1
    if j == n or cs[x, u, j] != y:
        k = slot_of(succ, nsucc, x, u, y)
        if k < 0:
            raise ValueError("observed a transition outside the agent's layout")
        for i in range(n, j, -1):
            cs[x, u, i] = cs[x, u, i - 1]
            cN[x, u, i] = cN[x, u, i - 1]
            cR[x, u, i] = cR[x, u, i - 1]
        cs[x, u, j] = y
        cN[x, u, j] = 0.0
        cR[x, u, j] = R[x, u, k]
        cn[x, u] = n + 1
    cN[x, u, j] += 1.0
    Np[x, u] += 1.0
    inv = 1.0 / Np[x, u]
    for i in range(cn[x, u]):
        cP[x, u, i] = cN[x, u, i] * inv


@njit(cache=True, error_model="numpy")
def _set_bonus(Rb, cR, cn, Np, beta, x, u):
    """The bonus β/√n(x,u) on the rewards of the seen successors of row (x, u)."""
    bonus = beta / math.sqrt(Np[x, u])
    for i in range(cn[x, u]):
        Rb[x, u, i] = cR[x, u, i] + bonus


@njit(cache=True, error_model="numpy")
def start_values(succ, nsucc, R, gamma, tol):
    """``(V, pi)`` of the model where nothing is tried (every state worth
    R_max / (1 - γ)), solved from zero: every trajectory's start (computed once per
    player)."""
    nS = succ.shape[0]
    cs, cn, _cN, cP, cR = _model(succ, nsucc, R)
    V = np.zeros(nS)
    pi = np.zeros(nS, dtype=np.int64)
    guez_policy_iteration_rows(cP, cR, cs, cn, gamma, tol, V, pi, lu_buffer(nsucc),
                               np.empty(nS))
    return V, pi


@njit(cache=True, error_model="numpy")
def _reset(setup):
    succ, nsucc, R, V0, pi0, fpar = setup  # (nX+1) states, the last the fictitious one
    nS, nU, _ = succ.shape
    cs, cn, cN, cP, cR = _model(succ, nsucc, R)
    return (succ, nsucc, R, cs, cn, cN, np.zeros((nS, nU)), cP, cR, cR.copy(), V0.copy(),
            pi0.copy(), lu_buffer(nsucc), np.empty(nS), fpar, empirical_init(nS, nU))


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    return state[11][x]


@njit(cache=True, error_model="numpy", inline="always")
def _observe(state, x, u, y, r):
    succ, nsucc, R, cs, cn, cN, Np, cP, cR, Rb, V, pi, A, b, fpar, emp = state
    _observe_compact(succ, nsucc, R, cs, cn, cN, Np, cP, cR, x, u, y)
    if fpar[3] != 0.0:  # rewards unknown: the empirical mean on every seen successor
        empirical_update(emp, x, u, r)
        m = emp[x, u, 0] / emp[x, u, 1]
        for i in range(cn[x, u]):
            cR[x, u, i] = m
    _set_bonus(Rb, cR, cn, Np, fpar[1], x, u)
    guez_policy_iteration_rows(cP, Rb, cs, cn, fpar[0], fpar[2], V, pi, A, b)


def r_max(prior) -> float:
    """The largest reward of the prior's reward table on the prior's support."""
    return float(np.asarray(prior.reward_rows)[prior.support_layout.mask].max())


def augmented(layout, reward_rows: np.ndarray, rmax: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(succ, nsucc, R)`` of the (nX+1)-state model on sparse rows: each row of
    ``layout`` (with the prior's rewards ``reward_rows`` on it) plus a last slot to the
    fictitious state nX paying ``rmax``; the fictitious state's rows loop on it."""
    nX, nU = layout.n_states, layout.n_actions
    W = layout.width + 1
    succ = np.zeros((nX + 1, nU, W), dtype=np.int64)
    R = np.zeros((nX + 1, nU, W))
    succ[:nX, :, :W - 1] = layout.succ
    R[:nX, :, :W - 1] = np.where(layout.mask, reward_rows, 0.0)
    nsucc = np.ones((nX + 1, nU), dtype=np.int64)
    nsucc[:nX] = layout.nsucc + 1
    x, u = np.divmod(np.arange(nX * nU), nU)
    last = layout.nsucc.ravel()
    succ[x, u, last] = nX
    R[x, u, last] = rmax
    succ[nX, :, 0] = nX
    R[nX, :, 0] = rmax
    return succ, nsucc, R


@njit(cache=True, error_model="numpy")
def probe_sweeps(succ, nsucc, R, theta, x0, gamma, tol, beta, steps):
    """Mean sweeps of MBIE-EB's solves along ``steps`` steps played in the prior's mean
    model (``theta`` on the rows of ``succ`` but their last, fictitious slot): the greedy
    action, its most likely successor, the compact row and the bonus updated, the model
    re-solved warm, as the trajectory does. A deterministic count, the cost model's
    feature."""
    nS, nU, _ = succ.shape
    cs, cn, cN, cP, cR = _model(succ, nsucc, R)
    Np = np.zeros((nS, nU))
    Rb = cR.copy()
    V = np.zeros(nS)
    pi = np.zeros(nS, dtype=np.int64)
    A = lu_buffer(nsucc)
    b = np.empty(nS)
    total = guez_policy_iteration_rows(cP, Rb, cs, cn, gamma, tol, V, pi, A, b)
    x = x0 if x0 >= 0 else 0
    for _t in range(steps):
        u = pi[x]
        k = likeliest_slot(theta, x, u, nsucc[x, u] - 1)
        y = succ[x, u, k]
        _observe_compact(succ, nsucc, R, cs, cn, cN, Np, cP, cR, x, u, y)
        _set_bonus(Rb, cR, cn, Np, beta, x, u)
        total += guez_policy_iteration_rows(cP, Rb, cs, cn, gamma, tol, V, pi, A, b)
        x = y
    return total / (steps + 1)


#: Steps of :func:`probe_sweeps` behind the cost model's estimate.
PROBE_STEPS = 25


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A policy iteration of the (nX+1)-state model after every step: sweeps over the
    empirical model's rows (the successors seen, and a fictitious slot per untried row)
    and an (nX+1)^2 linear solve per evaluation, like BEB's; on a model too large for LU
    evaluations, the sweeps a warm solve takes (:func:`probe_sweeps`, memoised) times the
    transitions."""
    nnz = prior.support_layout.nnz
    B = float(nnz)
    nS = prior.n_states + 1
    if lu_affordable(nS, nnz + nS * prior.n_actions):
        return {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * B,
                "solves": horizon * float(nS) ** 3}
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    lay = prior.support_layout
    succ, nsucc, R = augmented(lay, np.asarray(prior.reward_rows), r_max(prior))
    theta = np.zeros(succ.shape)
    theta[:-1, :, :lay.width] = np.where(lay.mask, prior.theta_rows, 0.0)
    s = pure_probe("mbie-sweeps", probe_sweeps, succ, nsucc, R, theta,
                   int(prior.initial_state), float(gamma), GUEZ_TOLERANCE,
                   float(params["beta"]), PROBE_STEPS)
    return {"trajectory": 1.0, "steps": float(horizon), "sweep_backups": horizon * B * s}


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

    reward_priors = REWARD_PRIORS
    dirichlet_all = True  # (it never reads the prior's concentrations)

    def setup(self) -> tuple:
        if self.reward_prior.known:
            succ, nsucc, R = augmented(self.layout, np.asarray(self.reward_rows),
                                       r_max(self.prior))
        else:  # the table unread: R_max is the top of the reward range
            succ, nsucc, R = augmented(self.layout, np.zeros(np.shape(self.reward_rows)),
                                       reward_range(self.prior)[1])
        fpar = np.array([float(self.gamma), float(self.p["beta"]), GUEZ_TOLERANCE,
                         0.0 if self.reward_prior.known else 1.0])
        V0, pi0 = start_values(succ, nsucc, R, fpar[0], fpar[2])
        return succ, nsucc, R, V0, pi0, fpar


MBIEEB.__doc__ = __doc__  # what `bbrl agents mbie-eb` shows
