r"""The sum of the reciprocals of the sub-optimality gaps (Colosseum's
``hardness/measures/sum_reciprocals_suboptimality_gaps``).

**Sum of the reciprocals of the sub-optimality gaps** (Colosseum App. B.6; the
quantity of gap-dependent regret bounds):

.. math::  \sum_{(x,u):\ \Delta(x,u) > 0} \frac{1}{\Delta(x,u)}, \qquad
           \Delta(x,u) = V^*(x) - Q^*(x,u) \;\ge 0 .

Optimal pairs (:math:`\Delta = 0`) are left out of the sum. Numerically a gap counts as
zero (a tie) when :math:`\Delta \le \max(\tau\,\max|Q^*|, 2\epsilon_Q)` with :math:`\tau`
= ``gap_rtol`` (default 1e-9) and :math:`\epsilon_Q` the certified error of the computed
:math:`Q^*` (below 1e-12 relative, except for γ very close to 1).
Colosseum's package instead sums :math:`1/(\Delta + 0.1)` over *all* pairs, optimal ones
included (``regularization=0.1`` of :func:`suboptimality_gaps` reproduces that form).
A gap below the tolerance cannot be told from a tie at this precision: when the values
span more than about nine orders of magnitude (a 1,000-state chain with γ = 0.95, where
:math:`V^*` falls to 1e-21 far from the reward) the smallest gaps are left out and the
sum is a lower bound.

References
----------
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.mdp.hardness.sparse import _mask
from bbrlcore.mdp.hardness.values import _solve

#: Gaps at most this fraction of max|Q*| count as ties (optimal actions).
GAP_RTOL = 1e-9



@njit(cache=True)
def gaps_kernel(Q, mask, rtol, regularization, abs_tol=0.0):
    """Sum of :math:`1/\\Delta` over the pairs with :math:`\\Delta >
    \\max(` ``rtol``·max|Q|, ``abs_tol``:math:`)` (states of ``mask``),
    :math:`\\Delta(x,u) = \\max_v Q(x,v) - Q(x,u)`; with ``regularization > 0``, the sum
    of :math:`1/(\\Delta + \\mathrm{reg})` over every pair (ties as Δ = 0). ``abs_tol`` is
    twice the certified error of Q (a gap below it cannot be told from a tie). Returns
    ``(sum, number of positive gaps)``."""
    nX, nU = Q.shape
    scale = 0.0
    for x in range(nX):
        if mask[x]:
            for u in range(nU):
                if abs(Q[x, u]) > scale:
                    scale = abs(Q[x, u])
    tol = max(rtol * scale, abs_tol)
    total = 0.0
    count = 0
    for x in range(nX):
        if not mask[x]:
            continue
        v = Q[x, 0]
        for u in range(1, nU):
            if Q[x, u] > v:
                v = Q[x, u]
        for u in range(nU):
            g = v - Q[x, u]
            if g <= tol:
                g = 0.0
            else:
                count += 1
            if regularization > 0.0:
                total += 1.0 / (g + regularization)
            elif g > 0.0:
                total += 1.0 / g
    return total, count



def suboptimality_gaps(
    P: np.ndarray,
    R: np.ndarray,
    gamma: float,
    *,
    gap_rtol: float = GAP_RTOL,
    regularization: float = 0.0,
    reachable_from: int | None = None,
) -> float:
    """:math:`\\sum_{\\Delta(x,u)>0} 1/\\Delta(x,u)`, :math:`\\Delta = V^*(x) - Q^*(x,u)`.

    Gaps at most ``gap_rtol``·max|Q*| (or twice the certified error of Q*, when γ is
    so close to 1 that it is larger) are ties (optimal, left out).

    ``regularization`` > 0 gives the form of Colosseum's package
    (``get_sum_reciprocals_suboptimality_gaps``, default ``regularization=0.1``):
    :math:`\\sum_{x,u} 1/(\\Delta(x,u) + \\mathrm{reg})` over **every** pair, optimal
    ones included (each adds 1/reg), i.e. ``(1 / (V[:, None] - Q + 0.1)).sum()``;
    ``regularization=0.1`` with ``reachable_from=None`` (every state, as Colosseum's
    continuing form) reproduces its numbers, up to its float32 value iteration.
    ``reachable_from`` as in :func:`value_norm`.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.ones((1, 2, 1)); R = np.array([[1.0, 0.5]])  # Q* = (10, 9.5): Δ = 0.5
    >>> round(suboptimality_gaps(P, R, 0.9), 9)
    2.0
    >>> round(suboptimality_gaps(P, R, 0.9, regularization=0.1), 9)  # 1/0.1 + 1/0.6
    11.666666667
    """
    P, rows, _, Q, bound = _solve(P, R, gamma)
    total, _ = gaps_kernel(Q, _mask(P, rows, reachable_from), float(gap_rtol),
                           float(regularization), 2.0 * bound)
    return float(total)
