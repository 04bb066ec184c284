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

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): row (x, u)'s posterior is
:math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))` over all S next states, so BEB's mean model
gives an observed state :math:`(\alpha + c)/(S\alpha + n)` and every other state
:math:`\alpha/(S\alpha + n)`, as e-Greedy's and Soft-max's (slots plus a per-row
background, :func:`bbrlcore.agents._kernels.rows_model_init_all`; never a dense S×A×S
array), and the bonus :math:`\beta/(1 + n(x,u))` keeps Kolter & Ng's total Dirichlet
count, here :math:`n(x,u) = S\alpha + \text{visits}`, on every transition of the pair,
background ones included (whose reward is otherwise 0 with known rewards, the pair's
mean reward with unknown ones). The model is solved by the **Guez value iteration**
itself, warm-started from the previous step's values (Jacobi sweeps, lowest-index ties,
stopped at a Euclidean change of 1e-4; :func:`bbrlcore.agents._kernels.
guez_value_iteration_all`): a sweep costs the slots plus one background term per pair
(:math:`\sum_y V(y)` once per sweep), where a policy evaluation would need a dense S×S
solve; the answer meets the same stopping test as the policy iteration's above, so a
step plays the greedy action of a model solved to the same tolerance (not bit for bit
the plain path: a prior without the suffix plays as before).

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
    guez_value_iteration_all,
    likeliest_slot,
    rows_model_init,
    rows_model_init_all,
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
    GUEZ_MAX_SWEEPS,
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
def _set_bonus_all(Rb, rbg, Rm, Np, nsucc, b, learn, x, u):
    """:func:`_set_bonus` under a Dirichlet on every next state: also the reward of a
    transition to the row's background (``rbg``): the bonus, plus the pair's mean reward
    when the rewards are learned (0 when known: the prior pays none there)."""
    _set_bonus(Rb, Rm, Np, b, x, u)
    rb = Rm[x, u, 0] if learn and nsucc[x, u] > 0 else 0.0
    rbg[x, u] = rb + b / (1.0 + Np[x, u])


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc, theta,
                Rm, b, tol, rewards, episode_length, rr, a_all=0.0):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    learn = rr[0] != 0.0  # rewards unknown: the reward prior's posterior mean
    emp = empirical_init(nX, nU)
    if learn:
        Rm = Rm.copy()
    x = env_reset(initial_state, nX)
    dir_all = a_all > 0.0  # a Dirichlet on every next state: slots and background
    if dir_all:
        N, Np, Pm = rows_model_init_all(theta, nsucc, nX, a_all)
    else:
        N, Np, Pm = rows_model_init(theta, nsucc)
    Rb = np.empty_like(Rm)
    rbg = np.zeros((nX, nU))
    for s in range(nX):
        for a in range(nU):
            if dir_all:
                _set_bonus_all(Rb, rbg, Rm, Np, nsucc, b, learn, s, a)
            else:
                _set_bonus(Rb, Rm, Np, b, s, a)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    A = (np.empty((nX, nX)) if not dir_all and lu_affordable(nX, n_transitions(nsucc))
         else np.empty((1, 1)))
    work = np.empty(nX)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        if dir_all:
            guez_value_iteration_all(Pm, Rb, succ, nsucc, Np, a_all, rbg, gamma, tol, V, pi,
                                     work, GUEZ_MAX_SWEEPS)
        else:
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
        if dir_all:
            _set_bonus_all(Rb, rbg, Rm, Np, nsucc, b, learn, x, u)
        else:
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
    a_all = float(getattr(prior, "dirichlet_all", None) or 0.0)  # (+dir<α>: α)

    shape, H = (ep.horizon,), int(ep.episode_length)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, ep.horizon)
        r = _trajectory(
            st.env(P), st.R, st.Rstd, int(ep.gaussian), ep.start, ep.gamma, ep.horizon,
            seed, st.succ, st.nsucc, st.theta, Rm, b, GUEZ_TOLERANCE, rewards, H, rr,
            a_all,
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


@njit(cache=True, error_model="numpy")
def probe_sweeps_all(theta, Rm, succ, nsucc, x0, gamma, tol, b, steps, a_all):
    """:func:`probe_sweeps` under a Dirichlet of concentration ``a_all`` on every next
    state (``theta``: α on every slot): the sweeps of the warm Guez value iterations of
    the slots-plus-background mean model (:func:`._kernels.guez_value_iteration_all`)."""
    nX, nU, _ = theta.shape
    N, Np, Pm = rows_model_init_all(theta, nsucc, nX, a_all)
    Rb = np.empty_like(Rm)
    rbg = np.zeros((nX, nU))
    for s in range(nX):
        for a in range(nU):
            _set_bonus_all(Rb, rbg, Rm, Np, nsucc, b, False, s, a)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    work = np.empty(nX)
    total = 0
    x = x0 if x0 >= 0 else 0
    for _t in range(steps):
        total += guez_value_iteration_all(Pm, Rb, succ, nsucc, Np, a_all, rbg, gamma, tol,
                                          V, pi, work, GUEZ_MAX_SWEEPS)
        u = pi[x]
        k = likeliest_slot(Pm, x, u, nsucc[x, u])
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        _set_bonus_all(Rb, rbg, Rm, Np, nsucc, b, False, x, u)
        x = succ[x, u, k]
    return total / max(steps, 1)


#: Steps of :func:`probe_sweeps` behind the cost model's estimate.
PROBE_STEPS = 25


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A Guez policy iteration of the bonus model at every step: sweeps over the model's
    support and an nX x nX linear solve per policy-evaluation step — or, on a model too
    large for LU evaluations, the sweeps a warm solve takes (:func:`probe_sweeps`,
    memoised) times the transitions. Under a Dirichlet on every next state
    (``+dir<α>``): the warm Guez value iterations' sweeps (:func:`probe_sweeps_all`), each
    over the slots and one background term per pair."""
    B = float(prior.support_layout.nnz)
    nX = prior.n_states
    beta = float(params["beta"])
    b = float(math.floor(beta)) if params.get("compat") else beta
    a_all = getattr(prior, "dirichlet_all", None)
    if a_all is not None:
        from bbrlcore.agents._memo import pure_probe
        from bbrlcore.mdp import rows

        lay = rows.union(prior.support_layout, prior.entries)
        theta = np.ascontiguousarray(np.where(lay.mask, float(a_all), 0.0))
        s = pure_probe("beb-sweeps-all", probe_sweeps_all, theta,
                       np.ascontiguousarray(prior.rewards_on(lay)), lay.succ, lay.nsucc,
                       int(prior.initial_state), float(gamma), GUEZ_TOLERANCE, b,
                       PROBE_STEPS, float(a_all))
        B = float(lay.nnz + nX * prior.n_actions)
        return {"trajectory": 1.0, "steps": float(horizon), "sweep_backups": horizon * B * s}
    if lu_affordable(nX, int(B)):
        return {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * B,
                "solves": horizon * float(nX) ** 3}
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    lay = prior.support_layout
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
    dirichlet_all=True,
)
