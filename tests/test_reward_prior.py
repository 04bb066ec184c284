"""Priors over rewards (issue 42): ``+rbeta`` / ``+rnig`` priors, agents that learn the
rewards, one-line refusals of those that cannot.

Small MDPs: a two-armed "bandit" (one state, two self-looping actions) whose rewards the
test distribution draws, and priors that know them, do not, or get them wrong."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from bbrlcore import plan as P
from bbrlcore import protocol
from bbrlcore.agents import psrl as psrl_mod
from bbrlcore.agents import registry
from bbrlcore.agents._rewards import (
    reward_posterior_init,
    reward_posterior_mean,
    reward_posterior_update,
)
from bbrlcore.agents._rng import rng_new
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import reward_prior as RP
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.mdp.environment import RewardLaws, with_environment
from prior_play import play_seeds  # (tests/)


def bandit(means, name="Arms", laws: str | None = "bernoulli") -> FDMDistribution:
    """One state, len(means) self-looping actions paying ``means`` in expectation
    (Bernoulli rewards with those means when ``laws`` is "bernoulli")."""
    nU = len(means)
    theta = np.ones((1, nU, 1))
    reward = np.asarray(means, dtype=np.float64).reshape(1, nU, 1)
    d = FDMDistribution(name, name, theta, reward, 0)
    if laws is None:
        return d
    return with_environment(d, RewardLaws.make(
        1, nU, keys=np.arange(nU), kind=[laws] * nU, loc=[0.0] * nU, scale=[1.0] * nU,
        a=list(means), b=[0.0] * nU))


# ---------------------------------------------------------------------------------------
# Naming, recording


def test_suffix_names_a_prior_whose_rewards_are_unknown():
    p = D.load("UGC+rnig")
    assert p.short_name == "UGC+rnig" and p.reward_prior.kind == "nig"
    assert p.reward_prior.params == (0.0, 1.0, 0.5, 0.5)  # Colosseum's [0, 1, 1, 1]
    assert np.array_equal(p.theta_rows, D.load("UGC").theta_rows)
    assert RP.reward_prior_of(D.load("UGC")).known
    fam = D.load("URiverSwim-6+rbeta")
    assert fam.reward_prior.params == (1.0, 1.0, 0.0, 1.0)
    assert "rewards unknown to the agent: beta prior" in fam.describe()


def test_a_nig_prior_takes_its_mean_in_the_name():
    """+rnig<m>: the NIG prior's mean (Colosseum tunes it: its benchmark's episodic PSRL
    uses 0.41854463543357456); canonical names, round trips, the agents' starting
    rewards, one-line errors."""
    col = "0.41854463543357456"
    p = D.load(f"UDeepSea-5+rnig{col}")
    assert p.short_name == f"UDeepSea-5+rnig{col}" and p.reward_prior.kind == "nig"
    assert p.reward_prior.params == (float(col), 1.0, 0.5, 0.5) and p.reward_prior.mean > 0.4
    assert D.load("UDeepSea-5+rnig0").short_name == "UDeepSea-5+rnig"
    assert D.load("UDeepSea-5+rnig0.50").short_name == "UDeepSea-5+rnig0.5"
    both = D.load("UDeepSea-5+rnig0.5+dir0.3235")
    assert both.short_name == "UDeepSea-5+dir0.3235+rnig0.5" and both.dirichlet_all == 0.3235
    back = FDMDistribution.from_dict(p.to_dict())
    assert back.reward_prior == p.reward_prior and back.short_name == p.short_name
    # PSRL starts from the prior mean on every slot
    from bbrlcore.agents._layout import setting
    from bbrlcore.protocol.test_sets import new_test_set

    ts = new_test_set(D.load_test("DeepSea-5"), 1, 1.0, 10, 0, episode_length=5)
    st = setting(p, ts.episode())
    rows = psrl_mod.agent_rewards(st, psrl_mod.reward_prior_array(p))
    assert np.allclose(rows[np.asarray(st.nsucc)[..., None] > np.arange(rows.shape[2])],
                       float(col))
    for bad, why in (("x", "'x'"), ("nan", "'nan'"), ("inf", "'inf'")):
        with pytest.raises(BBRLError, match=f"mean in \\+rnig<mean> must be a finite "
                                            f"number, got {why}") as exc:
            D.load(f"UDeepSea-5+rnig{bad}")
        assert "\n" not in str(exc.value)
    cfg = {"experiments": [{"test": "DeepSea-5", "prior": "uniform+rnig0.25"}],
           "algorithms": {"psrl": {}}}
    plan = P.load(copy.deepcopy(cfg))
    assert [e.prior for e in plan.experiments] == ["UDeepSea-5+rnig0.25"]
    cfg["experiments"][0]["prior"] = "uniform+rnigabc"
    with pytest.raises(BBRLError, match=r"experiments\[0\]\.prior.*finite number"):
        P.load(cfg)


def test_reward_prior_is_recorded_in_the_embedded_prior():
    p = D.load("UGC+rbeta")
    d = p.to_dict()
    assert d["reward_prior"] == {"kind": "beta", "params": [1.0, 1.0, 0.0, 10.0]}
    back = FDMDistribution.from_dict(d)
    assert back.reward_prior == p.reward_prior and back.short_name == "UGC+rbeta"
    assert "reward_prior" not in D.load("UGC").to_dict()  # the paper's artefacts unchanged
    d["reward_prior"] = {"kind": "gamma"}
    with pytest.raises(BBRLError, match="reward_prior must be") as exc:
        FDMDistribution.from_dict(d, "agent.json")
    assert "\n" not in str(exc.value)


# ---------------------------------------------------------------------------------------
# Refusals: one line naming the algorithm and the prior, before anything runs


REFUSED = ("bamcp", "bfs3", "sboss", "boss", "bolt", "opps-ds", "formula")


@pytest.mark.parametrize("name", REFUSED)
def test_agents_that_need_known_rewards_are_refused_in_one_line(name):
    alg = registry.get(name)
    with pytest.raises(BBRLError) as exc:
        alg.check_setting({}, D.load("UGC+rbeta"), 0.95, 50)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg and "UGC+rbeta" in msg
    assert "rewards are unknown" in msg


@pytest.mark.parametrize("name", ("psrl", "ucrl2", "mbie-eb", "beb", "q-learning-ucb",
                                  "e-greedy", "soft-max", "random", "optimal"))
def test_agents_that_learn_rewards_accept_both_priors(name):
    assert set(registry.get(name).reward_priors) == {"known", "beta", "nig"}


def test_plan_refuses_an_unknown_reward_prior_for_bamcp_at_load_time():
    import yaml

    base = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    cfg = copy.deepcopy(base)
    cfg["experiments"] = [{"test": "GC", "prior": "uniform+rbeta"}]
    cfg["algorithms"] = {"psrl": {}, "bamcp": base["algorithms"]["bamcp"]}
    with pytest.raises(BBRLError) as exc:
        P.load(cfg)
    msg = str(exc.value)
    assert "\n" not in msg and "bamcp" in msg and "UGC+rbeta" in msg
    cfg["algorithms"] = {"psrl": {}}
    plan = P.load(cfg)
    assert [(e.test, e.prior) for e in plan.experiments] == [("GC", "UGC+rbeta")]
    assert plan.dists["UGC+rbeta"].reward_prior.kind == "beta"


# ---------------------------------------------------------------------------------------
# The conjugate updates


def test_nig_update_is_colosseums_batch_update():
    """Colosseum's ``N_NIG.update_sa`` (its formula, written out here) on a batch equals
    the kernel's one-reward-at-a-time updates."""
    rp = RP.make("nig", D.load("UGC")).array()
    rs = rng_new(1)
    stat = reward_posterior_init(1, 1, rp)
    xs = np.random.default_rng(0).normal(0.4, 0.3, size=25)
    for r in xs:
        reward_posterior_update(stat, rp, 0, 0, float(r), rs)
    mu0, l0, a0, b0 = 0.0, 1.0, 0.5, 0.5
    n, ybar = xs.size, xs.mean()
    l1 = l0 + n
    mu1 = (l0 * mu0 + n * ybar) / l1
    a1 = a0 + n / 2
    b1 = b0 + 0.5 * (n * xs.var() + l0 * n * (ybar - mu0) ** 2 / l1)
    assert np.allclose(stat[0, 0], [mu1, l1, a1, b1], rtol=1e-12)


def test_beta_posterior_mean_converges_with_the_bernoulli_trick():
    """Fractional rewards (uniform on [0, 0.6], mean 0.3) turned into Bernoulli trials:
    the Beta posterior's mean converges on the rewards' mean (range [0, 1])."""
    rp = RP.RewardPrior("beta", (1.0, 1.0, 0.0, 1.0)).array()
    rs = rng_new(3)
    stat = reward_posterior_init(1, 1, rp)
    for r in np.random.default_rng(1).uniform(0.0, 0.6, size=4000):
        reward_posterior_update(stat, rp, 0, 0, float(r), rs)
    assert stat[0, 0, 0] + stat[0, 0, 1] == 4002.0  # one trial per reward
    assert abs(reward_posterior_mean(stat, rp, 0, 0) - 0.3) < 0.03


# ---------------------------------------------------------------------------------------
# PSRL samples rewards


@pytest.mark.parametrize("kind", ("beta", "nig"))
def test_psrl_posterior_mean_converges_on_a_bernoulli_arm(kind):
    """PSRL's own kernel functions (reset, act, observe of the compiled agent) on a
    two-armed Bernoulli bandit (means 0.3 and 0.7) with a prior that does not know the
    rewards: its reward posterior's mean of the arm it plays most converges on 0.7, and
    it plays that arm most of the time."""
    test = bandit([0.3, 0.7])
    prior = RP.with_reward_prior(bandit([0.3, 0.7], laws=None), kind)
    ts = protocol.new_test_set(test, 1, 0.9, 10, seed=0)
    agent = psrl_mod.PSRL({"schedule": "fixed", "period": 1}, prior, None, 0.9, 10)
    api_place(agent, prior, ts.episode())
    setup = agent.setup()
    np.random.seed(5)
    state = psrl_mod._reset(setup)
    rng = np.random.default_rng(11)
    plays = np.zeros(2, dtype=int)
    for _ in range(2000):
        u = int(psrl_mod._act(state, 0))
        r = float(rng.random() < (0.3, 0.7)[u])
        plays[u] += 1
        psrl_mod._observe(state, 0, u, 0, r)
    rstat, rpar = state[16], state[15]
    assert plays[1] > 0.9 * plays.sum()
    assert abs(reward_posterior_mean(rstat, rpar, 0, 1) - 0.7) < 0.05


def api_place(agent, prior, ep):
    from bbrlcore.agents.api import _place

    _place(agent, prior, ep)


@pytest.mark.parametrize("kind", ("beta", "nig"))
def test_psrl_finds_the_better_arm_the_prior_gets_wrong(kind):
    """The prior's reward table says arm 0 pays 0.9 and arm 1 0.1; the test MDP pays 0.2
    and 0.8 (Bernoulli). Told the table, PSRL plays arm 0; not told it, it learns arm 1
    (both forms: continuing and episodic)."""
    test = bandit([0.2, 0.8])
    wrong = bandit([0.9, 0.1], laws=None)
    for episodes in (0, 10):
        known = play_seeds("psrl", {}, wrong, test, [1], 300, episodes)[0][1]
        learn = play_seeds("psrl", {}, RP.with_reward_prior(wrong, kind), test, [1], 300,
                           episodes)[0][1]
        assert known.mean() < 0.3 and learn[150:].mean() > 0.65, (episodes, known.mean(),
                                                                  learn[150:].mean())


@pytest.mark.parametrize("name,params,episodes", [
    ("ucrl2", {}, 0), ("mbie-eb", {"beta": "0.5"}, 0), ("beb", {"beta": "0.5"}, 0),
    ("q-learning-ucb", {"c": "0.01"}, 10), ("e-greedy", {"epsilon": "0.1"}, 0),
    ("soft-max", {"tau": "0.05"}, 0)])
def test_optimists_use_empirical_rewards(name, params, episodes):
    """A prior whose reward table is wrong (arm 0 0.9, arm 1 0.1; the test MDP pays 0.2 and
    0.8, Bernoulli): with the rewards unknown (+rbeta) the agent still finds the better
    arm (it plays it most of the second half of the interaction); UCRL2, MBIE-EB, BEB,
    e-Greedy and Soft-max told the wrong table keep to arm 0 (Q-learning-UCB reads only
    the rewards it observes)."""
    test = bandit([0.2, 0.8])
    wrong = bandit([0.9, 0.1], laws=None)
    learn = play_seeds(name, params, RP.with_reward_prior(wrong, "beta"), test, [2], 300,
                       episodes)[0][1]
    assert learn[150:].mean() > 0.6, learn[150:].mean()
    if name != "q-learning-ucb":  # (it learns from observed rewards whatever the prior)
        known = play_seeds(name, params, wrong, test, [2], 300, episodes)[0][1]
        assert known[150:].mean() < 0.35, known[150:].mean()


@pytest.mark.parametrize("name,params,episodes", [
    ("psrl", {}, 0), ("psrl", {}, 10), ("ucrl2", {}, 0), ("mbie-eb", {"beta": "0.5"}, 0),
    ("beb", {"beta": "0.5"}, 0), ("e-greedy", {"epsilon": "0.1"}, 0),
    ("soft-max", {"tau": "0.5"}, 0)])
@pytest.mark.parametrize("kind", ("beta", "nig"))
def test_same_seed_same_trajectory(name, params, episodes, kind):
    base, test = (("URiverSwim-6", D.load_test("RiverSwim-6")) if episodes else
                  ("UGC", D.builtin("GC")))
    a = play_seeds(name, params, D.load(f"{base}+r{kind}"), test, [4, 4, 9], 100, episodes)
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert not np.array_equal(a[0][1], a[2][1])


def test_agent_artefact_records_the_reward_prior_and_reads_it_back(tmp_path):
    """``bbrl train`` with ``URiverSwim-6+rnig``: the artefact's embedded prior holds the
    reward prior; read back, the agent plays the same trajectory; BAMCP is refused by
    ``train_agent`` in one line."""
    from bbrlcore.protocol.training import read_agent, train_agent, write_agent

    prior = D.load("URiverSwim-6+rnig")
    agent = train_agent("psrl", {}, prior, horizon=60, progress=False)
    write_agent(agent, tmp_path / "a.json")
    back = read_agent(tmp_path / "a.json")
    assert back.prior.reward_prior == RP.RewardPrior("nig", (0.0, 1.0, 0.5, 0.5))
    assert back.prior.short_name == "URiverSwim-6+rnig"
    ts = protocol.new_test_set(D.load_test("RiverSwim-6"), 1, 0.95, 60, seed=0)
    r = [protocol.run_agent(ts, a, progress=False)["discounted_return"][0]
         for a in (agent, back)]
    assert r[0] == r[1]
    with pytest.raises(BBRLError) as exc:
        train_agent("bamcp", {"K": 10, "D": 10}, prior, progress=False)
    assert "\n" not in str(exc.value) and "bamcp" in str(exc.value)


def test_distribution_import_writes_the_reward_prior(tmp_path):
    """What the workflow's ``bbrl distribution import NAME --short-name NAME`` does for a
    prior ``URiverSwim-6+rbeta`` and for a declared file with the suffix: the Parquet
    artefact keeps the reward prior."""
    from bbrlcore.cli import main

    out = tmp_path / "p.parquet"
    assert main(["distribution", "import", "URiverSwim-6+rbeta", "--short-name",
                 "URiverSwim-6+rbeta", "-o", str(out)]) == 0
    back = D.load(out)
    assert back.reward_prior == D.load("URiverSwim-6+rbeta").reward_prior
    assert back.short_name == "URiverSwim-6+rbeta"
    plain = tmp_path / "mine.parquet"
    D.write_parquet(D.load("UGC").renamed("Mine"), plain)
    assert RP.reward_prior_of(D.load(plain)).known
    assert D.load(f"{plain}+rnig").reward_prior.kind == "nig"


def test_plan_names_a_declared_prior_with_the_suffix(tmp_path):
    import yaml

    base = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    f = tmp_path / "mine.parquet"
    D.write_parquet(D.load("UGC").renamed("Mine"), f)
    cfg = copy.deepcopy(base)
    cfg["distributions"] = {"Mine": str(f)}
    cfg["experiments"] = [{"test": "GC", "prior": ["Mine", "Mine+rnig"]}]
    cfg["algorithms"] = {"psrl": {}, "ucrl2": {}}
    plan = P.load(cfg)
    assert [e.prior for e in plan.experiments] == ["Mine", "Mine+rnig"]
    assert plan.distribution_spec("Mine+rnig") == f"{f}+rnig"
    assert D.load_test(plan.distribution_spec("Mine+rnig")).reward_prior.kind == "nig"
