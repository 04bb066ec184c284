r"""PSRL: Posterior Sampling for Reinforcement Learning (Strens 2000; Osband, Russo &
Van Roy 2013), per episode in an episodic interaction, with the doubling rule of Ouyang et
al. 2017 or a fixed period in a continuing one.

Beyond the paper (Castronovo et al. 2016 does not have it): the most cited Bayesian
baseline, here on the paper's test problems and timing protocol, and the posterior
sampling baseline of the exploration literature in bbrl's episodic setting.

The agent keeps the Dirichlet posterior of every transition row, :math:`\alpha(x,u,\cdot)
= \theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts), and knows
the reward function (the prior's ``reward``), like the paper's agents, unless the prior
leaves the rewards unknown (**Rewards** below). From time to time
it draws one MDP from the posterior — every row independently,
:math:`P(x,u,\cdot) \sim \mathrm{Dir}(\alpha(x,u,\cdot))` (zero concentrations stay
impossible) — solves it, and acts greedily in it until the next draw. The posterior
starts from the prior once, at the start of the interaction, and is never reset.

**Episodic interaction** (an experiment with episodes of H steps, ``episode_length`` H >
0) and ``schedule`` not given — the default there, Osband, Russo & Van Roy's algorithm: at
the start of every episode one MDP is drawn and its **optimal H-step policy** computed by
backward induction, :math:`V_H = 0`,

.. math::  Q_h(x,u) = \sum_y \tilde P(y \mid x,u)\,\bigl(R(x,u,y) + V_{h+1}(y)\bigr),
   \qquad V_h(x) = \max_u Q_h(x,u), \qquad h = H-1, \ldots, 0,

undiscounted, over the remaining steps of the episode (lowest action index on ties); step
h of the episode plays :math:`\arg\max_u Q_h(x_h, u)`. The environment returns to the
initial state after every H steps; the posterior keeps every observation. Only what the
episode can need is drawn and solved: the states reachable from the initial state in h
steps along the agent's rows (:math:`R_h`, computed once per player; every state when
the initial state is drawn at random), so a draw costs one Gamma variate per
positive-concentration slot of the rows of :math:`\bigcup_{h<H} R_h` and the backward
induction one term per slot of :math:`R_h` at each h (DeepSea-N: the triangle below the
start, about half the grid). Rows are independent, so this is the same algorithm as
drawing every row. γ plays no part in it (the test set's γ only discounts the recorded
return).

**Continuing interaction** (``episode_length`` 0, the paper's protocol) or ``schedule``
given: the sampled model is solved for its discounted values (γ of the experiment) and
new draws follow ``schedule``:

* ``doubling`` (the default in a continuing interaction): Thompson Sampling with Dynamic
  Episodes (Ouyang et al. 2017, Algorithm 1), the posterior sampling algorithm of the
  continuing (average-reward) setting. Episode k starting at step :math:`t_k` goes on
  while :math:`t \le t_k + T_{k-1}` and :math:`N_t(x,u) \le 2 N_{t_k}(x,u)` for every
  pair, where :math:`N_t(x,u)` counts the *observed* visits of (x, u) before step t and
  :math:`T_{k-1}` is the previous episode's length (:math:`T_0 = 1`). So a new sample is
  drawn when a pair's count has more than doubled since the last sample (in particular
  at the **first visit** of a pair) or when the episode is about to outgrow the
  previous one by more than a step;
* ``fixed``: a new sample every ``period`` steps (``period = 1``: at every step;
  ``period`` ≥ the horizon: one sample for the whole trajectory, Strens's "sample once").

In an episodic experiment with ``schedule`` given, the agent is this continuing one: the
environment's returns to the initial state are all it sees of the episodes (its schedule,
discount and posterior carry on).

*The doubling rule on short interactions* (issue 34: ``doubling`` scored 2.6 on
RiverSwim-12 against 41.0 for ``fixed`` with ``period`` 10). This is the rule as
published, not a bug of it (its counts, its episode lengths and the trajectories of the
compiled agent are checked by the tests): its episodes end at the first visit of any
pair, and each may last at most one step more than the previous one, so while pairs are
still being visited for the first time it draws a new model every few steps (48 draws
in 250 steps on RiverSwim-12 with the uniform prior) and, at the frontier of what was
explored, at every new state — each fresh sample may send the agent back to the small
certain reward, and RiverSwim-12 needs some 30 consecutive decisions swimming right.
Mean undiscounted return over 30 test MDPs, uniform prior
(``benchmarks/bench_baselines.py``, ``benchmarks/results/baselines.md``): RiverSwim-12,
T = 250: doubling 6.4, fixed period 1, 5, 10, 20, 40: 3.3, 17.1, 24.9, 54.2, 45.7; T =
2000: 602 against 46, 645, 721, 835, 805. No fixed period is best everywhere: on Grid
period 1 is (16.7 at T = 250, doubling 12.0, period 20 4.7), on Chain period 5; on GC,
GDL and RiverSwim-6 doubling is within 3 % of the best. It is kept as the continuing
default, being that setting's posterior sampling algorithm; a problem that needs long
commitment in short interactions is better served by ``fixed`` with a period of about
the discount's horizon 1/(1-γ), or by the episodic setting.

Each continuing sample is solved like BEB's model: the **Guez value iteration**'s answer
(Jacobi sweeps until the Euclidean norm of a sweep's change is at most 1e-4, lowest
action index wins ties), reached by warm-started policy iteration
(:func:`bbrlcore.mdp.solvers.guez_policy_iteration_rows`, from the previous sample's
values and policy; the first from those of the prior's mean model), so its planning is
BEB's, done once per episode instead of at every step. A new episode's sample is drawn
before its first decision; the first at the trajectory's first decision. Rows are drawn
over their support only (zero concentrations stay impossible), as normalised Gamma
variates from the kernel's own xoshiro256** generator, seeded by numba's generator (the
package seeds that one with the trajectory's seed). The counter ``resamples`` records
the number of samples drawn (in the episodic form: the number of episodes begun).

The posterior, the samples and the rewards live on the agent's sparse rows
(:mod:`bbrlcore.mdp.rows`: the prior's support joined with the test MDPs' transitions):
a draw costs one Gamma variate per transition of positive concentration and a sweep one
term per transition, a step a binary search in the observed row. Models too large for
dense LU evaluations (:func:`~bbrlcore.mdp.solvers.lu_affordable`: :math:`n_X^3` above
200 times the transitions; never on the paper's problems) are solved by the warm-started
sweeps alone, to the same stopping test.

The continuing form is BOSS (:mod:`.boss`) with one sample per model, so both share
their sampler and solver (:mod:`._posterior`): BOSS with K = 1 and B = 0 plays exactly
PSRL with one sample per trajectory. :class:`PSRL` is that form written as a
:class:`~bbrlcore.agents.api.CompiledAgent` (an example of the public API); the built-in
``psrl`` (:data:`ALGORITHM`) plays the same functions in a trajectory kernel of its own,
which also holds the episodic form.

**Rewards.** Under a prior that knows the rewards (the paper's protocol, no suffix) the
sampled models pay the prior's rewards, as above. Under a prior whose rewards are
unknown (``+rbeta``, ``+rnig``: :mod:`bbrlcore.mdp.reward_prior`) the agent also keeps
the posterior of each pair's expected reward — Beta–Bernoulli with the Bernoulli trick
(Agrawal & Goyal 2012) or Colosseum's Normal–inverse-gamma, updated with every reward
observed after the pair (:func:`._rewards.reward_posterior_update`) — and every sample
draws, before the transitions, one expected reward per pair from it, paid on every
transition of the pair (:func:`._rewards.reward_sample_rows`; the episodic form draws
those of the rows an episode can need): Osband, Russo & Van Roy's algorithm with its
reward posterior, as Colosseum's PSRL. The first solve's warm start then uses the reward
prior's mean, never the table; the draws come from the same xoshiro256** generator
after the known-reward ones would (a known-reward prior draws nothing more: bit for bit
as before).

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; Colosseum's PSRL prior is ``+dir0.3235+rnig``): the
transition prior is :math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next states
of every pair, and row (x, u)'s posterior :math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))`.
The posterior stays on the agent's sparse rows (the test MDPs' transitions and the
prior's stored ones, each slot of concentration α plus its counts: every observation has
its slot); the states outside a row's slots, its **background**, have concentration α
each and no counts. A sample is exact in distribution: every row drawn gets one Gamma
variate per state in increasing order, :math:`\mathrm{Gamma}(\alpha + c)` on a slot and
:math:`\mathrm{Gamma}(\alpha)` on each background state, normalised together
(:func:`sample_rows_all`), and is held **densely** for its solve, on the full layout
(the rewards: the prior's, 0 outside its stored transitions; unknown rewards: the
pair's sampled reward on every next state). Cost per sample: memory
:func:`dense_bytes` (24·S²·A bytes and the (S, S) LU buffer: DeepSea-20 2.6 MB,
DeepSea-50 100 MB; refused in one line above 16 GB), time S²·A Gamma variates (every
state is reachable, so the episodic form draws every row) and a solve on S²·A
transitions (the episodic backward induction H·S²·A terms, the continuing form BEB's
solver on the full model). DeepSea-20, episodic: about 50 ms an episode against 0.03 ms
under the uniform prior (``benchmarks/results/dir_prior.md``). Colosseum's expected
indicators are not available under it (the indicator players sample sparse rows).
Which built-ins take it: PSRL; e-Greedy, Soft-max and BEB (the posterior mean: a slot
:math:`(\alpha + c)/(S\alpha + n)`, a background state :math:`\alpha/(S\alpha + n)`,
:func:`bbrlcore.agents._kernels.q_iteration_all`,
:func:`~bbrlcore.agents._kernels.guez_value_iteration_all`); the formula agents and
OPPS-DS (their QMean feature on that posterior mean; OPPS-DS trains on MDPs drawn from
Dir(α) over every next state); UCRL2 (its confidence sets over every next state);
MBIE-EB, Q-learning-UCB, Random and Optimal, which never read the transition prior;
BOSS, SBOSS and BOLT (on the full layout: :mod:`.boss`, :mod:`.sboss`, :mod:`.bolt`);
BAMCP and BFS3 (the posterior predictive over every next state: :mod:`.bamcp`,
:mod:`.bfs3`). A plugin that does not say it takes it is refused in one line
(:attr:`~bbrlcore.agents.base.Algorithm.dirichlet_all`).

**Colosseum's continuing PSRL** (``form=colosseum``; the default ``form=bbrl`` is
everything above, unchanged): the ``PSRLContinuous`` Colosseum's benchmark runs, Agrawal &
Jia's optimistic posterior sampling (2017) as Colosseum codes it, at its benchmark's
weights (:data:`bbrlcore.agents.psrl_colosseum.COLOSSEUM_BENCHMARK`) — ψ optimistic copies
of every pair (a pair seen fewer than η times: its empirical row lowered by a confidence
width, the leftover mass on a random state; else a posterior sample) in an extended MDP
of A·ψ actions, solved by Colosseum's float32 discounted value iteration at the end of
each episode (a pair's count doubled), with Colosseum's own prior (a Dirichlet 1/S on
every next state, its Normal–inverse-gamma rewards: the prior must end ``+rnig<mean>``;
``+dir<α>`` is refused), continuing interactions only. Its own module,
:mod:`bbrlcore.agents.psrl_colosseum`, states it and what differs from Colosseum (the
random numbers); ``tests/test_psrl_colosseum.py`` replays Colosseum's code on its
transitions and draws.

Parameters: ``schedule`` (``doubling`` or ``fixed``; not given: per episode in an
episodic interaction, ``doubling`` in a continuing one) and ``period`` (int ≥ 1, the
steps between two samples; required with ``schedule=fixed``, refused otherwise). The
continuing form needs γ < 1 (the value iteration must converge); the episodic one takes
any γ. ``form`` (``bbrl``, the default, or ``colosseum``) and, with ``form=colosseum``
only, Colosseum's weights ``psi_weight``, ``omega_weight``, ``kappa_weight``,
``eta_weight`` (> 0; defaults its benchmark's); ``schedule`` and ``period`` are
``form=bbrl``'s.

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state (done by the package's loop,
:func:`~bbrlcore.agents.api.trajectory_loop_rows`); the posterior is kept and the
``schedule`` goes on.

Papers: M. Strens, "A Bayesian framework for reinforcement learning", ICML 2000;
I. Osband, D. Russo and B. Van Roy, "(More) efficient reinforcement learning via posterior
sampling", NIPS 2013; Y. Ouyang, M. Gagrani, A. Nayyar and R. Jain, "Learning unknown
Markov decision processes: a Thompson sampling approach", NIPS 2017; S. Agrawal and
R. Jia, "Optimistic posterior sampling for reinforcement learning: worst-case regret
bounds", NIPS 2017 (``form=colosseum``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents import psrl_colosseum
from bbrlcore.agents._indicators import (
    Request,
    episode_start,
    final_weight,
    finish,
    gain_scratch,
    ind_alloc,
    is_row,
    needs_evaluation,
    policy_row,
    row_episodic,
)
from bbrlcore.agents._kernels import (
    env_reset,
    env_reward_rows,
    env_step_rows,
    env_transition_rows,
)
from bbrlcore.agents._layout import setting
from bbrlcore.agents._posterior import (
    generator_from_numba,
    lu_buffer,
    mean_values,
    posterior_init_rows,
    posterior_update_rows,
    probe_sample_sweeps,
    sample_and_solve,
    sample_rows_of,
    sampling_setup,
)
from bbrlcore.agents._rewards import (
    prior_mean_rows,
    reward_posterior_init,
    reward_posterior_mean,
    reward_posterior_update,
    reward_sample_rows,
)
from bbrlcore.agents._rng import gamma_s, uniform_s
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import (
    FLOAT64,
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    at_least_one,
    reward_buffer,
)
from bbrlcore.agents.sboss import mean_rows
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import evaluation as ev_
from bbrlcore.mdp.reward_prior import REWARD_PRIORS
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_policy_iteration_rows, lu_affordable

#: The values of ``schedule`` (not given: per episode in an episodic interaction, doubling
#: in a continuing one).
SCHEDULES = ("doubling", "fixed")
_DOUBLING, _FIXED = 0, 1

# ctr slots of the per-trajectory state
_RESAMPLE, _ELAPSED, _PREV_LEN, _SAMPLES = 0, 1, 2, 3


@njit(cache=True, error_model="numpy")
def _reset(setup):
    succ, nsucc, theta, Rm, V0, pi0, fpar, ipar, rpar = setup
    nX, nU = theta.shape[0], theta.shape[1]
    alpha, visits = posterior_init_rows(theta)
    ctr = np.zeros(4, dtype=np.int64)
    ctr[_RESAMPLE] = 1
    ctr[_PREV_LEN] = 1  # T_0 = 1 (Ouyang et al.)
    Rm = Rm.copy()  # (rewards unknown: the sampled ones are this trajectory's; a copy,
    # writable even when the setup's is not, whatever the prior)
    return (alpha, visits, succ, nsucc, Rm, np.zeros_like(theta), V0.copy(), pi0.copy(),
            lu_buffer(nsucc), np.empty(nX), generator_from_numba(), ctr,
            np.zeros_like(visits), fpar, ipar, rpar, reward_posterior_init(nX, nU, rpar))


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    alpha, visits, succ, nsucc, Rm, Ps, V, pi, A, b, rs, ctr, visits_at, fpar, ipar = state[:15]
    rpar, rstat = state[15], state[16]
    if ctr[_RESAMPLE]:
        if rpar[0] != 0.0:  # rewards unknown: one draw per pair, then the transitions
            reward_sample_rows(rstat, rpar, nsucc, Rm, np.arange(alpha.shape[0]), rs)
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
    rpar = state[15]
    if rpar[0] != 0.0:
        reward_posterior_update(state[16], rpar, x, u, r, state[10])
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
# The continuing form: the functions above in a whole-trajectory kernel


@njit(cache=True, error_model="numpy")
def _trajectory_continuing(setup, P, succ, nsucc, R, Rstd, gaussian, initial_state, gamma,
                           horizon, episode_length, seed, rewards):
    """One trajectory of the continuing form on the test MDP ``P`` (its values on the
    test layout ``succ``, ``nsucc``): the loop of
    :func:`bbrlcore.agents.api.trajectory_loop_rows` around :func:`_reset`, :func:`_act`
    and :func:`_observe` (the same draws, so the same trajectories as the compiled agent
    :class:`PSRL`), the environment returning to the initial state after every
    ``episode_length`` steps when it is positive."""
    np.random.seed(seed)
    nX = P.shape[0]
    state = _reset(setup)
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    for t in range(horizon):
        u = _act(state, x)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        y = succ[x, u, k]
        _observe(state, x, u, y, r)
        x = y
        if episode_length > 0 and (t + 1) % episode_length == 0:
            x = env_reset(initial_state, nX)
    return ret, _counters(state)


# Colosseum's "current optimal policy" of PSRL (its agents' current_optimal_stochastic_policy,
# Colosseum 1.1 and later): the optimal policy of the posterior's MAP estimate, the
# normalised Dirichlet concentrations and the reward model's mean (episodic: H-step
# backward induction; continuing: discounted value iteration, gamma 0.99), ties exact

#: Colosseum's discount of the continuing PSRL's current policy (its
#: ``discounted_value_iteration`` default).
MAP_GAMMA = 0.99
#: Value iteration's stopping rule for it: sup-norm change of V below this times
#: max(1, sup |V|) (Colosseum stops at 1e-3 in float32), or MAP_MAX_SWEEPS sweeps.
MAP_TOLERANCE = 1e-10
MAP_MAX_SWEEPS = 100_000


@njit(cache=True, error_model="numpy")
def mean_rewards_rows(Rm, rstat, rpar, nsucc, out):
    """The rewards of the posterior's mean model on the agent's slots: the prior's
    (``rpar[0] == 0``: rewards known) or each pair's posterior mean on its slots."""
    if rpar[0] == 0.0:
        return Rm
    nX, nU = nsucc.shape
    for x in range(nX):
        for u in range(nU):
            m = reward_posterior_mean(rstat, rpar, x, u)
            for k in range(nsucc[x, u]):
                out[x, u, k] = m
    return out


@njit(cache=True, error_model="numpy")
def _mean_rows(alpha, nsucc, Pm):
    """``Pm`` ← the posterior's mean rows, ``alpha`` normalised per row on its slots
    (a row of zero concentration stays zero); computed once per solve, each sweep then
    reads the probabilities instead of dividing by the row's sum again."""
    nX, nU = nsucc.shape
    for x in range(nX):
        for u in range(nU):
            s = 0.0
            for k in range(nsucc[x, u]):
                s += alpha[x, u, k]
            for k in range(nsucc[x, u]):
                Pm[x, u, k] = alpha[x, u, k] / s if s > 0.0 else 0.0


@njit(cache=True, error_model="numpy", inline="always")
def _mean_q(Pm, Rr, succ, nsucc, V, x, u, gamma):
    q = 0.0
    for k in range(nsucc[x, u]):
        q += Pm[x, u, k] * (Rr[x, u, k] + gamma * V[succ[x, u, k]])
    return q


@njit(cache=True, error_model="numpy")
def _ties_row(q, out):
    """``out`` ← uniform over the exact maximisers of ``q``; returns the maximum."""
    best = q[0]
    for u in range(1, q.shape[0]):
        if q[u] > best:
            best = q[u]
    n = 0
    for u in range(q.shape[0]):
        if q[u] == best:
            n += 1
    for u in range(q.shape[0]):
        out[u] = 1.0 / n if q[u] == best else 0.0
    return best


@njit(cache=True, error_model="numpy")
def map_policy_episodic(alpha, Rr, succ, nsucc, H, pol, Va, Vb, q):
    """``pol`` (H, nX, nU) ← the optimal H-step policy of the posterior's mean model
    (transitions ``alpha`` normalised per row, rewards ``Rr`` on the slots), exact ties
    uniform, by backward induction over every state; ``Va``, ``Vb`` (nX,), ``q`` (nU,)
    work arrays."""
    nX, nU = nsucc.shape
    Pm = np.empty_like(alpha)
    _mean_rows(alpha, nsucc, Pm)
    Va[:] = 0.0
    for i in range(H):
        h = H - 1 - i
        for x in range(nX):
            for u in range(nU):
                q[u] = _mean_q(Pm, Rr, succ, nsucc, Va, x, u, 1.0)
            Vb[x] = _ties_row(q, pol[h, x])
        Va[:] = Vb


@njit(cache=True, error_model="numpy")
def map_policy_discounted(alpha, Rr, succ, nsucc, gamma, V, W, pol, q):
    """``pol`` (nX, nU) ← the greedy policy (exact ties uniform) of the γ-discounted
    values of the posterior's mean model, by Gauss–Seidel value iteration (in place,
    states in increasing order) from ``V`` (warm start, left with the values) until a
    sweep changes no value by more than :data:`MAP_TOLERANCE` × max(1, sup |V|)
    (Gauss–Seidel is a γ-contraction in the sup norm, as Jacobi's sweep is, with the
    same fixed point, and here needs about half its sweeps); ``W`` (nX,), ``q`` (nU,)
    work arrays (``W`` unused, kept for the callers). Returns the sweeps."""
    nX, nU = nsucc.shape
    Pm = np.empty_like(alpha)
    _mean_rows(alpha, nsucc, Pm)
    sweeps = 0
    while sweeps < MAP_MAX_SWEEPS:
        sweeps += 1
        diff = 0.0
        big = 1.0
        for x in range(nX):
            best = -np.inf
            for u in range(nU):
                v = _mean_q(Pm, Rr, succ, nsucc, V, x, u, gamma)
                if v > best:
                    best = v
            d = abs(best - V[x])
            if d > diff:
                diff = d
            if abs(best) > big:
                big = abs(best)
            V[x] = best
        if diff <= MAP_TOLERANCE * big:
            break
    for x in range(nX):
        for u in range(nU):
            q[u] = _mean_q(Pm, Rr, succ, nsucc, V, x, u, gamma)
        _ties_row(q, pol[x])
    return sweeps


@njit(cache=True, error_model="numpy")
def _trajectory_continuing_ind(setup, P, succ, nsucc, R, Rstd, gaussian, initial_state,
                               gamma, horizon, episode_length, seed, rewards, L, rbar,
                               refs_s, refs_w, mu0, Hr, opt, worst, si, sf):
    """:func:`_trajectory_continuing` with Colosseum's indicators every ``L`` steps
    (:mod:`._indicators`), the current policy being Colosseum's: the greedy policy of the
    γ = 0.99 discounted values of the posterior's MAP model
    (:func:`map_policy_discounted`, warm-started from the previous row's values): its
    :math:`V^\\pi_0` over the ``Hr``-step episodes of an episodic test set, else its gain
    from the current state. The same trajectory (the evaluation draws nothing)."""
    np.random.seed(seed)
    nX = P.shape[0]
    state = _reset(setup)
    alpha, asucc, ansucc, Rm, rpar, rstat = (state[0], state[2], state[3], state[4],
                                              state[15], state[16])
    nU = alpha.shape[1]
    Rbuf = np.zeros_like(alpha)
    pol = np.zeros((nX, nU))
    Vm = np.zeros(nX)
    Wm = np.zeros(nX)
    qm = np.zeros(nU)
    episodic = episode_length > 0
    acc, hist = ind_alloc(horizon, L)
    V0 = np.zeros(nX)
    Vc = np.zeros(nX)
    x = env_reset(initial_state, nX)
    s = x
    ret = 0.0
    disc = 1.0
    for t in range(horizon + 1):
        final = t == horizon
        if not final:
            u = _act(state, x)
            k = env_step_rows(P, nsucc, x, u)
            r = env_reward_rows(R, Rstd, gaussian, x, u, k)
            rewards[t] = r
            ret += disc * r
            disc *= gamma
            y = succ[x, u, k]
            _observe(state, x, u, y, r)
            x = y
        if final or is_row(t, L):
            # Colosseum's current policy: the MAP model's (the posterior changes at every
            # step, so solved at every row that uses it)
            if needs_evaluation(acc):
                Rr = mean_rewards_rows(Rm, rstat, rpar, ansucc, Rbuf)
                map_policy_discounted(alpha, Rr, asucc, ansucc, MAP_GAMMA, Vm, Wm, pol, qm)
            policy_row(acc, hist, t, horizon, L, final, episodic, True, succ, nsucc, P,
                       rbar, pol, x, s, refs_s, refs_w, mu0, Hr, opt, worst, V0, Vc, si, sf)
        x, s = episode_start(t, final, episode_length, initial_state, nX, x, s)
    return ret, _counters(state), acc


# ---------------------------------------------------------------------------------------
# The episodic form: one sample per episode, its optimal H-step policy


@njit(cache=True, error_model="numpy")
def reach_sets(succ, nsucc, initial_state, H):
    """The states reachable in exactly h steps from the initial state along the rows
    ``succ``, ``nsucc`` (every slot, whatever its probability), h = 0, ..., H:
    ``(states, off)`` with :math:`R_h` = ``states[off[h]:off[h+1]]`` in increasing order.
    ``initial_state`` -1 (drawn uniformly): :math:`R_0` holds every state."""
    nX, nU, _ = succ.shape
    mark = np.full(nX, -1, dtype=np.int64)
    off = np.zeros(H + 2, dtype=np.int64)
    cap = max(16, nX)
    states = np.empty(cap, dtype=np.int64)
    n = 0
    if initial_state < 0:
        for x in range(nX):
            states[x] = x
        n = nX
    else:
        states[0] = initial_state
        n = 1
    off[1] = n
    for h in range(1, H + 1):
        lo, hi = off[h - 1], off[h]
        start = n
        for j in range(lo, hi):
            x = states[j]
            for u in range(nU):
                for k in range(nsucc[x, u]):
                    y = succ[x, u, k]
                    if mark[y] != h:
                        mark[y] = h
                        if n == states.shape[0]:
                            bigger = np.empty(2 * n, dtype=np.int64)
                            bigger[:n] = states[:n]
                            states = bigger
                        states[n] = y
                        n += 1
        states[start:n] = np.sort(states[start:n])
        off[h + 1] = n
    return states[:n].copy(), off


@njit(cache=True, error_model="numpy")
def decision_states(states, off, H):
    """The states of :math:`\\bigcup_{h<H} R_h` (the rows an episode can need), in
    increasing order."""
    nX = 0
    for j in range(off[H]):
        nX = max(nX, states[j] + 1)
    seen = np.zeros(nX, dtype=np.bool_)
    for j in range(off[H]):
        seen[states[j]] = True
    return np.flatnonzero(seen)


@njit(cache=True, error_model="numpy")
def finite_horizon_plan_rows(P, R, succ, nsucc, states, off, H, pi, Vnext, Vcur):
    """Backward induction of the H-step undiscounted values of the model ``P`` (rewards
    ``R``; both on the rows ``succ``, ``nsucc``) over the reach sets ``states``, ``off``
    (:func:`reach_sets`): ``pi[j]`` receives the optimal action at step h of the state
    ``states[j]``, ``off[h] <= j < off[h+1]`` (the first maximising action), and the
    value :math:`V_0` of the states of :math:`R_0` is left in ``Vnext`` (returned).
    ``Vnext`` and ``Vcur`` are (nX,) work arrays; only the entries of reachable states
    are written or read."""
    nU = P.shape[1]
    for j in range(off[H], off[H + 1]):
        Vnext[states[j]] = 0.0
    for h in range(H - 1, -1, -1):
        for j in range(off[h], off[h + 1]):
            x = states[j]
            best = -np.inf
            bu = 0
            for u in range(nU):
                q = 0.0
                for k in range(nsucc[x, u]):
                    p = P[x, u, k]
                    if p > 0.0:
                        q += p * (R[x, u, k] + Vnext[succ[x, u, k]])
                if q > best:
                    best = q
                    bu = u
            pi[j] = bu
            Vcur[x] = best
        tmp = Vnext
        Vnext = Vcur
        Vcur = tmp
    return Vnext


@njit(cache=True, error_model="numpy")
def _position(states, lo, hi, x):
    """Index of ``x`` in the increasing ``states[lo:hi]`` (binary search); -1 if absent."""
    while lo < hi:
        mid = (lo + hi) >> 1
        v = states[mid]
        if v < x:
            lo = mid + 1
        elif v > x:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, error_model="numpy")
def _trajectory_episodic(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed,
                         succ, nsucc, theta, Rm, states, off, need, rewards, rpar):
    """One interaction of the episodic form (module docstring) on the test MDP ``P``
    on the agent's rows ``succ``, ``nsucc`` (:meth:`~bbrlcore.agents._layout.Setting.env`):
    a sample and a backward induction at the start of every episode of ``H`` steps, the
    environment back at the initial state. Returns (discounted return, episodes begun)."""
    np.random.seed(seed)
    nX = P.shape[0]
    rs = generator_from_numba()
    alpha = theta.copy()
    learn = rpar[0] != 0.0
    if learn:  # rewards unknown: the sampled rewards are this trajectory's
        Rm = Rm.copy()
    rstat = reward_posterior_init(nX, theta.shape[1], rpar)
    Ps = np.zeros_like(theta)
    Va = np.zeros(nX)
    Vb = np.zeros(nX)
    pi = np.zeros(off[H], dtype=np.int64)
    ret = 0.0
    disc = 1.0
    samples = 0
    x = 0
    for t in range(horizon):
        h = t % H
        if h == 0:
            x = env_reset(initial_state, nX)
            if learn:
                reward_sample_rows(rstat, rpar, nsucc, Rm, need, rs)
            sample_rows_of(alpha, nsucc, Ps, need, rs)
            finite_horizon_plan_rows(Ps, Rm, succ, nsucc, states, off, H, pi, Va, Vb)
            samples += 1
        j = _position(states, off[h], off[h + 1], x)
        if j < 0:
            raise ValueError("a state outside the reach sets of its step")
        u = pi[j]
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        alpha[x, u, k] += 1.0
        if learn:
            reward_posterior_update(rstat, rpar, x, u, r, rs)
        x = succ[x, u, k]
    return ret, samples


@njit(cache=True, error_model="numpy")
def reach_policy_values(P, rbar, succ, nsucc, states, off, H, pi, Vnext, Vcur, V0):
    """:math:`V^\\pi_0` of the H-step policy ``pi`` (indexed as
    :func:`finite_horizon_plan_rows` writes it) on the test MDP ``P`` (expected rewards
    ``rbar`` (nX, nU); both on the agent's rows) by backward induction over the reach
    sets, into ``V0`` (nX,: the states of :math:`R_0`, 0 elsewhere)."""
    for j in range(off[H], off[H + 1]):
        Vnext[states[j]] = 0.0
    for h in range(H - 1, -1, -1):
        for j in range(off[h], off[h + 1]):
            x = states[j]
            u = pi[j]
            q = rbar[x, u]
            for k in range(nsucc[x, u]):
                q += P[x, u, k] * Vnext[succ[x, u, k]]
            Vcur[x] = q
        tmp = Vnext
        Vnext = Vcur
        Vcur = tmp
    V0[:] = 0.0
    for j in range(off[0], off[1]):
        V0[states[j]] = Vnext[states[j]]
    return V0


@njit(cache=True, error_model="numpy")
def _trajectory_episodic_ind(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed,
                             succ, nsucc, theta, Rm, states, off, need, rewards, L, rbar,
                             refs_s, refs_w, mu0, Hr, opt, worst, rpar):
    """:func:`_trajectory_episodic` (the same draws in the same order: the same
    trajectory) with Colosseum's indicators every ``L`` steps (:mod:`._indicators`), the
    current policy being Colosseum's: the optimal H-step policy of the posterior's MAP
    estimate (:func:`map_policy_episodic`), evaluated on the test MDP ``P``."""
    np.random.seed(seed)
    nX = P.shape[0]
    nU = theta.shape[1]
    rs = generator_from_numba()
    alpha = theta.copy()
    learn = rpar[0] != 0.0
    Rk = Rm  # (the prior's rewards: the mean model's when they are known)
    if learn:  # rewards unknown: the sampled rewards are this trajectory's
        Rm = Rm.copy()
    rstat = reward_posterior_init(nX, nU, rpar)
    Ps = np.zeros_like(theta)
    Va = np.zeros(nX)
    Vb = np.zeros(nX)
    pi = np.zeros(off[H], dtype=np.int64)
    acc, hist = ind_alloc(horizon, L)
    V0 = np.zeros(nX)
    Vc = np.zeros(nX)
    pol = np.zeros((H, nX, nU))
    Rbuf = np.zeros_like(theta)
    qm = np.zeros(nU)
    ret = 0.0
    disc = 1.0
    samples = 0
    x = 0
    s = 0
    for t in range(horizon):
        h = t % H
        if h == 0:
            x = env_reset(initial_state, nX)
            s = x
            if learn:
                reward_sample_rows(rstat, rpar, nsucc, Rm, need, rs)
            sample_rows_of(alpha, nsucc, Ps, need, rs)
            finite_horizon_plan_rows(Ps, Rm, succ, nsucc, states, off, H, pi, Va, Vb)
            samples += 1
        j = _position(states, off[h], off[h + 1], x)
        if j < 0:
            raise ValueError("a state outside the reach sets of its step")
        u = pi[j]
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        alpha[x, u, k] += 1.0
        if learn:
            reward_posterior_update(rstat, rpar, x, u, r, rs)
        x = succ[x, u, k]
        if is_row(t, L):
            if needs_evaluation(acc):
                Rr = mean_rewards_rows(Rk, rstat, rpar, nsucc, Rbuf)
                map_policy_episodic(alpha, Rr, succ, nsucc, H, pol, Va, Vb, qm)
                ev_.episode_values_stochastic(succ, nsucc, P, rbar, pol, Hr, V0)
            row_episodic(acc, hist, t, horizon, L, False, V0, s, refs_s, refs_w, mu0, Hr,
                         Vc)
    if horizon % H == 0:  # the last step ended an episode: the next one's start
        s = env_reset(initial_state, nX)
    if needs_evaluation(acc):
        Rr = mean_rewards_rows(Rk, rstat, rpar, nsucc, Rbuf)
        map_policy_episodic(alpha, Rr, succ, nsucc, H, pol, Va, Vb, qm)
        ev_.episode_values_stochastic(succ, nsucc, P, rbar, pol, Hr, V0)
    row_episodic(acc, hist, horizon - 1, horizon, final_weight(horizon, L), True, V0, s,
                 refs_s, refs_w, mu0, Hr, Vc)
    return ret, samples, acc


# ---------------------------------------------------------------------------------------
# A prior that does not know the support: a Dirichlet on every next state (+dir<α>)


@njit(cache=True, error_model="numpy")
def sample_rows_all(alpha, succ, nsucc, a_all, need, Pd, rs):
    r"""Draw the rows of the states ``need`` (every action, in that order) from the
    posterior of a Dirichlet on every next state into the dense ``Pd`` (nX, nU, nX): row
    (x, u) is :math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))` over all S states, drawn as
    one Gamma variate per state in increasing order — :math:`\mathrm{Gamma}(\alpha +
    c)` for a slot of the agent's rows (``alpha[x, u, k]``, the slot's concentration α
    plus its counts), :math:`\mathrm{Gamma}(\alpha)` (``a_all``) for every state of the
    row's background — normalised together (exact in distribution). A row whose variates
    sum below 1e-300 puts all its mass on one uniformly chosen state. Cost: S variates per
    row."""
    nX = Pd.shape[2]
    nU = alpha.shape[1]
    s0, s1, s2, s3 = rs[0], rs[1], rs[2], rs[3]  # generator state in registers (see _rng)
    for i in range(need.shape[0]):
        x = need[i]
        for u in range(nU):
            n = nsucc[x, u]
            j = 0
            s = 0.0
            for y in range(nX):
                if j < n and succ[x, u, j] == y:
                    a = alpha[x, u, j]
                    j += 1
                else:
                    a = a_all
                g, s0, s1, s2, s3 = gamma_s(a, s0, s1, s2, s3)
                Pd[x, u, y] = g
                s += g
            if s < 1e-300:
                v, s0, s1, s2, s3 = uniform_s(s0, s1, s2, s3)
                pick = min(np.int64(v * nX), nX - 1)
                for y in range(nX):
                    Pd[x, u, y] = 1.0 if y == pick else 0.0
            else:
                inv = 1.0 / s
                for y in range(nX):
                    Pd[x, u, y] *= inv
    rs[0], rs[1], rs[2], rs[3] = s0, s1, s2, s3


@njit(cache=True, error_model="numpy")
def full_rows(nX, nU):
    """The full layout (:func:`bbrlcore.mdp.rows.full`) as arrays: ``succ[x, u, k] = k``,
    ``nsucc = nX``."""
    succ = np.empty((nX, nU, nX), dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            for y in range(nX):
                succ[x, u, y] = y
    return succ, np.full((nX, nU), nX, dtype=np.int64)


@njit(cache=True, error_model="numpy")
def scatter_rows(values, succ, nsucc, nX):
    """Values on the agent's rows as a dense (nX, nU, nX) array (0 elsewhere)."""
    nR, nU, _ = values.shape
    out = np.zeros((nR, nU, nX))
    for x in range(nR):
        for u in range(nU):
            for k in range(nsucc[x, u]):
                out[x, u, succ[x, u, k]] = values[x, u, k]
    return out


def dense_bytes(nX: int, nU: int) -> int:
    """Memory of PSRL's dense sampled model under a Dirichlet on every next state: the
    sample, the rewards and the full layout's successors (8 bytes each per transition of
    the S×A×S model) and the (S, S) buffer of the continuing form's LU evaluations."""
    return 24 * nX * nU * nX + 8 * nX * nX


def _dir_setup(st: Any, rpar: np.ndarray, alpha: float):
    """``(fsucc, fnsucc, Rd, theta_full)`` of the dense sampled model of a prior with a
    Dirichlet of concentration ``alpha`` on every next state: the full layout, the
    rewards on it (known: the prior's, 0 outside its stored transitions; unknown: the
    reward prior's mean on every transition) and the prior's concentrations on it."""
    nX, nU = st.nsucc.shape
    fsucc, fnsucc = full_rows(nX, nU)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    Rd = (scatter_rows(np.ascontiguousarray(st.Rm, dtype=np.float64), succ, nsucc, nX)
          if rpar[0] == 0.0 else prior_mean_rows(rpar, fnsucc, nX))
    return fsucc, fnsucc, np.ascontiguousarray(Rd), np.full((nX, nU, nX), float(alpha))


@njit(cache=True, error_model="numpy")
def _trajectory_episodic_dir(P, R, Rstd, gaussian, initial_state, gamma, horizon, H, seed,
                             succ, nsucc, theta, a_all, fsucc, fnsucc, Rd, states, off,
                             need, rewards, rpar):
    """:func:`_trajectory_episodic` under a Dirichlet of concentration ``a_all`` on every
    next state: the posterior on the agent's rows ``succ``, ``nsucc`` (``theta``: α on
    every slot), each episode's sample drawn densely (:func:`sample_rows_all`, with its
    rewards ``Rd`` on the full layout ``fsucc``, ``fnsucc``) and solved by backward
    induction over the reach sets of the full layout (every state at every step h ≥ 1)."""
    np.random.seed(seed)
    nX = P.shape[0]
    rs = generator_from_numba()
    alpha = theta.copy()
    learn = rpar[0] != 0.0
    if learn:
        Rd = Rd.copy()
    rstat = reward_posterior_init(nX, theta.shape[1], rpar)
    Pd = np.zeros(fsucc.shape)
    Va = np.zeros(nX)
    Vb = np.zeros(nX)
    pi = np.zeros(off[H], dtype=np.int64)
    ret = 0.0
    disc = 1.0
    samples = 0
    x = 0
    for t in range(horizon):
        h = t % H
        if h == 0:
            x = env_reset(initial_state, nX)
            if learn:
                reward_sample_rows(rstat, rpar, fnsucc, Rd, need, rs)
            sample_rows_all(alpha, succ, nsucc, a_all, need, Pd, rs)
            finite_horizon_plan_rows(Pd, Rd, fsucc, fnsucc, states, off, H, pi, Va, Vb)
            samples += 1
        j = _position(states, off[h], off[h + 1], x)
        if j < 0:
            raise ValueError("a state outside the reach sets of its step")
        u = pi[j]
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        alpha[x, u, k] += 1.0
        if learn:
            reward_posterior_update(rstat, rpar, x, u, r, rs)
        x = succ[x, u, k]
    return ret, samples


@njit(cache=True, error_model="numpy", inline="always")
def _act_dir(state, dstate, x):
    alpha, visits, succ, nsucc, Rm, Ps, V, pi, A, b, rs, ctr, visits_at, fpar, ipar = state[:15]
    rpar, rstat = state[15], state[16]
    fsucc, fnsucc, Pd, Rd, Af, every, dpar = dstate
    if ctr[_RESAMPLE]:
        if rpar[0] != 0.0:  # rewards unknown: one draw per pair, then the transitions
            reward_sample_rows(rstat, rpar, fnsucc, Rd, every, rs)
        sample_rows_all(alpha, succ, nsucc, dpar[0], every, Pd, rs)
        guez_policy_iteration_rows(Pd, Rd, fsucc, fnsucc, fpar[0], fpar[1], V, pi, Af, b)
        visits_at[:] = visits
        if ctr[_SAMPLES] > 0:
            ctr[_PREV_LEN] = ctr[_ELAPSED]
        ctr[_ELAPSED] = 0
        ctr[_RESAMPLE] = 0
        ctr[_SAMPLES] += 1
    return pi[x]


@njit(cache=True, error_model="numpy")
def _trajectory_continuing_dir(setup, dsetup, P, succ, nsucc, R, Rstd, gaussian,
                               initial_state, gamma, horizon, episode_length, seed, rewards):
    """:func:`_trajectory_continuing` under a Dirichlet on every next state: the same
    schedule and posterior (:func:`_reset`, :func:`_observe`), each sample drawn densely
    (:func:`sample_rows_all`) and solved on the full layout (:func:`_act_dir`)."""
    np.random.seed(seed)
    nX = P.shape[0]
    state = _reset(setup)
    fsucc, fnsucc, Rd0, Af, dpar = dsetup
    dstate = (fsucc, fnsucc, np.zeros(fsucc.shape), Rd0.copy(), Af.copy(),
              np.arange(nX), dpar)
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    for t in range(horizon):
        u = _act_dir(state, dstate, x)
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        y = succ[x, u, k]
        _observe(state, x, u, y, r)
        x = y
        if episode_length > 0 and (t + 1) % episode_length == 0:
            x = env_reset(initial_state, nX)
    return ret, _counters(state)


def _dir_memory_check(prior: Any) -> str | None:
    need = dense_bytes(int(prior.n_states), int(prior.n_actions))
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"under a Dirichlet on every next state each sample is held densely, "
                f"{need / 2**30:.1f} GB for {prior.n_states} states, above "
                f"{MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


def _continuing_dir_player(prior: Any, params: dict, ep: Episode, a_all: float):
    st = setting(prior, ep)
    fixed = params["schedule"] == "fixed"
    ipar = np.array([_FIXED if fixed else _DOUBLING,
                     int(params["period"]) if fixed else 0], dtype=np.int64)
    rpar = reward_prior_array(prior)
    fsucc, fnsucc, Rd, theta_full = _dir_setup(st, rpar, a_all)
    gamma_, tol = float(ep.gamma), GUEZ_TOLERANCE
    V0, pi0 = mean_values(fsucc, fnsucc, theta_full, Rd, gamma_, tol)
    del theta_full
    succ_a = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc_a = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    theta = np.ascontiguousarray(st.theta, dtype=np.float64)
    setup = (succ_a, nsucc_a, theta, np.ascontiguousarray(agent_rewards(st, rpar)), V0, pi0,
             np.array([gamma_, tol]), ipar, rpar)
    dsetup = (fsucc, fnsucc, Rd, lu_buffer(fnsucc), np.array([float(a_all)]))
    lay = ep.layout()
    succ = np.ascontiguousarray(lay.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(lay.nsucc, dtype=np.int64)
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    gaussian, x0 = int(ep.gaussian), ep.start
    horizon = int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        ret, cnt = _trajectory_continuing_dir(
            setup, dsetup, np.ascontiguousarray(P, dtype=np.float64), succ, nsucc, R, Rstd,
            gaussian, x0, gamma_, horizon, H, int(seed), rewards)
        return float(ret), cnt

    return play


def _episodic_dir_player(prior: Any, params: dict, ep: Episode, H: int, a_all: float):
    st = setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    nX, nU, K = succ.shape
    rpar = reward_prior_array(prior)
    fsucc, fnsucc, Rd, _theta_full = _dir_setup(st, rpar, a_all)
    del _theta_full
    states, off = reach_sets(fsucc, fnsucc, ep.reach_from, H)
    need_bytes = episodic_memory_bytes(int(off[-1]), nX, nU, K) + dense_bytes(nX, nU)
    if need_bytes > MAX_AGENT_MEMORY_BYTES:
        raise BBRLError(f"psrl: the episodic form under a Dirichlet on every next state "
                        f"would need {need_bytes / 2**30:.1f} GB (H = {H} steps over {nX} "
                        f"states), above {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    need = decision_states(states, off, H)
    theta = np.ascontiguousarray(st.theta)
    R, Rstd = st.R, st.Rstd
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        ret, n = _trajectory_episodic_dir(Pa, R, Rstd, gaussian, x0, gamma, horizon, H,
                                          int(seed), succ, nsucc, theta, float(a_all),
                                          fsucc, fnsucc, Rd, states, off, need, rewards,
                                          rpar)
        return float(ret), np.array([n], dtype=np.int64)

    return play


# ---------------------------------------------------------------------------------------
# Players


def reward_prior_array(prior: Any) -> np.ndarray:
    """The kernels' ``rpar`` of the prior's reward prior (:mod:`._rewards`)."""
    from bbrlcore.mdp.reward_prior import reward_prior_of

    return reward_prior_of(prior).array()


def agent_rewards(st: Any, rpar: np.ndarray) -> np.ndarray:
    """The rewards an agent starts from on its rows: the prior's (known rewards), or the
    reward prior's mean on every slot (unknown rewards: the agent never sees the table)."""
    if rpar[0] == 0.0:
        return np.ascontiguousarray(st.Rm)
    return prior_mean_rows(rpar, np.asarray(st.nsucc), st.theta.shape[2])


def _continuing_player(prior: Any, params: dict, ep: Episode):
    if not ep.gamma < 1.0:
        raise BBRLError("psrl: the continuing form needs a discount factor < 1 (the Guez "
                        "value iteration would not converge); in an episodic experiment "
                        "leave schedule unset for the per-episode form")
    st = setting(prior, ep)
    fixed = params["schedule"] == "fixed"
    ipar = np.array([_FIXED if fixed else _DOUBLING,
                     int(params["period"]) if fixed else 0], dtype=np.int64)
    rpar = reward_prior_array(prior)
    agent = SimpleNamespace(layout=st.layout, theta_rows=st.theta,
                            reward_rows=agent_rewards(st, rpar), gamma=float(ep.gamma))
    setup = (*sampling_setup(agent, ipar), rpar)
    lay = ep.layout()
    succ = np.ascontiguousarray(lay.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(lay.nsucc, dtype=np.int64)
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        ret, cnt = _trajectory_continuing(setup, np.ascontiguousarray(P, dtype=np.float64),
                                          succ, nsucc, R, Rstd, gaussian, x0, gamma,
                                          horizon, H, int(seed), rewards)
        return float(ret), cnt

    return play


def episodic_memory_bytes(n_reach: int, nX: int, nU: int, K: int) -> int:
    """Memory of the episodic form's arrays: reach sets and policy (16 bytes per
    reachable state-step), posterior and sample (16 bytes per slot), values."""
    return 16 * n_reach + 16 * nX * nU * K + 16 * nX


def _episodic_player(prior: Any, params: dict, ep: Episode, H: int):
    st = setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    nX, nU, K = succ.shape
    states, off = reach_sets(succ, nsucc, ep.reach_from, H)
    need_bytes = episodic_memory_bytes(int(off[-1]), nX, nU, K)
    if need_bytes > MAX_AGENT_MEMORY_BYTES:
        raise BBRLError(f"psrl: the episodic form would need {need_bytes / 2**30:.1f} GB "
                        f"(H = {H} steps over {nX} states), above "
                        f"{MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    need = decision_states(states, off, H)
    theta = np.ascontiguousarray(st.theta)
    rpar = reward_prior_array(prior)
    Rm = agent_rewards(st, rpar)
    R, Rstd = st.R, st.Rstd
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        ret, n = _trajectory_episodic(Pa, R, Rstd, gaussian, x0, gamma, horizon, H,
                                      int(seed), succ, nsucc, theta, Rm, states, off,
                                      need, rewards, rpar)
        return float(ret), np.array([n], dtype=np.int64)

    return play


def _continuing_indicator_player(prior: Any, params: dict, ep: Episode, log_every: int):
    if not ep.gamma < 1.0:
        raise BBRLError("psrl: the continuing form needs a discount factor < 1")
    st = setting(prior, ep)
    fixed = params["schedule"] == "fixed"
    ipar = np.array([_FIXED if fixed else _DOUBLING,
                     int(params["period"]) if fixed else 0], dtype=np.int64)
    rpar = reward_prior_array(prior)
    agent = SimpleNamespace(layout=st.layout, theta_rows=st.theta,
                            reward_rows=agent_rewards(st, rpar), gamma=float(ep.gamma))
    setup = (*sampling_setup(agent, ipar), rpar)
    req = Request(ep, log_every)
    succ, nsucc = req.succ, req.nsucc
    R = np.array(ep.R, dtype=np.float64)
    Rstd = np.array(ep.Rstd, dtype=np.float64)
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    si, sf = gain_scratch(nsucc)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        P = np.ascontiguousarray(P, dtype=np.float64)
        evr = req.evaluator(P)
        ret, cnt, acc = _trajectory_continuing_ind(
            setup, P, succ, nsucc, R, Rstd, gaussian, x0, gamma, horizon, H, int(seed),
            rewards, req.log_every, np.ascontiguousarray(evr.rbar), *req.refs(evr), si, sf)
        return float(ret), cnt, finish(acc, evr, rewards, horizon)

    return play


def _episodic_indicator_player(prior: Any, params: dict, ep: Episode, H: int,
                               log_every: int):
    st = setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    nX, nU, K = succ.shape
    states, off = reach_sets(succ, nsucc, ep.reach_from, H)
    need = decision_states(states, off, H)
    theta = np.ascontiguousarray(st.theta)
    rpar = reward_prior_array(prior)
    Rm = agent_rewards(st, rpar)
    R, Rstd = st.R, st.Rstd
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    req = Request(ep, log_every)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        evr = req.evaluator(P)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        rbar = np.ascontiguousarray((Pa * R).sum(axis=2))
        ret, n, acc = _trajectory_episodic_ind(Pa, R, Rstd, gaussian, x0, gamma, horizon, H,
                                               int(seed), succ, nsucc, theta, Rm, states,
                                               off, need, rewards, req.log_every, rbar,
                                               *req.refs(evr), rpar)
        return (float(ret), np.array([n], dtype=np.int64),
                finish(acc, evr, rewards, horizon))

    return play


def make_indicator_player(prior: Any, params: dict, trained: Trained | None, ep: Episode,
                          log_every: int):
    """:func:`make_player`'s player with Colosseum's indicators (:mod:`._indicators`),
    the current policy being Colosseum's (its ``current_optimal_stochastic_policy``,
    Colosseum 1.1 and later): the optimal policy of the posterior's MAP estimate, not the
    sample's the agent acts with: ``play(P, seed, rewards) -> (return, counters,
    values)``, the same trajectory as :func:`make_player`'s."""
    if _is_colosseum(params):  # (Colosseum's PSRLContinuous: its own module)
        _refuse_other_forms(params)
        return psrl_colosseum.make_player(prior, params, ep, log_every)
    if getattr(prior, "dirichlet_all", None) is not None:  # (its kernels sample sparse rows)
        return None
    err = _parameter_check(params)
    if err:
        raise BBRLError(f"psrl: {err}")
    H = int(getattr(ep, "episode_length", 0) or 0)
    if H > 0 and params.get("schedule") is None:
        return _episodic_indicator_player(prior, params, ep, H, log_every)
    return _continuing_indicator_player(prior, {**params, "schedule": params.get("schedule")
                                                or "doubling"}, ep, log_every)


def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
    """The per-episode form in an episodic interaction with ``schedule`` not given, the
    continuing form otherwise (module docstring); ``form=colosseum``: Colosseum's
    ``PSRLContinuous`` (:func:`bbrlcore.agents.psrl_colosseum.make_player`)."""
    if _is_colosseum(params):
        _refuse_other_forms(params)
        return psrl_colosseum.make_player(prior, params, ep)
    err = _parameter_check(params)
    if err:
        raise BBRLError(f"psrl: {err}")
    H = int(getattr(ep, "episode_length", 0) or 0)
    a_all = getattr(prior, "dirichlet_all", None)
    if a_all is not None:  # (a Dirichlet on every next state: dense samples)
        if H > 0 and params.get("schedule") is None:
            return _episodic_dir_player(prior, params, ep, H, a_all)
        if not ep.gamma < 1.0:
            raise BBRLError("psrl: the continuing form needs a discount factor < 1")
        return _continuing_dir_player(prior, {**params, "schedule": params.get("schedule")
                                              or "doubling"}, ep, a_all)
    if H > 0 and params.get("schedule") is None:
        return _episodic_player(prior, params, ep, H)
    return _continuing_player(prior, {**params, "schedule": params.get("schedule")
                                      or "doubling"}, ep)


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
    if params.get("schedule") == "fixed":
        return float(math.ceil(horizon / int(params["period"])))
    Pbar, lay = mean_rows(test)
    succ, nsucc = lay.succ, lay.nsucc
    return sum(simulate_samples(Pbar, succ, nsucc, int(test.initial_state), _DOUBLING, 1,
                                int(horizon), k)
               for k in range(COST_SIMULATIONS)) / COST_SIMULATIONS


def episodic_cost_features(prior, horizon: int, episode_length: int) -> dict[str, float]:
    """The episodic form: per episode one draw of the rows an episode can need (a Gamma
    variate per positive slot) and one backward induction over the reach sets (a term
    per slot of each reachable state-step); a step is a binary search, a transition and
    a count."""
    H = int(episode_length)
    if getattr(prior, "dirichlet_all", None) is not None:  # (dense samples, every state)
        nX, nU = int(prior.n_states), int(prior.n_actions)
        episodes = float(math.ceil(horizon / H))
        r0 = 1 if int(prior.initial_state) >= 0 else nX
        return {"trajectory": 1.0, "steps": float(horizon), "rebuilds": episodes,
                "entries": episodes * nX * nU * nX,
                "backups": episodes * float(r0 + (H - 1) * nX) * nU * nX}
    lay = prior.support_layout
    states, off = reach_sets(np.ascontiguousarray(lay.succ, dtype=np.int64),
                             np.ascontiguousarray(lay.nsucc, dtype=np.int64),
                             int(prior.initial_state), H)
    need = decision_states(states, off, H)
    nsucc = np.asarray(lay.nsucc)
    episodes = float(math.ceil(horizon / H))
    entries = float(nsucc[need].sum())
    backups = float(sum(nsucc[states[off[h]:off[h + 1]]].sum() for h in range(H)))
    return {"trajectory": 1.0, "steps": float(horizon), "rebuilds": episodes,
            "entries": episodes * entries, "backups": episodes * backups}


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  episode_length: int = 0) -> dict[str, float]:
    """Continuing form: every sample draws one Gamma variate per support entry of the
    posterior and solves the sampled model (BEB's warm-started policy iteration: sweeps
    over the same entries and nX x nX linear solves where
    :func:`~bbrlcore.mdp.solvers.lu_affordable`); between samples a step is a transition
    and a count. Episodic form (``episode_length`` > 0 and no schedule):
    :func:`episodic_cost_features`. ``form=colosseum``:
    :func:`bbrlcore.agents.psrl_colosseum.cost_features`."""
    if _is_colosseum(params):
        return psrl_colosseum.cost_features(params, prior, test, gamma, horizon,
                                            episode_length)
    if episode_length and params.get("schedule") is None:
        return episodic_cost_features(prior, horizon, episode_length)
    n = expected_samples(params, test, horizon)
    lay = prior.support_layout
    nnz = lay.nnz
    B = float(nnz)
    nX = prior.n_states
    if getattr(prior, "dirichlet_all", None) is not None:  # (dense samples and solves)
        nnz = nX * prior.n_actions * nX
        B = float(nnz)
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


#: The forms of ``form``: bbrl's PSRL (this module), or Colosseum's benchmark
#: ``PSRLContinuous`` (:mod:`.psrl_colosseum`).
FORMS = ("bbrl", "colosseum")
#: The parameters of one form only, with their defaults.
_BBRL_ONLY = (("schedule", None), ("period", None))
_COLOSSEUM_ONLY = tuple((k, v) for k, v in psrl_colosseum.COLOSSEUM_BENCHMARK.items()
                        if k != "form")


def _is_colosseum(params: dict) -> bool:
    return params.get("form", "bbrl") == "colosseum"


def _form_check(params: dict) -> str | None:
    """The parameters of the other form, set away from their defaults."""
    col = _is_colosseum(params)
    for name, default in (_BBRL_ONLY if col else _COLOSSEUM_ONLY):
        if params.get(name, default) != default:
            if col:
                return (f"{name} applies to form=bbrl only (form=colosseum has "
                        "Colosseum's episodes: a pair's count doubled)")
            return (f"{name} applies to form=colosseum only (a weight of Colosseum's "
                    "PSRLContinuous constants)")
    return None


def _refuse_other_forms(params: dict) -> None:
    err = _form_check(params)
    if err:
        raise BBRLError(f"psrl: {err}")


def _parameter_check(params: dict) -> str | None:
    err = _form_check(params)
    if err or _is_colosseum(params):
        return err
    if params.get("schedule") == "fixed" and params.get("period") is None:
        return "schedule=fixed needs a period (--param period=k, k >= 1 steps between samples)"
    if params.get("schedule") != "fixed" and params.get("period") is not None:
        return ("period applies to schedule=fixed only (the doubling rule and the "
                "per-episode form set their own episodes)")
    return None


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    err = _parameter_check(params)
    if err:
        return err
    if _is_colosseum(params):
        return psrl_colosseum.prior_check(prior)
    if params.get("schedule") is not None and not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    if getattr(prior, "dirichlet_all", None) is not None:
        return _dir_memory_check(prior)
    return None


PARAMS = (
    Param("schedule", str, default=None, check=_check_schedule,
          doc="when to draw a new model: doubling (Ouyang et al. 2017) or fixed; not "
              "given: once per episode in an episodic interaction (Osband et al. 2013), "
              "doubling in a continuing one"),
    Param("period", int, default=None, check=at_least_one,
          doc="steps between two samples (schedule=fixed only)"),
)


def _choice_check(choices: tuple[str, ...]):
    def check(v: str) -> str | None:
        return None if v in choices else f"must be one of {', '.join(choices)}"
    return check


def _weight_check(v: float) -> str | None:
    return None if math.isfinite(v) and v > 0.0 else "must be > 0"


#: ``form`` and Colosseum's weights (the built-in's parameters besides :data:`PARAMS`;
#: every one left out of the agent id at its default, so the ids of ``form=bbrl`` stay).
FORM_PARAMS = (
    Param("form", str, default="bbrl", check=_choice_check(FORMS), id_omits_default=True,
          doc="bbrl (this module's PSRL, the default) or colosseum (Colosseum's benchmark "
              "PSRLContinuous: optimistic posterior sampling, continuing only)"),
    *(Param(k, float, default=v, check=_weight_check, id_omits_default=True,
            doc=f"form=colosseum: PSRLContinuous's {k} (its benchmark's {v:.4g})")
      for k, v in _COLOSSEUM_ONLY),
)


class PSRL(CompiledAgent):
    """PSRL's continuing form as a compiled agent (the module docstring states the
    algorithm); ``schedule`` not given is ``doubling``. The built-in ``psrl`` is
    :data:`ALGORITHM`."""

    name = "psrl"
    params = PARAMS
    counters = ("resamples",)
    setting_check = staticmethod(_setting_check)
    cost_features = staticmethod(cost_features)
    reset = _reset
    act = _act
    observe = _observe
    counter_values = _counters
    reward_priors = REWARD_PRIORS

    def setup(self) -> tuple:
        fixed = self.p["schedule"] == "fixed"
        ipar = np.array([_FIXED if fixed else _DOUBLING,
                         int(self.p["period"]) if fixed else 0], dtype=np.int64)
        rpar = self.reward_prior.array()
        agent = SimpleNamespace(layout=self.layout, theta_rows=self.theta_rows,
                                reward_rows=agent_rewards(SimpleNamespace(
                                    Rm=self.reward_rows, nsucc=self.layout.nsucc,
                                    theta=self.theta_rows), rpar), gamma=self.gamma)
        return (*sampling_setup(agent, ipar), rpar)


#: The built-in ``psrl``: the continuing form (:class:`PSRL`'s functions) and the
#: per-episode form, in trajectory kernels of their own.
def _continuing_only(params: dict) -> str | None:
    """form=colosseum is Colosseum's continuing ``PSRLContinuous`` (its episodes are its
    own: the doubling of a pair's visits), so an episodic interaction is refused."""
    return ("form=colosseum is Colosseum's continuing PSRLContinuous"
            if _is_colosseum(params) else None)


ALGORITHM = Algorithm(
    name="psrl",
    params=PARAMS + FORM_PARAMS,
    make_player=make_player,
    counters=("resamples",),
    doc=__doc__ or "",
    setting_check=_setting_check,
    cost_features=cost_features,
    sparse=True,
    episodic=True,
    indicator_player=make_indicator_player,
    reward_priors=REWARD_PRIORS,
    dirichlet_all=True,
    continuing_only=_continuing_only,
)
