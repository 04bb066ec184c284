"""Colosseum's published Tables 11-14 (the shipped data, its parse from the appendix, the
mapping of the appendix's rows to bbrl's instance names) and their comparison with bbrl's
runs (every verdict, the command, the report's section), on synthetic run tables."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrlcore.analysis import colosseum_published as CP
from bbrlcore.cli import main
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp.families import colosseum_instances as CI
from synthetic_runs import learning_runs  # (tests/)

FIXTURE = Path(__file__).parent / "fixtures" / "colosseum" / "parse_tables.py"


def _parser():
    spec = importlib.util.spec_from_file_location("parse_tables", FIXTURE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------------------
# The data


def test_shipped_data_equals_a_parse_of_the_appendix(shared):
    parser = _parser()
    text = (shared / "paper" / "colosseum-appendix.md").read_text()
    assert CP.PUBLISHED_FILE.read_text() == parser.render(parser.parse(text))


def test_the_parse_refuses_text_it_cannot_align(shared):
    parser = _parser()
    text = (shared / "paper" / "colosseum-appendix.md").read_text()
    # a row lost from Table 11 shifts the ones below it: their means no longer match the
    # summary table's, and the parse says so rather than shipping shifted numbers
    line = next(x for x in text.splitlines() if x.startswith("FrozenLake (1)\tPSRL"))
    with pytest.raises(AssertionError):
        parser.parse(text.replace(line + "\n", ""))


def test_every_instance_and_agent_once_with_the_tables_numbers():
    t = CP.published_table()
    assert t.height == 200
    assert t.group_by("instance", "colosseum_agent").len()["len"].max() == 1
    per = t.group_by("setting").agg(pl.len(), pl.col("instance").n_unique().alias("i"))
    assert dict(per.select("setting", "len").iter_rows()) == {"EC": 40, "EE": 40, "CC": 60,
                                                              "CE": 60}
    assert set(t["instance"]) == set(CI.INSTANCES)
    assert set(t["table"]) == {11, 12, 13, 14}
    assert ((t["mean"] >= 0) & (t["mean"] <= 1)).all() and (t["std"] >= 0).all()
    assert t["completed"].drop_nulls().is_between(0, 20).all() and (t["seeds"] == 20).all()
    # the two rows the appendix's text does not show come from its summary tables
    missing = t.filter(pl.col("completed").is_null())
    assert missing.select("instance", "colosseum_agent", "mean", "std").rows() == [
        ("Colosseum-CC-Taxi-0", "UCRL2", 0.12, 0.01), ("Colosseum-CE-Taxi-0", "UCRL2", 0.09, 0.03)]
    assert missing["source"].str.contains("summary table").all()
    # a few rows read by hand from the appendix
    def row(inst, agent):
        r = t.filter(pl.col("instance") == inst, pl.col("colosseum_agent") == agent)
        return r.select("colosseum_mdp", "mean", "std", "completed").row(0)
    assert row("Colosseum-EC-DeepSea-1", "PSRL") == ("DeepSea (2)", 0.54, 0.01, 0)
    assert row("Colosseum-EE-MiniGridEmpty-5", "PSRL") == ("MG-Empty (6)", 0.14, 0.07, 14)
    assert row("Colosseum-CC-MiniGridEmpty-4", "UCRL2") == ("MG-Empty (5)", 0.08, 0.20, 0)
    assert row("Colosseum-CE-RiverSwim-3", "Q-learning") == ("RiverSwim (4)", 0.5, 0.25, 20)
    assert row("Colosseum-CE-RiverSwim-3", "UCRL2") == ("RiverSwim (4)", 0.01, 0.01, 20)
    assert row("Colosseum-CE-MiniGridEmpty-2", "Q-learning") == ("MG-Empty (3)", 0.97, 0.0, 14)


def test_the_appendix_rows_map_to_the_gin_index_their_parameters_say():
    """Colosseum labels gin ``prms_i`` "(i + 1)" (its ``get_formatted_name``); the
    instances' parameters agree with what the tables show of them."""
    t = CP.published_table()
    display = {"MiniGridEmpty": "MG-Empty", "MiniGridRooms": "MG-Rooms"}
    for r in t.iter_rows(named=True):
        inst = CI.INSTANCES[r["instance"]]
        fam = inst.cls.removesuffix("Episodic").removesuffix("Continuous")
        assert r["colosseum_mdp"] == f"{display.get(fam, fam)} ({inst.index + 1})", r
        assert r["algorithm"] == CP.AGENTS[r["colosseum_agent"]]
        assert CI.SETTINGS[r["setting"]] == inst.setting
    by = {(r["instance"], r["colosseum_agent"]): r for r in t.iter_rows(named=True)}
    # episodic communicating DeepSea: (1) is size 5 (solved by both), (2) size 25 (PSRL's
    # run too slow to complete in 10 minutes)
    assert CI.INSTANCES["Colosseum-EC-DeepSea-0"].params["size"] == 5
    assert CI.INSTANCES["Colosseum-EC-DeepSea-1"].params["size"] == 25
    assert by["Colosseum-EC-DeepSea-0", "PSRL"]["completed"] == 20
    assert by["Colosseum-EC-DeepSea-1", "PSRL"]["completed"] == 0
    # continuous ergodic RiverSwim: the two size-80 chains are (3) and (4)
    assert [CI.INSTANCES[f"Colosseum-CE-RiverSwim-{i}"].params["size"]
            for i in range(4)] == [30, 50, 80, 80]


def test_agent_mapping_lists_the_unmapped():
    assert CP.AGENTS == {"PSRL": "psrl", "Q-learning": "q-learning-ucb", "UCRL2": "ucrl2"}
    assert set(CP.UNMAPPED) == {"ActorCritic", "ActorCriticRNN", "BootDQN", "DQN"}
    assert not set(CP.UNMAPPED) & set(CP.published_table()["colosseum_agent"])


# --------------------------------------------------------------------------------------
# The verdict


def test_welch_z_and_the_rounding_allowance_by_hand():
    # |d| = 0.1, less the rounding 0.005; se = sqrt(0.1²/25 + 0.105²/20)
    se = math.sqrt(0.01 / 25 + 0.105 ** 2 / 20)
    assert CP.welch_z(0.5, 0.1, 25, 0.4, 0.1) == pytest.approx(0.095 / se)
    assert CP.welch_z(0.3, 0.1, 25, 0.4, 0.1) == pytest.approx(-0.095 / se)
    assert CP.welch_z(0.0049, 0.0, 20, 0.0, 0.0) == 0.0
    # a printed 0.00 ± 0.00 is at most 0.005 ± 0.005: 0.02 over 20 seeds is far from it
    assert CP.welch_z(0.02, 0.0, 20, 0.0, 0.0) == pytest.approx(0.015 / (0.005 / math.sqrt(20)))
    assert CP.verdict_of(0.02, 0.0, 20, 0.0, 0.0, 20)[0] == "differs"
    assert CP.verdict_of(0.006, 0.001, 20, 0.0, 0.0, 20)[0] == "agrees"


def _runs(spec, n=12, seed=0):
    """Synthetic merged run tables of Colosseum instances: ``spec`` is a list of (test,
    algorithm, agent, table value mean, spread, horizon, log_every); the per-MDP
    ``normalised_expected_regret`` is horizon × (mean + spread × standard normal)."""
    rng = np.random.default_rng(seed)
    parts = []
    for test, alg, agent, mean, spread, horizon, log_every in spec:
        t = learning_runs(experiments=(f"{test}-U{test}",),
                          algorithms=[(alg, agent, False, 0.2, 0.5, 5.0, 0.0)], n=n, T=20,
                          seed=int(rng.integers(1 << 30)), rewards=False)
        v = np.clip(mean + spread * rng.standard_normal(n), 0, None) * horizon
        t = t.with_columns(
            pl.lit(horizon, pl.Int64).alias("horizon"),
            pl.lit(horizon, t["n_steps"].dtype).alias("n_steps"),
            pl.lit(log_every, pl.Int64).alias("log_every"),
            pl.Series("normalised_expected_regret", v if log_every else [None] * n,
                      pl.Float64))
        parts.append(t)
    return pl.concat(parts, how="vertical_relaxed")


T = CP.HORIZON
SPEC = [
    # 0.00 ± 0.00 (20/20) published: bbrl's 0.2 differs
    ("Colosseum-CE-RiverSwim-0", "psrl", "psrl", 0.2, 0.01, T, 100),
    # 0.00 ± 0.00 (20/20): bbrl's 0.002 agrees
    ("Colosseum-CE-RiverSwim-0", "ucrl2", "ucrl2", 0.002, 0.001, T, 100),
    # 0.70 ± 0.19, 0/20: cut by Colosseum's limit
    ("Colosseum-CE-SimpleGrid-0", "psrl", "psrl", 0.05, 0.01, T, 100),
    # 0.09 ± 0.03, seeds not legible
    ("Colosseum-CE-Taxi-0", "ucrl2", "ucrl2", 0.09, 0.03, T, 100),
    # another horizon: not comparable
    ("Colosseum-CE-DeepSea-0", "psrl", "psrl", 0.06, 0.01, 1000, 100),
    # no indicators recorded
    ("Colosseum-CE-FrozenLake-0", "ucrl2", "ucrl2", 0.0, 0.0, T, None),
]


@pytest.fixture(scope="module")
def cmp_table():
    # every Colosseum instance resolves today; one is made unexpressed to test that branch
    from dataclasses import replace

    name = "Colosseum-CE-MiniGridEmpty-0"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(CI.INSTANCES, name, replace(CI.INSTANCES[name], problem_params=None,
                                               needs="a feature a test takes away"))
        return CP.compare(_runs(SPEC))


def test_every_verdict_branch(cmp_table):
    t = cmp_table
    assert t.columns == list(CP.COMPARISON_COLUMNS)
    assert set(t["setting"]) == {"CE"} and t.filter(pl.col("agent").is_null()).height == 55

    def one(inst, alg):
        r = t.filter(pl.col("instance") == inst, pl.col("algorithm") == alg)
        assert r.height == 1
        return r.row(0, named=True)

    r = one("Colosseum-CE-RiverSwim-0", "psrl")
    assert r["verdict"] == "differs" and r["z"] > 3 and r["completed"] == 20
    assert r["published_mean"] == 0.0 and r["n"] == 12
    assert "knows the transitions' support" in r["note"] and "Ouyang" in r["note"]
    assert "rewards known (Colosseum's: a Normal-inverse-gamma prior)" in r["note"]
    r = one("Colosseum-CE-RiverSwim-0", "ucrl2")
    assert r["verdict"] == "agrees" and abs(r["z"]) <= 3
    assert r["note"].startswith("Jaksch et al.'s UCRL2 (form=jaksch), not Colosseum's")
    # Colosseum's form at its benchmark's alphas is its configuration: no note
    assert CP.agent_note("ucrl2", "ucrl2__delta=0.05__form=colosseum") == ""
    assert "other alpha_p or alpha_r" in CP.agent_note(
        "ucrl2", "ucrl2__delta=0.05__form=colosseum__alpha_p=0.5")
    assert r["ci_low"] < r["mean"] < r["ci_high"]
    assert r["ci_high"] - r["mean"] == pytest.approx(1.96 * r["std"] / math.sqrt(12))
    r = one("Colosseum-CE-SimpleGrid-0", "psrl")
    assert r["verdict"] == "cut" and r["completed"] == 0
    assert "cut by its 10-minute limit (0 of 20 seeds)" in r["why"]
    assert "bbrl's complete run is the new number" in r["why"]
    r = one("Colosseum-CE-Taxi-0", "ucrl2")
    assert r["verdict"] == "unknown seeds" and r["z"] is not None and r["completed"] is None
    r = one("Colosseum-CE-DeepSea-0", "psrl")
    assert r["verdict"] == "not comparable" and "T = 1,000" in r["why"] and r["z"] is None
    # not run, each with why
    why = {(x["instance"], x["algorithm"]): x["why"]
           for x in t.filter(pl.col("verdict") == "not run").iter_rows(named=True)}
    assert why["Colosseum-CE-FrozenLake-0", "ucrl2"] == (
        "its runs have no expected indicators (run with indicators: true)")
    assert why["Colosseum-CE-FrozenLake-0", "psrl"] == "no psrl agent on it in these results"
    assert why["Colosseum-CE-RiverSwim-0", "q-learning-ucb"].startswith(
        "bbrl's q-learning-ucb plays episodic interactions only (")
    assert why["Colosseum-CE-RiverSwim-1", "psrl"] == "not in these results"
    assert why["Colosseum-CE-MiniGridEmpty-0", "ucrl2"] == (
        "bbrl does not express this instance yet (it needs a feature a test takes away)")
    assert why["Colosseum-CE-MiniGridEmpty-1", "ucrl2"] == "not in these results"
    assert set(CP.counts(t).values()) >= {1} and sum(CP.counts(t).values()) == 60


def test_every_agent_of_the_algorithm_is_a_row_and_the_table_value_is_divided_by_t():
    spec = [("Colosseum-EC-RiverSwim-0", "q-learning-ucb", f"q-learning-ucb__c={c}",
             0.87, 0.01, T, 100) for c in (1, 2)]
    runs = _runs(spec)
    t = CP.compare(runs).filter(pl.col("agent").is_not_null())
    assert t["agent"].to_list() == ["q-learning-ucb__c=1", "q-learning-ucb__c=2"]
    assert set(t["setting"]) == {"EC"} and (t["published_mean"] == 0.87).all()
    assert t["note"].str.contains("form=jin").all()
    for r in t.iter_rows(named=True):
        v = runs.filter(pl.col("agent") == r["agent"])["normalised_expected_regret"] / T
        assert r["mean"] == pytest.approx(v.mean()) and r["std"] == pytest.approx(v.std())
    assert CP.agent_note("q-learning-ucb", "q-learning-ucb__bonus=bernstein__form=colosseum") == ""


def test_runs_without_colosseum_instances_compare_to_nothing():
    assert CP.compare(learning_runs(n=3, T=5, rewards=False)).is_empty()
    assert not CP.is_colosseum(["GC", "DeepSea-10"])
    with pytest.raises(BBRLError, match="lack the column"):
        CP.bbrl_values(pl.DataFrame({"experiment": ["x"]}))


def test_text_table(cmp_table):
    text = CP.text_table(cmp_table)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["instance", "Colosseum"]
    assert sum("Colosseum-CE-" in x and " agrees" in x for x in lines) == 1
    assert "Agree: 1 of the 2 rows Colosseum completed (within 3 standard errors)" in text
    assert "Not run, bbrl does not express this instance yet (it needs" in text
    assert "Colosseum-CE-MiniGridEmpty-0 (PSRL, UCRL2)" in text
    assert "plays episodic interactions only" in text
    assert "cut by its 10-minute limit (0 of 20 seeds)" in text and CP.CITATION in text


# --------------------------------------------------------------------------------------
# The command and the report


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("colosseum") / "results"
    (out / "merged").mkdir(parents=True)
    runs = _runs(SPEC)
    for (exp,), g in runs.group_by(["experiment"], maintain_order=True):
        artefacts.write_artefact(out / "merged" / f"{exp}.parquet", g, "merged",
                                 {"experiments": [exp]})
    from bbrlcore.analysis.results import summary_table

    artefacts.write_artefact(out / "summary.parquet", summary_table(runs), "summary", {})
    return out, runs


def test_cli_prints_the_colosseum_comparison(results, tmp_path, capsys):
    res, runs = results
    assert main(["compare-published", str(res), "--colosseum-output",
                 str(tmp_path / "c.parquet")]) == 0
    text = capsys.readouterr().out
    assert "Colosseum-CE-RiverSwim-0" in text and "rows Colosseum completed" in text
    assert "no published configuration" not in text  # (the BBRL paper's: none here)
    table, meta = artefacts.read_artefact(tmp_path / "c.parquet", "colosseum-comparison")
    assert table.equals(CP.compare(runs)) and "Conserva" in meta["citation"]


def test_cli_a_summary_alone_cannot_be_compared_with_colosseum(results, capsys):
    res, _ = results
    assert main(["compare-published", str(res / "summary.parquet")]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1
    assert "a summary table holds no expected indicators" in out.err


def test_cli_colosseum_output_without_colosseum_instances_is_one_line(tmp_path, capsys):
    runs = learning_runs(n=3, T=5, rewards=False)
    artefacts.write_artefact(tmp_path / "m.parquet", runs, "merged", {})
    assert main(["compare-published", str(tmp_path / "m.parquet"), "--colosseum-output",
                 str(tmp_path / "c.parquet")]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip().splitlines() == [
        "bbrl: error: --colosseum-output: these results hold no Colosseum instance"]
    assert not (tmp_path / "c.parquet").exists()


def test_report_section(results, tmp_path):
    from bbrlcore import report

    _, runs = results
    sec = report.colosseum_section(runs, tmp_path)
    assert [s["code"] for s in sec["settings"]] == ["CE"]
    rows = sec["settings"][0]["rows"]
    assert {r["verdict"] for r in rows} == {"agrees", "differs", "cut", "unknown seeds",
                                            "not comparable"}
    assert pl.read_parquet(tmp_path / "data" / "colosseum-published.parquet").height == 60
    assert report.colosseum_section(learning_runs(n=3, T=5, rewards=False), tmp_path) is None


def test_report_has_the_colosseum_section(results, tmp_path):
    from bbrlcore import report
    from bbrlcore.analysis.results import summary_table

    _, runs = results
    index = report.build(runs, summary_table(runs), tmp_path / "r", pdf=False)
    html = index.read_text()
    assert 'id="colosseum">Against Colosseum\'s published tables' in html
    assert 'href="#colosseum"' in html and 'id="published"' not in html
    part = html.split('id="colosseum"')[1].split("<h2")[0]
    for needle in ("Continuous ergodic (Table 14)", "0.70 ± 0.19", "<strong>cut</strong>",
                   "<strong>differs</strong>",
                   "Agree: 1 of the 2 rows", "Not run, not in these results:",
                   "This is not bbrl's realised regret"):
        assert needle in part, needle
    tex = (tmp_path / "r" / "report.tex").read_text()
    part = tex.split("\\section*{Against Colosseum's published tables}")[1].split(
        "\\clearpage")[0]
    assert part.isascii(), sorted({c for c in part if not c.isascii()})
    rows = [x for x in part.splitlines() if x.endswith("\\\\") and " & " in x]
    assert len(rows) == 6 and all(x.count(" & ") == 10 for x in rows)  # header + 5 rows
    line = part.split("Not run, not in these results: ")[1].split("\\par")[0]
    assert "Colosseum-CE-RiverSwim-1" in line and "Colosseum-CE-MiniGridEmpty-0" in line


def test_the_psrl_note_says_what_is_not_colosseum_s_prior():
    a, m = CP.COLOSSEUM_PSRL_ALPHA, CP.COLOSSEUM_PSRL_MEAN[True]
    exact = f"UColosseum-EC-DeepSea-0+dir{a!r}+rnig{m!r}"
    assert CP.agent_note("psrl", "psrl", exact, True) == ""
    from bbrlcore.mdp import distributions as D

    canonical = D.load(exact).short_name  # (alpha written with 12 digits)
    assert CP.agent_note("psrl", "psrl", canonical, True) == ""
    assert CP.agent_note("psrl", "psrl", "UColosseum-EC-DeepSea-0+rnig0.5", True) == (
        "bbrl's PSRL knows the transitions' support (Colosseum's: a Dirichlet of 0.3235 on "
        "every next state); a Normal-inverse-gamma reward prior of mean 0.5 (Colosseum's: "
        "0.4185)")
    assert "Ouyang" in CP.agent_note("psrl", "psrl", "UColosseum-CE-RiverSwim-0+rnig"
                                     f"{CP.COLOSSEUM_PSRL_MEAN[False]!r}", False)
    assert CP._prior_of("Colosseum-EC-DeepSea-0-UColosseum-EC-DeepSea-0+rnig@E40xH5",
                        "Colosseum-EC-DeepSea-0") == "UColosseum-EC-DeepSea-0+rnig"
