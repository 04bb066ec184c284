"""Double-loop: Dearden, Friedman and Russell's two loops.

The problem
-----------
Two loops of ``size`` states (4 in the paper: 9 states in all) share state 0, where the
agent starts. Picture a figure eight drawn through state 0: the right loop 1 → 2 → 3 → 4
→ 0 and the left loop 5 → 6 → 7 → 8 → 0. In state 0, action **a** (0) enters the right
loop and **b** (1) the left one. In the right loop every action moves on, and closing it
(4 → 0) pays 1. In the left loop only **b** moves on; **a** falls back to state 0 with
nothing, except in the loop's last state (8), where both actions close it (8 → 0) and
pay 2. The easy loop pays 1 every 5 steps; the better one needs four consecutive b's
(from 0 to 8). Rewards are functions of the transition (1 on 4 → 0, 2 on 8 → 0), the
same in every drawn MDP.

The published problem is deterministic: with ``p_rand = 0`` every test MDP would be the
same known MDP, and even the uniform prior (one count on each possible transition) would
reveal it. The default ``p_rand = 0.1`` (the value Colosseum's hardness study uses for its
stochastic scenarios) makes every action's outcome uncertain; rows are Dirichlets
centred on the controlled model (``concentration`` 10). The structure is fixed: the test
distribution is an FDM and the accurate prior is that FDM.

Sizes: ``size`` from 1 to 2499 (2·size + 1 states, 2 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

No episodic form: Dearden et al.'s Double-loop is a continuing task; ``episodes`` is
refused for it.

Reference
---------
R. Dearden, N. Friedman, S. Russell, "Bayesian Q-learning", AAAI 1998, pp. 761-768 (their
"Loop" problem). The BBRL paper's GDL (family ``gdl``) generalises it.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("doubleloop", p_rand=0.0).test
>>> t.short_name, t.n_states, [int(y) for y in t.theta[0].argmax(axis=1)]
('DoubleLoop-4-prand0', 9, [1, 5])
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
    max_size,
    p_lazy_param,
    p_rand_param,
    size_param,
)

A, B = 0, 1


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return 2 * int(p["size"]) + 1, 2


#: Largest ``size`` (loop length; 2·size + 1 states, 2 actions).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 1)


def kernel(L: int) -> Kernel:
    """The deterministic nominal kernel of loops of length ``L``."""
    n = 2 * L + 1
    succ = np.zeros((n, 2, 1), dtype=np.int64)
    succ[0, A, 0], succ[0, B, 0] = 1, L + 1
    for i in range(1, L + 1):  # right loop: every action moves on
        succ[i, :, 0] = i + 1 if i < L else 0
    for j in range(L + 1, 2 * L + 1):  # left loop: b moves on, a falls back
        succ[j, A, 0] = 0
        succ[j, B, 0] = j + 1 if j < 2 * L else 0
    return succ, np.ones((n, 2, 1))


def reward(L: int) -> Rewards:
    n = 2 * L + 1
    return Rewards.assign(n, 2, (L, [A, B], 0, 1.0), (2 * L, [A, B], 0, 2.0))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    L = p["size"]
    return centred(p, short_name, name, kernel(L), reward(L), 0)


FAMILY = Family(
    name="doubleloop",
    display="DoubleLoop",
    long_name="Double-loop",
    params=(
        size_param(4, 1, MAX_SIZE, "states per loop (2·size + 1 states)"),
        p_rand_param(0.1),
        p_lazy_param(),
        concentration_param(),
    ),
    build=build,
    shape=_shape,
    reference="Dearden, Friedman & Russell, 'Bayesian Q-learning', AAAI 1998",
)
