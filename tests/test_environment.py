"""Stochastic rewards and starting distributions (issue 42): bbrlcore.mdp.environment and
every player that honours them.

The Monte Carlo checks draw n rewards (or starts) with a fixed seed and accept the
empirical mean within ``Z`` standard errors of the law's mean (``Z`` = 5: a correct
sampler fails with probability < 1e-6), and the empirical variance within ``Z`` standard
errors of the law's variance, the variance of the sample variance estimated from the
sample's fourth central moment.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents.api import CompiledAgent, PythonAgent
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families, rows
from bbrlcore.mdp.environment import (
    RewardLaws,
    beta_laws,
    check_start,
    law_rows,
    start_array,
    with_environment,
)
from bbrlcore.mdp.references import references

#: standard errors allowed by the Monte Carlo checks (module docstring)
Z = 5.0
#: draws of the Monte Carlo checks
N = 6000

#: (kind, loc, scale, a, b) of the laws checked, with their mean and variance
LAWS = [
    ("gaussian", 0.3, 2.0, 0.0, 0.0),
    ("bernoulli", -1.0, 3.0, 0.2, 0.0),
    ("beta", 1.0, 2.0, 2.0, 5.0),
    ("beta", 0.0, 1.0, 0.5, 0.7),  # (shapes below 1: the boosted Gamma sampler)
]


def _moments(kind: str, loc: float, scale: float, a: float, b: float) -> tuple[float, float]:
    if kind == "gaussian":
        return loc, scale**2
    if kind == "bernoulli":
        return loc + scale * a, scale**2 * a * (1 - a)
    m = a / (a + b)
    return loc + scale * m, scale**2 * a * b / ((a + b) ** 2 * (a + b + 1))


def _check_sample(x: np.ndarray, mean: float, var: float, what: str) -> None:
    n = x.size
    assert abs(x.mean() - mean) <= Z * np.sqrt(var / n), (what, x.mean(), mean)
    c = x - x.mean()
    s2, m4 = float((c**2).mean()), float((c**4).mean())
    assert abs(s2 - var) <= Z * np.sqrt(max(m4 - s2**2, 0.0) / n) + 1e-12, (what, s2, var)


def _one_state(law: tuple) -> D.FDMDistribution:
    """One state, one action: every step is the transition (0, 0, 0) with ``law``."""
    kind, loc, scale, a, b = law
    mean, _ = _moments(*law)
    d = D.FDMDistribution("one", "One", np.ones((1, 1, 1)), np.full((1, 1, 1), mean))
    return with_environment(d, RewardLaws.make(1, 1, [0], [kind], [loc], [scale], [a],
                                               [b]))


@njit(cache=True)
def _jit_reset(setup):
    return np.zeros(1)


@njit(cache=True)
def _jit_act(state, x):
    return 0


@njit(cache=True)
def _jit_observe(state, x, u, y, r):
    state[0] += r


class UniformJit(CompiledAgent):
    """A compiled plugin (one action: it plays it)."""

    name = "jit-one"
    reset, act, observe = _jit_reset, _jit_act, _jit_observe


class PyUniform(PythonAgent):
    """A Python plugin playing uniformly at random (its own generator)."""

    name = "py-uniform"

    def act(self, state: int) -> int:
        return int(self.rng.integers(self.prior.n_actions))


def _py_player(prior, ep):
    alg = agents.registry.as_algorithm(PyUniform, "test")
    return alg.make_player(prior, {}, None, ep)


def _rewards(player: str, d, horizon: int, episode_length: int = 0, seed: int = 3
             ) -> np.ndarray:
    """The rewards of one trajectory of ``player`` on the test set of ``d``'s first MDP."""
    ts = E.new_test_set(d, 1, 0.95, horizon, seed=0, episode_length=episode_length,
                        references=False)
    ep = ts.episode()
    out = np.zeros(horizon)
    if player == "python":
        play = _py_player(d, ep)
    elif player == "sboss":
        play = agents.get("sboss").make_player(d, {"epsilon": 1.0, "delta": 1.0,
                                                   "compat": False}, None, ep)
    else:
        play = agents.get(player).make_player(d, {}, None, ep)
    play(np.ascontiguousarray(ts.mdps[0]), seed, out)
    return out


def _gym_rewards(d, horizon: int, episode_length: int = 0) -> np.ndarray:
    from bbrlcore.protocol.gym import TestSetEnv

    H = episode_length or horizon
    ts = E.new_test_set(d, 1, 0.95, H, seed=0, references=False)
    env = TestSetEnv(ts)
    out = []
    env.reset(seed=0)
    while len(out) < horizon:
        _, r, _, trunc, _ = env.step(0)
        out.append(r)
        if trunc:
            env.reset()
    return np.asarray(out)


# ---------------------------------------------------------------------------------------
# Reward laws


@pytest.mark.parametrize("player", ["random", "sboss", "python", "gym"])
@pytest.mark.parametrize("law", LAWS, ids=lambda v: f"{v[0]}-{v[3]}")
def test_drawn_rewards_have_their_laws_mean_and_variance(player, law):
    """Each player draws the reward of every step from its law, from its own stream:
    numba's generator (Random), SBOSS's xoshiro state, the Python player's and the gym
    environment's NumPy generators."""
    d = _one_state(law)
    x = _gym_rewards(d, N) if player == "gym" else _rewards(player, d, N)
    mean, var = _moments(*law)
    _check_sample(x, mean, var, f"{player} {law}")


def test_law_means_are_the_rewards_and_laws_pack_on_the_slots():
    laws = RewardLaws.make(2, 1, [0, 3], ["bernoulli", "beta"], [1.0, 0.0], [2.0, 4.0],
                           [0.25, 1.0], [0.0, 3.0])
    assert laws.means().tolist() == [1.5, 1.0]
    lay = rows.layout_of(np.array([[[True, False]], [[True, True]]]))
    packed = law_rows(laws, lay).reshape(5, 2, 1, lay.width)
    # transition (1, 0, 1) is slot 1 of row (1, 0)
    assert packed[:, 1, 0, 1].tolist() == [3.0, 0.0, 4.0, 1.0, 3.0]
    assert packed[:, 0, 0, 0].tolist() == [2.0, 1.0, 2.0, 0.25, 0.0]
    assert packed[0, 1, 0, 0] == 0.0  # (1, 0, 0): no law, its mean, no draw


def test_constant_laws_are_dropped_and_a_distribution_keeps_expected_rewards():
    laws = RewardLaws.make(1, 1, [0], ["constant"], [2.0], [0.0])
    assert laws.size == 0
    d = families.make("riverswim", size=4, reward_noise=3.0).test
    plain = families.make("riverswim", size=4).test
    assert np.array_equal(d.reward_rows, plain.reward_rows)  # means, unchanged
    assert d.reward_laws.size > 0 and plain.reward_laws is None
    assert np.allclose(d.reward_laws.means(), d.reward.reshape(-1)[d.reward_laws.keys],
                       rtol=1e-12)


def test_beta_laws_follow_colosseums_parametrisation():
    """Colosseum's make_reward_stochastic on [0, 1]: Beta(c, c(1/m - 1)), mean m."""
    d = families.make("riverswim", size=3).test
    laws = beta_laws(d, 4.0)
    m = d.reward.reshape(-1)[laws.keys]
    assert ((m > 0) & (m < 1)).all()
    assert np.allclose(laws.a, 4.0) and np.allclose(laws.b, 4.0 * (1 / m - 1))
    assert np.allclose(laws.loc, 0.0) and np.allclose(laws.scale, 1.0)


# ---------------------------------------------------------------------------------------
# Starting distributions

#: three starting states of a three-state MDP
STARTS = ([0, 1, 2], [0.2, 0.3, 0.5])


def _start_revealing() -> D.FDMDistribution:
    """Three states, one action, every state leads to every state; the reward of a
    transition is its source state, so an episode of one step pays its start."""
    R = np.repeat(np.arange(3.0)[:, None, None], 3, axis=2)
    return with_environment(D.FDMDistribution("s", "S", np.ones((3, 1, 3)), R),
                            starts=STARTS)


@pytest.mark.parametrize("player", ["random", "sboss", "python", "gym"])
def test_episodes_start_from_the_starting_distribution(player):
    d = _start_revealing()
    x = _gym_rewards(d, N, 1) if player == "gym" else _rewards(player, d, N, 1)
    p = np.asarray(STARTS[1])
    mean = float(p @ np.arange(3.0))
    _check_sample(x, mean, float(p @ np.arange(3.0) ** 2) - mean**2, player)


def test_one_start_and_every_state_alike_draw_as_before():
    """m = 1 is the fixed initial state (no draw), m = 0 the uniform one: the same
    trajectories as ``initial_state`` gives them."""
    assert start_array(3, 2, None).tolist() == [[2.0], [1.0]]
    assert start_array(3, 0, (np.array([1]), np.array([1.0]))).tolist() == [[1.0], [1.0]]
    gc = D.builtin("GC")
    ts = E.new_test_set(gc, 2, 0.95, 60, seed=0)
    one = with_environment(gc, starts=([0], [1.0]))
    ts1 = E.new_test_set(one, 2, 0.95, 60, seed=0)
    for alg in ("random", "psrl"):
        a = E.train_agent(alg, {}, gc, progress=False)
        r0 = E.run_agent(ts, a, progress=False)["discounted_return"].to_list()
        r1 = E.run_agent(ts1, a, progress=False)["discounted_return"].to_list()
        assert r0 == r1, alg


def test_references_are_the_expectation_over_the_starts():
    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(4), size=(4, 2))
    R = rng.random((4, 2, 4))
    starts = (np.array([0, 2, 3]), np.array([0.5, 0.25, 0.25]))
    for H in (0, 5):
        got = references(P, R, 0, H, starts=starts)
        each = [references(P, R, int(s), H) for s in starts[0]]
        for name in ("optimal_average_reward", "worst_average_reward",
                     "random_average_reward", "optimal_episode_value",
                     "worst_episode_value", "random_episode_value"):
            want = sum(float(p) * getattr(r, name) for p, r in zip(starts[1], each,
                                                                   strict=True))
            g = getattr(got, name)
            assert (np.isnan(g) and np.isnan(want)) or g == pytest.approx(want, rel=1e-12)


def test_a_test_sets_references_use_its_starts():
    d = families.make("riverswim", size=3).test
    e = with_environment(d, starts=([0, 2], [0.75, 0.25]))
    ts = E.new_test_set(e, 2, 1.0, 20, seed=0, episode_length=4)
    lay = ts.layout
    for i in range(2):
        P = rows.scatter(ts.mdps[i], lay)
        want = (0.75 * references(P, d.reward, 0, 4).optimal_episode_value
                + 0.25 * references(P, d.reward, 2, 4).optimal_episode_value)
        got = ts.references["optimal_episode_value"][i]
        assert got == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Every built-in under laws and starts

BUILTINS = [
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": 0.1}),
    ("soft-max", {"tau": 0.05}), ("beb", {"beta": 2.5}),
    ("sboss", {"epsilon": 0.1, "delta": 1.0}), ("opps-ds", {"formula_set": "F2",
                                                            "n_draws": 5}),
    ("formula", {"formula": "Q2/Q0"}), ("bamcp", {"K": 5, "D": 4}),
    ("bfs3", {"K": 3, "C": 2, "D": 4}), ("psrl", {}), ("boss", {"K": 2, "B": 5}),
    ("bolt", {"eta": 5.0}), ("mbie-eb", {"beta": 2.5}), ("ucrl2", {}),
    ("q-learning-ucb", {}),
]


@pytest.fixture(scope="module")
def noisy_chain():
    p = families.make("deepsea", size=3, reward_noise=2.0)
    return p, with_environment(p.test, starts=([0, 1, 2], [0.5, 0.3, 0.2]))


@pytest.mark.parametrize("H", [0, 5])
@pytest.mark.parametrize("alg, params", BUILTINS, ids=[a for a, _ in BUILTINS])
def test_every_builtin_plays_laws_and_starts_reproducibly(noisy_chain, alg, params, H):
    """Finite returns, the same seed the same trajectory, and rewards that are drawn
    (not the deterministic means): the undiscounted return differs from the one of
    the same distribution without laws for some MDP."""
    p, e = noisy_chain
    ts = E.new_test_set(e, 2, 0.95, 30, seed=1, episode_length=H)
    try:
        a = E.train_agent(alg, {k: str(v) for k, v in params.items()}, p.prior("accurate"),
                          horizon=30, progress=False)
        r1 = E.run_agent(ts, a, progress=False)
    except BBRLError as exc:  # (an algorithm of one form only says so)
        assert "episod" in str(exc) or "continuing" in str(exc), str(exc)
        return
    r2 = E.run_agent(ts, a, progress=False)
    assert np.isfinite(r1["discounted_return"].to_numpy()).all()
    assert r1["discounted_return"].to_list() == r2["discounted_return"].to_list()
    assert r1["rewards"].to_list() == r2["rewards"].to_list()
    # a left move pays 0 on average, drawn from a Beta on DeepSea's reward range
    got = np.concatenate([np.asarray(v) for v in r1["rewards"].to_list()])
    means = set(np.unique(p.test.reward).tolist())
    assert any(float(np.float32(v)) not in {float(np.float32(m)) for m in means}
               for v in got)


def test_a_compiled_plugin_honours_laws_and_starts():
    """The package's compiled loop around a plugin's functions draws rewards and starts
    as the built-ins do: the same draws as Random (the same numba stream) when the
    plugin plays as Random does."""
    d = _start_revealing()
    alg = agents.registry.as_algorithm(UniformJit, "test")
    ts = E.new_test_set(d, 1, 0.95, N, seed=0, episode_length=1, references=False)
    out = np.zeros(N)
    alg.make_player(d, {}, None, ts.episode())(np.ascontiguousarray(ts.mdps[0]), 3, out)
    p = np.asarray(STARTS[1])
    mean = float(p @ np.arange(3.0))
    _check_sample(out, mean, float(p @ np.arange(3.0) ** 2) - mean**2, "compiled")


# ---------------------------------------------------------------------------------------
# Artefacts


def test_test_sets_and_distributions_keep_their_laws_and_starts(tmp_path):
    law = RewardLaws.make(1, 2, [0, 1], ["beta", "bernoulli"], [0.0, 1.0], [2.0, 1.0],
                          [1.0, 0.5], [1.0, 0.0])
    d = D.FDMDistribution("two", "Two", np.ones((1, 2, 1)), np.array([[[1.0]], [[1.5]]])
                          .reshape(1, 2, 1))
    d = with_environment(d, law)
    D.write_parquet(d, tmp_path / "d.parquet")
    back = D.read_test(tmp_path / "d.parquet")
    assert back.same_as(d) and back.reward_laws.to_dict() == law.to_dict()
    plain = D.FDMDistribution.from_dict({k: v for k, v in d.to_dict().items()
                                         if k != "reward_laws"})
    assert plain.reward_laws is None and not plain.same_as(d)
    fam = with_environment(families.make("deepsea", size=4, reward_noise=5.0).test,
                           starts=([0, 1], [0.5, 0.5]))
    for test in (d, fam):
        ts = E.new_test_set(test, 2, 0.95, 20, seed=0, episode_length=4 if test is fam else 0)
        E.write_test_set(ts, tmp_path / "t.parquet")
        again = E.read_test_set(tmp_path / "t.parquet")
        assert again.test.same_as(test)
        assert again.test.reward_laws.to_dict() == test.reward_laws.to_dict()
        assert (again.test.starts is None) == (test.starts is None)
        a = E.train_agent("random", {}, d if test is d else families.make(
            "deepsea", size=4).prior("accurate"), progress=False)
        assert E.run_agent(ts, a, progress=False)["rewards"].to_list() == E.run_agent(
            again, a, progress=False)["rewards"].to_list()


# ---------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("kind, a, b, msg", [
    ("beta", 0.0, 1.0, "a Beta's parameters a and b must be > 0"),
    ("beta", 1.0, -2.0, "a Beta's parameters a and b must be > 0"),
    ("bernoulli", 1.5, 0.0, "a Bernoulli's probability a must be in [0, 1]"),
    ("bernoulli", -0.1, 0.0, "a Bernoulli's probability a must be in [0, 1]"),
])
def test_laws_out_of_range_are_one_line_naming_the_transition(kind, a, b, msg):
    with pytest.raises(BBRLError) as err:
        RewardLaws.make(2, 2, [5], [kind], [0.0], [1.0], [a], [b], what="laws")
    text = str(err.value)
    assert "\n" not in text and text.startswith("laws: transition (1, 0, 1)")
    assert text.endswith(msg)


def test_bad_starts_and_laws_that_do_not_fit_are_refused():
    with pytest.raises(BBRLError, match=r"^x: the starting probabilities sum to 0.9, not 1$"):
        check_start(3, [0, 1], [0.5, 0.4], "x")
    d = families.make("chain", size=3).test
    with pytest.raises(BBRLError, match=r"Chain-3: starts: starting states must be"):
        with_environment(d, starts=([0, 3], [0.5, 0.5]))
    bad_mean = RewardLaws.make(3, 2, [1], ["gaussian"], [123.0], [1.0])
    with pytest.raises(BBRLError, match=r"has mean 123 but the distribution's \(expected\) "
                                        r"reward is"):
        with_environment(d, bad_mean)
    with pytest.raises(BBRLError, match=r"^family chain: reward_noise=-1: must be"):
        families.make("chain", size=3, reward_noise=-1)


def test_a_bad_start_or_law_in_a_file_is_one_line_naming_it():
    d = D.builtin("GC").to_dict()
    with pytest.raises(BBRLError, match=r"^d.json: starts: the starting probabilities sum "
                                        r"to 1.1, not 1$"):
        D.FDMDistribution.from_dict({**d, "starts": {"states": [0, 1],
                                                     "probs": [0.5, 0.6]}}, "d.json")
    law = {"keys": [1], "kind": [3], "loc": [0.0], "scale": [1.0], "a": [0.0], "b": [1.0]}
    with pytest.raises(BBRLError, match=r"^d.json: reward laws: transition \(0, 0, 1\) .*"
                                        r"a Beta's parameters a and b must be > 0$"):
        D.FDMDistribution.from_dict({**d, "reward_laws": law}, "d.json")


def test_a_distribution_file_with_a_bad_start_writes_nothing(tmp_path, capsys):
    """`bbrl experiment new` on a distribution whose starts do not sum to one: one line
    naming the file and the key, exit status 2, no test set written."""
    from bbrlcore.cli import main
    from bbrlcore.formats import artefacts

    good = with_environment(D.builtin("GC"), starts=([0, 1], [0.5, 0.5]))
    D.write_parquet(good, tmp_path / "good.parquet")
    table, meta = artefacts.read_artefact(tmp_path / "good.parquet", "distribution")
    meta = {k: v for k, v in meta.items() if k in ("name", "short_name", "n_states",
                                                   "n_actions", "initial_state",
                                                   "reward_type")}
    meta["starts"] = {"states": [0, 1], "probs": [0.5, 0.6]}
    artefacts.write_artefact(tmp_path / "bad.parquet", table, "distribution", meta)
    capsys.readouterr()
    rc = main(["experiment", "new", "--test", str(tmp_path / "bad.parquet"), "--n-mdps",
               "2", "-o", str(tmp_path / "ts.parquet")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "bad.parquet: starts: the starting probabilities sum to 1.1, not 1" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ts.parquet").exists()


def test_the_gym_environment_takes_laws_and_starts_and_checks_them():
    from bbrlcore.protocol.gym import MDPEnv

    P = np.ones((2, 1, 2)) / 2
    R = np.full((2, 1, 2), 0.5)
    laws = RewardLaws.make(2, 1, [0, 1, 2, 3], ["bernoulli"] * 4, [0.0] * 4, [1.0] * 4,
                           [0.5] * 4)
    env = MDPEnv(P, R, horizon=N, reward_laws=laws, starts=([1], [1.0]))
    x, _ = env.reset(seed=0)
    assert x == 1
    r = np.array([env.step(0)[1] for _ in range(N)])
    assert set(np.unique(r).tolist()) == {0.0, 1.0}
    _check_sample(r, 0.5, 0.25, "MDPEnv")
    with pytest.raises(BBRLError, match=r"^MDPEnv: starts: the starting probabilities"):
        MDPEnv(P, R, starts=([0, 1], [0.5, 0.2]))
    with pytest.raises(BBRLError, match=r"does not have R's mean"):
        MDPEnv(P, np.zeros((2, 1, 2)), reward_laws=laws)
