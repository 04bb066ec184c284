"""Random: a uniformly random action at every step (the lower reference).

Offline learning does nothing; online, each decision draws an action uniformly from
{0, ..., nU-1}. Normalised scores put Random at 0.

At an episode's start (an episodic interaction, :attr:`~bbrlcore.agents.base.Episode.episode_length`
H > 0): nothing but the return to the initial state.
"""

from __future__ import annotations

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
from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents.base import FLOAT64, Algorithm, Episode, Trained, reward_buffer

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
                rewards, episode_length):
    np.random.seed(seed)
    nX, nU, _ = P.shape
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        u = np.random.randint(0, nU)
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


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    lay = ep.layout()
    succ, nsucc = lay.succ, lay.nsucc
    # the episode's fields as the closure's own variables: a trajectory of Random lasts
    # ≈ 10 µs, and six attribute look-ups and a global one per call were 2-3 % of it
    # (benchmarks/bench_rewards.py random)
    R, Rstd, gaussian, x0 = ep.R, ep.Rstd, int(ep.gaussian), ep.start
    gamma, horizon, H = ep.gamma, ep.horizon, int(ep.episode_length)
    shape, ndarray = (horizon,), np.ndarray

    def rows(P: np.ndarray, seed: int, rewards: np.ndarray) -> tuple[float, np.ndarray]:
        r = _trajectory(P, R, Rstd, gaussian, x0, gamma, horizon, seed, succ, nsucc, rewards,
                        H)
        return r, _NO_COUNTERS

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        return rows(P, seed, rewards)

    play.on_rows = rows  # type: ignore[attr-defined]  # (the runner's rows: no check)

    return play


@njit(cache=True, error_model="numpy")
def _trajectory_ind(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
                    rewards, episode_length, L, tab, refs_s, refs_w, mu0, Hr, opt, worst):
    """:func:`_trajectory` with Colosseum's indicators every ``L`` steps
    (:mod:`._indicators`): the uniform policy never changes, so its evaluation is the
    per-state table ``tab`` (episodic :math:`V^\\pi_0`, continuing gain)."""
    np.random.seed(seed)
    nX, nU, _ = P.shape
    acc, hist = ind_alloc(horizon, L)
    episodic = episode_length > 0
    x = env_reset(initial_state, nX)
    s = x  # the episode's start
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        u = np.random.randint(0, nU)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        x = succ[x, u, k]
        if is_row(t, L):
            row_table(acc, hist, t, horizon, L, False, episodic, tab, s if episodic else x,
                      refs_s, refs_w, mu0, Hr, opt, worst)
        left -= 1
        if left == 0:  # the episode's end: back to the initial state
            left = episode_length
            x = env_reset(initial_state, nX)
            s = x
    row_table(acc, hist, horizon - 1, horizon, final_weight(horizon, L), True, episodic,
              tab, s if episodic else x, refs_s, refs_w, mu0, Hr, opt, worst)
    return ret, acc


def make_indicator_player(prior, params: dict, trained: Trained, ep: Episode,
                          log_every: int):
    """A player that also returns Colosseum's indicators (:mod:`._indicators`):
    ``play(P, seed, rewards) -> (return, counters, values)``; the trajectory is the
    same as :func:`make_player`'s."""
    req = Request(ep, log_every)
    nX, nU = req.nsucc.shape
    uniform = np.full((nX, nU), 1.0 / nU)
    R, Rstd, gaussian, x0 = ep.R, ep.Rstd, int(ep.gaussian), ep.start
    gamma, horizon, H = ep.gamma, ep.horizon, int(ep.episode_length)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        evr = req.evaluator(P)
        if req.episodic:
            tab = evr.episode_values(uniform)
        else:
            tab = gains_of(evr.succ, evr.nsucc, evr.P, evr.rbar, uniform)
        ret, acc = _trajectory_ind(P, R, Rstd, gaussian, x0, gamma, horizon, seed,
                                   req.succ, req.nsucc, rewards, H, req.log_every, tab,
                                   *req.refs(evr))
        return ret, _NO_COUNTERS, finish(acc, evr, rewards, horizon)

    return play


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    return {"trajectory": 1.0, "steps": float(horizon)}


ALGORITHM = Algorithm(name="random", params=(), make_player=make_player, doc=__doc__ or "",
                      cost_features=cost_features, sparse=True, episodic=True,
                      indicator_player=make_indicator_player,
                      reward_priors=("known", "beta", "nig"),  # (it reads no prior)
                      dirichlet_all=True)
