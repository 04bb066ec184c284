"""Benchmark your own algorithm: the public agent API, the registry, plugins' bad input,
gymnasium, and your own problems (issue "Benchmark your own algorithm")."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents import registry
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D

ROOT = Path(__file__).resolve().parents[1]
MY = f"{ROOT / 'examples' / 'my_agents.py'}"


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.reset()
    yield
    registry.reset()


def write_plugin(tmp_path: Path, body: str, name: str = "plug.py") -> Path:
    """A plugin file: HEADER-prefixed bodies may be indented (they are dedented)."""
    p = tmp_path / name
    if body.startswith(HEADER):
        body = HEADER + textwrap.dedent(body[len(HEADER):])
    p.write_text(body)
    return p


HEADER = """
import numpy as np
from bbrlcore.agents import Param, PythonAgent, CompiledAgent, at_least_one
from numba import njit
"""


def bbrl(capsys, *args):
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


# ---------------------------------------------------------------------------------------
# The API


def test_a_compiled_plugin_plays_exactly_the_builtin_trajectories():
    """MyGreedyJit calls bbrl's kernels in the built-in e-Greedy's order: the package's
    loop around them gives the same returns for the same seeds."""
    ts = E.new_test_set(D.builtin("Grid"), 8, 0.95, 250, seed=5)
    out = []
    for name in ("e-greedy", f"{MY}:MyGreedyJit"):
        alg = agents.get(name)
        play = alg.make_player(D.builtin("UGrid"), alg.parse_params({"epsilon": "0.2"}),
                               None, ts.episode())
        out.append([play(np.ascontiguousarray(ts.mdps[i]), 77 + i)[0] for i in range(8)])
    assert out[0] == out[1]


def test_a_python_plugin_runs_like_a_builtin(tmp_path):
    ts = E.new_test_set(D.builtin("GC"), 12, 0.95, 40, seed=1)
    agent = E.train_agent(f"{MY}:MyGreedy", {"epsilon": "0.1"}, D.builtin("GC"),
                          progress=False)
    assert agent.agent_id == "my-greedy__epsilon=0.1" and agent.algorithm == "my-greedy"
    whole = E.run_agent(ts, agent, progress=False)
    parts = [E.run_agent(ts, agent, range(a, b), progress=False) for a, b in ((0, 5), (5, 12))]
    joined = np.concatenate([p["discounted_return"].to_numpy() for p in parts])
    assert np.array_equal(whole["discounted_return"].to_numpy(), joined)  # chunk-invariant
    assert whole["discounted_return"].mean() > 25  # learns on GC (Random: about 31, T=250)
    E.write_agent(agent, tmp_path / "a.parquet")
    back = E.read_agent(tmp_path / "a.parquet")  # found again by its reference
    assert back.ref.endswith("my_agents.py:MyGreedy") and back.fingerprint
    again = E.run_agent(ts, back, progress=False)
    assert np.array_equal(again["discounted_return"].to_numpy(),
                          whole["discounted_return"].to_numpy())


def test_parameters_of_a_plugin_behave_like_a_builtins(capsys, tmp_path):
    alg = agents.get(f"{MY}:MyGreedy")
    assert alg.parse_params({"epsilon": "1"}) == {"epsilon": 1.0}
    rc, _, err = bbrl(capsys, "train", "--agent", f"{MY}:MyGreedy", "--param", "epsilon=2",
                      "--prior", "GC", "-o", tmp_path / "x.parquet")
    assert rc == 2 and "--param epsilon=2: must be in [0, 1]" in err
    rc, _, err = bbrl(capsys, "train", "--agent", f"{MY}:MyGreedy", "--param", "eps=0.1",
                      "--prior", "GC", "-o", tmp_path / "x.parquet")
    assert rc == 2 and "unknown parameter of my-greedy (expected: epsilon)" in err
    assert not (tmp_path / "x.parquet").exists()


def test_train_learns_and_stores_what_it_returns(tmp_path):
    p = write_plugin(tmp_path, HEADER + """
    class Memo(PythonAgent):
        name = "memo"
        params = (Param("k", int, required=True, check=at_least_one),)
        def train(self, prior, ctx):
            return {"best": int(np.argmax(prior.reward.sum(axis=(0, 2)))),
                    "table": np.arange(self.p["k"])}
        def act(self, state):
            return self.learned["best"]
    """)
    agent = E.train_agent(f"{p}:Memo", {"k": "3"}, D.builtin("GC"), progress=False)
    assert agent.info["learned"] == {"best": 0, "table": [0, 1, 2]}
    E.write_agent(agent, tmp_path / "m.parquet")
    ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 5, seed=0)
    run = E.run_agent(ts, E.read_agent(tmp_path / "m.parquet"), progress=False)
    assert run.height == 2


def test_the_registry_lists_builtins_and_plugins(capsys):
    rc, out, _ = bbrl(capsys, "agents", f"{MY}:MyGreedyJit")
    assert rc == 0
    assert "e-greedy" in out and "from built-in" in out
    assert "my-greedy-jit" in out and "my_agents.py:MyGreedyJit" in out
    installed = {e.name: e for e in registry.entry_points().values()}
    assert list(installed)[:9] == list(agents.NAMES)  # built-ins first, paper order
    if "rmax" in installed:  # the example package (make test installs it)
        assert installed["rmax"].source.startswith("plugin bbrl-rmax")


def test_builtins_are_declared_as_entry_points_in_pyproject():
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert eps["bbrl.agents"] == registry.BUILTIN_ENTRY_POINTS


# ---------------------------------------------------------------------------------------
# Bad input from plugins


@pytest.mark.parametrize("body, ref, needle", [
    ("import nonexistent_module\n", "Plug", "importing plug.py failed: ModuleNotFoundError"),
    ("x = (\n", "Plug", "importing plug.py failed: SyntaxError"),
    (HEADER, "Plug", "plug.py defines no 'Plug'"),
    (HEADER + "class Plug:\n    name = 'p'\n", "Plug", "is not an algorithm"),
    (HEADER + "class Plug(PythonAgent):\n    name = 'p'\n", "Plug",
     "Plug must define the method act(state)"),
    (HEADER + "class Plug(CompiledAgent):\n    name = 'p'\n", "Plug",
     "must define reset, act, observe as numba @njit functions"),
    (HEADER + "class Plug(PythonAgent):\n    name = 'beb'\n    def act(self, s): return 0\n",
     "Plug", "already the built-in algorithm 'beb'"),
    (HEADER + "class Plug(PythonAgent):\n    name = 'Bad Name'\n    def act(self, s): return 0\n",
     "Plug", "algorithm name 'Bad Name'"),
])
def test_a_bad_plugin_is_one_line(capsys, tmp_path, body, ref, needle):
    p = write_plugin(tmp_path, body)
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:{ref}", "--prior", "GC", "-o",
                      tmp_path / "x.parquet")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err
    assert not (tmp_path / "x.parquet").exists()


def test_a_missing_module_reference_is_one_line(capsys, tmp_path):
    rc, _, err = bbrl(capsys, "train", "--agent", "no_such_pkg.agents:Thing", "--prior", "GC",
                      "-o", tmp_path / "x.parquet")
    assert rc == 2 and "importing no_such_pkg.agents failed: ModuleNotFoundError" in err


BAD_RUNS = [
    ("def act(self, s):\n        return 7\n", "act returned 7 at step 0, outside [0, 3)"),
    ("def act(self, s):\n        return 1.5\n", "act returned 1.5 (float) at step 0"),
    ("def act(self, s):\n        return 0\n    def observe(self, s, a, y, r):\n"
     "        if self.t == 3: raise ValueError('broken')\n        self.t += 1\n"
     "    def reset(self):\n        self.t = 0\n",
     "ValueError at step 3: broken"),
]


@pytest.mark.parametrize("method, needle", BAD_RUNS)
def test_agent_errors_name_the_plugin_the_mdp_and_the_step(capsys, tmp_path, method, needle):
    p = write_plugin(tmp_path, HEADER + "class Plug(PythonAgent):\n    name = 'plug'\n    "
                     + method)
    E.write_test_set(E.new_test_set(D.builtin("GC"), 3, 0.95, 20, 0), tmp_path / "ts.parquet")
    assert bbrl(capsys, "train", "--agent", f"{p}:Plug", "--prior", "GC", "-o",
                tmp_path / "a.parquet")[0] == 0
    rc, _, err = bbrl(capsys, "run", "--experiment", tmp_path / "ts.parquet", "--agent",
                      tmp_path / "a.parquet", "-o", tmp_path / "r.parquet")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert "agent plug, test MDP 0: plug: " in lines[0] and needle in lines[0], lines[0]
    assert not (tmp_path / "r.parquet").exists()


def test_compiled_plugin_errors(capsys, tmp_path):
    p = write_plugin(tmp_path, HEADER + """
    @njit
    def reset(setup):
        return np.zeros(1)
    @njit
    def act(state, x):
        return 5
    @njit
    def observe(state, x, u, y, r):
        pass
    @njit
    def act_float(state, x):
        return 0.5
    class Wrong(CompiledAgent):
        name = "wrong"
        reset = reset
        act = act
        observe = observe
    class Untyped(CompiledAgent):
        name = "untyped"
        reset = reset
        act = act_float
        observe = observe
    """)
    ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 10, 0)
    with pytest.raises(BBRLError, match=r"test MDP 0: wrong: act returned 5 at step 0, "
                                        r"outside \[0, 3\)"):
        E.run_agent(ts, E.train_agent(f"{p}:Wrong", {}, D.builtin("GC"), progress=False),
                    progress=False)
    with pytest.raises(BBRLError, match="untyped: its reset/act/observe do not compile"):
        E.run_agent(ts, E.train_agent(f"{p}:Untyped", {}, D.builtin("GC"), progress=False),
                    progress=False)


def test_a_plugin_that_prints_corrupts_nothing(capsys, tmp_path):
    p = write_plugin(tmp_path, HEADER + """
    class Noisy(PythonAgent):
        name = "noisy"
        def train(self, prior, ctx):
            print("hello from train")
            return 1
        def act(self, s):
            print("hello from act")
            return 0
    """)
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 0.95, 5, 0), tmp_path / "ts.parquet")
    rc, out, err = bbrl(capsys, "train", "--agent", f"{p}:Noisy", "--prior", "GC", "-o",
                        tmp_path / "a.parquet")
    assert rc == 0 and "hello" not in out and "hello from train" in err
    rc, out, err = bbrl(capsys, "run", "--experiment", tmp_path / "ts.parquet", "--agent",
                        tmp_path / "a.parquet", "-o", tmp_path / "r.parquet")
    assert rc == 0 and out.startswith("wrote ") and "hello" not in out
    assert "hello from act" in err
    assert E.read_run(tmp_path / "r.parquet").height == 2


def test_two_plugins_with_one_name_are_refused(tmp_path):
    a = write_plugin(tmp_path, HEADER + "class A(PythonAgent):\n    name = 'same'\n"
                     "    def act(self, s): return 0\n", "a.py")
    b = write_plugin(tmp_path, HEADER + "class B(PythonAgent):\n    name = 'same'\n"
                     "    def act(self, s): return 0\n", "b.py")
    agents.get(f"{a}:A")
    with pytest.raises(BBRLError, match=r"defines algorithm 'same', which is already defined"):
        agents.get(f"{b}:B")


# ---------------------------------------------------------------------------------------
# gymnasium


def test_gymnasium_env_and_agent_adapter(tmp_path):
    gymnasium = pytest.importorskip("gymnasium")
    from bbrlcore.protocol.gym import MDPEnv, TestSetEnv, gymnasium_agent

    ts = E.new_test_set(D.builtin("GC"), 4, 0.95, 25, seed=2)
    env = TestSetEnv(ts)
    assert isinstance(env, gymnasium.Env)
    seen = []
    for _ in range(5):
        obs, info = env.reset(seed=3)
        seen.append(info["mdp_index"])
        total, truncated = 0, False
        while not truncated:
            obs, r, terminated, truncated, _ = env.step(env.action_space.sample())
            assert not terminated and env.observation_space.contains(obs)
            total += 1
        assert total == 25
    assert seen == [0, 1, 2, 3, 0]
    from gymnasium.utils.env_checker import check_env

    check_env(MDPEnv(ts.mdps[0], ts.test.reward, horizon=10), skip_render_check=True)

    class Counter:
        def __init__(self, observation_space, action_space, **kw):
            self.n_actions, self.rng, self.updates = action_space.n, kw["rng"], 0

        def act(self, observation):
            return int(self.rng.integers(self.n_actions))

        def update(self, obs, action, reward, next_obs, terminated, truncated):
            self.updates += 1

    cls = gymnasium_agent("gym-random", Counter)
    alg = agents.registry.as_algorithm(cls, "test")
    play = alg.make_player(D.builtin("GC"), {}, None, ts.episode())
    r1, _ = play(np.ascontiguousarray(ts.mdps[0]), 11)
    r2, _ = play(np.ascontiguousarray(ts.mdps[0]), 11)
    assert r1 == r2  # seeded by the trajectory's seed


# ---------------------------------------------------------------------------------------
# Your own problems


def test_riverswim_is_built_from_arrays_and_saved_both_ways(tmp_path):
    import runpy

    mod = runpy.run_path(str(ROOT / "examples" / "riverswim.py"))
    d = mod["riverswim"](10.0)
    assert (d.n_states, d.n_actions) == (6, 2)
    assert np.allclose(d.mean_model(), mod["riverswim_model"]()[0])
    D.write_parquet(d, tmp_path / "r.parquet")
    D.write_dat(d, tmp_path / "r.dat")
    assert D.load(tmp_path / "r.parquet").same_as(d) and D.load(tmp_path / "r.dat").same_as(d)
    ts = E.new_test_set(D.load(tmp_path / "r.dat"), 5, 0.95, 50, 0)
    assert ts.mdps.shape == (5, 6, 2, 6)
    with pytest.raises(BBRLError, match="concentration must be > 0"):
        D.FDMDistribution.centred_on("x", "X", mod["riverswim_model"]()[0], d.reward, -1.0)
    with pytest.raises(BBRLError, match="rows of probabilities summing to one"):
        D.FDMDistribution.centred_on("x", "X", np.ones((2, 1, 2)), np.zeros((2, 1, 2)), 1.0)
