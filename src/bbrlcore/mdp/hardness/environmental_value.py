r"""The environmental value norm of the optimal policy: how much the optimal value of the
next state varies after one step (Maillard, Mann & Mannor 2014; Colosseum's
``hardness/measures/value_norm``).

**Environmental value norm** of the optimal policy (Maillard, Mann & Mannor 2014,
Def. 1; Colosseum App. B.5, discounted setting):

.. math::  C^* = \max_{x,u} \; \lVert V^* \rVert_{P(\cdot\mid x,u)}, \qquad
           \lVert f \rVert_p = \sqrt{\textstyle\sum_y p(y)\,\bigl(f(y) - \sum_{y'} p(y')
           f(y')\bigr)^2},

the largest one-step standard deviation (square root of the variance) of the optimal
value of the next state, over all state-action pairs. App. B.5 states it in words (no
numbered equation): "the norm of the optimal state value function with respect to the
transition probabilities"; Maillard et al. and Colosseum's code take the maximum over
every (x, u), not only the optimal actions — so does :func:`value_norm`
(``optimal_actions_only=True`` gives the other reading). Colosseum's discounted code
centres :math:`V^*(y)` on :math:`E[V^*\mid y, u]` instead of :math:`E[V^*\mid x, u]`, so
it is not this variance; the definition is followed here.

References
----------
Maillard, O.-A., Mann, T. A. & Mannor, S. (2014). "How hard is my MDP?" The
distribution-norm to the rescue. NeurIPS 27 (the environmental value norm).
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.mdp.hardness.sparse import _mask
from bbrlcore.mdp.hardness.values import _solve


@njit(cache=True)
def value_norm_kernel(indptr, indices, probs, nU, V, Q, mask, optimal_only):
    """:math:`\\max_{x,u} \\sqrt{\\mathrm{Var}_{y\\sim P(\\cdot|x,u)} V(y)}` over the
    states of ``mask`` (two-pass variance); only the maximising actions of ``Q`` when
    ``optimal_only``."""
    nX = mask.shape[0]
    best = 0.0
    for x in range(nX):
        if not mask[x]:
            continue
        qmax = Q[x, 0]
        for u in range(1, nU):
            if Q[x, u] > qmax:
                qmax = Q[x, u]
        for u in range(nU):
            if optimal_only and Q[x, u] < qmax:
                continue
            r = x * nU + u
            mean = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                mean += probs[j] * V[indices[j]]
            var = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                d = V[indices[j]] - mean
                var += probs[j] * d * d
            if var > best:
                best = var
    return np.sqrt(best)



def value_norm(
    P: np.ndarray,
    R: np.ndarray,
    gamma: float,
    *,
    optimal_actions_only: bool = False,
    reachable_from: int | None = None,
) -> float:
    """The environmental value norm of the optimal policy,
    :math:`\\max_{x,u}\\sqrt{\\mathrm{Var}_{y\\sim P(\\cdot|x,u)}V^*(y)}`.

    ``optimal_actions_only`` keeps the optimal actions' rows only; ``reachable_from``
    (a state, or -1 for all) keeps the states reachable from it (as :func:`measures`
    does, from the initial state); by default every state.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.zeros((2, 1, 2)); P[0, 0] = [0.5, 0.5]; P[1, 0, 1] = 1.0
    >>> R = np.array([[0.0], [1.0]])  # V*(1) = 2, V*(0) = 0.5·(V*(0) + 2)/2 = 2/3
    >>> round(value_norm(P, R, 0.5), 9)  # 0.5·(2 − 2/3)
    0.666666667
    >>> value_norm(P, R, 0.5, reachable_from=1)  # from 1, only 1: no variance
    0.0
    """
    P, rows, V, Q, _ = _solve(P, R, gamma)
    mask = _mask(P, rows, reachable_from)
    return float(value_norm_kernel(*rows, P.shape[1], V, Q, mask, optimal_actions_only))
