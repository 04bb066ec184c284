"""The exploration baselines of issue 34: PSRL's episodic form, UCRL2 and Q-learning with
UCB-Hoeffding bonuses, on small MDPs whose behaviour is known by hand.

The players are driven directly with a hand-built :class:`~bbrlcore.agents.base.Episode`
(``episode_length`` H > 0: the environment returns to the initial state after every H
steps), so these tests do not depend on the runner's episodic test sets; the one CLI test
of an episodic experiment is marked xfail until ``bbrl experiment new --episodes`` exists.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents import psrl, q_ucb, ucrl2
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp import rows

# ---------------------------------------------------------------------------------------
# Small MDPs known by hand, and a player on them


def fdm(P: np.ndarray, R: np.ndarray, conc: float = 1.0, extra: float = 0.0,
        name: str = "T") -> D.FDMDistribution:
    """A Dirichlet distribution with concentrations ``conc * P + extra`` (``extra`` on
    every transition: a full support)."""
    return D.FDMDistribution(name.lower(), name, conc * P + extra, R, 0)


def bandit(p0: float = 0.25, p1: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """A two-armed bandit as an MDP: state 0 chooses an arm; arm a leads to a "win" state
    with probability p_a (arm 0 pays 1.0 there, arm 1 pays 0.99) or a "lose" one (arm 0
    pays 0, arm 1 0.001), and every action then returns to state 0 paying 0.5. The
    rewards tell which arm was pulled; arm 1 is the better (0.7428 against 0.25)."""
    P = np.zeros((5, 2, 5))
    R = np.zeros((5, 2, 5))
    P[0, 0, 1], P[0, 0, 2] = p0, 1 - p0
    P[0, 1, 3], P[0, 1, 4] = p1, 1 - p1
    R[0, 0, 1], R[0, 1, 3], R[0, 1, 4] = 1.0, 0.99, 0.001
    P[1:, :, 0] = 1.0
    R[1:, :, 0] = 0.5
    return P, R


def chain() -> tuple[np.ndarray, np.ndarray]:
    """A deterministic chain of 3 states: action 1 moves right (at the end it stays and
    pays 1), action 0 returns to state 0 paying 0.2. Optimal gain 1 (always right)."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    for x in range(3):
        P[x, 0, 0] = 1.0
        R[x, 0, 0] = 0.2
        P[x, 1, min(x + 1, 2)] = 1.0
    R[2, 1, 2] = 1.0
    return P, R


def two_step() -> tuple[np.ndarray, np.ndarray]:
    """An episodic problem of H = 2: from state 0, action 0 pays 0.5 and ends in the
    absorbing state 2; action 1 pays 0 and leads to state 1, where action 1 pays 1 (action
    0 pays 0). Optimal episode: right then 1 (return 1, against 0.5)."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 2] = 1.0
    R[0, 0, 2] = 0.5
    P[0, 1, 1] = 1.0
    P[1, :, 2] = 1.0
    R[1, 1, 2] = 1.0
    P[2, :, 2] = 1.0
    return P, R


def patience() -> tuple[np.ndarray, np.ndarray]:
    """Whether to walk to the paying state depends on the steps left: at state 0, action
    0 stays and pays 0.4, action 1 leads to state 1 (pays 0), whose action 0 leads to
    state 2 (its action 1 stays in 1), which pays 1 per step forever. With r steps left
    at state 0, walking is worth r - 2 and staying 0.4 r: stay when r <= 3, walk when
    r >= 4. V*_3(0) = 1.2 (stay), V*_5(0) = 3 (walk); a discounted planner (γ = 0.95)
    always walks."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 0] = 1.0
    R[0, 0, 0] = 0.4
    P[0, 1, 1] = 1.0
    P[1, 0, 2] = 1.0
    P[1, 1, 1] = 1.0
    P[2, :, 2] = 1.0
    R[2, :, 2] = 1.0
    return P, R


def player(name: str, raw: dict, P: np.ndarray, R: np.ndarray, T: int, H: int = 0,
           prior: D.FDMDistribution | None = None, gamma: float = 0.95):
    """``(play, mdp)``: the player of ``name`` on the one-MDP test set ``P`` (a test
    distribution concentrated on it), with a hand-built Episode of ``episode_length`` H;
    the prior is the uniform Dirichlet on every transition unless given."""
    test = fdm(P, R, conc=1e9)
    prior = prior if prior is not None else fdm(P, R, conc=0.0, extra=1.0, name="U")
    ts = E.TestSet(test, P[None], gamma, T, 0)
    ep = dataclasses.replace(ts.episode(), episode_length=H)
    alg = agents.get(name)
    return alg.make_player(prior, alg.parse_params(raw), None, ep), np.ascontiguousarray(
        ts.mdps[0])


def rewards_of(play, mdp: np.ndarray, T: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.empty(T)
    _, counters = play(mdp, seed, r)
    return r, counters


def numpy_backward_induction(P: np.ndarray, R: np.ndarray, H: int
                             ) -> tuple[list[np.ndarray], np.ndarray]:
    """Q_h for h = 0..H-1 and V*_H (dense arrays, the textbook recursion)."""
    r = (P * R).sum(axis=2)
    V = np.zeros(P.shape[0])
    Qs = []
    for _ in range(H):
        Q = r + P @ V
        Qs.append(Q)
        V = Q.max(axis=1)
    return Qs[::-1], V


# ---------------------------------------------------------------------------------------
# Registry, parameters


def test_the_baselines_are_builtins_after_the_extended_four():
    eps = list(agents.registry.entry_points())
    assert eps[14:16] == list(agents.BASELINES) == ["ucrl2", "q-learning-ucb"]
    for name in ("psrl", *agents.BASELINES):
        alg = agents.get(name)
        assert alg.name == name and alg.episodic and alg.sparse
        assert "Paper" in alg.doc and "default" in alg.doc  # its paper and its defaults
        assert alg.cost_features is not None
    assert agents.get("ucrl2").display_name == "UCRL2"


def test_agent_ids_and_defaults():
    def aid(name, raw):
        alg = agents.get(name)
        return alg.agent_id(alg.parse_params(raw))

    assert aid("psrl", {}) == "psrl"  # per episode, or doubling: the setting decides
    assert aid("ucrl2", {}) == "ucrl2__delta=0.05"
    assert aid("q-learning-ucb", {}) == "q-learning-ucb__c=1__p=0.05"
    assert aid("q-learning-ucb", {"c": "0.1", "p": "1e-3"}) == "q-learning-ucb__c=0.1__p=0.001"
    # the variants of issue 43: named only when asked for (the defaults keep their ids)
    assert aid("ucrl2", {"bound": "l1"}) == "ucrl2__delta=0.05"
    assert aid("ucrl2", {"bound": "bernstein"}) == "ucrl2__delta=0.05__bound=bernstein"
    assert aid("q-learning-ucb", {"form": "jin"}) == "q-learning-ucb__c=1__p=0.05"
    assert aid("q-learning-ucb", {"form": "colosseum"}) == (
        "q-learning-ucb__c=1__p=0.05__form=colosseum")
    assert aid("q-learning-ucb", q_ucb.COLOSSEUM_BENCHMARK) == (
        "q-learning-ucb__c=0.941527873289__p=0.05__form=colosseum__bonus=bernstein"
        "__c2=0.0138737785193__min_at=0.0726356348312")


@pytest.mark.parametrize("name, raw, message", [
    ("ucrl2", {"delta": "0"}, "delta=0: must be in (0, 1)"),
    ("ucrl2", {"delta": "1"}, "delta=1: must be in (0, 1)"),
    ("ucrl2", {"beta": "1"}, "unknown parameter of ucrl2"),
    ("q-learning-ucb", {"c": "0"}, "c=0: must be > 0"),
    ("q-learning-ucb", {"p": "1.5"}, "p=1.5: must be in (0, 1)"),
    ("q-learning-ucb", {"c": "nan"}, "expected a number"),
    ("ucrl2", {"bound": "l2"}, "bound=l2: must be one of l1, bernstein"),
    ("q-learning-ucb", {"form": "watkins"}, "form=watkins: must be one of jin, colosseum"),
    ("q-learning-ucb", {"bonus": "kl"}, "bonus=kl: must be one of hoeffding, bernstein"),
    ("q-learning-ucb", {"min_at": "1"}, "min_at=1: must be in [0, 0.99)"),
    ("q-learning-ucb", {"c2": "-1"}, "c2=-1: must be > 0"),
    ("psrl", {"schedule": "episode"}, "must be one of doubling, fixed"),
])
def test_parameter_errors_are_one_line(name, raw, message):
    with pytest.raises(BBRLError) as e:
        agents.get(name).parse_params(raw)
    assert message in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------------------------------
# PSRL, episodic


def test_reach_sets_of_deepsea_are_the_triangle_below_the_start():
    """From the top-left cell of DeepSea-N, step h reaches the h + 1 cells of row h with
    column <= h; after N moves, the two surface states; then the start again."""
    N = 6
    lay = F.make("deepsea", size=N).prior("uniform").support_layout
    states, off = psrl.reach_sets(lay.succ, lay.nsucc, 0, N + 1)
    sets = [states[off[h]:off[h + 1]].tolist() for h in range(N + 2)]
    for h in range(N):
        assert sets[h] == [h * N + c for c in range(h + 1)], h
    assert sets[N] == [N * N, N * N + 1]
    assert sets[N + 1] == [0]
    need = psrl.decision_states(states, off, N)
    assert need.tolist() == sorted(x for s in sets[:N] for x in s)


@st.composite
def small_mdp(draw):
    nX = draw(st.integers(2, 6))
    nU = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    mask = rng.random((nX, nU, nX)) < 0.5
    mask[np.arange(nX), :, rng.integers(0, nX, nX)] = True  # every row non-empty
    P = np.where(mask, rng.random((nX, nU, nX)) + 0.05, 0.0)
    P /= P.sum(axis=2, keepdims=True)
    R = np.round(rng.random((nX, nU, nX)), 3)
    return P, R, draw(st.integers(1, 6)), draw(st.integers(0, nX - 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=small_mdp())
def test_backward_induction_on_reach_sets_is_the_textbook_recursion(case):
    """The planner of the episodic form, on the states reachable from x0 only, against
    the dense recursion: the same V*_H(x0), and at every reachable (h, x) an action whose
    Q_h is the maximum."""
    P, R, H, x0 = case
    lay = rows.layout_of(P > 0)
    Pr, Rr = rows.gather(P, lay), rows.gather(R, lay)
    states, off = psrl.reach_sets(lay.succ, lay.nsucc, x0, H)
    pi = np.zeros(off[H], dtype=np.int64)
    nX = P.shape[0]
    V0 = psrl.finite_horizon_plan_rows(Pr, Rr, lay.succ, lay.nsucc, states, off, H, pi,
                                       np.zeros(nX), np.zeros(nX))
    Qs, V = numpy_backward_induction(P, R, H)
    assert V0[x0] == pytest.approx(V[x0], abs=1e-12)
    reach = {x0}
    for h in range(H):
        assert set(states[off[h]:off[h + 1]].tolist()) == reach
        for j in range(off[h], off[h + 1]):
            x = states[j]
            assert Qs[h][x, pi[j]] >= Qs[h][x].max() - 1e-12, (h, x)
        reach = {int(y) for x in reach for y in np.flatnonzero(P[x].sum(axis=0) > 0)}


def test_a_posterior_draw_near_certain_plans_the_true_optimal_policy():
    """With concentrations 1e12 times the true rows (and 1e-3 on every other transition),
    the sampled model's H-step policy is the true MDP's optimal one at every reachable
    (h, x), where the optimum is not a near-tie."""
    rng = np.random.default_rng(3)
    nX, nU, H = 8, 3, 7
    P = rng.dirichlet(np.ones(nX) * 0.5, size=(nX, nU))
    R = rng.random((nX, nU, nX))
    lay = rows.full(nX, nU)
    alpha = rows.gather(1e12 * P + 1e-3, lay)
    Ps = np.zeros_like(alpha)
    states, off = psrl.reach_sets(lay.succ, lay.nsucc, 0, H)
    from bbrlcore.agents._rng import rng_new

    psrl.sample_rows_of(alpha, lay.nsucc, Ps, psrl.decision_states(states, off, H), rng_new(1))
    pi = np.zeros(off[H], dtype=np.int64)
    psrl.finite_horizon_plan_rows(Ps, rows.gather(R, lay), lay.succ, lay.nsucc, states, off,
                                  H, pi, np.zeros(nX), np.zeros(nX))
    Qs, _ = numpy_backward_induction(P, R, H)
    checked = 0
    for h in range(H):
        for j in range(off[h], off[h + 1]):
            q = np.sort(Qs[h][states[j]])
            if q[-1] - q[-2] > 1e-4:  # not a near-tie
                assert pi[j] == np.argmax(Qs[h][states[j]])
                checked += 1
    assert checked >= H * nX // 2


@pytest.mark.parametrize("H, value", [(3, 1.2), (5, 3.0)])
def test_episodic_psrl_near_certain_follows_the_optimal_h_step_policy(H, value):
    """On ``patience`` (deterministic), PSRL's per-episode form with a near-certain prior
    earns exactly V*_H(0) in every episode, which the recursion gives by hand (stay when
    3 steps are left, walk when 5 are) — a discounted planner would always walk."""
    P, R = patience()
    _, V = numpy_backward_induction(P, R, H)
    assert V[0] == pytest.approx(value)
    episodes = 50
    prior = fdm(P, R, conc=1e9, extra=1e-3, name="Near")
    play, mdp = player("psrl", {}, P, R, episodes * H, H, prior=prior)
    r, counters = rewards_of(play, mdp, episodes * H, seed=4)
    per_episode = r.reshape(episodes, H).sum(axis=1)
    assert np.allclose(per_episode, V[0], atol=1e-12)
    assert counters.tolist() == [episodes]  # one sample per episode
    # the discounted reference walks: 1.0 per episode of 3 steps
    play_opt, _ = player("optimal", {}, P, R, episodes * 3, 3, prior=prior)
    if H == 3:
        ropt, _ = rewards_of(play_opt, mdp, episodes * 3, seed=4)
        assert ropt[:3].sum() == pytest.approx(1.0)


def test_episodic_psrl_near_certain_on_a_stochastic_mdp_earns_v_star():
    """On a random stochastic MDP, the mean episode return of the near-certain agent is
    V*_H(0) within sampling error (4 standard errors)."""
    rng = np.random.default_rng(11)
    nX, nU, H, episodes = 6, 2, 4, 4000
    P = rng.dirichlet(np.ones(nX), size=(nX, nU))
    R = rng.random((nX, nU, nX))
    _, V = numpy_backward_induction(P, R, H)
    prior = fdm(P, R, conc=1e12, name="Near")
    play, mdp = player("psrl", {}, P, R, episodes * H, H, prior=prior)
    r, _ = rewards_of(play, mdp, episodes * H, seed=2)
    per = r.reshape(episodes, H).sum(axis=1)
    assert abs(per.mean() - V[0]) < 4 * per.std() / np.sqrt(episodes)


def test_episodic_psrl_learns_deepsea():
    """DeepSea-8, uniform prior, 300 episodes of N steps: the treasure is found and then
    taken in (nearly) every episode, as posterior sampling's deep exploration promises."""
    N, episodes = 8, 300
    p = F.make("deepsea", size=N)
    ts = E.new_test_set(p.test, 2, 0.95, N * episodes, seed=0)
    ep = dataclasses.replace(ts.episode(), episode_length=N)
    alg = agents.get("psrl")
    play = alg.make_player(p.prior("uniform"), alg.parse_params({}), None, ep)
    for i in range(2):
        r, counters = rewards_of(play, np.ascontiguousarray(ts.mdps[i]), N * episodes, i)
        per = r.reshape(episodes, N).sum(axis=1)
        assert counters.tolist() == [episodes]
        assert (per[-50:] > 0.98).mean() >= 0.9, per[-50:]


def test_the_continuing_form_is_the_compiled_agent_and_needs_gamma_below_one():
    """Continuing: the built-in plays the same trajectories as the CompiledAgent PSRL
    (its functions in the package's loop), schedule unset meaning doubling; γ = 1 is
    refused in one line before any trajectory, except in the episodic form."""
    from bbrlcore.agents.psrl import PSRL

    ts = E.new_test_set(D.builtin("GDL"), 2, 0.95, 60, seed=0)
    old = agents.registry.as_algorithm(PSRL, "old")
    for raw in ({}, {"schedule": "doubling"}, {"schedule": "fixed", "period": "4"}):
        new = agents.get("psrl").make_player(D.builtin("UGDL"), agents.get("psrl").parse_params(
            raw), None, ts.episode())
        ref = old.make_player(D.builtin("UGDL"), old.parse_params(
            {"schedule": raw.get("schedule", "doubling"), **raw}), None, ts.episode())
        for i in range(2):
            mdp = np.ascontiguousarray(ts.mdps[i])
            assert new(mdp, 7 + i)[0] == ref(mdp, 7 + i)[0]
    P, R = two_step()
    with pytest.raises(BBRLError, match="continuing form needs a discount factor < 1") as e:
        player("psrl", {}, P, R, 10, 0, gamma=1.0)
    assert "\n" not in str(e.value)
    play, mdp = player("psrl", {}, P, R, 10, 2, gamma=1.0)  # the episodic form takes it
    assert np.isfinite(play(mdp, 0)[0])


# ---------------------------------------------------------------------------------------
# UCRL2


def test_optimistic_row_value_is_figure_2_of_the_paper():
    """Row of two observed successors (counts 5 and 5) of values w = (1, 0) with radius
    d = 0.4: the optimistic row puts 0.5 + 0.2 on the better one, 0.3 on the other
    (value 0.7); never visited: all the mass on the best allowed slot (an unobserved one
    too), whatever d."""
    succ = np.array([[[0, 1, 2]]])
    nsucc = np.array([[3]])
    C = np.array([[[5.0, 5.0, 0.0]]])
    N = np.array([[10]])
    R = np.zeros((1, 1, 3))
    allowed = np.array([[[True, True, False]]])
    order = np.empty(3, dtype=np.int64)
    values = np.array([1.0, 0.0, 5.0])
    v = ucrl2.optimistic_value(0, 0, C, N, allowed, R, succ, nsucc, 0.4, values, order)
    assert v == pytest.approx(0.7)
    v = ucrl2.optimistic_value(0, 0, C, N, allowed, R, succ, nsucc, 3.0, values, order)
    assert v == pytest.approx(1.0)  # radius beyond 1: everything on the best
    allowed[0, 0, 2] = True  # state 2 (value 5) becomes possible: d/2 = 0.2 moves there
    v = ucrl2.optimistic_value(0, 0, C, N, allowed, R, succ, nsucc, 0.4, values, order)
    assert v == pytest.approx(0.2 * 5 + 0.5 * 1 + 0.3 * 0)
    N0 = np.zeros((1, 1), dtype=np.int64)
    v = ucrl2.optimistic_value(0, 0, np.zeros_like(C), N0, allowed, R, succ, nsucc, 0.1,
                               values, order)
    assert v == pytest.approx(5.0)


def test_ucrl2_converges_to_the_better_arm():
    P, R = bandit()
    T = 30_000
    play, mdp = player("ucrl2", {}, P, R, T)
    for seed in range(3):
        r, counters = rewards_of(play, mdp, T, seed)
        pulls = r[0::2]  # every other step chooses an arm
        assert set(np.unique(r[1::2])) == {0.5}
        arm1 = np.isin(pulls, [0.99, 0.001])
        third = len(arm1) // 3
        assert arm1[-third:].mean() >= 0.9, arm1[-third:].mean()
        assert arm1[-third:].mean() > arm1[:third].mean()
        policies, sweeps, capped, tied = counters.tolist()  # UCRL2 episodes begun, ...
        assert 1 < policies < 200 and sweeps >= policies and capped == 0
        # at states 1-4 both actions return to 0 paying 0.5: a true tie every other step;
        # at state 0 the arms' optimistic values differ (their rewards do)
        assert tied == T // 2


def test_ucrl2_converges_on_a_short_chain():
    """The deterministic chain: after a few thousand steps UCRL2 stays at the end playing
    right (every reward 1)."""
    P, R = chain()
    T = 5000
    play, mdp = player("ucrl2", {}, P, R, T)
    for seed in range(3):
        r, _ = rewards_of(play, mdp, T, seed)
        assert (r[-1000:] == 1.0).all()


def test_ucrl2_episodes_follow_the_doubling_criterion():
    """One state, one action, played for ever: an episode ends when the pair's count in
    it reaches max(1, its count before it), so the first two episodes last one step each
    and each later one as long as everything before it: episodes start at steps 0, 1, 2,
    4, 8, ..., 512 of T = 1000 (11 episodes)."""
    P = np.zeros((1, 1, 1)) + 1.0
    R = np.ones((1, 1, 1))
    T = 1000
    play, mdp = player("ucrl2", {}, P, R, T)
    _, counters = rewards_of(play, mdp, T, 0)
    starts = [0] + [2**j for j in range(10)]
    assert counters[0] == len(starts) == 11


def test_bernstein_intervals_by_hand():
    """UCRL2-B's widths: 2 sqrt(p(1-p) l / n) + 6 l / n with l = log(18 S A n / delta),
    n = max(1, N): a row seen 400 times, 300 to slot 0 and 100 to slot 1 (S = 4 states,
    A = 1, delta = 0.05), and a row never played ([0, 1] on every slot)."""
    C = np.zeros((4, 1, 3))
    C[0, 0, :2] = 300.0, 100.0
    N = np.array([[400], [0], [0], [0]])
    nsucc = np.array([[3], [2], [1], [1]])
    lo, hi = np.zeros_like(C), np.zeros_like(C)
    ucrl2.bernstein_intervals(C, N, nsucc, 4, 1, 0.05, lo, hi)
    ell = np.log(18 * 4 * 1 * 400 / 0.05)
    for k, p in enumerate((0.75, 0.25, 0.0)):
        b = 2 * np.sqrt(p * (1 - p) * ell / 400) + 6 * ell / 400
        assert lo[0, 0, k] == pytest.approx(max(0.0, p - b))
        assert hi[0, 0, k] == pytest.approx(min(1.0, p + b))
    assert 0 < hi[0, 0, 2] < 0.25  # an unobserved slot: 6 l / n (1 up to about 80 visits)
    assert (lo[1, 0, :2] == 0).all() and (hi[1, 0, :2] == 1).all()


def test_optimistic_value_in_intervals_fills_the_best_slots_first():
    """Slots of values (1, 0, 5) with intervals [0.5, 0.7], [0.1, 0.5], [0, 0.2]: every slot
    at its lower bound (0.6 of the mass), the remaining 0.4 to the best (slot 2, up to
    0.2), then to the next (slot 0, up to 0.7: 0.2 more); a slot not allowed gets
    nothing."""
    succ = np.array([[[0, 1, 2]]])
    nsucc = np.array([[3]])
    R = np.zeros((1, 1, 3))
    lo = np.array([[[0.5, 0.1, 0.0]]])
    hi = np.array([[[0.7, 0.5, 0.2]]])
    allowed = np.ones((1, 1, 3), dtype=bool)
    values = np.array([1.0, 0.0, 5.0])
    order, w = np.empty(3, dtype=np.int64), np.empty(3)
    v = ucrl2.optimistic_value_intervals(0, 0, lo, hi, allowed, R, succ, nsucc, values,
                                         order, w)
    assert v == pytest.approx(0.7 * 1 + 0.1 * 0 + 0.2 * 5)
    allowed[0, 0, 2] = False
    lo[0, 0, 1] = 0.3
    v = ucrl2.optimistic_value_intervals(0, 0, lo, hi, allowed, R, succ, nsucc, values,
                                         order, w)
    assert v == pytest.approx(0.7 * 1 + 0.3 * 0)


def test_ucrl2_dithers_on_deepsea_and_ucrl2_b_learns_it():
    """DeepSea-8 episodic, uniform prior, 1,500 episodes: with the published width the
    chosen action ties with the other at every step and UCRL2 finds the treasure about as
    often as a random walk (2^-8 an episode, about 6 expected; benchmarks/results/
    ucrl2b_deepsea.md: none in 10,000 episodes at N = 10 to 50); UCRL2-B finds it and
    then takes it in every one of the last 200 episodes."""
    N, episodes = 8, 1500
    p = F.make("deepsea", size=N)
    ts = E.new_test_set(p.test, 1, 1.0, N * episodes, seed=0, episode_length=N,
                        references=False)
    alg = agents.get("ucrl2")
    mdp = np.ascontiguousarray(ts.mdps[0])
    found = {}
    for bound in ("l1", "bernstein"):
        play = alg.make_player(p.prior("uniform"), alg.parse_params({"bound": bound}), None,
                               ts.episode())
        r, counters = rewards_of(play, mdp, N * episodes, 7)
        found[bound] = r.reshape(episodes, N).sum(axis=1) > 0.5
        tied = counters[3] / (N * episodes)
        assert (tied == 1.0) if bound == "l1" else (tied < 0.5), (bound, tied)
    assert found["l1"].sum() < 20
    assert found["bernstein"].sum() > 300 and found["bernstein"][-200:].all()


def test_ucrl2_says_once_per_run_that_its_actions_tied():
    """The runner prints the algorithm's run note once per run, on stderr: UCRL2 on
    DeepSea-6 (its actions tied throughout, 1,000 episodes) points to UCRL2-B; UCRL2-B on
    the same test set ties at about half of the steps and has nothing to say."""
    import contextlib
    import io

    p = F.make("deepsea", size=6)
    ts = E.new_test_set(p.test, 2, 1.0, 6 * 1000, seed=0, episode_length=6)
    for raw, said in (({}, True), ({"bound": "bernstein"}, False)):
        agent = E.train_agent("ucrl2", raw, p.prior("uniform"), progress=False)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            table = E.run_agent(ts, agent, progress=False)
        notes = [ln for ln in err.getvalue().splitlines() if ln.startswith("bbrl: note:")]
        share = table["tied_steps"] / table["n_steps"]
        assert share.min() >= 0.9 if said else share.max() < 0.9
        if said:
            assert len(notes) == 1, err.getvalue()
            assert notes[0].startswith(f"bbrl: note: {agent.agent_id} on DeepSea-6-UDeepSea-6")
            assert "published confidence width" in notes[0]
            assert "--param bound=bernstein" in notes[0]
        else:
            assert notes == []


def test_run_note_speaks_from_ninety_percent_of_the_steps():
    note = agents.get("ucrl2").run_note
    params = {"delta": 0.05, "bound": "l1"}
    assert note(params, {"tied_steps": 899}, 1000) is None
    assert "90%" in note(params, {"tied_steps": 900}, 1000)
    assert "UCRL2-B" in note({**params, "bound": "bernstein"}, {"tied_steps": 1000}, 1000)
    assert note(params, {"tied_steps": 0}, 0) is None
    assert agents.get("psrl").run_note is None  # (a hook: only who has something to say)


# ---------------------------------------------------------------------------------------
# Q-learning with UCB-Hoeffding


def test_q_ucb_update_by_hand():
    """H = 2, ι = 2, c = 1: the first update of Q_0(0, 1) with r = 0 and V_1(y) = H = 2
    has α = 1 and b = √(8·2) = 4 (Q = 6, V capped at H = 2); the second α = 3/4 and
    b = √8 (Q = 6/4 + 3/4 (2 + √8))."""
    Q, V, N = q_ucb.q_ucb_tables(2, 2, 2, 1.0)
    assert (Q == 2.0).all() and (V[:2] == 2.0).all() and (V[2] == 0.0).all()
    q_ucb.q_ucb_update(Q, V, N, 0, 0, 1, 0.0, 1, 2, 1.0, 2.0, 1.0)
    assert Q[0, 0, 1] == pytest.approx(6.0) and V[0, 0] == 2.0 and N[0, 0, 1] == 1
    q_ucb.q_ucb_update(Q, V, N, 0, 0, 1, 0.0, 1, 2, 1.0, 2.0, 1.0)
    assert Q[0, 0, 1] == pytest.approx(0.25 * 6 + 0.75 * (2 + np.sqrt(8)))
    assert Q[0, 0, 0] == 2.0  # untried: still H


def test_q_ucb_first_visits_are_uniform():
    """Every Q starts at H, so the first action of the first episode is a tie broken
    uniformly: over 400 seeds, the 0.5-paying action about half the time."""
    P, R = two_step()
    play, mdp = player("q-learning-ucb", {}, P, R, 2, 2)
    firsts = np.array([rewards_of(play, mdp, 2, s)[0][0] for s in range(400)])
    assert set(np.unique(firsts)) == {0.0, 0.5}
    assert abs((firsts == 0.5).mean() - 0.5) < 4 * 0.5 / np.sqrt(400)


def test_q_ucb_converges_on_a_tiny_episodic_chain():
    P, R = two_step()
    episodes = 20_000
    play, mdp = player("q-learning-ucb", {}, P, R, 2 * episodes, 2)
    r, _ = rewards_of(play, mdp, 2 * episodes, 1)
    per = r.reshape(episodes, 2).sum(axis=1)
    assert per[-episodes // 10:].mean() >= 0.9  # the optimum is 1, the trap 0.5
    assert per[-episodes // 10:].mean() > per[:episodes // 10].mean()


def test_q_ucb_refuses_a_continuing_experiment_in_one_line():
    P, R = two_step()
    with pytest.raises(BBRLError, match="q-learning-ucb plays episodic interactions only "
                       r"\(it learns one Q-function per step.*make an episodic test set "
                       r"\(bbrl experiment new --episodes E\)") as e:
        player("q-learning-ucb", {}, P, R, 10, 0)
    assert "\n" not in str(e.value)
    # the same through the runner (a continuing test set)
    ts = E.new_test_set(D.builtin("GC"), 1, 0.95, 10, seed=0)
    agent = E.train_agent("q-learning-ucb", {}, D.builtin("GC"), progress=False)
    with pytest.raises(BBRLError, match="agent q-learning-ucb.*: q-learning-ucb plays "
                       "episodic interactions only"):
        E.run_agent(ts, agent, progress=False)


def test_q_ucb_scales_its_optimism_by_the_rewards():
    """ρ = the largest absolute reward of the prior on its support, at least 1: 1 on
    DeepSea (rewards in [-0.002, 0.998]: the paper's algorithm), 10 on GC (whose rewards
    reach 10)."""
    assert q_ucb.reward_scale(F.make("deepsea", size=5).prior("uniform")) == 1.0
    assert q_ucb.reward_scale(D.builtin("GC")) == 10.0
    assert q_ucb.iota(10, 2, 1000, 0.05) == pytest.approx(np.log(10 * 2 * 1000 / 0.05))


# ---------------------------------------------------------------------------------------
# Q-learning as Colosseum computes it (form=colosseum)

FIXTURES = Path(__file__).parent / "fixtures"


def test_colosseum_form_matches_colosseums_own_update():
    """``tests/fixtures/colosseum_qlearning.json`` holds what Colosseum's own
    ``QValuesModel.step_update`` (its ``QLearningEpisodic``, Colosseum 1.2, run in a Python
    3.9 environment with Colosseum) computed on 180 fixed transitions of a tiny episodic
    MDP (S = 3, A = 2, H = 3), with its benchmark's configuration (Bernstein bonus, c_1,
    c_2, min_at, read from its ``QLearningEpisodic.gin``), a Hoeffding bonus and a
    Bernstein bonus whose cap does not always bind; made by
    ``benchmarks/colosseum_qlearning_fixture.py`` (its docstring says how). bbrl's
    ``colosseum_update`` fed the same transitions: the counts exactly, Q and V after every
    step and at the end to a relative 1e-5 (Colosseum keeps them in float32)."""
    data = json.loads((FIXTURES / "colosseum_qlearning.json").read_text())
    S, A, H = data["S"], data["A"], data["H"]
    assert set(data["runs"]) == {"benchmark", "hoeffding", "bernstein_loose_cap"}
    # the benchmark's configuration, read by the script from Colosseum's .gin file, is
    # COLOSSEUM_BENCHMARK
    bench = data["runs"]["benchmark"]["config"]
    assert data["benchmark_config_file"].endswith("agent_configs/QLearningEpisodic.gin")
    assert {"form": "colosseum", "bonus": bench["UCB_type"], "c": bench["c_1"],
            "c2": bench["c_2"], "min_at": bench["min_at"], "p": bench["p"]} == (
        q_ucb.COLOSSEUM_BENCHMARK)
    for name, run in data["runs"].items():
        cfg = run["config"]
        Q, V, N, M, S2, B = q_ucb.colosseum_tables(S, A, H)
        io = q_ucb.iota(S, A, data["T"], cfg["p"])
        for (h, x, u, r, y), (q, v) in zip(data["transitions"], run["per_step_Q_V"],
                                           strict=True):
            q_ucb.colosseum_update(Q, V, N, M, S2, B, h, x, u, r, y, H, cfg["c_1"],
                                   cfg["c_2"] or 0.0, cfg["min_at"],
                                   cfg["UCB_type"] == "bernstein", io)
            assert Q[h, x, u] == pytest.approx(q, rel=1e-5, abs=1e-6), (name, h, x, u)
            assert V[h, x] == pytest.approx(v, rel=1e-5, abs=1e-6), (name, h, x)
        assert (N == np.array(run["N"])).all(), name
        assert np.allclose(Q, run["Q"], rtol=1e-5, atol=1e-6), name
        assert np.allclose(V, run["V"], rtol=1e-5, atol=1e-6), name
    # (the configurations differ: a test that cannot tell them apart proves little)
    finals = [np.array(run["Q"]) for run in data["runs"].values()]
    assert not np.allclose(finals[0], finals[1]) and not np.allclose(finals[1], finals[2])


def test_colosseum_form_weights_and_counts_by_hand():
    """H = 2, iota = 2, Hoeffding c = 1: the count starts at 1, so the first update has
    t = 2, alpha = 3/4 weighting the *old* Q (= H = 2) and 1/4 the target r + V_1(y) + b
    with V_1 = 0 at the start and b = sqrt(8 * 2 / 2); min_at raises alpha."""
    Q, V, N, M, S2, B = q_ucb.colosseum_tables(2, 2, 2)
    assert (Q == 2.0).all() and (V == 0.0).all() and (N == 1).all()
    b = q_ucb.colosseum_update(Q, V, N, M, S2, B, 0, 0, 1, 0.5, 1, 2, 1.0, 0.0, 0.0,
                               False, 2.0)
    assert N[0, 0, 1] == 2 and b == pytest.approx(np.sqrt(8.0))
    assert Q[0, 0, 1] == pytest.approx(0.75 * 2 + 0.25 * (0.5 + 0.0 + np.sqrt(8.0)))
    assert V[0, 0] == pytest.approx(min(2.0, Q[0, 0].max()))
    Q, V, N, M, S2, B = q_ucb.colosseum_tables(2, 2, 2)
    N[0, 0, 1] = 99  # alpha = 3 / 102 without a floor; min_at 0.5 lifts it
    q_ucb.colosseum_update(Q, V, N, M, S2, B, 0, 0, 1, 0.0, 1, 2, 1.0, 0.0, 0.5, False, 2.0)
    assert Q[0, 0, 1] == pytest.approx(0.5 * 2 + 0.5 * np.sqrt(8.0 * 2.0 / 100))


def test_colosseum_form_plays_and_learns_a_tiny_episodic_chain():
    """The player of form=colosseum (benchmark parameters) on ``two_step``: rewards in
    {0, 0.5, 1}, reproducible, another trajectory than Jin et al.'s form, and it ends up
    taking the optimal episode (return 1) most of the time."""
    P, R = two_step()
    episodes = 3000
    play, mdp = player("q-learning-ucb", q_ucb.COLOSSEUM_BENCHMARK, P, R, 2 * episodes, 2)
    r, counters = rewards_of(play, mdp, 2 * episodes, 1)
    assert counters.size == 0 and set(np.unique(r)) <= {0.0, 0.5, 1.0}
    assert (rewards_of(play, mdp, 2 * episodes, 1)[0] == r).all()
    jin, jmdp = player("q-learning-ucb", {"c": "0.05"}, P, R, 2 * episodes, 2)
    assert not (rewards_of(jin, jmdp, 2 * episodes, 1)[0] == r).all()
    per = r.reshape(episodes, 2).sum(axis=1)
    assert per[-500:].mean() >= 0.9


@pytest.mark.parametrize("raw, message", [
    ({"bonus": "bernstein"}, "bonus applies to form=colosseum only"),
    ({"min_at": "0.1"}, "min_at applies to form=colosseum only"),
    ({"c2": "0.5"}, "c2 applies to form=colosseum only"),
    ({"form": "colosseum", "bonus": "bernstein"}, "bonus=bernstein needs c2"),
])
def test_colosseum_only_parameters_are_refused_in_one_line(raw, message):
    P, R = two_step()
    with pytest.raises(BBRLError, match=message) as e:
        player("q-learning-ucb", raw, P, R, 10, 2)
    assert "\n" not in str(e.value) and str(e.value).startswith("q-learning-ucb__")
    alg = agents.get("q-learning-ucb")
    assert message in alg.setting_check(alg.parse_params(raw), D.builtin("GC"), 0.95, 10)


# ---------------------------------------------------------------------------------------
# All three: resets, reproducibility


@pytest.mark.parametrize("name, raw", [("psrl", {}), ("psrl", {"schedule": "doubling"}),
                                       ("ucrl2", {}), ("q-learning-ucb", {"c": "0.05"})])
def test_each_episode_starts_from_the_initial_state(name, raw):
    """With H = 1 every step is a decision at state 0 of ``two_step``, whose rewards are
    0 or 0.5 (the 1 needs state 1, one step in). (Q-learning-UCB with c = 1 keeps its
    first action at state 0 for some 350 episodes here: its bonus 9.3/√t, with ι =
    log(3·2·400/0.05), must fall below H before the untried action's H wins; c = 0.05
    tries it within a few.)"""
    P, R = two_step()
    T = 400
    play, mdp = player(name, raw, P, R, T, 1)
    r, _ = rewards_of(play, mdp, T, 3)
    assert set(np.unique(r)) <= {0.0, 0.5}
    play, mdp = player(name, raw, P, R, T, 2)  # and with H = 2 the 1 is reachable
    r, _ = rewards_of(play, mdp, T, 3)
    assert r.max() == 1.0 and set(np.unique(r[0::2])) <= {0.0, 0.5}


@pytest.mark.parametrize("name, raw, H", [("psrl", {}, 6), ("ucrl2", {}, 0), ("ucrl2", {}, 6),
                                          ("q-learning-ucb", {}, 6)])
def test_same_seed_same_rewards(name, raw, H):
    p = F.make("deepsea", size=5, p_rand=0.1)
    T = 6 * 200
    ts = E.new_test_set(p.test, 1, 0.95, T, seed=0)
    ep = dataclasses.replace(ts.episode(), episode_length=H)
    alg = agents.get(name)
    play = alg.make_player(p.prior("uniform"), alg.parse_params(raw), None, ep)
    mdp = np.ascontiguousarray(ts.mdps[0])
    a, ca = rewards_of(play, mdp, T, 5)
    b, cb = rewards_of(play, mdp, T, 5)
    c, _ = rewards_of(play, mdp, T, 6)
    assert (a == b).all() and (ca == cb).all()
    assert not (a == c).all()


def test_random_starts_gaussian_rewards_and_a_prior_with_another_support():
    """A uniformly drawn initial state (every state reachable at step 0, a fresh one each
    episode), Gaussian rewards, and a prior that rules out transitions the test MDPs
    have: every step's reward is written and finite, in both settings."""
    rng = np.random.default_rng(5)
    theta = rng.integers(0, 3, size=(4, 2, 4)).astype(float)
    theta[:, :, 1] += 1
    test = D.FDMDistribution("g", "G", theta, rng.random((4, 2, 4)), -1, "gaussian",
                             rng.random((4, 2, 4)))
    narrow = D.FDMDistribution("n", "N", np.eye(4)[:, None, :].repeat(2, axis=1),
                               rng.random((4, 2, 4)), 0)
    T = 60
    ts = E.new_test_set(test, 3, 0.9, T, seed=1)
    for prior in (test, narrow):
        for name, H in (("psrl", 5), ("psrl", 0), ("ucrl2", 5), ("ucrl2", 0),
                        ("q-learning-ucb", 5)):
            alg = agents.get(name)
            ep = dataclasses.replace(ts.episode(), episode_length=H)
            play = alg.make_player(prior, alg.parse_params({}), None, ep)
            for i in range(3):
                r = np.full(T, np.nan)
                ret, _ = play(np.ascontiguousarray(ts.mdps[i]), i, r)
                assert np.isfinite(r).all() and np.isfinite(ret), (name, H, prior.short_name)


# ---------------------------------------------------------------------------------------
# Cost model, CLI


def test_cost_features_of_the_episodic_form_count_its_work():
    p = F.make("deepsea", size=5)
    prior = p.prior("uniform")
    f = psrl.cost_features({"schedule": None, "period": None}, prior, p.test, 0.95, 600,
                           episode_length=5)
    lay = prior.support_layout
    states, off = psrl.reach_sets(lay.succ, lay.nsucc, 0, 5)
    need = psrl.decision_states(states, off, 5)
    assert f["rebuilds"] == 120 and f["steps"] == 600
    assert f["entries"] == 120 * lay.nsucc[need].sum()
    cont = psrl.cost_features({"schedule": None, "period": None}, prior, p.test, 0.95, 600)
    assert "solves" in cont or "sweep_backups" in cont  # the continuing form's solves
    for name in ("ucrl2", "q-learning-ucb"):
        w = agents.get(name).cost_features(agents.get(name).parse_params({}), prior, p.test,
                                           0.95, 600)
        assert w["steps"] == 600 and all(np.isfinite(v) and v >= 0 for v in w.values())


def bbrl(capsys, *args):
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_trains_and_runs_them_on_a_family(capsys, tmp_path):
    """Continuing DeepSea-5: UCRL2 and PSRL run; Q-learning-UCB is refused in one line."""
    rc, _, err = bbrl(capsys, "experiment", "new", "--test", "DeepSea-5", "--n-mdps", "2",
                      "--horizon", "60", "-o", tmp_path / "ds.parquet")
    assert rc == 0, err
    for name in ("ucrl2", "psrl", "q-learning-ucb"):
        rc, _, err = bbrl(capsys, "train", "--agent", name, "--prior", "UDeepSea-5", "-q",
                          "-o", tmp_path / f"{name}.parquet")
        assert rc == 0, err
        rc, out, err = bbrl(capsys, "run", "--experiment", tmp_path / "ds.parquet", "--agent",
                            tmp_path / f"{name}.parquet", "-o", tmp_path / f"{name}-run.parquet")
        if name == "q-learning-ucb":
            assert rc != 0 and "episodic interactions only" in err
            assert len(err.strip().splitlines()) == 1
            assert not (tmp_path / f"{name}-run.parquet").exists()
        else:
            assert rc == 0 and "2 trajectories" in out, err


def _has_episodes_option() -> bool:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(buf):
        main(["experiment", "new", "--help"])
    return "--episodes" in buf.getvalue()


@pytest.mark.xfail(not _has_episodes_option(), strict=False,
                   reason="episodic test sets (bbrl experiment new --episodes) come from the "
                          "core helper of issue 34, in parallel")
def test_cli_runs_them_on_an_episodic_deepsea(capsys, tmp_path):
    rc, _, err = bbrl(capsys, "experiment", "new", "--test", "DeepSea-5", "--n-mdps", "2",
                      "--episodes", "40", "--episode-length", "5", "-o",
                      tmp_path / "ds.parquet")
    assert rc == 0, err
    for name in ("psrl", "ucrl2", "q-learning-ucb"):
        rc, _, err = bbrl(capsys, "train", "--agent", name, "--prior", "UDeepSea-5", "-q",
                          "-o", tmp_path / f"{name}.parquet")
        assert rc == 0, err
        rc, out, err = bbrl(capsys, "run", "--experiment", tmp_path / "ds.parquet", "--agent",
                            tmp_path / f"{name}.parquet", "-o", tmp_path / f"{name}-run.parquet")
        assert rc == 0, err


def test_the_report_shows_every_built_in_by_its_display_name():
    """The exploration run showed `q-learning-ucb` in bsuite's DeepSea table beside
    "PSRL" and "BEB": every built-in has a report name, its module's own where it
    declares one."""
    from bbrlcore.analysis.constraints import NICE, display_name

    for name in agents.BUILTINS:
        declared = agents.get(name).display_name
        assert name in NICE, name
        assert display_name(name) == (declared or NICE[name]), name
