"""MiniGrid-Rooms against Colosseum's own MDPs, state by state (issue #42).

``tests/fixtures/colosseum/minigrid_rooms.json`` was made by running Colosseum's code
(``MiniGridRoomsContinuous`` / ``MiniGridRoomsEpisodic``, Python 3.9) with
``tests/fixtures/colosseum/make_minigrid_rooms.py`` (its docstring says how): for each
instance and seed, Colosseum's nodes, transition matrix, expected rewards, starting
nodes, goal, start and goal rooms and episodic H. The test builds bbrl's kernel for the
same structure (starts, goal) and compares. bbrl's form differs from Colosseum's in one
documented place (the module docstring): a forward move onto the goal leads to *home*
(then to a start) instead of onto the goal tile; the comparison maps home back to the
goal tile with the mover's heading, and compares rewards away from the goal tile, where
Colosseum also pays for staying on the goal.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bbrlcore.errors import BBRLError
from bbrlcore.mdp import families as F
from bbrlcore.mdp.families import minigrid_rooms as M

FIXTURE = Path(__file__).parent / "fixtures" / "colosseum" / "minigrid_rooms.json"
DATA = json.loads(FIXTURE.read_text())


def bbrl_of(case: dict) -> tuple[M.MiniGridRoomsDistribution, dict[tuple, int]]:
    kw = case["params"]
    t = F.make("minigrid_rooms", size=kw["room_size"], n_rooms=kw["n_rooms"],
               n_starts=kw["n_starting_states"], p_rand=kw.get("p_rand", 0.0),
               p_lazy=kw.get("p_lazy", 0.0)).test
    index = {tuple(tile): i for i, tile in enumerate(t.tiles)}
    return t, index


@pytest.mark.parametrize("case", DATA["cases"],
                         ids=[f"{c['form']}-{c['params']}-seed{c['seed']}" for c in DATA["cases"]])
def test_transitions_rewards_and_starts_equal_colosseums(case):
    t, index = bbrl_of(case)
    nodes = np.array(case["nodes"])
    state = np.array([4 * index[(x, y)] + d for x, y, d in nodes])  # Colosseum → bbrl
    assert sorted(state.tolist()) == list(range(t.home))  # the same (tile, heading) set
    starts = tuple(sorted(int(4 * index[(x, y)] + d) for x, y, d in case["starts"]))
    goal = index[tuple(case["goal"])]
    assert np.allclose(case["start_probs"], 1.0 / len(starts))
    # the goal and start rooms are the ones the family draws
    assert (tuple(case["start_room"]), tuple(case["goal_room"])) in M.corner_pairs(
        case["params"]["n_rooms"])
    assert goal in set(t._room_tiles[tuple(case["goal_room"])].tolist())
    P = t.nominal((starts, goal))
    # home → each start, 1/n (home stays put with p_lazy)
    lazy = case["params"].get("p_lazy", 0.0)
    for u in range(3):
        assert np.allclose(P[t.home, u, list(starts)], (1 - lazy) / len(starts))
    # bbrl's rows with home mapped back onto the goal tile, heading kept
    n = len(nodes)
    T = np.zeros((n, 3, n))
    for a, b, c, p in case["T"]:
        T[a, b, c] = p
    R = np.array(case["R"])
    col_of = np.empty(t.home, dtype=np.int64)
    col_of[state] = np.arange(n)
    for i in range(n):
        s = state[i]
        row = P[s, :, : t.home].copy()
        row[:, 4 * goal + s % 4] += P[s, :, t.home]
        assert np.allclose(row[:, state], T[i], atol=1e-12), (i, nodes[i])
        if s // 4 != goal:
            assert np.allclose(P[s, :, t.home], R[i], atol=1e-12), (i, nodes[i])
    if case["form"] == "episodic":
        # Colosseum's H: 1 + the largest distance from its possible starting nodes, every
        # (tile, heading) of the start room (not only the n drawn); bbrl's natural length
        # is the largest over every start room, plus the step from home
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path
        g = csr_matrix((np.ones(3 * t.home), (np.repeat(np.arange(t.home), 3),
                                              t._base.reshape(-1))), shape=(t.home,) * 2)
        room = (4 * t._room_tiles[tuple(case["start_room"])][:, None]
                + np.arange(4)).reshape(-1)
        d = shortest_path(g, unweighted=True, indices=room)
        assert int(d[np.isfinite(d)].max()) + 1 == case["H"]
        assert M.natural_episode_length(t.params) >= case["H"] + 1


def test_start_and_goal_rooms_are_colosseums_twelve_pairs():
    """Colosseum draws the rooms with Python's random.randint (inclusive): every ordered
    pair of distinct corners occurs (60 seeds: 11 of the 12 pairs, a pair has probability
    1/12) and no other pair does."""
    seen = {(tuple(s), tuple(g)) for s, g in DATA["rooms"]}
    assert seen <= set(M.corner_pairs(4)) and len(seen) >= 11


def test_drawn_structures_follow_the_exact_prior():
    t = F.make("minigrid_rooms", size=2, n_starts=2).test
    rng = np.random.default_rng(3)
    n = 3000
    mean = np.zeros_like(t.mean_model())
    for _ in range(n):
        mean += t.nominal(t.draw_structure(rng))
    mean /= n
    # each entry a frequency of n draws: within 5 standard errors of the exact mean
    m = t.mean_model()
    se = np.sqrt(np.maximum(m * (1 - m), 1e-12) / n)
    assert (np.abs(mean - m) <= 5 * se + 1e-12).all()


def test_parameters_valid_together():
    with pytest.raises(BBRLError, match=r"^family minigrid_rooms: n_rooms=6: must be a "
                                        r"perfect square >= 4"):
        F.make("minigrid_rooms", n_rooms=6)
    with pytest.raises(BBRLError, match=r"n_starts=17: a room of size 2 has 16"):
        F.make("minigrid_rooms", size=2, n_starts=17)
    with pytest.raises(BBRLError, match=r"size=9, n_rooms=16: 5,281 states"):
        F.make("minigrid_rooms", size=9, n_rooms=16)
    p = F.make("minigrid_rooms", size=3, n_rooms=9, n_starts=1)
    assert p.short_name == "MiniGridRooms-3-rooms9-starts1"
    assert F.from_name(p.short_name)[0].short_name == p.short_name
