"""Several trainings or runs in one process: a workflow job's bundle of units.

The workflow packs the units of one algorithm into one job
(:mod:`bbrlcore.plan.bundles`); ``bbrl batch SPEC`` executes it here. Each unit is
exactly what ``bbrl train`` or ``bbrl run`` would do with the same arguments (the same
functions are called, so the artefacts are identical, returns bit for bit), but the
process starts once: imports, the algorithm's compiled kernels, the test sets and priors
are loaded once for all units.

A **spec** is a JSON object naming the agents once and each unit by names under the
results directory ``root``, whose files follow the workflow's layout::

    {"bundle": "run_e_greedy_0", "kind": "run", "version": "0.1.0", "root": "results",
     "seed": 0, "gamma": 0.95, "horizon": 250,   # offline learning, agents built here
     "agents": {"e-greedy__epsilon=0.1": {"ref": "e-greedy", "params": {"epsilon": 0.1}},
                "opps-ds__...": {"ref": "opps-ds", "params": {...}, "learned": true}},
     "units": [["e-greedy__epsilon=0.1", "UGC", "GC-UGC", "GC", 0, 500], ...]}

A run spec may add ``"log_every": {experiment: L}``: the runs of those experiments
compute Colosseum's indicators every L steps (``bbrl run --indicators --log-every L``).

A run unit ``[agent, prior, experiment, test set, start, stop]`` plays test MDPs
``start:stop`` of ``root/test_sets/{test set}.parquet`` and writes
``root/runs/{experiment}/{agent}/{start}-{stop}.parquet``; its agent is read from
``root/agents/{prior}/{agent}.parquet`` when it is ``learned`` (trained offline by a
training job), else built from ``root/distributions/{prior}.parquet`` in this process,
as ``bbrl train`` would build it with the test set's γ and horizon (the offline time is
zero either way). A run unit with a
seventh element ``"validation"`` plays the experiment's validation set instead
(``root/test_sets/{test}.validation.parquet``, the MDPs on which configurations are
chosen) and writes ``root/runs_validation/{experiment}/{agent}/{start}-{stop}.parquet``
(its metadata says ``split: validation``). A training unit
``[agent, prior]`` writes ``root/agents/{prior}/{agent}.parquet`` (with a checkpoint in
``root/checkpoints/{prior}/`` when the agent asks for one). :func:`expand` gives each
unit with its files.

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

from bbrlcore import __version__, crash
from bbrlcore.errors import BBRLError

KINDS = ("train", "run")
#: What a run unit plays: the experiment's test set, or its validation set.
SPLITS = ("test", "validation")


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
    if not isinstance(spec.get("root"), str):
        raise BBRLError(f"{source}: root must be the results directory")
    agents = spec.get("agents")
    if not isinstance(agents, dict) or not all(
            isinstance(a, dict) and isinstance(a.get("ref"), str)
            and isinstance(a.get("params", {}), dict) for a in agents.values()):
        raise BBRLError(f"{source}: agents must map each agent id to {{ref, params}}")
    le = spec.get("log_every", {})
    if not isinstance(le, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in le.values()):
        raise BBRLError(f"{source}: log_every must map experiments to integers >= 1")
    units = spec.get("units")
    if not isinstance(units, list):
        raise BBRLError(f"{source}: units must be a list")
    shape = "[agent, prior]" if kind == "train" else (
        "[agent, prior, experiment, test, start, stop] (then \"validation\" for a run on "
        "the validation set)")
    n_fields = 2 if kind == "train" else 6
    for i, u in enumerate(units):
        ok = (isinstance(u, list) and len(u) in ((n_fields,) if kind == "train"
                                                 else (n_fields, n_fields + 1))
              and all(isinstance(x, str) for x in u[:4]) and u[0] in agents)
        if ok and kind == "run":
            ok = all(isinstance(x, int) and not isinstance(x, bool) for x in u[4:6]) and (
                len(u) == n_fields or u[6] in SPLITS)
        if not ok:
            raise BBRLError(f"{source}: units[{i}] must be {shape}, with an agent of agents")
    outputs = [x["output"] for x in expand(spec)]
    if len(set(outputs)) != len(outputs):
        dup = next(o for o in outputs if outputs.count(o) > 1)
        raise BBRLError(f"{source}: {dup} is the output of two units")
    return spec


def expand(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Each unit of ``spec`` with its files: ``agent`` (``ref`` and ``params`` with the
    ``prior`` file to build it from, or the trained agent's ``file``), the ``prior`` and
    ``checkpoint`` (training) or ``experiment``, ``test_set`` and ``mdps`` (runs), and its
    ``output``."""
    root = spec["root"]
    out = []
    for u in spec["units"]:
        key, prior = u[0], u[1]
        a = spec["agents"][key]
        agent = {"ref": a["ref"], "params": a.get("params", {})}
        if spec["kind"] == "train":
            unit: dict[str, Any] = {
                "agent": agent, "prior": f"{root}/distributions/{prior}.parquet",
                "output": f"{root}/agents/{prior}/{key}.parquet"}
            if a.get("checkpoint"):
                unit["checkpoint"] = f"{root}/checkpoints/{prior}/{key}.ckpt"
        else:
            exp, test, start, stop = u[2:6]
            split = u[6] if len(u) > 6 else "test"
            if a.get("learned"):
                agent = {"file": f"{root}/agents/{prior}/{key}.parquet"}
            else:
                agent["prior"] = f"{root}/distributions/{prior}.parquet"
            ts, runs = ((f"{test}.validation", "runs_validation") if split == "validation"
                        else (test, "runs"))
            unit = {"agent": agent, "experiment": exp,
                    "test_set": f"{root}/test_sets/{ts}.parquet", "mdps": [start, stop],
                    "output": f"{root}/{runs}/{exp}/{key}/{start}-{stop}.parquet"}
            if split == "validation":
                unit["split"] = split
        out.append(unit)
    return out


def describe(spec: dict[str, Any], unit: dict[str, Any]) -> str:
    """A unit in words: ``e-greedy (epsilon=0.1) on GC.parquet MDPs 0:500``."""
    ag = unit["agent"]
    who = (Path(ag["file"]).stem if "file" in ag else
           ag["ref"] + (" (" + ", ".join(f"{k}={v}" for k, v in ag.get("params", {}).items())
                        + ")" if ag.get("params") else ""))
    if spec["kind"] == "train":
        return f"training {who} on {Path(unit['prior']).stem}"
    a, b = unit["mdps"]
    on = "validation MDPs" if unit.get("split") == "validation" else "MDPs"
    return f"{who} on {unit.get('experiment') or Path(unit['test_set']).stem} {on} {a}:{b}"


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


def _place(src: str | Path, dst: str, *, publish: bool = False) -> None:
    """``dst`` becomes a copy of ``src`` (a hard link where possible), atomically;
    ``publish`` (an output of the bundle): once a watched process has exited cleanly
    (:func:`bbrlcore.crash.publish`)."""
    parent = Path(dst).parent
    created = [d for d in (parent, *parent.parents) if not d.exists()]  # deepest first
    parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{dst}.batch-{os.getpid()}.tmp"
    handed = False  # (over to the watcher, which renames it)
    try:
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        handed = publish and crash.publish(Path(tmp), Path(dst), created)
        if not handed:
            os.replace(tmp, dst)
    finally:
        if not handed and os.path.exists(tmp):
            os.unlink(tmp)


def _keep(partial: str | None, key: str, output: str) -> None:
    """Keep a finished unit's ``output`` under ``partial`` for a later attempt (not in
    a diagnostic run after a crash, which keeps nothing)."""
    if partial is None or crash.diagnosing():
        return
    try:
        Path(partial).mkdir(parents=True, exist_ok=True)
        kept = os.path.join(partial, key + ".parquet")
        _place(crash.location(output), kept)  # (the output may wait for the watcher)
        crash.kept(kept)
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

    def agent(self, ag: dict[str, Any], ts: Any = None):
        """The agent ``ag``: read from its file, or built from its prior for the test set
        ``ts`` it will play (with its γ and horizon: what ``bbrl train`` is given for it)."""
        settings = None if ts is None or "file" in ag else (ts.gamma, ts.horizon)
        key = json.dumps([ag, settings], sort_keys=True)
        if key not in self.agents:
            if "file" in ag:
                from bbrlcore.protocol.training import read_agent

                self.agents[key] = read_agent(ag["file"])
            else:
                spec = self.spec if settings is None else {
                    **self.spec, "gamma": settings[0], "horizon": settings[1]}
                self.agents[key] = _train(spec, ag, self.prior(ag["prior"]), None)
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
    from bbrlcore.protocol.runner import run_agent, run_meta, score_summary, write_run

    ts = cache.test_set(unit["test_set"])
    agent = cache.agent(unit["agent"], ts)
    a, b = unit["mdps"]
    if not 0 <= a <= b <= ts.n_mdps:
        raise BBRLError(f"MDPs {a}:{b}: the test set has {ts.n_mdps}")
    sel = range(a, b)
    table = run_agent(ts, agent, sel, progress=progress,
                      expected_s=(lambda: expected(ts, agent, len(sel))) if expected else None,
                      log_every=spec.get("log_every", {}).get(unit["experiment"]))
    meta = run_meta(ts, agent, sel)
    if unit.get("split") == "validation":
        meta["split"] = "validation"
    write_run(table, unit["output"], meta)
    if not len(table):
        return "no trajectories"
    return (f"{len(table)} trajectories, {score_summary(table)}, "
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
    units = expand(spec)
    cache = _Cache(spec)
    computed = 0
    t_all = time.perf_counter()
    cpu_units = 0.0
    for i, unit in enumerate(units):
        what = describe(spec, unit)
        key = unit_key(spec, unit)
        kept = os.path.join(partial, key + ".parquet") if partial else None
        if kept and os.path.isfile(kept):
            _place(kept, unit["output"], publish=True)
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
    if partial and not crash.diagnosing():
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
