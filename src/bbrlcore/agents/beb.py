r"""BEB: Bayesian Exploration Bonus (Kolter & Ng 2009).

The agent plans, at every step, in the posterior-mean MDP with an exploration bonus added
to every transition out of (x, u):

.. math::  R_b(x,u,y) = R(x,u,y) + \frac{\beta}{1 + n(x,u)},

where :math:`n(x,u) = \sum_y \alpha(x,u,y)` is the total Dirichlet count of the pair
(prior concentrations plus observations) — Kolter & Ng's bonus; the paper's
":math:`\beta / c_{\langle x,u,y\rangle}`" is a misprint. The model is
solved to the Guez value iteration's tolerance (Euclidean change of a sweep at most 1e-4,
lowest-index ties) by warm-started policy iteration
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration`: exact policy evaluation, then a Guez
sweep, until a sweep changes the values by at most the tolerance), and the agent plays
the last sweep's greedy action. Only the
observed pair's row and bonus change after a transition.

``compat=true`` truncates β to an integer, as the original library does (it stores the
bonus in an unsigned int): β < 1 gives no bonus at all.

**Rewards.** Under a prior that knows the rewards (the paper's protocol) :math:`R` is
the prior's reward table. Under a prior whose rewards are unknown (``+rbeta``,
``+rnig``, :mod:`bbrlcore.mdp.reward_prior`) BEB plans with the **posterior mean of the
rewards** as it does with the posterior mean of the transitions (Kolter & Ng's agent is
greedy in the mean model plus the bonus): on every transition of (x, u),
:math:`(w_0 m_0 + \sum r)/(w_0 + n_r(x,u))`, the mean of the :math:`n_r` rewards
observed after (x, u) with the prior's mean :math:`m_0` counted as :math:`w_0`
observations — the NIG posterior mean (:math:`w_0 = \lambda_0`) and, for the Beta
prior, the posterior mean under fractional counts (:math:`a \mathrel{+}= z`,
:math:`b \mathrel{+}= 1-z`, :math:`w_0 = a_0 + b_0`, no Bernoulli draw): an empirical
mean shrunk to the prior's (:func:`._rewards.shrunk_mean`). The bonus stays on the
transitions' counts, as the paper's.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the posterior counts and bonuses are kept, and it plans with the test
set's γ.

Paper: J. Z. Kolter and A. Y. Ng, "Near-Bayesian exploration in polynomial time", ICML
2009; Castronovo et al. 2016, §4.1.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    env_reset,
    env_reward_rows,
    env_step_rows,
    likeliest_slot,
    rows_model_init,
    rows_model_update,
)
from bbrlcore.agents._layout import setting
from bbrlcore.agents._rewards import empirical_init, mean_reward_rows, mean_reward_update
from bbrlcore.agents.base import (
    COMPAT,
    FLOAT64,
    Algorithm,
    Episode,
    Param,
    Trained,
    non_negative,
    reward_buffer,
)
from bbrlcore.errors import BBRLError
from bbrlcore.mdp.reward_prior import REWARD_PRIORS
from bbrlcore.mdp.solvers import (
    GUEZ_TOLERANCE,
    guez_policy_iteration_rows,
    lu_affordable,
    n_transitions,
)

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def _set_bonus(Rb, Rm, Np, b, x, u):
    bonus = b / (1.0 + Np[x, u])
    for k in range(Rm.shape[2]):
        Rb[x, u, k] = Rm[x, u, k] + bonus


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc, theta,
                Rm, b, tol, rewards, episode_length, rr):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    learn = rr[0] != 0.0  # rewards unknown: the reward prior's posterior mean
    emp = empirical_init(nX, nU)
    if learn:
        Rm = Rm.copy()
    x = env_reset(initial_state, nX)
    N, Np, Pm = rows_model_init(theta, nsucc)
    Rb = np.empty_like(Rm)
    for s in range(nX):
        for a in range(nU):
            _set_bonus(Rb, Rm, Np, b, s, a)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    A = np.empty((nX, nX)) if lu_affordable(nX, n_transitions(nsucc)) else np.empty((1, 1))
    work = np.empty(nX)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        guez_policy_iteration_rows(Pm, Rb, succ, nsucc, gamma, tol, V, pi, A, work)
        u = pi[x]
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        if learn:
            mean_reward_update(emp, rr, nsucc, Rm, x, u, r)
        _set_bonus(Rb, Rm, Np, b, x, u)
        x = succ[x, u, k]
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (learning kept)
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    if not ep.gamma < 1.0:
        raise BBRLError(f"beb needs a discount factor < 1 (the test set has {ep.gamma})")
    st = setting(prior, ep)
    beta = float(params["beta"])
    b = float(math.floor(beta)) if params["compat"] else beta
    # (unknown rewards: the table unread, every slot at the reward prior's mean)
    Rm, rr = mean_reward_rows(prior, st)

    shape, H = (ep.horizon,), int(ep.episode_length)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, ep.horizon)
        r = _trajectory(
            st.env(P), st.R, st.Rstd, int(ep.gaussian), ep.start, ep.gamma, ep.horizon,
            seed, st.succ, st.nsucc, st.theta, Rm, b, GUEZ_TOLERANCE, rewards, H, rr,
        )
        return r, _NO_COUNTERS

    return play


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    return None


@njit(cache=True, error_model="numpy")
def probe_sweeps(theta, Rm, succ, nsucc, x0, gamma, tol, b, steps):
    """Mean sweeps of BEB's solves along ``steps`` steps played in the prior's mean model
    (each step the greedy action and its most likely successor, the counts and the bonus
    updated, the model re-solved warm, as the trajectory does): the work of a solve on a
    model too large for LU evaluations, where it is a number of sweeps that the model's
    size does not give (a deterministic count; the cost model's feature)."""
    nX, nU, _ = theta.shape
    N, Np, Pm = rows_model_init(theta, nsucc)
    Rb = np.empty_like(Rm)
    for s in range(nX):
        for a in range(nU):
            _set_bonus(Rb, Rm, Np, b, s, a)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    A = np.empty((1, 1))
    work = np.empty(nX)
    total = 0
    x = x0 if x0 >= 0 else 0
    for _t in range(steps):
        total += guez_policy_iteration_rows(Pm, Rb, succ, nsucc, gamma, tol, V, pi, A, work)
        u = pi[x]
        k = likeliest_slot(Pm, x, u, nsucc[x, u])
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        _set_bonus(Rb, Rm, Np, b, x, u)
        x = succ[x, u, k]
    return total / max(steps, 1)


#: Steps of :func:`probe_sweeps` behind the cost model's estimate.
PROBE_STEPS = 25


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A Guez policy iteration of the bonus model at every step: sweeps over the model's
    support and an nX x nX linear solve per policy-evaluation step — or, on a model too
    large for LU evaluations, the sweeps a warm solve takes (:func:`probe_sweeps`,
    memoised) times the transitions."""
    B = float(prior.support_layout.nnz)
    nX = prior.n_states
    if lu_affordable(nX, int(B)):
        return {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * B,
                "solves": horizon * float(nX) ** 3}
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    lay = prior.support_layout
    beta = float(params["beta"])
    b = float(math.floor(beta)) if params.get("compat") else beta
    s = pure_probe("beb-sweeps", probe_sweeps, np.ascontiguousarray(prior.theta_rows),
                   np.ascontiguousarray(prior.reward_rows), lay.succ, lay.nsucc,
                   int(prior.initial_state), float(gamma), GUEZ_TOLERANCE, b, PROBE_STEPS)
    return {"trajectory": 1.0, "steps": float(horizon), "sweep_backups": horizon * B * s}


ALGORITHM = Algorithm(
    name="beb",
    params=(
        Param("beta", float, required=True, check=non_negative, doc="bonus scale"),
        COMPAT,
    ),
    make_player=make_player,
    has_compat=True,
    doc=__doc__ or "",
    setting_check=_setting_check,
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    reward_priors=REWARD_PRIORS,
)
