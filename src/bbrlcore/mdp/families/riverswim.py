"""RiverSwim: swimming upstream to the far bank.

The problem
-----------
A chain of ``size`` states (6 in the paper) along a river, the agent starting at the left
bank (state 0). Picture six circles in a row: every circle has a solid arrow one step
left (swimming with the current, always succeeds), and a fan of dashed arrows for
swimming right against it: one step right with probability 0.35, stay with 0.6, one step
back with 0.05 (at the left bank: right 0.6, stay 0.4; at the right bank: stay 0.6, back
0.4). Swimming left at the left bank pays 0.005; swimming right at the right bank pays 1.
A myopic agent collects the small reward; only sustained exploration finds the large one.

These are the published probabilities with the rewards scaled to [0, 1] (5 → 0.005,
10000 → 1) as in Osband, Russo & Van Roy, "(More) efficient reinforcement learning via
posterior sampling", NIPS 2013, and ``examples/riverswim.py``. Rewards are functions of
(x, u, y), the same in every drawn MDP, and reward the **chosen action**, as the
published problem (a reward per state and action) and Colosseum do: 0.005 on every
transition of (0, left), 1 on every transition of (size - 1, right). With ``p_rand`` a
left at the left bank may be played as a right and carry the agent to state 1: it is
still paid 0.005 (until issue #33 it was paid nothing: ``CHANGELOG.md``).

The current (``current``): 1 (the default) keeps Strehl & Littman's current, the
probabilities above, as the paper's RiverSwim and Osband et al. do. 0 is **Colosseum's
RiverSwim** (Conserva & Rauber 2022, App. A.3.1, ``colosseum/mdp/river_swim/base.py``):
no current, a swim right always moves one step right (staying at the right bank), and the
stochasticity comes from ``p_rand`` and ``p_lazy`` alone. Either way ``p_rand`` and
``p_lazy`` apply on top, as Colosseum applies them, and the rewards are Colosseum's rule
(by the chosen action, at either bank: its deterministic rewards are 0.005 and 1, 0
elsewhere). With ``current`` 0 the family equals Colosseum's ``RiverSwimContinuous`` and
``RiverSwimEpisodic`` with deterministic rewards state by state (transitions, expected
rewards, starting state, episode length, optimal values: ``tests/test_colosseum_fixtures.py``
against Colosseum's own code). Named ``RiverSwim-25-current0``.

As a test distribution: Dirichlet rows centred on the (controlled) model, ``concentration``
10; the structure is fixed, so the test distribution is an FDM and the accurate prior is
that FDM.

Sizes: ``size`` from 2 to 5000 (size states, 2 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``): Colosseum's ``RiverSwimEpisodic``, every episode from
the left bank. Its natural length is Colosseum's rule for an episodic MDP
(``EpisodicMDP._set_time_horizon``: one plus the largest shortest-path distance from the
start to any state), H = ``size``: just enough to reach the far bank.

Reference
---------
A. L. Strehl, M. L. Littman, "An analysis of model-based interval estimation for Markov
decision processes", Journal of Computer and System Sciences 74(8), 2008, pp. 1309-1331.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("riverswim").test
>>> t.short_name, (t.mean_model()[2, 1, 1:4]).round(2).tolist()
('RiverSwim-6', [0.05, 0.6, 0.35])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families._base import (
    Family,
    Kernel,
    Param,
    Rewards,
    centred,
    concentration_param,
    max_size,
    p_lazy_param,
    p_rand_param,
    size_param,
)

LEFT, RIGHT = 0, 1


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return int(p["size"]), 2


#: Largest ``size`` (2 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


def kernel(n: int, current: int = 1) -> Kernel:
    """The published kernel (Strehl & Littman 2008) for a river of ``n`` states, or with
    ``current`` 0 Colosseum's (every swim succeeds: left one step, right one step).

    >>> succ, prob = kernel(4, current=0)
    >>> succ[1, :, 0].tolist(), prob[1, :, 0].tolist(), succ[3, RIGHT, 0].tolist()
    ([0, 2], [1.0, 1.0], 3)
    """
    x = np.arange(n)
    if not current:
        succ = np.stack([np.maximum(x - 1, 0), np.minimum(x + 1, n - 1)], axis=1)
        return succ[:, :, None].astype(np.int64), np.ones((n, 2, 1))
    succ = np.zeros((n, 2, 3), dtype=np.int64)
    prob = np.zeros((n, 2, 3))
    succ[:, LEFT, 0], prob[:, LEFT, 0] = np.maximum(x - 1, 0), 1.0
    succ[:, RIGHT] = np.stack([np.maximum(x - 1, 0), x, np.minimum(x + 1, n - 1)], axis=1)
    prob[:, RIGHT] = [0.05, 0.6, 0.35]
    prob[0, RIGHT] = [0.0, 0.4, 0.6]
    prob[n - 1, RIGHT] = [0.4, 0.6, 0.0]
    return succ, prob


def reward(n: int, p_rand: float = 0.0) -> Rewards:
    """The rewards of a river of ``n`` states: 0.005 on every transition of (0, left) (to
    state 0, and to state 1 when ``p_rand`` > 0 may play a right), 1 on every transition
    of (n - 1, right): the chosen action's reward, whatever the outcome.

    >>> R = reward(4, p_rand=0.1).dense()
    >>> R[0, LEFT].tolist(), reward(4).dense()[0, LEFT].tolist()
    ([0.005, 0.005, 0.0, 0.0], [0.005, 0.0, 0.0, 0.0])
    """
    parts = [(0, LEFT, 0, 0.005), (n - 1, RIGHT, np.arange(n), 1.0)]
    if p_rand > 0 and n > 1:  # a random right from the left bank: to state 1
        parts.append((0, LEFT, 1, 0.005))
    return Rewards.assign(n, 2, *parts)


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    n = p["size"]
    return centred(p, short_name, name, kernel(n, p.get("current", 1)),
                   reward(n, p.get("p_rand", 0.0)), 0)


def episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule: 1 + the distance from the left bank to the far one."""
    return int(p["size"])


FAMILY = Family(
    name="riverswim",
    display="RiverSwim",
    long_name="RiverSwim",
    params=(
        size_param(6, 2, MAX_SIZE, "number of states along the river"),
        Param("current", int, 1, 0, 1,
              "1: Strehl & Littman's current (a swim right may fail: right 0.35, stay "
              "0.6, back 0.05); 0: none, every swim succeeds (Colosseum's RiverSwim)"),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
    ),
    build=build,
    shape=_shape,
    reference="Strehl & Littman, 'An analysis of model-based interval estimation for "
              "Markov decision processes', JCSS 74(8), 2008",
    episode_length=episode_length,
)
