r"""e-Greedy: greedy on the posterior-mean model, with probability ε a random action.

The agent keeps the counting model of the original library (counts initialised to the prior's
Dirichlet concentrations θ; :math:`\hat P = N/\sum_y N` is the posterior mean) and the
known reward table R of the prior. At reset and after **every** transition it solves the
model with the BBRL Q-iteration (tolerance 0.01, at most T+1 sweeps; warm-started from
the previous Q, which reaches the same stopping test in far fewer sweeps). Each decision
draws :math:`f \sim U[0,1]`: if :math:`f \le \varepsilon` a uniformly random action,
otherwise the greedy action with exact ties broken at random.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the counts and Q are kept, and it plans with the test set's γ.

Paper: Castronovo et al. 2016, §4.1 ("ε-Greedy"); Sutton & Barto, *Reinforcement
Learning: An Introduction*, 1998, §2.2.

**Rewards.** Under a prior that knows the rewards (the paper's protocol) the Q-function
is solved with the prior's reward table. Under a prior whose rewards are unknown
(``+rbeta``, ``+rnig``: :mod:`bbrlcore.mdp.reward_prior`) e-Greedy solves it with the
**posterior mean of the rewards**, as it uses the posterior mean of the transitions: on
every transition of (x, u), the mean of the rewards observed after (x, u) with the reward
prior's mean counted as :math:`w_0` observations (NIG :math:`\lambda_0`; Beta
:math:`a_0 + b_0`, fractional counts, no Bernoulli draw), BEB's rule
(:func:`._rewards.mean_reward_update`); before any observation, the prior's mean.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    argmax_random_tie,
    env_reset,
    env_reward_rows,
    env_step_rows,
    likeliest_slot,
    q_iteration_all,
    rows_model_init,
    rows_model_init_all,
    rows_model_update,
)
from bbrlcore.agents._layout import setting
from bbrlcore.agents._rewards import empirical_init, mean_reward_rows, mean_reward_update
from bbrlcore.agents.base import (
    FLOAT64,
    Algorithm,
    Episode,
    Param,
    Trained,
    in_unit_interval,
    reward_buffer,
)
from bbrlcore.mdp.solvers import lu_affordable, q_solve_rows

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
                theta, Rm, epsilon, rewards, episode_length, rr, a_all=0.0):
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
        f = np.random.random()
        if f <= epsilon:
            u = np.random.randint(0, nU)
        else:
            u = argmax_random_tie(Q[x])
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
    eps = float(params["epsilon"])
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
            seed, st.succ, st.nsucc, st.theta, Rm, eps, rewards, H, rr, a_all,
        )
        return r, _NO_COUNTERS

    return play


@njit(cache=True, error_model="numpy")
def probe_sweeps(theta, Rm, succ, nsucc, x0, gamma, horizon, steps):
    """Mean sweeps of the Q-iteration's warm solves along ``steps`` steps played in the
    prior's mean model (the greedy action, its most likely successor, the counts updated
    and the model re-solved, as the trajectory does): a deterministic count, the cost
    model's feature on models too large for LU evaluations."""
    nX, nU, _ = theta.shape
    N, Np, Pm = rows_model_init(theta, nsucc)
    Q = np.zeros((nX, nU))
    total = q_solve_rows(Pm, Rm, succ, nsucc, gamma, horizon, Q)
    x = x0 if x0 >= 0 else 0
    for _t in range(steps):
        u = 0
        for a in range(1, nU):
            if Q[x, a] > Q[x, u]:
                u = a
        k = likeliest_slot(Pm, x, u, nsucc[x, u])
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        total += q_solve_rows(Pm, Rm, succ, nsucc, gamma, horizon, Q)
        x = succ[x, u, k]
    return total / (steps + 1)


#: Steps of :func:`probe_sweeps` behind the cost model's estimate.
PROBE_STEPS = 25


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A warm-started Q-iteration of the posterior-mean model after every step: its
    sweeps cost one backup term per support entry of the model; on a model too large
    for LU evaluations, as many sweeps as a warm solve takes (:func:`probe_sweeps`,
    memoised)."""
    lay = prior.support_layout
    B = float(lay.nnz)
    if lu_affordable(prior.n_states, int(B)):
        return {"trajectory": 1.0, "steps": float(horizon), "backups": horizon * B}
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    s = pure_probe("q-sweeps", probe_sweeps, np.ascontiguousarray(prior.theta_rows),
                   np.ascontiguousarray(prior.reward_rows), lay.succ, lay.nsucc,
                   int(prior.initial_state), float(gamma), int(horizon), PROBE_STEPS)
    return {"trajectory": 1.0, "steps": float(horizon), "sweep_backups": horizon * B * s}


ALGORITHM = Algorithm(
    name="e-greedy",
    params=(
        Param("epsilon", float, required=True, check=in_unit_interval,
              doc="probability of a uniformly random action"),
    ),
    make_player=make_player,
    doc=__doc__ or "",
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    reward_priors=("known", "beta", "nig"),
    dirichlet_all=True,
)
