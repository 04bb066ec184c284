r"""Colosseum's continuing PSRL (``psrl --param form=colosseum``; issue 43).

The ``PSRLContinuous`` agent Colosseum's benchmark runs (``colosseum/agent/agents/
infinite_horizon/posterior_sampling.py``, Colosseum 1.2): Agrawal & Jia's optimistic
posterior sampling (2017) as Colosseum codes it, at its benchmark configuration
(``benchmark/cached_hyperparameters/agent_configs/PSRLContinuous.gin``,
:data:`COLOSSEUM_BENCHMARK`), read for this and reproduced step by step in one numba
kernel (:func:`_trajectory`; ``tests/test_psrl_colosseum.py`` replays Colosseum's code
on the kernel's transitions and random numbers). It is another algorithm than bbrl's
PSRL (:mod:`.psrl`, the default ``form=bbrl``):

- **Prior** (Colosseum's ``BayesianMDPModel`` defaults and the gin's reward prior):
  transitions :math:`\mathrm{Dir}(1/S, \ldots, 1/S)` over **every** next state of each
  pair (the full layout: S slots a row, whatever the bbrl prior's support); rewards
  unknown under Colosseum's Normal–inverse-gamma with ``rewards_prior_prms = [m, 1, 1,
  1]`` — bbrl's ``+rnig<m>`` (the gin's m = 0.23589883401606418). Both posteriors are
  held in **float32**, as Colosseum's ``ConjugateModel`` stores them: a count adds 1 to
  a float32 concentration; one reward r updates :math:`(\mu, \lambda, \alpha, \beta)`
  in NumPy 1's arithmetic (float32 scalars meeting Python numbers give float64) and is
  stored back in float32.
- **Constants** (S states, A actions, T the run's steps — Colosseum's optimisation
  horizon — and p = 0.05): :math:`\psi = \min(60, \max(2, \lfloor w_\psi S \log(SA/p)
  \rfloor))`, :math:`\omega = w_\omega \log(T/p)`, :math:`\kappa = w_\kappa \log(T/p)`,
  :math:`\eta = \max(5, \min(10 S, w_\eta(\sqrt{TS/A} + 12\,\omega S^4)))`
  (:func:`colosseum_constants`); with :math:`S^2 A > 6{,}000{,}000` no optimistic
  sampling (one posterior sample, real actions). κ enters only Colosseum's matrix ``M``,
  which nothing reads; it is computed and reported, not used.
- **Episodes.** After each step (the posteriors updated first), the episode ends when
  the pair just played has been played in the episode at least as often as before it
  (:math:`N \ge 2(N - \nu)`; a pair's first visit ends one). The first model is made
  before the first step (``before_start_interacting``).
- **Optimistic sampling** (each episode's end): ψ copies of every pair. A pair with
  :math:`N(x,u) < \eta` gets, in copy j, Colosseum's :math:`P^-`: :math:`\hat p -
  \min(\sqrt{3\hat p \log(4S)/N} + 3\log(4S)/N, \hat p)` with all the leftover mass
  :math:`1 - \sum P^-` on a state z drawn uniformly per copy (the same z for every such
  pair; Colosseum's in-place ``+= / -=`` on column z, rounding included). A pair with
  :math:`N \ge \eta` gets a posterior sample (Colosseum's ``sample_sa``: float32 Gamma
  variates over the S states divided by :math:`10^{-5}` + their float32 sum, NumPy's
  pairwise order). The extended MDP has A·ψ actions, extended action :math:`k = u\psi +
  j` being copy j of action u; its real action is :math:`k // \psi`.
- **Rewards**: one posterior sample per pair (τ ~ Gamma(α, 1/β) in float32, then
  :math:`\mathcal N(\mu, 1/(\lambda\tau))` in float32) and, Colosseum's quirk kept,
  tiled with ``np.tile(R, (1, psi))``: extended action k is paid :math:`R(x, k \bmod A)`,
  **not** the reward of its real action :math:`k // \psi` (:func:`tile_rewards`).
- **Planning**: Colosseum's ``discounted_value_iteration`` of the extended model, γ =
  0.99, float32, from V = 0 until the largest change of V is below :math:`10^{-3}`: its
  dense Gauss–Seidel sweep (``(gamma * T[s]) @ V``, the same BLAS call) when the model
  has at most 270,000 entries or a fifth or more of them nonzero, else its sparse
  Jacobi sweep (pydata ``sparse`` COO product: each row summed in float32 in increasing
  state order). The agent plays the greedy extended action of the last Q-values, exact
  float32 ties uniformly at random, and so its real action.
- **Indicators** (Colosseum's ``current_optimal_stochastic_policy``): the greedy policy
  of the posterior's MAP model — the float32 concentrations normalised, the NIG means —
  discounted with γ = 0.99, bbrl's evaluation convention for PSRL (value iteration to a
  1e-10 relative tolerance, warm-started from the previous row; exact ties uniform,
  where Colosseum stops at 1e-3 in float32 and picks one tied action with a fixed seed).

**Memory.** The extended model is held sparsely: a pair below η keeps the support of its
counts plus z in each copy, a posterior-sampled pair S entries per copy; the dense float32
model (:math:`\psi S^2 A \cdot 4` bytes: 647 MB on Colosseum-CC-MiniGridRooms-0) is made
only when Colosseum's dense sweep applies (at most 270,000 entries, or a fifth of them
nonzero: posterior-sampled pairs, :math:`N \ge \eta \approx 10 S` visits each).

**What cannot match Colosseum**: its random numbers. Colosseum draws from NumPy
``RandomState`` streams (the agent's, the transition model's and the reward model's, each
seeded with the run's seed); bbrl draws the model's numbers from its own xoshiro256**
generator (:mod:`._rng`) seeded from the trajectory's seed (:func:`model_generator`),
and the environment and the action ties from numba's generator. The draw order of an
episode's end (:func:`_optimistic_sampling`, :func:`_sample_rewards`): for each copy j
= 0 … ψ−1, the pairs with :math:`N \ge \eta` in row-major order, S Gamma variates each
(states in order), then z (``rng_randint(S)``) if some pair is below η; then one Gamma
variate per pair, then one normal variate per pair (row-major). Colosseum's initial
random Q-values (overwritten before the first action) are not drawn. Also not kept:
Colosseum's wall-clock limits and its stop of training.

Its counter is ``psrl``'s ``resamples``: the models made (the episodes' ends, the first
model included).

Cost: a solve is about :math:`\log(10^{-3}/r_{max})/\log 0.99 \approx 700` sweeps over
the extended model, once per episode, and episodes come at every pair's first visit and
at each doubling of its count (:data:`COST_SWEEPS` in :func:`cost_features`).

Paper: S. Agrawal and R. Jia, "Optimistic posterior sampling for reinforcement learning:
worst-case regret bounds", NIPS 2017 (arXiv:1705.07041).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents._indicators import (
    Request,
    final_weight,
    finish,
    gain_from,
    gain_scratch,
    ind_alloc,
    is_row,
    needs_evaluation,
    row_continuing,
)
from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents._layout import setting
from bbrlcore.agents._posterior import generator_from_numba
from bbrlcore.agents._rng import rng_gamma, rng_normal, rng_randint
from bbrlcore.agents.base import MAX_AGENT_MEMORY_BYTES, Episode, reward_buffer
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import rows
from bbrlcore.mdp.reward_prior import reward_prior_of

#: Colosseum's benchmark configuration of its ``PSRLContinuous``
#: (``colosseum/benchmark/cached_hyperparameters/agent_configs/PSRLContinuous.gin``), as
#: ``psrl``'s parameters: ``--param form=colosseum`` (the weights default to these; the
#: gin's reward prior mean is the prior's ``+rnig0.23589883401606418``).
COLOSSEUM_BENCHMARK: dict[str, Any] = {
    "form": "colosseum",
    "psi_weight": 0.016737988780906453,
    "omega_weight": 0.1104641036501887,
    "kappa_weight": 2.694052439968039,
    "eta_weight": 1.3826913305347895e-07,
}
#: The gin's reward prior mean (``rewards_prior_prms = [0.23589883401606418, 1, 1, 1]``).
COLOSSEUM_REWARD_PRIOR_MEAN = 0.23589883401606418
#: ``PSRLContinuous``'s defaults: probability of failure p, largest ψ, and the size
#: (S²A) above which it samples no optimistic copies.
P_FAILURE = 0.05
MAX_PSI = 60
NO_OPTIMISM_ABOVE = 6_000_000
#: ``discounted_value_iteration``'s defaults: discount, stopping threshold, and the
#: thresholds of its sparse path (more than this many entries, less than this share
#: nonzero).
VI_GAMMA = 0.99
VI_EPSILON = 1e-3
SPARSE_SIZE = 300 * 3 * 300
SPARSE_SHARE = 0.2
DP_MAX_ITERATION = 1_000_000
#: bbrl's evaluation of the MAP policy (as :mod:`.psrl`'s): discount, relative tolerance,
#: largest number of sweeps.
MAP_GAMMA = 0.99
MAP_TOLERANCE = 1e-10
MAP_MAX_SWEEPS = 100_000


def colosseum_constants(S: int, A: int, T: int, psi_weight: float, omega_weight: float,
                        kappa_weight: float, eta_weight: float,
                        p: float = P_FAILURE) -> dict[str, Any]:
    """``PSRLContinuous.__init__``'s ψ, ω, κ, η and whether it samples optimistically,
    for S states, A actions and the optimisation horizon T, computed as Colosseum does.

    >>> c = colosseum_constants(25, 2, 3000, **{k: v for k, v in
    ...     COLOSSEUM_BENCHMARK.items() if k != "form"})
    >>> c["psi"], c["eta"], c["optimistic"]
    (2, 5.0, True)
    """
    psi = min(MAX_PSI, max(2, int(psi_weight * (S * np.log(S * A / p)))))
    omega = omega_weight * np.log(T / p)
    kappa = kappa_weight * np.log(T / p)
    eta = max(5, min(10 * S, eta_weight * (np.sqrt(T * S / A) + 12 * omega * S ** 4)))
    return {"psi": int(psi), "omega": float(omega), "kappa": float(kappa),
            "eta": float(eta), "optimistic": not (S ** 2 * A) > NO_OPTIMISM_ABOVE}


# ---------------------------------------------------------------------------------------
# NumPy's summation orders


@njit(cache=True, error_model="numpy")
def _block32(a, lo, n):
    """NumPy's ``FLOAT_pairwise_sum`` of a block of at most 128 entries."""
    if n < 8:
        res = np.float32(0.0)
        for i in range(n):
            res = np.float32(res + a[lo + i])
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        r0 = np.float32(r0 + a[lo + i])
        r1 = np.float32(r1 + a[lo + i + 1])
        r2 = np.float32(r2 + a[lo + i + 2])
        r3 = np.float32(r3 + a[lo + i + 3])
        r4 = np.float32(r4 + a[lo + i + 4])
        r5 = np.float32(r5 + a[lo + i + 5])
        r6 = np.float32(r6 + a[lo + i + 6])
        r7 = np.float32(r7 + a[lo + i + 7])
        i += 8
    res = np.float32(np.float32(np.float32(r0 + r1) + np.float32(r2 + r3))
                     + np.float32(np.float32(r4 + r5) + np.float32(r6 + r7)))
    while i < n:
        res = np.float32(res + a[lo + i])
        i += 1
    return res


@njit(cache=True, error_model="numpy")
def _block_sparse(pos, val, m, lo, n):
    """:func:`_block32`'s grouping, in float64, of a block of at most 128 positions of a
    row that is zero except at the increasing positions ``pos[:m]``."""
    if n < 8:
        res = 0.0
        for i in range(m):
            if lo <= pos[i] < lo + n:
                res += val[i]
        return res
    r = np.zeros(8)
    mm = n - n % 8
    for i in range(m):
        q = pos[i] - lo
        if 0 <= q < mm:
            r[q % 8] += val[i]
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for i in range(m):
        q = pos[i] - lo
        if mm <= q < n:
            res += val[i]
    return res


@njit(cache=True, error_model="numpy")
def _pairwise_tree(a, pos, val, m, lo, n, sparse):
    """NumPy's pairwise recursion (blocks of at most 128, split at half rounded down to
    a multiple of 8, the halves' sums added), without recursion (numba's cache does not
    keep recursive functions): float32 on ``a`` or, ``sparse``, float64 on ``pos``,
    ``val``."""
    st_lo = np.empty(64, dtype=np.int64)
    st_n = np.empty(64, dtype=np.int64)
    st_stage = np.empty(64, dtype=np.int64)
    vals = np.empty(64)
    top = 1
    st_lo[0], st_n[0], st_stage[0] = lo, n, 0
    nv = 0
    while top > 0:
        ll, nn, stage = st_lo[top - 1], st_n[top - 1], st_stage[top - 1]
        if nn <= 128:
            vals[nv] = _block_sparse(pos, val, m, ll, nn) if sparse else _block32(a, ll, nn)
            nv += 1
            top -= 1
            continue
        n2 = nn // 2
        n2 -= n2 % 8
        if stage == 0:
            st_stage[top - 1] = 1
            st_lo[top], st_n[top], st_stage[top] = ll, n2, 0
            top += 1
        elif stage == 1:
            st_stage[top - 1] = 2
            st_lo[top], st_n[top], st_stage[top] = ll + n2, nn - n2, 0
            top += 1
        else:
            if sparse:
                vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            else:
                vals[nv - 2] = np.float32(np.float32(vals[nv - 2]) + np.float32(vals[nv - 1]))
            nv -= 1
            top -= 1
    return vals[0]


@njit(cache=True, error_model="numpy")
def pairwise_sum32(a, lo, n):
    """NumPy's pairwise sum of the float32 ``a[lo:lo+n]`` in float32 (its
    ``FLOAT_pairwise_sum``: the order ``np.sum`` adds a contiguous row in)."""
    if n <= 128:
        return _block32(a, lo, n)
    return np.float32(_pairwise_tree(a, np.zeros(0, np.int32), np.zeros(0), 0, lo, n,
                                     False))


@njit(cache=True, error_model="numpy")
def pairwise_sum_sparse(pos, val, m, lo, n):
    """NumPy's pairwise float64 sum of a length-``n`` row starting at position ``lo``
    that is zero except at the increasing positions ``pos[:m]`` (values ``val[:m]``):
    the zeros change no partial sum, so only the grouping of the nonzeros is NumPy's."""
    if n <= 128:
        return _block_sparse(pos, val, m, lo, n)
    return _pairwise_tree(np.zeros(0, np.float32), pos, val, m, lo, n, True)


# ---------------------------------------------------------------------------------------
# Colosseum's posterior models (float32)


@njit(cache=True, error_model="numpy")
def model_generator(seed):
    """The generator of the model's random numbers of the trajectory of ``seed``: numba's
    generator seeded with it, then one of its draws seeds xoshiro256** (the kernel does
    this first; numba's generator then drives the environment and the action ties)."""
    np.random.seed(seed)
    return generator_from_numba()


@njit(cache=True, error_model="numpy")
def nig_update(nig, x, u, r):
    """Colosseum's ``N_NIG.update_sa`` with one reward ``r`` (float64) on the float32
    hyper-parameters ``nig[x, u] = (mu, lambda, alpha, beta)``, in NumPy 1's arithmetic:
    float32 scalars with Python numbers give float64, float32 with float32 stays float32,
    the result stored in float32."""
    mu0, lam0, a0, b0 = nig[x, u, 0], nig[x, u, 1], nig[x, u, 2], nig[x, u, 3]
    lam1 = np.float64(lam0) + 1.0
    mu1 = (np.float64(np.float32(lam0 * mu0)) + 1.0 * r) / lam1
    a1 = np.float64(a0) + 0.5
    d = r - np.float64(mu0)
    prior_disc = np.float64(lam0) * 1.0 * (d * d) / lam1
    b1 = np.float64(b0) + 0.5 * (0.0 + prior_disc)
    nig[x, u, 0] = np.float32(mu1)
    nig[x, u, 1] = np.float32(lam1)
    nig[x, u, 2] = np.float32(a1)
    nig[x, u, 3] = np.float32(b1)


@njit(cache=True, error_model="numpy")
def _sample_rewards(nig, rs, Rs):
    """``Rs`` (S, A) float32 ← Colosseum's ``N_NIG.sample``: τ = float32(Gamma(α) ·
    float32(1/β)), then float32(μ + float32(√float32(1/(λτ))) · z); all the Gamma
    variates (pairs in row-major order), then all the normal ones."""
    S, A = Rs.shape
    tau = np.empty((S, A), dtype=np.float32)
    for x in range(S):
        for u in range(A):
            scale = np.float32(np.float32(1.0) / nig[x, u, 3])
            tau[x, u] = np.float32(np.float64(scale) * rng_gamma(rs, np.float64(nig[x, u, 2])))
    for x in range(S):
        for u in range(A):
            var = np.float32(np.float32(1.0) / np.float32(nig[x, u, 1] * tau[x, u]))
            sd = np.float32(np.sqrt(var))
            Rs[x, u] = np.float32(np.float64(nig[x, u, 0])
                                  + np.float64(sd) * rng_normal(rs))


@njit(cache=True, error_model="numpy")
def tile_rewards(Rs, psi, out):
    """``out`` (S, A·ψ) ← ``np.tile(Rs, (1, psi))``, Colosseum's extended rewards:
    extended action k (copy k % ψ of real action k // ψ) is paid ``Rs[x, k % A]`` —
    Colosseum's quirk, kept: not the reward of its real action."""
    S, A = Rs.shape
    for x in range(S):
        for k in range(A * psi):
            out[x, k] = Rs[x, k % A]


@njit(cache=True, error_model="numpy")
def _insert_sorted(sup, sn, x, u, y):
    """Insert the next state ``y`` into the increasing support list of (x, u)."""
    n = sn[x, u]
    i = n
    while i > 0 and sup[x, u, i - 1] > y:
        sup[x, u, i] = sup[x, u, i - 1]
        i -= 1
    sup[x, u, i] = y
    sn[x, u] = n + 1


@njit(cache=True, error_model="numpy")
def _p_minus(cnt, sup, sn, Ntot, x, u, logc, pm):
    """Colosseum's :math:`P^-` of (x, u) on its support (float64, NumPy's operations
    in its order), into ``pm[:sn]``."""
    n = max(Ntot[x, u], 1)
    for i in range(sn[x, u]):
        c = cnt[x, u, sup[x, u, i]]
        ph = c / n
        nn = max(c, 1)
        bonus = math.sqrt(3.0 * ph * logc / nn) + 3.0 * logc / nn
        pm[i] = ph - min(bonus, ph)


@njit(cache=True, error_model="numpy")
def _optimistic_sampling(alpha, cnt, sup, sn, Ntot, eta, psi, optimistic, rs, ptr, idx,
                         val, rlen, pm, g):
    """The extended model of an episode's end (module docstring) into the rows ``(ptr,
    idx, val, rlen)`` (row ``(x·A + u)·ψ + j``: copy j of (x, u); states increasing),
    reallocating them when too small. Returns ``(idx, val, nnz)``, nnz the float32
    nonzeros."""
    S, A, _ = alpha.shape
    # capacities: below eta the support plus z, else every state
    total = 0
    any_simple = False
    for x in range(S):
        for u in range(A):
            simple = optimistic and Ntot[x, u] < eta
            any_simple = any_simple or simple
            w = sn[x, u] + 1 if simple else S
            for j in range(psi):
                ptr[(x * A + u) * psi + j] = total
                total += w
    ptr[S * A * psi] = total
    if idx.shape[0] < total:
        idx = np.empty(total, dtype=np.int32)
        val = np.empty(total, dtype=np.float32)
    logc = math.log(4 * S)
    psum = np.zeros((S, A))
    nnz = 0
    if any_simple:
        for x in range(S):
            for u in range(A):
                if Ntot[x, u] < eta:
                    _p_minus(cnt, sup, sn, Ntot, x, u, logc, pm[x, u])
                    psum[x, u] = pairwise_sum_sparse(sup[x, u], pm[x, u], sn[x, u], 0, S)
    for j in range(psi):
        for x in range(S):
            for u in range(A):
                if optimistic and Ntot[x, u] < eta:
                    continue
                # Colosseum's sample_sa: float32 Gamma variates / (1e-5 + their sum)
                for y in range(S):
                    g[y] = np.float32(rng_gamma(rs, np.float64(alpha[x, u, y])))
                den = np.float32(np.float32(1e-5) + pairwise_sum32(g, 0, S))
                r = (x * A + u) * psi + j
                p = ptr[r]
                for y in range(S):
                    v = np.float32(g[y] / den)
                    idx[p + y] = y
                    val[p + y] = v
                    if v != 0.0:
                        nnz += 1
                rlen[r] = S
        if not any_simple:
            continue
        z = rng_randint(rs, S)
        for x in range(S):
            for u in range(A):
                if not (Ntot[x, u] < eta):
                    continue
                summing = 1.0 - psum[x, u]
                r = (x * A + u) * psi + j
                p = ptr[r]
                m = 0
                placed = False
                for i in range(sn[x, u]):
                    y = sup[x, u, i]
                    if not placed and y >= z:
                        if y == z:  # Colosseum's += then -= on column z (rounding kept)
                            w = pm[x, u, i] + summing
                            idx[p + m] = z
                            val[p + m] = np.float32(w)
                            pm[x, u, i] = w - summing
                            psum[x, u] = pairwise_sum_sparse(sup[x, u], pm[x, u],
                                                             sn[x, u], 0, S)
                            if val[p + m] != 0.0:
                                nnz += 1
                            m += 1
                            placed = True
                            continue
                        idx[p + m] = z
                        val[p + m] = np.float32(0.0 + summing)
                        if val[p + m] != 0.0:
                            nnz += 1
                        m += 1
                        placed = True
                    idx[p + m] = y
                    val[p + m] = np.float32(pm[x, u, i])
                    if val[p + m] != 0.0:
                        nnz += 1
                    m += 1
                if not placed:
                    idx[p + m] = z
                    val[p + m] = np.float32(0.0 + summing)
                    if val[p + m] != 0.0:
                        nnz += 1
                    m += 1
                rlen[r] = m
    return idx, val, nnz


# ---------------------------------------------------------------------------------------
# Colosseum's discounted value iteration (float32)


@njit(cache=True, error_model="numpy")
def vi_dense(T, R, gamma, epsilon, Q):
    """Colosseum's ``_discounted_value_iteration`` (its numba code, the same statements):
    Gauss–Seidel sweeps from V = 0 in float32 until the largest change of V is below
    ``epsilon``; ``Q`` (float32) receives the last sweep's. Returns the sweeps."""
    n_states = T.shape[0]
    gamma = np.float32(gamma)
    V = np.zeros(n_states, dtype=np.float32)
    for it in range(DP_MAX_ITERATION):
        V_old = V.copy()
        for s in range(n_states):
            Q[s] = R[s] + gamma * T[s] @ V
            V[s] = Q[s].max()
        diff = np.abs(V_old - V).max()
        if diff < epsilon:
            return it + 1
    return -DP_MAX_ITERATION


@njit(cache=True, error_model="numpy")
def vi_sparse(ptr, idx, val, rlen, R, gamma, epsilon, Q):
    """Colosseum's ``_discounted_value_iteration_sparse`` on the extended rows: Jacobi
    sweeps from V = 0 in float32, ``T @ V`` as pydata ``sparse``'s COO product (each
    row's nonzeros summed in float32 in increasing state order), until the largest change
    of V is below ``epsilon``. Returns the sweeps."""
    S, K = R.shape
    gamma = np.float32(gamma)
    V = np.zeros(S, dtype=np.float32)
    W = np.zeros(S, dtype=np.float32)
    for it in range(DP_MAX_ITERATION):
        diff = np.float32(0.0)
        for s in range(S):
            best = np.float32(-np.inf)
            for k in range(K):
                r = s * K + k
                p = ptr[r]
                acc = np.float32(0.0)
                for i in range(rlen[r]):
                    v = val[p + i]
                    if v != 0.0:
                        acc = np.float32(acc + np.float32(v * V[idx[p + i]]))
                q = np.float32(R[s, k] + np.float32(gamma * acc))
                Q[s, k] = q
                if k == 0 or q > best:
                    best = q
            W[s] = best
            d = np.float32(abs(np.float32(V[s] - best)))
            if d > diff:
                diff = d
        V[:] = W
        if diff < epsilon:
            return it + 1
    return -DP_MAX_ITERATION


@njit(cache=True, error_model="numpy")
def solve_extended(ptr, idx, val, rlen, nnz, R, S, sparse_size, Td, Q):
    """Colosseum's ``discounted_value_iteration`` of the extended model: the sparse path
    when it has more than ``sparse_size`` entries and less than a fifth nonzero, else the
    dense one on ``Td`` (S, K, S) float32 (filled here; a 0-size array: made here).
    Returns ``(sweeps, Td)``."""
    K = R.shape[1]
    size = S * K * S
    if size > sparse_size and nnz / size < SPARSE_SHARE:
        return vi_sparse(ptr, idx, val, rlen, R, VI_GAMMA, VI_EPSILON, Q), Td
    if Td.shape[0] != S:
        Td = np.zeros((S, K, S), dtype=np.float32)
    else:
        Td[:] = 0.0
    for s in range(S):
        for k in range(K):
            r = s * K + k
            p = ptr[r]
            for i in range(rlen[r]):
                Td[s, k, idx[p + i]] = val[p + i]
    return vi_dense(Td, R, VI_GAMMA, VI_EPSILON, Q), Td


# ---------------------------------------------------------------------------------------
# The current policy Colosseum's indicators evaluate: the MAP model's greedy policy


@njit(cache=True, error_model="numpy")
def map_policy(alpha, a0, sup, sn, nig, gamma, V, pol, q):
    """``pol`` (S, A) ← the greedy policy (exact ties uniform) of the γ-discounted values
    of the posterior's MAP model (the float32 concentrations ``alpha`` normalised — a
    state outside a pair's support keeps the prior's ``a0`` —, the NIG means as rewards),
    by Gauss–Seidel value iteration from ``V`` (warm start, left with the values) to
    :data:`MAP_TOLERANCE` × max(1, sup |V|). Returns the sweeps."""
    S, A, _ = alpha.shape
    tot = np.empty((S, A))
    for x in range(S):
        for u in range(A):
            t = (S - sn[x, u]) * np.float64(a0)
            for i in range(sn[x, u]):
                t += np.float64(alpha[x, u, sup[x, u, i]])
            tot[x, u] = t
    sweeps = 0
    sumV = V.sum()
    while sweeps < MAP_MAX_SWEEPS:
        sweeps += 1
        diff = 0.0
        big = 1.0
        for x in range(S):
            best = _map_q(alpha, a0, sup, sn, nig, tot, V, sumV, gamma, x, q)
            d = abs(best - V[x])
            if d > diff:
                diff = d
            if abs(best) > big:
                big = abs(best)
            sumV += best - V[x]
            V[x] = best
        if diff <= MAP_TOLERANCE * big:
            break
    for x in range(S):
        best = _map_q(alpha, a0, sup, sn, nig, tot, V, sumV, gamma, x, q)
        n = 0
        for u in range(A):
            if q[u] == best:
                n += 1
        for u in range(A):
            pol[x, u] = 1.0 / n if q[u] == best else 0.0
    return sweeps


@njit(cache=True, error_model="numpy", inline="always")
def _map_q(alpha, a0, sup, sn, nig, tot, V, sumV, gamma, x, q):
    """``q`` (A,) ← the MAP model's Q-values of state ``x``; returns their maximum."""
    best = -np.inf
    for u in range(q.shape[0]):
        so = 0.0
        sv = 0.0
        for i in range(sn[x, u]):
            y = sup[x, u, i]
            so += V[y]
            sv += np.float64(alpha[x, u, y]) * V[y]
        ev = (np.float64(a0) * (sumV - so) + sv) / tot[x, u]
        v = np.float64(nig[x, u, 0]) + gamma * ev
        q[u] = v
        if v > best:
            best = v
    return best


# ---------------------------------------------------------------------------------------
# The trajectory


@njit(cache=True, error_model="numpy")
def _greedy(Q, x):
    """An extended action of largest ``Q[x]`` (exact ties uniform, numba's generator)."""
    K = Q.shape[1]
    m = Q[x, 0]
    for k in range(1, K):
        if Q[x, k] > m:
            m = Q[x, k]
    nt = 0
    for k in range(K):
        if Q[x, k] == m:
            nt += 1
    j = np.random.randint(0, nt) if nt > 1 else 0
    for k in range(K):
        if Q[x, k] == m:
            if j == 0:
                return k
            j -= 1
    return 0


@njit(cache=True, error_model="numpy")
def _episode_end(alpha, cnt, sup, sn, Ntot, nig, eta, psi, optimistic, rs, ptr, idx, val,
                 rlen, pm, g, Rs, Rt, sparse_size, Td, Q, counters):
    S = alpha.shape[0]
    idx, val, nnz = _optimistic_sampling(alpha, cnt, sup, sn, Ntot, eta, psi, optimistic,
                                         rs, ptr, idx, val, rlen, pm, g)
    _sample_rewards(nig, rs, Rs)
    tile_rewards(Rs, psi, Rt)
    sw, Td = solve_extended(ptr, idx, val, rlen, nnz, Rt, S, sparse_size, Td, Q)
    counters[0] += 1
    return idx, val, Td


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, psi, eta,
                optimistic, reward_mean, sparse_size, rewards, trace, L, rbar, opt, worst,
                si, sf):
    """Colosseum's ``PSRLContinuous`` (module docstring) on the test MDP ``P`` on the
    full layout (slot k is state k), for ``horizon`` steps; ``psi`` the copies (1 when
    not ``optimistic``), ``eta`` the visits from which a pair is posterior-sampled.
    Returns (discounted return, [resamples], indicators' accumulator); with ``L`` > 0
    Colosseum's continuing indicators every ``L`` steps of the MAP model's greedy policy
    (:func:`map_policy`). ``trace`` (T, 3) int64, if it has T rows, receives each step's
    state, action and next state (tests)."""
    rs = model_generator(seed)
    S, A, _ = P.shape
    K = A * psi
    a0 = np.float32(1.0 / S)
    alpha = np.full((S, A, S), a0, dtype=np.float32)
    cnt = np.zeros((S, A, S), dtype=np.int32)
    sup = np.zeros((S, A, S), dtype=np.int32)
    sn = np.zeros((S, A), dtype=np.int64)
    Ntot = np.zeros((S, A), dtype=np.int64)
    nu = np.zeros((S, A), dtype=np.int64)
    nig = np.zeros((S, A, 4), dtype=np.float32)
    for x in range(S):
        for u in range(A):
            nig[x, u, 0] = np.float32(reward_mean)
            nig[x, u, 1] = np.float32(1.0)
            nig[x, u, 2] = np.float32(0.5)
            nig[x, u, 3] = np.float32(0.5)
    ptr = np.zeros(S * A * psi + 1, dtype=np.int64)
    rlen = np.zeros(S * A * psi, dtype=np.int64)
    idx = np.zeros(S * A * psi * 2, dtype=np.int32)
    val = np.zeros(S * A * psi * 2, dtype=np.float32)
    pm = np.zeros((S, A, S))
    g = np.zeros(S, dtype=np.float32)
    Rs = np.zeros((S, A), dtype=np.float32)
    Rt = np.zeros((S, K), dtype=np.float32)
    Td = np.zeros((0, 0, 0), dtype=np.float32)
    Q = np.zeros((S, K), dtype=np.float32)
    counters = np.zeros(1, dtype=np.int64)
    record = trace.shape[0] >= horizon
    ind = L > 0
    succ = np.zeros((S, A, S), dtype=np.int64)
    nsucc = np.full((S, A), S, dtype=np.int64)
    for x in range(S):
        for u in range(A):
            for k in range(S):
                succ[x, u, k] = k
    acc, hist = ind_alloc(horizon, L)
    pol = np.zeros((S, A))
    pid = np.zeros(S, dtype=np.int64)
    Vm = np.zeros(S)
    qm = np.zeros(A)
    x = env_reset(initial_state, S)
    ret = 0.0
    disc = 1.0
    # before_start_interacting
    idx, val, Td = _episode_end(alpha, cnt, sup, sn, Ntot, nig, eta, psi, optimistic, rs,
                                ptr, idx, val, rlen, pm, g, Rs, Rt, sparse_size, Td, Q,
                                counters)
    for t in range(horizon + 1):
        final = t == horizon
        if not final:
            k = _greedy(Q, x)
            u = k // psi
            y = env_step_rows(P, nsucc, x, u)
            r = env_reward_rows(R, Rstd, gaussian, x, u, y)
            rewards[t] = r
            ret += disc * r
            disc *= gamma
            if record:
                trace[t, 0] = x
                trace[t, 1] = u
                trace[t, 2] = y
            # step_update: the model's (rewards, then transitions), then the agent's counts
            nig_update(nig, x, u, r)
            alpha[x, u, y] = np.float32(np.float64(alpha[x, u, y]) + 1.0)
            if cnt[x, u, y] == 0:
                _insert_sorted(sup, sn, x, u, y)
            cnt[x, u, y] += 1
            Ntot[x, u] += 1
            nu[x, u] += 1
            end = Ntot[x, u] >= 2 * (Ntot[x, u] - nu[x, u])
            x = y
            if end:
                idx, val, Td = _episode_end(alpha, cnt, sup, sn, Ntot, nig, eta, psi,
                                            optimistic, rs, ptr, idx, val, rlen, pm, g, Rs,
                                            Rt, sparse_size, Td, Q, counters)
                nu[:] = 0
        if ind and (final or is_row(t, L)):
            tt = horizon - 1 if final else t
            w = final_weight(horizon, L) if final else L
            g_ = 0.0
            if needs_evaluation(acc):
                map_policy(alpha, a0, sup, sn, nig, MAP_GAMMA, Vm, pol, qm)
                g_ = gain_from(succ, nsucc, P, rbar, pol, pid, True, x, si, sf)
            row_continuing(acc, hist, tt, horizon, w, final, g_, opt, worst)
    return ret, counters, acc


# ---------------------------------------------------------------------------------------
# Python side: the setting, the checks and the players


def extended_bytes(S: int, A: int, psi: int) -> int:
    """Memory of the dense float32 extended model Colosseum's dense sweep needs (made
    only when that sweep applies)."""
    return 4 * psi * S * A * S


def dense_bytes(S: int, A: int) -> int:
    """Memory of the kernel's per-pair arrays on the full layout: the float32
    concentrations, int32 counts and support, the float64 :math:`P^-`, and the test MDP
    with its rewards moved onto it (8 bytes each, three arrays) and the indicators'
    chain (8 + 8 bytes)."""
    return (4 + 4 + 4 + 8 + 24 + 16) * S * A * S


def prior_check(prior: Any) -> str | None:
    """Why ``prior`` cannot be Colosseum's PSRL's prior model (None: it can): its
    rewards must be unknown under Colosseum's N-NIG (``+rnig<m>``, m Colosseum's
    ``rewards_prior_prms[0]``), and its transition prior is Colosseum's own
    Dirichlet 1/S on every next state, so ``+dir<α>`` is refused (the bbrl prior's
    concentrations and support are not used, as UCRL2's ``form=colosseum`` does)."""
    rp = reward_prior_of(prior)
    if rp.kind != "nig":
        return ("form=colosseum needs Colosseum's reward model: a prior ending "
                "+rnig<mean> (its N-NIG prior [mean, 1, 1, 1]; the benchmark's mean "
                f"{COLOSSEUM_REWARD_PRIOR_MEAN}), not {rp.kind} rewards")
    if getattr(prior, "dirichlet_all", None) is not None:
        return ("form=colosseum has Colosseum's own transition prior, a Dirichlet 1/S on "
                "every next state: drop +dir<alpha> from the prior")
    S, A = int(prior.n_states), int(prior.n_actions)
    need = dense_bytes(S, A)
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"form=colosseum holds every next state of every pair: "
                f"{need / 2**30:.1f} GB for {S} states, above "
                f"{MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


def constants_of(prior: Any, params: dict, horizon: int) -> dict[str, Any]:
    """:func:`colosseum_constants` of the prior's S, A, the run's steps and ``params``."""
    w = {k: float(params.get(k, COLOSSEUM_BENCHMARK[k])) for k in
         ("psi_weight", "omega_weight", "kappa_weight", "eta_weight")}
    return colosseum_constants(int(prior.n_states), int(prior.n_actions), int(horizon),
                               **w)


def make_player(prior: Any, params: dict, ep: Episode, log_every: int = 0):
    """The player of ``psrl --param form=colosseum`` (:func:`_trajectory`): ``play(P,
    seed, rewards, trace=None) -> (return, counters)``, or with ``log_every`` > 0
    ``(return, counters, values)`` with Colosseum's indicators."""
    H = int(getattr(ep, "episode_length", 0) or 0)
    if H > 0:
        raise BBRLError("psrl: form=colosseum is Colosseum's continuing PSRLContinuous: "
                        "not for an episodic interaction (episode_length > 0)")
    err = prior_check(prior)
    if err:
        raise BBRLError(f"psrl on {prior.short_name}: {err}")
    S, A = int(prior.n_states), int(prior.n_actions)
    st = setting(prior, ep, rows.full(S, A))
    if st.succ.shape[2] != S or not np.array_equal(st.succ, rows.full(S, A).succ):
        raise BBRLError(f"psrl on {prior.short_name}: form=colosseum needs the full "
                        "layout (every next state a slot, in order)")
    horizon = int(ep.horizon)
    c = constants_of(prior, params, horizon)
    psi = c["psi"] if c["optimistic"] else 1
    eta = float(c["eta"])
    mean = float(reward_prior_of(prior).mean)
    R, Rstd = st.R, st.Rstd
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma = float(ep.gamma)
    no_trace = np.zeros((0, 3), dtype=np.int64)
    req = Request(ep, log_every) if log_every > 0 else None
    nsucc_full = np.full((S, A), S, dtype=np.int64)
    si, sf = gain_scratch(nsucc_full) if req is not None else (
        np.zeros(1, np.int64), np.zeros(1))

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None,
             trace: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        tr = no_trace if trace is None else trace
        if req is None:
            ret, cnt, _ = _trajectory(Pa, R, Rstd, gaussian, x0, gamma, horizon, int(seed),
                                      psi, eta, c["optimistic"], mean, SPARSE_SIZE,
                                      rewards, tr, 0, np.zeros((S, A)), 0.0, 0.0, si, sf)
            return float(ret), cnt
        evr = req.evaluator(P)
        rbar = np.ascontiguousarray((Pa * R).sum(axis=2))
        ret, cnt, acc = _trajectory(Pa, R, Rstd, gaussian, x0, gamma, horizon, int(seed),
                                    psi, eta, c["optimistic"], mean, SPARSE_SIZE, rewards,
                                    tr, req.log_every, rbar, evr.optimal, evr.worst, si, sf)
        return float(ret), cnt, finish(acc, evr, rewards, horizon)

    return play


#: Sweeps of one solve assumed by :func:`cost_features`: Colosseum's value iteration
#: from zero to 1e-3 with γ = 0.99 on rewards of order 1 (log(1e-3)/log(0.99)).
COST_SWEEPS = 690.0


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  episode_length: int = 0) -> dict[str, float]:
    """Rough: episodes about S·A·log2(8T/(SA)) (a first visit and each doubling of a
    pair's count end one), each an optimistic sampling of ψ copies and a solve of
    :data:`COST_SWEEPS` sweeps over the extended model (about 3 entries a row below η).
    Not calibrated."""
    S, A = int(prior.n_states), int(prior.n_actions)
    c = constants_of(prior, params, horizon)
    psi = c["psi"] if c["optimistic"] else 1
    SA = S * A
    n = float(min(horizon, SA * math.log2(max(2.0, 8.0 * horizon / SA))))
    B = float(S * A * psi * 3)
    return {"trajectory": 1.0, "steps": float(horizon), "rebuilds": n,
            "backups": n * COST_SWEEPS * B}
