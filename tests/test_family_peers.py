"""Where the problem families differ from their peers, and where they do not (issue #33).

Each family names a peer (Colosseum for FrozenLake, MiniGrid-Empty, RiverSwim,
SimpleGrid and Taxi; bsuite for DeepSea). The peers' rules are transcribed here from
their own code (``colosseum/mdp/*/base.py``, ``colosseum/mdp/utils/mdp_creation.py``,
``bsuite/environments/deep_sea.py``), independently of bbrl's kernels, and compared with
what the families build: row by row where they agree, and by hand-computed values where
bbrl differs on purpose (each family's docstring says why).
"""

from __future__ import annotations

import numpy as np
import pytest

from bbrlcore import solvers
from bbrlcore.mdp import families as F


def solve(P: np.ndarray, R: np.ndarray, gamma: float) -> np.ndarray:
    """bbrl's optimal values (policy iteration, exact evaluation)."""
    P, R = np.ascontiguousarray(P), np.ascontiguousarray(R)
    supp, nsupp = solvers.support_of(P)
    n = P.shape[0]
    V, pi = np.zeros(n), np.zeros(n, dtype=np.int64)
    solvers.guez_policy_iteration(P, R, supp, nsupp, gamma, 1e-12, V, pi,
                                  np.empty((n, n)), np.empty(n))
    return V


def value_iteration(T: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Optimal values of T (nX, nU, nX) with expected rewards r (nX, nU), by plain value
    iteration to a fixed point (independent of bbrl's solvers)."""
    V = np.zeros(T.shape[0])
    for _ in range(100_000):
        new = (r + gamma * T @ V).max(axis=1)
        if np.abs(new - V).max() < 1e-13:
            return new
        V = new
    raise AssertionError("value iteration did not converge")


def colosseum_controls(next_nodes, x: int, u: int, n_actions: int, n_states: int,
                       reward, p_rand: float, p_lazy: float):
    """Colosseum's ``_instantiate_individual_transition`` (mdp_creation.py) and the
    expected reward of ``get_transition_matrix_and_rewards``: the row T[x, u] and
    R[x, u], where the reward of every outcome is ``reward(x, u, y)`` with ``u`` the
    chosen action (p_rand's other actions included)."""
    row, r = np.zeros(n_states), 0.0
    p1_lazy = 1.0 - p_lazy
    for y, p in next_nodes(x, u):
        p = p1_lazy * p
        p = (1 - p_rand) * p + p * p_rand / n_actions
        row[y] += p
        r += p * reward(x, u, y)
    if p_lazy:
        row[x] += p_lazy
        r += p_lazy * reward(x, u, x)
    if p_rand:
        for a in range(n_actions):
            if a != u:
                for y, p in next_nodes(x, a):
                    p = p1_lazy * p_rand * p / n_actions
                    row[y] += p
                    r += p * reward(x, u, y)
    assert np.isclose(row.sum(), 1.0)
    return row, r


# ---------------------------------------------------------------------------------------
# FrozenLake: Colosseum's, rewards included (the lazy stay on the goal pays: fixed)

LAKE = ["S.H.", "....", ".H..", "H..G"]


def colosseum_frozenlake(holes: np.ndarray, slip: float, p_rand: float, p_lazy: float):
    """Colosseum's FrozenLake (frozen_lake/base.py) in bbrl's indices: actions up,
    right, down, left; intended move with 1 - slip, each perpendicular ((a ± 1) mod 4)
    with slip/2; a move into a hole leads to the start; every action on the goal leads to
    the start; the reward is 1 when the next tile is the goal."""
    s = holes.shape[0]
    n, goal = s * s, s * s - 1
    dr, dc = [-1, 0, 1, 0], [0, 1, 0, -1]

    def target(x, a):
        if x == goal:
            return 0
        r, c = divmod(x, s)
        r2, c2 = min(max(r + dr[a], 0), s - 1), min(max(c + dc[a], 0), s - 1)
        return 0 if holes[r2, c2] else r2 * s + c2

    def next_nodes(x, a):
        out = [(target(x, a), 1.0 - slip)]
        if slip:
            out += [(target(x, (a - 1) % 4), slip / 2), (target(x, (a + 1) % 4), slip / 2)]
        return out

    T, R = np.zeros((n, 4, n)), np.zeros((n, 4))
    for x in range(n):
        for u in range(4):
            T[x, u], R[x, u] = colosseum_controls(
                next_nodes, x, u, 4, n, lambda x, u, y: float(y == goal), p_rand, p_lazy)
    return T, R


@pytest.mark.parametrize(("slip", "p_rand", "p_lazy"), [
    (0.5, 0.0, 0.0), (0.5, 0.1, 0.0), (0.5, 0.0, 0.2), (0.5, 0.15, 0.25), (0.0, 0.3, 0.1),
])
def test_frozenlake_is_colosseums_row_by_row(slip, p_rand, p_lazy):
    """Every row of the nominal MDP and every expected reward equal Colosseum's, p_rand
    and p_lazy included (issue #33: with p_lazy, Colosseum pays the stay on the goal
    tile, bbrl paid 0 there)."""
    holes = np.array([[ch == "H" for ch in row] for row in LAKE])
    t = F.make("frozenlake", size=4, slip=slip, p_rand=p_rand, p_lazy=p_lazy).test
    P = t.nominal(holes)
    T, R = colosseum_frozenlake(holes, slip, p_rand, p_lazy)
    frozen = ~holes.reshape(-1)  # (Colosseum has no rows for holes: never entered)
    assert np.allclose(P[frozen], T[frozen], rtol=0, atol=1e-14)
    ours = np.einsum("xuy,xuy->xu", P, t.reward)
    assert np.allclose(ours[frozen], R[frozen], rtol=0, atol=1e-14)
    goal = 15
    assert ours[goal] == pytest.approx([p_lazy] * 4, abs=1e-15)
    g = 0.9
    assert solve(P, t.reward, g)[frozen] == pytest.approx(value_iteration(T, R, g)[frozen],
                                                          rel=1e-9)


def test_frozenlake_lazy_goal_by_hand():
    """2 x 2 lake, slip 0, p_lazy l: from the goal, stay (paid 1 again) with l or go back
    to the start; V_goal = l (1 + γ V_goal) + (1 - l) γ V_0, V_0 = γ ... (right, then down
    into the goal, each move held back with l)."""
    g, lazy = 0.9, 0.3
    t = F.make("frozenlake", size=2, slip=0.0, p_lazy=lazy).test
    V = solve(t.nominal(np.zeros((2, 2), dtype=bool)), t.reward, g)
    # V1 = (1 - l)(1 + γ V3) + l γ V1 (down into the goal), V0 = (1 - l) γ V1 + l γ V0,
    # V3 = l (1 + γ V3) + (1 - l) γ V0: a linear system in V0, V1, V3
    A = np.array([[1 - lazy * g, -(1 - lazy) * g, 0],
                  [0, 1 - lazy * g, -(1 - lazy) * g],
                  [-(1 - lazy) * g, 0, 1 - lazy * g]])
    V0, V1, V3 = np.linalg.solve(A, [0, 1 - lazy, lazy])
    assert V[[0, 1, 3]] == pytest.approx([V0, V1, V3], rel=1e-10)
    assert t.reward[3, :, 3].tolist() == [1.0] * 4
    assert not F.make("frozenlake", size=2).test.reward[3].any()  # (no p_lazy: no stay)


# ---------------------------------------------------------------------------------------
# RiverSwim: rewards by the chosen action, at both banks (fixed at the left bank)


@pytest.mark.parametrize(("p_rand", "p_lazy"), [(0.0, 0.0), (0.3, 0.0), (0.0, 0.2), (0.3, 0.2)])
def test_riverswim_pays_the_chosen_action_as_colosseum(p_rand, p_lazy):
    """Colosseum's rule (river_swim/base.py): 0.005 for left at the left bank, 1 for
    right at the right bank, whatever the outcome. The expected reward of every
    state-action pair is that (issue #33: with p_rand a left at the left bank played as a
    right and carried to state 1 was paid 0)."""
    n = 5
    t = F.make("riverswim", size=n, p_rand=p_rand, p_lazy=p_lazy).test
    ours = np.einsum("xuy,xuy->xu", t.mean_model(), t.reward)
    expected = np.zeros((n, 2))
    expected[0, 0], expected[n - 1, 1] = 0.005, 1.0
    assert np.allclose(ours, expected, rtol=0, atol=1e-15)
    support = t.mean_model() > 0
    assert not (t.reward.astype(bool) & ~support)[0].any()  # (nothing stored beyond it)


# ---------------------------------------------------------------------------------------
# MiniGrid-Empty: the continuing form differs on purpose (V* by hand, both readings)


def colosseum_minigrid(s: int, goal: int, gamma: float) -> np.ndarray:
    """Colosseum's continuing MG-Empty (minigrid_empty/base.py): states (tile, heading),
    forward moves (clipped), turns right and left; the reward is 1 when the next tile is
    the goal, whose own rows are ordinary moves (no reset). Its optimal values."""
    dr, dc = [-1, 0, 1, 0], [0, 1, 0, -1]
    n = 4 * s * s
    T, R = np.zeros((n, 3, n)), np.zeros((n, 3))
    for tile in range(s * s):
        r, c = divmod(tile, s)
        for h in range(4):
            x = 4 * tile + h
            ahead = min(max(r + dr[h], 0), s - 1) * s + min(max(c + dc[h], 0), s - 1)
            for u, y in enumerate((4 * ahead + h, 4 * tile + (h + 1) % 4,
                                   4 * tile + (h - 1) % 4)):
                T[x, u, y] = 1.0
                R[x, u] = float(y // 4 == goal)
    return value_iteration(T, R, gamma)


def test_minigrid_continuing_forms_by_hand():
    """Start on the top-left tile facing right, goal on the bottom-right tile: d = 9
    actions (4 forward, turn right, 4 forward, the last onto the goal). Here the goal
    leads home and home to the start: V*(home) = γ^d / (1 - γ^(d+1)); Colosseum's goal
    pays at every step once reached: V*(start) = γ^(d-1) / (1 - γ). At γ = 0.99: 9.55
    against 92.3, the figures of the docstring and the README."""
    g, s, d = 0.99, 5, 9
    t = F.make("minigrid_empty", size=s).test
    start, goal = 4 * 0 + 1, s * s - 1
    V = solve(t.nominal((start, goal)), t.reward, g)
    home = t.initial_state
    assert V[home] == pytest.approx(g**d / (1 - g ** (d + 1)), rel=1e-10)
    assert V[start] == pytest.approx(g ** (d - 1) / (1 - g ** (d + 1)), rel=1e-10)
    theirs = colosseum_minigrid(s, goal, g)
    assert theirs[start] == pytest.approx(g ** (d - 1) / (1 - g), rel=1e-9)
    assert (round(V[home], 2), round(theirs[start], 1)) == (9.55, 92.3)
    # the room's moves and turns are Colosseum's: away from the goal the two forms'
    # values differ by one factor, the value of reaching the goal
    ratio = theirs[start] / V[start]
    tiles = np.arange(4 * s * s)
    far = tiles[tiles // 4 != goal]
    assert V[far] * ratio == pytest.approx(theirs[far], rel=1e-8)


# ---------------------------------------------------------------------------------------
# DeepSea: bsuite's episodes, one surface step apart


def bsuite_episodes(mapping: np.ndarray, actions: list[int]) -> list[list[float]]:
    """bsuite's deterministic DeepSea (deep_sea.py, ``_step``), episode after episode:
    the rewards of each episode."""
    N = mapping.shape[0]
    out, row, col, ep = [], 0, 0, []
    for a in actions:
        reward = 0.0
        right = a == mapping[row, col]
        if col == N - 1 and right:
            reward += 1.0
        if right:
            col = min(col + 1, N - 1)
            reward -= 0.01 / N
        else:
            col = max(col - 1, 0)
        row += 1
        ep.append(reward)
        if row == N:
            out.append(ep)
            row, col, ep = 0, 0, []
    return out


@pytest.mark.parametrize("N", [2, 3, 6])
def test_deepsea_is_bsuites_episodes_one_surface_step_apart(N):
    """Random action sequences on drawn (deterministic) DeepSeas: bbrl's trajectory is
    bsuite's episodes back to back, each followed by one step from a surface state to
    the top-left cell, paid 0; so a pass takes N + 1 steps, and the N steps from the
    top-left cell are one bsuite episode (the episodic reading)."""
    t = F.make("deepsea", size=N).test
    rng = np.random.default_rng(N)
    for seed in range(20):
        mapping = t.draw_structure(np.random.default_rng(seed))
        P = t.nominal(mapping)
        actions = rng.integers(0, 2, size=7 * (N + 1)).tolist()
        x, ours, passes, ep = 0, [], [], []
        theirs_actions = []
        for a in actions:
            y = int(P[x, a].argmax())
            r = float(t.reward[x, a, y])
            if x >= N * N:  # the surface step: back to the top-left, paid 0
                assert y == 0 and r == 0.0
                passes.append(ep)
                ep = []
            else:
                ep.append(r)
                theirs_actions.append(a)
            ours.append(r)
            x = y
        assert all(len(p) == N for p in passes)
        theirs = bsuite_episodes(mapping, theirs_actions)
        assert np.array_equal(np.array(passes), np.array(theirs[:len(passes)]))
        assert len(passes) == len(actions) // (N + 1)


def test_deepsea_p_rand_pays_the_move_that_happened():
    """With p_rand r, a cell's left-mapped action moves right with r/2 and pays the move
    cost then; its right-mapped action with 1 - r/2 (the treasure too from the last
    column)."""
    N, r = 4, 0.3
    t = F.make("deepsea", size=N, p_rand=r).test
    mapping = t.draw_structure(np.random.default_rng(0))
    ours = np.einsum("xuy,xuy->xu", t.nominal(mapping), t.reward)
    cost = -0.01 / N
    for row in range(N):
        for col in range(row + 1):
            x, right = row * N + col, int(mapping[row, col])
            bonus = 1.0 if col == N - 1 else 0.0
            assert ours[x, right] == pytest.approx((1 - r / 2) * (cost + bonus), abs=1e-15)
            assert ours[x, 1 - right] == pytest.approx(r / 2 * (cost + bonus), abs=1e-15)


# ---------------------------------------------------------------------------------------
# Taxi: the reward goes with what happened (Colosseum's with the chosen action)


def test_taxi_p_rand_pays_what_happened():
    """On board at the destination (an inner tile), p_rand r: a chosen move may be
    played as the drop-off, which delivers and pays 1 here (Colosseum: 0.1, the move's
    reward); a chosen drop-off may be played as a move, paid 0.1 here (Colosseum: 0)
    or as a pick-up, which changes nothing and pays 0 (both)."""
    s, r = 4, 0.3
    t = F.make("taxi", size=s, p_rand=r).test
    at = np.zeros((s * s, 4), dtype=bool)
    for q, tile in enumerate((5, 2, 8, 15)):  # location 0 on the inner tile (1, 1)
        at[tile, q] = True
    ours = np.einsum("xuy,xuy->xu", t.nominal(at), t.reward)
    x = 16 * 5 + 12 + 0  # on board for location 0, at location 0
    south, pickup, dropoff = 0, 4, 5
    assert ours[x, south] == pytest.approx((1 - r) * 0.1 + r / 6 * (4 * 0.1 + 0.1 + 1.0))
    assert ours[x, dropoff] == pytest.approx((1 - r) * 1.0 + r / 6 * (4 * 0.1 + 0.0 + 1.0))
    assert ours[x, pickup] == pytest.approx((1 - r) * 0.0 + r / 6 * (4 * 0.1 + 0.0 + 1.0))
    plain = F.make("taxi", size=s).test  # without p_rand the two rules agree
    assert np.einsum("xuy,xuy->xu", plain.nominal(at), plain.reward)[x].tolist() == \
        pytest.approx([0.1] * 4 + [0.0, 1.0])
