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

The off-corner reward (``other``): 0.2 by default, the mean of Colosseum's stochastic
off-corner reward, Beta(1, 4) (``colosseum/mdp/simple_grid/base.py``:
``other_distribution = beta(v, v·(1/0.2 − 1))``). Colosseum's **deterministic** SimpleGrid
pays 0.5 there (``deterministic(0.5)``; its corners 1 and 0 as here): ``other`` 0.5
(``SimpleGrid-10-other0.5``) is that MDP. (Colosseum's stochastic instances have corner
means 0.9 and 0.02, not 1 and 0: they need stochastic rewards, issue #42.)

The start (``start``): Colosseum places the start on the tile nearest the centre; an even
grid has four such tiles, and Colosseum picks one with its seed (``_calculate_starting_nodes``
shuffles the ties with the MDP's random state), so across Colosseum's seeds the start is
uniform on the four. Here ``start`` names one of them, counted row by row from the top
left: 0 (the default, as before), 1 top-right, 2 bottom-left, 3 bottom-right; an odd grid
has one centre and only ``start`` 0. Colosseum's seed-drawn start is the uniform starting
distribution over the four (several starting states: a starting distribution, issue #42).

Where it differs from Colosseum's SimpleGrid (read for this): the start (above) and the
default ``p_rand``. The structure is fixed, so the test distribution is an FDM: Dirichlet
rows centred on the controlled model (``concentration`` 10). With ``p_rand = 0`` that
model is deterministic, every test MDP the same and even the uniform prior would reveal
it, so the default is ``p_rand = 0.1`` (Colosseum's stochastic setting in its hardness
scenarios). With ``other`` 0.5 and the start Colosseum's seed picked, the family equals
Colosseum's ``SimpleGridContinuous`` and ``SimpleGridEpisodic`` with deterministic rewards
state by state (transitions, expected rewards, start, episode length, optimal and worst
values: ``tests/test_colosseum_fixtures.py`` against Colosseum's own code).

Sizes: ``size`` from 3 to 56 (size² states, 5 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

Episodic form (``episodes: E``): Colosseum's ``SimpleGridEpisodic``, every episode from
the start tile. Its natural length is Colosseum's rule for an episodic MDP
(``EpisodicMDP._set_time_horizon``: one plus the largest shortest-path distance from the
start to any state), where Colosseum takes the largest distance over all its *possible*
starting tiles, the (size − 1)² tiles nearest the centre, not only the one it starts from:
H = 1 + the largest Manhattan distance from one of those tiles to a corner (8 for size 5,
22 for 13, 28 for 16: Colosseum's own values, ``tests/test_colosseum_fixtures.py``).
Until issue #42 this was 1 + the distance from the start alone (5 for size 5), not
Colosseum's.

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


def reward(s: int, reward_type: int, p_rand: float = 0.0, p_lazy: float = 0.0,
           other: float = OTHER) -> Rewards:
    """The rewards: ``other`` (0.2) on every transition that can happen (with ``p_rand``
    and ``p_lazy``), then staying in a corner pays its value, 1 or 0 (on every action: the
    one transition beside the support a corner's row may pay)."""
    n = s * s
    key, _ = merged(controlled(kernel(s), p_rand, p_lazy), n)
    row, y = np.divmod(key, n)
    corners = [r * s + c for r in (0, s - 1) for c in (0, s - 1)]
    values = [CORNER_GOOD if rewarding(x % s, s - 1 - x // s, reward_type) else CORNER_BAD
              for x in corners]
    return Rewards.assign(n, 5, (row // 5, row % 5, y, other),
                          (np.array(corners)[:, None], np.arange(5),
                           np.array(corners)[:, None], np.array(values)[:, None]))


def start_state(s: int, start: int = 0) -> int:
    """The start tile ``start`` (0..3, row by row) among the tiles nearest the centre.

    >>> start_state(5), [start_state(4, k) for k in range(4)]
    (12, [5, 6, 9, 10])
    """
    m = (s - 1) // 2
    return (m + start // 2) * s + m + start % 2


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    s = p["size"]
    R = reward(s, p["reward_type"], p.get("p_rand", 0.0), p.get("p_lazy", 0.0),
               p.get("other", OTHER))
    return centred(p, short_name, name, kernel(s), R, start_state(s, p.get("start", 0)))


def episode_length(p: Mapping[str, Any]) -> int:
    """Colosseum's rule: 1 + the largest distance from one of its (size − 1)² possible
    starting tiles (those nearest the centre) to any tile, i.e. to a corner.

    >>> [episode_length({"size": s}) for s in (3, 4, 5, 13, 16)]
    [4, 6, 8, 22, 28]
    """
    s = int(p["size"])
    c = (s - 1) / 2
    x, y = np.meshgrid(np.arange(s) - c, np.arange(s) - c)
    d2, l1 = (x * x + y * y).reshape(-1), (np.abs(x) + np.abs(y)).reshape(-1)
    # the (s-1)² tiles nearest the centre; Colosseum breaks the ties of the last ring by
    # its seed, but for every size here (3..56) the tiles it may take from that ring are
    # equally far from their farthest corner, so H does not depend on the seed
    nearest = np.argsort(d2, kind="stable")[: (s - 1) ** 2]
    return int(round(s - 1 + l1[nearest].max())) + 1


def _check(p: Mapping[str, Any]) -> str | None:
    if p["size"] % 2 and p["start"] != 0:
        return (f"start={p['start']}: an odd grid (size={p['size']}) has one centre tile, "
                "start 0")
    return None


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
        Param("other", float, OTHER, 0.0, 1.0,
              "reward of every transition but a corner's loop: 0.2 (the mean of "
              "Colosseum's stochastic one), 0.5 in Colosseum's deterministic SimpleGrid"),
        Param("start", int, 0, 0, 3,
              "which of the tiles nearest the centre the agent starts on, row by row "
              "from the top left (0..3 for an even size, where Colosseum's seed picks "
              "one; 0 for an odd size)"),
    ),
    check=_check,
    build=build,
    shape=_shape,
    reference="Conserva & Rauber, 'Hardness in Markov decision processes: theory and "
              "practice', NeurIPS 2022 (Colosseum)",
    episode_length=episode_length,
)
