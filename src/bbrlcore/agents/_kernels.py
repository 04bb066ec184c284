"""numba building blocks shared by the agents' trajectory kernels.

Environment (a drawn test MDP), the counting model of the posterior mean,
tie-breaking rules and Dirichlet sampling. Randomness comes from numba's internal
generator, seeded once per trajectory by the kernel (``np.random.seed(seed)``), except in
kernels that carry their own :mod:`._rng` state (SBOSS): they call the environment
through :func:`env_transition_rows`, which takes the uniform draw as an argument.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from bbrlcore.mdp._dense import dirichlet_all_rows, dirichlet_row  # noqa: F401 (re-exported)

# ---------------------------------------------------------------------------------------
# The environment


def env_reset(initial_state, nX):
    """Initial state: the fixed one, or uniform over the states when it is -1; or a draw
    of a starting distribution given as a float64 (2, m) array
    (:func:`bbrlcore.mdp.environment.start_array`: the states and their cumulative
    probabilities; m = 0: uniform over the states, as -1; m = 1: that state, no draw).
    The int form and m <= 1 draw exactly as before starting distributions existed."""
    if isinstance(initial_state, np.ndarray):  # (in Python: what the compiled one does)
        m = initial_state.shape[1]
        if m == 0:
            return np.random.randint(0, nX)
        if m == 1:
            return int(initial_state[0, 0])
        return int(start_slot(initial_state, np.random.random()))
    if initial_state < 0:
        return np.random.randint(0, nX)
    return initial_state


@overload(env_reset, jit_options={"error_model": "numpy"})
def _env_reset_jit(initial_state, nX):
    if isinstance(initial_state, types.Array):
        def impl_start(initial_state, nX):
            m = initial_state.shape[1]
            if m == 0:
                return np.random.randint(0, nX)
            if m == 1:
                return np.int64(initial_state[0, 0])
            return start_slot(initial_state, np.random.random())
        return impl_start

    def impl(initial_state, nX):
        if initial_state < 0:
            return np.random.randint(0, nX)
        return np.int64(initial_state)
    return impl


@njit(cache=True, error_model="numpy")
def start_slot(start, s):
    """The state of the starting distribution ``start`` (m >= 2 columns) drawn by the
    uniform ``s`` in [0, 1): the first state whose cumulative probability exceeds s."""
    m = start.shape[1]
    for i in range(m - 1):
        if s < start[1, i]:
            return np.int64(start[0, i])
    return np.int64(start[0, m - 1])


# ---------------------------------------------------------------------------------------
# The environment on sparse rows (bbrlcore.mdp.rows): P[x, u, k] is the probability of
# the transition to succ[x, u, k]; the functions return the slot k of the transition
# drawn (the next state is succ[x, u, k])


@njit(cache=True, error_model="numpy")
def env_transition_rows(P, nsucc, x, u, s):
    """Slot of the next state for the uniform draw ``s`` in [0, 1): the first slot k
    with s < sum_{j<=k} P(x,u,j), the successors in increasing order (on a dense row,
    the smallest y with s < sum_{z<=y} P(x,u,z)). Rounding may leave a row summing to
    slightly less than 1: the draw then falls back to its last slot of positive
    probability (not to state 0 as the reference does)."""
    acc = 0.0
    last = 0
    for k in range(nsucc[x, u]):
        p = P[x, u, k]
        if p > 0.0:
            acc += p
            last = k
            if s < acc:
                return k
    return last


@njit(cache=True, error_model="numpy")
def env_step_rows(P, nsucc, x, u):
    """Draw the slot of the next state with numba's generator."""
    return env_transition_rows(P, nsucc, x, u, np.random.random())


@njit(cache=True, error_model="numpy")
def likeliest_slot(W, x, u, n):
    """The slot of the largest of ``W[x, u, :n]`` (the first on ties): the cost probes'
    "most likely successor" of a step played in a model."""
    k = 0
    for j in range(1, n):
        if W[x, u, j] > W[x, u, k]:
            k = j
    return k


#: The reward modes of the kernels' ``gaussian`` argument: constant rewards (``R``), Gaussian
#: rewards (``R + Rstd·Z``, the paper's), reward laws (``Rstd`` then holds the laws'
#: parameters, :func:`bbrlcore.mdp.environment.law_rows`).
REWARD_CONSTANT, REWARD_GAUSSIAN, REWARD_LAWS = 0, 1, 2


@njit(cache=True, error_model="numpy")
def env_reward_rows(R, Rstd, gaussian, x, u, k):
    """Reward of the transition in slot ``k`` of row (x, u): the mean ``R``, plus Gaussian
    noise for Gaussian rewards (``gaussian`` true or 1), or a draw of its law
    (``gaussian`` 2: :func:`env_law_reward`). Constant rewards draw nothing."""
    if gaussian:
        if gaussian == REWARD_LAWS:
            return env_law_reward(R, Rstd, x, u, k)
        return R[x, u, k] + Rstd[x, u, k] * np.random.standard_normal()
    return R[x, u, k]


@njit(cache=True, error_model="numpy")
def env_law_reward(R, Rstd, x, u, k):
    """A draw of the reward law of slot ``k`` of row (x, u) with numba's generator:
    ``Rstd`` (5·nX, nU, K) stacks the laws' kind code, loc, scale, a and b
    (:func:`bbrlcore.mdp.environment.law_rows`); a constant slot pays ``R`` and draws
    nothing."""
    nX = R.shape[0]
    kind = Rstd[x, u, k]
    if kind == 0.0:
        return R[x, u, k]
    loc = Rstd[nX + x, u, k]
    scale = Rstd[2 * nX + x, u, k]
    if kind == 1.0:
        return loc + scale * np.random.standard_normal()
    a = Rstd[3 * nX + x, u, k]
    if kind == 2.0:
        return loc + scale if np.random.random() < a else loc
    return loc + scale * np.random.beta(a, Rstd[4 * nX + x, u, k])


# ---------------------------------------------------------------------------------------
# The counting model on sparse rows


@njit(cache=True, error_model="numpy")
def rows_model_init(counts, nsucc):
    """Counting model from initial pseudo-counts on sparse rows: ``(N, Np, P)`` with
    ``P = N / Np`` row by row (slots of zero count have probability 0 until observed)."""
    nX, nU, K = counts.shape
    N = counts.copy()
    Np = np.zeros((nX, nU))
    P = np.zeros((nX, nU, K))
    for x in range(nX):
        for u in range(nU):
            s = 0.0
            for k in range(nsucc[x, u]):
                s += N[x, u, k]
            Np[x, u] = s
            for k in range(nsucc[x, u]):
                if N[x, u, k] > 0.0:
                    P[x, u, k] = N[x, u, k] / s
    return N, Np, P


@njit(cache=True, error_model="numpy")
def rows_model_update(N, Np, P, nsucc, x, u, k):
    """Observe the transition in slot ``k`` of row (x, u): N += 1, Np += 1, row
    recomputed."""
    N[x, u, k] += 1.0
    Np[x, u] += 1.0
    inv = 1.0 / Np[x, u]
    for j in range(nsucc[x, u]):
        P[x, u, j] = N[x, u, j] * inv


# ---------------------------------------------------------------------------------------
# The counting model (posterior mean of the Dirichlet)


@njit(cache=True, error_model="numpy")
def model_init(counts):
    """Counting model from initial pseudo-counts: ``(N, Np, P, supp, nsupp)``.

    ``P = N / Np`` row by row; ``supp[x, u, :nsupp[x, u]]`` lists the y with N > 0 in
    increasing order (the only terms of the Bellman sums).
    """
    nX, nU, _ = counts.shape
    N = counts.copy()
    Np = np.zeros((nX, nU))
    P = np.zeros((nX, nU, nX))
    supp = np.zeros((nX, nU, nX), dtype=np.int64)
    nsupp = np.zeros((nX, nU), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            s = 0.0
            for y in range(nX):
                s += N[x, u, y]
            Np[x, u] = s
            k = 0
            for y in range(nX):
                if N[x, u, y] > 0.0:
                    P[x, u, y] = N[x, u, y] / s
                    supp[x, u, k] = y
                    k += 1
            nsupp[x, u] = k
    return N, Np, P, supp, nsupp


@njit(cache=True, error_model="numpy")
def support_insert(supp, nsupp, x, u, y):
    """Insert ``y`` into the sorted support ``supp[x, u, :nsupp[x, u]]`` (not present)."""
    k = nsupp[x, u]
    while k > 0 and supp[x, u, k - 1] > y:
        supp[x, u, k] = supp[x, u, k - 1]
        k -= 1
    supp[x, u, k] = y
    nsupp[x, u] += 1


@njit(cache=True, error_model="numpy")
def model_update(N, Np, P, supp, nsupp, x, u, y):
    """Observe (x, u, y): N(x,u,y) += 1, Np(x,u) += 1, recompute row (x, u) of P."""
    if N[x, u, y] == 0.0:
        support_insert(supp, nsupp, x, u, y)
    N[x, u, y] += 1.0
    Np[x, u] += 1.0
    inv = 1.0 / Np[x, u]
    for k in range(nsupp[x, u]):
        z = supp[x, u, k]
        P[x, u, z] = N[x, u, z] * inv


# ---------------------------------------------------------------------------------------
# Action choice


@njit(cache=True, error_model="numpy")
def argmax_random_tie(q):
    """Index of the maximum of ``q``; exact ties broken uniformly at random."""
    n = q.shape[0]
    best = q[0]
    count = 1
    for i in range(1, n):
        if q[i] > best:
            best = q[i]
            count = 1
        elif q[i] == best:
            count += 1
    if count == 1:
        for i in range(n):
            if q[i] == best:
                return i
    pick = np.random.randint(0, count)
    for i in range(n):
        if q[i] == best:
            if pick == 0:
                return i
            pick -= 1
    return 0


# ---------------------------------------------------------------------------------------
# Dirichlet sampling


# dirichlet_row, dirichlet_all_rows: in bbrlcore.mdp._dense (draw_mdp of a prior +dir<α>
# uses them too, and the mdp room may not import the agents room); imported above.


# ---------------------------------------------------------------------------------------
# Bit tricks


@intrinsic
def ctz64(typingctx, x):
    """Index of the lowest set bit of a non-zero ``uint64`` (LLVM's ``cttz``, one
    instruction on x86-64): ``while mask: y = ctz64(mask); mask &= mask - 1`` visits the
    set bits in increasing order."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None

    def codegen(context, builder, sig, args):
        # the zero-is-poison flag off: ctz64(0) = 64
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


# ---------------------------------------------------------------------------------------
# The posterior mean under a Dirichlet on every next state (+dir<α>,
# bbrlcore.mdp.transition_prior): the row's slots and its background


@njit(cache=True, error_model="numpy")
def rows_model_init_all(counts, nsucc, nX, a_all):
    r""":func:`rows_model_init` under a Dirichlet of concentration ``a_all`` on every one
    of the ``nX`` next states (``counts``: α on every slot): ``Np`` is the row's total
    concentration :math:`S\alpha + n` (the slots' and the background's, whose
    :math:`S - k` states have α each), so the mean of a slot is
    :math:`(\alpha + c)/(S\alpha + n)` and of a background state
    :math:`\alpha/(S\alpha + n)`; :func:`rows_model_update` keeps both right."""
    nR, nU, K = counts.shape
    N = counts.copy()
    Np = np.full((nR, nU), nX * a_all)
    P = np.zeros((nR, nU, K))
    for x in range(nR):
        for u in range(nU):
            for k in range(nsucc[x, u]):
                P[x, u, k] = N[x, u, k] / Np[x, u]
    return N, Np, P


@njit(cache=True, error_model="numpy")
def q_iteration_all(P, R, succ, nsucc, Np, a_all, learn, gamma, horizon, Q):
    r"""The BBRL Q-iteration (:func:`bbrlcore.mdp.solvers.q_iteration_rows`: warm-started
    from ``Q``, stopped when a sweep changes no value by more than 0.01 or after
    ``horizon + 1`` sweeps) on the posterior mean of a Dirichlet on every next state
    (:func:`rows_model_init_all`): a row's background adds
    :math:`\frac{\alpha}{N_p}\bigl((S-k)\,\bar r + \gamma(\sum_y V(y) - \sum_{j<k}
    V(y_j))\bigr)`, :math:`\sum_y V(y)` once per sweep, so a sweep costs the slots plus
    one term per pair; :math:`\bar r` is 0 (known rewards: every reward of the prior is
    on a slot) or, ``learn``, the pair's reward (every slot's). Returns the sweeps."""
    nX, nU, _ = P.shape
    V = np.empty(nX)
    sweeps = 0
    while True:
        sv = 0.0
        for y in range(nX):
            m = Q[y, 0]
            for v in range(1, nU):
                if Q[y, v] > m:
                    m = Q[y, v]
            V[y] = m
            sv += m
        delta = 0.0
        for x in range(nX):
            for u in range(nU):
                acc = 0.0
                vin = 0.0
                n = nsucc[x, u]
                for k in range(n):
                    v = V[succ[x, u, k]]
                    acc += P[x, u, k] * (R[x, u, k] + gamma * v)
                    vin += v
                rb = R[x, u, 0] if learn and n > 0 else 0.0
                acc += a_all / Np[x, u] * ((nX - n) * rb + gamma * (sv - vin))
                d = abs(acc - Q[x, u])
                if d > delta:
                    delta = d
                Q[x, u] = acc
        sweeps += 1
        if delta <= 0.01 or sweeps >= horizon + 1:
            return sweeps


@njit(cache=True, error_model="numpy")
def guez_sweep_all(P, R, succ, nsucc, Np, a_all, rbg, gamma, V, Vnew, pi):
    r"""One Guez sweep (Jacobi, lowest-index ties: :func:`bbrlcore.mdp.solvers.
    guez_sweep_rows`) on the posterior mean of a Dirichlet on every next state
    (:func:`rows_model_init_all`): a row's background adds
    :math:`\frac{\alpha}{N_p}\bigl((S-k)\,r_b(x,u) + \gamma(\sum_y V(y) - \sum_{j<k}
    V(y_j))\bigr)`, ``rbg[x, u]`` the reward of a transition to a background state (BEB:
    its bonus, plus the pair's mean reward when the rewards are learned), :math:`\sum_y
    V(y)` once per sweep. Returns :math:`\sum_x (V_{new}(x) - V(x))^2`."""
    nX, nU, _ = P.shape
    sv = 0.0
    for y in range(nX):
        sv += V[y]
    diff2 = 0.0
    for x in range(nX):
        best = -np.inf
        bu = 0
        for u in range(nU):
            acc = 0.0
            vin = 0.0
            n = nsucc[x, u]
            for k in range(n):
                v = V[succ[x, u, k]]
                acc += P[x, u, k] * (R[x, u, k] + gamma * v)
                vin += v
            acc += a_all / Np[x, u] * ((nX - n) * rbg[x, u] + gamma * (sv - vin))
            if acc > best:
                best = acc
                bu = u
        Vnew[x] = best
        pi[x] = bu
        d = best - V[x]
        diff2 += d * d
    return diff2


@njit(cache=True, error_model="numpy")
def guez_value_iteration_all(P, R, succ, nsucc, Np, a_all, rbg, gamma, tol, V, pi, Vnew,
                             max_sweeps):
    """The Guez value iteration (warm-started from ``V``; ``V`` and ``pi`` updated in
    place) by :func:`guez_sweep_all` sweeps until one changes the values by at most
    ``tol`` (Euclidean) or ``max_sweeps`` ran; ``Vnew`` is a work buffer of nX. Returns
    the sweeps: sweep for sweep the Guez value iteration of the dense mean model."""
    tol2 = tol * tol
    sweeps = 0
    nX = V.shape[0]
    while True:
        diff2 = guez_sweep_all(P, R, succ, nsucc, Np, a_all, rbg, gamma, V, Vnew, pi)
        for i in range(nX):
            V[i] = Vnew[i]
        sweeps += 1
        if diff2 <= tol2 or sweeps >= max_sweeps:
            return sweeps
