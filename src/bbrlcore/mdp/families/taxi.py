"""Taxi: pick up passengers and drive them to their destinations.

The problem
-----------
A ``size`` × ``size`` grid (5 by default) with four pick-up/drop-off locations, one per
quadrant. A passenger waits at one location and wants to go to another. The taxi moves
south, north, east or west (actions 0..3; blocked at the border), picks the passenger up
(4; only on the passenger's tile) and drops them off (5; only on the destination tile).
Picture the grid split into four quadrants, a marked tile in each; a state is the taxi's
tile plus the passenger's situation (waiting at location p for destination d, p ≠ d: 12
cases; or on board for destination d: 4 cases), 16 per tile. A successful drop-off pays 1
and, as in Colosseum's continuing Taxi, a new passenger appears at once at another
location than the taxi's, with a new destination (the 9 choices equally likely; the taxi
stays). A pick-up or drop-off that does nothing pays 0; every other step pays a small
0.1 (Colosseum's deterministic rewards).

Rewards are functions of (x, u, y), the same in every drawn MDP whatever the locations:
1 on any transition from "on board" to "waiting" (only a delivery does that), 0 on a
pick-up or drop-off that leaves the state unchanged, 0.1 on every other transition that
can happen. A transition no drawn MDP has (a jump across the grid) pays nothing and is not
stored: of Taxi-5's 960,000 (x, u, y), 2,700 can happen.

Structure drawn per MDP: the four locations, each uniformly among its quadrant's tiles
(rows and columns split in halves, the first half the larger; Colosseum also draws them
per quadrant, with a minimum distance, and adds wall segments: this grid has no inner
walls). The initial state is the taxi in the top-left tile, the passenger waiting at
location 0 (top-left quadrant) for location 1 (top-right). Each drawn row is a Dirichlet
centred on the controlled kernel (``concentration`` 10); deliveries are random (the new
passenger), everything else deterministic without ``p_rand`` and ``p_lazy``.

Where it differs from Colosseum's Taxi (``colosseum/mdp/taxi``, read for this), besides
the walls and locations above: under ``p_rand`` **the reward goes with what happened**,
where Colosseum's goes with the chosen action. Colosseum pays a pick-up or drop-off
that was chosen but not done 0 (a random move played instead included), a delivery only
when the drop-off was the chosen action, and 0.1 for everything else; here a delivery
(on board → waiting) pays 1 whichever action was chosen, a pick-up or drop-off pays 0
only when the state does not change, and a chosen pick-up or drop-off played as a move
pays 0.1. Without ``p_rand`` (with ``p_lazy`` too) the two agree on every transition.
Deliberate: the families pay for the transition that happened wherever the transition
shows it (Chain's slips, DeepSea's moves, FrozenLake, SimpleGrid, MiniGrid), and a
passenger dropped at the destination is delivered, whoever chose to. Dietterich's
original Taxi (a fixed 5 × 5 map with walls, the four locations in fixed corners, −1 a
step, +20 a delivery, −10 a pick-up or drop-off that fails, the episode over at the
delivery) is what Colosseum's Taxi adapts (rewards 0.1, 1 and 0 in [0, 1], drawn
locations, no end); this family follows Colosseum.

**Colosseum's form** (``form`` 1): Colosseum's Taxi itself, one MDP (every drawn MDP is
it): its walls (``length``, ``width``, ``space``, Colosseum's; the free tiles are
:func:`colosseum_tiles`, in Colosseum's coordinates, north Y + 1, east X + 1), its
locations given (``locations``, coded by :func:`locations_code`; Colosseum's seed draws
three in its benchmark instances, :mod:`~bbrlcore.mdp.families.colosseum_instances`),
Colosseum's actions (south, north, east, west, pick-up, drop-off), moves and deliveries
(a new passenger at another location than the taxi's, a new destination, all alike),
and its rewards, which go with the chosen action (0 for a pick-up that picks no one up
or a drop-off that delivers no one, 1 for a delivery by a drop-off, 0.1 for everything
else). Each episode starts from a waiting passenger, every (taxi tile, passenger,
destination) alike. With L locations and T free tiles, state ``L²·tile + L·q + d`` is
the taxi on ``tile`` with the passenger waiting at location q for location d (q ≠ d), or
on board for d (q = d): T·L² states, stored as their transitions only.

Accurate prior (exact): a state's rows depend only on whether the location that matters
there (the waiting passenger's, or the destination when on board) is under the taxi,
probability 1/(tiles of that quadrant) on the quadrant's tiles and 0 elsewhere.

Sizes: ``size`` from 4 to 13 (16·size² states, 6 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``): Colosseum's ``TaxiEpisodic``, every episode from the
initial state (its passenger waiting). Its natural length is Colosseum's own for Taxi
(``EpisodicMDP._set_time_horizon``: ``int(1.5 · size²)``, "the same horizon for every
seed"), H = 37 for size 5.

Reference
---------
T. G. Dietterich, "Hierarchical reinforcement learning with the MAXQ value function
decomposition", Journal of Artificial Intelligence Research 13, 2000, pp. 227-303; as
Colosseum's Taxi: M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory
and practice", NeurIPS 2022, App. A.3.6.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("taxi", size=4).test
>>> t.short_name, t.n_states, t.n_actions, t.initial_state
('Taxi-4', 256, 6, 0)
>>> float(t.reward[12, 5, 3]), float(t.reward[0, 4, 0]), float(t.reward[0, 0, 64])
(1.0, 0.0, 0.1)
>>> t.support_keys().size, float(t.reward[0, 0, 200])  # (a jump: cannot happen)
(1728, 0.0)
>>> c = make("taxi", size=4, form=1, length=1, locations=locations_code(
...     4, [(0, 0), (1, 2), (3, 0)], length=1)).test
>>> c.n_states, c.starts[0].size, float(c.reward[4, 5, 4])  # (on board, not there yet)
(108, 72, 0.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

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

SOUTH, NORTH, EAST, WEST, PICKUP, DROPOFF = range(6)
_DR = np.array([1, -1, 0, 0])
_DC = np.array([0, 0, 1, -1])
#: Waiting passengers: (location, destination), location ≠ destination; status k < 12.
PAIRS = tuple((p, d) for p in range(4) for d in range(4) if p != d)
#: Statuses 12 + d: on board for destination d.
ON_BOARD = 12
N_STATUS = 16
#: After a delivery at location d: the new (location, destination) statuses.
AFTER_DELIVERY = tuple(tuple(k for k, (p, _) in enumerate(PAIRS) if p != d) for d in range(4))
#: Rewards: delivery, a pick-up or drop-off that does nothing, anything else.
DELIVERY, FAILED, STEP = 1.0, 0.0, 0.1


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    s = int(p["size"])
    if int(p.get("form", 0)) == 1:
        n_tiles = len(_walls(p))
        L = len(code_states(n_tiles, int(p["locations"])))
        return n_tiles * L * L, 6
    return N_STATUS * s * s, 6


#: Largest ``size`` (16·size² states, 6 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 4)


def quadrants(s: int) -> tuple[np.ndarray, ...]:
    """The tiles of the four quadrants (top-left, top-right, bottom-left, bottom-right)."""
    halves = np.array_split(np.arange(s), 2)
    return tuple((rows[:, None] * s + cols[None, :]).reshape(-1)
                 for rows in halves for cols in halves)


class TaxiDistribution(FamilyDistribution):
    """Taxi with drawn locations (module docstring). State ``16·(r·size + c) + k`` is the
    taxi on tile (r, c) with passenger status ``k``; the structure is the (size², 4)
    boolean array ``at[tile, q]``: location q is on that tile."""

    def __init__(self, p: dict[str, Any], short_name: str, name: str) -> None:
        s = self.side = p["size"]
        n_tiles = s * s
        nX = N_STATUS * n_tiles
        self.quadrants = quadrants(s)
        tile = np.repeat(np.arange(n_tiles), N_STATUS)
        status = np.tile(np.arange(N_STATUS), n_tiles)
        self._tile, self._status = tile, status
        self._waiting = status < ON_BOARD
        # the location that matters in each state: the passenger's, or the destination
        loc = np.array([pq[0] for pq in PAIRS] + list(range(4)))
        self._relevant = loc[status]
        r, c = np.divmod(tile, s)
        self._moved = (np.clip(r[:, None] + _DR, 0, s - 1) * s
                       + np.clip(c[:, None] + _DC, 0, s - 1)) * N_STATUS + status[:, None]
        dest = np.array([pq[1] for pq in PAIRS] + list(range(4)))[status]
        self._picked = tile * N_STATUS + ON_BOARD + dest
        self._delivered = (tile[:, None] * N_STATUS
                           + np.array(AFTER_DELIVERY)[np.where(self._waiting, 0, dest)])
        self._p_here = np.zeros((n_tiles, 4))  # P(location q is on this tile)
        for q, tiles in enumerate(self.quadrants):
            self._p_here[tiles, q] = 1.0 / len(tiles)
        super().__init__("taxi", p, short_name, name, nX, 6, 0)

    def _rewards(self) -> Rewards:
        """The rewards of the transitions that can happen (module docstring)."""
        keys = self.support_keys()
        row, y = np.divmod(keys, self.n_states)
        x, u = np.divmod(row, 6)
        R = np.full(keys.size, STEP)
        R[~self._waiting[x] & self._waiting[y]] = DELIVERY
        R[((u == PICKUP) | (u == DROPOFF)) & (y == x)] = FAILED
        return Rewards.on_keys(self.n_states, 6, keys, R)

    def draw_structure(self, rng: np.random.Generator) -> np.ndarray:
        at = np.zeros((self.side * self.side, 4), dtype=bool)
        for q, tiles in enumerate(self.quadrants):
            at[tiles[rng.integers(len(tiles))], q] = True
        return at

    def _kernel(self, here: np.ndarray) -> Kernel:
        """The kernel where ``here`` (per state) says whether the location that matters
        is under the taxi."""
        nX = self.n_states
        x = np.arange(nX)
        succ = np.repeat(x[:, None, None], 6, axis=1).repeat(9, axis=2)
        prob = np.zeros((nX, 6, 9))
        prob[:, :, 0] = 1.0
        succ[:, :4, 0] = self._moved
        pick = self._waiting & here
        succ[pick, PICKUP, 0] = self._picked[pick]
        drop = ~self._waiting & here
        succ[drop, DROPOFF, :] = self._delivered[drop]
        prob[drop, DROPOFF, :] = 1.0 / 9.0
        return succ, prob

    def kernel(self, at: np.ndarray) -> Kernel:
        return self._kernel(np.asarray(at)[self._tile, self._relevant])

    def structures(self) -> Iterator[tuple[float, np.ndarray]]:
        w = 1.0 / float(np.prod([len(t) for t in self.quadrants]))
        if w < 1e-4:
            raise ValueError(f"{self.short_name}: too many location choices to enumerate")
        for tiles in itertools.product(*self.quadrants):
            at = np.zeros((self.side * self.side, 4), dtype=bool)
            at[list(tiles), range(4)] = True
            yield w, at

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        acc = Moments(self.n_states, 6)
        q = self._p_here[self._tile, self._relevant]
        for here, w in ((False, 1.0 - q), (True, q)):
            k = self._kernel(np.full(self.n_states, here))
            acc.add(controlled(k, self.p_rand, self.p_lazy), w)
        return acc.result()


def colosseum_tiles(size: int, length: int, width: int, space: int
                    ) -> list[tuple[int, int]]:
    """The tiles (X, Y) a taxi can stand on in Colosseum's Taxi with walls of ``length``,
    ``width`` and ``space`` (its ``_admissible_coordinate``, transcribed: rows of wall
    segments alternating with free rows), in its order (increasing X, then Y): the tile
    indices of Colosseum's form. North is Y + 1, east X + 1.

    >>> colosseum_tiles(4, 1, 1, 1)[:5]
    [(0, 0), (0, 2), (1, 0), (1, 1), (1, 2)]
    """
    rows: list[list[int]] = []
    j = 0
    while len(rows) < size:
        row = [] if j % 2 != 0 else [0] * int((width + space) // 2)
        i = 0
        while len(row) < size:
            row.append(int(i % (1 + space) == 0))
            if row[-1] == 1:
                for _ in range(width - 1):
                    if len(row) == size:
                        break
                    row.append(1)
            i += 1
        for _ in range(length):
            if len(rows) == size:
                break
            rows.append(row)
        if len(rows) < size:
            rows.append([0] * size)
        j += 1
    xs, ys = np.where(np.array([r[:size] for r in rows]) == 0)
    return [(int(x), int(y)) for x, y in zip(xs, ys, strict=True)]


def _walls(p: Mapping[str, Any]) -> list[tuple[int, int]]:
    return colosseum_tiles(int(p["size"]), int(p["length"]), int(p["width"]),
                           int(p["space"]))


def locations_code(size: int, tiles: Any, length: int = 2, width: int = 1,
                   space: int = 1) -> int:
    """The ``locations`` parameter of Colosseum's form: the locations (X, Y) as their
    indices among :func:`colosseum_tiles`, coded by
    :func:`~bbrlcore.mdp.families.minigrid_empty.states_code`.

    >>> locations_code(4, [(0, 0), (1, 2), (3, 0)], length=1)
    1587
    """
    free = colosseum_tiles(size, length, width, space)
    index = {t: i for i, t in enumerate(free)}
    return states_code(len(free), [index[tuple(t)] for t in tiles])


def colosseum_form(p: dict[str, Any], short_name: str, name: str) -> Any:
    """Colosseum's form (``form`` 1): the FDM of its one MDP, with its starts (module
    docstring). State ``L²·tile + k``: the taxi on tile ``tile`` (:func:`colosseum_tiles`),
    ``k = L·q + d`` the passenger waiting at location q for location d (q ≠ d), or on
    board for d (q = d)."""
    from bbrlcore.mdp.environment import with_environment

    free = _walls(p)
    index = {t: i for i, t in enumerate(free)}
    locs = code_states(len(free), int(p["locations"]))
    L, n_tiles = len(locs), len(free)
    nX = n_tiles * L * L
    m = max(1, (L - 1) ** 2)
    x = np.arange(nX)
    tile, k = np.divmod(x, L * L)
    q, d = np.divmod(k, L)
    waiting = q != d
    succ = np.repeat(x[:, None, None], 6, axis=1).repeat(m, axis=2)
    prob = np.zeros((nX, 6, m))
    prob[:, :, 0] = 1.0
    moves = {SOUTH: (0, -1), NORTH: (0, 1), EAST: (1, 0), WEST: (-1, 0)}
    for i, (tx, ty) in enumerate(free):
        for u, (dx, dy) in moves.items():
            j = index.get((tx + dx, ty + dy), i)
            succ[i * L * L:(i + 1) * L * L, u, 0] = j * L * L + k[: L * L]
    at_loc = np.array(locs)[np.where(waiting, q, d)] == tile  # the location that matters
    pick = waiting & at_loc
    succ[pick, PICKUP, 0] = tile[pick] * L * L + d[pick] * (L + 1)
    for xs in np.flatnonzero(~waiting & at_loc):  # a delivery: a new passenger elsewhere
        new = [a * L + b for a in range(L) if a != d[xs] for b in range(L) if b != a]
        succ[xs, DROPOFF, : len(new)] = tile[xs] * L * L + np.array(new)
        prob[xs, DROPOFF, : len(new)] = 1.0 / len(new)
    kernel = (succ, prob)
    keys, _ = merged(controlled(kernel, p["p_rand"], p["p_lazy"]), nX)
    # Colosseum's rewards go with the chosen action (its _get_reward_distribution)
    row, y = np.divmod(keys, nX)
    xk, u = np.divmod(row, 6)
    wx, wy = waiting[xk], waiting[y]
    R = np.full(keys.size, STEP)
    R[(u == PICKUP) & (wy | ~wx)] = FAILED
    R[(u == DROPOFF) & (~wy | wx)] = FAILED
    R[(u == DROPOFF) & ~wx & wy] = DELIVERY
    starts = np.flatnonzero(waiting)
    test = centred(p, short_name, name, kernel, Rewards.on_keys(nX, 6, keys, R),
                   int(starts[0]))
    return with_environment(test, starts=(starts, np.full(starts.size, 1.0 / starts.size)))


def check(p: Mapping[str, Any]) -> str | None:
    """What is wrong with a combination of parameters (None: nothing): ``locations`` and
    the walls are Colosseum's form's (``form`` 1), which needs at least two distinct
    locations on free tiles and its states within ``MAX_ENTRIES``.

    >>> print(check({"size": 4, "form": 1, "locations": -1, "length": 1, "width": 1,
    ...              "space": 1}))
    form=1 (Colosseum's) needs its locations (locations)
    """
    defaults = {"locations": -1, "length": 2, "width": 1, "space": 1}
    if int(p.get("form", 0)) == 0:
        for key, v in defaults.items():
            if int(p.get(key, v)) != v:
                return (f"{key}={p[key]}: the locations and walls are given in form 1 "
                        "(Colosseum's) only")
        return None
    s, code = int(p["size"]), int(p["locations"])
    if code < 0:
        return "form=1 (Colosseum's) needs its locations (locations)"
    if int(p["length"]) >= s or int(p["width"]) >= s:
        return f"length={p['length']}, width={p['width']}: walls must be shorter than size={s}"
    n_tiles = len(_walls(p))
    if bad_states_code(n_tiles, code) or len(code_states(n_tiles, code)) < 2:
        return (f"locations={code}: not a code of at least two distinct tiles in "
                f"[0, {n_tiles}) (locations_code)")
    nX, _ = _shape(p)
    if nX * 6 * nX > MAX_ENTRIES:
        return (f"locations={code}: {nX:,} states x 6 actions = {nX * 6 * nX:,} "
                f"transitions, more than the limit of {MAX_ENTRIES:,}")
    return None


def build(p: dict[str, Any], short_name: str, name: str) -> Any:
    if int(p.get("form", 0)) == 1:
        return colosseum_form(p, short_name, name)
    return TaxiDistribution(p, short_name, name)


def episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's episode length for Taxi: ``int(1.5 · size²)``."""
    return int(1.5 * int(p["size"]) ** 2)


FAMILY = Family(
    name="taxi",
    display="Taxi",
    long_name="Taxi",
    params=(
        size_param(5, 4, MAX_SIZE, "side of the grid (16·size² states)"),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
        Param("form", int, 0, 0, 1, "0: bbrl's (four locations drawn per MDP, no walls); "
              "1: Colosseum's one MDP with its walls and the given locations, its reward "
              "rules, starts on every waiting passenger"),
        Param("locations", int, -1, -1, 1e300, "form 1: the locations, coded by "
              "taxi.locations_code; -1 in form 0", short="locs"),
        Param("length", int, 2, 1, MAX_SIZE, "form 1: Colosseum's wall length"),
        Param("width", int, 1, 1, MAX_SIZE, "form 1: Colosseum's wall width"),
        Param("space", int, 1, 1, MAX_SIZE, "form 1: Colosseum's space between walls"),
    ),
    build=build,
    check=check,
    shape=_shape,
    reference="Dietterich, 'Hierarchical reinforcement learning with the MAXQ value "
              "function decomposition', JAIR 13, 2000; as Colosseum's Taxi "
              "(Conserva & Rauber, NeurIPS 2022)",
    episode_length=episode_length,
)
