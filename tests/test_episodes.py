"""Long and episodic interactions (issue 34): the settings of a test set, every kernel
back at the start after each episode, the agents' episode_start hooks, run tables of
checkpoints for long interactions, and readers refusing settings mixed together."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import agents
from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.agents import registry
from bbrlcore.analysis import curves as C
from bbrlcore.analysis import results
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families
from bbrlcore.protocol import runner
from synthetic_runs import BUILTIN_IDS, BUILTINS  # (tests/)


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def chain(n: int = 4, initial_state: int = 0, stay: bool = False) -> D.FDMDistribution:
    """A chain whose every action moves one state right (the last one stays), paying
    ``x + 1`` in state ``x``: the reward tells where the agent is. ``stay``: action 1
    may also stay put (drawn MDPs are stochastic)."""
    theta = np.zeros((n, 2, n))
    for x in range(n):
        theta[x, :, min(x + 1, n - 1)] = 1.0
        if stay:
            theta[x, 1, x] = 1.0
    R = np.repeat(np.arange(1.0, n + 1.0)[:, None, None], 2, axis=1).repeat(n, axis=2)
    return D.FDMDistribution("chain", "Ch", theta, R, initial_state)


def _play(alg: str, raw: dict, d, ts) -> list[np.ndarray]:
    agent = E.train_agent(alg, dict(raw), d, horizon=ts.horizon, gamma=ts.gamma,
                          progress=False)
    play = agents.get(alg).make_player(d, agent.params, runner._as_trained(agent),
                                       ts.episode())
    out = []
    for i in range(ts.n_mdps):
        buf = np.full(ts.horizon, np.nan)
        play(np.ascontiguousarray(ts.mdps[i]), 7 + i, buf)
        out.append(buf)
    return out


# ---------------------------------------------------------------------------------------
# Kernels


@pytest.mark.parametrize("alg, raw", BUILTINS, ids=BUILTIN_IDS)
def test_every_builtin_returns_to_the_start_after_each_episode(alg, raw):
    """Episodes of H = 3 steps on the chain: the rewards 1, 2, 3 again and again (a
    continuing trajectory climbs to 4 and stays); one episode as long as the whole
    interaction is the continuing trajectory, bit for bit."""
    d = chain()
    assert agents.get(alg).episodic
    epi = E.new_test_set(d, 2, 0.95, 12, seed=1, episode_length=3)
    assert epi.episodes == 4 and epi.episode().episode_length == 3
    for r in _play(alg, raw, d, epi):
        assert r.tolist() == [1.0, 2.0, 3.0] * 4
    cont = E.new_test_set(d, 2, 0.95, 12, seed=1)
    one = E.new_test_set(d, 2, 0.95, 12, seed=1, episode_length=12)
    for a, b in zip(_play(alg, raw, d, cont), _play(alg, raw, d, one), strict=True):
        assert a.tolist() == [1.0, 2.0, 3.0] + [4.0] * 9
        assert np.array_equal(a, b)


@pytest.mark.parametrize("alg, raw", [("random", {}), ("sboss", {"epsilon": "1",
                                                                   "delta": "1"}),
                                      ("psrl", {})], ids=["random", "sboss", "psrl"])
def test_a_random_initial_state_is_drawn_again_at_each_episode(alg, raw):
    """With a uniformly drawn initial state (-1) each episode starts anywhere and then
    climbs: within an episode the reward rises by one (capped at 4); across 40 episodes
    the starts are not all alike (SBOSS draws them from its own generator)."""
    d = chain(initial_state=-1)
    ts = E.new_test_set(d, 1, 0.95, 160, seed=0, episode_length=4)
    (r,) = _play(alg, raw, d, ts)
    ep = r.reshape(40, 4)
    assert (ep[:, 1:] == np.minimum(ep[:, :-1] + 1, 4)).all()
    assert len(set(ep[:, 0].tolist())) > 1


PY_PLUGIN = """
import numpy as np
from numba import njit
from bbrlcore.agents import CompiledAgent, PythonAgent

class Counting(PythonAgent):
    "Always action 0; records its episode starts."
    name = "py-episodes"
    counters = ("starts", "k_sum")

    def reset(self):
        self.ks = []

    def episode_start(self, k):
        self.ks.append(k)

    def act(self, state):
        return 0

    def counter_values(self):
        assert self.ks == list(range(len(self.ks))), self.ks
        return len(self.ks), sum(self.ks)

class Today(PythonAgent):
    "Written before episodes: no episode_start."
    name = "py-today"

    def act(self, state):
        return 1

@njit(cache=True)
def reset(setup):
    return np.zeros(3, dtype=np.int64)

@njit(cache=True)
def act(state, x):
    return 0

@njit(cache=True)
def observe(state, x, u, y, r):
    state[2] += 1

@njit(cache=True)
def episode_start(state, k):
    if k != state[0]:  # k = 0, 1, ... in order
        state[1] = -10**9
    state[0] += 1
    state[1] += k

@njit(cache=True)
def count_values(state):
    return state[:2].copy()

class Jit(CompiledAgent):
    name = "jit-episodes"
    counters = ("starts", "k_sum")
    reset, act, observe, counter_values = reset, act, observe, count_values
    episode_start = episode_start

    def setup(self):
        return (0,)

class JitToday(CompiledAgent):
    name = "jit-today"
    reset, act, observe = reset, act, observe

    def setup(self):
        return (0,)
"""


def _plugin(tmp_path: Path, body: str, name: str) -> str:
    p = tmp_path / f"{name}.py"
    p.write_text(textwrap.dedent(body))
    return str(p)


@pytest.mark.parametrize("cls", ["Counting", "Jit"])
def test_python_and_compiled_plugins_are_told_each_episode_start(tmp_path, cls):
    """``episode_start(k)`` (Python) and ``episode_start(state, k)`` (compiled) are called
    for k = 0, ..., E-1 in order, before each episode; never in a continuing one."""
    ref = f"{_plugin(tmp_path, PY_PLUGIN, 'epplug')}:{cls}"
    d = chain()
    for H, E_ in ((5, 6), (30, 1)):
        ts = E.new_test_set(d, 2, 0.95, 30, seed=0, episode_length=H)
        table = E.run_agent(ts, E.train_agent(ref, {}, d, horizon=30, progress=False),
                            progress=False)
        assert table["starts"].to_list() == [E_] * 2
        assert table["k_sum"].to_list() == [E_ * (E_ - 1) // 2] * 2
        assert table["rewards"][0].to_list() == ([1.0, 2.0, 3.0, 4.0, 4.0] * 6
                                                 if H == 5 else [1, 2, 3] + [4.0] * 27)
    ts = E.new_test_set(d, 2, 0.95, 30, seed=0)
    table = E.run_agent(ts, E.train_agent(ref, {}, d, horizon=30, progress=False),
                        progress=False)
    assert table["starts"].to_list() == [0, 0] and table["k_sum"].to_list() == [0, 0]


@pytest.mark.parametrize("cls", ["Today", "JitToday"])
def test_a_plugin_written_today_runs_unchanged_in_an_episodic_experiment(tmp_path, cls):
    ref = f"{_plugin(tmp_path, PY_PLUGIN, 'todayplug')}:{cls}"
    d = chain()
    assert agents.get(ref).episodic
    ts = E.new_test_set(d, 2, 0.95, 12, seed=0, episode_length=4)
    table = E.run_agent(ts, E.train_agent(ref, {}, d, horizon=12, progress=False),
                        progress=False)
    assert table["rewards"][1].to_list() == [1.0, 2.0, 3.0, 4.0] * 3
    assert table["episode_returns"][1].to_list() == [10.0] * 3
    assert table["experiment"][0] == "Ch-Ch@E3xH4"


OLD_ALGORITHM = """
import numpy as np
from bbrlcore.agents import Algorithm

def make(prior, params, trained, ep):
    def play(P, seed, rewards=None):
        rewards[:] = 1.0
        return float(rewards.sum()), np.zeros(0, dtype=np.int64)
    return play

Old = Algorithm(name="old-kernel", params=(), make_player=make, sparse=True)
"""


def test_an_algorithm_that_does_not_say_episodic_is_refused_in_an_episodic_run(tmp_path):
    ref = f"{_plugin(tmp_path, OLD_ALGORITHM, 'oldalg')}:Old"
    d = chain()
    agent = E.train_agent(ref, {}, d, horizon=12, progress=False)
    assert E.run_agent(E.new_test_set(d, 1, 0.95, 12, 0), agent, progress=False).height == 1
    with pytest.raises(BBRLError, match=r"^agent old-kernel: algorithm old-kernel does not "
                                        r"support episodic interactions \(episode_length 4\)"):
        E.run_agent(E.new_test_set(d, 1, 0.95, 12, 0, episode_length=4), agent,
                    progress=False)


# ---------------------------------------------------------------------------------------
# Test sets and their settings


def test_the_settings_round_trip_and_old_test_sets_read_as_continuing(tmp_path):
    deep = families.make("deepsea", size=5).test
    ts = E.new_test_set(deep, 3, 1.0, 500, 4, episode_length=5, checkpoint_every=25)
    E.write_test_set(ts, tmp_path / "e.parquet")
    back = E.read_test_set(tmp_path / "e.parquet")
    assert (back.episode_length, back.episodes, back.checkpoint_every, back.label) == (
        5, 100, 25, "E100xH5n25")
    assert np.array_equal(back.mdps, ts.mdps)
    # the same seed draws the same MDPs in every setting
    assert np.array_equal(E.new_test_set(deep, 3, 1.0, 20, 4).mdps, ts.mdps)
    table, meta = artefacts.read_artefact(tmp_path / "e.parquet", "test-set")
    for k in ("episode_length", "episodes", "checkpoint_every", "label"):
        del meta[k]
    artefacts.write_artefact(tmp_path / "old.parquet", table, "test-set", meta)
    old = E.read_test_set(tmp_path / "old.parquet")
    assert (old.episode_length, old.episodes, old.checkpoint_every, old.tag) == (0, 1, None,
                                                                                  "")
    for edit, what in (({"episodes": 7}, "'horizon' is 500, not episodes x"),
                       ({"checkpoint_every": 7}, "'checkpoint_every' 7 does not divide"),
                       ({"episode_length": -1}, "'episode_length' must be in"),
                       ({"label": "a b"}, "'label' 'a b' is not a label")):
        meta2 = {**meta, "episode_length": 5, "episodes": 100, "checkpoint_every": 25,
                 "label": ""} | edit
        artefacts.write_artefact(tmp_path / "bad.parquet", table, "test-set", meta2)
        with pytest.raises(BBRLError, match=f"bad.parquet: metadata {what}"):
            E.read_test_set(tmp_path / "bad.parquet")


def test_natural_episode_lengths_of_the_families():
    """bsuite's DeepSea episode is N steps; Colosseum's rule elsewhere; none for the
    continuing-only families."""
    H = {name: families.episodic_form(families.make(name, **kw).test)[1] for name, kw in [
        ("deepsea", {"size": 20}), ("riverswim", {"size": 12}), ("frozenlake", {"size": 4}),
        ("simplegrid", {"size": 5}), ("simplegrid", {"size": 6}), ("taxi", {"size": 4}),
        ("minigrid_empty", {"size": 3}), ("minigrid_rooms", {"size": 2}), ("chain", {}),
        ("sixarms", {}),
        ("doubleloop", {}), ("gc", {}), ("gdl", {}), ("grid", {})]}
    assert H == {"deepsea": 20, "riverswim": 12, "frozenlake": 7, "simplegrid": 10,
                 "taxi": 24, "minigrid_empty": 10, "minigrid_rooms": 16, "chain": None,
                 "sixarms": None,
                 "doubleloop": None, "gc": None, "gdl": None, "grid": None}
    # GC by its built-in name, a family's FDM test by its file's name
    assert families.episodic_form(D.builtin("GC"))[1] is None
    assert families.episodic_form(families.make("riverswim").test)[1] == 6


def test_optimal_collects_the_deepsea_treasure_in_every_episode():
    """An episode of H = N steps from the top-left cell is one pass of bsuite's DeepSea:
    the optimal policy (always right) earns 1 - 0.01 every episode."""
    p = families.make("deepsea", size=6)
    ts = E.new_test_set(p.test, 3, 0.99, 600, 0, episode_length=6)
    t = E.run_agent(ts, E.train_agent("optimal", {}, p.prior("accurate"), progress=False),
                    progress=False)
    for row in t["episode_returns"].to_list():
        assert np.allclose(row, 0.99) and len(row) == 100
    assert t["checkpoints"][0].to_list() == pytest.approx(np.cumsum([0.99] * 100))


@pytest.mark.parametrize("args, message", [
    (["--episodes", "0"], "--episodes=0: must be an integer in [1, 1,000,000]"),
    (["--episodes", "10", "--episode-length", "-2"], "--episode-length=-2: must be"),
    (["--episode-length", "5"], "--episode-length=5: needs --episodes E"),
    (["--horizon", "100", "--checkpoint-every", "7"],
     "--checkpoint-every=7: the horizon T=100 is not a multiple of it"),
    (["--episodes", "10", "--checkpoint-every", "25"],
     "--checkpoint-every=25: not a multiple of the episode length 10"),
    (["--test", "Chain-5", "--episodes", "10"],
     "--episodes: family chain (Chain-5) has no episodic form"),
    (["--test", "GC", "--episodes", "10"], "--episodes: family gc (GC) has no episodic"),
    (["--episodes", "10", "--horizon", "100"], "not allowed with argument"),
    (["--label", "a/b"], "--label='a/b': letters, digits"),
])
def test_bad_settings_are_one_line_and_nothing_is_written(tmp_path, capsys, args, message):
    from bbrlcore.cli import main

    argv = ["experiment", "new", "--test", "DeepSea-10", "--n-mdps", "2",
            "-o", str(tmp_path / "t.parquet")]
    if "--test" in args:
        argv[2:4] = []
    code = None
    try:
        code = main([*argv, *args])
    except SystemExit as exc:
        code = exc.code
    assert code != 0
    err = capsys.readouterr().err
    assert message in err, err
    assert not (tmp_path / "t.parquet").exists()


def test_bbrl_run_prints_what_the_setting_scores(tmp_path, capsys):
    """Issue 41: `bbrl run` of an episodic or long interaction prints the sum of rewards
    (per episode too when episodic) and the regret, not the discounted return (0.006 for
    an agent that finds DeepSea's treasure in almost every episode); the paper's
    protocol prints the mean discounted return, as always."""
    import re

    from bbrlcore.cli import main

    def run(*args: str) -> str:
        assert main([str(a) for a in args]) == 0
        return capsys.readouterr().out

    d = tmp_path
    run("experiment", "new", "--test", "DeepSea-4", "--n-mdps", "3", "--episodes", "50",
        "-o", d / "ds4.parquet")
    run("experiment", "new", "--test", "RiverSwim-6", "--n-mdps", "2", "--horizon", "20000",
        "-o", d / "rs6.parquet")
    run("experiment", "new", "--test", "GC", "--n-mdps", "3", "-o", d / "gc.parquet")
    for prior in ("UDeepSea-4", "URiverSwim-6", "GC"):
        run("train", "--agent", "optimal", "--param", "criterion=undiscounted", "--prior",
            prior, "-q", "-o", d / f"{prior}.parquet")
    out = run("run", "--experiment", d / "ds4.parquet", "--agent", d / "UDeepSea-4.parquet",
              "-q", "-o", d / "ds4-opt.parquet")
    t = pl.read_parquet(d / "ds4-opt.parquet")
    u = t["undiscounted_return"].mean()
    assert (f"3 trajectories, mean undiscounted return {u:.4g} over 50 episodes "
            f"({u / 50:.4g} an episode), mean regret {t['regret'].mean():.4g}, ") in out, out
    assert u > 40 > t["discounted_return"].mean() * 5  # (what used to be printed)
    out = run("run", "--experiment", d / "rs6.parquet", "--agent",
              d / "URiverSwim-6.parquet", "-q", "-o", d / "rs6-opt.parquet")
    t = pl.read_parquet(d / "rs6-opt.parquet")
    assert (f"mean undiscounted return {t['undiscounted_return'].mean():.4g} over 20,000 "
            f"steps, mean regret {t['regret'].mean():.4g}, ") in out, out
    out = run("run", "--experiment", d / "gc.parquet", "--agent", d / "GC.parquet", "-q",
              "-o", d / "gc-opt.parquet")
    t = pl.read_parquet(d / "gc-opt.parquet")
    assert re.search(rf"3 trajectories, mean return {t['discounted_return'].mean():.4g}, "
                     r"\S+ ms each$", out.strip()), out


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 10**8))
def test_the_default_checkpoints_divide_the_horizon_and_are_at_most_ten_thousand(T):
    n = E.default_checkpoint_every(T)
    if T <= E.MAX_RECORDED_STEPS:
        assert n is None
    else:
        assert T % n == 0 and T // n <= 10_000
        assert all(T % m or T // m > 10_000 for m in range(max(1, n - 50), n))


# ---------------------------------------------------------------------------------------
# Run tables of long interactions


def test_long_runs_record_checkpoints_from_one_buffer_exact_against_every_step(monkeypatch):
    """Above MAX_RECORDED_STEPS the table holds no per-step rewards but the cumulative
    reward at every checkpoint, equal bit for bit to the sums of the rewards a short run
    records, and the episodes' returns; the discounted return is unchanged."""
    prior = chain(stay=True)
    allocs: list = []
    real_full = np.full

    def full(shape, *a, **k):
        allocs.append(shape)
        return real_full(shape, *a, **k)

    for kw in ({"checkpoint_every": 8}, {"episode_length": 4, "checkpoint_every": 8}):
        ts = E.new_test_set(prior, 3, 0.95, 160, 2, **kw)
        for alg in ("random", "psrl"):
            agent = E.train_agent(alg, {}, prior, horizon=160, progress=False)
            short = E.run_agent(ts, agent, progress=False)
            monkeypatch.setattr(runner, "MAX_RECORDED_STEPS", 100)
            allocs.clear()
            monkeypatch.setattr(runner.np, "full", full)
            long = E.run_agent(ts, agent, progress=False)
            monkeypatch.undo()
            assert (3, 160) not in allocs  # (one buffer of T steps, no N x T matrix)
            assert long["rewards"].null_count() == 3 and short["rewards"].null_count() == 0
            assert long["discounted_return"].to_list() == short["discounted_return"].to_list()
            r = np.asarray(short["rewards"].to_list(), dtype=np.float64)
            assert long["checkpoints"].to_list() == np.cumsum(r, axis=1)[:, 7::8].tolist()
            assert long["checkpoints"].to_list() == short["checkpoints"].to_list()
            assert long["undiscounted_return"].to_list() == np.cumsum(r, axis=1)[:, -1].tolist()
            if "episode_length" in kw:
                sums = [[float(np.cumsum(e)[-1]) for e in row.reshape(40, 4)] for row in r]
                assert long["episode_returns"].to_list() == sums
                assert long["experiment"][0] == "Ch-Ch@E40xH4n8"
            else:
                assert long["episode_returns"].null_count() == 3
                assert long["experiment"][0] == "Ch-Ch@T160n8"
            results.check_run_table(long, "long", 3)


def test_a_run_table_of_a_million_steps_is_small():
    """100 MDPs x 10^6 steps, the default checkpoints (every 100 steps): about 8 MB of
    values per agent and experiment (the size benchmarks/README.md states)."""
    n = E.default_checkpoint_every(10**6)
    assert n == 100
    ck = np.cumsum(np.random.default_rng(0).random((100, 10**6 // n)), axis=1)
    t = pl.DataFrame({"checkpoints": runner.list_series("checkpoints", ck)})
    assert t.estimated_size() < 50 * 2**20


def test_readers_refuse_settings_mixed_within_an_experiment(tmp_path):
    d = chain()
    agent = E.train_agent("random", {}, d, horizon=12, progress=False)
    a = E.run_agent(E.new_test_set(d, 2, 0.95, 12, 0, episode_length=4, label="x"), agent,
                    progress=False)
    b = E.run_agent(E.new_test_set(d, 2, 0.95, 12, 0, episode_length=3, label="x"), agent,
                    progress=False).with_columns(pl.col("mdp_index") + 2)
    for t, name in ((a, "a"), (b, "b")):
        E.write_run(t, tmp_path / f"{name}.parquet", {"n_mdps": 4})
    with pytest.raises(BBRLError, match=r"merge: experiment Ch-Ch@x: run tables from "
                       r"different test sets or versions \(.*a\.parquet vs .*b\.parquet: "
                       r"episode_length 4 vs 3, episodes 3 vs 4, checkpoint_every 4 vs 3, "
                       r"agent random vs agent random\)"):
        results.read_runs([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])
    both = pl.concat([a, b])
    with pytest.raises(BBRLError, match=r"summary: experiment Ch-Ch@x: rows of different "
                                        r"settings \(episode_length 4 vs 3"):
        results.summary_table(both)
    from bbrlcore.analysis import aggregate

    with pytest.raises(BBRLError, match=r"aggregate: experiment Ch-Ch@x: rows of different"):
        aggregate.normalised_scores(both)


def test_old_run_tables_merge_as_continuing_and_bad_checkpoints_are_refused(tmp_path):
    d = chain()
    agent = E.train_agent("random", {}, d, horizon=12, progress=False)
    new = E.run_agent(E.new_test_set(d, 2, 0.95, 12, 0), agent, progress=False)
    old = new.drop(list(runner.RECORDED_SINCE_EPISODES)).with_columns(
        pl.col("mdp_index") + 2)
    merged = results.merge_tables([new, old])
    assert merged["episode_length"].to_list() == [0] * 4
    assert merged["episodes"].to_list() == [1] * 4
    results.check_run_table(old, "old", 4)
    epi = E.run_agent(E.new_test_set(d, 2, 0.95, 12, 0, episode_length=3), agent,
                      progress=False)
    for edit, what in (
            (pl.col("checkpoints").list.head(2), "checkpoints must hold horizon / "),
            (pl.col("episode_returns").list.head(2), "episode_returns must hold one value"),
            (pl.lit(5, dtype=pl.Int64).alias("episodes"), "horizon must be episodes x"),
            (pl.col("checkpoints").list.eval(pl.element() + 1.0),
             "the last checkpoint 25.0 is not the undiscounted return 24.0")):
        with pytest.raises(BBRLError, match=f"bad: row 0 .*{what}"):
            results.check_run_table(epi.with_columns(edit), "bad", 2)


def test_curves_of_a_long_run_are_those_of_its_steps_at_the_checkpoints(monkeypatch):
    """Learning curves of the undiscounted score read the checkpoints of a long
    interaction: equal at those times to the curves of the same runs with every step."""
    ts = E.new_test_set(D.builtin("GC"), 6, 0.95, 200, 0, checkpoint_every=10)
    runs = []
    for alg, raw in (("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.2"})):
        agent = E.train_agent(alg, raw, D.builtin("UGC"), horizon=200, progress=False)
        runs.append(E.run_agent(ts, agent, progress=False))
    steps = pl.concat(runs)
    full = C.curves(steps, "undiscounted", n_resamples=100, points=200)
    monkeypatch.setattr(C, "MAX_RECORDED_STEPS", 100)
    long = steps.with_columns(pl.lit(None, dtype=pl.List(pl.Float32)).alias("rewards"))
    ck = C.curves(long, "undiscounted", n_resamples=100, points=200)
    a = ck.tables["curves"]
    assert a["t"].unique().sort().to_list() == list(range(10, 201, 10))
    b = full.tables["curves"].join(a.select("t").unique(), on="t", how="semi")
    cols = ["agent", "t", "cumulative", "shortfall", "regret"]
    assert a.select(cols).sort("agent", "t").equals(b.select(cols).sort("agent", "t"))
    with pytest.raises(BBRLError, match="records its rewards at checkpoints .*score="
                                        "undiscounted"):
        C.curves(long, "discounted", n_resamples=100)


# ---------------------------------------------------------------------------------------
# The configuration


def _config(tmp_path: Path, experiments: str, extra: str = "") -> Path:
    f = tmp_path / "study.yaml"
    f.write_text(f"n_mdps: 3\nexperiments:\n{experiments}\nalgorithms: {{random: {{}}, "
                 f"optimal: {{}}}}\n{extra}")
    return f


def test_config_settings_name_experiments_and_test_sets(tmp_path):
    plan = P.load(_config(tmp_path, """
  - {test: GC, prior: [GC, UGC]}
  - {test: {family: deepsea, size: [10, 20]}, prior: uniform, episodes: 1000}
  - {test: RiverSwim-8, prior: uniform, horizon: 100000}
  - {test: RiverSwim-8, prior: uniform, horizon: 500}
  - {test: RiverSwim-8, prior: uniform}"""))
    got = {e.name: (e.test_set, e.horizon, e.episode_length, e.checkpoint_every)
           for e in plan.experiments}
    assert got == {
        "GC-GC": ("GC", 250, 0, None), "GC-UGC": ("GC", 250, 0, None),
        "DeepSea-10-UDeepSea-10@E1000xH10": ("DeepSea-10@E1000xH10", 10_000, 10, 10),
        "DeepSea-20-UDeepSea-20@E1000xH20": ("DeepSea-20@E1000xH20", 20_000, 20, 20),
        "RiverSwim-8-URiverSwim-8@T100000": ("RiverSwim-8@T100000", 100_000, 0, 10),
        "RiverSwim-8-URiverSwim-8@T500": ("RiverSwim-8@T500", 500, 0, None),
        "RiverSwim-8-URiverSwim-8": ("RiverSwim-8", 250, 0, None)}
    e = plan.test_sets["RiverSwim-8@T500"]
    assert e.test_set_args() == "--horizon 500 --label T500"
    assert plan.test_sets["DeepSea-10@E1000xH10"].test_set_args() == (
        "--episodes 1000 --episode-length 10 --checkpoint-every 10")
    # global settings: every experiment episodic, an entry may go back to continuing
    plan = P.load(_config(tmp_path, "  - {test: DeepSea-5, prior: uniform}\n"
                          "  - {test: DeepSea-6, prior: uniform, episodes: null}",
                          "episodes: 10\nepisode_length: 8\n"))
    assert [e.name for e in plan.experiments] == ["DeepSea-5-UDeepSea-5@E10xH8",
                                                  "DeepSea-6-UDeepSea-6"]


@pytest.mark.parametrize("entry, extra, message", [
    ("{test: {family: chain, size: 5}, prior: uniform, episodes: 10}", "",
     "experiments[0].episodes: family chain (Chain-5) has no episodic form"),
    ("{test: GC, prior: GC}", "episodes: 10\n", "episodes: family gc (GC) has no episodic"),
    ("{test: DeepSea-5, prior: uniform, episodes: 10, episode_length: 0}", "",
     "experiments[0].episode_length=0: must be an integer in [1,"),
    ("{test: DeepSea-5, prior: uniform, episodes: 2.5}", "",
     "experiments[0].episodes=2.5: expected a positive integer"),
    ("{test: DeepSea-5, prior: uniform, horizon: 1000, checkpoint_every: 300}", "",
     "experiments[0].checkpoint_every=300: the horizon T=1000 is not a multiple of it"),
    ("{test: DeepSea-5, prior: uniform, episodes: 10, horizon: 40}", "",
     "experiments[0].horizon=40: an episodic interaction lasts episodes x episode_length"),
    ("{test: DeepSea-5, prior: uniform}", "episodes: -3\n", "episodes=-3: must be >= 1"),
    ("{test: DeepSea-5, prior: uniform, episodez: 3}", "", "experiments[0]: must be a "
     "mapping with test, prior"),
])
def test_bad_settings_in_a_configuration_are_one_line(tmp_path, entry, extra, message):
    with pytest.raises(BBRLError) as exc:
        P.load(_config(tmp_path, f"  - {entry}", extra))
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_plugin_algorithm_not_episodic_is_refused_by_the_configuration(tmp_path):
    ref = f"{_plugin(tmp_path, OLD_ALGORITHM, 'oldcfg')}:Old"
    f = tmp_path / "study.yaml"
    f.write_text(f"n_mdps: 3\nexperiments:\n  - {{test: DeepSea-5, prior: uniform, "
                 f"episodes: 10}}\nalgorithms: {{'{ref}': {{}}}}\n")
    with pytest.raises(BBRLError, match=r"study\.yaml: algorithms\..*: experiment "
                                        r"DeepSea-5-UDeepSea-5@E10xH5: algorithm old-kernel "
                                        "does not support episodic interactions"):
        P.load(f)


@pytest.mark.parametrize("own_block", [True, False])
def test_an_episodic_only_algorithm_in_a_continuing_experiment_names_the_entry(
        tmp_path, capsys, monkeypatch, own_block):
    """Q-learning-UCB (episodic only) in a continuing experiment of a study file: one line
    naming the file, the entry and its experiment, and the key to set, before anything is
    probed (`bbrl estimate` runs probes of uncalibrated algorithms: none is written).
    The rule is the algorithm's own (Algorithm.episodic_only, asked by check_episodic)."""
    from bbrlcore.cli import main

    algs = "{random: {}, q-learning-ucb: {}}"
    f = tmp_path / "my.yaml"
    f.write_text(f"n_mdps: 3\nresults_dir: {tmp_path / 'res'}\nexperiments:\n"
                 "  - {test: DeepSea-4, prior: uniform, episodes: 10}\n"
                 "  - {test: RiverSwim-6, prior: uniform"
                 + (f", algorithms: {algs}}}\nalgorithms: {{random: {{}}}}\n" if own_block
                    else f"}}\nalgorithms: {algs}\n"))
    with pytest.raises(BBRLError) as exc:
        P.load(f)
    msg = str(exc.value)
    assert msg.startswith("my.yaml: experiments[1] (RiverSwim-6-URiverSwim-6): "
                          "q-learning-ucb plays episodic interactions only (it learns "), msg
    assert "give the experiment `episodes:` (E episodes of its natural length)" in msg
    assert ("own algorithms: block of episodic experiments" in msg) is not own_block
    assert "\n" not in msg
    assert agents.get("q-learning-ucb").episodic_only  # (the algorithm says why)
    monkeypatch.chdir(tmp_path)
    assert main(["estimate", "my.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"bbrl: error: {msg}"
    assert not (tmp_path / "res").exists()  # nothing probed


def test_test_sets_of_one_distribution_in_two_settings_pass_the_report_check():
    d = chain()
    agent = E.train_agent("random", {}, d, horizon=12, progress=False)
    a, b = E.new_test_set(d, 2, 0.95, 12, 0), E.new_test_set(d, 2, 0.95, 12, 0,
                                                              episode_length=4)
    merged = pl.concat([E.run_agent(t, agent, progress=False) for t in (a, b)])
    results.check_test_sets(merged, [a, b], ["a", "b"])
    with pytest.raises(BBRLError, match="a second test set of Ch@E3xH4"):
        results.check_test_sets(merged, [a, b, b], ["a", "b", "c"])
    c = dataclasses.replace(b, horizon=24, episode_length=8)
    with pytest.raises(BBRLError, match="horizon 24 vs 12"):
        results.check_test_sets(merged, [a, c], ["a", "c"])


LEAVING = """
import numpy as np
from bbrlcore.agents import Algorithm

def make(prior, params, trained, ep):
    def play(P, seed, rewards=None):
        rewards[:LEAVE] = 1.0
        return float(LEAVE), np.zeros(0, dtype=np.int64)
    return play

Leave = Algorithm(name="leave", params=(), make_player=make, sparse=True)
"""


def test_a_step_left_unset_in_the_reused_buffer_of_a_long_run_is_named(tmp_path,
                                                                       monkeypatch):
    """The buffer of a long run is reused: a player that fills only its first steps leaves
    the rest NaN (the previous trajectory's rewards are consumed), and the first such
    step is named."""
    monkeypatch.setattr(runner, "MAX_RECORDED_STEPS", 10)
    d = chain()
    ts = E.new_test_set(d, 2, 0.95, 40, 0, checkpoint_every=10)
    ok = f"{_plugin(tmp_path, LEAVING.replace('LEAVE', '40'), 'fills')}:Leave"
    t = E.run_agent(ts, E.train_agent(ok, {}, d, horizon=40, progress=False),
                    progress=False)
    assert t["checkpoints"].to_list() == [[10.0, 20.0, 30.0, 40.0]] * 2
    registry.reset()
    bad = f"{_plugin(tmp_path, LEAVING.replace('LEAVE', '23'), 'leaves')}:Leave"
    with pytest.raises(BBRLError, match=r"agent leave, test MDP 0: the reward of step 23 "
                                        "is not finite"):
        E.run_agent(ts, E.train_agent(bad, {}, d, horizon=40, progress=False),
                    progress=False)


# ---------------------------------------------------------------------------------------
# The exploration preset and the cost of long interactions

ROOT = Path(__file__).resolve().parents[1]


def test_the_exploration_preset_validates_and_is_planned():
    """bsuite's DeepSea ladder (10,000 episodes of N steps, N = 10 ... 50) and a RiverSwim
    ladder continuing for 10^5 steps, uniform priors, each with the baselines of its
    setting beside the paper's algorithms, chosen on validation MDPs; priced by the cost
    model with long interactions (every job sized, none beyond the chunk budget)."""
    import jsonschema
    import yaml

    plan = P.load(ROOT / "config.yaml", {"preset": "exploration"})
    c = plan.config
    assert c["selection"] == "validation" and c["score"] == "undiscounted"
    jsonschema.validate(c, yaml.safe_load(
        (ROOT / "workflow/schemas/config.schema.yaml").read_text()))
    deep = [e for e in plan.experiments if e.test.startswith("DeepSea")]
    river = [e for e in plan.experiments if e.test.startswith("RiverSwim")]
    assert [e.test for e in deep] == [f"DeepSea-{n}" for n in (10, 20, 30, 40, 50)]
    assert len(river) >= 3 and len(deep) + len(river) == len(plan.experiments)
    paper = {"random", "e-greedy", "soft-max", "opps-ds", "bamcp", "bfs3", "sboss", "beb",
             "optimal"}
    for e in deep:  # bsuite's protocol: the family's own episode length
        n = int(e.test.split("-")[1])
        assert (e.episode_length, e.episodes, e.prior) == (n, 10_000, "U" + e.test)
        assert {a.algorithm for a in plan.agents_of(e)} == paper | {"psrl", "q-learning-ucb"}
    for e in river:  # continuing, measured every 100 steps
        assert (e.episode_length, e.horizon, e.checkpoint_every) == (0, 100_000, 100)
        assert e.prior == "U" + e.test
        assert {a.algorithm for a in plan.agents_of(e)} == paper | {"psrl", "ucrl2"}
    # the cost model knows the interactions are long: a trajectory costs per step
    bamcp = next(a for a in plan.agents if a.algorithm == "bamcp")
    s10, s50 = (plan.seconds_per_trajectory(e, bamcp) for e in (deep[0], deep[-1]))
    assert s50 == pytest.approx(5 * s10, rel=0.2)  # (T = 10^5 and 5 x 10^5 steps)
    assert plan.over_budget() == []
    for e in plan.experiments:
        for a in plan.agents_of(e):
            assert sum(b - a_ for a_, b in plan.chunks(e, a)) == c["n_mdps"]
    assert {e.name for e in plan.validation_experiments} == {e.name for e in plan.experiments}


def test_an_interaction_beyond_the_chunk_budget_is_named_before_anything_runs(
        tmp_path, capsys, monkeypatch):
    from bbrlcore.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        results_dir: {tmp_path / 'results'}
        n_mdps: 4
        chunk_budget_minutes: 0.001
        experiments:
          - {{test: {{family: riverswim, size: 6}}, prior: uniform, horizon: 200000,
             checkpoint_every: 1000}}
          - {{test: GC, prior: GC, horizon: 10}}
        formula_sets: {{}}
        algorithms: {{random: {{}}, beb: {{beta: 1.0}}, optimal: {{}}}}
        """))
    plan = P.load(cfg)
    lines = plan.over_budget()
    # (BEB and Optimal on RiverSwim-6 for 200,000 steps: seconds, beyond 0.06 s)
    assert lines and all("RiverSwim-6-URiverSwim-6@T200000n1000" in ln for ln in lines)
    assert any(ln.startswith("one interaction of beb__beta=1 on RiverSwim-6") for ln in lines)
    assert all("chunk_budget_minutes=0.001" in ln and "\n" not in ln for ln in lines)
    # every chunk of such a run holds one test MDP: no chunk can be shorter
    exp = next(e for e in plan.experiments if e.test.startswith("RiverSwim"))
    beb = next(a for a in plan.agents if a.algorithm == "beb")
    assert plan.chunks(exp, beb) == [(i, i + 1) for i in range(4)]
    assert main(["estimate", str(cfg)]) == 0
    err = capsys.readouterr().err
    for ln in lines:
        assert f"bbrl: warning: {ln}" in err.splitlines()


MARKING = """
import os
from pathlib import Path
from bbrlcore.agents import PythonAgent

class Marking(PythonAgent):
    "Action 0; writes the id of the process it plays in."
    name = "marking"

    def reset(self):
        (Path(__file__).parent / f"played-{os.getpid()}").touch()

    def act(self, state):
        return 0

class Failing(PythonAgent):
    "Raises at its third step."
    name = "failing"

    def reset(self):
        self.t = 0

    def act(self, state):
        self.t += 1
        if self.t == 3:
            raise ValueError("no third step")
        return 0
"""


def test_each_agent_configuration_is_probed_in_a_process_of_its_own(tmp_path):
    """Issue 41: what a process ran before changes what it plays after (a Python plugin's
    DeepSea-14 trajectories took 4x less after a compiled plugin's DeepSea-20 probes,
    glibc's allocator serving its arrays from the heap: benchmarks/bench_plugin_cost.py),
    so each agent configuration's probes run in a new process, as a job's units; its
    records come back to the plan, and its failure is one line naming it."""
    import os

    from bbrlcore.plan import probe

    ref = _plugin(tmp_path, MARKING, "marking")
    plan = P.load({"n_mdps": 2, "formula_sets": {}, "results_dir": str(tmp_path / "r"),
                   "experiments": [{"test": {"family": "deepsea", "size": [3, 4]},
                                    "prior": "uniform", "episodes": 5}],
                   "algorithms": {"random": {}, f"{ref}:Marking": {}}})
    probe.ensure(plan, tmp_path / "r", progress=False)
    pids = {int(p.name.split("-")[1]) for p in tmp_path.glob("played-*")}
    assert len(pids) == 1 and os.getpid() not in pids
    assert plan.probed == {"marking"} and plan.unprobed == []
    a = plan.agent("marking")
    assert plan.cost_model.calibrated("marking")
    assert {e.name for e in plan.experiments_of(a)} == {
        "DeepSea-3-UDeepSea-3@E5xH3", "DeepSea-4-UDeepSea-4@E5xH4"}
    rows = json.loads(next((tmp_path / "r" / "probes" / "marking").rglob("*.json"))
                      .read_text())["rows"]
    assert sorted(r["test"] for r in rows if "ms_per_trajectory" in r) == [
        "DeepSea-3", "DeepSea-4"]
    bad = P.load({**plan.config, "preset": None,
                  "algorithms": {"random": {}, f"{ref}:Failing": {}}})
    with pytest.raises(BBRLError) as exc:
        probe.ensure(bad, tmp_path / "r", progress=False)
    msg = str(exc.value)
    assert msg.startswith("probe of failing: agent failing, test MDP 0: failing: "
                          "ValueError in act at step 2: no third step"), msg
    assert "\n" not in msg


def test_probes_time_a_long_interaction_in_its_setting(tmp_path, monkeypatch):
    """An algorithm the benchmarks did not measure is probed in the experiment's setting
    (episodes of its H steps), over at most PROBE_STEPS of it; PSRL, measured continuing
    only and whose episodic form plans once per episode, is probed in episodic
    experiments only; the cost model prices the T steps from what was timed."""
    import json

    from bbrlcore.plan import probe

    cfg = P.load({"n_mdps": 2, "formula_sets": {}, "results_dir": str(tmp_path),
                  "experiments": [
                      {"test": {"family": "deepsea", "size": 4}, "prior": "uniform",
                       "episodes": 5000},
                      {"test": {"family": "riverswim", "size": 4}, "prior": "uniform",
                       "horizon": 20000, "checkpoint_every": 100}],
                  "algorithms": {"random": {}, "psrl": {}, "optimal": {}}})
    drawn = []
    real = E.new_test_set
    monkeypatch.setattr(E, "new_test_set",
                        lambda t, n, g, T, s, **k: drawn.append((T, k)) or real(t, n, g, T, s, **k))
    probe.ensure(cfg, tmp_path, run=False)  # (a dry run's: nothing probed)
    assert drawn == [] and cfg.unprobed == [("psrl", "DeepSea-4-UDeepSea-4@E5000xH4")]
    probe.ensure(cfg, tmp_path, progress=False, isolate=False)  # (here: drawn is seen)
    assert cfg.probed_episodic == {"psrl"} and "psrl" not in cfg.probed
    assert drawn == [(probe.PROBE_STEPS, {"episode_length": 4, "references": False})]
    rows = json.loads(next((tmp_path / "probes" / "psrl").rglob("*.json")).read_text())["rows"]
    timed = [r for r in rows if "ms_per_trajectory" in r]
    assert [(r["test"], r["horizon"], r["episode_length"]) for r in timed] == [
        ("DeepSea-4", probe.PROBE_STEPS, 4)]
    # (issue 41) the smaller of its wall and CPU time: other work on a busy machine's
    # cores lengthens the one, threads the other
    assert timed[0]["ms_per_trajectory"] == min(timed[0]["wall_ms"], timed[0]["cpu_ms"])
    deep = cfg.experiments[0]
    psrl = next(a for a in cfg.agents if a.algorithm == "psrl")
    assert deep.horizon == 20_000 and cfg.seconds_per_trajectory(deep, psrl) > 0
    probe.ensure(cfg, tmp_path, progress=False)  # (kept and reused: nothing drawn again)
    assert len(drawn) == 1 and cfg.unprobed == []
