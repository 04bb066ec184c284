"""Property tests (hypothesis): file round trips, formula semantics, and every agent on
small random FDM distributions."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbrlcore import agents
from bbrlcore import protocol as E
from bbrlcore.agents import formulas as F
from bbrlcore.mdp import distributions as D


@st.composite
def fdm(draw, max_states=5, max_actions=3, zeros=True):
    nX = draw(st.integers(1, max_states))
    nU = draw(st.integers(1, max_actions))
    conc = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.7]) if zeros else st.sampled_from(
        [0.5, 1.0, 2.0])
    theta = np.array(draw(st.lists(conc, min_size=nX * nU * nX, max_size=nX * nU * nX)),
                     dtype=float).reshape(nX, nU, nX)
    # at least one positive entry per row
    for x in range(nX):
        for u in range(nU):
            if theta[x, u].sum() == 0:
                theta[x, u, draw(st.integers(0, nX - 1))] = draw(st.sampled_from([0.5, 1.0]))
    reward = np.array(draw(st.lists(st.floats(0, 10, allow_nan=False), min_size=nX * nU * nX,
                                    max_size=nX * nU * nX))).reshape(nX, nU, nX)
    ini = draw(st.integers(-1, nX - 1))
    return D.FDMDistribution("random distribution", "R", theta, reward, ini)


@settings(max_examples=60, deadline=None)
@given(d=fdm(), compress=st.booleans())
def test_dat_round_trip(tmp_path_factory, d, compress):
    p = tmp_path_factory.mktemp("dat") / "d.dat"
    D.write_dat(d, p, compress=compress)
    back = D.read_dat(p)
    assert back.initial_state == d.initial_state and back.short_name == d.short_name
    assert np.allclose(back.theta, d.theta, rtol=1e-14, atol=0)
    assert np.allclose(back.reward, d.reward, rtol=1e-14, atol=0)


# --------------------------------------------------------------------------------------
# Formulas against a plain Python evaluator of the spec's semantics (02 §1.1)

TOKENS = ["X0", "X1", "X2", "ABS", "LN", "SQRT", "INV", "OPP", "SUB", "DIV", "ADD2",
          "MUL2", "MIN2", "MAX2"]
ARITY = {"X0": 0, "X1": 0, "X2": 0, "ABS": 1, "LN": 1, "SQRT": 1, "INV": 1, "OPP": 1,
         "SUB": 2, "DIV": 2, "ADD2": 2, "MUL2": 2, "MIN2": 2, "MAX2": 2}


class Fail(Exception):
    pass


def py_eval(rpn: list[str], x: tuple[float, float, float]) -> float:
    stack: list[float] = []
    for t in rpn:
        if t[0] == "X":
            stack.append(x[int(t[1])])
            continue
        if ARITY[t] == 1:
            a = stack.pop()
            if t == "ABS":
                v = abs(a)
            elif t == "LN":
                if a <= 0:
                    raise Fail
                v = math.log(a) if not math.isinf(a) else math.inf
            elif t == "SQRT":
                if a < 0:
                    raise Fail
                v = math.sqrt(a)
            elif t == "INV":
                if a == 0:
                    raise Fail
                v = 1.0 / a
            else:
                v = -a
        else:
            b = stack.pop()
            a = stack.pop()
            if t == "SUB":
                v = a - b
            elif t == "DIV":
                if b == 0:
                    raise Fail
                v = a / b
            elif t == "ADD2":
                v = a + b
            elif t == "MUL2":
                v = a * b
            elif t == "MIN2":
                v = a if a < b else b
            else:
                v = a if a > b else b
        stack.append(v)
    assert len(stack) == 1
    return stack[0]


@st.composite
def rpn_formula(draw, max_size=7):
    # build a valid RPN by tracking the stack depth
    size = draw(st.integers(1, max_size))
    out, depth = [], 0
    for i in range(size):
        left = size - i
        choices = []
        if depth + 1 <= left:  # a variable keeps the formula completable
            choices += ["X0", "X1", "X2"]
        if depth >= 1 and (depth <= left - 1 or depth == 1):
            choices += ["ABS", "LN", "SQRT", "INV", "OPP"]
        if depth >= 2:
            choices += ["SUB", "DIV", "ADD2", "MUL2", "MIN2", "MAX2"]
        # keep it completable: the remaining tokens must be able to reduce the stack to 1
        choices = [c for c in choices if depth + 1 - ARITY[c] <= left]
        t = draw(st.sampled_from(choices))
        out.append(t)
        depth += 1 - ARITY[t]
    if depth != 1:
        while depth > 1:
            out.append("ADD2")
            depth -= 1
    return out


values = st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, 1e-300]))


@settings(max_examples=400, deadline=None)
@given(f=rpn_formula(), x=st.tuples(values, values, values))
def test_formula_evaluation_matches_python(f, x):
    codes = F.parse(" ".join(f))
    try:
        expect = py_eval(f, x)
        failed = False
    except Fail:
        failed = True
    got = F.evaluate(codes, x)
    if failed:
        assert math.isnan(got), (f, x)
    elif math.isnan(expect):
        assert math.isnan(got)
    else:
        assert got == expect or math.isclose(got, expect, rel_tol=1e-12), (f, x, got, expect)


# --------------------------------------------------------------------------------------
# Every agent on small random distributions

AGENTS = [
    ("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0.3"}),
    ("soft-max", {"tau": "0.5"}), ("soft-max", {"tau": "0.5", "compat": "true"}),
    ("beb", {"beta": "2"}), ("beb", {"beta": "2", "compat": "true"}),
    ("sboss", {"epsilon": "0.1", "delta": "0.5"}),
    ("sboss", {"epsilon": "0.1", "delta": "0.5", "compat": "true"}),
    ("bamcp", {"K": "8", "D": "4"}), ("bfs3", {"K": "4", "C": "2", "D": "3"}),
    ("formula", {"formula": "Q2/Q0"}), ("formula", {"formula": "ln(Q1) - sqrt(Q2)"}),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=fdm(max_states=4), seed=st.integers(0, 2**31 - 1))
def test_every_agent_returns_finite_results(d, seed):
    ts = E.new_test_set(d, 2, 0.9, 12, seed=seed % 1000)
    bound = d.reward.max() * sum(0.9**t for t in range(12)) + 1e-9
    for alg, params in AGENTS:
        a = E.train_agent(alg, params, d, progress=False)
        r = E.run_agent(ts, a, progress=False)["discounted_return"].to_numpy()
        assert np.isfinite(r).all(), alg
        assert (r >= -1e-9).all() and (r <= bound).all(), alg


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=fdm(max_states=3, max_actions=2), f=st.sampled_from(
    ["X0 INV", "X1 LN", "X2 X0 DIV", "X1 SQRT OPP", "X0 X1 MAX2", "X2"]))
def test_formula_agents_finite_and_failures_counted(d, f):
    """A formula agent never crashes a run: undefined values score -inf, and when every
    action fails the action is uniform at random; failures are counted (00-decisions §7)."""
    from bbrlcore.agents.base import Trained

    alg = agents.get("opps-ds")
    assert alg.counters == ("formula_failures",)
    ts = E.new_test_set(d, 3, 0.9, 10, seed=1)
    play = alg.make_player(d, {}, Trained(info={"rpn": f}), ts.episode())
    for i in range(3):
        ret, counters = play(ts.mdps[i], 7 + i)
        assert math.isfinite(ret) and counters[0] >= 0


def test_formula_failures_are_counted_and_play_goes_on():
    """1/QSelf fails wherever QSelf is exactly 0: the run continues and counts it."""
    from bbrlcore.agents.base import Trained

    d = D.builtin("GC")
    ts = E.new_test_set(d, 5, 0.95, 50, seed=1)
    play = agents.get("opps-ds").make_player(d, {}, Trained(info={"rpn": "X1 INV"}),
                                             ts.episode())
    total = 0
    for i in range(5):
        ret, counters = play(ts.mdps[i], i)
        assert math.isfinite(ret)
        total += int(counters[0])
    assert total > 0
