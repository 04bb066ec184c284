"""Colosseum's indicators computed inside the built-ins' trajectory kernels
(bbrlcore.agents._indicators), against :meth:`bbrlcore.mdp.indicators.Evaluator.accumulate`
on the same policies: Random and Optimal (their policy is known), PSRL's episodic form
(its policies recorded by a Python replay of its trajectory with the same numba
building blocks and the same draws); the trajectories are those of the players without
indicators, bit for bit; the run tables' columns, notes and checks; the configuration's
errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from numba import njit

from bbrlcore import protocol as E
from bbrlcore.agents import optimal, psrl, random_agent
from bbrlcore.agents._kernels import env_reset, env_step_rows
from bbrlcore.agents._posterior import generator_from_numba, sample_rows_of
from bbrlcore.analysis.results import check_derived
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import families as F
from bbrlcore.mdp.indicators import Evaluator
from bbrlcore.protocol.test_sets import new_test_set

COLS = ("expected_regret", "normalised_expected_regret", "expected_reward",
        "normalised_expected_reward", "normalised_reward")


@njit(cache=True)
def _seed(s):
    np.random.seed(s)


def deepsea(size=5, n=2, episodes=60):
    d = F.make("deepsea", size=size)
    return d, new_test_set(d.test, n, 1.0, size * episodes, 3, episode_length=size)


def riverswim(n=2, T=1500):
    d = F.make("riverswim", size=5)
    return d, new_test_set(d.test, n, 0.95, T, 4)


def evaluator(ts, i):
    ep = ts.episode()
    lay = ep.layout()
    return Evaluator(lay.succ, lay.nsucc, np.ascontiguousarray(ts.mdps[i]), ep.R,
                     horizon=ep.episode_length or None, start=int(ep.initial_state))


def expected(evr, policies, T, L, rewards, states=None):
    out = evr.accumulate(policies, states, T=T, log_every=L, rewards=rewards)
    return [float(out[c][-1]) for c in COLS], out.stopped_training_at


def same(values, want):
    got, stop = values[:5], values[5]
    np.testing.assert_allclose(got, want[0], rtol=1e-12, atol=1e-9)
    assert (stop if stop >= 0 else None) == want[1]


def played(module, prior, ts, params, L, seed=11):
    """(default player's return, rewards, counters), (indicator player's ...) per MDP."""
    ep = ts.episode()
    a = module.make_player(prior, params, None, ep)
    b = module.make_indicator_player(prior, params, None, ep, L)
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.mdps[i])
        r0, r1 = np.empty(ts.horizon), np.empty(ts.horizon)
        ret0, c0 = a(P, seed + i, r0)
        ret1, c1, vals = b(P, seed + i, r1)
        assert ret0 == ret1 and np.array_equal(r0, r1)  # the same trajectory
        assert np.array_equal(np.asarray(c0), np.asarray(c1))
        yield i, r1, vals


@pytest.mark.parametrize("L", [100, 7])
def test_random_episodic_equals_the_python_accumulation(L):
    d, ts = deepsea()
    nX, nU = d.test.n_states, d.test.n_actions
    uniform = np.full((nX, nU), 1.0 / nU)
    for i, r, vals in played(random_agent, d.test, ts, {}, L):
        evr = evaluator(ts, i)
        same(vals, expected(evr, lambda j: uniform, ts.horizon, L, r))
        assert vals[1] > 0  # the uniform policy is not optimal on DeepSea


def test_random_continuing_equals_the_python_accumulation():
    # RiverSwim under the uniform policy is one closed class: the same gain from every
    # state, so the rows' states do not matter
    d, ts = riverswim()
    nX, nU = d.test.n_states, d.test.n_actions
    uniform = np.full((nX, nU), 1.0 / nU)
    for i, r, vals in played(random_agent, d.test, ts, {}, 100):
        evr = evaluator(ts, i)
        n = len(range(100, ts.horizon, 100)) + 1
        same(vals, expected(evr, lambda j: uniform, ts.horizon, 100, r, np.zeros(n, int)))


@pytest.mark.parametrize("criterion", ["discounted", "undiscounted"])
def test_optimal_has_no_expected_regret_and_stops_training(criterion):
    d, ts = deepsea(episodes=100)
    T = ts.horizon
    for i, _, vals in played(optimal, d.test, ts, {"criterion": criterion}, 10):
        assert vals[0] == 0.0 and vals[1] == 0.0
        # the normalised expected reward of the optimal policy: (T ρ* - (T - 1) ρ⁻) /
        # (ρ* - ρ⁻) (Colosseum's off-by-one: T - 1 steps of the worst reference)
        evr = evaluator(ts, i)
        assert vals[2] == pytest.approx(T * evr.optimal, rel=1e-12)
        want = T + evr.worst / (evr.optimal - evr.worst)
        assert vals[3] == pytest.approx(want, rel=1e-12)
        # rows 1..10 at zero regret, past T/5 = 100: Colosseum stops training at row
        # t = 110 (the first after 0.2 T with a full window), from step 111
        assert vals[5] == 111


def test_optimal_continuing_equals_the_python_accumulation():
    d, ts = riverswim()
    ep = ts.episode()
    for i, r, vals in played(optimal, d.test, ts, {}, 100):
        evr = evaluator(ts, i)
        P = np.ascontiguousarray(ts.mdps[i])
        Q = np.zeros((d.test.n_states, d.test.n_actions))
        optimal.q_iteration_rows(P, np.ascontiguousarray(ep.R), evr.succ, evr.nsucc, 0.95,
                                 ts.horizon, Q)
        pol = optimal._ties(Q)
        n = len(range(100, ts.horizon, 100)) + 1
        same(vals, expected(evr, [pol] * n, ts.horizon, 100, r, np.zeros(n, int)))


def map_policy(alpha, Rr, succ, nsucc, H):
    """Colosseum's current policy of PSRL, in NumPy: the optimal H-step policy of the
    posterior's MAP model (``alpha`` normalised per row; rewards ``Rr`` on the slots),
    exact ties uniform, (H, nX, nU)."""
    nX, nU, K = alpha.shape
    live = np.arange(K)[None, None, :] < nsucc[:, :, None]
    a = np.where(live, alpha, 0.0)
    s = a.sum(axis=2, keepdims=True)
    Pm = np.divide(a, s, out=np.zeros_like(a), where=s > 0)
    V = np.zeros(nX)
    pol = np.zeros((H, nX, nU))
    for h in range(H - 1, -1, -1):
        Q = (Pm * (np.where(live, Rr, 0.0) + V[np.where(live, succ, 0)])).sum(axis=2)
        best = Q.max(axis=1, keepdims=True)
        ties = Q == best
        pol[h] = ties / ties.sum(axis=1, keepdims=True)
        V = best[:, 0]
    return pol


def psrl_policies(prior, ts, i, seed, L):
    """Replay of PSRL's episodic form (``psrl._trajectory_episodic``) in Python with
    the same numba building blocks and draws, recording Colosseum's current policy at
    each of its rows: the optimal policy of the posterior's MAP model (:func:`map_policy`;
    Colosseum's ``current_optimal_stochastic_policy``). Under a prior whose rewards are
    unknown, each sample's rewards drawn before its transitions and the posterior
    updated after each step, as the kernel does; the MAP model's rewards are the
    posterior means."""
    from bbrlcore.agents._kernels import env_reward_rows
    from bbrlcore.agents._rewards import (
        reward_posterior_init,
        reward_posterior_mean,
        reward_posterior_update,
        reward_sample_rows,
    )

    ep = ts.episode()
    H, T = ts.episode_length, ts.horizon
    st = psrl.setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    states, off = psrl.reach_sets(succ, nsucc, int(ep.initial_state), H)
    need = psrl.decision_states(states, off, H)
    P = np.ascontiguousarray(st.env(np.asarray(ts.mdps[i], dtype=np.float64)))
    nX = P.shape[0]
    _seed(seed)
    rs = generator_from_numba()
    alpha = np.ascontiguousarray(st.theta).copy()
    rpar = psrl.reward_prior_array(prior)
    learn = rpar[0] != 0.0
    R0 = psrl.agent_rewards(st, rpar)
    Rm = R0.copy()
    nU = alpha.shape[1]
    rstat = reward_posterior_init(nX, nU, rpar)
    Ps = np.zeros_like(alpha)
    Va, Vb = np.zeros(nX), np.zeros(nX)
    pi = np.zeros(off[H], dtype=np.int64)

    def current():
        if not learn:
            return map_policy(alpha, R0, succ, nsucc, H)
        Rr = np.zeros_like(alpha)
        for z in range(nX):
            for a in range(nU):
                Rr[z, a, :] = reward_posterior_mean(rstat, rpar, z, a)
        return map_policy(alpha, Rr, succ, nsucc, H)

    rows, x = [], 0
    for t in range(T):
        h = t % H
        if h == 0:
            x = env_reset(int(ep.initial_state), nX)
            if learn:
                reward_sample_rows(rstat, rpar, nsucc, Rm, need, rs)
            sample_rows_of(alpha, nsucc, Ps, need, rs)
            psrl.finite_horizon_plan_rows(Ps, Rm, succ, nsucc, states, off, H, pi, Va, Vb)
        j = psrl._position(states, off[h], off[h + 1], x)
        u = int(pi[j])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(st.R, st.Rstd, int(ep.gaussian), x, u, k)
        alpha[x, u, k] += 1.0
        if learn:
            reward_posterior_update(rstat, rpar, x, u, r, rs)
        x = succ[x, u, k]
        if t > 0 and t % L == 0:
            rows.append(current())
    rows.append(current())
    return rows


@pytest.mark.parametrize("L", [100, 9])
def test_psrl_episodic_equals_the_python_accumulation_of_its_policies(L):
    # L = 9 with H = 5: rows at t = 9, 99, ... end episodes
    d, ts = deepsea(size=5, episodes=80)
    prior = d.prior("uniform")
    seed = 5
    for i, r, vals in played(psrl, prior, ts, {}, L, seed=seed):
        pols = psrl_policies(prior, ts, i, seed + i, L)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, L, r))


def test_psrl_continuing_plays_the_same_trajectory_and_its_indicators_are_consistent():
    d, ts = riverswim(T=1200)
    for _, _r, vals in played(psrl, d.prior("uniform"), ts, {}, 100):
        assert np.isfinite(vals[:5]).all() and vals[0] >= 0 and vals[1] >= 0


# -- run tables ---------------------------------------------------------------------------


def test_run_tables_carry_the_indicators_and_the_checks_hold_them():
    d, ts = deepsea(n=2, episodes=40)
    ag = E.train_agent("psrl", {}, d.prior("uniform"), seed=0, gamma=ts.gamma,
                       horizon=ts.horizon, progress=False)
    a = E.run_agent(ts, ag, progress=False)
    b = E.run_agent(ts, ag, progress=False, log_every=50)
    assert a["rewards"].to_list() == b["rewards"].to_list()
    assert a.select(COLS).null_count().row(0) == (2,) * 5
    assert b["log_every"].to_list() == [50, 50]
    assert b.select(COLS).null_count().row(0) == (0,) * 5
    check_derived(b, "b.parquet")
    bad = b.with_columns(normalised_reward=pl.col("normalised_reward") + 1.0)
    with pytest.raises(BBRLError, match="normalised_reward .* is not"):
        check_derived(bad, "bad.parquet")
    bad = b.with_columns(expected_regret=pl.lit(None, pl.Float64))
    with pytest.raises(BBRLError, match="null together"):
        check_derived(bad, "bad.parquet")


def test_an_agent_without_a_policy_gets_null_columns_and_one_note(capsys):
    d, ts = deepsea(n=3, episodes=20)
    ag = E.train_agent("e-greedy", {"epsilon": 0.1}, d.prior("uniform"), seed=0,
                       gamma=ts.gamma, horizon=ts.horizon, progress=False)
    t = E.run_agent(ts, ag, progress=False, log_every=100)
    err = capsys.readouterr().err
    assert err.count("expected indicators are unavailable") == 1
    assert t["log_every"].to_list() == [100] * 3
    assert t.select(COLS).null_count().row(0) == (3,) * 5


def test_log_every_errors_are_one_line():
    d, ts = deepsea(n=1, episodes=2)
    ag = E.train_agent("random", {}, d.test, seed=0, gamma=ts.gamma, horizon=ts.horizon,
                       progress=False)
    for bad in (0, -5, True, 2.5):
        with pytest.raises(BBRLError, match="log_every=.*must be an integer >= 1"):
            E.run_agent(ts, ag, progress=False, log_every=bad)


def test_config_keys_of_an_experiment():
    from bbrlcore.plan.config import _indicators_of

    def fail(key, what):
        return BBRLError(f"{key}: {what}")

    assert _indicators_of({}, 0, fail) is None
    assert _indicators_of({"indicators": True}, 0, fail) == 100
    assert _indicators_of({"indicators": True, "log_every": 10}, 0, fail) == 10
    with pytest.raises(BBRLError, match=r"experiments\[0\].log_every=10: applies with"):
        _indicators_of({"log_every": 10}, 0, fail)
    with pytest.raises(BBRLError, match=r"experiments\[2\].log_every=0: must be an int"):
        _indicators_of({"indicators": True, "log_every": 0}, 2, fail)
    with pytest.raises(BBRLError, match=r"experiments\[1\].indicators='yes': expected"):
        _indicators_of({"indicators": "yes"}, 1, fail)


# -- the Python plugin hook ---------------------------------------------------------------


class _Uniform:
    """A Python agent acting uniformly at random, exposing its (stochastic) policy."""

    name = "uniform-py"

    def act(self, state):
        return int(self.rng.integers(self.n_actions))

    def policy(self):
        return np.full((self.n_states, self.n_actions), 1.0 / self.n_actions)


def _python_algorithm(policy):
    from bbrlcore.agents.api import PythonAgent, algorithm_of

    cls = type("Uniform", (PythonAgent,), {k: v for k, v in vars(_Uniform).items()
                                            if not k.startswith("__")})
    if policy is not None:
        cls.policy = policy
    else:
        del cls.policy
    return algorithm_of(cls, "test")


def test_a_python_agent_s_policy_hook_gives_its_indicators():
    d, ts = deepsea(n=2, episodes=40)
    alg = _python_algorithm(_Uniform.policy)
    ep = ts.episode()
    plain = alg.make_player(d.prior("uniform"), {}, None, ep)
    ind = alg.indicator_player(d.prior("uniform"), {}, None, ep, 30)
    nX, nU = d.test.n_states, d.test.n_actions
    uniform = np.full((nX, nU), 1.0 / nU)
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.mdps[i])
        r0, r1 = np.empty(ts.horizon), np.empty(ts.horizon)
        ret0, _ = plain(P, 3, r0)
        ret1, _, vals = ind(P, 3, r1)
        assert ret0 == ret1 and np.array_equal(r0, r1)
        same(vals, expected(evaluator(ts, i), lambda j: uniform, ts.horizon, 30, r1))


def test_a_python_agent_without_the_hook_has_no_indicator_player():
    assert _python_algorithm(None).indicator_player is None


def test_a_malformed_policy_is_one_line_naming_the_agent_and_the_step():
    from bbrlcore.agents.api import AgentError

    d, ts = deepsea(n=1, episodes=40)
    alg = _python_algorithm(lambda self: np.zeros(3))
    ind = alg.indicator_player(d.prior("uniform"), {}, None, ts.episode(), 100)
    with pytest.raises(AgentError, match=r"^uniform-py: policy\(\) at step 100: policy"):
        ind(np.ascontiguousarray(ts.mdps[0]), 0, None)


# -- UCRL2 and Q-learning-UCB: their policies recorded by replays -------------------------


def qucb_policies(prior, ts, i, seed, L, params):
    """Replay of ``q_ucb._trajectory`` (Jin et al.'s form) in Python with the same numba
    building blocks and draws, recording the greedy policy (ties uniform) at each row."""
    from bbrlcore.agents import q_ucb
    from bbrlcore.agents._kernels import argmax_random_tie, env_reward_rows

    ep = ts.episode()
    H, T = ts.episode_length, ts.horizon
    lay = ep.layout()
    P = np.ascontiguousarray(ts.mdps[i])
    nX, nU, _ = P.shape
    scale = q_ucb.reward_scale(prior)
    io = q_ucb.iota(nX, nU, T, params["p"])
    Q, V, N = q_ucb.q_ucb_tables(nX, nU, H, scale)
    pol = np.zeros((H, nX, nU))
    _seed(seed)
    rows, x = [], 0
    for t in range(T):
        h = t % H
        if h == 0:
            x = env_reset(int(ep.initial_state), nX)
        u = argmax_random_tie(Q[h, x])
        k = env_step_rows(P, lay.nsucc, x, u)
        r = env_reward_rows(ep.R, ep.Rstd, ep.gaussian, x, u, k)
        y = int(lay.succ[x, u, k])
        q_ucb.q_ucb_update(Q, V, N, h, x, u, r, y, H, params["c"], io, scale)
        x = y
        if t > 0 and t % L == 0:
            rows.append(q_ucb.greedy_ties(Q, pol).copy())
    rows.append(q_ucb.greedy_ties(Q, pol).copy())
    return rows


def test_q_learning_ucb_equals_the_python_accumulation_of_its_policies():
    from bbrlcore import agents
    from bbrlcore.agents import q_ucb

    d, ts = deepsea(size=4, n=2, episodes=100)
    params = agents.get("q-learning-ucb").parse_params({})
    for i, r, vals in played(q_ucb, d.test, ts, params, 50, seed=2):
        pols = qucb_policies(d.test, ts, i, 2 + i, 50, params)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 50, r))


def empirical_policy_np(Cs, N, Rm, Rs, known, succ, nsucc, rmax, gamma=0.99):
    """Colosseum's current policy of UCRL2 in NumPy: greedy (exact ties uniform) on the
    gamma-discounted values of the empirical model (counts ``Cs`` / ``N``; a pair never
    tried goes to every state alike with the largest reward ``rmax``)."""
    nX, nU, K = Cs.shape
    live = np.arange(K)[None, None, :] < nsucc[:, :, None]
    Pm = np.divide(Cs, N[:, :, None], out=np.zeros_like(Cs), where=N[:, :, None] > 0)
    r = np.where(live, Rm if known else np.broadcast_to(Rs[:, :, None], Cs.shape), 0.0)
    V = np.zeros(nX)
    for _ in range(5000):
        Q = np.where(N > 0, (Pm * (r + gamma * V[np.where(live, succ, 0)])).sum(axis=2),
                     rmax + gamma * V.mean())
        V2 = Q.max(axis=1)
        if np.abs(V2 - V).max() <= 1e-12 * max(1.0, np.abs(V2).max()):
            V = V2
            break
        V = V2
    Q = np.where(N > 0, (Pm * (r + gamma * V[np.where(live, succ, 0)])).sum(axis=2),
                 rmax + gamma * V.mean())
    ties = np.isclose(Q, Q.max(axis=1, keepdims=True), rtol=0, atol=1e-9)
    return ties / ties.sum(axis=1, keepdims=True)


def ucrl2_policies(prior, ts, i, seed, L, params):
    """Replay of ``ucrl2._trajectory`` in Python with the same numba building blocks and
    draws, recording Colosseum's current policy (the greedy policy of the empirical
    model as of the episode's start, :func:`empirical_policy_np`) and the current state
    at each row (under a prior whose rewards are unknown, its empirical rewards as the
    kernel's)."""
    import math

    from bbrlcore.agents import ucrl2
    from bbrlcore.agents._kernels import env_reward_rows
    from bbrlcore.agents._rewards import empirical_init, empirical_update, ucrl2_rewards
    from bbrlcore.mdp.reward_prior import reward_prior_of, reward_range

    ep = ts.episode()
    T = ts.horizon
    st = ucrl2.agent_setting(prior, ep)
    succ = np.ascontiguousarray(st.succ, dtype=np.int64)
    nsucc = np.ascontiguousarray(st.nsucc, dtype=np.int64)
    P = np.ascontiguousarray(st.env(np.asarray(ts.mdps[i], dtype=np.float64)))
    nX, nU, K = P.shape
    C = np.zeros((nX, nU, K))
    N = np.zeros((nX, nU), dtype=np.int64)
    v = np.zeros((nX, nU), dtype=np.int64)
    allowed = np.ascontiguousarray(st.theta) > 0.0
    values, pi = np.zeros(nX), np.zeros(nX, dtype=np.int64)
    ties = np.ones(nX, dtype=np.int64)
    learn = not reward_prior_of(prior).known
    lo, hi = reward_range(prior)
    Rm = np.zeros_like(st.Rm) if learn else st.Rm
    emp = empirical_init(nX, nU)
    Cs, Rs = np.zeros_like(C), np.full((nX, nU), hi)
    _seed(seed)
    x = env_reset(int(ep.initial_state), nX)
    rows, states, started = [], [], False
    for t in range(T):
        u = int(pi[x])
        if not started or v[x, u] >= max(1, N[x, u]):
            N += v
            v[:] = 0
            if learn:
                ucrl2_rewards(emp, nsucc, lo, hi, math.log(2.0 * nX * nU * (t + 1)
                                                           / params["delta"]), Rm)
            Cs = C.copy()
            Rs = np.where(emp[:, :, 1] > 0, emp[:, :, 0] / np.maximum(emp[:, :, 1], 1), hi)
            ucrl2.extended_value_iteration(C, N, allowed, Rm, succ, nsucc, t + 1,
                                           params["delta"], values, pi,
                                           ucrl2.EVI_MAX_SWEEPS,
                                           params.get("bound") == "bernstein", ties)
            started = True
            u = int(pi[x])
        k = env_step_rows(P, nsucc, x, u)
        r = env_reward_rows(st.R, st.Rstd, ep.gaussian, x, u, k)
        if learn:
            empirical_update(emp, x, u, r)
        v[x, u] += 1
        C[x, u, k] += 1.0
        allowed[x, u, k] = True
        x = int(succ[x, u, k])
        if t > 0 and t % L == 0:
            rows.append(empirical_policy_np(Cs, N.copy(), st.Rm, Rs, not learn, succ,
                                            nsucc, hi))
            states.append(x)
    rows.append(empirical_policy_np(Cs, N.copy(), st.Rm, Rs, not learn, succ, nsucc, hi))
    states.append(x)
    return rows, np.array(states)


def test_ucrl2_continuing_equals_the_python_accumulation_of_its_policies():
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2

    d, ts = riverswim(n=2, T=1500)
    prior = d.prior("uniform")
    params = agents.get("ucrl2").parse_params({})
    for i, r, vals in played(ucrl2, prior, ts, params, 100, seed=8):
        pols, states = ucrl2_policies(prior, ts, i, 8 + i, 100, params)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 100, r, states))


def test_ucrl2_episodic_plays_the_same_trajectory():
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2

    d, ts = deepsea(size=4, n=1, episodes=50)
    params = agents.get("ucrl2").parse_params({})
    for _, _r, vals in played(ucrl2, d.prior("uniform"), ts, params, 20):
        assert np.isfinite(vals[:5]).all() and vals[1] >= 0


def test_a_workflow_experiment_with_indicators_passes_log_every_to_its_run_jobs(tmp_path):
    from bbrlcore.plan import bundles as B
    from bbrlcore.plan import config as C
    from bbrlcore.protocol.batch import load_spec

    base = {"n_mdps": 4, "horizon": 20, "algorithms": {"random": {}}}
    plan = C.load({**base, "experiments": [
        {"test": "GC", "prior": "GC", "indicators": True, "log_every": 5},
        {"test": "GDL", "prior": "GDL"}]})
    assert [e.log_every for e in plan.experiments] == [5, None]
    import jsonschema
    import yaml

    from bbrlcore.plan.config import INDICATOR_KEYS

    schema = yaml.safe_load(open(Path(__file__).resolve().parents[1] / "workflow" /
                                 "schemas" / "config.schema.yaml").read())
    jsonschema.validate(plan.config, schema)
    entry = schema["properties"]["experiments"]["items"]["properties"]
    assert set(INDICATOR_KEYS) <= set(entry)
    bad = {**plan.config, "experiments": [{"test": "GC", "prior": "GC", "indicators": True,
                                           "log_every": 0}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    runs = [b for b in B.bundles(plan) if b.kind == "run"]
    specs = [B.spec(plan, b, str(tmp_path), {}) for b in runs]
    assert {k: v for s in specs for k, v in s.get("log_every", {}).items()} == {"GC-GC": 5}
    for s in specs:
        load_spec(json.dumps(s))
    bad = {**specs[0], "log_every": {"GC-GC": 0}}
    with pytest.raises(BBRLError, match="log_every must map experiments to integers"):
        load_spec(json.dumps(bad))
    with pytest.raises(BBRLError, match=r"experiments\[0\].log_every=5: applies with"):
        C.load({**base, "experiments": [{"test": "GC", "prior": "GC", "log_every": 5}]})


# -- priors whose rewards are unknown (+rnig, +rbeta): the same trajectories, indicators


@pytest.mark.parametrize("name", ["UDeepSea-5+rnig", "UDeepSea-5+rbeta"])
def test_psrl_episodic_under_unknown_rewards_equals_the_python_accumulation(name):
    from bbrlcore.mdp import distributions as D

    prior = D.load(name)
    _, ts = deepsea(size=5, episodes=80)
    seed = 3
    for i, r, vals in played(psrl, prior, ts, {}, 9, seed=seed):
        pols = psrl_policies(prior, ts, i, seed + i, 9)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 9, r))


@pytest.mark.parametrize("name", ["URiverSwim-5+rnig", "URiverSwim-5+rbeta"])
def test_psrl_and_ucrl2_continuing_under_unknown_rewards_play_the_same_trajectory(name):
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2
    from bbrlcore.mdp import distributions as D

    prior = D.load(name)
    _, ts = riverswim(T=1500)
    for module, params in ((psrl, {}), (ucrl2, agents.get("ucrl2").parse_params({}))):
        for _, _r, vals in played(module, prior, ts, params, 100):
            assert np.isfinite(vals[:5]).all() and vals[0] >= 0 and vals[1] >= 0


def test_ucrl2_under_unknown_rewards_equals_the_python_accumulation_of_its_policies():
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2
    from bbrlcore.mdp import distributions as D

    prior = D.load("URiverSwim-5+rnig")
    _, ts = riverswim(n=2, T=1500)
    params = agents.get("ucrl2").parse_params({})
    for i, r, vals in played(ucrl2, prior, ts, params, 100, seed=8):
        pols, states = ucrl2_policies(prior, ts, i, 8 + i, 100, params)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 100, r, states))


def test_q_learning_ucb_under_unknown_rewards_equals_the_python_accumulation():
    from bbrlcore import agents
    from bbrlcore.agents import q_ucb
    from bbrlcore.mdp import distributions as D

    prior = D.load("UDeepSea-4+rnig")
    _, ts = deepsea(size=4, n=2, episodes=100)
    params = agents.get("q-learning-ucb").parse_params({})
    for i, r, vals in played(q_ucb, prior, ts, params, 50, seed=2):
        pols = qucb_policies(prior, ts, i, 2 + i, 50, params)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 50, r))


def test_psrl_continuing_current_policy_is_the_map_model_s_discounted_greedy_policy():
    """The continuing form's current policy (Colosseum's: discounted value iteration,
    gamma 0.99, of the posterior's MAP model, ties exact): against NumPy's value
    iteration, from a cold and from a warm start."""
    rng = np.random.default_rng(4)
    nX, nU, K = 6, 3, 3
    succ = rng.integers(0, nX, size=(nX, nU, K)).astype(np.int64)
    nsucc = rng.integers(1, K + 1, size=(nX, nU)).astype(np.int64)
    alpha = rng.random((nX, nU, K)) + 0.1
    Rr = rng.random((nX, nU, K))
    Rr[2, 1] = Rr[2, 0]  # (a tie: the same row, the same rewards)
    alpha[2, 1], succ[2, 1], nsucc[2, 1] = alpha[2, 0], succ[2, 0], nsucc[2, 0]
    live = np.arange(K)[None, None, :] < nsucc[:, :, None]
    a = np.where(live, alpha, 0.0)
    Pm = a / a.sum(axis=2, keepdims=True)
    V = np.zeros(nX)
    for _ in range(20_000):
        Q = (Pm * (np.where(live, Rr, 0.0) + 0.99 * V[np.where(live, succ, 0)])).sum(axis=2)
        V = Q.max(axis=1)
    want = (Q == Q.max(axis=1, keepdims=True)) / (Q == Q.max(axis=1, keepdims=True)).sum(
        axis=1, keepdims=True)
    assert want[2, 0] == want[2, 1] == 0.5 or want[2, 2] == 1.0
    for V0 in (np.zeros(nX), V + 0.5):
        pol = np.zeros((nX, nU))
        Vk = V0.copy()
        sweeps = psrl.map_policy_discounted(alpha, Rr, succ, nsucc, 0.99, Vk, np.zeros(nX),
                                            pol, np.zeros(nU))
        assert sweeps < psrl.MAP_MAX_SWEEPS
        np.testing.assert_allclose(Vk, V, rtol=1e-7)
        np.testing.assert_array_equal(pol, want)
# -- a prior that does not know the support (+dir<α>, issue 42): UCRL2 on every next state


@pytest.mark.parametrize("bound", ["l1", "bernstein"])
def test_ucrl2_under_dir_equals_the_python_accumulation_of_its_policies(bound):
    """Under ``+dir`` UCRL2's rows are the full layout (every next state allowed): the
    indicator player plays the plain player's trajectory, bit for bit, and its
    indicators are the Python accumulation of the replayed policies."""
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2
    from bbrlcore.mdp import distributions as D

    prior = D.load("URiverSwim-5+dir0.3235")
    _, ts = riverswim(n=2, T=1500)
    params = agents.get("ucrl2").parse_params({"bound": bound})
    assert ucrl2.agent_setting(prior, ts.episode()).layout.is_full
    for i, r, vals in played(ucrl2, prior, ts, params, 100, seed=8):
        pols, states = ucrl2_policies(prior, ts, i, 8 + i, 100, params)
        same(vals, expected(evaluator(ts, i), pols, ts.horizon, 100, r, states))


@pytest.mark.parametrize("name", ["UDeepSea-4+dir0.3235", "UDeepSea-4+dir0.3235+rnig"])
def test_ucrl2_episodic_under_dir_plays_the_same_trajectory(name):
    from bbrlcore import agents
    from bbrlcore.agents import ucrl2
    from bbrlcore.mdp import distributions as D

    _, ts = deepsea(size=4, n=1, episodes=50)
    params = agents.get("ucrl2").parse_params({"bound": "bernstein"})
    for _, _r, vals in played(ucrl2, D.load(name), ts, params, 20):
        assert np.isfinite(vals[:5]).all() and vals[1] >= 0
