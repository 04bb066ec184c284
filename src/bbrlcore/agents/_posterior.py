r"""numba building blocks of the posterior-sampling agents (PSRL, BOSS).

The posterior of every transition row is a Dirichlet, :math:`\alpha(x,u,\cdot) =
\theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts). These
agents draw whole models from it and plan in them. The built-ins keep it on the agent's
**sparse rows** (:mod:`bbrlcore.mdp.rows`: slot k of row (x, u) is the transition to
``succ[x, u, k]``, successors increasing; the layout holds the prior's support and every
transition of the test MDPs, so an observation always has its slot):

* :func:`posterior_init_rows` / :func:`posterior_update_rows`: the concentrations
  ``alpha`` on the rows and the observed visits of each pair (``visits``, without the
  prior's pseudo-counts: the resampling rules count real transitions); an observation
  finds its slot by :func:`bbrlcore.mdp.rows.slot_of` (a binary search in the row). The
  support of a row is its slots of positive concentration (a test transition outside
  the prior's support has a slot of concentration 0 until it is observed).
* :func:`sample_and_solve` (PSRL, and BOSS with K = 1): draw one MDP, every row
  independently from :math:`\mathrm{Dir}(\alpha(x,u,\cdot))` (:func:`sample_model_rows`:
  normalised Gamma variates over the row's slots of positive concentration in increasing
  order, from the kernel's own xoshiro256** generator, :mod:`._rng` — the draws a dense
  row's support would take, in the same order), and solve it with BEB's solver
  (:func:`~bbrlcore.mdp.solvers.guez_policy_iteration_rows`: the Guez value iteration's
  answer, Euclidean tolerance 1e-4, lowest action index on ties, warm-started from the
  previous solve's values and policy; by sweeps alone on models too large for dense LU
  evaluations, :func:`~bbrlcore.mdp.solvers.lu_affordable`).
* :func:`sample_and_solve_merged` (BOSS with K > 1): draw ``K[x, u]`` rows per pair and
  merge them into one MDP whose merged action :math:`m = u + k\,n_U` is "sample k of
  action u", solved by the Guez value iteration (lowest merged index on ties, warm-started
  from the previous values and improved by policy-iteration steps first); the agent plays
  the real action :math:`\pi(x) \bmod n_U`. The samples, the sparse merged model and its
  solver are SBOSS's (:func:`bbrlcore.agents.sboss.build_merged`,
  :func:`~bbrlcore.agents.sboss.merged_value_iteration`).

Samples live only during the solve: between two resamplings the agents keep the greedy
action of every state, the values (the next solve's warm start) and the posterior.

The dense :func:`posterior_init`, :func:`posterior_update` and :func:`sample_model`
(``(nX, nU, nX)`` arrays with support lists) are the public helpers of
:mod:`bbrlcore.agents.bayes`; the built-in agents use the ``_rows`` ones.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import rows_model_init, support_insert
from bbrlcore.agents._rng import gamma_s, rng_new, uniform_s
from bbrlcore.agents.sboss import build_merged, merged_value_iteration
from bbrlcore.mdp.rows import slot_of
from bbrlcore.mdp.solvers import (
    GUEZ_TOLERANCE,
    guez_policy_iteration_rows,
    lu_affordable,
    n_transitions,
    support_of,
)


@njit(cache=True, error_model="numpy")
def posterior_init(theta):
    """``(alpha, visits, supp, nsupp)`` at the prior of dense concentrations ``theta``
    (nX, nU, nX): concentrations, observed visits of each pair (zeros), and the sorted
    support ``supp[x, u, :nsupp[x, u]]`` of each row (the public dense helper;
    :func:`posterior_init_rows` on sparse rows)."""
    nX, nU, _ = theta.shape
    alpha = theta.copy()
    visits = np.zeros((nX, nU), dtype=np.int64)
    supp, nsupp = support_of(theta)
    return alpha, visits, supp, nsupp


@njit(cache=True, error_model="numpy")
def posterior_update(alpha, visits, supp, nsupp, x, u, y):
    """Observe (x, u, y): one more count, and y joins the row's support if it was not in."""
    if alpha[x, u, y] == 0.0:
        support_insert(supp, nsupp, x, u, y)
    alpha[x, u, y] += 1.0
    visits[x, u] += 1


@njit(cache=True, error_model="numpy")
def sample_model(alpha, supp, nsupp, Ps, rs):
    r"""Draw one MDP from the posterior into ``Ps`` (only the support entries are written;
    the others must be zero): row (x, u) is :math:`\mathrm{Dir}(\alpha(x,u,\cdot))`,
    normalised Gamma variates over the support in increasing order. A single-entry row is
    that transition (no draw); a row whose variates sum below 1e-300 puts all its mass on
    one uniformly chosen support entry (as SBOSS's :func:`~.sboss.build_merged`). Dense
    arrays (the public helper; :func:`sample_model_rows` on sparse rows)."""
    nX, nU, _ = alpha.shape
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]  # generator state in registers (see _rng)
    for x in range(nX):
        for u in range(nU):
            ns = nsupp[x, u]
            if ns == 1:
                Ps[x, u, supp[x, u, 0]] = 1.0
                continue
            s = 0.0
            for j in range(ns):
                y = supp[x, u, j]
                g, s0, s1, s2, s3 = gamma_s(alpha[x, u, y], s0, s1, s2, s3)
                Ps[x, u, y] = g
                s += g
            if s < 1e-300:
                v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
                pick = min(np.int64(v * ns), ns - 1)
                for j in range(ns):
                    Ps[x, u, supp[x, u, j]] = 1.0 if j == pick else 0.0
            else:
                inv = 1.0 / s
                for j in range(ns):
                    Ps[x, u, supp[x, u, j]] *= inv
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3


# ---------------------------------------------------------------------------------------
# On sparse rows (bbrlcore.mdp.rows): alpha[x, u, k] is the concentration of the
# transition to succ[x, u, k], k < nsucc[x, u]


@njit(cache=True, error_model="numpy")
def posterior_init_rows(theta):
    """``(alpha, visits)`` at the prior: the concentrations ``theta`` on the agent's rows
    (copied) and the observed visits of each pair (zeros)."""
    nX, nU, _ = theta.shape
    return theta.copy(), np.zeros((nX, nU), dtype=np.int64)


@njit(cache=True, error_model="numpy")
def posterior_update_rows(alpha, visits, succ, nsucc, x, u, y):
    """Observe (x, u, y): one more count in y's slot of row (x, u) (found by binary
    search; the agent's layout holds every test transition). Returns the slot."""
    k = slot_of(succ, nsucc, x, u, y)
    if k < 0:
        raise ValueError("observed a transition outside the agent's layout")
    alpha[x, u, k] += 1.0
    visits[x, u] += 1
    return k


@njit(cache=True, error_model="numpy")
def sample_model_rows(alpha, nsucc, Ps, rs):
    r"""Draw one MDP from the posterior into ``Ps`` (the agent's rows, every slot written):
    row (x, u) is :math:`\mathrm{Dir}(\alpha(x,u,\cdot))`, normalised Gamma variates over
    the slots of positive concentration in increasing order (a slot of concentration 0
    gets probability 0 and no draw) — the draws and arithmetic of :func:`sample_model` on
    the dense row. A row with a single positive slot is that transition (no draw); a row
    whose variates sum below 1e-300 puts all its mass on one uniformly chosen positive
    slot (as SBOSS's :func:`~.sboss.build_merged`)."""
    sample_rows_of(alpha, nsucc, Ps, np.arange(alpha.shape[0]), rs)


@njit(cache=True, error_model="numpy")
def sample_rows_of(alpha, nsucc, Ps, need, rs):
    r"""Draw the rows of the states ``need`` (every action) from the posterior into
    ``Ps``, in the order of ``need``, as :func:`sample_model_rows` draws every row
    (which it does through this kernel; PSRL's episodic form draws only the rows an
    episode can need)."""
    nU = alpha.shape[1]
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]  # generator state in registers (see _rng)
    for i in range(need.shape[0]):
        x = need[i]
        for u in range(nU):
            n = nsucc[x, u]
            ns = 0
            for k in range(n):
                if alpha[x, u, k] > 0.0:
                    ns += 1
            if ns == 1:
                for k in range(n):
                    Ps[x, u, k] = 1.0 if alpha[x, u, k] > 0.0 else 0.0
                continue
            s = 0.0
            for k in range(n):
                a = alpha[x, u, k]
                if a > 0.0:
                    g, s0, s1, s2, s3 = gamma_s(a, s0, s1, s2, s3)
                    Ps[x, u, k] = g
                    s += g
                else:
                    Ps[x, u, k] = 0.0
            if s < 1e-300:
                v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
                pick = min(np.int64(v * ns), ns - 1)
                j = 0
                for k in range(n):
                    if alpha[x, u, k] > 0.0:
                        Ps[x, u, k] = 1.0 if j == pick else 0.0
                        j += 1
            else:
                inv = 1.0 / s
                for k in range(n):
                    if alpha[x, u, k] > 0.0:
                        Ps[x, u, k] *= inv
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3


@njit(cache=True, error_model="numpy")
def sample_and_solve(alpha, succ, nsucc, Rm, gamma, tol, Ps, V, pi, A, b, rs):
    """PSRL's step on sparse rows: draw one posterior MDP into ``Ps``
    (:func:`sample_model_rows`) and solve it to the Guez tolerance ``tol`` by
    :func:`~bbrlcore.mdp.solvers.guez_policy_iteration_rows` (BEB's solver), warm-started
    from ``V`` and ``pi`` (updated in place; ``pi`` is the greedy action of every state,
    lowest index on ties). ``A`` is the (nX, nX) buffer of the LU evaluations (any 2-d
    array when :func:`~bbrlcore.mdp.solvers.lu_affordable` refuses them). Returns the
    number of sweeps."""
    sample_model_rows(alpha, nsucc, Ps, rs)
    return guez_policy_iteration_rows(Ps, Rm, succ, nsucc, gamma, tol, V, pi, A, b)


@njit(cache=True, error_model="numpy")
def lu_buffer(nsucc):
    """The (nX, nX) work buffer of the LU policy evaluations when the model is solved
    with them (:func:`~bbrlcore.mdp.solvers.lu_affordable`), else a (1, 1) stand-in."""
    nX = nsucc.shape[0]
    if lu_affordable(nX, n_transitions(nsucc)):
        return np.empty((nX, nX))
    return np.empty((1, 1))


@njit(cache=True, error_model="numpy")
def probe_sample_sweeps(theta, succ, nsucc, Rm, gamma, tol, n_samples):
    """Mean sweeps of :func:`sample_and_solve` over ``n_samples`` MDPs drawn at the prior
    (generator seed 0), each solve warm-started from the last, as PSRL's resamplings
    are: a deterministic count, the cost model's feature on models too large for LU
    evaluations."""
    nX = theta.shape[0]
    Ps = np.zeros(theta.shape)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    A = lu_buffer(nsucc)
    b = np.empty(nX)
    rs = rng_new(0)
    total = 0
    for _i in range(n_samples):
        total += sample_and_solve(theta, succ, nsucc, Rm, gamma, tol, Ps, V, pi, A, b, rs)
    return total / max(n_samples, 1)


@njit(cache=True, error_model="numpy")
def probe_merged_sweeps(theta, succ, nsucc, K, Rm, gamma, tol, n_samples):
    """Mean sweeps of :func:`sample_and_solve_merged` (``K`` rows drawn per pair, no
    policy-iteration warm start) over ``n_samples`` merged models drawn at the prior
    (generator seed 0), each solve warm-started from the last, as BOSS's resamplings are:
    the cost model's feature on models too large for LU evaluations."""
    nX = theta.shape[0]
    Kx = np.full(nsucc.shape, K, dtype=np.int64)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    act = np.zeros(nX, dtype=np.int64)
    rs = rng_new(0)
    total = 0
    for _i in range(n_samples):
        total += sample_and_solve_merged(theta, succ, nsucc, Kx, Rm, gamma, tol, 0, V, pi,
                                         act, rs)
    return total / max(n_samples, 1)


@njit(cache=True, error_model="numpy")
def sample_and_solve_merged(alpha, succ, nsucc, K, Rm, gamma, tol, pi_steps, V, pi, act, rs):
    """BOSS's step: draw ``K[x, u]`` posterior rows per pair, solve the merged model from
    ``V`` (in place) and put the real action of each state's best merged action in ``act``.

    Sparse rows: ``succ`` (nX, nU, W) and ``nsucc`` (nX, nU) are the agent's layout,
    ``alpha`` (the posterior concentrations) and ``Rm`` (the known rewards) values on it,
    shape (nX, nU, W); ``K`` (nX, nU) int64 sample counts (at least 1 is drawn per pair);
    ``V``, ``pi``, ``act`` (nX); ``rs`` the :mod:`._rng` state. A row is drawn over its
    slots of positive concentration (:func:`~bbrlcore.agents.sboss.build_merged`); the
    policy-iteration warm start (``pi_steps``) applies only where
    :func:`~bbrlcore.mdp.solvers.lu_affordable` admits the layout
    (:func:`~bbrlcore.agents.sboss.merged_value_iteration`). Returns the number of Jacobi
    sweeps of the solve."""
    nU = K.shape[1]
    probs, off, mK, soff, rexp = build_merged(alpha, succ, nsucc, K, Rm, False, rs)
    sweeps = merged_value_iteration(probs, off, mK, soff, rexp, succ, nsucc, gamma, tol,
                                    False, V, pi, pi_steps)
    for z in range(act.shape[0]):
        act[z] = pi[z] % nU
    return sweeps


@njit(cache=True, error_model="numpy")
def mean_values(succ, nsucc, theta, Rm, gamma, tol):
    """Values and greedy policy of the prior's mean model (Guez tolerance ``tol``;
    ``theta`` and ``Rm`` on the rows ``succ``, ``nsucc``): the warm start of every
    trajectory's first solve (fewer iterations, same stopping test; they depend only on
    the agent, so each trajectory remains a function of its seed)."""
    nX = theta.shape[0]
    _N, _Np, Pm = rows_model_init(theta, nsucc)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    guez_policy_iteration_rows(Pm, Rm, succ, nsucc, gamma, tol, V, pi, lu_buffer(nsucc),
                               np.empty(nX))
    return V, pi


def sampling_setup(agent, ipar: np.ndarray) -> tuple:
    """The ``setup`` of PSRL and BOSS: ``(succ, nsucc, theta, Rm, V0, pi0, [gamma, tol],
    ipar)``: the agent's rows (``agent.layout``), the prior's concentrations and rewards
    on them (``agent.theta_rows``, ``agent.reward_rows``), the values and greedy policy of
    the prior's mean model (the first solve's warm start, :func:`mean_values`), the Guez
    tolerance and the agent's integer parameters ``ipar``."""
    succ = np.ascontiguousarray(agent.layout.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(agent.layout.nsucc, dtype=np.int64)
    theta = np.ascontiguousarray(agent.theta_rows, dtype=np.float64)
    Rm = np.ascontiguousarray(agent.reward_rows, dtype=np.float64)
    gamma = float(agent.gamma)
    V0, pi0 = mean_values(succ, nsucc, theta, Rm, gamma, GUEZ_TOLERANCE)
    return succ, nsucc, theta, Rm, V0, pi0, np.array([gamma, GUEZ_TOLERANCE]), ipar


@njit(cache=True, error_model="numpy")
def generator_from_numba():
    """A xoshiro256** state seeded by one draw of numba's generator (which the package
    seeds with the trajectory's seed before ``reset``)."""
    return rng_new(np.random.randint(0, 2**62))
