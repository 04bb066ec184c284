"""The command line end to end, and its bad-input contract: one line on stderr naming the
problem, exit status 2, and no output file left behind."""

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from bbrlcore.mdp import distributions as D


def bbrl(cmd, args, env, cwd):
    return subprocess.run(cmd + args, capture_output=True, text=True, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, bbrl_cmd, env_with_cache):
    d = tmp_path_factory.mktemp("cli")
    r = bbrl(bbrl_cmd, ["experiment", "new", "--test", "GDL", "--n-mdps", "12", "--horizon",
                        "60", "--seed", "4", "-o", "exp.parquet"], env_with_cache, d)
    assert r.returncode == 0, r.stderr
    r = bbrl(bbrl_cmd, ["train", "--agent", "e-greedy", "--param", "epsilon=0.1", "--prior",
                        "GDL", "-o", "eg.parquet"], env_with_cache, d)
    assert r.returncode == 0, r.stderr
    return d


def test_train_run_and_chunks(workdir, bbrl_cmd, env_with_cache):
    run = lambda args: bbrl(bbrl_cmd, args, env_with_cache, workdir)  # noqa: E731
    assert run(["run", "--experiment", "exp.parquet", "--agent", "eg.parquet", "-q",
                "-o", "all.parquet"]).returncode == 0
    for a, b in [(0, 5), (5, 12)]:
        r = run(["run", "--experiment", "exp.parquet", "--agent", "eg.parquet", "-q",
                 "--mdps", f"{a}:{b}", "-o", f"c{a}.parquet"])
        assert r.returncode == 0, r.stderr
    full = pl.read_parquet(workdir / "all.parquet")
    parts = pl.concat([pl.read_parquet(workdir / f"c{a}.parquet") for a in (0, 5)])
    timing = ["online_time_s", "offline_time_s"]
    assert_frame_equal(full.drop(timing), parts.drop(timing))
    assert full["agent"][0] == "e-greedy__epsilon=0.1"
    assert full["experiment"][0] == "GDL-GDL"


def test_distribution_commands(workdir, bbrl_cmd, env_with_cache, shared):
    run = lambda args: bbrl(bbrl_cmd, args, env_with_cache, workdir)  # noqa: E731
    src = shared / "data" / "distributions" / "Grid-distrib.dat"
    assert run(["distribution", "import", str(src), "-o", "grid.parquet"]).returncode == 0
    assert D.load(workdir / "grid.parquet").same_as(D.builtin("Grid"))
    assert run(["distribution", "export", "UGDL", "-o", "ugdl.dat"]).returncode == 0
    assert (workdir / "ugdl.dat").read_text() == (
        shared / "data" / "distributions" / "UGDL-distrib.dat").read_text()
    r = run(["distribution", "show", "grid.parquet"])
    assert r.returncode == 0 and "25" in r.stdout
    r = run(["experiment", "new", "--test", "grid.parquet", "--n-mdps", "3", "--epsilon",
             "0.01", "-o", "g.parquet"])
    assert r.returncode == 0 and "T=194" in r.stdout


BAD = [
    (["train", "--agent", "e-greedy", "--param", "epsilon=2", "--prior", "GC"], "epsilon=2"),
    (["train", "--agent", "egreedy", "--prior", "GC"], "unknown algorithm"),
    (["train", "--agent", "beb", "--param", "beta=x", "--prior", "GC"], "beta"),
    (["train", "--agent", "beb", "--param", "beta", "--prior", "GC"], "NAME=VALUE"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "missing.dat"], "missing.dat"),
    (["train", "--agent", "beb", "--param", "beta=1", "--prior", "trunc.dat"], "trunc.dat"),
    (["run", "--experiment", "exp.parquet", "--agent", "exp.parquet"], "expected a 'agent'"),
    (["run", "--experiment", "broken.parquet", "--agent", "eg.parquet"], "broken.parquet"),
    (["run", "--experiment", "exp.parquet", "--agent", "eg.parquet", "--mdps", "3:99"],
     "--mdps"),
    (["experiment", "new", "--test", "GC", "--n-mdps", "0"], "--n-mdps"),
    (["distribution", "import", "trunc.dat"], "truncated"),
]


@pytest.mark.parametrize("args, needle", BAD)
def test_bad_input_is_one_clear_line(workdir, bbrl_cmd, env_with_cache, args, needle):
    (workdir / "trunc.dat").write_text("\n".join(D.builtin("GC").to_dat().split("\n")[:20]))
    (workdir / "broken.parquet").write_bytes((workdir / "exp.parquet").read_bytes()[:300])
    out = workdir / "out.parquet"
    out.unlink(missing_ok=True)
    r = bbrl(bbrl_cmd, args + ["-o", str(out)], env_with_cache, workdir)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbrl: error:"), r.stderr
    assert needle in lines[0]
    assert not out.exists()
    assert not list(workdir.glob(".out.parquet.*"))  # no temporary left behind


def _commands(parser) -> dict:
    import argparse

    acts = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(acts[0].choices)


def test_each_command_builds_only_its_module_and_parses_the_same():
    """``bbrl COMMAND`` imports only COMMAND's module (start-up of every workflow job): the
    table of commands matches the modules' parsers, and a command's own parser reads its
    line as the whole parser does."""
    from bbrlcore import cli

    full = _commands(cli.build_parser())
    assert set(full) == set(cli._COMMANDS)
    for command in full:
        alone = _commands(cli.build_parser(command))
        assert command in alone
        assert set(alone) == {c for c, m in cli._COMMANDS.items() if m == cli._COMMANDS[command]}
    line = ["--log", "x.log", "run", "--experiment", "e.parquet", "--agent", "a.parquet",
            "-o", "r.parquet"]
    assert cli._command_of(line) == "run"
    assert vars(cli.build_parser("run").parse_args(line)).keys() \
        == vars(cli.build_parser().parse_args(line)).keys()
    assert cli._command_of(["--help"]) is None and cli._command_of(["--log=x", "demo"]) == "demo"


def test_version_is_the_parsers(capsys):
    from bbrlcore import cli

    with pytest.raises(SystemExit) as exc:  # (the parser answers, without command modules)
        cli.main(["--version"])
    assert exc.value.code == 0
    fast = capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == fast != ""


def test_run_does_not_import_the_plan_families_or_report_code():
    import subprocess
    import sys

    code = ("import sys\nfrom bbrlcore import cli\ncli.build_parser(cli._command_of(['run']))\n"
            "print(' '.join(m for m in sys.modules if m.startswith('bbrlcore.')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    assert "bbrlcore.cli.agents" in loaded
    for heavy in ("bbrlcore.plan.cost", "bbrlcore.mdp.families", "bbrlcore.report",
                  "bbrlcore.analysis.aggregate", "bbrlcore.cli.distribution"):
        assert heavy not in loaded, heavy


def test_warmup_compiles_what_it_is_asked_and_refuses_what_it_does_not_know(capsys):
    """`bbrl warmup`: named algorithms are trained and
    played once (their kernels then load from numba's cache); an unknown name or a job
    count below 1 is one line, exit 2."""
    from bbrlcore.cli import main
    from bbrlcore.protocol.warmup import CHEAP, warm_algorithms

    assert main(["warmup", "--algorithm", "random", "--algorithm", "e-greedy",
                 "--no-analysis"]) == 0
    err = capsys.readouterr().err
    assert "random" in err and "e-greedy" in err and "compiled 2 algorithms" in err
    assert main(["warmup", "--algorithm", "nope"]) == 2
    assert capsys.readouterr().err.strip().startswith(
        "bbrl: error: --algorithm nope: not a built-in algorithm")
    assert main(["warmup", "--jobs", "0"]) == 2
    assert [w for w, _ in warm_algorithms(["random"])] == ["random"]
    from bbrlcore import agents
    assert set(CHEAP) == set(agents.BUILTINS) - {"formula"}, "a built-in without warm-up"


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_run_uses_the_cores_it_is_given():
    """`make run CORES=1` runs the workflow on one core (a shared machine); by default on
    all of them. (`make -n`: the commands, nothing run.)"""
    root = Path(__file__).resolve().parents[1]

    def snakemake_line(*args: str) -> str:
        r = subprocess.run(["make", "-n", "-s", "run", *args], capture_output=True,
                           text=True, cwd=root)
        assert r.returncode == 0, r.stderr
        return next(ln for ln in r.stdout.splitlines() if "snakemake " in ln)

    assert "snakemake --cores all --config preset=quick" in snakemake_line()
    assert "snakemake --cores 1 --config preset=quick" in snakemake_line("CORES=1")
