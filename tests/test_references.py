"""Reference values of test MDPs (bbrlcore.mdp.references): the optimal, worst and uniform
policy's gain and episode values, against independent dense computations (every
deterministic policy evaluated by numpy least squares, scipy's linear programme, brute
force over non-stationary policies) on small random MDPs, and hand cases; stored in test
sets and turned into the run tables' regret."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import protocol as E
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import families, rows
from bbrlcore.mdp import references as RF


def random_mdp(seed: int, nX: int, nU: int, density: float) -> tuple[np.ndarray, np.ndarray]:
    """A random dense MDP: each row keeps each successor with probability ``density``
    (at least one), so that sparse draws are often multichain."""
    rng = np.random.default_rng(seed)
    keep = rng.random((nX, nU, nX)) < density
    keep[np.arange(nX)[:, None], np.arange(nU)[None, :], rng.integers(0, nX, (nX, nU))] = True
    P = np.where(keep, rng.random((nX, nU, nX)) + 0.05, 0.0)
    P /= P.sum(axis=2, keepdims=True)
    R = np.where(keep, rng.normal(size=(nX, nU, nX)), 0.0)
    return P, R


def dense_gain(Pp: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The gain of a Markov reward process, independently: any solution of
    (I - P) g = 0, g + (I - P) h = r (numpy least squares on the consistent system)."""
    n = len(r)
    eye = np.eye(n)
    A = np.block([[eye - Pp, np.zeros((n, n))], [eye, eye - Pp]])
    z = np.linalg.lstsq(A, np.concatenate([np.zeros(n), r]), rcond=None)[0]
    return z[:n]


def brute_force_gains(P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(policies, nX): the gain of every deterministic stationary policy."""
    nX, nU, _ = P.shape
    rbar = (P * R).sum(axis=2)
    out = []
    for pol in itertools.product(range(nU), repeat=nX):
        idx = np.arange(nX), np.array(pol)
        out.append(dense_gain(P[idx], rbar[idx]))
    return np.array(out)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), nX=st.integers(1, 4), nU=st.integers(1, 3),
       density=st.sampled_from([0.2, 0.5, 1.0]))
def test_gains_are_those_of_the_best_worst_and_uniform_policies(seed, nX, nU, density):
    """Optimal and worst gain of every state = the max and min over all deterministic
    policies (which attain them, multichain or not); the uniform policy's gain = the
    dense solution of its averaged chain."""
    P, R = random_mdp(seed, nX, nU, density)
    lay = rows.full(nX, nU)
    gains = brute_force_gains(P, R)
    best = RF.average_reward_rows(lay.succ, lay.nsucc, P, R, "max")
    worst = RF.average_reward_rows(lay.succ, lay.nsucc, P, R, "min")
    assert best.gain == pytest.approx(gains.max(axis=0), abs=1e-9)
    assert worst.gain == pytest.approx(gains.min(axis=0), abs=1e-9)
    # the policies returned attain them from every state, with that bias equation
    for g, sense in ((best, "max"), (worst, "min")):
        again = RF.policy_gain_rows(lay.succ, lay.nsucc, P, R, g.policy)
        assert again.gain == pytest.approx(g.gain, abs=1e-9), sense
    rbar = (P * R).sum(axis=2)
    rand = RF.policy_gain_rows(lay.succ, lay.nsucc, P, R, None)
    assert rand.gain == pytest.approx(dense_gain(P.mean(axis=1), rbar.mean(axis=1)),
                                      abs=1e-9)
    assert np.all(gains.min(axis=0) - 1e-9 <= rand.gain)
    assert np.all(rand.gain <= gains.max(axis=0) + 1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), nX=st.integers(2, 6), nU=st.integers(2, 3))
def test_the_optimal_gain_of_an_ergodic_mdp_is_the_linear_programme_s(seed, nX, nU):
    """Every transition positive (unichain): ρ* is the value of the linear programme
    min g s.t. g + h(x) >= r(x, u) + sum_y P(y|x,u) h(y) (scipy, HiGHS)."""
    from scipy.optimize import linprog

    P, R = random_mdp(seed, nX, nU, 1.0)
    rbar = (P * R).sum(axis=2)
    A, b = [], []
    for x in range(nX):
        for u in range(nU):
            row = np.zeros(1 + nX)
            row[0] = -1.0
            row[1:] = P[x, u]
            row[1 + x] -= 1.0
            A.append(row)
            b.append(-rbar[x, u])
    c = np.zeros(1 + nX)
    c[0] = 1.0
    lp = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=[(None, None)] * (1 + nX),
                 method="highs")
    assert lp.status == 0
    ref = RF.references(P, R, initial_state=0)
    assert ref.optimal_average_reward == pytest.approx(lp.fun, abs=1e-8)
    assert ref.constant_gain


def brute_force_episode(P: np.ndarray, R: np.ndarray, H: int, x0: int) -> tuple[float, float]:
    """max and min over every non-stationary deterministic policy of the expected H-step
    return from x0 (state distributions pushed forward)."""
    nX, nU, _ = P.shape
    rbar = (P * R).sum(axis=2)
    vals = []
    for pols in itertools.product(itertools.product(range(nU), repeat=nX), repeat=H):
        d = np.zeros(nX)
        d[x0] = 1.0
        total = 0.0
        for pol in pols:
            idx = np.arange(nX), np.array(pol)
            total += float(d @ rbar[idx])
            d = d @ P[idx]
        vals.append(total)
    return max(vals), min(vals)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), nX=st.integers(1, 3), H=st.integers(1, 3))
def test_episode_values_are_the_best_and_worst_of_all_policies(seed, nX, H):
    P, R = random_mdp(seed, nX, 2, 0.6)
    best, worst = brute_force_episode(P, R, H, 0)
    ref = RF.references(P, R, initial_state=0, episode_length=H)
    assert ref.optimal_episode_value == pytest.approx(best, abs=1e-12)
    assert ref.worst_episode_value == pytest.approx(worst, abs=1e-12)
    # the uniform policy: its state distribution pushed forward
    rbar = (P * R).sum(axis=2)
    d = np.zeros(nX)
    d[0] = 1.0
    total = 0.0
    for _ in range(H):
        total += float(d @ rbar.mean(axis=1))
        d = d @ P.mean(axis=1)
    assert ref.random_episode_value == pytest.approx(total, abs=1e-12)


def test_a_trap_makes_the_optimal_gain_depend_on_the_start():
    """Multichain by hand: from state 0 one can go to a loop paying 1 (state 1) or to a
    trap paying 0 (state 2); from the trap there is no way out. ρ* is 1 from states 0 and
    1, 0 in the trap: the start state's is used, and the MDP says it is not constant."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 1] = 1.0
    P[0, 1, 2] = 1.0
    P[1, :, 1] = 1.0
    R[1, :, 1] = 1.0
    P[2, :, 2] = 1.0
    g = RF.average_reward(P, R)
    assert g.gain.tolist() == [1.0, 1.0, 0.0]
    assert RF.average_reward(P, R, "min").gain.tolist() == [0.0, 1.0, 0.0]
    ref = RF.references(P, R, initial_state=0)
    assert (ref.optimal_average_reward, ref.worst_average_reward) == (1.0, 0.0)
    assert ref.random_average_reward == pytest.approx(0.5)
    assert not ref.constant_gain
    assert RF.references(P, R, initial_state=2).optimal_average_reward == 0.0
    # a uniform start: the mean over the states
    assert RF.references(P, R, initial_state=-1).optimal_average_reward == pytest.approx(2 / 3)


def test_a_periodic_chain_and_the_bias_condition():
    """A 3-cycle paying 3 once a lap: gain 1 everywhere; the bias has mean 0 under the
    stationary distribution (P* h = 0)."""
    P = np.zeros((3, 1, 3))
    R = np.zeros((3, 1, 3))
    for x in range(3):
        P[x, 0, (x + 1) % 3] = 1.0
    R[0, 0, 1] = 3.0
    g = RF.average_reward(P, R)
    assert g.gain == pytest.approx([1.0, 1.0, 1.0])
    assert g.bias.mean() == pytest.approx(0.0, abs=1e-12)
    assert g.bias[0] - g.bias[1] == pytest.approx(2.0)  # h(0) = 3 - 1 + h(1)


def test_families_references_match_their_known_optima():
    """DeepSea's optimal policy earns 1 - 0.01 per pass: per episode of N steps, and per
    N + 1 steps continuing (the surface step); the uniform policy finds the treasure with
    probability 2^-N. RiverSwim's worst policy never swims right at the far bank: 0."""
    for N in (5, 20):
        t = families.make("deepsea", size=N).test
        lay = t.support_layout
        P = t.draw_rows(np.random.default_rng(N))
        ref = RF.references_rows(lay.succ, lay.nsucc, P, t.reward_rows, 0, N)
        assert ref.optimal_average_reward == pytest.approx(0.99 / (N + 1))
        assert ref.optimal_episode_value == pytest.approx(0.99)
        assert ref.random_episode_value == pytest.approx(2.0 ** -N - 0.005, abs=1e-12)
        assert ref.worst_episode_value == pytest.approx(-0.01 * (N - 1) / N)
    t = families.make("riverswim", size=12).test
    lay = t.support_layout
    ref = RF.references_rows(lay.succ, lay.nsucc, t.draw_rows(np.random.default_rng(0)),
                             t.reward_rows, 0, 0)
    assert ref.worst_average_reward == 0.0 < ref.random_average_reward
    assert ref.random_average_reward < ref.optimal_average_reward


def test_a_nearly_decomposable_riverswim_is_solved_exactly():
    """RiverSwim-100: policies swimming right near the far bank only make chains whose
    bias reaches 1e11 (an exact solve there is all round-off); policy iteration starts
    from the discounted optimum and ends at the policy swimming right everywhere, whose
    gain is checked against the gain of that policy evaluated alone."""
    t = families.make("riverswim", size=100).test
    lay = t.support_layout
    P = t.draw_rows(np.random.default_rng(0))
    g = RF.average_reward_rows(lay.succ, lay.nsucc, P, t.reward_rows)
    assert g.policy.tolist() == [1] * 100
    right = RF.policy_gain_rows(lay.succ, lay.nsucc, P, t.reward_rows, np.ones(100, int))
    assert g.gain == pytest.approx(right.gain, rel=1e-12)
    assert np.ptp(g.gain) == 0.0


def test_a_cycle_of_round_off_ties_ends_at_the_worst_gain():
    """Taxi-5 with p_rand 0.02 (test seed 2024, MDP 2): the worst policies' chains are
    nearly decomposable (bias up to 1e23), and policy iteration for the minimum went
    round a cycle of policies whose gains agree within round-off until its iteration
    limit (a test set of Taxi could not be drawn). It now stops at the cycle, with the
    worst gain 0 (a taxi that never delivers pays nothing), which evaluating the policy
    alone confirms."""
    from bbrlcore import seeds

    t = families.make("taxi", size=5, p_rand=0.02).test
    lay = t.support_layout
    P = t.draw_rows(seeds.mdp_rng(2024, 2))
    worst = RF.average_reward_rows(lay.succ, lay.nsucc, P, t.reward_rows, "min")
    alone = RF.policy_gain_rows(lay.succ, lay.nsucc, P, t.reward_rows, worst.policy)
    assert np.abs(worst.gain).max() < 1e-9 and np.abs(alone.gain).max() < 1e-9
    best = RF.average_reward_rows(lay.succ, lay.nsucc, P, t.reward_rows)
    assert best.gain.min() > 0.1  # delivering pays


def test_bias_steps_on_round_off_stop_at_the_gain():
    """SimpleGrid-40 (test seed 0, MDP 1): the worst gain is reached at the second
    policy; then hundreds of bias steps followed the round-off of chains whose bias
    reaches 1e11 (17 s a test MDP). They stop after STALL_STEPS steps of the same gain,
    which evaluating the policy alone confirms."""
    from bbrlcore import seeds

    t = families.make("simplegrid", size=40).test
    lay = t.support_layout
    P = t.draw_rows(seeds.mdp_rng(0, 1))
    worst = RF.average_reward_rows(lay.succ, lay.nsucc, P, t.reward_rows, "min")
    assert worst.iterations <= RF.STALL_STEPS + 10
    alone = RF.policy_gain_rows(lay.succ, lay.nsucc, P, t.reward_rows, worst.policy)
    assert worst.gain == pytest.approx(alone.gain, rel=1e-9)
    assert worst.gain.max() == pytest.approx(0.0011574593082162748, rel=1e-9)


def test_bad_arguments_are_one_line():
    P, R = random_mdp(0, 2, 2, 1.0)
    lay = rows.full(2, 2)
    with pytest.raises(BBRLError, match="sense='best': expected 'max' or 'min'"):
        RF.average_reward_rows(lay.succ, lay.nsucc, P, R, "best")
    with pytest.raises(BBRLError, match="episode_length=-1: must be an integer >= 0"):
        RF.episode_values_rows(lay.succ, lay.nsucc, P, R, -1)
    with pytest.raises(BBRLError, match=r"row \(x=0, u=1\) has no successor"):
        RF.average_reward_rows(lay.succ, np.array([[2, 0], [2, 2]]), P, R)


# ---------------------------------------------------------------------------------------
# In test sets and run tables


def test_test_sets_store_the_references_of_their_setting_and_read_them_back(tmp_path):
    p = families.make("deepsea", size=4)
    epi = E.new_test_set(p.test, 3, 1.0, 40, 0, episode_length=4)
    cont = E.new_test_set(p.test, 3, 0.95, 50, 0)
    assert epi.references["optimal_episode_value"].to_list() == pytest.approx([0.99] * 3)
    assert epi.references["optimal_average_reward"].null_count() == 3
    assert cont.references["optimal_average_reward"].to_list() == pytest.approx([0.198] * 3)
    assert cont.references["optimal_episode_value"].null_count() == 3
    assert cont.references["constant_gain"].to_list() == [True] * 3
    for ts in (epi, cont):
        E.write_test_set(ts, tmp_path / "ts.parquet")
        back = E.read_test_set(tmp_path / "ts.parquet")
        assert back.references.equals(ts.references)
    assert E.new_test_set(p.test, 2, 0.95, 50, 0, references=False).references is None


def test_old_and_tampered_test_sets(tmp_path):
    from bbrlcore.formats import artefacts

    ts = E.new_test_set(families.make("deepsea", size=4).test, 2, 0.95, 50, 0)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    table, meta = artefacts.read_artefact(tmp_path / "ts.parquet", "test-set")
    old = tmp_path / "old.parquet"
    artefacts.write_artefact(old, table.select("mdp_index", "P"), "test-set", meta)
    assert E.read_test_set(old).references is None  # (written before them)
    bad = tmp_path / "bad.parquet"
    artefacts.write_artefact(bad, table.drop("worst_average_reward"), "test-set", meta)
    with pytest.raises(BBRLError, match="bad.parquet: test-set table lacks the reference "
                                        "columns worst_average_reward"):
        E.read_test_set(bad)
    artefacts.write_artefact(bad, table.with_columns(
        pl.lit(float("inf")).alias("optimal_average_reward")), "test-set", meta)
    with pytest.raises(BBRLError, match="MDP 0: optimal_average_reward = inf is not a finite"):
        E.read_test_set(bad)


def test_run_tables_carry_the_regret_against_the_references():
    """Continuing: regret = T ρ* - Σ r; episodic: Σ_e (V*_H - G_e). The Optimal agent of
    the undiscounted criterion has no regret, episode by episode, on deterministic
    DeepSea; Random has about 2^-N chances an episode."""
    p = families.make("deepsea", size=4)
    epi = E.new_test_set(p.test, 3, 1.0, 400, 0, episode_length=4)
    opt = E.train_agent("optimal", {"criterion": "undiscounted"}, p.prior("uniform"),
                        progress=False)
    t = E.run_agent(epi, opt, progress=False)
    assert t["regret"].to_list() == pytest.approx([0.0] * 3, abs=1e-9)
    rnd = E.run_agent(epi, E.train_agent("random", {}, p.prior("uniform"), progress=False),
                      progress=False)
    G = np.array(rnd["episode_returns"].to_list())
    assert rnd["regret"].to_list() == pytest.approx((0.99 - G).sum(axis=1).tolist())
    cont = E.new_test_set(p.test, 3, 0.95, 250, 0)
    r = E.run_agent(cont, E.train_agent("random", {}, p.prior("uniform"), progress=False),
                    progress=False)
    rho = cont.references["optimal_average_reward"].to_numpy()
    assert r["regret"].to_numpy() == pytest.approx(250 * rho - r["undiscounted_return"])
    assert r["optimal_reference"].to_numpy() == pytest.approx(rho)
    # without references: null
    bare = E.new_test_set(p.test, 3, 0.95, 250, 0, references=False)
    assert E.run_agent(bare, E.train_agent("random", {}, p.prior("uniform"), progress=False),
                       progress=False)["regret"].null_count() == 3
