"""The gymnasium view (bbrlcore.protocol.gym): its arguments are validated like a
distribution's, the order reset -> step is enforced, and ``info`` carries the MDP index,
the step and the discounted return the benchmark scores (issues #23 and #25)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents import registry
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D

gymnasium = pytest.importorskip("gymnasium")
from bbrlcore.protocol.gym import MDPEnv, TestSetEnv, gymnasium_agent  # noqa: E402

EXAMPLES = int(os.environ.get("BBRL_HYPOTHESIS_EXAMPLES", 40))


@pytest.fixture(scope="module")
def ts():
    return E.new_test_set(D.builtin("GC"), 3, 0.95, 12, seed=4)


def _good(ts):
    return {"P": ts.dense(0), "R": ts.test.reward}


def _with_row(P, x, u, row):
    P = P.copy()
    P[x, u] = row
    return P


BAD = {
    "P nan": (lambda g: {"P": g["P"] * np.nan}, "MDPEnv: P: row (x=0, u=0): P(y=0) = nan"),
    "P row sums to 1/2": (lambda g: {"P": g["P"] / 2}, "row (x=0, u=0) sums to 0.5, not 1"),
    "P negative": (lambda g: {"P": _with_row(g["P"], 1, 2, [1.5, -0.5, 0, 0, 0])},
                   "row (x=1, u=2): P(y=1) = -0.5 is not a probability"),
    "P infinite": (lambda g: {"P": _with_row(g["P"], 0, 1, [np.inf, 0, 0, 0, 0])},
                   "P(y=0) = inf is not a probability"),
    "P 2-d": (lambda g: {"P": g["P"][0], "R": g["R"][0]}, "P must have shape (nX, nU, nX)"),
    "P not square": (lambda g: {"P": g["P"][:, :, :4], "R": g["R"][:, :, :4]},
                     "P must have shape (nX, nU, nX), got (5, 3, 4)"),
    "P empty": (lambda g: {"P": np.zeros((0, 1, 0)), "R": np.zeros((0, 1, 0))},
                "P must have shape"),
    "P strings": (lambda g: {"P": [[["a"]]]}, "MDPEnv: P must be an array of real numbers"),
    "P ragged": (lambda g: {"P": [[[1.0], [0.5, 0.5]]]}, "MDPEnv: P must be an array"),
    "R shape": (lambda g: {"R": g["R"][:, :2]}, "P and R must have the same shape"),
    "R nan": (lambda g: {"R": g["R"] * np.nan}, "MDPEnv: R(0,0,0) = nan is not finite"),
    "reward_std negative": (lambda g: {"reward_std": -np.ones_like(g["R"])},
                            "reward_std must be finite, >= 0"),
    "initial_state too large": (lambda g: {"initial_state": 5},
                                "initial_state 5 outside -1..4"),
    "initial_state -2": (lambda g: {"initial_state": -2}, "initial_state -2 outside -1..4"),
    "initial_state 1.5": (lambda g: {"initial_state": 1.5},
                          "initial_state must be an integer, got 1.5"),
    "initial_state True": (lambda g: {"initial_state": True},
                           "initial_state must be an integer, got True"),
    "horizon 0": (lambda g: {"horizon": 0}, "horizon must be in [1, 100000000], got 0"),
    "horizon 2.5": (lambda g: {"horizon": 2.5}, "horizon must be an integer, got 2.5"),
    "gamma 2": (lambda g: {"gamma": 2}, "gamma must be in (0, 1], got 2.0"),
    "gamma 0": (lambda g: {"gamma": 0.0}, "gamma must be in (0, 1], got 0.0"),
    "gamma nan": (lambda g: {"gamma": float("nan")}, "gamma must be in (0, 1], got nan"),
    "gamma string": (lambda g: {"gamma": "0.9"}, "gamma must be a number, got '0.9'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_arguments_are_one_error_naming_the_argument(ts, case):
    edit, needle = BAD[case]
    kw = _good(ts) | edit(_good(ts))
    with pytest.raises(BBRLError) as exc:
        MDPEnv(kw.pop("P"), kw.pop("R"), **kw)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg, msg


ANY = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=3),
    st.lists(st.floats(), max_size=3), st.builds(lambda x: np.full((3, 3), x), st.floats()),
)


@settings(max_examples=2 * EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(P=st.one_of(ANY, st.builds(lambda x: np.full((2, 1, 2), x), st.floats())),
       R=st.one_of(ANY, st.builds(lambda x: np.full((2, 1, 2), x), st.floats())),
       initial_state=ANY, horizon=ANY, gamma=ANY, reward_std=ANY)
def test_arbitrary_constructor_arguments_are_refused_with_one_error(ts, P, R, initial_state,
                                                                    horizon, gamma,
                                                                    reward_std):
    """Whatever the arguments, MDPEnv either builds an environment that plays or raises
    BBRLError (never another exception)."""
    try:
        env = MDPEnv(P, R, initial_state=initial_state, horizon=horizon, gamma=gamma,
                     reward_std=reward_std)
    except BBRLError as exc:
        assert "\n" not in str(exc)
        return
    env.reset(seed=0)
    for _ in range(min(env.horizon, 50)):
        _, r, _, truncated, info = env.step(0)
        assert math.isfinite(r)
    assert truncated == (env.horizon <= 50)


def test_step_before_reset_raises_reset_needed(ts):
    for env in (MDPEnv(ts.dense(0), ts.test.reward, horizon=3), TestSetEnv(ts)):
        with pytest.raises(gymnasium.error.ResetNeeded, match="before calling env.reset"):
            env.step(0)
        env.reset(seed=0)
        for _ in range(env.horizon):
            env.step(0)
        with pytest.raises(gymnasium.error.ResetNeeded, match="the episode has ended"):
            env.step(0)
        env.reset(seed=0)
        env.step(0)  # a new episode


def test_a_test_set_env_takes_a_path_or_says_what_it_needs(ts, tmp_path):
    E.write_test_set(ts, tmp_path / "ts.parquet")
    for arg in (tmp_path / "ts.parquet", str(tmp_path / "ts.parquet")):
        env = TestSetEnv(arg)
        assert env.test_set.n_mdps == 3 and np.array_equal(env.test_set.mdps, ts.mdps)
        assert env.prior.same_as(ts.test)
    with pytest.raises(BBRLError, match=r"nowhere\.parquet: no such file"):
        TestSetEnv(tmp_path / "nowhere.parquet")
    for bad in (ts.mdps, D.builtin("GC"), None, 3):
        with pytest.raises(BBRLError, match="TestSetEnv: expected a test set .* or the path of "
                                            "a test-set file"):
            TestSetEnv(bad)


def test_a_test_set_env_checks_every_mdp(ts):
    mdps = ts.mdps.copy()
    mdps[2, 1, 0, 0] += 0.5
    bad = E.TestSet(ts.test, mdps, ts.gamma, ts.horizon, ts.seed, ts.layout)
    with pytest.raises(BBRLError, match=r"TestSetEnv: MDP 2: row \(x=1, u=0\) sums to"):
        TestSetEnv(bad)
    with pytest.raises(BBRLError, match=r"mdp_index 3 outside \[0, 3\)"):
        TestSetEnv(ts).reset(options={"mdp_index": 3})
    with pytest.raises(BBRLError, match=r"mdp_index '1' outside"):
        TestSetEnv(ts).reset(options={"mdp_index": "1"})


def test_info_holds_the_mdp_index_the_step_and_the_discounted_return(ts):
    env = TestSetEnv(ts)
    for episode in range(4):
        obs, info = env.reset(seed=episode)
        assert info == {"mdp_index": episode % 3, "step": 0}
        rewards, truncated, t = [], False, 0
        while not truncated:
            obs, r, terminated, truncated, info = env.step(env.action_space.sample())
            t += 1
            rewards.append(r)
            assert info["mdp_index"] == episode % 3 and info["step"] == t
            assert ("discounted_return" in info) == truncated
        assert t == ts.horizon
        expected = sum(ts.gamma**k * r for k, r in enumerate(rewards))
        assert info["discounted_return"] == pytest.approx(expected, rel=1e-12)
    _, info = MDPEnv(ts.dense(0), ts.test.reward).reset(seed=0)
    assert info == {"step": 0}


def test_the_discounted_return_is_the_benchmarks(ts):
    """On deterministic MDPs, the gym view's discounted return equals the return the
    benchmark's runner measures for the same policy (a gymnasium-style agent)."""
    rng = np.random.default_rng(0)
    nX, nU = 4, 2
    theta = np.zeros((nX, nU, nX))
    for x in range(nX):
        for u in range(nU):
            theta[x, u, rng.integers(nX)] = 1.0
    d = D.FDMDistribution("det", "Det", theta, rng.normal(size=theta.shape), 1)
    det = E.new_test_set(d, 2, 0.9, 15, seed=0)

    class Policy:
        def __init__(self, observation_space, action_space, **kw):
            pass

        def act(self, observation):
            return (observation * 7 + 1) % nU

    registry.reset()
    try:
        alg = agents.registry.as_algorithm(gymnasium_agent("gym-det", Policy), "test")
        play = alg.make_player(d, {}, None, det.episode())
        env = TestSetEnv(det)
        for i in range(det.n_mdps):
            bench, _ = play(np.ascontiguousarray(det.mdps[i]), 3)
            obs, _ = env.reset(seed=1, options={"mdp_index": i})
            truncated = False
            while not truncated:
                obs, _, _, truncated, info = env.step((obs * 7 + 1) % nU)
            assert info["discounted_return"] == pytest.approx(bench, rel=1e-12, abs=1e-12)
    finally:
        registry.reset()


def test_the_env_passes_gymnasiums_checker(ts):
    """Both views pass gymnasium's own checker, with every warning an error (issue #33:
    TestSetEnv's reset(seed=...) moved on to the next MDP, so it was not repeatable)."""
    import warnings

    from gymnasium.utils.env_checker import check_env

    from bbrlcore.mdp import families as F

    stochastic = E.new_test_set(F.make("frozenlake", size=4, p_rand=0.1).test, 5, 0.9, 7, 2)
    drawn_start = E.new_test_set(D.FDMDistribution("u", "U", np.ones((3, 2, 3)),
                                                   np.ones((3, 2, 3)), -1), 4, 0.9, 6, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(MDPEnv(ts.dense(1), ts.test.reward, initial_state=-1, horizon=5),
                  skip_render_check=True)
        for t in (ts, stochastic, drawn_start):
            check_env(TestSetEnv(t), skip_render_check=True)


def _episode(env, seed=None, options=None, steps=None):
    obs, info = env.reset(seed=seed, options=options)
    out = [(obs, info["mdp_index"])]
    rng = np.random.default_rng(0)
    for _ in range(steps or env.horizon):
        obs, r, _, _, _ = env.step(int(rng.integers(env.action_space.n)))
        out.append((obs, r))
    return out


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**63), before=st.lists(st.integers(0, 50), max_size=3))
def test_reset_with_a_seed_is_repeatable_and_picks_the_mdp(ts, seed, before):
    """reset(seed=s): episode s of the sequence (MDP s mod N), the same draws whatever
    came before; the next reset() moves on to the next MDP."""
    env = TestSetEnv(ts)
    first = _episode(env, seed)
    assert first[0][1] == seed % ts.n_mdps
    after = env.reset()[1]["mdp_index"]
    for s in before:  # whatever happened in between
        env.reset(seed=s)
        env.reset()
    assert _episode(env, seed) == first
    assert env.reset()[1]["mdp_index"] == after == (seed + 1) % ts.n_mdps
    fresh = TestSetEnv(ts)
    assert _episode(fresh, seed) == first


def test_the_episodes_follow_the_mdps_in_order(ts):
    env = TestSetEnv(ts)
    assert [env.reset()[1]["mdp_index"] for _ in range(4)] == [0, 1, 2, 0]
    assert env.reset(seed=5)[1]["mdp_index"] == 2
    assert env.reset(options={"mdp_index": 0})[1]["mdp_index"] == 0
    assert env.reset()[1]["mdp_index"] == 1
    assert env.reset(seed=2, options={"mdp_index": 1})[1]["mdp_index"] == 1
    assert env.reset()[1]["mdp_index"] == 2
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(BBRLError, match=r"^TestSetEnv.reset: seed .* must be an integer "
                                            ">= 0$"):
            env.reset(seed=bad)


def test_a_prior_of_another_problem_is_refused(ts, tmp_path):
    """One line for a prior that is not an FDM of the test set's size (issue #33: a
    prior of another size, or the string "garbage", was taken); a name or a file is
    loaded as --prior is."""
    assert TestSetEnv(ts, prior="UGC").prior.same_as(D.builtin("UGC"))
    assert MDPEnv(ts.dense(0), ts.test.reward, prior=D.builtin("UGC")).prior.short_name == "UGC"
    cases = [
        ("garbage", "^TestSetEnv: prior: unknown distribution 'garbage'"),
        ("UGrid", "^TestSetEnv: prior UGrid has 25 states and 4 actions; the MDPs have 5 "
                  "and 3$"),
        (D.builtin("Grid"), "prior Grid has 25 states and 4 actions; the MDPs have 5 and 3"),
        (tmp_path / "none.parquet", "^TestSetEnv: prior: .*none.parquet: no such file$"),
        (3, "^TestSetEnv: prior must be an FDM distribution .* got int$"),
        (ts, "TestSetEnv: prior must be an FDM distribution .* got TestSet$"),
        (np.ones((5, 3, 5)), "got ndarray$"),
    ]
    for prior, needle in cases:
        with pytest.raises(BBRLError, match=needle) as exc:
            TestSetEnv(ts, prior=prior)
        assert "\n" not in str(exc.value)
    with pytest.raises(BBRLError, match="^MDPEnv: prior UGrid has 25 states"):
        MDPEnv(ts.dense(0), ts.test.reward, prior="UGrid")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(action=st.one_of(st.booleans(), st.floats(), st.text(max_size=3), st.none(),
                        st.integers().filter(lambda a: not 0 <= a < 3),
                        st.builds(np.bool_, st.booleans()),
                        st.builds(np.float64, st.floats(0, 2))))
def test_an_action_that_is_not_an_integer_in_range_is_refused(ts, action):
    """A bool is refused as the benchmark's agents are (issue #33: step(True) played
    action 1), as is anything but an integer in [0, nU): one line, the episode goes on."""
    for env in (TestSetEnv(ts), MDPEnv(ts.dense(0), ts.test.reward)):
        env.reset(seed=0)
        with pytest.raises(BBRLError, match=r"\.step: action .* \[0, 3\)$") as exc:
            env.step(action)
        assert "\n" not in str(exc.value)
        if isinstance(action, (bool, np.bool_)):
            assert "is a bool" in str(exc.value)
        env.step(np.int64(2))  # still playing
        assert env.step(0)[4]["step"] == 2
