"""Every step recorded (issue 28): players write the reward of each step, run tables
carry them (``rewards``, ``undiscounted_return``), older tables still read and merge."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents import registry
from bbrlcore.agents.base import on_rows, records_rewards, reward_buffer
from bbrlcore.analysis import results
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.protocol.runner import (
    INDICATOR_COLUMNS,
    RECORDED_SINCE_EPISODES,
    RECORDED_SINCE_REWARDS,
    RUN_COLUMNS,
    rewards_series,
    undiscounted_returns,
)
from synthetic_runs import BUILTIN_IDS, BUILTINS  # (tests/)

ROOT = Path(__file__).resolve().parents[1]
MY = f"{ROOT / 'examples' / 'my_agents.py'}"



@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def discounted(rewards, gamma: float) -> float:
    """The return as every kernel accumulates it, step by step in float64."""
    ret, disc = 0.0, 1.0
    for r in rewards:
        ret += disc * float(r)
        disc *= gamma
    return ret


def in_order(rewards) -> float:
    s = 0.0
    for r in rewards:
        s += float(r)
    return s


def gaussian_distribution() -> D.FDMDistribution:
    rng = np.random.default_rng(5)
    theta = rng.integers(0, 3, size=(4, 2, 4)).astype(float)
    theta[:, :, 1] += 1
    return D.FDMDistribution("g", "G", theta, rng.random((4, 2, 4)), -1, "gaussian",
                             rng.random((4, 2, 4)))


# ---------------------------------------------------------------------------------------
# Players


@pytest.mark.parametrize("alg, raw", BUILTINS, ids=BUILTIN_IDS)
@pytest.mark.parametrize("problem", ["GDL", "gaussian"])
def test_every_player_records_the_rewards_its_return_sums(alg, raw, problem):
    """The return a player gives is exactly the step-by-step discounted sum of the
    float64 rewards it wrote (paper's rewards and Gaussian ones)."""
    d = gaussian_distribution() if problem == "gaussian" else D.builtin(problem)
    ts = E.new_test_set(d, 3, 0.9, 30, seed=2)
    agent = E.train_agent(alg, dict(raw), d, horizon=30, gamma=0.9, progress=False)
    play = agents.get(alg).make_player(d, agent.params, E.runner._as_trained(agent),
                                       ts.episode())
    assert records_rewards(play)
    for i in range(ts.n_mdps):
        buf = np.full(30, np.nan)
        ret, _ = play(np.ascontiguousarray(ts.mdps[i]), 11 + i, buf)
        assert np.isfinite(buf).all()
        assert ret == discounted(buf, 0.9)
        if problem != "gaussian":
            assert set(buf) <= set(np.unique(d.reward))
        again, _ = play(np.ascontiguousarray(ts.mdps[i]), 11 + i)  # its own buffer
        assert again == ret
        row = np.full(30, np.nan)  # what the runner calls (Random, Optimal: no check)
        assert on_rows(play)(np.ascontiguousarray(ts.mdps[i]), 11 + i, row)[0] == ret
        assert np.array_equal(row, buf)


@pytest.mark.parametrize("alg, raw", BUILTINS, ids=BUILTIN_IDS)
def test_run_tables_recompute_the_return_exactly_from_float32_rewards(alg, raw):
    """The paper's rewards (0, 1, 2, 10) are exact in float32: the recorded discounted
    return is the one recomputed from ``rewards``, bit for bit, and
    ``undiscounted_return`` their sum."""
    d = D.builtin("GC") if alg not in ("opps-ds",) else D.builtin("GDL")
    ts = E.new_test_set(d, 4, 0.95, 40, seed=3)
    agent = E.train_agent(alg, dict(raw), d, horizon=40, progress=False)
    table = E.run_agent(ts, agent, progress=False)
    assert table.schema["rewards"] == pl.List(pl.Float32)
    assert table.schema["undiscounted_return"] == pl.Float64
    assert table["rewards"].list.len().to_list() == [40] * 4
    for row in table.iter_rows(named=True):
        assert row["discounted_return"] == discounted(row["rewards"], 0.95)
        assert row["undiscounted_return"] == in_order(row["rewards"])
    results.check_run_table(table, "run", 4)


def test_gaussian_rewards_recompute_the_return_to_float32_precision():
    d = gaussian_distribution()
    ts = E.new_test_set(d, 6, 0.9, 60, seed=1)
    for alg, raw in [("random", {}), ("sboss", {"epsilon": "1", "delta": "1"}),
                     ("psrl", {})]:
        table = E.run_agent(ts, E.train_agent(alg, raw, d, horizon=60, gamma=0.9,
                                              progress=False), progress=False)
        for row in table.iter_rows(named=True):
            r = np.asarray(row["rewards"], dtype=np.float64)
            scale = float(np.sum(np.abs(r) * 0.9 ** np.arange(60)))
            assert abs(discounted(r, 0.9) - row["discounted_return"]) <= 1e-6 * scale
            assert abs(in_order(r) - row["undiscounted_return"]) <= 1e-6 * np.abs(r).sum()


def test_fractional_rewards_of_a_family_recompute_to_float32_precision():
    """DeepSea's move cost (-0.01 / N) is not a float32: the recomputed return is within
    float32's precision, not bit for bit (the float64 rewards the kernel wrote are)."""
    from bbrlcore.mdp import families as F

    p = F.make("deepsea", size=5)
    ts = E.new_test_set(p.test, 4, 0.95, 30, seed=0)
    agent = E.train_agent("random", {}, p.prior("uniform"), horizon=30, progress=False)
    table = E.run_agent(ts, agent, progress=False)
    values = {float(v) for v in table["rewards"].explode().unique()}
    assert any(float(np.float32(v)) != v for v in (-0.002, 0.998))  # (not float32-exact)
    assert len(values) >= 2
    for row in table.iter_rows(named=True):
        r = np.asarray(row["rewards"], dtype=np.float64)
        scale = max(float(np.abs(r).sum()), 1e-300)
        assert abs(discounted(r, 0.95) - row["discounted_return"]) <= 1e-7 * scale
        assert abs(in_order(r) - row["undiscounted_return"]) <= 1e-7 * scale


def test_a_run_table_has_the_schema_of_RUN_COLUMNS():
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 10, seed=0)
    table = E.run_agent(ts, E.train_agent("sboss", {"epsilon": "1", "delta": "1"},
                                          D.builtin("GC"), horizon=10, progress=False),
                        progress=False)
    assert table.columns == [*RUN_COLUMNS, "resamples"]
    for col, dtype in RUN_COLUMNS.items():
        assert table.schema[col] == dtype, col
    assert set(RECORDED_SINCE_REWARDS) == {"rewards", "undiscounted_return"}


def test_the_compiled_and_python_plugins_record_rewards():
    """The package's loops record for plugins: MyGreedyJit's rewards are the built-in
    e-Greedy's, trajectory by trajectory; MyGreedy's sum to its returns."""
    ts = E.new_test_set(D.builtin("Grid"), 4, 0.95, 50, seed=5)
    tables, recorded = {}, {}
    for name in ("e-greedy", f"{MY}:MyGreedyJit", f"{MY}:MyGreedy"):
        agent = E.train_agent(name, {"epsilon": "0.2"}, D.builtin("Grid"), horizon=50,
                              progress=False)
        tables[name] = E.run_agent(ts, agent, progress=False)
        play = agents.get(name).make_player(D.builtin("Grid"), agent.params, None,
                                            ts.episode())
        recorded[name] = np.full((4, 50), np.nan)
        for i in range(4):  # (run tables seed by agent id: the same seeds here)
            play(np.ascontiguousarray(ts.mdps[i]), 70 + i, recorded[name][i])
    assert np.array_equal(recorded[f"{MY}:MyGreedyJit"], recorded["e-greedy"])
    assert np.isfinite(recorded[f"{MY}:MyGreedy"]).all()
    for t in tables.values():
        for row in t.iter_rows(named=True):
            assert row["discounted_return"] == discounted(row["rewards"], 0.95)
            assert row["undiscounted_return"] == in_order(row["rewards"])


def _plugin(tmp_path: Path, body: str, name: str) -> str:
    p = tmp_path / f"{name}.py"
    p.write_text(textwrap.dedent(body))
    return str(p)


OLD_PLAYER = """
import numpy as np
from bbrlcore.agents import Algorithm

def make(prior, params, trained, ep):
    def play(P, seed):
        rng = np.random.default_rng(seed)
        return float(rng.random()), np.zeros(0, dtype=np.int64)
    return play

Old = Algorithm(name="old-player", params=(), make_player=make)
"""

NEW_PLAYER = """
import numpy as np
from bbrlcore.agents import Algorithm

CALLS = []

def make(prior, params, trained, ep):
    def play(P, seed, rewards=None):
        CALLS.append(None if rewards is None else len(rewards))
        if rewards is None:
            rewards = np.empty(ep.horizon)
        rewards[:] = 1.0
        rewards[LEAVE:] = np.nan
        return float(np.sum(rewards[:LEAVE])), np.zeros(0, dtype=np.int64)
    return play

New = Algorithm(name="new-player", params=(), make_player=make)
"""


def test_a_third_party_player_of_P_and_seed_still_runs_without_rewards(tmp_path):
    ref = _plugin(tmp_path, OLD_PLAYER, "oldplug") + ":Old"
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 20, seed=0)
    old = E.run_agent(ts, E.train_agent(ref, {}, D.builtin("GC"), horizon=20,
                                        progress=False), progress=False)
    assert old["rewards"].null_count() == 3 and old["undiscounted_return"].null_count() == 3
    assert old.schema["rewards"] == pl.List(pl.Float32)
    results.check_run_table(old, "old", 3)
    rnd = E.run_agent(ts, E.train_agent("random", {}, D.builtin("GC"), horizon=20,
                                        progress=False), progress=False)
    merged = results.merge_tables([old, rnd])
    results.check_run_table(merged, "merged", 3)
    s = results.summary_table(merged)
    assert s.height == 2
    by = dict(zip(merged["agent"], merged["rewards"].is_null(), strict=False))
    assert by["old-player"] and not by["random"]


def test_a_player_taking_rewards_gets_a_buffer_also_when_warmed_and_must_fill_it(tmp_path):
    path = _plugin(tmp_path, NEW_PLAYER.replace("LEAVE", "20"), "newplug")
    ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 20, seed=0)
    agent = E.train_agent(f"{path}:New", {}, D.builtin("GC"), horizon=20, progress=False)
    table = E.run_agent(ts, agent, progress=False)
    import sys

    mod = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == path)
    assert mod.CALLS == [1, 20, 20]  # the warm-up (horizon 1), then each trajectory
    assert table["undiscounted_return"].to_list() == [20.0, 20.0]
    registry.reset()
    bad = _plugin(tmp_path, NEW_PLAYER.replace("LEAVE", "7"), "badplug")
    agent = E.train_agent(f"{bad}:New", {}, D.builtin("GC"), horizon=20, progress=False)
    with pytest.raises(BBRLError, match=r"agent new-player, test MDP 0: the reward of step "
                                        r"7 is nan"):
        E.run_agent(ts, agent, progress=False)


OWN_KERNEL = """
import numpy as np
from numba import njit
from bbrlcore.agents import CompiledAgent, trajectory_loop

@njit(cache=True)
def reset(setup):
    return np.zeros(1)

@njit(cache=True)
def act(state, x):
    return np.random.randint(0, 3)

@njit(cache=True)
def observe(state, x, u, y, r):
    state[0] += r

@njit(cache=True)
def counters(state):
    return np.zeros(0, dtype=np.int64)

@njit(cache=True)
def old_kernel(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, status):
    return trajectory_loop(reset, act, observe, counters, setup, P, R, Rstd, gaussian,
                           initial_state, gamma, horizon, seed, status)

@njit(cache=True)
def new_kernel(setup, P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, status,
               rewards):
    return trajectory_loop(reset, act, observe, counters, setup, P, R, Rstd, gaussian,
                           initial_state, gamma, horizon, seed, status, rewards)

class Old(CompiledAgent):
    name = "own-old"
    reset, act, observe = reset, act, observe
    trajectory = old_kernel

class New(CompiledAgent):
    name = "own-new"
    reset, act, observe = reset, act, observe
    trajectory = new_kernel

class Default(CompiledAgent):
    name = "own-default"
    reset, act, observe = reset, act, observe
"""


def test_a_compiled_agents_own_kernel_with_or_without_the_rewards(tmp_path):
    """``CompiledAgent.trajectory`` written before rewards were recorded (10 arguments,
    calling the loop without them) still runs, recording none; one passing them on
    records like the package's kernel, with the same returns."""
    path = _plugin(tmp_path, OWN_KERNEL, "ownplug")
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 25, seed=0)
    runs, returns, recorded = {}, {}, {}
    for cls in ("Old", "New", "Default"):
        agent = E.train_agent(f"{path}:{cls}", {}, D.builtin("GC"), horizon=25,
                              progress=False)
        runs[cls] = E.run_agent(ts, agent, progress=False)
        play = agents.get(f"{path}:{cls}").make_player(D.builtin("GC"), {}, None,
                                                      ts.episode())
        assert records_rewards(play) == (cls != "Old")
        recorded[cls] = np.full((3, 25), np.nan)
        returns[cls] = [play(np.ascontiguousarray(ts.mdps[i]), i, *(
            [recorded[cls][i]] if cls != "Old" else []))[0] for i in range(3)]
    assert runs["Old"]["rewards"].null_count() == 3
    assert runs["New"]["rewards"].null_count() == 0
    assert returns["Old"] == returns["New"] == returns["Default"]
    assert np.array_equal(recorded["New"], recorded["Default"])
    for row in runs["New"].iter_rows(named=True):
        assert row["discounted_return"] == discounted(row["rewards"], 0.95)


def test_a_kernel_of_trajectory_kernel_records_when_given_an_array():
    cls = agents.get("psrl")
    from bbrlcore.agents.psrl import PSRL

    ts = E.new_test_set(D.builtin("GC"), 1, 0.95, 30, seed=0)
    ep = ts.episode()
    params = cls.parse_params({})
    setup = PSRL(params, D.builtin("GC"), None, ep.gamma, ep.horizon).setup()
    k = agents.trajectory_kernel(PSRL.reset, PSRL.act, PSRL.observe)
    args = (setup, np.ascontiguousarray(ts.mdps[0]), ep.succ, ep.nsucc, ep.R, ep.Rstd,
            ep.gaussian, ep.initial_state, ep.gamma, ep.horizon, 3,
            np.zeros(3, dtype=np.int64))
    buf = np.full(30, np.nan)
    with_rewards, _ = k(*args, buf)
    without, _ = k(*args)  # (as before: no array, nothing recorded)
    assert with_rewards == without == discounted(buf, 0.95)


def test_reward_buffers_are_checked_and_players_told_apart():
    assert reward_buffer(None, 4).shape == (4,)
    buf = np.zeros(4)
    assert reward_buffer(buf, 4) is buf
    for wrong in (np.zeros(3), np.zeros(4, dtype=np.float32), np.zeros((4, 1)), [0.0] * 4):
        with pytest.raises(BBRLError, match=r"rewards: expected a float64 array of shape "
                                            r"\(4,\)"):
            reward_buffer(wrong, 4)
    assert records_rewards(lambda P, seed, rewards: None)
    assert records_rewards(lambda *args: None)
    assert not records_rewards(lambda P, seed: None)
    assert not records_rewards(lambda P, seed, *, rewards=None: None)
    ts = E.new_test_set(D.builtin("GC"), 1, 0.95, 5, seed=0)
    play = agents.get("random").make_player(D.builtin("GC"), {}, None, ts.episode())
    with pytest.raises(BBRLError, match="rewards: expected"):
        play(ts.mdps[0], 0, np.zeros(4))  # never written past its end
    assert on_rows(play) is play.on_rows and on_rows(lambda P, seed: None) is not None


def test_the_runner_calls_a_players_on_rows_with_its_rows(monkeypatch):
    """run_agent calls ``on_rows(play)`` (Random's: no check) with float64 rows of its
    table, one per trajectory."""
    seen = []

    def spy(play):
        inner = on_rows(play)
        assert inner is play.on_rows

        def rows(P, seed, rewards):
            seen.append((rewards.dtype, rewards.shape, rewards.flags.c_contiguous))
            return inner(P, seed, rewards)

        return rows

    monkeypatch.setattr(E.runner, "on_rows", spy)
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 7, seed=0)
    agent = E.train_agent("random", {}, D.builtin("GC"), horizon=7, progress=False)
    table = E.run_agent(ts, agent, progress=False)
    assert seen == [(np.dtype(np.float64), (7,), True)] * 3
    assert np.isfinite(np.stack(table["rewards"].to_numpy())).all()


# ---------------------------------------------------------------------------------------
# Run tables: older tables, merging, checks


def _runs(test: str = "GC", n: int = 4, horizon: int = 15) -> list[pl.DataFrame]:
    ts = E.new_test_set(D.builtin(test), n, 0.95, horizon, seed=0)
    out = []
    for alg in ("random", "optimal"):
        agent = E.train_agent(alg, {}, D.builtin(test), horizon=horizon, progress=False)
        out.append(E.run_agent(ts, agent, progress=False))
    return out


def test_older_run_tables_without_rewards_read_merge_and_summarise(tmp_path):
    gc = _runs("GC")
    grid = _runs("Grid")
    old = tmp_path / "old.parquet"
    # (a table written before bbrl recorded rewards has none of the later columns either)
    E.write_run(pl.concat(gc).drop(RECORDED_SINCE_REWARDS).drop(RECORDED_SINCE_EPISODES),
                old, {"n_mdps": 4})
    new = tmp_path / "new.parquet"
    E.write_run(pl.concat(grid), new, {"n_mdps": 4})
    only_old = results.read_runs([str(old)])
    assert "rewards" not in only_old.columns
    assert results.summary_table(only_old).height == 2
    with pytest.raises(BBRLError, match="no undiscounted_return column"):
        results.summary_table(only_old, "undiscounted")
    both = results.read_runs([str(old), str(new)])
    assert both.schema["rewards"] == pl.List(pl.Float32)
    gc_rows = both.filter(pl.col("experiment") == "GC-GC")
    assert gc_rows["rewards"].null_count() == gc_rows.height == 8
    assert both.filter(pl.col("experiment") == "Grid-Grid")["rewards"].null_count() == 0
    results.check_run_table(both, "both", 4)
    assert results.summary_table(both).height == 4


def test_chunks_of_one_agent_with_and_without_rewards_are_refused(tmp_path):
    ts = E.new_test_set(D.builtin("GC"), 6, 0.95, 15, seed=0)
    agent = E.train_agent("random", {}, D.builtin("GC"), horizon=15, progress=False)
    a = E.run_agent(ts, agent, range(0, 3), progress=False)
    b = E.run_agent(ts, agent, range(3, 6), progress=False)
    assert results.merge_tables([a, b]).height == 6
    with pytest.raises(BBRLError, match=r"merge: experiment GC-GC, agent random: run tables "
                                        r"with and without per-step rewards"):
        results.merge_tables([a.drop(RECORDED_SINCE_REWARDS), b])
    mixed = pl.concat([a, b]).with_columns(
        pl.when(pl.col("mdp_index") < 3).then(None).otherwise(pl.col(c)).alias(c)
        for c in RECORDED_SINCE_REWARDS)
    with pytest.raises(BBRLError, match=r"agent random: undiscounted_return is null on some "
                                        r"test MDPs only"):
        results.check_run_table(mixed, "mixed.parquet", 6)


def _table() -> pl.DataFrame:
    return pl.concat(_runs("GC", 3, 6))


@pytest.mark.parametrize("change, message", [
    (lambda t: t.with_columns(pl.col("rewards").list.head(5)),
     r"rewards holds 5 values, expected n_steps = horizon = 6"),
    (lambda t: t.with_columns(pl.col("rewards").list.eval(
        pl.when(pl.int_range(pl.len()) == 2).then(float("nan")).otherwise(pl.element()))),
     r"rewards must hold finite values"),
    (lambda t: t.with_columns(pl.col("rewards").list.eval(
        pl.when(pl.int_range(pl.len()) == 2).then(None).otherwise(pl.element()))),
     r"rewards must hold finite values"),
    (lambda t: t.with_columns(undiscounted_return=pl.lit(float("inf"))),
     r"undiscounted_return must be finite, got inf"),
    (lambda t: t.with_columns(undiscounted_return=pl.lit(None, pl.Float64)),
     r"rewards and undiscounted_return must be both recorded or both null"),
    (lambda t: t.with_columns(pl.col("rewards").cast(pl.List(pl.Float64))),
     r"column 'rewards' has type List\(Float64\), expected List\(Float32\)"),
])
def test_check_run_table_refuses_bad_rewards(change, message):
    t = _table()
    results.check_run_table(t, "ok.parquet", 3)
    with pytest.raises(BBRLError, match=r"bad\.parquet: .*" + message):
        results.check_run_table(change(t), "bad.parquet", 3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, width=32), min_size=3, max_size=3),
                min_size=0, max_size=5))
def test_the_rewards_column_and_sums_of_a_rewards_matrix(rows):
    """``rewards`` holds each row of float32-exact rewards as it is; the undiscounted
    return is their sum accumulated in step order."""
    m = np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    s = rewards_series(m)
    assert s.dtype == pl.List(pl.Float32) and len(s) == len(rows)
    assert s.to_list() == [list(map(float, r)) for r in m]
    assert undiscounted_returns(m).tolist() == [in_order(r) for r in m]


# ---------------------------------------------------------------------------------------
# Rewards, returns and gamma agree, in every reader (issue 33)


def _kernel_returns(rewards: np.ndarray, gamma: float) -> tuple[float, float]:
    """(discounted, undiscounted) return of float64 ``rewards`` as a kernel adds them."""
    return discounted(rewards, gamma), in_order(rewards)


def _agreeing_table(rewards: list[list[float]], gamma: float, n: int) -> pl.DataFrame:
    """A run table of Random and Optimal on ``n`` test MDPs (rows of ``rewards`` in turn)
    whose returns are the float64 rewards' sums, stored as float32 as the runner does."""
    from bbrlcore import __version__

    T = len(rewards[0])
    rows = []
    for a, alg in enumerate(("random", "optimal")):
        for i in range(n):
            r = np.asarray(rewards[(a * n + i) % len(rewards)], dtype=np.float64)
            d, u = _kernel_returns(r, gamma)
            rows.append({"experiment": "GC-GC", "test": "GC", "prior": "GC",
                         "algorithm": alg, "agent": alg, "params": "{}", "compat": False,
                         "mdp_index": i, "discounted_return": d, "online_time_s": 1e-3,
                         "n_steps": T, "offline_time_s": 0.0, "seed": 0, "gamma": gamma,
                         "horizon": T, "test_seed": 0, "bbrlcore_version": __version__,
                         "undiscounted_return": u, "rewards": r.tolist(),
                         # the paper's setting: continuing, per-step rewards, no references
                         "episode_length": 0, "episodes": 1, "checkpoint_every": None,
                         "checkpoints": None, "episode_returns": None,
                         "optimal_reference": None, "worst_reference": None,
                         "random_reference": None, "regret": None,
                         **dict.fromkeys(INDICATOR_COLUMNS)})
    return pl.DataFrame(rows).cast(RUN_COLUMNS)  # type: ignore[arg-type]


def _reads(path: Path) -> None:
    """Read ``path`` as every reader does: with the rewards (merge) and without (summary,
    aggregate, curves, report: checked from the file in batches)."""
    results.read_runs([str(path)], "merge")
    results.read_runs([str(path)], "summary", rewards=False)


def _set_reward(t: pl.DataFrame, row: int, step: int, value) -> pl.DataFrame:
    r = t["rewards"].to_list()
    r[row] = list(r[row])
    r[row][step] = value
    return t.with_columns(pl.Series("rewards", r, dtype=pl.List(pl.Float32)))


_REWARDS = st.floats(-100, 100, allow_nan=False).map(float)


@settings(max_examples=80, deadline=None)
@given(T=st.integers(1, 12), n=st.integers(1, 3), gamma=st.floats(0.05, 1.0),
       data=st.data(),
       tamper=st.sampled_from(["none", "scale", "entry", "nan", "inf", "null", "shorter",
                               "longer", "gamma", "discounted", "undiscounted"]))
def test_rewards_tampered_in_any_way_are_refused_by_every_reader(tmp_path_factory, T, n,
                                                                  gamma, data, tamper):
    """Untampered tables (float64 rewards stored as float32, any γ, any horizon) read in
    every reader; rewards scaled, one entry changed, a NaN, an infinity or a null
    injected, a list shortened or lengthened, γ changed, a return changed: refused with
    one line naming the file, the row, the agent and the MDP."""
    rewards = data.draw(st.lists(st.lists(_REWARDS, min_size=T, max_size=T), min_size=1,
                                 max_size=2 * n))
    t = _agreeing_table(rewards, gamma, n)
    row = data.draw(st.integers(0, t.height - 1))
    step = data.draw(st.integers(0, T - 1))
    r = np.asarray(t["rewards"][row].to_list(), dtype=np.float64)
    d, u = t["discounted_return"][row], t["undiscounted_return"][row]
    tol_u = 1e-5 * np.abs(r).sum() + 1e-12
    tol_d = 1e-5 * abs(discounted(np.abs(r), gamma)) + 1e-12
    needle = None
    if tamper == "scale":
        c = data.draw(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 10.0]))
        changed = (abs(discounted(c * r, gamma) - d) > 100 * tol_d
                   or abs(in_order(c * r) - u) > 100 * tol_u)
        from hypothesis import assume

        assume(changed)  # (scaling rewards that sum to 0 both ways changes nothing)
        t = t.with_columns(pl.when(pl.int_range(pl.len()) == row)
                           .then(pl.col("rewards").list.eval(pl.element() * c))
                           .otherwise(pl.col("rewards")).alias("rewards"))
        needle = "disagrees with its rewards"
    elif tamper == "entry":
        delta = data.draw(st.sampled_from([-1.0, 1.0])) * (0.01 + 0.01 * np.abs(r).sum())
        t = _set_reward(t, row, step, float(np.float32(r[step] + delta)))
        needle = "undiscounted_return .* disagrees with its rewards: their sum is"
    elif tamper in ("nan", "inf", "null"):
        v = {"nan": float("nan"), "inf": -float("inf"), "null": None}[tamper]
        t = _set_reward(t, row, step, v)
        needle = "rewards must hold finite values"
    elif tamper == "shorter":
        t = t.with_columns(pl.when(pl.int_range(pl.len()) == row)
                           .then(pl.col("rewards").list.head(T - 1))
                           .otherwise(pl.col("rewards")).alias("rewards"))
        needle = f"rewards holds {T - 1} values, expected n_steps = horizon = {T}"
    elif tamper == "longer":
        t = t.with_columns(pl.when(pl.int_range(pl.len()) == row)
                           .then(pl.col("rewards").list.concat(pl.lit([0.0], pl.List(
                               pl.Float32))))
                           .otherwise(pl.col("rewards")).alias("rewards"))
        needle = f"rewards holds {T + 1} values, expected n_steps = horizon = {T}"
    elif tamper == "gamma":
        g2 = data.draw(st.floats(0.05, 1.0))
        R = np.asarray(t["rewards"].to_list(), dtype=np.float64)
        from hypothesis import assume

        assume(any(abs(discounted(x, g2) - y) > 100 * (1e-5 * discounted(np.abs(x), g2)
                                                         + 1e-12)
                   for x, y in zip(R, t["discounted_return"], strict=True)))
        t = t.with_columns(gamma=pl.lit(g2))
        needle = f"discounted_return .* disagrees with its rewards: their discounted sum " \
                 f"under gamma {g2:.9g} is"
    elif tamper in ("discounted", "undiscounted"):
        col = f"{tamper}_return"
        off = data.draw(st.sampled_from([-1.0, 1.0])) * (0.01 + 0.01 * np.abs(r).sum())
        t = t.with_columns(pl.when(pl.int_range(pl.len()) == row).then(pl.col(col) + off)
                           .otherwise(pl.col(col)).alias(col))
        needle = f"{col} .* disagrees with its rewards"
    path = tmp_path_factory.mktemp("tamper") / "t.parquet"
    E.write_run(t, path, {"n_mdps": n})
    if needle is None:
        _reads(path)
        return
    for command, with_rewards in (("merge", True), ("summary", False)):
        with pytest.raises(BBRLError) as exc:
            results.read_runs([str(path)], command, rewards=with_rewards)
        msg = str(exc.value)
        assert "\n" not in msg
        assert msg.startswith(f"{path}: row "), msg
        assert "(experiment GC-GC, agent " in msg and ", MDP " in msg, msg
        import re

        assert re.search(needle, msg), (needle, msg)


def _cli_table(tmp_path: Path, change=None, name: str = "t.parquet") -> Path:
    """A run table of every reader's liking (Random, Optimal and two learners on two
    experiments, per-step rewards), changed by ``change``."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic_runs import ALGORITHMS as SYN
    from synthetic_runs import learning_runs

    t = learning_runs(n=6, T=12, algorithms=SYN[:4])
    path = tmp_path / name
    E.write_run(change(t) if change else t, path, {"n_mdps": 6})
    return path


def _psrl_rows(expr):
    return pl.when(pl.col("agent") == "e-greedy__epsilon=0.1").then(expr)


#: Tampered tables of the issue, each with what the line names.
TAMPERED = {
    "rewards x10": (lambda t: t.with_columns(pl.col("rewards").list.eval(pl.element() * 10)),
                    "row 0 (experiment GC-GC, agent random, MDP 0): undiscounted_return "),
    "a NaN": (lambda t: t.with_columns(_psrl_rows(pl.col("rewards").list.eval(
        pl.element() * float("nan"))).otherwise(pl.col("rewards")).alias("rewards")),
        "(experiment GC-GC, agent e-greedy__epsilon=0.1, MDP 0): rewards must hold finite"),
    "gamma 0.5 for one agent": (lambda t: t.with_columns(_psrl_rows(pl.lit(0.5)).otherwise(
        pl.col("gamma")).alias("gamma")), "agent e-greedy__epsilon=0.1, MDP 0): "
        "discounted_return"),
    "List(Float64)": (lambda t: t.with_columns(pl.col("rewards").cast(pl.List(pl.Float64))),
                      "t.parquet: column 'rewards' has type List(Float64), expected "
                      "List(Float32)"),
    "List(Int64)": (lambda t: t.with_columns(pl.col("rewards").cast(pl.List(pl.Int64))),
                    "column 'rewards' has type List(Int64), expected List(Float32)"),
    "List(String)": (lambda t: t.with_columns(pl.col("rewards").cast(pl.List(pl.String))),
                     "column 'rewards' has type List(String), expected List(Float32)"),
    "Array(Float32)": (lambda t: t.with_columns(pl.col("rewards").cast(
        pl.Array(pl.Float32, 12))), "column 'rewards' has type Array(Float32, shape=(12,)),"
        " expected List(Float32)"),
    "Float64": (lambda t: t.with_columns(pl.col("rewards").list.first().cast(pl.Float64)),
                "column 'rewards' has type Float64, expected List(Float32)"),
    "no rewards column": (lambda t: t.drop("rewards"), "t.parquet: run table has the column "
                          "'undiscounted_return' but not 'rewards'"),
}
#: Every command that reads run tables, with its other arguments.
READERS = {
    "merge": ["-o", "out.parquet"], "summary": ["-o", "out.parquet"],
    "aggregate": ["--resamples", "100"], "curves": ["--resamples", "100"],
    "report": ["--no-pdf", "--bootstrap-resamples", "100", "-o", "rep"],
    "compare-published": [],
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("tamper", TAMPERED)
def test_every_reader_refuses_a_tampered_table_in_one_line(tmp_path, capsys, monkeypatch,
                                                          reader, tamper):
    from bbrlcore.cli import main

    monkeypatch.chdir(tmp_path)
    change, needle = TAMPERED[tamper]
    path = _cli_table(tmp_path, change)
    capsys.readouterr()
    rc = main([reader, str(path), *READERS[reader]])
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("bbrl: warning:")]
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"bbrl: error: {path}: ") and needle in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


@pytest.mark.parametrize("reader", ["merge", "summary", "aggregate", "curves"])
def test_every_reader_takes_the_untampered_table(tmp_path, capsys, monkeypatch, reader):
    from bbrlcore.cli import main

    monkeypatch.chdir(tmp_path)
    path = _cli_table(tmp_path)
    capsys.readouterr()
    assert main([reader, str(path), *READERS[reader]]) == 0, capsys.readouterr().err


def test_mixed_gamma_within_a_table_or_between_tables_is_one_line(tmp_path):
    """An agent's rows at another γ whose returns agree with it: the experiment's tables
    disagree on γ, named with both agents."""
    def at(t: pl.DataFrame, gamma: float) -> pl.DataFrame:
        R = np.asarray(t["rewards"].to_list(), dtype=np.float64)
        return t.with_columns(gamma=pl.lit(gamma), discounted_return=pl.Series(
            [discounted(x, gamma) for x in R]))

    def psrl_at(t):
        mine = t.filter(pl.col("agent") == "e-greedy__epsilon=0.1")
        return pl.concat([t.filter(pl.col("agent") != "e-greedy__epsilon=0.1"),
                          at(mine, 0.5)])

    one = _cli_table(tmp_path, psrl_at)
    for command, rw in (("merge", True), ("curves", False)):
        with pytest.raises(BBRLError, match=rf"^{command}: experiment GC-GC: run tables from "
                           r"different test sets or versions \(within .*t\.parquet: gamma "
                           r"0\.95 vs 0\.5, agent random vs agent e-greedy__epsilon=0\.1\)"):
            results.read_runs([str(one)], command, rewards=rw)
    a = _cli_table(tmp_path, lambda t: t.filter(pl.col("agent") == "random"), "a.parquet")
    b = _cli_table(tmp_path, lambda t: at(t.filter(pl.col("agent") != "random"), 0.9),
                   "b.parquet")
    with pytest.raises(BBRLError, match=r"a\.parquet vs .*b\.parquet: gamma 0\.95 vs 0\.9, "
                       r"agent random vs agent optimal"):
        results.read_runs([str(a), str(b)], "summary", rewards=False)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.lists(_REWARDS, min_size=0, max_size=7),
                          st.sampled_from([0.5, 0.9, 0.95, 1.0])), min_size=1, max_size=6),
       st.booleans())
def test_the_vectorised_sums_are_the_kernels_sums(rows, same_length):
    """``results._reward_sums`` (flattened rows of any lengths and γ: a merged table of
    several horizons) gives each row's sums as a kernel accumulates them."""
    if same_length:
        T = len(rows[0][0])
        rows = [((r + [1.0] * T)[:T], g) for r, g in rows]
    lens = np.array([len(r) for r, _ in rows], dtype=np.int64)
    flat = np.array([x for r, _ in rows for x in r], dtype=np.float64)
    gamma = np.array([g for _, g in rows])
    disc, disc_abs, und, und_abs = results._reward_sums(flat, lens, gamma)
    for k, (r, g) in enumerate(rows):
        a = np.abs(np.asarray(r, dtype=np.float64))
        for got, want, scale in ((disc[k], discounted(r, g), discounted(a, g)),
                                 (disc_abs[k], discounted(a, g), discounted(a, g)),
                                 (und[k], in_order(r), a.sum()), (und_abs[k], a.sum(), a.sum())):
            assert abs(got - want) <= 1e-12 * scale + 1e-300


@pytest.mark.parametrize("chunk", [1, 6, 12, 1 << 20])
def test_a_merged_table_of_two_horizons_and_gammas_is_checked_row_by_row(tmp_path,
                                                                          monkeypatch, chunk):
    """In chunks of any size (a file read batch by batch, a table slice by slice), the
    row named is the file's."""
    monkeypatch.setattr(results, "CHECK_CHUNK_VALUES", chunk)
    a = _agreeing_table([[1.0, 0.0, 2.0]], 0.9, 3)
    b = _agreeing_table([[0.0, 10.0, 0.0, 1.0, 1.0]], 0.5, 2).with_columns(
        experiment=pl.lit("GDL-GDL"), test=pl.lit("GDL"), prior=pl.lit("GDL"))
    E.write_run(pl.concat([a, b]), tmp_path / "m.parquet", {})
    _reads(tmp_path / "m.parquet")
    bad = pl.concat([a, _set_reward(b, 3, 1, 9.0)])
    E.write_run(bad, tmp_path / "bad.parquet", {})
    for command, rw in (("merge", True), ("aggregate", False)):
        with pytest.raises(BBRLError, match=r"bad\.parquet: row 9 \(experiment GDL-GDL, "
                           r"agent optimal, MDP 1\): undiscounted_return 12 disagrees with "
                           r"its rewards: their sum is 11 "):
            results.read_runs([str(tmp_path / "bad.parquet")], command, rewards=rw)
