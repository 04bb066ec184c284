"""Bundles of units in one process (issue 35): ``bbrl batch`` and the plan's bundles.

A bundle must give exactly what ``bbrl train`` and ``bbrl run`` give unit by unit (returns
bit for bit), keep what it finished when a later unit fails, and the plan's packing must
cover every unit once, within the target, and move only the edited algorithm's jobs.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

from bbrlcore import plan as P
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.plan import bundles as B
from bbrlcore.protocol import batch

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
TIMING = ["online_time_s", "offline_time_s"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A results directory with two distributions and a test set of 6 MDPs."""
    d = tmp_path_factory.mktemp("batch")
    for name in ("UGC", "GC"):
        assert main(["distribution", "import", name, "-o",
                     str(d / f"distributions/{name}.parquet")]) == 0
    assert main(["experiment", "new", "--test", str(d / "distributions/GC.parquet"),
                 "--n-mdps", "6", "--horizon", "20", "--seed", "3", "-o",
                 str(d / "test_sets/GC.parquet")]) == 0
    return d


AGENTS = {"e-greedy__epsilon=0.1": {"ref": "e-greedy", "params": {"epsilon": 0.1}},
          "beb__beta=1__compat=true": {"ref": "beb", "params": {"beta": 1.0, "compat": True}},
          "random": {"ref": "random", "params": {}}}


def _spec(root: Path, units, kind="run"):
    return {"bundle": "run_test_0", "kind": kind, "version": "x", "root": str(root),
            "seed": 0, "gamma": 0.95, "horizon": 20, "agents": AGENTS, "units": units}


def test_a_bundle_equals_train_and_run_unit_by_unit(inputs, capsys):
    d = inputs
    units = [["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 4],
             ["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 4, 6],
             ["beb__beta=1__compat=true", "UGC", "GC-UGC", "GC", 0, 6]]
    assert main(["batch", "--spec", json.dumps(_spec(d, units))]) == 0
    for args, out in (((["--agent", "e-greedy", "--param", "epsilon=0.1"]), "eg"),
                      ((["--agent", "beb", "--param", "beta=1", "--param", "compat=true"]),
                       "beb")):
        assert main(["train", *args, "--prior", str(d / "distributions/UGC.parquet"),
                     "--gamma", "0.95", "--horizon", "20", "-o",
                     str(d / f"{out}.agent.parquet")]) == 0
        assert main(["run", "--experiment", str(d / "test_sets/GC.parquet"), "--agent",
                     str(d / f"{out}.agent.parquet"), "-o", str(d / f"{out}.run.parquet")]) == 0
    runs = d / "runs/GC-UGC"
    eg = pl.concat([pl.read_parquet(runs / "e-greedy__epsilon=0.1/0-4.parquet"),
                    pl.read_parquet(runs / "e-greedy__epsilon=0.1/4-6.parquet")])
    assert_frame_equal(eg.drop(TIMING), pl.read_parquet(d / "eg.run.parquet").drop(TIMING))
    assert_frame_equal(
        pl.read_parquet(runs / "beb__beta=1__compat=true/0-6.parquet").drop(TIMING),
        pl.read_parquet(d / "beb.run.parquet").drop(TIMING))
    err = capsys.readouterr().err
    assert "[run_test_0] 3/3 beb (beta=1.0, compat=True) on GC-UGC MDPs 0:6:" in err


def test_a_failing_unit_is_named_and_the_finished_ones_are_kept(inputs, tmp_path, capsys):
    d = inputs
    good = ["random", "UGC", "GC-UGC", "GC", 0, 6]
    bad = ["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 60]  # 6 MDPs only
    spec = _spec(d, [good, bad])
    partial = tmp_path / "partial"
    assert main(["batch", "--spec", json.dumps(spec), "--partial", str(partial)]) == 2
    err = capsys.readouterr().err
    assert ("run_test_0, unit 2/2 (e-greedy (epsilon=0.1) on GC-UGC MDPs 0:60): "
            "MDPs 0:60: the test set has 6") in err
    assert len(list(partial.glob("*.parquet"))) == 1  # the finished unit, kept
    out = d / "runs/GC-UGC/random/0-6.parquet"
    first = pl.read_parquet(out)
    out.unlink()  # (what Snakemake does with a failed job's outputs)
    bad[5] = 6
    assert batch.run_batch(spec, str(partial), progress=False) == 1  # only the second
    assert_frame_equal(pl.read_parquet(out), first)  # the kept one
    assert not partial.exists()  # removed once every unit is done
    assert "finished by an earlier attempt" in capsys.readouterr().err


def test_an_edited_input_is_not_taken_from_the_partial_directory(inputs, tmp_path):
    d = tmp_path
    for f in ("distributions/UGC.parquet", "test_sets/GC.parquet"):
        (d / f).parent.mkdir(exist_ok=True)
        (d / f).write_bytes((inputs / f).read_bytes())
    spec = _spec(d, [["random", "UGC", "GC-UGC", "GC", 0, 6]])
    key = batch.unit_key(spec, batch.expand(spec)[0])
    os.utime(d / "test_sets/GC.parquet", ns=(1, 1))  # regenerated since
    assert batch.unit_key(spec, batch.expand(spec)[0]) != key


_A = '"root": "r", "agents": {"a": {"ref": "random"}}'


@pytest.mark.parametrize("text, msg", [
    ("[1]", "expected a JSON object"),
    ("{", "not valid JSON"),
    ('{"kind": "play", "units": []}', "kind must be one of train, run"),
    ('{"kind": "run", "agents": {}, "units": []}', "root must be"),
    ('{"kind": "run", "root": "r", "agents": {"a": 1}, "units": []}', "agents must map"),
    ('{"kind": "run", ' + _A + ', "units": [["a", "P"]]}', "units[0] must be [agent, prior, "),
    ('{"kind": "run", ' + _A + ', "units": [["b", "P", "E", "T", 0, 1]]}', "units[0] must"),
    ('{"kind": "run", ' + _A + ', "units": [["a", "P", "E", "T", 0, true]]}', "units[0]"),
    ('{"kind": "train", ' + _A + ', "units": [["a", "P"], ["a", "P"]]}',
     "r/agents/P/a.parquet is the output of two units"),
])
def test_bad_specs_are_one_line(text, msg):
    with pytest.raises(BBRLError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        batch.load_spec(text)


# ---- the plan's bundles -------------------------------------------------------------------


def _plan(overlay: dict | None = None, preset: str = "quick") -> P.Plan:
    cfg = copy.deepcopy(BASE)
    for k, v in (overlay or {}).items():
        cfg["presets"][preset][k] = v
    return P.load(cfg, {"preset": preset})


def test_bundles_cover_every_unit_once_within_the_target():
    plan = _plan({"bundle_minutes": 0.05})  # 3 s: several bundles per algorithm
    bundles = B.bundles(plan)
    target = B.target_seconds(plan)
    runs = [(u.split, u.experiment.name, u.agent.key, u.start, u.stop)
            for b in bundles if b.kind == "run" for u in b.units]
    expected = [("test", e.name, a.key, s, t) for e in plan.experiments
                for a in plan.agents_of(e) for s, t in plan.chunks(e, a)]
    # the quick preset chooses on validation sets (issue 34): the algorithms with several
    # configurations play them too, in bundles of their own
    expected += [("validation", e.name, a.key, s, t) for e in plan.experiments
                 for a in plan.validation_agents(e) for s, t in plan.chunks(e, a, "validation")]
    assert any(r[0] == "validation" for r in expected)
    assert sorted(runs) == sorted(expected) and len(set(runs)) == len(runs)
    for b in bundles:
        assert len({u.agent.algorithm for u in b.units}) == 1
        assert {getattr(u, "split", "test") for u in b.units} == {b.split}
        assert len(b.units) == 1 or b.seconds <= target + 1e-9
    trains = {(u.prior, u.agent.key) for b in bundles if b.kind == "train" for u in b.units}
    assert trains == {(p, a.key) for a in plan.agents if a.algorithm == "opps-ds"
                      for p in plan.priors_of(a)}
    assert len({b.name for b in bundles}) == len(bundles)


def test_editing_one_algorithm_moves_only_its_bundles():
    before = _plan()
    algs = copy.deepcopy(BASE["presets"]["quick"]["algorithms"])
    algs["e-greedy"] = {"epsilon": [0.0, 0.1, 0.7]}
    after = _plan({"algorithms": algs})
    fs = {"F2": "results/formula_sets/F2.parquet", "F3": "results/formula_sets/F3.parquet"}

    def specs(plan):
        return {b.name: B.spec_json(plan, b, "results", fs) for b in B.bundles(plan)}

    a, b = specs(before), specs(after)
    changed = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert changed and all(k.endswith(("e_greedy_0", "e_greedy_1")) for k in changed), changed


def test_the_quick_preset_runs_in_a_few_dozen_jobs():
    plan = _plan()
    n = B.summary(plan)
    # one run job per algorithm (each holds all its agents' cheap runs), one training job,
    # and one job of validation runs per algorithm with several configurations
    assert n["run"] == len(plan.algorithms) and n["train"] == 1
    grids = {a.algorithm for e in plan.experiments for a in plan.validation_agents(e)}
    assert n["validate"] == len(grids) == 7
