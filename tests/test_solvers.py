import numpy as np

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
