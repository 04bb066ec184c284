"""FrozenLake: crossing a slippery lake with holes.

The problem
-----------
A ``size`` × ``size`` grid (5 by default) of frozen tiles and holes. Picture the lake from
above: the agent starts in the top-left tile, the goal is the bottom-right tile, and holes
are scattered in between. The agent moves up, right, down or left (actions 0..3, clipped
at the shore), but the ice is slippery: it goes where it meant with probability
``1 − slip`` and to either side (the two perpendicular directions) with ``slip/2`` each
(Colosseum's ``is_slippery``: ``slip`` = 0.5). Stepping into a hole sends it back to the
start. Reaching the goal pays 1; every other transition pays 0 (Colosseum's deterministic
rewards). The challenge is the stochastic motion: a good policy trades a short path
against the risk of sliding into a hole.

Structure drawn per MDP: the holes, as Gym's ``generate_random_map`` (which Colosseum
uses) draws them: every tile but the start and the goal is frozen with probability
``p_frozen`` (0.8), and the lake is drawn again until a path of frozen tiles links the
start to the goal (4-neighbour connectivity; at most 10,000 attempts, then a one-line
error asking for a larger ``p_frozen``).

A fixed lake (``lake`` ≥ 0, a bit per tile, size ≤ 7) makes every drawn MDP's holes the
same: the distribution is then the FDM centred on that lake's kernel (``p_frozen`` plays
no part). Colosseum's benchmark instances are such lakes, the ones its seed draws
(:mod:`~bbrlcore.mdp.families.colosseum_instances`).

Continuing form: from the goal tile every action returns to the start (as Colosseum's
FrozenLake does), so reaching the goal pays 1 on the transition into the goal tile, a
fixed state whatever the holes: the rewards are the same in every drawn MDP. As in
Colosseum, the reward goes with the tile the agent ends on, whatever made it move there:
a slip, a random action (``p_rand``) or, with ``p_lazy``, staying put on the goal tile
instead of returning to the start, which pays 1 again (Colosseum's rule: the goal's
reward for every transition into the goal; until issue #33 bbrl did not pay that lazy
stay, ``CHANGELOG.md``). A hole is never entered (the move leads to the start instead);
its own rows, unreachable, also lead to the start. Each drawn row is a Dirichlet centred
on the controlled kernel (``concentration`` 10).

Where it differs from Colosseum's FrozenLake (``colosseum/mdp/frozen_lake``, read for
this): the lakes are drawn alike (each tile frozen with ``p_frozen``, drawn again until
a path exists; here from the test set's seed), and the moves, slips, holes, ``p_rand``,
``p_lazy`` and rewards are Colosseum's (``tests/test_family_peers.py`` compares every row
and expected reward with a transcription of its code). Only the indices differ (state
``r·size + c``, rows from the top, against its ``lake[X, Y]``), and there are no
stochastic rewards (agents know the mean rewards). Its paper mentions "a small reward
at each time step"; its code's deterministic rewards pay 0, as here.

Accurate prior (Monte-Carlo): the path condition couples the holes, so the mean and spread
of each row are averaged over :data:`~bbrlcore.mdp.families._base.PRIOR_DRAWS` seeded
lakes plus one pseudo-draw uniform on the support (``mc_moments``); :meth:`support` is
every transition some hole pattern allows (each tile but the start and the goal may be a
hole).

Sizes: ``size`` from 2 to 59 (size² states, 4 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``): Colosseum's ``FrozenLakeEpisodic``, every episode from
the start tile. Its natural length is Colosseum's rule for an episodic MDP
(``EpisodicMDP._set_time_horizon``: one plus the largest shortest-path distance from the
start to any state) on a lake without holes, H = 2·``size`` − 1 (the goal is 2·(size − 1)
moves away); Colosseum computes it per drawn lake, which a detour around holes may
lengthen, where one test set has one H.

Reference
---------
M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory and practice",
NeurIPS 2022, App. A.3.5 (Colosseum's FrozenLake), after OpenAI Gym's ``FrozenLake-v1``
(Brockman et al., "OpenAI Gym", arXiv:1606.01540, 2016).

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("frozenlake", size=4).test
>>> t.n_states, t.n_actions, float(t.reward[14, 1, 15])
(16, 4, 1.0)
>>> P = t.draw_mdp(np.random.default_rng(0))
>>> bool(np.allclose(P.sum(axis=2), 1.0)), bool(P[15, :, 0].min() > 0)
(True, True)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.families._base import (
    Family,
    FamilyDistribution,
    Kernel,
    Param,
    Rewards,
    centred,
    concentration_param,
    controlled,
    max_size,
    merged,
    p_lazy_param,
    p_rand_param,
    size_param,
)

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
_DR = np.array([-1, 0, 1, 0])
_DC = np.array([0, 1, 0, -1])
#: Lakes drawn before giving up on finding one with a path.
MAX_LAKE_ATTEMPTS = 10_000


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    s = int(p["size"])
    return s * s, 4


#: Largest ``size`` (size² states, 4 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


def has_path(holes: np.ndarray) -> bool:
    """Whether frozen tiles link the top-left and bottom-right tiles (4-neighbours).

    >>> has_path(np.array([[False, True], [False, False]]))
    True
    >>> has_path(np.array([[False, True], [True, False]]))
    False
    """
    return bool(_has_path(np.ascontiguousarray(holes, dtype=np.bool_)))


@njit(cache=True)
def _has_path(holes):
    """Breadth-first search of the frozen tiles from the top-left one (a Monte-Carlo
    accurate prior draws thousands of lakes: scipy's labelling took most of its time)."""
    rows, cols = holes.shape
    if holes[0, 0] or holes[rows - 1, cols - 1]:
        return False
    seen = np.zeros((rows, cols), dtype=np.bool_)
    queue = np.empty(rows * cols, dtype=np.int64)
    seen[0, 0] = True
    queue[0] = 0
    head, tail = 0, 1
    while head < tail:
        r, c = divmod(queue[head], cols)
        head += 1
        if r == rows - 1 and c == cols - 1:
            return True
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            r2, c2 = r + dr, c + dc
            if 0 <= r2 < rows and 0 <= c2 < cols and not holes[r2, c2] and not seen[r2, c2]:
                seen[r2, c2] = True
                queue[tail] = r2 * cols + c2
                tail += 1
    return False


class FrozenLakeDistribution(FamilyDistribution):
    """FrozenLake with drawn holes (module docstring). State ``r·size + c`` is the tile in
    row ``r`` (0 = top), column ``c``; the structure is the (size, size) boolean array of
    holes."""

    def __init__(self, p: dict[str, Any], short_name: str, name: str) -> None:
        s = self.side = p["size"]
        self.p_frozen, self.slip = p["p_frozen"], p["slip"]
        n = s * s
        self.goal = n - 1
        r, c = np.divmod(np.arange(n), s)
        self._target = (np.clip(r[:, None] + _DR, 0, s - 1) * s
                        + np.clip(c[:, None] + _DC, 0, s - 1))  # (n, 4) per direction
        parts = [(np.arange(self.goal)[:, None], [0, 1, 2, 3], self.goal, 1.0)]
        if p.get("p_lazy", 0.0) > 0:  # staying put on the goal is a transition into it
            parts.append((self.goal, [0, 1, 2, 3], self.goal, 1.0))
        R = Rewards.assign(n, 4, *parts)
        super().__init__("frozenlake", p, short_name, name, n, 4, 0, R)

    def draw_structure(self, rng: np.random.Generator) -> np.ndarray:
        s = self.side
        for _ in range(MAX_LAKE_ATTEMPTS):
            holes = rng.random((s, s)) >= self.p_frozen
            holes[0, 0] = holes[-1, -1] = False
            if has_path(holes):
                return holes
        raise BBRLError(f"family frozenlake: p_frozen={self.p_frozen:g}: no lake of size "
                        f"{s} with a frozen path from start to goal in {MAX_LAKE_ATTEMPTS} "
                        "draws; raise p_frozen")

    def kernel(self, holes: np.ndarray, source_holes: np.ndarray | None = None) -> Kernel:
        """The kernel of a lake; ``source_holes`` (default ``holes``) decides which tiles'
        own rows are holes' (back to the start), ``holes`` which targets are."""
        n = self.side * self.side
        h = np.asarray(holes, dtype=bool).reshape(-1)
        hs = h if source_holes is None else np.asarray(source_holes, dtype=bool).reshape(-1)
        u = np.arange(4)
        dirs = np.stack([u, (u - 1) % 4, (u + 1) % 4], axis=1)  # (4 actions, 3 outcomes)
        tgt = self._target[:, dirs]  # (n, 4, 3)
        succ = np.where(h[tgt], 0, tgt).astype(np.int64)
        prob = np.broadcast_to(np.array([1.0 - self.slip, self.slip / 2, self.slip / 2]),
                               (n, 4, 3)).copy()
        back = hs.copy()
        back[self.goal] = True
        succ[back] = 0
        prob[back] = [1.0, 0.0, 0.0]
        return succ, prob

    def _support_keys(self) -> np.ndarray:
        s = self.side
        none = np.zeros((s, s), dtype=bool)
        every = np.ones((s, s), dtype=bool)
        every[0, 0] = every[-1, -1] = False
        keys = [merged(controlled(self.kernel(target, source), self.p_rand, self.p_lazy),
                       s * s)[0]
                for target, source in ((none, none), (every, none), (none, every))]
        return np.unique(np.concatenate(keys))

    def structures(self) -> Iterator[tuple[float, np.ndarray]]:
        s = self.side
        free = s * s - 2
        if free > 14:
            raise ValueError(f"{self.short_name}: 2^{free} lakes: too many to enumerate")
        out, total = [], 0.0
        for bits in itertools.product((False, True), repeat=free):
            holes = np.array((False, *bits, False)).reshape(s, s)
            if has_path(holes):
                k = int(sum(bits))
                w = (1.0 - self.p_frozen) ** k * self.p_frozen ** (free - k)
                out.append((w, holes))
                total += w
        for w, holes in out:
            yield w / total, holes

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.mc_moments()


#: Largest ``size`` a fixed ``lake`` (a bit per tile) is given for.
MAX_LAKE_SIZE = 7


def lake_holes(size: int, lake: int) -> np.ndarray:
    """The holes of a fixed lake: bit ``r·size + c`` of ``lake`` set for a hole in row
    ``r`` (0 = top), column ``c``.

    >>> lake_holes(3, 0b000010000).astype(int).tolist()
    [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
    """
    n = size * size
    return np.array([(lake >> k) & 1 for k in range(n)], dtype=bool).reshape(size, size)


def lake_of(rows: list[str]) -> int:
    """The ``lake`` parameter of a map written as Gym's and Colosseum's (``"SFFH"`` rows
    from the top, ``H`` a hole).

    >>> lake_of(["SF", "HG"])
    4
    """
    return sum(1 << k for k, ch in enumerate("".join(rows)) if ch == "H")


def check(p: Mapping[str, Any]) -> str | None:
    """A fixed ``lake``: a size up to :data:`MAX_LAKE_SIZE`, bits on the lake's tiles
    only, no hole on the start or the goal, a frozen path between them."""
    lake, s = int(p.get("lake", -1)), int(p["size"])
    if lake < 0:
        return None
    if s > MAX_LAKE_SIZE:
        return f"lake={lake}: a fixed lake is given for size <= {MAX_LAKE_SIZE} only"
    if lake >> (s * s):
        return f"lake={lake}: sets a bit beyond the {s * s} tiles of size {s}"
    holes = lake_holes(s, lake)
    if holes[0, 0] or holes[-1, -1]:
        return f"lake={lake}: the start (bit 0) and the goal (bit {s * s - 1}) are frozen"
    if not has_path(holes):
        return f"lake={lake}: no frozen path links the start to the goal"
    return None


def build(p: dict[str, Any], short_name: str, name: str) -> Any:
    d = FrozenLakeDistribution(p, short_name, name)
    lake = int(p.get("lake", -1))
    if lake < 0:
        return d
    # a fixed lake: one structure, the FDM centred on its controlled kernel
    return centred(p, short_name, name, d.kernel(lake_holes(d.side, lake)), d.rewards, 0)


def episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule on a lake without holes: 1 + the 2·(size − 1) moves to the goal."""
    return 2 * int(p["size"]) - 1


FAMILY = Family(
    name="frozenlake",
    display="FrozenLake",
    long_name="FrozenLake",
    params=(
        size_param(5, 2, MAX_SIZE, "side of the lake (size² states)"),
        Param("p_frozen", float, 0.8, 0.1, 1.0,
              "probability that a tile (not the start or the goal) is frozen, not a hole"),
        Param("slip", float, 0.5, 0.0, 1.0,
              "probability of sliding to one of the two perpendicular directions"),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
        Param("lake", int, -1, -1, 2 ** (MAX_LAKE_SIZE ** 2) - 1,
              "the holes, fixed (the same lake in every drawn MDP): bit r*size + c set for "
              "a hole in row r (0 = top), column c, size <= 7 (Colosseum's instances: the "
              "lake its seed draws); -1: a lake drawn per MDP with p_frozen"),
    ),
    build=build,
    check=check,
    shape=_shape,
    reference="Conserva & Rauber, 'Hardness in Markov decision processes: theory and "
              "practice', NeurIPS 2022 (Colosseum), after Gym's FrozenLake",
    episode_length=episode_length,
)
