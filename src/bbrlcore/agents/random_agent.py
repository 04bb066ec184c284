"""Random: a uniformly random action at every step (the lower reference).

Offline learning does nothing; online, each decision draws an action uniformly from
{0, ..., nU-1}. Normalised scores put Random at 0.

At an episode's start (an episodic interaction, :attr:`~bbrlcore.agents.base.Episode.episode_length`
H > 0): nothing but the return to the initial state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

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


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    return {"trajectory": 1.0, "steps": float(horizon)}


ALGORITHM = Algorithm(name="random", params=(), make_player=make_player, doc=__doc__ or "",
                      cost_features=cost_features, sparse=True, episodic=True,
                      reward_priors=("known", "beta", "nig"))  # (it reads no prior)
