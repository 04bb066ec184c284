"""The current-policy hook of a compiled plugin (``CompiledAgent.policy``, issue 43):
an ``@njit`` ``policy(state, out)`` writing the agent's current policy into a float64
array (Hp, nX, nU), evaluated at Colosseum's rows inside the generated, disk-cached
indicator kernel. The trajectory is the one without indicators, bit for bit; the
indicator values are :meth:`Evaluator.accumulate`'s on the policies of a Python replay
(the same numba functions, the same draws); episodic and continuing; malformed
policies, hooks that raise and hooks that are not ``@njit`` are one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from bbrlcore.agents._kernels import env_reset, env_reward_rows, env_step_rows
from bbrlcore.agents.api import AgentError, CompiledAgent, algorithm_of
from bbrlcore.errors import BBRLError
from bbrlcore.mdp import families as F
from bbrlcore.mdp.indicators import Evaluator
from bbrlcore.protocol.test_sets import new_test_set

COLS = ("expected_regret", "normalised_expected_regret", "expected_reward",
        "normalised_expected_reward", "normalised_reward")


@njit
def _seed(s):
    np.random.seed(s)


# -- a compiled plugin: e-greedy on the empirical mean rewards -----------------------------


@njit
def _reset(setup):
    nX, nU, epsilon, last = setup
    sums = np.zeros((nX, nU))
    counts = np.zeros((nX, nU))
    return sums, counts, np.array([epsilon, last])


@njit
def _means(state, x):
    sums, counts = state[0], state[1]
    return (sums[x] + 1.0) / (counts[x] + 1.0)  # (optimistic: unseen actions first)


@njit
def _argmax_tie(q):
    best = q.max()
    n = 0
    for v in q:
        if v == best:
            n += 1
    j = np.random.randint(0, n)
    for u in range(q.shape[0]):
        if q[u] == best:
            if j == 0:
                return u
            j -= 1
    return 0


@njit
def _act(state, x):
    nU = state[0].shape[1]
    if np.random.random() < state[2][0]:
        return np.random.randint(0, nU)
    return _argmax_tie(_means(state, x))


@njit
def _observe(state, x, u, y, r):
    state[0][x, u] += r
    state[1][x, u] += 1.0


@njit
def _policy(state, out):
    """Greedy on the means, exact ties uniform; with ``last`` set, uniform at the last
    step of an episode (a step-dependent policy: out[h] is step h's)."""
    Hp, nX, nU = out.shape
    for x in range(nX):
        q = _means(state, x)
        best = q.max()
        n = 0.0
        for u in range(nU):
            if q[u] == best:
                n += 1.0
        for h in range(Hp):
            for u in range(nU):
                if state[2][1] != 0.0 and Hp > 1 and h == Hp - 1:
                    out[h, x, u] = 1.0 / nU
                else:
                    out[h, x, u] = 1.0 / n if q[u] == best else 0.0


class EmpiricalGreedy(CompiledAgent):
    name = "greedy-jit"
    reset, act, observe, policy = _reset, _act, _observe, _policy

    def setup(self):
        return (self.n_states, self.n_actions, 0.2, 1.0 if self.p.get("last") else 0.0)


def _algorithm(policy=_policy, name="greedy-jit"):
    cls = type("Greedy", (EmpiricalGreedy,), {"policy": policy, "name": name})
    return algorithm_of(cls, "test")


def _replay(ts, i, seed, L, last=False):
    """The trajectory replayed in Python with the same numba functions and draws; the
    rewards, and the policy and state (episode start or current) of each of Colosseum's
    rows."""
    ep = ts.episode()
    lay = ep.layout()
    P = np.ascontiguousarray(ts.mdps[i])
    R, Rstd = np.ascontiguousarray(ep.R), np.ascontiguousarray(ep.Rstd)
    nX, nU = lay.nsucc.shape
    H, T = int(ep.episode_length), ts.horizon
    Hp = H if H > 0 else 1
    _seed(seed)
    state = _reset((nX, nU, 0.2, 1.0 if last else 0.0))
    x0 = int(ep.initial_state)
    x = s = env_reset(x0, nX)
    rewards, pols, states = np.empty(T), [], []

    def row(at):
        out = np.full((Hp, nX, nU), np.nan)
        _policy(state, out)
        pols.append(out)
        states.append(at)

    for t in range(T):
        u = _act(state, x)
        k = env_step_rows(P, lay.nsucc, x, u)
        r = env_reward_rows(R, Rstd, int(ep.gaussian), x, u, k)
        rewards[t] = r
        y = int(lay.succ[x, u, k])
        _observe(state, x, u, y, r)
        x = y
        if t > 0 and t % L == 0:
            row(s if H > 0 else x)
        if H > 0 and (t + 1) % H == 0 and t + 1 < T:
            x = s = env_reset(x0, nX)
    row(s if H > 0 else x)
    return rewards, pols, states


def _expected(ts, i, rewards, pols, states, L):
    ep = ts.episode()
    lay = ep.layout()
    evr = Evaluator(lay.succ, lay.nsucc, np.ascontiguousarray(ts.mdps[i]), ep.R,
                    horizon=ep.episode_length or None, start=int(ep.initial_state))
    out = evr.accumulate(pols, states, T=ts.horizon, log_every=L, rewards=rewards)
    return [float(out[c][-1]) for c in COLS], out.stopped_training_at


def _check(d, ts, L, params, seed=5):
    alg = _algorithm()
    prior = d.prior("uniform")
    ep = ts.episode()
    plain = alg.make_player(prior, params, None, ep)
    ind = alg.indicator_player(prior, params, None, ep, L)
    for i in range(ts.n_mdps):
        P = np.ascontiguousarray(ts.mdps[i])
        r0, r1 = np.empty(ts.horizon), np.empty(ts.horizon)
        ret0, c0 = plain(P, seed + i, r0)
        ret1, c1, vals = ind(P, seed + i, r1)
        # (1) the same trajectory, bit for bit
        assert ret0 == ret1 and np.array_equal(r0, r1)
        assert np.array_equal(c0, c1)
        # (2) the values of the replayed policies
        rewards, pols, states = _replay(ts, i, seed + i, L, bool(params.get("last")))
        assert np.array_equal(rewards, r1)  # (the replay plays the same trajectory)
        want, stop = _expected(ts, i, rewards, pols, states, L)
        np.testing.assert_allclose(vals[:5], want, rtol=1e-12, atol=1e-9)
        assert (vals[5] if vals[5] >= 0 else None) == stop
        yield vals


@pytest.mark.parametrize("last", [False, True])
def test_episodic_indicators_equal_the_python_accumulation_of_its_policies(last):
    d = F.make("deepsea", size=5)
    ts = new_test_set(d.test, 2, 1.0, 5 * 60, 3, episode_length=5)
    for vals in _check(d, ts, 7, {"last": last}):
        assert vals[1] > 0  # (a learning agent: some regret)


def test_continuing_indicators_equal_the_python_accumulation_of_its_policies():
    d = F.make("riverswim", size=5)
    ts = new_test_set(d.test, 2, 0.95, 1500, 4)
    list(_check(d, ts, 100, {}))


def test_the_run_tables_carry_a_compiled_plugin_s_indicators():
    from bbrlcore import protocol as E
    from bbrlcore.agents import registry

    d = F.make("deepsea", size=5)
    ts = new_test_set(d.test, 2, 1.0, 5 * 40, 3, episode_length=5)
    alg = registry.get(f"{__file__}:EmpiricalGreedy")
    assert alg.indicator_player is not None
    ag = E.train_agent(f"{__file__}:EmpiricalGreedy", {}, d.prior("uniform"), seed=0,
                       gamma=ts.gamma, horizon=ts.horizon, progress=False)
    a = E.run_agent(ts, ag, progress=False)
    b = E.run_agent(ts, ag, progress=False, log_every=50)
    assert a["rewards"].to_list() == b["rewards"].to_list()
    assert b.select(COLS).null_count().row(0) == (0,) * 5


def test_without_the_hook_nothing_changes():
    class NoPolicy(CompiledAgent):
        name = "no-policy-jit"
        reset, act, observe = _reset, _act, _observe

    assert algorithm_of(NoPolicy, "test").indicator_player is None


# -- errors: one line ------------------------------------------------------------------------


@njit
def _sums_to_two(state, out):
    out[:] = 2.0 / out.shape[2]


@njit
def _unwritten(state, out):
    out[:, 1:, :] = 1.0 / out.shape[2]  # (state 0's row left out)


@njit
def _raises(state, out):
    raise ValueError("no policy here")


def _deepsea_one():
    d = F.make("deepsea", size=5)
    return d.prior("uniform"), new_test_set(d.test, 1, 1.0, 5 * 40, 3, episode_length=5)


@pytest.mark.parametrize("policy, message", [
    (_sums_to_two, r"^bad-jit: policy at step 100: the action probabilities of state 0 "
                   r"at step 0 of the episode sum to 2, not 1$"),
    (_unwritten, r"^bad-jit: policy at step 100: the probability of action 0 in state 0 "
                 r"at step 0 of the episode is nan \(an entry left unwritten\?\), not a "
                 r"number >= 0$"),
    (_raises, r"^bad-jit: ValueError in policy at step 100: no policy here$"),
])
def test_a_malformed_policy_is_one_line_naming_the_agent_and_the_step(policy, message):
    prior, ts = _deepsea_one()
    alg = _algorithm(policy, "bad-jit")
    ind = alg.indicator_player(prior, {}, None, ts.episode(), 100)
    with pytest.raises(AgentError, match=message):
        ind(np.ascontiguousarray(ts.mdps[0]), 0, None)


def test_a_policy_that_is_not_njit_is_refused_when_the_class_is_read():
    def plain(state, out):
        pass

    with pytest.raises(BBRLError, match=r"^test: Greedy.policy must be a numba @njit "
                                        r"function policy\(state, out\).*function plain "
                                        r"\(not decorated with @njit\)$"):
        _algorithm(plain)


def test_a_policy_that_does_not_compile_is_one_line():
    @njit
    def one_arg(state):
        pass

    prior, ts = _deepsea_one()
    alg = _algorithm(one_arg, "bad-jit")
    with pytest.raises(BBRLError, match=r"^bad-jit: policy \(one_arg\) takes \(state\), "
                                        r"expected policy\(state, out\)"):
        alg.indicator_player(prior, {}, None, ts.episode(), 100)


def test_the_indicator_kernel_is_a_function_of_the_generated_cached_module():
    from bbrlcore.agents.api import indicator_kernel, trajectory_kernel

    k = indicator_kernel(_reset, _act, _observe, policy=_policy)
    plain = trajectory_kernel(_reset, _act, _observe)
    assert k.py_func.__module__.startswith("bbrl_kernel_")
    assert k.py_func.__name__ == "trajectory_ind"
    assert k.py_func.__module__ != plain.py_func.__module__  # (keyed by the policy too)
    assert indicator_kernel(_reset, _act, _observe, policy=_policy) is k  # (memoised)


def test_the_example_plugin_s_hook_plays_the_same_trajectory():
    from pathlib import Path

    from bbrlcore.agents import registry
    from bbrlcore.mdp import distributions as D
    from bbrlcore.protocol import new_test_set as new_set

    example = Path(__file__).resolve().parents[1] / "examples" / "my_agents.py"
    alg = registry.get(f"{example}:MyGreedyJit")
    assert alg.indicator_player is not None
    ts = new_set(D.builtin("GC"), 1, 0.95, 300, seed=0)
    eps = alg.parse_params({"epsilon": "0.1"})
    plain = alg.make_player(D.builtin("GC"), eps, None, ts.episode())
    ind = alg.indicator_player(D.builtin("GC"), eps, None, ts.episode(), 100)
    P = np.ascontiguousarray(ts.mdps[0])
    r0, r1 = np.empty(300), np.empty(300)
    ret0, _ = plain(P, 3, r0)
    ret1, _, vals = ind(P, 3, r1)
    assert ret0 == ret1 and np.array_equal(r0, r1)
    assert np.isfinite(vals[:5]).all()
