r"""Soft-max: Boltzmann exploration on the posterior-mean model.

Model and Q-function exactly as e-Greedy: prior counting model,
BBRL Q-iteration after every transition (warm-started). Each decision draws an action
with probability

.. math::  \pi(u \mid x) = \frac{\exp(Q(x,u)/\tau)}{\sum_v \exp(Q(x,v)/\tau)},

computed stably by subtracting :math:`\max_v Q(x,v)` before exponentiating.

``compat=true`` reproduces the original library, whose weights
:math:`w_u = \exp(Q(x,u)/\tau)` are **not normalised**: it draws :math:`f \sim U[0,1]` and
plays the smallest u with :math:`f \le w_0 + \dots + w_u`. With non-negative rewards
:math:`w_0 \ge 1`, so it always plays action 0 (the paper's published Soft-max figures);
when no prefix reaches f (negative Q) it plays the last action. It still
solves its model at every step, as the reference does.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the counts and Q are kept, and it plans with the test set's γ.

Paper: Castronovo et al. 2016, §4.1; Sutton & Barto 1998, §2.3.

**Rewards.** Under a prior that knows the rewards (the paper's protocol) the Q-function
is solved with the prior's reward table. Under a prior whose rewards are unknown
(``+rbeta``, ``+rnig``: :mod:`bbrlcore.mdp.reward_prior`) Soft-max solves it with the
**posterior mean of the rewards**, as it uses the posterior mean of the transitions: on
every transition of (x, u), the mean of the rewards observed after (x, u) with the reward
prior's mean counted as :math:`w_0` observations (NIG :math:`\lambda_0`; Beta
:math:`a_0 + b_0`, fractional counts, no Bernoulli draw), BEB's rule
(:func:`._rewards.mean_reward_update`); before any observation, the prior's mean.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    env_reset,
    env_reward_rows,
    env_step_rows,
    q_iteration_all,
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
    positive,
    reward_buffer,
)
from bbrlcore.agents.egreedy import cost_features as egreedy_cost_features
from bbrlcore.mdp.solvers import q_solve_rows

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def boltzmann_action(q, tau):
    """Draw u with probability exp(q_u/tau)/sum_v exp(q_v/tau) (stable)."""
    n = q.shape[0]
    m = q[0]
    for i in range(1, n):
        if q[i] > m:
            m = q[i]
    w = np.empty(n)
    s = 0.0
    for i in range(n):
        w[i] = math.exp((q[i] - m) / tau)
        s += w[i]
    f = np.random.random() * s
    acc = 0.0
    for i in range(n):
        acc += w[i]
        if f < acc:
            return i
    return n - 1


@njit(cache=True, error_model="numpy")
def compat_action(q, tau):
    """The reference's rule: first u with f <= sum_{v<=u} exp(q_v/tau) (unnormalised)."""
    n = q.shape[0]
    f = np.random.random()
    acc = 0.0
    for i in range(n):
        acc += math.exp(q[i] / tau)
        if f <= acc:
            return i
    return n - 1


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc, theta,
                Rm, tau, compat, rewards, episode_length, rr, a_all=0.0):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    learn = rr[0] != 0.0  # rewards unknown: the reward prior's posterior mean
    emp = empirical_init(nX, nU)
    if learn:
        Rm = Rm.copy()
    x = env_reset(initial_state, nX)
    Q = np.zeros((nX, nU))
    if a_all > 0.0:  # a Dirichlet on every next state: slots and background
        N, Np, Pm = rows_model_init_all(theta, nsucc, nX, a_all)
        q_iteration_all(Pm, Rm, succ, nsucc, Np, a_all, learn, gamma, horizon, Q)
    else:
        N, Np, Pm = rows_model_init(theta, nsucc)
        q_solve_rows(Pm, Rm, succ, nsucc, gamma, horizon, Q)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        if compat:
            u = compat_action(Q[x], tau)
        else:
            u = boltzmann_action(Q[x], tau)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        if learn:
            mean_reward_update(emp, rr, nsucc, Rm, x, u, r)
        if a_all > 0.0:
            q_iteration_all(Pm, Rm, succ, nsucc, Np, a_all, learn, gamma, horizon, Q)
        else:
            q_solve_rows(Pm, Rm, succ, nsucc, gamma, horizon, Q)
        x = succ[x, u, k]
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (learning kept)
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    st = setting(prior, ep)
    tau = float(params["tau"])
    compat = bool(params["compat"])
    Rm, rr = mean_reward_rows(prior, st)  # (unknown rewards: the table unread)
    a_all = float(getattr(prior, "dirichlet_all", None) or 0.0)  # (+dir<α>: α)

    shape, H = (ep.horizon,), int(ep.episode_length)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, ep.horizon)
        r = _trajectory(
            st.env(P), st.R, st.Rstd, int(ep.gaussian), ep.start, ep.gamma, ep.horizon,
            seed, st.succ, st.nsucc, st.theta, Rm, tau, compat, rewards, H, rr, a_all,
        )
        return r, _NO_COUNTERS

    return play


ALGORITHM = Algorithm(
    name="soft-max",
    params=(
        Param("tau", float, required=True, check=positive, doc="temperature"),
        COMPAT,
    ),
    make_player=make_player,
    has_compat=True,
    doc=__doc__ or "",
    cost_features=egreedy_cost_features,  # the same model solved after every step
    sparse=True,
    episodic=True,
    reward_priors=("known", "beta", "nig"),
    dirichlet_all=True,
)
