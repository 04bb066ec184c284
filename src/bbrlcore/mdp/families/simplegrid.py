"""SimpleGrid: an open grid with rewarding and useless corners.

The problem
-----------
A ``size`` × ``size`` grid (5 by default). The agent starts in the centre and moves up,
right, down, left or stays (actions 0..4; a move into the border keeps it in place).
Picture the grid with a ``+`` in some corners and a ``-`` in the others: staying in a
``+`` corner pays 1 per step, staying in a ``-`` corner pays 0, and every other transition
pays a small 0.2. The default ``reward_type`` 3 (XOR, Colosseum's default) marks the
top-left and bottom-right corners ``+``: the agent must walk away from the small steady
reward towards a corner, and not the wrong one.

``reward_type`` picks the ``+`` corners as Colosseum does with corner coordinates
(X = column, Y = row counted from the bottom, each 0 or size − 1): 0 AND (X and Y: the
top-right corner), 1 NAND (the other three), 2 OR (X or Y: all but the bottom-left), 3 XOR
(top-left and bottom-right). The rewards are Colosseum's deterministic optimal and
sub-optimal values (1 and 0) and, off the corners, the 0.2 mean of its stochastic
rewards ("a small reward at each time step"), the same in every drawn MDP.

As in Colosseum (its reward is "a corner's loop": the move stays in the corner), the
reward goes with the transition, whichever action was chosen: staying in a corner pays
its reward whether the agent stayed, walked into the border, was moved by a random
action (``p_rand``) or held in place (``p_lazy``).

Where it differs from Colosseum's SimpleGrid (``colosseum/mdp/simple_grid``, read for
this): the start and the default ``p_rand``, as follows.
Colosseum draws the start among the most central tiles; here it is fixed (the centre, or
for an even size the top-left of the four central tiles) since a test distribution has one
initial state. The structure is fixed, so the test distribution is an FDM: Dirichlet rows
centred on the controlled model (``concentration`` 10). With ``p_rand = 0`` that model is
deterministic, every test MDP the same and even the uniform prior would reveal it, so the
default is ``p_rand = 0.1`` (Colosseum's stochastic setting in its hardness scenarios).

Sizes: ``size`` from 3 to 56 (size² states, 5 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``): Colosseum's ``SimpleGridEpisodic``, every episode from
the start tile. Its natural length is Colosseum's rule for an episodic MDP
(``EpisodicMDP._set_time_horizon``: one plus the largest shortest-path distance from the
start to any state): H = 1 + the Manhattan distance from the start to the farthest
corner (``size`` for an odd size, ``size`` + 1 for an even one).

Reference
---------
M. Conserva, P. Rauber, "Hardness in Markov decision processes: theory and practice",
NeurIPS 2022, App. A.3.3 (Colosseum's SimpleGrid, a simplified MiniGrid-Empty).

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("simplegrid").test
>>> t.short_name, t.initial_state, float(t.reward[0, 0, 0]), float(t.reward[4, 1, 4])
('SimpleGrid-5', 12, 1.0, 0.0)
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
    controlled,
    max_size,
    merged,
    p_lazy_param,
    p_rand_param,
    size_param,
)

UP, RIGHT, DOWN, LEFT, STAY = 0, 1, 2, 3, 4
_DR = np.array([-1, 0, 1, 0, 0])
_DC = np.array([0, 1, 0, -1, 0])
#: Rewards: staying in a rewarding corner, in another corner, anything else.
CORNER_GOOD, CORNER_BAD, OTHER = 1.0, 0.0, 0.2
REWARD_TYPES = ("AND", "NAND", "OR", "XOR")


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    s = int(p["size"])
    return s * s, 5


#: Largest ``size`` (size² states, 5 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 3)


def kernel(s: int) -> Kernel:
    """The deterministic moves on a ``s`` × ``s`` grid."""
    r, c = np.divmod(np.arange(s * s), s)
    succ = (np.clip(r[:, None] + _DR, 0, s - 1) * s + np.clip(c[:, None] + _DC, 0, s - 1))
    return succ[:, :, None].astype(np.int64), np.ones((s * s, 5, 1))


def rewarding(X: int, Y: int, reward_type: int) -> bool:
    """Colosseum's rule for the corner (X, Y)."""
    if reward_type == 0:
        return bool(X and Y)
    if reward_type == 1:
        return not (X and Y)
    if reward_type == 2:
        return bool(X | Y)
    return bool(X ^ Y)


def reward(s: int, reward_type: int, p_rand: float = 0.0, p_lazy: float = 0.0) -> Rewards:
    """The rewards: 0.2 on every transition that can happen (with ``p_rand`` and
    ``p_lazy``), then staying in a corner pays its value, 1 or 0 (on every action: the
    one transition beside the support a corner's row may pay)."""
    n = s * s
    key, _ = merged(controlled(kernel(s), p_rand, p_lazy), n)
    row, y = np.divmod(key, n)
    corners = [r * s + c for r in (0, s - 1) for c in (0, s - 1)]
    values = [CORNER_GOOD if rewarding(x % s, s - 1 - x // s, reward_type) else CORNER_BAD
              for x in corners]
    return Rewards.assign(n, 5, (row // 5, row % 5, y, OTHER),
                          (np.array(corners)[:, None], np.arange(5),
                           np.array(corners)[:, None], np.array(values)[:, None]))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    s = p["size"]
    start = ((s - 1) // 2) * s + (s - 1) // 2
    R = reward(s, p["reward_type"], p.get("p_rand", 0.0), p.get("p_lazy", 0.0))
    return centred(p, short_name, name, kernel(s), R, start)


def episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule: 1 + the distance from the start to the farthest corner."""
    s = int(p["size"])
    return 2 * (s - 1 - (s - 1) // 2) + 1


FAMILY = Family(
    name="simplegrid",
    display="SimpleGrid",
    long_name="SimpleGrid",
    params=(
        size_param(5, 3, MAX_SIZE, "side of the grid (size² states)"),
        Param("reward_type", int, 3, 0, 3,
              "which corners pay: 0 AND, 1 NAND, 2 OR, 3 XOR (Colosseum's rule)",
              short="rtype"),
        p_rand_param(0.1),
        p_lazy_param(),
        concentration_param(),
    ),
    build=build,
    shape=_shape,
    reference="Conserva & Rauber, 'Hardness in Markov decision processes: theory and "
              "practice', NeurIPS 2022 (Colosseum)",
    episode_length=episode_length,
)
