import numpy as np
import pytest

from bbrlcore.mdp import distributions as D
from bbrlcore.mdp.solvers import (
    guez_policy_iteration,
    guez_value_iteration,
    q_iteration,
    support_of,
)


def exact_greedy_value(P, R, gamma, pi):
    """Value of the deterministic policy pi by a linear solve."""
    n = P.shape[0]
    Pp = P[np.arange(n), pi]
    r = (Pp * R[np.arange(n), pi]).sum(axis=1)
    return np.linalg.solve(np.eye(n) - gamma * Pp, r)


def optimal_value(P, R, gamma):
    V = np.zeros(P.shape[0])
    for _ in range(5000):
        V = (P * (R + gamma * V[None, None, :])).sum(axis=2).max(axis=1)
    return V


def test_q_iteration_against_exact_solution():
    gamma = 0.95
    for name in ["GC", "GDL", "Grid", "UGrid"]:
        d = D.builtin(name)
        for seed in range(3):
            P = d.draw_mdp(np.random.default_rng(seed))
            supp, nsupp = support_of(P)
            Q = np.zeros(P.shape[:2])
            q_iteration(P, d.reward, supp, nsupp, gamma, 10_000, Q)
            Vstar = optimal_value(P, d.reward, gamma)
            # tolerance 0.01 on the last sweep: error <= 0.01 * gamma / (1 - gamma)
            bound = 0.01 * gamma / (1 - gamma) + 1e-9
            assert np.abs(Q.max(axis=1) - Vstar).max() <= bound
            # the greedy policy's exact value is close to optimal as well
            pi = Q.argmax(axis=1)
            Vpi = exact_greedy_value(P, d.reward, gamma, pi)
            assert np.abs(Vpi - Vstar).max() <= 2 * bound / (1 - gamma)


def test_q_iteration_is_capped_at_horizon_plus_one_sweeps():
    d = D.builtin("GC")
    P = d.draw_mdp(np.random.default_rng(0))
    supp, nsupp = support_of(P)
    Q = np.zeros(P.shape[:2])
    assert q_iteration(P, d.reward, supp, nsupp, 0.95, 3, Q) == 4
    # from zero, 4 sweeps = the 4-step lookahead value
    V = np.zeros(5)
    for _ in range(4):
        Qk = (P * (d.reward + 0.95 * V)).sum(axis=2)
        V = Qk.max(axis=1)
    assert np.allclose(Q, Qk)


def test_warm_start_reaches_the_same_tolerance():
    d = D.builtin("Grid")
    P = d.draw_mdp(np.random.default_rng(1))
    supp, nsupp = support_of(P)
    cold = np.zeros(P.shape[:2])
    n_cold = q_iteration(P, d.reward, supp, nsupp, 0.95, 250, cold)
    warm = cold.copy()
    n_warm = q_iteration(P, d.reward, supp, nsupp, 0.95, 250, warm)
    assert n_warm == 1 and n_cold > 50
    assert np.abs(warm - cold).max() <= 0.01


def test_guez_policy_iteration_matches_value_iteration():
    gamma, tol = 0.95, 1e-4
    for name in ["GC", "GDL", "Grid", "UGC", "UGrid"]:
        d = D.builtin(name)
        for seed in range(3):
            P = d.draw_mdp(np.random.default_rng(seed))
            supp, nsupp = support_of(P)
            nX = P.shape[0]
            V1 = np.zeros(nX)
            pi1 = np.zeros(nX, dtype=np.int64)
            guez_value_iteration(P, d.reward, supp, nsupp, gamma, tol, V1, pi1)
            V2 = np.zeros(nX)
            pi2 = np.zeros(nX, dtype=np.int64)
            guez_policy_iteration(P, d.reward, supp, nsupp, gamma, tol, V2, pi2,
                                  np.empty((nX, nX)), np.empty(nX))
            Vstar = optimal_value(P, d.reward, gamma)
            assert np.abs(V2 - Vstar).max() < 1e-6
            assert np.abs(V1 - Vstar).max() < tol * gamma / (1 - gamma) * 10
            # same greedy values (policies may differ only on near-ties)
            Q = (P * (d.reward + gamma * Vstar)).sum(axis=2)
            assert np.abs(Q[np.arange(nX), pi2] - Q.max(axis=1)).max() < 1e-6


def test_q_solve_reaches_the_fixed_point_and_passes_the_stopping_test():
    from bbrlcore.mdp.solvers import q_solve

    gamma = 0.95
    for name in ["GC", "GDL", "Grid", "UGrid"]:
        d = D.builtin(name)
        for seed in range(3):
            P = d.draw_mdp(np.random.default_rng(seed))
            supp, nsupp = support_of(P)
            Q = np.zeros(P.shape[:2])
            q_solve(P, d.reward, supp, nsupp, gamma, 250, Q)
            Vstar = optimal_value(P, d.reward, gamma)
            assert np.abs(Q.max(axis=1) - Vstar).max() < 1e-8
            # the Q-iteration's stopping test holds at once from there
            Q2 = Q.copy()
            assert q_iteration(P, d.reward, supp, nsupp, gamma, 250, Q2) == 1
            assert np.abs(Q2 - Q).max() <= 0.01


def test_q_solve_keeps_the_cap_when_it_binds():
    from bbrlcore.mdp.solvers import q_solve

    d = D.builtin("GC")
    P = d.draw_mdp(np.random.default_rng(0))
    supp, nsupp = support_of(P)
    a, b = np.zeros(P.shape[:2]), np.zeros(P.shape[:2])
    q_solve(P, d.reward, supp, nsupp, 0.95, 3, a)  # T = 3: a 4-step lookahead
    q_iteration(P, d.reward, supp, nsupp, 0.95, 3, b)
    assert np.array_equal(a, b)


# ---------------------------------------------------------------------------------------
# Finite-horizon backward induction (the reference of the undiscounted score)


def dense_backward_induction(P, R, T, gamma=1.0):
    """V_t for t = T..0 by plain numpy, independently of the solver: (T + 1, nX)."""
    V = np.zeros((T + 1, P.shape[0]))
    r = (P * R).sum(axis=2)  # expected reward of each (x, u)
    for t in range(T - 1, -1, -1):
        V[t] = (r + gamma * P @ V[t + 1]).max(axis=1)
    return V


def policy_return(P, R, T, policy, x0):
    """Exact expected sum of rewards over T steps of ``policy`` (policy(t, x) -> u) from
    x0, by propagating the state distribution (dense numpy)."""
    n = P.shape[0]
    dist = np.zeros(n)
    dist[x0] = 1.0
    total = 0.0
    r = (P * R).sum(axis=2)
    for t in range(T):
        u = np.array([policy(t, x) for x in range(n)])
        total += float(dist @ r[np.arange(n), u])
        dist = dist @ P[np.arange(n), u]
    return total


def two_state_mdp():
    """State 0: stay pays 1; go pays 0 and moves for ever to state 1, which pays 1.5 a
    step. Discounted at 0.5 staying is optimal (2 > 1.5); over T >= 4 undiscounted steps
    going at once is (1.5 (T - 1) > T), but not with 3 or fewer steps left."""
    P = np.zeros((2, 2, 2))
    R = np.zeros((2, 2, 2))
    P[0, 0, 0] = 1.0
    R[0, 0, 0] = 1.0
    P[0, 1, 1] = 1.0
    P[1, :, 1] = 1.0
    R[1, :, 1] = 1.5
    return P, R


def test_finite_horizon_values_two_states_by_hand():
    from bbrlcore.mdp.solvers import finite_horizon_values, solve_q

    P, R = two_state_mdp()
    V, pi = finite_horizon_values(P, R, 10)
    assert V[0, 0] == 13.5 and V[10].tolist() == [0.0, 0.0]  # 0 + 9 x 1.5
    # go while 4 or more steps remain; stay with 1 or 2 left (3 left: a tie, 3 = 3)
    assert pi[:7, 0].tolist() == [1] * 7 and pi[8:, 0].tolist() == [0, 0]
    assert np.allclose(V, dense_backward_induction(P, R, 10))
    # the discounted criterion's policy is another one, and worse over the 10 steps
    Q = solve_q(P, R, 0.5, 10_000)
    stay = int(np.argmax(Q[0]))
    assert stay == 0
    got = policy_return(P, R, 10, lambda t, x: int(np.argmax(Q[x])), 0)
    assert got == 10.0 < V[0, 0]


def test_finite_horizon_values_against_dense_numpy():
    """Random dense models (every row a random distribution over a random support), with
    gamma 1 and 0.9, against the plain numpy backward induction; the solver's policy
    reaches V_0 exactly, and no stationary policy does better."""
    from bbrlcore.mdp.solvers import finite_horizon_values

    rng = np.random.default_rng(7)
    for _trial in range(6):
        nX, nU, T = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 30))
        P = rng.random((nX, nU, nX)) * (rng.random((nX, nU, nX)) < 0.6)
        P[:, :, 0] += 1e-3
        P /= P.sum(axis=2, keepdims=True)
        R = rng.normal(0, 1, (nX, nU, nX))
        for gamma in (1.0, 0.9):
            V, pi = finite_horizon_values(P, R, T, gamma)
            assert np.allclose(V, dense_backward_induction(P, R, T, gamma), atol=1e-12)
        V, pi = finite_horizon_values(P, R, T)
        for x0 in range(nX):
            assert policy_return(P, R, T, lambda t, x, pi=pi: pi[t, x], x0) == \
                pytest.approx(V[0, x0], abs=1e-9)
            for _ in range(3):
                stationary = rng.integers(0, nU, nX)
                assert policy_return(P, R, T, lambda t, x, s=stationary: s[x], x0) <= \
                    V[0, x0] + 1e-9


def test_finite_horizon_values_refuses_bad_input():
    from bbrlcore.errors import BBRLError
    from bbrlcore.mdp.solvers import finite_horizon_values

    P, R = two_state_mdp()
    with pytest.raises(BBRLError, match="horizon=-1"):
        finite_horizon_values(P, R, -1)
    with pytest.raises(BBRLError, match="same|one shape"):
        finite_horizon_values(P, R[:, :, :1], 3)
    V, pi = finite_horizon_values(P, R, 0)
    assert V.shape == (1, 2) and pi.shape == (0, 2)
