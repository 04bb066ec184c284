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
from bbrlcore.errors import BBRLError
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


# ---------------------------------------------------------------------------------------
# Issue 33: γ close to 1 and γ = 1, reachable states only, tiny probabilities, the
# diameter's speed-ups (checked against every target solved), the artefact's metadata,
# Colosseum's regularised gaps


def dense_optimal_values(P: np.ndarray, R: np.ndarray, gamma: float):
    """Independent reference: policy iteration with numpy's dense solves (R[x, u])."""
    n, nU, _ = P.shape
    pi = np.zeros(n, dtype=int)
    for _ in range(1000):
        Pp = P[np.arange(n), pi]
        V = np.linalg.solve(np.eye(n) - gamma * Pp, R[np.arange(n), pi])
        Q = R + gamma * P @ V
        new = np.where(Q.max(axis=1) > Q[np.arange(n), pi] + 1e-12 * np.abs(Q).max(),
                       Q.argmax(axis=1), pi)
        if (new == pi).all():
            return V, Q
        pi = new
    raise AssertionError("no convergence")


def riverswim_test_set(gamma: float, n_mdps: int = 1):
    from bbrlcore.mdp import families as F

    return E.new_test_set(F.make("riverswim", size=6, p_rand=0.1).test, n_mdps, gamma, 20, 0)


def test_gamma_close_to_one_is_solved_exactly_not_at_a_sweep_limit():
    # bbrl hardness gave V*(0) = 8.09e5 here (value iteration stopped at its sweep cap)
    ts = riverswim_test_set(0.9999999)
    h = H.hardness_table(ts)
    P = np.ascontiguousarray(ts.dense(0))
    R = (P * ts.test.reward).sum(axis=2)
    V, Q = dense_optimal_values(P, R, 0.9999999)
    assert V[0] > 1e6  # the exact value, 1.194e6 for this draw
    assert h["optimal_value"][0] == pytest.approx(V[0], rel=1e-7)
    norm = max(np.sqrt(P[x, u] @ (V - P[x, u] @ V) ** 2) for x in range(6) for u in range(2))
    assert h["value_norm"][0] == pytest.approx(norm, rel=1e-6)
    gaps = V[:, None] - Q
    assert h["suboptimality_gaps"][0] == pytest.approx((1 / gaps[gaps > 1e-3]).sum(),
                                                       rel=1e-6)


def test_value_iteration_reports_non_convergence_and_the_solver_acts_on_it():
    ts = riverswim_test_set(0.9999999)
    P = np.ascontiguousarray(ts.dense(0))
    rows = H.sparse_rows(P)
    rbar = H.expected_rewards(P * 0 + ts.test.reward, *rows, 2)
    V = np.zeros(6)
    sweeps, bound = H.optimal_state_values(*rows, rbar, 0.9999999, H.VALUE_RTOL, 1000, V)
    assert sweeps == 1000 and bound > 1e-3 * np.abs(V).max()  # reported unconverged
    V2, Q2, bound2 = H.optimal_values_rows(*rows, rbar, 0.9999999)  # acted on
    assert bound2 <= H.VALUE_MAX_RTOL * np.abs(V2).max()
    assert V2[0] == pytest.approx(dense_optimal_values(P, rbar, 0.9999999)[0][0], rel=1e-7)
    # closer to 1 than float64 can resolve: refused with the reason, never printed
    with pytest.raises(BBRLError, match="cannot be certified.*too close to 1"):
        H.optimal_values_rows(*rows, rbar, 1 - 1e-15, what="RiverSwim-6-prand0.1, MDP 0")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_mdps(), st.sampled_from([0.3, 0.9, 0.999, 0.99999, 0.9999999]),
       st.integers(0, 2**31))
def test_optimal_values_agree_with_dense_linear_solves_for_any_gamma(mdp, gamma, seed):
    P, _ = mdp
    R = np.random.default_rng(seed).uniform(-1, 1, P.shape[:2])
    V, Q = H.optimal_values(P, R, gamma)
    Vd, Qd = dense_optimal_values(P, R, gamma)
    scale = max(1.0, np.abs(Vd).max())
    assert np.abs(V - Vd).max() <= (1e-10 if gamma < 0.999 else 1e-7) * scale
    assert np.abs(Q - Qd).max() <= (1e-10 if gamma < 0.999 else 1e-7) * scale


def test_gamma_one_leaves_the_value_measures_undefined_and_measures_the_diameter():
    one, other = riverswim_test_set(1.0, 3), riverswim_test_set(0.95, 3)
    h1, h2 = H.hardness_table(one), H.hardness_table(other)
    for col in ("optimal_value", "value_norm", "suboptimality_gaps"):
        assert h1[col].null_count() == 3  # not measured at a silent 0.95
    assert h1["diameter"].to_list() == h2["diameter"].to_list()
    assert H.hardness_table(one, 0.95).equals(h2)  # an explicit γ measures them
    s = H.hardness_summary(h1)
    assert s.filter(pl.col("measure") == "optimal_value")["median"].to_list() == [None]


def test_value_norm_and_gaps_are_measured_on_the_reachable_states_only():
    # DeepSea-10 with p_rand = 0.1: the padding cells of the grid (never entered) made the
    # value norm 0.433; over the states reachable from the start it is 0.207
    from bbrlcore.mdp import families as F

    ts = E.new_test_set(F.make("deepsea", size=10, p_rand=0.1).test, 2, 0.95, 20, 0)
    h = H.hardness_table(ts)
    x0 = ts.test.initial_state
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.dense(i))
        R = (P * ts.test.reward).sum(axis=2)
        V, Q = dense_optimal_values(P, R, 0.95)
        reach = np.zeros(len(V), bool)
        reach[x0] = True
        for _ in range(len(V)):
            reach |= ((P >= H.REACH_TOLERANCE).any(axis=1) & reach[:, None]).any(axis=0)
        assert (~reach).sum() == h["unreachable_states"][i] > 0
        norm = max(np.sqrt(P[x, u] @ (V - P[x, u] @ V) ** 2)
                   for x in np.flatnonzero(reach) for u in range(2))
        everywhere = max(np.sqrt(P[x, u] @ (V - P[x, u] @ V) ** 2)
                         for x in range(len(V)) for u in range(2))
        assert h["value_norm"][i] == pytest.approx(norm, rel=1e-9)
        assert norm < 0.6 * everywhere  # the padding counted before
        gaps = (V[:, None] - Q)[reach]
        assert h["suboptimality_gaps"][i] == pytest.approx(
            (1 / gaps[gaps > 1e-9 * np.abs(Q).max()]).sum(), rel=1e-9)
        assert H.value_norm(P, R, 0.95, reachable_from=x0) == pytest.approx(norm, rel=1e-9)


def test_a_transition_below_the_tolerance_counts_as_absent():
    # 0 <-> 1 deterministic, plus a 1e-17 chance from 0 into the trap 2: the trap made
    # the diameter infinite; under the documented tolerance it is unreachable
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.0, 1.0 - 1e-17, 1e-17]
    P[1, 0, 0] = 1.0
    P[2, 0, 2] = 1.0
    d = H.diameter(P, 0)
    assert (d.value, d.unreachable_states) == (1.0, 1)
    R = np.zeros((3, 1))
    R[2] = 1.0
    assert H.measures(P, R, 0.9, 0).unreachable_states == 1
    # at the tolerance itself the transition counts: the trap is reachable, D = inf
    P[0, 0] = [0.0, 1.0 - H.REACH_TOLERANCE, H.REACH_TOLERANCE]
    assert H.diameter(P, 0).value == np.inf
    # a stochastic step of 1e-13 is ignored, one of 1e-11 is not
    for p, inf in ((1e-13, False), (1e-11, True)):
        P[0, 0] = [0.0, 1.0 - p, p]
        assert np.isinf(H.diameter(P, 0).value) == inf


@st.composite
def structured_mdps(draw):
    """Chains, rings and grids with random stochastic rows: the shapes the pruning and
    the warm starts are made for (their targets' hitting times differ widely)."""
    kind = draw(st.sampled_from(["chain", "ring", "grid"]))
    n = draw(st.integers(4, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    if kind == "grid":
        w = max(2, int(np.sqrt(n)))
        n = w * w
        moves = [(0, 1), (0, -1), (1, 0), (-1, 0)]
        nU = 4
    else:
        moves = [1, -1]
        nU = 2
    P = np.zeros((n, nU, n))
    for x in range(n):
        for u in range(nU):
            if kind == "grid":
                r, c = divmod(x, w)
                dr, dc = moves[u]
                y = min(max(r + dr, 0), w - 1) * w + min(max(c + dc, 0), w - 1)
            elif kind == "ring":
                y = (x + moves[u]) % n
            else:
                y = min(max(x + moves[u], 0), n - 1)
            ok = rng.uniform(0.05, 1.0)
            P[x, u, y] += ok
            P[x, u, x] += rng.uniform(0, 1 - ok)
            P[x, u, rng.integers(n)] += 1 - P[x, u].sum()
    return P, draw(st.integers(-1, n - 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structured_mdps())
def test_pruned_targets_and_warm_starts_give_the_diameter_of_every_target_solved(mdp):
    P, x0 = mdp
    ref, unreach = analysis._diameter(np.ascontiguousarray(P), max(x0, 0)) if x0 >= 0 \
        else (None, 0)
    every = H.diameter(P, x0, method="pi", prune=False)
    assert every.targets_solved == P.shape[0] - every.unreachable_states or np.isinf(
        every.value)
    if ref is not None:
        assert every.value == pytest.approx(ref, rel=1e-9) or np.isinf(ref)
    for method in METHODS:
        d = H.diameter(P, x0, method=method)
        assert d.unreachable_states == every.unreachable_states
        assert d.value == pytest.approx(every.value, rel=1e-9) or (
            np.isinf(every.value) and np.isinf(d.value))
        assert d.targets_solved <= every.targets_solved


def test_large_stochastic_diameters_match_every_target_solved():
    """The sizes of issue 33 scaled down: a RiverSwim chain, a FrozenLake with p_rand 0.5
    and a DeepSea with p_rand 0.5 (solving every target, by policy iteration, is the
    reference). The pruning solves few targets."""
    from bbrlcore.mdp import families as F

    for fam, params in (("riverswim", {"size": 120}),
                        ("frozenlake", {"size": 9, "p_rand": 0.5}),
                        ("deepsea", {"size": 12, "p_rand": 0.5})):
        ts = E.new_test_set(F.make(fam, **params).test, 1, 0.95, 10, seed=3)
        lay = ts.layout
        ip, ix, pb, _ = H.csr_of_rows(lay.succ, lay.nsucc, ts.mdps[0],
                                      np.ascontiguousarray(ts.test.reward_rows))
        x0 = ts.test.initial_state
        fast = H.diameter_rows(ip, ix, pb, lay.succ.shape[1], x0)
        every = H.diameter_rows(ip, ix, pb, lay.succ.shape[1], x0, method="pi",
                                prune=False)
        assert fast.value == pytest.approx(every.value, rel=1e-9), fam
        assert fast.targets_solved < every.targets_solved / 2, fam


def test_a_diameter_beyond_float64_is_refused_not_printed():
    # Strens' chain of 300 states needs 299 steps without a slip (0.2 each): about
    # 1.25^299 ≈ 1e29 expected steps, far beyond float64's precision of the hitting times
    from bbrlcore.mdp import families as F

    ts = E.new_test_set(F.make("chain", size=300).test, 1, 0.95, 10, seed=0)
    with pytest.raises(BBRLError, match="MDP 0: the diameter cannot be computed in float64"):
        H.hardness_table(ts)


def test_gaps_with_colosseums_regularisation_match_its_formula():
    # Colosseum's get_sum_reciprocals_suboptimality_gaps (continuing form, every state):
    # (1 / (V[:, None] - Q + regularization)).sum() with regularization = 0.1
    rng = np.random.default_rng(7)
    for _ in range(5):
        n, nU = 6, 3
        P = rng.dirichlet(np.ones(n) * 0.5, size=(n, nU))
        R = rng.uniform(0, 1, (n, nU))
        V, Q = dense_optimal_values(P, R, 0.9)
        colosseum = (1 / (V[:, None] - Q + 0.1)).sum()
        assert H.suboptimality_gaps(P, R, 0.9, regularization=0.1) == pytest.approx(
            colosseum, rel=1e-9)


def test_the_package_exports_every_public_name_of_its_modules():
    """``bbrlcore.mdp.hardness`` is a sub-package (one module per measure): every public
    name a module defines is a name of the package, listed in ``__all__``, the same object;
    no module is named like one of those names (it would shadow it)."""
    import ast
    import importlib
    import pkgutil
    from pathlib import Path

    defined = {}
    for info in pkgutil.iter_modules(H.__path__):
        mod = importlib.import_module(f"{H.__name__}.{info.name}")
        for node in ast.parse(Path(mod.__file__).read_text()).body:
            names = ([node.name] if isinstance(node, ast.FunctionDef | ast.ClassDef) else
                     [t.id for t in node.targets] if isinstance(node, ast.Assign) else
                     [node.target.id] if isinstance(node, ast.AnnAssign) else [])
            for n in names:
                if not n.startswith("_"):
                    assert n not in defined, (n, defined.get(n), info.name)
                    defined[n] = info.name
                    assert getattr(H, n) is getattr(mod, n), n
    assert sorted(H.__all__) == sorted(defined)
    assert not {info.name for info in pkgutil.iter_modules(H.__path__)} & set(defined)
    assert {"diameter", "measures", "hardness_table", "value_norm", "suboptimality_gaps",
            "REACH_TOLERANCE", "optimal_values_rows"} <= set(defined)
