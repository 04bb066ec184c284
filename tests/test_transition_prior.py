"""Priors that do not know the transitions' support (issue 42): ``+dir<α>``, a Dirichlet of
concentration α on every next state (Colosseum's PSRL prior); PSRL samples it exactly,
the built-ins that never read the transition prior take it, the others refuse it."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrlcore import plan as P
from bbrlcore import protocol
from bbrlcore.agents import registry
from bbrlcore.agents._rng import rng_new
from bbrlcore.agents.psrl import sample_rows_all
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import transition_prior as TP
from prior_play import play_seeds  # (tests/)

ROOT = Path(__file__).resolve().parents[1]


def test_suffix_names_the_prior_in_either_order_with_one_canonical_name():
    a = D.load("UDeepSea-4+dir0.3235+rnig")
    b = D.load("UDeepSea-4+rnig+dir0.3235")
    for p in (a, b):
        assert p.short_name == "UDeepSea-4+dir0.3235+rnig"
        assert p.dirichlet_all == 0.3235 and p.reward_prior.kind == "nig"
    plain = D.load("UDeepSea-4")
    assert plain.dirichlet_all is None
    # the same distribution (entries, rewards), only α added
    assert np.array_equal(a.entry_keys, plain.entry_keys)
    assert np.array_equal(D.load("GC+dir2").reward, D.load("GC").reward)
    assert D.load("GC+dir2").short_name == "GC+dir2"
    assert "Dirichlet(2) on every next state" in D.load("GC+dir2").describe()


@pytest.mark.parametrize("name,why", [
    ("GC+dir0", "got '0'"), ("GC+dir-1", "got '-1'"), ("GC+dirinf", "got 'inf'"),
    ("GC+dirnan", "got 'nan'"), ("GC+dirx", "got 'x'"), ("GC+dir", "got ''"),
    ("GC+dir1+dir2", "given twice"), ("GC+rnig+dir1+rbeta", "two reward suffixes")])
def test_bad_concentration_is_one_line_naming_the_prior(name, why):
    with pytest.raises(BBRLError) as exc:
        D.load(name)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg and why in msg, msg


def test_dictionary_and_parquet_keep_the_concentration(tmp_path):
    p = D.load("UDeepSea-4+dir0.3235+rnig")
    d = p.to_dict()
    assert d["dirichlet_all"] == 0.3235
    back = D.FDMDistribution.from_dict(d)
    assert back.dirichlet_all == 0.3235 and back.same_as(p)
    assert back.reward_prior == p.reward_prior
    assert "dirichlet_all" not in D.load("UDeepSea-4").to_dict()
    for bad in (0, -1.0, "0.3", float("inf"), True):
        with pytest.raises(BBRLError) as exc:
            D.FDMDistribution.from_dict({**d, "dirichlet_all": bad}, "x.json")
        assert "x.json" in str(exc.value) and "\n" not in str(exc.value)
    f = tmp_path / "p.parquet"
    D.write_parquet(p, f)
    q = D.load(f)
    assert q.dirichlet_all == 0.3235 and q.short_name == p.short_name
    assert q.reward_prior == p.reward_prior
    # a declared file with the suffix
    D.write_parquet(D.load("UGC").renamed("Mine"), tmp_path / "mine.parquet")
    assert D.load(f"{tmp_path / 'mine.parquet'}+dir0.5").dirichlet_all == 0.5


def test_agent_artefact_embeds_the_prior(tmp_path):
    from bbrlcore.protocol.training import read_agent, train_agent, write_agent

    prior = D.load("URiverSwim-6+dir0.3235+rnig")
    agent = train_agent("psrl", {}, prior, horizon=40, progress=False)
    write_agent(agent, tmp_path / "a.json")
    back = read_agent(tmp_path / "a.json")
    assert back.prior.dirichlet_all == 0.3235
    assert back.prior.short_name == "URiverSwim-6+dir0.3235+rnig"
    ts = protocol.new_test_set(D.load_test("RiverSwim-6"), 2, 0.95, 40, seed=0)
    r = [protocol.run_agent(ts, a, progress=False)["discounted_return"].to_list()
         for a in (agent, back)]
    assert r[0] == r[1]


# ---------------------------------------------------------------------------------------
# Exactness of PSRL's draw: Dir(α + c) over all S states


def _draws(alpha_slots, slots, S, a_all, n, seed=7):
    """``n`` rows drawn by :func:`sample_rows_all`, one row (x = 0, u = 0) whose slots are
    the states ``slots`` of concentrations ``alpha_slots``."""
    k = len(slots)
    succ = np.zeros((1, 1, k), dtype=np.int64)
    succ[0, 0] = slots
    nsucc = np.array([[k]], dtype=np.int64)
    alpha = np.array(alpha_slots, dtype=np.float64).reshape(1, 1, k)
    need = np.zeros(1, dtype=np.int64)
    Pd = np.zeros((1, 1, S))
    rs = rng_new(seed)
    out = np.empty((n, S))
    for i in range(n):
        sample_rows_all(alpha, succ, nsucc, a_all, need, Pd, rs)
        out[i] = Pd[0, 0]
    return out


def _check(samples, mean, var, what):
    """Sample mean and variance within 5 standard errors of ``mean`` and ``var`` (the
    variance's standard error from the samples' fourth moment)."""
    n = samples.size
    m = samples.mean()
    se_m = np.sqrt(var / n)
    assert abs(m - mean) < 5 * se_m, (what, "mean", m, mean, se_m)
    dev2 = (samples - m) ** 2
    v = dev2.mean() * n / (n - 1)
    se_v = dev2.std() / np.sqrt(n)
    assert abs(v - var) < 5 * se_v, (what, "variance", v, var, se_v)
    return se_m


@pytest.mark.parametrize("a_all,counts", [(0.3235, (5.0, 0.0, 2.0)), (1.0, (0.0, 3.0, 12.0))])
def test_a_drawn_row_is_dirichlet_alpha_plus_counts_over_every_state(a_all, counts):
    """Slots 1, 4, 6 of a row of S = 9 states with counts ``counts``: each slot's
    probability and the background's mass (the 6 other states) have the mean and
    variance of Dir(α + c) (Beta marginals); the test would fail for a Dirichlet over the
    slots alone (background 0) and for one that forgets α on the slots."""
    S, slots = 9, [1, 4, 6]
    beta = np.full(S, a_all)
    for s, c in zip(slots, counts, strict=True):
        beta[s] += c
    b0 = beta.sum()
    X = _draws([beta[s] for s in slots], slots, S, a_all, 40_000)
    assert np.allclose(X.sum(axis=1), 1.0) and (X > 0).any(axis=0).all()

    def beta_moments(a):
        return a / b0, a * (b0 - a) / (b0 ** 2 * (b0 + 1))

    for s in slots:
        mean, var = beta_moments(beta[s])
        se = _check(X[:, s], mean, var, f"slot {s}")
        # the wrong model (Dir over the slots only) is far away
        assert abs(beta[s] / beta[slots].sum() - mean) > 20 * se
    bg = np.setdiff1d(np.arange(S), slots)
    mean, var = beta_moments(beta[bg].sum())
    se = _check(X[:, bg].sum(axis=1), mean, var, "background mass")
    assert mean > 20 * se  # (a sampler without the background has none)
    mean, var = beta_moments(a_all)
    _check(X[:, bg[2]], mean, var, "one background state")


# ---------------------------------------------------------------------------------------
# PSRL under +dir: reproducible, end to end


@pytest.mark.parametrize("prior,test,episodes,params", [
    ("UDeepSea-5+dir0.3235+rnig", "DeepSea-5", 5, {}),
    ("UDeepSea-5+dir0.3235", "DeepSea-5", 5, {}),
    ("URiverSwim-6+dir0.3235+rnig", "RiverSwim-6", 0, {}),
    ("URiverSwim-6+dir1", "RiverSwim-6", 0, {"schedule": "fixed", "period": "10"})])
def test_psrl_same_seed_same_trajectory(prior, test, episodes, params):
    a = play_seeds("psrl", params, D.load(prior), D.load_test(test), [4, 4, 9], 150, episodes)
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert not np.array_equal(a[0][1], a[2][1])
    assert a[0][2][0] >= (150 // episodes if episodes else 2)  # (samples drawn)


def test_psrl_under_dir_differs_from_the_supported_prior_and_learns_deepsea():
    """With the rewards known, PSRL under ``+dir`` explores DeepSea-5's every next state
    (a different trajectory than under the uniform prior on the support) and still reaches
    the treasure often once it has learned (the last 100 episodes)."""
    test = D.load_test("DeepSea-5")
    dirr = play_seeds("psrl", {}, D.load("UDeepSea-5+dir0.3235"), test, [3], 5 * 400, 5)[0][1]
    uni = play_seeds("psrl", {}, D.load("UDeepSea-5"), test, [3], 5 * 400, 5)[0][1]
    assert not np.array_equal(dirr, uni)
    late = dirr[-500:].reshape(100, 5).sum(axis=1)
    assert (late > 0.5).mean() > 0.5, late


@pytest.mark.parametrize("name,params,episodes", [
    ("mbie-eb", {"beta": "0.5"}, 0), ("q-learning-ucb", {"c": "0.01"}, 10),
    ("random", {}, 0), ("optimal", {}, 0)])
def test_algorithms_that_never_read_the_transition_prior_take_it(name, params, episodes):
    a = play_seeds(name, params, D.load("URiverSwim-6+dir0.3235"), D.load_test("RiverSwim-6"),
                 [1], 60, episodes)
    b = play_seeds(name, params, D.load("URiverSwim-6"), D.load_test("RiverSwim-6"), [1], 60,
                 episodes)
    assert np.array_equal(a[0][1], b[0][1])  # (it reads no transition prior: the same)


#: The built-ins that plan on a support and refuse ``+dir``: none since issue 42 (BEB and
#: UCRL2, then BOSS, SBOSS, BOLT, BAMCP, BFS3, the formula agents and OPPS-DS took it).
REFUSING: tuple[str, ...] = ()


def test_every_builtin_takes_it_or_refuses_it():
    from bbrlcore.agents.base import DIRICHLET_ALL_BUILTINS

    assert set(DIRICHLET_ALL_BUILTINS) | set(REFUSING) == set(registry.BUILTIN_ENTRY_POINTS)
    assert not set(DIRICHLET_ALL_BUILTINS) & set(REFUSING)
    for name in DIRICHLET_ALL_BUILTINS:
        assert registry.get(name).dirichlet_all, name


def test_an_algorithm_on_a_support_refuses_it_in_one_line():
    """No built-in refuses it any more; one that plans on a support (a plugin without
    ``dirichlet_all``) is refused in one line naming it and the prior."""
    from bbrlcore.agents.base import check_dirichlet_all

    assert not REFUSING
    with pytest.raises(BBRLError) as exc:
        check_dirichlet_all("mine", False, D.load("UGC+dir0.5"))
    msg = str(exc.value)
    assert "\n" not in msg and "mine" in msg and "UGC+dir0.5" in msg, msg


def test_cli_trains_and_runs_psrl_under_colosseums_prior(capsys, tmp_path):
    def bbrl(*args):
        capsys.readouterr()
        rc = main([str(a) for a in args])
        return (rc, *capsys.readouterr())

    for test, setting in (("DeepSea-4", ["--episodes", "20"]),
                          ("RiverSwim-6", ["--horizon", "80"])):
        rc, _, err = bbrl("experiment", "new", "--test", test, "--n-mdps", "2", *setting,
                          "-o", tmp_path / f"{test}.parquet")
        assert rc == 0, err
        prior = f"U{test}+dir0.3235+rnig"
        rc, _, err = bbrl("train", "--agent", "psrl", "--prior", prior, "-q", "-o",
                          tmp_path / f"{test}-a.parquet")
        assert rc == 0, err
        rc, out, err = bbrl("run", "--experiment", tmp_path / f"{test}.parquet", "--agent",
                            tmp_path / f"{test}-a.parquet", "-o", tmp_path / f"{test}-r.parquet")
        assert rc == 0 and "2 trajectories" in out, err
        run = pl.read_parquet(tmp_path / f"{test}-r.parquet")
        assert run["resamples"].min() >= 2
    # (BOLT takes +dir since issue 42, not unknown rewards: still one line naming the prior)
    rc, _, err = bbrl("train", "--agent", "bolt", "--param", "eta=1", "--prior",
                      "UGC+dir0.5+rbeta", "-o", tmp_path / "x.parquet")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "UGC+dir0.5+rbeta" in err


def test_plan_reads_the_suffix_on_accurate_and_uniform(tmp_path):
    import yaml

    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg = copy.deepcopy(base)
    cfg["experiments"] = [{"test": "RiverSwim-6",
                           "prior": ["accurate", "uniform+rnig+dir0.3235"]}]
    cfg["algorithms"] = {"psrl": {}}
    plan = P.load(cfg)
    assert [e.prior for e in plan.experiments] == ["RiverSwim-6",
                                                   "URiverSwim-6+dir0.3235+rnig"]
    cfg["experiments"] = [{"test": "GC", "prior": "uniform+dir0"}]
    with pytest.raises(BBRLError) as exc:
        P.load(cfg)
    assert "\n" not in str(exc.value) and "uniform+dir0" in str(exc.value)
    cfg["experiments"] = [{"test": "GC", "prior": "uniform+dir0.5+rbeta"}]
    cfg["algorithms"] = {"bolt": {"eta": 1.0}}  # (+dir taken, unknown rewards not)
    with pytest.raises(BBRLError) as exc:
        P.load(cfg)
    assert "\n" not in str(exc.value) and "bolt" in str(exc.value)
    f = tmp_path / "mine.parquet"
    D.write_parquet(D.load("UGC").renamed("Mine"), f)
    cfg["distributions"] = {"Mine": str(f)}
    cfg["experiments"] = [{"test": "GC", "prior": "Mine+rbeta+dir2"}]
    cfg["algorithms"] = {"psrl": {}}
    plan = P.load(cfg)
    assert [e.prior for e in plan.experiments] == ["Mine+dir2+rbeta"]
    assert plan.distribution_spec("Mine+dir2+rbeta") == f"{f}+dir2+rbeta"
    assert TP.split_suffixes("Mine+dir2+rbeta") == ("Mine", 2.0, "beta")


def test_cost_features_count_the_dense_samples():
    """The cost model's work amounts of PSRL under ``+dir``: every row of S states drawn
    (S·A·S variates an episode) and backed up at every step, against the support's few
    slots under the uniform prior."""
    from bbrlcore.agents import psrl

    test = D.load_test("DeepSea-6")
    S, A, H = test.n_states, test.n_actions, 6
    dense = psrl.cost_features({}, D.load("UDeepSea-6+dir0.3235+rnig"), test, 1.0, 60, H)
    sparse = psrl.cost_features({}, D.load("UDeepSea-6"), test, 1.0, 60, H)
    assert dense["rebuilds"] == sparse["rebuilds"] == 10
    assert dense["entries"] == 10 * S * A * S
    assert dense["backups"] == 10 * (1 + (H - 1) * S) * A * S
    assert sparse["entries"] < dense["entries"] / 10
    cont = psrl.cost_features({}, D.load("URiverSwim-6+dir1"), D.load_test("RiverSwim-6"),
                              0.95, 100)
    assert cont["entries"] == cont["rebuilds"] * 6 * 2 * 6


# ---------------------------------------------------------------------------------------
# The posterior mean (e-Greedy, Soft-max): slots and a background, no dense array


@pytest.mark.parametrize("learn", (False, True))
def test_mean_model_backup_equals_the_dense_posterior_mean(learn):
    """:func:`q_iteration_all` on a few slots per row (GC's support, α = 0.5, random
    counts) gives the Q-iteration of the dense mean model (α + c)/(Sα + n) over all S
    states, sweep for sweep (rewards: the prior's, 0 elsewhere; or, ``learn``, one
    reward per pair on every next state)."""
    from bbrlcore.agents._kernels import q_iteration_all, rows_model_init_all, rows_model_update
    from bbrlcore.mdp.solvers import q_iteration_rows

    prior = D.load("GC")
    lay = prior.support_layout
    succ, nsucc = lay.succ, lay.nsucc
    S, A, a = prior.n_states, prior.n_actions, 0.5
    R = np.array(prior.reward_rows)
    if learn:
        R[lay.mask] = np.repeat(np.linspace(0.1, 0.9, S * A), nsucc.ravel())
    N, Np, Pm = rows_model_init_all(np.where(lay.mask, a, 0.0), nsucc, S, a)
    rng = np.random.default_rng(3)
    for _ in range(40):  # observations
        x, u = rng.integers(S), rng.integers(A)
        rows_model_update(N, Np, Pm, nsucc, x, u, rng.integers(nsucc[x, u]))
    dense = np.full((S, A, S), a)
    Rd = np.zeros((S, A, S))
    for x in range(S):
        for u in range(A):
            n = nsucc[x, u]
            dense[x, u, succ[x, u, :n]] = N[x, u, :n]
            Rd[x, u, :] = R[x, u, 0] if learn else 0.0
            Rd[x, u, succ[x, u, :n]] = R[x, u, :n]
    dense /= dense.sum(axis=2, keepdims=True)
    assert np.allclose(dense.sum(axis=2), 1.0) and (dense > 0).all()
    full = np.broadcast_to(np.arange(S), (S, A, S)).copy()
    Q1, Q2 = np.zeros((S, A)), np.zeros((S, A))
    s1 = q_iteration_all(Pm, R, succ, nsucc, Np, a, learn, 0.95, 250, Q1)
    s2 = q_iteration_rows(dense, Rd, full, np.full((S, A), S), 0.95, 250, Q2)
    assert s1 == s2 and np.allclose(Q1, Q2, rtol=1e-12, atol=1e-10)
    # not the support's mean model (the background matters)
    Q3 = np.zeros((S, A))
    q_iteration_rows(np.where(lay.mask, N / N.sum(axis=2, keepdims=True), 0.0), R, succ,
                     nsucc, 0.95, 250, Q3)
    assert not np.allclose(Q1, Q3, atol=0.1)


@pytest.mark.parametrize("name,params", [("e-greedy", {"epsilon": "0.1"}),
                                         ("soft-max", {"tau": "0.5"})])
def test_mean_model_agents_run_reproducibly_under_dir(name, params):
    for prior in ("UGC+dir0.3235", "UGC+dir0.3235+rnig"):
        a = play_seeds(name, params, D.load(prior), D.builtin("GC"), [4, 4, 9], 80)
        assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
        assert not np.array_equal(a[0][1], a[2][1])
    # UGC has one pseudo-count on every transition: +dir1 is the same prior
    b = play_seeds(name, params, D.load("UGC"), D.builtin("GC"), [4], 80)
    c = play_seeds(name, params, D.load("UGC+dir1"), D.builtin("GC"), [4], 80)
    assert np.array_equal(b[0][1], c[0][1])
    # GC's support is known to its accurate prior; not to +dir: another plan
    b = play_seeds(name, params, D.load("GC"), D.builtin("GC"), [4], 80)
    c = play_seeds(name, params, D.load("GC+dir0.3235"), D.builtin("GC"), [4], 80)
    assert not np.array_equal(b[0][1], c[0][1])


# ---------------------------------------------------------------------------------------
# BEB (issue 42): the posterior mean plus the bonus, on slots and a background


@pytest.mark.parametrize("learn", (False, True))
def test_beb_solve_equals_the_dense_bonus_model(learn):
    """BEB's solve under ``+dir`` (:func:`guez_value_iteration_all` on its slots and
    background, rewards and bonus from :func:`beb._set_bonus_all`) is the Guez value
    iteration of the dense model: the posterior mean (α + c)/(Sα + n) over all S states,
    every transition of (x, u) paying its reward (the prior's, 0 elsewhere; or, ``learn``,
    the pair's) plus β/(1 + Sα + n) — sweep for sweep, cold and warm-started."""
    from bbrlcore.agents import beb
    from bbrlcore.agents._kernels import (
        guez_value_iteration_all,
        rows_model_init_all,
        rows_model_update,
    )
    from bbrlcore.mdp.solvers import GUEZ_TOLERANCE, guez_value_iteration_rows

    prior = D.load("GC")
    lay = prior.support_layout
    succ, nsucc = lay.succ, lay.nsucc
    S, A, a, b = prior.n_states, prior.n_actions, 0.5, 2.0
    R = np.array(prior.reward_rows)
    if learn:
        R[lay.mask] = np.repeat(np.linspace(0.1, 0.9, S * A), nsucc.ravel())
    N, Np, Pm = rows_model_init_all(np.where(lay.mask, a, 0.0), nsucc, S, a)
    rng = np.random.default_rng(5)
    for _ in range(30):
        x, u = rng.integers(S), rng.integers(A)
        rows_model_update(N, Np, Pm, nsucc, x, u, rng.integers(nsucc[x, u]))
    Rb, rbg = np.empty_like(R), np.zeros((S, A))
    full = np.broadcast_to(np.arange(S), (S, A, S)).copy()
    fn = np.full((S, A), S)
    V1, V2 = np.zeros(S), np.zeros(S)
    pi1, pi2 = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    for step in range(2):
        if step:  # warm: one more observation, both from their previous values
            rows_model_update(N, Np, Pm, nsucc, 3, 1, 0)
        for x in range(S):
            for u in range(A):
                beb._set_bonus_all(Rb, rbg, R, Np, nsucc, b, learn, x, u)
        dense = np.full((S, A, S), a)
        Rd = np.zeros((S, A, S))
        for x in range(S):
            for u in range(A):
                n = nsucc[x, u]
                dense[x, u, succ[x, u, :n]] = N[x, u, :n]
                Rd[x, u, :] = R[x, u, 0] if learn else 0.0
                Rd[x, u, succ[x, u, :n]] = R[x, u, :n]
        Rd += b / (1.0 + dense.sum(axis=2, keepdims=True))
        dense /= dense.sum(axis=2, keepdims=True)
        s1 = guez_value_iteration_all(Pm, Rb, succ, nsucc, Np, a, rbg, 0.95, GUEZ_TOLERANCE,
                                      V1, pi1, np.empty(S), 10**6)
        s2 = guez_value_iteration_rows(dense, Rd, full, fn, 0.95, GUEZ_TOLERANCE, V2, pi2)
        assert s1 == s2 and np.allclose(V1, V2, rtol=1e-12, atol=1e-9), step
        assert np.array_equal(pi1, pi2)


def test_beb_runs_under_dir_reproducibly_and_as_the_same_prior():
    for prior in ("UGC+dir0.3235", "UGC+dir0.3235+rnig"):
        a = play_seeds("beb", {"beta": "1"}, D.load(prior), D.builtin("GC"), [4, 4, 9], 80)
        assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
        assert not np.array_equal(a[0][1], a[2][1])
    # UGC has one pseudo-count on every transition: +dir1 is the same posterior (solved
    # by value iteration instead of policy iteration: the same greedy actions here)
    b = play_seeds("beb", {"beta": "1"}, D.load("UGC"), D.builtin("GC"), [4], 80)
    c = play_seeds("beb", {"beta": "1"}, D.load("UGC+dir1"), D.builtin("GC"), [4], 80)
    assert np.array_equal(b[0][1], c[0][1])
    b = play_seeds("beb", {"beta": "1"}, D.load("GC"), D.builtin("GC"), [4], 80)
    c = play_seeds("beb", {"beta": "1"}, D.load("GC+dir0.3235"), D.builtin("GC"), [4], 80)
    assert not np.array_equal(b[0][1], c[0][1])
    feats = registry.get("beb").cost_features({"beta": 1.0, "compat": False},
                                              D.load("UGC+dir0.5"), D.builtin("GC"), 0.95,
                                              100)
    assert feats["sweep_backups"] > 0


# ---------------------------------------------------------------------------------------
# UCRL2 (issue 42): its confidence sets over every next state, as published


@pytest.mark.parametrize("params", [{}, {"bound": "bernstein"}])
def test_ucrl2_under_dir_allows_every_next_state(params):
    """UCRL2 reads no concentration: on UGC, whose support is every state, ``+dir`` is
    the same agent bit for bit, whatever α; on DeepSea (two successors a cell) its rows
    become the full layout and UCRL2-B, its sets now over all S states, plays another
    trajectory than on the support (and, knowing less, finds the treasure later)."""
    from bbrlcore.agents import ucrl2

    a = play_seeds("ucrl2", params, D.load("UGC"), D.builtin("GC"), [4, 5], 200)
    for prior in ("UGC+dir0.3235", "UGC+dir7"):
        b = play_seeds("ucrl2", params, D.load(prior), D.builtin("GC"), [4, 5], 200)
        for x, y in zip(a, b, strict=True):
            assert x[0] == y[0] and np.array_equal(x[1], y[1])
            assert np.array_equal(x[2], y[2])
    test = D.load_test("DeepSea-5")
    ts = protocol.new_test_set(test, 1, 0.95, 10, seed=0, episode_length=5)
    st = ucrl2.agent_setting(D.load("UDeepSea-5+dir0.3235"), ts.episode())
    assert st.layout.is_full and (st.theta > 0).all()
    assert not ucrl2.agent_setting(D.load("UDeepSea-5"), ts.episode()).layout.is_full
    if params:
        c = play_seeds("ucrl2", params, D.load("UDeepSea-5+dir0.3235"), test, [3], 3000, 5)
        d = play_seeds("ucrl2", params, D.load("UDeepSea-5"), test, [3], 3000, 5)
        assert not np.array_equal(c[0][1], d[0][1])
        assert c[0][1].sum() < d[0][1].sum()


def test_ucrl2_under_dir_refuses_a_model_above_the_memory_limit_in_one_line():
    from types import SimpleNamespace

    from bbrlcore.agents import ucrl2

    big = SimpleNamespace(n_states=20_000, n_actions=4, dirichlet_all=0.5,
                          short_name="Big+dir0.5")
    msg = ucrl2._setting_check({}, big, 0.95, 10)
    assert msg and "\n" not in msg and "GB" in msg
    assert ucrl2._setting_check({}, D.load("UDeepSea-10+dir0.3235"), 0.95, 10) is None
    assert ucrl2._setting_check({}, D.load("UDeepSea-10"), 0.95, 10) is None
    f = registry.get("ucrl2").cost_features({"delta": 0.05, "bound": "l1"},
                                            D.load("UDeepSea-5+dir1"), test := D.load_test(
                                                "DeepSea-5"), 1.0, 100)
    assert f["backups"] == f["rebuilds"] * ucrl2.COST_SWEEPS * test.n_states ** 2 * 2
