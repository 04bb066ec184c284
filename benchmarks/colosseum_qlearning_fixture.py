"""Make ``tests/fixtures/colosseum_qlearning.json``: Colosseum's own Q-learning update on a
fixed sequence of transitions, for ``tests/test_baselines.py`` to hold bbrl's
``q-learning-ucb --param form=colosseum`` against.

Run with a Python that has Colosseum (the project never imports it)::

    /work/peers/venv-col/bin/python benchmarks/colosseum_qlearning_fixture.py \\
        /work/peers/colosseum tests/fixtures/colosseum_qlearning.json

It loads ``colosseum/agent/agents/episodic/q_learning.py`` from the checkout given
(Colosseum 1.2, commit recorded in the fixture) and drives its ``QValuesModel`` (the update
rule of ``QLearningEpisodic``: ``step_update(ts_t, a_t, ts_tp1, h)``) directly, with
dm_env time steps. The package's ``__init__`` of the episodic agents imports its deep
agents (sonnet, tensorflow) and the module imports ``ray.tune`` for its hyperparameter
search spaces only: the script skips the former and stands in a stub for the latter;
the update rule is Colosseum's code, unchanged.

The transitions: a tiny episodic MDP (S = 3 states, A = 2 actions, H = 3 steps), 60
episodes of uniformly random actions, next states and rewards in {0, 0.25, 0.5, 1} drawn
from ``numpy.random.default_rng(20261205)``; the next state of an episode's last step is
drawn too (Colosseum's V_H is 0, so it does not matter). Three configurations: the
benchmark's, read from the checkout's ``QLearningEpisodic.gin`` of
``colosseum/benchmark/cached_hyperparameters/agent_configs`` (Bernstein bonus, c_1, c_2,
min_at, p), a Hoeffding bonus with c_1 = 0.5, and a Bernstein bonus with c_1 = 0.2,
c_2 = 2, min_at = 0 (a cap that does not always bind). Recorded: after every
step, the updated Q_h(x, u) and V_h(x); at the end N, Q and V whole. Colosseum keeps Q and
V in float32: the test compares to a relative 1e-5.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

S, A, H, EPISODES, SEED = 3, 2, 3, 60, 20261205
#: Colosseum's benchmark configuration of the agent, read from the checkout (main)
GIN = "colosseum/benchmark/cached_hyperparameters/agent_configs/QLearningEpisodic.gin"
CONFIGS = {
    "hoeffding": {"UCB_type": "hoeffding", "p": 0.05, "c_1": 0.5, "c_2": None,
                  "min_at": 0.0},
    "bernstein_loose_cap": {"UCB_type": "bernstein", "p": 0.05, "c_1": 0.2, "c_2": 2.0,
                            "min_at": 0.0},
}


def benchmark_config(root: Path) -> dict:
    """The ``prms_0/QLearningEpisodic.<key> = <value>`` lines of Colosseum's benchmark
    configuration file, as the keyword arguments of its ``QValuesModel``."""
    out = {}
    for line in (root / GIN).read_text().splitlines():
        key, _, value = line.partition("=")
        key = key.strip().rpartition(".")[2]
        value = value.strip().strip('"').strip("'")
        out[key] = value if key == "UCB_type" else float(value)
    assert set(out) == {"p", "UCB_type", "c_1", "c_2", "min_at"}, out
    return out


def load_q_learning(root: Path) -> types.ModuleType:
    """Colosseum's ``q_learning`` module, without its package's deep agents and with a
    stub for ``ray.tune`` (module docstring)."""
    ray = types.ModuleType("ray")
    tune = types.ModuleType("ray.tune")
    tune.search = types.SimpleNamespace(sample=types.SimpleNamespace(Domain=object))
    tune.uniform = lambda lo, hi: (lo, hi)
    ray.tune = tune
    sys.modules.setdefault("ray", ray)
    sys.modules.setdefault("ray.tune", tune)
    pkg = root / "colosseum"
    for name, path in (("colosseum.agent.agents", "agent/agents"),
                       ("colosseum.agent.agents.episodic", "agent/agents/episodic")):
        m = types.ModuleType(name)
        m.__path__ = [str(pkg / path)]
        sys.modules[name] = m
    name = "colosseum.agent.agents.episodic.q_learning"
    spec = importlib.util.spec_from_file_location(name, pkg / "agent/agents/episodic/q_learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def transitions() -> list[tuple[int, int, int, float, int]]:
    """(h, x, u, r, y) of every step, in order."""
    rng = np.random.default_rng(SEED)
    out = []
    for _ in range(EPISODES):
        x = 0
        for h in range(H):
            u = int(rng.integers(A))
            y = int(rng.integers(S))
            r = float(rng.choice([0.0, 0.25, 0.5, 1.0]))
            out.append((h, x, u, r, y))
            x = y
    return out


def run(q: types.ModuleType, cfg: dict, steps: list) -> dict:
    import dm_env

    spec = types.SimpleNamespace(
        observations=types.SimpleNamespace(num_values=S),
        actions=types.SimpleNamespace(num_values=A), rewards_range=(0.0, 1.0),
        time_horizon=H)
    model = q.QValuesModel(0, spec, len(steps), cfg["p"], cfg["c_1"], cfg["c_2"],
                           cfg["min_at"], cfg["UCB_type"])
    per_step = []
    for h, x, u, r, y in steps:
        ts_t = dm_env.transition(reward=0.0, observation=x)
        ts_tp1 = dm_env.transition(reward=r, observation=y)
        model.step_update(ts_t, u, ts_tp1, h)
        per_step.append([float(model.Q[h, x, u]), float(model.V[h, x])])
    return {"config": cfg, "per_step_Q_V": per_step, "N": model.N.tolist(),
            "Q": model.Q.astype(float).tolist(), "V": model.V.astype(float).tolist()}


def main() -> None:
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    q = load_q_learning(root)
    steps = transitions()
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], text=True,
                            capture_output=True).stdout.strip()
    data = {
        "made_by": "benchmarks/colosseum_qlearning_fixture.py",
        "colosseum_commit": commit,
        "S": S, "A": A, "H": H, "T": len(steps),
        "transitions": [list(t) for t in steps],
        "benchmark_config_file": GIN,
        "runs": {name: run(q, cfg, steps) for name, cfg in
                 {"benchmark": benchmark_config(root), **CONFIGS}.items()},
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}: {len(steps)} transitions, {len(data['runs'])} configurations")


if __name__ == "__main__":
    main()
