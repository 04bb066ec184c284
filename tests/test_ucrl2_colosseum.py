"""UCRL2 in Colosseum's form (``--param form=colosseum``, issue 43): bbrl's kernel
(:func:`bbrlcore.agents.ucrl2._trajectory_colosseum`) against a Python replay of
Colosseum's ``UCRL2Continuous`` transcribed from its code (``colosseum/agent/agents/
infinite_horizon/ucrl2.py`` and ``colosseum/dynamic_programming/infinite_horizon.py``,
Colosseum 1.2; not imported), fed the kernel's transitions and rewards: at every step the
kernel's action is one of the replay's greedy actions, and its episodes, tied steps and
Colosseum's indicators are the replay's. Its parameters, and Jaksch et al.'s form kept.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from bbrlcore import agents
from bbrlcore.agents import ucrl2
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp.reward_prior import reward_range
from bbrlcore.protocol.test_sets import new_test_set
from test_indicator_runs import empirical_policy_np, evaluator, expected, same

# ---------------------------------------------------------------------------------------
# Colosseum's code, transcribed (its numba functions verbatim; DP_MAX_ITERATION = 1e6)

DP_MAX_ITERATION = int(1e6)


@numba.njit()
def extended_value_iteration(T, estimated_rewards, beta_r, beta_p, r_max, epsilon=1e-3):
    n_states, n_actions = beta_r.shape

    Q = np.zeros((n_states, n_actions), dtype=np.float32)
    V = np.zeros((n_states,), dtype=np.float32)

    u1 = np.zeros(n_states, np.float32)
    sorted_indices = np.arange(n_states)
    u2 = np.zeros(n_states, np.float32)
    vec = np.zeros(n_states, np.float32)

    for _ in range(DP_MAX_ITERATION):
        for s in range(n_states):
            first_action = True
            for a in range(n_actions):
                vec = _max_proba(
                    T[s, a], sorted_indices, beta_p[s, a], n_states, n_actions
                )
                vec[s] -= 1
                r_optimal = min(
                    np.float32(r_max),
                    estimated_rewards[s, a] + beta_r[s, a],
                )
                v = r_optimal + np.dot(vec, u1)
                Q[s, a] = v
                if (
                    first_action
                    or v + u1[s] > u2[s]
                    or np.abs(v + u1[s] - u2[s]) < epsilon
                ):  # optimal policy = argmax
                    u2[s] = np.float32(v + u1[s])
                first_action = False
            V[s] = np.max(Q[s])
        if np.ptp(u2 - u1) < epsilon:  # stopping condition of EVI
            return np.ptp(u1), Q, V
        else:
            u1 = u2
            u2 = np.empty(n_states, np.float32)
            sorted_indices = np.argsort(u1)
    return None


@numba.njit()
def _max_proba(p, sorted_indices, beta, n_states, n_actions):
    min1 = min(1.0, (p[sorted_indices[n_states - 1]] + beta / 2)[0])
    if min1 == 1:
        p2 = np.zeros(n_states, np.float32)
        p2[sorted_indices[n_states - 1]] = 1
    else:
        sorted_p = p[sorted_indices]
        support_sorted_p = np.nonzero(sorted_p)[0]
        restricted_sorted_p = sorted_p[support_sorted_p]
        support_p = sorted_indices[support_sorted_p]
        p2 = np.zeros(n_states, np.float32)
        p2[support_p] = restricted_sorted_p
        p2[sorted_indices[n_states - 1]] = min1
        s = 1 - p[sorted_indices[n_states - 1]] + min1
        s2 = s
        for i, proba in enumerate(restricted_sorted_p):
            max1 = max(0, 1 - s + proba)
            s2 += max1 - proba
            p2[support_p[i]] = max1
            s = s2
            if s <= 1:
                break
    return p2


def _chernoff(it, N, delta, sqrt_C, log_C, range=1.0):
    ci = range * np.sqrt(sqrt_C * math.log(log_C * (it + 1) / delta) / np.maximum(1, N))
    return ci


def bernstein(scale_a, log_scale_a, scale_b, log_scale_b, alpha_1, alpha_2):
    A = scale_a * math.log(log_scale_a)
    B = scale_b * math.log(log_scale_b)
    return alpha_1 * np.sqrt(A) + alpha_2 * B


class UCRL2Continuous:
    """Colosseum's agent at its benchmark's bounds (``bound_type_p='bernstein'``, the
    rewards' ``_chernoff``), its methods as written; the actor's greedy choice is left
    to the caller (:meth:`greedy`). Kept beside Colosseum's model for the indicators:
    ``counts``, the counts its ``P`` was last computed from (``P`` = counts / total)."""

    def __init__(self, n_states, n_actions, r_max, alpha_p, alpha_r):
        self._n_states, self._n_actions = n_states, n_actions
        self.reward_range = (0.0, r_max)
        self.alpha_p, self.alpha_r = alpha_p, alpha_r
        self.iteration = 0
        self.episode = 0
        self.delta = 1.0
        self.P = np.ones((n_states, n_actions, n_states), np.float32) / n_states
        self.estimated_rewards = (
            np.ones((n_states, n_actions), np.float32) * r_max)
        self.variance_proxy_reward = np.zeros((n_states, n_actions), np.float32)
        self.N = np.zeros((n_states, n_actions, n_states), dtype=np.int32)
        self.episode_reward_data = dict()
        self.episode_transition_data = dict()
        self.Q = None
        self.counts = np.zeros((n_states, n_actions, n_states))

    def is_episode_end(self, s, a):
        nu_k = len(self.episode_transition_data[s, a])
        return nu_k >= max(1, self.N[s, a].sum() - nu_k)

    def episode_end_update(self):
        self.episode += 1
        self.delta = 1 / math.sqrt(self.iteration + 1)
        self.solve_optimistic_model()
        if len(self.episode_transition_data) > 0:
            self.model_update()
            self.episode_reward_data = dict()
            self.episode_transition_data = dict()

    def step_update(self, s, a, y, r):
        self.N[s, a, y] += 1
        if (s, a) in self.episode_reward_data:
            self.episode_reward_data[s, a].append(r)
            self.episode_transition_data[s, a].append(y)
        else:
            self.episode_reward_data[s, a] = [r]
            self.episode_transition_data[s, a] = [y]

    def model_update(self):
        for (s_tm1, action), r_ts in self.episode_reward_data.items():
            scale_f = self.N[s_tm1, action].sum()
            for r in r_ts:
                self.iteration += 1
                scale_f += 1
                # (NumPy 1's promotion, Colosseum's: a float32 scalar times a Python float
                # is computed in float64, then stored in the float32 array)
                self.estimated_rewards[s_tm1, action] = (
                    np.float64(self.estimated_rewards[s_tm1, action])
                    * (scale_f / (scale_f + 1.0)))
                self.estimated_rewards[s_tm1, action] = (
                    np.float64(self.estimated_rewards[s_tm1, action]) + r / (scale_f + 1.0))
        for (s_tm1, action) in set(self.episode_transition_data.keys()):
            self.P[s_tm1, action] = self.N[s_tm1, action] / self.N[s_tm1, action].sum()
            self.counts[s_tm1, action] = self.N[s_tm1, action]

    def beta_r(self, nb_observations):
        S, A = self._n_states, self._n_actions
        ci = _chernoff(it=self.iteration, N=nb_observations, range=self.reward_range[1],
                       delta=self.delta, sqrt_C=3.5, log_C=2 * S * A)
        return self.alpha_r * ci

    def beta_p(self, nb_observations):
        S, A = self._n_states, self._n_actions
        N = np.maximum(1, nb_observations)
        Nm1 = np.maximum(1, nb_observations - 1)
        var_p = self.P * (1.0 - self.P)
        log_value = 2.0 * S * A * (self.iteration + 1) / self.delta
        return bernstein(
            scale_a=14 * var_p / N[:, :, np.newaxis],
            log_scale_a=log_value,
            scale_b=49.0 / (3.0 * Nm1[:, :, np.newaxis]),
            log_scale_b=log_value,
            alpha_1=math.sqrt(self.alpha_p),
            alpha_2=self.alpha_p,
        )

    def solve_optimistic_model(self):
        nb_observations = self.N.sum(-1)
        beta_r = self.beta_r(nb_observations)
        beta_p = self.beta_p(nb_observations)
        res = extended_value_iteration(self.P, self.estimated_rewards, beta_r, beta_p,
                                       self.reward_range[1])
        if res is not None:
            _, self.Q, _ = res

    def greedy(self, s):
        q = self.Q[s]
        return np.where(q == q.max())[0]  # QValuesActor: rng.choice of these


# ---------------------------------------------------------------------------------------


def replay(trace, rewards, S, A, r_max, params, L=0):
    """Colosseum's agent fed the kernel's transitions: (episodes, tied steps, the
    current policies and states at the indicator rows every ``L`` steps)."""
    agent = UCRL2Continuous(S, A, r_max, params["alpha_p"], params["alpha_r"])
    agent.episode_end_update()  # before_start_interacting
    tied, pols, states = 0, [], []
    succ = np.broadcast_to(np.arange(S), (S, A, S)).copy()
    nsucc = np.full((S, A), S)

    def policy():
        return empirical_policy_np(agent.counts, agent.counts.sum(-1).astype(np.int64),
                                   np.zeros((S, A, S)), agent.estimated_rewards
                                   .astype(np.float64), False, succ, nsucc, r_max)

    for t, (x, u, y) in enumerate(trace):
        best = agent.greedy(x)
        assert u in best, (t, x, u, best, agent.Q[x])
        tied += len(best) > 1
        agent.step_update(int(x), int(u), int(y), float(rewards[t]))
        if agent.is_episode_end(int(x), int(u)):
            agent.episode_end_update()
        if L and t > 0 and t % L == 0:
            pols.append(policy())
            states.append(int(y))
    if L:
        pols.append(policy())
        states.append(int(trace[-1, 2]))
    return agent.episode, tied, pols, np.array(states)


def colosseum_riverswim(T):
    test = D.load_test("Colosseum-CC-RiverSwim-0")
    prior = D.load("UColosseum-CC-RiverSwim-0+rnig0.23589883401606418")
    return prior, new_test_set(test, 2, 0.99, T, 5)


def test_colosseums_benchmark_configuration_is_the_forms_default():
    """Colosseum's ``cached_hyperparameters/agent_configs/UCRL2Continuous.gin``:
    ``bound_type_p='bernstein'``, ``alpha_p = 0.9883750006754203``, ``alpha_r =
    0.10294276593728004``."""
    p = agents.get("ucrl2").parse_params({"form": "colosseum"})
    assert (p["alpha_p"], p["alpha_r"]) == (0.9883750006754203, 0.10294276593728004)
    assert {k: p[k] for k in ucrl2.COLOSSEUM_BENCHMARK} == ucrl2.COLOSSEUM_BENCHMARK


@pytest.mark.parametrize("L", [0, 100])
def test_kernel_plays_colosseums_ucrl2_on_a_colosseum_instance(L):
    """Colosseum-CC-RiverSwim-0 (S = 25, its reward laws), rewards unknown (+rnig, the
    preset's prior), 3,000 steps, two test MDPs: every action is Colosseum's greedy one,
    the episodes and tied steps agree, and with L = 100 the indicators are those of
    Colosseum's current policy of the replayed model; the indicator player plays the
    same trajectory."""
    T = 3000
    prior, ts = colosseum_riverswim(T)
    params = agents.get("ucrl2").parse_params({"form": "colosseum"})
    ep = ts.episode()
    play = ucrl2.make_player(prior, params, None, ep)
    iplay = ucrl2.make_indicator_player(prior, params, None, ep, L) if L else None
    S, A = prior.n_states, prior.n_actions
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.mdps[i])
        r = np.empty(T)
        trace = np.zeros((T, 3), dtype=np.int64)
        _, cnt = play(P, 7 + i, r, trace)
        policies, sweeps, capped, tied = cnt
        episodes, rtied, pols, states = replay(trace, r, S, A, reward_range(prior)[1],
                                               params, L)
        assert (policies, tied, capped) == (episodes, rtied, 0)
        # (a trajectory that decides: many episodes, most steps not tied)
        assert episodes >= 20 and tied < T / 2 and sweeps > episodes
        if L:
            r1 = np.empty(T)
            trace1 = np.zeros((T, 3), dtype=np.int64)
            _, c1, vals = iplay(P, 7 + i, r1, trace1)
            assert np.array_equal(r, r1) and np.array_equal(trace, trace1)
            assert np.array_equal(cnt, c1)
            same(vals, expected(evaluator(ts, i), pols, T, L, r1, states))


def test_kernel_plays_colosseums_ucrl2_under_known_rewards_and_differs_from_jaksch():
    """On bbrl's RiverSwim-5 with the rewards known (the uniform prior): Colosseum's agent
    learns them all the same (it knows only their range), every action is its greedy
    one; Jaksch et al.'s form plays another trajectory."""
    T = 2000
    d = F.make("riverswim", size=5)
    prior = d.prior("uniform")
    ts = new_test_set(d.test, 1, 0.95, T, 4)
    ep = ts.episode()
    params = agents.get("ucrl2").parse_params({"form": "colosseum", "alpha_p": "0.5"})
    play = ucrl2.make_player(prior, params, None, ep)
    P = np.ascontiguousarray(ts.mdps[0])
    r = np.empty(T)
    trace = np.zeros((T, 3), dtype=np.int64)
    _, cnt = play(P, 3, r, trace)
    episodes, tied, _, _ = replay(trace, r, prior.n_states, prior.n_actions,
                                  reward_range(prior)[1], params)
    assert (cnt[0], cnt[3]) == (episodes, tied) and episodes >= 10
    jaksch = ucrl2.make_player(prior, agents.get("ucrl2").parse_params({}), None, ep)
    r2 = np.empty(T)
    jaksch(P, 3, r2)
    assert not np.array_equal(r, r2)


def test_max_proba_is_colosseums():
    """bbrl's :func:`~bbrlcore.agents.ucrl2.colosseum_max_proba` against Colosseum's
    ``_max_proba`` on random rows, orders and widths (float32 rows, bit for bit)."""
    rng = np.random.default_rng(0)
    out = np.zeros(6, dtype=np.float32)
    for _ in range(300):
        p = rng.dirichlet(np.ones(6)) * (rng.random(6) < 0.7)
        p = (p / p.sum() if p.sum() > 0 else np.full(6, 1 / 6)).astype(np.float32)
        order = rng.permutation(6)
        beta = rng.random() * 1.5
        want = _max_proba(p, order, np.array([beta, 0.0]), 6, 2)
        ucrl2.colosseum_max_proba(p, order, beta, out)
        assert np.array_equal(out, want)


def test_widths_and_extended_value_iteration_are_colosseums():
    """On random models (rows with zeros, counts, iteration counts, both alphas): bbrl's
    widths are Colosseum's ``beta_r`` and ``beta_p`` (of next state 0, the one its
    ``_max_proba`` reads) exactly, and its extended value iteration gives Colosseum's
    Q-values bit for bit."""
    rng = np.random.default_rng(1)
    S, A = 7, 3
    for case in range(20):
        ap, ar = rng.uniform(0.1, 3.0, size=2)
        agent = UCRL2Continuous(S, A, 1.0, ap, ar)
        N = rng.integers(0, 40, size=(S, A, S)) * (rng.random((S, A, S)) < 0.5)
        N[0, 0] = 0  # a pair never played: uniform row
        agent.N = N.astype(np.int32)
        tot = N.sum(-1)
        agent.P = np.where(tot[:, :, None] > 0, N / np.maximum(tot, 1)[:, :, None],
                           1.0 / S).astype(np.float32)
        agent.estimated_rewards = rng.random((S, A)).astype(np.float32)
        agent.iteration = int(rng.integers(0, 5000))
        agent.delta = 1 / math.sqrt(agent.iteration + 1)
        want_r, want_p = agent.beta_r(tot), agent.beta_p(tot)
        br, bp = np.zeros((S, A)), np.zeros((S, A))
        ucrl2.colosseum_widths(agent.P, tot.astype(np.int64), agent.iteration, ap, ar, 1.0,
                               br, bp)
        assert np.array_equal(br, want_r) and np.array_equal(bp, want_p[:, :, 0]), case
        res = extended_value_iteration(agent.P, agent.estimated_rewards, want_r, want_p,
                                       1.0)
        Q = np.zeros((S, A), dtype=np.float32)
        sweeps = ucrl2.colosseum_evi(agent.P, agent.estimated_rewards, br, bp, 1.0,
                                     ucrl2.COLOSSEUM_EVI_EPSILON, DP_MAX_ITERATION, Q)
        assert res is not None and sweeps > 0 and np.array_equal(Q, res[1]), case


@pytest.mark.parametrize("raw, message", [
    ({"form": "jaksh"}, "form=jaksh: must be one of jaksch, colosseum"),
    ({"form": "colosseum", "alpha_p": "0"}, "alpha_p=0: must be > 0"),
    ({"form": "colosseum", "alpha_r": "-1"}, "alpha_r=-1: must be > 0"),
])
def test_bad_values_are_one_line_naming_the_parameter(raw, message):
    with pytest.raises(BBRLError) as e:
        agents.get("ucrl2").parse_params(raw)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("raw, message", [
    ({"form": "colosseum", "bound": "bernstein"}, "bound applies to form=jaksch only"),
    ({"form": "colosseum", "delta": "0.1"}, "delta applies to form=jaksch only"),
    ({"alpha_p": "0.5"}, "alpha_p applies to form=colosseum only"),
    ({"bound": "bernstein", "alpha_r": "2"}, "alpha_r applies to form=colosseum only"),
])
def test_the_other_forms_parameters_are_refused_in_one_line(raw, message):
    alg = agents.get("ucrl2")
    params = alg.parse_params(raw)
    err = alg.setting_check(params, D.builtin("GC"), 0.95, 10)
    assert err is not None and message in err and "\n" not in err
    d = F.make("riverswim", size=5)
    ts = new_test_set(d.test, 1, 0.95, 10, 4)
    with pytest.raises(BBRLError, match=message):
        alg.make_player(d.prior("uniform"), params, None, ts.episode())


def test_agent_ids():
    alg = agents.get("ucrl2")

    def aid(raw):
        return alg.agent_id(alg.parse_params(raw))

    assert aid({}) == aid({"form": "jaksch"}) == "ucrl2__delta=0.05"
    assert aid({"form": "colosseum"}) == "ucrl2__delta=0.05__form=colosseum"
    assert aid(ucrl2.COLOSSEUM_BENCHMARK) == "ucrl2__delta=0.05__form=colosseum"
    assert aid({"form": "colosseum", "alpha_p": "0.5"}) == (
        "ucrl2__delta=0.05__form=colosseum__alpha_p=0.5")
