"""Colosseum's hardness measures (bbrlcore.mdp.hardness): cases known by hand, agreement
with the report's former dense diameter, and a brute force over all policies."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_hardness as analysis  # the former dense diameter (tests/)
from bbrlcore import protocol as E
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import hardness as H
from bbrlcore.mdp.solvers import guez_policy_iteration, support_of

METHODS = ["auto", "vi", "pi"]


def chain(n: int) -> np.ndarray:
    """Action 0 right, action 1 left, the ends stay."""
    P = np.zeros((n, 2, n))
    for x in range(n):
        P[x, 0, min(x + 1, n - 1)] = 1.0
        P[x, 1, max(x - 1, 0)] = 1.0
    return P


def cycle(n: int) -> np.ndarray:
    """A single action, right; the last state jumps to 0."""
    P = np.zeros((n, 1, n))
    for x in range(n):
        P[x, 0, (x + 1) % n] = 1.0
    return P


# ---------------------------------------------------------------------------------------
# Diameter: cases known by hand


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 3, 7, 40])
def test_deterministic_chain_and_cycle_have_diameter_n_minus_1(n, method):
    for P in (chain(n), cycle(n)):
        d = H.diameter(P, 0, method=method)
        assert d.value == n - 1 and d.unreachable_states == 0
        assert d.relative_error == 0.0


def test_single_state_has_diameter_zero():
    P = np.ones((1, 2, 1))
    assert H.diameter(P).value == 0.0


@pytest.mark.parametrize("method", METHODS)
def test_two_states_stochastic_diameter_is_one_over_p(method):
    # from 0: action 0 reaches 1 w.p. 0.2 (else stays), action 1 w.p. 0.1; from 1: to 0
    # w.p. 0.5. T(0 -> 1) = 1/0.2 = 5 (best action), T(1 -> 0) = 2: D = 5.
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.8, 0.2]
    P[0, 1] = [0.9, 0.1]
    P[1, :] = [0.5, 0.5]
    d = H.diameter(P, 0, method=method)
    assert d.value == pytest.approx(5.0, rel=1e-12)
    assert d.relative_error <= 1e-12


def test_hitting_times_of_a_known_chain_match_the_report():
    # the report's test: 3 states; action 0 advances w.p. 0.5 (action 1 w.p. 0.25),
    # 2 -> 0. T(0 -> 1) = T(1 -> 2) = 2, T(0 -> 2) = 4, T(2 -> 0) = 1,
    # T(1 -> 0) = 2 + 1 = 3, T(2 -> 1) = 1 + 2 = 3: D = 4
    P = np.zeros((3, 2, 3))
    for s in range(2):
        P[s, 0, s], P[s, 0, s + 1] = 0.5, 0.5
        P[s, 1, s], P[s, 1, s + 1] = 0.75, 0.25
    P[2, :, 0] = 1.0
    assert H.diameter(P).value == pytest.approx(4.0, rel=1e-12)


def test_unreachable_states_are_counted_and_left_out():
    # 0 <-> 1 deterministic; 2 -> 0, but nothing enters 2
    P = np.zeros((3, 1, 3))
    P[0, 0, 1] = P[1, 0, 0] = P[2, 0, 0] = 1.0
    d = H.diameter(P, 0)
    assert (d.value, d.unreachable_states) == (1.0, 1)
    # a uniformly drawn initial state: every state is a start, so 2 counts and is
    # never re-entered
    d = H.diameter(P, -1)
    assert d.value == np.inf and d.unreachable_states == 0


@pytest.mark.parametrize("method", METHODS)
def test_a_target_that_cannot_be_reached_gives_inf(method):
    # 1 is absorbing: 0 cannot be reached from it
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.5, 0.5]
    P[0, 1] = [1.0, 0.0]
    P[1, :, 1] = 1.0
    assert H.diameter(P, 0, method=method).value == np.inf
    # reached with positive probability only (a trap): still inf
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.0, 0.5, 0.5]
    P[1, 0, 0] = 1.0
    P[2, 0, 2] = 1.0
    assert H.diameter(P, 0, method=method).value == np.inf


def test_value_iteration_only_reports_its_certified_error():
    P = D.builtin("Grid").draw_mdp(np.random.default_rng(4))
    exact = H.diameter(P, 0, method="pi")
    vi = H.diameter(P, 0, method="vi")
    assert vi.policy_iterations == 0 and exact.sweeps == 0
    assert vi.relative_error <= 1e-12
    assert abs(vi.value - exact.value) <= 2e-12 * exact.value
    # stopped early (2 sweeps per target: the warm-started symmetric sweeps certify this
    # MDP's targets in 5): the bound still holds
    rough = H.diameter(P, 0, method="vi", max_sweeps=2)
    assert rough.relative_error > 1e-6
    if np.isfinite(rough.relative_error):
        assert abs(rough.value - exact.value) <= rough.relative_error * rough.value * 1.0001


# ---------------------------------------------------------------------------------------
# Agreement with the report's dense diameter (policy iteration per target)


@pytest.mark.parametrize("name", ["GC", "GDL", "Grid"])
def test_diameter_agrees_with_the_former_dense_computation(name):
    d = D.builtin(name)
    models = [d.mean_model()] + [d.draw_mdp(np.random.default_rng(s)) for s in range(4)]
    for P in models:
        P = np.ascontiguousarray(P)
        ref, ref_unreach = analysis._diameter(P, d.initial_state)
        for method in METHODS:
            got = H.diameter(P, d.initial_state, method=method)
            assert got.unreachable_states == ref_unreach
            assert got.value == pytest.approx(ref, rel=1e-9)


def test_the_hardness_table_keeps_the_former_numbers():
    ts = E.new_test_set(D.builtin("Grid"), 4, 0.95, 10, seed=1)
    h = H.hardness_table(ts)
    assert h.columns[:5] == ["test", "mdp_index", "optimal_value", "diameter",
                             "unreachable_states"]
    R = np.ascontiguousarray(ts.test.reward)
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.dense(i))
        supp, nsupp = support_of(P)
        V = np.zeros(25)
        guez_policy_iteration(P, R, supp, nsupp, 0.95, 1e-9, V, np.zeros(25, np.int64),
                              np.empty((25, 25)), np.empty(25))
        assert h["optimal_value"][i] == pytest.approx(V[0], rel=1e-10)
        diam, unreach = analysis._diameter(P, 0)
        assert h["diameter"][i] == pytest.approx(diam, rel=1e-9)
        assert h["unreachable_states"][i] == unreach == 1


# ---------------------------------------------------------------------------------------
# Brute force: every deterministic policy, exact hitting times by a linear solve


def _policy_hitting_times(Pp: np.ndarray, target: int) -> np.ndarray:
    """Expected steps to ``target`` in the Markov chain ``Pp`` (inf unless almost sure)."""
    n = Pp.shape[0]
    adj = Pp > 0
    reach_t = np.zeros(n, bool)
    reach_t[target] = True
    for _ in range(n):
        reach_t |= (adj & reach_t[None, :]).any(axis=1)
    bad = ~reach_t
    reach_bad = bad.copy()
    for _ in range(n):
        reach_bad |= (adj & reach_bad[None, :]).any(axis=1)
    ok = ~reach_bad
    ok[target] = False
    h = np.full(n, np.inf)
    h[target] = 0.0
    idx = np.flatnonzero(ok)
    if idx.size:
        A = np.eye(idx.size) - Pp[np.ix_(idx, idx)]
        h[idx] = np.linalg.solve(A, np.ones(idx.size))
    return h


def brute_force_diameter(P: np.ndarray, x0: int) -> tuple[float, int]:
    n, nU, _ = P.shape
    if x0 < 0:
        reach = np.ones(n, bool)
    else:
        reach = np.zeros(n, bool)
        reach[x0] = True
        for _ in range(n):
            reach |= ((P > 0).any(axis=1) & reach[:, None]).any(axis=0)
    diam = 0.0
    for t in np.flatnonzero(reach):
        best = np.full(n, np.inf)
        for pi in itertools.product(range(nU), repeat=n):
            best = np.minimum(best, _policy_hitting_times(P[np.arange(n), list(pi)], t))
        diam = max(diam, float(best[reach].max()))
    return diam, int((~reach).sum())


@st.composite
def small_mdps(draw):
    n = draw(st.integers(1, 5))
    nU = draw(st.integers(1, 3 if n <= 4 else 2))
    P = np.zeros((n, nU, n))
    for x in range(n):
        for u in range(nU):
            mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            if not any(mask):
                mask[draw(st.integers(0, n - 1))] = True
            w = draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n))
            row = np.where(mask, w, 0.0)
            P[x, u] = row / row.sum()
    x0 = draw(st.integers(-1, n - 1))
    return P, x0


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(small_mdps())
def test_diameter_equals_the_brute_force_over_policies(mdp):
    P, x0 = mdp
    ref, unreach = brute_force_diameter(P, x0)
    for method in METHODS:
        got = H.diameter(P, x0, method=method)
        assert got.unreachable_states == unreach
        if np.isinf(ref):
            assert got.value == np.inf
        else:
            assert got.value == pytest.approx(ref, rel=1e-9, abs=1e-12)
    # and the report's dense computation, from a fixed initial state
    old, old_unreach = analysis._diameter(np.ascontiguousarray(P), max(x0, 0))
    if x0 >= 0:
        assert old_unreach == unreach
        assert old == pytest.approx(ref, rel=1e-9, abs=1e-12) or (np.isinf(ref)
                                                                 and np.isinf(old))


# ---------------------------------------------------------------------------------------
# Value norm, gaps, optimal value


def test_value_norm_is_zero_on_a_deterministic_mdp():
    rng = np.random.default_rng(0)
    for P in (chain(6), cycle(5)):
        R = rng.normal(size=P.shape)
        assert H.value_norm(P, R, 0.9) == 0.0
        assert H.measures(P, R, 0.9).value_norm == 0.0


def test_value_norm_of_a_two_state_mdp_by_hand():
    # 0 -> {0, 1} w.p. 1/2 with reward 0; 1 absorbing with reward 1; γ = 0.5:
    # V*(1) = 2, V*(0) = 0.5 (V*(0) + 2) / 2 = 2/3; the standard deviation at 0 is
    # 0.5 |2 − 2/3| = 2/3, at 1 it is 0
    P = np.zeros((2, 1, 2))
    P[0, 0] = [0.5, 0.5]
    P[1, 0, 1] = 1.0
    R = np.zeros((2, 1, 2))
    R[1, 0, 1] = 1.0
    V, _ = H.optimal_values(P, R, 0.5)
    assert V == pytest.approx([2 / 3, 2.0], rel=1e-12)
    assert H.value_norm(P, R, 0.5) == pytest.approx(2 / 3, rel=1e-12)
    # a second, deterministic action at 0 (to 1, reward 0) is optimal: Q*(0,1) = 1 >
    # Q*(0,0) = 0.5 (V*(0) + 2) / 2 with V*(0) = 1, i.e. 0.75. Over every pair the norm
    # is the stochastic action's 0.5 |2 − 1| = 0.5; over optimal actions only it is 0.
    P2 = np.zeros((2, 2, 2))
    P2[:, 0] = P[:, 0]
    P2[0, 1, 1] = 1.0
    P2[1, 1, 1] = 1.0
    R2 = np.zeros((2, 2, 2))
    R2[1, :, 1] = 1.0
    assert H.value_norm(P2, R2, 0.5) == pytest.approx(0.5, rel=1e-12)
    assert H.value_norm(P2, R2, 0.5, optimal_actions_only=True) == 0.0


def test_gaps_of_a_bandit_like_mdp_by_hand():
    # one state, two self-loops with rewards 1 and 0.5, γ = 0.9: Q* = (10, 9.5)
    P = np.ones((1, 2, 1))
    R = np.array([[1.0, 0.5]])
    V, Q = H.optimal_values(P, R, 0.9)
    assert Q == pytest.approx(np.array([[10.0, 9.5]]), rel=1e-12)
    assert H.suboptimality_gaps(P, R, 0.9) == pytest.approx(2.0, rel=1e-10)
    # Colosseum's package form: every pair, 1/(Δ + 0.1)
    assert H.suboptimality_gaps(P, R, 0.9, regularization=0.1) == pytest.approx(
        1 / 0.1 + 1 / 0.6, rel=1e-10)


def test_gaps_of_a_two_state_mdp_by_hand():
    # state 0: stay (0) or go to 1 (0); state 1: stay with reward 1, or go to 0 (0);
    # γ = 0.5: V*(1) = 2, V*(0) = 1; Q*(0) = (0.5, 1), Q*(1) = (2, 0.5):
    # gaps 0.5 and 1.5, sum of reciprocals 2 + 2/3
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 1] = P[1, 1, 0] = 1.0
    R = np.array([[0.0, 0.0], [1.0, 0.0]])
    V, Q = H.optimal_values(P, R, 0.5)
    assert Q == pytest.approx(np.array([[0.5, 1.0], [2.0, 0.5]]), rel=1e-12)
    assert H.suboptimality_gaps(P, R, 0.5) == pytest.approx(8 / 3, rel=1e-10)
    # restricted to the states reachable from 1 (both) — the same; a state never
    # reached from 0 is left out when asked
    P3 = np.zeros((3, 2, 3))
    P3[:2, :, :2] = P
    P3[2, :, 0] = 1.0
    R3 = np.zeros((3, 2))
    R3[:2] = R
    R3[2] = [0.0, 1.0]
    assert H.suboptimality_gaps(P3, R3, 0.5, reachable_from=0) == pytest.approx(8 / 3)
    assert H.suboptimality_gaps(P3, R3, 0.5) == pytest.approx(8 / 3 + 1.0)


def test_tied_actions_are_not_gaps():
    P = np.ones((1, 3, 1))
    R = np.array([[1.0, 1.0, 1.0 - 1e-15]])  # within the tie tolerance
    assert H.suboptimality_gaps(P, R, 0.9) == 0.0


def test_optimal_values_match_an_exact_policy_evaluation():
    d = D.builtin("Grid")
    P = d.draw_mdp(np.random.default_rng(2))
    V, Q = H.optimal_values(P, d.reward, 0.95)
    pi = Q.argmax(axis=1)
    n = P.shape[0]
    Pp = P[np.arange(n), pi]
    r = (Pp * d.reward[np.arange(n), pi]).sum(axis=1)
    exact = np.linalg.solve(np.eye(n) - 0.95 * Pp, r)
    assert np.abs(V - exact).max() <= 1e-11 * np.abs(exact).max()
    # the Bellman optimality equation holds
    Q2 = (P * (d.reward + 0.95 * exact[None, None, :])).sum(axis=2)
    assert np.abs(Q2.max(axis=1) - exact).max() <= 1e-11 * np.abs(exact).max()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="shape"):
        H.diameter(np.ones((2, 1, 3)))
    with pytest.raises(ValueError, match="probability"):
        H.diameter(np.ones((2, 1, 2)))
    with pytest.raises(ValueError, match="gamma"):
        H.optimal_values(np.ones((1, 1, 1)), np.ones((1, 1)), 1.0)
    with pytest.raises(ValueError, match="R must"):
        H.value_norm(np.ones((1, 1, 1)), np.ones(3), 0.9)
    with pytest.raises(ValueError, match="method"):
        H.diameter(np.ones((1, 1, 1)), method="lp")
    with pytest.raises(ValueError, match="initial_state"):
        H.diameter(np.ones((1, 1, 1)), 3)


# ---------------------------------------------------------------------------------------
# Tables


def test_hardness_table_and_summary():
    ts = E.new_test_set(D.builtin("GC"), 5, 0.95, 10, seed=1)
    t = H.hardness_table(ts)
    assert t.columns == ["test", "mdp_index", "optimal_value", "diameter",
                         "unreachable_states", "value_norm", "suboptimality_gaps"]
    assert t.height == 5 and (t["test"] == "GC").all()
    m = H.measures(ts.dense(3), ts.test.reward, 0.95, 0)
    row = t.row(3, named=True)
    assert row["diameter"] == m.diameter and row["value_norm"] == m.value_norm
    assert (t["value_norm"] > 0).all() and (t["suboptimality_gaps"] > 0).all()
    s = H.hardness_summary(pl.concat([t, t.with_columns(pl.lit("X").alias("test"))]))
    assert s["test"].to_list() == ["GC"] * 5 + ["X"] * 5
    d = s.filter((pl.col("test") == "GC") & (pl.col("measure") == "diameter")).row(
        0, named=True)
    assert d["n_mdps"] == 5 and d["n_infinite"] == 0
    assert d["median"] == pytest.approx(float(t["diameter"].median()))
    assert d["min"] <= d["q05"] <= d["median"] <= d["q95"] <= d["max"]


def test_nearly_deterministic_mdps_take_the_reduced_policy_iteration():
    """Taxi-like: deterministic moves and a few stochastic 'respawn' rows. The auto
    method solves every target by policy iteration on the reduced system (no sweeps)
    and agrees with dense policy iteration and with value iteration."""
    rng = np.random.default_rng(3)
    n, nU = 30, 2
    P = np.zeros((n, nU, n))
    for x in range(n):
        P[x, 0, (x + 1) % n] = 1.0          # a ring
        P[x, 1, x] = 1.0                    # stay
    for x in (4, 17):                       # two respawn rows
        P[x, 1] = 0.0
        P[x, 1, rng.choice(n, 5, replace=False)] = rng.dirichlet(np.ones(5))
    auto = H.diameter(P, 0, method="auto")
    assert auto.policy_iterations == auto.targets_solved and auto.sweeps == 0
    every = H.diameter(P, 0, method="auto", prune=False)  # each target, not only the
    assert every.policy_iterations == every.targets_solved == n  # unbounded ones
    assert every.value == auto.value
    for method in ("pi", "vi"):
        other = H.diameter(P, 0, method=method)
        assert other.value == pytest.approx(auto.value, rel=1e-9)
    assert auto.relative_error <= 1e-9
