"""MiniGrid-Empty: reach the far side of an empty room, turning to move.

The problem
-----------
A ``size`` × ``size`` empty room (5 by default). The agent has a position and a heading
(up, right, down, left) and three actions: move forward one tile (0; blocked by the walls),
turn right (1), turn left (2). Picture the room with the agent as an arrow on one wall's
tiles and the goal tile on the opposite wall: every state is a (tile, heading) pair, four
states per tile, linked in a ring by the turns and to the neighbouring tile's same heading
by the forward move. Entering the goal pays 1, nothing else pays. Coordinating turns and
moves makes the room much harder to cross than SimpleGrid's.

Structure drawn per MDP, as Colosseum does: a side of the room (left, bottom, right, top
wall, uniformly), a start tile uniformly among that side's ``size`` tiles with a uniform
heading, and the goal tile uniformly among the ``size`` tiles of the opposite side.

Continuing form: one extra state, **home** (index 4·size², the initial state), stands for
"between two episodes": a forward move onto the goal tile leads to home instead and pays
1; from home every action leads to the MDP's start (tile and heading). The goal tile itself
is never entered (its rows are ordinary moves). So the reward, 1 on every transition into
home, is the same in every drawn MDP however the start and goal are drawn; each episode
starts with one step from home. Each drawn row is a Dirichlet centred on the controlled
kernel (``concentration`` 10): with ``p_rand`` = ``p_lazy`` = 0 every drawn MDP is
deterministic.

Where it differs from Colosseum's MG-Empty (``colosseum/mdp/minigrid_empty``, read for
this): the room, the moves and turns, and how the start side, start tile, heading and
goal are drawn are Colosseum's (with its default of one start tile,
``n_starting_states`` = 1). The **continuing form** is not. Colosseum's continuing
MG-Empty has no reset: it pays 1 on every transition *into* the goal tile (its reward
is "the next tile is the goal") and the goal tile's own rows are ordinary moves, so once
there the agent turns on the spot, or bumps into the wall, and is paid 1 at every step.
Here the goal leads home and home to the start: the agent is paid once per visit and
must cross the room again. For a start ``d`` actions from the goal (its last one the
forward move onto it), the optimal values are

* here, V*(home) = γ^d / (1 − γ^(d+1)): the reward every d + 1 steps;
* in Colosseum's form, V*(start) = γ^(d−1) / (1 − γ): the reward at every step from the
  d-th on;

d = 9, γ = 0.99: 9.55 against 92.3 (``tests/test_family_peers.py`` computes both, the
second with a transcription of Colosseum's rules). Deliberate, for two reasons. The goal
tile is drawn with each MDP, and bbrl's rewards are one function of (x, u, y) for every
drawn MDP (agents know the rewards and learn the transitions), so the goal's reward
cannot sit on the goal's own states; it sits on the transitions into home, a fixed
state. And the task stays MiniGrid's (reach the goal: its episodes end there), played
again and again, as FrozenLake's goal returns to its start and Taxi's delivery brings a
new passenger; Colosseum's continuing form rewards the first arrival and then staying.
With ``p_rand`` and ``p_lazy`` the reward still goes with the tile reached, as in
Colosseum: a random forward move onto the goal pays, staying put never does (home →
home pays 0). MiniGrid's own ``MiniGrid-Empty`` (Farama) starts in the top-left corner
facing right with the goal in the bottom-right one, and pays 1 − 0.9·(steps / max steps)
when the goal ends the episode; like Colosseum, this family draws the start and the goal
and pays 1.

Accurate prior (exact): a tile-heading row depends only on whether the tile ahead is the
goal (probability 1/(4·size) per side the tile ahead lies on, for a tile of the room's
border), and home's row only on the start (uniform over the 16·size start choices);
these marginals give the mean and spread of every row.

Sizes: ``size`` from 3 to 31 (4·size² + 1 states, 3 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

**Colosseum's form** (``form`` 1): Colosseum's MDP itself, one MDP (every drawn MDP is
it), its goal tile and starts given: ``goal`` (the tile ``r·size + c``) and ``starts``
(the start states ``4·tile + heading``, coded by :func:`starts_code`), such as the ones
Colosseum's seed draws (its benchmark instances,
:mod:`~bbrlcore.mdp.families.colosseum_instances`). There is no home: the 4·size² states
are the (tile, heading) pairs, every transition into the goal tile pays 1 (staying on
it too: turning on it, bumping into a wall from it, a lazy step), every other 0, and
episodes start uniformly from the starts (a starting distribution,
:mod:`~bbrlcore.mdp.environment`). Its episodic natural length is Colosseum's, one
less than form 0's (no step from home).

Episodic form (``episodes: E``): Colosseum's ``MiniGridEmptyEpisodic``, every episode
from home (its first step enters the drawn start). Its natural length is Colosseum's rule
for an episodic MDP (``EpisodicMDP._set_time_horizon``: one plus the largest
shortest-path distance from the start to any state, here over the moves and turns of the
room, the largest over the starts the family draws), plus one for the step from home:
H = 10 for size 3, 14 for 5 (:func:`natural_episode_length`).

Reference
---------
M. Chevalier-Boisvert, L. Willems, S. Pal, "Minimalistic gridworld environment for
OpenAI Gym" (MiniGrid), 2018, https://github.com/Farama-Foundation/Minigrid; as Colosseum's
MG-Empty: M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory and
practice", NeurIPS 2022, App. A.3.4.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("minigrid_empty", size=3).test
>>> t.short_name, t.n_states, t.n_actions, t.initial_state
('MiniGridEmpty-3', 37, 3, 36)
>>> P = t.draw_mdp(np.random.default_rng(0))
>>> bool(((P == 0) | (P == 1)).all())  # deterministic without p_rand and p_lazy
True
>>> c = make("minigrid_empty", size=3, form=1, goal=2, starts=starts_code(3, [24, 13]))
>>> c.short_name, c.test.n_states, c.test.starts[0].tolist(), float(c.test.reward[5, 0, 9])
('MiniGridEmpty-3-form1-goal2-from939', 36, [13, 24], 1.0)
"""

from __future__ import annotations

import functools
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
    p_lazy_param,
    p_rand_param,
    size_param,
)

FORWARD, TURN_RIGHT, TURN_LEFT = 0, 1, 2
#: Headings: up, right, down, left (turning right adds 1).
_DR = np.array([-1, 0, 1, 0])
_DC = np.array([0, 1, 0, -1])
SIDES = ("left", "bottom", "right", "top")


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    s = int(p["size"])
    return 4 * s * s + (0 if int(p.get("form", 0)) == 1 else 1), 3


#: Largest ``size`` (4·size² + 1 states, 3 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 3)


def side_tiles(s: int, side: int) -> np.ndarray:
    """The tiles (indices ``r·s + c``) of one side: 0 left, 1 bottom, 2 right, 3 top."""
    j = np.arange(s)
    if side == 0:
        return j * s
    if side == 1:
        return (s - 1) * s + j
    if side == 2:
        return j * s + s - 1
    return j


class MiniGridEmptyDistribution(FamilyDistribution):
    """MiniGrid-Empty with drawn start and goal (module docstring). State
    ``4·(r·size + c) + h`` is tile (r, c) with heading h; ``4·size²`` is home. The
    structure is ``(start state, goal tile)``."""

    def __init__(self, p: dict[str, Any], short_name: str, name: str) -> None:
        s = self.side = p["size"]
        n_tiles = s * s
        self.home = 4 * n_tiles
        nX = self.home + 1
        tile = np.arange(n_tiles)
        r, c = np.divmod(tile, s)
        ahead = (np.clip(r[:, None] + _DR, 0, s - 1) * s
                 + np.clip(c[:, None] + _DC, 0, s - 1))  # (tile, heading)
        self._ahead = ahead.reshape(-1)  # per tile-heading state
        self._moves = self._ahead != np.repeat(tile, 4)  # forward changes the tile
        h = np.tile(np.arange(4), n_tiles)
        self._base = np.empty((self.home, 3), dtype=np.int64)
        self._base[:, FORWARD] = 4 * self._ahead + h
        self._base[:, TURN_RIGHT] = 4 * np.repeat(tile, 4) + (h + 1) % 4
        self._base[:, TURN_LEFT] = 4 * np.repeat(tile, 4) + (h - 1) % 4
        # P(goal = tile): 1/(4 s) for each side the tile lies on
        self._p_goal = np.zeros(n_tiles)
        for side in range(4):
            self._p_goal[side_tiles(s, side)] += 1.0 / (4 * s)
        R = Rewards.assign(nX, 3, (np.arange(self.home)[:, None], [0, 1, 2], self.home, 1.0))
        super().__init__("minigrid_empty", p, short_name, name, nX, 3, self.home, R)

    def draw_structure(self, rng: np.random.Generator) -> tuple[int, int]:
        s = self.side
        side = int(rng.integers(4))
        start = int(side_tiles(s, side)[rng.integers(s)])
        heading = int(rng.integers(4))
        goal = int(side_tiles(s, (side + 2) % 4)[rng.integers(s)])
        return 4 * start + heading, goal

    def _kernel(self, start: int, goal_here: np.ndarray) -> Kernel:
        """The kernel with home → ``start`` and the forward moves flagged in
        ``goal_here`` (per tile-heading state) leading home."""
        succ = np.empty((self.n_states, 3, 1), dtype=np.int64)
        succ[: self.home, :, 0] = self._base
        succ[: self.home, FORWARD, 0] = np.where(goal_here & self._moves, self.home,
                                                 self._base[:, FORWARD])
        succ[self.home, :, 0] = start
        return succ, np.ones((self.n_states, 3, 1))

    def kernel(self, structure: tuple[int, int]) -> Kernel:
        start, goal = structure
        return self._kernel(start, self._ahead == goal)

    def structures(self) -> Iterator[tuple[float, tuple[int, int]]]:
        s = self.side
        w = 1.0 / (4 * s * 4 * s)
        for side, j, heading, g in itertools.product(range(4), range(s), range(4), range(s)):
            start = int(side_tiles(s, side)[j])
            yield w, (4 * start + heading, int(side_tiles(s, (side + 2) % 4)[g]))

    def _moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.side
        acc = Moments(self.n_states, 3)
        cells = np.arange(self.home)
        q = self._p_goal[self._ahead] * self._moves  # P(the tile ahead is the goal)
        for goal_here, w in ((False, 1.0 - q), (True, q)):
            k = self._kernel(0, np.full(self.home, goal_here))
            k = controlled(k, self.p_rand, self.p_lazy)
            acc.add((k[0][: self.home], k[1][: self.home]), w, cells)
        home = np.array([self.home])
        for side, j, heading in itertools.product(range(4), range(s), range(4)):
            start = 4 * int(side_tiles(s, side)[j]) + heading
            row = (np.full((1, 3, 1), start, dtype=np.int64), np.ones((1, 3, 1)))
            acc.add(controlled(row, self.p_rand, self.p_lazy, home), 1.0 / (16 * s), home)
        return acc.result()


def states_code(n_states: int, states: Any) -> int:
    """One integer for a set of states of ``n_states``: the digits ``state + 1`` of the
    states in increasing order, the first the lowest, in base ``n_states + 1``
    (:func:`starts_code`; MiniGrid-Rooms' ``starts`` too).

    >>> states_code(36, [24, 13]), code_states(36, states_code(36, [24, 13]))
    (939, [13, 24])
    """
    base = int(n_states) + 1
    return sum((int(x) + 1) * base ** k for k, x in enumerate(sorted(int(v) for v in states)))


def code_states(n_states: int, code: int) -> list[int]:
    """The states of a code of :func:`states_code`, digit by digit (each digit − 1, so
    that a digit 0 shows as −1: whether they are valid is :func:`bad_states_code`'s)."""
    base = int(n_states) + 1
    out, code = [], int(code)
    while code > 0:
        code, digit = divmod(code, base)
        out.append(digit - 1)
    return out


def bad_states_code(n_states: int, code: int) -> bool:
    """Whether ``code`` is not a code of :func:`states_code` of at least one state."""
    states = code_states(n_states, code)
    return not states or min(states) < 0 or any(
        b <= a for a, b in itertools.pairwise(states))


def starts_code(size: int, states: Any) -> int:
    """The ``starts`` parameter of the start states ``states`` (distinct, each
    ``4·tile + heading`` < 4·size²): :func:`states_code` over the 4·size² states.

    >>> starts_code(3, [24, 13]), starts_of(3, starts_code(3, [24, 13]))
    (939, [13, 24])
    """
    return states_code(4 * int(size) ** 2, states)


def starts_of(size: int, code: int) -> list[int]:
    """The start states of a ``starts`` code (:func:`starts_code`), increasing."""
    return code_states(4 * int(size) ** 2, code)


#: Largest ``starts`` code (every start state of the largest room).
MAX_STARTS_CODE = (4 * MAX_SIZE ** 2 + 1) ** MAX_SIZE


def check(p: Mapping[str, Any]) -> str | None:
    """What is wrong with a combination of parameters (None: nothing): ``goal`` and
    ``starts`` are Colosseum's form's (``form`` 1), which needs both, a goal tile of the
    room and distinct start states in increasing order (:func:`starts_code`).

    >>> print(check({"size": 3, "form": 0, "goal": 2, "starts": -1}))
    goal=2: the goal and starts are given in form 1 (Colosseum's) only
    >>> print(check({"size": 3, "form": 1, "goal": 2, "starts": 37}))
    starts=37: not a code of distinct start states in [0, 36) (starts_code)
    """
    s, form, goal, code = int(p["size"]), int(p["form"]), int(p["goal"]), int(p["starts"])
    if form == 0:
        for key, v in (("goal", goal), ("starts", code)):
            if v != -1:
                return f"{key}={v}: the goal and starts are given in form 1 (Colosseum's) only"
        return None
    if goal < 0 or code < 0:
        return "form=1 (Colosseum's) needs the goal tile (goal) and the starts (starts)"
    if goal >= s * s:
        return f"goal={goal}: a tile of the room of size {s} is in [0, {s * s})"
    if bad_states_code(4 * s * s, code):
        return (f"starts={code}: not a code of distinct start states in [0, {4 * s * s}) "
                "(starts_code)")
    return None


def colosseum_form(p: dict[str, Any], short_name: str, name: str) -> Any:
    """Colosseum's form (``form`` 1): the FDM of its one MDP, with its starts."""
    from bbrlcore.mdp.environment import with_environment

    s, goal = int(p["size"]), int(p["goal"])
    nX = 4 * s * s
    tile = np.arange(s * s)
    r, c = np.divmod(tile, s)
    ahead = (np.clip(r[:, None] + _DR, 0, s - 1) * s
             + np.clip(c[:, None] + _DC, 0, s - 1)).reshape(-1)
    h = np.tile(np.arange(4), s * s)
    succ = np.empty((nX, 3, 1), dtype=np.int64)
    succ[:, FORWARD, 0] = 4 * ahead + h
    succ[:, TURN_RIGHT, 0] = 4 * np.repeat(tile, 4) + (h + 1) % 4
    succ[:, TURN_LEFT, 0] = 4 * np.repeat(tile, 4) + (h - 1) % 4
    kernel = (succ, np.ones((nX, 3, 1)))
    keys, _ = merged(controlled(kernel, p["p_rand"], p["p_lazy"]), nX)
    # every transition into the goal tile pays 1 (Colosseum: "the next tile is the goal")
    R = Rewards.on_keys(nX, 3, keys, ((keys % nX) // 4 == goal).astype(np.float64))
    starts = np.asarray(starts_of(s, int(p["starts"])), dtype=np.int64)
    test = centred(p, short_name, name, kernel, R, int(starts[0]))
    if starts.size == 1:
        return test
    return with_environment(test, starts=(starts, np.full(starts.size, 1.0 / starts.size)))


def build(p: dict[str, Any], short_name: str, name: str) -> Any:
    if int(p.get("form", 0)) == 1:
        return colosseum_form(p, short_name, name)
    return MiniGridEmptyDistribution(p, short_name, name)


@functools.lru_cache(maxsize=64)
def _largest_eccentricity(s: int) -> int:
    """The largest shortest-path distance from a start the family draws (a tile of a side,
    any heading) to any tile-heading state of the room, by the moves and turns."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    n_tiles = s * s
    tile = np.arange(n_tiles)
    r, c = np.divmod(tile, s)
    ahead = (np.clip(r[:, None] + _DR, 0, s - 1) * s + np.clip(c[:, None] + _DC, 0, s - 1))
    h = np.tile(np.arange(4), n_tiles)
    src = np.repeat(np.arange(4 * n_tiles), 3)
    dst = np.column_stack([4 * ahead.reshape(-1) + h, 4 * np.repeat(tile, 4) + (h + 1) % 4,
                           4 * np.repeat(tile, 4) + (h - 1) % 4]).reshape(-1)
    g = csr_matrix((np.ones(len(src)), (src, dst)), shape=(4 * n_tiles, 4 * n_tiles))
    # the room is symmetric under its rotations: the starts of one side suffice
    starts = (4 * side_tiles(s, 0)[:, None] + np.arange(4)[None, :]).reshape(-1)
    d = shortest_path(g, unweighted=True, indices=starts)
    return int(d[np.isfinite(d)].max())


def natural_episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule, 1 + the largest distance from a start to any state (the largest
    over the starts drawn; Colosseum's possible starts, every tile of the start side with
    every heading, give the same), plus the step from home to the start (form 0 only).

    >>> natural_episode_length({"size": 3}), natural_episode_length({"size": 5})
    (10, 14)
    """
    return _largest_eccentricity(int(p["size"])) + (1 if int(p.get("form", 0)) == 1 else 2)


FAMILY = Family(
    name="minigrid_empty",
    display="MiniGridEmpty",
    long_name="MiniGrid-Empty",
    params=(
        size_param(5, 3, MAX_SIZE, "side of the room (4·size² + 1 states)"),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
        Param("form", int, 0, 0, 1, "0: bbrl's (start and goal drawn per MDP, the goal "
              "leads home); 1: Colosseum's one MDP with the given goal and starts (reward "
              "on every transition into the goal tile, no home)"),
        Param("goal", int, -1, -1, MAX_SIZE ** 2 - 1, "form 1: the goal tile r*size + c "
              "(r = 0 the top row); -1 in form 0"),
        Param("starts", int, -1, -1, float(MAX_STARTS_CODE), "form 1: the start states "
              "4*tile + heading, each episode from one of them uniformly, coded by "
              "minigrid_empty.starts_code; -1 in form 0", short="from"),
    ),
    build=build,
    check=check,
    shape=_shape,
    reference="Chevalier-Boisvert et al., MiniGrid (2018), as Colosseum's MG-Empty "
              "(Conserva & Rauber, NeurIPS 2022)",
    episode_length=natural_episode_length,
)
