"""Tests of the SBOSS agent (spec 01 §5.7, 00-decisions §1 and §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bbrlcore.agents import get, sboss
from bbrlcore.agents._rng import rng_new
from bbrlcore.agents.base import Episode
from bbrlcore.errors import BBRLError
from bbrlcore.mdp.distributions import builtin

ALG = sboss.ALGORITHM


def _episode(test: str, gamma: float = 0.95, horizon: int = 250) -> Episode:
    d = builtin(test)
    return Episode(
        R=np.ascontiguousarray(d.reward),
        Rstd=np.ascontiguousarray(d.reward_std),
        gaussian=d.reward_type == "gaussian",
        initial_state=d.initial_state,
        gamma=gamma,
        horizon=horizon,
    )


def _player(prior: str, test: str, horizon: int = 250, **params):
    p = ALG.parse_params({k: v for k, v in params.items()})
    return ALG.make_player(builtin(prior), p, None, _episode(test, horizon=horizon))


def _mdps(test: str, n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    d = builtin(test)
    return [d.draw_mdp(rng) for _ in range(n)]


# ---------------------------------------------------------------------------------------
# Parameters


def test_registered_and_params():
    assert get("sboss") is ALG
    assert ALG.has_compat and ALG.counters == ("resamples",) and ALG.train is None
    p = ALG.parse_params({"epsilon": "0.01", "delta": "1"})
    assert p == {"epsilon": 0.01, "delta": 1.0, "compat": False}
    p = ALG.parse_params({"epsilon": 1, "delta": 7, "compat": "true"})
    assert p["compat"] is True
    assert ALG.agent_id(p) == "sboss__epsilon=1__delta=7__compat=true"


@pytest.mark.parametrize(
    "raw, key",
    [
        ({"epsilon": "0", "delta": "1"}, "epsilon"),
        ({"epsilon": "-1", "delta": "1"}, "epsilon"),
        ({"epsilon": "1", "delta": "0"}, "delta"),
        ({"epsilon": "1", "delta": "inf"}, "delta"),
        ({"delta": "1"}, "epsilon"),
        ({"epsilon": "1"}, "delta"),
        ({"epsilon": "1", "delta": "1", "compat": "maybe"}, "compat"),
        ({"epsilon": "1", "delta": "1", "K": "3"}, "K"),
    ],
)
def test_bad_params_name_the_key(raw, key):
    with pytest.raises(BBRLError, match=rf"\b{key}\b"):
        ALG.parse_params(raw)


def test_gamma_one_refused():
    p = ALG.parse_params({"epsilon": "1", "delta": "1"})
    with pytest.raises(BBRLError, match="discount"):
        ALG.make_player(builtin("GC"), p, None, _episode("GC", gamma=1.0))


def test_huge_merged_model_refused():
    p = ALG.parse_params({"epsilon": "1e-12", "delta": "1"})
    with pytest.raises(BBRLError, match="epsilon"):
        ALG.make_player(builtin("GC"), p, None, _episode("GC"))


# ---------------------------------------------------------------------------------------
# Sample counts and deviation


def _counts(alpha, eps):
    """K of a dense posterior (the full layout)."""
    nX, nU, _ = alpha.shape
    return sboss.sample_counts(alpha, np.full((nX, nU), nX, dtype=np.int64), eps)


def _rows_counts(d, eps):
    """K of a prior on its sparse rows."""
    return sboss.sample_counts(np.array(d.theta_rows), d.support_layout.nsucc, eps)


@pytest.mark.parametrize("eps, k", [(1.0, 1), (0.1, 1), (0.01, 9), (1e-6, 83334)])
def test_sample_count_two_entry_rows(eps, k):
    K = _counts(builtin("GC").theta, eps)
    assert (_rows_counts(builtin("GC"), eps) == K).all()
    assert (K == k).all()
    assert k == math.ceil(1 / (12 * eps))


@pytest.mark.parametrize(
    "prior, var", [("UGC", 4 / 150), ("UGDL", 8 / 810), ("UGrid", 24 / 16250)]
)
@pytest.mark.parametrize("eps", [1.0, 0.01, 1e-4])
def test_sample_count_uniform_priors(prior, var, eps):
    K = _rows_counts(builtin(prior), eps)
    assert (K == math.ceil(var / eps)).all()


def test_sample_count_gdl_vector():
    K = _rows_counts(builtin("GDL"), 0.01)
    assert (K == _counts(builtin("GDL").theta, 0.01)).all()
    expected = [9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 0, 0]
    assert K.reshape(-1).tolist() == expected


def test_sample_count_rises_after_observation():
    # UGC at eps = 0.01: 3 samples at the prior, 4 after one observation (spec 01 §5.7)
    alpha = builtin("UGC").theta.copy()
    assert _counts(alpha, 0.01)[0, 0] == 3
    alpha[0, 0, 0] += 1
    assert _counts(alpha, 0.01)[0, 0] == 4


def test_first_ugc_deviation():
    snap = np.ones(5)
    row = snap.copy()
    row[2] += 1
    for compat in (False, True):
        dev = sboss.deviation(snap, 5.0, row, 6.0, compat)
        assert dev == pytest.approx(1.633, abs=5e-4)
    assert dev == pytest.approx(2 / 15 * 2 / math.sqrt(4 / 150))


def test_deviation_zero_terms():
    # GC-like row (1, 0, 1): the zero entry is 0/0
    snap = np.array([1.0, 0.0, 1.0])
    row = np.array([2.0, 0.0, 1.0])
    assert math.isnan(sboss.deviation(snap, 2.0, row, 3.0, True))
    assert not sboss.deviation(snap, 2.0, row, 3.0, True) > 0.0  # NaN never resamples
    dev = sboss.deviation(snap, 2.0, row, 3.0, False)
    assert math.isfinite(dev) and dev > 0.0
    # unchanged row: 0 by default, NaN in compat
    assert sboss.deviation(snap, 2.0, snap, 2.0, False) == 0.0
    # a new successor (x / 0 with x > 0) forces a resample by default
    new = np.array([1.0, 1.0, 1.0])
    assert sboss.deviation(snap, 2.0, new, 3.0, False) == math.inf
    assert sboss.deviation(snap, 2.0, new, 3.0, True) == math.inf
    # deterministic row observed again: unchanged probabilities
    det = np.array([0.0, 1.0, 0.0])
    assert sboss.deviation(det, 1.0, np.array([0.0, 2.0, 0.0]), 2.0, False) == 0.0
    assert math.isnan(sboss.deviation(det, 1.0, np.array([0.0, 2.0, 0.0]), 2.0, True))


def test_deviation_compat_inf_only_without_nan():
    # every term infinite or finite (no 0/0): compat also forces a resample
    snap = np.array([1.0, 0.0])
    row = np.array([1.0, 1.0])
    assert sboss.deviation(snap, 1.0, row, 2.0, True) == math.inf


# ---------------------------------------------------------------------------------------
# Merged model


def _rows(d):
    """A prior's concentrations, rewards and layout on its sparse rows."""
    lay = d.support_layout
    return np.array(d.theta_rows), np.array(d.reward_rows), lay.succ, lay.nsucc


def test_merged_model_is_sparse_at_tiny_epsilon():
    theta, Rr, succ, nsucc = _rows(builtin("GC"))
    K = sboss.sample_counts(theta, nsucc, 1e-6)
    probs, off, mK, soff, rexp = sboss.build_merged(theta, succ, nsucc, K, Rr, False,
                                                    rng_new(1))
    assert (mK == 83334).all()
    assert probs.shape == (15 * 83334 * 2,)  # ~20 MB, not 5 * 3*83334 * 5 doubles
    assert probs.nbytes < 25e6
    assert sboss.merged_size(theta, 1e-6, False) == probs.size
    assert sboss.merged_size(builtin("GC").theta, 1e-6, False) == probs.size  # dense too
    rows = probs.reshape(-1, 2)
    assert np.allclose(rows.sum(axis=1), 1.0) and (rows > 0).all()
    # Dir(1, 1) marginal: uniform on [0, 1]
    assert abs(rows[:, 0].mean() - 0.5) < 0.005
    assert abs(rows[:, 0].var() - 1 / 12) < 0.002


def test_merged_model_deterministic_rows():
    theta, R, supp, nsupp = _rows(builtin("GDL"))
    K = sboss.sample_counts(theta, nsupp, 0.01)
    probs, off, mK, soff, rexp = sboss.build_merged(theta, supp, nsupp, K, R, False, rng_new(1))
    assert (mK == np.maximum(K, 1)).all()
    # the deterministic rows' single sample is the known transition
    for x in (1, 2, 3, 4, 8):
        for u in range(2):
            assert nsupp[x, u] == 1 and probs[off[x, u]] == 1.0
    probs_c, _, mK_c, _, _ = sboss.build_merged(theta, supp, nsupp, K, R, True, rng_new(1))
    assert (mK_c == K).all() and probs_c.size == int((K * nsupp).sum())


@pytest.mark.parametrize("prior, eps", [("GDL", 0.01), ("Grid", 0.1), ("GC", 0.01)])
@pytest.mark.parametrize("compat", [False, True])
def test_merged_model_on_the_full_layout_draws_the_same(prior, eps, compat):
    """On the full layout (a dense posterior) the slots of zero concentration get
    probability 0 and no draw: the same samples as on the prior's sparse rows."""
    d = builtin(prior)
    theta, Rr, succ, nsucc = _rows(d)
    nX, nU = d.n_states, d.n_actions
    full_s = np.broadcast_to(np.arange(nX), (nX, nU, nX)).copy()
    full_n = np.full((nX, nU), nX, dtype=np.int64)
    K = sboss.sample_counts(theta, nsucc, eps)
    assert (sboss.sample_counts(d.theta, full_n, eps) == K).all()
    a = sboss.build_merged(theta, succ, nsucc, K, Rr, compat, rng_new(7))
    b = sboss.build_merged(np.array(d.theta), full_s, full_n, K, np.array(d.reward), compat,
                           rng_new(7))
    pa, offa, mK, soffa, ra = a
    pb, offb, mKb, soffb, rb = b
    assert (mK == mKb).all() and (ra == rb).all()
    for x in range(nX):
        for u in range(nU):
            ns = nsucc[x, u]
            for k in range(mK[x, u]):
                row = np.zeros(nX)
                row[succ[x, u, :ns]] = pa[offa[x, u] + k * ns: offa[x, u] + (k + 1) * ns]
                assert (pb[offb[x, u] + k * nX: offb[x, u] + (k + 1) * nX] == row).all()
    V1, V2 = np.zeros(nX), np.zeros(nX)
    p1, p2 = np.zeros(nX, dtype=np.int64), np.zeros(nX, dtype=np.int64)
    sboss.merged_value_iteration(*a, succ, nsucc, 0.95, 1e-4, compat, V1, p1, 50)
    sboss.merged_value_iteration(*b, full_s, full_n, 0.95, 1e-4, compat, V2, p2, 50)
    assert np.allclose(V1, V2, rtol=1e-12, atol=1e-9) and (p1 == p2).all()


def _dense_merged(probs, off, mK, supp, nsupp, Rm, compat):
    """The reference's dense merged model (P_m, R_m) with nU * K_max actions.

    Default mode has no fillers: slots past K'(x,u) stay empty (all-zero rows, skipped).
    """
    nX, nU = mK.shape
    kmax = max(int(mK.max()), 1)
    Pm = np.zeros((nX, nU * kmax, nX))
    Rmm = np.zeros((nX, nU * kmax, nX))
    for x in range(nX):
        for u in range(nU):
            ns = nsupp[x, u]
            for k in range(kmax):
                m = u + k * nU
                if k < mK[x, u]:
                    for j in range(ns):
                        Pm[x, m, supp[x, u, j]] = probs[off[x, u] + k * ns + j]
                    Rmm[x, m] = Rm[x, u]
                elif compat:
                    Pm[x, m, x] = 1.0
                    Rmm[x, m] = sboss.INT_MIN
    return Pm, Rmm


def _dense_guez(Pm, Rmm, gamma, tol):
    nX, nA, _ = Pm.shape
    V = np.zeros(nX)
    while True:
        Q = np.zeros((nX, nA))
        for x in range(nX):
            for m in range(nA):
                acc = 0.0
                for y in range(nX):
                    if Pm[x, m, y] > 0:
                        acc += Pm[x, m, y] * (Rmm[x, m, y] + gamma * V[y])
                Q[x, m] = acc if Pm[x, m].sum() > 0 else -np.inf
        Vn = Q.max(axis=1)
        pi = Q.argmax(axis=1)  # first maximum = lowest merged index
        d = np.sum((Vn - V) ** 2)
        V = Vn
        if d <= tol * tol:
            return V, pi


@pytest.mark.parametrize("prior, eps", [("GDL", 0.01), ("GC", 0.1), ("UGC", 0.01)])
@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize("pi_steps", [0, 2, 50])
def test_merged_vi_matches_dense_reference(prior, eps, compat, pi_steps):
    d = builtin(prior)
    theta, Rr, supp, nsupp = _rows(d)
    K = sboss.sample_counts(theta, nsupp, eps)
    probs, off, mK, soff, rexp = sboss.build_merged(theta, supp, nsupp, K, Rr, compat,
                                                    rng_new(3))
    # each sample's expected reward is sum_j p_j R(x, u, y_j)
    for x in range(d.n_states):
        for u in range(d.n_actions):
            ns = nsupp[x, u]
            ys = supp[x, u, :ns]
            for k in range(mK[x, u]):
                p = probs[off[x, u] + k * ns: off[x, u] + (k + 1) * ns]
                assert rexp[soff[x, u] + k] == pytest.approx(float(p @ d.reward[x, u, ys]))
    V = np.zeros(d.n_states)
    pi = np.zeros(d.n_states, dtype=np.int64)
    sboss.merged_value_iteration(
        probs, off, mK, soff, rexp, supp, nsupp, 0.95, 1e-4, compat, V, pi, pi_steps
    )
    Pm, Rmm = _dense_merged(probs, off, mK, supp, nsupp, d.reward, compat)
    Vd, pid = _dense_guez(Pm, Rmm, 0.95, 1e-4)
    assert np.allclose(V, Vd, rtol=0, atol=5e-3)
    assert (pi == pid).all()
    if compat and prior == "GDL":
        # states whose actions all have K = 0 hold only fillers
        for x in (1, 2, 3, 4, 8):
            assert V[x] == pytest.approx(sboss.INT_MIN / 0.05, rel=1e-9)
            assert pi[x] == 0  # lowest filler index m = u + K nU = 0


# ---------------------------------------------------------------------------------------
# Trajectories


def test_compat_on_gc_resamples_once():
    play = _player("GC", "GC", epsilon=1, delta=1e-6, compat=True)
    for i, P in enumerate(_mdps("GC", 10)):
        ret, counters = play(P, i)
        assert counters.dtype == np.int64 and counters.tolist() == [1]
        assert math.isfinite(ret)


@pytest.mark.parametrize("prior", ["GDL", "Grid"])
def test_compat_on_zero_entry_priors_resamples_once(prior):
    play = _player(prior, prior, epsilon=0.1, delta=1e-6, compat=True)
    for i, P in enumerate(_mdps(prior, 5)):
        assert play(P, i)[1].tolist() == [1]


def test_default_resamples_more():
    play = _player("UGC", "GC", epsilon=1, delta=0.1)
    counts = [play(P, i)[1][0] for i, P in enumerate(_mdps("GC", 5))]
    assert min(counts) > 1
    # default mode also resamples on GC (no NaN rule)
    play = _player("GC", "GC", epsilon=1, delta=0.1)
    counts = [play(P, i)[1][0] for i, P in enumerate(_mdps("GC", 5))]
    assert min(counts) > 1
    # a huge delta never resamples after the first build (deviations are finite)
    play = _player("UGC", "GC", epsilon=1, delta=1e9)
    assert [play(P, i)[1][0] for i, P in enumerate(_mdps("GC", 5))] == [1] * 5


def test_small_delta_resamples_at_first_visits_ugc():
    # the first visit of a fresh UGC pair has deviation 1.633: delta = 1.6 resamples on it,
    # delta = 1.7 does not need to (fewer resamples)
    P = _mdps("GC", 1)[0]
    lo = _player("UGC", "GC", epsilon=1, delta=1.6)(P, 5)[1][0]
    hi = _player("UGC", "GC", epsilon=1, delta=1.7)(P, 5)[1][0]
    assert lo > hi >= 1


def test_deterministic_given_seed():
    for compat in (False, True):
        play = _player("UGDL", "GDL", epsilon=0.1, delta=1, compat=compat)
        P = _mdps("GDL", 1, seed=4)[0]
        a = play(P, 123)
        b = play(P, 123)
        assert a[0] == b[0] and a[1].tolist() == b[1].tolist()
    rets = {play(P, s)[0] for s in range(10)}
    assert len(rets) > 1


@pytest.mark.parametrize("prior, test", [
    ("GC", "GC"), ("GDL", "GDL"), ("Grid", "Grid"), ("UGC", "GC"), ("UGDL", "GDL"),
    ("UGrid", "Grid"),
])
@pytest.mark.parametrize("compat", [False, True])
def test_returns_finite_and_bounded(prior, test, compat):
    play = _player(prior, test, horizon=60, epsilon=0.5, delta=1, compat=compat)
    rmax = builtin(test).r_max
    for i, P in enumerate(_mdps(test, 3)):
        ret, counters = play(P, i)
        assert math.isfinite(ret) and 0.0 <= ret <= rmax / 0.05
        assert 1 <= counters[0] <= 60


def test_tiny_epsilon_on_gc_runs():
    # 83,334 samples per pair, ~20 MB of samples; default mode resamples at small delta
    play = _player("GC", "GC", horizon=5, epsilon=1e-6, delta=1e-6)
    ret, counters = play(_mdps("GC", 1)[0], 0)
    assert math.isfinite(ret) and counters[0] >= 1


@pytest.mark.parametrize("prior", ["GC", "Grid", "UGC"])
@pytest.mark.parametrize("compat", [False, True])
def test_sparse_rows_and_dense_episode_agree(prior, compat):
    """A player on the test set's sparse rows and one on dense arrays (the full layout,
    slots of zero concentration included) play the same trajectories."""
    from bbrlcore import protocol as E

    test = "GC" if prior == "UGC" else prior
    ts = E.new_test_set(builtin(test), 3, 0.95, 100, seed=0)
    p = ALG.parse_params({"epsilon": "0.1", "delta": "1", "compat": str(compat).lower()})
    sp = ALG.make_player(builtin(prior), p, None, ts.episode())
    dp = ALG.make_player(builtin(prior), p, None, ts.episode(dense=True))
    for i in range(3):
        a, b = sp(ts.mdps[i], i), dp(ts.dense(i), i)
        assert a[0] == b[0] and a[1].tolist() == b[1].tolist()


def test_out_of_support_transition():
    # prior GC, a test MDP with a transition the prior gives zero probability
    P = np.full((5, 3, 5), 0.2)
    for compat in (False, True):
        play = _player("GC", "GC", horizon=100, epsilon=1, delta=1, compat=compat)
        ret, counters = play(P, 1)
        assert math.isfinite(ret) and counters[0] >= 2  # x / 0 = inf forces a resample


# ---------------------------------------------------------------------------------------
# Statistical agreement with the original library (compat), reference_scores.tsv


@pytest.mark.slow
@pytest.mark.parametrize(
    "test, prior, mean, half",
    [
        ("GDL", "GDL", 2.611, 0.096),
        ("GC", "GC", 35.498, 1.980),
        ("GC", "UGC", 34.954, 1.562),
    ],
)
def test_compat_matches_reference(test, prior, mean, half):
    n = 200
    play = _player(prior, test, epsilon=1, delta=1, compat=True)
    rets = np.array([play(P, 1000 + i)[0] for i, P in enumerate(_mdps(test, n, seed=11))])
    se_ref = half / 1.96
    se = rets.std(ddof=1) / math.sqrt(n)
    z = (rets.mean() - mean) / math.sqrt(se**2 + se_ref**2)
    assert abs(z) < 3, (rets.mean(), mean, z)
