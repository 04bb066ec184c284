r"""SBOSS: Smarter Best Of Sampled Set (Castro & Precup 2010).

SBOSS is an optimistic model-based Bayesian agent. It keeps the Dirichlet posterior of
every transition row, :math:`\alpha(x,u,\cdot) = \theta(x,u,\cdot) + c(x,u,\cdot)` (prior
concentrations plus observed counts, :math:`n(x,u) = \sum_y \alpha(x,u,y)`), and acts
greedily in a **merged MDP** built from posterior samples:

* **Sample counts.** Pair (x, u) gets

  .. math::  K(x,u) = \max_y \Bigl\lceil \frac{\mathrm{Var}_y}{\varepsilon} \Bigr\rceil,
     \qquad \mathrm{Var}_y = \frac{\alpha_y (n - \alpha_y)}{n^2 (n+1)},

  the Dirichlet's marginal variances: uncertain rows get many samples. K is computed for
  every pair at reset and for the observed pair after each transition.
* **Merged MDP.** Same states; merged action :math:`m = u + k\,n_U` stands for "sample k
  of action u": its transition row is an independent draw from
  :math:`\mathrm{Dir}(\alpha(x,u,\cdot))` (zero concentrations give exactly 0) and its
  reward row is the prior's known reward :math:`R(x,u,\cdot)`. It is solved with the Guez
  value iteration (Jacobi sweeps, Euclidean tolerance 1e-4, lowest merged index wins ties).
  The sweeps are warm-started: from the previous solve's values, first improved by a few
  policy-iteration steps (greedy merged policy, its exact value by an n_X x n_X linear
  solve; up to 50 steps, for models of at most 200 states that
  :func:`~bbrlcore.mdp.solvers.lu_affordable` admits) so that typically a single
  sweep meets the stopping test instead of ~100-300 from zero; the stopping test and
  tie rule are unchanged (smarter solvers are allowed when they reach the same
  tolerance). The agent plays the real action
  :math:`\pi_m(x) \bmod n_U` of the best merged action. A merged action's value is the best
  of K sampled models, hence optimism in the face of uncertainty.
* **Resampling.** After each transition from (x, u) the posterior deviation of that pair
  against the snapshot :math:`(\tilde\alpha, \tilde n)` taken at the last resampling,

  .. math::  \mathrm{dev} = \sum_y \frac{|\tilde\alpha_y/\tilde n - \alpha_y/n|}
     {\tilde\sigma_y}, \qquad
     \tilde\sigma_y = \sqrt{\frac{\tilde\alpha_y(\tilde n-\tilde\alpha_y)}
     {\tilde n^2(\tilde n+1)}},

  is compared with δ; if ``dev > δ`` the merged MDP is rebuilt (fresh samples, new
  snapshot of the full posterior) before the next decision. The first decision of each
  trajectory always builds it.

Two modes:

* **default** (the paper's algorithm): a term with :math:`\tilde\sigma_y = 0` and no change
  counts 0, a term with :math:`\tilde\sigma_y = 0` and a change counts :math:`+\infty`
  (forces a resample). A deterministic row (one non-zero concentration, so Var = 0 and
  K = 0) is a known transition: it gets :math:`\max(K, 1)` samples, which for a single-entry
  row is that transition itself.
* **compat** (the original BBRL library): a 0/0 term makes the deviation NaN and
  "NaN > δ" is false, so a pair whose snapshot row has a zero or a single entry never
  triggers a resample (on GC, GDL and Grid SBOSS resamples only once, at t = 0). Pairs keep
  K = 0 samples and every merged slot :math:`K(x,u) \le k < K_{\max}` is a *filler* action:
  a self-loop with reward INT_MIN = -2147483648, whose value is
  :math:`\mathrm{INT\_MIN} + \gamma V(x)`. A state whose actions all have K = 0 has only
  fillers and is believed to be worth about :math:`-2.1\cdot10^9/(1-\gamma)`. (If every
  pair has K = 0, one filler slot per action is kept so the merged MDP has actions.) The
  reference's half-copied snapshot is undefined behaviour; both modes copy it in full.

**Sparse rows.** The posterior, its snapshot and the rewards live on the agent's padded
rows (:mod:`bbrlcore.mdp.rows`, :func:`bbrlcore.agents._layout.setting`): slot k of row
(x, u) is the transition to ``succ[x, u, k]``, for every transition of the prior's support
and of the test MDPs; every loop over a row runs over its slots in increasing successor
order (the dense loops' order, so the sums are the same), and a step, a deviation test or
a sample count costs the row's length, not :math:`n_X`. A slot whose concentration is 0
(a test transition outside the prior's support, not observed yet) is a zero term, as the
dense zero it stands for; the states outside a row are never observed, which compat's
NaN rule reads as a 0/0 term (a row shorter than :math:`n_X` never resamples in compat).

**Sparse merged model.** The merged MDP is never stored as a dense array over its
:math:`n_U K_{\max}` actions. For each pair (x, u) its :math:`K'(x,u)` sampled rows
(:math:`K' = \max(K,1)` by default, :math:`K` in compat) are stored over the row's slots
only, in one flat array with a per-pair offset (CSR-like); a slot of zero concentration
holds probability 0 (where the agent's rows are the prior's support, as in every
experiment of the paper and every family, there is none). Memory is
:math:`8 \sum_{x,u} K'(x,u)\,|S(x,u)|` bytes plus :math:`O(\text{transitions})` for the
posterior and its snapshot; fillers take no memory (their value and lowest merged index
are computed on the fly). At ε = 1e-6 on GC this is 15 · 83,334 · 2 doubles, about
20 MB; on UGrid, 100 · 1,477 · 25 doubles, about 30 MB.

**Cost.** A rebuild draws :math:`\sum K'|S|` Gamma variates and runs value iteration
sweeps of the same size. In default mode small δ resamples at nearly every step on every
prior (the paper's algorithm, not an implementation choice), so small ε with small δ is
expensive: the cost is :math:`O(\text{resamples} \times \sum K'|S| \times \text{sweeps})`.
The ``resamples`` counter (first build included) records the rate. Dirichlet rows are
drawn over the support only (the slots of positive concentration), as normalised Gamma
variates from the kernel's own xoshiro256** generator (:mod:`._rng`, seeded from the
trajectory seed); integer shapes up to 8 (the posterior counts of the integer priors) use
the exact identity :math:`\Gamma(k,1) = -\log \prod_{i\le k} U_i`. Each sample also
stores its expected reward :math:`\bar r = \sum_j p_j R(x,u,y_j)` (rewards are known), so
a sweep computes :math:`Q = \bar r + \gamma \sum_j p_j V(y_j)`. Between two rebuilds a
step costs a transition draw, the count update and the deviation test; K(x, u) of the
pairs observed since the last rebuild is recomputed at the next one (the only place K is
read). The policy-iteration warm start (an :math:`n_X \times n_X` LU per step) is used
only where :func:`~bbrlcore.mdp.solvers.lu_affordable` admits it (:math:`n_X^3` at most
200 times the transitions: every problem of the paper, RiverSwim up to 25 states); larger
or sparser models are solved by warm-started sweeps alone, whose cost grows with the
transitions.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the posterior, the merged model and its
sample counts are kept (no resampling is triggered by the episode's start), and it plans
with the test set's γ.

Paper: P. S. Castro and D. Precup, "Smarter sampling in model-based Bayesian
reinforcement learning", ECML PKDD 2010 (LNCS 6321); BOSS: J. Asmuth,
L. Li, M. L. Littman, A. Nouri, D. Wingate, "A Bayesian sampling approach to exploration
in reinforcement learning", UAI 2009; benchmark: Castronovo et al., PLOS ONE 2016, §4.1.

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): the transition prior is
:math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next states of every pair, and row
(x, u)'s posterior :math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))`, :math:`n(x,u) = S\alpha +`
its visits. SBOSS then runs on the **full layout** (:func:`bbrlcore.mdp.rows.full`: every
next state a slot, of concentration α plus its counts; the rewards the prior's, 0 outside
its stored transitions): the sample counts K take the maximum of the marginal variances
over all S states, the deviation test sums over all S states (the unobserved ones too,
whose mean :math:`\alpha/n` moves with every visit of the pair), and every sampled row is
drawn over all S states (exact in distribution), all as above. Cost: a rebuild draws
:math:`\sum K'(x,u)\,S` Gamma variates, a sweep and a deviation test cost S per row;
memory :func:`dir_bytes` (the dense posterior, its snapshot, the rewards and the test MDP
on the full layout, and the merged model), refused in one line above 16 GB. Every visit
of a pair moves the mean :math:`\alpha/n` of each of its unobserved states, and each
such term enters the deviation with the small :math:`\tilde\sigma` of a
:math:`\mathrm{Dir}(\alpha)` marginal, so the test fires far more often than on a
support: measured on DeepSea-10 (102 states), 100 episodes, ε = 0.01, δ = 0.5, a
rebuild at every step (1,000) and 1.4 s a trajectory under ``UDeepSea-10+dir0.3235``,
against 149 rebuilds and 0.47 s under ``UDeepSea-10`` (the paper's rule, not an
implementation choice: a larger δ rebuilds less). SBOSS has no
indicator player (Colosseum's expected indicators are not available for it, under any
prior).

**Rewards.** SBOSS merges sampled transition models that pay the prior's rewards; it
needs known rewards, and a prior whose rewards are unknown (``+rbeta``, ``+rnig``:
:mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming it and the prior
(:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import env_transition_rows, start_slot
from bbrlcore.agents._layout import setting
from bbrlcore.agents._rng import (
    gamma_s,
    normal_s,
    rng_gamma,
    rng_new,
    rng_normal,
    rng_randint,
    rng_uniform,
    uniform_s,
)
from bbrlcore.agents.base import (
    COMPAT,
    FLOAT64,
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    positive,
    reward_buffer,
)
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import rows
from bbrlcore.mdp.solvers import (
    GUEZ_MAX_SWEEPS,
    GUEZ_TOLERANCE,
    _lu_solve,
    lu_affordable,
    n_transitions,
)

#: Reward of the reference's filler actions (compat): C's INT_MIN.
INT_MIN = -2147483648.0
#: Refuse configurations whose merged model at the prior would exceed this many doubles.
MAX_SAMPLE_ENTRIES = 500_000_000
#: Policy-iteration steps that improve the value iteration's warm start (0: none).
PI_WARM_STEPS = 50
#: Largest number of states for which the warm start uses policy iteration (an
#: O(nX^3) linear solve per step); larger models use plain warm-started sweeps, and so do
#: models that :func:`~bbrlcore.mdp.solvers.lu_affordable` refuses (too sparse for a dense
#: nX x nX LU).
PI_MAX_STATES = 200


def warm_pi_steps(n_states: int, n_transitions: int) -> int:
    """The policy-iteration steps of the warm start of a model of ``n_states`` states and
    ``n_transitions`` transitions: :data:`PI_WARM_STEPS` where an nX x nX LU is worth it
    (at most :data:`PI_MAX_STATES` states and :func:`~bbrlcore.mdp.solvers.lu_affordable`),
    else 0 (warm-started sweeps alone). A function of the problem's size only."""
    if n_states <= PI_MAX_STATES and lu_affordable(n_states, n_transitions):
        return PI_WARM_STEPS
    return 0


# ---------------------------------------------------------------------------------------
# Sample counts and posterior deviation (on sparse rows: the row of (x, u) is its slots
# k < nsucc[x, u], successor succ[x, u, k])


@njit(cache=True, error_model="numpy")
def row_sample_count(alpha, n, nsucc, x, u, epsilon):
    """K(x,u) = max_y ceil(Var_y / epsilon) with the Dirichlet marginal variances
    (``alpha`` on sparse rows, ``n`` its row sums)."""
    nn = n[x, u]
    best = 0.0
    for k in range(nsucc[x, u]):
        a = alpha[x, u, k]
        if a > 0.0:
            v = a * (nn - a)
            if v > best:
                best = v
    return np.int64(math.ceil(best / (nn * nn * (nn + 1.0)) / epsilon))


@njit(cache=True, error_model="numpy")
def sample_counts(alpha, nsucc, epsilon):
    """K for every pair of the posterior ``alpha`` on sparse rows (shape (nX, nU)); a
    dense ``alpha`` (nX, nU, nX) with ``nsucc`` all nX (the full layout) works too."""
    nX, nU, _ = alpha.shape
    n = np.zeros((nX, nU))
    for x in range(nX):
        for u in range(nU):
            s = 0.0
            for k in range(nsucc[x, u]):
                s += alpha[x, u, k]
            n[x, u] = s
    K = np.zeros((nX, nU), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            K[x, u] = row_sample_count(alpha, n, nsucc, x, u, epsilon)
    return K


@njit(cache=True, error_model="numpy")
def pair_deviation(snap_alpha, snap_n, alpha, n, nsucc, n_states, x, u, compat):
    """Posterior deviation sum_y |a~_y/n~ - a_y/n| / sigma~_y of pair (x, u).

    ``snap_alpha``/``snap_n`` is the snapshot of the posterior taken at the last
    resampling, ``alpha``/``n`` the current one, both on sparse rows (``nsucc`` slots per
    row, out of ``n_states`` states). A term with sigma~ = 0 (a~_y = 0, or a~_y = n~: a
    single-entry snapshot row) is +inf if the probability changed; if it did not, it is
    0 (default) or NaN (compat: the whole deviation is then NaN, whatever the other terms
    are). "Changed" is tested exactly (a_y > 0, resp. a_y != n), not by comparing rounded
    quotients. A state outside the row (never observed: a~_y = a_y = 0) is such an
    unchanged 0/0 term: nothing by default, NaN in compat.
    """
    sn = snap_n[x, u]
    nn = n[x, u]
    ns = nsucc[x, u]
    if compat:  # any 0/0 term makes the sum NaN: look for one first (no division)
        if ns < n_states:
            return np.nan
        for k in range(ns):
            sa = snap_alpha[x, u, k]
            if sa == 0.0:
                if alpha[x, u, k] == 0.0:
                    return np.nan
            elif sa == sn:
                if alpha[x, u, k] == nn:
                    return np.nan
    isn = 1.0 / sn
    inn = 1.0 / nn
    ivar = 1.0 / (sn * sn * (sn + 1.0))
    dev = 0.0
    for k in range(ns):
        sa = snap_alpha[x, u, k]
        a = alpha[x, u, k]
        if sa == 0.0:
            if a != 0.0:
                return np.inf
        elif sa == sn:
            if a != nn:
                return np.inf
        else:
            dev += abs(sa * isn - a * inn) / math.sqrt(sa * (sn - sa) * ivar)
    return dev


@njit(cache=True, error_model="numpy")
def deviation(snap_row, snap_n, row, n, compat):
    """:func:`pair_deviation` of one dense row given as 1-D arrays (snapshot, current)."""
    m = row.shape[0]
    sa = np.empty((1, 1, m))
    a = np.empty((1, 1, m))
    sa[0, 0, :] = snap_row
    a[0, 0, :] = row
    sn = np.full((1, 1), snap_n)
    nn = np.full((1, 1), n)
    ns = np.full((1, 1), m, dtype=np.int64)
    return pair_deviation(sa, sn, a, nn, ns, m, 0, 0, compat)


# ---------------------------------------------------------------------------------------
# The sparse merged model


@njit(cache=True, error_model="numpy")
def build_merged(alpha, succ, nsucc, K, Rm, compat, rs):
    """Draw the merged model's samples; return ``(probs, off, mK, soff, rexp)``.

    Sparse rows: ``succ`` (nX, nU, W) and ``nsucc`` (nX, nU) are the agent's layout (row
    (x, u) holds the successors ``succ[x, u, :nsucc[x, u]]``, increasing), ``alpha`` (the
    Dirichlet concentrations) and ``Rm`` (the known rewards) are values on it, shape
    (nX, nU, W), and ``K`` (nX, nU) the sample counts. A dense ``alpha``/``Rm`` of shape
    (nX, nU, nX) goes with the full layout (``succ[x, u, k] = k``, ``nsucc = nX``).

    ``mK[x, u]`` samples of pair (x, u) (``max(K, 1)`` by default, ``K`` in compat), each a
    Dirichlet draw over the row's slots of positive concentration (in slot order; a slot of
    zero concentration gets probability 0 and consumes no random draw); sample k's
    probabilities are ``probs[off[x, u] + k * nsucc[x, u] + j]``, j over the row's slots,
    and its expected reward :math:`\\sum_j p_j R(x, u, j)` is ``rexp[soff[x, u] + k]``. A
    row with a single positive slot is that transition (no draw); a draw whose variates
    sum below 1e-300 puts all its mass on one uniformly chosen positive slot. Random draws
    come from the generator state ``rs`` (:mod:`._rng`).
    """
    nX, nU = K.shape
    mK = np.empty((nX, nU), dtype=np.int64)
    off = np.empty((nX, nU), dtype=np.int64)
    soff = np.empty((nX, nU), dtype=np.int64)
    total = 0
    nsamp = 0
    for x in range(nX):
        for u in range(nU):
            k = K[x, u]
            if not compat and k < 1:
                k = 1
            mK[x, u] = k
            off[x, u] = total
            soff[x, u] = nsamp
            total += k * nsucc[x, u]
            nsamp += k
    probs = np.empty(total)
    rexp = np.empty(nsamp)
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]  # generator state in registers (see _rng)
    # plain index arithmetic, no array views: a view costs two atomic reference-count
    # updates, more than these short loops
    for x in range(nX):
        for u in range(nU):
            ns = nsucc[x, u]
            base = off[x, u]
            sb = soff[x, u]
            npos = 0  # the support: slots of positive concentration
            first = 0
            for j in range(ns):
                if alpha[x, u, j] > 0.0:
                    if npos == 0:
                        first = j
                    npos += 1
            if npos == 1:  # a single-entry support: Dir is a point mass, the known transition
                r1 = Rm[x, u, first]
                for k in range(mK[x, u]):
                    start = base + k * ns
                    for j in range(ns):
                        probs[start + j] = 0.0
                    probs[start + first] = 1.0
                    rexp[sb + k] = r1
                continue
            for k in range(mK[x, u]):
                start = base + k * ns
                s = 0.0
                r = 0.0
                for j in range(ns):
                    a = alpha[x, u, j]
                    if a > 0.0:
                        g, s0, s1, s2, s3 = gamma_s(a, s0, s1, s2, s3)
                        probs[start + j] = g
                        s += g
                        r += g * Rm[x, u, j]
                    else:
                        probs[start + j] = 0.0
                if s < 1e-300:  # all mass on one uniformly chosen support entry
                    v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
                    pick = min(np.int64(v * npos), npos - 1)
                    rexp[sb + k] = 0.0
                    c = 0
                    for j in range(ns):
                        hit = False
                        if alpha[x, u, j] > 0.0:
                            hit = c == pick
                            c += 1
                        probs[start + j] = 1.0 if hit else 0.0
                        if hit:
                            rexp[sb + k] = Rm[x, u, j]
                else:
                    inv = 1.0 / s
                    for j in range(ns):
                        probs[start + j] *= inv
                    rexp[sb + k] = r * inv
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
    return probs, off, mK, soff, rexp


@njit(cache=True, error_model="numpy")
def _fillers(mK, compat, filler):
    """Lowest filler merged index of each state into ``filler`` (-1: none; compat only)."""
    nX, nU = mK.shape
    filler[:] = -1
    if not compat:
        return
    kmax = 1
    for x in range(nX):
        for u in range(nU):
            if mK[x, u] > kmax:
                kmax = mK[x, u]
    for x in range(nX):
        for u in range(nU):
            if mK[x, u] < kmax:
                m = u + mK[x, u] * nU
                if filler[x] < 0 or m < filler[x]:
                    filler[x] = m


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _sweep(probs, off, mK, soff, rexp, succ, nsucc, gamma, filler, V, Vnew, pi, w):
    """One Jacobi sweep ``Vnew = max_m Q(x, m | V)``; returns sum_x (Vnew - V)^2.

    :math:`Q(x, m) = \\bar r_m + \\gamma \\sum_j p_{m,j} V(y_j)` over the row's slots, with
    the sample's expected reward :math:`\\bar r_m` (the rewards are known, so
    :math:`\\sum_j p_j (R_j + \\gamma V_j)` splits). ``pi[x]`` gets the lowest merged
    index m = u + k nU reaching the maximum (the reference's strict ">" scan in
    increasing m). ``w`` is a work buffer of the layout's width.
    """
    nX, nU = mK.shape
    diff2 = 0.0
    for x in range(nX):
        best = -np.inf
        bm = -1
        for u in range(nU):
            kk = mK[x, u]
            if kk == 0:
                continue
            ns = nsucc[x, u]
            for j in range(ns):
                w[j] = V[succ[x, u, j]]
            base = off[x, u]
            sb = soff[x, u]
            for k in range(kk):
                start = base + k * ns
                acc = 0.0
                if ns >= 8:  # a view: no index arithmetic, the loop vectorises
                    row = probs[start: start + ns]
                    for j in range(ns):
                        acc += row[j] * w[j]
                else:  # short rows: a view (two atomic reference counts) costs more
                    for j in range(ns):
                        acc += probs[start + j] * w[j]
                q = rexp[sb + k] + gamma * acc
                if q > best:
                    best = q
                    bm = u + k * nU
                elif q == best:
                    m = u + k * nU
                    if m < bm:
                        bm = m
        if filler[x] >= 0:
            f = INT_MIN + gamma * V[x]
            m = filler[x]
            if bm < 0 or f > best or (f == best and m < bm):
                best = f
                bm = m
        Vnew[x] = best
        pi[x] = bm
        d = best - V[x]
        diff2 += d * d
    return diff2


@njit(cache=True, error_model="numpy")
def _evaluate(probs, off, mK, soff, rexp, succ, nsucc, gamma, pi, V, A, b):
    """V = value of the merged policy ``pi`` (exact linear solve of (I - gamma P) V = r;
    ``A`` an (nX, nX) work buffer)."""
    nX, nU = mK.shape
    for i in range(nX):
        for j in range(nX):
            A[i, j] = 0.0
    for x in range(nX):
        A[x, x] = 1.0
        m = pi[x]
        u = m % nU
        k = m // nU
        if k >= mK[x, u]:  # filler: self-loop with reward INT_MIN
            A[x, x] -= gamma
            b[x] = INT_MIN
            continue
        ns = nsucc[x, u]
        start = off[x, u] + k * ns
        for j in range(ns):
            A[x, succ[x, u, j]] -= gamma * probs[start + j]
        b[x] = rexp[soff[x, u] + k]
    _lu_solve(A, b)
    V[:] = b


@njit(cache=True, error_model="numpy")
def merged_value_iteration(probs, off, mK, soff, rexp, succ, nsucc, gamma, tol, compat, V,
                           pi, pi_steps):
    """Guez value iteration on the sparse merged model; ``V``, ``pi`` updated in place.

    The model is :func:`build_merged`'s ``(probs, off, mK, soff, rexp)`` on the layout
    ``succ``, ``nsucc`` it was built on (sparse rows: slot j of row (x, u) is the
    successor ``succ[x, u, j]``, j < ``nsucc[x, u]``); ``V`` (nX) and ``pi`` (nX, int64).
    Jacobi sweeps from the given ``V`` until the Euclidean norm of a sweep's change is at
    most ``tol``; ``pi[x]`` is the merged action m = u + k nU of the last sweep, ties to
    the lowest m. In compat mode the filler slots (K(x,u) <= k < K_max) are self-loops
    with reward INT_MIN.

    Warm start: with ``pi_steps > 0`` the starting ``V`` is first improved by up to
    ``pi_steps`` policy-iteration steps (greedy policy of the current V, then its exact
    value by an nX x nX linear solve; stop when the policy repeats). This only moves the
    starting point closer to the fixed point: the sweeps, stopping test and tie rule that
    produce the result are the Guez value iteration's. A layout too large or too sparse
    for dense LU (:func:`~bbrlcore.mdp.solvers.lu_affordable` of nX and the layout's
    transitions) gets no policy-iteration steps whatever ``pi_steps`` says, and no
    (nX, nX) buffer. Returns the number of Jacobi sweeps.
    """
    nX = V.shape[0]
    if pi_steps > 0 and not lu_affordable(nX, n_transitions(nsucc)):
        pi_steps = 0
    filler = np.empty(nX, dtype=np.int64)
    _fillers(mK, compat, filler)
    Vnew = np.empty(nX)
    w = np.empty(max(succ.shape[2], 1))
    tol2 = tol * tol
    sweeps = 0
    if pi_steps > 0:
        prev = np.full(nX, -1, dtype=np.int64)
        A = np.empty((nX, nX))
        b = np.empty(nX)
        for _i in range(pi_steps):
            diff2 = _sweep(probs, off, mK, soff, rexp, succ, nsucc, gamma, filler, V, Vnew,
                           pi, w)
            same = True
            for x in range(nX):
                if pi[x] != prev[x]:
                    same = False
                prev[x] = pi[x]
            if same:
                # this greedy step is a Jacobi sweep from V: it counts for the stopping test
                V[:] = Vnew
                sweeps = 1
                if diff2 <= tol2:
                    return sweeps
                break
            _evaluate(probs, off, mK, soff, rexp, succ, nsucc, gamma, pi, V, A, b)
    while True:
        diff2 = _sweep(probs, off, mK, soff, rexp, succ, nsucc, gamma, filler, V, Vnew, pi, w)
        V[:] = Vnew
        sweeps += 1
        if diff2 <= tol2 or sweeps >= GUEZ_MAX_SWEEPS:
            return sweeps


@njit(cache=True, error_model="numpy")
def prior_values(theta, succ, nsucc, Rm, gamma, epsilon, compat, tol, pi_steps):
    """Values of one merged model drawn at the prior (generator seed 0), solved from zero
    (``theta`` and ``Rm`` on the sparse rows ``succ``, ``nsucc``).

    Every trajectory's first solve starts from these values instead of zero: fewer
    policy-iteration steps, same stopping test. They depend only on the agent (prior,
    parameters, gamma), so each trajectory remains a function of its own seed.
    """
    nX = theta.shape[0]
    K = sample_counts(theta, nsucc, epsilon)
    probs, off, mK, soff, rexp = build_merged(theta, succ, nsucc, K, Rm, compat, rng_new(0))
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    merged_value_iteration(probs, off, mK, soff, rexp, succ, nsucc, gamma, tol, compat, V, pi,
                           pi_steps)
    return V


# ---------------------------------------------------------------------------------------
# One trajectory


@njit(cache=True, error_model="numpy")
def _start(start, nX, rs):
    """A starting state from ``start`` (:func:`bbrlcore.mdp.environment.start_array`)
    with the kernel's own generator: m = 0 a uniform state (``rng_randint`` as before
    starting distributions), m = 1 that state (no draw), else the first state whose
    cumulative probability exceeds a uniform."""
    m = start.shape[1]
    if m == 0:
        return rng_randint(rs, nX)
    if m == 1:
        return np.int64(start[0, 0])
    return start_slot(start, rng_uniform(rs))


@njit(cache=True, error_model="numpy")
def _law_reward(R, Rstd, x, u, k, rs):
    """A draw of slot k's reward law (:func:`bbrlcore.agents._kernels.env_law_reward`)
    with the kernel's own generator."""
    nX = R.shape[0]
    kind = Rstd[x, u, k]
    if kind == 0.0:
        return R[x, u, k]
    loc = Rstd[nX + x, u, k]
    scale = Rstd[2 * nX + x, u, k]
    if kind == 1.0:
        return loc + scale * rng_normal(rs)
    a = Rstd[3 * nX + x, u, k]
    if kind == 2.0:
        return loc + scale if rng_uniform(rs) < a else loc
    g1 = rng_gamma(rs, a)
    g2 = rng_gamma(rs, Rstd[4 * nX + x, u, k])
    return loc + scale * (g1 / (g1 + g2))


@njit(cache=True, error_model="numpy")
def _trajectory(
    P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, succ, nsucc,
    theta, Rm, epsilon, delta, compat, tol, pi_steps, V_init, rewards, episode_length,
):
    rs = rng_new(seed)
    nX, nU, _ = P.shape
    x = _start(initial_state, nX, rs)
    # reset: posterior = prior
    alpha = theta.copy()
    n = np.zeros((nX, nU))
    for s in range(nX):
        for a in range(nU):
            tot = 0.0
            for j in range(nsucc[s, a]):
                tot += alpha[s, a, j]
            n[s, a] = tot
    K = np.zeros((nX, nU), dtype=np.int64)
    for s in range(nX):
        for a in range(nU):
            K[s, a] = row_sample_count(alpha, n, nsucc, s, a, epsilon)
    # pairs observed since the last rebuild: their K is recomputed at the next rebuild
    # (K is only read there, so this equals recomputing it after every update)
    dirty = np.zeros(nX * nU, dtype=np.int64)
    is_dirty = np.zeros((nX, nU), dtype=np.bool_)
    n_dirty = 0
    snap_alpha = alpha.copy()
    snap_n = n.copy()
    V = V_init.copy()  # the first solve starts from values of a merged model at the prior
    pi = np.zeros(nX, dtype=np.int64)
    act = np.zeros(nX, dtype=np.int64)
    # the generator state lives in registers during the steps (see _rng)
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
    # compat: per pair, a slot with a~_y = a_y = 0 since the last rebuild (-1: none known);
    # while it stays unobserved the deviation is NaN, so the full test is skipped. A row
    # shorter than nX has such a term for good (a state outside it): never tested.
    nan_witness = np.full((nX, nU), -1, dtype=np.int64)
    resample = True
    n_resamples = 0
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        if resample:
            for i in range(n_dirty):
                s = dirty[i] // nU
                a = dirty[i] % nU
                K[s, a] = row_sample_count(alpha, n, nsucc, s, a, epsilon)
                is_dirty[s, a] = False
            n_dirty = 0
            rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
            probs, off, mK, soff, rexp = build_merged(alpha, succ, nsucc, K, Rm, compat, rs)
            s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
            merged_value_iteration(probs, off, mK, soff, rexp, succ, nsucc, gamma, tol,
                                   compat, V, pi, pi_steps)
            for z in range(nX):
                act[z] = pi[z] % nU  # the real action of the best merged action
            snap_alpha[:] = alpha
            snap_n[:] = n
            nan_witness[:] = -1
            resample = False
            n_resamples += 1
        u = act[x]
        v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
        k = env_transition_rows(P, nsucc, x, u, v)
        r = R[x, u, k]
        if gaussian:
            if gaussian == 2:  # reward laws (bbrlcore.agents._kernels.env_law_reward)
                rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
                r = _law_reward(R, Rstd, x, u, k, rs)
                s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
            else:
                v, s0, s1, s2, s3 = normal_s(s0, s1, s2, s3)
                r += Rstd[x, u, k] * v
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        # posterior update (a slot of zero concentration joins the support)
        alpha[x, u, k] += 1.0
        n[x, u] += 1.0
        if not is_dirty[x, u]:
            is_dirty[x, u] = True
            dirty[n_dirty] = x * nU + u
            n_dirty += 1
        if compat:
            if nsucc[x, u] == nX:  # a full row: slot j is state j
                w = nan_witness[x, u]
                if w < 0 or alpha[x, u, w] != 0.0:
                    w = -1
                    for j in range(nX):
                        if snap_alpha[x, u, j] == 0.0 and alpha[x, u, j] == 0.0:
                            w = j
                            break
                    nan_witness[x, u] = w
                if w < 0 and pair_deviation(snap_alpha, snap_n, alpha, n, nsucc, nX, x, u,
                                            compat) > delta:
                    resample = True
        elif pair_deviation(snap_alpha, snap_n, alpha, n, nsucc, nX, x, u, compat) > delta:
            resample = True
        x = succ[x, u, k]
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (learning kept)
            left = episode_length
            if initial_state.shape[1] == 1:
                x = np.int64(initial_state[0, 0])
            else:  # (a draw of the kernel's generator, whose state is in s0..s3)
                rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3
                x = _start(initial_state, nX, rs)
                s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]
    counters = np.zeros(1, dtype=np.int64)
    counters[0] = n_resamples
    return ret, counters


# ---------------------------------------------------------------------------------------
# Cost: the kernel's own resampling rule, without the samples and the solves


@njit(cache=True, error_model="numpy")
def simulate_rebuilds(theta, succ, nsucc, Pbar, initial_state, epsilon, delta, compat,
                      horizon, seed, fixed_policy=True):
    """Rebuilds of the merged model and sampled probabilities in one trajectory, for the
    cost model: the trajectory loop of :func:`_trajectory` with its counting, sample
    counts ``K`` and deviation test, on the mean test MDP ``Pbar``, without drawing a
    sample or solving a model (``theta`` and ``Pbar`` on the sparse rows ``succ``,
    ``nsucc``; dense arrays with the full layout work too). The actions stand in for the
    merged model's greedy ones: with ``fixed_policy`` a policy drawn at random at each
    rebuild and kept until the next (like the agent's), else a random action at each
    step. Returns ``(rebuilds, sampled entries summed over the rebuilds)``."""
    np.random.seed(seed)
    nX, nU, _ = theta.shape
    alpha = theta.copy()
    n = np.zeros((nX, nU))
    nsupp = np.zeros((nX, nU), dtype=np.int64)
    for s in range(nX):
        for a in range(nU):
            for j in range(nsucc[s, a]):
                n[s, a] += alpha[s, a, j]
                if alpha[s, a, j] > 0.0:
                    nsupp[s, a] += 1
    snap_alpha = alpha.copy()
    snap_n = n.copy()
    x = initial_state if initial_state >= 0 else np.random.randint(0, nX)
    policy = np.zeros(nX, dtype=np.int64)
    resample = True
    rebuilds = 0
    entries = 0.0
    for _t in range(horizon):
        if resample:
            for s in range(nX):
                policy[s] = np.random.randint(0, nU)
                for a in range(nU):
                    k = row_sample_count(alpha, n, nsucc, s, a, epsilon)
                    if not compat and k < 1:
                        k = 1
                    entries += k * nsupp[s, a]
            snap_alpha[:] = alpha
            snap_n[:] = n
            rebuilds += 1
            resample = False
        u = policy[x] if fixed_policy else np.random.randint(0, nU)
        j = env_transition_rows(Pbar, nsucc, x, u, np.random.random())
        if alpha[x, u, j] == 0.0:
            nsupp[x, u] += 1
        alpha[x, u, j] += 1.0
        n[x, u] += 1.0
        if pair_deviation(snap_alpha, snap_n, alpha, n, nsucc, nX, x, u, compat) > delta:
            resample = True
        x = succ[x, u, j]
    return rebuilds, entries


#: Simulated trajectories averaged by :func:`cost_features`.
COST_SIMULATIONS = 4


def _simulated_rebuilds(theta, succ, nsucc, Pbar, initial_state, epsilon, delta, compat,
                        horizon):
    """``(rebuilds, entries)`` of :func:`cost_features`: :func:`simulate_rebuilds`
    averaged over :data:`COST_SIMULATIONS` seeds, for the stand-in that rebuilds more."""
    R = W = 0.0
    for fixed in (True, False):
        r_sum = w_sum = 0.0
        for k in range(COST_SIMULATIONS):
            r, w = simulate_rebuilds(theta, succ, nsucc, Pbar, initial_state, epsilon, delta,
                                     compat, horizon, k, fixed)
            r_sum += r / COST_SIMULATIONS
            w_sum += w / COST_SIMULATIONS
        if r_sum > R:
            R, W = r_sum, w_sum
    return R, W


def mean_rows(test) -> tuple[np.ndarray, rows.Layout]:
    """The test distribution's mean MDP as values on its ``support_layout`` (the layout
    returned too), without a dense array when it has Dirichlet concentrations."""
    lay = test.support_layout
    if hasattr(test, "theta_rows"):
        th = np.asarray(test.theta_rows, dtype=np.float64)
        s = th.sum(axis=2, keepdims=True)
        return np.divide(th, s, out=np.zeros_like(th), where=s > 0), lay
    return np.array(test.mean_rows()), lay


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """The work of a trajectory: every rebuild samples ``sum K'(x,u)·|S(x,u)|`` Gamma
    variates and sweeps the merged model (a few warm-started sweeps over the same entries,
    plus, where :func:`warm_pi_steps` allows them, policy-iteration steps with an nX x nX
    solve); between rebuilds a step is a transition, a count update and the deviation
    test. Rebuilds and entries come from :func:`simulate_rebuilds` (the kernel's
    resampling rule, on sparse rows), averaged over a few seeds, for two stand-ins of the
    agent's policy (a policy kept between rebuilds, random actions): the one that rebuilds
    more (a job must not outlast its estimate; measured, the agent lies between the
    two)."""
    from bbrlcore.agents._memo import pure_probe  # memoised on disk: every job plans these

    Pt, tlay = mean_rows(test)
    a_all = getattr(prior, "dirichlet_all", None)
    if a_all is not None:  # (+dir<α>: the full layout, α on every next state)
        lay = rows.full(prior.n_states, prior.n_actions)
        theta = np.full(lay.succ.shape, float(a_all))
    else:
        lay = rows.union(prior.support_layout, tlay)
        theta = np.ascontiguousarray(rows.move(prior.theta_rows, prior.support_layout, lay))
    Pbar = np.ascontiguousarray(rows.move(Pt, tlay, lay))
    R, W = pure_probe("sboss-rebuilds", _simulated_rebuilds, theta, lay.succ, lay.nsucc,
                      Pbar, int(test.initial_state), float(params["epsilon"]),
                      float(params["delta"]), bool(params["compat"]), int(horizon))
    nX = prior.n_states
    out = {"trajectory": 1.0, "steps": float(horizon), "rebuilds": R,
           "rebuild_states": R * nX * prior.n_actions, "entries": W}
    if warm_pi_steps(nX, lay.nnz) > 0:
        out["solves"] = R * float(nX) ** 3
        return out
    # sweeps alone: how many a warm solve of a merged model takes, probed with BOSS's
    # sampler at the rebuilds' mean number of samples per pair (memoised)
    from bbrlcore.agents._posterior import probe_merged_sweeps
    from bbrlcore.mdp.solvers import GUEZ_TOLERANCE

    k = max(1, int(round(W / max(R * lay.nnz, 1.0))))
    Rm = np.ascontiguousarray(prior.rewards_on(lay) if a_all is not None else
                              rows.move(prior.reward_rows, prior.support_layout, lay))
    sw = pure_probe("boss-sweeps", probe_merged_sweeps, theta, lay.succ, lay.nsucc, k, Rm,
                    float(gamma), GUEZ_TOLERANCE, 8)
    out["sweep_backups"] = W * sw
    return out


# ---------------------------------------------------------------------------------------
# Python side


def merged_size(theta: np.ndarray, epsilon: float, compat: bool) -> int:
    """Number of sampled probabilities of the merged model built at the prior: ``theta``
    the prior's concentrations on sparse rows (``prior.theta_rows``) or dense (the
    padding and the zeros count for nothing)."""
    theta = np.asarray(theta, dtype=np.float64)
    n = theta.sum(axis=2)
    var = np.where(theta > 0, theta * (n[..., None] - theta), 0.0) / (n * n * (n + 1))[..., None]
    k = np.ceil(var.max(axis=2) / epsilon)
    if not compat:
        k = np.maximum(k, 1)
    return int(float((k * (theta > 0).sum(axis=2)).sum()))


def merged_size_all(n_states: int, n_actions: int, a_all: float, epsilon: float,
                    compat: bool) -> int:
    r""":func:`merged_size` under a Dirichlet of concentration ``a_all`` on every one of
    the ``n_states`` next states (``+dir<α>``), without the dense array: every row's
    marginal variance is :math:`\alpha(n - \alpha)/(n^2(n+1))`, :math:`n = S\alpha`.

    >>> merged_size_all(3, 2, 1.0, 0.05, False)  # Var = 2/36: K = 2 samples of 3 slots
    36
    """
    n = n_states * a_all
    k = math.ceil(a_all * (n - a_all) / (n * n * (n + 1.0)) / epsilon)
    if not compat:
        k = max(k, 1)
    return int(k) * n_states * n_actions * n_states


def dir_bytes(n_states: int, n_actions: int, size: int) -> int:
    """Memory of SBOSS under a Dirichlet on every next state: eight dense arrays on the
    full layout (the prior, the posterior and its snapshot, the rewards, the test MDP,
    its rewards and their spread, the successors; 8 bytes per transition of the S×A×S
    model) and the merged model's ``size`` sampled probabilities."""
    return 8 * (8 * n_states * n_actions * n_states + int(size))


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    a_all = getattr(prior, "dirichlet_all", None)
    eps, compat = float(params["epsilon"]), bool(params["compat"])
    size = (merged_size(prior.theta_rows, eps, compat) if a_all is None else
            merged_size_all(int(prior.n_states), int(prior.n_actions), float(a_all), eps,
                            compat))
    if size > MAX_SAMPLE_ENTRIES:
        return (f"the merged model would hold {size:,} sampled probabilities at the prior "
                f"(limit {MAX_SAMPLE_ENTRIES:,}, 8 bytes each): choose a larger epsilon")
    if a_all is not None:
        need = dir_bytes(int(prior.n_states), int(prior.n_actions), size)
        if need > MAX_AGENT_MEMORY_BYTES:
            return (f"under a Dirichlet on every next state the posterior and the merged "
                    f"model are held densely, {need / 2**30:.1f} GB for {prior.n_states} "
                    f"states, above {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


def make_player(prior, params: dict, trained: Trained, ep: Episode):
    """A ``play(P, seed, rewards=None)`` running one SBOSS trajectory (see the module
    docstring); ``P`` the test MDP's values on ``ep``'s layout."""
    err = _setting_check(params, prior, ep.gamma, ep.horizon)
    if err:
        raise BBRLError(f"sboss: {err}")
    epsilon = float(params["epsilon"])
    delta = float(params["delta"])
    compat = bool(params["compat"])
    # (+dir<α>: the full layout, every next state a slot of concentration α)
    st = (setting(prior, ep) if getattr(prior, "dirichlet_all", None) is None
          else setting(prior, ep, rows.full(int(prior.n_states), int(prior.n_actions))))

    pi_steps = warm_pi_steps(prior.n_states, st.layout.nnz)
    V_init = prior_values(st.theta, st.succ, st.nsucc, st.Rm, ep.gamma, epsilon, compat,
                          GUEZ_TOLERANCE, pi_steps)

    # the arguments as the closure's own variables: in compat mode with large epsilon and
    # delta a trajectory lasts ≈ 10 µs, of which the look-ups were ≈ 0.5 µs
    env = None if st.to_agent is None else st.env  # (None: the test MDP's own rows)
    R, Rstd, succ, nsucc, theta, Rm = st.R, st.Rstd, st.succ, st.nsucc, st.theta, st.Rm
    gaussian, x0, gamma, horizon = int(ep.gaussian), ep.start, ep.gamma, ep.horizon
    tol, H = GUEZ_TOLERANCE, int(ep.episode_length)
    shape, ndarray = (horizon,), np.ndarray

    def rows_(P: np.ndarray, seed: int, rewards: np.ndarray) -> tuple[float, np.ndarray]:
        ret, counters = _trajectory(
            P if env is None else env(P), R, Rstd, gaussian, x0, gamma, horizon, seed, succ,
            nsucc, theta, Rm, epsilon, delta, compat, tol, pi_steps, V_init, rewards, H,
        )
        return float(ret), counters

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        return rows_(P, seed, rewards)

    play.on_rows = rows_  # type: ignore[attr-defined]  # (the runner's rows: no check)
    return play


ALGORITHM = Algorithm(
    name="sboss",
    params=(
        Param("epsilon", float, required=True, check=positive,
              doc="sample-count scale: K(x,u) = max_y ceil(Var_y / epsilon)"),
        Param("delta", float, required=True, check=positive,
              doc="resampling threshold on the posterior deviation"),
        COMPAT,
    ),
    make_player=make_player,
    train=None,
    counters=("resamples",),
    has_compat=True,
    doc=__doc__ or "",
    setting_check=_setting_check,
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    dirichlet_all=True,
)
