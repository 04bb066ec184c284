"""Optimal's criterion: the reference of the undiscounted score is the policy optimal for
the sum of rewards over T (finite-horizon backward induction), not the discounted one."""

import numpy as np
import polars as pl
import pytest

from bbrlcore import protocol as E
from bbrlcore.agents import get
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp.families import make
from test_solvers import dense_backward_induction, policy_return, two_state_mdp


def two_state_distribution():
    """The hand-made MDP of :func:`test_solvers.two_state_mdp` as a distribution whose every
    draw is that MDP (one positive concentration per row)."""
    P, R = two_state_mdp()
    return D.FDMDistribution("two states", "Two", P * 10.0, R, 0)


def test_criterion_parameter_and_ids():
    alg = get("optimal")
    assert alg.agent_id(alg.parse_params({})) == "optimal"  # the paper's, id unchanged
    assert alg.agent_id(alg.parse_params({"criterion": "discounted"})) == "optimal"
    assert (alg.agent_id(alg.parse_params({"criterion": "undiscounted"}))
            == "optimal__criterion=undiscounted")
    with pytest.raises(BBRLError, match="criterion=.*average.*expected discounted"):
        alg.parse_params({"criterion": "average"})


@pytest.mark.parametrize("T", [1, 3, 4, 10, 40])
def test_undiscounted_optimal_plays_the_backward_induction_policy(T):
    """On the two-state MDP (deterministic), the undiscounted Optimal collects exactly the
    T-step optimum V*_T(0) of the dense numpy backward induction, the discounted one (γ =
    0.5: staying is optimal) less once T >= 4."""
    d = two_state_distribution()
    ts = E.new_test_set(d, 3, 0.5, T, seed=0)
    und = E.run_agent(ts, E.train_agent("optimal", {"criterion": "undiscounted"}, d,
                                        progress=False), progress=False)
    disc = E.run_agent(ts, E.train_agent("optimal", {}, d, progress=False), progress=False)
    P, R = two_state_mdp()
    best = dense_backward_induction(P, R, T)[0, 0]
    assert und["undiscounted_return"].to_list() == [best] * 3
    assert und["agent"][0] == "optimal__criterion=undiscounted"
    assert disc["undiscounted_return"].to_list() == [float(T)] * 3
    assert (best > T) == (T >= 4)
    # the MDP and its rewards are deterministic: no trajectory of any agent beats V*_T
    for alg, params in (("random", {}), ("psrl", {}), ("e-greedy", {"epsilon": "0.2"})):
        other = E.run_agent(ts, E.train_agent(alg, params, d, progress=False),
                            progress=False)
        assert (other["undiscounted_return"] <= best + 1e-12).all(), alg


def test_riverswim_reference_is_optimal_for_the_sum_of_rewards():
    """RiverSwim-6 (γ = 0.95, T = 250): on each test MDP the undiscounted Optimal's
    expected sum of rewards is V*_T(s0) of an independent dense backward induction, which
    is at least the discounted Optimal's exact expected sum (its greedy stationary
    policy, evaluated exactly) and at least PSRL's mean; the runs agree with it within
    their sampling error."""
    from bbrlcore.mdp.solvers import solve_q

    test = make("riverswim").test
    T, N = 250, 30
    ts = E.new_test_set(test, N, 0.95, T, seed=0)
    R = test.reward
    vstar, vdisc = [], []
    for i in range(N):
        P = ts.dense(i)
        V = dense_backward_induction(P, R, T)
        vstar.append(V[0, test.initial_state])
        Q = solve_q(P, R, 0.95, T)
        greedy = Q.argmax(axis=1)
        vdisc.append(policy_return(P, R, T, lambda t, x, g=greedy: g[x], test.initial_state))
    vstar, vdisc = np.array(vstar), np.array(vdisc)
    # never worse, and strictly better on some MDPs (by little on RiverSwim-6 at γ =
    # 0.95: the discounted policy is almost T-step optimal there; the hand-made MDP of
    # the test above is where they part widely)
    assert (vstar >= vdisc - 1e-9).all() and (vstar - vdisc).max() > 1e-5
    runs = {}
    for alg, params in (("optimal", {"criterion": "undiscounted"}), ("optimal", {}),
                        ("psrl", {}), ("random", {})):
        agent = E.train_agent(alg, params, test, progress=False)
        t = E.run_agent(ts, agent, progress=False).sort("mdp_index")
        runs[t["agent"][0]] = t["undiscounted_return"].to_numpy()
    und = runs["optimal__criterion=undiscounted"]
    se = und.std(ddof=1) / np.sqrt(N)
    # its trajectories are draws of the return whose mean is V*_T (per MDP): the mean
    # over the test set is within 3 standard errors of the mean V*_T
    assert abs(und.mean() - vstar.mean()) <= 3 * se + 1e-9
    for agent, ret in runs.items():
        # nobody beats the mean of V*_T beyond sampling error (the paired difference)
        d = ret - vstar
        assert d.mean() <= 3 * d.std(ddof=1) / np.sqrt(N) + 1e-9, agent
    assert abs(runs["optimal"].mean() - vdisc.mean()) <= 3 * runs["optimal"].std(
        ddof=1) / np.sqrt(N)


def test_workflow_plan_gives_optimal_the_criterion_of_the_score():
    from bbrlcore.plan import config as C

    base = {"n_mdps": 5, "horizon": 20,
            "experiments": [{"test": "GC", "prior": "GC"}],
            "algorithms": {"random": {}, "optimal": {}}}
    keys = {s: [a.key for a in C.load({**base, "score": s}).agents]
            for s in ("discounted", "undiscounted")}
    assert keys["discounted"] == ["random", "optimal"]
    assert keys["undiscounted"] == ["random", "optimal__criterion=undiscounted"]
    # an explicit criterion is kept (the report then warns: not the score's reference)
    mixed = C.load({**base, "score": "undiscounted",
                    "algorithms": {"random": {}, "optimal": {"criterion": "discounted"}}})
    assert [a.key for a in mixed.agents] == ["random", "optimal"]
    both = C.load({**base, "algorithms": {
        "random": {}, "optimal": {"criterion": ["discounted", "undiscounted"]}}})
    assert [a.key for a in both.agents] == ["random", "optimal",
                                            "optimal__criterion=undiscounted"]


def test_reference_agents_match_the_score():
    from bbrlcore.analysis.results import reference_agents, reference_warning

    t = pl.DataFrame({"experiment": ["E", "E", "F", "G"],
                      "algorithm": ["optimal", "optimal", "optimal", "random"],
                      "agent": ["optimal", "optimal__criterion=undiscounted", "optimal",
                                "random"]})
    d = reference_agents(t, "discounted")
    assert d.rows() == [("E", "optimal", "discounted", True),
                        ("F", "optimal", "discounted", True)]
    assert reference_warning(d, "discounted") is None
    u = reference_agents(t, "undiscounted")
    assert u["agent"].to_list() == ["optimal__criterion=undiscounted", "optimal"]
    line = reference_warning(u, "undiscounted")
    assert "\n" not in line and "F" in line and "criterion: undiscounted" in line


@pytest.mark.parametrize("command", ["summary", "aggregate", "curves"])
def test_commands_warn_of_a_reference_of_another_criterion(command, tmp_path, bbrl_cmd,
                                                            env_with_cache):
    """With only the discounted Optimal, every command that normalises by the
    undiscounted score says so in one line on stderr (and still answers); with the
    score's own Optimal, nothing."""
    import subprocess

    from bbrlcore.formats import artefacts
    from synthetic_runs import learning_runs

    m = learning_runs(("GC-GC",), n=8, T=6)
    artefacts.write_artefact(tmp_path / "m.parquet", m, "merged", {})
    extra = {"summary": ["-o", "s.parquet"], "aggregate": ["--resamples", "100"],
             "curves": ["--resamples", "100"]}[command]
    for score, warned in (("undiscounted", True), ("discounted", False)):
        r = subprocess.run(bbrl_cmd + [command, "m.parquet", "--score", score, *extra],
                           capture_output=True, text=True, env=env_with_cache, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("bbrl: warning:")]
        assert len(lines) == warned, r.stderr
        if warned:
            assert "GC-GC is optimal for the discounted criterion" in lines[0]
