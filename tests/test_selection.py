"""Choosing each algorithm's configuration without peeking (issue 34): validation sets,
the plan's validation runs, the selection in every analysis, grid sizes, bad input."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from html import unescape
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore import report, seeds
from bbrlcore.analysis import aggregate as A
from bbrlcore.analysis import selection as S
from bbrlcore.analysis.results import markdown, summary_table
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.plan import bundles as B
from synthetic_runs import ALGORITHMS, learning_runs  # (tests/)

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())

# ---- the seed tree -----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, seeds.MAX_SEED))
def test_a_validation_seed_is_another_branch_of_the_seed_tree(s):
    v = seeds.validation_seed(s)
    assert 2**62 <= v < 2**63 and v != s and v == seeds.validation_seed(s)


def test_validation_seeds_of_different_test_seeds_differ():
    vs = [seeds.validation_seed(s) for s in range(500)]
    assert len(set(vs)) == 500
    with pytest.raises(BBRLError, match="test seed -1"):
        seeds.validation_seed(-1)


# ---- validation sets -----------------------------------------------------------------------


def test_a_validation_set_has_its_test_sets_settings_and_other_mdps(tmp_path, capsys):
    ts_path, v_path = tmp_path / "GC.parquet", tmp_path / "GC.validation.parquet"
    assert main(["experiment", "new", "--test", "GC", "--n-mdps", "4", "--horizon", "30",
                 "--gamma", "0.9", "--seed", "3", "-o", str(ts_path)]) == 0
    assert main(["experiment", "validation", str(ts_path), "--n-mdps", "6",
                 "-o", str(v_path)]) == 0
    ts, v = E.read_test_set(ts_path), E.read_test_set(v_path)
    assert (v.n_mdps, v.gamma, v.horizon, v.test.short_name) == (6, 0.9, 30, "GC")
    assert v.seed == seeds.validation_seed(3)
    # drawn from the same distribution, never one of the test MDPs
    assert not any(np.array_equal(a, b) for a in ts.mdps for b in v.mdps)
    meta = artefacts.read_meta(v_path)
    assert meta["split"] == "validation" and meta["validation_of"] == {"seed": 3, "n_mdps": 4}
    assert "split" not in artefacts.read_meta(ts_path)
    capsys.readouterr()
    assert main(["experiment", "show", str(v_path)]) == 0
    assert "validation set (of the test set seeded 3) of 6 MDPs" in capsys.readouterr().out
    assert main(["experiment", "validation", str(ts_path), "--n-mdps", "0", "-o",
                 str(tmp_path / "bad.parquet")]) == 2
    assert "--n-mdps 0: must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "bad.parquet").exists()


# ---- the plan ----------------------------------------------------------------------------------


def _cfg(**keys):
    cfg = {"n_mdps": 8, "horizon": 20,
           "experiments": [{"test": "GC", "prior": "UGC"},
                           {"test": "GDL", "prior": "UGDL",
                            "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1]},
                                           "optimal": {}}}],
           "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1, 0.5]},
                          "beb": {"beta": [1.0]}, "soft-max": {"tau": [0.1, 1.0]},
                          "optimal": {"criterion": ["discounted", "undiscounted"]}}}
    cfg.update(keys)
    return cfg


def test_only_algorithms_with_several_configurations_play_validation_sets():
    plan = P.load(_cfg())  # a study that leaves selection out does not peek
    assert plan.config["selection"] == "validation" and plan.validating
    assert plan.config["validation_mdps"] == 8  # min(n_mdps, 100)
    gc, gdl = plan.experiments
    # e-greedy (2), soft-max (2) and its compat variants (2): chosen; BEB and BEB (compat)
    # (1 each): nothing to choose; Optimal (2): the reference, never chosen
    assert sorted(a.key for a in plan.validation_agents(gc)) == [
        "e-greedy__epsilon=0.1", "e-greedy__epsilon=0.5", "soft-max__tau=0.1",
        "soft-max__tau=0.1__compat=true", "soft-max__tau=1", "soft-max__tau=1__compat=true"]
    assert plan.validation_agents(gdl) == []  # its own block: one configuration each
    assert plan.validation_tests == ["GC"] and plan.validation_experiments == [gc]
    assert plan.grid_size(gc, plan.agent("beb__beta=1__compat=true")) == 1
    assert plan.grid_size(gc, plan.agent("soft-max__tau=1")) == 2
    assert P.load(_cfg(n_mdps=500)).config["validation_mdps"] == P.VALIDATION_MDPS == 100
    assert P.load(_cfg(validation_mdps=3)).chunks(gc, plan.agent("e-greedy__epsilon=0.1"),
                                                  "validation") == [(0, 3)]
    test = P.load(_cfg(selection="test"))
    assert not test.validating and test.validation_experiments == []
    assert B.summary(test)["validate"] == 0 and B.summary(plan)["validate"] == 2


def test_switching_selection_adds_validation_jobs_and_changes_no_test_job():
    fs: dict[str, str] = {}
    specs = {}
    for sel in ("test", "validation"):
        plan = P.load(_cfg(selection=sel))
        specs[sel] = {b.name: B.spec_json(plan, b, "results", fs) for b in B.bundles(plan)}
    added = set(specs["validation"]) - set(specs["test"])
    assert added == {"validate_e_greedy_0", "validate_soft_max_0"}
    assert all(specs["test"][k] == specs["validation"][k] for k in specs["test"])
    plan = P.load(_cfg())
    b = next(b for b in B.bundles(plan) if b.name == "validate_e_greedy_0")
    spec = B.spec(plan, b, "results", fs)
    assert spec["units"] == [["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 8,
                              "validation"],
                             ["e-greedy__epsilon=0.5", "UGC", "GC-UGC", "GC", 0, 8,
                              "validation"]]
    assert b.outputs("results") == [
        "results/runs_validation/GC-UGC/e-greedy__epsilon=0.1/0-8.parquet",
        "results/runs_validation/GC-UGC/e-greedy__epsilon=0.5/0-8.parquet"]
    assert "results/test_sets/GC.validation.parquet" in B.inputs(plan, b, "results", fs)
    # no warm-up job is added for it (a new input of the test runs' job would rerun it):
    # it waits for the test runs' job, which compiles e-greedy's kernels
    assert B.warmed_algorithms(plan) == B.warmed_algorithms(P.load(_cfg(selection="test")))
    assert B.compiled_after(plan, b, "results") == (
        "results/runs/GC-UGC/e-greedy__epsilon=0.1/0-8.parquet")
    test_b = next(x for x in B.bundles(plan) if x.name == "run_e_greedy_0")
    assert B.compiled_after(plan, test_b, "results") is None


@pytest.mark.parametrize("keys, message", [
    ({"selection": "peek"}, "config.yaml: selection='peek': expected validation"),
    ({"selection": True}, "config.yaml: selection=True: expected validation"),
    ({"validation_mdps": 0}, "config.yaml: validation_mdps=0: must be >= 1"),
    ({"validation_mdps": "some"}, "config.yaml: validation_mdps='some': expected an integer"),
    ({"validation_mdps": 10**8}, "config.yaml: validation_mdps=100000000: must be <= "),
])
def test_bad_selection_keys_are_one_line(keys, message):
    with pytest.raises(BBRLError) as e:
        P.load(_cfg(**keys))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_the_presets_choose_where_the_issue_says():
    def sel(preset=None):
        return P.load(copy.deepcopy(BASE), {"preset": preset} if preset else {}).config[
            "selection"]

    assert sel() == "test" and sel("paper") == "test"  # the paper's, and its tables
    for preset in ("quick", "extended", "mine"):
        assert sel(preset) == "validation", preset
    assert BASE["presets"]["families"]["selection"] == "validation"
    with pytest.raises(BBRLError, match=r"presets\.quick\.validation_mdps=0: must be >= 1"):
        cfg = copy.deepcopy(BASE)
        cfg["presets"]["quick"]["validation_mdps"] = 0
        P.load(cfg, {"preset": "quick"})


def test_bbrl_estimate_prices_the_validation_runs(capsys):
    from bbrlcore.cli.estimate import estimate, selection_line

    plan = P.load(_cfg())
    rows = estimate(plan)
    assert rows["e-greedy"]["valid_h"] > 0 and rows["e-greedy"]["validate_jobs"] == 1
    assert rows["beb"]["valid_h"] == 0 and rows["random"]["valid_h"] == 0
    # validation_mdps trajectories of each e-greedy configuration in GC-UGC (not in
    # GDL-UGDL, where e-greedy has one configuration), priced by the cost model
    gc = plan.experiments[0]
    assert rows["e-greedy"]["valid_h"] == pytest.approx(sum(
        8 * plan.seconds_per_trajectory(gc, a) for a in plan.validation_agents(gc)
        if a.algorithm == "e-greedy") / 3600, rel=1e-9)
    for r in rows.values():
        assert r["total_h"] == pytest.approx(r["offline_h"] + r["run_h"] + r["valid_h"]
                                             + r["overhead_h"])
    assert "8 validation MDPs" in selection_line(plan) and "e-greedy, soft-max" in \
        selection_line(plan)
    test = estimate(P.load(_cfg(selection="test")))
    assert all(r["valid_h"] == 0 and r["validate_jobs"] == 0 for r in test.values())


# ---- bbrl batch --------------------------------------------------------------------------------


def test_a_validation_unit_plays_the_validation_set(tmp_path, capsys):
    d = tmp_path
    assert main(["distribution", "import", "UGC", "-o", str(d / "distributions/UGC.parquet")]) == 0
    assert main(["experiment", "new", "--test", "GC", "--n-mdps", "5", "--horizon", "20",
                 "--seed", "3", "-o", str(d / "test_sets/GC.parquet")]) == 0
    assert main(["experiment", "validation", str(d / "test_sets/GC.parquet"), "--n-mdps",
                 "4", "-o", str(d / "test_sets/GC.validation.parquet")]) == 0
    spec = {"bundle": "validate_e_greedy_0", "kind": "run", "version": "x", "root": str(d),
            "seed": 0, "gamma": 0.95, "horizon": 20,
            "agents": {"e-greedy__epsilon=0.1": {"ref": "e-greedy",
                                                 "params": {"epsilon": 0.1}}},
            "units": [["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 4, "validation"],
                      ["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 5]]}
    assert main(["batch", "--spec", json.dumps(spec)]) == 0
    v = d / "runs_validation/GC-UGC/e-greedy__epsilon=0.1/0-4.parquet"
    t = d / "runs/GC-UGC/e-greedy__epsilon=0.1/0-5.parquet"
    tv, meta = artefacts.read_artefact(v, "run")
    assert meta["split"] == "validation" and "split" not in artefacts.read_meta(t)
    assert tv.height == 4 and (tv["test_seed"] == seeds.validation_seed(3)).all()
    assert (pl.read_parquet(t)["test_seed"] == 3).all()
    bad = {**spec, "units": [["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 4, "train"]]}
    capsys.readouterr()
    assert main(["batch", "--spec", json.dumps(bad)]) == 2
    err = capsys.readouterr().err
    assert "units[0] must be [agent, prior, experiment, test, start, stop]" in err
    assert err.count("\n") == 1


# ---- the analysis: choosing on validation runs ----------------------------------------------

#: e-greedy 0.1 learns better than 0.5 on the test MDPs ...
TEST_ALGS = tuple(a for a in ALGORITHMS if a[0] in ("random", "optimal", "e-greedy", "beb"))
#: ... and worse on the validation MDPs (another draw, where 0.5 is the better)
VALIDATION_ALGS = tuple(
    (alg, agent, c, *((0.1, 0.1) if agent.endswith("0.1") else (0.6, 0.6)), tau, off)
    if alg == "e-greedy" else (alg, agent, c, p0, p1, tau, off)
    for alg, agent, c, p0, p1, tau, off in TEST_ALGS)
EXPS = ("GC-GC", "GC-UGC")


def _runs(n: int = 12, T: int = 10) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Test runs, and the validation runs of e-greedy (the only algorithm with a grid)."""
    test = learning_runs(EXPS, algorithms=TEST_ALGS, n=n, T=T)
    val = (learning_runs(EXPS, algorithms=VALIDATION_ALGS, n=n - 2, T=T, seed=1)
           .filter(pl.col("algorithm") == "e-greedy")
           .with_columns(pl.lit(seeds.validation_seed(0)).alias("test_seed")))
    return test, val


def _mean(m: pl.DataFrame, exp: str, agent: str) -> float:
    return float(m.filter((pl.col("experiment") == exp) & (pl.col("agent") == agent))
                 ["discounted_return"].mean())


def test_the_reported_agent_is_the_validation_choice_with_its_test_score():
    m, v = _runs()
    s = summary_table(m)
    for exp in EXPS:  # the premise: the two choices differ
        assert _mean(m, exp, "e-greedy__epsilon=0.1") > _mean(m, exp, "e-greedy__epsilon=0.5")
        assert _mean(v, exp, "e-greedy__epsilon=0.5") > _mean(v, exp, "e-greedy__epsilon=0.1")
    peek = A.best_agents(m, summary=s)
    c = S.choose_on_validation(s, v)
    best = A.best_agents(m, summary=c)
    assert S.selection_of(s) == "test" and S.selection_of(c) == "validation"
    for exp in EXPS:
        e_peek = peek.filter((pl.col("experiment") == exp) & (pl.col("family") == "e-Greedy"))
        e = best.filter((pl.col("experiment") == exp) & (pl.col("family") == "e-Greedy"))
        assert e_peek["agent"][0] == "e-greedy__epsilon=0.1"
        assert e["agent"][0] == "e-greedy__epsilon=0.5"
        assert e["mean"][0] == pytest.approx(_mean(m, exp, "e-greedy__epsilon=0.5"))
        assert e["validation_mean"][0] == pytest.approx(_mean(v, exp, "e-greedy__epsilon=0.5"))
        assert e["validation_n"][0] == 10 and e["grid_size"][0] == 2
        assert best.filter((pl.col("experiment") == exp) & (pl.col("family") == "BEB"))[
            "grid_size"][0] == 1
    # "among the best", the aggregates and the curves take the same agent
    among = A.among_best_table(m, summary=c)
    assert set(among.filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.5"}
    agg = A.compute(m, n_resamples=100, summary=c)
    assert agg.meta["selection"] == "validation"
    assert set(agg.tables["best_agents"].filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.5"}
    norm = agg.tables["normalised"]
    x = norm.filter((pl.col("experiment") == "GC-GC")
                    & (pl.col("agent") == "e-greedy__epsilon=0.5"))["normalised_score"].mean()
    mean_e = agg.tables["metrics"].filter(pl.col("family") == "e-Greedy")["mean"][0]
    y = norm.filter((pl.col("experiment") == "GC-UGC")
                    & (pl.col("agent") == "e-greedy__epsilon=0.5"))["normalised_score"].mean()
    assert mean_e == pytest.approx((x + y) / 2)
    from bbrlcore.analysis import curves as C

    cv = C.curves(m, n_resamples=100, best=best)
    assert set(cv.tables["curves"].filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.5"}
    md = markdown(c)
    assert "| e-greedy | 2 | e-greedy__epsilon=0.5 |" in md and "validation MDPs" in md
    assert "| e-greedy | 2 | e-greedy__epsilon=0.1 |" in markdown(s)


def test_choosing_on_the_test_runs_is_the_papers_selection_unchanged():
    """Validation runs that rank the configurations as the test runs do choose the same
    agents: the tables are those of the paper's selection, but for the validation
    columns; and a summary without them is the paper's selection itself."""
    m, _ = _runs()
    same = (m.filter(~pl.col("algorithm").is_in(["random", "optimal"]))
            .with_columns(pl.lit(seeds.validation_seed(0)).alias("test_seed")))
    s = summary_table(m)
    c = S.choose_on_validation(s, same)
    for kw in ({}, {"online_bound": 1.0}, {"separate_compat": False}):
        a = A.best_agents(m, summary=s, **kw)
        b = A.best_agents(m, summary=c, **kw)
        assert a.equals(S.without_validation(b)), kw
    a, b = A.among_best_table(m, summary=s), A.among_best_table(m, summary=c)
    assert a.equals(b)
    assert S.without_validation(c).equals(s)


def test_time_bounds_admit_by_the_test_times_and_choose_by_validation():
    m, v = _runs()
    slow = pl.col("agent") == "e-greedy__epsilon=0.5"
    m = m.with_columns(pl.when(slow).then(pl.col("online_time_s") * 100)
                       .otherwise(pl.col("online_time_s")).alias("online_time_s"))
    c = S.choose_on_validation(summary_table(m), v)
    bound = float(c.filter(pl.col("agent") == "e-greedy__epsilon=0.1")
                  ["online_time_per_decision_s"].max()) * 1.01
    fast = A.best_agents(m, online_bound=bound, summary=c)
    assert set(fast.filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.1"}
    assert set(fast.filter(pl.col("family") == "e-Greedy")["grid_size"]) == {2}


def test_a_family_with_a_grid_needs_every_validation_run():
    m, v = _runs()
    s = summary_table(m)
    lacking = v.filter(pl.col("agent") != "e-greedy__epsilon=0.1")
    with pytest.raises(BBRLError) as e:
        S.choose_on_validation(s, lacking)
    assert ("--validation: experiment GC-GC: e-greedy has 2 configurations and no "
            "validation runs of e-greedy__epsilon=0.1") in str(e.value)
    # merging compat variants into their algorithm makes BEB a grid of two: its
    # validation runs (none here) are needed then
    c = S.choose_on_validation(s, v)
    with pytest.raises(BBRLError, match="BEB has 2 configurations and no validation runs"):
        A.best_agents(m, summary=c, separate_compat=False)


def _write(path: Path, table: pl.DataFrame) -> str:
    artefacts.write_artefact(path, table, "merged", {})
    return str(path)


@pytest.mark.parametrize("change, message", [
    (lambda v: v.with_columns(pl.lit(0, pl.Int64).alias("test_seed")),
     "experiment GC-GC: validation runs on the test set itself (seed 0, the test runs' "
     "seed)"),
    (lambda v: v.with_columns(pl.lit(7, pl.Int64).alias("horizon"),
                              pl.lit(7, pl.Int64).alias("n_steps"),
                              pl.lit(None, pl.List(pl.Float32)).alias("rewards"),
                              pl.lit(None, pl.Float64).alias("undiscounted_return")),
     "experiment GC-GC: validation runs with horizon 7, the test runs' is 10: a validation "
     "table of another distribution or setting"),
    (lambda v: v.with_columns(pl.lit("GDL").alias("test")),
     "experiment GC-GC: validation runs with test 'GDL', the test runs' is 'GC'"),
    (lambda v: v.filter(pl.col("experiment") == "GC-GC").with_columns(
        pl.lit("Grid-Grid").alias("experiment"), pl.lit("Grid").alias("test"),
        pl.lit("Grid").alias("prior")),
     "validation runs of experiment Grid-Grid, which the test runs do not have"),
    (lambda v: v.with_columns(pl.lit("e-greedy__epsilon=0.9").alias("agent")).filter(
        pl.col("mdp_index") < 0).vstack(v.with_columns(
            pl.when(pl.col("agent") == "e-greedy__epsilon=0.5")
            .then(pl.lit("e-greedy__epsilon=0.9")).otherwise(pl.col("agent"))
            .alias("agent"))),
     "experiment GC-GC: validation runs of agent e-greedy__epsilon=0.9, which the test "
     "runs do not have"),
    (lambda v: v.filter(pl.col("agent") == "e-greedy__epsilon=0.1"),
     "--validation: experiment GC-GC: e-greedy has 2 configurations and no validation runs "
     "of e-greedy__epsilon=0.5"),
])
def test_validation_tables_that_cannot_choose_are_refused_in_one_line(tmp_path, change,
                                                                      message):
    m, v = _runs()
    test = _write(tmp_path / "m.parquet", m)
    bad = _write(tmp_path / "bad.parquet", change(v))
    py = [sys.executable, "-m", "bbrlcore.cli"]
    for cmd in (["summary", test, "--validation", bad, "-o", "s.parquet"],
                ["aggregate", test, "--validation", bad, "--resamples", "100", "-o", "agg"],
                ["report", test, "--validation", bad, "--no-pdf", "-o", "rep"]):
        r = subprocess.run(py + cmd, capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (cmd, r.stderr)
        assert message in r.stderr, (cmd, r.stderr)
        assert not any((tmp_path / o).exists() for o in ("s.parquet", "agg", "rep"))


def test_the_commands_choose_on_validation_tables(tmp_path):
    m, v = _runs()
    test, val = _write(tmp_path / "m.parquet", m), _write(tmp_path / "v.parquet", v)
    assert main(["summary", test, "--validation", val, "-o", str(tmp_path / "s.parquet"),
                 "--markdown", str(tmp_path / "s.md")]) == 0
    s, meta = artefacts.read_artefact(tmp_path / "s.parquet", "summary")
    assert meta["selection"] == "validation" and {"validation_mean", "grid_size"} <= set(
        s.columns)
    assert "| e-greedy | 2 | e-greedy__epsilon=0.5 |" in (tmp_path / "s.md").read_text()
    assert main(["aggregate", test, "--validation", val, "--resamples", "100",
                 "-o", str(tmp_path / "agg")]) == 0
    b = pl.read_parquet(tmp_path / "agg" / "aggregate-best-agents.parquet")
    assert set(b.filter(pl.col("family") == "e-Greedy")["agent"]) == {"e-greedy__epsilon=0.5"}
    assert main(["curves", test, "--validation", val, "--resamples", "100",
                 "-o", str(tmp_path / "cur")]) == 0
    c = pl.read_parquet(tmp_path / "cur" / "curves.parquet")
    assert set(c.filter(pl.col("family") == "e-Greedy")["agent"]) == {"e-greedy__epsilon=0.5"}
    # without --validation: the paper's selection
    assert main(["summary", test, "-o", str(tmp_path / "t.parquet"),
                 "--markdown", str(tmp_path / "t.md")]) == 0
    assert artefacts.read_meta(tmp_path / "t.parquet")["selection"] == "test"
    assert "| e-greedy | 2 | e-greedy__epsilon=0.1 |" in (tmp_path / "t.md").read_text()


def test_the_report_says_which_selection_and_shows_grid_sizes(tmp_path):
    m, v = _runs(n=8, T=6)
    c = S.choose_on_validation(summary_table(m), v)
    out = tmp_path / "val"
    index = report.build(m, c, out, pdf=False, bootstrap_resamples=100)
    html = index.read_text()
    text = S.selection_text("validation", 6)
    assert text in unescape(html) and "6 validation MDPs" in text
    page = unescape((out / "experiments" / "GC-GC.html").read_text())
    assert text in page and "<th>grid</th>" in page and "<th>validation score</th>" in page
    best = pl.read_parquet(out / "data" / "GC-GC-best.parquet")
    e = best.filter(pl.col("family") == "e-Greedy").row(0, named=True)
    assert e["agent"] == "e-greedy__epsilon=0.5" and e["grid_size"] == 2
    assert e["mean"] == pytest.approx(_mean(m, "GC-GC", "e-greedy__epsilon=0.5"))
    agg = pl.read_parquet(out / "data" / "aggregate-best-agents.parquet")
    assert set(agg.filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.5"}
    cmap = pl.read_parquet(out / "data" / "GC-GC-constraint-map.parquet")
    assert set(cmap.filter(pl.col("family") == "e-Greedy")["agent"]) == {
        "e-greedy__epsilon=0.5"}
    tex = (out / "report.tex").read_text()
    assert "Validation" in tex and "chosen on validation MDPs" in tex
    # experiments validated on different numbers of MDPs: the range, not the largest
    other = c.with_columns(pl.when(pl.col("experiment") != "GC-GC").then(9)
                           .otherwise(pl.col("validation_n")).alias("validation_n"))
    assert other["experiment"].n_unique() > 1
    html = report.build(m, other, tmp_path / "range", pdf=False,
                        bootstrap_resamples=100).read_text()
    assert "chosen on 6 to 9 (by experiment) validation MDPs" in html
    assert "chosen on 9 validation MDPs" not in html
    # the paper's selection: said, the grid shown, no validation column
    index = report.build(m, summary_table(m), tmp_path / "test", pdf=False,
                         bootstrap_resamples=100)
    assert S.selection_text("test") in unescape(index.read_text())
    page = (tmp_path / "test" / "experiments" / "GC-GC.html").read_text()
    assert "<th>grid</th>" in page and "validation score" not in page
    best = pl.read_parquet(tmp_path / "test" / "data" / "GC-GC-best.parquet")
    assert best.filter(pl.col("family") == "e-Greedy")["agent"][0] == "e-greedy__epsilon=0.1"


def test_the_published_comparison_keeps_the_papers_selection():
    m, v = _runs(n=8, T=6)
    c = S.choose_on_validation(summary_table(m), v)
    an = report.analyse(m, c, n_resamples=100)
    assert S.selection_of(an.summary) == "validation"
    assert S.selection_of(an.published) == "test"


def test_selection_columns_describe_the_tables():
    t = pl.DataFrame({"experiment": ["E"] * 3, "algorithm": ["beb", "beb", "beb"],
                      "compat": [False, False, True],
                      "agent": ["beb__beta=1", "beb__beta=2", "beb__beta=1__compat=true"]})
    assert S.with_grid_sizes(t)["grid_size"].to_list() == [2, 2, 1]
    assert S.selection_of(t) == "test"


def test_validation_given_with_no_file_needs_single_configurations(tmp_path, capsys):
    """`--validation` with no table (the workflow's, when no algorithm has a grid): every
    algorithm has one configuration, and the summary says it was chosen on validation
    MDPs; an algorithm with several is refused in one line, nothing written."""
    m, _ = _runs()
    single = m.filter(pl.col("agent") != "e-greedy__epsilon=0.5")
    one, two = _write(tmp_path / "one.parquet", single), _write(tmp_path / "two.parquet", m)
    assert main(["summary", one, "--validation", "-o", str(tmp_path / "s.parquet")]) == 0
    s = pl.read_parquet(tmp_path / "s.parquet")
    assert S.selection_of(s) == "validation" and s["validation_mean"].null_count() == s.height
    capsys.readouterr()
    assert main(["summary", two, "--validation", "-o", str(tmp_path / "t.parquet")]) == 2
    err = capsys.readouterr().err
    assert "e-greedy has 2 configurations and no validation runs" in err
    assert err.count("\n") == 1 and not (tmp_path / "t.parquet").exists()
