r"""The least expected hitting times :math:`T^*_{s\to e}` of one target ``e``, a stochastic
shortest path (SSP) for each target of the diameter
(:mod:`~bbrlcore.mdp.hardness.diameter_measure`, whose docstring has the algorithm, steps
1–4): the start from a lower bound, symmetric
Gauss–Seidel sweeps with self-loops solved exactly, the certificate of their relative
error, and the policy iterations that finish slowly mixing targets (dense LU, sparse LU
and the reduced system of a nearly deterministic MDP).

References
----------
Bertsekas, D. P. & Tsitsiklis, J. N. (1991). An analysis of stochastic shortest path
problems. Mathematics of Operations Research 16(3), 580–595.
Jaksch, T., Ortner, R. & Auer, P. (2010). Near-optimal regret bounds for reinforcement
learning. JMLR 11, 1563–1600 (the diameter).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.mdp.hardness.graph import _bfs_to, _is_proper
from bbrlcore.mdp.hardness.sparse import _EPS
from bbrlcore.mdp.solvers import _lu_solve


@njit(cache=True, inline="always")
def _q_cost(ptr, ind, pr, r, h):
    acc = 1.0
    for j in range(ptr[r], ptr[r + 1]):
        acc += pr[j] * h[ind[j]]
    return acc



@njit(cache=True)
def _certificate(ptr, ind, pr, nU, target, m, h):
    """Relative error bound of ``h`` as the SSP costs to ``target`` (inf if none, or if
    ``h`` is not finite: a failed solve)."""
    dmax = -np.inf
    dmin = np.inf
    for s in range(m):
        if not np.isfinite(h[s]):
            return np.inf
    for s in range(m):
        if s == target:
            continue
        best = np.inf
        for r in range(s * nU, s * nU + nU):
            c = _q_cost(ptr, ind, pr, r, h)
            if c < best:
                best = c
        d = best - h[s]
        if d > dmax:
            dmax = d
        if d < dmin:
            dmin = d
    if dmax == -np.inf:  # a single state
        return 0.0
    if dmax >= 1.0:
        return np.inf
    up = dmax / (1.0 - dmax) if dmax > 0.0 else 0.0
    lo = -dmin / (1.0 - dmin) if dmin < 0.0 else 0.0
    return max(up, lo)



@njit(cache=True, inline="always")
def _q_cost_self(ptr, ind, pr, nU, s, h):
    """:math:`\\min_u (1 + \\sum_{y \\ne s} P(y|s,u) h(y)) / (1 - P(s|s,u))`: the Bellman
    update of ``s`` with its self-loops solved exactly (the fixed point of each action's
    update in h(s); the minimum of these is the fixed point's h(s)). An action that only
    loops on ``s`` is skipped."""
    best = np.inf
    for r in range(s * nU, s * nU + nU):
        acc = 1.0
        pss = 0.0
        for j in range(ptr[r], ptr[r + 1]):
            y = ind[j]
            if y == s:
                pss += pr[j]
            else:
                acc += pr[j] * h[y]
        if pss < 1.0:
            c = acc / (1.0 - pss)
            if c < best:
                best = c
    return best



@njit(cache=True)
def _gauss_seidel(ptr, ind, pr, nU, target, m, order, h, rtol, budget, early):
    """Symmetric Gauss–Seidel sweeps (BFS order, nearest first, then back), self-loops
    solved exactly (:func:`_q_cost_self`), until certified (:func:`_certificate`) or
    ``budget`` sweeps; with ``early``, also as soon as the observed contraction of the
    changes says the budget will not suffice (the caller then switches to policy
    iteration). Returns ``(sweeps, bound)`` (``inf``: not certified)."""
    sweeps = 0
    bound = np.inf
    prev = np.inf
    while sweeps < budget:
        delta = 0.0
        hmax = 0.0
        for i in range(1, 2 * m - 1):
            if i == m and delta == 0.0:
                break  # the forward half changed nothing: h = Th already
            s = order[i] if i < m else order[2 * m - 1 - i]
            best = _q_cost_self(ptr, ind, pr, nU, s, h)
            d = abs(best - h[s])
            if d > delta:
                delta = d
            h[s] = best
            if best > hmax:
                hmax = best
        sweeps += 1
        floor = 16.0 * _EPS * hmax
        if delta == 0.0:  # h = Th exactly (every update used the final values)
            bound = 0.0
            break
        if delta <= max(rtol, floor) or sweeps == budget:
            bound = _certificate(ptr, ind, pr, nU, target, m, h)
            if bound <= max(rtol, floor):
                break
        if early and sweeps >= 3:
            rho = delta / prev
            # delta · rho^k reaches the tolerance after k = log(tol/delta) / log(rho)
            if rho >= 1.0 or np.log(max(rtol, floor) / delta) < (budget - sweeps) * np.log(rho):
                bound = np.inf
                break
        prev = delta
    return sweeps, bound



@njit(cache=True)
def _policy_iteration(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows):
    """Exact SSP costs to ``target`` by policy iteration (dense LU), in ``h``."""
    pi = np.zeros(m, dtype=np.int64)
    for s in range(m):  # greedy on the current h
        best = np.inf
        for u in range(nU):
            c = _q_cost(ptr, ind, pr, s * nU + u, h)
            if c < best:
                best = c
                pi[s] = u
    seen = np.empty(m, dtype=np.bool_)
    stack = np.empty(m, dtype=np.int64)
    if not _is_proper(ptr, ind, nU, target, m, pi, rptr, rrows, seen, stack):
        for s in range(m):  # the action most likely to move strictly closer
            if s == target:
                continue
            best = -1.0
            for u in range(nU):
                r = s * nU + u
                p = 0.0
                for j in range(ptr[r], ptr[r + 1]):
                    if dist[ind[j]] < dist[s]:
                        p += pr[j]
                if p > best:
                    best = p
                    pi[s] = u
    idx = np.empty(m, dtype=np.int64)
    n = 0
    for s in range(m):
        if s == target:
            idx[s] = -1
        else:
            idx[s] = n
            n += 1
    A = np.empty((n, n))
    b = np.empty(n)
    for _it in range(500):
        A[:, :] = 0.0
        for s in range(m):
            i = idx[s]
            if i < 0:
                continue
            A[i, i] += 1.0
            b[i] = 1.0
            r = s * nU + pi[s]
            for j in range(ptr[r], ptr[r + 1]):
                k = idx[ind[j]]
                if k >= 0:
                    A[i, k] -= pr[j]
        _lu_solve(A, b)
        for s in range(m):
            if idx[s] >= 0:
                h[s] = b[idx[s]]
        h[target] = 0.0
        changed = False
        for s in range(m):
            if s == target:
                continue
            cur = _q_cost(ptr, ind, pr, s * nU + pi[s], h)
            for u in range(nU):
                c = _q_cost(ptr, ind, pr, s * nU + u, h)
                if c < cur * (1.0 - 1e-12):
                    cur = c
                    pi[s] = u
                    changed = True
        if not changed:
            break



#: Largest number of states with a stochastic row for which the diameter's targets are
#: solved by policy iteration on the reduced system (:func:`_reduced_policy_iteration`).
REDUCED_MAX_STATES = 256



@njit(cache=True)
def _evaluate_reduced(ptr, ind, pr, nU, target, m, pi, h, status, c, z, path, slot):
    """Exact SSP costs to ``target`` of the proper policy ``pi`` into ``h``, by reduction:
    a state whose row under ``pi`` is deterministic costs 1 plus its successor's cost, so
    following those rows expresses every state as ``c[s] + h[z[s]]``, ``z[s]`` the
    first state with a stochastic row on its path (-1: the target); the costs of those
    few states solve a small dense linear system. Returns False when ``pi`` is improper
    (a deterministic cycle, a singular or non-positive system)."""
    status[:] = 0  # 0 unresolved, 1 on the current path, 2 resolved
    status[target] = 2
    c[target] = 0.0
    z[target] = -1
    n_s = 0
    for s in range(m):
        r = s * nU + pi[s]
        if s != target and ptr[r + 1] - ptr[r] != 1:
            status[s] = 2
            c[s] = 0.0
            z[s] = s
            slot[s] = n_s
            n_s += 1
        else:
            slot[s] = -1
    for s0 in range(m):
        if status[s0] == 2:
            continue
        top = 0
        cur = s0
        while status[cur] == 0:
            status[cur] = 1
            path[top] = cur
            top += 1
            cur = ind[ptr[cur * nU + pi[cur]]]
        if status[cur] == 1:
            return False  # a deterministic cycle that never reaches the target
        base_c = c[cur]
        base_z = z[cur]
        while top > 0:
            top -= 1
            q = path[top]
            base_c += 1.0
            c[q] = base_c
            z[q] = base_z
            status[q] = 2
    if n_s > 0:
        A = np.zeros((n_s, n_s))
        b = np.empty(n_s)
        for s in range(m):
            i = slot[s]
            if i < 0:
                continue
            A[i, i] += 1.0
            acc = 1.0
            r = s * nU + pi[s]
            for j in range(ptr[r], ptr[r + 1]):
                y = ind[j]
                acc += pr[j] * c[y]
                if z[y] >= 0:
                    A[i, slot[z[y]]] -= pr[j]
            b[i] = acc
        _lu_solve(A, b)
        for i in range(n_s):
            if not (b[i] > 0.0 and b[i] < np.inf):
                return False
        for s in range(m):
            h[s] = c[s] + (b[slot[z[s]]] if z[s] >= 0 else 0.0)
    else:
        for s in range(m):
            h[s] = c[s]
    return True



@njit(cache=True)
def _reduced_policy_iteration(ptr, ind, pr, nU, target, m, dist, h):
    """Exact SSP costs to ``target`` (in ``h``) by policy iteration whose evaluations
    are :func:`_evaluate_reduced`: from the policy that moves strictly closer (in graph
    distance ``dist``) with the largest probability, which is proper; improvements keep
    it proper. Returns False when an evaluation fails (the caller falls back)."""
    pi = np.zeros(m, dtype=np.int64)
    for s in range(m):
        if s == target:
            continue
        best = -1.0
        for u in range(nU):
            r = s * nU + u
            p = 0.0
            for j in range(ptr[r], ptr[r + 1]):
                if dist[ind[j]] < dist[s]:
                    p += pr[j]
            if p > best:
                best = p
                pi[s] = u
    status = np.empty(m, dtype=np.int8)
    c = np.empty(m)
    z = np.empty(m, dtype=np.int64)
    path = np.empty(m, dtype=np.int64)
    slot = np.empty(m, dtype=np.int64)
    for _it in range(500):
        if not _evaluate_reduced(ptr, ind, pr, nU, target, m, pi, h, status, c, z, path,
                                 slot):
            return False
        changed = False
        for s in range(m):
            if s == target:
                continue
            cur = _q_cost(ptr, ind, pr, s * nU + pi[s], h)
            for u in range(nU):
                q = _q_cost(ptr, ind, pr, s * nU + u, h)
                if q < cur * (1.0 - 1e-12):
                    cur = q
                    pi[s] = u
                    changed = True
        if not changed:
            return True
    return True



@njit(cache=True)
def _ssp_start(target, rptr, rrows, nU, dist, order, h, W, nw):
    r"""Reverse BFS to ``target`` (``dist``, ``order``) and a lower bound on the costs in
    ``h``: the graph distance and, for each earlier target ``a`` whose exact costs are a
    row of ``W``, :math:`T^*_{s\to a} - T^*_{t\to a}` (the triangle inequality
    :math:`T^*_{s\to a} \le T^*_{s\to t} + T^*_{t\to a}`; exact for every s whose best way
    to ``a`` passes through ``t``). Returns the number of states reaching ``target``."""
    n = _bfs_to(target, rptr, rrows, nU, dist, order)
    m = h.shape[0]
    for s in range(m):
        h[s] = dist[s]
    for k in range(nw):
        off = W[k, target]
        for s in range(m):
            v = W[k, s] - off
            if v > h[s]:
                h[s] = v
    h[target] = 0.0
    return n



@njit(cache=True)
def _ssp_initial_policy(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows, pi):
    """Greedy on ``h`` if that policy is proper, else the action most likely to move
    strictly closer to ``target`` (proper)."""
    for s in range(m):
        best = np.inf
        for u in range(nU):
            c = _q_cost(ptr, ind, pr, s * nU + u, h)
            if c < best:
                best = c
                pi[s] = u
    seen = np.empty(m, dtype=np.bool_)
    stack = np.empty(m, dtype=np.int64)
    if _is_proper(ptr, ind, nU, target, m, pi, rptr, rrows, seen, stack):
        return
    for s in range(m):
        if s == target:
            continue
        best = -1.0
        for u in range(nU):
            r = s * nU + u
            p = 0.0
            for j in range(ptr[r], ptr[r + 1]):
                if dist[ind[j]] < dist[s]:
                    p += pr[j]
            if p > best:
                best = p
                pi[s] = u



@njit(cache=True)
def _ssp_policy_system(ptr, ind, pr, nU, target, m, pi):
    """:math:`I - P_\\pi` on the states other than ``target`` (re-indexed: ``s`` becomes
    ``s - (s > target)``) in CSR form ``(indptr, indices, values)``, the diagonal merged
    with any self-loop; the right-hand side is all ones."""
    nnz = 0
    for s in range(m):
        if s != target:
            r = s * nU + pi[s]
            nnz += ptr[r + 1] - ptr[r] + 1
    iptr = np.zeros(m, dtype=np.int64)
    cols = np.empty(nnz, dtype=np.int64)
    vals = np.empty(nnz)
    k = 0
    i = 0
    for s in range(m):
        if s == target:
            continue
        diag = k
        cols[k] = i
        vals[k] = 1.0
        k += 1
        r = s * nU + pi[s]
        for j in range(ptr[r], ptr[r + 1]):
            y = ind[j]
            if y == target:
                continue
            if y == s:
                vals[diag] -= pr[j]
            else:
                cols[k] = y if y < target else y - 1
                vals[k] = -pr[j]
                k += 1
        i += 1
        iptr[i] = k
    return iptr, cols[:k], vals[:k]



@njit(cache=True)
def _ssp_improve(ptr, ind, pr, nU, target, m, h, pi):
    """Policy improvement on the costs ``h`` (an action must be better by a relative
    1e-12); returns whether ``pi`` changed."""
    changed = False
    for s in range(m):
        if s == target:
            continue
        cur = _q_cost(ptr, ind, pr, s * nU + pi[s], h)
        for u in range(nU):
            c = _q_cost(ptr, ind, pr, s * nU + u, h)
            if c < cur * (1.0 - 1e-12):
                cur = c
                pi[s] = u
                changed = True
    return changed



@njit(cache=True)
def _greedy_ssp(ptr, ind, pr, nU, m, h, pi):
    """The greedy policy of the costs ``h`` (lowest index among ties), in ``pi``."""
    for s in range(m):
        best = np.inf
        for u in range(nU):
            c = _q_cost(ptr, ind, pr, s * nU + u, h)
            if c < best:
                best = c
                pi[s] = u



@njit(cache=True)
def _warm_policy(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows, pi, prev_pi, prev_t):
    """The initial policy of :func:`_sparse_policy_iteration`: the optimal policy of the
    previous target ``prev_t`` (a neighbour: the best way there is mostly the best way
    here), its action at ``prev_t`` greedy on ``h``, if it is proper for ``target``;
    else :func:`_ssp_initial_policy`."""
    if prev_t >= 0:
        for s in range(m):
            pi[s] = prev_pi[s]
        best = np.inf
        for u in range(nU):
            c = _q_cost(ptr, ind, pr, prev_t * nU + u, h)
            if c < best:
                best = c
                pi[prev_t] = u
        seen = np.empty(m, dtype=np.bool_)
        stack = np.empty(m, dtype=np.int64)
        if _is_proper(ptr, ind, nU, target, m, pi, rptr, rrows, seen, stack):
            return
    _ssp_initial_policy(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows, pi)



#: Gauss–Seidel sweeps after each exact evaluation of :func:`_sparse_policy_iteration`
#: (optimistic policy iteration: about half the evaluations).
PI_SWEEPS = 5



def _sparse_policy_iteration(ptr, ind, pr, nU, target, m, dist, order, h, rptr, rrows,
                             pi, prev_pi, prev_t) -> int:
    """Exact SSP costs to ``target`` in ``h`` by policy iteration whose evaluations are
    sparse LU solves (:func:`scipy.sparse.linalg.splu`), each followed by
    :data:`PI_SWEEPS` Gauss–Seidel sweeps, from :func:`_warm_policy` (improvements keep
    a policy proper); the last policy in ``pi``. Returns the number of evaluations (the
    caller certifies the result)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.linalg import splu

    h0 = h.copy()
    _warm_policy(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows, pi, prev_pi, prev_t)
    warm = prev_t >= 0
    ones = np.ones(m - 1)
    n = 0
    for _ in range(500):
        iptr, cols, vals = _ssp_policy_system(ptr, ind, pr, nU, target, m, pi)
        A = csr_matrix((vals, cols, iptr), shape=(m - 1, m - 1)).tocsc()
        try:
            x = splu(A).solve(ones)
        except RuntimeError:  # exactly singular: an improper policy
            x = np.full(m - 1, -np.inf)
        n += 1
        if not (np.isfinite(x).all() and x.min() >= 1.0 - 1e-6):
            # costs below one step: a proper policy reaching the target so rarely that
            # its evaluation is lost to rounding (the previous target's policy can be
            # that bad here); start again from the policy moving closer
            if warm:
                warm = False
                h[:] = h0
                _ssp_initial_policy(ptr, ind, pr, nU, target, m, dist, h, rptr, rrows, pi)
                continue
            h[:] = np.inf  # not certified: the caller refuses
            return n
        h[:target] = x[:target]
        h[target] = 0.0
        h[target + 1:] = x[target:]
        exact = h.copy()
        old = pi.copy()
        _gauss_seidel(ptr, ind, pr, nU, target, m, order, h, 0.0, PI_SWEEPS, False)
        changed = _ssp_improve(ptr, ind, pr, nU, target, m, h, pi)
        if changed and not _is_proper(ptr, ind, nU, target, m, pi, rptr, rrows,
                                      np.empty(m, dtype=np.bool_),
                                      np.empty(m, dtype=np.int64)):
            # improving on the swept values may break properness; on the exact values
            # of a proper policy it cannot (Bertsekas & Tsitsiklis 1991)
            pi[:] = old
            h[:] = exact
            changed = _ssp_improve(ptr, ind, pr, nU, target, m, h, pi)
        if not changed:
            break
    return n
