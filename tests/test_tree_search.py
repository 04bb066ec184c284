"""BAMCP and BFS3: they beat Random on GC, are deterministic given the seed, solve a tiny
MDP whose best first action is known, and their node pools stay within capacity at the
paper's largest settings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from bbrlcore import agents
from bbrlcore.agents import bamcp, bfs3
from bbrlcore.agents.base import Episode
from bbrlcore.analysis.stats import paired_z
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import families
from bbrlcore.mdp.distributions import FDMDistribution, builtin

MODULES = {"bamcp": bamcp, "bfs3": bfs3}


def _episode(prior: FDMDistribution, gamma: float = 0.95, horizon: int = 250) -> Episode:
    return Episode(
        prior.reward, prior.reward_std, prior.reward_type == "gaussian", prior.initial_state,
        gamma, horizon,
    )  # fmt: skip


def _returns(name: str, params: dict, prior, mdps, episode, seed0: int = 1000) -> np.ndarray:
    algo = agents.get(name)
    play = algo.make_player(prior, algo.parse_params(params), None, episode)
    return np.array([play(P, seed0 + i)[0] for i, P in enumerate(mdps)])


@pytest.fixture(scope="module")
def gc_setup():
    prior = builtin("GC")
    rng = np.random.default_rng(20240601)
    mdps = [prior.draw_mdp(rng) for _ in range(200)]
    ep = _episode(prior)
    random_returns = _returns("random", {}, prior, mdps, ep)
    return prior, mdps, ep, random_returns


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,params",
    [("bamcp", {"K": "50", "D": "15"}), ("bfs3", {"K": "20", "C": "5", "D": "15"})],
)
def test_beats_random_on_gc(gc_setup, name, params):
    prior, mdps, ep, rnd = gc_setup
    ret = _returns(name, params, prior, mdps, ep)
    z = paired_z(ret, rnd)
    print(f"{name} {params}: mean {ret.mean():.2f} vs random {rnd.mean():.2f}, Z = {z:.2f}")
    assert z > norm.ppf(1 - 0.01)


@pytest.mark.parametrize(
    "name,params",
    [("bamcp", {"K": 30, "D": 8}), ("bfs3", {"K": 6, "C": 3, "D": 5})],
)
def test_deterministic_given_seed(name, params):
    prior = builtin("GC")
    P = prior.draw_mdp(np.random.default_rng(3))
    ep = _episode(prior, horizon=30)
    algo = agents.get(name)
    play = algo.make_player(prior, algo.parse_params(params), None, ep)
    a, b, c = play(P, 11)[0], play(P, 11)[0], play(P, 12)[0]
    assert a == b
    rets = {play(P, s)[0] for s in range(12, 20)} | {c}
    assert len(rets) > 1  # the seed matters


def _two_state_prior() -> FDMDistribution:
    """A deterministic 2-state prior: both actions keep the state; action 1 earns 1 and
    action 0 earns 0, so action 1 is always the best."""
    theta = np.zeros((2, 2, 2))
    theta[0, :, 0] = 1.0
    theta[1, :, 1] = 1.0
    reward = np.zeros((2, 2, 2))
    reward[:, 1, :] = 1.0
    return FDMDistribution("two states", "TWO", theta, reward, 0)


@pytest.mark.parametrize(
    "name,params",
    [
        ("bamcp", {"K": 300, "D": 3}),
        ("bamcp", {"K": 100, "D": 10}),
        ("bfs3", {"K": 2, "C": 2, "D": 3}),
        ("bfs3", {"K": 1, "C": 1, "D": 1}),
    ],
)
def test_tiny_mdp_best_action(name, params):
    prior = _two_state_prior()
    P = prior.mean_model()
    ep = _episode(prior, gamma=0.9, horizon=20)
    ret = _returns(name, params, prior, [P] * 5, ep)
    best = (1 - 0.9**20) / (1 - 0.9)
    assert np.allclose(ret, best)


# the paper's largest settings; a few decisions each
LARGEST = [
    ("bamcp", {"K": 25000, "D": 50}, "Grid"),
    ("bamcp", {"K": 25000, "D": 50}, "GC"),
    ("bfs3", {"K": 10000, "C": 15, "D": 50}, "Grid"),
    ("bfs3", {"K": 10000, "C": 15, "D": 50}, "GC"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,params,dist", LARGEST)
def test_pool_within_capacity_at_largest_settings(name, params, dist):
    prior = builtin(dist)
    P = prior.draw_mdp(np.random.default_rng(5))
    ep = _episode(prior, horizon=2)
    _ret, used, cap = MODULES[name].play_with_stats(prior, params, ep, P, 7)
    if name == "bamcp":
        assert cap == params["K"] + 1
        nbytes = bamcp.pool_bytes(params["K"], prior.n_actions)
    else:
        N = max(1, params["K"] // params["C"])
        assert cap == N * params["D"]
        nbytes = bfs3.pool_bytes(params["K"], params["C"], params["D"], prior.n_actions)
    assert 1 < used <= cap
    assert nbytes < 2 * 1024**3


def test_pool_use_is_reported():
    prior = builtin("GC")
    P = prior.draw_mdp(np.random.default_rng(0))
    ep = _episode(prior, horizon=5)
    _r, used, cap = bamcp.play_with_stats(prior, {"K": 40, "D": 10}, ep, P, 1)
    assert cap == 41 and 1 < used <= cap
    _r, used, cap = bfs3.play_with_stats(prior, {"K": 12, "C": 3, "D": 4}, ep, P, 1)
    # the first rollout of a tree creates one node per depth
    assert cap == 16 and 4 <= used <= cap


def test_parameters_and_ids():
    a = agents.get("bamcp")
    p = a.parse_params({"K": "500", "D": "15"})
    assert a.agent_id(p) == "bamcp__K=500__D=15"
    assert a.agent_id(a.parse_params({"K": "500"})) == "bamcp__K=500"
    b = agents.get("bfs3")
    assert b.agent_id(b.parse_params({"K": "1e3", "C": "15", "D": "25"})) == (
        "bfs3__K=1000__C=15__D=25"
    )
    for algo, raw in [(a, {"K": "0"}), (a, {}), (b, {"K": "5"}), (b, {"K": 5, "C": 1, "D": 0})]:
        with pytest.raises(BBRLError):
            algo.parse_params(raw)
    with pytest.raises(BBRLError):
        a.parse_params({"K": 5, "compat": "true"})


def test_depth_defaults_to_horizon():
    prior = builtin("GC")
    ep = _episode(prior, horizon=7)
    assert bamcp.resolve_depth({"K": 3, "D": None}, ep) == 7
    assert bfs3.resolve_depth({"K": 3, "C": 1, "D": 4}, ep) == 4


# ---------------------------------------------------------------------------------------
# BFS3's expansion draws: each exact sampler gives the multinomial Mult(C, p) of the
# posterior predictive p, whichever path the row takes (one state; two states at C <= 4:
# Bernoulli trials; sequential cached binomials for rows of up to max(2, C // 3) states;
# the urn with its alias table and its stack of counts beyond)


def _compositions(C: int, k: int):
    if k == 1:
        yield (C,)
        return
    for m in range(C + 1):
        for rest in _compositions(C - m, k - 1):
            yield (m, *rest)


def _multinomial_chi2(counts: np.ndarray, p: np.ndarray, C: int) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of observed multiplicity vectors
    (rows of ``counts``, over the support of ``p``) against Mult(C, p)."""
    from math import factorial

    k = len(p)
    obs: dict[tuple, int] = {}
    for row in counts:
        key = tuple(int(v) for v in row)
        obs[key] = obs.get(key, 0) + 1
    n = len(counts)
    stat = 0.0
    cells = 0
    pooled_o, pooled_e = 0, 0.0
    for comp in _compositions(C, k):
        coef = factorial(C)
        for m in comp:
            coef //= factorial(m)
        e = n * coef * float(np.prod([pi**m for pi, m in zip(p, comp, strict=True)]))
        o = obs.pop(comp, 0)
        if e < 5:  # pool the rare outcomes
            pooled_o += o
            pooled_e += e
            continue
        stat += (o - e) ** 2 / e
        cells += 1
    assert not obs, f"impossible outcomes drawn: {obs}"
    if pooled_e > 0:
        stat += (pooled_o - pooled_e) ** 2 / pooled_e
        cells += 1
    return stat, cells - 1


def _small_prior(row: list[float]) -> FDMDistribution:
    """3 states, 2 actions; row (1, 0) is ``row``, the others uniform."""
    theta = np.ones((3, 2, 3))
    theta[1, 0] = row
    return FDMDistribution("small", "SMALL", theta, np.zeros((3, 2, 3)), 0)


@pytest.mark.parametrize(
    "row,C,path",
    [
        ([1.0, 1.0, 1.0], 4, "urn, uniform prior row (no alias)"),
        ([0.5, 2.0, 1.5], 4, "urn, alias table"),
        ([0.5, 2.0, 1.5], 9, "sequential cached binomials (k = 3 <= C // 3)"),
        ([0.0, 2.0, 0.7], 6, "two-state row: cached binomial"),
        ([0.0, 2.0, 0.7], 3, "two-state row, C <= 4: Bernoulli trials"),
        ([0.0, 0.0, 1.3], 5, "prior's one-state row, with a count outside its support"),
        ([0.0, 2.0, 0.0], 5, "one-state row"),
    ],
)
def test_expansion_draws_are_multinomial(row, C, path):
    from scipy.stats import chi2

    prior = _small_prior(row)
    # the tree's root is at state 1 and expands row (1, 0); it is reached by (1, 0) -> 1
    # (a pseudo-count on the tested row) when 1 is in the row's support, else by (0, 1)
    x, a = (1, 0) if row[1] > 0 else (0, 1)
    obs = np.array([[1, 0, 2], [1, 0, 2], [1, 0, 1], [0, 1, 2]], dtype=np.int64)
    if row == [0.0, 2.0, 0.0]:
        obs = obs[2:]  # the row's only state
    w = np.array(row, dtype=float)
    for x_, u_, y_ in obs:
        if (x_, u_) == (1, 0):  # a real count, in the prior's support or not
            w[y_] += 1.0
    if (x, a) == (1, 0):
        w[1] += 1.0
    supp = [y for y in range(3) if w[y] > 0]
    p = w[supp] / w[supp].sum()
    reps = 20000
    out = bfs3.expansion_multiplicities(
        prior.theta, prior.reward, obs, x, a, 1, C, reps, 12345
    )[:, 0, :]
    assert (out.sum(axis=1) == C).all()
    assert (out[:, [y for y in range(3) if y not in supp]] == 0).all()
    stat, dof = _multinomial_chi2(out[:, supp], p, C)
    if dof == 0:  # one outcome only
        assert stat == 0.0
        return
    pval = chi2.sf(stat, dof)
    print(f"{path}: chi2 = {stat:.1f}, dof = {dof}, p = {pval:.3f}")
    assert pval > 1e-4, path


def test_expansion_draws_dense_row_moments():
    """A 25-state uniform-prior row (UGrid's) with counts, C = 15 (the urn): every state's
    mean multiplicity is C p(y) and the multiplicities sum to C."""
    prior = builtin("UGrid")
    rng = np.random.default_rng(3)
    ys = rng.integers(0, 25, size=40)
    obs = np.array([[6, 2, y] for y in ys] + [[6, 2, 7]] * 30, dtype=np.int64)
    s1 = 6
    w = prior.theta[6, 2].copy()
    for y in obs[:, 2]:
        w[y] += 1.0
    reps = 20000
    out = bfs3.expansion_multiplicities(prior.theta, prior.reward, obs, 6, 2, s1, 15, reps, 7)
    w[s1] += 1.0  # root pseudo-count (6, 2) -> 6
    p = w / w.sum()
    m = out[:, 2, :]
    assert (m.sum(axis=1) == 15).all()
    se = np.sqrt(15 * p * (1 - p) / reps)
    z = (m.mean(axis=0) - 15 * p) / se
    assert np.abs(z).max() < 4.5, z
    # multinomial covariance of two states: -C p_i p_j
    cov = np.cov(m[:, 7], m[:, 0])[0, 1]
    assert abs(cov - (-15 * p[7] * p[0])) < 0.02


def test_bfs3_bounds_hold_with_negative_rewards():
    """DeepSea charges its right moves: BFS3's lower bound is min(0, Rmin)/(1 - γ), so it
    runs on it (it refused before), and on non-negative rewards the bound is the
    reference's 0 (the paper's returns are unchanged: benchmarks/ab_identical.py)."""
    from bbrlcore import protocol as E
    from bbrlcore.mdp import families

    p = families.make("deepsea", size=5)
    assert p.test.reward.min() < 0
    ts = E.new_test_set(p.test, 4, 0.95, 60, seed=0)
    for prior in (p.prior("accurate"), p.prior("uniform")):
        agent = E.train_agent("bfs3", {"K": 20, "C": 2, "D": 10}, prior, gamma=0.95,
                              horizon=60, progress=False)
        table = E.run_agent(ts, agent, progress=False)
        ret = table["discounted_return"].to_numpy()
        assert np.isfinite(ret).all()
        # a return lies between the MDP's extreme values
        lo = min(0.0, p.test.reward.min()) / 0.05
        assert (ret >= lo - 1e-9).all() and (ret <= p.test.reward.max() / 0.05).all()


def test_bfs3_urn_stacks_take_memory_for_the_counts_not_pairs_times_steps():
    """The urn's stacks (one entry per count of each state-action pair) were one array of
    nX nU (T + D + 1) entries: 5 GB for DeepSea-40 over bsuite's 400,000 steps, which the
    cost model's probe allocated too (`bbrl estimate --preset exploration` out of memory
    under a 6 GB address-space limit). They share one pool of O(T + nX nU D) entries,
    each pair's stack moved to the pool's end with twice the room when its real counts
    leave less than D + 1 free, its entries kept in order (so the same draws: the same
    trajectories)."""
    deep = families.make("deepsea", size=40)
    prior = deep.prior("uniform")
    lay = prior.support_layout
    T, D = 400_000, 15
    model, _flat, _nodes, _path, urn, _binom, _dall = bfs3._workspace(
        lay.succ, lay.nsucc, np.ascontiguousarray(prior.theta_rows),
        np.ascontiguousarray(prior.reward_rows), T, 1, 2, D, 0.0)
    n_pairs = prior.n_states * prior.n_actions
    assert urn[7].size == bfs3.urn_pool_entries(n_pairs, T, D) < 2_000_000  # (8 MB)
    # a long run of real counts piled on few pairs: each stack holds them in order
    rng = np.random.default_rng(3)
    seen: dict[int, list[int]] = {}
    for _ in range(20_000):
        x, u = int(rng.integers(3)), int(rng.integers(2))
        k = int(rng.integers(lay.nsucc[x, u]))
        bfs3._observe(model, urn, x, u, k)
        seen.setdefault(x * 2 + u, []).append(k)
    stk, soff, scap, slen, stop = urn[7], urn[8], urn[9], urn[10], urn[11]
    for p, ks in seen.items():
        assert stk[soff[p]:soff[p] + slen[p]].tolist() == ks
        assert scap[p] >= slen[p] + D + 1  # (room for a rollout's pseudo-counts)
    assert stop[0] <= stk.size
