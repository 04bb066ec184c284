"""Grid: the BBRL paper's grid world, with its side as a parameter.

The problem
-----------
A ``size`` × ``size`` grid (5 in the paper), 4 actions (left, right, up, down), the agent
starting in the top-left cell (state 0). Picture the grid with the goal in the
bottom-right corner: each action either moves to the neighbouring cell or leaves the
agent in place (a move off the grid only stays), with probabilities drawn per MDP. The goal
cell is a jump: moving into it sends the agent back to the start with reward 10 (the
paper's continuing form; the goal cell itself is never entered). Nothing else pays.

As a test distribution (the paper's definition): every (x, u) row is a Dirichlet with
concentration ``concentration`` (1) on each of its possible successors, 0 elsewhere; the
uniform prior UGrid puts 1 on every transition. The defaults give exactly the built-ins
``Grid`` and ``UGrid``. ``concentration`` is the count of each possible transition.

No ``p_rand`` or ``p_lazy``: Colosseum's controls perturb a *nominal* kernel (a random
action, or staying put, instead of the chosen move), and Grid has none — each drawn
MDP's rows are themselves Dirichlet draws over the allowed successors, which already
span what a random action would mix in; ``concentration`` is this family's control.

Sizes: ``size`` from 2 to 59 (size² states, 4 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

No episodic form (the BBRL paper's problems are continuing); ``episodes`` is refused.

Reference
---------
M. Castronovo, D. Ernst, A. Couëtoux, R. Fonteneau, "Benchmarking for Bayesian
reinforcement learning", PLOS ONE 11(6), 2016, §5.1.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> from bbrlcore.mdp.distributions import builtin
>>> make("grid").test.same_as(builtin("Grid")), make("grid", size=3).test.n_states
(True, 9)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families._base import (
    Family,
    Rewards,
    max_size,
    paper_family,
    size_param,
    transition_keys,
)
from bbrlcore.mdp.families.gc import concentration_per_transition

LEFT, RIGHT, UP, DOWN = 0, 1, 2, 3


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    s = int(p["size"])
    return s * s, 4


#: Largest ``size`` (size² states, 4 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


def allowed(s: int) -> np.ndarray:
    """Stay, or move to the neighbour (the goal cell's moves lead to the start), as
    flat indices."""
    n = s * s
    x = np.arange(n)[:, None]
    row, col = np.divmod(x, s)
    r2 = row + np.array([0, 0, -1, 1])  # left, right, up, down
    c2 = col + np.array([-1, 1, 0, 0])
    inside = (r2 >= 0) & (r2 < s) & (c2 >= 0) & (c2 < s)
    target = r2 * s + c2
    target = np.where(target == n - 1, 0, target)
    xs, us = np.nonzero(inside)
    return transition_keys(n, 4, (x, np.arange(4), x), (xs, us, target[xs, us]))


def reward(s: int) -> Rewards:
    n = s * s
    return Rewards.assign(n, 4, (n - 2, RIGHT, 0, 10.0),  # from the goal's left neighbour
                          (n - 1 - s, DOWN, 0, 10.0))  # from the cell above the goal


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    s = p["size"]
    return paper_family(name, short_name, s * s, 4, allowed(s), reward(s), p["concentration"])


FAMILY = Family(
    name="grid",
    display="Grid",
    long_name="Grid",
    params=(size_param(5, 2, MAX_SIZE, "side of the grid (size² states)"),
            concentration_per_transition()),
    build=build,
    shape=_shape,
    reference="Castronovo et al., 'Benchmarking for Bayesian reinforcement learning', "
              "PLOS ONE 2016 (Grid)",
    paper=True,
)
