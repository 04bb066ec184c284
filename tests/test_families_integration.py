"""Problem families across the package (issue #26): names, distribution files, the
configuration, the cost model, the command line, the gym default prior and the report.
The family generators themselves are tested in tests/test_families.py."""

from __future__ import annotations

import copy
import json
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import bbrlcore
from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.mdp import families as F
from bbrlcore.mdp import hardness as H
from bbrlcore.mdp.families._base import fmt
from bbrlcore.plan import cost

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())


# ---------------------------------------------------------------------------------------
# Names


@st.composite
def family_params(draw):
    """A family and valid parameters (each given or left at its default); sizes kept
    small so that building the problem is cheap."""
    spec = draw(st.sampled_from(list(F.FAMILIES.values())))
    params = {}
    for p in spec.params:
        if not draw(st.booleans()):
            continue
        if p.kind is int:
            hi = int(min(p.hi, p.lo + 6)) if p.name == "size" else int(p.hi)
            params[p.name] = draw(st.integers(int(p.lo), hi))
        else:
            lo, hi = p.lo, min(p.hi, 1e6)
            v = draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
            if draw(st.booleans()):  # a value as a user writes it (its name's, mostly)
                v = float(format(v, f".{draw(st.integers(1, 13))}g"))
            if not lo <= v <= hi or (p.lo_open and v == p.lo) or (p.hi_open and v == p.hi):
                continue
            params[p.name] = v
    return spec, params


def _refused_for_its_name(spec, params, exc) -> bool:
    """Whether ``exc`` is the one-line refusal of a float its name would not identify, or
    of a combination the family's check refuses (SimpleGrid's ``start`` on an odd grid)."""
    msg = str(exc)
    if spec.check is not None:
        why = spec.check({**spec.defaults(), **params})
        if why and msg == f"family {spec.name}: {why}":
            return True
    bad = [k for k, v in params.items() if isinstance(v, float) and float(fmt(v)) != v]
    return ("\n" not in msg and msg.startswith(f"family {spec.name}: ") and bool(bad)
            and any(msg.startswith(f"family {spec.name}: {k}={params[k]!r}: names keep 12 "
                                   "significant digits") for k in bad))


@settings(max_examples=150, deadline=None)
@given(family_params(), st.booleans())
def test_every_family_name_parses_back_to_exactly_its_parameters_or_is_refused(fp, uniform):
    """One name, one distribution (issue #33): the name of valid parameters parses back to
    exactly them; a float whose name (12 significant digits) would say another value,
    onto an excluded end included (p_rand 0.9999999999999999 -> "prand1"), is refused in
    one line naming the family and the parameter."""
    spec, params = fp
    try:
        full = spec.validate(params)
    except BBRLError as exc:
        assert _refused_for_its_name(spec, params, exc), (params, str(exc))
        return
    short = spec.names(full)[0]
    parsed = F.parse_name(("U" if uniform else "") + short)
    assert parsed is not None, short
    assert parsed[0] is spec and parsed[2] is uniform
    assert parsed[1] == full, short
    assert all(type(parsed[1][k]) is type(v) for k, v in full.items())


def _valid_name(name: str) -> bool:
    return name in D.BUILTINS or F.parse_name(name) is not None


@settings(max_examples=150, deadline=None)
@given(family_params(), family_params(), st.booleans())
def test_experiment_names_split_one_way_only(fa, fb, uniform):
    """{test}-{prior}: of the dashes of an experiment's name, exactly one splits it into
    two distribution names, so (test, prior) is recoverable from it."""
    (sa, pa), (sb, pb) = fa, fb
    try:
        test = sa.names(sa.validate(pa))[0]
        prior = ("U" if uniform else "") + sb.names(sb.validate(pb))[0]
    except BBRLError:  # a value its name would not identify (the test above)
        assume(False)
    assume(_valid_name(test) and _valid_name(prior))  # names of 12-digit values
    name = f"{test}-{prior}"
    splits = [(name[:i], name[i + 1:]) for i, c in enumerate(name) if c == "-"]
    valid = [s for s in splits if _valid_name(s[0]) and _valid_name(s[1])]
    assert valid == [(test, prior)]


def test_bad_family_names_say_why():
    assert F.parse_name("DeepSea") is None and F.parse_name("GC-5") is None
    assert "write GC" in F.name_error("GC-5")
    assert "size=1: must be an integer in [2, 70]" in F.name_error("DeepSea-1")
    assert "'foo3' in 'DeepSea-5-foo3' is no parameter" in F.name_error("DeepSea-5-foo3")
    assert F.name_error("Banana-3") is None and F.name_error(None) is None
    with pytest.raises(BBRLError, match=r"^distribution 'DeepSea-100': family deepsea: "
                                        r"size=100: must be .*1.6 GB"):
        D.load("DeepSea-100")


# ---------------------------------------------------------------------------------------
# Distribution files: a family test works wherever a distribution file works


def test_family_names_load_as_tests_and_priors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a name comes before a file of that name (as built-ins do)
    D.write_dat(D.builtin("GC"), tmp_path / "RiverSwim-8")
    assert D.load("./RiverSwim-8").same_as(D.builtin("GC"))
    assert D.load("RiverSwim-8").n_states == 8
    p = F.make("deepsea", size=5, p_rand=0.05)
    assert D.load_test("DeepSea-5-prand0.05").same_as(p.test)
    assert D.load("DeepSea-5-prand0.05").same_as(p.prior("accurate"))
    assert D.load("UDeepSea-5-prand0.05").same_as(p.prior("uniform"))
    assert D.load_test("UDeepSea-5-prand0.05").same_as(p.prior("uniform"))
    r = F.make("riverswim", size=8)
    assert D.load_test("RiverSwim-8").same_as(r.test) and D.load("RiverSwim-8").same_as(r.test)
    assert D.load("GC").same_as(D.builtin("GC"))
    assert D.load("GC-7").same_as(F.make("gc", size=7).test)


def test_family_test_file_round_trip(tmp_path):
    p = F.make("frozenlake", size=4)
    path = tmp_path / "fl.parquet"
    D.write_parquet(p.test, path)
    meta = artefacts.read_meta(path, "distribution")
    # reward_noise at its default (0, deterministic rewards) is not stored: a file is
    # what it was before reward laws existed
    stored = {k: v for k, v in p.params.items() if k != "reward_noise"}
    assert meta["family"]["family"] == "frozenlake" and meta["family"]["params"] == stored
    back = D.load_test(str(path))
    assert type(back) is type(p.test) and back.same_as(p.test)
    assert np.array_equal(back.draw_mdp(np.random.default_rng(3)),
                          p.test.draw_mdp(np.random.default_rng(3)))
    prior = D.load(str(path))  # as a prior: the accurate one, an FDM
    assert isinstance(prior, D.FDMDistribution) and prior.same_as(p.prior("accurate"))
    assert D.read_parquet(path).same_as(p.prior("accurate"))
    # a test set drawn from the file equals one drawn from the family
    a = E.new_test_set(back, 3, 0.95, 10, 4)
    b = E.new_test_set(p.test, 3, 0.95, 10, 4)
    assert np.array_equal(a.mdps, b.mdps)
    with pytest.raises(BBRLError, match="derived from its parameters"):
        D.renamed(back, "Lake")
    assert D.renamed(back, back.short_name) is back


def test_family_file_with_a_bad_family_is_one_line(tmp_path):
    p = F.make("deepsea", size=4)
    path = tmp_path / "ds.parquet"
    D.write_parquet(p.test, path)
    table, meta = artefacts.read_artefact(path, "distribution")
    meta = {k: v for k, v in meta.items() if k not in ("kind", "bbrlcore_version")}
    meta["family"]["params"]["size"] = 1
    artefacts.write_artefact(path, table, "distribution", meta)
    with pytest.raises(BBRLError, match=rf"^{path}: embedded distribution: family deepsea: "
                                        r"size=1: must be an integer") as exc:
        D.load_test(str(path))
    assert "\n" not in str(exc.value)


# ---------------------------------------------------------------------------------------
# Configuration


def _cfg(experiments, **extra) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["experiments"] = experiments
    cfg["algorithms"] = {"random": {}, "e-greedy": {"epsilon": [0.1]}, "optimal": {}}
    cfg.update(extra)
    return cfg


def test_family_experiments_expand_ladders_and_priors():
    plan = P.load(_cfg([
        {"test": {"family": "deepsea", "size": [4, 6]}, "prior": ["accurate", "uniform"]},
        {"test": {"family": "riverswim", "size": 8, "p_rand": "1e-2"}, "prior": "uniform"},
        {"test": "GC", "prior": ["accurate", "uniform"]},
        {"test": "Chain-7", "prior": "UChain-7"},
    ]))
    assert [e.name for e in plan.experiments] == [
        "DeepSea-4-DeepSea-4", "DeepSea-6-DeepSea-6", "DeepSea-4-UDeepSea-4",
        "DeepSea-6-UDeepSea-6", "RiverSwim-8-prand0.01-URiverSwim-8-prand0.01",
        "GC-GC", "GC-UGC", "Chain-7-UChain-7"]
    assert plan.tests == sorted(["DeepSea-4", "DeepSea-6", "RiverSwim-8-prand0.01", "GC",
                                 "Chain-7"])
    # the prior role is an FDM; the test role of a drawn structure is the family's
    assert all(isinstance(plan.dists[d], D.FDMDistribution) for d in plan.distributions)
    assert plan.dists["DeepSea-4"].same_as(F.make("deepsea", size=4).prior("accurate"))
    assert plan.test_distribution("DeepSea-4").same_as(F.make("deepsea", size=4).test)
    assert plan.test_distribution("Chain-7") is plan.dists["Chain-7"]
    assert sorted(plan.test_dists) == ["DeepSea-4", "DeepSea-6"]
    # what the workflow's distribution rule imports: the name itself
    assert plan.distribution_spec("UDeepSea-4") == "UDeepSea-4"


BAD_FAMILY_CONFIGS = {
    "unknown family": (
        {"test": {"family": "deepsee", "size": 5}, "prior": "uniform"},
        "experiments[0].test.family=deepsee: unknown problem family 'deepsee'"),
    "unknown parameter": (
        {"test": {"family": "deepsea", "colour": 5}, "prior": "uniform"},
        "experiments[0].test.colour: unknown parameter of family deepsea (parameters: "
        "size, form, p_rand, concentration, reward_noise)"),
    "size out of range": (
        {"test": {"family": "deepsea", "size": 1}, "prior": "uniform"},
        "experiments[0].test.size=1: family deepsea: must be an integer in [2, 70]"),
    "size in a ladder": (
        {"test": {"family": "deepsea", "size": [4, 100]}, "prior": "uniform"},
        "experiments[0].test.size[1]=100: family deepsea: must be an integer in [2, 70] "
        "(size 100 means 10,002 states"),
    "bad value": (
        {"test": {"family": "riverswim", "p_rand": "often"}, "prior": "uniform"},
        "experiments[0].test.p_rand=often: family riverswim: must be a number in [0, 1)"),
    "a name that does not identify it": (
        {"test": {"family": "riverswim", "p_rand": 0.1000000000000001}, "prior": "uniform"},
        "experiments[0].test.p_rand=0.1000000000000001: family riverswim: names keep 12 "
        "significant digits, so its name would say prand0.1, another value: round it"),
    "empty ladder": (
        {"test": {"family": "riverswim", "size": []}, "prior": "uniform"},
        "experiments[0].test.size: empty ladder"),
    "no family": (
        {"test": {"size": 5}, "prior": "uniform"},
        "experiments[0].test: a problem family test is {family: NAME"),
    "bad name": (
        {"test": "DeepSea-1", "prior": "accurate"},
        "experiments[0].test=DeepSea-1: family deepsea: size=1: must be an integer"),
    "bad prior": (
        {"test": {"family": "deepsea", "size": 5}, "prior": ["accurate", "informed"]},
        "experiments[0].prior[1]=informed: unknown distribution"),
    "shape": (
        {"test": {"family": "deepsea", "size": 5}, "prior": "GC"},
        "experiments[0]: test DeepSea-5 has 27 states and 2 actions, prior GC has 5 and 3"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FAMILY_CONFIGS))
def test_bad_family_experiments_are_one_line_naming_the_key(kind):
    entry, expected = BAD_FAMILY_CONFIGS[kind]
    with pytest.raises(BBRLError) as exc:
        P.load(_cfg([entry]))
    msg = str(exc.value)
    assert msg.startswith("config.yaml: ") and expected in msg and "\n" not in msg, msg


def test_duplicates_uniform_of_a_declared_test_and_declared_family_files(tmp_path):
    with pytest.raises(BBRLError, match=r"experiments\[1\]: experiment DeepSea-4-UDeepSea-4 "
                                        "listed twice"):
        P.load(_cfg([{"test": {"family": "deepsea", "size": [4, 5]}, "prior": "uniform"},
                     {"test": "DeepSea-4", "prior": "UDeepSea-4"}]))
    D.write_parquet(D.builtin("GC"), tmp_path / "mine.parquet")
    with pytest.raises(BBRLError, match=r"experiments\[0\].prior=uniform: test Mine has no "
                                        "uniform prior"):
        P.load(_cfg([{"test": "Mine", "prior": "uniform"}],
                    distributions={"Mine": str(tmp_path / "mine.parquet")}))
    D.write_parquet(F.make("deepsea", size=4).test, tmp_path / "ds.parquet")
    with pytest.raises(BBRLError, match=r"distributions.Deep: .* holds the problem family test "
                                        r"distribution DeepSea-4: name it in experiments"):
        P.load(_cfg([{"test": "GC", "prior": "GC"}],
                    distributions={"Deep": str(tmp_path / "ds.parquet")}))


def test_experiment_names_identify_experiments(monkeypatch):
    """Two (test, prior) pairs with one name are refused (impossible with valid names,
    test_experiment_names_split_one_way_only; the check guards the results' paths)."""
    from bbrlcore.plan.model import Experiment

    monkeypatch.setattr(Experiment, "name", property(lambda self: "same"))
    with pytest.raises(BBRLError, match=r"experiments\[0\]: experiment GC x UGC and GC x GC "
                                        "would both be named same"):
        P.load(_cfg([{"test": "GC", "prior": ["accurate", "uniform"]}]))


def test_families_preset_and_its_schema():
    import jsonschema

    plan = P.load(ROOT / "config.yaml", {"preset": "families"})
    c = plan.config
    assert c["n_mdps"] == 100
    problems = {F.parse_name(t)[0].name for t in plan.tests}
    assert {"deepsea", "riverswim", "chain", "taxi", "frozenlake"} <= problems
    paper = {"random", "e-greedy", "soft-max", "opps-ds", "bamcp", "bfs3", "sboss", "beb",
             "optimal"}
    assert {a.algorithm for a in plan.agents} == paper | {"psrl", "boss", "bolt", "mbie-eb"}
    for t in plan.tests:  # both priors on every size of every ladder
        assert {e.prior for e in plan.experiments if e.test == t} == {t, "U" + t}
    for e in plan.experiments:  # every algorithm on every family (DeepSea's costs too)
        algs = {a.algorithm for a in plan.agents_of(e)}
        assert algs == paper | {"psrl", "boss", "bolt", "mbie-eb"}, e.name
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    jsonschema.validate(c, schema)
    bad = copy.deepcopy(c)
    bad["experiments"][0]["test"] = {"size": [4]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


# ---------------------------------------------------------------------------------------
# Cost model


@pytest.mark.parametrize("name", ["deepsea", "taxi"])
def test_every_builtin_cost_model_takes_a_drawn_family_test(name):
    from bbrlcore import agents

    p = F.make(name, size=4)
    test = p.test
    assert not isinstance(test, D.FDMDistribution)
    view = cost.as_fdm(test)
    assert np.array_equal(view.theta > 0, F.support(test))
    assert np.allclose(view.mean_model(), test.mean_model())
    cheap = {"e-greedy": {"epsilon": 0.1}, "soft-max": {"tau": 1.0}, "beb": {"beta": 1.0},
             "sboss": {"epsilon": 1.0, "delta": 1.0}, "bamcp": {"K": 10, "D": 5},
             "bfs3": {"K": 4, "C": 2, "D": 5}, "opps-ds": {"formula_set": "F2", "n_draws": 5},
             "boss": {"K": 2, "B": 2}, "bolt": {"eta": 1.0}, "mbie-eb": {"beta": 1.0},
             "formula": {"formula": "Q0"}}
    for alg in agents.BUILTINS:  # the built-ins (an installed plugin has its own params)
        params = cheap.get(alg, {})
        for kind in ("accurate", "uniform"):
            f = cost.features(alg, params, p.prior(kind), test, 0.95, 20)
            assert f and all(np.isfinite(v) and v >= 0 for v in f.values()), (alg, f)
        s = cost.model().seconds_per_trajectory(alg, params, test, 20, p.prior("uniform"))
        assert 0 < s < 60, (alg, s)


def test_plugins_are_probed_on_the_family_test_itself(tmp_path, monkeypatch):
    """A plugin's cost probe draws its test MDPs from the family's test distribution (the
    drawn structure), not from the accurate prior that stands for it in the cost model."""
    from bbrlcore.plan import probe

    plugin = f"{ROOT / 'examples' / 'my_agents.py'}:MyGreedy"
    plan = P.load(_cfg([{"test": {"family": "deepsea", "size": 3}, "prior": "uniform"}],
                       algorithms={plugin: {"epsilon": [0.1]}}, horizon=10))
    drawn = []
    real = E.new_test_set
    monkeypatch.setattr(E, "new_test_set",
                        lambda t, *a, **k: drawn.append(t) or real(t, *a, **k))
    probe.ensure(plan, tmp_path, progress=False, isolate=False)  # (drawn: seen here)
    assert len(drawn) == 1 and drawn[0].same_as(F.make("deepsea", size=3).test)
    rows = [r for f in (tmp_path / "probes").rglob("*.json")
            for r in json.loads(f.read_text())["rows"]]
    assert {(r["test"], r["prior"]) for r in rows if "ms_per_trajectory" in r} == {
        ("DeepSea-3", "UDeepSea-3")}


# ---------------------------------------------------------------------------------------
# Command line


def bbrl(cmd, args, env, cwd):
    return subprocess.run(cmd + args, capture_output=True, text=True, env=env, cwd=cwd)


def test_bbrl_families_lists_every_family_with_its_parameters(bbrl_cmd, env_with_cache,
                                                               tmp_path):
    r = bbrl(bbrl_cmd, ["families"], env_with_cache, tmp_path)
    assert r.returncode == 0, r.stderr
    for spec in F.FAMILIES.values():
        assert f"\n{spec.name}: {spec.display} " in "\n" + r.stdout
        for p in spec.params:
            assert f"  {p.name:14s} default {fmt(p.default):6s} {p.range_text()}" in r.stdout
            assert p.doc in r.stdout
    assert "default DeepSea-10: 102 states, 2 actions; structure drawn per test MDP" in r.stdout
    assert "default RiverSwim-6: 6 states, 2 actions; fixed structure" in r.stdout
    r = bbrl(bbrl_cmd, ["families", "deepsee"], env_with_cache, tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "unknown problem family 'deepsee'" in r.stderr


def test_bbrl_distribution_new_writes_tests_and_priors(bbrl_cmd, env_with_cache, tmp_path):
    run = lambda args: bbrl(bbrl_cmd, args, env_with_cache, tmp_path)  # noqa: E731
    r = run(["distribution", "new", "deepsea", "--param", "size=5", "--param", "p_rand=0.1",
             "-o", "ds.parquet"])
    assert r.returncode == 0, r.stderr
    assert "DeepSea-5-prand0.1: test distribution of family deepsea" in r.stdout
    p = F.make("deepsea", size=5, p_rand=0.1)
    assert D.load_test(str(tmp_path / "ds.parquet")).same_as(p.test)
    for kind in ("accurate", "uniform"):
        r = run(["distribution", "new", "deepsea", "--param", "size=5", "--param",
                 "p_rand=0.1", "--prior", kind, "-o", f"{kind}.parquet"])
        assert r.returncode == 0, r.stderr
        assert D.read_parquet(tmp_path / f"{kind}.parquet").same_as(p.prior(kind))
    # the paper's defaults: byte-equal to the built-in's file
    assert run(["distribution", "new", "gc", "-o", "gc.parquet"]).returncode == 0
    assert run(["distribution", "import", "GC", "-o", "ref.parquet"]).returncode == 0
    assert (tmp_path / "gc.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    # it works wherever a distribution file works: a test set, a prior
    r = run(["experiment", "new", "--test", "ds.parquet", "--n-mdps", "3", "--horizon", "20",
             "-o", "ts.parquet"])
    assert r.returncode == 0, r.stderr
    ts = E.read_test_set(tmp_path / "ts.parquet")
    assert ts.test.same_as(p.test)
    assert np.array_equal(ts.mdps, E.new_test_set(p.test, 3, 0.95, 20, 0).mdps)
    r = run(["train", "--agent", "e-greedy", "--param", "epsilon=0.1", "--prior", "ds.parquet",
             "-o", "agent.parquet"])
    assert r.returncode == 0, r.stderr
    assert E.read_agent(tmp_path / "agent.parquet").prior.same_as(p.prior("accurate"))
    r = run(["run", "--experiment", "ts.parquet", "--agent", "agent.parquet", "-q",
             "-o", "run.parquet"])
    assert r.returncode == 0, r.stderr
    assert set(pl.read_parquet(tmp_path / "run.parquet")["experiment"]) == {
        "DeepSea-5-prand0.1-DeepSea-5-prand0.1"}
    # by name, too
    r = run(["experiment", "new", "--test", "DeepSea-5-prand0.1", "--n-mdps", "3",
             "--horizon", "20", "-o", "ts2.parquet"])
    assert r.returncode == 0, r.stderr
    assert np.array_equal(E.read_test_set(tmp_path / "ts2.parquet").mdps, ts.mdps)


@pytest.mark.parametrize(("args", "expected"), [
    (["deepsea", "--param", "size=1"], "--param size=1: family deepsea: must be an integer in "
                                       "[2, 70]"),
    (["deepsea", "--param", "size=big"], "--param size=big: family deepsea: expected a number"),
    (["deepsea", "--param", "colour=3"], "--param: family deepsea: unknown parameter 'colour'"),
    (["deepsea", "--param", "size"], "--param 'size': expected NAME=VALUE"),
    (["deepsee"], "unknown problem family 'deepsee'"),
    (["riverswim", "--param", "p_rand=0.1000000000001"], "--param p_rand=0.1000000000001: "
     "family riverswim: names keep 12 significant digits, so its name would say prand0.1"),
])
def test_bbrl_distribution_new_bad_input_is_one_line(bbrl_cmd, env_with_cache, tmp_path,
                                                     args, expected):
    r = bbrl(bbrl_cmd, ["distribution", "new", *args, "-o", "x.parquet"], env_with_cache,
             tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert expected in r.stderr
    assert not (tmp_path / "x.parquet").exists()


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.floats(0.0, 1.0, exclude_max=True),
                 st.floats(0.0, 1.0).map(lambda v: float(format(v, ".12g"))),
                 st.floats(0.0, 1.0).map(lambda v: v + 1e-13)))
def test_bbrl_distribution_new_names_exactly_its_parameters_or_refuses(p_rand):
    """The command line applies the configuration's rule (issue #33): the file it writes is
    named by exactly the parameter given (its name parses back to it, and its test set is
    the one that name gives), or the value is refused in one line naming the parameter
    and nothing is written."""
    import contextlib
    import io
    import os
    import tempfile

    from bbrlcore.cli import main

    with tempfile.TemporaryDirectory() as d:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["distribution", "new", "riverswim", "--param", f"p_rand={p_rand!r}",
                       "-o", os.path.join(d, "r.parquet")])
        if rc != 0:
            assert rc == 2 and err.getvalue().count("\n") == 1, err.getvalue()
            assert err.getvalue().startswith(f"bbrl: error: --param p_rand={p_rand!r}: "
                                             "family riverswim: "), err.getvalue()
            assert os.listdir(d) == []
            return
        d_file = D.load_test(os.path.join(d, "r.parquet"))
        parsed = F.parse_name(d_file.short_name)
        assert parsed is not None and parsed[1]["p_rand"] == p_rand, d_file.short_name
        assert d_file.same_as(F.from_name(d_file.short_name)[0].test)


def test_bbrl_hardness_prints_and_writes_the_measures(bbrl_cmd, env_with_cache, tmp_path):
    a = E.new_test_set(F.make("riverswim", size=5).test, 4, 0.9, 20, 1)
    b = E.new_test_set(F.make("deepsea", size=4, p_rand=0.1).test, 3, 0.9, 20, 2)
    E.write_test_set(a, tmp_path / "a.parquet")
    E.write_test_set(b, tmp_path / "b.parquet")
    r = bbrl(bbrl_cmd, ["hardness", "a.parquet", "b.parquet", "--per-mdp", "-o", "h.parquet",
                        "--summary", "s.parquet"], env_with_cache, tmp_path)
    assert r.returncode == 0, r.stderr
    table = pl.read_parquet(tmp_path / "h.parquet")
    expected = pl.concat([H.hardness_table(a), H.hardness_table(b)])
    assert table.columns == ["test", "mdp_index", "optimal_value", "diameter",
                             "unreachable_states", "value_norm", "suboptimality_gaps"]
    assert table.equals(expected)
    summary = pl.read_parquet(tmp_path / "s.parquet")
    assert summary.equals(H.hardness_summary(expected))
    meta = artefacts.read_meta(tmp_path / "h.parquet", "hardness")
    assert meta["test_sets"] == ["a.parquet", "b.parquet"]
    # what reproduces the table: the test sets' seeds and gamma, the version
    assert meta["seeds"] == [1, 2] and meta["gamma"] == [0.9, 0.9]
    assert meta["tests"] == ["RiverSwim-5", "DeepSea-4-prand0.1"]
    assert meta["bbrlcore_version"] == bbrlcore.__version__
    assert artefacts.read_meta(tmp_path / "s.parquet", "hardness-summary")["seeds"] == [1, 2]
    lines = r.stdout.splitlines()
    # the header says where the measures are taken; then the table
    assert lines[0].startswith("Measures on the states reachable from each test set's "
                               "initial state")
    lines = lines[2:]
    assert lines[0].split() == table.columns
    assert len([ln for ln in lines if ln.strip().startswith(("RiverSwim-5 ", "DeepSea-4-prand0.1 "))
                and len(ln.split()) == 7]) == 7  # one line per MDP
    for test in ("RiverSwim-5", "DeepSea-4-prand0.1"):
        d = summary.filter((pl.col("test") == test) & (pl.col("measure") == "diameter"))
        assert any(ln.split()[:2] == [test, "diameter"]
                   and ln.split()[5] == f"{d['median'][0]:.4g}" for ln in lines), test
    # the same test distribution twice is refused (the tables are keyed by it)
    r = bbrl(bbrl_cmd, ["hardness", "a.parquet", "a.parquet"], env_with_cache, tmp_path)
    assert r.returncode == 2 and "a test set of RiverSwim-5 again" in r.stderr


def test_bbrl_hardness_at_gamma_one_and_close_to_one(bbrl_cmd, env_with_cache, tmp_path):
    """γ = 1: the value measures are undefined (said, left empty) and the artefact
    records γ = 1.0, not null; γ = 0.9999999 is solved exactly (value iteration stopped
    at its sweep cap printed 8.09e5 for 1.194e6); a γ float64 cannot resolve is refused
    in one line, nothing written."""
    p = F.make("riverswim", size=6, p_rand=0.1).test
    E.write_test_set(E.new_test_set(p, 2, 1.0, 20, 3), tmp_path / "one.parquet")
    r = bbrl(bbrl_cmd, ["hardness", "one.parquet", "--per-mdp", "-o", "h1.parquet"],
             env_with_cache, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "RiverSwim-6-prand0.1: at gamma = 1 the optimal value, value norm and " \
           "sub-optimality gaps are undefined" in r.stdout
    table, meta = artefacts.read_artefact(tmp_path / "h1.parquet", "hardness")
    assert meta["gamma"] == [1.0] and meta["test_set_gamma"] == [1.0]
    assert meta["seeds"] == [3] and meta["gamma_option"] is None
    assert table["optimal_value"].null_count() == 2 and table["diameter"].is_finite().all()
    ts = E.new_test_set(p, 1, 0.9999999, 20, 0)
    E.write_test_set(ts, tmp_path / "close.parquet")
    r = bbrl(bbrl_cmd, ["hardness", "close.parquet", "--per-mdp", "-o", "h2.parquet"],
             env_with_cache, tmp_path)
    assert r.returncode == 0, r.stderr
    v = pl.read_parquet(tmp_path / "h2.parquet")["optimal_value"][0]
    assert v == pytest.approx(H.measures(ts.dense(0), ts.test.reward, 0.9999999).optimal_value,
                              rel=1e-9) and v > 1.1e6
    E.write_test_set(E.new_test_set(p, 1, 1 - 1e-15, 20, 0), tmp_path / "closer.parquet")
    r = bbrl(bbrl_cmd, ["hardness", "closer.parquet", "-o", "h3.parquet"], env_with_cache,
             tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "test set RiverSwim-6-prand0.1, MDP 0: the optimal values at gamma=" in r.stderr
    assert "too close to 1" in r.stderr and not (tmp_path / "h3.parquet").exists()


# ---------------------------------------------------------------------------------------
# gym


def test_test_set_env_default_prior_is_the_accurate_prior():
    pytest.importorskip("gymnasium")
    from bbrlcore.protocol.gym import TestSetEnv

    p = F.make("deepsea", size=4)
    env = TestSetEnv(E.new_test_set(p.test, 2, 0.95, 10, seed=0))
    assert isinstance(env.prior, D.FDMDistribution) and env.prior.same_as(p.prior("accurate"))
    gc = D.builtin("GC")
    assert TestSetEnv(E.new_test_set(gc, 2, 0.95, 10, seed=0)).prior is gc


# ---------------------------------------------------------------------------------------
# Report: problems and hardness


@pytest.fixture(scope="module")
def ladder_results():
    """Runs of Random, Optimal and e-Greedy on two small ladders with both priors, and
    their test sets."""
    from bbrlcore.analysis.constraints import with_family
    from bbrlcore.analysis.results import merge_tables, summary_table

    tables, sets = [], []
    for fam, sizes in (("riverswim", (3, 5)), ("deepsea", (3, 4))):
        for size in sizes:
            p = F.make(fam, size=size)
            ts = E.new_test_set(p.test, 4, 0.9, 15, 1)
            sets.append(ts)
            for kind in ("accurate", "uniform"):
                for alg, params in (("random", {}), ("optimal", {}),
                                    ("e-greedy", {"epsilon": "0.1"}),
                                    ("e-greedy", {"epsilon": "0.5"})):
                    agent = E.train_agent(alg, params, p.prior(kind), progress=False)
                    tables.append(E.run_agent(ts, agent, progress=False))
    merged = merge_tables(tables)
    summary = with_family(summary_table(merged))
    h = pl.concat([H.hardness_table(ts) for ts in sets])
    return merged, summary, h, sets


def test_problem_tables(ladder_results):
    from bbrlcore.report import problems as PR

    _, summary, h, _ = ladder_results
    hmap = PR.hardness_map(h, summary)
    assert hmap["test"].to_list() == ["RiverSwim-3", "RiverSwim-5", "DeepSea-3", "DeepSea-4"]
    assert hmap["problem"].to_list() == ["RiverSwim", "RiverSwim", "DeepSea", "DeepSea"]
    assert hmap["size"].to_list() == [3, 5, 3, 4]
    for r in hmap.iter_rows(named=True):
        g = h.filter(pl.col("test") == r["test"])
        assert r["diameter"] == g["diameter"].median()
        assert r["value_norm"] == g["value_norm"].median()
        assert r["suboptimality_gaps"] == g["suboptimality_gaps"].median()
        assert r["optimal_value"] == pytest.approx(g["optimal_value"].mean())
        assert r["experiments"] == f"{r['test']}-{r['test']}, {r['test']}-U{r['test']}"
    scores = PR.score_table(summary, hmap, ["Random", "e-Greedy", "Optimal"])
    assert scores.height == 8 * 3  # experiments x algorithms
    for r in scores.iter_rows(named=True):  # the algorithm's best agent
        s = summary.filter((pl.col("experiment") == r["experiment"])
                           & (pl.col("family") == r["family"]))
        best = s.sort("mean", descending=True).row(0, named=True)
        assert (r["agent"], r["normalised_score"]) == (best["agent"], best["normalised_score"])
        assert r["prior_kind"] == ("accurate" if r["prior"] == r["test"] else "uniform")
        assert r["ladder"] == f"{r['problem']}, {r['prior_kind']} prior"
    ladder = PR.ladder_table(scores)
    assert PR.ladders(ladder) == ["DeepSea, accurate prior", "DeepSea, uniform prior",
                                  "RiverSwim, accurate prior", "RiverSwim, uniform prior"]
    assert ladder.height == scores.height
    assert PR.problem_of("Grid-7-c2") == {"problem": "Grid", "size": 7,
                                         "setting": "concentration=2"}
    assert PR.prior_kind("GC", "UGC") == "uniform" and PR.prior_kind("GC", "UGDL") == "other"


def test_problem_figures_draw_exactly_their_tables(ladder_results):
    from bbrlcore.report import figures
    from bbrlcore.report import interactive as I
    from bbrlcore.report import problems as PR

    _, summary, h, _ = ladder_results
    fams = ["Random", "e-Greedy", "Optimal"]
    styles = figures.style_map(fams)
    hmap = PR.hardness_map(h, summary)
    scores = PR.score_table(summary, hmap, fams)
    ladder = PR.ladder_table(scores)
    fig = json.loads(I.to_json(I.hardness_map(hmap)))
    for tr in fig["data"]:
        g = hmap.filter(pl.col("problem") == tr["name"])
        assert tr["x"] == g["value_norm"].to_list() and tr["y"] == g["diameter"].to_list()
        assert tr["text"] == g["test"].to_list()
    assert sorted(tr["name"] for tr in fig["data"]) == ["DeepSea", "RiverSwim"]
    fig = json.loads(I.to_json(I.score_vs_hardness(scores, styles)))
    assert [tr["name"] for tr in fig["data"]] == fams
    menu = fig["layout"]["updatemenus"][0]["buttons"]
    for k, tr in enumerate(fig["data"]):
        g = scores.filter(pl.col("family") == tr["name"])
        assert tr["y"] == g["normalised_score"].to_list()
        assert tr["x"] == g["diameter"].to_list()
        for b, m in zip(menu, PR.MEASURES, strict=True):
            assert b["args"][0]["x"][k] == g[m].to_list()
    fig = json.loads(I.to_json(I.score_vs_size(ladder, styles)))
    assert len(fig["data"]) == 4 * 3
    for tr in fig["data"]:
        axis = tr["xaxis"][1:] or "1"
        name = PR.ladders(ladder)[int(axis) - 1]
        g = ladder.filter((pl.col("ladder") == name) & (pl.col("family") == tr["name"]))
        assert tr["x"] == g["size"].to_list() and tr["y"] == g["normalised_score"].to_list()
    assert sum(tr["showlegend"] for tr in fig["data"]) == 3
    # the static figures draw the same tables
    for f in (figures.hardness_map_figure(hmap), figures.score_vs_hardness_figure(scores, styles),
              figures.score_vs_size_figure(ladder, styles)):
        assert f.axes
        figures.plt.close(f)


def test_report_writes_the_problems_section(ladder_results, tmp_path):
    from bbrlcore import report
    from bbrlcore.analysis.results import summary_table

    merged, _, _, sets = ladder_results
    index = report.build(merged, summary_table(merged), tmp_path, sets, pdf=False,
                         bootstrap_resamples=200)
    html = index.read_text()
    for fig in ("fig-hardness-map", "fig-score-hardness", "fig-score-size"):
        assert f'id="{fig}"' in html
    for name in ("hardness-map", "score-hardness", "score-size"):
        assert (tmp_path / "data" / f"{name}.parquet").is_file()
        assert (tmp_path / "figures" / f"{name}.png").is_file()
    assert "problems.fig_map" not in (tmp_path / "report.tex").read_text()
    assert "figures/hardness-map.pdf" in (tmp_path / "report.tex").read_text()
    scores = pl.read_parquet(tmp_path / "data" / "score-hardness.parquet")
    assert set(scores["experiment"]) == set(merged["experiment"])
    # the test sets carry their reference values: each algorithm's regret is placed
    # against hardness and size too (continuing: per step, against the optimal gain)
    for fig in ("fig-regret-hardness", "fig-regret-size"):
        assert f'id="{fig}"' in html
    assert scores["normalised_regret"].null_count() == 0
    random = scores.filter(pl.col("family") == "Random")["normalised_regret"]
    assert (random > scores.filter(pl.col("family") == "Optimal")["normalised_regret"]).all()
    assert "figures/regret-hardness.pdf" in (tmp_path / "report.tex").read_text()


# ---------------------------------------------------------------------------------------
# Report: long and episodic interactions (issue 34): regret against time along a ladder,
# bsuite's episodes to learn against size, the regret against hardness


@pytest.fixture(scope="module")
def episodic_ladder():
    """An episodic DeepSea ladder (sizes 3 and 4, 40 episodes, 4 MDPs, uniform prior;
    test sets with their reference values): Random, Optimal for the sum of rewards,
    e-Greedy and PSRL; the merged runs, the test sets and their curves."""
    from bbrlcore.analysis import curves as C
    from bbrlcore.analysis.results import merge_tables

    tables, sets = [], []
    for size in (3, 4):
        p = F.make("deepsea", size=size)
        ts = E.new_test_set(p.test, 4, 1.0, 40 * size, 1, episode_length=size)
        sets.append(ts)
        for alg, params in (("random", {}), ("optimal", {"criterion": "undiscounted"}),
                            ("e-greedy", {"epsilon": "0.1"}), ("psrl", {})):
            agent = E.train_agent(alg, params, p.prior("uniform"), horizon=ts.horizon,
                                  progress=False)
            tables.append(E.run_agent(ts, agent, progress=False))
    merged = merge_tables(tables)
    return merged, sets, C.curves(merged, "undiscounted", n_resamples=200)


def test_regret_and_episodes_to_learn_figures_draw_exactly_their_tables(episodic_ladder):
    from bbrlcore.analysis import exploration as X
    from bbrlcore.analysis.constraints import with_family
    from bbrlcore.analysis.results import summary_table
    from bbrlcore.report import figures
    from bbrlcore.report import interactive as I
    from bbrlcore.report import problems as PR

    merged, sets, c = episodic_ladder
    table, ds = c.tables["curves"], c.tables["deepsea"]
    fams = ["Random", "e-Greedy", "PSRL", "Optimal"]
    styles = figures.style_map(fams)
    exps = sorted(table["experiment"].unique().to_list(), key=lambda e: "4" in e)
    panels = [(exps[0], "size 3"), (exps[1], "size 4")]
    fig = json.loads(I.to_json(I.regret_curves(table, panels, styles)))
    lines = [tr for tr in fig["data"] if tr["meta"][2] == "line"]
    # one line per family but Optimal, per size; x the episodes, y the table's regret
    assert sorted((tr["meta"][0], tr["meta"][1]) for tr in lines) == sorted(
        (e, f) for e in exps for f in fams if f != "Optimal")
    for tr in lines:
        g = table.filter((pl.col("experiment") == tr["meta"][0])
                         & (pl.col("family") == tr["meta"][1])).sort("t")
        assert tr["x"] == g["episodes"].to_list()
        assert tr["y"] == g["normalised_regret"].to_list()
        assert tr["xaxis"] == ("x" if tr["meta"][0] == exps[0] else "x2")
    for ax in ("xaxis", "yaxis", "xaxis2", "yaxis2"):
        assert fig["layout"][ax]["type"] == "log"
    assert fig["layout"]["yaxis2"]["matches"] == "y"  # one y-range
    # Random's regret grows by about 1 an episode, PSRL's flattens
    last = {tr["meta"][1]: tr["y"][-1] for tr in lines if tr["meta"][0] == exps[1]}
    assert last["Random"] > 30 and last["PSRL"] < last["Random"] / 2
    # bsuite's episodes to learn: each family's learning episode (its last episode when
    # it did not learn), against the size; 2^N beside them
    fig = json.loads(I.to_json(I.episodes_to_learn(ds, styles, title="DeepSea")))
    named = {tr["name"]: tr for tr in fig["data"]}
    assert set(named) == set(ds["family"]) | {"2^N (dithering)"}
    for fam, tr in named.items():
        if fam == "2^N (dithering)":
            assert tr["x"] == [3, 4] and tr["y"] == [8.0, 16.0]
            continue
        g = ds.filter(pl.col("family") == fam).sort("size")
        assert tr["x"] == g["size"].to_list()
        assert tr["y"] == [le if le is not None else e for le, e in
                           zip(g["learning_episode"], g["episodes"], strict=True)]
        assert tr["marker"]["symbol"] == ["circle" if le is not None else "x"
                                          for le in g["learning_episode"]]
    assert fig["layout"]["xaxis"]["type"] == fig["layout"]["yaxis"]["type"] == "log"
    # the regret against hardness: each algorithm's best agent's mean normalised regret
    summary = with_family(summary_table(merged, "undiscounted"))
    hmap = PR.hardness_map(pl.concat([H.hardness_table(ts) for ts in sets]), summary)
    scores = PR.score_table(summary, hmap, fams, X.regret_summary(merged))
    nr = X.normalised_regrets(merged)
    for r in scores.iter_rows(named=True):
        v = nr.filter((pl.col("experiment") == r["experiment"])
                      & (pl.col("agent") == r["agent"]))["normalised_regret"]
        assert r["normalised_regret"] == pytest.approx(v.mean(), abs=1e-12)
        assert (r["normalised_regret_low"] <= r["normalised_regret"] + 1e-12
                <= r["normalised_regret_high"] + 2e-12)
    reg = PR.regret_view(scores)
    assert reg["normalised_score"].to_list() == scores["normalised_regret"].to_list()
    fig = json.loads(I.to_json(I.score_vs_hardness(reg, styles, ylabel=figures.REGRET_LABEL,
                                                   what="normalised regret")))
    for tr in fig["data"]:
        assert tr["y"] == reg.filter(pl.col("family") == tr["name"])["normalised_regret"].to_list()
    assert "regret" in fig["layout"]["yaxis"]["title"]["text"]
    # the static figures: log axes, one panel per size
    f = figures.regret_curves_figure(table, panels, styles)
    assert len(f.axes) == 2 and all(a.get_xscale() == a.get_yscale() == "log" for a in f.axes)
    figures.plt.close(f)
    f = figures.episodes_to_learn_figure(ds, styles)
    assert f.axes[0].get_xscale() == f.axes[0].get_yscale() == "log"
    figures.plt.close(f)


def test_signed_regret_is_drawn_on_a_symmetric_log_axis(episodic_ladder):
    """Issue 41: a near-optimal agent's realised regret is negative for a while (UCRL2's
    normalised regret -200.9 at t = 10^5 on RiverSwim-12) and was drawn on a log y axis
    (clipped to a floor). With a value of 0 or below the regret figures use a symmetric
    log axis (linear within ±1): the static one matplotlib's symlog, the interactive one
    the same positions (plotly has no such axis) with ticks and hover of the real values;
    positive regret keeps its log axis."""
    from bbrlcore.report import figures
    from bbrlcore.report import interactive as I

    _, _, c = episodic_ladder
    table = c.tables["curves"]
    exps = sorted(table["experiment"].unique().to_list(), key=lambda e: "4" in e)
    panels = [(exps[0], "size 3"), (exps[1], "size 4")]
    styles = figures.style_map(["Random", "e-Greedy", "PSRL", "Optimal"])
    shift = pl.when(pl.col("family") == "PSRL").then(200.0).otherwise(0.0)
    signed = table.with_columns(*(pl.col(col) - shift for col in (
        "normalised_regret", "normalised_regret_low", "normalised_regret_high")))
    positive = table.with_columns(*(pl.col(col).clip(lower_bound=1e-3) for col in (
        "normalised_regret", "normalised_regret_low", "normalised_regret_high")))
    assert I.regret_is_signed(signed, panels) and not I.regret_is_signed(positive, panels)
    fig = json.loads(I.to_json(I.regret_curves(signed, panels, styles)))
    assert fig["layout"]["yaxis"]["type"] == fig["layout"]["yaxis2"]["type"] == "linear"
    assert "symlog" in fig["layout"]["yaxis"]["title"]["text"]
    ticks = dict(zip(fig["layout"]["yaxis"]["ticktext"], fig["layout"]["yaxis"]["tickvals"],
                     strict=True))
    assert ticks["0"] == 0.0 and ticks["1"] == 1.0 and ticks["-100"] == -3.0
    for tr in (t for t in fig["data"] if t["meta"][2] == "line"):
        g = signed.filter((pl.col("experiment") == tr["meta"][0])
                          & (pl.col("family") == tr["meta"][1])).sort("t")
        real = g["normalised_regret"].to_list()
        assert tr["y"] == [I.symlog(v) for v in real]
        assert [cd[2] for cd in tr["customdata"]] == real
        assert "customdata[2]" in tr["hovertemplate"]
    psrl = [v for t in fig["data"] if t["meta"][1:] == ["PSRL", "line"] for v in t["y"]]
    assert max(psrl) < -2  # (below -100 on the axis: shown, not clipped)
    f = figures.regret_curves_figure(signed, panels, styles)
    assert all(a.get_yscale() == "symlog" and a.get_xscale() == "log" for a in f.axes)
    assert min(min(line.get_ydata()) for a in f.axes for line in a.get_lines()) < -150
    figures.plt.close(f)
    fig = json.loads(I.to_json(I.regret_curves(positive, panels, styles)))
    assert fig["layout"]["yaxis"]["type"] == "log" and "ticktext" not in fig["layout"]["yaxis"]
    f = figures.regret_curves_figure(positive, panels, styles)
    assert all(a.get_yscale() == "log" for a in f.axes)
    figures.plt.close(f)


def test_report_of_an_episodic_ladder_shows_regret_and_episodes_to_learn(episodic_ladder,
                                                                         tmp_path):
    from bbrlcore import report
    from bbrlcore.analysis.results import summary_table

    merged, sets, _ = episodic_ladder
    index = report.build(merged, summary_table(merged, "undiscounted"), tmp_path, sets,
                         pdf=False, bootstrap_resamples=200, score="undiscounted")
    html = index.read_text()
    for fig in ("fig-regret-ladder-1", "fig-deepsea-1", "fig-regret-hardness",
                "fig-regret-size", "fig-score-hardness"):
        assert f'id="{fig}"' in html, fig
    # bsuite's figure sits with the hardness figures, after them
    problems = html.index('id="problems"')
    assert problems < html.index('id="fig-deepsea-1"')
    assert html.index('id="fig-curves-ladder-1"') < html.index('id="fig-regret-ladder-1"')
    for name in ("regret-ladder-1", "deepsea-1", "regret-hardness", "regret-size"):
        assert (tmp_path / "figures" / f"{name}.png").is_file()
        assert (tmp_path / "figures" / f"{name}.pdf").is_file()
    tex = (tmp_path / "report.tex").read_text()
    for name in ("regret-ladder-1", "deepsea-1", "regret-hardness", "regret-size"):
        assert f"figures/{name}.pdf" in tex
    # every figure's data on disk: the curves, bsuite's table, the regret per experiment
    curves = pl.read_parquet(tmp_path / "data" / "curves.parquet")
    assert curves.filter(pl.col("family") == "PSRL")["normalised_regret"].null_count() == 0
    ds = pl.read_parquet(tmp_path / "data" / "curves-deepsea.parquet")
    assert sorted(set(ds["size"])) == [3, 4]
    summ = pl.read_parquet(tmp_path / "data" / "curves-deepsea-summary.parquet")
    for r in summ.iter_rows(named=True):
        assert f"<td>{r['family']}</td><td>{r['score']:.2f} [" in html
    # bsuite's score is of its sizes 10, 12, ..., 50: not given here, and said
    assert ("bsuite's DeepSea score: not given: no size of bsuite's sweep was run (sizes "
            "run: 3, 4)") in unescape(html)
    bs = pl.read_parquet(tmp_path / "data" / "curves-bsuite-deepsea-summary.parquet")
    assert bs["score"].null_count() == bs.height > 0
    scores = pl.read_parquet(tmp_path / "data" / "score-hardness.parquet")
    assert scores["normalised_regret"].null_count() == 0
    spec = html.split('id="fig-deepsea-1"><script type="application/json">')[1]
    spec = json.loads(spec.split("</script>")[0].replace("<\\/", "</"))
    psrl = next(tr for tr in spec["data"] if tr["name"] == "PSRL")
    assert psrl["x"] == ds.filter(pl.col("family") == "PSRL").sort("size")["size"].to_list()
