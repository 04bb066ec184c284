"""Several trainings or runs in one process: a workflow job's bundle of units.

The workflow packs the units of one algorithm into one job
(:mod:`bbrlcore.plan.bundles`); ``bbrl batch SPEC`` executes it here. Each unit is
exactly what ``bbrl train`` or ``bbrl run`` would do with the same arguments (the same
functions are called, so the artefacts are identical, returns bit for bit), but the
process starts once: imports, the algorithm's compiled kernels, the test sets and priors
are loaded once for all units.

A **spec** is a JSON object::

    {"bundle": "run_e_greedy_0", "kind": "run", "version": "0.1.0",
     "seed": 0, "gamma": 0.95, "horizon": 250,          # for agents built here
     "units": [
       {"agent": {"ref": "e-greedy", "params": {"epsilon": 0.1},
                  "prior": "results/distributions/GC.parquet"},
        "test_set": "results/test_sets/GC.parquet", "mdps": [0, 500],
        "output": "results/runs/GC-GC/e-greedy__epsilon=0.1/0-500.parquet"},
       {"agent": {"file": "results/agents/GC/opps-ds__....parquet"}, ...}]}

``kind: "train"`` units have ``agent`` (ref, params), ``prior``, ``output`` and an
optional ``checkpoint``. An agent given by ``ref`` and ``prior`` in a run unit is built
from its prior in this process, as ``bbrl train`` would build it (only for algorithms
that learn nothing offline: the offline time is zero either way).

**Nothing finished is lost.** With a partial directory, each finished unit's artefact is
also kept there (a hard link, under a key of the unit's spec, bbrlcore's version and its
input files' sizes and modification times); a later attempt of the same bundle (after a
failure, a kill, a cluster time limit) takes a unit found there instead of computing it
again. The directory is removed once every unit is done.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bbrlcore import __version__
from bbrlcore.errors import BBRLError

KINDS = ("train", "run")


def load_spec(text: str, source: str = "--spec") -> dict[str, Any]:
    """A bundle spec from JSON text (or ``@FILE``), its shape checked: one
    :class:`BBRLError` naming what is wrong."""
    if text.startswith("@"):
        path = text[1:]
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise BBRLError(f"{source} {path}: cannot read ({exc.strerror})") from None
        source = path
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BBRLError(f"{source}: not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(spec, dict):
        raise BBRLError(f"{source}: expected a JSON object")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise BBRLError(f"{source}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    units = spec.get("units")
    if not isinstance(units, list):
        raise BBRLError(f"{source}: units must be a list")
    need = ("agent", "prior", "output") if kind == "train" else (
        "agent", "test_set", "mdps", "output")
    outputs = set()
    for i, u in enumerate(units):
        if not isinstance(u, dict) or any(k not in u for k in need):
            raise BBRLError(f"{source}: units[{i}] must be an object with "
                            f"{', '.join(need)}")
        ag = u["agent"]
        if not isinstance(ag, dict) or not ("file" in ag or "ref" in ag):
            raise BBRLError(f"{source}: units[{i}].agent must name a file or a ref")
        if kind == "run":
            m = u["mdps"]
            if (not isinstance(m, list) or len(m) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in m)):
                raise BBRLError(f"{source}: units[{i}].mdps must be [START, STOP]")
            if "ref" in ag and "prior" not in ag:
                raise BBRLError(f"{source}: units[{i}].agent needs a prior to be built from")
        if u["output"] in outputs:
            raise BBRLError(f"{source}: units[{i}].output {u['output']} appears twice")
        outputs.add(u["output"])
    return spec


def describe(spec: dict[str, Any], unit: dict[str, Any]) -> str:
    """A unit in words: ``e-greedy (epsilon=0.1) on GC.parquet MDPs 0:500``."""
    ag = unit["agent"]
    who = (Path(ag["file"]).stem if "file" in ag else
           ag["ref"] + (" (" + ", ".join(f"{k}={v}" for k, v in ag.get("params", {}).items())
                        + ")" if ag.get("params") else ""))
    if spec["kind"] == "train":
        return f"training {who} on {Path(unit['prior']).stem}"
    a, b = unit["mdps"]
    return f"{who} on {unit.get('experiment') or Path(unit['test_set']).stem} MDPs {a}:{b}"


def unit_key(spec: dict[str, Any], unit: dict[str, Any]) -> str:
    """The key under which a finished unit is kept: its spec, the bundle's settings,
    bbrlcore's version, and the size and modification time of every input file."""
    inputs = []
    ag = unit["agent"]
    for p in (ag.get("file"), ag.get("prior"), unit.get("prior"), unit.get("test_set"),
              ag.get("params", {}).get("formula_set")):
        if isinstance(p, str) and os.path.isfile(p):
            st = os.stat(p)
            inputs.append([p, st.st_size, st.st_mtime_ns])
    settings = {k: spec.get(k) for k in ("kind", "seed", "gamma", "horizon")}
    blob = json.dumps([unit, settings, __version__, inputs], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _place(src: str, dst: str) -> None:
    """``dst`` becomes a copy of ``src`` (a hard link where possible), atomically."""
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{dst}.batch-{os.getpid()}.tmp"
    try:
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _keep(partial: str | None, key: str, output: str) -> None:
    if partial is None:
        return
    try:
        Path(partial).mkdir(parents=True, exist_ok=True)
        _place(output, os.path.join(partial, key + ".parquet"))
    except OSError as exc:  # only a lost shortcut: say so, go on
        print(f"bbrl: warning: cannot keep {output} under {partial} ({exc})",
              file=sys.stderr, flush=True)


class _Cache:
    """Test sets, priors and agents read or built once per process."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.test_sets: dict[str, Any] = {}
        self.priors: dict[str, Any] = {}
        self.agents: dict[str, Any] = {}

    def test_set(self, path: str):
        if path not in self.test_sets:
            from bbrlcore.protocol.test_sets import read_test_set

            self.test_sets[path] = read_test_set(path)
        return self.test_sets[path]

    def prior(self, path: str):
        if path not in self.priors:
            from bbrlcore.mdp import distributions as D

            self.priors[path] = D.load(path)
        return self.priors[path]

    def agent(self, ag: dict[str, Any]):
        key = json.dumps(ag, sort_keys=True)
        if key not in self.agents:
            if "file" in ag:
                from bbrlcore.protocol.training import read_agent

                self.agents[key] = read_agent(ag["file"])
            else:
                self.agents[key] = _train(self.spec, ag, self.prior(ag["prior"]), None)
        return self.agents[key]


def _train(spec: dict[str, Any], ag: dict[str, Any], prior, unit: dict[str, Any] | None,
           progress: bool = False):
    from bbrlcore.protocol.training import train_agent

    raw = {k: _show(v) for k, v in ag.get("params", {}).items()}
    unit = unit or {}
    return train_agent(
        ag["ref"], raw, prior,
        seed=int(spec.get("seed", 0)), gamma=float(spec.get("gamma", 0.95)),
        horizon=int(spec.get("horizon", 250)),
        checkpoint=unit.get("checkpoint"),
        checkpoint_every=float(spec.get("checkpoint_every", 60.0)),
        progress=progress,
    )


def _show(v: Any) -> str:
    """A parameter value as the text ``bbrl train --param`` would be given."""
    from bbrlcore.agents.base import show_value

    return show_value(v)


def _do_train(spec: dict[str, Any], unit: dict[str, Any], cache: _Cache,
              progress: bool) -> str:
    from bbrlcore.protocol.training import write_agent

    agent = _train(spec, unit["agent"], cache.prior(unit["prior"]), unit, progress)
    write_agent(agent, unit["output"])
    return f"offline {agent.offline_time_s:.3g} s"


def _do_run(spec: dict[str, Any], unit: dict[str, Any], cache: _Cache,
            progress: bool, expected: Expected = None) -> str:
    from bbrlcore.protocol.runner import run_agent, run_meta, write_run

    ts = cache.test_set(unit["test_set"])
    agent = cache.agent(unit["agent"])
    a, b = unit["mdps"]
    if not 0 <= a <= b <= ts.n_mdps:
        raise BBRLError(f"MDPs {a}:{b}: the test set has {ts.n_mdps}")
    sel = range(a, b)
    table = run_agent(ts, agent, sel, progress=progress,
                      expected_s=(lambda: expected(ts, agent, len(sel))) if expected else None)
    write_run(table, unit["output"], run_meta(ts, agent, sel))
    if not len(table):
        return "no trajectories"
    return (f"{len(table)} trajectories, mean return {table['discounted_return'].mean():.4g}, "
            f"{1000 * table['online_time_s'].mean():.3g} ms each")


#: The cost model's estimate of a run unit's trajectories, asked only when a unit has
#: lasted long (see :class:`~bbrlcore.protocol.runner.Overrun`): ``(test set, agent,
#: number of MDPs) -> seconds or None``.
Expected = Callable[[Any, Any, int], "float | None"] | None


def run_batch(spec: dict[str, Any], partial: str | None = None, *,
              progress: bool = True, expected: Expected = None,
              say: Callable[[str], None] | None = None) -> int:
    """Execute every unit of ``spec`` (see the module's documentation) in this process;
    the number of units computed (the others were found finished under ``partial``).

    A unit that fails raises one :class:`BBRLError` naming the bundle and the unit;
    the units finished before it stay under ``partial`` for the next attempt."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    name = spec.get("bundle", "batch")
    units = spec["units"]
    cache = _Cache(spec)
    computed = 0
    t_all = time.perf_counter()
    cpu_units = 0.0
    for i, unit in enumerate(units):
        what = describe(spec, unit)
        key = unit_key(spec, unit)
        kept = os.path.join(partial, key + ".parquet") if partial else None
        if kept and os.path.isfile(kept):
            _place(kept, unit["output"])
            say(f"[{name}] {i + 1}/{len(units)} {what}: finished by an earlier attempt")
            continue
        say(f"[{name}] {i + 1}/{len(units)} {what} ...")
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = (_do_train(spec, unit, cache, progress) if spec["kind"] == "train"
                      else _do_run(spec, unit, cache, progress, expected))
        except BBRLError as exc:
            raise BBRLError(f"{name}, unit {i + 1}/{len(units)} ({what}): {exc}") from None
        except BaseException:
            say(f"[{name}] failed in unit {i + 1}/{len(units)}: {what}")
            raise
        computed += 1
        cpu_units += time.process_time() - c0
        _keep(partial, key, unit["output"])
        say(f"[{name}] {i + 1}/{len(units)} {what}: {result} "
            f"({time.perf_counter() - t0:.2f} s)")
    if partial:
        shutil.rmtree(partial, ignore_errors=True)
        try:  # the directory of all bundles' partial results, once the last is done
            os.rmdir(os.path.dirname(os.path.abspath(partial)))
        except OSError:
            pass
    # the process's CPU: inside the units (training, trajectories, compiling or loading
    # kernels) and outside them (start-up: imports, reading the spec) — what
    # benchmarks/bench_workflow.py adds up
    cpu_all = time.process_time()
    say(f"[{name}] {len(units)} units done ({computed} computed) in "
        f"{time.perf_counter() - t_all:.1f} s; CPU {cpu_units:.2f} s in units, "
        f"{cpu_all - cpu_units:.2f} s outside them")
    return computed
