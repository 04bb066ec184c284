"""Colosseum's indicators (bbrlcore.mdp.indicators) against Colosseum's own loop, and the
exact policy evaluation under them (bbrlcore.mdp.evaluation) against independent dense
computations.

**The fixture** ``tests/fixtures/colosseum/indicators.npz`` was made by
``benchmarks/colosseum_indicators_fixture.py``, run with a Python 3.9 environment that has
Colosseum 1.2 (``/work/peers/venv-col/bin/python benchmarks/colosseum_indicators_fixture.py``;
bbrl never imports Colosseum). For four cases — DeepSea-10 and DeepSea-8 (p_rand 0.05),
episodic; RiverSwim-8 (p_rand 0.05) and RiverSwim-6 (p_rand 0.1), continuing — it runs
Colosseum's ``MDPLoop.run(T, log_every)`` with a scripted agent whose current policy is a
fixed sequence (random stochastic policies; in the ``*_freeze`` cases the optimal policy
from some row on, preceded by a nearly optimal one, so that Colosseum's 10⁻³ clip and its
"optimal: stop training" rule fire), and records, at every row Colosseum writes, the policy
it evaluated, the current and the episode's starting state, and the unrounded values it
computed (``MDPLoop._last_logs``, ``_regret``, ``_normalized_regret``), with the rewards
of every step, Colosseum's T and R, and its reference values. bbrl recomputes every column
from the policies, states and rewards alone.

**Tolerance**: 10⁻⁶ relative to the column's largest value. Colosseum evaluates policies
in float32 (``dynamic_programming/finite_horizon.py`` allocates float32 Q and V; its T, R
and policies are float32), bbrl in float64: the largest difference seen is 2.3·10⁻⁷
relative (RiverSwim-8's cumulative regret), from the float32 round-off of Colosseum's
values. Which rows are evaluated while training, and where Colosseum stops training, must
agree exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bbrlcore.errors import BBRLError
from bbrlcore.mdp import evaluation as EV
from bbrlcore.mdp import indicators as IND
from bbrlcore.mdp import references as RF
from bbrlcore.mdp import rows

FIXTURE = Path(__file__).parent / "fixtures" / "colosseum" / "indicators.npz"
RTOL = 1e-6


@pytest.fixture(scope="module")
def fixture():
    return np.load(FIXTURE)


def cases(data):
    return [str(c) for c in data["cases"]]


def case_evaluator(data, c):
    g = lambda k: data[f"{c}/{k}"]  # noqa: E731
    kw = {"horizon": int(g("H"))} if bool(g("episodic")) else {}
    return IND.Evaluator.from_dense(g("P"), g("R"), start=g("start_distribution"), **kw), g


def test_the_fixture_exercises_the_rules_it_is_meant_to(fixture):
    names = cases(fixture)
    assert {"deepsea10_random", "deepsea8_freeze", "riverswim8_random",
            "riverswim6_freeze"} <= set(names)
    # Colosseum stopped training in the freeze cases only
    for c in names:
        stopped = not fixture[f"{c}/training"].all()
        assert stopped == c.endswith("freeze"), c
    # the continuing clip fired: a row whose gain is short of the optimum by less than
    # 1e-3 but not 0 has regret 0 in Colosseum's log
    c = "riverswim6_freeze"
    ev, g = case_evaluator(fixture, c)
    gains = [ev.gain(p, int(s)) for p, s in zip(g("policies"), g("states"), strict=True)]
    short = ev.optimal - np.array(gains)
    clipped = (short > 1e-7) & (short <= IND.CLIP_ATOL)
    assert clipped.any()
    assert (g("log_regret")[clipped] == 0).all()
    # T - 1 a multiple of log_every: Colosseum writes the last step twice
    steps = fixture["riverswim8_random/steps"]
    assert steps[-1] == steps[-2] == 2000


@pytest.mark.parametrize("c", ["deepsea10_random", "deepsea8_freeze", "riverswim8_random",
                               "riverswim6_freeze"])
def test_indicators_are_colosseums(fixture, c):
    ev, g = case_evaluator(fixture, c)
    episodic = bool(g("episodic"))
    states = g("starts") if episodic else g("states")
    T, L = int(g("T")), int(g("log_every"))
    out = ev.accumulate(list(g("policies")), states, T=T, log_every=L, rewards=g("rewards"))
    assert out["steps"].tolist() == g("steps").tolist()
    assert out["training"].tolist() == g("training").tolist()
    assert (out.stopped_training_at is None) == bool(g("training").all())
    for ours, theirs in IND.COLOSSEUM_NAMES.items():
        a, b = out[ours], g("log_" + theirs)
        scale = max(float(np.abs(b).max()), 1.0)
        assert np.abs(a - b).max() <= RTOL * scale, (ours, np.abs(a - b).max() / scale)
    for ours, theirs in [("row_regret", "regret"),
                         ("row_normalised_regret", "normalized_regret"),
                         ("row_expected_reward", "agent_average_reward")]:
        a, b = out[ours], g("log_" + theirs)
        assert np.abs(a - b).max() <= RTOL * max(float(np.abs(b).max()), 1.0), ours
    # Colosseum's table: the final row over T
    assert out.table_value() == pytest.approx(g("log_normalized_cumulative_regret")[-1] / T,
                                              rel=RTOL)


@pytest.mark.parametrize("c", ["deepsea10_random", "deepsea8_freeze", "riverswim8_random",
                               "riverswim6_freeze"])
def test_exact_references_are_colosseums(fixture, c):
    """bbrl's exact ρ*, ρ⁻ (V*, V⁻) equal Colosseum's on these MDPs (within its float32)."""
    ev, g = case_evaluator(fixture, c)
    assert ev.optimal == pytest.approx(float(g("optimal_average")), rel=1e-6)
    assert ev.worst == pytest.approx(float(g("worst_average")), rel=1e-6, abs=1e-9)
    if bool(g("episodic")):
        np.testing.assert_allclose(ev.optimal_start, g("V_optimal"), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(ev.worst_start, g("V_worst"), rtol=1e-6, atol=1e-9)


def test_given_references_are_used(fixture):
    c = "riverswim8_random"
    _, g = case_evaluator(fixture, c)
    ev = IND.Evaluator.from_dense(g("P"), g("R"), start=g("start_distribution"),
                                  optimal=1.0, worst=0.5)
    assert (ev.optimal, ev.worst) == (1.0, 0.5)


# ---------------------------------------------------------------------------------------
# the rows and the accumulation


@pytest.mark.parametrize("T,L", [(1, 100), (99, 100), (100, 100), (101, 100), (250, 100),
                                 (3001, 100), (500_000, 100), (37, 5), (10, -1), (10, 0)])
def test_rows_weights_add_up_to_T(T, L):
    steps, w = IND.log_rows(T, L)
    assert int(w.sum()) == T
    assert steps[-1] == T - 1
    if L > 0:
        assert steps[:-1].tolist() == list(range(L, T, L))
        assert (w[:-1] == L).all()
    else:
        assert steps.tolist() == [T - 1]


def two_state():
    P = np.zeros((2, 2, 2))
    R = np.zeros((2, 2, 2))
    P[0, 0, 0] = 1.0
    R[0, 0, 0] = 0.05
    P[0, 1, 1] = 1.0
    P[1, 0, 0] = 1.0
    P[1, 1, 1] = 0.9
    P[1, 1, 0] = 0.1
    R[1, 1, 1] = 1.0
    return P, R


def test_colosseum_stops_training_after_ten_optimal_rows_past_a_fifth():
    P, R = two_state()
    lay = rows.full(2, 2)
    ev = IND.Evaluator(lay.succ, lay.nsucc, P, R, start=0)
    T, L = 2000, 100
    n = IND.log_rows(T, L)[0].size
    bad, good = np.array([0, 0]), np.array([1, 1])
    pols = [bad] * 3 + [good] * (n - 3)
    out = ev.accumulate(pols, [0] * n, T=T, log_every=L)
    # rows at 400..1300 are optimal (10 rows), t = 1300 > 0.2 T: stop after step 1300
    assert out.stopped_training_at == 1301
    assert out["training"].tolist() == [True] * 13 + [False] * (n - 13)
    # once stopped, the first row after evaluates its policy (in Colosseum the frozen
    # one) and later policies are not looked at (that evaluation is reused)
    pols2 = pols[:14] + [bad] * (n - 14)
    out2 = ev.accumulate(pols2, [0] * n, T=T, log_every=L)
    np.testing.assert_array_equal(out2["normalised_expected_regret"],
                                  out["normalised_expected_regret"])
    # a time limit stops it too, and the policy of the first row after is the one kept
    out3 = ev.accumulate([bad] * n, [0] * n, T=T, log_every=L, frozen_from_step=250)
    assert out3.stopped_training_at == 250
    assert out3["training"].tolist() == [True, True] + [False] * (n - 2)


def test_regret_is_cumulative_over_the_weights():
    P, R = two_state()
    lay = rows.full(2, 2)
    ev = IND.Evaluator(lay.succ, lay.nsucc, P, R, start=0)
    steps, w = IND.log_rows(250, 100)
    out = ev.accumulate([np.array([0, 0])] * 3, [0, 0, 0], T=250, log_every=100,
                        rewards=np.full(250, 0.05))
    per = (ev.optimal - 0.05) / (ev.optimal - ev.worst)
    np.testing.assert_allclose(out["normalised_expected_regret"], per * np.cumsum(w))
    # realised rewards of the staying policy equal its expected ones except at the final
    # row, where Colosseum's sums cover T steps but t = T - 1
    np.testing.assert_allclose(out["reward"], [5.0, 10.0, 12.5])
    np.testing.assert_allclose(out["expected_reward"], [5.0, 10.0, 12.5])
    np.testing.assert_allclose(out["normalised_reward"],
                               (out["reward"] - steps * ev.worst) / (ev.optimal - ev.worst))


def test_bad_input_is_one_clear_error():
    P, R = two_state()
    lay = rows.full(2, 2)
    ev = IND.Evaluator(lay.succ, lay.nsucc, P, R, start=0)
    with pytest.raises(BBRLError, match="policies: 2 given, Colosseum evaluates 3 rows"):
        ev.accumulate([np.array([0, 0])] * 2, [0, 0], T=250, log_every=100)
    with pytest.raises(BBRLError, match="states: required"):
        ev.accumulate([np.array([0, 0])] * 3, None, T=250, log_every=100)
    with pytest.raises(BBRLError, match="rewards: 3 given, expected T=250"):
        ev.accumulate([np.array([0, 0])] * 3, [0] * 3, T=250, log_every=100,
                      rewards=np.zeros(3))
    with pytest.raises(BBRLError, match="T=0"):
        IND.log_rows(0, 100)
    with pytest.raises(BBRLError, match="actions must be in"):
        ev.evaluate(np.array([0, 2]), 0)
    with pytest.raises(BBRLError, match="too close to normalise"):
        IND.Evaluator(lay.succ, lay.nsucc, P, np.zeros_like(R), start=0)
    with pytest.raises(BBRLError, match="horizon=0"):
        IND.Evaluator(lay.succ, lay.nsucc, P, R, start=0, horizon=0)
    epi = IND.Evaluator(lay.succ, lay.nsucc, P, R, start=0, horizon=3)
    with pytest.raises(BBRLError, match="row 1 starts its episode in state 1, which the "
                                        "starting distribution never gives"):
        epi.accumulate([np.array([0, 0])] * 3, [0, 1, 0], T=250, log_every=100)
    P1, R1 = P.copy(), R.copy()
    P1[1, 0], R1[1, 0] = P1[1, 1], R1[1, 1]  # state 1's actions alike: nothing to regret
    with pytest.raises(BBRLError, match="from start state 1 the best and the worst"):
        IND.Evaluator(lay.succ, lay.nsucc, P1, R1, start=1, horizon=1)


# ---------------------------------------------------------------------------------------
# exact evaluation against dense computations


def random_mdp(seed, nX, nU, density):
    rng = np.random.default_rng(seed)
    keep = rng.random((nX, nU, nX)) < density
    keep[np.arange(nX)[:, None], np.arange(nU)[None, :], rng.integers(0, nX, (nX, nU))] = True
    P = np.where(keep, rng.random((nX, nU, nX)) + 0.05, 0.0)
    P /= P.sum(axis=2, keepdims=True)
    R = np.where(keep, rng.normal(size=(nX, nU, nX)), 0.0)
    return P, R


def random_policy(rng, nX, nU, sparse=True):
    pi = rng.dirichlet(np.ones(nU), size=nX)
    if sparse:
        pi[rng.random((nX, nU)) < 0.3] = 0.0
        pi[np.arange(nX), rng.integers(0, nU, nX)] += 0.1
        pi /= pi.sum(axis=1, keepdims=True)
    return pi


def dense_gain(Pp, r):
    """Independently: the Cesàro limit P* r, P* = lim (1/n) Σ P^k, as the solution of
    (I - P) g = 0, g + (I - P) h = r (least squares on the consistent system)."""
    n = len(r)
    eye = np.eye(n)
    A = np.block([[eye - Pp, np.zeros((n, n))], [eye, eye - Pp]])
    return np.linalg.lstsq(A, np.concatenate([np.zeros(n), r]), rcond=None)[0][:n]


@pytest.mark.parametrize("seed", range(40))
def test_gain_is_the_dense_cesaro_limit(seed):
    """Random sparse MDPs and stochastic policies (often multichain, some periodic)."""
    rng = np.random.default_rng(seed)
    nX, nU = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    P, R = random_mdp(seed, nX, nU, float(rng.choice([0.15, 0.4, 1.0])))
    pi = random_policy(rng, nX, nU)
    Pp = np.einsum("xu,xuy->xy", pi, P)
    r = np.einsum("xu,xu->x", pi, (P * R).sum(axis=2))
    want = dense_gain(Pp, r)
    lay = rows.layout_of(P > 0)
    Pv, Rv = rows.gather(P, lay), rows.gather(R, lay)
    for s in range(nX):
        got = EV.policy_gain(lay.succ, lay.nsucc, Pv, Rv, pi, s)
        assert got == pytest.approx(want[s], rel=1e-9, abs=1e-9)
    d = rng.dirichlet(np.ones(nX))
    assert EV.policy_gain(lay.succ, lay.nsucc, Pv, Rv, pi, d) == pytest.approx(
        float(d @ want), rel=1e-9, abs=1e-9)


def test_gain_of_periodic_and_multichain_chains():
    lay = rows.full(3, 1)
    P = np.zeros((3, 1, 3))
    R = np.zeros((3, 1, 3))
    P[0, 0, 1] = P[1, 0, 2] = P[2, 0, 0] = 1.0          # a 3-cycle paying 3 once a lap
    R[2, 0, 0] = 3.0
    pol = np.zeros(3, dtype=np.int64)
    assert [EV.policy_gain(lay.succ, lay.nsucc, P, R, pol, s) for s in range(3)] == [1.0] * 3
    # 0 -> {1 (pays 1 for ever), 2 (pays 0 for ever)} with 0.25 / 0.75
    P = np.zeros((3, 1, 3))
    R = np.zeros((3, 1, 3))
    P[0, 0, 1], P[0, 0, 2] = 0.25, 0.75
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    R[1, 0, 1] = 1.0
    assert EV.policy_gain(lay.succ, lay.nsucc, P, R, pol, 0) == pytest.approx(0.25)


@pytest.mark.parametrize("seed", range(6))
def test_large_chains_take_the_sparse_path_with_the_same_values(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    nX, nU = 7, 2
    P, R = random_mdp(100 + seed, nX, nU, 0.3)
    lay = rows.layout_of(P > 0)
    Pv, Rv = rows.gather(P, lay), rows.gather(R, lay)
    pi = random_policy(rng, nX, nU)
    dense = [EV.policy_gain(lay.succ, lay.nsucc, Pv, Rv, pi, s) for s in range(nX)]
    monkeypatch.setattr(EV, "DENSE_MAX", 1)
    sparse = [EV.policy_gain(lay.succ, lay.nsucc, Pv, Rv, pi, s) for s in range(nX)]
    np.testing.assert_allclose(sparse, dense, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_episode_values_are_the_dense_recursion(seed):
    rng = np.random.default_rng(seed)
    nX, nU, H = int(rng.integers(1, 8)), int(rng.integers(1, 4)), int(rng.integers(1, 7))
    P, R = random_mdp(seed, nX, nU, 0.4)
    rbar = (P * R).sum(axis=2)
    lay = rows.layout_of(P > 0)
    Pv, Rv = rows.gather(P, lay), rows.gather(R, lay)
    pi = np.stack([random_policy(rng, nX, nU) for _ in range(H)])
    V = np.zeros(nX)
    for h in reversed(range(H)):
        V = np.einsum("xu,xu->x", pi[h], rbar + P @ V)
    np.testing.assert_allclose(EV.episode_values(lay.succ, lay.nsucc, Pv, Rv, pi, H), V,
                               rtol=1e-12, atol=1e-12)
    # a deterministic policy gives what its one-hot stochastic form gives
    det = rng.integers(0, nU, (H, nX))
    onehot = np.eye(nU)[det]
    np.testing.assert_allclose(EV.episode_values(lay.succ, lay.nsucc, Pv, Rv, det, H),
                               EV.episode_values(lay.succ, lay.nsucc, Pv, Rv, onehot, H),
                               rtol=1e-12, atol=1e-12)
    # the greedy policy of backward induction reaches V*_H
    best = RF.episode_values_rows(lay.succ, lay.nsucc, Pv, Rv, H, "max")
    greedy = np.zeros((H, nX), dtype=np.int64)
    V = np.zeros(nX)
    for h in reversed(range(H)):
        Q = rbar + P @ V
        greedy[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    np.testing.assert_allclose(EV.episode_values(lay.succ, lay.nsucc, Pv, Rv, greedy, H),
                               best, rtol=1e-12, atol=1e-12)


def test_policy_checks_name_the_problem():
    with pytest.raises(BBRLError, match="at step 1 sum to 0.5"):
        EV.as_policy(np.array([[[1.0, 0.0]], [[0.5, 0.0]]]), 1, 2, 2)
    with pytest.raises(BBRLError, match="expected \\(3,\\) or \\(H, 3\\) with H = 4"):
        EV.as_policy(np.zeros((2, 3), dtype=np.int64), 3, 2, 4)
    with pytest.raises(BBRLError, match="finite and >= 0"):
        EV.as_policy(np.array([[1.5, -0.5]]), 1, 2)
    with pytest.raises(BBRLError, match="start=5"):
        lay = rows.full(2, 1)
        EV.policy_gain(lay.succ, lay.nsucc, np.full((2, 1, 2), 0.5), np.zeros((2, 1, 2)),
                       np.zeros(2, dtype=np.int64), 5)


def test_on_a_family_the_optimal_policy_has_no_regret_and_uniform_its_reference():
    """bbrl's own DeepSea-6 (episodic, H = 6): the backward-induction greedy policy has no
    expected regret; the uniform policy's expected reward per step is the test set's
    ``random_episode_value`` / H (mdp.references), at every row."""
    from bbrlcore.mdp import families

    t = families.make("deepsea", size=6, p_rand=0.1).test
    lay = t.support_layout
    P = t.draw_rows(np.random.default_rng(3))
    H = 6
    R = t.reward_rows
    rbar = (P * R).sum(axis=2)
    greedy = np.zeros((H, t.n_states), dtype=np.int64)
    V = np.zeros(t.n_states)
    for h in reversed(range(H)):
        Q = rbar + np.einsum("xuk,xuk->xu", P, V[lay.succ])
        greedy[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    T, L = 1500, 100
    n = IND.log_rows(T, L)[0].size
    out = IND.evaluate_policies(lay.succ, lay.nsucc, P, R, [greedy] * n, T=T, log_every=L,
                                horizon=H, start=t.initial_state)
    assert np.abs(out["normalised_expected_regret"]).max() <= 1e-12
    assert out.stopped_training_at == 1001  # the tenth optimal row (t = 1000 > 0.2 T)
    uniform = np.full((t.n_states, t.n_actions), 1.0 / t.n_actions)
    out = IND.evaluate_policies(lay.succ, lay.nsucc, P, R, [uniform] * n, T=T, log_every=L,
                                horizon=H, start=t.initial_state)
    ref = RF.references_rows(lay.succ, lay.nsucc, P, R, t.initial_state, H, continuing=False)
    np.testing.assert_allclose(out["row_expected_reward"], ref.random_episode_value / H,
                               rtol=1e-12)
    span = ref.optimal_episode_value - ref.worst_episode_value
    np.testing.assert_allclose(out["row_normalised_regret"],
                               (ref.optimal_episode_value - ref.random_episode_value) / span,
                               rtol=1e-12)
    table = out.to_polars()
    assert table.height == n and "normalised_expected_regret" in table.columns
