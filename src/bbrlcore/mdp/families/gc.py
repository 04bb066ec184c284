"""GC: the BBRL paper's Generalised Chain, with its length as a parameter.

The problem
-----------
A chain of ``size`` states (5 in the paper) and 3 actions, the agent starting in state 0.
Picture Strens's chain (family ``chain``) with its slip made unknown: from every state,
every action leads either one state forward (the last state stays) or back to state 0,
with probabilities the MDP draws. Moving back to state 0 pays 2; reaching (or staying in)
the last state pays 10. Each drawn MDP gives each action its own odds, so the agent must
find which actions walk forward.

As a test distribution (the paper's definition): every (x, u) row is a Dirichlet with
concentration ``concentration`` (1) on each of its two possible successors, 0 elsewhere;
the uniform prior UGC puts 1 on every transition. The defaults give exactly the built-ins
``GC`` and ``UGC`` (equal to the original library's files). Here ``concentration`` is the
count of each possible transition (the paper's parametrisation), not a row total.

No ``p_rand`` or ``p_lazy``: Colosseum's controls perturb a *nominal* kernel (a random
action, or staying put, instead of the chosen move), and GC has none — each drawn
MDP's rows are themselves Dirichlet draws over the allowed successors, which already
span what a random action would mix in; ``concentration`` is this family's control.

Sizes: ``size`` from 2 to 4082 (size states, 3 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

No episodic form (the BBRL paper's problems are continuing); ``episodes`` is refused.

Reference
---------
M. Castronovo, D. Ernst, A. Couëtoux, R. Fonteneau, "Benchmarking for Bayesian
reinforcement learning", PLOS ONE 11(6), 2016, §5.1 (after Strens, ICML 2000).

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> from bbrlcore.mdp.distributions import builtin
>>> p = make("gc")
>>> p.test.same_as(builtin("GC")), p.prior("uniform").same_as(builtin("UGC"))
(True, True)
>>> make("gc", size=7).short_name
'GC-7'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.families._base import (
    Family,
    Param,
    Rewards,
    concentration_param,
    max_size,
    paper_family,
    size_param,
    transition_keys,
)


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return int(p["size"]), 3


#: Largest ``size`` (3 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


def allowed(n: int) -> np.ndarray:
    """The possible transitions (flat indices): back to 0, or one state forward (the
    last stays)."""
    x = np.arange(n)[:, None]
    return transition_keys(n, 3, (x, np.arange(3), 0), (x, np.arange(3), np.minimum(x + 1, n - 1)))


def reward(n: int) -> Rewards:
    x = np.arange(n)[:, None]
    return Rewards.assign(n, 3, (x, np.arange(3), 0, 2.0), (x, np.arange(3), n - 1, 10.0))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    n = p["size"]
    return paper_family(name, short_name, n, 3, allowed(n), reward(n), p["concentration"])


def concentration_per_transition() -> Param:
    return concentration_param(1.0, "Dirichlet count of each possible transition (the "
                                    "paper's: 1)")


FAMILY = Family(
    name="gc",
    display="GC",
    long_name="GChain",
    params=(size_param(5, 2, MAX_SIZE, "number of states"), concentration_per_transition()),
    build=build,
    shape=_shape,
    reference="Castronovo et al., 'Benchmarking for Bayesian reinforcement learning', "
              "PLOS ONE 2016 (GC)",
    paper=True,
)
