"""BAMCP and BFS3 under a prior that does not know the support (issue 42, ``+dir<α>``):
their simulated transitions follow the posterior predictive over **every** next state —
the slots of the agent's rows and each row's background (the states outside them) —
exactly (the draws' frequencies on tiny rows), they play reproducibly under families'
priors, and the known-support paths are untouched (``+dir1`` on UGC's full rows, where
there is no background, plays bit for bit as UGC)."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np
import pytest
from scipy.stats import chi2

from bbrlcore.agents import bamcp, bfs3, registry
from bbrlcore.agents.base import check_dirichlet_all
from bbrlcore.mdp import distributions as D
from prior_play import play_seeds  # (tests/)


def _chi2_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """Pearson's test of counts against expectations, the cells expected below 5 pooled."""
    o, e = observed.ravel().astype(float), expected.ravel()
    rare = e < 5
    o = np.append(o[~rare], o[rare].sum())
    e = np.append(e[~rare], e[rare].sum())
    if e[-1] == 0:
        o, e = o[:-1], e[:-1]
    stat = float(((o - e) ** 2 / e).sum())
    return float(chi2.sf(stat, len(e) - 1))


# ---------------------------------------------------------------------------------------
# BAMCP: root sampling's urn over every state


def test_bamcp_urn_draws_are_the_dirichlet_multinomial_over_every_state():
    """Two draws of one simulation from one pair: slots {1, 3, 4} with real counts
    (2, 0, 1), α = 0.5, S = 6 (background {0, 2, 5}). The pair of draws must be
    Dirichlet-multinomial: P(y1) = (α + c_y1)/(Sα + n), P(y2 | y1) = (α + c_y2 + [y2 =
    y1])/(Sα + n + 1) — a background state drawn once is more likely again."""
    a_all, S, W = 0.5, 6, 3
    slots = np.array([1, 3, 4])
    c = np.array([2.0, 0.0, 1.0])
    acum = np.cumsum(a_all + c)
    supp = slots.astype(np.int64)
    nsupp = np.array([3], dtype=np.int64)
    urn = np.empty(W)
    stamp = np.full(1, -1, dtype=np.int64)
    bgn = np.zeros(1, dtype=np.int64)
    ball_p = np.empty(4, dtype=np.int64)
    ball_y = np.empty(4, dtype=np.int64)
    nball = np.zeros(1, dtype=np.int64)
    w = np.full(S, a_all)
    w[slots] += c
    n_sims = 60_000
    v = np.random.default_rng(5).random((n_sims, 2))
    joint = np.zeros((S, S))
    for sim in range(n_sims):
        nball[0] = 0
        ys = []
        for d in range(2):
            idx, y = bamcp._urn_draw_all(0, sim, v[sim, d], W, a_all, S, acum, supp, nsupp,
                                         urn, stamp, bgn, ball_p, ball_y, nball)
            assert (idx >= 0) == (y in slots) and (idx < 0 or slots[idx] == y)
            ys.append(y)
        joint[ys[0], ys[1]] += 1
    p1 = w / w.sum()
    expected = np.array([[p1[y1] * (w[y2] + (y1 == y2)) / (w.sum() + 1) for y2 in range(S)]
                         for y1 in range(S)]) * n_sims
    assert joint[[0, 2, 5]].sum() > 0.2 * n_sims  # (the background: 1.5 / 4.5 of the mass)
    pval = _chi2_pvalue(joint, expected)
    assert pval > 1e-4, (pval, joint, expected)
    # the first draw's frequencies are the posterior mean
    m = joint.sum(axis=1) / n_sims
    assert np.abs(m - p1).max() < 4.5 * np.sqrt(p1 * (1 - p1) / n_sims).max()


# ---------------------------------------------------------------------------------------
# BFS3: the posterior predictive over every state


def test_bfs3_root_draws_follow_the_predictive_over_every_state():
    """A row with slots {1, 3} (α = 0.5 plus counts 3, 0) of S = 5 states: P(y) = (α +
    c_y)/(Sα + n) over all 5, a background state returned as ``KW + y``."""
    a_all, S, KW = 0.5, 5, 2
    succ = np.zeros((1, 1, KW), dtype=np.int64)
    succ[0, 0] = [1, 3]
    nsucc = np.full((1, 1), 2, dtype=np.int64)
    pc = np.array([[[a_all + 3.0, a_all]]])
    pcsum = pc.sum(axis=2)
    w = np.full(S, a_all)
    w[1] += 3.0
    n = 40_000
    counts = np.zeros(S)
    for r in np.random.default_rng(1).random(n):
        k = bfs3._draw_all(pc, pcsum, succ, nsucc, S, a_all, 0, 0, r)
        counts[succ[0, 0, k] if k < KW else k - KW] += 1
    assert _chi2_pvalue(counts, n * w / w.sum()) > 1e-4, counts


def _multinomial_expected(p: np.ndarray, C: int, n: int) -> dict[tuple, float]:
    out = {}
    for comp in itertools.product(range(C + 1), repeat=len(p)):
        if sum(comp) != C:
            continue
        coef = factorial(C)
        for m in comp:
            coef //= factorial(m)
        out[comp] = n * coef * float(np.prod([pi**m for pi, m in zip(p, comp, strict=True)]))
    return out


@pytest.mark.parametrize("C", [1, 3])
def test_bfs3_expansion_draws_are_multinomial_over_every_state(C):
    """An expansion records C i.i.d. draws from the predictive of row (2, 0), slots {0, 3}
    (the prior's stored transitions) of S = 5 states, real counts (2, 1) and the root's
    pseudo-count on 2 — a background state of the row (reached by (2, 0) -> 2): P(y) =
    (α + c_y + [y = 2])/(Sα + n + 1) for every y."""
    a_all, S = 0.5, 5
    theta = np.zeros((S, 1, S))
    theta[:, 0, 0] = 1.0
    theta[2, 0, 3] = 1.0
    R = np.zeros((S, 1, S))
    obs = np.array([[2, 0, 0], [2, 0, 0], [2, 0, 3]], dtype=np.int64)
    reps = 20_000
    out = bfs3.expansion_multiplicities(theta, R, obs, 2, 0, 2, C, reps, 99,
                                        dirichlet_all=a_all)[:, 0, :]
    assert (out.sum(axis=1) == C).all()
    w = np.full(S, a_all)
    w[0] += 2.0
    w[3] += 1.0
    w[2] += 1.0  # the root's pseudo-count on a background state
    p = w / w.sum()
    exp = _multinomial_expected(p, C, reps)
    seen: dict[tuple, int] = {}
    for row in out:
        key = tuple(int(v) for v in row)
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= set(exp)
    keys = sorted(exp)
    pval = _chi2_pvalue(np.array([seen.get(k, 0) for k in keys]),
                        np.array([exp[k] for k in keys]))
    assert pval > 1e-4, (pval, seen)
    # the known-support search would never record the background states 1 and 4
    assert out[:, [1, 4]].sum() > 0


def test_bfs3_known_support_expansion_keeps_to_the_support():
    """The same row under the stored prior (no α): only slots, as before."""
    S = 5
    theta = np.zeros((S, 1, S))
    theta[:, 0, 0] = 1.0
    theta[2, 0, 3] = 1.0
    obs = np.array([[2, 0, 0], [2, 0, 3]], dtype=np.int64)
    out = bfs3.expansion_multiplicities(theta, np.zeros((S, 1, S)), obs, 2, 0, 0, 3, 500,
                                        99)[:, 0, :]
    assert out[:, [1, 2, 4]].sum() == 0 and (out.sum(axis=1) == 3).all()


# ---------------------------------------------------------------------------------------
# Playing under +dir


SEARCHES = [("bamcp", {"K": "40", "D": "8"}), ("bfs3", {"K": "10", "C": "2", "D": "5"}),
            ("bfs3", {"K": "15", "C": "15", "D": "3"})]


@pytest.mark.parametrize("name,params", SEARCHES)
def test_they_take_dir_and_play_reproducibly(name, params):
    check_dirichlet_all(name, registry.get(name).dirichlet_all, D.load("UGC+dir0.5"))
    for prior, test, episodes, horizon in (("UGC+dir0.5", D.builtin("GC"), 0, 40),
                                           ("UDeepSea-5+dir0.3235", D.load_test("DeepSea-5"),
                                            5, 50)):
        a = [r for _, r, _ in play_seeds(name, params, D.load(prior), test, [4, 4, 9],
                                         horizon, episodes)]
        assert np.array_equal(a[0], a[1]), prior
        assert not np.array_equal(a[0], a[2]), prior
    # GC's support is known to its accurate prior, not under +dir: another search
    b = play_seeds(name, params, D.load("GC"), D.builtin("GC"), [4], 40)
    c = play_seeds(name, params, D.load("GC+dir0.5"), D.builtin("GC"), [4], 40)
    assert not np.array_equal(b[0][1], c[0][1])


@pytest.mark.parametrize("name,params", SEARCHES[:2])
def test_full_rows_under_dir1_play_as_the_uniform_prior(name, params):
    """UGC has one pseudo-count on every next state (full rows: no background), so
    UGC+dir1 is the same prior and, where the known-support search draws from the same urn
    (BAMCP always; BFS3 at C = 2 on 5-state rows), the same trajectory bit for bit."""
    b = play_seeds(name, params, D.load("UGC"), D.builtin("GC"), [3, 8], 40)
    c = play_seeds(name, params, D.load("UGC+dir1"), D.builtin("GC"), [3, 8], 40)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(b, c, strict=True))


def test_bfs3_cost_features_probe_its_search_under_dir():
    from bbrlcore import cost

    prior = D.load("UDeepSea-5+dir0.5")
    test = D.load("DeepSea-5")
    f = cost.features("bfs3", {"K": 4, "C": 2, "D": 3}, prior, test, 0.95, 50,
                      episode_length=5)
    assert f["expansions"] > 0


def test_bamcp_and_bfs3_price_their_work_under_dir_from_its_records():
    """Under +dir each simulated transition (BAMCP), each visit and expansion draw (BFS3)
    has its own price, fitted to benchmarks/results/dir_prior_search.json: a +dir
    trajectory is priced over twice the known support's (they were priced the same)."""
    from pathlib import Path

    from bbrlcore.plan import cost

    test = D.load("DeepSea-10")
    plain, alld = D.load("UDeepSea-10"), D.load("UDeepSea-10+dir0.3235")
    fa = cost.features("bamcp", {"K": 30, "D": 5}, alld, test, 0.95, 50, episode_length=10)
    fp = cost.features("bamcp", {"K": 30, "D": 5}, plain, test, 0.95, 50, episode_length=10)
    assert fa["sim_steps_all"] == fa["sim_steps"] == 50 * 30 * 5 and "sim_steps_all" not in fp
    ga = cost.features("bfs3", {"K": 4, "C": 2, "D": 3}, alld, test, 0.95, 50,
                       episode_length=10)
    assert ga["visits_all"] == ga["visits"] and ga["expansion_draws_all"] == ga[
        "expansion_draws"] > 0
    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    recs = [r for r in cost.records(results) if r.algorithm in ("bamcp", "bfs3")]
    assert sum("+dir" in r.prior for r in recs) >= 12
    m = cost.CostModel(recs)
    for alg, params in (("bamcp", {"K": 300, "D": 10}), ("bfs3", {"K": 45, "C": 3, "D": 10})):
        s = [m.seconds_per_trajectory(alg, params, "DeepSea-12", 200, prior, 0.95,
                                      episode_length=10)
             for prior in ("UDeepSea-12", "UDeepSea-12+dir0.3235")]
        assert s[1] > 2 * s[0], (alg, s)
        fit = m.quality(alg)
        assert max(cost._ratio(p, meas) for cfg, meas, _, p in fit.validation
                   if "+dir" in cfg[3]) < 2.0


def test_bfs3_rollouts_restore_the_counts_after_background_pseudo_counts():
    """FSSS trees under +dir whose rollouts descend into background states: after each
    tree the planning counts (slots and background) are the real counts again."""
    from bbrlcore.agents._rng import rng_fill_uniform, rng_new
    from bbrlcore.mdp import rows

    S, A, a_all = 6, 2, 0.7
    mask = np.zeros((S, A, S), dtype=bool)
    mask[:, :, 0] = True
    mask[:, 1, 3] = True
    lay = rows.layout_of(mask)
    th = rows.gather(np.where(mask, a_all, 0.0), lay)
    R = rows.gather(np.random.default_rng(0).random((S, A, S)), lay)
    model, flat, nodes, path, urn, binom, dall = bfs3._workspace(
        lay.succ, lay.nsucc, th, R, 5, 40, 3, 6, a_all)
    for x, u, k in [(0, 0, 0), (0, 1, 1), (2, 1, 0)]:
        bfs3._observe(model, urn, x, u, k)
    before = [a.copy() for a in (model[0], model[1], urn[10])]
    rs = rng_new(1)
    rbuf = np.empty(4096)
    rng_fill_uniform(rs, rbuf)
    rstate = np.zeros(1, dtype=np.int64)
    KW = th.shape[2]
    background = 0
    for t in range(30):
        x, a = t % S, t % A
        k1 = bfs3._draw_all(model[0], model[1], lay.succ, lay.nsucc, S, a_all, x, a,
                            (t + 0.5) / 30)
        s1 = lay.succ[x, a, k1] if k1 < KW else k1 - KW
        _, used = bfs3._tree(x, a, k1, s1, 40, 3, 6, A, 0.9, 0.0, 10.0, flat, nodes, path,
                             urn, binom, rbuf, rstate, rs, dall)
        nrec, sslot = nodes[5], nodes[6]
        background += sum(int((sslot[i * 3:i * 3 + nrec[i]] >= KW).sum())
                          for i in range(used * A))
        assert (dall[2] == 0).all()
        for b, now in zip(before, (model[0], model[1], urn[10]), strict=True):
            assert np.array_equal(b, now)
    assert background > 100  # (the trees did record and descend into background states)
