"""GDL: the BBRL paper's Generalised Double-Loop, with its loop length as a parameter.

The problem
-----------
Two loops of ``size`` states (4 in the paper: 9 states) sharing state 0, 2 actions, the
agent starting in state 0. Picture Dearden's double loop (family ``doubleloop``) with its
arrows made uncertain: state 0 may lead into either loop; along the first loop (states 1
to ``size``) every action moves on and closing it pays 1; along the second (``size`` + 1
to 2·``size``) each state may move on or fall back to 0, and closing it pays 2. Which
action does what is drawn with each MDP.

As a test distribution (the paper's definition): every (x, u) row is a Dirichlet with
concentration ``concentration`` (1) on each of its possible successors, 0 elsewhere; the
uniform prior UGDL puts 1 on every transition. The defaults give exactly the built-ins
``GDL`` and ``UGDL``. ``concentration`` is the count of each possible transition.

No ``p_rand`` or ``p_lazy``: Colosseum's controls perturb a *nominal* kernel (a random
action, or staying put, instead of the chosen move), and GDL has none — each drawn
MDP's rows are themselves Dirichlet draws over the allowed successors, which already
span what a random action would mix in; ``concentration`` is this family's control.

Sizes: ``size`` from 1 to 2499 (2·size + 1 states, 2 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

No episodic form (the BBRL paper's problems are continuing); ``episodes`` is refused.

Reference
---------
M. Castronovo, D. Ernst, A. Couëtoux, R. Fonteneau, "Benchmarking for Bayesian
reinforcement learning", PLOS ONE 11(6), 2016, §5.1 (after Dearden, Friedman & Russell,
AAAI 1998).

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> from bbrlcore.mdp.distributions import builtin
>>> make("gdl").test.same_as(builtin("GDL")), make("gdl", size=2).test.n_states
(True, 5)
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


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return 2 * int(p["size"]) + 1, 2


#: Largest ``size`` (loop length; 2·size + 1 states, 2 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 1)


def allowed(L: int) -> np.ndarray:
    """The possible transitions (flat indices; the same for both actions)."""
    n = 2 * L + 1
    u = np.arange(2)
    right = np.arange(1, L + 1)[:, None]  # the right loop moves on, its last back to 0
    left = np.arange(L + 1, 2 * L + 1)[:, None]  # the left loop: back to 0, or on
    return transition_keys(n, 2, (0, u[:, None], [1, L + 1]),
                           (right, u, np.where(right < L, right + 1, 0)),
                           (left, u, 0), (left[:-1], u, left[:-1] + 1))


def reward(L: int) -> Rewards:
    n = 2 * L + 1
    return Rewards.assign(n, 2, (L, [0, 1], 0, 1.0), (2 * L, [0, 1], 0, 2.0))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    L = p["size"]
    return paper_family(name, short_name, 2 * L + 1, 2, allowed(L), reward(L),
                        p["concentration"])


FAMILY = Family(
    name="gdl",
    display="GDL",
    long_name="GDouble-Loop",
    params=(size_param(4, 1, MAX_SIZE, "states per loop (2·size + 1 states)"),
            concentration_per_transition()),
    build=build,
    shape=_shape,
    reference="Castronovo et al., 'Benchmarking for Bayesian reinforcement learning', "
              "PLOS ONE 2016 (GDL)",
    paper=True,
)
