"""Chain: Strens's five-state chain with a slip.

The problem
-----------
A line of ``size`` states (5 in the paper), the agent starting at the left end (state 0).
Action **a** (0) moves one state right and pays nothing; at the right end it stays and
pays 10. Action **b** (1) returns to state 0 and pays 2. With probability ``slip`` (0.2)
the agent slips and the *other* action happens. Picture a row of five boxes, each with a
forward arrow to the next (the last one's loops on itself, labelled 10) and a long arrow
back to the first, labelled 2. The myopic policy collects the 2s; the optimal one walks
to the end for the 10s, which takes several unrewarded steps.

Rewards are functions of the transition, the same in every drawn MDP: 2 on every move into
state 0, 10 on the loop at the right end, 0 elsewhere (the outcome, not the chosen action,
decides the reward, as when the agent slips). With ``p_lazy`` an agent held in place at
either end is paid like that loop.

As a test distribution: every row is a Dirichlet centred on the (controlled) model with
``concentration`` 10; the structure is fixed, so the test distribution is an FDM and the
accurate prior is that FDM.

Sizes: ``size`` from 2 to 5000 (size states, 2 actions): the largest whose dense
(nX, nU, nX) arrays stay within ``MAX_ENTRIES`` (50,000,000 transitions, 400 MB
each); a larger size is refused with the memory it would need.

No episodic form: Strens's Chain is a continuing task (one trajectory, the paper's
protocol, or a long one); ``episodes`` is refused for it.

Reference
---------
M. Strens, "A Bayesian framework for reinforcement learning", ICML 2000, pp. 943-950
(the "Chain" problem). The BBRL paper's GC (family ``gc``) generalises it.

Examples
--------
>>> from bbrlcore.mdp.families import make
>>> t = make("chain").test
>>> t.short_name, t.theta[0, 0].tolist()
('Chain-5', [2.0, 8.0, 0.0, 0.0, 0.0])
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

A, B = 0, 1


def _shape(p: Mapping[str, Any]) -> tuple[int, int]:
    return int(p["size"]), 2


#: Largest ``size`` (2 actions: nX·2·nX within MAX_ENTRIES).
MAX_SIZE = max_size(lambda n: _shape({"size": n}), 2)


def kernel(n: int, slip: float) -> Kernel:
    """The nominal kernel: each action reaches its own target with 1 - slip, the other
    action's with slip."""
    x = np.arange(n)
    forward = np.minimum(x + 1, n - 1)
    succ = np.empty((n, 2, 2), dtype=np.int64)
    prob = np.empty((n, 2, 2))
    succ[:, A] = np.stack([forward, np.zeros(n, np.int64)], axis=1)
    succ[:, B] = np.stack([np.zeros(n, np.int64), forward], axis=1)
    prob[:, :, 0], prob[:, :, 1] = 1.0 - slip, slip
    return succ, prob


def reward(n: int) -> Rewards:
    x = np.arange(n)[:, None]
    return Rewards.assign(n, 2, (x, [A, B], 0, 2.0), (n - 1, [A, B], n - 1, 10.0))


def build(p: dict[str, Any], short_name: str, name: str) -> FDMDistribution:
    n = p["size"]
    return centred(p, short_name, name, kernel(n, p["slip"]), reward(n), 0)


FAMILY = Family(
    name="chain",
    display="Chain",
    long_name="Chain",
    params=(
        size_param(5, 2, MAX_SIZE, "number of states of the chain"),
        Param("slip", float, 0.2, 0.0, 1.0,
              "probability that the other action happens instead of the chosen one",
              hi_open=True),
        p_rand_param(),
        p_lazy_param(),
        concentration_param(),
    ),
    build=build,
    shape=_shape,
    reference="Strens, 'A Bayesian framework for reinforcement learning', ICML 2000",
)
