r"""Formula agents: act greedily with respect to a formula of three Q-features.

A formula agent scores each action u in state x by a formula
:math:`f(Q_{mean}(x,u), Q_{self}(x,u), Q_{uniform}(x,u))` (variables ``X0 X1 X2``) and
plays the highest score, exact ties broken uniformly at random. The three features are the
Q-functions of three counting models of the transitions, each updated with
every observed transition and re-solved by the BBRL Q-iteration after **every** step:

* **QMean** (X0): initial counts = the prior's Dirichlet concentrations θ, i.e. the
  posterior-mean MDP;
* **QSelf** (X1): one pseudo-count on the self-loop, N(x,u,y) = [y == x];
* **QUniform** (X2): one pseudo-count everywhere, N(x,u,y) = 1.

All use the prior's known mean reward table. The Q-iteration (tolerance 0.01, at most T+1
sweeps) is warm-started from the previous step's Q, which reaches the same stopping test
in a few sweeps; only the features the formula reads are computed.

**Sparse rows.** QMean lives on the agent's layout
(:func:`bbrlcore.agents._layout.setting`: the prior's support joined with the test MDPs'
transitions), where an observation's slot is the environment's; QSelf on the test MDPs'
transitions joined with every self-loop (:func:`self_loops`; an observation's slot there
is looked up in a table made once per player), so a sweep of either costs the
transitions of its layout. QUniform's model is dense by
definition (a count on every successor). While it is small (:func:`uniform_dense`:
nX·nU·nX at most :data:`UNIFORM_DENSE_MAX`, every problem of the paper) it is solved as a
dense array, in the reference's arithmetic order. Above, its mean model
:math:`P(y) = (1 + n(y)) / (n_X + n(x,u))` is solved by
:func:`uniform_q_iteration`, whose backup

.. math:: \Bigl[\sum_y R(x,u,y) + \gamma \sum_y V(y)
          + \sum_{y\ \mathrm{observed}} n(y)\,\bigl(R(x,u,y) + \gamma V(y)\bigr)\Bigr]
          \big/ \bigl(n_X + n(x,u)\bigr)

costs one term per state-action pair plus one per slot of the rows observed so far
(:math:`\sum_y V(y)` once per sweep, :math:`\sum_y R(x,u,y)` once per player). It is
the same model with its sums in another order (equal up to rounding), solved by the
plain capped Q-iteration — the reference's algorithm — and never by the policy
iteration of :func:`~bbrlcore.mdp.solvers.q_solve_rows`, whose dense evaluations of an
nX-state model would cost nX³: its values meet the Q-iteration's stopping test instead
of being the model's exact fixed point (within 0.01·γ/(1−γ) of it).

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): QMean's initial counts are the prior's,
Dir(α) over every next state, so its model is the posterior mean
:math:`(\alpha + c)/(S\alpha + n)` on a slot and :math:`\alpha/(S\alpha + n)` on each
of the row's background states (:func:`._kernels.rows_model_init_all`: the agent's
layout is the prior's support joined with its stored entries and the test MDPs', α on
every slot; never a dense S×A×S array). It is solved by the BBRL Q-iteration of that
model (warm, tolerance 0.01, at most T+1 sweeps: :func:`._kernels.q_iteration_all`,
BEB's and e-Greedy's backup, the background's values through :math:`\sum_y V(y)` once a
sweep; never the policy iteration's dense solves), the background paying no reward (the
prior's rewards are all on slots). QSelf and QUniform do not read the prior's
concentrations and are unchanged; no feature samples a model. OPPS-DS's training MDPs,
drawn from Dir(α) over every state, are on the full layout (:func:`prior_episode`).
Without the suffix everything is as above, bit for bit.

**Formula failures**: an action whose formula value is undefined (NaN,
log or square root of a negative, division by zero) scores −∞; if every action fails the
choice is uniform. The kernel counts failed evaluations (one per action and decision)
and returns the count as ``formula_failures``. During OPPS-DS training a trajectory stops
at its first failure (the arm is discarded anyway).

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state; the three counting models and their Q
are kept, solved with the test set's γ. OPPS-DS's training plays continuing trajectories
(of the horizon it is trained with).

Paper: Castronovo, Maes, Fonteneau and Ernst, "Learning exploration/exploitation
strategies for single trajectory reinforcement learning", EWRL 2012; Castronovo et al.,
"Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016, §4.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents import formulas as F
from bbrlcore.agents._kernels import (
    argmax_random_tie,
    env_reset,
    env_reward_rows,
    env_step_rows,
    q_iteration_all,
    rows_model_init,
    rows_model_init_all,
    rows_model_update,
)
from bbrlcore.agents._layout import Setting, setting
from bbrlcore.agents.base import FLOAT64, Episode, reward_buffer
from bbrlcore.agents.formulas import eval_rpn
from bbrlcore.mdp import rows
from bbrlcore.mdp.rows import Layout
from bbrlcore.mdp.solvers import Q_ACCURACY, q_solve_rows

#: QUniform's model is solved as a dense array (the reference's arithmetic, bit for bit)
#: while it has at most this many entries nX·nU·nX — every problem of the paper (Grid:
#: 25·4·25 = 2,500) and the small families of ``benchmarks/ab_identical.py`` but Taxi;
#: above, by :func:`uniform_q_iteration`. A function of the problem's size only, so a run
#: is reproducible.
UNIFORM_DENSE_MAX = 4096


def uniform_dense(n_states: int, n_actions: int) -> bool:
    """Whether QUniform's model is solved as a dense array (:data:`UNIFORM_DENSE_MAX`)."""
    return n_states * n_states * n_actions <= UNIFORM_DENSE_MAX


def self_loops(n_states: int, n_actions: int) -> Layout:
    """The layout holding the self-loops (x, u, x) only (QSelf's initial counts)."""
    succ = np.broadcast_to(np.arange(n_states, dtype=np.int64)[:, None, None],
                           (n_states, n_actions, 1)).copy()
    return Layout(succ, np.ones((n_states, n_actions), dtype=np.int64), int(n_states))


@dataclass(frozen=True, eq=False)
class Features:
    """The three feature models' initial counts and rewards (module docstring);
    :meth:`args` in the kernels' order. QMean and the decomposed QUniform are on the
    agent's layout (the :class:`Setting`'s), QSelf on its own (``succ1``, ``nsucc1``)."""

    #: QMean's initial counts (θ) and the prior's mean rewards on the agent's layout
    theta: np.ndarray
    Rm: np.ndarray
    #: QSelf's layout (the test transitions and the self-loops), its initial counts
    #: (1 on the self-loop), the prior's mean rewards on it, and for each slot of the
    #: agent's layout its slot there (-1: absent, never observed)
    succ1: np.ndarray
    nsucc1: np.ndarray
    self_loop: np.ndarray
    Rm1: np.ndarray
    to1: np.ndarray
    #: QUniform solved densely: the full layout and the dense rewards (else (1, 1, 1))
    dense: bool
    usucc: np.ndarray
    unsucc: np.ndarray
    Rfull: np.ndarray
    #: QUniform decomposed: sum_y R(x, u, y) of the prior's dense rewards (else zeros)
    Rsum: np.ndarray
    #: the prior's every-next-state concentration α (``+dir<α>``), 0.0 without it:
    #: QMean is then the posterior mean of Dir(α) over all S states, slots and a
    #: background (module docstring)
    a_all: float = 0.0

    def args(self) -> tuple:
        return (self.theta, self.Rm, self.succ1, self.nsucc1, self.self_loop, self.Rm1,
                self.to1, self.dense, self.usucc, self.unsucc, self.Rfull, self.Rsum,
                self.a_all)


def self_layout(test: Layout) -> Layout:
    """QSelf's layout: the transitions of ``test`` and every self-loop."""
    return rows.union(test, self_loops(test.n_states, test.n_actions))


def features(prior: Any, st: Setting, test: Layout) -> Features:
    """The :class:`Features` of ``prior`` for an agent of :class:`Setting` ``st``
    (``setting(prior, ep)``) on test MDPs of layout ``test`` (``ep.layout()``)."""
    nX, nU = prior.n_states, prior.n_actions
    lay1 = self_layout(test)
    same = lay1.same_as(st.layout)
    to1 = (np.broadcast_to(np.arange(st.layout.width, dtype=np.int64), st.succ.shape).copy()
           if same else rows.slots_in(lay1, st.layout))
    Rm1 = np.array(st.Rm) if same else prior.rewards_on(lay1)
    selfc = ((lay1.succ == np.arange(nX)[:, None, None]) & lay1.mask).astype(np.float64)
    dense = uniform_dense(nX, nU)
    if dense:
        full = rows.full(nX, nU)
        usucc, unsucc = full.succ, full.nsucc
        Rfull = np.ascontiguousarray(prior.reward, dtype=np.float64)
        Rsum = np.zeros((nX, nU))
    else:
        usucc = np.zeros((1, 1, 1), dtype=np.int64)
        unsucc = np.zeros((1, 1), dtype=np.int64)
        Rfull = np.zeros((1, 1, 1))
        Rsum = np.ascontiguousarray(prior.reward_row_sums, dtype=np.float64)
    c = np.ascontiguousarray
    a_all = float(getattr(prior, "dirichlet_all", None) or 0.0)  # (+dir<α>: α)
    return Features(st.theta, st.Rm, lay1.succ, lay1.nsucc, c(selfc), c(Rm1), c(to1), dense,
                    usucc, unsucc, Rfull, Rsum, a_all)


def prior_episode(prior: Any, gamma: float, horizon: int) -> Episode:
    """An :class:`Episode` whose environment is an MDP drawn from ``prior`` (its rewards
    on the prior's support): OPPS-DS's training trajectories. Under a Dirichlet on every
    next state (``+dir<α>``) a drawn MDP can go anywhere: the environment is on the
    **full** layout (every next state a slot; S²·A values per array, dense), its rewards
    the prior's dense tables (every entry's, those outside the support included)."""
    lay = prior.support_layout
    R, Rstd = np.asarray(prior.reward_rows), np.asarray(prior.reward_std_rows)
    if getattr(prior, "dirichlet_all", None) is not None:
        lay = rows.full(prior.n_states, prior.n_actions)
        R = np.concatenate([b for _, _, b in prior.dense_blocks("reward")])
        Rstd = np.concatenate([b for _, _, b in prior.dense_blocks("reward_std")])
    return Episode(R, Rstd, prior.reward_type == "gaussian", int(prior.initial_state),
                   float(gamma), int(horizon), succ=lay.succ, nsucc=lay.nsucc)


@njit(cache=True, error_model="numpy")
def uniform_q_iteration(n, Np, Rm, Rsum, succ, nsucc, gamma, horizon, Q):
    r"""BBRL Q-iteration of QUniform's mean model, decomposed (module docstring):
    ``n`` the observed counts on the layout, ``Np`` = nX + their row sums, ``Rm`` the
    rewards on the layout, ``Rsum`` the dense rewards' row sums. Warm-started from ``Q``
    and updated in place; stops after the first sweep whose largest change is at most
    0.01 or after ``horizon + 1`` sweeps. Returns the number of sweeps. A sweep costs
    one term per state-action pair and one per slot of the rows observed so far (a row
    never observed has ``Np = nX`` and no count)."""
    nX, nU = Q.shape
    fX = float(nX)
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
        base = gamma * sv
        delta = 0.0
        for x in range(nX):
            for u in range(nU):
                acc = Rsum[x, u] + base
                if Np[x, u] > fX:  # a row observed: its counts' terms
                    for k in range(nsucc[x, u]):
                        c = n[x, u, k]
                        if c > 0.0:
                            acc += c * (Rm[x, u, k] + gamma * V[succ[x, u, k]])
                acc /= Np[x, u]
                d = abs(acc - Q[x, u])
                if d > delta:
                    delta = d
                Q[x, u] = acc
        sweeps += 1
        if delta <= Q_ACCURACY or sweeps >= horizon + 1:
            return sweeps


@njit(cache=True, error_model="numpy")
def _uniform_init(dense, nX, nU, K, unsucc):
    """QUniform's model ``(N, Np, P)``: dense ones (``P`` on the full layout) or, when
    decomposed, the observed counts on the layout (zeros), ``Np = nX`` and ``P`` unused."""
    if dense:
        return rows_model_init(np.ones((nX, nU, nX)), unsucc)
    return np.zeros((nX, nU, K)), np.full((nX, nU), float(nX)), np.zeros((1, 1, 1))


@njit(cache=True, error_model="numpy")
def _uniform_solve(dense, N, Np, P, Rm, Rfull, Rsum, succ, nsucc, usucc, unsucc, gamma,
                   horizon, Q):
    if dense:
        return q_solve_rows(P, Rfull, usucc, unsucc, gamma, horizon, Q)
    return uniform_q_iteration(N, Np, Rm, Rsum, succ, nsucc, gamma, horizon, Q)


@njit(cache=True, error_model="numpy")
def _mean_init(theta, nsucc, a_all):
    """QMean's counting model ``(N, Np, P)``: the prior's θ on the layout or, ``a_all``
    > 0 (``+dir<α>``), the posterior mean of Dir(α) over every next state (slots and
    background, :func:`._kernels.rows_model_init_all`)."""
    if a_all > 0.0:
        return rows_model_init_all(theta, nsucc, theta.shape[0], a_all)
    return rows_model_init(theta, nsucc)


@njit(cache=True, error_model="numpy")
def _mean_solve(P, Np, Rm, succ, nsucc, a_all, gamma, horizon, Q):
    """Solve QMean's model into ``Q`` (warm): :func:`~bbrlcore.mdp.solvers.q_solve_rows`
    or, ``a_all`` > 0, the BBRL Q-iteration of the slots-plus-background mean model
    (:func:`._kernels.q_iteration_all`, known rewards: the background pays none)."""
    if a_all > 0.0:
        q_iteration_all(P, Rm, succ, nsucc, Np, a_all, False, gamma, horizon, Q)
    else:
        q_solve_rows(P, Rm, succ, nsucc, gamma, horizon, Q)


@njit(cache=True, error_model="numpy")
def initial_q(succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc,
              unsucc, Rfull, Rsum, a_all, used, gamma, horizon):
    """Q of each used feature's initial model, solved from zero; shape (3, nX, nU).
    ``succ``, ``nsucc``: the agent's layout; from ``theta`` to ``a_all``:
    :meth:`Features.args`."""
    nX, nU, K = theta.shape
    Q = np.zeros((3, nX, nU))
    if used[0]:
        N, Np, Pm = _mean_init(theta, nsucc, a_all)
        _mean_solve(Pm, Np, Rm, succ, nsucc, a_all, gamma, horizon, Q[0])
    if used[1]:
        N, Np, Pm = rows_model_init(self_loop, nsucc1)
        q_solve_rows(Pm, Rm1, succ1, nsucc1, gamma, horizon, Q[1])
    if used[2]:
        N, Np, Pm = _uniform_init(dense, nX, nU, K, unsucc)
        _uniform_solve(dense, N, Np, Pm, Rm, Rfull, Rsum, succ, nsucc, usucc, unsucc,
                       gamma, horizon, Q[2])
    return Q


@njit(cache=True, error_model="numpy")
def _observe(used, x, u, k, y, succ, nsucc, Rm, succ1, nsucc1, Rm1, to1, dense, usucc,
             unsucc, Rfull, Rsum, a_all, N0, Np0, P0, N1, Np1, P1, N2, Np2, P2, gamma,
             horizon, Q):
    """Observe the transition of slot ``k`` of row (x, u) (to ``y``) in each used
    feature's counting model and re-solve it, warm, into ``Q`` (3, nX, nU)."""
    if used[0]:
        rows_model_update(N0, Np0, P0, nsucc, x, u, k)
        _mean_solve(P0, Np0, Rm, succ, nsucc, a_all, gamma, horizon, Q[0])
    if used[1]:
        rows_model_update(N1, Np1, P1, nsucc1, x, u, to1[x, u, k])
        q_solve_rows(P1, Rm1, succ1, nsucc1, gamma, horizon, Q[1])
    if used[2]:
        if dense:
            rows_model_update(N2, Np2, P2, unsucc, x, u, y)
        else:
            N2[x, u, k] += 1.0
            Np2[x, u] += 1.0
        _uniform_solve(dense, N2, Np2, P2, Rm, Rfull, Rsum, succ, nsucc, usucc, unsucc,
                       gamma, horizon, Q[2])


@njit(cache=True, error_model="numpy")
def replay_features(xs, us, ks, used, succ, nsucc, theta, Rm, succ1, nsucc1, self_loop,
                    Rm1, to1, dense, usucc, unsucc, Rfull, Rsum, a_all, gamma, horizon):
    """The features' Q (3, nX, nU) after the transitions ``(xs[i], us[i], slot ks[i])``
    on the agent's layout were observed one by one: the reset solve and each step's
    update and warm solve of :func:`formula_trajectory`, without an environment (its
    feature values, for tests and diagnostics). Arguments from ``theta``:
    :meth:`Features.args`."""
    nX, nU, K = theta.shape
    Q = initial_q(succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc,
                  unsucc, Rfull, Rsum, a_all, used, gamma, horizon)
    N0, Np0, P0 = _mean_init(theta, nsucc, a_all)
    N1, Np1, P1 = rows_model_init(self_loop, nsucc1)
    N2, Np2, P2 = _uniform_init(dense, nX, nU, K, unsucc)
    for i in range(xs.shape[0]):
        x, u, k = xs[i], us[i], ks[i]
        _observe(used, x, u, k, succ[x, u, k], succ, nsucc, Rm, succ1, nsucc1, Rm1, to1,
                 dense, usucc, unsucc, Rfull, Rsum, a_all, N0, Np0, P0, N1, Np1, P1, N2,
                 Np2, P2, gamma, horizon, Q)
    return Q


@njit(cache=True, error_model="numpy")
def formula_trajectory(
    P, R, Rstd, gaussian, initial_state, gamma, horizon, codes, n_codes, used,
    succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc, unsucc,
    Rfull, Rsum, a_all, Qinit, solve_reset, stop_on_failure, rewards, episode_length,
):  # fmt: skip
    """One trajectory of the formula agent on MDP ``P`` (numba RNG already seeded),
    writing the reward of step ``t`` into ``rewards[t]``.

    ``P``, ``R``, ``Rstd`` are the environment's values on the agent's layout
    (``succ``, ``nsucc``); the arguments from ``theta`` to ``Rsum`` are
    :meth:`Features.args`'s (``a_all`` > 0: QMean on the posterior of a Dirichlet on
    every next state). ``Qinit`` holds the features' Q at reset when
    ``solve_reset`` is False (OPPS-DS training reuses the prior's solution, identical for
    every pull); otherwise the reset solves each used feature from zero.
    ``episode_length`` H > 0: back to the initial state after every H steps, the models
    kept (0: continuing). Returns ``(discounted_return, n_failures)``.
    """
    nX, nU, K = P.shape
    x = env_reset(initial_state, nX)
    Q = np.zeros((3, nX, nU))
    # counting models of the used features (unused ones keep zero Q and are never solved)
    N0, Np0, P0 = _mean_init(theta, nsucc, a_all)
    N1, Np1, P1 = rows_model_init(self_loop, nsucc1)
    N2, Np2, P2 = _uniform_init(dense, nX, nU, K, unsucc)
    if solve_reset:
        if used[0]:
            _mean_solve(P0, Np0, Rm, succ, nsucc, a_all, gamma, horizon, Q[0])
        if used[1]:
            q_solve_rows(P1, Rm1, succ1, nsucc1, gamma, horizon, Q[1])
        if used[2]:
            _uniform_solve(dense, N2, Np2, P2, Rm, Rfull, Rsum, succ, nsucc, usucc, unsucc,
                           gamma, horizon, Q[2])
    else:
        Q[:] = Qinit
    stack = np.empty(max(n_codes, 1))
    scores = np.empty(nU)
    fails = 0
    ret = 0.0
    disc = 1.0
    left = episode_length if episode_length > 0 else -1  # steps left in the episode
    for t in range(horizon):
        for u in range(nU):
            v, ok = eval_rpn(codes, n_codes, Q[0, x, u], Q[1, x, u], Q[2, x, u], stack)
            if ok and not np.isnan(v):
                scores[u] = v
            else:
                scores[u] = -np.inf
                fails += 1
        if fails > 0 and stop_on_failure:
            return ret, fails
        u = argmax_random_tie(scores)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        y = succ[x, u, k]
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        _observe(used, x, u, k, y, succ, nsucc, Rm, succ1, nsucc1, Rm1, to1, dense, usucc,
                 unsucc, Rfull, Rsum, a_all, N0, Np0, P0, N1, Np1, P1, N2, Np2, P2, gamma,
                 horizon, Q)
        x = y
        left -= 1
        if left == 0:  # the episode's end: back to the initial state (models kept)
            left = episode_length
            x = env_reset(initial_state, nX)
    return ret, fails


@njit(cache=True, error_model="numpy")
def play_formula(
    P, R, Rstd, gaussian, initial_state, gamma, horizon, seed, codes, used,
    succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc, unsucc,
    Rfull, Rsum, a_all, rewards, episode_length,
):  # fmt: skip
    """One test trajectory (reset solve included), seeded with ``seed``; the reward of
    step ``t`` goes to ``rewards[t]``. Arguments as :func:`formula_trajectory`'s."""
    np.random.seed(seed)
    Qdummy = np.zeros((3, P.shape[0], P.shape[1]))
    return formula_trajectory(
        P, R, Rstd, gaussian, initial_state, gamma, horizon, codes, codes.shape[0], used,
        succ, nsucc, theta, Rm, succ1, nsucc1, self_loop, Rm1, to1, dense, usucc, unsucc,
        Rfull, Rsum, a_all, Qdummy, True, False, rewards, episode_length,
    )  # fmt: skip


def formula_player(prior: Any, codes: np.ndarray, ep: Episode):
    """The formula agent of RPN ``codes`` as a ``play(P, seed, rewards=None)``
    trajectory function on the test MDPs of ``ep`` (their values on its layout, or dense
    arrays for a dense Episode): what :mod:`bbrlcore.agents.formula` and OPPS-DS's
    learned agent play."""
    used = F.variables_used(codes)
    st = setting(prior, ep)
    fargs = features(prior, st, ep.layout()).args()
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon, H = float(ep.gamma), int(ep.horizon), int(ep.episode_length)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):  # (the runner's rows: no call)
            rewards = reward_buffer(rewards, horizon)
        ret, fails = play_formula(
            st.env(P), st.R, st.Rstd, gaussian, x0, gamma, horizon, int(seed), codes, used,
            st.succ, st.nsucc, *fargs, rewards, H,
        )  # fmt: skip
        return float(ret), np.array([fails], dtype=np.int64)

    return play


def model_sizes(prior: Any, test: Any = None) -> tuple[float, float, float, bool]:
    """Terms of one sweep of each feature's model — QMean, QSelf, QUniform — and whether
    QUniform is solved densely. A sweep visits every slot of its model's layout (zero
    counts included): QMean the prior's support (joined with the test distribution's,
    when ``test`` is given), QSelf the test distribution's support (the prior's without
    ``test``) joined with the self-loops; QUniform costs nX·nU·nX when dense, else one
    term per state-action pair (plus the slots of the rows observed, at most one row
    per step, left out)."""
    from bbrlcore.agents._memo import pure_probe

    nX, nU = prior.n_states, prior.n_actions
    lay = prior.support_layout
    tl = getattr(test, "support_layout", None)
    if tl is None or (tl.n_states, tl.n_actions) != (nX, nU):
        tl = None
    # memoised (the plan asks for every OPPS-DS agent of a prior; the union's kernels
    # would be the only numba code a dry run loads): a pure function of the two layouts
    key = (lay.succ, lay.nsucc) + ((tl.succ, tl.nsucc) if tl is not None else ())
    B, B1 = pure_probe("model-sizes", lambda *_: _union_sizes(lay, tl), *key)
    dense = uniform_dense(nX, nU)
    return B, B1, float(nX) * nU * (nX if dense else 1), dense


def _union_sizes(lay: Layout, tl: Layout | None) -> tuple[float, float]:
    """Transitions of QMean's layout (the prior's support joined with the test's) and of
    QSelf's (the test's, else the prior's, with every self-loop)."""
    if tl is None:
        return float(lay.nnz), float(self_layout(lay).nnz)
    return float(rows.union(lay, tl).nnz), float(self_layout(tl).nnz)


def prior_features(prior: Any, gamma: float, horizon: int) -> tuple[Setting, Features]:
    """The :class:`Setting` and :class:`Features` of formula agents playing MDPs drawn
    from ``prior`` (OPPS-DS's training; :func:`prior_episode`)."""
    st = setting(prior, prior_episode(prior, gamma, horizon))
    return st, features(prior, st, prior.support_layout)
