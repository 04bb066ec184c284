"""Benchmark your own algorithm: the public agent API, the registry, plugins' bad input,
gymnasium, and your own problems (issue "Benchmark your own algorithm")."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
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


def test_a_plugin_says_something_about_a_run_once(tmp_path, capsys):
    """``run_note`` (issue 43, the hook UCRL2's note uses): called once per run with the
    sums of the counters and the steps in all; its line on stderr, nothing when it returns
    None, and an error in it names the hook."""
    p = write_plugin(tmp_path, HEADER + """
    class Zeros(PythonAgent):
        name = "zeros"
        counters = ("zeros",)
        def reset(self):
            self.n = 0
        def act(self, state):
            self.n += 1
            return 0
        def counter_values(self):
            return (self.n,)
        @staticmethod
        def run_note(params, totals, n_steps):
            if totals["zeros"] == n_steps:
                return f"played action 0 at all {n_steps} steps"
            return None

    class Broken(Zeros):
        name = "broken"
        @staticmethod
        def run_note(params, totals, n_steps):
            raise ValueError("no note")
    """)
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 7, seed=0)
    agent = E.train_agent(f"{p}:Zeros", {}, D.builtin("GC"), progress=False)
    capsys.readouterr()
    table = E.run_agent(ts, agent, progress=False)
    err = capsys.readouterr().err
    assert table["zeros"].to_list() == [7, 7, 7]
    assert err.count("bbrl: note:") == 1
    assert "bbrl: note: zeros on GC-GC: played action 0 at all 21 steps" in err
    broken = E.train_agent(f"{p}:Broken", {}, D.builtin("GC"), progress=False)
    with pytest.raises(BBRLError, match="broken: run_note raised ValueError: no note"):
        E.run_agent(ts, broken, progress=False)


def test_the_registry_lists_builtins_and_plugins(capsys):
    rc, out, _ = bbrl(capsys, "agents")
    assert rc == 0
    assert "e-greedy" in out and "from built-in" in out
    rc, out, _ = bbrl(capsys, "agents", f"{MY}:MyGreedyJit")  # that one only
    assert rc == 0 and "from built-in" not in out
    assert not [ln for ln in out.splitlines() if ln.startswith(("e-greedy", "random", "beb"))]
    assert out.startswith("my-greedy-jit (My e-Greedy (compiled) in the report)")
    assert "my_agents.py:MyGreedyJit" in out
    assert "epsilon (float, required): probability of a uniformly random action" in out
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
     "ValueError in observe at step 3: broken"),
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
    with pytest.raises(BBRLError, match=r"^untyped: act \(act_float\) returns float64, "
                                        "not an integer action$"):  # found at training
        E.train_agent(f"{p}:Untyped", {}, D.builtin("GC"), progress=False)


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
# Each hook's error names the hook and its place (issue 41)

#: Where each hook of the test plugins raises (T = 40 steps, episodes of H = 4), and the
#: place its message gives: observe at step 11 is the last step of episode 2, before
#: which episode 3's start (step 12) is not yet called.
HOOK_ERRORS = [
    ("reset", "in reset, before step 0"),
    ("act", "in act at step 5"),
    ("observe", "in observe at step 11"),
    ("episode_start", "in episode_start(k=3), before step 12"),
    ("counter_values", "in counter_values, after step 39"),
]


def _failing_plugin(tmp_path: Path, kind: str, hook: str) -> str:
    """A plugin whose ``hook`` raises RuntimeError('boom') (at step 5 for act, 11 for
    observe, episode 3 for episode_start); ``kind`` python or compiled."""
    def fail(h: str, indent: int) -> str:  # (one line of code)
        return " " * indent + ("raise RuntimeError('boom')" if h == hook else "pass")

    if kind == "python":
        body = HEADER + f"""
class Plug(PythonAgent):
    name = "fails-{hook.replace('_', '-')}"
    counters = ("n",)
    def reset(self):
        self.t = 0
{fail("reset", 8)}
    def act(self, s):
        if self.t == 5:
{fail("act", 12)}
        return 0
    def observe(self, s, a, y, r):
        if self.t == 11:
{fail("observe", 12)}
        self.t += 1
    def episode_start(self, k):
        if k == 3:
{fail("episode_start", 12)}
    def counter_values(self):
{fail("counter_values", 8)}
        return (self.t,)
"""
    else:
        body = HEADER + f"""
@njit
def reset(setup):
    if setup[0] == 0:  # (always: a branch keeps numba's return type)
{fail("reset", 8)}
    return np.zeros(1)
@njit
def act(state, x):
    if state[0] == 5:
{fail("act", 8)}
    return 0
@njit
def observe(state, x, u, y, r):
    if state[0] == 11:
{fail("observe", 8)}
    state[0] += 1
@njit
def episode_start(state, k):
    if k == 3:
{fail("episode_start", 8)}
@njit
def counter_values(state):
    if state[0] >= 0:
{fail("counter_values", 8)}
    return np.array([int(state[0])])
class Plug(CompiledAgent):
    name = "fails-{hook.replace('_', '-')}"
    counters = ("n",)
    reset, act, observe, episode_start = reset, act, observe, episode_start
    counter_values = counter_values
    def setup(self):
        return (0,)
"""
    return f"{write_plugin(tmp_path, body, f'{kind}_{hook}.py')}:Plug"


@pytest.mark.parametrize("kind", ["python", "compiled"])
@pytest.mark.parametrize("hook, place", HOOK_ERRORS)
def test_an_error_of_each_hook_names_the_hook_and_its_place(tmp_path, kind, hook, place):
    """An exception in episode_start is reported as raised there, in episode k, before
    the episode's first step (it was "at step 11", the step before, not naming the
    hook); reset, act, observe and counter_values are named with their own step, in a
    Python agent and a compiled one alike."""
    from bbrlcore.mdp import families

    ref = _failing_plugin(tmp_path, kind, hook)
    deep = families.make("deepsea", size=4)
    ts = E.new_test_set(deep.test, 2, 0.95, 40, seed=0, episode_length=4)
    agent = E.train_agent(ref, {}, deep.prior("accurate"), horizon=40, progress=False)
    with pytest.raises(BBRLError) as err:
        E.run_agent(ts, agent, progress=False)
    name = "fails-" + hook.replace("_", "-")
    assert str(err.value) == f"agent {name}, test MDP 0: {name}: RuntimeError {place}: boom"


def test_an_episode_start_that_is_not_a_method_is_refused_when_the_class_is_read(tmp_path):
    """episode_start = 5: refused when the agent is built, before any trajectory, naming
    the class, the hook and what it must be (it was "TypeError at reset: 'int' object is
    not callable" while playing); a compiled agent's that is not @njit likewise."""
    p = write_plugin(tmp_path, HEADER + """
    class Five(PythonAgent):
        name = "five"
        episode_start = 5
        def act(self, s):
            return 0
    class NoK(PythonAgent):
        name = "no-k"
        def episode_start(self):
            pass
        def act(self, s):
            return 0
    @njit
    def reset(setup):
        return np.zeros(1)
    @njit
    def act(state, x):
        return 0
    @njit
    def observe(state, x, u, y, r):
        pass
    def plain(state, k):
        pass
    class Plain(CompiledAgent):
        name = "plain"
        reset, act, observe = reset, act, observe
        episode_start = plain
    """)
    for cls, needle in (
            ("Five", "Five.episode_start must be a method episode_start(self, k), called "
                     "before each episode's first act (a PythonAgent), or left out; got int 5"),
            ("NoK", "NoK.episode_start must be a method episode_start(self, k), called "
                    "before each episode's first act (a PythonAgent), or left out; got a "
                    "method episode_start(self)"),
            ("Plain", "Plain.episode_start must be a numba @njit function "
                      "episode_start(state, k), called before each episode's first act (a "
                      "CompiledAgent), or left out; got function plain (not decorated with "
                      "@njit)")):
        with pytest.raises(BBRLError) as err:
            agents.get(f"{p}:{cls}")
        assert str(err.value).endswith(needle), str(err.value)
        assert len(str(err.value).splitlines()) == 1


def test_a_compiled_episode_start_with_the_wrong_arguments_is_named(capsys, tmp_path):
    """A compiled episode_start(state): the error names the hook and the signature the
    loop calls it with (it said "its reset/act/observe do not compile")."""
    p = write_plugin(tmp_path, HEADER + """
    @njit
    def reset(setup):
        return np.zeros(1)
    @njit
    def act(state, x):
        return 0
    @njit
    def observe(state, x, u, y, r):
        pass
    @njit
    def one_arg(state):
        pass
    @njit
    def untyped(state, k):
        state.nothing_here(k)
    class OneArg(CompiledAgent):
        name = "one-arg"
        reset, act, observe, episode_start = reset, act, observe, one_arg
        def setup(self):
            return (0,)
    class Untyped(CompiledAgent):
        name = "untyped-start"
        reset, act, observe, episode_start = reset, act, observe, untyped
        def setup(self):
            return (0,)
    """)
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:OneArg", "--prior", "GC", "-o",
                      tmp_path / "a.parquet")
    assert rc == 2 and err.strip() == (
        "bbrl: error: one-arg: episode_start (one_arg) takes (state), expected "
        "episode_start(state, k) (plug.py, line 16)"), err
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:Untyped", "--prior", "GC", "-o",
                      tmp_path / "a.parquet")
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("bbrl: error: untyped-start: episode_start (untyped) does not "
                          "compile (plug.py, line 20): TypingError: "), err
    assert not (tmp_path / "a.parquet").exists()


# ---------------------------------------------------------------------------------------
# gymnasium


def test_gymnasium_env_and_agent_adapter(tmp_path):
    gymnasium = pytest.importorskip("gymnasium")
    from bbrlcore.protocol.gym import MDPEnv, TestSetEnv, gymnasium_agent

    ts = E.new_test_set(D.builtin("GC"), 4, 0.95, 25, seed=2)
    env = TestSetEnv(ts)
    assert isinstance(env, gymnasium.Env)
    seen = []
    for k in range(5):  # seeded once: episode 3 (MDP 3), then the next ones
        obs, info = env.reset(seed=3) if k == 0 else env.reset()
        seen.append(info["mdp_index"])
        total, truncated = 0, False
        while not truncated:
            obs, r, terminated, truncated, _ = env.step(env.action_space.sample())
            assert not terminated and env.observation_space.contains(obs)
            total += 1
        assert total == 25
    assert seen == [3, 0, 1, 2, 3]
    from gymnasium.utils.env_checker import check_env

    check_env(MDPEnv(ts.dense(0), ts.test.reward, horizon=10), skip_render_check=True)

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
    assert ts.mdps.shape == (5, 6, 2, ts.layout.width) and ts.dense(0).shape == (6, 2, 6)
    with pytest.raises(BBRLError, match="concentration must be > 0"):
        D.FDMDistribution.centred_on("x", "X", mod["riverswim_model"]()[0], d.reward, -1.0)
    with pytest.raises(BBRLError, match="rows of probabilities summing to one"):
        D.FDMDistribution.centred_on("x", "X", np.ones((2, 1, 2)), np.zeros((2, 1, 2)), 1.0)


# ---------------------------------------------------------------------------------------
# Compiled once, not once per process (issue #25)

JIT_PLUGIN = HEADER + """
from helper import pick

@njit(cache=True)
def reset(setup):
    return np.zeros(2)

@njit(cache=True)
def act(state, x):
    return pick()

@njit(cache=True)
def observe(state, x, u, y, r):
    state[0] += r

class Jit(CompiledAgent):
    name = "jit-NAME"
    reset = reset
    act = act
    observe = observe
"""

HELPER = """
from numba import njit

@njit(cache=True)
def pick():
    return 0
"""

PLAY = """
import json, sys
from bbrlcore import agents, protocol as E
from bbrlcore.mdp import distributions as D
ref = sys.argv[1]
agent = E.train_agent(ref, {}, D.builtin("GC"), progress=False)
table = E.run_agent(E.new_test_set(D.builtin("GC"), 5, 0.95, 250, seed=0), agent,
                    progress=False)
path = ref.rpartition(":")[0]
plug = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == path)
k = agents.trajectory_kernel(plug.Jit.reset, plug.Jit.act, plug.Jit.observe)
print(json.dumps({"hits": sum(k.stats.cache_hits.values()),
                  "misses": sum(k.stats.cache_misses.values()),
                  "module": k.py_func.__module__,
                  "returns": table["discounted_return"].to_list()}))
"""


def _plugin_dir(tmp_path: Path, tag: str) -> Path:
    d = tmp_path / "plug"
    d.mkdir(exist_ok=True)
    # a name of its own: another test run (or test) compiles its own kernel
    (d / "jitplug.py").write_text(JIT_PLUGIN.replace("NAME", tag))
    (d / "helper.py").write_text(HELPER)
    return d


def _play(ref: str, cwd: Path) -> dict:
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", PLAY, ref], cwd=cwd, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_compiled_plugin_from_the_cache(tmp_path):
    """The first process compiles the plugin's trajectory loop (at training); a second
    one finds it in numba's cache: a cache hit, no compilation, the same returns."""
    import uuid

    d = _plugin_dir(tmp_path, uuid.uuid4().hex[:8])
    ref = f"{d / 'jitplug.py'}:Jit"
    first = _play(ref, tmp_path)
    assert first["misses"] == 1 and first["hits"] == 0
    assert first["module"].startswith("bbrl_kernel_")
    second = _play(ref, tmp_path)
    assert second["misses"] == 0 and second["hits"] == 1
    assert second["returns"] == first["returns"] and second["module"] == first["module"]
    # the kernel's module and numba's index of it are on disk
    from bbrlcore.agents._kernel_cache import kernel_dir

    key = first["module"].removeprefix("bbrl_kernel_")
    assert (kernel_dir() / f"k_{key}.py").is_file()
    import os

    index = [f for _root, _dirs, files in os.walk(os.environ["NUMBA_CACHE_DIR"])
             for f in files if f.startswith(f"k_{key}.trajectory") and f.endswith(".nbi")]
    assert index
    # an edit of the plugin, or of a module its functions call, recompiles
    (d / "helper.py").write_text(HELPER.replace("return 0", "return 1"))
    third = _play(ref, tmp_path)
    assert third["misses"] == 1 and third["module"] != first["module"]
    assert third["returns"] != first["returns"]


def test_concurrent_first_compilations_compile_once(tmp_path):
    """Two processes starting at once on a plugin never compiled: one compiles (under
    the kernel's lock), the other waits and loads it; both play the same trajectories."""
    import json
    import subprocess
    import sys
    import uuid

    d = _plugin_dir(tmp_path, uuid.uuid4().hex[:8])
    ref = f"{d / 'jitplug.py'}:Jit"
    procs = [subprocess.Popen([sys.executable, "-c", PLAY, ref], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(o["misses"] for o in outs) == [0, 1]
    assert sorted(o["hits"] for o in outs) == [0, 1]
    assert outs[0]["returns"] == outs[1]["returns"]


def test_the_kernel_key_follows_the_code(tmp_path):
    """Keyed by the contents of the files of the agent's functions and of the @njit
    functions they call (here through a module attribute), not by their paths alone."""
    from bbrlcore.agents._kernel_cache import kernel_key

    (tmp_path / "helper2.py").write_text(HELPER)
    p = write_plugin(tmp_path, HEADER + """
    import helper2

    @njit
    def reset(setup):
        return np.zeros(1) + helper2.pick()

    @njit
    def act(state, x):
        return 0

    @njit
    def observe(state, x, u, y, r):
        pass
    """)
    import importlib.util
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("keyplug", p)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helper2", None)
    fns = (mod.reset, mod.act, mod.observe, agents.no_counters)
    k0 = kernel_key(fns)
    assert kernel_key(fns) == k0
    (tmp_path / "helper2.py").write_text(HELPER + "\n# edited\n")
    k1 = kernel_key(fns)
    p.write_text(p.read_text() + "\n# edited\n")
    assert len({k0, k1, kernel_key(fns)}) == 3


def test_functions_numba_cannot_key_are_compiled_in_the_process():
    """Code defined without a file (an interactive session, a doctest) is not cached
    (its source cannot be keyed): the closure of the process, the same loop."""
    from numba import njit

    ns: dict = {"njit": njit, "np": np}
    exec("@njit\ndef reset(setup):\n    return np.zeros(1)\n"
         "@njit\ndef act(state, x):\n    return 0\n"
         "@njit\ndef observe(state, x, u, y, r):\n    pass\n", ns)
    k = agents.trajectory_kernel(ns["reset"], ns["act"], ns["observe"])
    assert not k.py_func.__module__.startswith("bbrl_kernel_")


def test_a_compiled_plugin_that_does_not_compile_fails_at_training(capsys, tmp_path):
    """bbrl train compiles a compiled plugin: code that does not compile is refused there,
    in one line naming the plugin, the function, its line and numba's cause."""
    p = write_plugin(tmp_path, HEADER + """
    @njit
    def reset(setup):
        return np.zeros(3)

    @njit
    def act(state, x):
        return undefined_thing(state, x)

    @njit
    def observe(state, x, u, y, r):
        pass

    @njit
    def observe_typo(state, x, u, y, r):
        state[x] = "a"

    class Bad(CompiledAgent):
        name = "bad"
        reset = reset
        act = act
        observe = observe

    def ok_act(state, x):
        return 0

    class Typo(CompiledAgent):
        name = "typo"
        reset = reset
        act = njit(ok_act)
        observe = observe_typo
    """)
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:Bad", "--prior", "GC", "-o",
                      tmp_path / "a.parquet")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert lines[0] == ("bbrl: error: bad: act does not compile (plug.py, line 11): "
                        "NameError: name 'undefined_thing' is not defined")
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:Typo", "--prior", "GC", "-o",
                      tmp_path / "a.parquet")
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith("bbrl: error: typo: observe (observe_typo) does not compile "
                               "(plug.py, line 20): TypingError: "), lines[0]
    assert not (tmp_path / "a.parquet").exists()


# ---------------------------------------------------------------------------------------
# Plugins that end the process, or fail in any other way (issue #23)

EXITS = [
    ("class Plug(PythonAgent):\n    name = 'plug'\n    def act(self, s):\n"
     "        sys.exit(0)\n", "run", "plug: SystemExit(0) in act at step 0: the plugin called "
     "sys.exit"),
    ("class Plug(PythonAgent):\n    name = 'plug'\n    def reset(self):\n"
     "        raise SystemExit('bye')\n    def act(self, s):\n        return 0\n", "run",
     "plug: SystemExit('bye') in reset, before step 0: the plugin called sys.exit"),
    ("class Plug(PythonAgent):\n    name = 'plug'\n    def train(self, prior, ctx):\n"
     "        sys.exit(3)\n    def act(self, s):\n        return 0\n", "train",
     "plug: train raised SystemExit(3)"),
    ("@njit\ndef r(setup):\n    return np.zeros(1)\n@njit\ndef a(state, x):\n    return 0\n"
     "@njit\ndef o(state, x, u, y, r):\n    pass\n"
     "class Plug(CompiledAgent):\n    name = 'plug'\n    reset, act, observe = r, a, o\n"
     "    def setup(self):\n        sys.exit(0)\n", "train", "plug: setup raised SystemExit(0)"),
    ("from bbrlcore.agents import Algorithm\n"
     "def make(prior, params, trained, ep):\n    def play(P, seed):\n        exit(0)\n"
     "    return play\nPlug = Algorithm(name='plug', params=(), make_player=make)\n", "run",
     "plug: play raised SystemExit(0)"),
    ("class Plug(PythonAgent):\n    name = 'plug'\n    def act(self, s):\n"
     "        raise GeneratorExit\n", "run", "plug: GeneratorExit in act at step 0"),
]


@pytest.mark.parametrize("body, stage, needle", EXITS)
def test_a_plugin_that_exits_is_a_failure_naming_it(capsys, tmp_path, body, stage, needle):
    """sys.exit (any BaseException but KeyboardInterrupt) in a plugin's code: rc 2, one
    line naming the plugin, nothing written (it used to end bbrl run with rc 0)."""
    p = write_plugin(tmp_path, HEADER + "import sys\n" + body)
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 0.95, 5, 0), tmp_path / "ts.parquet")
    rc, _, err = bbrl(capsys, "train", "--agent", f"{p}:Plug", "--prior", "GC", "-o",
                      tmp_path / "a.parquet")
    if stage == "run":
        assert rc == 0, err
        rc, out, err = bbrl(capsys, "run", "--experiment", tmp_path / "ts.parquet",
                            "--agent", tmp_path / "a.parquet", "-o", tmp_path / "r.parquet")
        assert not (tmp_path / "r.parquet").exists()
    else:
        assert not (tmp_path / "a.parquet").exists()
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err


# ---------------------------------------------------------------------------------------
# The documentation's examples of an algorithm of one's own, and display names


def test_the_agents_of_the_documentation_play(tmp_path, monkeypatch):
    """The python blocks of the README and of the tutorials "Your own algorithm" and "Your
    own problem" run as written (from a directory holding the examples, as their commands
    assume; the example file they include as well), and every agent they define plays.
    (tests/test_docs_examples.py runs them as scripts too.)"""
    import runpy
    import shutil

    from docs_blocks import blocks as doc_blocks

    blocks = [b for page in ("README.md", "docs/tutorials/own-algorithm.md",
                             "docs/tutorials/own-problem.md")
              for b in doc_blocks(ROOT / page) if b.lang == "python"]
    assert len(blocks) >= 4
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    monkeypatch.chdir(tmp_path)
    spaces = []
    for b in blocks:
        if b.source:  # a file of the repository, shown whole: run as that file
            spaces.append(runpy.run_path(str(ROOT / b.source), run_name="docs"))
            continue
        ns: dict = {"__name__": "docs"}
        exec(compile(b.code, "docs", "exec"), ns)
        spaces.append(ns)
    classes = [v for ns in spaces for v in ns.values()
               if isinstance(v, type) and issubclass(v, agents.PythonAgent | agents.CompiledAgent)
               and v not in (agents.PythonAgent, agents.CompiledAgent)]
    assert len(classes) >= 4  # the README's, the tutorial's and the example file's two
    ts = E.new_test_set(D.builtin("GC"), 3, 0.95, 30, seed=0)
    for cls in classes:
        alg = registry.as_algorithm(cls, "docs")
        raw = {p.name: "0.1" for p in alg.params if p.required}
        play = alg.make_player(D.builtin("GC"), alg.parse_params(raw), None, ts.episode())
        rets = [play(np.ascontiguousarray(ts.mdps[i]), i)[0] for i in range(3)]
        assert all(np.isfinite(rets)) and max(rets) > 0
    assert (tmp_path / "riverswim.parquet").exists()  # the own-problem block's output


def test_the_report_shows_a_plugins_display_name(tmp_path, capsys):
    """A plugin's display_name is the report's name for it (its family, its figures'
    legends and tables); a name another algorithm shows is refused."""
    from bbrlcore.analysis import constraints
    from bbrlcore.cli.report import display_names

    ts = E.new_test_set(D.builtin("GC"), 6, 0.95, 20, seed=0)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    runs = []
    for alg, raw in (("random", {}), ("optimal", {}), (f"{MY}:MyGreedy", {"epsilon": "0.1"})):
        agent = E.train_agent(alg, raw, D.builtin("GC"), progress=False)
        path = tmp_path / f"{agent.agent_id}.parquet"
        E.write_run(E.run_agent(ts, agent, progress=False), path, {})
        runs.append(path)
    assert display_names(["random", "my-greedy"], []) == {"my-greedy": "My e-Greedy"}
    rc, out, err = bbrl(capsys, "report", *runs, "--plugins", f"{MY}:MyGreedy",
                        "--bootstrap-resamples", "100", "--no-pdf", "-o", tmp_path / "rep")
    assert rc == 0, err
    best = pl.read_parquet(tmp_path / "rep" / "data" / "GC-GC-best.parquet")
    assert "My e-Greedy" in best["family"].to_list()
    assert "My e-Greedy" in (tmp_path / "rep" / "index.html").read_text()
    with pytest.raises(BBRLError, match="display name 'BEB' is already the name of "
                                        "algorithm 'beb'"):
        with constraints.display_names({"my-greedy": "BEB"}):
            pass


def test_bbrl_agents_name_describes_that_algorithm_only(capsys):
    rc, out, _ = bbrl(capsys, "agents", "bamcp")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "bamcp (BAMCP in the report)"
    assert "    K (int, required): simulations per decision" in lines
    assert ("    D (int, default None): maximum depth of a simulation (default: the horizon)"
            in lines)
    assert not any(ln.startswith(("beb", "random", "bfs3")) for ln in lines)
    rc, _, err = bbrl(capsys, "agents", "bamcp", "no-such")
    assert rc == 2 and "unknown algorithm 'no-such'" in err


# ---------------------------------------------------------------------------------------
# Public helpers (bbrlcore.agents.bayes)


def test_the_public_helpers_are_the_builtins_functions():
    """A plugin written with bbrlcore.agents.bayes runs the built-ins' own code."""
    from bbrlcore.agents import _kernels, _posterior, bayes
    from bbrlcore.mdp import solvers

    assert bayes.mean_model_init is _kernels.model_init
    assert bayes.mean_model_update is _kernels.model_update
    assert bayes.q_solve is solvers.q_solve
    assert bayes.guez_policy_iteration is solvers.guez_policy_iteration
    assert bayes.sample_model is _posterior.sample_model
    assert bayes.posterior_update is _posterior.posterior_update
    for name in bayes.__all__:
        assert getattr(bayes, name).__doc__ or name.isupper(), name


@pytest.mark.parametrize("seed", range(4))
def test_posterior_draws_keep_the_support_and_agree_in_mean(seed):
    """sample_mdp (numpy) and draw_mdp (numba) draw rows of Dir(alpha): zero where alpha is
    zero, rows summing to one, and the mean of many draws near alpha / sum(alpha)."""
    from bbrlcore.agents import bayes

    rng = np.random.default_rng(seed)
    alpha = rng.gamma(1.0, 2.0, size=(3, 2, 4)) * (rng.random((3, 2, 4)) < 0.7)
    alpha[:, :, 0] += 0.5  # a positive entry per row
    mean = bayes.mean_model(alpha)
    draws = np.array([bayes.sample_mdp(alpha, rng) for _ in range(4000)])
    assert np.all(draws[:, alpha == 0] == 0) and np.allclose(draws.sum(axis=3), 1)
    assert np.abs(draws.mean(axis=0) - mean).max() < 0.03
    out = np.empty_like(alpha)
    jit = []
    for _ in range(4000):
        bayes.draw_mdp(alpha, out)
        jit.append(out.copy())
    jit = np.array(jit)
    assert np.all(jit[:, alpha == 0] == 0) and np.allclose(jit.sum(axis=3), 1)
    assert np.abs(jit.mean(axis=0) - mean).max() < 0.03


def test_solvers_agree_with_value_iteration_to_convergence():
    """q_values and state_values give the fixed point of the Bellman equation (up to their
    tolerances) on a random model."""
    from bbrlcore.agents import bayes

    rng = np.random.default_rng(1)
    P = bayes.mean_model(rng.random((6, 3, 6)) + 0.01)
    R = rng.random((6, 3, 6))
    Q = np.zeros((6, 3))
    for _ in range(2000):
        Q = (P * (R + 0.9 * Q.max(axis=1))).sum(axis=2)
    assert np.abs(bayes.q_values(P, R, 0.9, horizon=2000) - Q).max() < 0.1
    V, pi = bayes.state_values(P, R, 0.9)
    assert np.abs(V - Q.max(axis=1)).max() < 1e-3 and np.array_equal(pi, Q.argmax(axis=1))


def test_without_a_writable_cache_the_plugin_still_runs(tmp_path, monkeypatch):
    """Nowhere to write the kernel's module (a read-only or full disk): it is compiled in
    the process, as before; a disk full when numba saves it: compiled, not cached."""
    import errno
    import importlib.util

    from bbrlcore.agents._kernel_cache import compile_locked

    p = write_plugin(tmp_path, HEADER + """
    @njit
    def reset(setup):
        return np.zeros(1)

    @njit
    def act(state, x):
        return 1

    @njit
    def observe(state, x, u, y, r):
        state[0] += r
    """, "ro_plug.py")
    spec = importlib.util.spec_from_file_location("ro_plug", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    k = agents.trajectory_kernel(mod.reset, mod.act, mod.observe)
    assert not k.py_func.__module__.startswith("bbrl_kernel_")  # the closure
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(agents.api, "_KERNELS", {})  # (the process memoised the closure)
    k = agents.trajectory_kernel(mod.reset, mod.act, mod.observe)
    assert k.py_func.__module__.startswith("bbrl_kernel_")

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(k._cache, "save_overload", full)
    ts = E.new_test_set(D.builtin("GC"), 1, 0.95, 10, seed=0)
    ep = ts.episode()
    args = ((np.zeros(1),), ts.mdps[0], ep.succ, ep.nsucc, ep.R, ep.Rstd, ep.gaussian,
            ep.initial_state, ep.gamma, ep.horizon, 0, np.zeros(3, dtype=np.int64))
    compile_locked(k, args, str(tmp_path / "lock"))
    assert k(*args)[0] > 0


CONST_PLUGIN = HEADER + """
from consts import ACTION

@njit(cache=True)
def reset(setup):
    return np.zeros(2)

@njit(cache=True)
def act(state, x):
    return ACTION

@njit(cache=True)
def observe(state, x, u, y, r):
    state[0] += r

class Jit(CompiledAgent):
    name = "const-NAME"
    reset = reset
    act = act
    observe = observe
"""


def test_a_constant_of_a_module_beside_the_plugin_is_part_of_its_key(tmp_path):
    """numba compiles a global constant into the kernel: changing it in a helper module
    beside the plugin changes the cache key (a new kernel, the new returns) and the
    plugin's fingerprint (its workflow jobs rerun), not a stale cached kernel."""
    import uuid

    from bbrlcore.agents import registry

    d = tmp_path / "plug"
    d.mkdir()
    (d / "constplug.py").write_text(CONST_PLUGIN.replace("NAME", uuid.uuid4().hex[:8]))
    (d / "consts.py").write_text("ACTION = 0\n")
    ref = f"{d / 'constplug.py'}:Jit"
    fp0 = registry.entry(ref).fingerprint
    first = _play(ref, tmp_path)
    (d / "consts.py").write_text("ACTION = 1\n")
    second = _play(ref, tmp_path)
    assert second["module"] != first["module"] and second["misses"] == 1
    assert second["returns"] != first["returns"]
    registry.reset()
    assert registry.entry(ref).fingerprint != fp0
    registry.reset()
