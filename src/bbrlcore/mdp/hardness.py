r"""Colosseum's measures of hardness of an MDP, computed exactly and fast (numba).

An MDP here is a transition array ``P[x, u, y]`` (nX, nU, nX), rewards ``R[x, u, y]``
(or their expectations ``R[x, u]``), a discount factor :math:`\gamma<1` and an initial
state (``-1``: drawn uniformly, so every state is a start). Four measures (Conserva &
Rauber 2022; the appendix, App. A.4 and B, is in ``shared/paper``), each taken on the
states reachable from the initial state ("Where the measures are taken" below):

**Optimal value** :math:`V^*(x_0)` of the initial state (the mean of :math:`V^*` over the
states when ``initial_state == -1``), with :math:`V^* = \max_u Q^*` and

.. math::  Q^*(x,u) = \bar r(x,u) + \gamma \sum_y P(y\mid x,u)\, V^*(y), \qquad
           \bar r(x,u) = \sum_y P(y\mid x,u)\, R(x,u,y).

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

**Where the measures are taken.** :func:`measures` and :func:`hardness_table` take the
diameter, the value norm and the gaps on the states **reachable from the initial state**
(all states when it is -1): the states an agent can meet, as Colosseum's measures are
defined on the MDP's states; the padding cells of a family's grid (DeepSea's lower
triangle, walls) never count. For reachability and the diameter a transition of
probability below :data:`REACH_TOLERANCE` (1e-12) counts as absent: an event rarer than
the diameter's own accuracy can neither make a state reachable nor the diameter
infinite. :func:`value_norm` and :func:`suboptimality_gaps` take every state unless given
``reachable_from``.

**γ.** The value measures need γ < 1; at γ = 1 (an undiscounted test set)
:func:`hardness_table` leaves them undefined (null, :data:`UNDEFINED_AT_GAMMA_1`) and
measures the diameter, which has no γ. A γ so close to 1 that float64 cannot resolve the
values (certified relative error above :data:`VALUE_MAX_RTOL`) is refused with a
:class:`bbrlcore.errors.BBRLError`, as is a diameter whose hitting times exceed float64's
precision: no measure is ever returned unconverged.

Algorithms and cost
-------------------
Every kernel works on the **sparse rows** of P (CSR: for row ``x*nU + u`` the successors
with non-zero probability), so a sweep costs O(nnz), the number of non-zero transitions,
not O(nX²·nU). Building the rows reads the dense array once, O(nX²·nU)
(:func:`measures_rows` starts from a test set's rows and never builds it).

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
``benchmarks/README.md`` (hardness). When a test set's measures would take more than
:data:`ANNOUNCE_AFTER_S`, :func:`hardness_table` announces its estimate after the first
MDP.

References
----------
Conserva, M. & Rauber, P. (2022). Hardness in Markov decision processes: theory and
practice. NeurIPS 2022 Datasets and Benchmarks track (Colosseum), App. A.4, B.
Jaksch, T., Ortner, R. & Auer, P. (2010). Near-optimal regret bounds for reinforcement
learning. JMLR 11, 1563–1600 (the diameter).
Maillard, O.-A., Mann, T. A. & Mannor, S. (2014). "How hard is my MDP?" The
distribution-norm to the rescue. NeurIPS 27 (the environmental value norm).
Bertsekas, D. P. & Tsitsiklis, J. N. (1991). An analysis of stochastic shortest path
problems. Mathematics of Operations Research 16(3), 580–595.

Examples
--------
A 4-state deterministic chain (action 0 right, action 1 left, the ends stay):

>>> import numpy as np
>>> P = np.zeros((4, 2, 4))
>>> for x in range(4):
...     P[x, 0, min(x + 1, 3)] = 1.0
...     P[x, 1, max(x - 1, 0)] = 1.0
>>> diameter(P, 0).value
3.0
>>> R = np.zeros((4, 2)); R[3, 0] = 1.0  # reward for staying at the right end
>>> m = measures(P, R, 0.5, 0)
>>> round(m.optimal_value, 6), m.value_norm, round(m.suboptimality_gaps, 6)
(0.25, 0.0, 12.666667)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import polars as pl
from numba import njit

from bbrlcore.errors import BBRLError
from bbrlcore.mdp.solvers import _lu_solve

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
#: Certified relative accuracy of every expected hitting time behind the diameter.
DIAMETER_RTOL = 1e-12
#: Largest certified relative error of the diameter that :func:`measures` accepts besides
#: the rounding level (64 ε D: hitting times of 1e11 steps are known to about 1e-3).
DIAMETER_MAX_RTOL = 1e-6
#: Transition probabilities below this count as zero for reachability (the states a
#: measure is taken on) and for the diameter: an event of probability 1e-17 cannot make
#: the diameter infinite, nor a state reachable. The diameter's hitting times then ignore
#: events rarer than their own accuracy (:data:`DIAMETER_RTOL`).
REACH_TOLERANCE = 1e-12
#: Gaps at most this fraction of max|Q*| count as ties (optimal actions).
GAP_RTOL = 1e-9
#: Safety cap on value-iteration sweeps.
MAX_SWEEPS = 10_000_000
#: Largest reachable set whose diameter targets are solved by a dense LU policy iteration
#: (above it, a sparse LU: :func:`scipy.sparse.linalg.splu`).
DENSE_MAX_STATES = 100

_EPS = np.finfo(np.float64).eps
_METHODS = {"auto": 0, "vi": 1, "pi": 2}

# ---------------------------------------------------------------------------------------
# Sparse rows


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


# ---------------------------------------------------------------------------------------
# Optimal values, value norm, gaps


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


# ---------------------------------------------------------------------------------------
# Diameter


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


# ---------------------------------------------------------------------------------------
# Python API


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


class Hardness(NamedTuple):
    """The four measures of one MDP, on the states reachable from its initial state (see
    the module docstring); the value measures are None when undefined (γ = 1)."""

    optimal_value: float | None
    diameter: float
    unreachable_states: int
    value_norm: float | None
    suboptimality_gaps: float | None


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


def _check_gamma(gamma: float) -> float:
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"the value measures need 0 <= gamma < 1, got {gamma}")
    return float(gamma)


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


def measures(
    P: np.ndarray, R: np.ndarray, gamma: float, initial_state: int = 0
) -> Hardness:
    """All four measures of one MDP, sharing the sparse rows and the optimal values,
    **on the states reachable from** ``initial_state`` (every state when it is -1;
    transitions below :data:`REACH_TOLERANCE` count as zero).

    The optimal value is :math:`V^*` of ``initial_state`` (the mean over the states when
    it is -1); the diameter, the value norm and the gaps are over the reachable states
    (the padding cells of a family's grid, never entered, do not count).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.ones((1, 2, 1)); R = np.array([[1.0, 0.5]])
    >>> measures(P, R, 0.9).diameter
    0.0
    """
    P, rows, V, Q, bound = _solve(P, R, gamma)
    if not -1 <= initial_state < P.shape[0]:
        raise ValueError(f"initial_state {initial_state} outside -1..{P.shape[0] - 1}")
    return _measures(rows, P.shape[1], (V, Q, bound), initial_state)


def measures_rows(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, R: np.ndarray,
                  gamma: float | None, initial_state: int = 0, what: str = "the MDP",
                  ) -> Hardness:
    """:func:`measures` of a model on padded rows (:mod:`bbrlcore.mdp.rows`: ``P`` and
    ``R`` on the slots of ``succ``, ``nsucc``), without its dense array: what
    :func:`hardness_table` uses, in time and memory proportional to the transitions.
    ``gamma=None``: the diameter only (the value measures are None: undefined at
    γ = 1). ``what`` names the MDP in a refusal."""
    indptr, indices, probs, rbar = csr_of_rows(succ, nsucc, np.ascontiguousarray(P),
                                               np.ascontiguousarray(R))
    rows = (indptr, indices, probs)
    if not -1 <= initial_state < rbar.shape[0]:
        raise ValueError(f"initial_state {initial_state} outside -1..{rbar.shape[0] - 1}")
    values = None
    if gamma is not None:
        values = optimal_values_rows(*rows, rbar, _check_gamma(gamma), VALUE_RTOL, what)
    return _measures(rows, rbar.shape[1], values, initial_state, what)


def _measures(rows: tuple, nU: int, values: tuple | None, initial_state: int,
              what: str = "the MDP") -> Hardness:
    d = diameter_rows(*rows, nU, int(initial_state))
    if not (np.isfinite(d.relative_error)
            and d.relative_error <= max(DIAMETER_MAX_RTOL, 64.0 * _EPS * d.value)):
        size = f"about {d.value:.3g} steps or more, " if np.isfinite(d.value) else ""
        raise BBRLError(f"{what}: the diameter cannot be computed in float64 ({size}not "
                        "certified: expected hitting times this long exceed its precision)")
    if values is None:
        return Hardness(None, d.value, d.unreachable_states, None, None)
    V, Q, bound = values
    mask = reachable_mask(*rows, nU, int(initial_state))
    norm = value_norm_kernel(*rows, nU, V, Q, mask, False)
    gaps, _ = gaps_kernel(Q, mask, GAP_RTOL, 0.0, 2.0 * bound)
    v0 = float(V.mean()) if initial_state < 0 else float(V[initial_state])
    return Hardness(v0, d.value, d.unreachable_states, float(norm), float(gaps))


# ---------------------------------------------------------------------------------------
# Tables

#: The measures of :func:`hardness_table`, in column order.
MEASURES = ("optimal_value", "diameter", "unreachable_states", "value_norm",
            "suboptimality_gaps")

_TABLE_SCHEMA = {"test": pl.Utf8, "mdp_index": pl.Int64, "optimal_value": pl.Float64,
                 "diameter": pl.Float64, "unreachable_states": pl.Int64,
                 "value_norm": pl.Float64, "suboptimality_gaps": pl.Float64}

#: What each column of :func:`hardness_table` (`bbrl hardness -o`) holds (the
#: documentation's column reference is generated from this and the table's types).
HARDNESS_COLUMN_DOCS: dict[str, str] = {
    "test": "the test distribution's name",
    "mdp_index": "the test MDP's index in its test set",
    "optimal_value": "V* of the initial state, the optimal discounted value (the mean over "
                     "the states when the initial state is drawn)",
    "diameter": "the largest, over ordered pairs of states reachable from the initial state, "
                "of the least expected number of steps from one to the other (undiscounted)",
    "unreachable_states": "states that cannot be reached from the initial state (left out of "
                          "every measure)",
    "value_norm": "the environmental value norm: the largest standard deviation of V* over a "
                  "transition's next state",
    "suboptimality_gaps": "Σ 1/Δ(x, u) over the sub-optimal state-action pairs (Δ the gap of "
                          "Q* to the best action)",
}

#: What each column of :func:`hardness_summary` (`bbrl hardness --summary`) holds.
HARDNESS_SUMMARY_COLUMN_DOCS: dict[str, str] = {
    "test": "the test distribution's name",
    "measure": "the measure (a column of the hardness table)",
    "n_mdps": "test MDPs measured",
    "n_infinite": "MDPs whose measure is infinite",
    "mean": "its mean",
    "median": "its median",
    "q05": "its 5 % quantile (linear interpolation)",
    "q95": "its 95 % quantile (linear interpolation)",
    "min": "its smallest value",
    "max": "its largest value",
}


#: Why :func:`hardness_table` leaves the value measures out at γ = 1.
UNDEFINED_AT_GAMMA_1 = ("at gamma = 1 the optimal value, value norm and sub-optimality gaps "
                        "are undefined (the undiscounted values of an infinite horizon "
                        "diverge); the diameter is undiscounted")
#: :func:`hardness_table` announces its estimated time when the rest of a test set is
#: expected to take longer than this (seconds).
ANNOUNCE_AFTER_S = 10.0


def hardness_table(ts, gamma: float | None = None,
                   progress: Callable[[str], None] | None = None) -> pl.DataFrame:
    """The measures of every test MDP of a :class:`bbrlcore.protocol.TestSet`, on the
    states reachable from its initial state (:func:`measures`).

    Columns ``test``, ``mdp_index``, ``optimal_value``, ``diameter``,
    ``unreachable_states``, ``value_norm``, ``suboptimality_gaps``. The value measures
    use ``gamma`` (default: the test set's γ); at γ = 1 they are undefined and left
    null (:data:`UNDEFINED_AT_GAMMA_1`). The diameter is undiscounted. ``progress``,
    when given, receives one line with the estimated time of the rest when it exceeds
    :data:`ANNOUNCE_AFTER_S` (measured on the first MDP). An MDP whose measures cannot
    be certified (γ too close to 1) is refused (:class:`bbrlcore.errors.BBRLError`).

    Examples
    --------
    >>> from bbrlcore import protocol as E
    >>> from bbrlcore.mdp import distributions as D
    >>> ts = E.new_test_set(D.builtin("GC"), 2, 0.95, 10, seed=1)
    >>> hardness_table(ts).columns[:4]
    ['test', 'mdp_index', 'optimal_value', 'diameter']
    >>> ts1 = E.new_test_set(D.builtin("GC"), 2, 1.0, 10, seed=1)
    >>> hardness_table(ts1)["optimal_value"].to_list()  # γ = 1: undefined
    [None, None]
    """
    if gamma is None:
        gamma = ts.gamma
    g = None if gamma >= 1.0 else float(gamma)
    R = np.ascontiguousarray(ts.test.reward_rows, dtype=np.float64)
    x0 = int(ts.test.initial_state)
    lay = ts.layout
    name = ts.test.short_name
    rows = []
    t0 = time.perf_counter()
    for i in range(ts.n_mdps):
        m = measures_rows(lay.succ, lay.nsucc, ts.mdps[i], R, g, x0,
                          what=f"test set {name}, MDP {i}")
        rows.append({"test": name, "mdp_index": i, **m._asdict()})
        if i == 0 and progress is not None and ts.n_mdps > 1:
            rest = (time.perf_counter() - t0) * (ts.n_mdps - 1)
            if rest > ANNOUNCE_AFTER_S:
                progress(f"hardness of {name}: {time.perf_counter() - t0:.1f} s for its "
                         f"first MDP; about {_duration(rest)} more for the other "
                         f"{ts.n_mdps - 1}")
    return pl.DataFrame(rows, schema=_TABLE_SCHEMA)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def hardness_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per test set and measure: ``n_mdps``, ``n_infinite``, ``mean``, ``median``,
    ``q05``, ``q95`` (5 % and 95 % quantiles, linear interpolation), ``min``, ``max``.

    Test sets keep their order in ``table``; measures follow :data:`MEASURES`.

    Examples
    --------
    >>> t = pl.DataFrame({"test": ["GC", "GC"], "mdp_index": [0, 1],
    ...                   "optimal_value": [1.0, 3.0], "diameter": [2.0, 4.0],
    ...                   "unreachable_states": [0, 0], "value_norm": [0.5, 0.5],
    ...                   "suboptimality_gaps": [1.0, 2.0]})
    >>> hardness_summary(t).filter(pl.col("measure") == "diameter")["median"].item()
    3.0
    """
    schema = {"test": pl.Utf8, "measure": pl.Utf8, "n_mdps": pl.Int64,
              "n_infinite": pl.Int64, "mean": pl.Float64, "median": pl.Float64,
              "q05": pl.Float64, "q95": pl.Float64, "min": pl.Float64, "max": pl.Float64}
    rows = []
    for test in table["test"].unique(maintain_order=True).to_list():
        sub = table.filter(pl.col("test") == test)
        for name in MEASURES:
            c = sub[name].cast(pl.Float64)
            rows.append({"test": test, "measure": name, "n_mdps": sub.height,
                         "n_infinite": int(c.is_infinite().sum()), "mean": c.mean(),
                         "median": c.median(), "q05": c.quantile(0.05, "linear"),
                         "q95": c.quantile(0.95, "linear"), "min": c.min(), "max": c.max()})
    return pl.DataFrame(rows, schema=schema)
