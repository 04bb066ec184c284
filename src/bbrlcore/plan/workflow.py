"""What the Snakemake workflow needs besides the plan: its environment and a stale lock.

* :func:`setup_environment`: the shell rules call ``bbrl``; the one installed beside the
  Python that runs Snakemake (the bbrlcore that planned the workflow) comes first on
  ``PATH``, and the jobs' cost estimates read the plan's probes. Jobs inherit the
  environment (a conda env, with ``--sdm conda``, puts its own ``bbrl`` first).
* A **stale lock**: Snakemake locks its working directory while it runs; a Snakemake
  killed with SIGKILL leaves the lock behind and the next run stops with
  ``LockException``. The main process records who holds the lock
  (:func:`record_lock_owner`, from the Snakefile's ``onstart``); a later run removes the
  lock only when that process is provably gone: same host, and no process with that PID
  and start time (:func:`clear_stale_lock`). Otherwise the lock stays and Snakemake
  refuses as usual (two concurrent runs are still refused).
* :func:`schema_error`: a JSON-schema refusal of the configuration as one line naming the
  key as the user wrote it (``config.yaml: presets.tiny.n_mdps: 'eight' is not of type
  'integer'``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

#: Where the main Snakemake process records itself (inside Snakemake's own directory).
OWNER_FILE = Path(".snakemake") / "bbrl-lock-owner.json"
LOCKS = Path(".snakemake") / "locks"
PROC = Path("/proc")


def setup_environment(cost_records_dirs: list[str]) -> None:
    """``bbrl`` beside this Python first on PATH; the probes for the jobs' estimates."""
    from bbrlcore.plan import cost

    here = Path(sys.executable).parent
    if (here / "bbrl").exists():
        os.environ["PATH"] = f"{here}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ[cost.EXTRA_ENV] = os.pathsep.join(cost_records_dirs)


#: The first line of a warm-up marker (``results/warmup/<algorithm>.txt``,
#: ``workflow/scripts/warmup.py``): the numba cache directory it compiled into.
WARMUP_CACHE_LINE = "numba cache: "


def stale_warmups(results_dir: str | Path) -> list[Path]:
    """The warm-up markers (``<results_dir>/warmup/*.txt``) written for another numba
    cache directory than this process's ``NUMBA_CACHE_DIR`` (bbrl's default keys it by
    the source tree: a changed bbrlcore). Their warm-ups run again for their changed
    parameter, and then Snakemake (bug snakemake/snakemake#4166: the run jobs have an
    ``ancient`` edge to them) leaves the jobs whose outputs are missing out of that
    invocation: it runs the warm-ups only and ends "done". The workflow says so
    (:func:`stale_warmup_note`); the same command run again does the rest.

    >>> import os, tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "warmup").mkdir()
    >>> os.environ["NUMBA_CACHE_DIR"] = "/cache/new"
    >>> _ = (d / "warmup" / "psrl.txt").write_text("numba cache: /cache/old\\nbbrlcore 0.1\\n")
    >>> _ = (d / "warmup" / "random.txt").write_text("numba cache: /cache/new\\n")
    >>> [p.name for p in stale_warmups(d)]
    ['psrl.txt']
    """
    here = os.environ.get("NUMBA_CACHE_DIR", "")
    out = []
    for p in sorted(Path(results_dir, "warmup").glob("*.txt")):
        try:
            first = p.read_text().split("\n", 1)[0]
        except OSError:
            continue
        if first.startswith(WARMUP_CACHE_LINE) and first != f"{WARMUP_CACHE_LINE}{here}":
            out.append(p)
    return out


def stale_warmup_note(stale: list[Path], at_end: bool) -> str:
    """The line the workflow prints when :func:`stale_warmups` found markers (at its
    start, and again at its end)."""
    names = ", ".join(p.stem for p in stale)
    if at_end:
        return (f"bbrl: note: the numba warm-ups of {names} were made again (bbrlcore "
                "changed); Snakemake (snakemake/snakemake#4166) leaves the jobs after them "
                "to the next invocation: run the same command again to finish")
    return (f"bbrl: note: bbrlcore changed since the numba warm-ups of {names}: this "
            "invocation makes them again and Snakemake (snakemake/snakemake#4166) leaves "
            "the jobs after them to the next one: run the same command again afterwards")


def schema_error(text: str, plan: Any, source: str) -> str:
    """One line from the text of Snakemake's ``validate`` error: ``SOURCE: KEY: problem``,
    the key found in jsonschema's ``On instance['a']['b'][0]`` (``a.b[0]``) and named
    under ``presets.PRESET.`` when the preset set it (:meth:`~bbrlcore.plan.Plan.where`).
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    problem = next((ln.split(":", 1)[1].strip() for ln in lines
                    if ln.startswith("ValidationError:")), lines[1] if len(lines) > 1
                   else (lines[0] if lines else "invalid configuration"))
    m = re.search(r"^\s*On instance(.*?):?\s*$", text, re.M)
    key = ""
    for tok in re.findall(r"\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?\d+)\]",
                          m.group(1) if m else ""):
        v = ast.literal_eval(tok)
        key += f"[{v}]" if isinstance(v, int) else ("." if key else "") + str(v)
    if key:
        return f"{source}: {plan.where(key)}: {problem}"
    return f"{source}: {problem}"


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if there is none."""
    try:
        stat = (PROC / str(int(pid)) / "stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def record_lock_owner() -> None:
    OWNER_FILE.parent.mkdir(exist_ok=True)
    pid = os.getpid()
    info = {"pid": pid, "host": socket.gethostname(), "start": process_start(pid)}
    OWNER_FILE.write_text(json.dumps(info))


def release_lock_owner() -> None:
    OWNER_FILE.unlink(missing_ok=True)


def clear_stale_lock() -> bool:
    """Remove the lock of a Snakemake that provably no longer runs; True if removed."""
    if not LOCKS.is_dir() or not any(LOCKS.iterdir()) or not OWNER_FILE.is_file():
        return False
    try:
        owner = json.loads(OWNER_FILE.read_text())
        pid, host, start = owner["pid"], owner["host"], owner["start"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if host != socket.gethostname() or start is None:
        return False
    if process_start(pid) == start:
        return False  # the Snakemake that holds the lock is running
    for f in LOCKS.iterdir():
        f.unlink(missing_ok=True)
    release_lock_owner()
    print(
        f"bbrl: removed the lock left by snakemake process {pid}, which no longer runs "
        "(killed); incomplete outputs are redone (rerun-incomplete)",
        file=sys.stderr,
    )
    return True
