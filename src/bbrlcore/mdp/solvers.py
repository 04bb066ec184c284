r"""Value-iteration kernels (numba) used by the model-based agents.

Two solvers, as in the original BBRL library:

**BBRL Q-iteration** (e-Greedy, Soft-max, Optimal and the Q-features of formula agents)
runs synchronous (Jacobi) sweeps

.. math::  Q^{k+1}(x,u) = \sum_y P(x,u,y)\,\bigl(R(x,u,y) + \gamma \max_v Q^k(y,v)\bigr)

and stops after the first sweep whose largest change :math:`\max|Q^{k+1}-Q^k|` is at most
``0.01``, or after ``T + 1`` sweeps (T is the experiment's horizon), whichever comes first.

**Guez value iteration** (BEB, SBOSS) runs sweeps on the state values

.. math::  V^{k+1}(x) = \max_u \sum_y P(x,u,y)\,\bigl(R(x,u,y) + \gamma V^k(y)\bigr)

keeps the *first* maximising action (lowest index wins ties) and stops when the Euclidean
norm of :math:`V^{k+1}-V^k` is at most ``tol`` (``1e-4`` for BEB and SBOSS).

Both kernels are **warm-started**: they start from the ``Q`` (or ``V``) array passed in
and update it in place. Starting from zero gives the reference's behaviour; starting from
the previous decision's solution reaches the same stopping test in far fewer sweeps
(allowed: same stopping test, fewer sweeps). Sums run sequentially over the support of each row
(``supp[x, u, :nsupp[x, u]]``, the successors with non-zero probability) in increasing
order, like the reference.

**Finite-horizon backward induction** (Optimal with ``criterion="undiscounted"``, and
any measure of the best return over H steps) computes the optimal values of every
remaining number of steps,

.. math::  V_T(x) = 0, \qquad
           V_t(x) = \max_u \sum_y P(x,u,y)\,\bigl(R(x,u,y) + \gamma V_{t+1}(y)\bigr),
           \quad t = T-1, \dots, 0,

exactly (T sweeps, no tolerance): :math:`V_0(x_0)` is the largest expected sum of
rewards over T steps from :math:`x_0` (with γ = 1), and the policy that maximises it is
non-stationary, :math:`\pi_t(x) = \arg\max_u Q_t(x, u)`
(:func:`finite_horizon_rows`, :func:`finite_horizon_values`).

References
----------
Castronovo et al., "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016.
Puterman, "Markov Decision Processes", Wiley 1994, §4.5 (backward induction), §6.3
(value iteration).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.errors import BBRLError

#: Absolute sup-norm tolerance of the BBRL Q-iteration (``ACCURACY`` in the reference).
Q_ACCURACY = 0.01
#: Euclidean tolerance of the Guez value iteration used by BEB and SBOSS.
GUEZ_TOLERANCE = 1e-4
#: Safety cap for the Guez value iteration (the reference has none; gamma < 1 is enforced).
GUEZ_MAX_SWEEPS = 1_000_000


@njit(cache=True, error_model="numpy")
def support_of(P):
    """Return ``(supp, nsupp)``: for each (x, u) the successors y with P > 0, increasing."""
    nX, nU, _ = P.shape
    supp = np.zeros((nX, nU, nX), dtype=np.int64)
    nsupp = np.zeros((nX, nU), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            k = 0
            for y in range(nX):
                if P[x, u, y] > 0.0:
                    supp[x, u, k] = y
                    k += 1
            nsupp[x, u] = k
    return supp, nsupp


#: A model is solved by policy iteration with a dense LU evaluation (n³/3 operations
#: and an (n, n) matrix for n states) straight away only while n³ is at most this many
#: times its number of transitions (:func:`lu_affordable`): every problem of the paper
#: (Grid: 25³ = 87 × its 180 transitions), whose solvers are exactly the reference's
#: answer reached by policy iteration. A larger or sparser model first runs warm-started
#: sweeps, as many as one LU evaluation costs, and is evaluated by LU only if they have
#: not converged (and it has at most :data:`LU_MAX_STATES` states): a solve then costs
#: about the least of the two, and the cost grows with the transitions that exist.
#: Functions of the model's size only, so a run is reproducible.
LU_WORK_PER_TRANSITION = 200
#: The largest model ever evaluated by a dense LU ((n, n) float64: 32 MB).
LU_MAX_STATES = 2048


@njit(cache=True, error_model="numpy")
def lu_affordable(nX, nnz):
    """Whether a model of ``nX`` states and ``nnz`` transitions is solved with dense LU
    evaluations (:data:`LU_WORK_PER_TRANSITION`)."""
    return nX * nX * nX <= LU_WORK_PER_TRANSITION * nnz


@njit(cache=True, error_model="numpy")
def n_transitions(nsucc):
    """The number of transitions of a layout: the sum of ``nsucc``."""
    n = 0
    for x in range(nsucc.shape[0]):
        for u in range(nsucc.shape[1]):
            n += nsucc[x, u]
    return n


# ---------------------------------------------------------------------------------------
# Kernels on sparse rows (bbrlcore.mdp.rows): P[x, u, k] and R[x, u, k] are the
# probability and reward of the transition to succ[x, u, k], k < nsucc[x, u]. A slot of
# probability 0 adds 0 to a sum (the result is that of the sum over the positive
# entries, bit for bit); the dense wrappers further down call these.


@njit(cache=True, error_model="numpy")
def q_iteration_rows(P, R, succ, nsucc, gamma, horizon, Q):
    """BBRL Q-iteration on sparse rows, warm-started from ``Q`` and updated in place.

    Returns the number of sweeps run (at most ``horizon + 1``).
    """
    nX, nU, _ = P.shape
    V = np.empty(nX)
    sweeps = 0
    while True:
        for y in range(nX):
            m = Q[y, 0]
            for v in range(1, nU):
                if Q[y, v] > m:
                    m = Q[y, v]
            V[y] = m
        delta = 0.0
        for x in range(nX):
            for u in range(nU):
                acc = 0.0
                for k in range(nsucc[x, u]):
                    acc += P[x, u, k] * (R[x, u, k] + gamma * V[succ[x, u, k]])
                d = abs(acc - Q[x, u])
                if d > delta:
                    delta = d
                Q[x, u] = acc
        sweeps += 1
        if delta <= Q_ACCURACY or sweeps >= horizon + 1:
            return sweeps


@njit(cache=True, error_model="numpy")
def guez_sweep_rows(P, R, succ, nsucc, gamma, V, Vnew, pi):
    """One Guez sweep (Jacobi) on sparse rows: ``Vnew[x] = max_u sum_k P(x,u,k) (R(x,u,k)
    + gamma V(succ(x,u,k)))`` and ``pi[x]`` its lowest maximising action; returns
    ``sum_x (Vnew[x] - V[x])**2``."""
    nX, nU, _ = P.shape
    diff2 = 0.0
    for x in range(nX):
        best = -np.inf
        bu = 0
        for u in range(nU):
            acc = 0.0
            for k in range(nsucc[x, u]):
                acc += P[x, u, k] * (R[x, u, k] + gamma * V[succ[x, u, k]])
            if acc > best:
                best = acc
                bu = u
        Vnew[x] = best
        pi[x] = bu
        d = best - V[x]
        diff2 += d * d
    return diff2


@njit(cache=True, error_model="numpy")
def guez_value_iteration_rows(P, R, succ, nsucc, gamma, tol, V, pi):
    """Guez value iteration on sparse rows, warm-started from ``V``; ``V`` and ``pi``
    updated in place. Returns the number of sweeps. The policy keeps the lowest-index
    maximising action."""
    Vnew = np.empty(P.shape[0])
    tol2 = tol * tol
    sweeps = 0
    while True:
        diff2 = guez_sweep_rows(P, R, succ, nsucc, gamma, V, Vnew, pi)
        V[:] = Vnew
        sweeps += 1
        if diff2 <= tol2 or sweeps >= GUEZ_MAX_SWEEPS:
            return sweeps


@njit(cache=True, error_model="numpy")
def _lu_solve(A, b):
    """Solve A x = b in place (Gaussian elimination, partial pivoting); x returned in b.

    The pivot row is copied to a separate buffer and each row is updated through a
    view (rows of 12 or more entries), so the inner loop has no possible aliasing and
    vectorises (about twice as fast as plain ``A[i, j]`` indexing at n = 25; the
    arithmetic, hence the result, is the same).
    """
    n = b.shape[0]
    r = np.empty(n)
    for k in range(n):
        piv = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            v = abs(A[i, k])
            if v > big:
                big = v
                piv = i
        if piv != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[piv, j]
                A[piv, j] = tmp
            tmp = b[k]
            b[k] = b[piv]
            b[piv] = tmp
        inv = 1.0 / A[k, k]
        m = n - k - 1
        for j in range(m):
            r[j] = A[k, k + 1 + j]
        bk = b[k]
        for i in range(k + 1, n):
            f = A[i, k] * inv
            if f != 0.0:
                if m >= 12:
                    row = A[i, k + 1:]
                    for j in range(m):
                        row[j] -= f * r[j]
                else:  # short rows: a view costs more than it saves
                    for j in range(m):
                        A[i, k + 1 + j] -= f * r[j]
                b[i] -= f * bk
    for k in range(n - 1, -1, -1):
        acc = b[k]
        for j in range(k + 1, n):
            acc -= A[k, j] * b[j]
        b[k] = acc / A[k, k]


@njit(cache=True, error_model="numpy")
def _evaluate_policy_rows(P, R, succ, nsucc, gamma, pi, A, b):
    r"""Exact value of the deterministic policy ``pi``: solve
    :math:`(I-\gamma P_\pi)V = r_\pi` (dense); the values are returned in ``b``."""
    nX = b.shape[0]
    for i in range(nX):
        for j in range(nX):
            A[i, j] = 0.0
        A[i, i] = 1.0
        u = pi[i]
        acc = 0.0
        for k in range(nsucc[i, u]):
            p = P[i, u, k]
            A[i, succ[i, u, k]] -= gamma * p
            acc += p * R[i, u, k]
        b[i] = acc
    _lu_solve(A, b)


@njit(cache=True, error_model="numpy")
def _gauss_seidel_pass(P, R, succ, nsucc, gamma, V):
    """A forward then a backward in-place (Gauss–Seidel) sweep of the optimal values."""
    nX, nU, _ = P.shape
    for i in range(2 * nX):
        x = i if i < nX else 2 * nX - 1 - i
        best = -np.inf
        for u in range(nU):
            acc = 0.0
            for k in range(nsucc[x, u]):
                acc += P[x, u, k] * (R[x, u, k] + gamma * V[succ[x, u, k]])
            if acc > best:
                best = acc
        V[x] = best


@njit(cache=True, error_model="numpy")
def guez_policy_iteration_rows(P, R, succ, nsucc, gamma, tol, V, pi, A, b):
    r"""The Guez value iteration's answer, reached by policy iteration (in place), on
    sparse rows.

    Alternates an exact evaluation of the current policy (a dense linear solve of
    :math:`(I-\gamma P_\pi)V = r_\pi`) with one Guez sweep (lowest-index ties), and
    stops after the first sweep whose Euclidean change is at most ``tol`` — the stopping
    test of :func:`guez_value_iteration_rows`, met here at a (near) exact fixed point, so
    the values are at least as accurate. ``V`` and ``pi`` hold the last sweep's values
    and greedy policy, as in the reference. ``A`` (nX, nX) and ``b`` (nX) are work
    buffers. Returns the number of sweeps; after 100 policy evaluations it finishes by
    plain sweeps.

    A model for which dense LU evaluations are not plainly affordable
    (:func:`lu_affordable`; ``A`` may then be a (1, 1) array) first runs, warm-started
    from ``V``, passes of a symmetric Gauss–Seidel sweep (in place: values travel along
    the whole state order in one pass) followed by one Guez sweep, whose Euclidean
    change is the stopping test and which sets ``V`` and ``pi`` as the reference's last
    sweep does — up to as many sweeps as one evaluation costs (``3 + n³ / (12 × its
    transitions)``, as :func:`q_solve_rows` does); otherwise policy iteration continues
    from their policy (above :data:`LU_MAX_STATES` states, the passes go on to the
    stopping test). Same fixed point, same test: a smarter solver, as the policy
    iteration is.
    """
    nX = P.shape[0]
    nnz = n_transitions(nsucc)
    tol2 = tol * tol
    sweeps = 0
    if not lu_affordable(nX, nnz):
        budget = GUEZ_MAX_SWEEPS
        if nX <= LU_MAX_STATES:
            budget = 3 + (nX * nX * nX) // (12 * max(nnz, 1))
        Vnew = np.empty(nX)
        while sweeps < budget:
            # a symmetric Gauss–Seidel pass carries values along the whole state order
            # (a chain's far reward in one pass, not in as many Jacobi sweeps as it is
            # long); the reference's Jacobi sweep then tests and sets V and pi
            _gauss_seidel_pass(P, R, succ, nsucc, gamma, V)
            diff2 = guez_sweep_rows(P, R, succ, nsucc, gamma, V, Vnew, pi)
            for i in range(nX):
                V[i] = Vnew[i]
            sweeps += 3
            if diff2 <= tol2:
                return sweeps
        if nX > LU_MAX_STATES:
            return sweeps
        if A.shape[0] < nX or A.shape[1] < nX:
            A = np.empty((nX, nX))
        if b.shape[0] < nX:
            b = np.empty(nX)
    for _it in range(100):
        _evaluate_policy_rows(P, R, succ, nsucc, gamma, pi, A, b)  # V of pi, exactly
        for i in range(nX):
            V[i] = b[i]
        diff2 = guez_sweep_rows(P, R, succ, nsucc, gamma, V, b, pi)  # from the evaluated V
        for i in range(nX):
            V[i] = b[i]
        sweeps += 1
        if diff2 <= tol2:
            return sweeps
    return sweeps + guez_value_iteration_rows(P, R, succ, nsucc, gamma, tol, V, pi)


@njit(cache=True, error_model="numpy")
def q_solve_rows(P, R, succ, nsucc, gamma, horizon, Q):
    r"""The BBRL Q-iteration's answer on sparse rows, warm-started from ``Q`` (updated in
    place).

    When the sweep cap cannot bind — from zero, ``horizon + 1`` sweeps bring the error
    below the 0.01 tolerance whatever the model, i.e.
    :math:`\max|R|\,\gamma^{T+1}/(1-\gamma) \le 0.01` (T = 250, γ = 0.95 and the
    paper's rewards) — the fixed point is reached by **policy iteration** from the greedy
    policy of ``Q`` (exact evaluation by a dense linear solve, then one Q sweep, until the
    greedy policy is stable): the result passes the Q-iteration's stopping test (its next
    sweep changes nothing) and is at least as accurate. It first tries as many
    warm-started sweeps as one policy evaluation costs (often one suffices). Otherwise
    (small horizons, γ close to 1, where the cap truncates the lookahead, and models of
    more than :data:`LU_MAX_STATES` states) it runs :func:`q_iteration_rows`. Returns
    the number of sweeps. (The largest reward and the number of transitions are those of
    the entries of positive probability.)
    """
    nX, nU, _ = P.shape
    rmax = 0.0
    nnz = 0
    for x in range(nX):
        for u in range(nU):
            for k in range(nsucc[x, u]):
                if P[x, u, k] > 0.0:
                    nnz += 1
                    r = abs(R[x, u, k])
                    if r > rmax:
                        rmax = r
    if (gamma >= 1.0 or rmax * gamma ** (horizon + 1) / (1.0 - gamma) > Q_ACCURACY
            or nX > LU_MAX_STATES):
        return q_iteration_rows(P, R, succ, nsucc, gamma, horizon, Q)
    # a few warm-started sweeps first: as many as one policy evaluation costs
    budget = 3 + (nX * nX * nX) // (12 * max(nnz, 1))
    sweeps = q_iteration_rows(P, R, succ, nsucc, gamma, budget - 1, Q)
    if sweeps < budget:
        return sweeps
    A = np.empty((nX, nX))
    b = np.empty(nX)
    pi = np.empty(nX, dtype=np.int64)
    for x in range(nX):
        best = Q[x, 0]
        pi[x] = 0
        for u in range(1, nU):
            if Q[x, u] > best:
                best = Q[x, u]
                pi[x] = u
    for _it in range(200):
        _evaluate_policy_rows(P, R, succ, nsucc, gamma, pi, A, b)
        stable = True
        for x in range(nX):
            for u in range(nU):
                acc = 0.0
                for k in range(nsucc[x, u]):
                    acc += P[x, u, k] * (R[x, u, k] + gamma * b[succ[x, u, k]])
                Q[x, u] = acc
            cur = Q[x, pi[x]]
            for u in range(nU):
                if Q[x, u] > cur + 1e-12 * (1.0 + abs(cur)):
                    cur = Q[x, u]
                    pi[x] = u
                    stable = False
        sweeps += 1
        if stable:
            return sweeps
    return sweeps + q_iteration_rows(P, R, succ, nsucc, gamma, horizon, Q)


@njit(cache=True, error_model="numpy")
def finite_horizon_q_row(P, R, succ, nsucc, gamma, Vnext, x, q):
    """``q[u] = sum_k P(x,u,k) (R(x,u,k) + gamma Vnext[succ(x,u,k)])`` for every action u of
    state ``x`` (the Q-values of a step whose successors are worth ``Vnext``; the sums of
    :func:`finite_horizon_rows`, in the same order, so a policy read from them sees the
    same exact ties)."""
    for u in range(P.shape[1]):
        acc = 0.0
        for k in range(nsucc[x, u]):
            acc += P[x, u, k] * (R[x, u, k] + gamma * Vnext[succ[x, u, k]])
        q[u] = acc


@njit(cache=True, error_model="numpy")
def finite_horizon_rows(P, R, succ, nsucc, gamma, V):
    r"""Backward induction on sparse rows: fills ``V`` (T + 1, nX) with the optimal
    values of the remaining steps, ``V[T] = 0`` and, for t = T-1, ..., 0,
    :math:`V_t(x) = \max_u \sum_k P(x,u,k)\,(R(x,u,k) + \gamma V_{t+1}(succ(x,u,k)))`
    (module docstring): ``V[t, x]`` is the largest expected (γ-discounted) sum of the
    rewards of steps t, ..., T-1 from state x at step t. Exact, T sweeps of the
    transitions; the optimal action at step t is a maximiser of
    :func:`finite_horizon_q_row` with ``Vnext = V[t + 1]``."""
    T = V.shape[0] - 1
    nX, nU, _ = P.shape
    q = np.empty(nU)
    for x in range(nX):
        V[T, x] = 0.0
    for t in range(T - 1, -1, -1):
        Vnext = V[t + 1]
        for x in range(nX):
            finite_horizon_q_row(P, R, succ, nsucc, gamma, Vnext, x, q)
            best = q[0]
            for u in range(1, nU):
                if q[u] > best:
                    best = q[u]
            V[t, x] = best


# ---------------------------------------------------------------------------------------
# Dense models: P[x, u, y] and R[x, u, y], (nX, nU, nX), with the support lists of
# :func:`support_of` (the kernels of bbrlcore.agents.bayes's public API). Each gathers
# the support's values into sparse rows and calls the kernel above: the same sums in the
# same order.


@njit(cache=True, error_model="numpy")
def _on_support(P, R, supp, nsupp):
    """``(P, R)`` of dense models gathered on the support lists (sparse rows)."""
    nX, nU, K = supp.shape
    Pr = np.zeros((nX, nU, K))
    Rr = np.zeros((nX, nU, K))
    for x in range(nX):
        for u in range(nU):
            for k in range(nsupp[x, u]):
                y = supp[x, u, k]
                Pr[x, u, k] = P[x, u, y]
                Rr[x, u, k] = R[x, u, y]
    return Pr, Rr


@njit(cache=True, error_model="numpy")
def q_iteration(P, R, supp, nsupp, gamma, horizon, Q):
    """BBRL Q-iteration of a dense model, warm-started from ``Q`` and updated in place.

    Returns the number of sweeps run (at most ``horizon + 1``).
    """
    Pr, Rr = _on_support(P, R, supp, nsupp)
    return q_iteration_rows(Pr, Rr, supp, nsupp, gamma, horizon, Q)


@njit(cache=True, error_model="numpy")
def guez_sweep(P, R, supp, nsupp, gamma, V, Vnew, pi):
    """One Guez sweep (Jacobi) of a dense model (:func:`guez_sweep_rows`)."""
    Pr, Rr = _on_support(P, R, supp, nsupp)
    return guez_sweep_rows(Pr, Rr, supp, nsupp, gamma, V, Vnew, pi)


@njit(cache=True, error_model="numpy")
def guez_value_iteration(P, R, supp, nsupp, gamma, tol, V, pi):
    """Guez value iteration of a dense model, warm-started from ``V``; ``V`` and ``pi``
    updated in place. Returns the number of sweeps. The policy keeps the lowest-index
    maximising action."""
    Pr, Rr = _on_support(P, R, supp, nsupp)
    return guez_value_iteration_rows(Pr, Rr, supp, nsupp, gamma, tol, V, pi)


@njit(cache=True, error_model="numpy")
def guez_policy_iteration(P, R, supp, nsupp, gamma, tol, V, pi, A, b):
    """The Guez value iteration's answer of a dense model by policy iteration, in place
    (:func:`guez_policy_iteration_rows`; ``A`` (nX, nX) and ``b`` (nX) are work
    buffers). Returns the number of sweeps."""
    Pr, Rr = _on_support(P, R, supp, nsupp)
    return guez_policy_iteration_rows(Pr, Rr, supp, nsupp, gamma, tol, V, pi, A, b)


@njit(cache=True, error_model="numpy")
def q_solve(P, R, supp, nsupp, gamma, horizon, Q):
    """The BBRL Q-iteration's answer of a dense model, warm-started from ``Q`` (updated in
    place; :func:`q_solve_rows`). Returns the number of sweeps."""
    Pr, Rr = _on_support(P, R, supp, nsupp)
    return q_solve_rows(Pr, Rr, supp, nsupp, gamma, horizon, Q)


def solve_q(P: np.ndarray, R: np.ndarray, gamma: float, horizon: int) -> np.ndarray:
    """Q-function of the model ``(P, R)`` by BBRL Q-iteration from zero.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.zeros((1, 1, 1)); P[0, 0, 0] = 1.0
    >>> R = np.ones((1, 1, 1))
    >>> round(float(solve_q(P, R, 0.5, 1000)[0, 0]), 1)
    2.0
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    supp, nsupp = support_of(P)
    Q = np.zeros(P.shape[:2])
    q_iteration(P, R, supp, nsupp, float(gamma), int(horizon), Q)
    return Q


def finite_horizon_values(P: np.ndarray, R: np.ndarray, horizon: int, gamma: float = 1.0
                          ) -> tuple[np.ndarray, np.ndarray]:
    r"""The exact optimal values and policy of the model ``(P, R)`` over ``horizon`` steps,
    by backward induction (module docstring; :func:`finite_horizon_rows`).

    Parameters
    ----------
    P, R : numpy.ndarray
        Dense (nX, nU, nX) transition probabilities and mean rewards.
    horizon : int
        T >= 0, the number of steps.
    gamma : float
        Discount of the steps' rewards within the horizon (1: the undiscounted sum of
        rewards over T steps, the ``undiscounted`` score).

    Returns
    -------
    V : numpy.ndarray
        (T + 1, nX): ``V[t, x]`` the largest expected sum of the rewards of steps
        t, ..., T-1 from state x (``V[0, x0]``: the best expected T-step return from x0;
        ``V[T] = 0``).
    policy : numpy.ndarray
        (T, nX) int64: an optimal action at step t in state x (the lowest-index
        maximiser); the optimal policy is in general non-stationary.

    Examples
    --------
    Two states: staying in state 0 pays 1 a step; going to state 1 pays nothing once,
    then 3 a step. With 1 step left the best is to stay; with 2 or 3, to go at once
    (over 3 steps: 0 + 3 + 3 = 6 against 1 + 0 + 3 = 4 or 1 + 1 + 1 = 3):

    >>> import numpy as np
    >>> P = np.zeros((2, 2, 2)); R = np.zeros((2, 2, 2))
    >>> P[0, 0, 0] = 1.0; R[0, 0, 0] = 1.0  # stay
    >>> P[0, 1, 1] = 1.0                      # go
    >>> P[1, :, 1] = 1.0; R[1, :, 1] = 3.0
    >>> V, pi = finite_horizon_values(P, R, 3)
    >>> V[:, 0].tolist(), pi[:, 0].tolist()
    ([6.0, 3.0, 1.0, 0.0], [1, 1, 0])
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    if P.ndim != 3 or P.shape[0] != P.shape[2] or R.shape != P.shape:
        raise BBRLError(f"finite_horizon_values: P and R must be (nX, nU, nX) arrays of one "
                        f"shape, got {P.shape} and {R.shape}")
    if isinstance(horizon, bool) or int(horizon) != horizon or horizon < 0:
        raise BBRLError(f"finite_horizon_values: horizon={horizon}: must be an integer >= 0")
    supp, nsupp = support_of(P)
    Pr, Rr = _on_support(P, R, supp, nsupp)
    T, nX, nU = int(horizon), P.shape[0], P.shape[1]
    V = np.empty((T + 1, nX))
    finite_horizon_rows(Pr, Rr, supp, nsupp, float(gamma), V)
    policy = np.empty((T, nX), dtype=np.int64)
    q = np.empty(nU)
    for t in range(T):
        for x in range(nX):
            finite_horizon_q_row(Pr, Rr, supp, nsupp, float(gamma), V[t + 1], x, q)
            policy[t, x] = int(np.argmax(q))
    return V, policy


#: The average-reward and episode-value solvers of :mod:`bbrlcore.mdp.references`, also
#: reachable from here (the contract of issue 34 names them ``solvers``'s).
_FROM_REFERENCES = ("average_reward_rows", "average_reward", "policy_gain_rows",
                    "episode_values_rows")


def __getattr__(name: str):
    if name in _FROM_REFERENCES:
        from bbrlcore.mdp import references

        return getattr(references, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
