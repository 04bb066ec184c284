"""The colosseum and bsuite presets (issue 43): configuration variables, Colosseum
benchmark entries, their laptop forms, and the estimate's price of Colosseum's
indicators."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from bbrlcore import plan as P
from bbrlcore.errors import BBRLError
from bbrlcore.mdp.families import colosseum_instances as CI
from bbrlcore.plan import cost

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


#: Colosseum's tuned NIG prior means (its cached PSRLEpisodic / PSRLContinuous gins)
EPI, CON = "0.41854463543357456", "0.23589883401606418"


def _validate(cfg: dict) -> None:
    import jsonschema

    jsonschema.validate(cfg, yaml.safe_load(SCHEMA.read_text()))


def test_colosseum_preset_is_every_instance_bbrl_expresses():
    plan = P.load(copy.deepcopy(BASE), {"preset": "colosseum"})
    expressed = [n for n, i in CI.INSTANCES.items() if i.problem_params is not None]
    assert [e.test for e in plan.experiments] == expressed and len(expressed) == 80
    assert all(e.prior == f"U{e.test}+rnig"
               + (EPI if CI.INSTANCES[e.test].episodic else CON) for e in plan.experiments)
    assert plan.config["n_mdps"] == 20 and plan.config["score"] == "undiscounted"
    for e in plan.experiments:
        inst = CI.INSTANCES[e.test]
        assert e.log_every == 100
        algs = {a.algorithm for a in plan.agents_of(e)}
        if inst.episodic:  # floor(500,000 / H) episodes of the natural length
            H = e.episode_length
            assert H > 0 and 500_000 - 10_000 * H <= e.horizon <= 500_000
            assert algs == {"random", "psrl", "q-learning-ucb", "optimal"}
            q = next(a for a in plan.agents_of(e) if a.algorithm == "q-learning-ucb")
            from bbrlcore.agents.q_ucb import COLOSSEUM_BENCHMARK

            assert {**COLOSSEUM_BENCHMARK, **q.param_dict} == COLOSSEUM_BENCHMARK
        else:
            assert e.episode_length == 0 and e.horizon == 500_000
            assert algs == {"random", "psrl", "ucrl2", "optimal"}
            u = next(a for a in plan.agents_of(e) if a.algorithm == "ucrl2")
            from bbrlcore.agents.ucrl2 import COLOSSEUM_BENCHMARK as UCRL2_BENCHMARK

            assert {k: u.param_dict[k] for k in UCRL2_BENCHMARK} == UCRL2_BENCHMARK
    # every instance resolves: none is skipped, nothing said about skipping
    assert all(i.problem_params is not None for i in CI.INSTANCES.values())
    assert not any("skipped" in n for n in plan.notes)
    _validate(plan.config)


def test_colosseum_laptop_form_by_variables():
    plan = P.load(copy.deepcopy(BASE), {
        "preset": "colosseum", "colosseum_settings": ["EC-DeepSea-0", "CE-RiverSwim-0"],
        "colosseum_steps": 2000, "n_mdps": 2})
    assert [(e.test, e.horizon, e.episode_length) for e in plan.experiments] == [
        ("Colosseum-EC-DeepSea-0", 2000, 5), ("Colosseum-CE-RiverSwim-0", 2000, 0)]
    assert plan.config["variables"]["colosseum_steps"] == 2000
    assert "colosseum_steps" not in plan.config
    _validate(plan.config)
    # an episodic selection only: the continuing entry selects nothing, and says so
    plan = P.load(copy.deepcopy(BASE), {"preset": "colosseum", "colosseum_settings": "EC",
                                        "colosseum_steps": 1000})
    assert {CI.INSTANCES[e.test].setting for e in plan.experiments} == {
        "episodic communicating"}
    assert any("selects no Colosseum instance" in n for n in plan.notes)


def test_bsuite_preset_and_its_laptop_form():
    plan = P.load(copy.deepcopy(BASE), {"preset": "bsuite"})
    assert [e.test for e in plan.experiments] == [f"DeepSea-{n}" for n in range(10, 51, 2)]
    assert all(e.episodes == 10_000 and e.episode_length == int(e.test.split("-")[1])
               for e in plan.experiments)
    assert {a.algorithm for a in plan.agents} == {"random", "psrl", "q-learning-ucb",
                                                  "ucrl2", "optimal"}
    assert next(a for a in plan.agents if a.algorithm == "ucrl2").param_dict == {
        "bound": "bernstein"}
    from bbrlcore.mdp import families

    assert families.make("deepsea", size=10).params["form"] == 0  # bsuite's form
    _validate(plan.config)
    small = P.load(copy.deepcopy(BASE), {"preset": "bsuite", "bsuite_sizes": [10, 12],
                                         "bsuite_episodes": 200, "n_mdps": 2})
    assert [(e.test, e.episodes) for e in small.experiments] == [("DeepSea-10", 200),
                                                                 ("DeepSea-12", 200)]


def test_variables_and_colosseum_entries_are_checked(monkeypatch):
    base = {"experiments": [{"test": {"family": "deepsea", "size": "$sizes"},
                             "prior": "uniform", "episodes": 5}],
            "algorithms": {"random": {}}}
    with pytest.raises(BBRLError, match=r"experiments\[0\]\.test\.size=\$sizes: no such "
                       "variable"):
        P.load(copy.deepcopy(base))
    with pytest.raises(BBRLError, match="unknown key"):
        P.load(copy.deepcopy(base), {"sizes": [3]})  # no variable of that name
    ok = P.load({**copy.deepcopy(base), "variables": {"sizes": [3, 4]}}, {"sizes": [5]})
    assert [e.test for e in ok.experiments] == ["DeepSea-5"]
    bad = {"experiments": [{"test": "GC", "prior": "UGC", "steps": 10}],
           "algorithms": {"random": {}}}
    with pytest.raises(BBRLError, match=r"experiments\[0\]\.steps: applies to a Colosseum"):
        P.load(bad)
    col = {"experiments": [{"test": {"colosseum": "EC-Taxi-0"}, "prior": "uniform",
                            "steps": 100}], "algorithms": {"random": {}}}
    # every instance resolves today; one made unexpressed tests the refusal and the skip
    from dataclasses import replace

    taxi = "Colosseum-EC-Taxi-0"
    monkeypatch.setitem(CI.INSTANCES, taxi, replace(CI.INSTANCES[taxi], problem_params=None,
                                                    needs="a feature a test takes away"))
    with pytest.raises(BBRLError, match="does not express it yet"):
        P.load(col)
    col["experiments"][0]["test"] = {"colosseum": ["EC"], "episodic": True}
    notes = " ".join(P.load(copy.deepcopy(col)).notes)
    assert "1 of the 20 Colosseum instances selected are skipped" in notes
    assert "EC-Taxi-0 (needs " in notes
    col["experiments"][0]["test"] = {"colosseum": "XX"}
    with pytest.raises(BBRLError, match="expected a setting"):
        P.load(col)
    col["experiments"][0]["test"] = {"colosseum": "EC"}
    del col["experiments"][0]["steps"]
    with pytest.raises(BBRLError, match="needs steps"):
        P.load(col)


def test_estimate_prices_colosseum_indicators():
    from bbrlcore.cli.estimate import indicator_hours

    plan = P.load(copy.deepcopy(BASE), {"preset": "colosseum", "colosseum_steps": 20_000,
                                        "colosseum_settings": ["EC-SimpleGrid-3"],
                                        "n_mdps": 3})
    (e,) = plan.experiments
    psrl = next(a for a in plan.agents_of(e) if a.algorithm == "psrl")
    per_eval = cost.evaluation_seconds(e.test, e.episode_length)
    rec = [r for r in cost.evaluation_records() if r.test == e.test]
    assert per_eval == max(r.seconds for r in rec) > 0  # measured, not a default
    rows = e.horizon // 100 + 1
    assert plan.indicator_seconds(e, psrl) == pytest.approx(rows * per_eval)
    h, n = indicator_hours(plan)
    assert n == 3 * rows * len(plan.agents_of(e))
    assert h == pytest.approx(3 * rows * per_eval * len(plan.agents_of(e)) / 3600)
    # without indicators (bsuite's preset) nothing is added
    b = P.load(copy.deepcopy(BASE), {"preset": "bsuite", "bsuite_sizes": [10]})
    assert indicator_hours(b) == (0.0, 0)
    # an unmeasured test: the measurements' largest price per unit of work
    assert cost.evaluation_seconds("DeepSea-30", 30) > cost.evaluation_seconds(
        "DeepSea-10", 10) > 0


@pytest.mark.slow
def test_colosseum_laptop_form_dry_run(tmp_path):
    """The workflow plans the colosseum preset's laptop form given by --config
    variables (snakemake parses the list as YAML), naming the instances it skips."""
    from tests.test_workflow import _jobs, _snake, _write_cfg

    cfg = _write_cfg(tmp_path, copy.deepcopy(BASE))
    r = _snake(tmp_path, cfg, "--config", "preset=colosseum",
               "colosseum_settings=[EC-DeepSea-0, CE-RiverSwim-0]", "colosseum_steps=2000",
               "n_mdps=2", "-n")
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = _jobs(r.stdout + r.stderr)
    assert jobs["test_set"] == jobs["merge"] == 2
    assert "testset=Colosseum-EC-DeepSea-0@E400xH5" in r.stdout


def _laptop_run(tmp_path, *config: str):
    from tests.test_workflow import _snake, _write_cfg

    cfg = _write_cfg(tmp_path, copy.deepcopy(BASE))
    r = _snake(tmp_path, cfg, "--cores", "2", "--config", *config)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return tmp_path / "results"


@pytest.mark.slow
def test_bsuite_laptop_form_runs_and_reaches_bsuites_score(tmp_path):
    """A tiny bsuite run (DeepSea-10, 200 episodes, 2 test MDPs) end to end: its runs
    carry episode returns, and the report computes bsuite's DeepSea score from them."""
    import polars as pl

    res = _laptop_run(tmp_path, "preset=bsuite", "bsuite_sizes=[10]", "bsuite_episodes=200",
                      "n_mdps=2")
    m = pl.read_parquet(res / "merged/DeepSea-10-UDeepSea-10@E200xH10.parquet")
    assert m["episode_returns"].list.len().unique().to_list() == [200]
    s = pl.read_parquet(res / "report/data/curves-bsuite-deepsea-summary.parquet")
    assert set(s["family"]) >= {"Random", "PSRL"} and s["n_sizes"].to_list()[0] == 1


@pytest.mark.slow
def test_colosseum_laptop_form_runs_with_its_indicators(tmp_path):
    """A tiny Colosseum run (one episodic and one continuing instance, 2,000 steps, 2
    test MDPs) end to end, report included, with Colosseum's expected regret in the run
    tables (Random's; Optimal's zero on the episodic instance)."""
    import polars as pl

    res = _laptop_run(tmp_path, "preset=colosseum",
                      "colosseum_settings=[EC-DeepSea-0, CE-RiverSwim-0]",
                      "colosseum_steps=2000", "n_mdps=2")
    assert (res / "report/index.html").is_file()
    for exp in (f"Colosseum-EC-DeepSea-0-UColosseum-EC-DeepSea-0+rnig{EPI}@E400xH5",
                f"Colosseum-CE-RiverSwim-0-UColosseum-CE-RiverSwim-0+rnig{CON}@T2000n100"):
        m = pl.read_parquet(res / f"merged/{exp}.parquet")
        rnd = m.filter(pl.col("agent") == "random")["normalised_expected_regret"]
        assert rnd.null_count() == 0 and (rnd > 0).all(), exp
    m = pl.read_parquet(res / f"merged/Colosseum-EC-DeepSea-0-UColosseum-EC-DeepSea-0+rnig{EPI}"
                              "@E400xH5.parquet")
    opt = m.filter(pl.col("agent").str.starts_with("optimal"))
    assert opt["normalised_expected_regret"].abs().max() < 1e-6
    # the learning agents' expected regret under +rnig: the test below; Optimal's on a
    # continuing instance is null (its undiscounted policy depends on the steps left)


@pytest.mark.slow
def test_colosseum_learning_agents_report_expected_regret_under_rnig(tmp_path):
    import polars as pl

    res = _laptop_run(tmp_path, "preset=colosseum", "colosseum_settings=[EC-DeepSea-0]",
                      "colosseum_steps=1000", "n_mdps=1")
    m = pl.read_parquet(res / f"merged/Colosseum-EC-DeepSea-0-UColosseum-EC-DeepSea-0+rnig{EPI}"
                              "@E200xH5.parquet")
    assert m["normalised_expected_regret"].null_count() == 0
    assert set(m["algorithm"]) == {"random", "psrl", "q-learning-ucb", "optimal"}


def test_a_variable_merged_into_the_base_by_snakemake_is_the_variable():
    """Without --configfile, Snakemake merges --config values into config.yaml's own
    keys too: the plan takes such a key, when it names a variable, as the variable."""
    base = {**copy.deepcopy(BASE), "bsuite_episodes": 300}
    plan = P.load(base, {"preset": "bsuite", "bsuite_episodes": 300, "bsuite_sizes": [10]})
    assert [e.episodes for e in plan.experiments] == [300]
    assert "bsuite_episodes" not in plan.config
