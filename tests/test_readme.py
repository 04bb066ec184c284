"""Every command the README shows works as written.

* ``bbrl`` commands of the README's ``sh`` blocks run for real, in order, in one empty
  directory (with the original files they name: ``F6.dat``);
* ``snakemake`` commands run as dry runs (``-n`` appended) from a copy of the repository's
  workflow: the option order, targets and profiles must be accepted;
* ``python`` blocks run against the results of a small workflow run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def commands(prefix: str) -> list[str]:
    """Command lines of the sh blocks starting with ``prefix`` (continuations joined,
    trailing comments removed)."""
    out = []
    for block in blocks("sh"):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith(prefix + " "):
                out.append(line)
    return out


def _env() -> dict[str, str]:
    import bbrlcore  # noqa: F401  (NUMBA_CACHE_DIR)

    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _workflow_copy(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("workflow", "slurm", "envs", "profiles", "examples"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return dest


def test_the_readme_shows_commands():
    assert len(commands("bbrl")) >= 15
    assert len(commands("snakemake")) >= 6
    assert blocks("python")


@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    """The results of a small run of GC-GC and Grid-Grid (what README examples read)."""
    import yaml

    wf = _workflow_copy(tmp_path_factory.mktemp("readme") / "repo")
    cfg = yaml.safe_load((wf / "config.yaml").read_text())
    cfg["presets"]["readme"] = {
        "n_mdps": 6, "horizon": 20,
        "experiments": [{"test": "GC", "prior": "GC"}, {"test": "Grid", "prior": "Grid"}],
        "formula_sets": {},
        "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1]}, "optimal": {}},
    }
    (wf / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    r = subprocess.run([str(BIN / "snakemake"), "--cores", "2", "--config", "preset=readme"],
                       cwd=wf, env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return wf


@pytest.mark.slow
def test_every_bbrl_command_of_the_readme_runs(tmp_path, shared, small_results):
    shutil.copy(shared / "data" / "formula_sets" / "F6.dat", tmp_path / "F6.dat")
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (tmp_path / "results").symlink_to(small_results / "results")
    env = _env()
    for cmd in commands("bbrl"):
        if " -o " in cmd:  # like a user: the directory of an output exists
            out = cmd.split(" -o ", 1)[1].split()[0]
            (tmp_path / out).parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


@pytest.mark.slow
def test_every_snakemake_command_of_the_readme_is_accepted(tmp_path):
    wf = _workflow_copy(tmp_path / "repo")
    env = _env()
    cmds = commands("snakemake")
    assert any("--profile slurm" in c for c in cmds)
    for cmd in commands("bbrl init"):  # the study files the README's commands use
        r = subprocess.run(["bash", "-c", cmd], cwd=wf, env=env, capture_output=True,
                           text=True)
        assert r.returncode == 0, f"{cmd}\n{r.stderr[-2000:]}"
    for cmd in cmds:
        r = subprocess.run(["bash", "-c", f"{cmd} -n --quiet rules"
                            if "--config" not in cmd else _dry(cmd)],
                           cwd=wf, env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        assert "Job stats" in r.stdout + r.stderr or "Nothing to be done" in r.stdout + r.stderr


def _dry(cmd: str) -> str:
    """Insert ``-n`` before ``--config`` (which takes every key=value after it)."""
    head, _, tail = cmd.partition(" --config ")
    return f"{head} -n --quiet rules --config {tail}"


@pytest.mark.slow
def test_the_python_examples_of_the_readme_run(small_results):
    """The polars examples, on the results of a small run of GC-GC and Grid-Grid."""
    wf = small_results
    for code in blocks("python"):
        r = subprocess.run([sys.executable, "-c", code], cwd=wf, env=_env(),
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{code}\n{r.stderr[-2000:]}"
