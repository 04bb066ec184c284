"""The former dense diameter (bbrl 0.1's report): exact policy iteration per target with a
dense LU solve, O(nX^4). Kept as the reference that tests/test_hardness.py and
benchmarks/bench_hardness.py compare :mod:`bbrlcore.mdp.hardness` with."""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.mdp.solvers import _lu_solve


@njit(cache=True)
def _reachable(P, start):
    nX, nU, _ = P.shape
    seen = np.zeros(nX, dtype=np.bool_)
    stack = np.empty(nX, dtype=np.int64)
    top = 0
    seen[start] = True
    stack[0] = start
    top = 1
    while top > 0:
        top -= 1
        s = stack[top]
        for u in range(nU):
            for y in range(nX):
                if P[s, u, y] > 0.0 and not seen[y]:
                    seen[y] = True
                    stack[top] = y
                    top += 1
    return seen


@njit(cache=True)
def _hitting_times(P, target):
    """Least expected number of steps to reach ``target`` from every state (inf when the
    target cannot be reached), by policy iteration on the stochastic shortest path."""
    nX, nU, _ = P.shape
    # graph distance to the target (reverse BFS)
    dist = np.full(nX, -1, dtype=np.int64)
    dist[target] = 0
    frontier = np.empty(nX, dtype=np.int64)
    frontier[0] = target
    nf = 1
    level = 0
    while nf > 0:
        level += 1
        nxt = np.empty(nX, dtype=np.int64)
        nn = 0
        for s in range(nX):
            if dist[s] >= 0:
                continue
            hit = False
            for u in range(nU):
                for k in range(nf):
                    if P[s, u, frontier[k]] > 0.0:
                        hit = True
                        break
                if hit:
                    break
            if hit:
                dist[s] = level
                nxt[nn] = s
                nn += 1
        frontier = nxt
        nf = nn
    h = np.full(nX, np.inf)
    h[target] = 0.0
    # proper initial policy: the action most likely to move strictly closer
    pi = np.zeros(nX, dtype=np.int64)
    for s in range(nX):
        if dist[s] <= 0:
            continue
        best = -1.0
        for u in range(nU):
            p = 0.0
            for y in range(nX):
                if dist[y] >= 0 and dist[y] < dist[s]:
                    p += P[s, u, y]
            if p > best:
                best = p
                pi[s] = u
    idx = np.full(nX, -1, dtype=np.int64)
    m = 0
    for s in range(nX):
        if dist[s] > 0:
            idx[s] = m
            m += 1
    if m == 0:
        return h
    A = np.empty((m, m))
    b = np.empty(m)
    for _it in range(200):
        A[:, :] = 0.0
        for s in range(nX):
            i = idx[s]
            if i < 0:
                continue
            A[i, i] += 1.0
            b[i] = 1.0
            for y in range(nX):
                j = idx[y]
                if j >= 0:
                    A[i, j] -= P[s, pi[s], y]
        _lu_solve(A, b)
        for s in range(nX):
            if idx[s] >= 0:
                h[s] = b[idx[s]]
        changed = False
        for s in range(nX):
            if idx[s] < 0:
                continue
            cur = 1.0
            for y in range(nX):
                if P[s, pi[s], y] > 0.0:
                    cur += P[s, pi[s], y] * h[y]
            for u in range(nU):
                if u == pi[s]:
                    continue
                v = 1.0
                for y in range(nX):
                    if P[s, u, y] > 0.0:
                        v += P[s, u, y] * h[y]
                if v < cur * (1.0 - 1e-12):
                    cur = v
                    pi[s] = u
                    changed = True
        if not changed:
            break
    return h


@njit(cache=True)
def _diameter(P, start):
    nX = P.shape[0]
    reach = _reachable(P, start)
    diam = 0.0
    for t in range(nX):
        if not reach[t]:
            continue
        h = _hitting_times(P, t)
        for s in range(nX):
            if reach[s] and h[s] > diam:
                diam = h[s]
    n_unreach = 0
    for s in range(nX):
        if not reach[s]:
            n_unreach += 1
    return diam, n_unreach
