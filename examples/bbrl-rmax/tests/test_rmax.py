"""R-max as a bbrl plugin: both versions, their agreement, and the algorithm's defining
properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bbrl_rmax import RMax, RMaxCompiled

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D


def test_installed_plugins_are_found_by_name():
    assert agents.get("rmax").name == "rmax"
    assert agents.get("rmax-jit").name == "rmax-jit"
    entry = agents.registry.entry("rmax")
    assert entry.source.startswith("plugin bbrl-rmax") and not entry.builtin
    with pytest.raises(BBRLError, match="m=0: must be an integer >= 1"):
        agents.get("rmax").parse_params({"m": "0"})


def test_python_and_compiled_versions_agree_in_distribution():
    ts = E.new_test_set(D.builtin("GC"), 150, 0.95, 250, seed=4)
    means, sds = [], []
    for name in ("rmax", "rmax-jit"):
        a = E.train_agent(name, {"m": "3"}, D.builtin("GC"), progress=False)
        r = E.run_agent(ts, a, progress=False)["discounted_return"].to_numpy()
        means.append(r.mean())
        sds.append(r.std(ddof=1) / math.sqrt(len(r)))
    z = abs(means[0] - means[1]) / math.hypot(*sds)
    assert z < 3, (means, z)


def test_known_pairs_are_planned_in_the_empirical_model():
    """With m = 1 every pair tried is known at once: its Q is the empirical model's value,
    the untried ones stay at Rmax / (1 - gamma)."""
    gc = D.builtin("GC")
    agent = RMax({"m": 1}, gc, None, gamma=0.9, horizon=50)
    agent.reset()
    vmax = gc.reward.max() / (1 - 0.9)
    assert np.all(agent.q == vmax)
    agent.observe(0, 1, 0, 2.0)  # (0, 1) -> 0, reward 2: a self-loop paying 2
    assert agent.known[0, 1] and agent.known.sum() == 1
    # Q(0,1) = 2 + 0.9 * max_u Q(0,u) = 2 + 0.9 * vmax (the other actions are unknown)
    assert agent.q[0, 1] == pytest.approx(2 + 0.9 * vmax, abs=0.02)


def test_the_compiled_version_compiles_and_plays():
    alg = agents.registry.as_algorithm(RMaxCompiled, "test")
    ts = E.new_test_set(D.builtin("Grid"), 2, 0.95, 30, seed=0)
    play = alg.make_player(D.builtin("Grid"), {"m": 2}, None, ts.episode())
    r, _ = play(np.ascontiguousarray(ts.mdps[0]), 5)
    assert math.isfinite(r)
