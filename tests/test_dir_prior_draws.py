"""Draws from a prior ``+dir<α>`` (issue 42): ``draw_mdp`` draws every row from Dir(α)
over all S next states (the prior the agents are told), reproducibly from the generator
passed in; ``draw_rows`` (and so a test set), which can only hold the support's rows,
refuses it in one line; a prior without ``+dir`` draws as before."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bbrlcore import protocol
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import _dense as base
from bbrlcore.mdp import distributions as D

ALPHA = 0.3235
N_DRAWS = 3000


def _stack(name: str, n: int, seed: int = 11) -> np.ndarray:
    p = D.load(name)
    rng = np.random.default_rng(seed)
    return np.stack([p.draw_mdp(rng) for _ in range(n)])


@pytest.fixture(scope="module")
def dir_draws() -> np.ndarray:
    return _stack(f"UDeepSea-4+dir{ALPHA}", N_DRAWS)


@pytest.fixture(scope="module")
def plain_draws() -> np.ndarray:
    return _stack("UDeepSea-4", N_DRAWS)


def _moments_ok(P: np.ndarray, alpha: float) -> tuple[bool, bool, float]:
    """Whether every entry's mean over the draws is within 5 standard errors of
    Dir(α)'s 1/S, whether the pooled variance is within 5 standard errors of
    (1/S)(1 - 1/S)/(Sα + 1), and the KS p-value of one entry per row against its
    marginal Beta(α, (S - 1)α) (rows are independent: one entry each)."""
    n, S = P.shape[0], P.shape[-1]
    m, v = 1.0 / S, (1.0 / S) * (1.0 - 1.0 / S) / (S * alpha + 1.0)
    means_ok = bool((np.abs(P.mean(axis=0) - m) <= 5.0 * np.sqrt(v / n)).all())
    per_row = ((P - m) ** 2).mean(axis=-1).reshape(-1)  # independent across rows
    se = per_row.std(ddof=1) / np.sqrt(per_row.size)
    var_ok = bool(abs(per_row.mean() - v) <= 5.0 * se)
    nX, nU = P.shape[1:3]
    y = (np.arange(nX)[:, None] + np.arange(nU)[None, :]) % S
    one = P[:, np.arange(nX)[:, None], np.arange(nU)[None, :], y].reshape(-1)
    ks = stats.kstest(one, stats.beta(alpha, (S - 1) * alpha).cdf).pvalue
    return means_ok, var_ok, float(ks)


def test_draw_mdp_under_dir_is_dirichlet_alpha_over_every_next_state(dir_draws):
    P = dir_draws
    S = D.load("UDeepSea-4").n_states
    assert P.shape == (N_DRAWS, S, 2, S)
    assert np.allclose(P.sum(axis=-1), 1.0)
    # every next state is reached (the support of UDeepSea-4 is 10% of the entries)
    assert ((P > 0).mean(axis=0) > 0.99).all()
    means_ok, var_ok, ks = _moments_ok(P, ALPHA)
    assert means_ok and var_ok
    assert ks > 1e-3
    # the variance pins α: Dir(2α)'s is far outside the tolerance
    assert not _moments_ok(P, 2 * ALPHA)[1]


def test_the_prior_without_dir_fails_the_same_checks(plain_draws):
    # (the checks above can fail: on the support-only prior they do)
    assert (plain_draws == 0).mean() > 0.8
    means_ok, var_ok, ks = _moments_ok(plain_draws, ALPHA)
    assert not means_ok and ks < 1e-12


def test_draw_mdp_under_dir_is_reproducible_from_the_generator():
    p = D.load("UGC+dir0.5")
    a = p.draw_mdp(np.random.default_rng(4))
    assert np.array_equal(a, p.draw_mdp(np.random.default_rng(4)))
    assert not np.array_equal(a, p.draw_mdp(np.random.default_rng(5)))
    rng = np.random.default_rng(4)
    first, second = p.draw_mdp(rng), p.draw_mdp(rng)
    assert np.array_equal(first, a) and not np.array_equal(first, second)
    # numba's generator touched in between changes nothing: the draw reseeds it
    np.random.seed(0)
    assert np.array_equal(a, p.draw_mdp(np.random.default_rng(4)))
    # the transitions do not depend on the reward suffix (rewards: the prior's, as before)
    q = D.load("UGC+dir0.5+rnig")
    assert q.reward_prior.kind == "nig"
    assert np.array_equal(a, q.draw_mdp(np.random.default_rng(4)))
    assert np.array_equal(q.reward, D.load("UGC").reward)


def test_the_prior_without_dir_draws_as_before():
    # the same draws of the generator as the code before +dir was honoured
    p = D.load("UDeepSea-4")
    rng = np.random.default_rng(3)
    theta = p.theta
    pos = theta > 0
    g = np.where(pos, rng.standard_gamma(np.where(pos, theta, 1.0)), 0.0)
    want = g / g.sum(axis=2, keepdims=True)
    assert np.array_equal(p.draw_mdp(np.random.default_rng(3)), want)
    fam = D.load_test("DeepSea-4")  # a problem family's test distribution
    assert np.array_equal(fam.draw_mdp(np.random.default_rng(1)),
                          fam.draw_mdp(np.random.default_rng(1)))


def test_draw_rows_and_a_test_set_refuse_dir_in_one_line():
    p = D.load("UDeepSea-4+dir0.3235")
    with pytest.raises(BBRLError, match=r"^prior UDeepSea-4\+dir0.3235: a draw from "
                       r"Dir\(0.3235\) on every next state .* from UDeepSea-4$"):
        p.draw_rows(np.random.default_rng(0))
    with pytest.raises(BBRLError, match=r"prior UGC\+dir0.5\+rnig: .*draw_rows") as e:
        protocol.new_test_set(D.load_test("UGC+dir0.5+rnig"), 2, 0.95, 40, seed=0)
    assert "\n" not in str(e.value)


def test_a_draw_too_large_for_memory_is_refused_naming_the_prior(monkeypatch):
    p = D.load("UGC+dir0.5")
    monkeypatch.setattr(base, "MAX_AGENT_MEMORY_BYTES", 8 * 5 * 3 * 5 - 1)
    with pytest.raises(BBRLError, match=r"^prior UGC\+dir0.5: a draw from Dir\(0.5\) on "
                       r"every next state is held densely, 0.0 GB for 5 states, above"):
        p.draw_mdp(np.random.default_rng(0))
    monkeypatch.setattr(base, "MAX_AGENT_MEMORY_BYTES", 8 * 5 * 3 * 5)
    assert p.draw_mdp(np.random.default_rng(0)).shape == (5, 3, 5)
