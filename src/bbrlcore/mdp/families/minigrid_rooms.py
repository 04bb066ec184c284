"""MiniGrid-Rooms: cross a square of rooms joined by doors, turning to move.

The problem
-----------
``n_rooms`` square rooms (4 by default; a perfect square: 4, 9, 16, ...) of ``size`` ×
``size`` tiles (4 by default), laid out as a ``√n_rooms`` × ``√n_rooms`` square, two
neighbouring rooms separated by a wall one tile thick with a **door** in its middle.
The agent has a position and a heading (up, right, down, left) and MiniGrid's three
actions: move forward one tile (0; blocked by walls), turn right (1), turn left (2).
Every state is a (tile, heading) pair; entering the goal tile pays 1, nothing else pays.
Picture MiniGrid-Empty's room repeated and joined by doors: the agent must find the
doors, which takes far longer to explore than one open room.

Coordinates are Colosseum's (``colosseum/mdp/minigrid_rooms/base.py``, read for this):
room (i, j) holds the tiles ``X = a + (size + 1)·i``, ``Y = b + (size + 1)·j`` for a, b
in [0, size); the doors are the tiles ``(k·(size + 1) − 1, m·(size + 1) + size // 2)``
and ``(m·(size + 1) + size // 2, k·(size + 1) − 1)`` for k in [1, √n_rooms), m in
[0, √n_rooms); up is Y + 1, right X + 1. The tiles are indexed in increasing (Y, X)
order and state ``4·tile + heading``.

Structure drawn per MDP, as Colosseum's code draws it: the start room uniformly among
the four corner rooms, the goal room uniformly among the three other corners (Python's
``random.Random.randint``, whose upper bound is inclusive: each of the 12 ordered pairs
with probability 1/12), the goal tile uniformly in the goal room, and ``n_starts``
distinct start (tile, heading) pairs uniformly in the start room (each episode starts
from one of them, uniformly).

Continuing form, as :mod:`~bbrlcore.mdp.families.minigrid_empty`'s (read its docstring
for why): one extra state, **home** (index 4·tiles, the initial state), stands for
"between two episodes": a forward move onto the goal tile leads home and pays 1; from
home every action leads to one of the MDP's starts, each with probability 1/n_starts.
The goal tile itself is never entered. So the reward, 1 on every transition into home,
is the same in every drawn MDP however the goal is drawn. Each drawn row is a
Dirichlet centred on the controlled kernel (``concentration`` 10): with ``p_rand`` =
``p_lazy`` = 0 every drawn row with one successor stays deterministic; home's row with
``n_starts`` > 1 successors is drawn around 1/n_starts each. Colosseum's own continuing
form pays at every step spent on the goal tile (its reward is "the next tile is the
goal"): as for MiniGrid-Empty, that form needs a reward on the drawn goal's own states,
which a family whose rewards are the same in every drawn MDP cannot hold.

Accurate prior (exact): a tile-heading row depends only on whether the tile ahead is
the goal (probability P(goal room)/size² for a tile of a corner room, 0 elsewhere), and
home's row only on the starts (a start pair of corner room c is among the n_starts
drawn with probability P(start room = c)·n_starts/(4·size²)); these marginals give the
mean and spread of every row.

Sizes: ``size`` from 2 to 15 (with the default 4 rooms; 2 is Colosseum's smallest
room). The states are 4·(n_rooms·size² + 2·r·(r − 1)) + 1; a configuration whose dense
(nX, nU, nX) arrays would exceed ``MAX_ENTRIES`` (50,000,000 transitions, with more
rooms) is refused in one line.

Episodic form (``episodes: E``): Colosseum's ``MiniGridRoomsEpisodic``, every episode
from home (its first step enters a drawn start). Its natural length is Colosseum's rule
(``EpisodicMDP._set_time_horizon``: one plus the largest shortest-path distance from a
possible starting node to any state, over the rooms' moves and turns; for MG-Rooms
Colosseum's possible starting nodes are every (tile, heading) of the start room, not
only the ``n_starts`` drawn), plus one for the step from home. Colosseum's H depends on
the start room drawn (rooms differ when ``size`` is even: the doors sit at
``size // 2``); a test set has one H for all its MDPs, so this is the largest over the
four start rooms (:func:`natural_episode_length`).

**Colosseum's form** (``form`` 1): Colosseum's MDP itself, one MDP (every drawn MDP is
it), its goal tile and starts given: ``goal`` (a tile index of :func:`layout`) and
``starts`` (``n_starts`` start states ``4·tile + heading``, coded by :func:`starts_code`),
such as the ones Colosseum's seed draws (its benchmark instances,
:mod:`~bbrlcore.mdp.families.colosseum_instances`). There is no home: the 4·tiles
states are the (tile, heading) pairs, every transition into the goal tile pays 1
(staying on it too), every other 0, and episodes start uniformly from the starts. Its
episodic natural length is Colosseum's for that MDP: one plus the largest distance from
a (tile, heading) of the rooms holding the starts (Colosseum's possible starting nodes,
its start room's) to any state.

Reference
---------
M. Chevalier-Boisvert, L. Willems, S. Pal, "Minimalistic gridworld environment for
OpenAI Gym" (MiniGrid), 2018, https://github.com/Farama-Foundation/Minigrid; as Colosseum's
MG-Rooms: M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory and
practice", NeurIPS 2022, App. A.3.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("minigrid_rooms", size=2).test
>>> t.short_name, t.n_states, t.n_actions, t.initial_state
('MiniGridRooms-2', 81, 3, 80)
>>> P = t.draw_mdp(np.random.default_rng(0))
>>> bool(((P[:80] == 0) | (P[:80] == 1)).all())  # tile rows deterministic
True
>>> c = make("minigrid_rooms", size=2, form=1, goal=19, starts=starts_code(2, 4, [0, 5]))
>>> c.test.n_states, c.test.starts[0].tolist(), float(c.test.reward[73, 0, 77])
(80, [0, 5], 1.0)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.distributions import MAX_ENTRIES
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
    p_lazy_param,
    p_rand_param,
    size_param,
)
from bbrlcore.mdp.families.minigrid_empty import bad_states_code, code_states, states_code

FORWARD, TURN_RIGHT, TURN_LEFT = 0, 1, 2
#: Headings as Colosseum's ``MiniGridRoomsDirection``: up, right, down, left (turning
#: right adds 1); the (X, Y) move of each.
_DX = np.array([0, 1, 0, -1])
_DY = np.array([1, 0, -1, 0])


def _per_side(n_rooms: int) -> int:
    r = math.isqrt(int(n_rooms))
    if r * r != int(n_rooms) or r < 2:
        raise BBRLError(f"family minigrid_rooms: n_rooms={n_rooms}: must be a perfect "
                        "square >= 4 (4, 9, 16, ...)")
    return r


def _n_tiles(size: int, n_rooms: int) -> int:
    r = math.isqrt(int(n_rooms))
    return r * r * size * size + 2 * r * (r - 1)


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    home = 0 if int(p.get("form", 0)) == 1 else 1
    return 4 * _n_tiles(int(p["size"]), int(p.get("n_rooms", 4))) + home, 3


#: Largest ``size`` with the default 4 rooms.
MAX_SIZE = max_size(lambda n: _shape({"size": n, "n_rooms": 4}), 2)


def room_tiles(size: int, room: tuple[int, int]) -> list[tuple[int, int]]:
    """The (X, Y) tiles of room (i, j), Colosseum's ``get_positions_coords_in_room``.

    >>> room_tiles(2, (1, 0))
    [(3, 0), (3, 1), (4, 0), (4, 1)]
    """
    i, j = room
    return [(a + (size + 1) * i, b + (size + 1) * j) for a in range(size)
            for b in range(size)]


def layout(size: int, n_rooms: int) -> list[tuple[int, int]]:
    """Every tile (X, Y) an agent can stand on (rooms and doors), in increasing (Y, X)
    order: the tile indices.

    >>> len(layout(2, 4)), layout(2, 4)[:3]
    (20, [(0, 0), (1, 0), (3, 0)])
    """
    r = _per_side(n_rooms)
    tiles = [t for room in itertools.product(range(r), range(r))
             for t in room_tiles(size, room)]
    walls = [k * (size + 1) - 1 for k in range(1, r)]
    middles = [m * (size + 1) + size // 2 for m in range(r)]
    doors = [*itertools.product(walls, middles), *itertools.product(middles, walls)]
    return sorted(set(tiles) | set(doors), key=lambda t: (t[1], t[0]))


def corner_pairs(n_rooms: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (start room, goal room) pairs Colosseum's code draws, each with the same
    probability: two distinct corner rooms, in Colosseum's order of the corners
    (``itertools.product((0, r - 1), repeat=2)``).

    >>> len(corner_pairs(4)), corner_pairs(4)[:2]
    (12, [((0, 0), (0, 1)), ((0, 0), (1, 0))])
    """
    r = _per_side(n_rooms)
    corners = list(itertools.product((0, r - 1), repeat=2))
    return [(s, g) for s in corners for g in corners if g != s]


class MiniGridRoomsDistribution(FamilyDistribution):
    """MiniGrid-Rooms with drawn starts and goal (module docstring). State
    ``4·tile + h`` is tile ``layout(...)[tile]`` with heading h; ``4·tiles`` is home.
    The structure is ``(start states (tuple), goal tile)``."""

    def __init__(self, p: dict[str, Any], short_name: str, name: str) -> None:
        s, n_rooms = int(p["size"]), int(p["n_rooms"])
        self.side, self.n_rooms = s, n_rooms
        self.n_starts = int(p["n_starts"])
        self.tiles = layout(s, n_rooms)
        index = {t: i for i, t in enumerate(self.tiles)}
        n_tiles = len(self.tiles)
        self.home = 4 * n_tiles
        nX = self.home + 1
        ahead = np.empty((n_tiles, 4), dtype=np.int64)
        for i, (x, y) in enumerate(self.tiles):
            for h in range(4):
                ahead[i, h] = index.get((x + int(_DX[h]), y + int(_DY[h])), i)
        tile = np.arange(n_tiles)
        self._ahead = ahead.reshape(-1)  # per tile-heading state
        self._moves = self._ahead != np.repeat(tile, 4)
        h = np.tile(np.arange(4), n_tiles)
        self._base = np.empty((self.home, 3), dtype=np.int64)
        self._base[:, FORWARD] = 4 * self._ahead + h
        self._base[:, TURN_RIGHT] = 4 * np.repeat(tile, 4) + (h + 1) % 4
        self._base[:, TURN_LEFT] = 4 * np.repeat(tile, 4) + (h - 1) % 4
        self._pairs = corner_pairs(n_rooms)
        self._room_tiles = {room: np.array([index[t] for t in room_tiles(s, room)])
                            for pair in self._pairs for room in pair}
        # P(goal = tile) and P(start room = room)
        self._p_goal = np.zeros(n_tiles)
        self._p_start_room: dict[tuple[int, int], float] = {}
        for start, goal in self._pairs:
            self._p_goal[self._room_tiles[goal]] += 1.0 / (len(self._pairs) * s * s)
            self._p_start_room[start] = self._p_start_room.get(start, 0.0) + 1.0 / len(self._pairs)
        R = Rewards.assign(nX, 3, (np.arange(self.home)[:, None], [0, 1, 2], self.home, 1.0))
        super().__init__("minigrid_rooms", p, short_name, name, nX, 3, self.home, R)

    def draw_structure(self, rng: np.random.Generator) -> tuple[tuple[int, ...], int]:
        start_room, goal_room = self._pairs[int(rng.integers(len(self._pairs)))]
        goal = int(self._room_tiles[goal_room][rng.integers(self.side ** 2)])
        pairs = (4 * self._room_tiles[start_room][:, None] + np.arange(4)).reshape(-1)
        starts = rng.choice(pairs, size=self.n_starts, replace=False)
        return tuple(sorted(int(v) for v in starts)), goal

    def _kernel(self, starts: tuple[int, ...], goal_here: np.ndarray) -> Kernel:
        """The kernel with home → each of ``starts`` (1/n each) and the forward moves
        flagged in ``goal_here`` (per tile-heading state) leading home."""
        n = len(starts)
        succ = np.empty((self.n_states, 3, n), dtype=np.int64)
        prob = np.zeros((self.n_states, 3, n))
        succ[: self.home, :, :] = self._base[:, :, None]
        succ[: self.home, FORWARD, :] = np.where(goal_here & self._moves, self.home,
                                                 self._base[:, FORWARD])[:, None]
        prob[: self.home, :, 0] = 1.0
        succ[self.home, :, :] = np.asarray(starts, dtype=np.int64)[None, :]
        prob[self.home, :, :] = 1.0 / n
        return succ, prob

    def kernel(self, structure: tuple[tuple[int, ...], int]) -> Kernel:
        starts, goal = structure
        return self._kernel(starts, self._ahead == goal)

    def structures(self) -> Iterator[tuple[float, tuple[tuple[int, ...], int]]]:
        s2 = self.side ** 2
        for start_room, goal_room in self._pairs:
            pairs = (4 * self._room_tiles[start_room][:, None] + np.arange(4)).reshape(-1)
            subsets = list(itertools.combinations(sorted(pairs.tolist()), self.n_starts))
            w = 1.0 / (len(self._pairs) * s2 * len(subsets))
            for goal in self._room_tiles[goal_room]:
                for sub in subsets:
                    yield w, (tuple(sub), int(goal))

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        acc = Moments(self.n_states, 3)
        cells = np.arange(self.home)
        q = self._p_goal[self._ahead] * self._moves  # P(the tile ahead is the goal)
        for goal_here, w in ((False, 1.0 - q), (True, q)):
            k = self._kernel((0,), np.full(self.home, goal_here))
            k = controlled(k, self.p_rand, self.p_lazy)
            acc.add((k[0][: self.home], k[1][: self.home]), w, cells)
        # home: every action alike (p_rand changes nothing); start pair j has weight
        # (1 - p_lazy)/n when drawn, which it is with P(start room)·n/(4 size²)
        n, nU, nX = self.n_starts, 3, self.n_states
        for room, pr in sorted(self._p_start_room.items()):
            pairs = np.sort((4 * self._room_tiles[room][:, None] + np.arange(4)).reshape(-1))
            key = ((self.home * nU + np.arange(nU))[:, None] * nX + pairs).reshape(-1)
            acc.add_flat(key, np.full(key.size, (1.0 - self.p_lazy) / n),
                         pr * n / (4 * self.side ** 2))
        if self.p_lazy > 0:
            key = (self.home * nU + np.arange(nU)) * nX + self.home
            acc.add_flat(key, np.full(nU, self.p_lazy), 1.0)
        return acc.result()


def check(p: Mapping[str, Any]) -> str | None:
    """What is wrong with a combination of parameters (None: nothing): ``n_rooms`` a
    perfect square, ``n_starts`` within the start room's pairs, the states within
    ``MAX_ENTRIES``; :meth:`Family.validate` raises it as one line.

    >>> check({"size": 2, "n_rooms": 6, "n_starts": 1})
    'n_rooms=6: must be a perfect square >= 4 (4, 9, 16, ...)'
    """
    s, n_rooms, n = int(p["size"]), int(p["n_rooms"]), int(p["n_starts"])
    r = math.isqrt(n_rooms)
    if r * r != n_rooms or r < 2:
        return f"n_rooms={n_rooms}: must be a perfect square >= 4 (4, 9, 16, ...)"
    if n > 4 * s * s:
        return f"n_starts={n}: a room of size {s} has {4 * s * s} (tile, heading) pairs"
    nX, _ = _shape(p)
    if nX * 3 * nX > MAX_ENTRIES:
        return (f"size={s}, n_rooms={n_rooms}: {nX:,} states x 3 actions = "
                f"{nX * 3 * nX:,} transitions, more than the limit of {MAX_ENTRIES:,}")
    form, goal, code = int(p.get("form", 0)), int(p.get("goal", -1)), int(p.get("starts", -1))
    if form == 0:
        for key, v in (("goal", goal), ("starts", code)):
            if v != -1:
                return f"{key}={v}: the goal and starts are given in form 1 (Colosseum's) only"
        return None
    n_tiles = _n_tiles(s, n_rooms)
    if goal < 0 or code < 0:
        return "form=1 (Colosseum's) needs the goal tile (goal) and the starts (starts)"
    if goal >= n_tiles:
        return f"goal={goal}: the tiles of size {s}, n_rooms {n_rooms} are [0, {n_tiles})"
    if bad_states_code(4 * n_tiles, code):
        return (f"starts={code}: not a code of distinct start states in [0, {4 * n_tiles}) "
                "(starts_code)")
    k = len(code_states(4 * n_tiles, code))
    if k != n:
        return f"starts={code}: codes {k} start states, not n_starts={n}"
    return None


def starts_code(size: int, n_rooms: int, states: Any) -> int:
    """The ``starts`` parameter of Colosseum's form: the start states ``4·tile +
    heading`` (:func:`layout`'s tiles) coded as
    :func:`~bbrlcore.mdp.families.minigrid_empty.states_code` over the 4·tiles states.

    >>> starts_code(2, 4, [5, 0])
    487
    """
    return states_code(4 * _n_tiles(int(size), int(n_rooms)), states)


def colosseum_form(p: dict[str, Any], short_name: str, name: str) -> Any:
    """Colosseum's form (``form`` 1): the FDM of its one MDP, with its starts."""
    from bbrlcore.mdp.environment import with_environment

    base = _base_moves(int(p["size"]), int(p["n_rooms"]))
    nX, goal = base.shape[0], int(p["goal"])
    kernel = (base[:, :, None].copy(), np.ones((nX, 3, 1)))
    keys, _ = merged(controlled(kernel, p["p_rand"], p["p_lazy"]), nX)
    # every transition into the goal tile pays 1 (Colosseum: "the next tile is the goal")
    R = Rewards.on_keys(nX, 3, keys, ((keys % nX) // 4 == goal).astype(np.float64))
    starts = np.asarray(code_states(nX, int(p["starts"])), dtype=np.int64)
    test = centred(p, short_name, name, kernel, R, int(starts[0]))
    if starts.size == 1:
        return test
    return with_environment(test, starts=(starts, np.full(starts.size, 1.0 / starts.size)))


@functools.lru_cache(maxsize=16)
def _base_moves(size: int, n_rooms: int) -> np.ndarray:
    """(4·tiles, 3): the successor of each (tile, heading) state by each action."""
    d = MiniGridRoomsDistribution(
        {"size": size, "n_rooms": n_rooms, "n_starts": 1, "p_rand": 0.0, "p_lazy": 0.0,
         "concentration": 10.0}, "", "")
    out = d._base.copy()
    out.flags.writeable = False
    return out


def build(p: dict[str, Any], short_name: str, name: str) -> Any:
    if int(p.get("form", 0)) == 1:
        return colosseum_form(p, short_name, name)
    return MiniGridRoomsDistribution(p, short_name, name)


@functools.lru_cache(maxsize=64)
def _largest_eccentricity(size: int, n_rooms: int) -> int:
    """The largest shortest-path distance from a start the family draws (a tile of a
    corner room, any heading) to any tile-heading state, by the moves and turns."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    d = MiniGridRoomsDistribution(
        {"size": size, "n_rooms": n_rooms, "n_starts": 1, "p_rand": 0.0, "p_lazy": 0.0,
         "concentration": 10.0}, "", "")
    n = d.home
    src = np.repeat(np.arange(n), 3)
    g = csr_matrix((np.ones(3 * n), (src, d._base.reshape(-1))), shape=(n, n))
    rooms = sorted(d._p_start_room)
    starts = np.concatenate([(4 * d._room_tiles[r][:, None] + np.arange(4)).reshape(-1)
                             for r in rooms])
    dist = shortest_path(g, unweighted=True, indices=starts)
    return int(dist[np.isfinite(dist)].max())


def natural_episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule, 1 + the largest distance from a start to any state (the largest
    over the starts drawn), plus the step from home to the start; Colosseum's form: from
    the rooms holding its starts, no home.

    >>> natural_episode_length({"size": 2, "n_rooms": 4})
    16
    """
    size, n_rooms = int(p["size"]), int(p.get("n_rooms", 4))
    if int(p.get("form", 0)) == 1:
        n = 4 * _n_tiles(size, n_rooms)
        return _eccentricity_from_rooms(size, n_rooms, tuple(sorted(
            {_room_of(size, layout(size, n_rooms)[x // 4])
             for x in code_states(n, int(p["starts"]))}))) + 1
    return _largest_eccentricity(size, n_rooms) + 2


def _room_of(size: int, tile: tuple[int, int]) -> tuple[int, int]:
    """The room (i, j) of a tile (X, Y) of a room (not a door)."""
    return tile[0] // (size + 1), tile[1] // (size + 1)


@functools.lru_cache(maxsize=64)
def _eccentricity_from_rooms(size: int, n_rooms: int, rooms: tuple) -> int:
    """The largest shortest-path distance from a (tile, heading) of ``rooms`` to any
    (tile, heading) state, by the moves and turns (Colosseum's form)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    base = _base_moves(size, n_rooms)
    n = base.shape[0]
    g = csr_matrix((np.ones(3 * n), (np.repeat(np.arange(n), 3), base.reshape(-1))),
                   shape=(n, n))
    index = {t: i for i, t in enumerate(layout(size, n_rooms))}
    starts = np.array([4 * index[t] + h for r in rooms for t in room_tiles(size, r)
                       for h in range(4)])
    dist = shortest_path(g, unweighted=True, indices=starts)
    return int(dist[np.isfinite(dist)].max())


FAMILY = Family(
    name="minigrid_rooms",
    display="MiniGridRooms",
    long_name="MiniGrid-Rooms",
    params=(
        size_param(4, 2, MAX_SIZE, "side of each room (4·(n_rooms·size² + doors) + 1 "
                   "states)"),
        Param("n_rooms", int, 4, 4, 64, "number of rooms, a perfect square (4, 9, ...)",
              short="rooms"),
        Param("n_starts", int, 2, 1, 64, "number of start (tile, heading) pairs drawn in "
              "the start room (Colosseum's n_starting_states)", short="starts"),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
        Param("form", int, 0, 0, 1, "0: bbrl's (goal and starts drawn per MDP, the goal "
              "leads home); 1: Colosseum's one MDP with the given goal and starts (reward "
              "on every transition into the goal tile, no home)"),
        Param("goal", int, -1, -1, 10 ** 9, "form 1: the goal tile (an index of "
              "minigrid_rooms.layout); -1 in form 0"),
        Param("starts", int, -1, -1, 1e300, "form 1: the n_starts start states "
              "4*tile + heading, each episode from one of them uniformly, coded by "
              "minigrid_rooms.starts_code; -1 in form 0", short="from"),
    ),
    build=build,
    shape=_shape,
    reference="Chevalier-Boisvert et al., MiniGrid (2018), as Colosseum's MG-Rooms "
              "(Conserva & Rauber, NeurIPS 2022)",
    episode_length=natural_episode_length,
    check=check,
)
