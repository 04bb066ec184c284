r"""UCRL2: Upper Confidence Reinforcement Learning (Jaksch, Ortner & Auer 2010).

Beyond the paper (Castronovo et al. 2016 does not have it): the optimistic baseline of
the continuing (average-reward) setting, the algorithm the exploration literature and
Colosseum compare against. It ignores the prior's concentrations: it uses the prior's
known reward function and which transitions the prior allows (below).

The agent counts its observed transitions :math:`c(x,u,y)`, :math:`N(x,u) = \sum_y
c(x,u,y)`, and plays in **episodes**. Episode k starts at step :math:`t_k` (steps counted
from 1) and computes, from the counts :math:`N_k` before it, an optimistic policy
:math:`\tilde\pi_k`; it ends as soon as the pair about to be played,
:math:`(x_t, \tilde\pi_k(x_t))`, has been played in the episode as often as before it:
:math:`v_k(x,u) \ge \max\{1, N_k(x,u)\}` (the doubling criterion, Figure 1 of the paper).

**Confidence set.** The transitions of a pair lie, with the paper's probability, in the
L1 ball around the empirical model :math:`\hat p(\cdot \mid x,u) = c(x,u,\cdot) /
\max\{1, N_k(x,u)\}`,

.. math::  \lVert \tilde p(\cdot \mid x,u) - \hat p(\cdot \mid x,u) \rVert_1 \le
   d(x,u) = \sqrt{\frac{14\,S \log(2 A t_k / \delta)}{\max\{1, N_k(x,u)\}}},

S, A the numbers of states and actions. **Rewards.** Under a prior that knows the
rewards (the paper's protocol) the paper's reward confidence interval does not apply:
the optimistic rewards are the true ones, :math:`R(x,u,y)` of the prior's reward table,
and only the transition set above is used. Under a prior whose rewards are unknown
(``+rbeta``, ``+rnig``: :mod:`bbrlcore.mdp.reward_prior`; UCRL2 uses neither prior's
hyper-parameters, only the reward range :math:`[lo, hi]` it gives,
:func:`~bbrlcore.mdp.reward_prior.reward_range`) the agent keeps the sum and number of
the rewards observed after each pair and, at each episode's start, plays the paper's
optimistic rewards on every transition of (x, u),
:math:`\min\{hi, \hat r(x,u) + (hi - lo)\sqrt{7 \log(2 S A t_k / \delta) / (2
\max\{1, N_k(x,u)\})}\}` (rewards scaled to [0, 1] by the range; :math:`\hat r = lo`
before any observation, the paper's 0), :func:`._rewards.ucrl2_rewards`.

The transitions' ball is intersected with the distributions over the transitions the
agent deems possible: those of the prior's support (:math:`\theta(x,u,y) > 0`) and
any transition observed — the row's slots, as BOLT's σ (:mod:`.bolt`). On a prior
whose support is every state (the paper's UGC, UGDL, UGrid) that is the paper's set;
on the families' priors it is their structure (DeepSea's two successors of a cell),
which every bbrl agent knows.

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): UCRL2 as published knows no support
at all, and under such a prior neither does bbrl's: the L1 ball (and UCRL2-B's
intervals) is intersected with the distributions over **all S next states** of every
pair. The agent's rows are then the full layout (every next state a slot, the test
MDPs and rewards moved onto it, :func:`agent_setting`), so the algorithm above runs
unchanged on them: a pair never played is worth its best next state anywhere, and an
observed row may put the ball's excess mass on any state. UCRL2 is not Bayesian: the
prior's α does not enter it (any α, the same agent; on a prior whose support is already
every state, UGC, the same agent as without the suffix, bit for bit); only the rewards
(known, or their range when unknown) are read from the prior. Cost: memory
:func:`dense_bytes` (97·S²·A bytes: DeepSea-10 2 MB, DeepSea-50 1.2 GB; refused in one
line above 16 GB) and extended value iteration sweeps over S²·A slots instead of the
support's (DeepSea-10, 1,000 episodes of 10 steps: 27 ms a trajectory against 4.2 ms
on the support; UCRL2-B 64 ms against 4.4 ms). The expected
indicators work under it (:func:`make_indicator_player`, the same trajectory).

**Extended value iteration** (the paper's §3.1.2): on the optimistic MDP whose
actions choose both u and :math:`\tilde p \in` the set,

.. math::  (T u)(x) = \max_u \max_{\tilde p} \sum_y \tilde p(y \mid x,u)\,
   \bigl(R(x,u,y) + u(y)\bigr),

the inner maximum by the paper's Figure 2 on the row's slots: sort them by
:math:`w_y = R(x,u,y) + u(y)`, put :math:`\min\{1, \hat p(y^*) + d/2\}` on the best
one, keep :math:`\hat p` elsewhere and take the excess from the worst slots (a pair
never played puts all its mass on its best slot: :math:`d \ge 2` always). Iterations
stop when :math:`\max_x (Tu_i - u_i)(x) - \min_x (Tu_i - u_i)(x) < 1/\sqrt{t_k}`, the
paper's criterion, which makes the greedy policy :math:`1/\sqrt{t_k}`-optimal in the
optimistic MDP. Two choices the paper leaves open: the iterates are damped by the
**aperiodicity transformation** (Puterman 1994, §8.5.4), :math:`u_{i+1} = u_i +
\tfrac12 (T u_i - u_i)`, which keeps the greedy policies and the stopping test (on
:math:`T u_i - u_i`) and makes the iteration converge when the optimistic MDP is
periodic (a continuing DeepSea explored: every pass takes N + 1 steps), and each episode
starts from the previous episode's values (the paper starts from 0: the same stopping
test, fewer iterations). At most :data:`EVI_MAX_SWEEPS` sweeps: a model whose optimal
gain differs between states (an absorbing trap the prior's support cannot leave) never
meets the span test, and then the last greedy policy is kept (counter
``evi_capped``). The policy is greedy in the last sweep's values, exact ties between
actions broken uniformly at random (the paper's arg max leaves them open; while every
pair is fully optimistic, as long as :math:`d \ge 2`, whole rows of actions tie, and the
lowest index would play one fixed action everywhere); the best slot of a row is the
first of equal ones.

**Ties, and why the published width dithers.** While :math:`d(x,u) \ge 2` the L1 ball
holds every distribution on the row's slots, so a pair is *fully* optimistic: its value
is that of its best slot, whatever was observed. That lasts until the pair has been
played :math:`N \ge 3.5\,S \log(2 A t_k / \delta)` times: about 5,700 visits on
DeepSea-10 (S = 102, A = 2, t ≈ 10⁵). On DeepSea every action of a cell then leads, in
the optimistic model, to the best of the cell's two successors: the actions tie, ties
break at random, and UCRL2 plays as Random does (measured: no treasure in 10,000
episodes of DeepSea 10 to 50, every step tied; ``benchmarks/results/ucrl2b_deepsea.md``).
That is the algorithm as published, kept as the default. The counter ``tied_steps``
counts the steps whose chosen action tied with another under the optimistic values (a
state whose actions are truly alike counts too), and a run whose steps tied at 90 % or
more says so in one line (:func:`run_note`, printed once per run), pointing to UCRL2-B.

**UCRL2-B** (``bound=bernstein``): the confidence set of Fruit, Pirotta & Lazaric
(2020), "Improved analysis of UCRL2 with empirical Bernstein inequality"
(arXiv:2007.05456), the variant Bourel, Maillard & Talebi (2020, UCRL3's paper) compare
with under the name UCRL2-B: an interval per transition rather than an L1 ball,

.. math::  |\tilde p(y \mid x,u) - \hat p(y \mid x,u)| \le
   2\sqrt{\frac{\hat p(y)(1 - \hat p(y))\,\ell}{n}} + \frac{6\,\ell}{n}, \qquad
   \ell = \log\frac{18\,S A\,n}{\delta}, \quad n = \max\{1, N_k(x,u)\},

:math:`\hat p` the empirical row (0 where never observed), intersected with [0, 1] and
with the distributions on the row's slots (as above). The constants 2 and 6 are the
paper's empirical-Bernstein form; :math:`\ell`'s 18 S A (δ shared among the S A pairs
and the confidence events) and the widths as code are those of the UCRL3 authors'
implementation of UCRL2-B with known rewards, ``UCRL2_Bernstein_detRewards`` of
``statisticalrl-learners`` (``MDPs_discrete/UCRL2B.py``, version 2.2507), read for this.
A transition never observed keeps the width :math:`6\ell/n`, which falls below 1 after
some tens of visits of its pair (about 95 on DeepSea-10, S A = 204), so that a DeepSea pair stops
being fully optimistic after tens of visits instead of thousands. The inner maximum puts
every slot at its lower bound and the remaining mass on the slots in decreasing order of
:math:`w_y`, each up to its upper bound (the paper's Figure 2 for intervals). Everything
else is UCRL2's above: the doubling criterion, the damped iteration and its stopping
test :math:`1/\sqrt{t_k}`, uniform ties (the UCRL3 code breaks ties towards the less
played action; bbrl keeps UCRL2's rule, so that only the confidence sets differ), known
rewards. Measured on DeepSea 10 to 50 (10,000 episodes, three test MDPs each,
``benchmarks/results/ucrl2b_deepsea.md``): it finds the treasure after 200 to 800
episodes at N = 10 and about 5,800 at N = 50, and takes it in every one of the last
1,000 episodes at every size.

**Settings.** Continuing (UCRL2's setting): γ plays no part (the agent maximises the
average reward; the test set's γ only discounts the recorded return). In an episodic
experiment the agent just sees the resets: the environment's return to the initial state
is not a transition of the MDP and is not counted; its episodes, counts and values
carry on.

**Colosseum's UCRL2** (``form=colosseum``; the default ``form=jaksch`` is everything
above): the ``UCRL2Continuous`` Colosseum's benchmark runs (``colosseum/agent/agents/
infinite_horizon/ucrl2.py``, its extended value iteration in ``dynamic_programming/
infinite_horizon.py``, Colosseum 1.2), at its benchmark configuration
(``benchmark/cached_hyperparameters/agent_configs/UCRL2Continuous.gin``:
``bound_type_p='bernstein'``, :data:`COLOSSEUM_BENCHMARK`), read for this and
reproduced step by step (:func:`_trajectory_colosseum`; ``tests/test_ucrl2_colosseum.py``
replays Colosseum's code on the kernel's transitions: the same greedy actions, episodes
and indicators). It is another algorithm than the paper's:

- **Model.** Counts N(x, u, y) of every next state (the full layout: no support known,
  :func:`agent_setting` with every state a slot), an empirical row :math:`\hat p` in
  float32, **uniform over all S states** until the pair's first model update; the
  rewards always **learned**, whatever the prior (Colosseum's agent is told only their
  range; :math:`r_{max}` is the upper end of :func:`~bbrlcore.mdp.reward_prior.
  reward_range`), by Colosseum's running estimate: it starts at :math:`r_{max}` and each
  reward r of the pair, the f-th since N counted f - 1 (f starting at the pair's count
  *including* the episode's visits, plus one), sets :math:`\hat r \leftarrow \hat r\,
  f/(f+1) + r/(f+1)`: a biased mean that keeps weight on :math:`r_{max}`.
- **Episodes.** Every step's transition is counted at once; the episode ends *after* a
  step whose pair has been played in it at least as often as before it
  (:math:`\nu \ge \max(1, N - \nu)`; a pair's first visit ends one). At its end the
  optimistic Q-values are computed from the **current** counts N but the model (rows,
  rewards) and the step count ``it`` **as of the previous episode's end**; then the model
  takes the episode's data (Colosseum's order), and ``it`` grows by its steps.
- **Widths**, with :math:`\delta = 1/\sqrt{it + 1}` and :math:`\ell = \log(2 S A
  (it + 1)/\delta)`, n = max(1, N), m = max(1, N - 1): rewards (Colosseum's
  ``_chernoff``) :math:`\alpha_r\, r_{max} \sqrt{3.5\,\ell / n}`; transitions (its
  Bernstein bound) :math:`\sqrt{\alpha_p} \sqrt{14\,\hat p_0 (1 - \hat p_0)\,\ell
  / n} + \alpha_p\, 49\,\ell / (3 m)` — one L1 radius per pair, computed from
  :math:`\hat p` of **next state 0** (Colosseum's ``_max_proba`` reads
  ``(p[best] + beta / 2)[0]`` of the per-state widths).
- **Extended value iteration** (:func:`colosseum_evi`): undamped sweeps from u = 0 in
  float32; per pair :math:`\min(r_{max}, \hat r + \beta_r)` and the row of
  :func:`colosseum_max_proba`: :math:`\min(1, \hat p(b) + \beta/2)` on the state b of
  largest value (the last of ``np.argsort`` of the previous sweep's values; state S - 1
  in the first sweep), the excess taken from the states of positive :math:`\hat p` in
  increasing order of value. A state's new value is the last action's that beats or
  comes within 10⁻³ of the running one; it stops when the span of :math:`u_{i+1} - u_i`
  is below 10⁻³, and after 10⁶ sweeps gives up (the agent keeps its previous Q-values;
  counter ``evi_capped``). The agent plays the greedy action of the last sweep's
  Q-values, exact (float32) ties uniformly at random.

Its parameters are Colosseum's ``alpha_p`` and ``alpha_r`` (defaults its benchmark's,
0.988 and 0.103); ``delta`` and ``bound`` are ``form=jaksch``'s (refused with it, as
``alpha_p``, ``alpha_r`` with ``form=jaksch``). What differs from Colosseum: the random
numbers (ties are broken by the kernel's generator, not Colosseum's ``RandomState``);
float64 arithmetic where Colosseum's NumPy 1 computes float32 scalars times Python
floats in float64 (its reward estimate; NumPy 2 would round each product to float32);
and Colosseum's wall-clock limits on an update (none here). Its cost: memory
:func:`dense_bytes`, and each episode a dense S²·A sweep per iteration (a pair's first
visit ends an episode, so there are at least S·A of them).

Parameters: ``delta`` (confidence, in (0, 1), default 0.05), ``bound`` (``l1``, the
paper's sets, the default; ``bernstein``: UCRL2-B), ``form`` (``jaksch``, default, or
``colosseum``), ``alpha_p`` and ``alpha_r`` (``form=colosseum``: > 0). The paper states
its bounds for a given δ and reports no experiment with a default; 0.05 is the default
of TabulaRL's UCRL2 (Osband's reference implementations, ``src/finite_tabular_agents.py``).
Counters: ``policies`` (UCRL2's episodes begun, each one extended value iteration),
``evi_sweeps`` (sweeps of all of them), ``evi_capped`` and ``tied_steps``.

Paper: T. Jaksch, R. Ortner and P. Auer, "Near-optimal regret bounds for reinforcement
learning", Journal of Machine Learning Research 11, 2010, pp. 1563-1600. UCRL2-B:
R. Fruit, M. Pirotta and A. Lazaric, "Improved analysis of UCRL2 with empirical Bernstein
inequality", arXiv:2007.05456, 2020; H. Bourel, O.-A. Maillard and M. S. Talebi,
"Tightening exploration in upper confidence reinforcement learning", ICML 2020.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from bbrlcore.agents._indicators import (
    Request,
    episode_start,
    finish,
    gain_scratch,
    ind_alloc,
    is_row,
    needs_evaluation,
    policy_row,
)
from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents._layout import setting
from bbrlcore.agents._rewards import (
    empirical_init,
    empirical_mean,
    empirical_update,
    ucrl2_rewards,
)
from bbrlcore.agents.base import (
    FLOAT64,
    MAX_AGENT_MEMORY_BYTES,
    Algorithm,
    Episode,
    Param,
    Trained,
    reward_buffer,
)
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import rows
from bbrlcore.mdp.reward_prior import REWARD_PRIORS, reward_prior_of, reward_range

#: Largest number of sweeps of one extended value iteration (see the module docstring).
EVI_MAX_SWEEPS = 20_000
#: Damping of the extended value iteration (the aperiodicity transformation's τ).
EVI_DAMPING = 0.5


@njit(cache=True, error_model="numpy")
def optimistic_value(x, u, C, N, allowed, R, succ, nsucc, d, values, order):
    """:math:`\\max_{\\tilde p} \\sum_y \\tilde p(y)(R(x,u,y) + u(y))` over the L1 ball of
    radius ``d`` around the empirical row ``C[x, u] / N[x, u]`` restricted to the
    ``allowed`` slots (Figure 2 of the paper); ``order`` is an int64 work array of the
    row width."""
    n = nsucc[x, u]
    best = -1
    wb = 0.0
    for k in range(n):
        if allowed[x, u, k]:
            w = R[x, u, k] + values[succ[x, u, k]]
            if best < 0 or w > wb:
                best = k
                wb = w
    if best < 0:  # (a row without any allowed slot: cannot happen on a prior's support)
        return -np.inf
    Nxa = N[x, u]
    if Nxa == 0:
        return wb
    inv = 1.0 / Nxa
    pb = C[x, u, best] * inv
    top = min(1.0, pb + 0.5 * d)
    excess = top - pb
    q = top * wb
    # the other observed slots, worst first (insertion sort by w)
    m = 0
    for k in range(n):
        if k != best and C[x, u, k] > 0.0:
            w = R[x, u, k] + values[succ[x, u, k]]
            j = m
            while j > 0:
                kk = order[j - 1]
                if R[x, u, kk] + values[succ[x, u, kk]] > w:
                    order[j] = kk
                    j -= 1
                else:
                    break
            order[j] = k
            m += 1
    for j in range(m):
        k = order[j]
        p = C[x, u, k] * inv
        if excess > 0.0:
            cut = min(p, excess)
            p -= cut
            excess -= cut
        q += p * (R[x, u, k] + values[succ[x, u, k]])
    return q


#: UCRL2-B's confidence width of a transition probability (see the module docstring):
#: :math:`\beta = B_1 \sqrt{\hat p (1 - \hat p)\,\ell / n} + B_2\,\ell / n`,
#: :math:`\ell = \log(B_3 S A n / \delta)`, n = max(1, N).
BERNSTEIN_B1 = 2.0
BERNSTEIN_B2 = 6.0
BERNSTEIN_B3 = 18.0


@njit(cache=True, error_model="numpy")
def bernstein_intervals(C, N, nsucc, S, A, delta, lo, hi):
    """UCRL2-B's confidence interval ``[lo, hi]`` of every slot's transition probability
    (the module docstring): the empirical :math:`\\hat p = C / n` ± its empirical-Bernstein
    width, clipped to [0, 1]; a pair never played (:math:`\\hat p = 0`, n = 1) gets [0, 1]
    on every slot."""
    nX, nU, _ = C.shape
    for x in range(nX):
        for u in range(nU):
            n = max(1, N[x, u])
            ell = math.log(BERNSTEIN_B3 * S * A * n / delta)
            for k in range(nsucc[x, u]):
                ph = C[x, u, k] / n
                b = (BERNSTEIN_B1 * math.sqrt(ph * (1.0 - ph) * ell / n)
                     + BERNSTEIN_B2 * ell / n)
                lo[x, u, k] = max(0.0, ph - b)
                hi[x, u, k] = min(1.0, ph + b)


@njit(cache=True, error_model="numpy")
def optimistic_value_intervals(x, u, lo, hi, allowed, R, succ, nsucc, values, order, w):
    """:math:`\\max_{\\tilde p} \\sum_y \\tilde p(y)(R(x,u,y) + u(y))` over the
    distributions on the ``allowed`` slots within the per-slot intervals ``[lo, hi]``
    (UCRL2-B's set): every slot at its lower bound, the remaining mass to the slots in
    decreasing order of their value, each up to its upper bound (the first of equal
    values first). ``order`` (int64) and ``w`` (float64) are work arrays of the row
    width."""
    n = nsucc[x, u]
    m = 0
    q = 0.0
    mass = 1.0
    for k in range(n):
        if allowed[x, u, k]:
            wk = R[x, u, k] + values[succ[x, u, k]]
            q += lo[x, u, k] * wk
            mass -= lo[x, u, k]
            j = m  # insertion by decreasing value, stable
            while j > 0 and w[j - 1] < wk:
                w[j] = w[j - 1]
                order[j] = order[j - 1]
                j -= 1
            w[j] = wk
            order[j] = k
            m += 1
    if m == 0:  # (a row without any allowed slot: cannot happen on a prior's support)
        return -np.inf
    for j in range(m):
        if mass <= 0.0:
            break
        k = order[j]
        add = min(mass, hi[x, u, k] - lo[x, u, k])
        q += add * w[j]
        mass -= add
    return q


@njit(cache=True, error_model="numpy")
def extended_value_iteration(C, N, allowed, R, succ, nsucc, t_k, delta, values, pi,
                             max_sweeps, bernstein, ties_of):
    """The optimistic policy of an episode starting at step ``t_k`` (1-based) from the
    counts ``C`` (on the rows ``succ``, ``nsucc``) and their totals ``N``: damped extended
    value iteration from ``values`` (updated in place, shifted to a minimum of 0) until
    the span of :math:`Tu - u` is below :math:`1/\\sqrt{t_k}`; ``pi`` receives the greedy
    action of every state in the last sweep (exact ties broken uniformly at random by
    numba's generator) and ``ties_of`` how many actions tied there for it (1: none).
    ``bernstein``: UCRL2-B's per-slot intervals instead of the L1 ball. Returns
    ``(sweeps, converged)``."""
    nX, nU, K = C.shape
    S, A = nX, nU
    logterm = math.log(2.0 * A * t_k / delta)
    d = np.empty((nX, nU))
    for x in range(nX):
        for u in range(nU):
            d[x, u] = math.sqrt(14.0 * S * logterm / max(1, N[x, u]))
    if bernstein:
        plo = np.zeros((nX, nU, K))
        phi = np.zeros((nX, nU, K))
        bernstein_intervals(C, N, nsucc, S, A, delta, plo, phi)
    else:
        plo = phi = np.empty((0, 0, 0))
    w = np.empty(K)
    eps = 1.0 / math.sqrt(t_k)
    order = np.empty(K, dtype=np.int64)
    Tu = np.empty(nX)
    sweeps = 0
    while True:
        lo = np.inf
        hi = -np.inf
        for x in range(nX):
            best = -np.inf
            bu = 0
            for u in range(nU):
                if bernstein:
                    q = optimistic_value_intervals(x, u, plo, phi, allowed, R, succ, nsucc,
                                                   values, order, w)
                else:
                    q = optimistic_value(x, u, C, N, allowed, R, succ, nsucc, d[x, u],
                                         values, order)
                if q > best:
                    best = q
                    bu = u
            pi[x] = bu
            Tu[x] = best
            diff = best - values[x]
            if diff < lo:
                lo = diff
            if diff > hi:
                hi = diff
        sweeps += 1
        if hi - lo < eps:
            converged = True
            break
        if sweeps >= max_sweeps:
            converged = False
            break
        m = np.inf
        for x in range(nX):
            values[x] += EVI_DAMPING * (Tu[x] - values[x])
            if values[x] < m:
                m = values[x]
        for x in range(nX):
            values[x] -= m
    # the policy: greedy in the last sweep, exact ties broken uniformly at random
    for x in range(nX):
        best = -np.inf
        ties = 0
        for u in range(nU):
            if bernstein:
                q = optimistic_value_intervals(x, u, plo, phi, allowed, R, succ, nsucc,
                                               values, order, w)
            else:
                q = optimistic_value(x, u, C, N, allowed, R, succ, nsucc, d[x, u], values,
                                     order)
            if q > best:
                best = q
                ties = 1
                pi[x] = u
            elif q == best:
                ties += 1
                if np.random.randint(0, ties) == 0:
                    pi[x] = u
        ties_of[x] = ties
    m = np.inf
    for x in range(nX):
        if values[x] < m:
            m = values[x]
    for x in range(nX):
        values[x] -= m
    return sweeps, converged


@njit(cache=True, error_model="numpy")
def _trajectory(P, R, Rstd, gaussian, initial_state, gamma, horizon, episode_length, seed,
                succ, nsucc, theta, Rm, delta, max_sweeps, rewards, bernstein, rr):
    """One interaction of UCRL2 on the test MDP ``P`` on the agent's rows: returns
    (discounted return, [policies, evi_sweeps, evi_capped, tied_steps]): UCRL2's episodes
    begun (each an extended value iteration), their sweeps, those stopped by the cap, and
    the steps whose action tied with another under the optimistic values.
    ``bernstein``: UCRL2-B's confidence sets."""
    np.random.seed(seed)
    nX, nU, K = P.shape
    C = np.zeros((nX, nU, K))
    N = np.zeros((nX, nU), dtype=np.int64)  # N_k: visits before the current episode
    v = np.zeros((nX, nU), dtype=np.int64)  # v_k: visits in the current episode
    allowed = theta > 0.0
    values = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    ties = np.ones(nX, dtype=np.int64)
    counters = np.zeros(4, dtype=np.int64)
    learn = rr[0] != 0.0  # rewards unknown: empirical means and their confidence width
    emp = empirical_init(nX, nU)
    if learn:
        Rm = Rm.copy()
    x = env_reset(initial_state, nX)
    ret = 0.0
    disc = 1.0
    started = False
    for t in range(horizon):
        u = pi[x]
        if not started or v[x, u] >= max(1, N[x, u]):
            for z in range(nX):
                for a in range(nU):
                    N[z, a] += v[z, a]
                    v[z, a] = 0
            if learn:
                ucrl2_rewards(emp, nsucc, rr[1], rr[2],
                              math.log(2.0 * nX * nU * (t + 1) / delta), Rm)
            sweeps, converged = extended_value_iteration(C, N, allowed, Rm, succ, nsucc,
                                                         t + 1, delta, values, pi,
                                                         max_sweeps, bernstein, ties)
            counters[0] += 1
            counters[1] += sweeps
            if not converged:
                counters[2] += 1
            started = True
            u = pi[x]
        if ties[x] > 1:
            counters[3] += 1
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(R, Rstd, gaussian, x, u, k)
        rewards[t] = r
        ret += disc * r
        disc *= gamma
        v[x, u] += 1
        if learn:
            empirical_update(emp, x, u, r)
        C[x, u, k] += 1.0
        allowed[x, u, k] = True
        x = succ[x, u, k]
        if episode_length > 0 and (t + 1) % episode_length == 0:
            x = env_reset(initial_state, nX)
    return ret, counters


#: Colosseum's discount of UCRL2's current policy (``UCRL2Continuous.
#: current_optimal_stochastic_policy``: ``discounted_value_iteration``'s default).
EMPIRICAL_GAMMA = 0.99
#: Value iteration's stopping rule for it (sup-norm change below this times
#: max(1, sup |V|), or EMPIRICAL_MAX_SWEEPS sweeps; Colosseum: 1e-3 in float32).
EMPIRICAL_TOLERANCE = 1e-10
EMPIRICAL_MAX_SWEEPS = 100_000


@njit(cache=True, error_model="numpy")
def _observed_slots(Cs, N, Rm, Rs, known, succ, nsucc):
    """The observed slots of every tried pair, in slot order, as compact arrays: pair
    i = x nU + u holds entries ``ptr[i]:ptr[i+1]`` of the successor ``pk``, the weight
    ``pc`` (the count over the pair's visits, as :func:`_empirical_q` computes it) and
    the reward ``pr`` (known: the slot's; else the pair's estimate)."""
    nX, nU = N.shape
    ptr = np.zeros(nX * nU + 1, dtype=np.int64)
    m = 0
    for x in range(nX):
        for u in range(nU):
            if N[x, u] != 0:
                for k in range(nsucc[x, u]):
                    if Cs[x, u, k] > 0.0:
                        m += 1
            ptr[x * nU + u + 1] = m
    pk = np.empty(m, dtype=np.int64)
    pc = np.empty(m)
    pr = np.empty(m)
    m = 0
    for x in range(nX):
        for u in range(nU):
            n = N[x, u]
            if n != 0:
                for k in range(nsucc[x, u]):
                    c = Cs[x, u, k]
                    if c > 0.0:
                        pk[m] = succ[x, u, k]
                        pc[m] = c / n
                        pr[m] = Rm[x, u, k] if known else Rs[x, u]
                        m += 1
    return ptr, pk, pc, pr


@njit(cache=True, error_model="numpy", inline="always")
def _empirical_q_obs(N, ptr, pk, pc, pr, V, meanV, rmax, x, u, nU, gamma):
    """:func:`_empirical_q` on the compact observed slots (:func:`_observed_slots`):
    the same terms in the same order, so the same value."""
    if N[x, u] == 0:  # Colosseum's initial model: uniform over all states, largest reward
        return rmax + gamma * meanV
    q = 0.0
    i = x * nU + u
    for m in range(ptr[i], ptr[i + 1]):
        q += pc[m] * (pr[m] + gamma * V[pk[m]])
    return q


@njit(cache=True, error_model="numpy")
def empirical_policy(Cs, N, Rm, Rs, known, succ, nsucc, rmax, gamma, V, W, pol, q):
    """``pol`` (nX, nU) ← Colosseum's current policy of UCRL2: the greedy policy (exact
    ties uniform) of the γ-discounted values of the empirical model as of the current
    episode's start (the counts ``Cs`` on the slots, ``N`` per pair; rewards the known
    ``Rm`` or the empirical means ``Rs``; a pair never tried: every state alike and the
    largest reward ``rmax``), by value iteration from ``V`` (warm start; left with the
    values). Returns the sweeps.

    The sweeps run over the observed slots only (gathered once per call, in slot order:
    the same sums as over every slot, whose unobserved terms are skipped), so a sweep
    costs the observed transitions, not the layout (the full S × A × S one of Colosseum's
    form)."""
    nX, nU = N.shape
    ptr, pk, pc, pr = _observed_slots(Cs, N, Rm, Rs, known, succ, nsucc)
    sweeps = 0
    while sweeps < EMPIRICAL_MAX_SWEEPS:
        sweeps += 1
        meanV = V.sum() / nX
        diff = 0.0
        big = 1.0
        for x in range(nX):
            best = -np.inf
            for u in range(nU):
                val = _empirical_q_obs(N, ptr, pk, pc, pr, V, meanV, rmax, x, u, nU,
                                       gamma)
                if val > best:
                    best = val
            W[x] = best
            d = abs(best - V[x])
            if d > diff:
                diff = d
            if abs(best) > big:
                big = abs(best)
        V[:] = W
        if diff <= EMPIRICAL_TOLERANCE * big:
            break
    meanV = V.sum() / nX
    for x in range(nX):
        best = -np.inf
        for u in range(nU):
            q[u] = _empirical_q_obs(N, ptr, pk, pc, pr, V, meanV, rmax, x, u, nU, gamma)
            if q[u] > best:
                best = q[u]
        n = 0
        for u in range(nU):
            if q[u] == best:
                n += 1
        for u in range(nU):
            pol[x, u] = 1.0 / n if q[u] == best else 0.0
    return sweeps


@njit(cache=True, error_model="numpy")
def _trajectory_ind(P, R, Rstd, gaussian, initial_state, gamma, horizon, episode_length,
                    seed, succ, nsucc, theta, Rm, delta, max_sweeps, rewards, bernstein, L,
                    rbar, refs_s, refs_w, mu0, Hr, opt, worst, si, sf, rr):
    """:func:`_trajectory` with Colosseum's indicators every ``L`` steps
    (:mod:`._indicators`), the current policy being Colosseum's (its UCRL2's
    ``current_optimal_stochastic_policy``): the greedy policy of the empirical model as
    of the current episode's start (:func:`empirical_policy`), not the optimistic one the
    agent acts with, evaluated on the test MDP ``P`` (expected rewards ``rbar``; both on
    the agent's rows): over the ``Hr``-step episodes of an episodic test set, else its
    gain from the current state. The same trajectory (the evaluation draws nothing)."""
    np.random.seed(seed)
    nX, nU, K = P.shape
    C = np.zeros((nX, nU, K))
    N = np.zeros((nX, nU), dtype=np.int64)
    v = np.zeros((nX, nU), dtype=np.int64)
    allowed = theta > 0.0
    values = np.zeros(nX)
    pi = np.zeros(nX, dtype=np.int64)
    ties = np.ones(nX, dtype=np.int64)
    counters = np.zeros(4, dtype=np.int64)
    learn = rr[0] != 0.0  # rewards unknown: as _trajectory
    emp = empirical_init(nX, nU)
    Rk = Rm  # (the known rewards: the empirical model's when rewards are known)
    if learn:
        Rm = Rm.copy()
    # Colosseum's current policy: the empirical model as of the episode's start
    Cs = np.zeros((nX, nU, K))
    Rs = np.zeros((nX, nU))
    pol = np.zeros((nX, nU))
    Ve = np.zeros(nX)
    We = np.zeros(nX)
    qe = np.zeros(nU)
    episodic = episode_length > 0
    acc, hist = ind_alloc(horizon, L)
    V0 = np.zeros(nX)
    Vc = np.zeros(nX)
    x = env_reset(initial_state, nX)
    s = x
    ret = 0.0
    disc = 1.0
    started = False
    stale = True  # a new episode began since Colosseum's current policy was computed
    for t in range(horizon + 1):
        final = t == horizon
        if not final:
            u = pi[x]
            if not started or v[x, u] >= max(1, N[x, u]):
                stale = True
                for z in range(nX):
                    for a in range(nU):
                        N[z, a] += v[z, a]
                        v[z, a] = 0
                if learn:
                    ucrl2_rewards(emp, nsucc, rr[1], rr[2],
                                  math.log(2.0 * nX * nU * (t + 1) / delta), Rm)
                Cs[:] = C
                for z in range(nX):
                    for a in range(nU):
                        Rs[z, a] = empirical_mean(emp, z, a, rr[2])
                sweeps, converged = extended_value_iteration(C, N, allowed, Rm, succ, nsucc,
                                                             t + 1, delta, values, pi,
                                                             max_sweeps, bernstein, ties)
                counters[0] += 1
                counters[1] += sweeps
                if not converged:
                    counters[2] += 1
                started = True
                u = pi[x]
            if ties[x] > 1:
                counters[3] += 1
            k = env_step_rows(P, nsucc, x, u)
            r = env_reward_rows(R, Rstd, gaussian, x, u, k)
            rewards[t] = r
            ret += disc * r
            disc *= gamma
            v[x, u] += 1
            if learn:
                empirical_update(emp, x, u, r)
            C[x, u, k] += 1.0
            allowed[x, u, k] = True
            x = succ[x, u, k]
        if final or is_row(t, L):
            # the empirical model as of the episode's start: solved (and, episodic, its
            # policy's values) once per episode, not at each of its rows
            fresh = False
            if needs_evaluation(acc) and stale:
                empirical_policy(Cs, N, Rk, Rs, not learn, succ, nsucc, rr[2],
                                 EMPIRICAL_GAMMA, Ve, We, pol, qe)
                stale = False
                fresh = True
            policy_row(acc, hist, t, horizon, L, final, episodic, fresh, succ, nsucc, P,
                       rbar, pol, x, s, refs_s, refs_w, mu0, Hr, opt, worst, V0, Vc, si, sf)
        x, s = episode_start(t, final, episode_length, initial_state, nX, x, s)
    return ret, counters, acc


#: Colosseum's benchmark configuration of its ``UCRL2Continuous``
#: (``colosseum/benchmark/cached_hyperparameters/agent_configs/UCRL2Continuous.gin``:
#: ``bound_type_p='bernstein'``, ``alpha_p``, ``alpha_r``), as this agent's parameters:
#: ``--param form=colosseum`` (``alpha_p`` and ``alpha_r`` default to these).
COLOSSEUM_BENCHMARK: dict[str, Any] = {
    "form": "colosseum",
    "alpha_p": 0.9883750006754203,
    "alpha_r": 0.10294276593728004,
}
#: Colosseum's extended value iteration: its stopping threshold on the span of
#: :math:`u_{i+1} - u_i` and its largest number of sweeps (``DP_MAX_ITERATION``), after
#: which it gives up and the agent keeps its previous Q-values.
COLOSSEUM_EVI_EPSILON = 1e-3
COLOSSEUM_EVI_MAX_SWEEPS = 1_000_000


@njit(cache=True, error_model="numpy")
def colosseum_max_proba(p, order, beta, out):
    """Colosseum's ``_max_proba`` (``dynamic_programming/infinite_horizon.py``): ``out``
    (float32, S) ← the optimistic row of the empirical row ``p`` (float32, S) in the L1
    ball of radius ``beta`` (its width of next state 0, as Colosseum indexes it), the
    states ``order``-ed by increasing value: ``min(1, p(best) + beta/2)`` on the last
    one, the excess taken from the first ones with positive mass."""
    S = p.shape[0]
    best = order[S - 1]
    min1 = min(1.0, np.float64(p[best]) + beta / 2.0)
    for y in range(S):
        out[y] = 0.0
    if min1 == 1.0:
        out[best] = 1.0
        return
    for y in range(S):
        out[y] = p[y]
    out[best] = min1
    s = 1.0 - np.float64(p[best]) + min1
    s2 = s
    for i in range(S):
        y = order[i]
        proba = p[y]
        if proba == 0.0:
            continue
        max1 = max(0.0, 1.0 - s + np.float64(proba))
        s2 += max1 - np.float64(proba)
        out[y] = max1
        s = s2
        if s <= 1.0:
            break


@njit(cache=True, error_model="numpy")
def colosseum_evi(Phat, est, beta_r, beta_p, rmax, eps, max_sweeps, Q):
    """Colosseum's ``extended_value_iteration`` in its float32 arithmetic: undamped
    sweeps from u = 0, the states ordered by ``np.argsort`` of the last values, until
    the span of :math:`u_{i+1} - u_i` is below ``eps``; ``Q`` (float32) receives the
    last sweep's Q-values if it converged. ``beta_r`` (S, A), ``beta_p`` (S, A): the
    widths. Returns the sweeps, negative when it did not converge (Colosseum's None)."""
    nX, nU = est.shape
    Qn = np.zeros((nX, nU), dtype=np.float32)
    u1 = np.zeros(nX, dtype=np.float32)
    u2 = np.zeros(nX, dtype=np.float32)
    order = np.arange(nX)
    vec = np.zeros(nX, dtype=np.float32)
    r32 = np.float32(rmax)
    for sweep in range(max_sweeps):
        for x in range(nX):
            first = True
            for u in range(nU):
                colosseum_max_proba(Phat[x, u], order, beta_p[x, u], vec)
                vec[x] -= np.float32(1.0)
                r_opt = min(np.float64(r32), np.float64(est[x, u]) + beta_r[x, u])
                v = r_opt + np.float64(np.dot(vec, u1))
                Qn[x, u] = v
                w = v + np.float64(u1[x])
                if first or w > u2[x] or abs(w - u2[x]) < eps:
                    u2[x] = np.float32(w)
                first = False
        diff = u2 - u1
        if diff.max() - diff.min() < eps:
            Q[:] = Qn
            return sweep + 1
        u1 = u2
        u2 = np.empty(nX, dtype=np.float32)
        order = np.argsort(u1)
    return -max_sweeps


@njit(cache=True, error_model="numpy")
def colosseum_widths(Phat, Ntot, it, alpha_p, alpha_r, rmax, beta_r, beta_p):
    """Colosseum's benchmark widths (``UCRL2Continuous.beta_r``, Chernoff, and
    ``beta_p``, Bernstein, of next state 0) at its iteration count ``it``, with its
    :math:`\\delta = 1/\\sqrt{it + 1}`."""
    nX, nU = Ntot.shape
    delta = 1.0 / math.sqrt(it + 1)
    lv = math.log(2.0 * nX * nU * (it + 1) / delta)
    for x in range(nX):
        for u in range(nU):
            n = max(1, Ntot[x, u])
            nm1 = max(1, Ntot[x, u] - 1)
            beta_r[x, u] = alpha_r * (rmax * math.sqrt(3.5 * lv / n))
            p0 = Phat[x, u, 0]
            var = np.float32(np.float32(14.0) * np.float32(p0 * (np.float32(1.0) - p0)))
            a = np.float64(var) / n * lv
            b = 49.0 / (3.0 * nm1) * lv
            beta_p[x, u] = math.sqrt(alpha_p) * math.sqrt(a) + alpha_p * b


@njit(cache=True, error_model="numpy")
def _colosseum_episode_end(Phat, est, Nc, Ntot, nu, ep_x, ep_u, ep_r, n_ep, it, alpha_p,
                           alpha_r, rmax, max_sweeps, beta_r, beta_p, Q, counters, ind,
                           Cs, Ns, Rs):
    """Colosseum's ``episode_end_update``: the optimistic Q-values from the current
    counts ``Ntot`` and the model (``Phat``, ``est``) as last updated, with the
    iteration count ``it`` as last updated; then its ``model_update`` with the episode's
    ``n_ep`` steps (``ep_x``, ``ep_u``, ``ep_r``): its reward estimator, the empirical
    rows of the pairs played, ``it`` + ``n_ep`` (returned)."""
    nX, nU, K = Phat.shape
    colosseum_widths(Phat, Ntot, it, alpha_p, alpha_r, rmax, beta_r, beta_p)
    sw = colosseum_evi(Phat, est, beta_r, beta_p, rmax, COLOSSEUM_EVI_EPSILON,
                       max_sweeps, Q)
    counters[0] += 1
    counters[1] += abs(sw)
    if sw < 0:
        counters[2] += 1
    scale = np.zeros((nX, nU), dtype=np.int64)
    for i in range(n_ep):
        z, a, r = ep_x[i], ep_u[i], ep_r[i]
        it += 1
        if scale[z, a] == 0:
            scale[z, a] = Ntot[z, a]  # (Colosseum's scale_f: the pair's count, now)
        scale[z, a] += 1
        f = np.float64(scale[z, a])
        est[z, a] = np.float64(est[z, a]) * (f / (f + 1.0))
        est[z, a] = np.float64(est[z, a]) + r / (f + 1.0)
    for z in range(nX):
        for a in range(nU):
            if nu[z, a] > 0:
                for k in range(K):
                    Phat[z, a, k] = Nc[z, a, k] / Ntot[z, a]
                if ind:
                    for k in range(K):
                        Cs[z, a, k] = Nc[z, a, k]
                    Ns[z, a] = Ntot[z, a]
                Rs[z, a] = est[z, a]
                nu[z, a] = 0
    return it


@njit(cache=True, error_model="numpy")
def _trajectory_colosseum(P, R, Rstd, gaussian, initial_state, gamma, horizon,
                          episode_length, seed, alpha_p, alpha_r, rmax, max_sweeps,
                          rewards, trace, L, rbar, refs_s, refs_w, mu0, Hr, opt, worst,
                          si, sf):
    """Colosseum's benchmark ``UCRL2Continuous`` (the module docstring, ``form=
    colosseum``) on the test MDP ``P`` on the full layout (slot k is state k). Returns
    (discounted return, [policies, evi_sweeps, evi_capped, tied_steps], indicators'
    accumulator); with ``L`` > 0 Colosseum's indicators every ``L`` steps of its
    current policy (:func:`empirical_policy` of its model, solved again only once the
    model changed, at its episode's end), as :func:`_trajectory_ind`.
    ``trace`` (T, 3) int64, if it has T rows, receives each step's state, action and
    next state (tests)."""
    np.random.seed(seed)
    nX, nU, K = P.shape
    Nc = np.zeros((nX, nU, K), dtype=np.int64)  # Colosseum's N
    Ntot = np.zeros((nX, nU), dtype=np.int64)
    nu = np.zeros((nX, nU), dtype=np.int64)  # this episode's visits
    Phat = np.full((nX, nU, K), np.float32(1.0) / np.float32(nX), dtype=np.float32)
    est = np.full((nX, nU), np.float32(rmax), dtype=np.float32)
    beta_r = np.zeros((nX, nU))
    beta_p = np.zeros((nX, nU))
    Q = np.zeros((nX, nU), dtype=np.float32)
    ep_x = np.zeros(horizon + 1, dtype=np.int64)
    ep_u = np.zeros(horizon + 1, dtype=np.int64)
    ep_r = np.zeros(horizon + 1)
    n_ep = 0
    it = 0
    counters = np.zeros(4, dtype=np.int64)
    record = trace.shape[0] >= horizon
    # Colosseum's current policy: its model (P, estimated rewards) as last updated
    ind = L > 0
    Cs = np.zeros((nX, nU, K)) if ind else np.zeros((0, 0, 0))
    Ns = np.zeros((nX, nU), dtype=np.int64)
    Rs = np.zeros((nX, nU))
    pol = np.zeros((nX, nU))
    Ve = np.zeros(nX)
    We = np.zeros(nX)
    qe = np.zeros(nU)
    succ = np.zeros((nX, nU, K), dtype=np.int64)
    nsucc = np.full((nX, nU), K, dtype=np.int64)
    for x in range(nX):
        for u in range(nU):
            for k in range(K):
                succ[x, u, k] = k
    episodic = episode_length > 0
    acc, hist = ind_alloc(horizon, L)
    V0 = np.zeros(nX)
    Vc = np.zeros(nX)
    x = env_reset(initial_state, nX)
    s = x
    ret = 0.0
    disc = 1.0
    # before_start_interacting: an episode_end_update
    it = _colosseum_episode_end(Phat, est, Nc, Ntot, nu, ep_x, ep_u, ep_r, 0, it,
                                alpha_p, alpha_r, rmax, max_sweeps, beta_r, beta_p, Q,
                                counters, ind, Cs, Ns, Rs)
    stale = True  # Colosseum's current policy not computed since its model last changed
    for t in range(horizon + 1):
        final = t == horizon
        if not final:
            # the greedy action of Colosseum's Q-values, exact ties uniform
            m = Q[x, 0]
            for a in range(1, nU):
                if Q[x, a] > m:
                    m = Q[x, a]
            nt = 0
            for a in range(nU):
                if Q[x, a] == m:
                    nt += 1
            j = np.random.randint(0, nt) if nt > 1 else 0
            u = 0
            for a in range(nU):
                if Q[x, a] == m:
                    if j == 0:
                        u = a
                        break
                    j -= 1
            if nt > 1:
                counters[3] += 1
            k = env_step_rows(P, nsucc, x, u)
            r = env_reward_rows(R, Rstd, gaussian, x, u, k)
            rewards[t] = r
            ret += disc * r
            disc *= gamma
            if record:
                trace[t, 0] = x
                trace[t, 1] = u
                trace[t, 2] = k
            # step_update, then is_episode_end
            Nc[x, u, k] += 1
            Ntot[x, u] += 1
            nu[x, u] += 1
            ep_x[n_ep] = x
            ep_u[n_ep] = u
            ep_r[n_ep] = r
            n_ep += 1
            end = nu[x, u] >= max(1, Ntot[x, u] - nu[x, u])
            x = k
            if end:
                it = _colosseum_episode_end(Phat, est, Nc, Ntot, nu, ep_x, ep_u, ep_r,
                                            n_ep, it, alpha_p, alpha_r, rmax, max_sweeps,
                                            beta_r, beta_p, Q, counters, ind, Cs, Ns, Rs)
                n_ep = 0
                stale = True  # Cs, Ns, Rs updated: Colosseum's current policy changed
        if ind and (final or is_row(t, L)):
            # its model changes only at its episode ends (_colosseum_episode_end, where
            # stale is set): solved (and, episodic, its policy's values) once per episode
            fresh = False
            if needs_evaluation(acc) and stale:
                empirical_policy(Cs, Ns, Cs, Rs, False, succ, nsucc, rmax,
                                 EMPIRICAL_GAMMA, Ve, We, pol, qe)
                stale = False
                fresh = True
            policy_row(acc, hist, t, horizon, L, final, episodic, fresh, succ, nsucc, P,
                       rbar, pol, x, s, refs_s, refs_w, mu0, Hr, opt, worst, V0, Vc, si, sf)
        x, s = episode_start(t, final, episode_length, initial_state, nX, x, s)
    return ret, counters, acc


def dense_bytes(nX: int, nU: int) -> int:
    """Memory of UCRL2's arrays on the full layout (a prior with a Dirichlet on every
    next state): per transition of the S×A×S model its successor, prior concentration,
    rewards (the agent's, the test set's mean and spread), counts, the test MDP moved
    onto it, UCRL2-B's two bounds and the indicators' chain (8 bytes each) and the
    allowed flag."""
    return 97 * nX * nU * nX


def _dir_memory_check(prior: Any, why: str = "under a Dirichlet on every next state"
                      ) -> str | None:
    need = dense_bytes(int(prior.n_states), int(prior.n_actions))
    if need > MAX_AGENT_MEMORY_BYTES:
        return (f"{why} its confidence sets hold every "
                f"next state: {need / 2**30:.1f} GB for {prior.n_states} states, above "
                f"{MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


#: The forms of ``form``: Jaksch et al.'s UCRL2 (and UCRL2-B, ``bound``), or Colosseum's
#: benchmark ``UCRL2Continuous``.
FORMS = ("jaksch", "colosseum")
#: The parameters of one form only, with their defaults.
_JAKSCH_ONLY = (("delta", 0.05), ("bound", "l1"))
_COLOSSEUM_ONLY = (("alpha_p", COLOSSEUM_BENCHMARK["alpha_p"]),
                   ("alpha_r", COLOSSEUM_BENCHMARK["alpha_r"]))


def _is_colosseum(params: dict) -> bool:
    return params.get("form", "jaksch") == "colosseum"


def _parameter_check(params: dict) -> str | None:
    """The parameters of the other form, set away from their defaults."""
    col = _is_colosseum(params)
    for name, default in (_JAKSCH_ONLY if col else _COLOSSEUM_ONLY):
        if params.get(name, default) != default:
            if col:
                return (f"{name} applies to form=jaksch only (form=colosseum has "
                        "Colosseum's delta schedule 1/sqrt(t) and its Bernstein bounds)")
            return (f"{name} applies to form=colosseum only (Colosseum's scale of its "
                    "confidence widths)")
    return None


def _refuse_other_forms(params: dict) -> None:
    err = _parameter_check(params)
    if err:
        raise BBRLError(f"ucrl2: {err}")


def _setting_check(params: dict, prior: Any, gamma: float, horizon: int) -> str | None:
    err = _parameter_check(params)
    if err:
        return err
    if _is_colosseum(params):
        return _dir_memory_check(prior, "in Colosseum's form")
    if getattr(prior, "dirichlet_all", None) is not None:
        return _dir_memory_check(prior)
    return None


def agent_setting(prior: Any, ep: Episode, dense: bool = False):
    """The agent's rows: the prior's support joined with the test MDPs' transitions
    (:func:`bbrlcore.agents._layout.setting`); under a prior with a Dirichlet on every
    next state (``+dir<α>``), or ``dense`` (Colosseum's form), the full layout, every
    next state a slot (its concentration α > 0: allowed)."""
    if getattr(prior, "dirichlet_all", None) is None and not dense:
        return setting(prior, ep)
    err = (_dir_memory_check(prior, "in Colosseum's form") if dense
           else _dir_memory_check(prior))
    if err:
        raise BBRLError(f"ucrl2 on {prior.short_name}: {err}")
    return setting(prior, ep, rows.full(int(prior.n_states), int(prior.n_actions)))


def _colosseum_args(prior: Any, params: dict, ep: Episode):
    """The full-layout setting of Colosseum's form (checked: slot k is state k), its
    ``alpha_p``, ``alpha_r`` and the rewards' upper end Colosseum's agent is told."""
    _refuse_other_forms(params)
    st = agent_setting(prior, ep, dense=True)
    nX = int(prior.n_states)
    if st.succ.shape[2] != nX or not np.array_equal(
            st.succ, rows.full(nX, int(prior.n_actions)).succ):
        raise BBRLError(f"ucrl2 on {prior.short_name}: form=colosseum needs the full "
                        "layout (every next state a slot, in order)")
    ap = float(params.get("alpha_p", COLOSSEUM_BENCHMARK["alpha_p"]))
    ar = float(params.get("alpha_r", COLOSSEUM_BENCHMARK["alpha_r"]))
    return st, ap, ar, float(reward_range(prior)[1])


def _make_colosseum_player(prior: Any, params: dict, ep: Episode, log_every: int = 0):
    """The player of ``form=colosseum`` (:func:`_trajectory_colosseum`), with
    Colosseum's indicators every ``log_every`` steps when positive (then ``play``
    returns them too)."""
    st, ap, ar, rmax = _colosseum_args(prior, params, ep)
    R, Rstd = st.R, st.Rstd
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    si, sf = gain_scratch(nsucc)
    no_trace = np.zeros((0, 3), dtype=np.int64)
    req = Request(ep, log_every) if log_every > 0 else None

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None,
             trace: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        tr = no_trace if trace is None else trace
        if req is None:
            nX = Pa.shape[0]
            ret, cnt, _ = _trajectory_colosseum(
                Pa, R, Rstd, gaussian, x0, gamma, horizon, H, int(seed), ap, ar, rmax,
                COLOSSEUM_EVI_MAX_SWEEPS, rewards, tr, 0, np.zeros((nX, Pa.shape[1])),
                np.zeros(nX), np.zeros(nX), np.zeros(nX), 1, 0.0, 0.0, si, sf)
            return float(ret), cnt
        evr = req.evaluator(P)
        rbar = np.ascontiguousarray((Pa * R).sum(axis=2))
        ret, cnt, acc = _trajectory_colosseum(
            Pa, R, Rstd, gaussian, x0, gamma, horizon, H, int(seed), ap, ar, rmax,
            COLOSSEUM_EVI_MAX_SWEEPS, rewards, tr, req.log_every, rbar, *req.refs(evr),
            si, sf)
        return float(ret), cnt, finish(acc, evr, rewards, horizon)

    return play


def make_indicator_player(prior: Any, params: dict, trained: Trained | None, ep: Episode,
                          log_every: int):
    """:func:`make_player`'s player with Colosseum's indicators of Colosseum's current
    policy of UCRL2, the empirical model's greedy policy (:func:`_trajectory_ind`):
    ``play(P, seed, rewards) -> (return, counters, values)``."""
    if _is_colosseum(params):
        return _make_colosseum_player(prior, params, ep, log_every)
    _refuse_other_forms(params)
    st = agent_setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    theta = np.ascontiguousarray(st.theta)
    rp = reward_prior_of(prior)
    rr = np.array([0.0 if rp.known else 1.0, *reward_range(prior)])
    Rm = np.ascontiguousarray(st.Rm) if rp.known else np.zeros_like(st.Rm)
    R, Rstd = st.R, st.Rstd
    delta = float(params["delta"])
    bernstein = params.get("bound", "l1") == "bernstein"
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    req = Request(ep, log_every)
    si, sf = gain_scratch(nsucc)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None):
        rewards = reward_buffer(rewards, horizon)
        evr = req.evaluator(P)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        rbar = np.ascontiguousarray((Pa * R).sum(axis=2))
        ret, cnt, acc = _trajectory_ind(Pa, R, Rstd, gaussian, x0, gamma, horizon, H,
                                        int(seed), succ, nsucc, theta, Rm, delta,
                                        EVI_MAX_SWEEPS, rewards, bernstein,
                                        req.log_every, rbar, *req.refs(evr), si, sf, rr)
        return float(ret), cnt, finish(acc, evr, rewards, horizon)

    return play


def make_player(prior: Any, params: dict, trained: Trained | None, ep: Episode):
    """The player of UCRL2 in the form ``params`` give: ``play(P, seed, rewards) ->
    (return, counters)`` (Colosseum's form: :func:`_trajectory_colosseum`)."""
    if _is_colosseum(params):
        return _make_colosseum_player(prior, params, ep)
    _refuse_other_forms(params)
    st = agent_setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    theta = np.ascontiguousarray(st.theta)
    rp = reward_prior_of(prior)
    rr = np.array([0.0 if rp.known else 1.0, *reward_range(prior)])
    # (unknown rewards: the table is never read; the kernel writes the optimistic ones)
    Rm = np.ascontiguousarray(st.Rm) if rp.known else np.zeros_like(st.Rm)
    R, Rstd = st.R, st.Rstd
    delta = float(params["delta"])
    bernstein = params.get("bound", "l1") == "bernstein"
    gaussian, x0 = int(ep.gaussian), ep.start
    gamma, horizon = float(ep.gamma), int(ep.horizon)
    H = int(getattr(ep, "episode_length", 0) or 0)
    shape = (horizon,)

    def play(P: np.ndarray, seed: int, rewards: np.ndarray | None = None
             ) -> tuple[float, np.ndarray]:
        if not (type(rewards) is np.ndarray and rewards.shape == shape
                and rewards.dtype is FLOAT64):
            rewards = reward_buffer(rewards, horizon)
        Pa = np.ascontiguousarray(st.env(np.asarray(P, dtype=np.float64)))
        ret, cnt = _trajectory(Pa, R, Rstd, gaussian, x0, gamma, horizon, H, int(seed),
                               succ, nsucc, theta, Rm, delta, EVI_MAX_SWEEPS, rewards,
                               bernstein, rr)
        return float(ret), cnt

    return play


def expected_episodes(n_states: int, n_actions: int, horizon: int) -> float:
    """The paper's bound on the number of episodes in T steps (its Proposition 18):
    :math:`S A \\log_2(8T / (SA))` for T ≥ SA, at most T."""
    SA = n_states * n_actions
    if horizon < SA:
        return float(horizon)
    return float(min(horizon, SA * math.log2(8.0 * horizon / SA)))


#: Sweeps of one extended value iteration assumed by :func:`cost_features` (a rough
#: guess: not calibrated).
COST_SWEEPS = 50.0


def cost_features(params: dict, prior, test, gamma: float, horizon: int,
                  episode_length: int = 0) -> dict[str, float]:
    """Rough: the paper's bound on the episodes (:func:`expected_episodes`), each an
    extended value iteration of :data:`COST_SWEEPS` sweeps over every slot of the
    prior's support (under ``+dir<α>`` and in Colosseum's form: of the full layout,
    S²·A), and a step per
    decision. Not calibrated by measurements (the cost model prices it by its steps
    until benchmarks record UCRL2)."""
    n = expected_episodes(prior.n_states, prior.n_actions, horizon)
    B = float(prior.support_layout.nnz)
    if getattr(prior, "dirichlet_all", None) is not None or _is_colosseum(params):
        B = float(prior.n_states) * prior.n_actions * prior.n_states
    return {"trajectory": 1.0, "steps": float(horizon), "rebuilds": n,
            "backups": n * COST_SWEEPS * B}


def _delta_check(v: float) -> str | None:
    return None if 0.0 < v < 1.0 else "must be in (0, 1)"


#: The confidence sets of ``bound``: the paper's L1 ball, or UCRL2-B's per-transition
#: empirical-Bernstein intervals.
BOUNDS = ("l1", "bernstein")


def _bound_check(v: str) -> str | None:
    return None if v in BOUNDS else f"must be one of {', '.join(BOUNDS)}"


def _form_check(v: str) -> str | None:
    return None if v in FORMS else f"must be one of {', '.join(FORMS)}"


def _alpha_check(v: float) -> str | None:
    return None if math.isfinite(v) and v > 0.0 else "must be > 0"


#: Share of a run's steps with tied actions from which :func:`run_note` speaks.
TIE_NOTE_SHARE = 0.9


def run_note(params: dict[str, Any], totals: dict[str, int], n_steps: int) -> str | None:
    """The run's one line when the chosen action tied with another under the optimistic
    values at :data:`TIE_NOTE_SHARE` of its steps or more (else None): the published
    width keeps every pair fully optimistic (a radius of 2 or more) until it has been
    played about :math:`3.5\\,S \\log(2 A t / \\delta)` times, so whole rows of actions
    tie and UCRL2 plays at random; UCRL2-B's sets are tighter.

    >>> run_note({"delta": 0.05, "bound": "l1"}, {"tied_steps": 95}, 100)[:46]
    "UCRL2's action tied with another at 95% of the"
    >>> run_note({"delta": 0.05, "bound": "l1"}, {"tied_steps": 89}, 100) is None
    True
    >>> run_note({"form": "colosseum"}, {"tied_steps": 95}, 100)[:33]
    "UCRL2 in Colosseum's form: its ac"
    """
    tied = int(totals.get("tied_steps", 0))
    if n_steps <= 0 or tied < TIE_NOTE_SHARE * n_steps:
        return None
    share = f"{tied / n_steps:.0%}"
    if params.get("form", "jaksch") == "colosseum":
        return (f"UCRL2 in Colosseum's form: its action tied with another at {share} of "
                "the steps under its optimistic values (exact float32 ties, broken at "
                "random as Colosseum breaks them): Colosseum's widths (alpha_p, alpha_r) "
                "still held those pairs fully optimistic")
    if params.get("bound", "l1") == "bernstein":
        return (f"UCRL2-B's action tied with another at {share} of the steps under its "
                "optimistic values (ties broken at random): its Bernstein sets still held "
                "those pairs fully optimistic; a longer interaction narrows them")
    return (f"UCRL2's action tied with another at {share} of the steps under its "
            "optimistic values (ties broken at random, so it played at random): UCRL2's "
            "published confidence width keeps every pair fully optimistic for about "
            "3.5 S log(2 A t / delta) visits (S states); its tighter variant UCRL2-B "
            "is --param bound=bernstein")


ALGORITHM = Algorithm(
    name="ucrl2",
    params=(Param("delta", float, default=0.05, check=_delta_check,
                  doc="confidence parameter of the transition sets (TabulaRL's 0.05)"),
            Param("bound", str, default="l1", check=_bound_check, id_omits_default=True,
                  doc="confidence sets: l1 (the paper's) or bernstein (UCRL2-B, Fruit et "
                      "al. 2020)"),
            Param("form", str, default="jaksch", check=_form_check, id_omits_default=True,
                  doc="jaksch (Jaksch et al. 2010, the default) or colosseum (Colosseum's "
                      "benchmark UCRL2Continuous)"),
            Param("alpha_p", float, default=COLOSSEUM_BENCHMARK["alpha_p"],
                  check=_alpha_check, id_omits_default=True,
                  doc="form=colosseum: scale of the transitions' widths (its benchmark's "
                      "0.988)"),
            Param("alpha_r", float, default=COLOSSEUM_BENCHMARK["alpha_r"],
                  check=_alpha_check, id_omits_default=True,
                  doc="form=colosseum: scale of the rewards' widths (its benchmark's "
                      "0.103)")),
    make_player=make_player,
    # (not "episodes": the run tables' column of an experiment's episodes, issue 34)
    counters=("policies", "evi_sweeps", "evi_capped", "tied_steps"),
    doc=__doc__ or "",
    run_note=run_note,
    setting_check=_setting_check,
    cost_features=cost_features,
    display_name="UCRL2",
    sparse=True,
    episodic=True,
    indicator_player=make_indicator_player,
    reward_priors=REWARD_PRIORS,
    dirichlet_all=True,
)
