"""BOSS, SBOSS and BOLT under a prior that does not know the support (``+dir<α>``,
issue 42): they play, reproducibly, on every next state; BOSS with K = 1 and B = 0 is still
PSRL's continuing form with one sample per trajectory; the memory limit is one line."""

from __future__ import annotations

import numpy as np
import pytest

from bbrlcore import protocol
from bbrlcore.agents import registry
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from prior_play import play_seeds  # (tests/)

AGENTS = [("boss", {"K": "1", "B": "2"}), ("boss", {"K": "3", "B": "2"}),
          ("sboss", {"epsilon": "0.01", "delta": "0.5"}),
          ("sboss", {"epsilon": "0.01", "delta": "0.5", "compat": "true"}),
          ("bolt", {"eta": "2"})]


@pytest.mark.parametrize("name,params", AGENTS)
def test_they_take_the_suffix_and_play_reproducibly(name, params):
    assert registry.get(name).dirichlet_all
    a = play_seeds(name, params, D.load("UGC+dir0.5"), D.builtin("GC"), [4, 4, 9], 60)
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert np.array_equal(a[0][2], a[1][2])
    assert not np.array_equal(a[0][1], a[2][1])
    # not the supported prior's plan: GC's accurate prior knows its support, +dir does not
    b = play_seeds(name, params, D.load("GC"), D.builtin("GC"), [4], 60)
    c = play_seeds(name, params, D.load("GC+dir0.5"), D.builtin("GC"), [4], 60)
    assert not np.array_equal(b[0][1], c[0][1])


@pytest.mark.parametrize("name,params", AGENTS)
def test_they_play_a_family_with_episodes_under_dir(name, params):
    a = play_seeds(name, params, D.load("UDeepSea-4+dir0.3235"), D.load_test("DeepSea-4"),
                 [3, 3], 4 * 30, 4)
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert np.isfinite(a[0][1]).all()


def test_boss_one_sample_never_resampled_is_psrl_continuing_under_dir():
    """K = 1, B = 0 under +dir: one dense posterior sample per trajectory, PSRL's sampler
    and solver: the same rewards, step by step, as PSRL with one sample per trajectory."""
    for prior, test, horizon in (("UGC+dir0.5", D.builtin("GC"), 120),
                                 ("URiverSwim-6+dir0.3235", D.load_test("RiverSwim-6"), 150),
                                 ("GC+dir0.2", D.builtin("GC"), 100)):
        seeds = [11, 12, 13]
        boss = play_seeds("boss", {"K": "1", "B": "0"}, D.load(prior), test, seeds, horizon,
                        n_mdps=3)
        psrl = play_seeds("psrl", {"schedule": "fixed", "period": str(horizon)}, D.load(prior),
                        test, seeds, horizon, n_mdps=3)
        for b, p in zip(boss, psrl, strict=True):
            assert b[0] == p[0] and np.array_equal(b[1], p[1]), prior
            assert b[2].tolist() == p[2].tolist() == [1]


@pytest.mark.parametrize("name,params", [("boss", {"K": "1", "B": "1"}),
                                         ("sboss", {"epsilon": "1", "delta": "1"}),
                                         ("bolt", {"eta": "1"})])
def test_a_model_above_the_memory_limit_is_refused_in_one_line(name, params):
    from types import SimpleNamespace

    alg = registry.get(name)
    prior = D.load("UGC+dir0.5")
    big = SimpleNamespace(**{k: getattr(prior, k) for k in ("dirichlet_all", "short_name",
                                                            "reward_prior")},
                          n_states=11_000, n_actions=4, support_layout=prior.support_layout,
                          theta_rows=prior.theta_rows)
    with pytest.raises(BBRLError) as exc:
        alg.check_setting(alg.parse_params(params), big, 0.95, 10)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg and "GB" in msg, msg


def test_bolt_plans_the_optimistic_model_over_every_next_state():
    """BOLT's first solve under GC+dir0.5 is the optimistic model of the mean α/(Sα) on
    all S next states with η imagined transitions to the best of them (a numpy value
    iteration of the dense model), not the one over GC's support."""
    from bbrlcore.agents.api import _place
    from bbrlcore.agents.bolt import BOLT
    from bbrlcore.mdp import rows

    prior = D.load("GC+dir0.5")
    ts = protocol.new_test_set(D.builtin("GC"), 1, 0.95, 10, seed=0)
    eta, gamma = 3.0, 0.95
    agent = BOLT({"eta": eta}, prior, None, gamma, 10)
    _place(agent, prior, ts.episode())
    succ, nsucc, theta, Rm, V0, _pi0, _sig0, _fpar = agent.setup()
    S, A = prior.n_states, prior.n_actions
    assert (nsucc == S).all() and (theta == 0.5).all()
    R = np.asarray(prior.rewards_on(rows.full(S, A)))
    assert np.array_equal(Rm, R)

    def solve(P, R, allowed):
        n = S * 0.5
        V = np.zeros(S)
        for _ in range(3000):
            T = R + gamma * V[None, None, :]
            top = np.where(allowed, T, -np.inf).max(axis=2)
            V = (n / (n + eta) * (P * T).sum(axis=2) + eta / (n + eta) * top).max(axis=1)
        return V

    V = solve(np.full((S, A, S), 1.0 / S), R, np.ones((S, A, S), bool))
    assert np.allclose(V0, V, atol=5e-3), (V0, V)
    # the support's optimistic model (GC's accurate prior) is another one
    th = np.asarray(rows.scatter(prior.theta_rows, prior.support_layout))
    Vs = solve(th / th.sum(axis=2, keepdims=True), R, th > 0)
    assert not np.allclose(V0, Vs, atol=0.1)


def test_sboss_merged_size_at_the_prior_is_the_dense_priors():
    from bbrlcore.agents.sboss import merged_size, merged_size_all

    for S, A, a, eps, compat in ((5, 3, 0.5, 0.01, False), (5, 3, 0.5, 10.0, False),
                                 (5, 3, 0.5, 10.0, True), (7, 2, 0.3235, 1e-3, False)):
        dense = merged_size(np.full((S, A, S), a), eps, compat)
        assert merged_size_all(S, A, a, eps, compat) == dense


@pytest.mark.parametrize("name,params", [("boss", {"K": "2", "B": "2"}),
                                         ("sboss", {"epsilon": "0.01", "delta": "0.5"}),
                                         ("bolt", {"eta": "2"})])
def test_cost_features_count_the_full_layout(name, params):
    alg = registry.get(name)
    p = alg.parse_params(params)
    test = D.load_test("DeepSea-4")
    plain = alg.cost_features(p, D.load("UDeepSea-4"), test, 0.95, 100)
    full = alg.cost_features(p, D.load("UDeepSea-4+dir0.5"), test, 0.95, 100)
    prior = D.load("UDeepSea-4")
    S, A, nnz = prior.n_states, prior.n_actions, prior.support_layout.nnz
    key = "backups" if name == "bolt" else "entries"
    if name == "boss":  # the same samplings, each over S·A·S transitions, not the support's
        assert full["rebuilds"] == plain["rebuilds"]
        assert full[key] == pytest.approx(plain[key] * S * A * S / nnz)
    elif name == "bolt":  # two passes over every transition of the full model a step
        assert full[key] == 2.0 * 100 * S * A * S
    else:  # at least one sample of S slots per pair at every rebuild
        assert full[key] >= full["rebuilds"] * S * A * S > plain[key]
