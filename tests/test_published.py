"""The paper's tables: the shipped data, the fixed-formula agent, the comparison, the
report section, ``bbrl compare-published`` and the ``paper`` preset (issue 17)."""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from bbrlcore import agents, report
from bbrlcore import plan as P
from bbrlcore import protocol as E
from bbrlcore.agents import formulas as F
from bbrlcore.analysis import constraints as analysis
from bbrlcore.analysis import published as PUB
from bbrlcore.analysis.results import merge_tables, summary_table
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import distributions as D
from bbrlcore.protocol import runner

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER_EXPERIMENTS = ["GC-GC", "GDL-GDL", "Grid-Grid", "GC-UGC", "GDL-UGDL", "Grid-UGrid"]

# --------------------------------------------------------------------------------------
# The shipped data


def test_published_table_has_the_papers_48_rows():
    t = PUB.published_table()
    assert t.height == 48
    assert t["experiment"].unique(maintain_order=True).to_list() == PAPER_EXPERIMENTS
    assert sorted(t["algorithm"].unique()) == sorted(
        ["random", "e-greedy", "soft-max", "opps-ds", "bamcp", "bfs3", "sboss", "beb"])
    for (exp,), g in t.group_by(["experiment"]):
        assert g["algorithm"].n_unique() == 8, exp
    assert (t.filter(pl.col("algorithm") == "opps-ds")["agent_algorithm"] == "formula").all()
    # the agent id is what bbrl makes of the algorithm and the parameters the table names
    for r in t.iter_rows(named=True):
        alg = agents.get(r["agent_algorithm"])
        raw = dict(kv.split("=", 1) for kv in r["params"].split(";") if kv)
        assert alg.agent_id(alg.parse_params(raw)) == r["agent"]
        has_compat = r["algorithm"] in ("soft-max", "beb", "sboss")
        assert (r["compat_agent"] == r["agent"] + "__compat=true") if has_compat else (
            r["compat_agent"] is None)
        # the shipped alternative of a formula agent: its operands swapped (DIV, SUB)
        swapped = (F.swapped_operands(raw["formula"]) if r["agent_algorithm"] == "formula"
                   else None)
        want = None if swapped is None else f"formula__formula={swapped}"
        assert r["alternative_agent"] == want, r["paper_agent"]
    assert t["se"].to_list() == pytest.approx([h / 1.96 for h in t["halfwidth"]])
    assert PUB.CITATION.startswith("M. Castronovo") and "PLOS ONE" in PUB.CITATION


def test_published_table_equals_the_papers_tables(shared):
    """Scores and their order, read from the paper's text (§5.3.1, §5.3.2)."""
    text = (shared / "paper" / "bbrl-paper.md").read_text()
    rows = re.findall(r"^(.+)\t([\d.]+) ± ([\d.]+)$", text, re.M)
    assert len(rows) == 48
    t = PUB.published_table()
    assert t["mean"].to_list() == [float(m) for _, m, _ in rows]
    assert t["halfwidth"].to_list() == [float(h) for _, _, h in rows]
    names = [n.split(" (")[0].replace("Soft-Max", "soft-max").lower() for n, _, _ in rows]
    assert names == t["algorithm"].to_list()
    # the parameters the table prints are the agent's (ε, τ, K, C, depth, δ, β, formula)
    for (label, _, _), r in zip(rows, t.iter_rows(named=True), strict=True):
        numbers = [float(x) for x in re.findall(r"(?<![A-Za-z_])[\d.]+(?:e-\d+)?", label)
                   if not re.fullmatch(r"[.]", x)]
        if r["algorithm"] == "opps-ds":
            paper = re.search(r"\(\$(.*)\$\)", label).group(1)
            paper = paper.replace(r"\max", "max").replace("Q_", "Q")
            assert F.canonical(paper) == r["agent"].split("=", 1)[1], label
        elif numbers:
            ours = [float(v) for v in re.findall(r"=([\d.e-]+)", r["agent"])]
            assert sorted(numbers) == sorted(ours), label


def test_reference_scores_ship_unchanged(shared):
    """The original's figures as shared/data has them, plus bbrl's agent id of each row
    (what the agent registry makes of the row's algorithm, parameters and compat flag)."""
    original = (shared / "data" / "reference_scores.tsv").read_text().splitlines()
    shipped = PUB.REFERENCE_FILE.read_text().splitlines()
    assert [ln for ln in shipped if ln.startswith("#") and not ln.startswith("# agent:")] == [
        ln for ln in original if ln.startswith("#")]
    assert [ln.rsplit("\t", 1)[0] for ln in shipped if not ln.startswith("#")] == [
        ln for ln in original if not ln.startswith("#")]
    ref = PUB.reference_table()
    assert ref.height == 79 and ref["agent"].null_count() == 0
    assert "beb__beta=2.5__compat=true" in ref["agent"].to_list()
    for i, r in enumerate(ref.iter_rows(named=True)):
        raw = dict(kv.split("=", 1) for kv in (r["params"] or "").split(";") if kv)
        if r["compat"] == "true":
            raw["compat"] = True
        alg = agents.get(r["algorithm"])
        assert alg.agent_id(alg.parse_params(raw)) == r["agent"], f"row {i + 1}"


def test_paper_sequences_equal_the_papers_text(shared):
    text = (shared / "paper" / "bbrl-paper.md").read_text().replace("ϵ -Greedy", "e-Greedy")
    found = []
    for part in text.split("affected from left to right:")[1:]:
        block = re.split(r"\n\n(?:We can|SBOSS is)", part)[0]
        for chunk in re.split(r"(?:GC|GDL|Grid):", block)[1:]:
            found.append(re.findall(r"\(([^)]*)\)", chunk))
    seqs = PUB.paper_sequences()
    assert seqs["experiment"].unique(maintain_order=True).to_list() == PAPER_EXPERIMENTS
    ours = [[", ".join(s) for s in g.sort("step")["algorithms"]]
            for _, g in seqs.group_by("experiment", maintain_order=True)]
    assert ours == found


# --------------------------------------------------------------------------------------
# Formulas in the paper's notation


@pytest.mark.parametrize("paper, rpn", [
    ("Q2/Q0", "X2 X0 DIV"), ("max(Q0, Q2)", "X0 X2 MAX2"), ("Q0 + Q2", "X0 X2 ADD2"),
    ("Q0", "X0"), ("-Q1", "X1 OPP"), ("sqrt(Q0)", "X0 SQRT"), ("|Q1|", "X1 ABS"),
    ("ln(Q2)", "X2 LN"), ("1/Q0", "X0 INV"), ("min(Q0, Q1)", "X0 X1 MIN2"),
    ("Q0 - Q1 * Q2", "X0 X1 X2 MUL2 SUB"), ("(Q0 - Q1) * Q2", "X0 X1 SUB X2 MUL2"),
    ("-Q0 * Q1", "X0 OPP X1 MUL2"), ("1 / -Q0", "X0 OPP INV"),
    (r"$\max(Q_0(x, u), Q_1(x, u))$", "X0 X1 MAX2"), ("Q_2(x, u)/Q_0(x, u)", "X2 X0 DIV"),
    ("QUniform / QMean", "X2 X0 DIV"), ("X2 X0 DIV", "X2 X0 DIV"), ("X2_X0_DIV", "X2 X0 DIV"),
    ("x1 x2 add2", "X1 X2 ADD2"),
])
def test_paper_notation_and_rpn(paper, rpn):
    assert F.to_rpn(F.parse_formula(paper)) == rpn
    assert F.canonical(paper) == rpn.replace(" ", "_")


def test_every_formula_of_the_sets_reads_back_from_its_rendering(shared):
    fs = F.read_dat(shared / "data" / "formula_sets" / "F4.dat")
    for i in range(len(fs)):
        codes = fs.codes[i, : fs.lengths[i]]
        assert F.to_rpn(F.parse_formula(F.infix(codes))) == fs.rpn[i]
        assert F.to_rpn(F.parse_formula(F.canonical(codes))) == fs.rpn[i]


@pytest.mark.parametrize("text, needle", [
    ("Q2 // Q0", "'/' at position 5"),
    ("Q3 + Q0", "'Q3' at position 1: unknown name"),
    ("exp(Q0)", "'exp' at position 1: unknown name"),
    ("max(Q0)", "')' at position 7: max takes 2 arguments"),
    ("2 * Q0", "'2' at position 1: a constant is not a formula token"),
    ("Q0 + 1", "'1' at position 6: a constant"),
    ("(Q0 + Q1", "at the end (position 9): expected ')'"),
    ("Q0 Q1", "'Q1' at position 4: unexpected after a complete formula"),
    ("Q0 & Q1", "'&' at position 4: not part of a formula"),
    ("X0 FOO ADD2", "'FOO' at position 4: unknown RPN token"),
    ("X0 ADD2", "'ADD2' at position 4: needs 2 operands, has 1"),
    ("X0 X1", "leaves 2 values on the stack"),
    ("  ", "empty formula"),
])
def test_malformed_formula_is_one_error_naming_the_token(text, needle):
    with pytest.raises(BBRLError) as exc:
        F.parse_formula(text, "--param formula")
    msg = str(exc.value)
    assert msg.startswith(f"--param formula={text!r}: ") and needle in msg and "\n" not in msg


# --------------------------------------------------------------------------------------
# The formula agent


def test_formula_agent_parameters_and_id():
    alg = agents.get("formula")
    ids = {alg.agent_id(alg.parse_params({"formula": f}))
           for f in ("Q2/Q0", "Q2 / Q0", "X2 X0 DIV", "X2_X0_DIV", "Q_2(x, u)/Q_0(x, u)")}
    assert ids == {"formula__formula=X2_X0_DIV"}
    stored = alg.parse_params({"formula": "X2_X0_DIV"}, stored=True)
    assert stored == {"formula": "X2_X0_DIV"}
    with pytest.raises(BBRLError, match=r"^--param formula='Q2//Q0': '/' at position 4"):
        alg.parse_params({"formula": "Q2//Q0"})
    with pytest.raises(BBRLError, match="formula: required by formula"):
        alg.parse_params({})
    assert alg.train is None and alg.counters == ("formula_failures",)
    assert "formula" in agents.BUILTINS and "formula" not in agents.NAMES
    assert len(agents.NAMES) == 9


def test_formula_agent_plays_exactly_like_the_opps_ds_agent_it_names():
    """Train OPPS-DS (F3, a small budget) on GC; the formula agent given the formula it
    selected, in the paper's notation (its infix) and as RPN, returns the same returns
    and failure counts at the same trajectory seeds."""
    prior = D.builtin("GC")
    opps = E.train_agent("opps-ds", {"formula_set": "F3", "n_draws": "60"}, prior,
                         progress=False)
    ts = E.new_test_set(D.builtin("GC"), 12, 0.95, 250, seed=11)
    ep = ts.episode()
    play_opps = agents.get("opps-ds").make_player(prior, opps.params, runner._as_trained(opps), ep)
    seeds = [1000 + i for i in range(ts.n_mdps)]
    expected = [play_opps(np.ascontiguousarray(ts.mdps[i]), s) for i, s in enumerate(seeds)]
    for text in (opps.info["infix"], opps.info["rpn"]):
        fa = E.train_agent("formula", {"formula": text}, prior, progress=False)
        assert fa.offline_time_s == 0.0
        play = agents.get("formula").make_player(prior, fa.params, runner._as_trained(fa), ep)
        got = [play(np.ascontiguousarray(ts.mdps[i]), s) for i, s in enumerate(seeds)]
        assert [g[0] for g in got] == [e[0] for e in expected]
        assert [int(g[1][0]) for g in got] == [int(e[1][0]) for e in expected]
    # through the runner (trajectory seeds come from each agent's id): finite, counted
    run = E.run_agent(ts, fa, progress=False)
    assert run["discounted_return"].is_finite().all() and "formula_failures" in run.columns


def test_formula_agent_in_the_workflow_config_names_the_key():
    cfg = copy.deepcopy(BASE)
    cfg["experiments"][0]["algorithms"] = {"formula": {"formula": ["Q0", "Q2 // Q0"]}}
    with pytest.raises(BBRLError) as exc:
        P.load(cfg)
    assert str(exc.value).startswith(
        "config.yaml: experiments[0].algorithms.formula.formula[1]='Q2 // Q0': '/' at "
        "position 5")


# --------------------------------------------------------------------------------------
# Per-experiment algorithm blocks: same grammar, same checks, errors name the block

EXP_BLOCK_ERRORS = {
    "unknown algorithm": ({"e-greedyy": {"epsilon": [0.1]}},
                          "experiments[1].algorithms.e-greedyy: unknown algorithm"),
    "out of range": ({"e-greedy": {"epsilon": [0.0, 1.5]}},
                     "experiments[1].algorithms.e-greedy.epsilon[1]=1.5: must be in [0, 1]"),
    "wrong type": ({"bamcp": [{"K": [1, "many"], "D": [15]}]},
                   "experiments[1].algorithms.bamcp[0].K[1]='many': expected an integer"),
    "empty grid": ({"beb": {"beta": []}}, "experiments[1].algorithms.beb.beta: empty grid"),
    "unknown parameter": ({"beb": {"bta": 1.0}},
                          "experiments[1].algorithms.beb.bta: unknown parameter of beb"),
    "missing parameter": ({"sboss": {"epsilon": 1.0}},
                          "experiments[1].algorithms.sboss: parameter delta of sboss is "
                          "required"),
    "empty block": ({}, "experiments[1].algorithms: must be a non-empty mapping"),
    "listed twice": ({"beb": [{"beta": 1.0}, {"beta": [2.0, 1.0]}]},
                     "experiments[1].algorithms.beb[1]: configuration beb__beta=1 also "
                     "listed in experiments[1].algorithms.beb[0]"),
}


@pytest.mark.parametrize("kind", sorted(EXP_BLOCK_ERRORS))
def test_experiment_algorithm_blocks_are_checked_like_the_global_one(kind):
    block, expected = EXP_BLOCK_ERRORS[kind]
    cfg = copy.deepcopy(BASE)
    cfg["experiments"][1]["algorithms"] = block
    with pytest.raises(BBRLError) as exc:
        P.load(cfg)
    msg = str(exc.value)
    assert msg.startswith("config.yaml: ") and expected in msg and "\n" not in msg


def test_experiment_blocks_in_a_preset_name_the_preset_key():
    cfg = copy.deepcopy(BASE)
    cfg["presets"]["paper"]["experiments"][2]["algorithms"]["beb"] = {"beta": -1.0}
    with pytest.raises(BBRLError, match=r"presets\.paper\.experiments\[2\]\.algorithms\.beb"
                       r"\.beta=-1: must be >= 0"):
        P.load(cfg, {"preset": "paper"})


# --------------------------------------------------------------------------------------
# The paper preset


def test_paper_preset_runs_the_published_agents():
    plan = P.load(ROOT / "config.yaml", {"preset": "paper"})
    c = plan.config
    assert (c["n_mdps"], c["gamma"], c["horizon"]) == (500, 0.95, 250)
    assert [e.name for e in plan.experiments] == PAPER_EXPERIMENTS
    pub = PUB.published_table()
    for exp in plan.experiments:
        keys = {a.key for a in plan.agents_of(exp)}
        rows = pub.filter(pl.col("experiment") == exp.name)
        want = set(rows["agent"]) | {k for k in rows["compat_agent"] if k} | {"optimal"}
        extra = keys - want
        # beyond the published agents: only the swapped operands of GC-GC's division
        assert want <= keys and extra == ({"formula__formula=X0_X2_DIV"}
                                          if exp.name == "GC-GC" else set()), exp.name
    # shared configurations are trained once per prior, on the priors that use them
    beb = plan.agent("beb__beta=2.5")
    assert plan.priors_of(beb) == ["GC", "UGDL"]
    assert not plan.formula_sets_used


def test_paper_preset_estimate_is_under_twelve_cpu_hours():
    from bbrlcore.cli.estimate import estimate

    plan = P.load(ROOT / "config.yaml", {"preset": "paper"})
    rows = estimate(plan)
    total = sum(r["total_h"] for r in rows.values())
    assert 1.0 < total < 12.0
    assert rows["formula"]["calibration"] == "measured"
    assert max(rows, key=lambda k: rows[k]["total_h"]) in ("bfs3", "bamcp", "sboss")


def test_paper_preset_dry_run(tmp_path):
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    r = subprocess.run([snakemake, "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                        "--configfile", "config.yaml", "-n", "--quiet", "rules",
                        "--config", "preset=paper"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    # every job is a bundle of the plan (bbrlcore.plan.bundles): its training units cover
    # every configuration that learns offline on the priors of its experiments, its run
    # units every chunk of every (experiment, configuration)
    from bbrlcore.plan import bundles

    counts = {k: int(v) for k, v in re.findall(r"^((?:train|run)_\S+)\s+(\d+)$", out, re.M)}
    plan = P.load(ROOT / "config.yaml", {"preset": "paper"})
    jobs = bundles.bundles(plan)
    assert counts == {b.name: 1 for b in jobs}
    assert sum(len(b.units) for b in jobs if b.kind == "train") == sum(
        len(plan.priors_of(a)) for a in plan.agents if bundles.learns_offline(a))
    assert sum(len(b.units) for b in jobs if b.kind == "run") == sum(
        len(plan.chunks(e, a)) for e in plan.experiments for a in plan.agents_of(e))


# --------------------------------------------------------------------------------------
# The comparison


def _row(exp, agent, mean, half, n=500):
    return {"experiment": exp, "agent": agent, "n": n, "mean": mean,
            "ci_low": mean - half, "ci_high": mean + half}


def synthetic_summary() -> pl.DataFrame:
    return pl.DataFrame([
        _row("GC-GC", "random", 35.0, 0.98),                       # se 0.5
        _row("GC-GC", "beb__beta=2.5", 47.0, 1.96),                 # se 1
        _row("GC-GC", "beb__beta=2.5__compat=true", 45.0, 1.96),    # se 1
        _row("Grid-Grid", "soft-max__tau=0.05", 1.0, 0.196),        # se 0.1
        _row("Grid-Grid", "soft-max__tau=0.05__compat=true", 0.0, 0.0),
        _row("GC-GC", "formula__formula=X2_X0_DIV", 30.0, 1.96),
        _row("GC-GC", "formula__formula=X0_X2_DIV", 41.0, 1.96),
        _row("GDL-UGDL", "beb__beta=2.5", 2.88, 0.07),              # default only
        _row("GC-UGC", "beb__beta=16", 38.0, 1.0),                  # integer β, default only
        _row("GC-GC", "e-greedy__epsilon=0.5", 30.0, 1.0),          # not a published row
        _row("RiverSwim-RiverSwim", "random", 1.0, 0.1),            # not an experiment of it
    ])


def test_comparison_z_and_verdicts_by_hand():
    t = PUB.compare(synthetic_summary())
    assert t.columns == list(PUB.COMPARISON_COLUMNS)
    assert t.height == 6  # published rows present: random, beb, opps-ds; soft-max; 2 beb
    row = {(r["experiment"], r["algorithm"]): r for r in t.iter_rows(named=True)}

    r = row[("GC-GC", "random")]  # published 31.12 ± 0.9
    assert r["z"] == pytest.approx(3.88 / math.sqrt(0.5**2 + (0.9 / 1.96) ** 2))  # 5.7155
    assert (r["variant"], r["verdict"], r["reasons"]) == ("default", "differs", "")
    assert r["reference_runs"] == 2 and r["reference_mean"] == pytest.approx(31.908)
    se_ref = math.sqrt((0.925 / 1.96) ** 2 + (1.123 / 1.96) ** 2) / 2
    assert r["reference_halfwidth"] == pytest.approx(1.96 * se_ref)
    assert r["z_reference"] == pytest.approx((35.0 - 31.908) / math.hypot(0.5, se_ref))

    r = row[("GC-GC", "beb")]  # published 41.72 ± 1.63: the verdict is on compat
    se_p = 1.63 / 1.96
    assert r["z_compat"] == pytest.approx(3.28 / math.hypot(1.0, se_p))   # 2.52: agrees
    assert r["z_default"] == pytest.approx(5.28 / math.hypot(1.0, se_p))  # 4.06: differs
    assert (r["variant"], r["verdict"]) == ("compat", "agrees")
    assert "2.5 acts as 2" in r["reasons"]
    assert r["reference_mean"] == 43.039 and r["reference_runs"] == 1

    r = row[("Grid-Grid", "soft-max")]  # published 0 ± 0: compat 0 ± 0 agrees exactly
    assert (r["z_compat"], r["verdict"]) == (0.0, "agrees")
    assert r["z_default"] == pytest.approx(10.0) and "action 0" in r["reasons"]

    r = row[("GC-GC", "opps-ds")]  # published 42.47 ± 1.91, the swapped division beside it
    assert r["z"] == pytest.approx(-12.47 / math.hypot(1.0, 1.91 / 1.96))
    assert r["verdict"] == "differs" and r["alternative_agent"] == "formula__formula=X0_X2_DIV"
    assert r["z_alternative"] == pytest.approx(-1.47 / math.hypot(1.0, 1.91 / 1.96))
    assert "swaps them and scores 41.00" in r["reasons"]

    r = row[("GDL-UGDL", "beb")]  # only the default ran: said so beside the row
    assert r["variant"] == "default" and r["reasons"].startswith("only the default variant")
    r = row[("GC-UGC", "beb")]  # β = 16 is an integer: no known difference
    assert r["verdict"] == "agrees" and r["reasons"] == ""
    assert PUB.counts(t) == (4, 6)


def test_comparison_of_a_summary_without_published_rows_is_empty():
    t = PUB.compare(pl.DataFrame([_row("GC-GC", "e-greedy__epsilon=0.5", 30.0, 1.0)]))
    assert t.is_empty() and t.columns == list(PUB.COMPARISON_COLUMNS)
    with pytest.raises(BBRLError, match="summary: lacks the column"):
        PUB.compare(pl.DataFrame({"experiment": ["GC-GC"]}))


def test_constraint_sequence_known_answer():
    """A: fast and bad; B: slower and better; S: fastest, as bad as A; O: OPPS-DS (offline
    time), never in the sequence, but its offline time bounds the others'."""
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 300)
    ret = {"a": base + 1, "s": base + 1, "b": base + 5 + rng.normal(0, 0.1, 300),
           "o": base + 9, "late": base + 20}
    scores = pl.DataFrame({
        "algorithm": ["random", "sboss", "beb", "opps-ds", "e-greedy"],
        "family": ["Random", "SBOSS", "BEB", "OPPS-DS", "e-Greedy"],
        "agent": ["a", "s", "b", "o", "late"],
        "mean": [float(ret[k].mean()) for k in ("a", "s", "b", "o", "late")],
        "offline_time_s": [0.0, 0.0, 0.0, 10.0, 20.0],
        "online_time_per_decision_s": [2e-6, 1e-6, 1e-3, 1e-4, 1e-6],
    })
    seq = analysis.constraint_sequence(scores, ret)
    assert seq["algorithms"].to_list() == [["SBOSS"], ["Random", "SBOSS"], ["BEB"]]
    assert seq["online_bound_s"].to_list() == [1e-6, 2e-6, 1e-3]
    # no OPPS-DS agent: no offline bound (the slow e-Greedy is in, and the best)
    seq = analysis.constraint_sequence(scores.filter(pl.col("algorithm") != "opps-ds"), ret)
    assert seq["algorithms"].to_list() == [["e-Greedy"]]
    assert analysis.sequence_text([["SBOSS"], ["BEB", "e-Greedy"]]) == "(SBOSS), (BEB, e-Greedy)"
    assert analysis.reversed_pairs([["Random"], ["SBOSS"], ["BEB", "e-Greedy"]],
                                   [["SBOSS"], ["e-Greedy"], ["BEB"], ["Random"]]) == [
        ("Random", "SBOSS"), ("Random", "BEB"), ("Random", "e-Greedy")]


# --------------------------------------------------------------------------------------
# The report section and the command


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory):
    """A small real run of GC-GC with some of the published agents (N = 24, T = 60)."""
    out = tmp_path_factory.mktemp("paper")
    ts = E.new_test_set(D.builtin("GC"), 24, 0.95, 60, seed=5)
    tables = []
    for alg, params in [("random", {}), ("optimal", {}), ("e-greedy", {"epsilon": "0"}),
                        ("beb", {"beta": "2.5"}), ("beb", {"beta": "2.5", "compat": "true"}),
                        ("sboss", {"epsilon": "0.001", "delta": "7", "compat": "true"}),
                        ("soft-max", {"tau": "0.1", "compat": "true"}),
                        ("formula", {"formula": "Q2/Q0"}), ("formula", {"formula": "Q0/Q2"})]:
        agent = E.train_agent(alg, params, D.builtin("GC"), progress=False)
        tables.append(E.run_agent(ts, agent, progress=False))
    merged = merge_tables(tables)
    summary = summary_table(merged)
    (out / "results" / "merged").mkdir(parents=True)
    artefacts.write_artefact(out / "results" / "merged" / "GC-GC.parquet", merged, "merged",
                             {"experiments": ["GC-GC"]})
    artefacts.write_artefact(out / "results" / "summary.parquet", summary, "summary", {})
    index = report.build(merged, summary, out / "report", [ts], pdf=False)
    return out, index, summary


def test_report_has_the_published_section(paper_run):
    out, index, summary = paper_run
    html = index.read_text()
    assert 'id="published">Against the published numbers' in html
    for needle in ("BEB (β = 2.5)", "41.72 ± 1.63", "OPPS-DS (Q2(x, u)/Q0(x, u))",
                   "43.04 ± 2.05", "Time-constraint maps", "(Random), (SBOSS), (BEB, e-Greedy)",
                   "compare the order in which algorithms appear", "biased upwards"):
        assert needle in html, needle
    table = pl.read_parquet(out / "report" / "data" / "published.parquet")
    assert table.columns == list(PUB.COMPARISON_COLUMNS)
    assert set(table["algorithm"]) == {"random", "e-greedy", "beb", "sboss", "soft-max",
                                       "opps-ds"}
    assert table.equals(PUB.compare(summary))
    seqs = pl.read_parquet(out / "report" / "data" / "published-sequences.parquet")
    assert seqs["experiment"].to_list() == ["GC-GC"] and seqs["ours_compat"][0].startswith("(")
    agree, total = PUB.counts(table)
    assert f"{agree} of {total} published rows agree" in html


def test_report_without_published_rows_says_how_to_get_them(paper_run, tmp_path):
    out, _, _ = paper_run
    merged, _ = artefacts.read_artefact(out / "results" / "merged" / "GC-GC.parquet", "merged")
    merged = merged.filter(pl.col("agent").is_in(["optimal", "formula__formula=X0_X2_DIV",
                                                  "e-greedy__epsilon=0"]))
    merged = merged.with_columns(pl.when(pl.col("agent") == "e-greedy__epsilon=0")
                                 .then(pl.lit("e-greedy__epsilon=0.5"))
                                 .otherwise(pl.col("agent")).alias("agent"))
    index = report.build(merged, summary_table(merged), tmp_path, pdf=False)
    html = index.read_text()
    assert "None of the paper's best-agent configurations is in these results" in html
    assert pl.read_parquet(tmp_path / "data" / "published.parquet").is_empty()
    assert "None of the paper" in (tmp_path / "report.tex").read_text()


def test_latex_report_has_the_published_tables(paper_run):
    out, _, _ = paper_run
    tex = (out / "report" / "report.tex").read_text()
    part = tex.split("\\section*{Against the published numbers}")[1].split("\\clearpage")[0]
    assert "GC-GC experiment" in part and "\\toprule" in part
    assert part.isascii(), sorted({c for c in part if not c.isascii()})
    for line in part.splitlines():
        if line.endswith("\\\\") and " & " in line:
            assert line.count(" & ") == 8, line  # 9 columns, as the header
    assert part.count("\\begin{table}") == part.count("\\end{table}") == 1


def test_cli_compare_published(paper_run, tmp_path, bbrl_cmd, env_with_cache):
    out, _, summary = paper_run
    res = out / "results"
    r = subprocess.run(bbrl_cmd + ["compare-published", str(res), "-o",
                                   str(tmp_path / "cmp.parquet")],
                       capture_output=True, text=True, env=env_with_cache)
    assert r.returncode == 0, r.stderr
    assert "BEB (β = 2.5)" in r.stdout and "published rows agree within 3" in r.stdout
    table, meta = artefacts.read_artefact(tmp_path / "cmp.parquet", "published-comparison")
    assert table.equals(PUB.compare(summary)) and "PLOS ONE" in meta["citation"]
    # merged tables give the same comparison as the summary
    r2 = subprocess.run(bbrl_cmd + ["compare-published", str(res / "merged" / "GC-GC.parquet")],
                        capture_output=True, text=True, env=env_with_cache)
    assert r2.returncode == 0 and r2.stdout == r.stdout.rsplit("wrote", 1)[0]


def test_a_summary_written_before_the_shortfall_is_read_with_its_column_renamed(paper_run,
                                                                                tmp_path):
    """Issue 41: the summary's ``regret`` (Optimal's mean − mean) is now ``shortfall``; a
    summary written before is read with that column under its new name (the same values),
    and compared as a new one is."""
    from bbrlcore.cli.published import read_summary

    _, _, summary = paper_run
    old = summary.rename({"shortfall": "regret"})
    artefacts.write_artefact(tmp_path / "old.parquet", old, "summary", {})
    artefacts.write_artefact(tmp_path / "new.parquet", summary, "summary", {})
    got = read_summary([str(tmp_path / "old.parquet")])
    assert got.equals(summary) and "regret" not in got.columns
    assert read_summary([str(tmp_path / "new.parquet")]).equals(summary)
    assert PUB.compare(got).equals(PUB.compare(summary))


@pytest.mark.parametrize("args, needle", [
    (["missing-dir/summary.parquet"], "missing-dir/summary.parquet: no such file"),
    (["empty"], "empty: no summary.parquet and no merged/*.parquet"),
    (["RES", "-o", "RES/summary.parquet"], "is the input"),
])
def test_cli_compare_published_errors(paper_run, tmp_path, bbrl_cmd, env_with_cache, args,
                                      needle):
    (tmp_path / "empty").mkdir()
    res = str(paper_run[0] / "results")
    args = [a.replace("RES", res) for a in args]
    r = subprocess.run(bbrl_cmd + ["compare-published", *args], capture_output=True,
                       text=True, env=env_with_cache, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbrl: error: ") and needle in lines[0]
