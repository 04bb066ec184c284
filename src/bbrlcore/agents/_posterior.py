r"""numba building blocks of the posterior-sampling agents (PSRL, BOSS).

The posterior of every transition row is a Dirichlet, :math:`\alpha(x,u,\cdot) =
\theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts). These
agents draw whole models from it and plan in them:

* :func:`posterior_init` / :func:`posterior_update`: the concentrations ``alpha``, the
  observed visits of each pair (``visits``, without the prior's pseudo-counts: the
  resampling rules count real transitions) and the sorted support of each row (the
  successors with a positive concentration; an observation outside the prior's support
  joins it).
* :func:`sample_and_solve` (PSRL, and BOSS with K = 1): draw one MDP, every row
  independently from :math:`\mathrm{Dir}(\alpha(x,u,\cdot))` (:func:`sample_model`:
  normalised Gamma variates over the row's support, from the kernel's own xoshiro256**
  generator, :mod:`._rng`), and solve it with BEB's solver
  (:func:`~bbrlcore.mdp.solvers.guez_policy_iteration`: the Guez value iteration's answer,
  Euclidean tolerance 1e-4, lowest action index on ties, warm-started from the previous
  solve's values and policy).
* :func:`sample_and_solve_merged` (BOSS with K > 1): draw ``K[x, u]`` rows per pair and
  merge them into one MDP whose merged action :math:`m = u + k\,n_U` is "sample k of
  action u", solved by the Guez value iteration (lowest merged index on ties, warm-started
  from the previous values and improved by policy-iteration steps first); the agent plays
  the real action :math:`\pi(x) \bmod n_U`. The samples, the sparse merged model and its
  solver are SBOSS's (:func:`bbrlcore.agents.sboss.build_merged`,
  :func:`~bbrlcore.agents.sboss.merged_value_iteration`).

Samples live only during the solve: between two resamplings the agents keep the greedy
action of every state, the values (the next solve's warm start) and the posterior.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import model_init, support_insert
from bbrlcore.agents._rng import gamma_s, rng_new, uniform_s
from bbrlcore.agents.sboss import build_merged, merged_value_iteration
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_policy_iteration, support_of


@njit(cache=True, error_model="numpy")
def posterior_init(theta):
    """``(alpha, visits, supp, nsupp)`` at the prior: concentrations, observed visits of
    each pair (zeros), and the sorted support ``supp[x, u, :nsupp[x, u]]`` of each row."""
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
    one uniformly chosen support entry (as SBOSS's :func:`~.sboss.build_merged`)."""
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


@njit(cache=True, error_model="numpy")
def sample_and_solve(alpha, supp, nsupp, Rm, gamma, tol, Ps, V, pi, A, b, rs):
    """PSRL's step: draw one posterior MDP into ``Ps`` and solve it to the Guez
    tolerance ``tol`` by :func:`~bbrlcore.mdp.solvers.guez_policy_iteration` (BEB's solver),
    warm-started from ``V`` and ``pi`` (updated in place; ``pi`` is the greedy action of
    every state, lowest index on ties). Returns the number of sweeps."""
    sample_model(alpha, supp, nsupp, Ps, rs)
    return guez_policy_iteration(Ps, Rm, supp, nsupp, gamma, tol, V, pi, A, b)


@njit(cache=True, error_model="numpy")
def sample_and_solve_merged(alpha, supp, nsupp, K, Rm, gamma, tol, pi_steps, V, pi, act, rs):
    """BOSS's step: draw ``K[x, u]`` posterior rows per pair, solve the merged model from
    ``V`` (in place) and put the real action of each state's best merged action in ``act``.
    Returns the number of Jacobi sweeps of the solve."""
    nU = K.shape[1]
    probs, off, mK, soff, rexp = build_merged(alpha, supp, nsupp, K, Rm, False, rs)
    sweeps = merged_value_iteration(probs, off, mK, soff, rexp, supp, nsupp, gamma, tol,
                                    False, V, pi, pi_steps)
    for z in range(act.shape[0]):
        act[z] = pi[z] % nU
    return sweeps


@njit(cache=True, error_model="numpy")
def mean_values(theta, Rm, gamma, tol):
    """Values and greedy policy of the prior's mean model (Guez tolerance ``tol``): the
    warm start of every trajectory's first solve (fewer iterations, same stopping test;
    they depend only on the agent, so each trajectory remains a function of its seed)."""
    nX, nU, _ = theta.shape
    _N, _Np, Pm, supp, nsupp = model_init(theta)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    guez_policy_iteration(Pm, Rm, supp, nsupp, gamma, tol, V, pi, np.empty((nX, nX)),
                          np.empty(nX))
    return V, pi


def sampling_setup(prior, gamma: float, ipar: np.ndarray) -> tuple:
    """The ``setup`` of PSRL and BOSS: ``(theta, reward, V0, pi0, [gamma, tol], ipar)``,
    the prior's arrays, the values and greedy policy of its mean model (the first solve's
    warm start, :func:`mean_values`), the Guez tolerance and the agent's integer
    parameters ``ipar``."""
    theta = np.ascontiguousarray(prior.theta, dtype=np.float64)
    Rm = np.ascontiguousarray(prior.reward, dtype=np.float64)
    V0, pi0 = mean_values(theta, Rm, float(gamma), GUEZ_TOLERANCE)
    return theta, Rm, V0, pi0, np.array([float(gamma), GUEZ_TOLERANCE]), ipar


@njit(cache=True, error_model="numpy")
def generator_from_numba():
    """A xoshiro256** state seeded by one draw of numba's generator (which the package
    seeds with the trajectory's seed before ``reset``)."""
    return rng_new(np.random.randint(0, 2**62))
