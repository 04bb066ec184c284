r"""The shared kernels of the hardness measures: the sparse rows of an MDP and the states
reachable from its initial state (Colosseum's ``hardness/measures/utils``, here numba).

Every kernel works on the **sparse rows** of P (CSR: for row ``x*nU + u`` the successors
with non-zero probability), so a sweep costs O(nnz), the number of non-zero transitions,
not O(nX²·nU). Building the rows reads the dense array once, O(nX²·nU)
(:func:`~bbrlcore.mdp.hardness.table.measures_rows` starts from a test set's rows and
never builds it).

Reachability (:func:`reachable_mask`: the states where
:func:`~bbrlcore.mdp.hardness.table.measures` takes every measure) ignores transitions
of probability below :data:`REACH_TOLERANCE`. The checks of a dense model that the
measures' Python API share are here too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Transition probabilities below this count as zero for reachability (the states a
#: measure is taken on) and for the diameter: an event of probability 1e-17 cannot make
#: the diameter infinite, nor a state reachable. The diameter's hitting times then ignore
#: events rarer than their own accuracy (:data:`DIAMETER_RTOL`).
REACH_TOLERANCE = 1e-12

_EPS = np.finfo(np.float64).eps



@njit(cache=True)
def sparse_rows(P):
    """CSR rows of ``P``: ``(indptr, indices, probs)``; row ``x*nU + u`` holds the
    successors ``y`` with ``P[x, u, y] > 0`` in increasing order."""
    nX, nU, nY = P.shape
    indptr = np.zeros(nX * nU + 1, dtype=np.int64)
    nnz = 0
    for x in range(nX):
        for u in range(nU):
            for y in range(nY):
                if P[x, u, y] > 0.0:
                    nnz += 1
            indptr[x * nU + u + 1] = nnz
    indices = np.empty(nnz, dtype=np.int64)
    probs = np.empty(nnz)
    k = 0
    for x in range(nX):
        for u in range(nU):
            for y in range(nY):
                p = P[x, u, y]
                if p > 0.0:
                    indices[k] = y
                    probs[k] = p
                    k += 1
    return indptr, indices, probs



@njit(cache=True)
def csr_of_rows(succ, nsucc, P, R):
    """A model on padded rows (:mod:`bbrlcore.mdp.rows`: ``P[x, u, k]``, ``R[x, u, k]``
    for the successor ``succ[x, u, k]``) as :func:`sparse_rows` gives it from the dense
    array, ``(indptr, indices, probs)``, and its expected rewards (as
    :func:`expected_rewards`): the entries of positive probability, in the same order."""
    nX, nU, _ = P.shape
    indptr = np.zeros(nX * nU + 1, dtype=np.int64)
    nnz = 0
    for x in range(nX):
        for u in range(nU):
            for k in range(nsucc[x, u]):
                if P[x, u, k] > 0.0:
                    nnz += 1
            indptr[x * nU + u + 1] = nnz
    indices = np.empty(nnz, dtype=np.int64)
    probs = np.empty(nnz)
    rbar = np.zeros((nX, nU))
    j = 0
    for x in range(nX):
        for u in range(nU):
            acc = 0.0
            for k in range(nsucc[x, u]):
                p = P[x, u, k]
                if p > 0.0:
                    indices[j] = succ[x, u, k]
                    probs[j] = p
                    acc += p * R[x, u, k]
                    j += 1
            rbar[x, u] = acc
    return indptr, indices, probs, rbar



@njit(cache=True)
def expected_rewards(R, indptr, indices, probs, nU):
    """:math:`\\bar r(x,u) = \\sum_y P(y|x,u) R(x,u,y)` over the sparse rows."""
    nX = (indptr.shape[0] - 1) // nU
    rbar = np.zeros((nX, nU))
    for x in range(nX):
        for u in range(nU):
            r = x * nU + u
            acc = 0.0
            for j in range(indptr[r], indptr[r + 1]):
                acc += probs[j] * R[x, u, indices[j]]
            rbar[x, u] = acc
    return rbar



@njit(cache=True)
def drop_below(indptr, indices, probs, tol):
    """The sparse rows without their entries of probability below ``tol``
    (:data:`REACH_TOLERANCE`): ``(indptr, indices, probs)``, the others in the same order."""
    n_rows = indptr.shape[0] - 1
    keep = 0
    for j in range(indices.shape[0]):
        if probs[j] >= tol:
            keep += 1
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    ind = np.empty(keep, dtype=np.int64)
    pr = np.empty(keep)
    k = 0
    for r in range(n_rows):
        for j in range(indptr[r], indptr[r + 1]):
            if probs[j] >= tol:
                ind[k] = indices[j]
                pr[k] = probs[j]
                k += 1
        ptr[r + 1] = k
    return ptr, ind, pr



@njit(cache=True)
def reachable_states(indptr, indices, nU, start):
    """States reachable from ``start`` (every state when ``start < 0``), as a mask,
    following every entry of the rows (:func:`reachable_mask` ignores the tiny ones)."""
    nX = (indptr.shape[0] - 1) // nU
    seen = np.zeros(nX, dtype=np.bool_)
    if start < 0:
        seen[:] = True
        return seen
    stack = np.empty(nX, dtype=np.int64)
    seen[start] = True
    stack[0] = start
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        for r in range(x * nU, x * nU + nU):
            for j in range(indptr[r], indptr[r + 1]):
                y = indices[j]
                if not seen[y]:
                    seen[y] = True
                    stack[top] = y
                    top += 1
    return seen



def _as_model(P: np.ndarray) -> np.ndarray:
    P = np.ascontiguousarray(P, dtype=np.float64)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or P.size == 0:
        raise ValueError(f"P must have shape (nX, nU, nX), got {P.shape}")
    if not np.isfinite(P).all() or P.min() < 0 or np.abs(P.sum(axis=2) - 1).max() > 1e-8:
        raise ValueError("P must hold probability distributions P[x, u, :]")
    return P



def _rbar(R: np.ndarray, rows: tuple, nX: int, nU: int) -> np.ndarray:
    R = np.ascontiguousarray(R, dtype=np.float64)
    if R.shape == (nX, nU):
        return R
    if R.shape == (nX, nU, nX):
        return expected_rewards(R, *rows, nU)
    raise ValueError(f"R must have shape ({nX}, {nU}) or ({nX}, {nU}, {nX}), got {R.shape}")



def reachable_mask(indptr: np.ndarray, indices: np.ndarray, probs: np.ndarray, nU: int,
                   start: int) -> np.ndarray:
    """The states reachable from ``start`` (all when it is -1) along transitions of
    probability at least :data:`REACH_TOLERANCE`: where :func:`measures` takes every
    measure."""
    ip, ix, _ = drop_below(indptr, indices, probs, REACH_TOLERANCE)
    return reachable_states(ip, ix, nU, int(start))



def _mask(P: np.ndarray, rows: tuple, reachable_from: int | None) -> np.ndarray:
    nX, nU, _ = P.shape
    if reachable_from is None:
        return np.ones(nX, dtype=np.bool_)
    if not -1 <= reachable_from < nX:
        raise ValueError(f"reachable_from {reachable_from} outside -1..{nX - 1}")
    return reachable_mask(*rows, nU, int(reachable_from))
