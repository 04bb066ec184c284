r"""PSRL: Posterior Sampling for Reinforcement Learning (Strens 2000; Osband, Russo &
Van Roy 2013), with a fixed period or the doubling rule of Ouyang et al. 2017.

Beyond the paper (Castronovo et al. 2016 does not have it): the most cited Bayesian
baseline, here on the paper's test problems and timing protocol.

The agent keeps the Dirichlet posterior of every transition row, :math:`\alpha(x,u,\cdot)
= \theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts), and knows
the reward function (the prior's ``reward``), like the paper's agents. At the start of an
**episode** it draws one MDP from the posterior — every row independently,
:math:`P(x,u,\cdot) \sim \mathrm{Dir}(\alpha(x,u,\cdot))` (zero concentrations stay
impossible) — solves it, and acts greedily in it until the next episode. Episodes follow
``schedule``:

* ``fixed``: a new sample every ``period`` steps (``period = 1``: at every step;
  ``period`` ≥ the horizon: one sample for the whole trajectory, Strens's "sample once");
* ``doubling`` (default): Thompson Sampling with Dynamic Episodes (Ouyang et al. 2017,
  Algorithm 1). Episode k starting at step :math:`t_k` goes on while
  :math:`t \le t_k + T_{k-1}` and :math:`N_t(x,u) \le 2 N_{t_k}(x,u)` for every pair, where
  :math:`N_t(x,u)` counts the *observed* visits of (x, u) before step t and
  :math:`T_{k-1}` is the previous episode's length (:math:`T_0 = 1`). So a new sample is
  drawn when a pair's count has more than doubled since the last sample (in particular
  at the first visit of a pair) or when the episode is about to outgrow the previous one
  by more than a step.

A new episode's sample is drawn before its first decision; the first is drawn at the
trajectory's first decision. Each sample is solved like BEB's model: the **Guez value
iteration**'s answer (Jacobi sweeps until the Euclidean norm of a sweep's change is at
most 1e-4, lowest action index wins ties), reached by warm-started policy iteration
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration_rows`, from the previous sample's values and
policy; the first from those of the prior's mean model), so its planning is BEB's, done
once per episode instead of at every step. Rows are drawn over their support only
(zero concentrations stay impossible), as normalised Gamma variates from the kernel's own
xoshiro256** generator, seeded by numba's generator (the package seeds that one with the
trajectory's seed). The counter ``resamples`` records the number of samples drawn.

The posterior, the samples and the rewards live on the agent's sparse rows
(:mod:`bbrlcore.mdp.rows`: the prior's support joined with the test MDPs' transitions,
``self.layout``): a draw costs one Gamma variate per transition of positive
concentration and a sweep one term per transition, a step a binary search in the
observed row. Models too large for dense LU evaluations
(:func:`~bbrlcore.mdp.solvers.lu_affordable`: :math:`n_X^3` above 200 times the
transitions; never on the paper's problems) are solved by the warm-started sweeps alone,
to the same stopping test.

This is BOSS (:mod:`.boss`) with one sample per model, so both share their sampler and
solver (:mod:`._posterior`): BOSS with K = 1 and B = 0 plays exactly PSRL with one sample
per trajectory.

Parameters: ``schedule`` (``doubling`` or ``fixed``, default ``doubling``) and ``period``
(int ≥ 1, the steps between two samples; required with ``schedule=fixed``, refused with
``doubling``). γ < 1 (the value iteration must converge).

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state (done by the package's loop,
:func:`~bbrlcore.agents.api.trajectory_loop_rows`); the posterior is kept and the
``schedule`` goes on.

Papers: M. Strens, "A Bayesian framework for reinforcement learning", ICML 2000;
I. Osband, D. Russo and B. Van Roy, "(More) efficient reinforcement learning via posterior
sampling", NIPS 2013; Y. Ouyang, M. Gagrani, A. Nayyar and R. Jain, "Learning unknown
Markov decision processes: a Thompson sampling approach", NIPS 2017.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import env_transition_rows
from bbrlcore.agents._posterior import (
    generator_from_numba,
    lu_buffer,
    posterior_init_rows,
    posterior_update_rows,
    probe_sample_sweeps,
    sample_and_solve,
    sampling_setup,
)
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import Param, at_least_one
from bbrlcore.agents.sboss import mean_rows
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, lu_affordable

#: The values of ``schedule``.
SCHEDULES = ("doubling", "fixed")
_DOUBLING, _FIXED = 0, 1

# ctr slots of the per-trajectory state
_RESAMPLE, _ELAPSED, _PREV_LEN, _SAMPLES = 0, 1, 2, 3


@njit(cache=True, error_model="numpy")
def _reset(setup):
    succ, nsucc, theta, Rm, V0, pi0, fpar, ipar = setup
    nX = theta.shape[0]
    alpha, visits = posterior_init_rows(theta)
    ctr = np.zeros(4, dtype=np.int64)
    ctr[_RESAMPLE] = 1
    ctr[_PREV_LEN] = 1  # T_0 = 1 (Ouyang et al.)
    return (alpha, visits, succ, nsucc, Rm, np.zeros_like(theta), V0.copy(), pi0.copy(),
            lu_buffer(nsucc), np.empty(nX), generator_from_numba(), ctr,
            np.zeros_like(visits), fpar, ipar)


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    alpha, visits, succ, nsucc, Rm, Ps, V, pi, A, b, rs, ctr, visits_at, fpar, ipar = state
    if ctr[_RESAMPLE]:
        sample_and_solve(alpha, succ, nsucc, Rm, fpar[0], fpar[1], Ps, V, pi, A, b, rs)
        visits_at[:] = visits
        if ctr[_SAMPLES] > 0:
            ctr[_PREV_LEN] = ctr[_ELAPSED]
        ctr[_ELAPSED] = 0
        ctr[_RESAMPLE] = 0
        ctr[_SAMPLES] += 1
    return pi[x]


@njit(cache=True, error_model="numpy", inline="always")
def _observe(state, x, u, y, r):
    alpha, visits, succ, nsucc = state[0], state[1], state[2], state[3]
    ctr, visits_at, ipar = state[11], state[12], state[14]
    posterior_update_rows(alpha, visits, succ, nsucc, x, u, y)
    ctr[_ELAPSED] += 1
    if ipar[0] == _FIXED:
        if ctr[_ELAPSED] >= ipar[1]:
            ctr[_RESAMPLE] = 1
    elif ctr[_ELAPSED] > ctr[_PREV_LEN] or visits[x, u] > 2 * visits_at[x, u]:
        ctr[_RESAMPLE] = 1


@njit(cache=True, error_model="numpy")
def _counters(state):
    out = np.zeros(1, dtype=np.int64)
    out[0] = state[11][_SAMPLES]
    return out


# ---------------------------------------------------------------------------------------
# Cost: the kernel's own schedule, without the samples and the solves


@njit(cache=True, error_model="numpy")
def simulate_samples(Pbar, succ, nsucc, initial_state, mode, period, horizon, seed):
    """Samples drawn in one trajectory under the schedule, for the cost model: the
    schedule of :func:`_act`/:func:`_observe` on the mean test MDP ``Pbar`` (on its sparse
    rows ``succ``, ``nsucc``) with uniformly random actions instead of the sampled
    models' greedy ones."""
    np.random.seed(seed)
    nX, nU, _ = Pbar.shape
    visits = np.zeros((nX, nU), dtype=np.int64)
    visits_at = np.zeros((nX, nU), dtype=np.int64)
    x = initial_state if initial_state >= 0 else np.random.randint(0, nX)
    resample = True
    samples = 0
    elapsed = 0
    prev_len = 1
    for _t in range(horizon):
        if resample:
            visits_at[:] = visits
            if samples > 0:
                prev_len = elapsed
            elapsed = 0
            resample = False
            samples += 1
        u = np.random.randint(0, nU)
        y = succ[x, u, env_transition_rows(Pbar, nsucc, x, u, np.random.random())]
        visits[x, u] += 1
        elapsed += 1
        if mode == _FIXED:
            resample = elapsed >= period
        else:
            resample = elapsed > prev_len or visits[x, u] > 2 * visits_at[x, u]
        x = y
    return samples


#: Simulated trajectories averaged by :func:`cost_features` (doubling schedule).
COST_SIMULATIONS = 4


def expected_samples(params: dict, test, horizon: int) -> float:
    """Samples drawn per trajectory: ``ceil(T / period)`` for a fixed period, the
    doubling rule replayed with random actions on the mean test MDP otherwise."""
    if params["schedule"] == "fixed":
        return float(math.ceil(horizon / int(params["period"])))
    Pbar, lay = mean_rows(test)
    succ, nsucc = lay.succ, lay.nsucc
    return sum(simulate_samples(Pbar, succ, nsucc, int(test.initial_state), _DOUBLING, 1,
                                int(horizon), k)
               for k in range(COST_SIMULATIONS)) / COST_SIMULATIONS


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """Every sample draws one Gamma variate per support entry of the posterior and solves
    the sampled model (BEB's warm-started policy iteration: sweeps over the same entries
    and nX x nX linear solves where :func:`~bbrlcore.mdp.solvers.lu_affordable`); between
    samples a step is a transition and a count."""
    n = expected_samples(params, test, horizon)
    lay = prior.support_layout
    nnz = lay.nnz
    B = float(nnz)
    nX = prior.n_states
    out = {"trajectory": 1.0, "steps": float(horizon), "rebuilds": n, "entries": n * B,
           "rebuild_states": n * nX * prior.n_actions}
    if lu_affordable(nX, nnz):
        out["solves"] = n * float(nX) ** 3
        return out
    # a model too large for LU evaluations: the sweeps a warm solve of a sample takes
    from bbrlcore.agents._memo import pure_probe  # (every job plans the same estimate)

    s = pure_probe("psrl-sweeps", probe_sample_sweeps, np.ascontiguousarray(prior.theta_rows),
                   lay.succ, lay.nsucc, np.ascontiguousarray(prior.reward_rows),
                   float(gamma), GUEZ_TOLERANCE, 8)
    out["sweep_backups"] = n * B * s
    return out


def _check_schedule(v: str) -> str | None:
    return None if v in SCHEDULES else f"must be one of {', '.join(SCHEDULES)}"


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if params["schedule"] == "fixed" and params.get("period") is None:
        return "schedule=fixed needs a period (--param period=k, k >= 1 steps between samples)"
    if params["schedule"] == "doubling" and params.get("period") is not None:
        return "period applies to schedule=fixed only (the doubling rule sets its own episodes)"
    if not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    return None


class PSRL(CompiledAgent):
    """PSRL as a compiled agent (the module docstring states the algorithm)."""

    name = "psrl"
    params = (
        Param("schedule", str, default="doubling", check=_check_schedule,
              doc="when to draw a new model: doubling (Ouyang et al. 2017) or fixed"),
        Param("period", int, default=None, check=at_least_one,
              doc="steps between two samples (schedule=fixed only)"),
    )
    counters = ("resamples",)
    setting_check = staticmethod(_setting_check)
    cost_features = staticmethod(cost_features)
    reset = _reset
    act = _act
    observe = _observe
    counter_values = _counters

    def setup(self) -> tuple:
        fixed = self.p["schedule"] == "fixed"
        ipar = np.array([_FIXED if fixed else _DOUBLING,
                         int(self.p["period"]) if fixed else 0], dtype=np.int64)
        return sampling_setup(self, ipar)


PSRL.__doc__ = __doc__  # what `bbrl agents psrl` shows
