"""The Snakemake workflow: configuration checks, the DAG, staleness, chunking, estimate.

Workflow runs use the ``tiny`` preset in temporary working directories
(``snakemake -s Snakefile --directory TMP --configfile CFG``); they share numba's default
cache directory (keyed by the source tree), which the first run warms.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import polars as pl
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbrlcore import plan as P
from bbrlcore.errors import BBRLError
from bbrlcore.plan import cost

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
BASE = yaml.safe_load((ROOT / "config.yaml").read_text())


def _write_cfg(tmp: Path, cfg: dict, name: str = "config.yaml") -> Path:
    p = tmp / name
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def _snake(workdir: Path, cfg: Path, *args: str, env: dict | None = None):
    e = dict(os.environ)
    e["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{e.get('PATH', '')}"
    e.update(env or {})
    return subprocess.run(
        [SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(cfg), *args],
        capture_output=True, text=True, env=e, cwd=workdir,
    )


def _jobs(dry_run_output: str) -> dict[str, int]:
    """Job counts per rule from the 'Job stats' table of a dry run."""
    m = re.search(r"job\s+count\n-+\s+-+\n(.*?)\ntotal\s+(\d+)", dry_run_output, re.S)
    if m is None:
        return {}
    out = {}
    for line in m.group(1).splitlines():
        name, n = line.split()
        out[name] = int(n)
    out["total"] = int(m.group(2))
    return out


def _planned(dry_run_output: str) -> list[tuple[str, str]]:
    """(rule, wildcards text) of every job of a dry run."""
    out = []
    rule = None
    for line in dry_run_output.splitlines():
        m = re.match(r"^(?:local)?rule (\S+):", line)
        if m:
            rule = m.group(1)
            out.append((rule, ""))
        elif rule and line.strip().startswith("wildcards:"):
            out[-1] = (rule, line.strip()[len("wildcards:"):].strip())
    return out


# ---------------------------------------------------------------------------------------
# Configuration checks (Python level: fast)


def test_full_config_is_the_paper():
    plan = P.load(ROOT / "config.yaml")
    per_alg: dict[str, int] = {}
    for a in plan.agents:
        if not a.param_dict.get("compat"):
            per_alg[a.algorithm] = per_alg.get(a.algorithm, 0) + 1
    assert per_alg == {
        "random": 1, "e-greedy": 11, "soft-max": 10, "opps-ds": 32, "bamcp": 21,
        "bfs3": 72, "sboss": 41, "beb": 10, "optimal": 1,
    }
    assert sum(per_alg.values()) - per_alg["optimal"] == 198
    compat = [a for a in plan.agents if a.param_dict.get("compat")]
    assert {a.algorithm for a in compat} == {"soft-max", "beb", "sboss"} and len(compat) == 61
    assert [e.name for e in plan.experiments] == [
        "GC-GC", "GDL-GDL", "Grid-Grid", "GC-UGC", "GDL-UGDL", "Grid-UGrid"]
    c = plan.config
    assert (c["n_mdps"], c["gamma"], c["horizon"]) == (500, 0.95, 250)


def test_quick_preset_keeps_two_configs_per_parameterised_algorithm():
    plan = P.load(ROOT / "config.yaml", {"preset": "quick"})
    assert plan.config["n_mdps"] >= 50
    assert len(plan.experiments) == 6
    algs = {a.algorithm for a in plan.agents}
    paper = {"random", "e-greedy", "soft-max", "opps-ds", "bamcp", "bfs3", "sboss", "beb",
             "optimal"}
    extended = {"psrl", "boss", "bolt", "mbie-eb"}
    assert algs == paper | extended
    for alg in paper - {"random", "optimal"}:
        assert sum(a.algorithm == alg and not a.param_dict.get("compat")
                   for a in plan.agents) >= 2, alg
    for alg in extended:  # beyond the paper: one or two configurations each
        assert 1 <= sum(a.algorithm == alg for a in plan.agents) <= 2, alg


def _bad(mutate) -> dict:
    cfg = copy.deepcopy(BASE)
    mutate(cfg)
    return cfg


BAD_CONFIGS = {
    "unknown key": (lambda c: c.update(n_mpds=3), "n_mpds: unknown key"),
    "unknown algorithm": (
        lambda c: c["algorithms"].update({"e-greedyy": {"epsilon": [0.1]}}),
        "algorithms.e-greedyy: unknown algorithm",
    ),
    "out of range": (
        lambda c: c["algorithms"]["e-greedy"].update(epsilon=[0.0, 0.1, 1.5]),
        "algorithms.e-greedy.epsilon[2]=1.5: must be in [0, 1]",
    ),
    "wrong type": (
        lambda c: c["algorithms"]["bamcp"][0].update(K=[1, "many"]),
        "algorithms.bamcp[0].K[1]='many': expected an integer",
    ),
    "empty grid": (
        lambda c: c["algorithms"]["beb"].update(beta=[]),
        "algorithms.beb.beta: empty grid",
    ),
    "unknown distribution": (
        lambda c: c["experiments"].append({"test": "GC", "prior": "UGX"}),
        "experiments[6].prior=UGX: unknown distribution",
    ),
    "unknown parameter": (
        lambda c: c["algorithms"]["e-greedy"].update(eps=[0.1]),
        "algorithms.e-greedy.eps: unknown parameter of e-greedy",
    ),
    # issue 41: refused before any probe (the snakemake run: no results directory)
    "episodic-only algorithm in a continuing experiment": (
        lambda c: c["algorithms"].update({"q-learning-ucb": {}}),
        "experiments[0] (GC-GC): q-learning-ucb plays episodic interactions only",
    ),
    # issue 43: a parameter that makes an algorithm continuing-only, refused by the config
    "continuing-only form in an episodic experiment": (
        lambda c: c["experiments"].append(
            {"test": "RiverSwim-5", "prior": "URiverSwim-5+rnig", "episodes": 10,
             "algorithms": {"psrl": {"form": "colosseum"}}}),
        "experiments[6].algorithms.psrl: experiment RiverSwim-5-URiverSwim-5+rnig@E10xH5: "
        "psrl__form=colosseum plays continuing interactions only",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_CONFIGS))
def test_plan_refuses_bad_config_naming_the_key(kind):
    mutate, expected = BAD_CONFIGS[kind]
    with pytest.raises(BBRLError) as exc:
        P.load(_bad(mutate))
    msg = str(exc.value)
    assert msg.startswith("config.yaml: ") and expected in msg and "\n" not in msg


def test_yaml_string_numbers_are_coerced():
    cfg = _bad(lambda c: c["algorithms"].update(sboss={"epsilon": ["1e-6"], "delta": "1e-3"}))
    plan = P.load(cfg)
    s = [a for a in plan.agents if a.algorithm == "sboss"]
    assert s[0].param_dict == {"epsilon": 1e-6, "delta": 1e-3}
    assert s[0].key == "sboss__epsilon=1e-06__delta=0.001"


def test_preset_errors_name_the_preset_key():
    cfg = _bad(lambda c: c["presets"]["quick"]["algorithms"].update(beb={"beta": [-1.0]}))
    with pytest.raises(BBRLError, match=r"presets\.quick\.algorithms\.beb\.beta\[0\]=-1"):
        P.load(cfg, {"preset": "quick"})
    with pytest.raises(BBRLError, match="no such preset"):
        P.load(BASE, {"preset": "huge"})


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(BAD_CONFIGS))
def test_snakemake_refuses_bad_config_before_any_job(kind, tmp_path):
    mutate, expected = BAD_CONFIGS[kind]
    cfg = _write_cfg(tmp_path, _bad(mutate))
    r = _snake(tmp_path, cfg, "--cores", "1")
    assert r.returncode != 0
    assert expected in r.stdout + r.stderr
    assert not (tmp_path / "results").exists()


def test_schema_rejects_what_python_checks_miss():
    """The JSON schema is validated too (snakemake.utils.validate in common.smk)."""
    import jsonschema

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    plan = P.load(ROOT / "config.yaml")
    jsonschema.validate(plan.config, schema)
    bad = copy.deepcopy(plan.config)
    bad["experiments"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


# ---------------------------------------------------------------------------------------
# Chunking and the cost model


def test_chunks_cover_all_mdps_and_respect_the_budget():
    plan = P.load(ROOT / "config.yaml")
    budget = plan.config["chunk_budget_minutes"]
    for exp in plan.experiments:
        for a in plan.agents:
            ch = plan.chunks(exp, a)
            assert ch[0][0] == 0 and ch[-1][1] == plan.config["n_mdps"]
            assert all(x[1] == y[0] for x, y in zip(ch, ch[1:], strict=False))
            worst = max(b - c for c, b in ch) * plan.seconds_per_trajectory(exp, a) / 60
            # within budget unless a single trajectory is already longer
            assert worst <= budget or max(b - c for c, b in ch) == 1


def test_estimate_moves_when_benchmark_results_change(tmp_path, monkeypatch):
    monkeypatch.setenv(cost.RESULTS_ENV, str(tmp_path))
    params = {"K": 500, "D": 15}
    base = cost.seconds_per_trajectory("bamcp", params, "GC", 250, "GC")
    rec = {"rows": [{"algorithm": "bamcp", "agent": "bamcp__K=500__D=15", "test": "GC",
                     "prior": "GC", "ms_per_trajectory": 10 * 1000 * base}]}
    (tmp_path / "bench.json").write_text(json.dumps(rec))
    moved = cost.seconds_per_trajectory("bamcp", params, "GC", 250, "GC")
    assert moved == pytest.approx(10 * base)
    rec["rows"][0]["ms_per_trajectory"] = 1000 * base / 4
    (tmp_path / "bench.json").write_text(json.dumps(rec))
    os.utime(tmp_path / "bench.json", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert cost.seconds_per_trajectory("bamcp", params, "GC", 250, "GC") == pytest.approx(
        base / 4)
    # an explicit directory wins over the environment
    other = tmp_path / "none"
    other.mkdir()
    assert cost.seconds_per_trajectory("bamcp", params, "GC", 250, "GC", other) == (
        pytest.approx(base))


def test_cost_scales_with_parameters():
    s = cost.seconds_per_trajectory
    assert s("bamcp", {"K": 1000, "D": 15}, "GC") > s("bamcp", {"K": 100, "D": 15}, "GC")
    assert s("bfs3", {"K": 10, "C": 5, "D": 15}, "GC") > s("bfs3", {"K": 10, "C": 2, "D": 15},
                                                            "GC")
    assert s("sboss", {"epsilon": 1e-6, "delta": 1e-6}, "GC") > s(
        "sboss", {"epsilon": 1.0, "delta": 9.0}, "GC")
    assert s("e-greedy", {"epsilon": 0.1}, "Grid", prior="UGrid") > s(
        "e-greedy", {"epsilon": 0.1}, "GC")
    f2 = {"formula_set": "F2"}
    assert cost.offline_seconds("opps-ds", {**f2, "n_draws": 1000}, "GC") > (
        cost.offline_seconds("opps-ds", {**f2, "n_draws": 10}, "GC")) > 0


def test_bbrl_estimate_prints_cpu_hours(tmp_path):
    bbrl = str(Path(sys.executable).with_name("bbrl"))
    r = subprocess.run([bbrl, "estimate", str(ROOT / "config.yaml"), "--preset", "quick"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "expected CPU-hours" in r.stdout and "bamcp" in r.stdout and "total" in r.stdout
    bad = _write_cfg(tmp_path, _bad(lambda c: c["algorithms"]["beb"].update(beta=[-2.0])))
    r = subprocess.run([bbrl, "estimate", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "algorithms.beb.beta[0]=-2: must be >= 0" in r.stderr


# ---------------------------------------------------------------------------------------
# The conda environment agrees with pyproject.toml (conda channels are not reachable here)


def _norm(name: str) -> str:
    return re.sub(r"\[.*\]", "", name).strip().lower().replace("_", "-")


def test_conda_env_agrees_with_pyproject():
    pyproj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "envs/bbrl.yaml").read_text())
    specs: dict[str, str] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for d in dep.get("pip", []):
                m = re.match(r"([A-Za-z0-9_.\-\[\]]+)\s*(.*)", d)
                specs[_norm(m.group(1))] = m.group(2).replace(" ", "")
        else:
            name, _, ver = dep.partition(" ")
            specs[_norm(name)] = ver.replace(" ", "")
    for dep in pyproj["dependencies"]:
        m = re.match(r"([A-Za-z0-9_.\-\[\]]+)\s*(.*)", dep)
        name, ver = _norm(m.group(1)), m.group(2).replace(" ", "")
        assert name in specs, f"envs/bbrl.yaml lacks {name}"
        assert specs[name] == ver, f"{name}: env {specs[name]!r} != pyproject {ver!r}"
    assert specs["python"] == pyproj["requires-python"]
    post = (ROOT / "envs/bbrl.post-deploy.sh").read_text()
    assert "pip install" in post  # bbrlcore itself
    for smk in (ROOT / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        if "rule " in text:
            assert text.count("\n    conda:") == text.count("\nrule "), smk.name
            assert text.count("\n    log:") == text.count("\nrule "), smk.name


def test_slurm_profile_is_executor_and_site_settings_only():
    prof = yaml.safe_load((ROOT / "slurm/config.v8+.yaml").read_text())
    assert prof["executor"] == "slurm"
    assert isinstance(prof["jobs"], int) and prof["latency-wait"] >= 5
    assert {"slurm_partition", "slurm_account"} <= set(prof["default-resources"])
    assert "set-resources" not in prof  # rules declare their own resources
    # Snakemake 9 reads max-jobs-per-timespan (max-jobs-per-second is ignored: its
    # max-jobs-per-timespan default, 100/1s, wins)
    from snakemake.settings.types import MaxJobsPerTimespan

    assert "max-jobs-per-second" not in prof
    assert MaxJobsPerTimespan.parse_choice(prof["max-jobs-per-timespan"]) is not None
    # the workflow's default profile sets nothing a site profile sets (00-decisions §8):
    # only what makes a plain rerun resume after a kill
    default = yaml.safe_load((ROOT / "profiles/default/config.yaml").read_text())
    assert default == {"rerun-incomplete": True}
    assert sorted(p.name for p in (ROOT / "profiles").iterdir()) == ["default"]


# ---------------------------------------------------------------------------------------
# Runs of the tiny preset


def _tiny(overlay: dict | None = None) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["preset"] = "tiny"
    for k, v in (overlay or {}).items():
        cfg["presets"]["tiny"][k] = v
    return cfg


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("tiny")
    cfg = _write_cfg(wd, _tiny())
    t0 = time.perf_counter()
    r = _snake(wd, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return wd, cfg, time.perf_counter() - t0


@pytest.mark.slow
def test_tiny_runs_end_to_end(tiny_run):
    wd, cfg, _ = tiny_run
    plan = P.load(cfg)
    merged = pl.read_parquet(wd / "results/merged/GC-UGC.parquet")
    assert merged.height == len(plan.agents) * plan.config["n_mdps"]
    assert set(merged["agent"]) == {"random", "optimal", "e-greedy__epsilon=0.1",
                                    "e-greedy__epsilon=0.5", "beb__beta=1",
                                    "beb__beta=1__compat=true"}
    s = pl.read_parquet(wd / "results/summary.parquet")
    assert s.height == len(plan.agents)
    assert s.filter(pl.col("algorithm") == "optimal")["normalised_score"][0] == 1.0
    assert s.filter(pl.col("algorithm") == "random")["normalised_score"][0] == 0.0
    assert (wd / "results/summary.md").read_text().startswith("# bbrl summary")
    for rule in ("runs", "merge", "distributions", "test_sets"):
        assert any((wd / "results/logs" / rule).rglob("*.log")), rule
    # no agent learns offline: none is a training job or an agent file of its own (each
    # run job builds its agents from the prior), and no algorithm needs a warm-up job (one
    # run job each)
    assert not (wd / "results/agents").exists() and not (wd / "results/warmup").exists()
    assert {p.stem for p in (wd / "results/logs/runs").glob("*.log")} == {
        f"run_{a.replace('-', '_')}_0" for a in plan.algorithms}
    # one name for one agent: the run directories and the results agree
    assert {p.name for p in (wd / "results/runs/GC-UGC").iterdir()} == set(merged["agent"])
    assert not (wd / "results/.partial").exists()  # removed by every finished job
    assert {a.key for a in plan.agents} == set(merged["agent"])


@pytest.mark.slow
def test_second_run_does_nothing(tiny_run):
    wd, cfg, _ = tiny_run
    r = _snake(wd, cfg, "-n")
    assert r.returncode == 0
    assert "Nothing to be done" in r.stdout + r.stderr
    # the plan says what it runs: the compat variant the base configuration adds is named
    assert ("beb: 2 agents (1 configuration + 1 compat variant added by compat_variants: "
            "true): beb__beta=1, beb__beta=1__compat=true") in r.stderr


@pytest.mark.slow
def test_changing_one_grid_reruns_only_that_algorithm(tiny_run):
    wd, _, _ = tiny_run
    algs = copy.deepcopy(BASE["presets"]["tiny"]["algorithms"])
    algs["e-greedy"] = {"epsilon": [0.1, 0.7]}
    cfg = _write_cfg(wd, _tiny({"algorithms": algs}), "changed.yaml")
    r = _snake(wd, cfg, "-n")
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = _planned(r.stdout)
    rules = {rule for rule, _ in jobs}
    # the e-greedy job (all its agents' runs: each job holds at most bundle_minutes of
    # estimated work), then what depends on it
    assert rules == {"run_e_greedy_0", "merge", "summary", "report", "all"}, jobs


@pytest.mark.slow
def test_version_change_reruns_training_and_runs(tiny_run):
    wd, cfg, _ = tiny_run
    r = _snake(wd, cfg, "-n", env={"BBRL_VERSION_OVERRIDE": "99.0.0"})
    assert r.returncode == 0
    jobs = _jobs(r.stdout)
    from bbrlcore.plan import bundles

    names = {b.name for b in bundles.bundles(P.load(cfg))}
    assert names and names <= set(jobs)  # every training and run job
    assert "warmup_numba" not in jobs  # re-warming is not a result


@pytest.mark.slow
def test_chunked_equals_unchunked_except_timing(tiny_run, tmp_path):
    wd, _, _ = tiny_run
    algs = {"random": {}, "e-greedy": {"epsilon": [0.1]}}
    cfg = _write_cfg(tmp_path, _tiny({"algorithms": algs, "chunk_budget_minutes": 1.0e-9,
                                      "max_chunks": 3}))
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    runs = sorted((tmp_path / "results/runs/GC-UGC/e-greedy__epsilon=0.1").glob("*.parquet"))
    assert [p.name for p in runs] == ["0-2.parquet", "2-5.parquet", "5-8.parquet"]
    chunked = pl.read_parquet(tmp_path / "results/merged/GC-UGC.parquet")
    whole = pl.read_parquet(wd / "results/merged/GC-UGC.parquet").filter(
        pl.col("agent").is_in(["random", "e-greedy__epsilon=0.1"]))
    drop = ["online_time_s", "offline_time_s"]
    from polars.testing import assert_frame_equal

    assert_frame_equal(chunked.drop(drop), whole.drop(drop).select(chunked.drop(drop).columns))


@pytest.mark.slow
def test_full_config_dry_run_has_fewer_than_10000_jobs(tmp_path):
    cfg = _write_cfg(tmp_path, copy.deepcopy(BASE))
    t0 = time.perf_counter()
    r = _snake(tmp_path, cfg, "-n", "--quiet", "rules")
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = _jobs(r.stdout + r.stderr)
    assert 0 < jobs["total"] < 10_000
    # the time is a measurement (README, benchmarks), not a pass/fail criterion of a test
    print(f"full-config dry run: {jobs['total']} jobs in {elapsed:.1f} s")
    shutil.rmtree(tmp_path / ".snakemake", ignore_errors=True)


@pytest.mark.slow
def test_snakemake_report_has_a_caption_for_every_figure(tiny_run, tmp_path):
    """The export stage ran (results/report/index.html) and `snakemake --report` works,
    with a caption for every figure."""
    wd, cfg, _ = tiny_run
    assert (wd / "results/report/index.html").exists()
    figures = sorted((wd / "results/report/figures").glob("*.png"))
    assert figures
    out = tmp_path / "report.html"
    r = _snake(wd, cfg, "--report", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    html = out.read_text()
    for f in figures:
        assert f.name in html, f.name
    n_exp = len(P.load(cfg).experiments)
    assert html.count("Time-constraint map for experiment") == n_exp
    # the online figure of every experiment, the offline one where some agent learns
    # offline (otherwise a sentence replaces it)
    n_off = len(list((wd / "results/report/figures").glob("*-offline.png")))
    assert html.count("with its 95% interval") == n_exp + n_off
    assert "Hardness of the test sets" in html


# ---------------------------------------------------------------------------------------
# Regenerating what is missing; user distributions; paths with spaces


@pytest.mark.slow
def test_missing_artefacts_come_back_with_identical_returns(tmp_path):
    """A user distribution whose name sorts before the built-ins (test and prior), a
    results directory with a space: everything runs. Then one chunk, one trained agent and
    one merged table are deleted: a plain rerun regenerates exactly those and what depends
    on them (merge, summary, report), with identical returns."""
    from bbrlcore.mdp import distributions as D

    D.write_dat(D.builtin("GC"), tmp_path / "chain.dat")
    cfg = _write_cfg(tmp_path, _tiny({
        "results_dir": "my results",
        "distributions": {"AB": str(tmp_path / "chain.dat")},
        "experiments": [{"test": "AB", "prior": "UGC"}, {"test": "GC", "prior": "AB"}],
        "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1]}, "optimal": {}},
    }))
    res = tmp_path / "my results"
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    before = {e: pl.read_parquet(res / f"merged/{e}.parquet") for e in ("AB-UGC", "GC-AB")}
    assert before["AB-UGC"]["experiment"].unique().to_list() == ["AB-UGC"]
    assert before["GC-AB"]["prior"].unique().to_list() == ["AB"]

    (res / "runs/GC-AB/random/0-8.parquet").unlink()
    (res / "merged/AB-UGC.parquet").unlink()
    r = _snake(tmp_path, cfg, "-n")
    planned = sorted(_planned(r.stdout))
    # the job holding the chunk (Random's runs on both experiments), the merges of both
    assert planned == sorted([
        ("run_random_0", ""),
        ("merge", "experiment=AB-UGC"), ("merge", "experiment=GC-AB"),
        ("summary", ""), ("report", ""), ("all", ""),
    ]), planned
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    from polars.testing import assert_frame_equal

    drop = ["online_time_s", "offline_time_s"]
    for e, df in before.items():
        assert_frame_equal(pl.read_parquet(res / f"merged/{e}.parquet").drop(drop), df.drop(drop))
    assert "Nothing to be done" in _snake(tmp_path, cfg, "-n").stdout


@pytest.mark.slow
def test_snakemake_refuses_a_malformed_distribution_and_bad_yaml_before_any_job(tmp_path):
    bad = tmp_path / "bad.dat"
    bad.write_text("Serializable\n0\nIMDPDistribution\n2\nx\nX\n")
    cfg = _write_cfg(tmp_path, _tiny({"distributions": {"AB": str(bad)},
                                      "experiments": [{"test": "AB", "prior": "AB"}]}))
    r = _snake(tmp_path, cfg, "--cores", "1")
    assert r.returncode != 0
    assert f"distributions.AB: {bad}: line 7: expected section 'MDPDistribution'" in r.stderr
    assert not (tmp_path / "results").exists()
    # a YAML syntax error in config.yaml: the file and the line
    text = (ROOT / "config.yaml").read_text().replace("n_mdps: 500", "n_mdps: [500", 1)
    (tmp_path / "config.yaml").write_text(text)
    r = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                        "-n"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0
    # the parser stops at the line after the unclosed "[" (1-based)
    line = text.splitlines().index("n_mdps: [500" + text.split("n_mdps: [500", 1)[1]
                                   .split("\n", 1)[0]) + 2
    assert f"config.yaml: not valid YAML at line {line}, column 1" in r.stdout + r.stderr
    # issue 33: a study of one's own given as --config study=FILE (the documented way) is
    # read by the workflow, so that its YAML error names the file and the line too
    (tmp_path / "study.yaml").write_text("n_mdps: 5\nalgorithms: [random\n")
    (tmp_path / "other.yaml").write_text("n_mdps: 5\n")
    for extra, message in (
        ([], "study.yaml: not valid YAML at line 3, column 1"),
        (["--configfile", "other.yaml"], "give a study either with --config study=FILE or with "
                                     "--configfile, not both"),
    ):
        r = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory",
                            str(tmp_path), "-n", *extra, "--config", "study=study.yaml"],
                           capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode != 0 and message in r.stdout + r.stderr, r.stderr[-2000:]
    r = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
                        "-n", "--config", "study=nothing.yaml"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode != 0
    assert "--config study=nothing.yaml: no such file" in r.stdout + r.stderr, r.stdout
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------------------------------
# Plugins through the workflow


@pytest.mark.slow
def test_plugins_flow_through_the_workflow_and_only_their_jobs_rerun_on_edit(
        tmp_path, isolated_registry):
    """An installed plugin (the example package's rmax, when installed) and a plugin file
    referenced from config.yaml run like built-ins: probed for the cost model, trained,
    run, merged, summarised, in the report. Editing the file reruns exactly its trainings
    and runs, then merge, summary and report."""
    from bbrlcore.agents import registry

    plugin = tmp_path / "mine.py"
    plugin.write_text((ROOT / "examples" / "my_agents.py").read_text())
    algs = {"random": {}, "optimal": {}, "e-greedy": {"epsilon": [0.1]},
            f"{plugin}:MyGreedyJit": {"epsilon": [0.0, 0.1]}}
    installed = "rmax" in registry.entry_points()
    if installed:
        algs["rmax"] = {"m": [2]}
    cfg = _write_cfg(tmp_path, _tiny({"algorithms": algs}))
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    s = pl.read_parquet(tmp_path / "results/summary.parquet")
    expected = {"my-greedy-jit__epsilon=0", "my-greedy-jit__epsilon=0.1"} | (
        {"rmax__m=2"} if installed else set())
    assert expected <= set(s["agent"])
    html = (tmp_path / "results/report/index.html").read_text()
    assert "my-greedy-jit" in html and (not installed or "rmax" in html)
    assert "My e-Greedy (compiled)" in html  # the plugin's display name
    probes = list((tmp_path / "results/probes").rglob("*.json"))
    assert {p.parent.parent.name for p in probes} == {"my-greedy-jit"} | (
        {"rmax"} if installed else set())
    est = subprocess.run([str(Path(sys.executable).with_name("bbrl")), "estimate", str(cfg)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert est.returncode == 0, est.stderr
    assert re.search(r"my-greedy-jit .* probed", est.stdout), est.stdout

    plugin.write_text(plugin.read_text() + "\n# an edit\n")
    r = _snake(tmp_path, cfg, "-n")
    assert r.returncode == 0, r.stderr[-2000:]
    jobs = _planned(r.stdout)
    # the plugin's job (its two configurations' runs), then what depends on it
    assert {rule for rule, _ in jobs} == {"run_my_greedy_jit_0", "merge", "summary",
                                          "report", "all"}, jobs


def test_the_workflow_is_lint_clean_and_snakefmt_formatted():
    """`snakemake --lint` reports nothing; Snakefile and rule files are snakefmt-formatted."""
    r = subprocess.run([SNAKEMAKE, "--lint"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "good condition" in r.stdout + r.stderr
    fmt = str(Path(sys.executable).with_name("snakefmt"))
    r = subprocess.run([fmt, "--check", "Snakefile", "workflow/"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_bbrl_init_writes_a_study_that_plans_estimates_and_dry_runs(tmp_path,
                                                                    isolated_registry):
    """A study of one's own outside config.yaml: `bbrl init` writes it (checked before it
    exists), `bbrl estimate` prices it and `snakemake --configfile` plans it, results in
    their own directory. Its plugin is uncalibrated: the dry run plays no trajectory (no
    probe; the plugin leaves a mark when it plays) and says which estimates it lacks;
    `bbrl estimate` probes it."""
    from bbrlcore.cli import main
    from bbrlcore.plan import probe

    plugin = (ROOT / "examples" / "my_agents.py").read_text() + textwrap.dedent("""
        _reset = MyGreedy.reset


        def _marked_reset(self):  # (the test's mark: this agent played)
            (__import__("pathlib").Path(__file__).parent / "played.marker").touch()
            _reset(self)


        MyGreedy.reset = _marked_reset
        """)
    (tmp_path / "my_agents.py").write_text(plugin)
    cfg = tmp_path / "my-study.yaml"
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["init", "my-study.yaml", "--algorithm", "my_agents.py:MyGreedy",
                     "--experiment", "GC:UGC"]) == 2
        assert not cfg.exists()  # refused before anything is written
        assert main(["init", "my-study.yaml", "--algorithm",
                     "my_agents.py:MyGreedy epsilon=[0.1,0.2]", "--experiment", "GC:UGC",
                     "--n-mdps", "5"]) == 0
        assert main(["init", "my-study.yaml"]) == 2  # exists: --force to overwrite
        assert main(["init", "study.txt"]) == 2
        assert main(["init", "x.yaml", "--experiment", "GC-UGC"]) == 2
        plan = P.load(cfg)  # plugin references are relative to the working directory
    finally:
        os.chdir(old)
    assert plan.config["results_dir"] == "results/my-study"
    assert [e.name for e in plan.experiments] == ["GC-UGC"]
    assert {"my-greedy__epsilon=0.1", "my-greedy__epsilon=0.2"} <= {a.key for a in plan.agents}
    r = _snake(tmp_path, cfg, "-n")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "my-greedy: 2 agents" in r.stderr
    assert "results/my-study/report/index.html" in r.stdout + r.stderr
    # issue 41: a dry run plays nothing (it probed the plugin: 3 trajectories), and says so
    assert not (tmp_path / "played.marker").exists()
    assert not (tmp_path / "results").exists()
    assert ("bbrl: dry run: my-greedy: no estimate for 2 runs (2 configurations on 1 "
            "experiment, e.g. my-greedy__epsilon=0.1 on GC-UGC): not probed yet, and a dry "
            "run plays no trajectory; a default price per step stands in") in r.stderr
    os.chdir(tmp_path)
    try:  # bbrl estimate probes it (the mark works), after which nothing is missing
        assert main(["estimate", "my-study.yaml"]) == 0
        assert (tmp_path / "played.marker").exists()
        plan = P.load(cfg)
        probe.ensure(plan, plan.config["results_dir"], run=False)
    finally:
        os.chdir(old)
    assert plan.unprobed == [] and probe.unprobed_lines(plan) == []


def _dry_run_plan(out: str, plan: P.Plan) -> tuple[set[str], int]:
    """The agent ids a dry run trains or plays (those of its training and run jobs, each
    a bundle of the plan; runs on validation sets included), and its number of training
    and run jobs."""
    from bbrlcore.plan import bundles

    by_name = {b.name: b for b in bundles.bundles(plan)}
    jobs = [rule for rule, _ in _planned(out)
            if rule.startswith(("train_", "run_", "validate_"))]
    agents = {u.agent.key for rule in jobs for u in by_name[rule].units}
    return agents, len(jobs)


@pytest.mark.slow
def test_an_own_study_runs_what_bbrl_estimate_prices_beside_config_yaml(tmp_path):
    """Issue 33: from a directory holding the repository's config.yaml (the repository's
    root), `snakemake --configfile STUDY` plans exactly the agents and jobs that `bbrl
    estimate STUDY` prices: the study is the whole configuration, never merged into
    config.yaml (whose algorithms, formula sets and chunk budget it used to gain). Both a
    study written by `bbrl init` and a hand-written one that leaves keys out (BAMCP's grid,
    the chunk budget) are checked."""
    from bbrlcore.cli.estimate import estimate

    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    bbrl = str(Path(sys.executable).with_name("bbrl"))
    r = subprocess.run([bbrl, "init", "s.yaml", "--experiment", "DeepSea-4:UDeepSea-4",
                        "--n-mdps", "5", "--episodes", "20"],  # (issue 41: episodic)
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "snakemake --cores all --config study=s.yaml" in r.stdout
    (tmp_path / "clean.yaml").write_text(yaml.safe_dump({
        "results_dir": "results/clean", "n_mdps": 4, "horizon": 20,
        "experiments": [{"test": {"family": "riverswim", "size": [6, 8]},
                         "prior": ["accurate", "uniform"]},
                        {"test": "GC", "prior": "GC",  # (no Optimal: said at the start)
                         "algorithms": {"random": {}, "bamcp": {"K": [50], "D": [15]}}}],
        "algorithms": {"random": {}, "bamcp": {"K": [50], "D": [15]}, "optimal": {}}}))
    for name in ("s.yaml", "clean.yaml"):
        plan = P.load(tmp_path / name)
        rows = estimate(plan)
        if name == "s.yaml":  # as `bbrl init` says: --config study=FILE
            r = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory",
                                str(tmp_path), "-n", "--config", f"study={name}"],
                               capture_output=True, text=True, cwd=tmp_path)
        else:  # Snakemake's own --configfile reads it alike
            r = _snake(tmp_path, tmp_path / name, "-n")
        assert r.returncode == 0, r.stderr[-3000:]
        agents, jobs = _dry_run_plan(r.stdout, plan)
        assert agents == {a.key for a in plan.agents}, name
        assert jobs == sum(x["train_jobs"] + x["run_jobs"] for x in rows.values()), name
        assert f"{len(plan.agents)} agent configurations" in r.stderr
        assert "formula_set" not in _jobs(r.stdout)  # config.yaml's formula sets: not here
        warned = [ln for ln in r.stderr.splitlines() if "no optimal agent" in ln]
        if name == "s.yaml":
            assert plan.config["episodes"] == 20 and plan.config["score"] == "undiscounted"
            assert [e.name for e in plan.experiments] == ["DeepSea-4-UDeepSea-4@E20xH4"]
            assert warned == []
        else:  # issue 41: once, naming the entry and what to add
            assert warned == ["bbrl: warning: experiments[1] (GC-GC): no optimal agent: its "
                              "normalised score and regret will be empty; add optimal: {} "
                              "to its algorithms: block"], r.stderr
    assert plan.config["chunk_budget_minutes"] == BASE["chunk_budget_minutes"]
    assert [a.key for a in plan.agents if a.algorithm == "bamcp"] == ["bamcp__K=50__D=15"]


def test_config_yaml_settings_are_the_defaults_of_a_study():
    """Every scalar setting of config.yaml (protocol, jobs, statistics) is bbrl's default,
    so a study given alone that leaves one out gets the paper's value, whether the workflow
    or `bbrl estimate` reads it (the chunk budget was 120 min for one, 60 for the other);
    but for the settings where the paper's configuration differs on purpose
    (PAPER_SETTINGS: the paper chooses configurations on its test MDPs, a study of one's
    own should not peek, issue 34)."""
    assert P.PAPER_SETTINGS == {"selection": "test"} and P.DEFAULTS["selection"] == "validation"
    for k, v in BASE.items():
        if not isinstance(v, (dict, list)):
            assert (P.PAPER_SETTINGS if k in P.PAPER_SETTINGS else P.DEFAULTS)[k] == v, k


def test_snakemake_configfiles_are_read_alone_a_later_key_replacing(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("n_mdps: 5\nalgorithms: {random: {}, beb: {beta: [1.0]}}\n")
    b.write_text("algorithms: {random: {}}\n")
    cfg, name = P.read_configfiles([a, b])
    assert cfg == {"n_mdps": 5, "algorithms": {"random": {}}} and name == "a.yaml + b.yaml"
    b.write_text("algorithms: [random\n")
    with pytest.raises(BBRLError, match=r"b\.yaml: not valid YAML at line 2"):
        P.read_configfiles([a, b])
    b.write_text("- random\n")
    with pytest.raises(BBRLError, match=r"b\.yaml: expected a mapping"):
        P.read_configfiles([a, b])


def _duplicate_keys(text: str) -> list[str]:
    """The keys a YAML text gives twice in one mapping (PyYAML keeps the last silently)."""
    dups: list[str] = []

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
            dups.extend(k for i, k in enumerate(keys) if k in keys[:i])
            return super().construct_mapping(node, deep=deep)

    yaml.load(text, Loader=Loader)  # noqa: S506 (a SafeLoader)
    return dups


def test_bbrl_init_writes_exactly_the_algorithms_asked_for(tmp_path, monkeypatch, capsys):
    """Issue 33: the algorithms given, with Random and Optimal (the normalised score's
    references), no example algorithm beside them and no key twice; an algorithm given
    twice is one grid (or tiers, when they differ in more than one parameter)."""
    from bbrlcore.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["init", "s.yaml", "--experiment", "GC:GC", "--n-mdps", "3",
                 "--algorithm", "beb beta=3", "--algorithm", "beb beta=4",
                 "--algorithm", "e-greedy epsilon=0.1",
                 "--algorithm", "bamcp K=1 D=15", "--algorithm", "bamcp K=2 D=25"]) == 0
    text = (tmp_path / "s.yaml").read_text()
    assert _duplicate_keys(text) == []
    cfg = yaml.safe_load(text)
    assert cfg["algorithms"] == {
        "random": {}, "beb": {"beta": [3, 4]}, "e-greedy": {"epsilon": 0.1},
        "bamcp": [{"K": 1, "D": 15}, {"K": 2, "D": 25}], "optimal": {}}
    plan = P.load(tmp_path / "s.yaml")
    assert sorted(a.key for a in plan.agents) == sorted([
        "random", "optimal", "beb__beta=3", "beb__beta=4", "e-greedy__epsilon=0.1",
        "bamcp__K=1__D=15", "bamcp__K=2__D=25"])
    assert text.startswith("# s: a bbrl study of your own")  # the comments are kept
    # without --algorithm: the example set
    assert main(["init", "e.yaml", "--n-mdps", "3"]) == 0
    assert set(yaml.safe_load((tmp_path / "e.yaml").read_text())["algorithms"]) == {
        "random", "e-greedy", "bamcp", "beb", "optimal"}
    capsys.readouterr()
    assert main(["init", "x.yaml", "--algorithm", " "]) == 2
    assert "--algorithm ' ': expected REF" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_bbrl_init_writes_the_interaction_asked_for(tmp_path, monkeypatch, capsys):
    """Issue 41: `--episodes E`, `--horizon T`, `--score`, checked by the configuration's
    own rules (one line naming the option, nothing written); the score is undiscounted
    by default for an episodic or long interaction; the file plans as written."""
    from bbrlcore.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["init", "ep.yaml", "--experiment", "DeepSea-5:UDeepSea-5", "--n-mdps",
                 "3", "--episodes", "1e3"]) == 0
    cfg = yaml.safe_load((tmp_path / "ep.yaml").read_text())
    assert (cfg["episodes"], cfg["score"]) == (1000, "undiscounted")
    exp = P.load(tmp_path / "ep.yaml").experiments[0]
    assert (exp.episodes, exp.episode_length, exp.horizon) == (1000, 5, 5000)
    assert main(["init", "long.yaml", "--experiment", "RiverSwim-6:URiverSwim-6",
                 "--horizon", "100000", "--n-mdps", "3"]) == 0
    plan = P.load(tmp_path / "long.yaml")
    assert plan.experiments[0].horizon == 100_000 and plan.config["score"] == "undiscounted"
    assert main(["init", "d.yaml", "--experiment", "GC:UGC", "--horizon", "500",
                 "--score", "undiscounted"]) == 0
    cfg = yaml.safe_load((tmp_path / "d.yaml").read_text())
    assert (cfg["horizon"], cfg["episodes"], cfg["score"]) == (500, None, "undiscounted")
    assert main(["init", "p.yaml", "--experiment", "GC:UGC"]) == 0  # the paper's
    cfg = yaml.safe_load((tmp_path / "p.yaml").read_text())
    assert (cfg["horizon"], cfg["episodes"], cfg["score"]) == (250, None, "discounted")
    capsys.readouterr()
    for args, needle in [
            (["--episodes", "0"], "--episodes 0: must be >= 1"),
            (["--episodes", "ten"], "--episodes 'ten': expected an integer"),
            (["--horizon", "1e9"], "--horizon 1000000000: must be <= 100000000"),
            (["--score", "regret"], "--score 'regret': expected discounted"),
            (["--horizon", "10", "--episodes", "3"], "--horizon 10 --episodes 3: give one"),
            (["--episodes", "3", "--experiment", "GC:UGC"],
             "x.yaml: episodes: family gc (GC) has no episodic form")]:
        assert main(["init", "x.yaml", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(f"bbrl: error: {needle}") and err.count("\n") == 1, err
        assert not (tmp_path / "x.yaml").exists()


def test_an_experiment_without_random_or_optimal_is_said_at_plan_time(tmp_path, capsys,
                                                                       monkeypatch):
    """Issue 41: an experiment whose agents lack Random or Optimal would end with empty
    normalised scores (and regrets, without Optimal): `bbrl estimate` says so once per
    entry, naming it and what to add (the workflow's start says the same: the own-study
    dry run above)."""
    from bbrlcore.cli import main

    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(cfg := {
        "n_mdps": 3, "results_dir": str(tmp_path / "res"), "score": "undiscounted",
        "experiments": [
            {"test": "GC", "prior": "GC"},
            {"test": {"family": "deepsea", "size": [4, 5]}, "prior": "uniform",
             "episodes": 10, "algorithms": {"psrl": {}}},
            {"test": "GDL", "prior": "GDL", "algorithms": {"optimal": {}, "beb": {"beta": 1.0}}}],
        "algorithms": {"random": {}, "optimal": {}}}))
    lines = P.load(f).missing_references()
    assert lines == [
        "experiments[1] (DeepSea-4-UDeepSea-4@E10xH4, DeepSea-5-UDeepSea-5@E10xH5): no "
        "random/optimal agent: their normalised score and regret will be empty; add "
        "random: {} and optimal: {} to its algorithms: block",
        "experiments[2] (GDL-GDL): no random agent: its normalised score will be empty; "
        "add random: {} to its algorithms: block"]
    monkeypatch.chdir(tmp_path)
    assert main(["estimate", "s.yaml"]) == 0
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if "no random" in ln] == [
        f"bbrl: warning: {ln}" for ln in lines]
    for e in cfg["experiments"][1:]:
        e["algorithms"].update(random={}, optimal={})
    f.write_text(yaml.safe_dump(cfg))
    assert P.load(f).missing_references() == []


PRINTABLE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/"),
                    min_size=1, max_size=24).filter(
    lambda t: t.isprintable() and not t.startswith("-"))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(stem=PRINTABLE, suffix=st.sampled_from([".yaml", ".yml"]))
def test_bbrl_init_any_file_name_round_trips_or_is_refused_in_one_line(stem, suffix):
    """Issue 33 (`bbrl init 'a #b.yaml'` announced results/a #b/ and wrote results/a;
    'a: b.yaml' was a YAML traceback): any printable file name either gives a file that
    loads back as the configuration announced (its results directory as printed), or is
    refused in one line with nothing written."""
    _init_name_round_trips(stem + suffix)


@pytest.mark.parametrize("name", ["a #b.yaml", "a: b.yaml", "x{y}.yaml", "..yaml",
                                  "'\"&|;$(ls).yaml", "ü -- ✓.yaml", "x" * 300 + ".yaml",
                                  "[a, b].yaml", "*.yaml", "!!python.yaml", "%TAG.yaml"])
def test_bbrl_init_awkward_file_names(name):
    _init_name_round_trips(name)


def _init_name_round_trips(name: str) -> None:
    import contextlib
    import io
    import tempfile

    from bbrlcore.cli import main

    old = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        try:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["init", name, "--experiment", "GC:GC", "--n-mdps", "1"])
            if rc != 0:
                assert rc == 2 and err.getvalue().count("\n") == 1, (name, err.getvalue())
                assert err.getvalue().startswith("bbrl: error: ")
                assert os.listdir(d) == [], name
                return
            text = Path(name).read_text(encoding="utf-8")
            cfg = yaml.safe_load(text)
            assert cfg["results_dir"] == "results/" + Path(name).stem
            assert f"results will go to {cfg['results_dir']}/ " in out.getvalue()
            assert P.load(Path(name)).config["results_dir"] == cfg["results_dir"]
            assert _duplicate_keys(text) == []
        finally:
            os.chdir(old)


# ---------------------------------------------------------------------------------------
# Problem families through the workflow (issue #26)


@pytest.mark.slow
def test_families_preset_dry_run(tmp_path):
    """The families preset plans every stage: one distribution file per test and prior
    (the prior of an accurate experiment is the test's own file), one test set per size,
    and a run per experiment and agent; results' paths carry the family names."""
    cfg = _write_cfg(tmp_path, copy.deepcopy(BASE))
    r = _snake(tmp_path, cfg, "--config", "preset=families", "-n")
    assert r.returncode == 0, r.stderr[-3000:]
    plan = P.load(cfg, {"preset": "families"})
    jobs = _jobs(r.stdout + r.stderr)
    assert jobs["distribution"] == len(plan.distributions) == 2 * len(plan.tests)
    assert jobs["test_set"] == len(plan.tests)
    assert jobs["merge"] == len(plan.experiments)
    from bbrlcore.plan import bundles

    runs = [b for b in bundles.bundles(plan) if b.kind == "run"]
    assert sum(jobs.get(b.name, 0) for b in runs) == len(runs)
    assert sum(len(b.units) for b in runs if b.split == "test") == sum(
        len(plan.chunks(e, a)) for e in plan.experiments for a in plan.agents_of(e))
    # the preset chooses configurations on validation sets (issue 34): one per test,
    # played by the algorithms with several configurations, merged per experiment
    assert plan.config["selection"] == "validation"
    assert sum(len(b.units) for b in runs if b.split == "validation") == sum(
        len(plan.chunks(e, a, "validation")) for e in plan.experiments
        for a in plan.validation_agents(e)) > 0
    assert jobs["validation_set"] == len(plan.validation_tests) == len(plan.tests)
    assert jobs["merge_validation"] == len(plan.validation_experiments)
    planned = _planned(r.stdout)
    assert ("distribution", "dist=UDeepSea-10") in planned
    assert ("test_set", "testset=FrozenLake-8") in planned
    assert ("merge", "experiment=DeepSea-15-UDeepSea-15") in planned


@pytest.mark.slow
def test_exploration_preset_dry_run(tmp_path):
    """The exploration preset (issue 34) plans every stage: one test set per size in its
    setting (DeepSea's episodes, RiverSwim's long continuing interaction with
    checkpoints: labelled names), a run per experiment and agent, validation sets. The
    algorithms the benchmarks measured in another setting are probed when it runs; the
    dry run plays no trajectory and names the estimates it lacks (issue 41)."""
    cfg = _write_cfg(tmp_path, copy.deepcopy(BASE))
    r = _snake(tmp_path, cfg, "--config", "preset=exploration", "-n")
    assert r.returncode == 0, r.stderr[-3000:]
    plan = P.load(cfg, {"preset": "exploration"})
    jobs = _jobs(r.stdout + r.stderr)
    assert jobs["test_set"] == len(plan.test_sets) == len(plan.experiments) == 8
    assert jobs["merge"] == jobs["merge_validation"] == len(plan.experiments)
    planned = _planned(r.stdout)
    assert ("test_set", "testset=DeepSea-50@E10000xH50") in planned
    assert ("test_set", "testset=RiverSwim-24@T100000n100") in planned
    assert "beyond chunk_budget_minutes" not in r.stderr
    assert not (tmp_path / "results").exists()  # (no probe)
    lacking = {ln.split(": ")[2]: ln for ln in r.stderr.splitlines()
               if ln.startswith("bbrl: dry run: ")}
    assert set(lacking) == {"psrl", "ucrl2", "q-learning-ucb"}, r.stderr[-3000:]
    assert "its continuing measurements (the benchmarks') stands in" in lacking["psrl"]
    assert "a default price per step stands in" in lacking["ucrl2"]


@pytest.mark.slow
def test_a_family_ladder_runs_end_to_end(tmp_path):
    """A tiny DeepSea ladder with both priors, from config.yaml alone: the family's
    distribution files, test sets drawn from the family (the structure drawn per MDP), the
    report's problems section with its tables."""
    import numpy as np

    from bbrlcore import protocol as E
    from bbrlcore.mdp import distributions as D
    from bbrlcore.mdp import families as F

    cfg = _write_cfg(tmp_path, _tiny({
        "n_mdps": 3,
        "experiments": [{"test": {"family": "deepsea", "size": [3, 4]},
                         "prior": ["accurate", "uniform"]}],
        "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1]}, "optimal": {}},
    }))
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = tmp_path / "results"
    for size in (3, 4):
        p = F.make("deepsea", size=size)
        assert D.load_test(str(res / f"distributions/DeepSea-{size}.parquet")).same_as(p.test)
        assert D.read_parquet(res / f"distributions/UDeepSea-{size}.parquet").same_as(
            p.prior("uniform"))
        ts = E.read_test_set(res / f"test_sets/DeepSea-{size}.parquet")
        assert np.array_equal(ts.mdps, E.new_test_set(p.test, 3, 0.95, 20, 0).mdps)
    s = pl.read_parquet(res / "summary.parquet")
    assert set(s["experiment"]) == {"DeepSea-3-DeepSea-3", "DeepSea-4-DeepSea-4",
                                    "DeepSea-3-UDeepSea-3", "DeepSea-4-UDeepSea-4"}
    ladder = pl.read_parquet(res / "report/data/score-size.parquet")
    assert set(ladder["ladder"]) == {"DeepSea, accurate prior", "DeepSea, uniform prior"}
    assert 'id="fig-score-size"' in (res / "report/index.html").read_text()


@pytest.mark.slow
def test_episodic_and_long_interactions_run_end_to_end_from_the_configuration(tmp_path):
    """A DeepSea ladder played episodically (bsuite's protocol, E episodes of N steps) and
    a RiverSwim played continuing for more than MAX_RECORDED_STEPS steps, beside the
    paper's setting of the same RiverSwim, from the configuration alone: their own test
    sets, experiments named by their setting, run tables with episode returns and
    checkpoints instead of every step's rewards."""
    from bbrlcore import protocol as E

    cfg = _write_cfg(tmp_path, _tiny({
        "n_mdps": 3,
        "experiments": [
            {"test": {"family": "deepsea", "size": [3, 4]}, "prior": "uniform",
             "episodes": 30},
            {"test": "RiverSwim-4", "prior": "uniform", "horizon": 20_000},
            {"test": "RiverSwim-4", "prior": "uniform"}],
        "algorithms": {"random": {}, "optimal": {}, "e-greedy": {"epsilon": [0.1]}},
    }))
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = tmp_path / "results"
    ts = E.read_test_set(res / "test_sets/DeepSea-4@E30xH4.parquet")
    assert (ts.horizon, ts.episode_length, ts.checkpoint_every) == (120, 4, 4)
    long = E.read_test_set(res / "test_sets/RiverSwim-4@T20000.parquet")
    assert (long.horizon, long.episode_length, long.checkpoint_every) == (20_000, 0, 2)
    assert E.read_test_set(res / "test_sets/RiverSwim-4.parquet").horizon == 20
    s = pl.read_parquet(res / "summary.parquet")
    assert set(s["experiment"]) == {"DeepSea-3-UDeepSea-3@E30xH3",
                                    "DeepSea-4-UDeepSea-4@E30xH4",
                                    "RiverSwim-4-URiverSwim-4@T20000",
                                    "RiverSwim-4-URiverSwim-4"}
    m = pl.read_parquet(res / "merged/DeepSea-4-UDeepSea-4@E30xH4.parquet")
    opt = m.filter(pl.col("algorithm") == "optimal")
    assert opt["episode_returns"].list.len().to_list() == [30] * 3
    assert all(abs(v - 0.99) < 1e-9 for row in opt["episode_returns"] for v in row)
    m = pl.read_parquet(res / "merged/RiverSwim-4-URiverSwim-4@T20000.parquet")
    assert m["rewards"].null_count() == m.height
    assert m["checkpoints"].list.len().unique().to_list() == [10_000]
    assert (res / "report/index.html").exists()


def test_selection_validation_reports_the_validation_choice_end_to_end(tmp_path):
    """Issue 34, "choosing a configuration without peeking": the tiny preset with
    `selection: validation`. The workflow draws GC's validation set (another seed of the
    seed tree), plays it with the two e-greedy configurations only (BEB and its compat
    variant have one configuration each, Optimal is the reference), and the summary and
    the report give e-greedy's configuration chosen on the validation MDPs, with its score
    on the test MDPs, its grid size beside it, and say so; on these seeds the choice
    differs from the test MDPs' (the paper's) choice."""
    from bbrlcore import protocol as E
    from bbrlcore import seeds

    # first the paper's selection; then switching to validation sets adds their jobs and
    # reruns no job of the test runs
    r = _snake(tmp_path, _write_cfg(tmp_path, _tiny({"selection": "test"}), "t.yaml"),
               "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cfg = _write_cfg(tmp_path, _tiny({"selection": "validation"}))
    r = _snake(tmp_path, cfg, "-n")
    assert r.returncode == 0, r.stderr[-3000:]
    assert {rule for rule, _ in _planned(r.stdout)} == {
        "validation_set", "validate_e_greedy_0", "merge_validation", "summary", "report",
        "all"}
    r = _snake(tmp_path, cfg, "--cores", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = tmp_path / "results"
    ts = E.read_test_set(res / "test_sets/GC.parquet")
    vs = E.read_test_set(res / "test_sets/GC.validation.parquet")
    assert vs.n_mdps == 8 and vs.seed == seeds.validation_seed(ts.seed) != ts.seed
    assert {p.name for p in (res / "runs_validation/GC-UGC").iterdir()} == {
        "e-greedy__epsilon=0.1", "e-greedy__epsilon=0.5"}
    assert {p.stem for p in (res / "logs/runs").glob("validate_*.log")} == {
        "validate_e_greedy_0"}
    merged = pl.read_parquet(res / "merged/GC-UGC.parquet")
    val = pl.read_parquet(res / "merged_validation/GC-UGC.parquet")
    assert set(val["test_seed"]) == {vs.seed}

    def means(t):
        return dict(t.filter(pl.col("algorithm") == "e-greedy").group_by("agent").agg(
            pl.col("discounted_return").mean()).iter_rows())

    on_test, on_val = means(merged), means(val)
    peek, chosen = max(on_test, key=on_test.get), max(on_val, key=on_val.get)
    assert peek != chosen, ("the premise: on these seeds the test MDPs and the validation "
                            "MDPs choose different e-greedy configurations", on_test, on_val)
    s = pl.read_parquet(res / "summary.parquet")
    assert {"validation_mean", "grid_size"} <= set(s.columns)
    assert s.filter(pl.col("agent") == chosen)["validation_mean"][0] == pytest.approx(
        on_val[chosen])
    assert f"| e-greedy | 2 | {chosen} |" in (res / "summary.md").read_text()
    best = pl.read_parquet(res / "report/data/GC-UGC-best.parquet")
    e = best.filter(pl.col("family") == "e-Greedy").row(0, named=True)
    assert e["agent"] == chosen and e["mean"] == pytest.approx(on_test[chosen])
    assert e["grid_size"] == 2
    assert best.filter(pl.col("family") == "BEB")["grid_size"][0] == 1
    agg = pl.read_parquet(res / "report/data/aggregate-best-agents.parquet")
    assert agg.filter(pl.col("family") == "e-Greedy")["agent"][0] == chosen
    html = (res / "report/index.html").read_text()
    page = (res / "report/experiments/GC-UGC.html").read_text()
    assert "chosen on 8 validation MDPs" in html and "chosen on 8 validation MDPs" in page
    # nothing ran twice: a second run has nothing to do
    r = _snake(tmp_path, cfg, "-n")
    assert r.returncode == 0 and "Nothing to be done" in r.stdout + r.stderr
