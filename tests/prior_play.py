"""A built-in played under a prior, a few seeds on the first test MDPs: what the tests of
the priors (``+dir<α>``, ``+rbeta``, ``+rnig``: test_transition_prior, test_reward_prior,
test_dir_prior_*) compare — the same seed plays the same trajectory, another seed or
another prior another one."""

from __future__ import annotations

from typing import Any

import numpy as np

from bbrlcore import protocol
from bbrlcore.agents import registry


def play_seeds(name: str, params: dict[str, Any], prior: Any, test: Any, seeds: list[int],
               horizon: int, episodes: int = 0, n_mdps: int = 1, gamma: float = 0.95,
               trained: Any = None) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """``(discounted return, rewards, counters)`` of built-in ``name`` (its ``params``
    as the command line gives them, checked against the setting) under ``prior``, one
    per seed: the ``i``-th seed plays test MDP ``i % n_mdps`` of a test set of ``test``
    (seed 0; ``episodes`` > 0: episodes of that many steps); ``trained`` the agent's
    offline training, if any. The counters are copied (a player may reuse its array)."""
    ts = protocol.new_test_set(test, n_mdps, gamma, horizon, seed=0,
                               episode_length=episodes)
    alg = registry.get(name)
    p = alg.parse_params(params)
    alg.check_setting(p, prior, gamma, horizon)
    play = alg.make_player(prior, p, trained, ts.episode())
    out = []
    for i, s in enumerate(seeds):
        rewards = np.empty(horizon)
        ret, cnt = play(np.ascontiguousarray(ts.mdps[i % n_mdps]), s, rewards)
        out.append((ret, rewards, np.asarray(cnt).copy()))
    return out
