r"""The diameter of an MDP: the largest least expected number of steps between two of its
states (Jaksch, Ortner & Auer 2010; Colosseum's ``hardness/measures/diameter``), exact
and sparse. The solve of one target is :mod:`~bbrlcore.mdp.hardness.hitting_times`, the
graph kernels :mod:`~bbrlcore.mdp.hardness.graph`.

**Diameter** (Jaksch, Ortner & Auer 2010, Def. 1; Colosseum App. A.4):

.. math::  D = \max_{s \ne e} \; \min_\pi \; \mathbb{E}\bigl[T^\pi_{s\to e}\bigr],

the largest, over ordered pairs of distinct states, of the least expected number of steps
from one to the other. The pairs range over the states
**reachable from the initial state** (the others are counted and reported); ``inf`` when
some reachable state cannot reach some other one almost surely. For each target ``e`` the
inner minimum is a stochastic shortest path (SSP) whose optimal costs solve the Bellman
equation of App. A.4, Eq. (4),

.. math::  T^*_{s\to e} = 1 + \min_u \sum_{y \ne e} P(y\mid s,u)\, T^*_{y\to e},
           \qquad T^*_{e\to e} = 0

(Eq. (4) writes :math:`P(e\mid s,a) + \sum_{s'} P(s'\mid s,a)(1+T^*_{s'\to e})`, whose sum
must run over :math:`s' \ne e`; both read as above). This is undiscounted: no γ enters
the diameter.

Algorithm and cost
------------------
*Diameter* (:func:`diameter_rows`): the MDP is first restricted to the states reachable
from the initial state (a closed set: every path from a reachable state stays in it, so
nothing else matters). If the graph of all actions on them is not strongly connected,
some reachable state cannot reach another one: the diameter is ``inf`` (returned at
once). Otherwise, for every target e the policy moving closer in graph distance is
proper, every improper policy has infinite cost, and the SSP theory applies (Bertsekas &
Tsitsiklis 1991): value iteration converges from any start, policy improvement keeps a
policy proper, and :math:`T g \le g \Rightarrow T^* \le g`,
:math:`T g \ge g \Rightarrow T^* \ge g` (T the Bellman operator above). A
deterministic MDP (one successor per row) needs no solve: its hitting times are the graph
distances of a breadth-first search per target. Otherwise, for a target e:

1. a reverse breadth-first search from e gives the graph distance :math:`d(s)` to e and
   the sweep order (nearest first). The start is a lower bound: the largest of
   :math:`d` and, for each of the last :data:`WARM_STARTS` targets a solved,
   :math:`T^*_{s\to a} - T^*_{e\to a}` (triangle inequality; exact for every s whose
   best way to a passes through e: along a chain, half the states).
2. **Symmetric Gauss–Seidel** sweeps (BFS order, then back) whose update solves each
   state's self-loops exactly (:func:`_q_cost_self`: a RiverSwim state that stays put
   60 % of the time no longer needs dozens of sweeps). On a deterministic MDP, or a
   chain warm-started from its neighbour, one sweep proves the start exact.
3. **Certificate.** With :math:`\delta(s) = (Th)(s) - h(s)` on the states ≠ e and
   :math:`\delta_{\max} < 1`, since :math:`T(\alpha h) = \alpha\,Th + 1 - \alpha` for
   α > 0, :math:`\alpha = 1/(1-\delta_{\max})` gives :math:`T(\alpha h) \le \alpha h`
   and :math:`\beta = 1/(1-\delta_{\min})` gives :math:`T(\beta h) \ge \beta h`; hence
   :math:`\beta h \le T^* \le \alpha h`, a *relative* error of at most
   :math:`\max(\delta_{\max}/(1-\delta_{\max}),\, -\delta_{\min}/(1-\delta_{\min}))`.
   Iteration stops once this is at most ``rtol`` (default 1e-12) or at the rounding
   level (≈ 16 ε max h); the bound is returned.
4. When the observed contraction of the sweeps says they will not certify within
   :data:`GS_BUDGET` sweeps (slowly mixing MDPs: FrozenLake's holes, DeepSea's resets),
   **policy iteration** finishes the job: exact evaluations by a sparse LU solve (dense
   below :data:`DENSE_MAX_STATES` states), each followed by :data:`PI_SWEEPS` sweeps
   (optimistic policy iteration; an improvement that would break properness is made on
   the exact values instead), from the previous target's optimal policy when proper
   (:func:`_warm_policy`), then the same certificate. A **nearly deterministic** MDP (at
   most :data:`REDUCED_MAX_STATES` states with a stochastic row, such as Taxi, whose
   random respawns of the passenger make sweeps crawl) first tries policy iteration whose
   evaluation follows each deterministic row to the first state with a stochastic row
   and solves the small dense system of those states (:func:`_reduced_policy_iteration`).
5. **Targets that cannot change the maximum are not solved.** A solved target r gives
   every target t reachable from it an upper bound :math:`M(t) \le M(r) + c`, with
   :math:`M(t) = \max_s T^*_{s\to t}` and c the cost of "reach r, then walk to t,
   returning to the last state reached on each failure" (:func:`_propagate_bounds`, a
   Dijkstra pass); a target is skipped once its bound is at most the largest
   :math:`M` found so far, or once its own sweeps certify :math:`\alpha \max h` below
   it. The targets are taken in the order that makes this bite:
   :data:`DIAMETER_PICKS` targets of largest bound first (the first, the state a
   breadth-first search from the initial state reaches last), then the others
   breadth-first from the hardest found (each warm-started from its neighbours). A
   RiverSwim of 5,000 states: 8 targets solved; DeepSea-70 with ``p_rand`` 0.5: 3.

Cost: O(n_t · nnz · k) for n_t solved targets and k sweeps each, plus one sparse LU per
policy evaluation where the sweeps do not converge, against O(m⁴) for m dense policy
iterations (one per target, O(m³) each) as the report first did. Figures:
``benchmarks/README.md`` (hardness).

References
----------
Jaksch, T., Ortner, R. & Auer, P. (2010). Near-optimal regret bounds for reinforcement
learning. JMLR 11, 1563–1600 (the diameter).
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
Bertsekas, D. P. & Tsitsiklis, J. N. (1991). An analysis of stochastic shortest path
problems. Mathematics of Operations Research 16(3), 580–595.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from bbrlcore.mdp.hardness.graph import (
    _breadth_first,
    _deterministic_diameter,
    _heap_pop,
    _heap_push,
    _n_stochastic,
    _restrict,
    _reverse,
    _strongly_connected,
)
from bbrlcore.mdp.hardness.hitting_times import (
    REDUCED_MAX_STATES,
    _certificate,
    _gauss_seidel,
    _greedy_ssp,
    _policy_iteration,
    _reduced_policy_iteration,
    _sparse_policy_iteration,
    _ssp_start,
)
from bbrlcore.mdp.hardness.sparse import (
    _EPS,
    REACH_TOLERANCE,
    _as_model,
    drop_below,
    reachable_states,
    sparse_rows,
)

#: Certified relative accuracy of every expected hitting time behind the diameter.
DIAMETER_RTOL = 1e-12

#: Largest certified relative error of the diameter that :func:`measures` accepts besides
#: the rounding level (64 ε D: hitting times of 1e11 steps are known to about 1e-3).
DIAMETER_MAX_RTOL = 1e-6

#: Safety cap on value-iteration sweeps.
MAX_SWEEPS = 10_000_000

#: Largest reachable set whose diameter targets are solved by a dense LU policy iteration
#: (above it, a sparse LU: :func:`scipy.sparse.linalg.splu`).
DENSE_MAX_STATES = 100

_METHODS = {"auto": 0, "vi": 1, "pi": 2}



@njit(cache=True)
def _propagate_bounds(ptr, ind, pr, nU, m, a, slot_a, Hs, slot, scale, Mroot, ub, root,
                      off, solved, heap, pos):
    r"""Target ``a`` solved, its costs :math:`T^*_{s\to a} \le` ``scale[a]``·``h[s]``
    with ``h = Hs[slot_a]`` (``slot_a < 0``: not kept): tighten the upper bounds
    ``ub[t]`` of :math:`M(t) = \max_s T^*_{s\to t}` of the unsolved targets, the
    certificate that lets :func:`diameter_rows` skip a target. Returns ``M(a)``.

    A bound of ``t`` is kept as a root ``r = root[t]`` (a solved target) and an offset
    ``c = off[t]``: :math:`T^*_{s\to t} \le T^*_{s\to r} + c` for every s, so
    :math:`M(t) \le M(r) + c`. Along a transition ``t → t2`` of probability ``q`` (action
    ``u``, self-loop ``p``): go to ``t``, play ``u``; reaching ``t2`` ends, any other
    successor ``y`` returns to ``t`` and retries, so

    .. math::  c_2 = c + \bigl(1 + \sum_{y \notin\{t, t_2\}} P(y|t,u)\,
               (T^*_{y\to r} + c)\bigr) / q ,

    increasing in ``c``, with ``c = 0`` at ``r`` itself: a Dijkstra pass from ``a`` gives
    the least bounds of these rules for root ``a``. A root whose costs are not kept
    (memory) propagates with ``M(r)`` in place of :math:`T^*_{y\to r}`."""
    M = 0.0
    if slot_a >= 0:
        for s in range(m):
            if Hs[slot_a, s] > M:
                M = Hs[slot_a, s]
    else:
        M = Mroot[a]
    M *= scale[a]
    Mroot[a] = M
    ub[a] = M
    root[a] = a
    off[a] = 0.0
    n = _heap_push(heap, pos, ub, 0, a)
    while n > 0:
        t, n = _heap_pop(heap, pos, ub, n)
        r = root[t]
        c = off[t]
        sl = slot[r]
        sc = scale[r]
        for u in range(nU):
            row = t * nU + u
            p = 0.0
            tot = 0.0
            for j in range(ptr[row], ptr[row + 1]):
                y = ind[j]
                if y == t:
                    p += pr[j]
                elif sl >= 0:
                    tot += pr[j] * sc * Hs[sl, y]
                else:
                    tot += pr[j] * Mroot[r]
            for j in range(ptr[row], ptr[row + 1]):
                t2 = ind[j]
                if t2 == t or solved[t2]:
                    continue
                q = pr[j]
                rest = tot - q * (sc * Hs[sl, t2] if sl >= 0 else Mroot[r])
                c2 = c + (1.0 + rest + max(0.0, 1.0 - q - p) * c) / q
                b2 = Mroot[r] + c2
                if b2 < ub[t2]:
                    ub[t2] = b2
                    root[t2] = r
                    off[t2] = c2
                    n = _heap_push(heap, pos, ub, n, t2)
    return M



@njit(cache=True)
def _pick_largest(ub, solved, L):
    """The unsolved target of largest upper bound above ``L`` (-1: none)."""
    best = -1.0
    bt = -1
    for t in range(ub.shape[0]):
        if not solved[t] and ub[t] > L and ub[t] > best:
            best = ub[t]
            bt = t
    return bt



#: Targets of :func:`diameter_rows` picked by their largest upper bound (the likely
#: hardest) before the others are visited in breadth-first order.
DIAMETER_PICKS = 3

#: Gauss–Seidel sweeps per target (``"auto"``) before policy iteration takes over.
GS_BUDGET = 200

#: Solutions of earlier targets kept to warm-start the next ones.
WARM_STARTS = 4

#: Bytes of solved targets' costs kept for the bounds of :func:`_propagate_bounds`.
BOUND_MEMORY = 64 * 2**20



def diameter_rows(indptr: np.ndarray, indices: np.ndarray, probs: np.ndarray, nU: int,
                  start: int, *, rtol: float = DIAMETER_RTOL, method: str = "auto",
                  max_sweeps: int = MAX_SWEEPS, prune: bool = True) -> Diameter:
    """:func:`diameter` of a model given by its sparse rows (:func:`sparse_rows`,
    :func:`csr_of_rows`): what :func:`measures` and :func:`hardness_table` use, without
    the dense array. The algorithm is in the module docstring; ``prune=False`` solves
    every target (the tests' check of the pruning)."""
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}")
    code = _METHODS[method]
    ip, ix, pb = drop_below(indptr, indices, probs, REACH_TOLERANCE)
    reach = reachable_states(ip, ix, nU, int(start))
    ptr, ind, pr, m = _restrict(ip, ix, pb, nU, reach)
    n_unreach = int(reach.shape[0] - m)
    rptr, rrows = _reverse(ptr, ind, m, nU)
    if not _strongly_connected(ptr, ind, rptr, rrows, nU, m):
        return Diameter(np.inf, n_unreach, 0.0, 0, 0, 0)
    if m == 1:
        return Diameter(0.0, n_unreach, 0.0, 0, 0, 0)
    x0 = int(np.count_nonzero(reach[:start])) if start >= 0 else 0
    n_stoch = _n_stochastic(ptr, nU, m)
    if n_stoch == 0 and code == 0:  # deterministic: hitting times are graph distances
        return Diameter(_deterministic_diameter(rptr, rrows, nU, m), n_unreach, 0.0, 0, 0,
                        m)
    reduced = code == 0 and 0 < n_stoch <= REDUCED_MAX_STATES
    budget = min(GS_BUDGET, max_sweeps) if code == 0 else (max_sweeps if code == 1 else 0)
    dist = np.empty(m, dtype=np.int64)
    order = np.empty(m, dtype=np.int64)
    h = np.empty(m)
    W = np.empty((WARM_STARTS, m))
    n_warm = n_stored = 0
    ub = np.full(m, np.inf)
    solved = np.zeros(m, dtype=np.bool_)
    # the bounds' roots: their costs (as many as BOUND_MEMORY holds), scale, M
    Hs = np.empty((max(1, min(m, BOUND_MEMORY // (8 * m))) if prune else 1, m))
    slot = np.full(m, -1, dtype=np.int64)
    n_kept = 0
    scale = np.ones(m)
    Mroot = np.zeros(m)
    root = np.full(m, -1, dtype=np.int64)
    off = np.zeros(m)
    heap = np.empty(m, dtype=np.int64)
    pos = np.full(m, -1, dtype=np.int64)
    L = 0.0
    err = 0.0
    sweeps = n_pi = n_solved = n_swept = 0
    pi = np.zeros(m, dtype=np.int64)
    prev_pi = np.zeros(m, dtype=np.int64)
    prev_t = -1
    gs_failed = False
    visit = None
    vi = 0
    t = int(_breadth_first(ptr, ind, rptr, rrows, nU, m, x0, False)[-1])
    while t >= 0:
        _ssp_start(t, rptr, rrows, nU, dist, order, h, W, n_warm)
        bound = np.inf
        if reduced and _reduced_policy_iteration(ptr, ind, pr, nU, t, m, dist, h):
            n_pi += 1
            bound = _certificate(ptr, ind, pr, nU, t, m, h)
        floor = 16.0 * _EPS * max(1.0, h.max())
        if bound > max(rtol, floor) and code != 2:
            if reduced:
                _ssp_start(t, rptr, rrows, nU, dist, order, h, W, n_warm)
            # after a target the sweeps could not finish, only a short try
            k, bound = _gauss_seidel(ptr, ind, pr, nU, t, m, order, h, rtol,
                                     min(budget, 10) if gs_failed else budget, code == 0)
            sweeps += k
            floor = 16.0 * _EPS * max(1.0, h.max())
        swept = False
        if bound > max(rtol, floor) and code == 0 and prune and L > 0.0:
            # not converged, but the sweeps (from below: h <= T*) may already prove
            # M(t) <= (1 + up) max h <= L (the certificate's upper side): no solve
            up = _certificate(ptr, ind, pr, nU, t, m, h)
            swept = (1.0 + up) * h.max() <= L
            if swept:
                bound = up
        if bound > max(rtol, floor) and code != 1 and not swept:
            if m <= DENSE_MAX_STATES:
                _policy_iteration(ptr, ind, pr, nU, t, m, dist, h, rptr, rrows)
            else:
                _sparse_policy_iteration(ptr, ind, pr, nU, t, m, dist, order, h, rptr,
                                         rrows, pi, prev_pi, prev_t)
            n_pi += 1
            bound = _certificate(ptr, ind, pr, nU, t, m, h)
            gs_failed = True
        elif code == 0:
            gs_failed = False
        n_solved += not swept
        n_swept += swept
        solved[t] = True
        if not swept:
            err = max(err, bound)
        if code != 1 and not swept and not bound <= max(DIAMETER_MAX_RTOL,
                                                          64.0 * _EPS * h.max()):
            # not certified even by an exact solve: hitting times beyond float64's
            # precision (a chain needing thousands of lucky steps); no use going on
            return Diameter(float(max(L, h.max())), n_unreach, np.inf, int(sweeps),
                            int(n_pi), int(n_solved))
        if prune and np.isfinite(bound):
            scale[t] = 1.0 + bound
            if n_kept < Hs.shape[0]:
                Hs[n_kept] = h
                slot[t] = n_kept
                n_kept += 1
            else:
                Mroot[t] = h.max()
            M = _propagate_bounds(ptr, ind, pr, nU, m, t, slot[t], Hs, slot, scale, Mroot,
                                  ub, root, off, solved, heap, pos)
            if swept:  # an upper bound: L takes the lower one
                M = float(h.max())
        else:
            M = float(h.max())
            ub[t] = M
        L = max(L, M)
        if np.isfinite(bound) and not swept:  # a warm start for the next targets
            W[n_stored % WARM_STARTS] = h
            n_stored += 1
            n_warm = min(n_stored, WARM_STARTS)
            _greedy_ssp(ptr, ind, pr, nU, m, h, prev_pi)
            prev_t = t
        # the next target: the largest bound first, then breadth-first from the hardest
        if prune and n_solved + n_swept < DIAMETER_PICKS:
            t = int(_pick_largest(ub, solved, L))
            continue
        if visit is None:
            hardest = int(np.argmax(np.where(solved, ub, -np.inf)))
            visit = _breadth_first(ptr, ind, rptr, rrows, nU, m, hardest, True)
        t = -1
        while vi < visit.shape[0]:
            c = int(visit[vi])
            vi += 1
            if not solved[c] and (not prune or ub[c] > L):
                t = c
                break
    return Diameter(float(L), n_unreach, float(err), int(sweeps), int(n_pi), int(n_solved))



class Diameter(NamedTuple):
    """The diameter and how it was obtained."""

    value: float
    """The diameter over the reachable states (``inf``: some pair not connected)."""
    unreachable_states: int
    """States not reachable from the initial state (left out)."""
    relative_error: float
    """Certified bound on the relative error of every hitting time (0 when inf)."""
    sweeps: int
    """Gauss–Seidel sweeps over all targets."""
    policy_iterations: int
    """Targets finished by policy iteration."""
    targets_solved: int = 0
    """Targets whose hitting times were computed; the others' are bounded below the
    diameter (:func:`diameter_rows`)."""



def diameter(
    P: np.ndarray,
    initial_state: int = 0,
    *,
    rtol: float = DIAMETER_RTOL,
    method: str = "auto",
    max_sweeps: int = MAX_SWEEPS,
    prune: bool = True,
) -> Diameter:
    """The diameter :math:`\\max_{s\\ne e}\\min_\\pi E[T^\\pi_{s\\to e}]` over the states
    reachable from ``initial_state`` (every state when it is -1); transition
    probabilities below :data:`REACH_TOLERANCE` count as zero.

    Parameters
    ----------
    P
        Transitions, shape (nX, nU, nX).
    initial_state
        Start state; -1 for a uniformly drawn one (every state is then a start).
    rtol
        Certified relative accuracy of each hitting time (stops earlier at the
        rounding level).
    method
        ``"auto"`` (Gauss–Seidel, then policy iteration when the sweeps would not
        converge within :data:`GS_BUDGET`), ``"vi"`` (Gauss–Seidel only, up to
        ``max_sweeps`` per target; the returned ``relative_error`` says how far it got:
        ``inf`` when not certified) or ``"pi"`` (policy iteration only).
    max_sweeps
        Cap on the sweeps per target.
    prune
        Skip the targets whose hitting times are proved below the diameter by the
        bounds of :func:`diameter_rows` (same value; ``False`` solves every target).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.zeros((2, 1, 2))
    >>> P[0, 0] = [0.75, 0.25]  # from 0, reach 1 with probability 1/4 per step
    >>> P[1, 0] = [1.0, 0.0]
    >>> diameter(P).value
    4.0
    >>> P[0, 0] = [1.0 - 1e-17, 1e-17]  # below REACH_TOLERANCE: 1 is never reached
    >>> diameter(P).unreachable_states
    1
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}, got {method!r}")
    P = _as_model(P)
    nX, nU, _ = P.shape
    if not -1 <= initial_state < nX:
        raise ValueError(f"initial_state {initial_state} outside -1..{nX - 1}")
    return diameter_rows(*sparse_rows(P), nU, int(initial_state), rtol=float(rtol),
                         method=method, max_sweeps=int(max_sweeps), prune=prune)
