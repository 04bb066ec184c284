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
from numba.extending import intrinsic

# ---------------------------------------------------------------------------------------
# The environment


@njit(cache=True, error_model="numpy")
def env_reset(initial_state, nX):
    """Initial state: the fixed one, or uniform over the states when it is -1."""
    if initial_state < 0:
        return np.random.randint(0, nX)
    return initial_state


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


@njit(cache=True, error_model="numpy")
def env_reward_rows(R, Rstd, gaussian, x, u, k):
    """Reward of the transition in slot ``k`` of row (x, u): the mean, plus Gaussian
    noise for Gaussian rewards."""
    if gaussian:
        return R[x, u, k] + Rstd[x, u, k] * np.random.standard_normal()
    return R[x, u, k]


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


@njit(cache=True, error_model="numpy")
def dirichlet_row(alpha, out):
    """Draw ``out ~ Dir(alpha)`` as normalised Gamma variates.

    A zero concentration gives exactly zero probability. If the Gamma variates sum to
    less than 1e-300 (tiny concentrations), all mass goes to one uniformly chosen entry
    of the support.
    """
    n = alpha.shape[0]
    s = 0.0
    npos = 0
    for y in range(n):
        a = alpha[y]
        if a > 0.0:
            g = np.random.gamma(a, 1.0)
            out[y] = g
            s += g
            npos += 1
        else:
            out[y] = 0.0
    if s < 1e-300:
        pick = np.random.randint(0, max(npos, 1))
        for y in range(n):
            if alpha[y] > 0.0 or npos == 0:
                out[y] = 1.0 if pick == 0 else 0.0
                pick -= 1
            else:
                out[y] = 0.0
        return
    inv = 1.0 / s
    for y in range(n):
        out[y] *= inv


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
