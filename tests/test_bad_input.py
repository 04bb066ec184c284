"""Bad input, one class per test (issue "Reliability, round two"): every case ends in one
line ``bbrl: error: ...`` naming the file or key, exit status 2, and no file left behind.

Commands run in-process (``bbrlcore.cli.main``), so an unexpected exception fails the test
with its traceback instead of hiding in a subprocess.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())


def bbrl(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, needle: str, *args: str) -> str:
    """Run a command that must be refused: rc 2, one line naming ``needle``."""
    rc, out, err = bbrl(capsys, *args)
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("bbrl: warning:")]
    assert rc == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith("bbrl: error: "), err
    assert needle in lines[0], lines[0]
    return lines[0]


def no_leftovers(d: Path) -> None:
    assert not list(d.rglob(".*.tmp")), list(d.rglob(".*.tmp"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small test set, an agent, a run table and a distribution file."""
    d = tmp_path_factory.mktemp("bad")
    ts = E.new_test_set(D.builtin("GC"), 6, 0.95, 30, seed=2)
    E.write_test_set(ts, d / "ts.parquet")
    agent = E.train_agent("e-greedy", {"epsilon": "0.1"}, D.builtin("GC"), progress=False)
    E.write_agent(agent, d / "agent.parquet")
    run = E.run_agent(ts, agent, progress=False)
    E.write_run(run, d / "run.parquet", {"agent": agent.agent_id})
    D.write_dat(D.builtin("GC"), d / "GC.dat")
    D.write_parquet(D.builtin("GC"), d / "GC.parquet")
    from bbrlcore.agents import formulas as F

    F.write_parquet(F.generate(2), d / "f2.parquet")
    return d


@pytest.fixture
def wd(files, tmp_path, monkeypatch):
    for f in files.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------------------------------
# Output paths


@pytest.mark.parametrize("args, needle", [
    (["run", "--experiment", "ts.parquet", "--agent", "agent.parquet", "-o", "ts.parquet"],
     "is the input ts.parquet (--experiment)"),
    (["run", "--experiment", "ts.parquet", "--agent", "agent.parquet", "-o", "./agent.parquet"],
     "is the input agent.parquet (--agent)"),
    (["distribution", "import", "GC.dat", "-o", "GC.dat"], "is the input GC.dat"),
    (["merge", "run.parquet", "ts.parquet", "-o", "run.parquet"], "is the input run.parquet"),
    (["summary", "run.parquet", "-o", "s.parquet", "--markdown", "s.parquet"],
     "the same file as -o s.parquet"),
    (["experiment", "new", "--test", "GC.parquet", "-o", "GC.parquet"], "is the input"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC.parquet",
      "-o", "GC.parquet"], "is the input GC.parquet (--prior)"),
])
def test_an_output_is_never_one_of_the_inputs(capsys, wd, args, needle):
    before = {p.name: p.read_bytes() for p in wd.iterdir() if p.is_file()}
    refused(capsys, needle, *args)
    after = {p.name: p.read_bytes() for p in wd.iterdir() if p.is_file()}
    assert after == before
    no_leftovers(wd)


def test_a_report_never_overwrites_its_inputs(capsys, wd):
    (wd / "data").mkdir()
    (wd / "run.parquet").rename(wd / "data" / "run.parquet")
    refused(capsys, "-o .: would overwrite the input data/run.parquet", "report",
            "data/run.parquet", "-o", ".")
    refused(capsys, "ts.parquet: cannot write the output directory: a file is there",
            "report", "data/run.parquet", "--test-sets", "ts.parquet", "-o", "ts.parquet")


def test_a_symbolic_link_to_an_input_is_the_input(capsys, wd):
    (wd / "link.parquet").symlink_to(wd / "ts.parquet")
    refused(capsys, "is the input", "run", "--experiment", "ts.parquet", "--agent",
            "agent.parquet", "-o", "link.parquet")


@pytest.mark.parametrize("out, needle", [
    ("adir", "is a directory"),
    ("ts.parquet/x.parquet", "ts.parquet is not a directory"),
    ("ts.parquet/deeper/x.parquet", "ts.parquet is not a directory"),
    ("/sys/x.parquet", "cannot write"),
    ("/proc/x.parquet", "cannot write"),
])
def test_unwritable_outputs_are_refused_before_any_trajectory(capsys, wd, monkeypatch, out,
                                                              needle):
    (wd / "adir").mkdir()
    calls = []
    monkeypatch.setattr(E, "run_agent", lambda *a, **k: calls.append(1))
    refused(capsys, needle, "run", "--experiment", "ts.parquet", "--agent", "agent.parquet",
            "-o", out)
    assert calls == []  # refused before playing anything
    no_leftovers(wd)


# ---------------------------------------------------------------------------------------
# Contents of artefacts


def _rewrite(path: Path, *, table=None, meta=None) -> None:
    t = pq.read_table(path)
    m = json.loads(t.schema.metadata[b"bbrl"])
    if table is not None:
        t = table(t)
    if meta is not None:
        meta(m)
    pq.write_table(t.replace_schema_metadata({b"bbrl": json.dumps(m).encode()}), path)


def _set_P(t: pa.Table, i: int, k: int, value: float) -> pa.Table:
    P = t.column("P").to_pylist()
    P[i][k] = value
    col = pa.array(P, type=t.schema.field("P").type)
    return t.set_column(t.schema.get_field_index("P"), "P", col)


@pytest.mark.parametrize("edit, needle", [
    (lambda t: _set_P(t, 2, 9, float("nan")), "MDP 2, row (x=1, u=1): P(y=2) = nan"),
    (lambda t: _set_P(_set_P(t, 1, 0, -0.5), 1, 1, 1.5), "MDP 1, row (x=0, u=0): P(y=0) = -0.5"),
    (lambda t: _set_P(t, 3, 0, 0.123), "MDP 3, row (x=0, u=0) sums to"),
    (lambda t: t.slice(0, 4), "4 MDP rows, but the metadata says n_mdps=6"),
    (lambda t: t.set_column(0, "mdp_index", pa.array([0, 1, 2, 3, 3, 5], pa.int64())),
     "mdp_index is not 0..5"),
])
def test_test_set_contents_are_validated(capsys, wd, edit, needle):
    _rewrite(wd / "ts.parquet", table=edit)
    msg = refused(capsys, needle, "run", "--experiment", "ts.parquet", "--agent",
                  "agent.parquet", "-o", "out.parquet")
    assert "ts.parquet" in msg
    assert not (wd / "out.parquet").exists()


META_EDITS = [
    ("ts.parquet", "test-set", lambda m: m.update(gamma="x"), "'gamma' must be a number"),
    ("ts.parquet", "test-set", lambda m: m.update(horizon=2.5), "'horizon' must be an integer"),
    ("ts.parquet", "test-set", lambda m: m.update(seed=2**64), "'seed' must be in"),
    ("ts.parquet", "test-set", lambda m: m.pop("n_mdps"), "'n_mdps' is missing"),
    ("ts.parquet", "test-set", lambda m: m.update(test_distribution=[1, 2]),
     "'test_distribution' must be a JSON object"),
    ("ts.parquet", "test-set", lambda m: m["test_distribution"].update(n_states="5"),
     "n_states must be an integer"),
    ("agent.parquet", "agent", lambda m: m.update(params={"epsilon": "lots"}),
     "metadata 'params' epsilon='lots': stored as a string, expected a number"),
    # issue #23: a number stored as a string was accepted
    ("agent.parquet", "agent", lambda m: m["params"].update(epsilon="0.1"),
     "metadata 'params' epsilon='0.1': stored as a string, expected a number"),
    # issue #23: the id and the stored parameters disagree (edited by hand)
    ("agent.parquet", "agent", lambda m: m["params"].update(epsilon=0.5),
     "metadata 'agent' 'e-greedy__epsilon=0.1' is not the id of the stored parameters "
     "('e-greedy__epsilon=0.5': edited by hand?)"),
    ("agent.parquet", "agent", lambda m: m.update(agent="e-greedy__epsilon=0.5"),
     "'e-greedy__epsilon=0.5' is not the id of the stored parameters "
     "('e-greedy__epsilon=0.1'"),
    ("agent.parquet", "agent", lambda m: m.update(agent="e-greedy__epsilon=0.1__x=1"),
     "is not the id of the stored parameters"),
    ("agent.parquet", "agent", lambda m: m.update(params={"epsilon": 3.0}),
     "must be in [0, 1]"),
    ("agent.parquet", "agent", lambda m: m.update(algorithm="e-greedyy"), "unknown algorithm"),
    ("agent.parquet", "agent", lambda m: m.update(offline_time_s=None),
     "'offline_time_s' must be a number"),
    ("agent.parquet", "agent", lambda m: m.update(info="x"), "'info' must be a JSON object"),
    ("agent.parquet", "agent", lambda m: m["prior_distribution"].update(theta="x"),
     "theta must be a list"),
]


@pytest.mark.parametrize("name, kind, edit, needle", META_EDITS)
def test_metadata_of_the_wrong_type_is_one_line(capsys, wd, name, kind, edit, needle):
    _rewrite(wd / name, meta=edit)
    msg = refused(capsys, needle, "run", "--experiment", "ts.parquet", "--agent",
                  "agent.parquet", "-o", "out.parquet")
    assert msg.startswith(f"bbrl: error: {name}: ")


def test_metadata_that_is_not_an_object_is_one_line(capsys, wd):
    t = pq.read_table(wd / "ts.parquet")
    pq.write_table(t.replace_schema_metadata({b"bbrl": b"[1, 2]"}), wd / "ts.parquet")
    refused(capsys, "corrupt bbrl metadata", "experiment", "show", "ts.parquet")


def test_formula_set_contents_are_validated(capsys, wd):
    def bad_token(t: pa.Table) -> pa.Table:
        rpn = t.column("rpn").to_pylist()
        rpn[1] = "X0 FOO"
        return t.set_column(t.schema.get_field_index("rpn"), "rpn", pa.array(rpn))

    _rewrite(wd / "f2.parquet", table=bad_token)
    refused(capsys, "f2.parquet: arm 1: formula: unknown token 'FOO'", "formulas", "show",
            "f2.parquet")
    _rewrite(wd / "f2.parquet", table=lambda t: t, meta=lambda m: m.update(label="../x"))
    refused(capsys, "metadata 'label' '../x' is not a formula-set label", "train", "--agent",
            "opps-ds", "--param", "formula_set=f2.parquet", "--param", "n_draws=5",
            "--prior", "GC", "-o", "o.parquet")
    assert not (wd / "o.parquet").exists()


def test_run_table_contents_are_validated(capsys, wd):
    def nan_return(t: pa.Table) -> pa.Table:
        col = t.column("discounted_return").to_pylist()
        col[1] = float("nan")
        i = t.schema.get_field_index("discounted_return")
        return t.set_column(i, "discounted_return", pa.array(col, pa.float64()))

    _rewrite(wd / "run.parquet", table=nan_return)
    refused(capsys, "run.parquet: discounted_return must be finite", "summary", "run.parquet",
            "-o", "s.parquet")
    _rewrite(wd / "run.parquet", table=lambda t: t.drop_columns(["horizon"]))
    refused(capsys, "lacks the column 'horizon'", "merge", "run.parquet", "-o", "m.parquet")
    assert not (wd / "m.parquet").exists() and not (wd / "s.parquet").exists()


# ---------------------------------------------------------------------------------------
# Merging runs that do not belong together; other versions


def _run_of(wd: Path, name: str, **ts_kw) -> Path:
    kw = {"n_mdps": 6, "gamma": 0.95, "horizon": 30, "seed": 2} | ts_kw
    ts = E.new_test_set(D.builtin("GC"), kw["n_mdps"], kw["gamma"], kw["horizon"], kw["seed"])
    agent = E.read_agent(wd / "agent.parquet")
    table = E.run_agent(ts, agent, range(3, 6), progress=False)
    E.write_run(table, wd / name, {})
    return wd / name


@pytest.mark.parametrize("kw, needle", [
    ({"seed": 3}, "test_seed 2 vs 3"),
    ({"horizon": 40}, "horizon 30 vs 40"),
    ({"gamma": 0.9}, "gamma 0.95 vs 0.9"),
])
def test_merge_refuses_chunks_of_different_test_sets(capsys, wd, kw, needle):
    E.write_run(E.read_run(wd / "run.parquet").filter(pl.col("mdp_index") < 3),
                wd / "a.parquet", {})
    _run_of(wd, "b.parquet", **kw)
    msg = refused(capsys, needle, "merge", "a.parquet", "b.parquet", "-o", "m.parquet")
    assert "experiment GC-GC" in msg and "a.parquet vs b.parquet" in msg
    refused(capsys, needle, "summary", "a.parquet", "b.parquet", "-o", "s.parquet")
    assert not (wd / "m.parquet").exists()


def test_another_version_warns_naming_both_and_merge_refuses_mixing(capsys, wd, monkeypatch):
    import bbrlcore

    _run_of(wd, "old.parquet")
    _rewrite(wd / "old.parquet", meta=lambda m: m.update(bbrlcore_version="0.0.1"),
             table=lambda t: t.set_column(
                 t.schema.get_field_index("bbrlcore_version"), "bbrlcore_version",
                 pa.array(["0.0.1"] * t.num_rows, pa.string())))
    rc, _, err = bbrl(capsys, "summary", "old.parquet", "-o", "s.parquet")
    assert rc == 0
    warning = [ln for ln in err.splitlines() if ln.startswith("bbrl: warning:")]
    assert len(warning) == 1
    assert "written by bbrlcore 0.0.1" in warning[0]
    assert f"this is bbrlcore {bbrlcore.__version__}" in warning[0]
    E.write_run(E.read_run(wd / "run.parquet").filter(pl.col("mdp_index") < 3),
                wd / "new.parquet", {})
    refused(capsys, "bbrlcore_version", "merge", "new.parquet", "old.parquet", "-o",
            "m.parquet")


# ---------------------------------------------------------------------------------------
# Numbers that do not fit


def _dat_with(wd: Path, line: int, value: str) -> Path:
    lines = (wd / "GC.dat").read_text().split("\n")
    lines[line] = value
    p = wd / "edited.dat"
    p.write_text("\n".join(lines))
    return p


@pytest.mark.parametrize("line, value, needle", [
    (10, "nan", "line 11: expected an integer (number of states), found 'nan'"),
    (10, "inf", "found 'inf'"),
    (10, "1e30", "number of states '1e30' is out of range"),
    (10, "100000", "is too large"),
    (12, "-7", "initial state -7 outside -1..4"),
    (13, "1e308\t1e308\t0\t0\t0", "total concentration inf"),
    (13, "1e20\t1\t0\t0\t0", "total concentration 1e+20"),
    (13, "nan\t1\t0\t0\t0", "non-finite Dirichlet concentration"),
])
def test_numbers_that_do_not_fit_in_a_dat_file(capsys, wd, line, value, needle):
    msg = refused(capsys, needle, "distribution", "import", _dat_with(wd, line, value),
                  "-o", "d.parquet")
    assert "edited.dat" in msg  # the file, not only the distribution
    assert not (wd / "d.parquet").exists()


@pytest.mark.parametrize("args, needle", [
    (["train", "--agent", "opps-ds", "--param", "formula_set=F2", "--param", "n_draws=1e20",
      "--prior", "GC"], "n_draws='1e20': out of range"),
    (["train", "--agent", "opps-ds", "--param", "formula_set=F2", "--param", "n_draws=1e15",
      "--prior", "GC"], "n_draws=1000000000000000: must be an integer in [1, 1,000,000,000]"),
    (["train", "--agent", "bamcp", "--param", "K=1e12", "--prior", "GC"],
     "the search tree would need"),
    (["train", "--agent", "bfs3", "--param", "K=1e9", "--param", "C=1", "--prior", "GC"],
     "the FSSS node pool would need"),
    (["train", "--agent", "sboss", "--param", "epsilon=1e-12", "--param", "delta=1",
      "--prior", "UGrid"], "the merged model would hold"),
    (["train", "--agent", "beb", "--param", "beta=inf", "--prior", "GC"], "a finite number"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC", "--seed", str(2**63)],
     "--seed 9223372036854775808"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC", "--gamma", "1"],
     "needs a discount factor < 1"),
    (["experiment", "new", "--test", "GC", "--seed", str(2**63)], "--seed 9223372036854775808"),
    (["experiment", "new", "--test", "GC", "--horizon", str(10**12)], "--horizon"),
    (["formulas", "generate", "--max-size", "40"], "--max-size 40"),
])
def test_numbers_that_do_not_fit_in_parameters(capsys, wd, args, needle):
    refused(capsys, needle, *args, "-o", "x.parquet")
    assert not (wd / "x.parquet").exists()
    no_leftovers(wd)


def test_run_checks_the_setting_of_a_stored_agent(capsys, wd):
    """An agent trained at gamma < 1 cannot run on a gamma = 1 test set (BEB)."""
    E.write_agent(E.train_agent("beb", {"beta": "1"}, D.builtin("GC"), progress=False),
                  wd / "beb.parquet")
    E.write_test_set(E.new_test_set(D.builtin("GC"), 2, 1.0, 10, 0), wd / "g1.parquet")
    refused(capsys, "needs a discount factor < 1", "run", "--experiment", "g1.parquet",
            "--agent", "beb.parquet", "-o", "out.parquet")


def test_distribution_errors_name_the_file(capsys, wd):
    d = D.builtin("GC")
    D.write_parquet(d, wd / "d.parquet")
    _rewrite(wd / "d.parquet", table=lambda t: t.set_column(
        t.schema.get_field_index("theta"), "theta",
        pa.array([-1.0] + t.column("theta").to_pylist()[1:], pa.float64())))
    msg = refused(capsys, "negative Dirichlet concentration", "distribution", "show",
                  "d.parquet")
    assert msg.startswith("bbrl: error: d.parquet: ")


# ---------------------------------------------------------------------------------------
# Configuration: cross-field checks before any job


def _bad(mutate) -> dict:
    cfg = copy.deepcopy(BASE)
    mutate(cfg)
    return cfg


CROSS_FIELD = {
    "gamma 1 with beb": (lambda c: (c.update(gamma=1.0), c["algorithms"].pop("bfs3"),
                                    c["algorithms"].pop("sboss")),
                         "algorithms.beb: beb__beta=0.25 on GC: needs a discount factor < 1"),
    "gamma 1 with sboss": (lambda c: (c.update(gamma=1.0), c["algorithms"].pop("bfs3"),
                                      c["algorithms"].pop("beb")),
                           "algorithms.sboss[0]: sboss__epsilon=1__delta=9 on GC: needs"),
    "sizes differ": (lambda c: c["experiments"].append({"test": "GC", "prior": "Grid"}),
                     "experiments[6]: test GC has 5 states and 3 actions, prior Grid has 25"),
    "seed too large": (lambda c: c.update(test_seed=2**63), "test_seed=9223372036854775808"),
    "K too large": (lambda c: c["algorithms"]["bamcp"][1].update(K=[1.0e20]),
                    "algorithms.bamcp[1].K[0]=1e+20: out of range"),
    "K too large for memory": (lambda c: c["algorithms"]["bamcp"][1].update(K=[10**10]),
                               "the search tree would need"),
    "bad extra distribution": (lambda c: c.update(distributions={"AB": "nowhere.dat"}),
                               "distributions.AB: 'nowhere.dat': no such file"),
    # issue #23: {GC: file} silently replaced the paper's GC by another distribution
    "a built-in's name": (lambda c: c.update(distributions={"GC": "examples/riverswim.parquet"}),
                          "config.yaml: distributions.GC: 'GC' is a built-in distribution; "
                          "give yours another name"),
    "a built-in's name in another case": (
        lambda c: c.update(distributions={"ugrid": "examples/riverswim.parquet"}),
        "distributions.ugrid: 'ugrid' differs from the built-in distribution 'UGrid' only in "
        "case"),
}


@pytest.mark.parametrize("kind", sorted(CROSS_FIELD))
def test_cross_field_checks_name_the_key(kind):
    mutate, expected = CROSS_FIELD[kind]
    with pytest.raises(BBRLError) as exc:
        P.load(_bad(mutate))
    msg = str(exc.value)
    assert msg.startswith("config.yaml: ") and expected in msg and "\n" not in msg, msg


@pytest.mark.parametrize("name", list(D.BUILTINS))
def test_no_distribution_reuses_a_built_in_name(tmp_path, name):
    """Whatever the file (even a copy of the built-in itself), a built-in's name is taken."""
    f = tmp_path / "d.parquet"
    D.write_parquet(D.builtin(name), f)
    with pytest.raises(BBRLError) as exc:
        P.load(_bad(lambda c: c.update(distributions={name: str(f)})))
    assert str(exc.value) == (f"config.yaml: distributions.{name}: {name!r} is a built-in "
                              "distribution; give yours another name")


def test_a_malformed_extra_distribution_is_refused_up_front(tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_text(D.builtin("GC").to_dat().replace("\n5\n3\n0\n", "\n5\n3\n9\n", 1))
    cfg = _bad(lambda c: c.update(distributions={"AB": str(bad)}))
    with pytest.raises(BBRLError, match=r"distributions\.AB: .*bad\.dat: .*initial state 9"):
        P.load(cfg)


def test_yaml_errors_name_the_file_and_the_line(tmp_path):
    p = tmp_path / "config.yaml"
    p.write_text((ROOT / "config.yaml").read_text().replace("n_mdps: 500", "n_mdps: [500", 1))
    with pytest.raises(BBRLError) as exc:
        P.load(p)
    assert str(exc.value).startswith(f"{p}: not valid YAML at line ")


# ---------------------------------------------------------------------------------------
# Every reader, fed arbitrary input (hypothesis)

READERS = {
    # kind -> (file name, command using it as input)
    "distribution": ("x.parquet", ["distribution", "show", "x.parquet"]),
    "dat": ("x.dat", ["distribution", "import", "x.dat", "-o", "out.parquet"]),
    "test-set": ("x.parquet", ["run", "--experiment", "x.parquet", "--agent", "agent.parquet",
                               "-o", "out.parquet"]),
    "agent": ("x.parquet", ["run", "--experiment", "ts.parquet", "--agent", "x.parquet",
                            "-o", "out.parquet"]),
    "run": ("x.parquet", ["summary", "x.parquet", "-o", "out.parquet"]),
    "formula-set": ("x.parquet", ["formulas", "show", "x.parquet"]),
    "formula-dat": ("x.dat", ["formulas", "import", "x.dat", "-o", "out.parquet"]),
}


def _check_refused_cleanly(capsys, wd: Path, args: list[str]) -> None:
    (wd / "out.parquet").unlink(missing_ok=True)
    rc, out, err = bbrl(capsys, *args)
    if rc == 0:  # the input happened to be valid: nothing to check
        return
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("bbrl: warning:")]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("bbrl: error: "), err
    assert not (wd / "out.parquet").exists()
    no_leftovers(wd)


HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
#: Examples per property (more with BBRL_HYPOTHESIS_EXAMPLES=N for a longer search).
EXAMPLES = int(os.environ.get("BBRL_HYPOTHESIS_EXAMPLES", 40))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(data=st.binary(max_size=2000), kind=st.sampled_from(sorted(READERS)))
def test_every_reader_refuses_arbitrary_bytes(capsys, wd, data, kind):
    name, args = READERS[kind]
    (wd / name).write_bytes(data)
    _check_refused_cleanly(capsys, wd, args)


TOKENS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e308", "-1", "0", "1e400", "", "x", "2147483648",
                     "3.5", "\t", "Serializable", "DirMultiDistribution", "1e-320"]),
    st.text(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
)


@settings(max_examples=2 * EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(edits=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 4), TOKENS),
                      min_size=1, max_size=4))
def test_dat_files_with_arbitrary_edits(capsys, wd, edits):
    lines = (wd / "GC.dat").read_text().split("\n")
    for line, field, token in edits:
        i = line % len(lines)
        fields = lines[i].split("\t")
        fields[field % len(fields)] = token
        lines[i] = "\t".join(fields)
    (wd / "x.dat").write_text("\n".join(lines))
    _check_refused_cleanly(capsys, wd, READERS["dat"][1])
    _check_refused_cleanly(capsys, wd, ["experiment", "new", "--test", "x.dat", "--n-mdps",
                                        "2", "--horizon", "5", "-o", "out.parquet"])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)


@settings(max_examples=2 * EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(kind=st.sampled_from(["distribution", "test-set", "agent", "run", "formula-set"]),
       mutation=st.one_of(
           st.tuples(st.just("replace"), JSON),
           st.tuples(st.text(min_size=1, max_size=20), JSON),
       ))
def test_artefacts_with_arbitrary_metadata(capsys, wd, kind, mutation):
    src = {"distribution": "GC.parquet", "test-set": "ts.parquet", "agent": "agent.parquet",
           "run": "run.parquet", "formula-set": "f2.parquet"}[kind]
    t = pq.read_table(wd / src)
    meta = json.loads(t.schema.metadata[b"bbrl"])
    key, value = mutation
    if key == "replace":
        meta = value
    else:  # change (or add) one field; pick an existing one by its position when possible
        keys = sorted(meta)
        meta[keys[sum(map(ord, key)) % len(keys)] if key[0].isdigit() else key] = value
    pq.write_table(t.replace_schema_metadata({b"bbrl": json.dumps(meta).encode()}),
                   wd / "x.parquet")
    _check_refused_cleanly(capsys, wd, READERS[kind][1])


def test_numpy_is_quiet_in_validation():
    """Validation of a row summing to +inf raises no floating-point warning as an error."""
    theta = np.ones((2, 1, 2))
    theta[0, 0] = [1e308, 1e308]
    with pytest.raises(BBRLError, match="total concentration inf"):
        D.FDMDistribution("x", "X", theta, np.zeros_like(theta), 0)


def test_check_output_path_is_the_one_write_mechanism(tmp_path):
    """atomic_path refuses what check_output_path refuses (one mechanism)."""
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "f" / "g.parquet", tmp_path):
        with pytest.raises(BBRLError):
            with artefacts.atomic_path(bad):
                pass


# ---------------------------------------------------------------------------------------
# Round three (issue #23): numbers, files and keys that still gave a traceback or a
# misleading line; nothing left behind by a refused command; a full disk


@pytest.mark.parametrize("args, needle", [
    (["experiment", "new", "--test", "GC", "--epsilon", "nan"], "--epsilon nan: must be a finite"),
    (["experiment", "new", "--test", "GC", "--epsilon", "inf"], "--epsilon inf: must be a finite"),
    (["experiment", "new", "--test", "GC", "--epsilon=-inf"], "--epsilon -inf: must be a finite"),
    (["experiment", "new", "--test", "GC", "--epsilon", "0"], "--epsilon 0.0: must be a finite"),
    (["experiment", "new", "--test", "GC", "--epsilon", "5e-324", "--gamma", "0.9999999"],
     "gives a horizon T=7,628,607,150 above 100,000,000"),
    (["train", "--agent", "opps-ds", "--param", "formula_set=F2", "--param", "n_draws=5",
      "--prior", "GC", "--checkpoint-every", "-5"], "--checkpoint-every -5.0: must be a finite"),
    (["train", "--agent", "opps-ds", "--param", "formula_set=F2", "--param", "n_draws=5",
      "--prior", "GC", "--checkpoint-every", "0"], "--checkpoint-every 0.0: must be a finite"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC", "--checkpoint-every",
      "nan"], "--checkpoint-every nan: must be a finite"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC", "--checkpoint-every",
      "inf"], "--checkpoint-every inf: must be a finite"),
])
def test_non_finite_and_non_positive_numbers_are_one_line(capsys, wd, args, needle):
    refused(capsys, needle, *args, "-o", "x.parquet")
    assert not (wd / "x.parquet").exists()
    no_leftovers(wd)


@settings(max_examples=EXAMPLES, deadline=None)
@given(epsilon=st.floats(), gamma=st.floats(), r_max=st.floats())
def test_horizon_for_epsilon_is_an_integer_or_one_error(epsilon, gamma, r_max):
    try:
        t = D.horizon_for_epsilon(epsilon, gamma, r_max)
    except BBRLError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(t, int) and t >= 1
    # the truncation error bound holds: gamma^T Rmax / (1 - gamma) <= epsilon
    assert math.log(r_max) + t * math.log(gamma) - math.log1p(-gamma) <= math.log(epsilon) + 1e-9


def test_a_binary_configuration_is_one_line(capsys, tmp_path):
    p = tmp_path / "config.yaml"
    p.write_bytes(b"n_mdps: 5\n\xff\xfe\x00\x81garbage")
    with pytest.raises(BBRLError, match=r"config\.yaml: not a text file \(byte 10 is not "
                                        r"UTF-8\): expected a YAML configuration"):
        P.load(p)
    refused(capsys, f"{p}: not a text file", "estimate", p)
    refused(capsys, "--set 'n_mdps=[1': the value is not valid YAML", "estimate",
            ROOT / "config.yaml", "--set", "n_mdps=[1")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(data=st.binary(max_size=300))
def test_any_bytes_as_a_configuration_are_refused_with_one_error(tmp_path, data):
    p = tmp_path / "config.yaml"
    p.write_bytes(data)
    try:
        P.check_yaml_file(p)
    except BBRLError as exc:
        assert str(exc).startswith(f"{p}: ") and "\n" not in str(exc)
    with pytest.raises(BBRLError):  # never a valid configuration
        P.load(p)


PRESET_KEYS = [
    # preset key, value, the line's key (None: the preset value itself is fine)
    ("n_mdps", "eight", "presets.tiny.n_mdps='eight': expected an integer"),
    ("horizon", 0, "presets.tiny.horizon=0: must be >= 1"),
    ("gamma", 2, "presets.tiny.gamma=2.0: must be in (0, 1]"),
    ("checkpoint_every_seconds", float("inf"),
     "presets.tiny.checkpoint_every_seconds=inf: must be > 0 and finite"),
    ("experiments", [{"test": "GC", "prior": "nope"}],
     "presets.tiny.experiments[0].prior=nope: unknown distribution"),
    ("algorithms", {"e-greedy": {"epsilon": [2.0]}}, "presets.tiny.algorithms.e-greedy"),
    ("results_dir", 3, "presets.tiny.results_dir: expected a directory name"),
]


@pytest.mark.parametrize("key, value, expected", PRESET_KEYS)
def test_a_key_set_by_a_preset_is_named_by_its_full_path(key, value, expected):
    cfg = _bad(lambda c: c["presets"]["tiny"].update({key: value}))
    with pytest.raises(BBRLError) as exc:
        P.load(cfg, {"preset": "tiny"})
    assert str(exc.value).startswith(f"config.yaml: {expected}"), str(exc.value)
    # the same value at the top level (no preset) is named as the top-level key
    top = _bad(lambda c: c.update({key: value}))
    with pytest.raises(BBRLError) as exc:
        P.load(top)
    assert str(exc.value).startswith(f"config.yaml: {expected.split('tiny.', 1)[1]}")


def test_a_cross_field_error_of_a_preset_names_the_preset_key():
    cfg = _bad(lambda c: (c.update(gamma=1.0),
                          c["presets"]["tiny"].update(algorithms={"beb": {"beta": [1.0]}})))
    with pytest.raises(BBRLError, match=r"^config\.yaml: presets\.tiny\.algorithms\.beb: .*"
                                        r"needs a discount factor < 1"):
        P.load(cfg, {"preset": "tiny"})
    with pytest.raises(BBRLError, match=r"^config\.yaml: preset=nope: no such preset"):
        P.load(BASE, {"preset": "nope"})


def test_a_schema_error_names_the_key_as_written():
    """Snakemake's JSON-schema validation (workflow/rules/common.smk) as one line naming
    the key, under presets.PRESET. when the preset set it."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from bbrlcore.plan.workflow import schema_error

    plan = P.load(BASE, {"preset": "tiny"})
    schema = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    for key, value, expected in [
        ("n_mdps", "eight", "config.yaml: presets.tiny.n_mdps: 'eight' is not of type "
                            "'integer'"),
        ("gamma", "x", "config.yaml: gamma: 'x' is not of type 'number'"),
        ("zzz", 1, "config.yaml: Additional properties are not allowed ('zzz' was "
                   "unexpected)"),
    ]:
        cfg = copy.deepcopy(plan.config) | {key: value}
        with pytest.raises(WorkflowError) as exc:
            validate(cfg, schema=schema)
        assert schema_error(str(exc.value), plan, "config.yaml") == expected


GOOD_FDM = {"name": "two", "short_name": "Two", "theta": np.ones((2, 1, 2)),
            "reward": np.zeros((2, 1, 2)), "initial_state": 0}


@pytest.mark.parametrize("edit, needle", [
    ({"initial_state": 1.5}, "initial state must be an integer (-1 for a uniformly drawn one), "
                             "got 1.5"),
    ({"initial_state": True}, "initial state must be an integer"),
    ({"initial_state": "0"}, "initial state must be an integer"),
    ({"initial_state": 2}, "initial state 2 outside -1..1"),
    ({"theta": "ones"}, "theta must be an array of real numbers (got 'ones')"),
    ({"theta": [[[1.0, "x"]], [[1.0, 1.0]]]}, "theta must be an array of real numbers"),
    ({"theta": [[[1.0]], [[1.0, 1.0]]]}, "theta must be an array of real numbers"),
    ({"theta": np.ones((2, 1, 2)) * 1j}, "theta must be an array of real numbers"),
    ({"reward": None}, "reward must be an array of real numbers"),
    ({"reward": [[[0, "1"]], [[0, 0]]]}, "reward must be an array of real numbers"),
    ({"reward_variance": [[[1.0, -1.0]], [[0.0, 0.0]]]}, "reward variances must be finite"),
    ({"reward_type": ["constant"]}, "reward type must be one of constant, gaussian"),
    ({"name": 3}, "name must be a string, got 3"),
    ({"short_name": "a\nb"}, "short_name 'a\\nb' must hold no line break"),
    ({"short_name": "\ud800"}, "is not valid Unicode text"),
])
def test_bad_distribution_arguments_are_one_error(edit, needle):
    with pytest.raises(BBRLError) as exc:
        D.FDMDistribution(**(GOOD_FDM | edit))
    assert needle in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_a_distribution_accepts_array_likes_and_numpy_integers(tmp_path):
    d = D.FDMDistribution("two", "Two", [[[1, 1]], [[2, 0]]], (((0.0, 1.0),), ((2.0, 3.0),)),
                          np.int64(1), "gaussian", [[[1, 1]], [[1, 1]]])
    assert d.theta.dtype == np.float64 and d.reward.shape == (2, 1, 2)
    assert type(d.initial_state) is int
    D.write_parquet(d, tmp_path / "d.parquet")
    assert D.read_parquet(tmp_path / "d.parquet").same_as(d)


FDM_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(), st.text(max_size=3),
    st.lists(st.floats(), max_size=2),
    st.builds(lambda v: np.full((2, 1, 2), v), st.floats()),
    st.builds(lambda v: [[[v, 1.0]], [[1.0, v]]], st.one_of(st.floats(), st.integers(),
                                                            st.text(max_size=2))),
)


@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(edits=st.dictionaries(st.sampled_from(sorted(GOOD_FDM) + ["reward_type",
                                                                 "reward_variance"]),
                             st.one_of(FDM_VALUES, st.text(max_size=4)), max_size=3))
def test_what_a_distribution_accepts_it_writes_and_reads_back(tmp_path, edits):
    """Whatever the constructor is given, it raises BBRLError or builds a distribution
    whose Parquet and .dat files bbrl reads back."""
    try:
        d = D.FDMDistribution(**(GOOD_FDM | edits))
    except BBRLError as exc:
        assert "\n" not in str(exc)
        return
    D.write_parquet(d, tmp_path / "d.parquet")
    assert D.read_parquet(tmp_path / "d.parquet").same_as(d)
    D.write_dat(d, tmp_path / "d.dat")
    D.read_dat(tmp_path / "d.dat")  # .dat rounds to 15 digits: read back, maybe not equal


# -- a refused command leaves nothing behind ---------------------------------------------

#: Every ``bbrl`` subcommand with a bad argument; every output path under ``new/`` (which
#: must not exist afterwards). None: the command writes nothing.
NOTHING_LEFT = {
    "distribution show": None,
    "distribution import": (["distribution", "import", "bad.dat", "-o", "new/d/x.parquet"],
                            "bad.dat"),
    "distribution export": (["distribution", "export", "bad.dat", "-o", "new/d/x.dat"],
                            "bad.dat"),
    "experiment new": (["experiment", "new", "--test", "GC", "--epsilon", "nan", "-o",
                        "new/d/x.parquet"], "--epsilon nan"),
    "experiment show": None,
    "experiment validation": (["experiment", "validation", "ts.parquet", "--n-mdps", "0",
                               "-o", "new/d/x.parquet"], "--n-mdps 0"),
    "train": (["train", "--agent", "opps-ds", "--param", "formula_set=F2", "--param",
               "n_draws=5", "--prior", "GC", "--checkpoint-every", "-5", "--checkpoint",
               "new/c/ck", "-o", "new/d/x.parquet"], "--checkpoint-every"),
    "run": (["run", "--experiment", "ts.parquet", "--agent", "agent.parquet", "--mdps", "4:2",
             "-o", "new/d/x.parquet"], "--mdps '4:2'"),
    "agents": None,
    "warmup": None,
    "formulas generate": (["formulas", "generate", "--max-size", "40", "-o",
                           "new/d/x.parquet"], "--max-size 40"),
    "formulas import": (["formulas", "import", "bad.dat", "-o", "new/d/x.parquet"], "bad.dat"),
    "formulas show": None,
    "merge": (["merge", "run.parquet", "ts.parquet", "-o", "new/d/x.parquet"], "ts.parquet"),
    "summary": (["summary", "ts.parquet", "-o", "new/d/x.parquet", "--markdown",
                 "new/m/x.md"], "ts.parquet"),
    "aggregate": (["aggregate", "run.parquet", "-o", "new/d/agg"], "no Random agent"),
    "report": (["report", "run.parquet", "--bootstrap-resamples", "5", "-o", "new/d/report"],
               "--bootstrap-resamples 5"),
    "estimate": None,
    "compare-published": (["compare-published", "ts.parquet", "-o", "new/d/x.parquet"],
                          "ts.parquet"),
    "demo": (["demo", "--n-mdps", "0", "--out", "new/d/demo"], "--n-mdps"),
    "init": (["init", "new/d/study.yaml", "--experiment", "GC-UGC"], "--experiment"),
    "families": None,  # writes nothing
    "curves": (["curves", "run.parquet", "--points", "1", "-o", "new/d/c"], "--points"),
    "distribution new": (["distribution", "new", "deepsea", "--param", "size=1", "-o",
                          "new/d/x.parquet"], "size=1"),
    "hardness": (["hardness", "ts.parquet", "--gamma", "2", "-o", "new/d/x.parquet"],
                 "--gamma"),
    # (a workflow job: a spec refused before any unit runs)
    "batch": (["batch", "--spec", '{"kind": "run", "root": "new/d", "agents": {"a": {"ref": '
               '"random"}}, "units": [["a", "GC", "GC-GC", "GC", 0, "x"]]}'], "units[0]"),
}


def _subcommands() -> list[str]:
    import argparse

    from bbrlcore.cli import build_parser

    def subs(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        acts = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(acts[0].choices) if acts else {}

    out = []
    for name, p in subs(build_parser()).items():
        inner = subs(p)
        out += [f"{name} {n}" for n in inner] if inner else [name]
    return out


def test_every_subcommand_is_checked_for_leftovers():
    assert sorted(NOTHING_LEFT) == sorted(_subcommands())


@pytest.mark.parametrize("command", sorted(k for k, v in NOTHING_LEFT.items() if v))
def test_a_refused_command_leaves_no_output_path(capsys, wd, command):
    args, needle = NOTHING_LEFT[command]
    (wd / "bad.dat").write_text("Serializable\n0\nnonsense\n")
    refused(capsys, needle, *args)
    assert not (wd / "new").exists(), sorted(map(str, (wd / "new").rglob("*")))


@pytest.mark.parametrize("out", ["new/d/demo", "new"])
def test_a_command_failing_after_creating_its_directory_removes_it(capsys, wd, monkeypatch,
                                                                   out):
    """bbrl demo creates --out, then a training fails: the directory goes (it did not
    exist); an existing directory stays, with what was in it."""
    def fail(*a, **k):
        raise BBRLError("training failed")

    monkeypatch.setattr(E, "train_agent", fail)
    refused(capsys, "training failed", "demo", "--n-mdps", "2", "--out", out)
    assert not (wd / "new").exists()
    (wd / "kept").mkdir()
    (wd / "kept" / "mine.txt").write_text("x")
    refused(capsys, "training failed", "demo", "--n-mdps", "2", "--out", "kept")
    assert sorted(p.name for p in (wd / "kept").iterdir()) == ["mine.txt", "test-set.parquet"]


class _FullDisk:
    """``os`` for bbrlcore.formats.artefacts, with a disk that fills at the rename."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def replace(src, dst):
        raise OSError(28, os.strerror(28))


WRITERS = {
    "experiment new": ["experiment", "new", "--test", "GC", "--n-mdps", "2", "-o",
                       "new/d/x.parquet"],
    "distribution export": ["distribution", "export", "GC", "-o", "new/d/x.dat"],
    "formulas generate": ["formulas", "generate", "--max-size", "2", "-o", "new/d/x.parquet"],
    "train": ["train", "--agent", "beb", "--param", "beta=1", "--prior", "GC", "-q", "-o",
              "new/d/x.parquet"],
    "run": ["run", "--experiment", "ts.parquet", "--agent", "agent.parquet", "-q", "-o",
            "new/d/x.parquet"],
    "summary": ["summary", "run.parquet", "-o", "new/d/x.parquet"],
    "report": ["report", "run.parquet", "--no-pdf", "-o", "new/d/report"],
    "demo": ["demo", "--n-mdps", "2", "--out", "new/d/demo"],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(capsys, wd, monkeypatch,
                                                                   command):
    monkeypatch.setattr(artefacts, "os", _FullDisk())
    msg = refused(capsys, "cannot write (No space left on device)", *WRITERS[command])
    assert "new/d/" in msg
    assert not (wd / "new").exists(), sorted(map(str, (wd / "new").rglob("*")))


def test_an_os_error_of_a_full_disk_outside_the_artefacts_is_one_line(capsys, wd, monkeypatch):
    """A figure written by matplotlib on a full disk: one line naming it, no traceback."""
    from matplotlib.figure import Figure

    def savefig(self, fname, *a, **k):
        raise OSError(28, os.strerror(28), str(fname))

    monkeypatch.setattr(Figure, "savefig", savefig)
    msg = refused(capsys, ".png: cannot write (No space left on device)", "report",
                  "run.parquet", "--no-pdf", "-o", "new/d/report")
    assert "new/d/report/" in msg
    assert not (wd / "new").exists()


def test_an_atomic_write_that_fails_removes_the_directories_it_created(tmp_path,
                                                                       monkeypatch):
    (tmp_path / "a").mkdir()
    with pytest.raises(RuntimeError), artefacts.atomic_path(tmp_path / "a/b/c/x.parquet") as t:
        t.write_text("half")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a"]  # a existed before
    monkeypatch.setattr(artefacts, "os", _FullDisk())
    with pytest.raises(BBRLError, match=r"x\.parquet: cannot write \(No space left"):
        with artefacts.atomic_path(tmp_path / "n/x.parquet") as t:
            t.write_text("data")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a"]


def test_log_mode_writes_the_log_and_the_final_line_to_stderr(capsys, wd):
    rc, out, err = bbrl(capsys, "--log", "x.log", "experiment", "new", "--test", "GC",
                        "--n-mdps", "0", "-o", "x.parquet")
    assert rc == 2 and out == ""
    assert err == "bbrl: error: --n-mdps must be in [1, 10000000], got 0 (log: x.log)\n"
    assert (wd / "x.log").read_text() == "bbrl: error: --n-mdps must be in [1, 10000000], got 0\n"
    rc, out, err = bbrl(capsys, "--log", "x.log", "experiment", "new", "--test", "GC",
                        "--n-mdps", "2", "-o", "x.parquet")
    assert (rc, out, err) == (0, "", "")
    assert (wd / "x.log").read_text().startswith("wrote x.parquet: 2 MDPs")
    refused(capsys, "--log adir/x.log: cannot write", "--log", "adir/x.log", "agents")


def test_every_workflow_job_logs_through_bbrl_log():
    """The rules run ``bbrl --log {log:q} ...`` (not ``> {log} 2>&1``): a job's reason of
    failure reaches Snakemake's output even when its log cannot be written."""
    rules = (ROOT / "workflow" / "rules").glob("*.smk")
    text = "\n".join(p.read_text() for p in rules)
    assert "2>&1" not in text and "> {log" not in text
    # (the jobs' rules, in loops, are indented one level deeper)
    shells = len(re.findall(r'shell:\n +"bbrl ', text))
    assert shells >= 8 and text.count('"bbrl --log {log:q} ') == shells


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs, filled (root only)."""
    d = tmp_path / "full"
    d.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    import subprocess

    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        try:
            with open(d / "fill", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:  # full
            pass
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=False)


def test_a_job_on_a_full_disk_says_so_on_its_own_stderr(full_disk, bbrl_cmd, env_with_cache):
    """The workflow's job command line, its output and log on a full disk: the log stays
    empty, the reason reaches the job's stderr (what Snakemake shows), naming the file."""
    import subprocess

    out, log = full_disk / "ts.parquet", full_disk / "ts.log"
    r = subprocess.run([*bbrl_cmd, "--log", str(log), "experiment", "new", "--test", "GC",
                        "--n-mdps", "3", "-o", str(out)], capture_output=True, text=True,
                       env=env_with_cache, timeout=300)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1, r.stderr
    assert f"{out}: cannot write" in r.stderr and "No space left on device" in r.stderr
    assert r.stderr.rstrip().endswith(f"(log: {log})")
    assert not out.exists() and sorted(p.name for p in full_disk.iterdir()) == ["fill",
                                                                                "ts.log"]


@pytest.mark.slow
def test_snakemake_shows_why_a_job_failed_on_a_full_disk(full_disk, tmp_path):
    """The tiny workflow with its results on a full disk: the jobs' logs stay empty, and
    Snakemake's own output says "No space left on device", naming the file."""
    import subprocess
    import sys

    cfg = copy.deepcopy(BASE) | {"preset": "tiny", "results_dir": str(full_disk / "results")}
    (tmp_path / "wd").mkdir()
    (tmp_path / "wd" / "c.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "-s",
                        str(ROOT / "Snakefile"), "--directory", str(tmp_path / "wd"),
                        "--configfile", str(tmp_path / "wd" / "c.yaml"), "--cores", "1"],
                       capture_output=True, text=True, env=env, cwd=tmp_path / "wd",
                       timeout=900)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    line = next(ln for ln in out.splitlines() if ln.startswith("bbrl: error: "))
    assert "No space left on device" in line and str(full_disk / "results") in line, out[-3000:]
    assert "(log: " in line


# Issue #23: results that would be silently wrong


def _cli_run(capsys, wd: Path, name: str, agent: str = "agent.parquet", mdps: str = "0:6",
             ts: str = "ts.parquet") -> Path:
    rc, out, err = bbrl(capsys, "run", "--experiment", ts, "--agent", agent, "--mdps", mdps,
                        "-q", "-o", name)
    assert rc == 0, err
    return wd / name


@pytest.fixture
def two_agents(capsys, wd):
    """Random on MDPs 0-5, e-greedy on 0-2 only: an agent lacks test MDPs."""
    rc, _, err = bbrl(capsys, "train", "--agent", "random", "--prior", "GC", "-q",
                      "-o", "random.parquet")
    assert rc == 0, err
    _cli_run(capsys, wd, "full.parquet", agent="random.parquet")
    _cli_run(capsys, wd, "part.parquet", mdps="0:3")
    return wd


@pytest.mark.parametrize("command", ["merge", "summary", "aggregate", "report"])
def test_agents_on_different_test_mdps_are_refused(capsys, two_agents, command):
    """Issue #23: merging e-greedy on MDPs 0-2 with Random on 0-5 succeeded, the summary
    ranked a mean over 3 MDPs against one over 6, and the report died in paired_z naming
    nothing, leaving a half-written directory."""
    wd = two_agents
    out = {"merge": ["-o", "m.parquet"], "summary": ["-o", "m.parquet"],
           "aggregate": ["-o", "agg"], "report": ["-o", "rep", "--no-pdf"]}[command]
    msg = refused(capsys, "experiment GC-GC: agent e-greedy__epsilon=0.1 in part.parquet "
                  "lacks test MDPs 3-5 (of 0-5); run its missing chunks",
                  command, "full.parquet", "part.parquet", *out)
    assert msg.startswith(f"bbrl: error: {command}: ")
    assert not (wd / "m.parquet").exists() and not (wd / "agg").exists()
    assert not (wd / "rep").exists()
    no_leftovers(wd)
    # the chunks of one agent merge, and then the merged table is refused alike
    _cli_run(capsys, wd, "rest.parquet", mdps="3:6")
    rc, _, err = bbrl(capsys, "merge", "full.parquet", "part.parquet", "rest.parquet",
                      "-o", "m.parquet")
    assert rc == 0, err


def test_a_merged_table_lacking_mdps_is_refused(capsys, two_agents):
    wd = two_agents
    # merged alone (one agent each), the two are then refused together
    for src, dst in (("full.parquet", "m1.parquet"), ("part.parquet", "m2.parquet")):
        rc, _, err = bbrl(capsys, "merge", src, "-o", dst)
        assert rc == 0, err
    assert artefacts.read_meta(wd / "m1.parquet")["n_mdps"] == {"GC-GC": 6}
    refused(capsys, "summary: experiment GC-GC: agent e-greedy__epsilon=0.1 in m2.parquet "
            "lacks test MDPs 3-5", "summary", "m1.parquet", "m2.parquet", "-o", "s.parquet")


def test_a_failing_report_leaves_its_directory_as_it_was(capsys, wd, monkeypatch):
    """The report is built in a staging directory: an error half-way leaves nothing (or
    the previous report untouched)."""
    from bbrlcore.report import interactive

    def boom(out):
        raise BBRLError("disk on fire")

    with monkeypatch.context() as m:
        m.setattr(interactive, "write_library", boom)
        refused(capsys, "disk on fire", "report", "run.parquet", "-o", "new/rep", "--no-pdf")
        assert not (wd / "new").exists()
        (wd / "old").mkdir()
        (wd / "old" / "index.html").write_text("previous report")
        refused(capsys, "disk on fire", "report", "run.parquet", "-o", "old", "--no-pdf")
        assert [p.name for p in (wd / "old").iterdir()] == ["index.html"]
        assert (wd / "old" / "index.html").read_text() == "previous report"
        assert not [p for p in wd.iterdir() if p.name.startswith(".")]
    rc, _, err = bbrl(capsys, "report", "run.parquet", "-o", "old", "--no-pdf")
    assert rc == 0, err
    assert "previous report" not in (wd / "old" / "index.html").read_text()
    assert (wd / "old" / "experiments" / "GC-GC.html").exists()
    assert not [p for p in wd.iterdir() if p.name.startswith(".")]


def _edit_column(name: str, row: int, value: int):
    def edit(t: pa.Table) -> pa.Table:
        col = t.column(name).to_pylist()
        col[row] = value
        i = t.schema.get_field_index(name)
        return t.set_column(i, name, pa.array(col, pa.int64()))
    return edit


@pytest.mark.parametrize("column, row, value, needle", [
    ("mdp_index", 2, 6, "row 2 (agent e-greedy__epsilon=0.1): mdp_index 6 is outside the "
     "test set's MDPs 0-5 (n_mdps=6 recorded in the run metadata)"),
    ("mdp_index", 0, 1000, "mdp_index 1000 is outside the test set's MDPs 0-5"),
    ("mdp_index", 1, -1, "row 1 (agent e-greedy__epsilon=0.1): mdp_index -1 is a negative "
     "index"),
    ("n_steps", 3, 29, "row 3 (agent e-greedy__epsilon=0.1, MDP 3): n_steps 29 differs from "
     "the horizon 30"),
    ("n_steps", 0, 250, "n_steps 250 differs from the horizon 30"),
    ("horizon", 0, 0, "horizon must be >= 1, got 0"),
])
@pytest.mark.parametrize("command", ["merge", "summary"])
def test_run_rows_outside_the_test_set_are_refused(capsys, wd, column, row, value, needle,
                                                   command):
    """Issue #23: an mdp_index outside the test set, or n_steps other than the horizon,
    was merged and summarised with rc 0."""
    _cli_run(capsys, wd, "r.parquet")
    _rewrite(wd / "r.parquet", table=_edit_column(column, row, value))
    msg = refused(capsys, needle, command, "r.parquet", "-o", "out.parquet")
    assert msg.startswith("bbrl: error: r.parquet: ")
    assert not (wd / "out.parquet").exists()


def test_merged_tables_keep_the_test_set_size(capsys, wd):
    """A merged table records each experiment's N, checked on read like a run table's."""
    _cli_run(capsys, wd, "a.parquet", mdps="0:3")
    _cli_run(capsys, wd, "b.parquet", mdps="3:6")
    rc, _, err = bbrl(capsys, "merge", "a.parquet", "b.parquet", "-o", "m.parquet")
    assert rc == 0, err
    _rewrite(wd / "m.parquet", meta=lambda m: m.update(n_mdps={"GC-GC": 5}))
    refused(capsys, "m.parquet: row 5 (agent e-greedy__epsilon=0.1): mdp_index 5 is outside "
            "the test set's MDPs 0-4", "summary", "m.parquet", "-o", "s.parquet")
    _rewrite(wd / "m.parquet", meta=lambda m: m.update(n_mdps={"GC-GC": "six"}))
    refused(capsys, "m.parquet: metadata 'GC-GC' must be an integer, got 'six'",
            "summary", "m.parquet", "-o", "s.parquet")
    # runs of test sets of different sizes (same seed: one is a prefix of the other)
    _rewrite(wd / "b.parquet", meta=lambda m: m.update(n_mdps=8))
    refused(capsys, "merge: experiment GC-GC: run tables from different test sets "
            "(a.parquet vs b.parquet: n_mdps 6 vs 8)", "merge", "a.parquet", "b.parquet",
            "-o", "m2.parquet")
    assert not (wd / "m2.parquet").exists()


@pytest.mark.parametrize("test, n, seed, needle", [
    ("GC", 6, 3, "seed 3 vs 2"),
    ("GC", 8, 2, "n_mdps 8 vs 6"),
    ("GC", 4, 2, "n_mdps 4 vs 6"),
    ("GDL", 6, 2, "a test set of GDL, but no run is on GDL (the runs are on GC)"),
])
@pytest.mark.parametrize("recorded", [True, False])
def test_report_refuses_test_sets_the_runs_did_not_use(capsys, wd, test, n, seed, needle,
                                                        recorded):
    """Issue #23: ``bbrl report --test-sets`` with a test set of another seed or size wrote
    the hardness table of the wrong test set. The runs' N comes from their metadata or,
    in tables written before it was recorded, from their largest MDP index."""
    E.write_test_set(E.new_test_set(D.builtin(test), n, 0.95, 30, seed), wd / "other.parquet")
    runs = str(_cli_run(capsys, wd, "r.parquet")) if recorded else "run.parquet"
    msg = refused(capsys, needle, "report", runs, "--test-sets", "other.parquet",
                  "-o", "rep", "--no-pdf")
    assert msg.startswith("bbrl: error: other.parquet: ")
    if test == "GC":
        assert f"(seed {seed}, n_mdps {n})" in msg and "experiment GC-GC" in msg
        assert ("largest MDP index + 1" in msg) == (not recorded and "n_mdps" in needle)
    assert not (wd / "rep").exists()
    refused(capsys, "a second test set of GC (also ts.parquet)", "report", runs,
            "--test-sets", "ts.parquet", "ts.parquet", "-o", "rep", "--no-pdf")


def _synthetic_run(agent: str, indices) -> pl.DataFrame:
    n = len(indices)
    return pl.DataFrame({
        "experiment": ["GC-GC"] * n, "test": ["GC"] * n, "prior": ["GC"] * n,
        "algorithm": [agent] * n, "agent": [agent] * n, "params": ["{}"] * n,
        "compat": [False] * n, "mdp_index": np.asarray(sorted(indices), dtype=np.int64),
        "discounted_return": np.ones(n), "online_time_s": np.full(n, 1e-3),
        "n_steps": np.full(n, 30, dtype=np.int64), "offline_time_s": np.zeros(n)})


@settings(max_examples=4 * EXAMPLES, deadline=None)
@given(cover=st.lists(st.sets(st.integers(0, 20), min_size=1), min_size=2, max_size=4))
def test_coverage_is_refused_unless_every_agent_has_the_same_mdps(cover):
    """Random subsets of MDP indices per agent (chunks of each): merged, summarised and
    aggregated only when every agent holds the same set, else refused naming the first
    agent lacking some and exactly the MDPs it lacks."""
    from bbrlcore.analysis import aggregate as A
    from bbrlcore.analysis.results import index_ranges, merge_tables, summary_table

    agents = [f"agent{k}" for k in range(len(cover))]
    tables, sources = [], []
    for a, s in zip(agents, cover, strict=True):
        idx = sorted(s)
        for part in (idx[: len(idx) // 2], idx[len(idx) // 2:]):  # two chunks
            if part:
                tables.append(_synthetic_run(a, part))
                sources.append(f"{a}-{part[0]}.parquet")
    union = set().union(*cover)
    if all(s == union for s in cover):
        merged = merge_tables(tables, sources)
        assert set(summary_table(merged)["n"]) == {len(union)}
        return
    lacking = next(a for a, s in zip(agents, cover, strict=True) if s != union)
    missing = union - cover[agents.index(lacking)]
    want = f"agent {lacking} in {lacking}-"
    with pytest.raises(BBRLError) as exc:
        merge_tables(tables, sources)
    msg = str(exc.value)
    assert msg.startswith("merge: experiment GC-GC: ") and want in msg
    assert f" {index_ranges(missing)} (of {index_ranges(union)})" in msg
    merged = pl.concat(tables, how="diagonal_relaxed")
    for call, prefix in ((summary_table, "summary"), (A.normalised_scores, "aggregate")):
        with pytest.raises(BBRLError, match=f"^{prefix}: experiment GC-GC: agent {lacking} "):
            call(merged)


def test_an_agent_table_naming_another_agent_is_refused(capsys, wd):
    def other(t: pa.Table) -> pa.Table:
        i = t.schema.get_field_index("agent")
        return t.set_column(i, "agent", pa.array(["e-greedy__epsilon=0.5"], pa.string()))

    _rewrite(wd / "agent.parquet", table=other)
    refused(capsys, "agent.parquet: the table's agent 'e-greedy__epsilon=0.5' is not the "
            "metadata's 'e-greedy__epsilon=0.1'", "run", "--experiment", "ts.parquet",
            "--agent", "agent.parquet", "-o", "out.parquet")


STORED_AGENTS = [("e-greedy", {"epsilon": "0.1"}), ("beb", {"beta": "2.5", "compat": "true"}),
                 ("bamcp", {"K": "100", "D": "5"}), ("random", {})]


@pytest.fixture(scope="module")
def stored_agents(tmp_path_factory):
    d = tmp_path_factory.mktemp("agents")
    for alg, params in STORED_AGENTS:
        E.write_agent(E.train_agent(alg, params, D.builtin("GC"), progress=False),
                      d / f"{alg}.parquet")
    return d


@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=HEALTH)
@given(which=st.sampled_from([a for a, _ in STORED_AGENTS]),
       edits=st.dictionaries(st.sampled_from(["epsilon", "beta", "compat", "K", "D",
                                              "agent", "x"]),
                             JSON | st.sampled_from(["0.1", "2.5", "true", "100", 5, 2.5,
                                                     0.1, True, 1]),
                             max_size=3))
def test_a_stored_agent_reads_back_as_what_it_runs(stored_agents, tmp_path_factory, which,
                                                   edits):
    """Any edit of an agent artefact's id or parameters: refused with one line naming the
    file, or read back as an agent whose id is its parameters' and whose parameters have
    their declared types (what runs is what the id says)."""
    from bbrlcore import agents

    src = stored_agents / f"{which}.parquet"
    t = pq.read_table(src)
    meta = json.loads(t.schema.metadata[b"bbrl"])
    for key, value in edits.items():
        if key == "agent":
            meta["agent"] = value
        else:
            meta["params"][key] = value
    path = tmp_path_factory.mktemp("edited") / "x.parquet"
    pq.write_table(t.replace_schema_metadata({b"bbrl": json.dumps(meta).encode()}), path)
    try:
        agent = E.read_agent(path)
    except BBRLError as exc:
        assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc)
        return
    alg = agents.get(which)
    assert agent.agent_id == alg.agent_id(agent.params)
    for p in alg.params:
        v = agent.params[p.name]
        assert v is None or type(v) is p.type, (p.name, v)


def test_an_opps_ds_agent_keeps_its_label_when_its_formula_set_moves(tmp_path):
    """OPPS-DS's id shows the formula set's label, not its path: the label recorded at
    training checks the id, whether the file moved, was replaced, or is gone."""
    from bbrlcore.agents import formulas as F

    F.write_parquet(F.generate(2), tmp_path / "f.parquet")
    agent = E.train_agent("opps-ds", {"formula_set": str(tmp_path / "f.parquet"),
                                      "n_draws": "30", "c": "50"}, D.builtin("GC"),
                          horizon=20, progress=False)
    E.write_agent(agent, tmp_path / "a.parquet")
    assert E.read_agent(tmp_path / "a.parquet").agent_id == agent.agent_id
    F.write_parquet(F.generate(3), tmp_path / "f.parquet")  # another set at the same path
    assert E.read_agent(tmp_path / "a.parquet").agent_id == agent.agent_id
    (tmp_path / "f.parquet").unlink()
    assert E.read_agent(tmp_path / "a.parquet").agent_id == agent.agent_id
    _rewrite(tmp_path / "a.parquet", meta=lambda m: m["params"].update(n_draws=31))
    with pytest.raises(BBRLError, match=r"a\.parquet: metadata 'agent' .*n_draws=30.* is not "
                       r"the id of the stored parameters .*n_draws=31"):
        E.read_agent(tmp_path / "a.parquet")
    # without the recorded label (the file gone), the rest of the id is still checked
    _rewrite(tmp_path / "a.parquet", meta=lambda m: (m["params"].update(n_draws=30),
                                                     m["info"].pop("formula_set")))
    assert E.read_agent(tmp_path / "a.parquet").agent_id == agent.agent_id
    _rewrite(tmp_path / "a.parquet", meta=lambda m: m["params"].update(c=51.0))
    with pytest.raises(BBRLError, match=r"\('opps-ds__formula_set=\.\.\.__n_draws=30__c=51'"):
        E.read_agent(tmp_path / "a.parquet")
