r"""The optimal values :math:`V^*` and :math:`Q^*` of a discounted MDP, certified: the first
measure (the optimal value of the initial state) and what the value norm
(:mod:`~bbrlcore.mdp.hardness.environmental_value`) and the gaps
(:mod:`~bbrlcore.mdp.hardness.gaps`) are taken on.

**Optimal value** :math:`V^*(x_0)` of the initial state (the mean of :math:`V^*` over the
states when ``initial_state == -1``), with :math:`V^* = \max_u Q^*` and

.. math::  Q^*(x,u) = \bar r(x,u) + \gamma \sum_y P(y\mid x,u)\, V^*(y), \qquad
           \bar r(x,u) = \sum_y P(y\mid x,u)\, R(x,u,y).

Algorithm and cost
------------------
*Optimal values* (:func:`optimal_values_rows`): Gauss–Seidel value iteration from
:math:`V=0` when it can converge within :data:`VALUE_SWEEP_BUDGET` sweeps (γ up to about
0.99). Its sweep is a γ-contraction in the sup norm, so after a sweep changing V by at
most δ, :math:`\lVert V - V^*\rVert_\infty \le \gamma\delta/(1-\gamma)`; it stops when
that bound is at most ``rtol``·‖V‖∞ (default 1e-13) or δ reaches the rounding level.
Cost O(nnz · log(1/rtol)/log(1/γ)). Closer to 1 (or if the sweeps did not converge),
**policy iteration** with exact policy evaluations (a sparse LU solve of
:math:`(I-\gamma P_\pi)V = r_\pi`, :func:`scipy.sparse.linalg.splu`), certified by the
Bellman residual: :math:`\lVert V - V^*\rVert_\infty \le \lVert TV - V\rVert_\infty
/(1-\gamma)`, about ε‖V‖/(1 − γ) at best (1e-8 relative at γ = 1 − 1e-7).

References
----------
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.hardness.sparse import _EPS, _as_model, _rbar, sparse_rows

#: Relative accuracy of the optimal values (sup-norm error bound over ‖V‖∞).
VALUE_RTOL = 1e-13

#: Largest certified relative error of the optimal values that the value measures accept
#: (reached only when γ is so close to 1 that float64 cannot do better, about
#: ε/(1 − γ)); beyond it they are refused (:class:`bbrlcore.errors.BBRLError`).
VALUE_MAX_RTOL = 1e-6

#: Value iteration runs at most this many sweeps; a γ needing more (about
#: log(rtol (1 − γ)) / log γ: γ above ≈ 0.99) is solved by policy iteration with exact
#: (sparse) policy evaluations instead.
VALUE_SWEEP_BUDGET = 5_000



@njit(cache=True)
def optimal_state_values(indptr, indices, probs, rbar, gamma, rtol, max_sweeps, V):
    """Gauss–Seidel value iteration on the sparse rows, warm-started from ``V`` (in place).

    Stops when :math:`\\gamma\\delta/(1-\\gamma) \\le` ``rtol``·‖V‖∞ (δ the largest change
    of the last sweep, the bound on ‖V − V*‖∞), when δ reaches the rounding level, or
    after ``max_sweeps``. Returns ``(sweeps, bound)``.
    """
    nX, nU = rbar.shape
    sweeps = 0
    bound = np.inf
    while sweeps < max_sweeps:
        delta = 0.0
        vmax = 0.0
        for x in range(nX):
            best = -np.inf
            for u in range(nU):
                r = x * nU + u
                acc = 0.0
                for j in range(indptr[r], indptr[r + 1]):
                    acc += probs[j] * V[indices[j]]
                acc = rbar[x, u] + gamma * acc
                if acc > best:
                    best = acc
            d = abs(best - V[x])
            if d > delta:
                delta = d
            V[x] = best
            if abs(best) > vmax:
                vmax = abs(best)
        sweeps += 1
        bound = gamma * delta / (1.0 - gamma)
        if bound <= rtol * vmax or delta <= 8.0 * _EPS * vmax or delta == 0.0:
            break
    return sweeps, bound



@njit(cache=True)
def action_values(indptr, indices, probs, rbar, gamma, V):
    """:math:`Q(x,u) = \\bar r(x,u) + \\gamma \\sum_y P(y|x,u) V(y)`."""
    nX, nU = rbar.shape
    Q = np.empty((nX, nU))
    for x in range(nX):
        for u in range(nU):
            r = x * nU + u
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                acc += probs[j] * V[indices[j]]
            Q[x, u] = rbar[x, u] + gamma * acc
    return Q



@njit(cache=True)
def bellman_residual(indptr, indices, probs, rbar, gamma, V):
    r""":math:`\lVert TV - V\rVert_\infty` (T the Bellman optimality operator); then
    :math:`\lVert V - V^*\rVert_\infty \le \lVert TV - V\rVert_\infty/(1-\gamma)`."""
    nX, nU = rbar.shape
    res = 0.0
    for x in range(nX):
        best = -np.inf
        for u in range(nU):
            r = x * nU + u
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                acc += probs[j] * V[indices[j]]
            acc = rbar[x, u] + gamma * acc
            if acc > best:
                best = acc
        d = abs(best - V[x])
        if d > res:
            res = d
    return res



@njit(cache=True)
def _improve_policy(indptr, indices, probs, rbar, gamma, V, pi, tol):
    """Greedy policy improvement in place: an action replaces ``pi[x]`` only when its
    :math:`Q` is larger by more than ``tol`` (no cycling on rounding). Returns whether
    ``pi`` changed."""
    nX, nU = rbar.shape
    changed = False
    for x in range(nX):
        best = 0.0
        for u in range(nU):
            r = x * nU + u
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                acc += probs[j] * V[indices[j]]
            acc = rbar[x, u] + gamma * acc
            if u == pi[x]:
                best = acc
        for u in range(nU):
            if u == pi[x]:
                continue
            r = x * nU + u
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                acc += probs[j] * V[indices[j]]
            acc = rbar[x, u] + gamma * acc
            if acc > best + tol:
                best = acc
                pi[x] = u
                changed = True
    return changed



@njit(cache=True)
def _value_policy_system(indptr, indices, probs, rbar, gamma, pi):
    r"""The policy evaluation system :math:`(I-\gamma P_\pi) V = r_\pi` in CSR form:
    ``(indptr, indices, values, r_pi)``, the diagonal merged with any self-loop."""
    nX, nU = rbar.shape
    nnz = 0
    for x in range(nX):
        r = x * nU + pi[x]
        nnz += indptr[r + 1] - indptr[r] + 1
    iptr = np.zeros(nX + 1, dtype=np.int64)
    cols = np.empty(nnz, dtype=np.int64)
    vals = np.empty(nnz)
    b = np.empty(nX)
    k = 0
    for x in range(nX):
        r = x * nU + pi[x]
        diag = k
        cols[k] = x
        vals[k] = 1.0
        k += 1
        for j in range(indptr[r], indptr[r + 1]):
            y = indices[j]
            if y == x:
                vals[diag] -= gamma * probs[j]
            else:
                cols[k] = y
                vals[k] = -gamma * probs[j]
                k += 1
        b[x] = rbar[x, pi[x]]
        iptr[x + 1] = k
    return iptr, cols[:k], vals[:k], b



def _check_gamma(gamma: float) -> float:
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"the value measures need 0 <= gamma < 1, got {gamma}")
    return float(gamma)



def _sweeps_needed(gamma: float, rtol: float) -> float:
    """Value-iteration sweeps from zero until its stopping test can hold (about
    :math:`\\log(r_{tol}(1-\\gamma)/2)/\\log\\gamma`)."""
    if gamma <= 0.0:
        return 1.0
    return float(np.log(rtol * (1.0 - gamma) / 2.0) / np.log(gamma))



def _values_by_policy_iteration(rows: tuple, rbar: np.ndarray, gamma: float,
                                V: np.ndarray) -> bool:
    """V* by policy iteration from the greedy policy of ``V`` (in place), each policy
    evaluated exactly by a sparse LU solve of :math:`(I-\\gamma P_\\pi)V = r_\\pi`.
    Returns whether the policy became stable (the caller certifies ``V`` either way)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.linalg import splu

    nX, nU = rbar.shape
    pi = np.zeros(nX, dtype=np.int64)
    _improve_policy(*rows, rbar, gamma, V, pi, 0.0)
    for _ in range(1000):
        iptr, cols, vals, b = _value_policy_system(*rows, rbar, gamma, pi)
        A = csr_matrix((vals, cols, iptr), shape=(nX, nX)).tocsc()
        V[:] = splu(A).solve(b)
        tol = 64.0 * _EPS * max(1.0, float(np.abs(V).max()))
        if not _improve_policy(*rows, rbar, gamma, V, pi, tol):
            return True
    return False



def optimal_values_rows(indptr: np.ndarray, indices: np.ndarray, probs: np.ndarray,
                        rbar: np.ndarray, gamma: float, rtol: float = VALUE_RTOL,
                        what: str = "the MDP") -> tuple[np.ndarray, np.ndarray, float]:
    """``(V*, Q*, bound)`` of the model on sparse rows with expected rewards ``rbar``:
    ``bound`` is a certified bound on :math:`\\lVert V - V^*\\rVert_\\infty` (and on
    :math:`\\lVert Q - Q^*\\rVert_\\infty`).

    Gauss–Seidel value iteration when it reaches ``rtol`` within
    :data:`VALUE_SWEEP_BUDGET` sweeps; otherwise (γ close to 1) or if it did not,
    policy iteration with exact sparse policy evaluations, certified by the Bellman
    residual (:func:`bellman_residual`). A bound above :data:`VALUE_MAX_RTOL`·‖V*‖∞
    (γ so close to 1 that float64 cannot resolve the values) is refused with a
    :class:`bbrlcore.errors.BBRLError` naming ``what``: an unconverged value is never
    returned.
    """
    gamma = float(gamma)
    rows = (indptr, indices, probs)
    V = np.zeros(rbar.shape[0])
    vmax = 0.0
    bound = np.inf
    if _sweeps_needed(gamma, rtol) <= VALUE_SWEEP_BUDGET:
        _, bound = optimal_state_values(*rows, rbar, gamma, float(rtol), VALUE_SWEEP_BUDGET,
                                        V)
        vmax = float(np.abs(V).max())
    if not bound <= max(rtol * vmax, 16.0 * _EPS * vmax * gamma / (1.0 - gamma)):
        if not np.isfinite(bound):  # a warm start: a few sweeps
            optimal_state_values(*rows, rbar, gamma, float(rtol), 100, V)
        _values_by_policy_iteration(rows, rbar, gamma, V)
        bound = bellman_residual(*rows, rbar, gamma, V) / (1.0 - gamma)
    Q = action_values(*rows, rbar, gamma, V)
    V = Q.max(axis=1)
    bound *= gamma  # V = T(V_old): ‖TV_old − V*‖ ≤ γ ‖V_old − V*‖
    vmax = float(np.abs(V).max())
    if not (bound <= VALUE_MAX_RTOL * vmax or bound == 0.0):
        raise BBRLError(
            f"{what}: the optimal values at gamma={gamma!r} cannot be certified to a "
            f"relative {VALUE_MAX_RTOL:g} in float64 (bound {bound:.3g} on values of "
            f"{vmax:.3g}: gamma is too close to 1); use a smaller gamma")
    return V, Q, float(bound)



def _solve(P: np.ndarray, R: np.ndarray, gamma: float, rtol: float = VALUE_RTOL):
    """Checked model, its sparse rows, V*, Q* and the bound on their error."""
    P = _as_model(P)
    nX, nU, _ = P.shape
    rows = sparse_rows(P)
    rbar = _rbar(R, rows, nX, nU)
    gamma = _check_gamma(gamma)
    V, Q, bound = optimal_values_rows(*rows, rbar, gamma, float(rtol))
    return P, rows, V, Q, bound



def optimal_values(
    P: np.ndarray, R: np.ndarray, gamma: float, *, rtol: float = VALUE_RTOL
) -> tuple[np.ndarray, np.ndarray]:
    """``(V*, Q*)`` of the discounted MDP, to ``rtol`` relative accuracy (sup norm), or
    to the best float64 allows when γ is very close to 1 (:func:`optimal_values_rows`:
    refused beyond :data:`VALUE_MAX_RTOL`).

    ``R`` is ``R[x, u, y]`` or the expected rewards ``R[x, u]``.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.ones((1, 2, 1)); R = np.array([[1.0, 0.5]])
    >>> V, Q = optimal_values(P, R, 0.9)
    >>> np.round(Q, 9).tolist()
    [[10.0, 9.5]]
    >>> V, Q = optimal_values(P, R, 0.9999999)  # policy iteration: 1/(1 − γ) to 1e-8
    >>> round(float(V[0]) / 1e7, 6)
    1.0
    """
    _, _, V, Q, _ = _solve(P, R, gamma, rtol)
    return V, Q
