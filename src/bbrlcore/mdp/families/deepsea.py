"""DeepSea: deep exploration down an N × N grid.

The problem
-----------
An N × N grid (``size`` N), the agent starting in the top-left cell. Picture a triangle of
reachable cells below the top-left corner: every step the agent descends one row and moves
one column left or right (clipped at the left edge). Moving right costs 0.01/N; moving
right from the bottom-right cell (after N rights in a row) pays 1. The two actions are
mapped to left and right by a **random, fixed mapping drawn per cell** (bsuite:
``mapping ~ Bernoulli(1/2)`` per cell, action == mapping means right), so no single action
always goes right. An agent that dithers reaches the treasure with probability 2^-N; the
small costs push a myopic agent left. Cells with column > row are unreachable but kept.

Continuing form (bbrl plays one trajectory of T steps): bsuite's episode ends after the
N-th move; here the N-th move leads into one of two **surface** states, "surfaced after a
right move" (index N²) or "after a left move" (N² + 1), from which every action returns
to the top-left cell. An episode thus takes N + 1 steps. The surface states keep the
rewards a function of the transition that is the same in every drawn MDP, whatever the
mapping: −0.01/N on every move into the cell (or surface state) a right move leads to,
plus 1 on a right move from the last column (as bsuite; of that column only the
bottom-right cell is reachable, whose right move leads to the right-surface state); 0
elsewhere.
The optimal policy (always right) earns 1 − 0.01 per episode.

Structure drawn per MDP: the action mapping. The nominal dynamics are deterministic;
``p_rand`` (probability of a uniformly random action) makes them stochastic, and each
drawn row is then a Dirichlet centred on it (``concentration`` 10). Colosseum has no
``p_lazy`` for DeepSea (staying put once makes the treasure unreachable), nor has this
family. bsuite's "stochastic" variant (a right move fails with probability 1/N) is not
reproduced; use ``p_rand``. Under ``p_rand`` the reward goes with the move that happened
(−0.01/N whenever the agent moves right, +1 when that move leaves the last column),
whichever action was chosen: with the mapping drawn, the transition is all that says
which way the agent went.

Where it differs from bsuite (``bsuite/environments/deep_sea.py``, read for this): the
grid, the per-cell mapping, the rewards and the N moves of a pass are bsuite's, so a
trajectory of N steps from the top-left cell is exactly one episode of bsuite's
deterministic DeepSea, reward for reward (``tests/test_family_peers.py`` replays random
action sequences against a transcription of its ``_step``). The one difference is the
**surface step**: bsuite's episode ends with the N-th move; here the N-th move enters a
surface state and one more step, paid 0, returns to the top-left cell, so a pass takes
N + 1 steps and a trajectory of T steps holds about T / (N + 1) passes where bsuite's
episodes back to back would hold T / N. It is intended: without the surface states
both moves of the last row would lead to the top-left cell, and whether the N-th move
went right (the treasure, the move cost) would depend on the drawn mapping, not on the
transition, so the rewards could not be the same in every drawn MDP. (An episodic
reading, "one pass down the grid, as bsuite", is the N steps from the top-left cell to a
surface state: horizon N, the surface step outside every episode.) Colosseum's DeepSea
(``colosseum/mdp/deep_sea``) is another problem, available as ``form`` 1 (below).

Colosseum's form (``form`` 1; the default ``form`` 0 is bsuite's, above)
-------------------------------------------------------------------------
Conserva & Rauber's DeepSea as ``colosseum/mdp/deep_sea/base.py`` builds it, state by
state: **no action mapping** (action 0 moves left, action 1 right, in every cell), **no
cost of moving right**, **a left move pays 1/N²** (its deterministic ``sub_optimal``
reward), a right move from the bottom-right cell pays 1, every other move 0, and the
rewards go with the **chosen action** (Colosseum's ``get_reward_distribution(node,
action, next_node)`` with the agent's action, so under ``p_rand`` a chosen left still pays
1/N² wherever the random action led). Its states are the reachable cells only, the
triangle of N(N+1)/2 cells below the top-left one, numbered row by row (row ``r`` from the
top, column ``c`` ≤ ``r``: state ``r(r+1)/2 + c``; Colosseum's node ``(X, Y)`` is column
``X``, row ``N − 1 − Y``); from the last row both actions return to the top-left cell, so
a pass takes N steps and there are no surface states. The structure is fixed, so the test
distribution is an FDM: Dirichlet rows centred on the controlled model (``concentration``
10; with ``p_rand`` 0 every drawn MDP is the nominal one). ``p_lazy`` stays out (Colosseum
refuses it for DeepSea). Its episodic form has Colosseum's length H = N (the N-th action,
from the last row, is the one that pays the treasure). Always going right earns
1 per pass; always going left N/N² = 1/N. Checked against Colosseum's own
``DeepSeaContinuous`` and ``DeepSeaEpisodic`` (deterministic rewards) state by state:
``tests/test_colosseum_fixtures.py``. Named ``DeepSea-10-form1``.

Accurate prior (exact): each cell's rows are right or left with probability 1/2 each, so
the mean row is one half on each target, and the moment-matched total falls to the floor:
Beta(1/2, 1/2) per (cell, action) when ``p_rand`` = 0.

Sizes: ``size`` from 2 to 70 (N² + 2 states, 2 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``, bsuite's protocol): H = ``size`` N, one pass down the
grid from the top-left cell, which is exactly one episode of bsuite's DeepSea (above; the
surface step falls outside every episode). Colosseum's ``DeepSeaEpisodic`` has the same
length (H = size).

Reference
---------
I. Osband, Y. Doron, M. Hessel, J. Aslanides, E. Sezener, A. Saraiva, K. McKinney,
T. Lattimore, C. Szepesvári, S. Singh, B. Van Roy, R. Sutton, D. Silver, H. van Hasselt,
"Behaviour Suite for Reinforcement Learning", ICLR 2020 (arXiv:1908.03568, 2019), §2.2
"Deep sea"; I. Osband, B. Van Roy, D. Russo, Z. Wen, "Deep exploration via randomized value
functions", JMLR 20(124), 2019.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("deepsea", size=3).test
>>> t.n_states, t.n_actions, round(float(t.reward[0, 0, 4] + t.reward[0, 1, 4]), 4)
(11, 2, -0.0067)
>>> P = t.draw_mdp(np.random.default_rng(1))
>>> sorted(int(y) for y in P[0].argmax(axis=1))  # one action to (1, 0), one to (1, 1)
[3, 4]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from bbrlcore.mdp.families._base import (
    Family,
    FamilyDistribution,
    Kernel,
    Moments,
    Param,
    Rewards,
    centred,
    concentration_param,
    controlled,
    max_size,
    merged,
    p_rand_param,
    size_param,
)

#: bsuite's move cost for a right move, divided by N.
MOVE_COST = 0.01


#: ``form``: bsuite's DeepSea (the default), Colosseum's.
BSUITE, COLOSSEUM = 0, 1


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    n = int(p["size"])
    if int(p.get("form", BSUITE)) == COLOSSEUM:
        return n * (n + 1) // 2, 2
    return n * n + 2, 2


#: Largest ``size`` (N² + 2 states, 2 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


class DeepSeaDistribution(FamilyDistribution):
    """DeepSea with a drawn action mapping (module docstring).

    State ``r·N + c`` is the cell in row ``r`` (0 = top), column ``c``; ``N²`` and
    ``N² + 1`` are the surface states after a right and a left move. The structure is the
    (N, N) array ``mapping`` of the action that moves right in each cell.
    """

    def __init__(self, p: dict[str, Any], short_name: str, name: str) -> None:
        N = self.N = p["size"]
        n_cells = N * N
        self.surface_right, self.surface_left = n_cells, n_cells + 1
        r, c = np.divmod(np.arange(n_cells), N)
        last = r == N - 1
        self.right = np.where(last, n_cells, (r + 1) * N + np.minimum(c + 1, N - 1))
        self.left = np.where(last, n_cells + 1, (r + 1) * N + np.maximum(c - 1, 0))
        nX = n_cells + 2
        cells = np.arange(n_cells)
        edge = cells[c == N - 1]  # bsuite pays a right move from any last-column cell
        R = Rewards.assign(nX, 2, (cells[:, None], [0, 1], self.right[:, None], -MOVE_COST / N),
                           (edge[:, None], [0, 1], self.right[edge][:, None],
                            -MOVE_COST / N + 1.0))
        super().__init__("deepsea", p, short_name, name, nX, 2, 0, R)

    def draw_structure(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 2, size=(self.N, self.N))

    def kernel(self, mapping: np.ndarray) -> Kernel:
        nX = self.n_states
        n_cells = self.N * self.N
        m = np.asarray(mapping).reshape(-1)
        succ = np.zeros((nX, 2, 1), dtype=np.int64)
        for u in (0, 1):
            succ[:n_cells, u, 0] = np.where(m == u, self.right, self.left)
        return succ, np.ones((nX, 2, 1))  # the surface states return to cell 0

    def structures(self) -> Iterator[tuple[float, np.ndarray]]:
        n = self.N * self.N
        if n > 16:
            raise ValueError(f"{self.short_name}: 2^{n} mappings: too many to enumerate")
        for bits in itertools.product((0, 1), repeat=n):
            yield 0.5**n, np.array(bits).reshape(self.N, self.N)

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # a cell's rows depend on its own mapping only: right or left with 1/2 each
        acc = Moments(self.n_states, 2)
        for v in (0, 1):
            mapping = np.full((self.N, self.N), v)
            acc.add(controlled(self.kernel(mapping), self.p_rand, self.p_lazy), 0.5)
        return acc.result()


def colosseum_kernel(N: int) -> Kernel:
    """Colosseum's DeepSea kernel on the triangle of N(N+1)/2 reachable cells (state
    ``r(r+1)/2 + c``): action 0 one row down and one column left (clipped at 0), action 1
    one row down and one column right; from the last row every action returns to cell 0.

    >>> succ, _ = colosseum_kernel(3)
    >>> succ[:, :, 0].tolist()
    [[1, 2], [3, 4], [3, 5], [0, 0], [0, 0], [0, 0]]
    """
    rows = np.concatenate([np.full(r + 1, r) for r in range(N)])
    cols = np.concatenate([np.arange(r + 1) for r in range(N)])
    below = (rows + 1) * (rows + 2) // 2
    left = np.where(rows == N - 1, 0, below + np.maximum(cols - 1, 0))
    right = np.where(rows == N - 1, 0, below + cols + 1)
    succ = np.stack([left, right], axis=1)[:, :, None].astype(np.int64)
    return succ, np.ones(succ.shape)


def colosseum_rewards(N: int, p_rand: float) -> Rewards:
    """Colosseum's deterministic DeepSea rewards by the chosen action, on every
    transition the controlled kernel has: 1/N² on each outcome of a left move, 1 on each
    outcome of a right move from the bottom-right cell (the last state)."""
    nX = N * (N + 1) // 2
    key, _ = merged(controlled(colosseum_kernel(N), p_rand, 0.0), nX)
    row = key // nX
    x, u = np.divmod(row, 2)
    v = np.where(u == 0, 1.0 / (N * N), np.where(x == nX - 1, 1.0, 0.0))
    return Rewards.on_keys(nX, 2, key, v)


def build(p: dict[str, Any], short_name: str, name: str) -> Any:
    if p.get("form", BSUITE) == COLOSSEUM:
        N = p["size"]
        return centred(p, short_name, name, colosseum_kernel(N),
                       colosseum_rewards(N, p.get("p_rand", 0.0)), 0)
    return DeepSeaDistribution(p, short_name, name)


def episode_length(p: Mapping[str, Any]) -> int:
    """bsuite's (and Colosseum's) episode: N steps, one pass down the grid."""
    return int(p["size"])


FAMILY = Family(
    name="deepsea",
    display="DeepSea",
    long_name="DeepSea",
    params=(
        size_param(10, 2, MAX_SIZE, "side N of the grid (N² + 2 states; N(N+1)/2 in "
                   "Colosseum's form)"),
        Param("form", int, BSUITE, 0, 1,
              "0: bsuite's DeepSea (per-cell action mapping, right moves cost 0.01/N, "
              "surface states); 1: Colosseum's (no mapping, a left move pays 1/N², the "
              "reachable triangle only)"),
        p_rand_param(),
        concentration_param(),
    ),
    build=build,
    shape=_shape,
    reference="Osband et al., 'Behaviour Suite for Reinforcement Learning', ICLR 2020 "
              "(bsuite, 2019)",
    episode_length=episode_length,
)
