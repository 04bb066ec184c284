"""SixArms: a six-armed bandit with rooms behind the arms.

The problem
-----------
Seven states: a hub (state 0, the start) and six rooms. Picture the hub in the centre with
six spokes: pulling arm ``i`` (action i) in the hub takes the agent into room ``i + 1``
with probability 1, 0.15, 0.10, 0.05, 0.03, 0.01 (i = 0..5), otherwise it stays in the hub
with nothing. Inside a room, one action keeps the agent there and pays the room's reward
50, 133, 300, 800, 1660, 6000 (rooms 1..6) at every step; the others send it back to the
hub. In room 1 the staying actions are 0, 1, 2, 3 and 5 (4 leaves); in room ``i`` ≥ 2 only
action ``i - 1`` stays. The richest rooms are the hardest to enter and to stay in (one
of the two test problems of the reference, with RiverSwim).

Rewards are functions of the transition, the same in every drawn MDP: a room's reward on
every room → same room transition (so with ``p_lazy`` an agent held in a room is paid
too), 0 elsewhere. The rewards are the published ones (Rmax 6000); there is no size.

As a test distribution: Dirichlet rows centred on the (controlled) model, ``concentration``
10; the structure is fixed, so the test distribution is an FDM and the accurate prior is
that FDM.

Sizes: fixed, 7 states and 6 actions (no ``size`` parameter).

No episodic form: Strehl & Littman's SixArms is a continuing task; ``episodes`` is
refused for it.

Reference
---------
A. L. Strehl, M. L. Littman, "An analysis of model-based interval estimation for Markov
decision processes", Journal of Computer and System Sciences 74(8), 2008, pp. 1309-1331.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("sixarms").test
>>> t.short_name, t.n_states, t.n_actions, t.r_max
('SixArms', 7, 6, 6000.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families._base import (
    Family,
    Kernel,
    Rewards,
    centred,
    concentration_param,
    p_lazy_param,
    p_rand_param,
)

#: Probability that arm i (from the hub) enters room i + 1.
ARM_SUCCESS = (1.0, 0.15, 0.10, 0.05, 0.03, 0.01)
#: Reward of staying in room 1..6.
ROOM_REWARD = (50.0, 133.0, 300.0, 800.0, 1660.0, 6000.0)
#: Actions that keep the agent in room 1..6.
STAY = ((0, 1, 2, 3, 5), (1,), (2,), (3,), (4,), (5,))


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return 7, 6


def kernel() -> Kernel:
    """The published kernel."""
    succ = np.zeros((7, 6, 2), dtype=np.int64)
    prob = np.zeros((7, 6, 2))
    for i, q in enumerate(ARM_SUCCESS):
        succ[0, i] = [i + 1, 0]
        prob[0, i] = [q, 1.0 - q]
    for room in range(1, 7):
        prob[room, :, 0] = 1.0  # back to the hub (succ 0) unless a staying action
        for u in STAY[room - 1]:
            succ[room, u, 0] = room
    return succ, prob


def reward() -> Rewards:
    rooms = np.arange(1, 7)[:, None]
    return Rewards.assign(7, 6, (rooms, np.arange(6), rooms,
                                 np.asarray(ROOM_REWARD, dtype=np.float64)[:, None]))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    return centred(p, short_name, name, kernel(), reward(), 0)


FAMILY = Family(
    name="sixarms",
    display="SixArms",
    long_name="SixArms",
    params=(p_rand_param(), p_lazy_param(), concentration_param()),
    build=build,
    shape=_shape,
    reference="Strehl & Littman, 'An analysis of model-based interval estimation for "
              "Markov decision processes', JCSS 74(8), 2008",
)
