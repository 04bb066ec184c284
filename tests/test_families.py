"""Problem families (bbrlcore.mdp.families): parameters, drawn MDPs, rewards, values, priors,
serialisation, and the paper's GC, GDL and Grid as family defaults."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from bbrlcore import protocol as E
from bbrlcore import seeds, solvers
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp.families import _base
from bbrlcore.mdp.families._base import FamilyDistribution, exact_mean, moment_matched

ROOT = Path(__file__).resolve().parents[1]
GAMMA = 0.95
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")

#: Small instances of every family, deterministic and stochastic variants.
SMALL = [
    ("chain", {}),
    ("chain", {"size": 3, "slip": 0.0, "p_rand": 0.2}),
    ("doubleloop", {"size": 2}),
    ("doubleloop", {"size": 2, "p_rand": 0.0}),
    ("riverswim", {"size": 4, "p_lazy": 0.1}),
    ("sixarms", {}),
    ("deepsea", {"size": 3}),
    ("deepsea", {"size": 3, "p_rand": 0.2}),
    ("frozenlake", {"size": 3}),
    ("frozenlake", {"size": 4, "slip": 0.0, "p_rand": 0.1, "p_lazy": 0.1}),
    ("simplegrid", {"size": 3}),
    ("simplegrid", {"size": 3, "p_rand": 0.0}),
    ("minigrid_empty", {"size": 3}),
    ("minigrid_empty", {"size": 3, "p_rand": 0.1, "p_lazy": 0.05}),
    ("minigrid_rooms", {"size": 2}),
    ("minigrid_rooms", {"size": 2, "n_starts": 3, "p_rand": 0.1, "p_lazy": 0.05}),
    ("taxi", {"size": 4}),
    ("taxi", {"size": 4, "p_rand": 0.1}),
    ("gc", {}),
    ("gdl", {"size": 2}),
    ("grid", {"size": 3}),
]
IDS = [f"{f}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for f, p in SMALL]

#: Instances whose drawn MDPs must be deterministic (every entry 0 or 1).
DETERMINISTIC = [("doubleloop", {"size": 2, "p_rand": 0.0}), ("deepsea", {"size": 3}),
                 ("simplegrid", {"size": 3, "p_rand": 0.0}), ("minigrid_empty", {"size": 3}),
                 ("frozenlake", {"size": 3, "slip": 0.0}),
                 ("minigrid_rooms", {"size": 2, "n_starts": 1})]


def solve(P: np.ndarray, R: np.ndarray, gamma: float = GAMMA) -> tuple[np.ndarray, np.ndarray]:
    """Optimal values and policy by bbrlcore's policy iteration (exact evaluation)."""
    P, R = np.ascontiguousarray(P), np.ascontiguousarray(R)
    supp, nsupp = solvers.support_of(P)
    n = P.shape[0]
    V, pi = np.zeros(n), np.zeros(n, dtype=np.int64)
    solvers.guez_policy_iteration(P, R, supp, nsupp, gamma, 1e-12, V, pi,
                                  np.empty((n, n)), np.empty(n))
    return V, pi


def q_values(P: np.ndarray, R: np.ndarray, V: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    return np.einsum("xuy,xuy->xu", P, R + gamma * V[None, None, :])


def one_line_error(match: str, fam: str, /, **params) -> str:
    with pytest.raises(BBRLError, match=match) as exc:
        F.make(fam, **params)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


# ---------------------------------------------------------------------------------------
# Registry and parameters


def test_registry_lists_every_family():
    assert set(F.FAMILIES) == {"chain", "doubleloop", "riverswim", "sixarms", "deepsea",
                               "frozenlake", "simplegrid", "minigrid_empty", "minigrid_rooms",
                               "taxi", "gc",
                               "gdl", "grid"}
    for name, fam in F.FAMILIES.items():
        assert fam.name == name and fam.reference
        assert len({p.name for p in fam.params}) == len(fam.params)
        for p in fam.params:  # every default is valid
            assert p.coerce(p.default) == p.default, (name, p.name)
        if fam.max_size is not None:  # the largest size fits, one more does not
            nX, nU = fam.shape({**fam.defaults(), "size": fam.max_size})
            assert nX * nU * nX <= D.MAX_ENTRIES
            nX, nU = fam.shape({**fam.defaults(), "size": fam.max_size + 1})
            assert nX * nU * nX > D.MAX_ENTRIES
            doc = getattr(F, name).__doc__  # the module states its sizes
            assert f"``size`` from {int(fam.param('size').lo)} to {fam.max_size} (" in doc


def test_unknown_family():
    with pytest.raises(BBRLError, match=r"unknown problem family 'nope' \(families: chain"):
        F.make("nope")


@pytest.mark.parametrize("fam", sorted(F.FAMILIES))
def test_parameters_are_validated(fam):
    spec = F.FAMILIES[fam]
    one_line_error(rf"^family {fam}: unknown parameter 'bogus' \(parameters: ", fam, bogus=1)
    if spec.param("size") is not None:
        lo, hi = int(spec.param("size").lo), spec.max_size
        rng = rf"must be an integer in \[{lo}, {hi}\]"
        one_line_error(rf"^family {fam}: size={lo - 1}: {rng}$", fam, size=lo - 1)
        one_line_error(rf"^family {fam}: size=2.5: {rng}$", fam, size=2.5)
        one_line_error(rf"^family {fam}: size=True: {rng}$", fam, size=True)
        one_line_error(rf"^family {fam}: size='5': {rng}$", fam, size="5")
        one_line_error(rf"^family {fam}: size=nan: {rng}$", fam, size=float("nan"))
        msg = one_line_error(rf"^family {fam}: size={hi + 1}: {rng} \(size {hi + 1} means ",
                             fam, size=hi + 1)
        assert "states x" in msg and "B per dense array" in msg and "50,000,000" in msg
        assert F.make(fam, size=float(lo)).params["size"] == lo  # an integral float is fine
    for prob in ("p_rand", "p_lazy"):
        if spec.param(prob) is None:
            continue
        for bad in (1.0, 1, -0.1, float("nan"), float("inf"), True):
            one_line_error(rf"^family {fam}: {prob}={bad!r}: must be a number in \[0, 1\)$",
                           fam, **{prob: bad})
    for bad in (0, 0.0, 1e-7, -1.0, float("nan"), float("inf"), 1e13):
        one_line_error(rf"^family {fam}: concentration={bad!r}: must be a number in "
                       r"\[1e-06, 1e\+12\]$", fam, concentration=bad)
    p = F.make(fam, concentration=2)  # an integer for a float
    assert p.params["concentration"] == 2.0 and isinstance(p.params["concentration"], float)


def test_family_specific_parameters():
    one_line_error(r"^family chain: slip=1.0: must be a number in \[0, 1\)$", "chain", slip=1.0)
    one_line_error(r"^family frozenlake: p_frozen=0.05: must be a number in \[0.1, 1\]$",
                   "frozenlake", p_frozen=0.05)
    one_line_error(r"^family simplegrid: reward_type=4: must be an integer in \[0, 3\]$",
                   "simplegrid", reward_type=4)
    assert F.get_family("deepsea").param("p_lazy") is None  # none in DeepSea (Colosseum)
    one_line_error(r"family deepsea: unknown parameter 'p_lazy'", "deepsea", p_lazy=0.1)


def test_names():
    assert F.make("deepsea").short_name == "DeepSea-10"
    p = F.make("deepsea", size=20, p_rand=0.05)
    assert (p.short_name, p.name) == ("DeepSea-20-prand0.05",
                                      "DeepSea distribution (size=20, p_rand=0.05)")
    assert F.make("deepsea", concentration=2, p_rand=1e-5).short_name == \
        "DeepSea-10-prand1e-05-c2"
    assert F.make("frozenlake", p_frozen=0.7, slip=0.5).short_name == "FrozenLake-5-pfrozen0.7"
    assert F.make("simplegrid", reward_type=0).short_name == "SimpleGrid-5-rtype0"
    assert F.make("sixarms").short_name == "SixArms"
    assert F.make("sixarms", p_lazy=0.25).short_name == "SixArms-plazy0.25"
    assert [F.make(f).short_name for f in ("gc", "gdl", "grid")] == ["GC", "GDL", "Grid"]
    assert F.make("gc", size=7, concentration=2).short_name == "GC-7-c2"
    assert F.make("grid", concentration=0.5).name == "Grid distribution (concentration=0.5)"
    assert F.make("doubleloop", p_rand=0.0).short_name == "DoubleLoop-4-prand0"
    names = set()
    for fam, params in SMALL:
        p = F.make(fam, **params)
        assert NAME.fullmatch(p.short_name), p.short_name
        assert p.test.short_name == p.short_name and p.test.name == p.name
        assert p.prior("uniform").short_name == "U" + p.short_name
        assert p.prior("accurate").short_name == p.short_name
        names.add(p.short_name)
    assert len(names) == len(SMALL)  # different parameters, different names
    with pytest.raises(BBRLError, match="prior kind 'exact': must be one of accurate, uniform"):
        F.make("chain").prior("exact")


# ---------------------------------------------------------------------------------------
# Drawn MDPs


def draw(test, seed: int) -> np.ndarray:
    return test.draw_mdp(np.random.default_rng(seed))


@pytest.mark.parametrize(("fam", "params"), SMALL, ids=IDS)
def test_drawn_mdps(fam, params):
    test = F.make(fam, **params).test
    nX, nU = test.n_states, test.n_actions
    sup = F.support(test)
    assert sup.shape == (nX, nU, nX) and sup.dtype == bool
    assert test.reward.shape == (nX, nU, nX) and test.reward_type == "constant"
    assert test.reward_std.shape == (nX, nU, nX) and not test.reward_std.any()
    assert 0 <= test.initial_state < nX and test.r_max == test.reward.max()
    state = np.random.get_state()[1].copy()
    draws = [draw(test, s) for s in range(8)]
    assert np.array_equal(np.random.get_state()[1], state)  # only the generator passed in
    for P in draws:
        assert P.shape == (nX, nU, nX) and P.dtype == np.float64
        assert (P >= 0).all() and np.allclose(P.sum(axis=2), 1.0, rtol=0, atol=1e-12)
        assert not P[~sup].any()  # zero exactly off the support
    assert np.array_equal(draws[0], draw(test, 0))  # same seed, same MDP
    if isinstance(test, FamilyDistribution) or (sup.sum(axis=2) > 1).any():
        assert not np.array_equal(draws[0], draws[1])  # another seed, another MDP
    else:  # one fixed deterministic MDP
        assert all(np.array_equal(draws[0], P) for P in draws)
    seen = np.any([P > 0 for P in draws], axis=0)
    assert (seen <= sup).all()
    assert np.allclose(test.mean_model().sum(axis=2), 1.0)
    assert np.array_equal(test.mean_model() > 0, sup)  # E[P] > 0 exactly on the support


@pytest.mark.parametrize(("fam", "params"), DETERMINISTIC)
def test_deterministic_families_draw_deterministic_mdps(fam, params):
    test = F.make(fam, **params).test
    for s in range(5):
        P = draw(test, s)
        assert ((P == 0) | (P == 1)).all()


@pytest.mark.parametrize(("fam", "params"), [
    ("deepsea", {"size": 3, "p_rand": 0.2}), ("minigrid_empty", {"size": 3, "p_rand": 0.1}),
    ("simplegrid", {"size": 3}), ("doubleloop", {"size": 2}),
    ("taxi", {"size": 4, "p_lazy": 0.1})])
def test_p_rand_and_p_lazy_make_rows_stochastic(fam, params):
    test = F.make(fam, **params).test
    plain = F.make(fam, **{**params, "p_rand": 0.0, **({"p_lazy": 0.0} if "p_lazy" in params
                                                       else {})}).test
    N, N0 = nominal_of_draw(test, 0), nominal_of_draw(plain, 0)
    k, k0 = (N > 0).sum(axis=2), (N0 > 0).sum(axis=2)
    assert (k >= k0).all() and (k > k0).sum() >= k.size // 3  # many more possible outcomes
    P = draw(test, 0)
    assert np.array_equal(P > 0, N > 0)  # the draw has exactly its nominal MDP's outcomes
    row_max = P.max(axis=2)
    assert (row_max[k > 1] < 1).all()  # a row with several outcomes is random
    # near the nominal kernel with concentration 10: the chosen action's outcome dominates
    assert np.median(row_max[k > k0]) > 0.5


def nominal_of_draw(test, seed: int) -> np.ndarray:
    """The nominal MDP behind ``draw(test, seed)`` (its structure, no Dirichlet noise)."""
    if isinstance(test, FamilyDistribution):
        return test.nominal(test.draw_structure(np.random.default_rng(seed)))
    return test.mean_model()


def test_taxi_is_deterministic_but_for_deliveries():
    t = F.make("taxi", size=4).test
    P = draw(t, 3)
    on_board = np.arange(t.n_states) % 16 >= 12
    random_rows = (P > 0).sum(axis=2) > 1
    assert random_rows.any()
    assert not random_rows[:, :5].any() and not random_rows[~on_board].any()
    for x, u in zip(*np.nonzero(random_rows), strict=True):  # a delivery: 9 new passengers
        assert u == 5 and (P[x, u] > 0).sum() == 9


def test_frozenlake_refuses_lakes_without_a_path():
    t = F.make("frozenlake", size=10, p_frozen=0.1).test
    with pytest.raises(BBRLError, match=r"family frozenlake: p_frozen=0.1: no lake of size 10"):
        draw(t, 0)


# ---------------------------------------------------------------------------------------
# Structure and rewards, family by family


def test_chain_structure_and_rewards():
    t = F.make("chain").test
    m = t.mean_model()
    for x in range(5):
        fwd = min(x + 1, 4)
        assert m[x, 0, fwd] == pytest.approx(0.8) and m[x, 0, 0] == pytest.approx(0.2)
        assert m[x, 1, 0] == pytest.approx(0.8) and m[x, 1, fwd] == pytest.approx(0.2)
    R = t.reward
    assert (R[:, :, 0] == 2).all() and (R[4, :, 4] == 10).all()
    assert R.sum() == 2 * 5 * 2 + 10 * 2


def test_doubleloop_structure_and_rewards():
    t = F.make("doubleloop", p_rand=0.0).test
    m = t.mean_model()
    go = {(x, u): int(np.argmax(m[x, u])) for x in range(9) for u in range(2)}
    assert go[0, 0] == 1 and go[0, 1] == 5
    assert [go[i, u] for i in (1, 2, 3, 4) for u in (0, 1)] == [2, 2, 3, 3, 4, 4, 0, 0]
    assert [go[j, 0] for j in (5, 6, 7, 8)] == [0, 0, 0, 0]
    assert [go[j, 1] for j in (5, 6, 7, 8)] == [6, 7, 8, 0]
    R = t.reward
    assert (R[4, :, 0] == 1).all() and (R[8, :, 0] == 2).all() and R.sum() == 2 * 3
    # p_rand mixes the actions: (x, u) -> (1 - r) own + r/2 each
    m = F.make("doubleloop").test.mean_model()
    assert m[5, 1, 6] == pytest.approx(0.95) and m[5, 1, 0] == pytest.approx(0.05)


def test_riverswim_is_the_example():
    path = ROOT / "examples" / "riverswim.py"
    spec = importlib.util.spec_from_file_location("riverswim_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    P, R = mod.riverswim_model()
    t = F.make("riverswim").test
    assert np.allclose(t.mean_model(), P, rtol=0, atol=1e-15)
    assert np.array_equal(t.reward, R)
    assert t.same_as(D.FDMDistribution.centred_on(t.name, t.short_name, P, R, 10.0))
    assert np.allclose(t.theta, mod.riverswim(10.0).theta, rtol=0, atol=1e-14)


def test_sixarms_structure_and_rewards():
    t = F.make("sixarms").test
    m = t.mean_model()
    assert m[0, np.arange(6), np.arange(1, 7)] == pytest.approx([1, 0.15, 0.1, 0.05, 0.03, 0.01])
    for room, stay in enumerate(((0, 1, 2, 3, 5), (1,), (2,), (3,), (4,), (5,)), start=1):
        for u in range(6):
            assert m[room, u, room if u in stay else 0] == 1.0
        assert (t.reward[room, :, room] == [50, 133, 300, 800, 1660, 6000][room - 1]).all()
    assert (t.reward > 0).sum() == 6 * 6


def bsuite_step(N: int, row: int, col: int, right: bool) -> tuple[int, int, float]:
    """bsuite's DeepSea step (reward, then the move)."""
    r = 1.0 if (col == N - 1 and right) else 0.0
    if right:
        r -= 0.01 / N
        col = min(col + 1, N - 1)
    else:
        col = max(col - 1, 0)
    return row + 1, col, r


def test_deepsea_is_bsuite_with_surface_states():
    N = 4
    t = F.make("deepsea", size=N).test
    P = draw(t, 7)
    SR, SL = N * N, N * N + 1
    mapping = np.zeros((N, N), dtype=int)
    for row in range(N):
        for col in range(N):
            x = row * N + col
            for u in (0, 1):
                (y,) = np.flatnonzero(P[x, u])
                for right in (True, False):
                    r2, c2, rew = bsuite_step(N, row, col, right)
                    target = (SR if right else SL) if r2 == N else r2 * N + c2
                    if y == target:
                        assert t.reward[x, u, y] == pytest.approx(rew)
                        if right:
                            mapping[row, col] = u
            assert P[x, 0].argmax() != P[x, 1].argmax()  # one action each way
    assert (P[[SR, SL], :, 0] == 1).all()  # back to the top-left cell
    assert t.reward[SR].sum() == 0 and t.reward[SL].sum() == 0
    rng = np.random.default_rng(7)
    assert np.array_equal(mapping, t.draw_structure(rng))  # bsuite's per-cell mapping


def test_frozenlake_structure_and_rewards():
    t = F.make("frozenlake", size=4).test
    goal = 15
    assert (t.reward[:goal, :, goal] == 1).all() and t.reward.sum() == goal * 4
    for seed in range(5):
        rng = np.random.default_rng(seed)
        holes = t.draw_structure(rng).reshape(-1)
        P = t.nominal(holes.reshape(4, 4))
        assert not holes[0] and not holes[goal]
        assert not P[:, :, holes].any()  # a hole is never entered
        assert (P[goal, :, 0] == 1).all()  # the goal returns to the start
    m = F.make("frozenlake", size=4, p_frozen=1.0).test.mean_model()
    assert m[5, 1][[6, 1, 9]] == pytest.approx([0.5, 0.25, 0.25], abs=1e-3)  # no holes


def test_simplegrid_structure_and_rewards():
    t = F.make("simplegrid", p_rand=0.0).test
    s = 5
    m = t.mean_model()
    x = 12  # the centre
    assert t.initial_state == x
    assert [int(m[x, u].argmax()) for u in range(5)] == [7, 13, 17, 11, 12]
    corners = {(0, 0): 1.0, (0, s - 1): 0.0, (s - 1, 0): 0.0, (s - 1, s - 1): 1.0}  # XOR
    for (r, c), v in corners.items():
        x = r * s + c
        assert (t.reward[x, :, x] == v).all()
    mask = np.ones(t.reward.shape, dtype=bool)
    for r, c in corners:
        mask[r * s + c, :, r * s + c] = False
    # 0.2 on every other transition that can happen; one that cannot pays (stores) nothing
    sup = F.support(t)
    assert (t.reward[mask & sup] == 0.2).all() and (t.reward[mask & ~sup] == 0).all()
    assert t.entries.nnz == int(sup.sum()) + 2 * 2  # + each good corner's two moves away
    assert F.make("simplegrid", size=4).test.initial_state == 5
    and_ = F.make("simplegrid", reward_type=0).test.reward
    assert and_[4, 0, 4] == 1 and and_[0, 0, 0] == 0 and and_[24, 0, 24] == 0


def test_minigrid_structure_and_rewards():
    s = 3
    t = F.make("minigrid_empty", size=s).test
    home = 4 * s * s
    assert t.initial_state == home
    assert (t.reward[:home, :, home] == 1).all() and t.reward.sum() == home * 3
    for seed in range(6):
        start, goal = t.draw_structure(np.random.default_rng(seed))
        P = t.nominal((start, goal))
        assert (P[home, :, start] == 1).all()
        sides = [set(F.minigrid_empty.side_tiles(s, k).tolist()) for k in range(4)]
        assert any(start // 4 in sides[k] and goal in sides[(k + 2) % 4] for k in range(4))
        into_home = np.flatnonzero(P[:home, 0, home])
        assert len(into_home) > 0
        for x in into_home:  # forward moves onto the goal tile
            tile, h = divmod(int(x), 4)
            r, c = divmod(tile, s)
            dr, dc = [(-1, 0), (0, 1), (1, 0), (0, -1)][h]
            assert (r + dr) * s + (c + dc) == goal
        others = np.arange(t.n_states) // 4 != goal
        assert not P[others][:, :, 4 * goal: 4 * goal + 4].any()  # the goal is never entered
        # turning keeps the tile and changes the heading
        assert P[4 * 4 + 0, 1, 4 * 4 + 1] == 1 and P[4 * 4 + 0, 2, 4 * 4 + 3] == 1


def test_taxi_structure_and_rewards():
    s = 4
    t = F.make("taxi", size=s).test
    at = t.draw_structure(np.random.default_rng(2))
    locs = [int(np.flatnonzero(at[:, q])[0]) for q in range(4)]
    for q, tiles in enumerate(F.taxi.quadrants(s)):
        assert locs[q] in tiles
    P = t.nominal(at)
    # the passenger waits at location 0 for location 1: drive there, pick up, deliver
    k = F.taxi.PAIRS.index((0, 1))
    x = locs[0] * 16 + k
    y = locs[0] * 16 + 12 + 1
    assert P[x, 4, y] == 1 and t.reward[x, 4, y] == 0.1
    z = locs[1] * 16 + 12 + 1
    outcomes = np.flatnonzero(P[z, 5])
    assert len(outcomes) == 9 and np.allclose(P[z, 5, outcomes], 1 / 9)
    assert all(t.reward[z, 5, o] == 1.0 for o in outcomes)
    assert {F.taxi.PAIRS[o % 16][0] for o in outcomes} == {0, 2, 3}  # not at the taxi
    assert P[x, 5, x] == 1 and t.reward[x, 5, x] == 0.0  # nobody on board
    other = next(tile for tile in range(s * s) if tile != locs[0]) * 16 + k
    assert P[other, 4, other] == 1 and t.reward[other, 4, other] == 0.0  # not there
    # a transition that cannot happen (a jump across the grid) pays and stores nothing
    assert not F.support(t)[x, 0, z] and t.reward[x, 0, z] == 0.0
    assert t.rewards.keys.size <= t.support_keys().size


def test_gc_gdl_grid_generalise_the_paper():
    t = F.make("gc", size=7).test
    assert t.theta.shape == (7, 3, 7) and (t.theta.sum(axis=2) == 2).all()
    assert (t.reward[:, :, 6] == 10).all() and (t.reward[:, :, 0] == 2).all()
    t = F.make("gdl", size=3).test
    assert t.n_states == 7 and t.reward[3, 0, 0] == 1 and t.reward[6, 1, 0] == 2
    t = F.make("grid", size=4).test
    assert t.reward[14, 1, 0] == 10 and t.reward[11, 3, 0] == 10 and t.reward.sum() == 20
    assert not t.theta[:15, :, 15].any()  # the goal cell is a jump to the start
    t = F.make("gc", concentration=3).test
    assert set(np.unique(t.theta)) == {0.0, 3.0}
    u = F.make("gc", size=7).prior("uniform")
    assert (u.theta == 1).all() and u.name == "Uniform GChain distribution (size=7)"


# ---------------------------------------------------------------------------------------
# Optimal values by hand


def test_chain_optimal_value_by_hand():
    """Always a: V_i = 0.8 (0 + γ V_{i+1}) + 0.2 (2 + γ V_0) for i < 4, and
    V_4 = 0.8 (10 + γ V_4) + 0.2 (2 + γ V_0); every V_i is affine in V_0."""
    g = GAMMA
    t = F.make("chain").test
    V, pi = solve(t.mean_model(), t.reward)
    a4, b4 = (8 + 0.4) / (1 - 0.8 * g), 0.2 * g / (1 - 0.8 * g)  # V_4 = a4 + b4 V_0
    coef = [(a4, b4)]
    for _ in range(4):  # V_i = 0.4 + 0.2 γ V_0 + 0.8 γ V_{i+1}
        a, b = coef[-1]
        coef.append((0.4 + 0.8 * g * a, 0.2 * g + 0.8 * g * b))
    a0, b0 = coef[-1]
    V0 = a0 / (1 - b0)
    hand = [a + b * V0 for a, b in reversed(coef)]
    assert V == pytest.approx(hand, rel=1e-10)
    assert pi.tolist() == [0] * 5
    # the myopic alternative (always b) is worse everywhere
    Q = q_values(t.mean_model(), t.reward, V)
    assert (Q[:, 0] > Q[:, 1]).all()


def test_riverswim_optimal_value_by_hand():
    """Size 3, always right: V0 = γ (0.4 V0 + 0.6 V1), V2 = 1 + γ (0.4 V1 + 0.6 V2),
    V1 = γ (0.05 V0 + 0.6 V1 + 0.35 V2)."""
    g = GAMMA
    t = F.make("riverswim", size=3).test
    V, pi = solve(t.mean_model(), t.reward)
    a = 0.6 * g / (1 - 0.4 * g)  # V0 = a V1
    c, d = 1 / (1 - 0.6 * g), 0.4 * g / (1 - 0.6 * g)  # V2 = c + d V1
    V1 = 0.35 * g * c / (1 - g * (0.05 * a + 0.6 + 0.35 * d))
    assert V == pytest.approx([a * V1, V1, c + d * V1], rel=1e-10)
    assert pi.tolist() == [1, 1, 1]
    assert V[0] > 0.005 / (1 - g)  # better than collecting the small reward forever


@pytest.mark.parametrize("N", [2, 4, 6])
def test_deepsea_optimal_value_by_hand(N):
    """Always right: N - 1 moves at -0.01/N, the N-th pays 1 - 0.01/N, then one step
    back from the surface: period N + 1."""
    g = GAMMA
    t = F.make("deepsea", size=N).test
    for seed in range(3):
        P = draw(t, seed)
        V, pi = solve(P, t.reward)
        episode = sum(g**k * -0.01 / N for k in range(N)) + g ** (N - 1)
        assert V[0] == pytest.approx(episode / (1 - g ** (N + 1)), rel=1e-10)
        mapping = t.draw_structure(np.random.default_rng(seed))
        for i in range(N):  # on the diagonal, the optimal action is the one going right
            assert pi[i * N + i] == mapping[i, i]


def test_gc_value_by_hand():
    """GC's mean model: every action reaches 0 (reward 2) or moves on (reward 10 into
    the last state) with 1/2 each, so V_i = 1 + γ V_0 / 2 + (r_i + γ V_{i+1}) / 2."""
    g = GAMMA
    t = F.make("gc").test
    V, _ = solve(t.mean_model(), t.reward)
    a4, b4 = 6 / (1 - 0.5 * g), 0.5 * g / (1 - 0.5 * g)  # V_4 = a4 + b4 V_0
    coef = [(a4, b4)]
    for i in (3, 2, 1, 0):
        a, b = coef[-1]
        r = 10.0 if i == 3 else 0.0
        coef.append((1 + 0.5 * r + 0.5 * g * a, 0.5 * g + 0.5 * g * b))
    V0 = coef[-1][0] / (1 - coef[-1][1])
    assert V == pytest.approx([a + b * V0 for a, b in reversed(coef)], rel=1e-10)
    Q = q_values(t.mean_model(), t.reward, V)
    assert np.allclose(Q, Q[:, :1])  # the mean model does not tell the actions apart


@pytest.mark.parametrize("L", [1, 2, 4])
def test_doubleloop_optimal_value_by_hand(L):
    """p_rand = 0, always b: the left loop pays 2 every L + 1 steps, so
    V_0 = γ^L (2 + γ V_0) = 2 γ^L / (1 - γ^(L+1)); k states into a loop (right: state k,
    left: state L + k), V = γ^(L-k) (r + γ V_0), r = 1 on the right, 2 on the left."""
    g = GAMMA
    t = F.make("doubleloop", size=L, p_rand=0.0).test
    V, pi = solve(t.mean_model(), t.reward)
    V0 = 2 * g**L / (1 - g ** (L + 1))
    right = [g ** (L - k) * (1 + g * V0) for k in range(1, L + 1)]
    left = [g ** (L - k) * (2 + g * V0) for k in range(1, L + 1)]
    assert V == pytest.approx([V0, *right, *left], rel=1e-10)
    assert pi[0] == 1 and (pi[L + 1: 2 * L] == 1).all()  # b into, and along, the left loop
    # (in 2L both actions lead to 0 and pay 2: a tie)


def test_doubleloop_random_action_value_by_hand():
    """L = 2, p_rand = r = 0.1, always b: the chosen move with 1 - r/2, a's with r/2:
    V0 = γ (r/2 V1 + (1 - r/2) V3), V1 = γ V2, V2 = 1 + γ V0,
    V3 = γ (r/2 V0 + (1 - r/2) V4), V4 = 2 + γ V0 (the loops' ends: both actions alike)."""
    g, h = GAMMA, 0.1 / 2
    t = F.make("doubleloop", size=2, p_rand=0.1).test
    V, pi = solve(t.mean_model(), t.reward)
    M = np.array([[0, h, 0, 1 - h, 0],
                  [0, 0, 1, 0, 0],
                  [1, 0, 0, 0, 0],
                  [h, 0, 0, 0, 1 - h],
                  [1, 0, 0, 0, 0]])
    hand = np.linalg.solve(np.eye(5) - g * M, [0, 0, 1, 0, 2])
    assert V == pytest.approx(hand, rel=1e-10)
    assert pi[0] == 1 and pi[3] == 1


def test_sixarms_optimal_value_by_hand():
    """Pull arm 5 in the hub (room 6 with q = 0.01), stay in rooms 5 and 6, leave rooms 1-4
    (their R/(1 - γ) is below γ V_0): V_6 = 6000/(1 - γ), V_5 = 1660/(1 - γ),
    V_1..4 = γ V_0, V_0 = γ (q V_6 + (1 - q) V_0)."""
    g = GAMMA
    t = F.make("sixarms").test
    V, pi = solve(t.mean_model(), t.reward)
    V6, V5 = 6000 / (1 - g), 1660 / (1 - g)
    V0 = g * 0.01 * V6 / (1 - g * 0.99)
    rooms = [g * V0] * 4 + [V5, V6]
    assert V == pytest.approx([V0, *rooms], rel=1e-10)
    # the hand policy is greedy on its own values: other arms and choices are worse
    arms = [g * (q * v + (1 - q) * V0)
            for q, v in zip((1, .15, .1, .05, .03), rooms[:5], strict=True)]
    assert max(arms) < V0 and 800 / (1 - g) < g * V0 < V5
    assert pi[0] == 5 and pi[1] == 4 and pi[5] == 4 and pi[6] == 5
    assert [pi[r] != r - 1 for r in (2, 3, 4)] == [True] * 3  # not the staying action


def test_frozenlake_optimal_value_by_hand():
    """slip = 0, a fixed snake of a lake (5 x 5) whose only frozen path is 16 moves
    (4 right, 2 down, 4 left, 2 down, 4 right): d moves from the goal,
    V = γ^(d-1) + γ^(d+1) V_0 (entering the goal pays 1, the goal leads to the start), so
    V_0 = γ^15 / (1 - γ^17); the goal and the holes (their rows: to the start) γ V_0."""
    g = GAMMA
    lake = ["S....", "HHHH.", ".....", ".HHHH", "....G"]
    holes = np.array([[ch == "H" for ch in row] for row in lake])
    t = F.make("frozenlake", size=5, slip=0.0).test
    V, pi = solve(t.nominal(holes), t.reward)
    V0 = g**15 / (1 - g**17)
    hand = np.full(25, g * V0)
    step = {"U": (-1, 0, 0), "R": (0, 1, 1), "D": (1, 0, 2), "L": (0, -1, 3)}
    r = c = 0
    for k, move in enumerate("RRRRDDLLLLDDRRRR"):
        d = 16 - k
        hand[5 * r + c] = g ** (d - 1) + g ** (d + 1) * V0
        dr, dc, u = step[move]
        assert pi[5 * r + c] == u  # along the path, never into a hole
        r, c = r + dr, c + dc
    assert (r, c) == (4, 4)
    assert V == pytest.approx(hand, rel=1e-10)


def test_frozenlake_slippery_value_by_hand():
    """2 x 2 lake without holes, slip s = 0.5. In 0 right (to 1: 1 - s; up, clipped, 0: s/2;
    down, 2: s/2), in 1 down (goal: 1 - s; left, 0: s/2; right, clipped, 1: s/2), in 2
    right (goal: 1 - s; up, 0: s/2; down, clipped, 2: s/2); the goal leads to 0:
    V = r + γ M V with r = (0, 1 - s, 1 - s, 0)."""
    g, s = GAMMA, 0.5
    t = F.make("frozenlake", size=2).test
    V, pi = solve(t.nominal(np.zeros((2, 2), dtype=bool)), t.reward)
    M = np.array([[s / 2, 1 - s, s / 2, 0],
                  [s / 2, s / 2, 0, 1 - s],
                  [s / 2, 0, s / 2, 1 - s],
                  [1, 0, 0, 0]])
    hand = np.linalg.solve(np.eye(4) - g * M, [0, 1 - s, 1 - s, 0])
    assert V == pytest.approx(hand, rel=1e-10)
    assert pi[0] in (1, 2) and pi[1] == 2 and pi[2] == 1  # straight at the goal


@pytest.mark.parametrize(("size", "reward_type", "plus"), [
    (3, 3, [(0, 0), (2, 2)]),  # XOR: top-left and bottom-right
    (3, 0, [(0, 2)]),  # AND: top-right
    (4, 1, [(0, 0), (3, 0), (3, 3)]),  # NAND: all but the top-right
    (4, 2, [(0, 0), (0, 3), (3, 3)]),  # OR: all but the bottom-left
])
def test_simplegrid_optimal_value_by_hand(size, reward_type, plus):
    """p_rand = 0: walk d steps (0.2 each) to the nearest + corner, then stay (1 a step):
    V = (0.2 (1 - γ^d) + γ^d) / (1 - γ), d the Manhattan distance to a + corner."""
    g = GAMMA
    t = F.make("simplegrid", size=size, reward_type=reward_type, p_rand=0.0).test
    V, pi = solve(t.mean_model(), t.reward)
    hand = np.empty(size * size)
    for r in range(size):
        for c in range(size):
            d = min(abs(r - pr) + abs(c - pc) for pr, pc in plus)
            hand[r * size + c] = (0.2 * (1 - g**d) + g**d) / (1 - g)
    assert V == pytest.approx(hand, rel=1e-10)
    for pr, pc in plus:  # next to a + corner: the move into it (up, right, down, left)
        for u, (dr, dc) in enumerate([(-1, 0), (0, 1), (1, 0), (0, -1)]):
            r, c = pr - dr, pc - dc
            if 0 <= r < size and 0 <= c < size:
                assert pi[r * size + c] == u


def test_minigrid_empty_optimal_value_by_hand():
    """size 3, start on tile 0 facing up, goal tile 8 (bottom-right). k actions from the
    goal (the k-th, forward onto it, pays 1 and leads home; home leads to the start):
    V = γ^(k-1) + γ^(k+1) V_s, with k = 6 from the start (turn right, forward twice, turn
    right, forward twice): V_s = γ^5 / (1 - γ^7); home is k = 7."""
    g = GAMMA
    t = F.make("minigrid_empty", size=3).test
    V, pi = solve(t.nominal((0, 8)), t.reward)
    Vs = g**5 / (1 - g**7)
    fwd, right = 0, 1
    # state 4·tile + heading (0 up, 1 right, 2 down, 3 left): (k, the best action)
    cases = {4 * 0 + 0: (6, right), 4 * 0 + 1: (5, fwd), 4 * 1 + 1: (4, fwd),
             4 * 2 + 1: (3, right), 4 * 2 + 2: (2, fwd), 4 * 5 + 2: (1, fwd),
             4 * 4 + 2: (3, fwd), 4 * 7 + 1: (1, fwd), 4 * 6 + 0: (3, right), 36: (7, None)}
    for x, (k, u) in cases.items():
        assert V[x] == pytest.approx(g ** (k - 1) + g ** (k + 1) * Vs, rel=1e-10), x
        assert u is None or pi[x] == u, x
    assert V[0] == pytest.approx(Vs, rel=1e-10)


def test_taxi_optimal_value_by_hand():
    """size 4, locations 0..3 on tiles (0,0), (1,2), (2,1), (3,3). Every step pays 0.1 but
    a delivery 1, so V = 0.1/(1 - γ) + 0.9 Σ_k γ^(t_k) over the delivery times t_k, all
    earliest driving straight (Manhattan distances D; no inner walls). From location d
    with a new passenger (p, e) (9 alike) the delivery comes n = D(d,p) + 1 + D(p,e) steps
    later: W_d = Σ_(p,e) γ^n (1 + γ W_e) / 9, a 4 x 4 linear system W = M 1 + γ M W."""
    g, s = GAMMA, 4
    cells = [(0, 0), (1, 2), (2, 1), (3, 3)]
    t = F.make("taxi", size=s).test
    at = np.zeros((s * s, 4), dtype=bool)
    for q, (r, c) in enumerate(cells):
        at[r * s + c, q] = True
    V, pi = solve(t.nominal(at), t.reward)

    def dist(a, b):
        return abs(a[0] - b[0]) + abs(a[1] - b[1])

    M = np.zeros((4, 4))
    for d in range(4):
        for p in range(4):
            for e in range(4):
                if p != d and e != p:
                    M[d, e] += g ** (dist(cells[d], cells[p]) + 1 + dist(cells[p], cells[e])) / 9
    W = np.linalg.solve(np.eye(4) - g * M, M.sum(axis=1))
    hand = np.empty(16 * s * s)
    for tile in range(s * s):
        taxi = divmod(tile, s)
        for k, (p, e) in enumerate(F.taxi.PAIRS):  # waiting at p for e: drive, pick up, drive
            n = dist(taxi, cells[p]) + 1 + dist(cells[p], cells[e])
            hand[16 * tile + k] = 0.9 * g**n * (1 + g * W[e])
        for e in range(4):  # on board for e: drive
            hand[16 * tile + 12 + e] = 0.9 * g ** dist(taxi, cells[e]) * (1 + g * W[e])
    assert V == pytest.approx(0.1 / (1 - g) + hand, rel=1e-10)
    for k, (p, _) in enumerate(F.taxi.PAIRS):
        assert pi[16 * (cells[p][0] * s + cells[p][1]) + k] == 4  # pick up
    for e in range(4):
        assert pi[16 * (cells[e][0] * s + cells[e][1]) + 12 + e] == 5  # drop off


@pytest.mark.parametrize("L", [1, 2, 4])
def test_gdl_value_by_hand(L):
    """GDL's mean model (both actions alike): 0 enters either loop with 1/2; the first loop
    moves on surely, V_i = γ^(L-i) (1 + γ V_0); in the second V_2L = 2 + γ V_0 and
    V_j = γ (V_0 + V_(j+1)) / 2 (fall back or move on, 1/2 each); V_0 = γ (V_1 + V_(L+1)) / 2.
    Every V is affine in V_0."""
    g = GAMMA
    t = F.make("gdl", size=L).test
    V, _ = solve(t.mean_model(), t.reward)
    right = [(g ** (L - i), g ** (L - i + 1)) for i in range(1, L + 1)]  # V_i = a + b V_0
    left = [(2.0, g)]
    for _ in range(L - 1):
        a, b = left[0]
        left.insert(0, (g * a / 2, g / 2 + g * b / 2))
    a0, b0 = g * (right[0][0] + left[0][0]) / 2, g * (right[0][1] + left[0][1]) / 2
    V0 = a0 / (1 - b0)
    assert V == pytest.approx([V0] + [a + b * V0 for a, b in right + left], rel=1e-10)
    Q = q_values(t.mean_model(), t.reward, V)
    assert np.allclose(Q, Q[:, :1])


@pytest.mark.parametrize("size", [2, 3, 4])
def test_grid_value_by_hand(size):
    """Grid's mean model: a move reaches the neighbour or stays, 1/2 each. Each step
    towards the goal discounts by β = (γ/2) / (1 - γ/2); the last (into the goal) pays 10
    at each try with 1/2, worth c = 5 / (1 - γ/2), and lands on the start: d moves from the
    goal, V_d = β^(d-1) c + β^d V_0, and V_0 = V_D with D = 2 (size - 1)."""
    g = GAMMA
    t = F.make("grid", size=size).test
    V, pi = solve(t.mean_model(), t.reward)
    beta, c5 = (g / 2) / (1 - g / 2), 5 / (1 - g / 2)
    D = 2 * (size - 1)
    V0 = beta ** (D - 1) * c5 / (1 - beta**D)
    n = size * size
    dist = [D - r - c for r, c in (divmod(x, size) for x in range(n - 1))]
    hand = [beta ** (d - 1) * c5 + beta**d * V0 for d in dist]
    assert V[: n - 1] == pytest.approx(hand, rel=1e-10)  # (the goal cell is never entered)
    for k in range(size - 1):  # along the last row right (1), the last column down (3)
        assert pi[(size - 1) * size + k] == 1 and pi[k * size + size - 1] == 3


# ---------------------------------------------------------------------------------------
# Priors


@pytest.mark.parametrize(("fam", "params"), SMALL, ids=IDS)
def test_priors(fam, params):
    p = F.make(fam, **params)
    test, acc, uni = p.test, p.prior("accurate"), p.prior("uniform")
    assert isinstance(acc, D.FDMDistribution) and isinstance(uni, D.FDMDistribution)
    for d in (acc, uni):
        assert np.array_equal(d.reward, test.reward) and d.initial_state == test.initial_state
    if isinstance(test, D.FDMDistribution):
        assert acc is test
    else:
        assert np.allclose(acc.mean_model(), test.mean_model(), rtol=0, atol=1e-12)
        assert np.array_equal(acc.theta > 0, test.support())  # zero only where impossible
        assert (acc.theta.sum(axis=2) <= test.concentration * (1 + 1e-12)).all()
    if p.spec.paper:
        assert (uni.theta == 1).all()
    else:
        assert np.array_equal(uni.theta, F.support(test).astype(float))
    assert p.prior("accurate") is acc  # computed once


@pytest.mark.parametrize(("fam", "params"), [
    ("deepsea", {"size": 2}), ("deepsea", {"size": 2, "p_rand": 0.3}),
    ("minigrid_empty", {"size": 3}), ("minigrid_empty", {"size": 3, "p_rand": 0.2,
                                                          "p_lazy": 0.1}),
    ("taxi", {"size": 4}), ("taxi", {"size": 4, "p_rand": 0.1, "p_lazy": 0.1})])
def test_exact_accurate_mean_is_the_expected_transition(fam, params):
    """Enumerating every structure gives the accurate prior's mean exactly."""
    p = F.make(fam, **params)
    E_P = exact_mean(p.test)
    assert np.allclose(p.prior("accurate").mean_model(), E_P, rtol=0, atol=1e-12)
    assert np.array_equal(E_P > 0, p.test.support())


@pytest.mark.parametrize("params", [{"size": 3}, {"size": 3, "p_frozen": 0.6, "p_rand": 0.1,
                                                   "p_lazy": 0.1}])
def test_monte_carlo_accurate_mean(params):
    """FrozenLake's Monte-Carlo prior mean is within sampling error of the exact
    expectation over every lake with a path (enumerated)."""
    p = F.make("frozenlake", **params)
    E_P = exact_mean(p.test)
    m = p.prior("accurate").mean_model()
    assert np.array_equal(E_P > 0, p.test.support())
    err = np.abs(m - E_P)
    # one Bernoulli per lake: standard error below 0.5 / sqrt(PRIOR_DRAWS) ~ 0.008
    assert err.max() < 6 * 0.5 / math.sqrt(_base.PRIOR_DRAWS)
    assert err.max() > 0  # it is an estimate, not the enumeration
    again = F.make("frozenlake", **params).prior("accurate")
    assert np.array_equal(again.theta, p.prior("accurate").theta)  # seeded: deterministic


def test_drawn_mdps_average_to_the_mean_model():
    for fam, params in [("deepsea", {"size": 3, "p_rand": 0.2}), ("taxi", {"size": 4}),
                        ("minigrid_empty", {"size": 3, "p_lazy": 0.2})]:
        t = F.make(fam, **params).test
        n = 600
        mean = sum(draw(t, 1000 + s) for s in range(n)) / n
        # each entry is in [0, 1]: standard error at most 0.5 / sqrt(n) ~ 0.02
        assert np.abs(mean - t.mean_model()).max() < 5 * 0.5 / math.sqrt(n), fam


def test_moment_matching_by_hand():
    c = 10.0
    # a fixed row: the test distribution's own Dirichlet, theta = c m
    m = np.array([[[0.3, 0.7]]])
    assert np.allclose(moment_matched(m, (m * m).sum(axis=2), c), c * m)
    # a row the structure alone decides (1, 0) or (0, 1): the floor, Jeffreys
    m = np.array([[[0.5, 0.5]]])
    assert np.allclose(moment_matched(m, np.array([[1.0]]), c), 0.5)
    # (1, 0) or Dir(5, 5): the total whose variance equals the mixture's
    m = np.array([[[0.75, 0.25]]])
    s2 = np.array([[0.5 * 1.0 + 0.5 * 0.5]])  # E[sum_y p_y^2] over the two nominal rows
    theta = moment_matched(m, s2, c)
    a = theta.sum()
    var_mixture = 0.5 * 0.25 / (c + 1) + 0.0625  # E[Var | s] + Var(E[p_0 | s])
    assert 0.75 * 0.25 / (a + 1) == pytest.approx(var_mixture)
    assert a == pytest.approx(0.375 / ((0.375 - 0.125) / 11 + 0.125) - 1)


def test_deepsea_accurate_prior_is_jeffreys_on_the_mapping():
    p = F.make("deepsea", size=3)
    theta = p.prior("accurate").theta
    t = p.test
    for x in range(9):
        for u in range(2):
            assert theta[x, u, t.right[x]] == pytest.approx(0.5)
            assert theta[x, u, t.left[x]] == pytest.approx(0.5)
    assert (theta[9:, :, 0] == 10).all()  # surface rows never vary: the test's own count


# ---------------------------------------------------------------------------------------
# Serialisation and test sets


@pytest.mark.parametrize(("fam", "params"), SMALL, ids=IDS)
def test_to_dict_round_trip(fam, params):
    test = F.make(fam, **params).test
    d = json.loads(json.dumps(test.to_dict()))
    if isinstance(test, FamilyDistribution):
        assert set(d) == {"family", "params", "short_name", "name", "n_states", "n_actions",
                          "initial_state"}
        back = F.from_dict(d, "file.parquet")
        assert type(back) is type(test) and back.same_as(test)
        assert np.array_equal(draw(back, 5), draw(test, 5))
    else:
        assert D.FDMDistribution.from_dict(d).same_as(test)


def test_from_dict_errors():
    d = F.make("deepsea", size=4).test.to_dict()
    for bad, match in [
        ("nope", r"^f.parquet: malformed embedded family distribution"),
        ({**d, "params": None}, r"^f.parquet: malformed embedded family distribution"),
        ({**d, "family": "nope"}, r"^f.parquet: embedded distribution: unknown problem family"),
        ({**d, "params": {"size": 1}},
         r"^f.parquet: embedded distribution: family deepsea: size=1: must be"),
        ({**d, "params": {"size": 4, "colour": 1}},
         r"^f.parquet: embedded distribution: family deepsea: unknown parameter 'colour'"),
        ({**d, "n_states": 17}, r"^f.parquet: embedded distribution: family deepsea with "
                                r"these parameters gives n_states 18, the file says 17"),
        ({**d, "short_name": "X"}, r"gives short_name 'DeepSea-4', the file says 'X'"),
    ]:
        with pytest.raises(BBRLError, match=match):
            F.from_dict(bad, "f.parquet")


@pytest.mark.parametrize(("fam", "params"), [("deepsea", {"size": 4}), ("frozenlake", {}),
                                             ("riverswim", {"size": 3})])
def test_test_set_end_to_end(tmp_path, fam, params):
    p = F.make(fam, **params)
    ts = E.new_test_set(p.test, 3, 0.95, 20, seed=0)
    # stored on the family's sparse rows: the same MDPs as the dense draws
    assert ts.mdps.shape == (3, p.test.n_states, p.test.n_actions,
                             p.test.support_layout.width)
    assert np.array_equal(ts.dense(1), p.test.draw_mdp(seeds.mdp_rng(0, 1)))
    ep = ts.episode()
    assert ep.initial_state == p.test.initial_state
    path = tmp_path / "ts.parquet"
    E.write_test_set(ts, path)
    back = E.read_test_set(path)
    assert type(back.test) is type(p.test) and back.test.short_name == p.short_name
    assert np.array_equal(back.mdps, ts.mdps)
    assert (back.gamma, back.horizon, back.seed) == (0.95, 20, 0)


def test_test_set_with_a_bad_embedded_family_is_one_line(tmp_path):
    ts = E.new_test_set(F.make("deepsea", size=4).test, 2, 0.95, 10, seed=1)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    table, meta = artefacts.read_artefact(tmp_path / "ts.parquet", "test-set")
    meta = {k: v for k, v in meta.items() if k not in ("kind", "bbrlcore_version")}
    for params, match in [({"size": 1}, "family deepsea: size=1: must be an integer"),
                          ({"size": 5}, "gives short_name 'DeepSea-5', the file says "
                                        "'DeepSea-4'")]:
        meta["test_distribution"]["params"] = params
        bad = tmp_path / "bad.parquet"
        artefacts.write_artefact(bad, table, "test-set", meta)
        with pytest.raises(BBRLError, match=rf"^{bad}: embedded distribution: ") as exc:
            E.read_test_set(bad)
        assert match in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------------------------------
# The paper's distributions as family defaults


@pytest.mark.parametrize(("fam", "name"), [("gc", "GC"), ("gdl", "GDL"), ("grid", "Grid")])
def test_paper_defaults_are_the_builtins(tmp_path, fam, name):
    p = F.make(fam)
    for mine, ref in ((p.test, D.builtin(name)), (p.prior("accurate"), D.builtin(name)),
                      (p.prior("uniform"), D.builtin("U" + name))):
        assert mine.same_as(ref)
        assert mine.to_dat().encode() == ref.to_dat().encode()
        D.write_parquet(mine, tmp_path / "mine.parquet")
        D.write_parquet(ref, tmp_path / "ref.parquet")
        assert (tmp_path / "mine.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
        back = D.read_parquet(tmp_path / "mine.parquet")
        for arr in ("theta", "reward"):
            assert np.array_equal(getattr(back, arr), getattr(ref, arr))
