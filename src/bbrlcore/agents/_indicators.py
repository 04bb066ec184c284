r"""Colosseum's indicators inside the trajectory kernels (issue 43).

:mod:`bbrlcore.mdp.indicators` defines Colosseum's indicators and computes them in
Python from a sequence of policies (:meth:`~bbrlcore.mdp.indicators.Evaluator.accumulate`).
This module is the same accumulation as numba functions a trajectory kernel calls at
Colosseum's rows (every ``log_every`` steps, ``t > 0``, after the agent's update of
step t; and once after the last step), so that a built-in's whole interaction,
evaluations included, stays in numba:

* :func:`ind_alloc` makes the accumulator (``acc``, a float64 array: the three running
  sums, the training flag, the step Colosseum stops training at, the cached evaluation
  after that, the row index) and the history of the rows' normalised regrets;
* at a row, the kernel evaluates its current policy exactly on the test MDP — episodic:
  :math:`V^\pi_0` (nX,) by backward induction; continuing: the gain from the current
  state (:func:`gain_from`) — and calls :func:`row_episodic` or :func:`row_continuing`
  (``final`` for the row after the last step). :func:`needs_evaluation` says whether the
  row uses the evaluation at all (after Colosseum's "the policy is optimal" stop, rows
  reuse the first evaluation made after it, as :meth:`Evaluator.accumulate` does);
* :func:`policy_row` does both for a kernel whose current policy is a stationary
  stochastic one it recomputes (UCRL2's empirical policy, PSRL's MAP model's), and
  :func:`episode_start` resets the environment at the end of a test episode, keeping the
  episode's starting state the episodic rows need;
* :func:`finish` (Python) turns ``acc`` into the run table's columns
  (:data:`COLUMNS`).

An agent whose current policy does not change (Random, Optimal) evaluates it once per
trajectory and gives its row values as a per-state table (:func:`row_table`).

**Cost.** An episodic evaluation is one backward induction (H sweeps of the
transitions); a continuing one finds the policy's chain's closed classes and solves each
densely by GTH inside numba (:func:`gain_from`), :math:`O(m^3)` for a class of m states:
cheap on Colosseum's continuing instances (tens of states), slow for chains of thousands
of states, where the Python path (:func:`bbrlcore.mdp.evaluation.policy_gain`) switches to
sparse LU. The per-MDP references (:class:`~bbrlcore.mdp.indicators.Evaluator`) are
computed in Python once per trajectory, inside its timed region. The cost model
(``bbrl estimate``) does not price the evaluations yet.

**One difference from Colosseum's loop, said where it is documented
(docs/explanations/fidelity.md).** Colosseum stops *training* the agent when its test
says the policy is optimal; bbrl's agent keeps learning (its trajectory, rewards and
return are the same with or without indicators). The expected indicators do not depend
on it — from that row on Colosseum reuses one evaluation, and so does this module — but
the realised ``normalised_reward`` is that of bbrl's agent, which kept learning.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import env_reset
from bbrlcore.mdp import evaluation as ev_
from bbrlcore.mdp.indicators import (
    LOG_EVERY,
    OPTIMALITY_ATOL_CONTINUING,
    OPTIMALITY_ATOL_EPISODIC,
    continuing_row,
    episodic_row,
    stops_training,
)

# acc slots
_REG, _NREG, _AVG, _TRAINING, _STOPPED, _CACHED, _CREG, _CNREG, _CAVG, _ROW = range(10)
ACC_SIZE = 10

#: The run table's columns of Colosseum's indicators, in order (bbrl's names,
#: :data:`bbrlcore.mdp.indicators.COLOSSEUM_NAMES`): the final row's cumulative values.
COLUMNS = ("expected_regret", "normalised_expected_regret", "expected_reward",
           "normalised_expected_reward", "normalised_reward")


@njit(cache=True, error_model="numpy")
def n_rows(T, L):
    """Colosseum's rows of an interaction of ``T`` steps: the in-loop ones (t = L, 2L,
    … < T) and the final one (:func:`bbrlcore.mdp.indicators.log_rows`)."""
    return ((T - 1) // L if L > 0 else 0) + 1


@njit(cache=True, error_model="numpy")
def ind_alloc(T, L):
    """The accumulator and the rows' normalised-regret history of an interaction."""
    acc = np.zeros(ACC_SIZE)
    acc[_TRAINING] = 1.0
    acc[_STOPPED] = -1.0
    return acc, np.zeros(n_rows(T, L))


@njit(cache=True, error_model="numpy")
def is_row(t, L):
    """Whether step ``t`` (its update done) is followed by an in-loop row."""
    return L > 0 and t > 0 and t % L == 0


@njit(cache=True, error_model="numpy")
def final_weight(T, L):
    """The steps the final row stands for."""
    last = ((T - 1) // L) * L if L > 0 else 0
    return T - last


@njit(cache=True, error_model="numpy")
def needs_evaluation(acc):
    """Whether the next row uses the current policy's evaluation (training, or the first
    row after Colosseum stopped training, whose evaluation is then reused)."""
    return acc[_TRAINING] == 1.0 or acc[_CACHED] == 0.0


@njit(cache=True, error_model="numpy")
def _add(acc, hist, t, T, w, final, reg, nreg, avg, atol):
    i = int(acc[_ROW])
    acc[_REG] += w * reg
    acc[_NREG] += w * nreg
    acc[_AVG] += w * avg
    hist[i] = nreg
    if not final and acc[_TRAINING] == 1.0 and stops_training(hist, i, t, T, atol):
        acc[_TRAINING] = 0.0
        acc[_STOPPED] = t + 1
    acc[_ROW] = i + 1


@njit(cache=True, error_model="numpy")
def row_episodic(acc, hist, t, T, w, final, V, s, optimal_start, worst_start, mu0, H, Vc):
    """One episodic row: ``V`` the current policy's :math:`V^\\pi_0` (nX,; unused when
    :func:`needs_evaluation` is false), ``s`` the starting state of the episode in
    progress, ``w`` the row's weight, ``Vc`` (nX,) the cache of the evaluation reused
    once Colosseum stopped training."""
    if acc[_TRAINING] == 1.0:
        reg, nreg, avg = episodic_row(V, optimal_start, worst_start, mu0, s, H)
    else:
        if acc[_CACHED] == 0.0:
            Vc[:] = V
            acc[_CACHED] = 1.0
        reg, nreg, avg = episodic_row(Vc, optimal_start, worst_start, mu0, s, H)
    _add(acc, hist, t, T, w, final, reg, nreg, avg, OPTIMALITY_ATOL_EPISODIC)


@njit(cache=True, error_model="numpy")
def row_continuing(acc, hist, t, T, w, final, g, optimal, worst):
    """One continuing row, ``g`` the current policy's gain from the current state."""
    if acc[_TRAINING] == 1.0:
        reg, nreg, avg = continuing_row(g, optimal, worst)
    else:
        if acc[_CACHED] == 0.0:
            acc[_CREG], acc[_CNREG], acc[_CAVG] = continuing_row(g, optimal, worst)
            acc[_CACHED] = 1.0
        reg, nreg, avg = acc[_CREG], acc[_CNREG], acc[_CAVG]
    _add(acc, hist, t, T, w, final, reg, nreg, avg, OPTIMALITY_ATOL_CONTINUING)


@njit(cache=True, error_model="numpy")
def row_table(acc, hist, t, T, w, final, episodic, tab, x, optimal_start, worst_start,
              mu0, H, optimal, worst):
    """A row of an agent whose policy never changes: ``tab`` its :math:`V^\\pi_0` per
    state (episodic; ``x`` the episode's start) or its gain per state (continuing; ``x``
    the current state)."""
    if episodic:
        row_episodic(acc, hist, t, T, w, final, tab, x, optimal_start, worst_start, mu0, H,
                     tab)
    else:
        row_continuing(acc, hist, t, T, w, final, tab[x], optimal, worst)


@njit(cache=True, error_model="numpy")
def gain_from(succ, nsucc, P, rbar, pi_s, pi_d, stochastic, x, scratch_i, scratch_f):
    """The gain of a stationary policy (``pi_s`` (nX, nU) if ``stochastic`` else ``pi_d``
    (nX,)) from state ``x`` on the test MDP, exactly
    (:func:`bbrlcore.mdp.evaluation.chain_gain_from`, dense in numba whatever the
    chain's size). ``scratch_i`` (int64, nX + 1 + B) and ``scratch_f`` (float64,
    B + 2 nX) are work arrays (B: the transitions), from :func:`gain_scratch`."""
    nX = nsucc.shape[0]
    B = scratch_i.shape[0] - nX - 1
    indptr = scratch_i[:nX + 1]
    indices = scratch_i[nX + 1:]
    probs = scratch_f[:B]
    r = scratch_f[B:B + nX]
    g = scratch_f[B + nX:]
    ev_.policy_chain(succ, nsucc, P, rbar, pi_s, pi_d, stochastic, indptr, indices, probs, r)
    starts = np.empty(1, dtype=np.int64)
    starts[0] = x
    return ev_.chain_gain_from(indptr, indices, probs, r, starts, np.ones(1), nX + 1, g)


@njit(cache=True, error_model="numpy")
def policy_row(acc, hist, t, T, L, final, episodic, fresh, succ, nsucc, P, rbar, pol, x,
               s, optimal_start, worst_start, mu0, H, optimal, worst, V0, Vc, scratch_i,
               scratch_f):
    """The row after step ``t`` (``final``: the one after the last of the ``T`` steps;
    rows every ``L`` steps) of a kernel whose current policy is the stationary
    stochastic ``pol`` (nX, nU), evaluated on the test MDP ``P`` (expected rewards
    ``rbar``; both on the kernel's rows ``succ``/``nsucc``) when :func:`needs_evaluation`
    says so. Episodic: its :math:`V^\\pi_0` over ``H``-step episodes into ``V0`` (nX,),
    recomputed only if ``fresh`` (``pol`` changed since ``V0`` was computed), ``s`` the
    episode's starting state, ``Vc`` (nX,) :func:`row_episodic`'s cache; continuing: its
    gain from the current state ``x`` (:func:`gain_from`, its work arrays
    ``scratch_i``, ``scratch_f``). The references as :meth:`Request.refs` gives them."""
    tt = T - 1 if final else t
    w = final_weight(T, L) if final else L
    if episodic:
        if needs_evaluation(acc) and fresh:
            nX, nU = pol.shape
            ev_.episode_values_stochastic(succ, nsucc, P, rbar, pol.reshape((1, nX, nU)),
                                          H, V0)
        row_episodic(acc, hist, tt, T, w, final, V0, s, optimal_start, worst_start, mu0,
                     H, Vc)
    else:
        g = 0.0
        if needs_evaluation(acc):
            g = gain_from(succ, nsucc, P, rbar, pol, np.zeros(1, dtype=np.int64), True, x,
                          scratch_i, scratch_f)
        row_continuing(acc, hist, tt, T, w, final, g, optimal, worst)


@njit(cache=True, error_model="numpy")
def episode_start(t, final, episode_length, initial_state, nX, x, s):
    """``(x, s)`` after step ``t`` (nothing after the last one, ``final``): at the end of
    a test episode (``episode_length`` > 0 steps) the environment's reset
    (:func:`~bbrlcore.agents._kernels.env_reset`) and the new episode's start; else
    unchanged (``s``: the starting state of the episode in progress)."""
    if not final and episode_length > 0 and (t + 1) % episode_length == 0:
        x = env_reset(initial_state, nX)
        return x, x
    return x, s


def gain_scratch(nsucc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Work arrays of :func:`gain_from`."""
    nX = int(nsucc.shape[0])
    B = max(int(np.asarray(nsucc).sum()), 1)
    return np.zeros(nX + 1 + B, np.int64), np.zeros(B + 2 * nX)


def gains_of(succ: np.ndarray, nsucc: np.ndarray, P: np.ndarray, rbar: np.ndarray,
             policy: np.ndarray) -> np.ndarray:
    """The gain from every state of a stationary stochastic ``policy`` (nX, nU) (the
    per-state table of :func:`row_table`)."""
    nX = int(nsucc.shape[0])
    si, sf = gain_scratch(nsucc)
    B = si.shape[0] - nX - 1
    indptr, indices = si[:nX + 1], si[nX + 1:]
    probs, r, g = sf[:B], sf[B:B + nX], sf[B + nX:]
    ev_.policy_chain(succ, nsucc, P, rbar, policy, np.zeros(1, np.int64), True, indptr,
                     indices, probs, r)
    ev_.chain_gain_from(indptr, indices, probs, r, np.arange(nX, dtype=np.int64),
                        np.full(nX, 1.0 / nX), nX + 1, g)
    return g.copy()


class Request:
    """What a player with indicators needs per test MDP: the test MDP's Colosseum
    references (an :class:`~bbrlcore.mdp.indicators.Evaluator` on the test layout) and
    the arrays the kernels take.

    ``log_every`` L ≥ 1 (Colosseum's benchmark: 100); ``ep`` the
    :class:`~bbrlcore.agents.base.Episode` (its ``episode_length`` > 0: the episodic
    indicators over H-step episodes from the initial state, else the continuing ones).
    """

    def __init__(self, ep, log_every: int = LOG_EVERY) -> None:
        self.log_every = int(log_every)
        self.ep = ep
        self.H = int(ep.episode_length)
        self.episodic = self.H > 0
        lay = ep.layout()
        self.succ = np.ascontiguousarray(lay.succ, dtype=np.int64)
        self.nsucc = np.ascontiguousarray(lay.nsucc, dtype=np.int64)
        self.R = np.ascontiguousarray(ep.R, dtype=np.float64)
        nX = int(self.nsucc.shape[0])
        starts = getattr(ep, "starts", None)
        if starts is not None:  # a starting distribution (bbrlcore.mdp.environment)
            mu = np.zeros(nX)
            mu[np.asarray(starts[0])] = np.asarray(starts[1], dtype=np.float64)
            self.start = mu
        else:
            x0 = int(ep.initial_state)
            self.start = x0 if x0 >= 0 else np.full(nX, 1.0 / nX)

    def evaluator(self, P: np.ndarray):
        """The test MDP ``P`` (on the test layout) prepared for the indicators."""
        from bbrlcore.mdp.indicators import Evaluator

        return Evaluator(self.succ, self.nsucc, np.asarray(P, np.float64), self.R,
                         horizon=self.H if self.episodic else None, start=self.start)

    def refs(self, evr) -> tuple:
        """The kernels' reference arguments: ``(optimal_start, worst_start, mu0, H,
        optimal, worst)`` (episodic arrays of zeros when continuing)."""
        nX = evr.n_states
        if evr.episodic:
            return (np.ascontiguousarray(evr.optimal_start, np.float64),
                    np.ascontiguousarray(evr.worst_start, np.float64),
                    evr.start_distribution, evr.horizon, evr.optimal, evr.worst)
        return (np.zeros(nX), np.zeros(nX), evr.start_distribution, 1, evr.optimal,
                evr.worst)


def finish(acc: np.ndarray, evr, rewards: np.ndarray, T: int) -> np.ndarray:
    """The run table's values of :data:`COLUMNS` and the step Colosseum would have
    stopped training at (-1: never), from a kernel's ``acc``, the test MDP's evaluator
    and the T rewards collected."""
    span = evr.optimal - evr.worst
    steps = T - 1  # the final row's steps (Colosseum's off-by-one, kept)
    total = float(np.sum(rewards))
    return np.array([acc[_REG], acc[_NREG], acc[_AVG], (acc[_AVG] - steps * evr.worst) / span,
                     (total - steps * evr.worst) / span, acc[_STOPPED]])
