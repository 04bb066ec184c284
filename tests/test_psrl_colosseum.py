"""PSRL in Colosseum's form (``--param form=colosseum``, issue 43): bbrl's kernel
(:func:`bbrlcore.agents.psrl_colosseum._trajectory`) against a Python replay of
Colosseum's ``PSRLContinuous`` transcribed from its code (``colosseum/agent/agents/
infinite_horizon/posterior_sampling.py``, ``agent/mdp_models/bayesian_models/
conjugate_{transitions,rewards}.py``, ``dynamic_programming/infinite_horizon.py``,
Colosseum 1.2; not imported), fed the kernel's transitions and rewards and drawing the
kernel's random numbers (:class:`KernelDraws`, the kernel's documented draw order, in
place of Colosseum's ``RandomState`` streams): every action is one of the replay's
greedy ones, the episodes agree, and Colosseum's indicators are those of the replayed
MAP model. Its constants, the reward tile quirk, its parameters, and bbrl's form kept.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from bbrlcore import agents
from bbrlcore.agents import _rng, psrl
from bbrlcore.agents import psrl_colosseum as pc
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.protocol.test_sets import new_test_set
from test_indicator_runs import evaluator, expected, same

# ---------------------------------------------------------------------------------------
# Colosseum's code, transcribed (its numba functions verbatim; DP_MAX_ITERATION = 1e6)

DP_MAX_ITERATION = int(1e6)


@numba.njit(cache=True)
def _discounted_value_iteration(T, R, gamma=0.99, epsilon=1e-3):
    n_states, n_actions, _ = T.shape
    gamma = np.float32(gamma)

    V = np.zeros(n_states, dtype=np.float32)
    Q = np.zeros((n_states, n_actions), dtype=np.float32)
    for _ in range(DP_MAX_ITERATION):
        V_old = V.copy()
        for s in range(n_states):
            Q[s] = R[s] + gamma * T[s] @ V
            V[s] = Q[s].max()
        diff = np.abs(V_old - V).max()
        if diff < epsilon:
            return Q, V
    raise RuntimeError("DynamicProgrammingMaxIterationExceeded")


@numba.njit(cache=True)
def _dot_coo_ndarray(rows, cols, data, array2, n_rows):
    # pydata sparse's COO x ndarray product (its numba kernel): the nonzeros in order,
    # accumulated into the float32 output
    out = np.zeros(n_rows, dtype=np.float32)
    for i in range(data.shape[0]):
        out[rows[i]] += data[i] * array2[cols[i]]
    return out


def _discounted_value_iteration_sparse(T, R, gamma=0.99, epsilon=1e-3):
    # T @ V of a COO (S, K, S) array: sparse.COO(T) keeps the nonzeros in C order
    n_states, n_actions, _ = T.shape
    gamma = np.float32(gamma)
    nz = np.nonzero(T)
    rows = (nz[0] * n_actions + nz[1]).astype(np.int64)
    cols = nz[2].astype(np.int64)
    data = T[nz]

    V = np.zeros(n_states, dtype=np.float32)
    for _ in range(DP_MAX_ITERATION):
        V_old = V.copy()
        TV = _dot_coo_ndarray(rows, cols, data, V.reshape(-1),
                              n_states * n_actions).reshape(n_states, n_actions)
        Q = R + gamma * TV
        V = Q.max(1, keepdims=True)
        diff = np.abs(V_old.squeeze() - V.squeeze()).max()
        if diff < epsilon:
            return Q, V.squeeze()
    raise RuntimeError("DynamicProgrammingMaxIterationExceeded")


def discounted_value_iteration(T, R, sparse_n_states_threshold=300 * 3 * 300,
                               sparse_nnz_per_threshold=0.2):
    if T.size > sparse_n_states_threshold:
        if np.count_nonzero(T) / T.size < sparse_nnz_per_threshold:
            return _discounted_value_iteration_sparse(T, R)
    return _discounted_value_iteration(T, R)


class KernelDraws:
    """Colosseum's three ``RandomState`` streams replaced by the kernel's one generator
    (:func:`~bbrlcore.agents.psrl_colosseum.model_generator` of the trajectory's seed),
    each call drawing as NumPy's method does (``gamma(shape, scale) = scale *
    standard_gamma(shape)``, ``normal(loc, scale) = loc + scale * z``) in C order."""

    def __init__(self, seed):
        self.rs = pc.model_generator(seed)

    def standard_gamma(self, shape, size):
        a = np.broadcast_to(np.asarray(shape, dtype=np.float64), size)
        return np.array([_rng.rng_gamma(self.rs, float(v)) for v in a.ravel()]
                        ).reshape(size)

    def randint(self, n):
        return int(_rng.rng_randint(self.rs, n))

    def gamma(self, shape, scale):
        shape = np.asarray(shape, dtype=np.float64)
        g = self.standard_gamma(shape, shape.shape)
        return np.asarray(scale, dtype=np.float64) * g

    def normal(self, loc, scale, size):
        z = np.array([_rng.rng_normal(self.rs) for _ in range(int(np.prod(size)))]
                     ).reshape(size)
        return np.asarray(loc, dtype=np.float64) + np.asarray(scale, np.float64) * z


class M_DIR:
    def __init__(self, S, A, rng):
        self.n_states, self.n_actions = S, A
        self._rng = rng
        self.hyper_params = np.tile([1.0 / S], (S, A, 1)).astype(np.float32)
        self.hyper_params = np.tile(self.hyper_params, (1, 1, S))

    def update_single_transition(self, s, a, x):
        c = np.zeros(self.n_states, dtype=np.int64)
        c[x] = 1
        self.hyper_params[s, a] += np.array([c]).sum(0)

    def _sample(self, hyper_params, n):
        r = (self._rng.standard_gamma(hyper_params, (n, *hyper_params.shape))
             .astype(np.float32).squeeze())
        return r / (1e-5 + r.sum(-1, keepdims=True))

    def sample(self, n=1):
        r = self._sample(self.hyper_params.reshape(self.n_states * self.n_actions, -1), n)
        return r.reshape((self.n_states, self.n_actions, -1))

    def sample_sa(self, sa):
        return self._sample(self.hyper_params[sa], 1)

    def get_map_estimate(self):
        return self.hyper_params / self.hyper_params.sum(-1, keepdims=True)


class N_NIG:
    def __init__(self, S, A, prms, rng):
        self.n_states, self.n_actions = S, A
        self._rng = rng
        self.hyper_params = np.tile(prms, (S, A, 1)).astype(np.float32)
        for i in range(S):
            for j in range(A):
                mu, n_mu, tau, n_tau = self.hyper_params[i, j]
                self.hyper_params[i, j] = (mu, n_mu, n_tau * 0.5, (0.5 * n_tau) / tau)

    def update_single_transition(self, s, a, r):
        # update_sa(s, a, [r]) in NumPy 1's arithmetic (Colosseum's): float32 scalars
        # meeting Python numbers give float64, float32 with float32 stays float32
        rs = [r]
        (mu0, lambda0, alpha0, beta0) = self.hyper_params[s, a]
        n = len(rs)
        y_bar = np.mean(rs)
        lambda1 = np.float64(lambda0) + n
        mu1 = (np.float64(lambda0 * mu0) + n * y_bar) / lambda1
        alpha1 = np.float64(alpha0) + (n * 0.5)
        ssq = n * np.var(rs)
        prior_disc = np.float64(lambda0) * n * ((y_bar - np.float64(mu0)) ** 2) / lambda1
        beta1 = np.float64(beta0) + 0.5 * (ssq + prior_disc)
        self.hyper_params[s, a] = (mu1, lambda1, alpha1, beta1)

    def sample(self, n=1):
        (mu, lambda0, alpha, beta) = self.hyper_params.reshape(
            self.n_states * self.n_actions, -1).T
        tau = self._rng.gamma(shape=alpha, scale=1.0 / beta).astype(np.float32)
        var = 1.0 / (lambda0 * tau)
        mean = self._rng.normal(loc=mu, scale=np.sqrt(var), size=(n, *mu.shape)
                                ).astype(np.float32)
        return mean.reshape(self.n_states, self.n_actions).squeeze()

    def get_map_estimate(self):
        return self.hyper_params[:, :, 0]


class PSRLContinuous:
    """Colosseum's agent at its benchmark configuration, its methods as written (the
    actor's greedy choice left to the caller, :meth:`greedy`)."""

    def __init__(self, S, A, T, rng, prms, psi_weight, omega_weight, kappa_weight,
                 eta_weight, p=0.05, max_psi=60, sparse_threshold=300 * 3 * 300,
                 no_optimistic_sampling=False):
        self._n_states, self._n_actions = S, A
        self.no_optimistic_sampling = (no_optimistic_sampling
                                       or (S ** 2 * A) > 6_000_000)
        self.psi = min(max_psi, max(2, int(psi_weight * (S * np.log(S * A / p)))))
        self.omega = omega_weight * np.log(T / p)
        self.kappa = kappa_weight * np.log(T / p)
        self.eta = max(5, min(10 * S, eta_weight * (np.sqrt(T * S / A)
                                                    + 12 * self.omega * S ** 4)))
        self.N = np.zeros((S, A, S), dtype=np.int32)
        self.Q = np.zeros((self.psi, S, A, S), dtype=np.float32)
        self.episode_transition_data = dict()
        self._rng = rng
        self.transitions = M_DIR(S, A, rng)
        self.rewards = N_NIG(S, A, prms, rng)
        self.sparse_threshold = sparse_threshold
        self.episodes = 0
        self.q = None

    def is_episode_end(self, s, a):
        nu_k = len(self.episode_transition_data[s, a])
        N_tau = self.N[s, a].sum()
        return N_tau >= 2 * (N_tau - nu_k)

    def episode_end_update(self):
        self.episodes += 1
        if self.no_optimistic_sampling:
            T = self.transitions.sample()
        else:
            self.optimistic_sampling()
            T = np.moveaxis(self.Q, 0, 2)
            T = T.reshape((self._n_states, -1, self._n_states))
        R = self.rewards.sample()
        if not self.no_optimistic_sampling:
            R = np.tile(R, (1, self.psi))
        self.q, _ = discounted_value_iteration(T, R, self.sparse_threshold)
        self.episode_transition_data = dict()

    def step_update(self, s, a, y, r):
        self.rewards.update_single_transition(s, a, r)
        self.transitions.update_single_transition(s, a, y)
        self.N[s, a, y] += 1
        self.episode_transition_data.setdefault((s, a), []).append(y)

    def optimistic_sampling(self):
        Nsum = self.N.sum(-1)
        cond = Nsum < self.eta
        indices_2 = list(np.where(cond))
        indices_1 = list(np.where(~cond))

        do_simple_sampling = len(indices_2[0]) > 0
        do_posterior_sampling = len(indices_1[0]) > 0
        if do_simple_sampling:
            P_hat = self.N / np.maximum(Nsum[..., None], 1)
            N = np.maximum(self.N, 1)
            P_minus = P_hat - np.minimum(
                np.sqrt(3 * P_hat * np.log(4 * self._n_states) / N)
                + 3 * np.log(4 * self._n_states) / N,
                P_hat,
            )

        for psi in range(self.psi):
            if do_posterior_sampling:
                self.Q[tuple([np.array([psi] * len(indices_1[0]))] + indices_1)] = (
                    self.transitions.sample_sa(tuple(indices_1)))
            if do_simple_sampling:
                z = self._rng.randint(self._n_states)
                summing = 1 - P_minus.sum(-1)
                P_minus[:, :, z] += summing
                self.Q[tuple([np.array([psi] * len(indices_2[0]))] + indices_2)] = (
                    P_minus[tuple(indices_2)])
                P_minus[:, :, z] -= summing

    def greedy(self, s):
        q = self.q[s]
        ext = np.where(q == q.max())[0]  # QValuesActor: rng.choice of these
        if self.no_optimistic_sampling:  # (extended_action_to_real: the action itself)
            return set(ext.tolist())
        return set((ext // self.psi).tolist())

    def map_policy(self, gamma=0.99):
        """Colosseum's current policy under bbrl's convention: the MAP model's greedy
        policy, float64 values to convergence, (near-)exact ties uniform."""
        T = self.transitions.hyper_params.astype(np.float64)
        T = T / T.sum(-1, keepdims=True)
        R = self.rewards.get_map_estimate().astype(np.float64)
        V = np.zeros(self._n_states)
        for _ in range(20000):
            V2 = (R + gamma * T @ V).max(1)
            if np.abs(V2 - V).max() <= 1e-12 * max(1.0, np.abs(V2).max()):
                V = V2
                break
            V = V2
        Q = R + gamma * T @ V
        ties = np.isclose(Q, Q.max(axis=1, keepdims=True), rtol=0, atol=1e-9)
        return ties / ties.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------


def replay(trace, rewards, S, A, T, seed, params, prms, sparse_threshold, L=0,
           no_optimistic_sampling=False):
    """Colosseum's agent fed the kernel's transitions, rewards and draws: (episodes,
    steps whose real action was not unique among the greedy ones, the current policies
    and states at the indicator rows every ``L`` steps)."""
    w = {k: params[k] for k in ("psi_weight", "omega_weight", "kappa_weight",
                                "eta_weight")}
    agent = PSRLContinuous(S, A, T, KernelDraws(seed), prms, sparse_threshold=
                           sparse_threshold, no_optimistic_sampling=no_optimistic_sampling,
                           **w)
    agent.episode_end_update()  # before_start_interacting (its random Q overwritten)
    tied, pols, states = 0, [], []
    for t, (x, u, y) in enumerate(trace):
        best = agent.greedy(x)
        assert u in best, (t, x, u, best, agent.q[x])
        tied += len(best) > 1
        agent.step_update(int(x), int(u), int(y), float(rewards[t]))
        if agent.is_episode_end(int(x), int(u)):
            agent.episode_end_update()
        if L and t > 0 and t % L == 0:
            pols.append(agent.map_policy())
            states.append(int(y))
    if L:
        pols.append(agent.map_policy())
        states.append(int(trace[-1, 2]))
    return agent, tied, pols, np.array(states)


MEAN = pc.COLOSSEUM_REWARD_PRIOR_MEAN


def colosseum_riverswim(T, n=2):
    test = D.load_test("Colosseum-CC-RiverSwim-0")
    prior = D.load(f"UColosseum-CC-RiverSwim-0+rnig{MEAN}")
    return prior, new_test_set(test, n, 0.99, T, 5)


def _kernel(prior, ts, i, seed, params, sparse_size, optimistic=True):
    """The kernel on test MDP i, its threshold of the sparse value iteration given (and
    whether it samples optimistically: Colosseum's S^2 A > 6,000,000 switch)."""
    ep = ts.episode()
    S, A = prior.n_states, prior.n_actions
    T = int(ep.horizon)
    c = pc.constants_of(prior, params, T)
    from bbrlcore.agents._layout import setting
    from bbrlcore.mdp import rows

    st = setting(prior, ep, rows.full(S, A))
    P = np.ascontiguousarray(st.env(np.ascontiguousarray(ts.mdps[i])))
    r = np.empty(T)
    trace = np.zeros((T, 3), dtype=np.int64)
    si, sf = pc.gain_scratch(np.full((S, A), S, dtype=np.int64))
    ret, cnt, _ = pc._trajectory(P, st.R, st.Rstd, int(ep.gaussian), ep.start,
                                 float(ep.gamma), T, seed, c["psi"] if optimistic else 1,
                                 float(c["eta"]), optimistic,
                                 MEAN, sparse_size, r, trace, 0, np.zeros((S, A)), 0.0,
                                 0.0, si, sf)
    return ret, cnt, r, trace


@pytest.mark.parametrize("sparse_size", [pc.SPARSE_SIZE, 0])
def test_kernel_plays_colosseums_psrl_on_a_colosseum_instance(sparse_size):
    """Colosseum-CC-RiverSwim-0 (S = 25, A = 2: ψ = 2, η = 5, so both the simple and
    the posterior sampling of pairs), 3,000 steps, two test MDPs, Colosseum's dense value
    iteration (its 2,500-entry extended model) and, with the threshold lowered to 0, its
    sparse one: every action is one of the replay's greedy ones and the episodes agree."""
    T = 3000
    prior, ts = colosseum_riverswim(T)
    params = agents.get("psrl").parse_params({"form": "colosseum"})
    S, A = prior.n_states, prior.n_actions
    for i in range(ts.n_mdps):
        ret, cnt, r, trace = _kernel(prior, ts, i, 7 + i, params, sparse_size)
        agent, tied, _, _ = replay(trace, r, S, A, T, 7 + i, params, [MEAN, 1, 1, 1],
                                   sparse_size)
        assert cnt[0] == agent.episodes
        # (a trajectory that decides: many episodes, both kinds of rows sampled, the
        # river's far end reached)
        assert agent.episodes >= 40 and tied < T / 10
        assert (agent.N.sum(-1) >= agent.eta).any() and (agent.N.sum(-1) < agent.eta).any()
        assert trace[:, 2].max() >= S - 3


def test_without_optimistic_sampling_it_is_colosseums_posterior_sampling():
    """Colosseum's switch for S^2 A > 6,000,000 (one posterior sample of every pair, the
    real actions, the rewards not tiled), forced on Colosseum-CC-RiverSwim-0: every
    action is one of the replay's greedy ones and the episodes agree."""
    T = 2000
    prior, ts = colosseum_riverswim(T, n=1)
    params = agents.get("psrl").parse_params({"form": "colosseum"})
    S, A = prior.n_states, prior.n_actions
    ret, cnt, r, trace = _kernel(prior, ts, 0, 5, params, pc.SPARSE_SIZE, optimistic=False)
    agent, tied, _, _ = replay(trace, r, S, A, T, 5, params, [MEAN, 1, 1, 1],
                               pc.SPARSE_SIZE, no_optimistic_sampling=True)
    assert cnt[0] == agent.episodes and agent.episodes >= 40 and tied < T / 10


@pytest.mark.parametrize("L", [100])
def test_indicator_player_plays_the_same_trajectory_and_evaluates_the_map_policy(L):
    """The indicator player (Colosseum's continuing indicators every 100 steps) plays the
    player's trajectory, and its indicators are those of the replayed MAP model's greedy
    policy (bbrl's evaluation convention: values to convergence, ties uniform)."""
    T = 1500
    prior, ts = colosseum_riverswim(T, n=1)
    params = agents.get("psrl").parse_params({"form": "colosseum"})
    ep = ts.episode()
    play = psrl.make_player(prior, params, None, ep)
    iplay = psrl.make_indicator_player(prior, params, None, ep, L)
    P = np.ascontiguousarray(ts.mdps[0])
    r = np.empty(T)
    trace = np.zeros((T, 3), dtype=np.int64)
    ret, cnt = play(P, 3, r, trace)
    r1 = np.empty(T)
    trace1 = np.zeros((T, 3), dtype=np.int64)
    ret1, cnt1, vals = iplay(P, 3, r1, trace1)
    assert ret == ret1 and np.array_equal(r, r1) and np.array_equal(trace, trace1)
    assert np.array_equal(cnt, cnt1)
    agent, _, pols, states = replay(trace, r, prior.n_states, prior.n_actions, T, 3,
                                    params, [MEAN, 1, 1, 1], pc.SPARSE_SIZE, L)
    assert agent.episodes == cnt[0]
    same(vals, expected(evaluator(ts, 0), pols, T, L, r1, states))


@pytest.mark.parametrize("S, A, T", [(25, 2, 500_000), (948, 3, 500_000), (90, 2, 20_000)])
def test_constants_are_colosseums_formulas(S, A, T):
    """ψ, ω, κ, η against Colosseum's formulas (``get_psi`` … ``get_eta`` times the gin's
    weights, clipped as ``PSRLContinuous.__init__`` clips them)."""
    w = pc.COLOSSEUM_BENCHMARK
    c = pc.colosseum_constants(S, A, T, w["psi_weight"], w["omega_weight"],
                               w["kappa_weight"], w["eta_weight"])
    psi = min(60, max(2, int(w["psi_weight"] * S * math.log(S * A / 0.05))))
    omega = w["omega_weight"] * math.log(T / 0.05)
    kappa = w["kappa_weight"] * math.log(T / 0.05)
    eta = max(5, min(10 * S, w["eta_weight"] * (math.sqrt(T * S / A)
                                                + 12 * omega * S ** 4)))
    assert c["psi"] == psi and c["optimistic"]
    assert c["omega"] == pytest.approx(omega, rel=1e-14)
    assert c["kappa"] == pytest.approx(kappa, rel=1e-14)
    assert c["eta"] == pytest.approx(eta, rel=1e-14)
    want = {(25, 2, 500_000): (2, 5.0), (948, 3, 500_000): (60, 9480.0),
            (90, 2, 20_000): (12, 155.11775397)}[(S, A, T)]
    assert c["psi"] == want[0] and c["eta"] == pytest.approx(want[1], rel=1e-9)
    assert not pc.colosseum_constants(1500, 3, T, 1, 1, 1, 1)["optimistic"]  # S^2 A > 6e6


def test_reward_tile_quirk_is_colosseums():
    """Extended action k = u·ψ + j (real action k // ψ) is paid R[x, k % A], as
    ``np.tile(R, (1, psi))`` pays it — Colosseum's quirk, kept — not R[x, k // ψ]."""
    rng = np.random.default_rng(0)
    S, A, psi = 4, 3, 5
    R = rng.random((S, A)).astype(np.float32)
    out = np.zeros((S, A * psi), dtype=np.float32)
    pc.tile_rewards(R, psi, out)
    assert np.array_equal(out, np.tile(R, (1, psi)))
    k = np.arange(A * psi)
    assert np.array_equal(out, R[:, k % A])
    assert not np.array_equal(out, R[:, k // psi])


def test_numpys_summation_orders():
    """The kernel's float32 sums are NumPy's (pairwise) bit for bit, and so are its
    float64 sums of rows with few nonzeros."""
    rng = np.random.default_rng(2)
    for n in (1, 5, 8, 13, 25, 128, 129, 300, 948):
        a = rng.gamma(0.05, size=n).astype(np.float32)
        assert pc.pairwise_sum32(a, 0, n) == a.sum(), n
        m = rng.random(n) < 0.1
        b = np.where(m, rng.random(n), 0.0)
        pos = np.flatnonzero(b)
        assert pc.pairwise_sum_sparse(pos, b[pos], pos.size, 0, n) == b.sum(), n


@pytest.mark.parametrize("raw, message", [
    ({"form": "colosseo"}, "form=colosseo: must be one of bbrl, colosseum"),
    ({"form": "colosseum", "psi_weight": "0"}, "psi_weight=0: must be > 0"),
    ({"form": "colosseum", "eta_weight": "-1"}, "eta_weight=-1: must be > 0"),
])
def test_bad_values_are_one_line_naming_the_parameter(raw, message):
    with pytest.raises(BBRLError) as e:
        agents.get("psrl").parse_params(raw)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("raw, message", [
    ({"form": "colosseum", "schedule": "fixed", "period": "3"},
     "schedule applies to form=bbrl only"),
    ({"form": "colosseum", "schedule": "doubling"}, "schedule applies to form=bbrl only"),
    ({"psi_weight": "0.5"}, "psi_weight applies to form=colosseum only"),
    ({"schedule": "doubling", "kappa_weight": "2"}, "kappa_weight applies to form=colosseum"),
])
def test_the_other_forms_parameters_are_refused_in_one_line(raw, message):
    alg = agents.get("psrl")
    params = alg.parse_params(raw)
    prior = D.load(f"UColosseum-CC-RiverSwim-0+rnig{MEAN}")
    err = alg.setting_check(params, prior, 0.99, 10)
    assert err is not None and message in err and "\n" not in err
    ts = new_test_set(D.load_test("Colosseum-CC-RiverSwim-0"), 1, 0.99, 10, 4)
    with pytest.raises(BBRLError, match=message):
        alg.make_player(prior, params, None, ts.episode())


@pytest.mark.parametrize("prior, message", [
    ("UColosseum-CC-RiverSwim-0", "needs Colosseum's reward model: a prior ending +rnig"),
    ("UColosseum-CC-RiverSwim-0+rbeta", "not beta rewards"),
    (f"UColosseum-CC-RiverSwim-0+dir0.04+rnig{MEAN}", "drop +dir<alpha>"),
])
def test_other_priors_are_refused_in_one_line(prior, message):
    alg = agents.get("psrl")
    params = alg.parse_params({"form": "colosseum"})
    p = D.load(prior)
    err = alg.setting_check(params, p, 0.99, 10)
    assert err is not None and message in err and "\n" not in err
    ts = new_test_set(D.load_test("Colosseum-CC-RiverSwim-0"), 1, 0.99, 10, 4)
    with pytest.raises(BBRLError, match="psrl on .*" + message.replace("+", r"\+")):
        alg.make_player(p, params, None, ts.episode())


def test_episodic_interactions_are_refused_in_one_line():
    alg = agents.get("psrl")
    params = alg.parse_params({"form": "colosseum"})
    d = F.make("riverswim", size=5)
    prior = D.load("URiverSwim-5+rnig")
    ts = new_test_set(d.test, 1, 0.99, 20, 4, episode_length=5)
    with pytest.raises(BBRLError, match="not for an episodic interaction") as e:
        alg.make_player(prior, params, None, ts.episode())
    assert "\n" not in str(e.value)


def test_agent_ids_and_the_default_form():
    alg = agents.get("psrl")

    def aid(raw):
        return alg.agent_id(alg.parse_params(raw))

    assert aid({}) == aid({"form": "bbrl"}) == "psrl"
    assert aid({"schedule": "doubling"}) == "psrl__schedule=doubling"
    assert aid({"form": "colosseum"}) == "psrl__form=colosseum"
    assert aid(pc.COLOSSEUM_BENCHMARK) == "psrl__form=colosseum"
    assert aid({"form": "colosseum", "psi_weight": "0.5"}) == (
        "psrl__form=colosseum__psi_weight=0.5")
    p = alg.parse_params({"form": "colosseum"})
    assert {k: p[k] for k in pc.COLOSSEUM_BENCHMARK} == pc.COLOSSEUM_BENCHMARK
