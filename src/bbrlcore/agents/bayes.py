r"""What a Bayesian agent needs, for your own algorithm: the Dirichlet posterior of the
transitions, drawing an MDP from it, and solving a model.

Every agent of the benchmark starts a trajectory from the prior, an FDM distribution
(:class:`~bbrlcore.mdp.distributions.FDMDistribution`): independent Dirichlet
concentrations ``theta[x, u, :]`` on each transition row and known rewards
``reward[x, u, y]``. After observing ``(x, u, y)`` the posterior is the Dirichlet of
``theta + counts``; a zero concentration is a transition the prior rules out, and stays
impossible until it is observed. The built-in agents are made of the functions below, in
their forms on sparse rows ("On sparse rows" below): e-Greedy and Soft-max solve the
posterior mean with :func:`q_solve_rows`, BEB and MBIE-EB with
:func:`guez_policy_iteration_rows` (BOLT with a variant of it), PSRL and BOSS draw models
with :func:`sample_model_rows` — the draws of
:func:`sample_model` on the agent's rows. Each dense helper gives its form on rows'
answer bit for bit (the sums over a row's slots are the sums over its support, in the
same order), so an agent written with either plays the same arithmetic.

**For a Python agent** (:class:`~bbrlcore.agents.api.PythonAgent`), numpy in and out:

* :func:`mean_model` — the posterior mean model :math:`\theta / \sum_y \theta`;
* :func:`q_values` — the Q-function of a model (the paper's Q-iteration: sweeps until
  the largest change is at most 0.01, at most T + 1 of them), warm-started if you give
  the previous one;
* :func:`state_values` — the values and greedy policy of a model (the Guez value
  iteration's answer: Euclidean tolerance 1e-4, lowest action index on ties);
* :func:`sample_mdp` — one MDP drawn from the Dirichlet posterior with the agent's
  ``self.rng``, every row on its support (zero concentrations stay zero).

The posterior update is one line: ``counts[x, u, y] += 1``.

**For a compiled agent** (:class:`~bbrlcore.agents.api.CompiledAgent`), numba
``@njit`` functions on plain arrays, to call from your ``reset``, ``act`` and
``observe`` (they work from Python too):

* :func:`mean_model_init` / :func:`mean_model_update` — the counts, their row sums, the
  posterior mean model kept up to date, and each row's support (sorted successors with a
  positive count: the only terms of the sums);
* :func:`posterior_init` / :func:`posterior_update` — the concentrations, the observed
  visits of each pair and each row's support, without the mean (for agents that sample);
* :func:`support_of` — the support of any model;
* :func:`q_solve` — the Q-iteration's answer in place, warm-started (e-Greedy's solver);
* :func:`guez_policy_iteration` — values and greedy policy in place, warm-started (BEB's);
* :func:`draw_mdp` — one MDP from the posterior with numba's generator (the package
  seeds it with the trajectory's seed before ``reset``);
* :func:`sample_model` — the same draw on the rows' supports from a generator state of
  the agent's own (:func:`new_generator`): faster on sparse priors (PSRL and BOSS use
  its form on rows, below);
* :func:`argmax_random_tie` — the greedy action, exact ties broken at random.

**On sparse rows**, for large problems (an agent's ``self.layout``, a
:class:`~bbrlcore.mdp.rows.Layout`: ``succ`` (nX, nU, K) the successors of each pair in
increasing order, ``nsucc`` (nX, nU) how many; a model, counts or rewards on it are
arrays (nX, nU, K), slot ``k`` of row (x, u) being the transition to ``succ[x, u, k]``;
see :mod:`bbrlcore.agents.api`, "Large problems"). From Python:

* :func:`q_values` and :func:`state_values` with ``layout=`` — the solvers above on rows;
* :func:`slot` ``(layout, x, u, y)`` — the slot of a transition (-1: none);
* the posterior mean is ``counts / counts.sum(axis=2, keepdims=True)`` (padding slots
  hold zeros).

In numba (``succ`` and ``nsucc`` are the layout's arrays):

* :func:`slot_of` ``(succ, nsucc, x, u, y)`` — the slot of ``y`` in
  row (x, u) (binary search), or -1;
* :func:`rows_model_init` ``(counts, nsucc) -> (N, Np, P)`` /
  :func:`rows_model_update` ``(N, Np, P, nsucc, x, u, k)`` —
  the posterior mean kept up to date (e-Greedy's, BEB's);
* :func:`posterior_init_rows` ``(theta) -> (alpha,
  visits)`` / :func:`posterior_update_rows` ``(alpha,
  visits, succ, nsucc, x, u, y) -> k`` — the posterior of the agents that sample;
* :func:`sample_model_rows` ``(alpha, nsucc, Ps, rs)`` — one
  MDP from the posterior into ``Ps``: from the same generator state, the draws and the
  arithmetic of :func:`sample_model` (PSRL's and BOSS's sampler);
* :func:`q_solve_rows` ``(P, R, succ, nsucc, gamma, horizon, Q)`` and
  :func:`guez_policy_iteration_rows` ``(P, R, succ, nsucc, gamma, tol, V, pi, A, b)``
  — the solvers (``A`` the (nX, nX) buffer of the LU evaluations, or a (1, 1) array when
  :func:`~bbrlcore.mdp.solvers.lu_affordable` ``(nX, n_transitions(nsucc))`` is False:
  large models are solved by sweeps).

All of them are importable from this module (``bayes.rows_model_init``, ...).

Examples
--------
The posterior mean of GC's prior after one observation, solved, and a draw from the
posterior:

>>> import numpy as np
>>> from bbrlcore.agents import bayes
>>> from bbrlcore.mdp import distributions as D
>>> prior = D.builtin("GC")
>>> counts = prior.theta.copy()
>>> counts[0, 1, 2] += 1                       # observed (x, u, y) = (0, 1, 2)
>>> P = bayes.mean_model(counts)
>>> Q = bayes.q_values(P, prior.reward, gamma=0.95, horizon=250)
>>> Q.shape, int(np.argmax(Q[0])) in range(3)
((5, 3), True)
>>> Ps = bayes.sample_mdp(counts, np.random.default_rng(0))
>>> bool(np.allclose(Ps.sum(axis=2), 1.0) and np.all(Ps[counts == 0] == 0))
True

The same posterior kept by numba functions (as a compiled agent's ``observe`` would):

>>> N, Np, Pm, supp, nsupp = bayes.mean_model_init(prior.theta)
>>> bayes.mean_model_update(N, Np, Pm, supp, nsupp, 0, 1, 2)
>>> bool(np.allclose(Pm, P))
True
>>> Qn = np.zeros((5, 3))
>>> sweeps = bayes.q_solve(Pm, prior.reward, supp, nsupp, 0.95, 250, Qn)
>>> bool(np.allclose(Qn, Q))
True

On sparse rows (GC's prior support; its rows have two successors each): counts after
observing (x, u, y) = (0, 1, 1), the posterior mean solved, the same Q-function as on
the dense arrays:

>>> lay = prior.support_layout
>>> lay.succ.shape, lay.succ[0, 1].tolist()
((5, 3, 2), [0, 1])
>>> c = prior.theta_rows.copy()
>>> c[0, 1, bayes.slot(lay, 0, 1, 1)] += 1
>>> Qr = bayes.q_values(c / c.sum(axis=2, keepdims=True), prior.reward_rows, 0.95, 250,
...                     layout=lay)
>>> dense = prior.theta.copy()
>>> dense[0, 1, 1] += 1
>>> bool(np.array_equal(Qr, bayes.q_values(bayes.mean_model(dense), prior.reward, 0.95)))
True
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import (
    argmax_random_tie,
    dirichlet_row,
    rows_model_init,
    rows_model_update,
)
from bbrlcore.agents._kernels import model_init as mean_model_init
from bbrlcore.agents._kernels import model_update as mean_model_update
from bbrlcore.agents._posterior import (
    generator_from_numba,
    posterior_init,
    posterior_init_rows,
    posterior_update,
    posterior_update_rows,
    sample_model,
    sample_model_rows,
)
from bbrlcore.agents._rng import rng_new as new_generator
from bbrlcore.mdp.rows import Layout, slot_of
from bbrlcore.mdp.solvers import (
    GUEZ_TOLERANCE,
    Q_ACCURACY,
    _on_support,
    guez_policy_iteration,
    guez_policy_iteration_rows,
    lu_affordable,
    n_transitions,
    q_solve,
    q_solve_rows,
    support_of,
)

__all__ = [
    "GUEZ_TOLERANCE", "Q_ACCURACY", "argmax_random_tie", "dirichlet_row", "draw_mdp",
    "generator_from_numba", "guez_policy_iteration", "guez_policy_iteration_rows",
    "mean_model", "mean_model_init", "mean_model_update", "new_generator",
    "posterior_init", "posterior_init_rows", "posterior_update", "posterior_update_rows",
    "q_solve", "q_solve_rows", "q_values", "rows_model_init", "rows_model_update",
    "sample_mdp", "sample_model", "sample_model_rows", "slot", "slot_of", "state_values",
    "support_of",
]


# ---------------------------------------------------------------------------------------
# numpy, for Python agents


def mean_model(counts: np.ndarray) -> np.ndarray:
    """The posterior mean model of Dirichlet concentrations ``counts[x, u, y]`` (prior
    plus observations): each row divided by its sum, as float64.

    >>> mean_model(np.array([[[1.0, 3.0]]]))
    array([[[0.25, 0.75]]])
    """
    c = np.asarray(counts, dtype=np.float64)
    return c / c.sum(axis=2, keepdims=True)


def q_values(P: np.ndarray, R: np.ndarray, gamma: float, horizon: int = 250,
             Q: np.ndarray | None = None, layout: Layout | None = None) -> np.ndarray:
    """The Q-function of the model ``(P, R)``: the answer of the paper's Q-iteration
    (synchronous sweeps until the largest change is at most :data:`Q_ACCURACY` = 0.01,
    at most ``horizon + 1`` of them), started from ``Q`` (the previous answer: far fewer
    sweeps) or from zero. A new ``(nX, nU)`` array; e-Greedy's solver (:func:`q_solve`).

    With ``layout`` (:class:`~bbrlcore.mdp.rows.Layout`, e.g. an agent's
    ``self.layout``), ``P`` and ``R`` are on its sparse rows (shape (nX, nU, K)): the
    same answer in time proportional to the transitions.

    >>> P = np.ones((1, 1, 1)); R = np.ones((1, 1, 1))
    >>> round(float(q_values(P, R, 0.5)[0, 0]), 2)
    2.0
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    out = np.zeros(P.shape[:2]) if Q is None else np.array(Q, dtype=np.float64)
    if layout is not None:
        q_solve_rows(P, R, layout.succ, layout.nsucc, float(gamma), int(horizon), out)
        return out
    supp, nsupp = support_of(P)
    q_solve(P, R, supp, nsupp, float(gamma), int(horizon), out)
    return out


def state_values(P: np.ndarray, R: np.ndarray, gamma: float, tol: float = GUEZ_TOLERANCE,
                 V: np.ndarray | None = None, layout: Layout | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(V, pi)``: the values of the model ``(P, R)`` and its greedy policy (lowest
    action index on ties), the answer of the Guez value iteration (Euclidean change of a
    sweep at most ``tol``), reached by policy iteration from ``V`` or from zero; BEB's
    solver (:func:`guez_policy_iteration`). Needs ``gamma < 1``.

    >>> P = np.zeros((2, 2, 2)); P[:, 0, 0] = 1; P[:, 1, 1] = 1   # action u goes to u
    >>> R = np.zeros((2, 2, 2)); R[:, :, 1] = 1                    # state 1 pays 1
    >>> V, pi = state_values(P, R, 0.9)
    >>> np.round(V, 3).tolist(), pi.tolist()
    ([10.0, 10.0], [1, 1])
    """
    P = np.ascontiguousarray(P, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    nX = P.shape[0]
    out = np.zeros(nX) if V is None else np.array(V, dtype=np.float64)
    pi = np.zeros(nX, dtype=np.int64)
    if layout is not None:
        succ, nsucc = layout.succ, layout.nsucc
    else:
        succ, nsucc = support_of(P)
        P, R = _on_support(P, R, succ, nsucc)
    A = np.empty((nX, nX) if lu_affordable(nX, n_transitions(nsucc)) else (1, 1))
    guez_policy_iteration_rows(P, R, succ, nsucc, float(gamma), float(tol), out, pi, A,
                               np.empty(nX))
    return out, pi


def slot(layout: Layout, x: int, u: int, y: int) -> int:
    """The slot of the transition ``(x, u) -> y`` in ``layout`` (an agent's
    ``self.layout``: where its counts on sparse rows keep that transition), or -1.

    >>> from bbrlcore.mdp.distributions import builtin
    >>> lay = builtin("GC").support_layout
    >>> lay.succ[0, 1, :lay.nsucc[0, 1]].tolist(), slot(lay, 0, 1, 1), slot(lay, 0, 1, 3)
    ([0, 1], 1, -1)
    """
    return int(slot_of(layout.succ, layout.nsucc, int(x), int(u), int(y)))


def sample_mdp(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One MDP drawn from the Dirichlet posterior of concentrations ``counts`` with the
    generator ``rng`` (a Python agent's ``self.rng``): every row independently, as
    normalised Gamma variates over its support; a zero concentration stays a zero
    probability. A row whose variates all underflow (tiny concentrations) puts its mass
    on one uniformly chosen entry of its support.

    >>> P = sample_mdp(np.array([[[2.0, 0.0, 1.0]]]), np.random.default_rng(1))
    >>> P[0, 0, 1], round(float(P.sum()), 12)
    (np.float64(0.0), 1.0)
    """
    alpha = np.asarray(counts, dtype=np.float64)
    pos = alpha > 0.0
    g = np.zeros_like(alpha)
    g[pos] = rng.gamma(alpha[pos])
    s = g.sum(axis=2, keepdims=True)
    tiny = s[..., 0] < 1e-300
    if tiny.any():
        for x, u in zip(*np.nonzero(tiny), strict=True):
            g[x, u] = 0.0
            g[x, u, rng.choice(np.flatnonzero(pos[x, u]))] = 1.0
        s = g.sum(axis=2, keepdims=True)
    return g / s


# ---------------------------------------------------------------------------------------
# numba, for compiled agents


@njit(cache=True, error_model="numpy")
def draw_mdp(alpha, out):
    """Draw one MDP from the Dirichlet posterior of concentrations ``alpha`` into
    ``out`` (same shape), every row independently (:func:`dirichlet_row`: normalised
    Gamma variates of numba's generator; zero concentrations stay zero probabilities).
    Inside a compiled agent the package has seeded numba's generator with the
    trajectory's seed.

    >>> out = np.empty((1, 1, 3))
    >>> draw_mdp(np.array([[[2.0, 0.0, 1.0]]]), out)
    >>> float(out[0, 0, 1]), round(float(out.sum()), 12)
    (0.0, 1.0)
    """
    nX, nU, _ = alpha.shape
    for x in range(nX):
        for u in range(nU):
            dirichlet_row(alpha[x, u], out[x, u])
