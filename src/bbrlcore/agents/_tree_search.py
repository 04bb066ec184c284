"""The Python side the tree-search agents (BAMCP, BFS3) share: their trajectory kernels
take the same leading arguments (the episode's rewards, initial state, γ and T, then the
prior's concentrations and rewards), then the search's parameters, the seed and the
array of per-step rewards they fill, and return ``(discounted return, largest number of
nodes a search used, the pool's capacity)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bbrlcore.agents.base import FLOAT64, Episode, Player, reward_buffer
from bbrlcore.errors import BBRLError

#: Unsigned array indices: numba then emits no negative-index wraparound.
U = np.uint64

#: Uniforms drawn at once into a kernel's buffer: the searches' hot loops read them from
#: there (the kernel's own xoshiro256** generator, ``_rng``, fills it).
RBUF = 4096


def resolve_depth(params: dict[str, Any], horizon: int | Episode) -> int:
    """``D``, or the horizon (a number, or an :class:`Episode`'s) when it is None."""
    D = params.get("D")
    if D is not None:
        return int(D)
    return int(horizon.horizon if isinstance(horizon, Episode) else horizon)


def depth(params: dict[str, Any], episode: Episode, name: str) -> int:
    """:func:`resolve_depth`, refused below 1."""
    D = resolve_depth(params, episode)
    if D < 1:
        raise BBRLError(f"{name} D: must be >= 1 (got {D})")
    return D


def episode_args(prior: Any, episode: Episode) -> tuple:
    """The kernels' leading arguments: ``(R, Rstd, gaussian, initial_state, gamma, T,
    theta, reward)`` (the episode's, then the prior's)."""
    return (
        np.ascontiguousarray(episode.R, dtype=np.float64),
        np.ascontiguousarray(episode.Rstd, dtype=np.float64),
        bool(episode.gaussian),
        int(episode.initial_state),
        float(episode.gamma),
        int(episode.horizon),
        np.ascontiguousarray(prior.theta, dtype=np.float64),
        np.ascontiguousarray(prior.reward, dtype=np.float64),
    )


def search_player(kernel: Callable[..., tuple], args: tuple) -> Player:
    """A player calling ``kernel(P, *args, seed, rewards)`` once per trajectory (no
    counters)."""
    empty = np.zeros(0, dtype=np.int64)
    horizon = int(args[5])
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, horizon)
        ret, _used, _cap = kernel(np.ascontiguousarray(P, dtype=np.float64), *args, int(seed),
                                  rewards)
        return float(ret), empty

    return play


def with_stats(kernel: Callable[..., tuple], args: tuple, P: np.ndarray,
               seed: int) -> tuple[float, int, int]:
    """One trajectory: ``(return, most nodes used by a search, capacity)``."""
    ret, used, cap = kernel(np.ascontiguousarray(P, dtype=np.float64), *args, int(seed),
                            np.empty(int(args[5])))
    return float(ret), int(used), int(cap)
