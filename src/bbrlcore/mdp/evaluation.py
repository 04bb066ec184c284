r"""Exact evaluation of a given policy on a test MDP: what an agent's *current* policy is worth.

An agent that keeps a current best policy π (its greedy policy, its sampled model's
optimal policy) can be scored by what π would collect if it were followed from now on —
an **expected** quantity, computed exactly from the test MDP, free of the luck of the
rewards actually drawn. Colosseum's expected regret (:mod:`bbrlcore.mdp.indicators`) is
this number, evaluated every ``log_every`` steps. This module evaluates a policy on the
MDP in bbrl's sparse-row layout (:mod:`bbrlcore.mdp.rows`: ``P[x, u, k]`` the probability
of the successor ``succ[x, u, k]``, ``k < nsucc[x, u]``; ``R[x, u, k]`` its mean reward),
with the expected rewards :math:`\bar r(x,u) = \sum_k P(x,u,k) R(x,u,k)`.

**Policies.** A policy is an array, either *stochastic* — float ``(nX, nU)``, the
probability of each action in each state (rows sum to 1) — or *deterministic* — int
``(nX,)``, the action of each state. An episodic policy may also depend on the step of
the episode: float ``(H, nX, nU)`` or int ``(H, nX)`` (Colosseum's episodic agents give
``(H, nX, nU)``). :func:`as_policy` checks and converts one.

**Episodic (H steps from a start).** Backward induction, exactly (H sweeps, no tolerance):

.. math::  V_H(x) = 0, \qquad
           V_h(x) = \sum_u \pi_h(x,u)\Bigl(\bar r(x,u)
                    + \sum_k P(x,u,k)\,V_{h+1}(\mathrm{succ}(x,u,k))\Bigr),

for :math:`h = H-1, \dots, 0`; :math:`V_0(x)` is the expected return of an episode started
in :math:`x` (:func:`episode_values`), and the expected return from a starting
distribution :math:`\mu_0` is :math:`\sum_x \mu_0(x) V_0(x)`. Cost: H times the number of
transitions (times the actions for a stochastic policy): about 4,000 multiply-adds for
DeepSea-10.

**Continuing (average reward).** Following π turns the MDP into a Markov chain
:math:`P_\pi(x,y) = \sum_u \pi(x,u) P(x,u,y)` paying :math:`r_\pi(x) = \sum_u \pi(x,u)
\bar r(x,u)`. Its **gain** from a start :math:`s` is the long-run reward per step,
:math:`g_\pi(s) = \lim_{T\to\infty} \frac1T \mathbb E_s \sum_{t<T} r_\pi(x_t)` — the
Cesàro limit, which exists for every finite chain, periodic ones included (the expected
reward of step t may oscillate; its running mean converges). It is computed exactly
(:func:`policy_gain`):

1. the states reachable from the start (breadth-first search on the positive entries);
2. their strongly connected components (Tarjan's algorithm); a component no transition
   leaves is a **closed (recurrent) class** C, every other reachable state is transient;
3. each closed class's stationary distribution :math:`\mu_C` (:math:`\mu_C P_C =
   \mu_C`, :math:`\sum \mu_C = 1`; unique, as C is irreducible, periodic or not) by the
   **GTH algorithm** (Grassmann, Taksar & Heyman 1985): Gaussian elimination of the
   states one by one in which every pivot is a sum of off-diagonal probabilities, so it
   never subtracts and keeps full relative accuracy; the class's gain is
   :math:`g_C = \mu_C \cdot r_\pi`;
4. **unichain from the start** (one closed class reachable): the gain is :math:`g_C`.
   **Multichain** (several reachable): the transient states' gains solve
   :math:`(I - P_{TT})\,g_T = P_{TC}\,g_C` (the chance of ending in each class, times its
   gain), one dense LU; the gain from a start distribution is the mixture.

Colosseum (``mdp/utils/markov_chain.py``) computes the same stationary distributions by
GTH, except in one case: when the start can reach **several** closed classes it gives
all of the start's weight to the *first* one networkx lists, not the absorption
probabilities of step 4. bbrl keeps the exact value there (the two agree whenever the
start reaches one closed class, which is every policy of the fixtures and the usual
case).

Large reachable chains (more than :data:`DENSE_MAX` states in a class or among the
transient states) are evaluated by sparse LU (:func:`bbrlcore.mdp.references.chain_gain`)
instead of the dense numba kernels: exact too, slower per call for small chains.

Examples
--------
Two states; action 1 moves from state 0 to state 1, which pays 1 a step and stays with
probability 0.9 (action 0 pays 0.05 in state 0 and stays).

>>> import numpy as np
>>> from bbrlcore.mdp import rows
>>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
>>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 0.05; P[0, 1, 1] = 1.0
>>> P[1, 0, 0] = 1.0; P[1, 1, 1] = 0.9; P[1, 1, 0] = 0.1; R[1, 1, 1] = 1.0
>>> lay = rows.full(2, 2)
>>> round(policy_gain(lay.succ, lay.nsucc, P, R, np.array([1, 1]), 0), 6)
0.818182
>>> policy_gain(lay.succ, lay.nsucc, P, R, np.array([0, 0]), 0)
0.05
>>> half = np.full((2, 2), 0.5)
>>> episode_values(lay.succ, lay.nsucc, P, R, half, 2).round(4).tolist()
[0.2625, 0.6662]

References
----------
W. K. Grassmann, M. I. Taksar, D. P. Heyman, "Regenerative analysis and steady state
distributions for Markov chains", Operations Research 33(5), 1985.
M. L. Puterman, "Markov Decision Processes", Wiley 1994, §8.2 (gain of a multichain
policy), §4.5 (backward induction).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError

#: Largest closed class (or set of transient states) solved by the dense numba kernels
#: (GTH, LU: cubic in its size); larger ones go to sparse LU (scipy).
DENSE_MAX = 400
#: How far a stochastic policy's row may sum from 1 (float32 policies, as Colosseum's).
POLICY_SUM_ATOL = 1e-5


# ---------------------------------------------------------------------------------------
# policies


def as_policy(policy: np.ndarray, n_states: int, n_actions: int,
              horizon: int | None = None, what: str = "policy") -> np.ndarray:
    """``policy`` checked and in the kernels' form: float64 ``(Hp, nX, nU)`` for a
    stochastic policy, int64 ``(Hp, nX)`` for a deterministic one, ``Hp`` = 1 for a
    stationary policy or H (``horizon``) for a step-dependent episodic one. Any problem
    is one :class:`BBRLError` naming ``what``.

    >>> as_policy(np.array([1, 0]), 2, 2).tolist()
    [[1, 0]]
    >>> as_policy(np.array([[0.5, 0.5], [1.0, 0.0]]), 2, 2).shape
    (1, 2, 2)
    >>> as_policy(np.array([[0.5, 0.6], [1.0, 0.0]]), 2, 2)
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: policy: the action probabilities of state 0 sum to 1.1, not 1
    """
    a = np.asarray(policy)
    if a.dtype.kind in "iu":
        if a.ndim == 1:
            a = a[None]
        if a.ndim != 2 or a.shape[1] != n_states or (
                a.shape[0] != 1 and a.shape[0] != horizon):
            raise BBRLError(f"{what}: a deterministic policy of shape {np.shape(policy)}; "
                            f"expected ({n_states},) or (H, {n_states}) with H = {horizon}")
        if a.size and (a.min() < 0 or a.max() >= n_actions):
            raise BBRLError(f"{what}: actions must be in [0, {n_actions}); got "
                            f"{int(a.min())}..{int(a.max())}")
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind not in "f":
        raise BBRLError(f"{what}: expected an int array (actions) or a float array "
                        f"(action probabilities), got dtype {a.dtype}")
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3 or a.shape[1:] != (n_states, n_actions) or (
            a.shape[0] != 1 and a.shape[0] != horizon):
        raise BBRLError(f"{what}: a stochastic policy of shape {np.shape(policy)}; expected "
                        f"({n_states}, {n_actions}) or (H, {n_states}, {n_actions}) with "
                        f"H = {horizon}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    code, h, x, total = _check_stochastic(a, POLICY_SUM_ATOL)
    if code == 1:
        raise BBRLError(f"{what}: action probabilities must be finite and >= 0")
    if code == 2:
        where = f"state {x}" if a.shape[0] == 1 else f"state {x} at step {h}"
        raise BBRLError(f"{what}: the action probabilities of {where} sum to "
                        f"{total:.6g}, not 1")
    return a


@njit(cache=True, error_model="numpy")
def _check_stochastic(a, atol):
    """Kernel: (0, ...) when every row of ``a`` (Hp, nX, nU) is a distribution; (1, h, x,
    0) at a negative or non-finite entry; (2, h, x, sum) at a row not summing to 1."""
    Hp, nX, nU = a.shape
    for h in range(Hp):
        for x in range(nX):
            s = 0.0
            for u in range(nU):
                v = a[h, x, u]
                if not (v >= 0.0) or v == np.inf:
                    return 1, h, x, 0.0
                s += v
            if abs(s - 1.0) > atol:
                return 2, h, x, s
    return 0, 0, 0, 0.0


def expected_rewards(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray,
                     R: np.ndarray) -> np.ndarray:
    """(nX, nU): :math:`\\bar r(x,u) = \\sum_k P(x,u,k) R(x,u,k)` over each row (``R``
    may be ``(nX, nU)`` already: the expected rewards themselves, returned as float64)."""
    R = np.asarray(R, dtype=np.float64)
    if R.ndim == 2:
        return np.ascontiguousarray(R)
    mask = np.arange(succ.shape[2]) < nsucc[..., None]
    return np.ascontiguousarray(np.where(mask, np.asarray(P, np.float64) * R, 0.0).sum(axis=2))


def _rows(succ, nsucc, P):
    succ = np.ascontiguousarray(succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(nsucc, dtype=np.int64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    if succ.ndim != 3 or P.shape != succ.shape or nsucc.shape != succ.shape[:2]:
        raise BBRLError(f"sparse rows of shapes succ {succ.shape}, nsucc {nsucc.shape}, "
                        f"P {P.shape}: expected (nX, nU, K), (nX, nU), (nX, nU, K)")
    return succ, nsucc, P


# ---------------------------------------------------------------------------------------
# episodic: backward induction


@njit(cache=True, error_model="numpy")
def episode_values_stochastic(succ, nsucc, P, rbar, pi, H, V):
    """Kernel: ``V`` (nX,) ← :math:`V_0` of the stochastic policy ``pi`` (Hp, nX, nU),
    Hp = 1 (stationary) or H, over ``H`` steps (module docstring); ``V`` is scratch
    too (a second buffer is allocated)."""
    nX, nU = nsucc.shape
    Hp = pi.shape[0]
    W = np.zeros(nX)
    V[:] = 0.0
    for i in range(H):
        h = H - 1 - i
        hp = h if Hp > 1 else 0
        for x in range(nX):
            acc = 0.0
            for u in range(nU):
                w = pi[hp, x, u]
                if w == 0.0:
                    continue
                q = rbar[x, u]
                for k in range(nsucc[x, u]):
                    q += P[x, u, k] * V[succ[x, u, k]]
                acc += w * q
            W[x] = acc
        V[:] = W
    return V


@njit(cache=True, error_model="numpy")
def episode_values_deterministic(succ, nsucc, P, rbar, pi, H, V):
    """Kernel: as :func:`episode_values_stochastic` for a deterministic ``pi`` (Hp, nX)."""
    nX = nsucc.shape[0]
    Hp = pi.shape[0]
    W = np.zeros(nX)
    V[:] = 0.0
    for i in range(H):
        h = H - 1 - i
        hp = h if Hp > 1 else 0
        for x in range(nX):
            u = pi[hp, x]
            q = rbar[x, u]
            for k in range(nsucc[x, u]):
                q += P[x, u, k] * V[succ[x, u, k]]
            W[x] = q
        V[:] = W
    return V


def episode_values(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                   policy: np.ndarray, horizon: int) -> np.ndarray:
    """The expected return :math:`V_0(x)` (nX,) of an episode of ``horizon`` steps started
    in each state ``x``, following ``policy`` (:func:`as_policy`: stochastic or
    deterministic, stationary or one per step), exactly by backward induction.

    >>> import numpy as np
    >>> from bbrlcore.mdp import rows
    >>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 1.0; P[0, 1, 1] = 1.0
    >>> P[1, :, 1] = 1.0; R[1, :, 1] = 3.0
    >>> lay = rows.full(2, 2)
    >>> episode_values(lay.succ, lay.nsucc, P, R, np.array([[1, 0], [0, 0]]), 2).tolist()
    [3.0, 6.0]
    """
    H = _horizon(horizon)
    succ, nsucc, P = _rows(succ, nsucc, P)
    nX, nU = nsucc.shape
    rbar = expected_rewards(succ, nsucc, P, R)
    pi = as_policy(policy, nX, nU, H)
    V = np.zeros(nX)
    if pi.ndim == 2:
        return episode_values_deterministic(succ, nsucc, P, rbar, pi, H, V)
    return episode_values_stochastic(succ, nsucc, P, rbar, pi, H, V)


def _horizon(H) -> int:
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise BBRLError(f"horizon={H!r}: must be an integer >= 1")
    return int(H)


# ---------------------------------------------------------------------------------------
# continuing: the gain of a policy's chain


@njit(cache=True, error_model="numpy")
def policy_chain(succ, nsucc, P, rbar, pi_s, pi_d, stochastic, indptr, indices, probs, r):
    """Kernel: the chain of a policy in CSR form (duplicate successors merged, zero
    entries left out): ``indptr`` (nX+1,), ``indices`` / ``probs`` (capacity ≥ the
    number of transitions), ``r`` (nX,) its rewards; returns the number of entries.
    ``pi_s`` (nX, nU) is used when ``stochastic``, else ``pi_d`` (nX,)."""
    nX, nU = nsucc.shape
    slot = np.full(nX, -1, dtype=np.int64)
    n = 0
    indptr[0] = 0
    for x in range(nX):
        start = n
        acc = 0.0
        for u in range(nU):
            if stochastic:
                w = pi_s[x, u]
            else:
                w = 1.0 if pi_d[x] == u else 0.0
            if w == 0.0:
                continue
            acc += w * rbar[x, u]
            for k in range(nsucc[x, u]):
                p = w * P[x, u, k]
                if p <= 0.0:
                    continue
                y = succ[x, u, k]
                j = slot[y]
                if j < start:
                    slot[y] = n
                    indices[n] = y
                    probs[n] = p
                    n += 1
                else:
                    probs[j] += p
        r[x] = acc
        indptr[x + 1] = n
    return n


@njit(cache=True, error_model="numpy")
def reachable_from(indptr, indices, start_states, seen, order):
    """Kernel: mark (``seen``) the states reachable from ``start_states``; their list in
    breadth-first order in ``order``; returns how many."""
    nX = indptr.shape[0] - 1
    for i in range(nX):
        seen[i] = False
    n = 0
    for s in start_states:
        if not seen[s]:
            seen[s] = True
            order[n] = s
            n += 1
    head = 0
    while head < n:
        x = order[head]
        head += 1
        for j in range(indptr[x], indptr[x + 1]):
            y = indices[j]
            if not seen[y]:
                seen[y] = True
                order[n] = y
                n += 1
    return n


@njit(cache=True, error_model="numpy")
def strong_components(indptr, indices, seen, comp):
    """Kernel: Tarjan's strongly connected components of the states marked ``seen``
    (iterative, no recursion): ``comp[x]`` their component id (-1 elsewhere); returns
    the number of components."""
    nX = indptr.shape[0] - 1
    index = np.full(nX, -1, dtype=np.int64)
    low = np.zeros(nX, dtype=np.int64)
    onstack = np.zeros(nX, dtype=np.bool_)
    stack = np.empty(nX, dtype=np.int64)
    call = np.empty(nX, dtype=np.int64)   # DFS call stack: state
    edge = np.empty(nX, dtype=np.int64)   # and the next edge to look at
    for x in range(nX):
        comp[x] = -1
    counter = 0
    sp = 0
    n_comp = 0
    for root in range(nX):
        if not seen[root] or index[root] >= 0:
            continue
        cp = 0
        call[0] = root
        edge[0] = indptr[root]
        index[root] = counter
        low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
        onstack[root] = True
        while cp >= 0:
            v = call[cp]
            j = edge[cp]
            if j < indptr[v + 1]:
                edge[cp] = j + 1
                w = indices[j]
                if index[w] < 0:
                    cp += 1
                    call[cp] = w
                    edge[cp] = indptr[w]
                    index[w] = counter
                    low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    onstack[w] = True
                elif onstack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                if low[v] == index[v]:
                    while True:
                        sp -= 1
                        w = stack[sp]
                        onstack[w] = False
                        comp[w] = n_comp
                        if w == v:
                            break
                    n_comp += 1
                cp -= 1
                if cp >= 0:
                    u = call[cp]
                    if low[v] < low[u]:
                        low[u] = low[v]
    return n_comp


@njit(cache=True, error_model="numpy")
def gth_stationary(A):
    """Kernel: the stationary distribution of the irreducible stochastic matrix ``A``
    (m, m) by the GTH algorithm (module docstring); ``A`` is overwritten. Only the
    off-diagonal entries are used (a row's diagonal is 1 minus the others)."""
    m = A.shape[0]
    for n in range(m - 1, 0, -1):
        s = 0.0
        for j in range(n):
            s += A[n, j]
        if s <= 0.0:  # not irreducible: the caller passes closed classes only
            s = 1e-300
        for i in range(n):
            A[i, n] /= s
        for i in range(n):
            a = A[i, n]
            if a == 0.0:
                continue
            for j in range(n):
                A[i, j] += a * A[n, j]
    mu = np.zeros(m)
    mu[0] = 1.0
    for n in range(1, m):
        acc = 0.0
        for i in range(n):
            acc += mu[i] * A[i, n]
        mu[n] = acc
    mu /= mu.sum()
    return mu


@njit(cache=True, error_model="numpy")
def _closed_classes(indptr, indices, comp, n_comp, n_members):
    """Kernel: which components are closed (no edge leaves them); ``n_members`` receives
    each component's number of states."""
    closed = np.ones(n_comp, dtype=np.bool_)
    nX = indptr.shape[0] - 1
    for x in range(nX):
        c = comp[x]
        if c < 0:
            continue
        n_members[c] += 1
        for j in range(indptr[x], indptr[x + 1]):
            if comp[indices[j]] != c:
                closed[c] = False
    return closed


@njit(cache=True, error_model="numpy")
def chain_gain_from(indptr, indices, probs, r, start_states, start_probs, dense_max, g):
    """Kernel: the gain of the chain (CSR ``indptr``, ``indices``, ``probs``; rewards
    ``r``) from the start distribution (``start_states`` with ``start_probs``), exactly
    (module docstring, steps 1-4); ``g`` (nX,) receives the gain of every reachable
    state (NaN elsewhere). Returns the gain, or NaN when a class or the transient set is
    larger than ``dense_max`` (the caller then uses sparse LU)."""
    nX = indptr.shape[0] - 1
    seen = np.zeros(nX, dtype=np.bool_)
    order = np.empty(nX, dtype=np.int64)
    n_reach = reachable_from(indptr, indices, start_states, seen, order)
    comp = np.empty(nX, dtype=np.int64)
    n_comp = strong_components(indptr, indices, seen, comp)
    n_members = np.zeros(n_comp, dtype=np.int64)
    members = np.empty(nX, dtype=np.int64)
    closed = _closed_classes(indptr, indices, comp, n_comp, n_members)
    # group the reachable states by component
    first = np.zeros(n_comp + 1, dtype=np.int64)
    for c in range(n_comp):
        first[c + 1] = first[c] + n_members[c]
    fill = first[:n_comp].copy()
    for i in range(n_reach):
        x = order[i]
        c = comp[x]
        members[fill[c]] = x
        fill[c] += 1
    local = np.full(nX, -1, dtype=np.int64)
    for i in range(nX):
        g[i] = np.nan
    n_closed = 0
    n_transient = 0
    for c in range(n_comp):
        m = n_members[c]
        if not closed[c]:
            n_transient += m
            continue
        n_closed += 1
        if m > dense_max:
            return np.nan
        if m == 1:
            g[members[first[c]]] = r[members[first[c]]]
            continue
        for i in range(m):
            local[members[first[c] + i]] = i
        A = np.zeros((m, m))
        for i in range(m):
            x = members[first[c] + i]
            for j in range(indptr[x], indptr[x + 1]):
                A[i, local[indices[j]]] += probs[j]
        mu = gth_stationary(A)
        gc = 0.0
        for i in range(m):
            gc += mu[i] * r[members[first[c] + i]]
        for i in range(m):
            g[members[first[c] + i]] = gc
    if n_transient > 0:
        # one closed class (or classes of one gain): every transient state has its gain
        lo = np.inf
        hi = -np.inf
        for c in range(n_comp):
            if closed[c]:
                v = g[members[first[c]]]
                lo = min(lo, v)
                hi = max(hi, v)
        if n_closed == 1 or hi - lo == 0.0:
            for c in range(n_comp):
                if not closed[c]:
                    for i in range(n_members[c]):
                        g[members[first[c] + i]] = lo
        else:
            if n_transient > dense_max:
                return np.nan
            T = np.empty(n_transient, dtype=np.int64)
            t = 0
            for c in range(n_comp):
                if not closed[c]:
                    for i in range(n_members[c]):
                        x = members[first[c] + i]
                        T[t] = x
                        local[x] = t
                        t += 1
            A = np.eye(n_transient)
            b = np.zeros(n_transient)
            for i in range(n_transient):
                x = T[i]
                for j in range(indptr[x], indptr[x + 1]):
                    y = indices[j]
                    if closed[comp[y]]:
                        b[i] += probs[j] * g[y]
                    else:
                        A[i, local[y]] -= probs[j]
            gT = np.linalg.solve(A, b)
            for i in range(n_transient):
                g[T[i]] = gT[i]
    out = 0.0
    for i in range(start_states.shape[0]):
        out += start_probs[i] * g[start_states[i]]
    return out


def _start(start, n_states: int) -> tuple[np.ndarray, np.ndarray]:
    """``(states, probabilities)`` of a start: a state index or a distribution (nX,)."""
    if isinstance(start, (int, np.integer)) and not isinstance(start, bool):
        if not 0 <= int(start) < n_states:
            raise BBRLError(f"start={int(start)}: must be a state in [0, {n_states})")
        return np.array([int(start)], np.int64), np.ones(1)
    d = np.asarray(start, dtype=np.float64)
    if d.shape != (n_states,) or (d < 0).any() or abs(float(d.sum()) - 1.0) > 1e-6:
        raise BBRLError(f"start: expected a state index or a distribution over the "
                        f"{n_states} states (>= 0, summing to 1)")
    nz = np.flatnonzero(d > 0)
    return nz.astype(np.int64), d[nz] / d[nz].sum()


class ChainScratch:
    """Work arrays of :func:`policy_gain` for one MDP (reused across evaluations)."""

    def __init__(self, n_states: int, n_transitions: int) -> None:
        self.indptr = np.zeros(n_states + 1, dtype=np.int64)
        self.indices = np.zeros(max(n_transitions, 1), dtype=np.int64)
        self.probs = np.zeros(max(n_transitions, 1))
        self.r = np.zeros(n_states)
        self.g = np.zeros(n_states)


_NO_STOCHASTIC = np.zeros((1, 1))
_NO_DETERMINISTIC = np.zeros(1, dtype=np.int64)


def policy_gain(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                policy: np.ndarray, start, *, rbar: np.ndarray | None = None,
                scratch: ChainScratch | None = None) -> float:
    """The gain (long-run expected reward per step) of the stationary ``policy``
    (:func:`as_policy`) from ``start`` (a state, or a distribution over the states),
    exactly (module docstring: reachable states, closed classes, GTH, absorption).

    ``rbar`` (the expected rewards, :func:`expected_rewards`) and ``scratch`` may be
    passed to save their computation when evaluating many policies of one MDP.

    >>> import numpy as np
    >>> from bbrlcore.mdp import rows
    >>> P = np.zeros((3, 1, 3)); R = np.zeros((3, 1, 3))
    >>> P[0, 0, 1] = P[0, 0, 2] = 0.5                    # 0 -> 1 or 2, for ever there
    >>> P[1, 0, 1] = 1.0; R[1, 0, 1] = 1.0; P[2, 0, 2] = 1.0
    >>> lay = rows.full(3, 1)
    >>> [policy_gain(lay.succ, lay.nsucc, P, R, np.zeros(3, int), s) for s in (0, 1, 2)]
    [0.5, 1.0, 0.0]
    """
    succ, nsucc, P = _rows(succ, nsucc, P)
    nX, nU = nsucc.shape
    if rbar is None:
        rbar = expected_rewards(succ, nsucc, P, R)
    pi = as_policy(policy, nX, nU, None)
    states, probs = _start(start, nX)
    if scratch is None:
        scratch = ChainScratch(nX, int(nsucc.sum()))
    if pi.ndim == 2:
        policy_chain(succ, nsucc, P, rbar, _NO_STOCHASTIC, pi[0], False, scratch.indptr,
                     scratch.indices, scratch.probs, scratch.r)
    else:
        policy_chain(succ, nsucc, P, rbar, pi[0], _NO_DETERMINISTIC, True, scratch.indptr,
                     scratch.indices, scratch.probs, scratch.r)
    out = chain_gain_from(scratch.indptr, scratch.indices, scratch.probs, scratch.r,
                          states, probs, DENSE_MAX, scratch.g)
    if np.isnan(out):  # a large class: sparse LU
        from scipy.sparse import csr_matrix

        from bbrlcore.mdp.references import chain_gain

        n = int(scratch.indptr[-1])
        M = csr_matrix((scratch.probs[:n].copy(), scratch.indices[:n].copy(),
                        scratch.indptr.copy()), shape=(nX, nX))
        g, _ = chain_gain(M, scratch.r.copy())
        out = float(probs @ g[states])
    return float(out)
