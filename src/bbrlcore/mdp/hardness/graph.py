r"""Graph kernels of the diameter (:mod:`~bbrlcore.mdp.hardness.diameter_measure`): the
rows of the reachable states re-indexed, the reverse rows, breadth-first searches (graph
distances, sweep and target orders), strong connectivity (the diameter is finite), whether
a policy is proper (reaches the target), the diameter of a deterministic MDP (its hitting
times are graph distances) and the binary heap of the bounds' Dijkstra pass.

References
----------
Jaksch, T., Ortner, R. & Auer, P. (2010). Near-optimal regret bounds for reinforcement
learning. JMLR 11, 1563–1600 (the diameter).
Bertsekas, D. P. & Tsitsiklis, J. N. (1991). An analysis of stochastic shortest path
problems. Mathematics of Operations Research 16(3), 580–595.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _restrict(indptr, indices, probs, nU, keep):
    """The rows of the states in ``keep`` (closed under transitions), re-indexed."""
    nX = keep.shape[0]
    new = np.full(nX, -1, dtype=np.int64)
    m = 0
    for x in range(nX):
        if keep[x]:
            new[x] = m
            m += 1
    nnz = 0
    for x in range(nX):
        if keep[x]:
            nnz += indptr[x * nU + nU] - indptr[x * nU]
    ptr = np.zeros(m * nU + 1, dtype=np.int64)
    ind = np.empty(nnz, dtype=np.int64)
    pr = np.empty(nnz)
    k = 0
    for x in range(nX):
        if not keep[x]:
            continue
        for u in range(nU):
            r = x * nU + u
            for j in range(indptr[r], indptr[r + 1]):
                ind[k] = new[indices[j]]
                pr[k] = probs[j]
                k += 1
            ptr[new[x] * nU + u + 1] = k
    return ptr, ind, pr, m



@njit(cache=True)
def _reverse(ptr, ind, m, nU):
    """For each state y, the rows (x*nU + u) with y as a successor (CSR)."""
    nnz = ind.shape[0]
    rptr = np.zeros(m + 1, dtype=np.int64)
    for j in range(nnz):
        rptr[ind[j] + 1] += 1
    for y in range(m):
        rptr[y + 1] += rptr[y]
    fill = rptr[:m].copy()
    rrows = np.empty(nnz, dtype=np.int64)
    for r in range(m * nU):
        for j in range(ptr[r], ptr[r + 1]):
            y = ind[j]
            rrows[fill[y]] = r
            fill[y] += 1
    return rptr, rrows



@njit(cache=True)
def _bfs_to(target, rptr, rrows, nU, dist, order):
    """Reverse BFS from ``target``: graph distances in ``dist`` (-1 unreached) and the
    visiting order in ``order``; returns the number of states reached."""
    dist[:] = -1
    dist[target] = 0
    order[0] = target
    head = 0
    tail = 1
    while head < tail:
        y = order[head]
        head += 1
        for k in range(rptr[y], rptr[y + 1]):
            x = rrows[k] // nU
            if dist[x] < 0:
                dist[x] = dist[y] + 1
                order[tail] = x
                tail += 1
    return tail



@njit(cache=True)
def _is_proper(ptr, ind, nU, target, m, pi, rptr, rrows, seen, stack):
    """Whether every state reaches ``target`` in the graph of the policy ``pi``."""
    seen[:] = False
    seen[target] = True
    stack[0] = target
    top = 1
    n = 1
    while top > 0:
        top -= 1
        y = stack[top]
        for k in range(rptr[y], rptr[y + 1]):
            r = rrows[k]
            x = r // nU
            if not seen[x] and r == x * nU + pi[x]:
                seen[x] = True
                stack[top] = x
                top += 1
                n += 1
    return n == m



@njit(cache=True)
def _strongly_connected(ptr, ind, rptr, rrows, nU, m):
    """Whether every state reaches every other (graph of all actions): then every target
    is reached almost surely under some policy, and the diameter is finite."""
    seen = np.zeros(m, dtype=np.bool_)
    stack = np.empty(m, dtype=np.int64)
    for direction in range(2):
        seen[:] = False
        seen[0] = True
        stack[0] = 0
        top = 1
        n = 1
        while top > 0:
            top -= 1
            x = stack[top]
            if direction == 0:
                for j in range(ptr[x * nU], ptr[x * nU + nU]):
                    y = ind[j]
                    if not seen[y]:
                        seen[y] = True
                        stack[top] = y
                        top += 1
                        n += 1
            else:
                for k in range(rptr[x], rptr[x + 1]):
                    y = rrows[k] // nU
                    if not seen[y]:
                        seen[y] = True
                        stack[top] = y
                        top += 1
                        n += 1
        if n < m:
            return False
    return True



@njit(cache=True)
def _n_stochastic(ptr, nU, m):
    """The number of states with a row of more than one successor."""
    n = 0
    for s in range(m):
        for r in range(s * nU, s * nU + nU):
            if ptr[r + 1] - ptr[r] > 1:
                n += 1
                break
    return n



@njit(cache=True)
def _deterministic_diameter(rptr, rrows, nU, m):
    """The diameter of a deterministic MDP (one successor per row): the expected hitting
    times are the graph distances, so the largest distance of a reverse BFS to each
    target (strongly connected: every state is reached)."""
    dist = np.empty(m, dtype=np.int64)
    order = np.empty(m, dtype=np.int64)
    D = 0
    for t in range(m):
        _bfs_to(t, rptr, rrows, nU, dist, order)
        D = max(D, dist[order[m - 1]])
    return float(D)



@njit(cache=True)
def _breadth_first(ptr, ind, rptr, rrows, nU, m, start, both_ways):
    """Breadth-first order of the states from ``start``: along the transitions (its last
    state is one of the farthest in steps, the first target, often among the hardest to
    reach), or with ``both_ways`` along transitions taken either way (consecutive targets
    are neighbours, so each warm-starts the next)."""
    seen = np.zeros(m, dtype=np.bool_)
    order = np.empty(m, dtype=np.int64)
    seen[start] = True
    order[0] = start
    head = 0
    tail = 1
    while head < tail:
        x = order[head]
        head += 1
        for j in range(ptr[x * nU], ptr[x * nU + nU]):
            y = ind[j]
            if not seen[y]:
                seen[y] = True
                order[tail] = y
                tail += 1
        if both_ways:
            for k in range(rptr[x], rptr[x + 1]):
                y = rrows[k] // nU
                if not seen[y]:
                    seen[y] = True
                    order[tail] = y
                    tail += 1
    return order[:tail]



@njit(cache=True)
def _heap_push(heap, pos, key, n, v):
    """Insert ``v`` into (or move it up) the binary min-heap ``heap[:n]`` keyed by
    ``key``; ``pos[v]`` is its slot (-1 outside). Returns the new size."""
    if pos[v] < 0:
        heap[n] = v
        pos[v] = n
        i = n
        n += 1
    else:
        i = pos[v]
    while i > 0:
        p = (i - 1) // 2
        if key[heap[p]] <= key[heap[i]]:
            break
        a = heap[p]
        heap[p] = heap[i]
        heap[i] = a
        pos[heap[p]] = p
        pos[heap[i]] = i
        i = p
    return n



@njit(cache=True)
def _heap_pop(heap, pos, key, n):
    """Remove the smallest of the heap; returns ``(it, new size)``."""
    v = heap[0]
    pos[v] = -1
    n -= 1
    if n > 0:
        heap[0] = heap[n]
        pos[heap[0]] = 0
        i = 0
        while True:
            a = 2 * i + 1
            b = a + 1
            s = i
            if a < n and key[heap[a]] < key[heap[s]]:
                s = a
            if b < n and key[heap[b]] < key[heap[s]]:
                s = b
            if s == i:
                break
            w = heap[s]
            heap[s] = heap[i]
            heap[i] = w
            pos[heap[s]] = s
            pos[heap[i]] = i
            i = s
    return v, n
