"""Optimal: plays the optimal policy of the true test MDP (the upper reference).

It is not a learning agent: at the start of every trajectory it solves the *actual* test
MDP and then acts greedily, breaking exact ties at random. The solve is part of the
trajectory's online time. Normalised scores put Optimal at 1.

What it is optimal for, ``criterion``:

* ``discounted`` (the default, the paper's; the agent id stays ``optimal``): the policy
  optimal for the discounted return, by the BBRL Q-iteration (tolerance 0.01, at most
  T+1 sweeps; γ = 0.95 for a test set of γ = 1, as the reference does). Stationary.
* ``undiscounted`` (agent id ``optimal__criterion=undiscounted``): the policy optimal for
  the sum of rewards over the horizon T, the ``undiscounted`` score. That policy is
  non-stationary (what is best with 3 steps left is not what is best with 200 left), so
  it is computed exactly by finite-horizon backward induction
  (:func:`bbrlcore.mdp.solvers.finite_horizon_rows`: T sweeps of the transitions at
  reset), and the action at step t maximises the Q-values of the T − t remaining steps.
  Its expected sum of rewards is the largest any policy reaches on that MDP over T steps.
  The discounted Optimal is not the reference of that score: it may settle for a near,
  small reward where the sum over T steps is larger further away, and a learner can
  then beat it in expectation (a normalised score above 1 that is no accident). How
  much it loses depends on the problem: on RiverSwim-6 at γ = 0.95, T = 250, almost
  nothing (10⁻⁴ on average over the test MDPs); on a problem whose large reward lies
  beyond the discount's reach, all of it.

The workflow runs the Optimal of the configuration's ``score`` (an ``optimal`` entry
without ``criterion`` gets it), and the report normalises by the Optimal whose criterion
matches its score (:func:`bbrlcore.analysis.results.reference_agent`).

At an episode's start (an episodic interaction, :attr:`~bbrlcore.agents.base.Episode.episode_length`
H > 0): the return to the initial state; the ``discounted`` Optimal keeps the policy it
solved at the interaction's start (with the test set's γ), the ``undiscounted`` one plays
the H-step optimal policy of each episode (backward induction over the episode's H steps,
solved once: every episode's values are the same).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._indicators import (
    Request,
    final_weight,
    finish,
    gains_of,
    ind_alloc,
    is_row,
    row_table,
)
from bbrlcore.agents._kernels import argmax_random_tie, env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents.base import (
    FLOAT64,
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    reward_buffer,
)
from bbrlcore.mdp.solvers import finite_horizon_q_row, finite_horizon_rows, q_iteration_rows

_NO_COUNTERS = np.zeros(0, dtype=np.int64)

#: What Optimal can be optimal for (``criterion``); the first is the default.
CRITERIA = ("discounted", "undiscounted")


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
                rewards, episode_length):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    x = env_reset(initial_state, nX)
    Q = np.zeros((nX, nU))
    g = gamma if gamma < 1.0 else 0.95  # the reference's uGamma for undiscounted tasks
    q_iteration_rows(P, R, succ, nsucc, g, horizon, Q)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        u = argmax_random_tie(Q[x])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        x = succ[x, u, k]
        left -= 1
        if left == 0:  # the episode's end: back to the initial state
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret


@njit(cache=True, error_model="numpy")
def _trajectory_finite(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ,
                       nsucc, rewards, episode_length):
    """The undiscounted criterion: backward induction over the planning horizon at reset
    (the interaction's T steps; an episode's H in an episodic one), then at each step a
    maximiser (exact ties at random) of the Q-values of the steps left in it."""
    np.random.seed(seed)
    nX, nU, _ = P.shape
    x = env_reset(initial_state, nX)
    plan = episode_length if episode_length > 0 else horizon
    V = np.empty((plan + 1, nX))
    finite_horizon_rows(P, R, succ, nsucc, 1.0, V)
    q = np.empty(nU)
    ret = 0.0
    disc = 1.0
    step = 0  # steps played in the episode (the interaction when continuing)
    for t in range(horizon):
        finite_horizon_q_row(P, R, succ, nsucc, 1.0, V[step + 1], x, q)
        u = argmax_random_tie(q)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        x = succ[x, u, k]
        step += 1
        if step == plan and episode_length > 0:  # the episode's end: back to the start
            step = 0
            x = env_reset(initial_state, nX)
    return ret


@njit(cache=True, error_model="numpy")
def _trajectory_ind(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
                    rewards, episode_length, finite, L, tab, refs_s, refs_w, mu0, Hr, opt,
                    worst):
    """:func:`_trajectory` (``finite`` False) or :func:`_trajectory_finite` with
    Colosseum's indicators every ``L`` steps (:mod:`._indicators`): the policy never
    changes, its evaluation is the per-state table ``tab``; the same draws, so the same
    trajectory."""
    np.random.seed(seed)
    nX, nU, _ = P.shape
    acc, hist = ind_alloc(horizon, L)
    episodic = episode_length > 0
    x = env_reset(initial_state, nX)
    s = x
    if finite:
        plan = episode_length if episode_length > 0 else horizon
        V = np.empty((plan + 1, nX))
        finite_horizon_rows(P, R, succ, nsucc, 1.0, V)
        Q = np.zeros((1, nU))
    else:
        plan = horizon
        V = np.empty((1, nX))
        Q = np.zeros((nX, nU))
        g = gamma if gamma < 1.0 else 0.95  # the reference's uGamma for undiscounted tasks
        q_iteration_rows(P, R, succ, nsucc, g, horizon, Q)
    q = np.empty(nU)
    ret = 0.0
    disc = 1.0
    step = 0
    for t in range(horizon):
        if finite:
            finite_horizon_q_row(P, R, succ, nsucc, 1.0, V[step + 1], x, q)
            u = argmax_random_tie(q)
        else:
            u = argmax_random_tie(Q[x])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        x = succ[x, u, k]
        if is_row(t, L):
            row_table(acc, hist, t, horizon, L, False, episodic, tab, s if episodic else x,
                      refs_s, refs_w, mu0, Hr, opt, worst)
        step += 1
        if episode_length > 0 and step == episode_length:  # back to the initial state
            step = 0
            x = env_reset(initial_state, nX)
            s = x
    row_table(acc, hist, horizon - 1, horizon, final_weight(horizon, L), True, episodic,
              tab, s if episodic else x, refs_s, refs_w, mu0, Hr, opt, worst)
    return ret, acc


def _ties(q: np.ndarray) -> np.ndarray:
    """The uniform distribution over the exact maximisers of each row of ``q`` (the
    player's random tie-breaking, :func:`argmax_random_tie`)."""
    m = q == q.max(axis=-1, keepdims=True)
    return m / m.sum(axis=-1, keepdims=True)


def make_indicator_player(prior, params: dict, trained: Trained, ep: Episode,
                          log_every: int):
    """:func:`make_player`'s player with Colosseum's indicators (:mod:`._indicators`):
    the policy is its greedy one, exact ties uniform. None (unavailable) for the
    ``undiscounted`` criterion of a continuing interaction, whose policy depends on the
    steps left: Colosseum's continuing evaluation needs a stationary one."""
    finite = criterion_of(params) == "undiscounted"
    H = int(ep.episode_length)
    if finite and H <= 0:
        return None
    req = Request(ep, log_every)
    succ, nsucc = req.succ, req.nsucc
    R = np.ascontiguousarray(ep.R)
    Rstd, gaussian, x0 = ep.Rstd, int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    nX, nU = nsucc.shape

    def policy(P: np.ndarray) -> np.ndarray:
        if finite:
            V = np.empty((H + 1, nX))
            finite_horizon_rows(P, R, succ, nsucc, 1.0, V)
            q = np.empty(nU)
            pol = np.empty((H, nX, nU))
            for h in range(H):
                for x in range(nX):
                    finite_horizon_q_row(P, R, succ, nsucc, 1.0, V[h + 1], x, q)
                    pol[h, x] = _ties(q)
            return pol
        Q = np.zeros((nX, nU))
        q_iteration_rows(P, R, succ, nsucc, gamma if gamma < 1.0 else 0.95, horizon, Q)
        return _ties(Q)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        P = np.ascontiguousarray(P, dtype=np.float64)
        evr = req.evaluator(P)
        pol = policy(P)
        tab = (evr.episode_values(pol) if req.episodic
               else gains_of(evr.succ, evr.nsucc, evr.P, evr.rbar, pol))
        ret, acc = _trajectory_ind(P, R, Rstd, gaussian, x0, gamma, horizon, seed, succ,
                                   nsucc, rewards, H, finite, req.log_every, tab,
                                   *req.refs(evr))
        return ret, _NO_COUNTERS, finish(acc, evr, rewards, horizon)

    return play


def criterion_of(params: dict | None) -> str:
    """The criterion of an Optimal configuration's parameters (``discounted`` when absent:
    run tables written before the parameter existed).

    >>> criterion_of({}), criterion_of({"criterion": "undiscounted"})
    ('discounted', 'undiscounted')
    """
    c = (params or {}).get("criterion")
    return CRITERIA[0] if c is None else str(c)


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    R = np.ascontiguousarray(ep.R)
    lay = ep.layout()
    succ, nsucc = lay.succ, lay.nsucc
    kernel = _trajectory_finite if criterion_of(params) == "undiscounted" else _trajectory

    # the episode's fields as the closure's own variables (a cheap trajectory: see Random)
    Rstd, gaussian, x0 = ep.Rstd, int(ep.gaussian), ep.start
    gamma, horizon, H = ep.gamma, ep.horizon, int(ep.episode_length)
    shape, ndarray = (horizon,), np.ndarray

    def rows(P: np.ndarray, seed: int, rewards: np.ndarray) -> tuple[float, np.ndarray]:
        r = kernel(P, R, Rstd, gaussian, x0, gamma, horizon, seed, succ, nsucc, rewards, H)
        return r, _NO_COUNTERS

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        return rows(P, seed, rewards)

    play.on_rows = rows  # type: ignore[attr-defined]  # (the runner's rows: no check)

    return play


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  episode_length: int = 0) -> dict[str, float]:
    """``discounted``: one Q-iteration of the test MDP from zero at reset (about
    log(tol (1-g)/Rmax) / log(g) sweeps, at most T + 1), then a greedy step per decision.
    ``undiscounted``: backward induction over the planning horizon at reset (T + 1 rows
    of values, each a sweep of the B transitions: ``induction_backups``, priced apart
    from the Q-iteration's backups: a sweep per step of the horizon, writing a row of
    values that a long horizon keeps out of the caches, costs more per transition; an
    episodic interaction plans its H steps once), then at each decision one state's
    row of Q-values (``row_steps``: T × B / nX transitions). Both grow with T, which
    the cost model sizes chunks by up to T = 10^8 (``benchmarks/bench_long.py
    --only optimal`` measures them).

    >>> from bbrlcore.mdp import families
    >>> d = families.make("deepsea", size=4).prior("accurate")
    >>> f = cost_features({"criterion": "undiscounted"}, d, d, 0.95, 10**6)
    >>> f["induction_backups"] == (10**6 + 1) * d.support_layout.nnz
    True
    >>> cost_features({"criterion": "undiscounted"}, d, d, 0.95, 10**6, 4)[
    ...     "induction_backups"] == 5 * d.support_layout.nnz
    True
    """
    B = float(test.support_layout.nnz)
    if criterion_of(params) == "undiscounted":
        plan = episode_length if episode_length > 0 else horizon
        return {"trajectory": 1.0, "steps": float(horizon),
                "induction_backups": (plan + 1.0) * B,
                "row_steps": float(horizon) * B / max(int(test.n_states), 1)}
    g = gamma if gamma < 1.0 else 0.95
    r_max = max(float(test.r_max), 1e-12)
    sweeps = min(horizon + 1, max(1.0, math.log(0.01 * (1 - g) / r_max) / math.log(g)))
    return {"trajectory": 1.0, "steps": float(horizon), "backups": sweeps * B}


def _check_criterion(v: str) -> str | None:
    return None if v in CRITERIA else (
        "expected discounted (optimal for the discounted return, the paper's) or "
        "undiscounted (optimal for the sum of rewards over the horizon)")


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if criterion_of(params) != "undiscounted":
        return None
    need = 8.0 * (horizon + 1) * prior.n_states  # (an episodic one needs H + 1 rows only)
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"the values of every remaining step would need {need / 2**30:.1f} GiB "
                f"(limit {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GiB): choose a shorter horizon")
    return None


ALGORITHM = Algorithm(
    name="optimal",
    params=(Param("criterion", str, default=CRITERIA[0], check=_check_criterion,
                  id_omits_default=True,
                  doc="what the policy is optimal for: discounted (the discounted return, "
                      "the paper's) or undiscounted (the sum of rewards over the horizon, "
                      "by backward induction)"),),
    make_player=make_player, doc=__doc__ or "", cost_features=cost_features, sparse=True,
    setting_check=_setting_check, episodic=True,
    indicator_player=make_indicator_player,
    reward_priors=("known", "beta", "nig"),  # (it knows the test MDP, not the prior)
    dirichlet_all=True)
