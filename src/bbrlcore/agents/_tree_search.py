"""What the tree-search agents (BAMCP, BFS3) share: the Python side of their trajectory
kernels and the support lists of their counting models on sparse rows.

The kernels take the same leading arguments (the test rewards on the agent's layout,
initial state, γ and T, the layout ``succ, nsucc``, then the prior's concentrations and
rewards on it: :func:`episode_args`), then the search's parameters, the seed and the
array of per-step rewards they fill, and return ``(discounted return, largest number of
nodes a search used, the pool's capacity)``. A player moves each test MDP onto the
agent's layout (:meth:`bbrlcore.agents._layout.Setting.env`, the identity in the usual
case) before calling the kernel.

Both agents walk only the transitions of positive count (their posterior's support), in
increasing successor order: :func:`support_init` lists them per row as **slots** of the
agent's layout (slot ``k`` of row (x, u) is the transition to ``succ[x, u, k]``; the
slots of a row are in increasing successor order, so the sums keep the order they had
on dense rows), and :func:`support_observe` adds a real transition (inserting its slot
the first time a transition outside the prior's support is seen).

Under a prior ``+dir<α>`` (a Dirichlet on every next state) both draw from the urn over
**all** states; the part of its weight outside a row's slots, the row's background, is
drawn by :func:`background_draw` (and :func:`background_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents._layout import Setting, setting
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


def episode_args(prior: Any, episode: Episode) -> tuple[Setting, tuple]:
    """The agent's :class:`~bbrlcore.agents._layout.Setting` and the kernels' leading
    arguments on its layout: ``(R, Rstd, gaussian, initial_state, gamma, T, succ, nsucc,
    theta, reward)`` (the episode's, the layout, then the prior's)."""
    st = setting(prior, episode)
    return st, (
        _writable(st.R),
        _writable(st.Rstd),
        int(episode.gaussian),
        episode.start,
        float(episode.gamma),
        int(episode.horizon),
        st.succ,
        st.nsucc,
        st.theta,
        st.Rm,
    )


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, copied if read-only (a test distribution's frozen rows): the kernels then
    see one array type whatever the layouts, and numba compiles them once."""
    return a if a.flags.writeable else a.copy()


def search_player(kernel: Callable[..., tuple], st: Setting, args: tuple,
                  episode_length: int = 0) -> Player:
    """A player calling ``kernel(st.env(P), *args, seed, rewards, episode_length)`` once
    per trajectory (no counters)."""
    empty = np.zeros(0, dtype=np.int64)
    horizon = int(args[5])
    H = int(episode_length)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, horizon)
        ret, _used, _cap = kernel(_env(st, P), *args, int(seed), rewards, H)
        return float(ret), empty

    return play


def with_stats(kernel: Callable[..., tuple], st: Setting, args: tuple, P: np.ndarray,
               seed: int, episode_length: int = 0) -> tuple[float, int, int]:
    """One trajectory: ``(return, most nodes used by a search, capacity)``."""
    ret, used, cap = kernel(_env(st, P), *args, int(seed), np.empty(int(args[5])),
                            int(episode_length))
    return float(ret), int(used), int(cap)


def _env(st: Setting, P: np.ndarray) -> np.ndarray:
    return st.env(np.ascontiguousarray(P, dtype=np.float64))


# ---------------------------------------------------------------------------------------
# The support of a counting model on sparse rows


@njit(cache=True, error_model="numpy")
def support_init(counts, nsucc):
    """``(N, Np, supp, nsupp)``: the counts (a copy of ``counts``, values on sparse
    rows), their row sums, and per row the slots of positive count in increasing order
    in ``supp[x, u, :nsupp[x, u]]``."""
    nX, nU, K = counts.shape
    N = counts.copy()
    Np = np.zeros((nX, nU))
    supp = np.zeros((nX, nU, K), dtype=np.int64)
    nsupp = np.zeros((nX, nU), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            s = 0.0
            n = 0
            for k in range(nsucc[x, u]):
                c = N[x, u, k]
                s += c
                if c > 0.0:
                    supp[x, u, n] = k
                    n += 1
            Np[x, u] = s
            nsupp[x, u] = n
    return N, Np, supp, nsupp


@njit(cache=True, error_model="numpy")
def support_observe(N, Np, supp, nsupp, x, u, k):
    """Observe the transition in slot ``k`` of row (x, u): ``N += 1``, ``Np += 1``, and
    the slot joins the row's support if its count was 0."""
    if N[x, u, k] == 0.0:
        i = nsupp[x, u]
        while i > 0 and supp[x, u, i - 1] > k:
            supp[x, u, i] = supp[x, u, i - 1]
            i -= 1
        supp[x, u, i] = k
        nsupp[x, u] += 1
    N[x, u, k] += 1.0
    Np[x, u] += 1.0


# ---------------------------------------------------------------------------------------
# The background of a row under a prior +dir<alpha>


@njit(cache=True, error_model="numpy")
def background_state(t, nbg, a_all, row, k):
    """A background state uniformly, for ``t`` uniform in ``[0, nbg·a_all)``: the
    ``j``-th (``j = ⌊t / a_all⌋``, kept in ``[0, nbg)``) of the ``nbg`` states outside
    the row's ``k`` slots, their next states ``row[:k]`` in increasing order.

    >>> import numpy as np
    >>> int(background_state(2.5, 3, 1.0, np.array([0, 2]), 2))  # outside {0, 2}: 1, 3, 4
    4
    """
    j = int(t / a_all)
    if j > nbg - 1:
        j = nbg - 1
    if j < 0:
        j = 0
    y = j
    for i in range(k):
        if row[U(i)] <= y:
            y += 1
        else:
            break
    return y


@njit(cache=True, error_model="numpy")
def background_draw(t, m, nbg, a_all, row, k, p, ball_p, ball_y, nball):
    r"""A draw from the background of pair ``p``'s urn under a prior ``+dir<α>``
    (``a_all`` = α), for ``t`` uniform in :math:`[0, n_{bg}\alpha + m)`: below ``m``,
    one of the ``m`` balls already drawn there from ``p`` (the pairs ``ball_p`` and
    states ``ball_y`` of the first ``nball`` balls, weight 1 each) uniformly; else a
    background state uniformly (:func:`background_state` of ``t - m``). Returns the
    state (-1 if ``p`` has fewer than ``m`` balls, which its callers never let happen).

    >>> import numpy as np
    >>> bp, by = np.array([1, 0, 1]), np.array([5, 6, 7])
    >>> int(background_draw(1.2, 2, 3, 1.0, np.array([0, 2]), 2, 1, bp, by, 3))
    7
    >>> int(background_draw(2.5, 2, 3, 1.0, np.array([0, 2]), 2, 1, bp, by, 3))
    1
    """
    if t < m:
        j = int(t)
        if j > m - 1:
            j = m - 1
        for i in range(nball):
            if ball_p[U(i)] == p:
                if j == 0:
                    return ball_y[U(i)]
                j -= 1
        return -1
    return background_state(t - m, nbg, a_all, row, k)
