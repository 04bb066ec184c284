r"""BOSS: Best Of Sampled Set (Asmuth, Li, Littman, Nouri & Wingate 2009).

Beyond the paper (Castronovo et al. 2016 has its descendant SBOSS, :mod:`.sboss`): BOSS
fixes the number of sampled models and resamples when a state-action pair becomes known.

The agent keeps the Dirichlet posterior of every transition row, :math:`\alpha(x,u,\cdot)
= \theta(x,u,\cdot) + c(x,u,\cdot)` (prior concentrations plus observed counts), and knows
the reward function (the prior's ``reward``), like the paper's agents.

* **Sampling.** At the trajectory's first decision, and before the first decision after
  a pair becomes known, it draws K models from the posterior (every row independently,
  :math:`P_k(x,u,\cdot) \sim \mathrm{Dir}(\alpha(x,u,\cdot))`, zero concentrations stay
  impossible) and merges them into one MDP with :math:`K n_U` actions: merged action
  :math:`m = u + k\,n_U` moves like action u in sample k and pays the known reward
  :math:`R(x,u,\cdot)`. The merged MDP's value is, state by state, at least that of every
  sample: optimism in the face of uncertainty.
* **Acting.** The merged MDP is solved with the **Guez value iteration** (Jacobi sweeps
  until the Euclidean norm of a sweep's change is at most 1e-4, lowest merged index wins
  ties: the solver of SBOSS and BEB), and the agent plays the real action
  :math:`\pi(x) \bmod n_U` of the best merged action until the next sampling.
* **Known pairs.** A pair is known once it has been **observed B times** (real visits,
  not the prior's pseudo-counts), and a pair becoming known triggers a new sampling: the
  observation that brings its count to exactly B sets the flag (the rule of A. Guez's
  BOSS planner that the original BBRL library ships, ``planners/boss/boss``: count, then
  resample when the count equals B). Each pair triggers at most once, so a trajectory
  samples at most :math:`1 + n_X n_U` times; ``B = 0`` never triggers (no count equals 0
  after an observation): one merged model for the whole trajectory.

With ``K = 1`` the merged model is one posterior sample, and BOSS is PSRL (:mod:`.psrl`)
resampling when a pair becomes known: it then samples and solves exactly like PSRL
(:func:`~._posterior.sample_and_solve`: BEB's solver,
:func:`~bbrlcore.mdp.solvers.guez_policy_iteration_rows`), so ``K = 1, B = 0`` plays exactly PSRL
with one sample per trajectory (``schedule=fixed`` with a period of at least the horizon).
With ``K > 1`` the samples, the sparse merged model (stored over each row's support only)
and its solver are SBOSS's (:func:`~.sboss.build_merged`,
:func:`~.sboss.merged_value_iteration`: warm-started from the previous values, improved
by policy-iteration steps first for models of at most 200 states that
:func:`~bbrlcore.mdp.solvers.lu_affordable` admits). Rows are drawn as
normalised Gamma variates from the kernel's own xoshiro256** generator, seeded by numba's
generator (the package seeds that one with the trajectory's seed). The first solve starts
from the values of the prior's mean model.

The posterior, the samples and the rewards live on the agent's sparse rows
(:mod:`bbrlcore.mdp.rows`: the prior's support joined with the test MDPs' transitions,
``self.layout``): a sampling draws one Gamma variate per sample and transition of
positive concentration, a sweep costs one term per sampled transition, a step a binary
search in the observed row. Models too large for dense LU evaluations
(:func:`~bbrlcore.mdp.solvers.lu_affordable`: :math:`n_X^3` above 200 times the
transitions; never on the paper's problems) are solved by warm-started sweeps alone, to
the same stopping test.

**Cost.** A sampling draws :math:`K \sum_{x,u} |S(x,u)|` Gamma variates (S: the row's
support) and solves a model with :math:`K n_U` actions per state; it happens at most
:math:`1 + n_X n_U` times per trajectory. The counter ``resamples`` records how many (the
first included); the models drawn are ``K × resamples``.

Parameters: ``K`` (int ≥ 1, models per sampling) and ``B`` (int ≥ 0, the visits that make
a pair known), both required. γ < 1 (the value iteration must converge).

At an episode's start (an episodic interaction,
:attr:`~bbrlcore.agents.base.Episode.episode_length` H > 0): nothing but the return to
the initial state (done by the package's loop,
:func:`~bbrlcore.agents.api.trajectory_loop_rows`); the posterior, the merged model and the
known pairs are kept (no resampling is triggered by the episode's start), and it plans
with the test set's γ.

Paper: J. Asmuth, L. Li, M. L. Littman, A. Nouri and D. Wingate, "A Bayesian sampling
approach to exploration in reinforcement learning", UAI 2009.

**A prior that does not know the support** (``+dir<α>``,
:mod:`bbrlcore.mdp.transition_prior`; issue 42): the transition prior is
:math:`\mathrm{Dir}(\alpha, \ldots, \alpha)` over all S next states of every pair, and row
(x, u)'s posterior :math:`\mathrm{Dir}(\alpha + c(x,u,\cdot))`. BOSS then keeps the
posterior, the samples and the rewards **densely**, on the full layout (every next state
a slot of concentration α plus its counts; the rewards the prior's, 0 outside its stored
transitions), so a sampling draws one Gamma variate per state of every row, a sample is
exact in distribution, and the merged model of K samples and its solver are the ones
above, over all S next states. With ``K = 1`` a sampling is PSRL's under the same prior
(:func:`~.psrl.sample_rows_all`, then BEB's solver on the dense sample, warm-started at
first from the prior's dense mean model): ``K = 1, B = 0`` still plays exactly PSRL's
continuing form with one sample per trajectory. Cost per sampling: :math:`K S^2 A`
Gamma variates and a solve over as many transitions; memory :func:`dir_bytes`
(:math:`8 S^2 A (4 + K)` bytes and the (S, S) LU buffer), refused in one line above
16 GB. Measured on DeepSea-10 (102 states), 100 episodes, B = 2: 64 ms a trajectory
under ``UDeepSea-10+dir0.3235`` against 0.7 ms under ``UDeepSea-10`` (K = 1), 286 ms
against 31 ms (K = 3). BOSS has no indicator player (Colosseum's expected indicators
are not available for it, under any prior).

**Rewards.** BOSS merges sampled transition models that pay the prior's rewards; it
needs known rewards, and a prior whose rewards are unknown (``+rbeta``, ``+rnig``:
:mod:`bbrlcore.mdp.reward_prior`) is refused in one line naming it and the prior
(:attr:`~bbrlcore.agents.base.Algorithm.reward_priors`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import njit

from bbrlcore.agents._kernels import env_transition_rows
from bbrlcore.agents._posterior import (
    generator_from_numba,
    lu_buffer,
    posterior_init_rows,
    posterior_update_rows,
    probe_merged_sweeps,
    probe_sample_sweeps,
    sample_and_solve,
    sample_and_solve_merged,
    sampling_setup,
)
from bbrlcore.agents.api import CompiledAgent
from bbrlcore.agents.base import MAX_AGENT_MEMORY_BYTES, Param, at_least_one
from bbrlcore.agents.psrl import full_rows, sample_rows_all, scatter_rows
from bbrlcore.agents.sboss import MAX_SAMPLE_ENTRIES, mean_rows, warm_pi_steps
from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_policy_iteration_rows, lu_affordable

# ctr slots of the per-trajectory state
_RESAMPLE, _RESAMPLES = 0, 1


@njit(cache=True, error_model="numpy")
def _reset(setup):
    succ, nsucc, theta, Rm, V0, pi0, fpar, ipar = setup
    nX, nU, _ = theta.shape
    alpha, visits = posterior_init_rows(theta)
    K = np.full((nX, nU), ipar[0], dtype=np.int64)
    ctr = np.zeros(2, dtype=np.int64)
    ctr[_RESAMPLE] = 1
    one = ipar[0] == 1  # PSRL's sampler and solver: a sampled model and the LU buffer
    Ps = np.zeros_like(theta) if one else np.zeros((1, 1, 1))
    A = lu_buffer(nsucc) if one else np.empty((1, 1))
    return (alpha, visits, succ, nsucc, K, Rm, Ps, V0.copy(), pi0.copy(),
            np.zeros(nX, dtype=np.int64), A, np.empty(nX),
            generator_from_numba(), ctr, fpar, ipar)


@njit(cache=True, error_model="numpy", inline="always")
def _act(state, x):
    alpha, visits, succ, nsucc, K, Rm, Ps, V, pi, act, A, b, rs, ctr, fpar, ipar = state
    if ctr[_RESAMPLE]:
        if ipar[0] == 1 and ipar[3]:  # one sample under +dir: PSRL's dense sampler, solver
            sample_rows_all(alpha, succ, nsucc, 0.0, np.arange(alpha.shape[0]), Ps, rs)
            guez_policy_iteration_rows(Ps, Rm, succ, nsucc, fpar[0], fpar[1], V, pi, A, b)
            act[:] = pi
        elif ipar[0] == 1:  # one sample: PSRL's sampler and solver
            sample_and_solve(alpha, succ, nsucc, Rm, fpar[0], fpar[1], Ps, V, pi, A, b, rs)
            act[:] = pi
        else:
            sample_and_solve_merged(alpha, succ, nsucc, K, Rm, fpar[0], fpar[1], ipar[2], V,
                                    pi, act, rs)
        ctr[_RESAMPLE] = 0
        ctr[_RESAMPLES] += 1
    return act[x]


@njit(cache=True, error_model="numpy", inline="always")
def _observe(state, x, u, y, r):
    alpha, visits, succ, nsucc = state[0], state[1], state[2], state[3]
    ctr, ipar = state[13], state[15]
    posterior_update_rows(alpha, visits, succ, nsucc, x, u, y)
    if visits[x, u] == ipar[1]:  # the pair has just become known
        ctr[_RESAMPLE] = 1


@njit(cache=True, error_model="numpy")
def _counters(state):
    out = np.zeros(1, dtype=np.int64)
    out[0] = state[13][_RESAMPLES]
    return out


# ---------------------------------------------------------------------------------------
# Cost: the kernel's own resampling rule, without the samples and the solves


@njit(cache=True, error_model="numpy")
def simulate_resamples(Pbar, succ, nsucc, initial_state, B, horizon, seed, fixed_policy=True):
    """Samplings in one trajectory, for the cost model: the rule of :func:`_act` and
    :func:`_observe` on the mean test MDP ``Pbar`` (on its sparse rows ``succ``,
    ``nsucc``), the merged model's greedy actions
    replaced by a policy drawn at random at each sampling and kept until the next (like
    the agent's), or (``fixed_policy=False``) by a random action at each step."""
    np.random.seed(seed)
    nX, nU, _ = Pbar.shape
    visits = np.zeros((nX, nU), dtype=np.int64)
    policy = np.zeros(nX, dtype=np.int64)
    x = initial_state if initial_state >= 0 else np.random.randint(0, nX)
    resample = True
    n = 0
    for _t in range(horizon):
        if resample:
            n += 1
            resample = False
            for s in range(nX):
                policy[s] = np.random.randint(0, nU)
        u = policy[x] if fixed_policy else np.random.randint(0, nU)
        y = succ[x, u, env_transition_rows(Pbar, nsucc, x, u, np.random.random())]
        visits[x, u] += 1
        if visits[x, u] == B:
            resample = True
        x = y
    return n


#: Samplings of the probes behind :func:`cost_features` on models too large for LU.
PROBE_SAMPLES = 8

#: Simulated trajectories averaged by :func:`cost_features`.
COST_SIMULATIONS = 4


def expected_resamples(params: dict, test, horizon: int) -> float:
    """Samplings per trajectory (the first included): the rule replayed on the mean test
    MDP, averaged over a few seeds, for two stand-ins of the agent's policy (a policy kept
    between samplings, random actions): the one that samples more (measured, the agent
    lies between the two)."""
    Pbar, lay = mean_rows(test)
    succ, nsucc = lay.succ, lay.nsucc
    return max(
        sum(simulate_resamples(Pbar, succ, nsucc, int(test.initial_state), int(params["B"]),
                               int(horizon), k, fixed)
            for k in range(COST_SIMULATIONS)) / COST_SIMULATIONS
        for fixed in (True, False))


def cost_features(params: dict, prior, test, gamma: float, horizon: int) -> dict[str, float]:
    """Every sampling draws ``K·sum|S(x,u)|`` Gamma variates and solves the merged model
    (warm-started sweeps over the same entries, policy-iteration steps with an nX x nX
    solve where :func:`~bbrlcore.mdp.solvers.lu_affordable`); between samplings a step
    is a transition and a count."""
    n = expected_resamples(params, test, horizon)
    K = int(params["K"])
    lay = prior.support_layout
    nnz = lay.nnz
    nX = prior.n_states
    if getattr(prior, "dirichlet_all", None) is not None:  # (dense samples and solves;
        nnz = nX * prior.n_actions * nX  # the sweeps' probe below stays the support's)
    B = float(nnz)
    out = {"trajectory": 1.0, "steps": float(horizon), "rebuilds": n,
           "entries": n * K * B, "rebuild_states": n * nX * prior.n_actions * K}
    lu_solves = lu_affordable(nX, nnz) if K == 1 else warm_pi_steps(nX, nnz) > 0
    if lu_solves:
        out["solves"] = n * float(nX) ** 3
        return out
    # too large for LU evaluations: the sweeps a warm solve of a sampling takes (memoised)
    from bbrlcore.agents._memo import pure_probe

    args = (np.ascontiguousarray(prior.theta_rows), lay.succ, lay.nsucc)
    Rm = np.ascontiguousarray(prior.reward_rows)
    if K == 1:
        s = pure_probe("psrl-sweeps", probe_sample_sweeps, *args, Rm, float(gamma),
                       GUEZ_TOLERANCE, PROBE_SAMPLES)
    else:
        s = pure_probe("boss-sweeps", probe_merged_sweeps, *args, K, Rm, float(gamma),
                       GUEZ_TOLERANCE, PROBE_SAMPLES)
    out["sweep_backups"] = n * K * B * s
    return out


def _non_negative_int(v: int) -> str | None:
    return None if v >= 0 else "must be an integer >= 0"


def merged_size(prior, K: int) -> int:
    """Probabilities stored by a merged model of K samples at the prior (K per
    transition of the prior's support; under ``+dir<α>`` K per transition of the full
    S×A×S model)."""
    if getattr(prior, "dirichlet_all", None) is not None:
        return int(K) * int(prior.n_states) ** 2 * int(prior.n_actions)
    return int(K) * int(prior.support_layout.nnz)


def dir_bytes(nX: int, nU: int, K: int) -> int:
    """Memory of BOSS under a Dirichlet on every next state (``+dir<α>``): the dense
    prior, posterior, rewards and successors and the K samples (8 bytes each per
    transition of the S×A×S model) and the (S, S) buffer of the LU evaluations."""
    return 8 * nX * nU * nX * (4 + int(K)) + 8 * nX * nX


def _setting_check(params: dict, prior, gamma: float, horizon: int) -> str | None:
    if not gamma < 1.0:
        return "needs a discount factor < 1 (the Guez value iteration would not converge)"
    size = merged_size(prior, int(params["K"]))
    if size > MAX_SAMPLE_ENTRIES:
        return (f"the merged model would hold {size:,} sampled probabilities (limit "
                f"{MAX_SAMPLE_ENTRIES:,}, 8 bytes each): choose a smaller K")
    if getattr(prior, "dirichlet_all", None) is not None:
        need = dir_bytes(int(prior.n_states), int(prior.n_actions), int(params["K"]))
        if need > MAX_AGENT_MEMORY_BYTES:
            return (f"under a Dirichlet on every next state the posterior and the samples "
                    f"are held densely, {need / 2**30:.1f} GB for {prior.n_states} states, "
                    f"above {MAX_AGENT_MEMORY_BYTES / 2**30:.0f} GB")
    return None


class BOSS(CompiledAgent):
    """BOSS as a compiled agent (the module docstring states the algorithm)."""

    name = "boss"
    params = (
        Param("K", int, required=True, check=at_least_one,
              doc="models sampled from the posterior at each sampling"),
        Param("B", int, required=True, check=_non_negative_int,
              doc="observed visits that make a state-action pair known (0: never)"),
    )
    counters = ("resamples",)
    setting_check = staticmethod(_setting_check)
    cost_features = staticmethod(cost_features)
    reset = _reset
    act = _act
    observe = _observe
    counter_values = _counters
    dirichlet_all = True  # (+dir<α>: dense rows, the module docstring)

    def setup(self) -> tuple:
        a_all = getattr(self.prior, "dirichlet_all", None)
        if a_all is None:
            # the merged solver's policy-iteration warm start (LU evaluations): only on
            # models small enough, and dense enough, for them (SBOSS's rule)
            pi_steps = warm_pi_steps(self.n_states, self.layout.nnz)
            ipar = np.array([int(self.p["K"]), int(self.p["B"]), pi_steps, 0],
                            dtype=np.int64)
            return sampling_setup(self, ipar)
        # a Dirichlet on every next state: the prior α on the full layout, the prior's
        # rewards on it (0 outside its stored transitions), as PSRL's dense samples
        nX, nU = self.n_states, self.n_actions
        fsucc, fnsucc = full_rows(nX, nU)
        Rd = scatter_rows(np.ascontiguousarray(self.reward_rows, dtype=np.float64),
                          np.ascontiguousarray(self.layout.succ, dtype=np.int64),
                          np.ascontiguousarray(self.layout.nsucc, dtype=np.int64), nX)
        dense = SimpleNamespace(layout=SimpleNamespace(succ=fsucc, nsucc=fnsucc),
                                theta_rows=np.full((nX, nU, nX), float(a_all)),
                                reward_rows=Rd, gamma=self.gamma)
        ipar = np.array([int(self.p["K"]), int(self.p["B"]),
                         warm_pi_steps(nX, nX * nU * nX), 1], dtype=np.int64)
        return sampling_setup(dense, ipar)


BOSS.__doc__ = __doc__  # what `bbrl agents boss` shows
