"""The formula agents and OPPS-DS under a prior that does not know the support (issue 42,
``+dir<α>``): QMean on the posterior mean of Dir(α) over every next state, OPPS-DS's
training MDPs drawn from Dir(α) over every next state; the plain priors unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from bbrlcore import protocol
from bbrlcore.agents import registry
from bbrlcore.agents._layout import setting
from bbrlcore.agents.base import TrainContext
from bbrlcore.agents.formula_agent import (
    features,
    initial_q,
    prior_features,
    replay_features,
)
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp.solvers import solve_q
from prior_play import play_seeds  # (tests/)

GAMMA, T = 0.95, 250
ALL = np.ones(3, dtype=np.bool_)


def _numpy_q_iteration(P, R, Q):
    """The BBRL Q-iteration on a dense model, warm from ``Q``: Jacobi sweeps until one
    changes no value by more than 0.01, at most T + 1."""
    for _sweep in range(T + 1):
        V = Q.max(axis=1)
        new = (P * (R + GAMMA * V[None, None, :])).sum(axis=2)
        delta = np.abs(new - Q).max()
        Q = new
        if delta <= 0.01:
            break
    return Q


def _observations(st, test, n, seed):
    """``n`` random transitions (x, u, y) of the test layout ``test``, with their slots
    k on the agent's layout (``st``)."""
    rng = np.random.default_rng(seed)
    xs, us, ks = [], [], []
    nX, nU = test.nsucc.shape
    for _ in range(n):
        x, u = int(rng.integers(nX)), int(rng.integers(nU))
        y = test.succ[x, u, int(rng.integers(test.nsucc[x, u]))]
        xs.append(x)
        us.append(u)
        ks.append(int(np.flatnonzero(st.succ[x, u, :st.nsucc[x, u]] == y)[0]))
    return (np.array(xs, dtype=np.int64), np.array(us, dtype=np.int64),
            np.array(ks, dtype=np.int64))


def _features_after(prior_name, obs_seed=3, n=30):
    prior, test = D.load(prior_name), D.builtin("GC")
    ep = protocol.new_test_set(test, 1, GAMMA, T, seed=0).episode()
    st = setting(prior, ep)
    fe = features(prior, st, ep.layout())
    xs, us, ks = _observations(st, ep.layout(), n, obs_seed)
    Q = replay_features(xs, us, ks, ALL, st.succ, st.nsucc, *fe.args(), GAMMA, T)
    ys = st.succ[xs, us, ks]
    return prior, st, fe, (xs, us, ys), Q


def test_qmean_under_dir_is_the_q_iteration_of_the_dense_posterior_mean():
    """GC's support has few next states a row; under GC+dir0.5 QMean, after 30
    observations, is the Q-iteration (warm, step by step) of the dense posterior mean
    (α + c)/(Sα + n) over all S states with the prior's rewards (0 off its entries)."""
    a = 0.5
    prior, st, fe, (xs, us, ys), Q = _features_after("GC+dir0.5")
    assert fe.a_all == a and (st.nsucc < prior.n_states).any()  # (a background exists)
    S, A = prior.n_states, prior.n_actions
    R = np.asarray(prior.reward, dtype=np.float64)
    c = np.zeros((S, A, S))
    Qn = _numpy_q_iteration((a + c) / (S * a + c.sum(axis=2, keepdims=True)), R,
                            np.zeros((S, A)))
    Q0 = initial_q(st.succ, st.nsucc, *fe.args(), ALL, GAMMA, T)[0]
    assert np.allclose(Q0, Qn, rtol=1e-12, atol=1e-9)
    for x, u, y in zip(xs, us, ys, strict=True):
        c[x, u, y] += 1.0
        P = (a + c) / (S * a + c.sum(axis=2, keepdims=True))
        Qn = _numpy_q_iteration(P, R, Qn)
    assert c.sum() == 30
    assert np.allclose(Q[0], Qn, rtol=1e-12, atol=1e-9), np.abs(Q[0] - Qn).max()
    # not the support's posterior mean: the background's mass matters
    _, _, _, _, Qs = _features_after("GC")
    assert np.abs(Qs[0] - Q[0]).max() > 0.1


def test_qself_and_quniform_under_dir_are_their_plain_models():
    """QSelf (a count on the self-loop) and QUniform (a count everywhere) do not read
    the transition prior: under GC+dir0.5 they are the dense count models' answers (exact
    solves, within the Q-iteration's tolerance) and those of the plain prior GC."""
    prior, st, fe, (xs, us, ys), Q = _features_after("GC+dir0.5")
    _, _, _, (xs2, us2, ys2), Qp = _features_after("GC")
    S, A = prior.n_states, prior.n_actions
    selfc = np.zeros((S, A, S))
    selfc[np.arange(S), :, np.arange(S)] = 1.0
    ones = np.ones((S, A, S))
    c = np.zeros((S, A, S))
    np.add.at(c, (xs, us, ys), 1.0)
    for i, base in ((1, selfc), (2, ones)):
        N = base + c
        exact = solve_q(N / N.sum(axis=2, keepdims=True), prior.reward, GAMMA, T)
        assert np.abs(Q[i] - exact).max() <= 0.01 * GAMMA / (1 - GAMMA) + 1e-9
    assert np.array_equal(xs, xs2) and np.array_equal(us, us2) and np.array_equal(ys, ys2)
    assert np.allclose(Q[1:], Qp[1:], rtol=1e-9, atol=1e-9), np.abs(Q[1:] - Qp[1:]).max()


@pytest.mark.parametrize("formula", ["Q0", "Q2/Q0", "max(Q0, Q1)"])
def test_formula_agent_plays_ugc_dir_reproducibly(formula):
    prior = D.load("UGC+dir0.5")
    a = play_seeds("formula", {"formula": formula}, prior, D.builtin("GC"), [4, 4, 9], 80)
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert a[0][2].tolist() == a[1][2].tolist()
    if formula == "Q0":  # (Q2/Q0 stays on GC's first state: the same rewards whatever the seed)
        assert not np.array_equal(a[0][1], a[2][1])


def test_formula_agent_under_dir_plans_on_every_next_state():
    """GC's accurate prior knows the support; GC+dir0.3235 does not: another plan."""
    b = play_seeds("formula", {"formula": "Q0"}, D.load("GC"), D.builtin("GC"), [4], 80)
    c = play_seeds("formula", {"formula": "Q0"}, D.load("GC+dir0.3235"), D.builtin("GC"),
                 [4], 80)
    assert not np.array_equal(b[0][1], c[0][1])


def test_opps_ds_training_draws_on_every_next_state():
    """Under +dir<α> OPPS-DS's training MDPs live on the full layout (every next state
    a slot, α on each: Dir(α) over all S), and QMean's initial values there are the
    dense prior mean's (uniform rows)."""
    prior = D.load("GC+dir0.5")
    S, A = prior.n_states, prior.n_actions
    st, fe = prior_features(prior, GAMMA, T)
    assert (st.nsucc == S).all() and np.all(st.theta == 0.5) and fe.a_all == 0.5
    assert np.array_equal(st.R, np.asarray(prior.reward))
    Q = initial_q(st.succ, st.nsucc, *fe.args(), ALL, GAMMA, T)
    Qn = _numpy_q_iteration(np.full((S, A, S), 1.0 / S), np.asarray(prior.reward),
                            np.zeros((S, A)))
    assert np.allclose(Q[0], Qn, rtol=1e-12, atol=1e-9)
    # the plain prior: its support only
    st0, _ = prior_features(D.load("GC"), GAMMA, T)
    assert (st0.nsucc < S).any()


def test_opps_ds_trains_and_plays_under_dir_reproducibly():
    A = registry.get("opps-ds")
    p = A.parse_params({"formula_set": "F2", "n_draws": 30, "c": 50})
    prior = D.load("UGC+dir0.5")
    A.check_setting(p, prior, GAMMA, 30)
    t1 = A.train(prior, p, TrainContext(seed=4, horizon=30))
    t2 = A.train(prior, p, TrainContext(seed=4, horizon=30))
    assert t1.info.pop("_offline_time_s") > 0 and t2.info.pop("_offline_time_s") > 0
    assert t1.info == t2.info and t1.table.equals(t2.table)
    assert int(t1.table["pulls"].sum()) == 30
    # the same search under the plain prior draws other MDPs: other statistics
    t0 = A.train(D.load("UGC"), p, TrainContext(seed=4, horizon=30))
    assert not t0.table.equals(t1.table)
    a = play_seeds("opps-ds", {"formula_set": "F2", "n_draws": "30", "c": "50"}, prior,
                 D.builtin("GC"), [2, 2], 60, trained=t1)
    assert np.isfinite(a[0][0]) and a[0][0] == a[1][0]
    assert np.array_equal(a[0][1], a[1][1])


def test_opps_ds_checkpoint_fingerprint_names_the_concentration():
    from bbrlcore.agents import formulas as F
    from bbrlcore.agents import opps_ds as O

    fs = F.load("F2")
    ctx = TrainContext(seed=1, horizon=10)
    fp = [O._fingerprint(D.load(n), "a", fs, ctx) for n in ("UGC", "UGC+dir0.5",
                                                             "UGC+dir1")]
    assert len(set(fp)) == 3


def test_cli_trains_and_runs_opps_ds_and_the_formula_agent_under_dir(capsys, tmp_path):
    """The command line end to end: the agent artefact keeps the concentration (the
    trained prior), and both agents run a small experiment on GC under UGC+dir0.5."""
    import polars as pl

    from bbrlcore.cli import main

    def bbrl(*args):
        capsys.readouterr()
        rc = main([str(a) for a in args])
        return (rc, *capsys.readouterr())

    rc, _, err = bbrl("experiment", "new", "--test", "GC", "--n-mdps", "2", "--horizon",
                      "40", "-o", tmp_path / "e.parquet")
    assert rc == 0, err
    for name, params in (("opps-ds", ["formula_set=F2", "n_draws=20"]),
                         ("formula", ["formula=Q2/Q0"])):
        rc, _, err = bbrl("train", "--agent", name,
                          *[a for p in params for a in ("--param", p)],
                          "--prior", "UGC+dir0.5", "-q", "-o", tmp_path / f"{name}.parquet")
        assert rc == 0, err
        outs = []
        for i in range(2):
            rc, out, err = bbrl("run", "--experiment", tmp_path / "e.parquet", "--agent",
                                tmp_path / f"{name}.parquet", "-o",
                                tmp_path / f"{name}-r{i}.parquet")
            assert rc == 0 and "2 trajectories" in out, err
            outs.append(pl.read_parquet(tmp_path / f"{name}-r{i}.parquet"))
        assert outs[0]["discounted_return"].to_list() == outs[1]["discounted_return"].to_list()
