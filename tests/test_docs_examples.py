"""Every example of the documentation runs as written (README.md and every page of
docs/; the conventions: tests/docs_blocks.py).

* ``bbrl`` and ``python`` command lines of a page's ``sh`` blocks run for real, in order,
  in one directory of the page: a copy of the repository's workflow (``config.yaml``,
  ``examples/``, ...), the original files they name (``F6.dat``) and the ``results/`` of
  a small workflow run;
* ``snakemake`` command lines run as dry runs (``-n`` added) in that directory: the
  option order, targets and profiles must be accepted;
* ``python`` blocks run as scripts there;
* what a block must print (the ``text`` block after it) is checked.

One test per page, so that no test runs for long (the pages share the small workflow run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from docs_blocks import (
    CONSOLE_ONLY,
    ROOT,
    RUNNABLE,
    blocks,
    check_output,
    command_lines,
    page_id,
    pages,
)

BIN = Path(sys.executable).parent
PAGES = pages()
RUNNABLE_PAGES = [p for p in PAGES if any(b.lang in ("sh", "python") for b in blocks(p))]


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


# ---------------------------------------------------------------------------------------
# The pages follow the conventions (fast: nothing runs)


def test_the_pages_show_runnable_examples():
    lines = [line for p in PAGES for b in blocks(p) if b.lang == "sh"
             for line in command_lines(b.code)]
    assert sum(line.startswith("bbrl ") for line in lines) >= 40
    assert sum(line.startswith("snakemake ") for line in lines) >= 10
    assert sum(b.lang == "python" for p in PAGES for b in blocks(p)) >= 10
    assert sum(b.expected is not None for p in PAGES for b in blocks(p)) >= 10
    for name in ("README.md", "docs/tutorials/own-algorithm.md", "docs/tutorials/workflow.md",
                 "docs/tutorials/command-line.md", "docs/getting-started/results.md"):
        assert ROOT / name in RUNNABLE_PAGES, name


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_follows_the_conventions(page):
    """Nothing hides from the tests: every command of an ``sh`` block is one they run, a
    ``console`` block shows only what they cannot run, YAML and TOML blocks parse."""
    import tomllib

    for b in blocks(page):
        where = f"{page_id(page)}: {b.lang} block {b.code[:60]!r}"
        if b.lang == "sh":
            for line in command_lines(b.code):
                assert line.split()[0] in RUNNABLE, f"{where}: {line!r} is not run by the tests"
        elif b.lang == "console":
            for line in b.code.splitlines():
                assert line.startswith("$ "), f"{where}: {line!r}"
                assert line[2:].startswith(CONSOLE_ONLY), f"{where}: {line!r} could run in sh"
        elif b.lang == "yaml":
            yaml.safe_load(b.code)
        elif b.lang == "toml":
            tomllib.loads(b.code)
        elif b.lang not in ("python", "text", "tex", "pycon", ""):
            pytest.fail(f"{where}: unknown block language {b.lang!r}")


# ---------------------------------------------------------------------------------------
# The examples run


@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    """The results of a small run of GC-GC and Grid-Grid (what the pages' examples read)."""
    wf = _workflow_copy(tmp_path_factory.mktemp("docs") / "repo")
    cfg = yaml.safe_load((wf / "config.yaml").read_text())
    cfg["presets"]["docs"] = {
        "n_mdps": 6, "horizon": 20,
        "experiments": [{"test": "GC", "prior": "GC"}, {"test": "Grid", "prior": "Grid"}],
        "formula_sets": {},
        "algorithms": {"random": {}, "e-greedy": {"epsilon": [0.1]}, "optimal": {}},
    }
    (wf / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    r = subprocess.run([str(BIN / "snakemake"), "--cores", "2", "--config", "preset=docs"],
                       cwd=wf, env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return wf / "results"


def _dry(cmd: str) -> str:
    """A snakemake command as a dry run: ``-n`` before ``--config`` (which takes every
    key=value after it), or at the end."""
    head, sep, tail = cmd.partition(" --config ")
    return f"{head} -n --quiet rules" + (f" --config {tail}" if sep else "")


def _run(cmd: list[str] | str, cwd: Path, what: str) -> str:
    r = subprocess.run(cmd if isinstance(cmd, list) else ["bash", "-c", cmd], cwd=cwd,
                       env=_env(), capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{what}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=page_id)
def test_every_example_of_the_page_runs(page, tmp_path, shared, small_results):
    work = _workflow_copy(tmp_path / "work")
    shutil.copy(shared / "data" / "formula_sets" / "F6.dat", work / "F6.dat")
    shutil.copytree(small_results, work / "results")
    for b in blocks(page):
        if b.lang == "sh":
            outputs = []
            for cmd in command_lines(b.code):
                what = f"{page_id(page)}: {cmd}"
                if cmd.startswith("snakemake "):
                    out = _run(_dry(cmd), work, what)
                    assert "Job stats" in out or "Nothing to be done" in out, f"{what}\n{out}"
                else:
                    if " -o " in cmd:  # like a user: the directory of an output exists
                        target = cmd.split(" -o ", 1)[1].split()[0]
                        (work / target).parent.mkdir(parents=True, exist_ok=True)
                    if cmd.startswith("python "):
                        cmd = f"{sys.executable} {cmd[len('python '):]}"
                    out = _run(cmd, work, what)
                outputs.append(out)
            output = "\n".join(outputs)
        elif b.lang == "python":
            if b.file:
                (work / b.file).write_text(b.code)
            run = [sys.executable, b.source] if b.source else [sys.executable, "-c", b.code]
            output = _run(run, work, f"{page_id(page)}: python block\n{b.code}")
        else:
            continue
        if b.expected is not None:
            missing = check_output(b.expected, output)
            assert missing is None, (f"{page_id(page)}: {b.code[:200]!r} should print "
                                     f"{missing!r}; it printed:\n{output[-3000:]}")
