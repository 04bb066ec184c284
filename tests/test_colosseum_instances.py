"""Colosseum's benchmark instances as bbrl names (issue #42).

The table (``bbrlcore.mdp.families.colosseum_instances.RAW``) was written by
``tests/fixtures/colosseum/read_instances.py`` from the gin files of Colosseum's four
tabular benchmarks; the instances bbrl expresses are compared with Colosseum's own MDPs
(fixtures ``bench_*.npz`` of ``tests/fixtures/colosseum/make_fixtures.py``) through the
same state-by-state check as the variants (``test_colosseum_fixtures.py``).

Every instance as Colosseum's benchmark builds it (seed 0) is in
``tests/fixtures/colosseum/instances/`` (``make_fixtures.py --instances``), with the
reward law of each transition. Every instance (all 80: RiverSwim, DeepSea, SimpleGrid,
FrozenLake; MiniGrid-Empty, MiniGrid-Rooms and Taxi in Colosseum's form, ``form`` 1;
stochastic rewards, randomized actions and several starts included) is compared with it
law by law (``test_expressed_instance_is_colosseums_mdp_law_by_law``); RiverSwim's,
DeepSea's and SimpleGrid's transitions are also checked as bbrl's variants'.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import test_colosseum_fixtures as CF
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp.families import colosseum_instances as CI

#: Each instance bbrl expresses and the fixture of Colosseum's own MDP it is.
FIXTURE_OF = {
    "Colosseum-EC-RiverSwim-1": "bench_riverswim_e40",
    "Colosseum-CE-RiverSwim-0": "bench_riverswim_c30_l0.1_r0.2",
    "Colosseum-CE-RiverSwim-3": "bench_riverswim_c80_l0.1_r0.01",
    "Colosseum-EE-DeepSea-0": "bench_deepsea_e10_r0.4",
    "Colosseum-CC-DeepSea-1": "bench_deepsea_c40",
    "Colosseum-CE-DeepSea-0": "bench_deepsea_c20_r0.1",
    "Colosseum-EC-SimpleGrid-2": "bench_simplegrid_e13",
    "Colosseum-CC-SimpleGrid-3": "bench_simplegrid_c25_l0.3",
    "Colosseum-EE-SimpleGrid-2": "bench_simplegrid_e16_l0.01_r0.2",
    "Colosseum-CC-SimpleGrid-1": "bench_simplegrid_c16_l0.065",
    "Colosseum-CE-SimpleGrid-1": "bench_simplegrid_c10_l0.2_r0.01",
}


def test_the_four_benchmarks_have_twenty_instances_each():
    settings = [i.setting for i in CI.INSTANCES.values()]
    assert len(CI.INSTANCES) == 80
    assert {s: settings.count(s) for s in CI.SETTINGS.values()} == dict.fromkeys(
        CI.SETTINGS.values(), 20)
    # a stochastic instance of a family without Colosseum's reward laws needs them
    for i in CI.INSTANCES.values():
        assert (i.problem_params is None) == (i.needs is not None)
        base = i.cls.removesuffix("Episodic").removesuffix("Continuous")
        assert not i.stochastic or base in CI.CATEGORIES or i.needs.startswith(
            "stochastic rewards")


def test_gin_bindings_as_gin_reads_them():
    """A later binding overrides an earlier one (TaxiContinuous.gin of the continuous
    communicating benchmark binds prms_0 twice)."""
    taxi = CI.INSTANCES["Colosseum-CC-Taxi-0"].params
    assert taxi["p_rand"] is None and taxi["default_r"] == ("beta", (0.7, 30.0))
    assert "Colosseum-CC-Taxi-1" not in CI.INSTANCES
    assert CI.INSTANCES["Colosseum-CE-MiniGridEmpty-7"].params["p_rand"] == 0.6


def test_every_expressed_instance_is_colosseums_mdp():
    expressed = {n for n, i in CI.INSTANCES.items()
                 if i.problem_params is not None and not i.stochastic
                 and i.family in ("riverswim", "deepsea", "simplegrid")}
    # (the deterministic ones of the variants' families with a fixture of the variants'
    # tests; every expressed one is checked against the instance fixtures below)
    assert expressed - set(FIXTURE_OF) == {"Colosseum-CE-SimpleGrid-2"}
    for name, case in FIXTURE_OF.items():
        d = CF.load(case)
        p, _ = CF.bbrl_problem(d)
        inst = F.instance_problem(name)
        assert inst.short_name == name and inst.params == {
            **p.params, "concentration": CI.INSTANCE_CONCENTRATION}, name
        assert CI.INSTANCES[name].episodic == bool(int(d["H"]))
        # same nominal model and rewards as the fixture's checked variant
        t = inst.test
        np.testing.assert_allclose(t.mean_model(), p.test.mean_model(), atol=1e-12, rtol=0)
        assert np.array_equal(np.asarray(t.reward), np.asarray(p.test.reward))


def test_instance_names_work_wherever_a_distributions_name_does():
    t = D.load_test("Colosseum-EE-DeepSea-0")
    assert t.short_name == "Colosseum-EE-DeepSea-0" and t.n_states == 55
    assert F.episodic_form(t)[1] == 10
    u = D.load("UColosseum-EE-DeepSea-0")
    assert u.short_name == "UColosseum-EE-DeepSea-0"
    assert np.array_equal(u.theta > 0, t.theta > 0) and set(np.unique(u.theta)) == {0, 1}
    # every drawn MDP is the instance: stochastic rows to about 1e-6
    P = t.draw_mdp(np.random.default_rng(0))
    assert np.abs(P - t.mean_model()).max() < 1e-5
    spec, params, uniform = F.parse_name("UColosseum-CE-RiverSwim-3")
    assert (spec.name, params["size"], params["current"], uniform) == ("riverswim", 80, 0,
                                                                       True)


def test_every_instance_resolves_and_says_so():
    """Every instance resolves (none needs anything), test and uniform prior."""
    assert all(i.needs is None for i in CI.INSTANCES.values())
    for name in ("Colosseum-EC-Taxi-0", "UColosseum-CC-Taxi-0"):
        problem, kind = F.from_name(name)
        assert problem.short_name == name.removeprefix("U")
        assert kind == ("uniform" if name[0] == "U" else "test")


def test_bbrl_families_lists_the_instances(capsys):
    from bbrlcore.cli import main

    assert main(["families", "--colosseum"]) == 0
    out = capsys.readouterr().out
    assert out.count("Colosseum-") == 80
    assert "Colosseum-CC-DeepSea-1         = DeepSea-40-form1-c1e+12" in out
    assert ("Colosseum-CC-DeepSea-0         = DeepSea-40-form1-c1e+12 with Colosseum's Beta "
            "rewards") in out
    assert ("Colosseum-CC-Taxi-0            = Taxi-4-plazy0.01-c1e+12-form1-locs1587-length1 "
            "with Colosseum's Beta rewards") in out
    assert "needs" not in out


INSTANCE_FIXTURES = CF.FIXTURES / "instances"


def test_every_instance_is_in_the_fixtures_with_its_reward_laws():
    names = sorted(p.stem for p in INSTANCE_FIXTURES.glob("*.npz"))
    assert names == sorted(CI.INSTANCES)
    for name in names:
        d = CF.load(name, INSTANCE_FIXTURES)
        i = CI.INSTANCES[name]
        assert d["cls"] == i.cls and (int(d["H"]) > 0) == i.episodic
        # the reward laws' means give Colosseum's expected rewards
        nX, nU = d["R"].shape
        mean = np.where(d["reward_kind"] == 1,
                        d["reward_a"] / np.maximum(d["reward_a"] + d["reward_b"], 1e-300),
                        d["reward_a"])
        r = np.bincount(d["T_keys"] // nX, weights=d["T_values"] * mean, minlength=nX * nU)
        np.testing.assert_allclose(r.reshape(nX, nU), d["R"], atol=1e-5, rtol=1e-5)
        assert bool((d["reward_kind"] == 1).any()) == i.stochastic, name
        assert np.isclose(d["start"].sum(), 1.0)


SAME_TRANSITIONS = [n for n, i in CI.INSTANCES.items()
                    if i.family in ("riverswim", "deepsea", "simplegrid")]


@pytest.mark.parametrize("name", SAME_TRANSITIONS)
def test_instance_transitions_are_bbrls_variants(name):
    """RiverSwim, DeepSea and SimpleGrid instances, stochastic rewards or not: bbrl's
    variant has Colosseum's transitions, start and episode length, state by state."""
    d = CF.load(name, INSTANCE_FIXTURES)
    p, idx = CF.bbrl_problem(d)
    sub = p.test.mean_model()[idx][:, :, idx]
    assert np.allclose(sub.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(sub, CF.colosseum_T(d), atol=1e-6, rtol=0)
    assert p.test.initial_state == idx[np.flatnonzero(d["start"])[0]]
    if int(d["H"]):
        assert F.episodic_form(p.test)[1] == int(d["H"])
    if CI.INSTANCES[name].problem_params is not None and not CI.INSTANCES[name].stochastic:
        R = np.asarray(p.test.reward)
        r = (p.test.mean_model() * R).sum(axis=2)[idx]
        np.testing.assert_allclose(r, d["R"], atol=1e-6, rtol=1e-6)


def test_episode_lengths_of_the_drawn_forms():
    """FrozenLake's and Taxi's natural episode lengths are Colosseum's (Taxi: 1.5·size²),
    in the drawn form (``form`` 0) as in Colosseum's; MiniGrid-Empty's drawn form's is
    one more (the step from home, the family's docstring). Colosseum's Taxi starts
    uniformly on every (taxi, passenger, destination) with passenger ≠ destination (72
    states for size 4), MiniGrid-Empty on its 3 or 5 (its form, ``form`` 1, does too)."""
    for name, i in CI.INSTANCES.items():
        if not i.episodic or i.cls.startswith(("MiniGridRooms", "RiverSwim", "DeepSea",
                                               "SimpleGrid")):
            continue
        d = CF.load(name, INSTANCE_FIXTURES)
        fam = i.family or "minigrid_empty"
        H = F.episodic_form(F.make(fam, size=i.params["size"]).test)[1]
        extra = 1 if fam == "minigrid_empty" else 0
        assert H == int(d["H"]) + extra, name
        starts = int((d["start"] > 0).sum())
        if fam == "minigrid_empty":
            assert starts == i.params["n_starting_states"]
        if fam == "taxi" and i.params["size"] == 4:
            assert starts == 72


EXPRESSED = [n for n, i in CI.INSTANCES.items() if i.problem_params is not None]


def bbrl_indices(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """bbrl's state of each Colosseum state and bbrl's action of each Colosseum action
    (an instance takes Colosseum's action labels: the identity)."""
    act = np.arange(d["R"].shape[1])
    if d["cls"].startswith("FrozenLake"):
        s = d["kwargs"]["size"]
        return d["nodes"][:, 0] * s + d["nodes"][:, 1], act
    if d["cls"].startswith("MiniGridEmpty"):  # (X, Y, Dir): tile r·s + c, r = s − 1 − Y
        s = d["kwargs"]["size"]
        X, Y, h = d["nodes"].T
        return 4 * ((s - 1 - Y) * s + X) + h, act
    if d["cls"].startswith("Taxi"):  # (X, Y, XPass, YPass, XDest, YDest)
        from bbrlcore.mdp.families.taxi import colosseum_tiles

        kw = d["kwargs"]
        tiles = colosseum_tiles(kw["size"], kw["length"], kw["width"], kw["space"])
        index = {t: i for i, t in enumerate(tiles)}
        # the locations, in the order of their tiles (as the family's code keeps them)
        locs = sorted({index[(int(a), int(b))] for a, b in d["nodes"][:, 4:6]})
        L = len(locs)
        out = []
        for x, y, xp, yp, xd, yd in d["nodes"]:
            dest = locs.index(index[(xd, yd)])
            q = dest if xp == -1 else locs.index(index[(xp, yp)])
            out.append(index[(x, y)] * L * L + q * L + dest)
        return np.array(out), act
    if d["cls"].startswith("MiniGridRooms"):  # (X, Y, Dir): tile of layout's (X, Y)
        from bbrlcore.mdp.families.minigrid_rooms import layout

        index = {t: i for i, t in enumerate(layout(d["kwargs"]["room_size"],
                                                   d["kwargs"]["n_rooms"]))}
        return np.array([4 * index[(x, y)] + h for x, y, h in d["nodes"]]), act
    return CF.bbrl_problem(d)[1], act


def colosseum_laws_in_bbrl(d: dict, idx: np.ndarray, act: np.ndarray, nX: int,
                           nU: int) -> tuple:
    """The fixture's law of each Colosseum transition, keyed by bbrl's transition:
    (bbrl keys increasing, kind, a, b)."""
    n = d["R"].shape[0]
    xu, y = np.divmod(d["T_keys"], n)
    x, u = np.divmod(xu, nU)
    keys = (idx[x] * nU + act[u]) * nX + idx[y]
    order = np.argsort(keys)
    return (keys[order], d["reward_kind"][order], d["reward_a"][order],
            d["reward_b"][order])


@pytest.mark.parametrize("name", EXPRESSED)
def test_expressed_instance_is_colosseums_mdp_law_by_law(name):
    """Every instance bbrl expresses against Colosseum's own MDP at seed 0
    (``instances/<name>.npz``), state by state: transitions (Colosseum's float32: to
    1e-6), the reward law of each transition (kind; Beta parameters to 1e-12 relative,
    both computed in float64 from the same formula or gin values; a deterministic
    reward to 1e-12), expected rewards (Colosseum's float32 R: to 1e-6), the starting
    distribution, H, and optimal values as ``test_colosseum_fixtures`` compares them
    (episodic: float32 backward induction, to 1e-5 per step; continuous: Colosseum's
    inexact value iteration, one-sided)."""
    from bbrlcore.mdp.environment import BETA, start_probabilities

    d = CF.load(name, INSTANCE_FIXTURES)
    t = D.load_test(name)
    idx, act = bbrl_indices(d)
    nX, nU = t.n_states, t.n_actions
    P = t.mean_model()
    sub = P[idx][:, act][:, :, idx]
    assert np.allclose(sub.sum(axis=2), 1.0, atol=1e-12)  # (bbrl's other states: unreachable)
    np.testing.assert_allclose(sub, CF.colosseum_T(d), atol=1e-6, rtol=0)
    # each transition's reward law, on the transitions from Colosseum's states
    keys, kind, a, b = colosseum_laws_in_bbrl(d, idx, act, nX, nU)
    support = np.flatnonzero(P.reshape(-1) > 0)
    support = support[np.isin(support // (nU * nX), idx)]
    assert np.array_equal(support, keys)  # the same transitions, no others
    laws = t.reward_laws
    R = np.asarray(t.reward).reshape(-1)
    if laws is None:
        assert (kind == 0).all() and not CI.INSTANCES[name].stochastic
        np.testing.assert_allclose(R[keys], a, rtol=1e-12, atol=1e-12)
    else:
        assert (kind == 1).all() and CI.INSTANCES[name].stochastic
        at = np.searchsorted(laws.keys, keys)
        assert np.array_equal(laws.keys[at], keys) and (laws.kind == BETA).all()
        assert (laws.loc == 0).all() and (laws.scale == 1).all()
        np.testing.assert_allclose(laws.a[at], a, rtol=1e-12, atol=0)
        np.testing.assert_allclose(laws.b[at], b, rtol=1e-12, atol=0)
        np.testing.assert_allclose(R[keys], a / (a + b), rtol=1e-12, atol=0)
    # expected rewards, start, H
    r = (P * np.asarray(t.reward)).sum(axis=2)[idx][:, act]
    np.testing.assert_allclose(r, d["R"], atol=1e-6, rtol=1e-6)
    mu = start_probabilities(nX, t.initial_state, getattr(t, "starts", None))
    # (all of bbrl's starting mass on Colosseum's states; 72 × 1/72 sums to 1 within
    # rounding, in whichever order)
    assert np.array_equal(mu[idx], d["start"]) and abs(mu[idx].sum() - 1.0) <= 1e-12
    H = int(d["H"])
    assert F.episodic_form(t)[1] == (H or F.episodic_form(t)[1])
    V = CF.optimal(sub, r, H)
    if H:
        np.testing.assert_allclose(V, d["V_opt"], atol=1e-5 * H, rtol=0)
    else:
        gap = V - d["V_opt"]
        assert gap.min() >= -CF.ROUNDING and gap.max() <= CF.CONTINUOUS_GAP


def test_how_many_instances_bbrl_expresses():
    """Every instance of the seven families, stochastic rewards or randomized actions or
    not (80): MiniGrid-Empty, MiniGrid-Rooms and Taxi in Colosseum's form."""
    expressed = {n.split("-")[2] for n in EXPRESSED}
    assert len(EXPRESSED) == 80 and expressed == {
        "RiverSwim", "DeepSea", "SimpleGrid", "FrozenLake", "MiniGridEmpty", "MiniGridRooms",
        "Taxi"}
    forms = {n: CI.INSTANCES[n].problem_params.get("form") for n in EXPRESSED}
    assert {n for n, f in forms.items() if f == 1 and "DeepSea" not in n} == {
        n for n in EXPRESSED if n.split("-")[2] in ("MiniGridEmpty", "MiniGridRooms", "Taxi")}


def _minigrid_draws(name: str) -> tuple[int, tuple[int, ...]]:
    """The goal tile and the starts of a MiniGrid instance read off its fixture (bbrl's
    indices): the tile whose entering transitions pay the optimal law, the starting
    distribution's states."""
    d = CF.load(name, INSTANCE_FIXTURES)
    idx, _ = bbrl_indices(d)
    nX = d["R"].shape[0]
    y = d["T_keys"] % nX
    stochastic = (d["reward_kind"] == 1).any()
    optimal = d["reward_a"] > d["reward_b"] if stochastic else d["reward_a"] == 1.0
    goal = np.unique(idx[y[optimal]] // 4)
    assert goal.size == 1 and np.array_equal(optimal, idx[y] // 4 == goal[0])
    return int(goal[0]), tuple(sorted(int(v) for v in idx[d["start"] > 0]))


def test_minigrid_seed0_draws_are_colosseums():
    """The stored seed-0 draws (goal tile, starts) of every MiniGrid instance are the ones
    in Colosseum's own MDPs, and the starts are as many as its n_starting_states (2 for
    MiniGrid-Rooms, Colosseum's default), uniformly."""
    tables = {**CI.MINIGRID_EMPTY_SEED0, **CI.MINIGRID_ROOMS_SEED0}
    minigrid = {n for n in CI.INSTANCES if "-MiniGrid" in n}
    assert set(tables) == minigrid and len(minigrid) == 37
    for name in sorted(minigrid):
        assert tables[name] == _minigrid_draws(name), name
        n = CI.INSTANCES[name].params.get("n_starting_states", 2)
        assert len(tables[name][1]) == n
        d = CF.load(name, INSTANCE_FIXTURES)
        assert set(d["start"][d["start"] > 0]) == {1.0 / n}


@pytest.mark.parametrize("name", ["Colosseum-EE-MiniGridEmpty-3",
                                  "Colosseum-EC-MiniGridRooms-3", "Colosseum-EC-Taxi-0"])
def test_an_instance_plays_from_its_starts(name):
    """A test set of an episodic MiniGrid or Taxi instance (and its uniform prior's
    agent) starts episodes from Colosseum's starts: its optimal episode value is
    Colosseum's optimal value averaged over them."""
    from bbrlcore import protocol as E

    d = CF.load(name, INSTANCE_FIXTURES)
    t = D.load_test(name)
    H = int(d["H"])
    assert t.starts is not None and t.starts[0].size == int((d["start"] > 0).sum())
    ts = E.new_test_set(t, 1, 1.0, 2 * H, seed=0, episode_length=H)
    want = float(d["V_opt"] @ d["start"])
    assert ts.references["optimal_episode_value"][0] == pytest.approx(want, abs=1e-5 * H)
    u = D.load("U" + name)
    assert u.short_name == "U" + name and np.array_equal(u.theta > 0, t.theta > 0)
    a = E.train_agent("random", {}, u, horizon=2 * H, progress=False)
    run = E.run_agent(ts, a, progress=False)
    assert len(run["rewards"].to_list()[0]) == 2 * H


def test_taxi_seed0_locations_are_colosseums():
    """The stored seed-0 locations of every Taxi instance are the tiles where Colosseum's
    own MDP has passengers and destinations, its walls those of ``colosseum_tiles``, and
    its starts every waiting passenger on every free tile (72 or 108), uniformly."""
    from bbrlcore.mdp.families.taxi import colosseum_tiles

    taxis = {n for n in CI.INSTANCES if "-Taxi-" in n}
    assert set(CI.TAXI_SEED0) == taxis and len(taxis) == 6
    for name in sorted(taxis):
        d = CF.load(name, INSTANCE_FIXTURES)
        kw = d["kwargs"]
        N = d["nodes"]
        assert {tuple(v) for v in N[:, 4:6].tolist()} == set(CI.TAXI_SEED0[name])
        assert {tuple(v) for v in N[:, 2:4].tolist()} == {*CI.TAXI_SEED0[name], (-1, -1)}
        tiles = colosseum_tiles(kw["size"], kw["length"], kw["width"], kw["space"])
        assert {tuple(v) for v in N[:, :2].tolist()} == set(tiles)
        waiting = N[:, 2] != -1
        assert np.array_equal(d["start"] > 0, waiting)
        assert waiting.sum() == 6 * len(tiles) == {4: 72, 5: 108}[kw["size"]]


@pytest.mark.parametrize("family, params, msg", [
    ("minigrid_empty", {"size": 3, "goal": 2}, "goal=2: the goal and starts are given in "
     "form 1 (Colosseum's) only"),
    ("minigrid_empty", {"size": 3, "form": 1, "goal": 2},
     "form=1 (Colosseum's) needs the goal tile (goal) and the starts (starts)"),
    ("minigrid_empty", {"size": 3, "form": 1, "goal": 9, "starts": 1},
     "goal=9: a tile of the room of size 3 is in [0, 9)"),
    ("minigrid_empty", {"size": 3, "form": 1, "goal": 2, "starts": 37},
     "starts=37: not a code of distinct start states in [0, 36) (starts_code)"),
    ("minigrid_rooms", {"size": 2, "form": 1, "goal": 19, "starts": 1},
     "starts=1: codes 1 start states, not n_starts=2"),
    ("minigrid_rooms", {"size": 2, "starts": 1},
     "starts=1: the goal and starts are given in form 1 (Colosseum's) only"),
    ("taxi", {"size": 4, "length": 1}, "length=1: the locations and walls are given in "
     "form 1 (Colosseum's) only"),
    ("taxi", {"size": 4, "form": 1}, "form=1 (Colosseum's) needs its locations"),
    ("taxi", {"size": 4, "form": 1, "length": 1, "locations": 1},
     "locations=1: not a code of at least two distinct tiles in [0, 12)"),
])
def test_a_bad_colosseum_form_is_one_line(family, params, msg):
    with pytest.raises(BBRLError, match=re.escape(msg)) as e:
        F.make(family, **params)
    assert "\n" not in str(e.value) and f"family {family}" in str(e.value)


def test_colosseum_forms_leave_the_drawn_forms_as_they_were():
    """form 0 (the default) is bbrl's MiniGrid and Taxi: same names, states, initial
    state (MiniGrid's home), H."""
    for fam, H in (("minigrid_empty", 10), ("minigrid_rooms", 16), ("taxi", 24)):
        p = F.make(fam, size={"minigrid_empty": 3, "minigrid_rooms": 2, "taxi": 4}[fam])
        assert "form" not in p.short_name and not isinstance(p.test, D.FDMDistribution)
        assert p.test.initial_state == (0 if fam == "taxi" else p.test.n_states - 1)
        assert F.episodic_form(p.test)[1] == H


def test_a_stochastic_instance_plays_its_beta_rewards():
    """The uniform prior of a stochastic instance knows its expected rewards (Colosseum's
    Beta means, not the deterministic ones) and its test distribution carries the laws
    into its artefacts' metadata."""
    from bbrlcore.mdp.environment import environment_dict

    t = D.load_test("Colosseum-EE-RiverSwim-0")
    u = D.load("UColosseum-EE-RiverSwim-0")
    assert np.array_equal(np.asarray(u.reward), np.asarray(t.reward))
    # the gin file's laws: sub-optimal Beta(2.4, 24), other Beta(2.4, 249), not 0.005, 0
    R = np.asarray(t.reward)
    assert R[0, 0, 0] == 2.4 / (2.4 + 24.0) and R[1, 1, 2] == 2.4 / (2.4 + 249.0)
    env = environment_dict(t)
    assert len(env["reward_laws"]["keys"]) == t.reward_laws.size == 26


def test_an_agent_plays_a_stochastic_instance_from_its_uniform_prior():
    """PSRL on Colosseum-EE-RiverSwim-0 with its uniform prior: every reward is a Beta
    draw in (0, 1), none of them one of the expected rewards, the same seed the same
    rewards."""
    from bbrlcore import protocol as E

    t = D.load_test("Colosseum-EE-RiverSwim-0")
    ts = E.new_test_set(t, 2, 0.95, 50, seed=1, episode_length=5)
    a = E.train_agent("psrl", {}, D.load("UColosseum-EE-RiverSwim-0"), horizon=50,
                      progress=False)
    runs = [E.run_agent(ts, a, progress=False) for _ in range(2)]
    assert runs[0]["rewards"].to_list() == runs[1]["rewards"].to_list()
    x = np.concatenate([np.asarray(v) for v in runs[0]["rewards"].to_list()])
    assert x.size == 100 and ((x > 0) & (x < 1)).all()
    means = {float(np.float32(m)) for m in np.unique(np.asarray(t.reward))}
    assert not any(float(np.float32(v)) in means for v in x)


@pytest.mark.parametrize("params, msg", [
    ({"size": 3, "lake": 1}, "lake=1: the start (bit 0) and the goal (bit 8) are frozen"),
    ({"size": 2, "lake": 6}, "lake=6: no frozen path links the start to the goal"),
    ({"size": 2, "lake": 16}, "lake=16: sets a bit beyond the 4 tiles of size 2"),
    ({"size": 8, "lake": 2}, "lake=2: a fixed lake is given for size <= 7 only"),
])
def test_a_bad_fixed_lake_is_one_line(params, msg):
    with pytest.raises(BBRLError, match=re.escape(msg)) as e:
        F.make("frozenlake", **params)
    assert "\n" not in str(e.value) and "family frozenlake" in str(e.value)


def test_a_fixed_lake_is_one_fdm_and_the_drawn_lakes_stay_as_they_were():
    from bbrlcore.mdp.families.frozenlake import lake_holes, lake_of

    lake = lake_of(["SFFF", "FFFF", "HFFF", "FFFG"])
    t = F.make("frozenlake", size=4, lake=lake).test
    assert isinstance(t, D.FDMDistribution) and t.short_name == "FrozenLake-4-lake256"
    assert lake_holes(4, lake)[2, 0] and lake_holes(4, lake).sum() == 1
    # no move leads into the hole (tile 8): from tile 4 down leads to the start
    P = t.mean_model()
    assert P[:, :, 8].max() < 1e-9 and np.isclose(P[4, 2, 0], 0.5)
    d = F.make("frozenlake", size=4)
    assert d.short_name == "FrozenLake-4" and not isinstance(d.test, D.FDMDistribution)
