"""Optimal: plays the optimal policy of the true test MDP (the upper reference).

It is not a learning agent: at the start of every trajectory it solves the *actual* test
MDP with the BBRL Q-iteration (tolerance 0.01, at most T+1 sweeps) and then
acts greedily, breaking exact ties at random. The solve is part of the
trajectory's online time. Normalised scores put Optimal at 1.

At an episode's start (an episodic interaction, :attr:`~bbrlcore.agents.base.Episode.episode_length`
H > 0): nothing but the return to the initial state; it keeps the policy it solved at
the interaction's start (the discounted one, with the test set's γ).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import argmax_random_tie, env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents.base import FLOAT64, Algorithm, Episode, Trained, reward_buffer
from bbrlcore.mdp.solvers import q_iteration_rows

_NO_COUNTERS = np.zeros(0, dtype=np.int64)


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


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    R = np.ascontiguousarray(ep.R)
    lay = ep.layout()
    succ, nsucc = lay.succ, lay.nsucc

    # the episode's fields as the closure's own variables (a cheap trajectory: see Random)
    Rstd, gaussian, x0 = ep.Rstd, ep.gaussian, ep.initial_state
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


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """One Q-iteration of the test MDP from zero at reset (about log(tol (1-g)/Rmax) /
    log(g) sweeps, at most T + 1), then a greedy step per decision."""
    g = gamma if gamma < 1.0 else 0.95
    r_max = max(float(test.r_max), 1e-12)
    sweeps = min(horizon + 1, max(1.0, math.log(0.01 * (1 - g) / r_max) / math.log(g)))
    B = float(test.support_layout.nnz)
    return {"trajectory": 1.0, "steps": float(horizon), "backups": sweeps * B}


ALGORITHM = Algorithm(name="optimal", params=(), make_player=make_player, doc=__doc__ or "",
                      cost_features=cost_features, sparse=True, episodic=True)
