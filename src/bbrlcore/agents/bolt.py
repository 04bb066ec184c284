r"""BOLT: Bayesian Optimistic Local Transitions (Araya-López, Thomas & Buffet 2012).

Beyond the paper (Castronovo et al. 2016 does not have it): an optimistic Bayesian agent
whose optimism is imagined evidence, a near-Bayes-optimal relative of BEB.

The agent keeps the Dirichlet posterior of every transition row, :math:`\alpha(x,u,\cdot)
= \theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts,
:math:`n(x,u) = \sum_y \alpha(x,u,y)`), and knows the reward function (the prior's
``reward``). For every pair (x, u) and every successor σ it considers the posterior mean
after η **imagined transitions** (x, u, σ),

.. math::  P^{\sigma}(y \mid x,u) = \frac{\alpha(x,u,y) + \eta\,[y = \sigma]}{n(x,u) + \eta},

and plans in the optimistic MDP whose actions are the pairs (u, σ) — each pair (x, u)
chooses its own best local transition:

.. math::  Q(x,u) = \frac{n(x,u)}{n(x,u)+\eta} \sum_y \bar P(y \mid x,u)\,
   \bigl(R(x,u,y) + \gamma V(y)\bigr) + \frac{\eta}{n(x,u)+\eta}
   \max_{\sigma} \bigl(R(x,u,\sigma) + \gamma V(\sigma)\bigr),

with :math:`\bar P = \alpha / n` the posterior mean and :math:`V(x) = \max_u Q(x,u)`:
the η pseudo-transitions go to the successor that maximises the value. σ ranges over the
successors the posterior deems possible (:math:`\alpha(x,u,\sigma) > 0`, which grows with
observations): a zero concentration is a transition the prior rules out, which no
observation — real or imagined — of a Dirichlet posterior can produce. On the uniform
priors (UGC, UGDL, UGrid) that is every state, the paper's setting. (TabulaRL's ``BOLT``
relaxes this set to an L1 ball of radius 2η/(n+η) around the mean; this is the paper's
exact set.)

The optimistic MDP is solved **after every transition** (and once per player for the
prior, every trajectory's start), like BEB's, to the Guez value iteration's tolerance
(Euclidean change of a sweep at most 1e-4, lowest action index wins ties, then lowest
σ), by warm-started policy iteration as BEB does
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration_rows`): exact evaluation of the current
policy (u, σ) by an :math:`n_X \times n_X` linear solve, then one optimistic sweep, until
a sweep changes the values by at most the tolerance (plain sweeps after 100
evaluations). A sweep costs two passes over each row's support (the mean's sum and the
max over σ), an evaluation the same solve as BEB's. The agent plays the last sweep's
greedy action.

**Sparse rows.** The counts, the mean model and the rewards live on the agent's padded
rows (:mod:`bbrlcore.mdp.rows`: the prior's support joined with the test MDPs'
transitions; slot k of row (x, u) is the transition to ``succ[x, u, k]``): the sums and
the max over σ run over a row's slots of positive count in increasing successor order
(the terms, and the order, of the dense row's support), σ is kept as a slot, and an
observation finds its slot by binary search. A model too large for the dense
:math:`n_X \times n_X` evaluation (:func:`~bbrlcore.mdp.solvers.lu_affordable`:
:math:`n_X^3` above 200 times the transitions, never on the paper's problems) is solved
by optimistic sweeps alone, warm-started from the previous values, until a sweep changes
them by at most the tolerance: the stopping test of the policy iteration above (whose
evaluations only move the sweeps' starting point) and of its own plain-sweep tail, so
the answer meets the same test; a sweep's cost grows with the transitions, not
:math:`n_X^2`.

With ``η = 0`` the model is the posterior mean and BOLT plays exactly BEB with β = 0
(greedy in the posterior mean, the same solver and arithmetic). The paper's analysis
takes η = H (the horizon) for near-Bayes-optimality in finite-horizon problems; here η
is a parameter (float ≥ 0, required). γ < 1.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state (done by the package's loop,
:func:`~bbrlcore.agents.api.trajectory_loop_rows`); the counts and the optimistic model
are kept, and it plans with the test set's γ.

Paper: M. Araya-López, V. Thomas and O. Buffet, "Near-optimal BRL using optimistic local
transitions", ICML 2012.

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): row (x, u)'s posterior is
:math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))` over all S next states, so its mean gives an
observed state :math:`(\alpha + c)/(S\alpha + n)` and every other state
:math:`\alpha/(S\alpha + n)` (as BEB's), :math:`n(x,u) = S\alpha +` its visits weighs
the imagined transitions (:math:`\eta/(n+\eta)`), and σ ranges over **all S next
states** (every one has a positive concentration). BOLT then keeps its counts, its mean
model and the rewards **densely**, on the full layout (every next state a slot of
concentration α plus its counts; the rewards the prior's, 0 outside its stored
transitions), and plans exactly as above on it: a sweep costs two passes over S·A·S
transitions, an evaluation the same (S, S) solve. Memory :func:`dir_bytes`
(:math:`40 S^2 A` bytes and the LU buffer), refused in one line above 16 GB. Measured
on DeepSea-10 (102 states), 100 episodes, η = 10: 200 ms a trajectory under
``UDeepSea-10+dir0.3235`` against 55 ms under ``UDeepSea-10``. BOLT has no
indicator player (Colosseum's expected indicators are not available for it, under any
prior).

**Rewards.** BOLT's optimistic models pay the prior's rewards; it needs known rewards,
and a prior whose rewards are unknown (``+rbeta``, ``+rnig``:
:mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming it and the prior
(:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import likeliest_slot, rows_model_init, rows_model_update
from bbrlcore.agents._posterior import lu_buffer
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import MAX_AGENT_MEMORY_BYTES, Param, non_negative
from bbrlcore.agents.psrl import full_rows, scatter_rows
from bbrlcore.mdp.rows import slot_of
from bbrlcore.mdp.solvers import (
    GUEZ_MAX_SWEEPS,
    GUEZ_TOLERANCE,
    _lu_solve,
    lu_affordable,
    n_transitions,
)


@njit(cache=True, error_model="numpy")
def bolt_sweep(Pm, N, C1, C2, R, succ, nsucc, gamma, V, Vnew, pi, sig):
    """One optimistic Jacobi sweep ``Vnew = max_u Q(x, u | V)`` on sparse rows (see the
    module docstring; ``C1 = n/(n+η)``, ``C2 = η/(n+η)`` per pair; the terms are the
    slots of positive count ``N``); ``pi[x]`` gets the lowest maximising action,
    ``sig[x]`` the slot of the lowest maximising σ of that action. Returns
    sum_x (Vnew - V)^2."""
    nX, nU, _ = Pm.shape
    diff2 = 0.0
    for x in range(nX):
        best = -np.inf
        bu = 0
        for u in range(nU):
            acc = 0.0
            top = -np.inf
            for k in range(nsucc[x, u]):
                if N[x, u, k] > 0.0:
                    t = R[x, u, k] + gamma * V[succ[x, u, k]]
                    acc += Pm[x, u, k] * t
                    top = max(top, t)
            q = acc * C1[x, u] + C2[x, u] * top
            if q > best:
                best = q
                bu = u
        # the best action's sigma: the lowest successor reaching its max
        top = -np.inf
        bs = 0
        for k in range(nsucc[x, bu]):
            if N[x, bu, k] > 0.0:
                t = R[x, bu, k] + gamma * V[succ[x, bu, k]]
                if t > top:
                    top = t
                    bs = k
        Vnew[x] = best
        pi[x] = bu
        sig[x] = bs
        d = best - V[x]
        diff2 += d * d
    return diff2


@njit(cache=True, error_model="numpy")
def bolt_evaluate(Pm, C1, C2, R, succ, nsucc, gamma, pi, sig, A, b):
    """Exact value of the policy (pi, sig) in the optimistic model (``sig[x]`` a slot of
    row (x, pi[x])): solve :math:`(I - \\gamma P_\\pi) V = r_\\pi` (dense ``A``, nX x nX);
    the values are returned in ``b``. (A slot of zero count has probability 0: a zero
    term.)"""
    nX = b.shape[0]
    for i in range(nX):
        for j in range(nX):
            A[i, j] = 0.0
        A[i, i] = 1.0
        u = pi[i]
        s = sig[i]
        c1 = C1[i, u]
        c2 = C2[i, u]
        acc = 0.0
        for k in range(nsucc[i, u]):
            p = Pm[i, u, k] * c1
            A[i, succ[i, u, k]] -= gamma * p
            acc += p * R[i, u, k]
        A[i, succ[i, u, s]] -= gamma * c2
        b[i] = acc + c2 * R[i, u, s]
    _lu_solve(A, b)


@njit(cache=True, error_model="numpy")
def bolt_policy_iteration(Pm, N, C1, C2, R, succ, nsucc, gamma, tol, V, pi, sig, A, b,
                          Vnew):
    """The Guez value iteration's answer for the optimistic model, by policy iteration
    from the policy (pi, sig) (all updated in place), as
    :func:`bbrlcore.mdp.solvers.guez_policy_iteration_rows` does for a plain model; by
    warm-started sweeps alone (same stopping test) when the model is too large for dense
    LU evaluations (:func:`~bbrlcore.mdp.solvers.lu_affordable`; ``A`` may then be any
    2-d array). Returns the number of sweeps."""
    nX = V.shape[0]
    tol2 = tol * tol
    sweeps = 0
    if lu_affordable(nX, n_transitions(nsucc)):
        for _it in range(100):
            bolt_evaluate(Pm, C1, C2, R, succ, nsucc, gamma, pi, sig, A, b)
            for i in range(nX):
                V[i] = b[i]
            diff2 = bolt_sweep(Pm, N, C1, C2, R, succ, nsucc, gamma, V, Vnew, pi, sig)
            for i in range(nX):
                V[i] = Vnew[i]
            sweeps += 1
            if diff2 <= tol2:
                return sweeps
    while sweeps < GUEZ_MAX_SWEEPS:
        diff2 = bolt_sweep(Pm, N, C1, C2, R, succ, nsucc, gamma, V, Vnew, pi, sig)
        for i in range(nX):
            V[i] = Vnew[i]
        sweeps += 1
        if diff2 <= tol2:
            break
    return sweeps


@njit(cache=True, error_model="numpy")
def _weights(C1, C2, Np, eta, x, u):
    """The mean's and the imagined transitions' weights of pair (x, u)."""
    C1[x, u] = Np[x, u] / (Np[x, u] + eta)
    C2[x, u] = eta / (Np[x, u] + eta)


@njit(cache=True, error_model="numpy")
def _start(succ, nsucc, theta, eta):
    """The model at the prior: ``(N, Np, Pm, C1, C2)``."""
    nX, nU, _ = theta.shape
    N, Np, Pm = rows_model_init(theta, nsucc)
    C1 = np.empty((nX, nU))
    C2 = np.empty((nX, nU))
    for x in range(nX):
        for u in range(nU):
            _weights(C1, C2, Np, eta, x, u)
    return N, Np, Pm, C1, C2


@njit(cache=True, error_model="numpy")
def prior_solution(succ, nsucc, theta, Rm, gamma, eta, tol):
    """``(V, pi, sig)``: the optimistic model of the prior solved from zero (the policy
    (0, lowest σ of action 0)); every trajectory starts from it (it depends only on the
    agent, so it is computed once per player)."""
    nX = theta.shape[0]
    N, Np, Pm, C1, C2 = _start(succ, nsucc, theta, eta)
    V = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    sig = np.zeros(nX, dtype=np.int64)
    for x in range(nX):  # a valid sigma for the first evaluation: action 0's lowest
        for k in range(nsucc[x, 0]):
            if N[x, 0, k] > 0.0:
                sig[x] = k
                break
    bolt_policy_iteration(Pm, N, C1, C2, Rm, succ, nsucc, gamma, tol, V, pi, sig,
                          lu_buffer(nsucc), np.empty(nX), np.empty(nX))
    return V, pi, sig


@njit(cache=True, error_model="numpy")
def _reset(setup):
    succ, nsucc, theta, Rm, V0, pi0, sig0, fpar = setup
    nX = theta.shape[0]
    N, Np, Pm, C1, C2 = _start(succ, nsucc, theta, fpar[1])
    return (N, Np, Pm, succ, nsucc, Rm, V0.copy(), pi0.copy(), sig0.copy(), lu_buffer(nsucc),
            np.empty(nX), np.empty(nX), C1, C2, fpar)


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    return state[7][x]


@njit(cache=True, error_model="numpy", inline="always")
def _observe(state, x, u, y, r):
    N, Np, Pm, succ, nsucc, Rm, V, pi, sig, A, b, Vnew, C1, C2, fpar = state
    k = slot_of(succ, nsucc, x, u, y)
    if k < 0:
        raise ValueError("observed a transition outside the agent's layout")
    rows_model_update(N, Np, Pm, nsucc, x, u, k)
    _weights(C1, C2, Np, fpar[1], x, u)
    bolt_policy_iteration(Pm, N, C1, C2, Rm, succ, nsucc, fpar[0], fpar[2], V, pi, sig, A, b,
                          Vnew)


@njit(cache=True, error_model="numpy")
def probe_sweeps(succ, nsucc, theta, Rm, x0, gamma, eta, tol, steps):
    """Mean sweeps of BOLT's solves along ``steps`` steps played in the prior's mean model
    (each step the greedy action and its most likely successor, the counts and weights
    updated, the optimistic model re-solved warm, as the trajectory does): the work of a
    solve on a model too large for LU evaluations, a number of sweeps that the model's
    size does not give (a deterministic count; the cost model's feature)."""
    nX = theta.shape[0]
    V, pi, sig = prior_solution(succ, nsucc, theta, Rm, gamma, eta, tol)
    N, Np, Pm, C1, C2 = _start(succ, nsucc, theta, eta)
    A = lu_buffer(nsucc)
    b = np.empty(nX)
    Vnew = np.empty(nX)
    total = 0
    x = x0 if x0 >= 0 else 0
    for _t in range(steps):
        u = pi[x]
        k = likeliest_slot(Pm, x, u, nsucc[x, u])
        rows_model_update(N, Np, Pm, nsucc, x, u, k)
        _weights(C1, C2, Np, eta, x, u)
        total += bolt_policy_iteration(Pm, N, C1, C2, Rm, succ, nsucc, gamma, tol, V, pi,
                                       sig, A, b, Vnew)
        x = succ[x, u, k]
    return total / max(steps, 1)


#: Steps of :func:`probe_sweeps` behind the cost model's estimate.
PROBE_STEPS = 25


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """A policy iteration of the optimistic model after every step: sweeps over the
    model's support (two passes per row) and an nX x nX linear solve per evaluation,
    like BEB's — or, on a model too large for LU evaluations
    (:func:`~bbrlcore.mdp.solvers.lu_affordable`), the sweeps a warm solve takes
    (:func:`probe_sweeps`, memoised) times the transitions."""
    lay = prior.support_layout
    nnz = lay.nnz
    nX = prior.n_states
    if getattr(prior, "dirichlet_all", None) is not None:  # (the full layout; the sweeps'
        nnz = nX * prior.n_actions * nX  # probe below stays the support's)
    B = float(nnz)
    if lu_affordable(nX, nnz):
        return {"trajectory": 1.0, "steps": float(horizon), "backups": 2.0 * horizon * B,
                "solves": horizon * float(nX) ** 3}
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    s = pure_probe("bolt-sweeps", probe_sweeps, lay.succ, lay.nsucc,
                   np.ascontiguousarray(prior.theta_rows),
                   np.ascontiguousarray(prior.reward_rows), int(prior.initial_state),
                   float(gamma), float(params["eta"]), GUEZ_TOLERANCE, PROBE_STEPS)
    return {"trajectory": 1.0, "steps": float(horizon), "sweep_backups": 2.0 * horizon * B * s}


def dir_bytes(nX: int, nU: int) -> int:
    """Memory of BOLT under a Dirichlet on every next state (``+dir<α>``): the dense
    prior, counts, mean model, rewards and successors (8 bytes each per transition of
    the S×A×S model) and the (S, S) buffer of the LU evaluations."""
    return 40 * nX * nU * nX + 8 * nX * nX


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    if getattr(prior, "dirichlet_all", None) is not None:
        need = dir_bytes(int(prior.n_states), int(prior.n_actions))
        if need > MAX_AGENT_MEMORY_BYTES:
            return (f"under a Dirichlet on every next state the counts and the mean model "
                    f"are held densely, {need / 2**30:.1f} GB for {prior.n_states} states, "
                    f"above {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


class BOLT(CompiledAgent):
    """BOLT as a compiled agent (the module docstring states the algorithm)."""

    name = "bolt"
    params = (Param("eta", float, required=True, check=non_negative,
                    doc="imagined transitions to the best successor of each pair"),)
    setting_check = staticmethod(_setting_check)
    cost_features = staticmethod(cost_features)
    reset = _reset
    act = _act
    observe = _observe
    dirichlet_all = True  # (+dir<α>: the full layout, the module docstring)

    def setup(self) -> tuple:
        succ = np.ascontiguousarray(self.layout.succ, dtype=np.int64)
        nsucc = np.ascontiguousarray(self.layout.nsucc, dtype=np.int64)
        theta = np.ascontiguousarray(self.theta_rows, dtype=np.float64)
        Rm = np.ascontiguousarray(self.reward_rows, dtype=np.float64)
        a_all = getattr(self.prior, "dirichlet_all", None)
        if a_all is not None:  # every next state a slot of concentration α (+ counts)
            nX = self.n_states
            Rm = scatter_rows(Rm, succ, nsucc, nX)
            succ, nsucc = full_rows(nX, self.n_actions)
            theta = np.full(succ.shape, float(a_all))
        fpar = np.array([float(self.gamma), float(self.p["eta"]), GUEZ_TOLERANCE])
        V0, pi0, sig0 = prior_solution(succ, nsucc, theta, Rm, fpar[0], fpar[1], fpar[2])
        return succ, nsucc, theta, Rm, V0, pi0, sig0, fpar


BOLT.__doc__ = __doc__  # what `bbrl agents bolt` shows
