"""Probes: short measurements of algorithms the benchmarks do not calibrate (plugins).

The cost model (:mod:`bbrlcore.plan.cost`) prices an algorithm's work from measurements. The
built-ins are measured by ``benchmarks/``; a plugin is measured here, by a **probe**: for
each of its configurations and each experiment it runs in, one training on the prior
(timed: the offline time) and :data:`TRAJECTORIES` trajectories on test MDPs drawn from
the test distribution with the plan's γ and test seed, in the experiment's setting
(timed: the online time, or the process's CPU time when smaller: a probe on a busy
machine is not priced by the other work on its cores): continuing or in episodes of its
H steps, over its T steps or, for a long interaction, its first :data:`PROBE_STEPS`
(whole episodes; recorded as
what was timed, with its ``horizon`` and ``episode_length``: the cost model's work
amounts scale it to T). A built-in whose work depends on the episodes (PSRL's episodic
form) and that the benchmarks measured in continuing interactions only is probed in the
plan's episodic experiments (:func:`uncalibrated_episodic`). The records are written as
JSON under ``{results_dir}/probes/{algorithm}/{fingerprint}/``, in the benchmarks'
record format, so the same mechanism prices them; a change of the plugin's code (its
fingerprint) probes it again. ``bbrl estimate`` and the workflow run the probes that
are missing, and the estimate marks probed figures as such.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.plan import cost

#: Trajectories per (configuration, experiment).
TRAJECTORIES = 3
#: Most steps of a probed trajectory (a long interaction is timed over its beginning).
PROBE_STEPS = 10_000


def probe_horizon(horizon: int, episode_length: int = 0) -> int:
    """The steps a probe times of an interaction of ``horizon`` steps (in episodes of
    ``episode_length`` steps when > 0): all of them up to :data:`PROBE_STEPS`, else its
    first whole episodes within them (at least one).

    >>> probe_horizon(250), probe_horizon(100_000), probe_horizon(500_000, 50)
    (250, 10000, 10000)
    >>> probe_horizon(30_000, 3_000), probe_horizon(60_000, 12_000)
    (9000, 12000)
    """
    T = min(int(horizon), PROBE_STEPS)
    if episode_length > 0:
        T = max(episode_length, T // episode_length * episode_length)
    return T


def probe_dir(results_dir: str | Path, algorithm: str, fingerprint: str) -> Path:
    return Path(results_dir) / "probes" / algorithm / (fingerprint or "no-fingerprint")


def uncalibrated(plan: Any) -> set[str]:
    """Algorithms of ``plan`` without a benchmark measurement (they need probes)."""
    bench = cost.model(plan.results_dir_calibration, [], plan.dists)
    return {a.algorithm for a in plan.agents if not bench.calibrated(a.algorithm)}


def episodic_work(algorithm: str) -> bool:
    """Whether ``algorithm``'s work depends on the episodes of an episodic interaction
    (its :attr:`~bbrlcore.agents.base.Algorithm.cost_features` take ``episode_length``:
    PSRL's episodic form draws a model and plans once per episode), not only on its
    steps.

    >>> episodic_work("psrl"), episodic_work("beb")
    (True, False)
    """
    import inspect

    from bbrlcore import agents

    fn = agents.get(algorithm).cost_features
    return fn is not None and "episode_length" in inspect.signature(fn).parameters


def uncalibrated_episodic(plan: Any) -> set[str]:
    """Algorithms of ``plan`` that the benchmarks measured in continuing interactions
    only, whose work depends on the episodes (:func:`episodic_work`) and which ``plan``
    runs in an episodic experiment: they are probed there."""
    bench = cost.model(plan.results_dir_calibration, [], plan.dists)
    out = set()
    for a in plan.agents:
        fit = bench.quality(a.algorithm)
        if (fit is not None and not getattr(fit, "episodic", False)
                and any(e.episode_length for e in plan.experiments_of(a))
                and episodic_work(a.algorithm)):
            out.add(a.algorithm)
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return data.get("rows", []) if isinstance(data, dict) else []


def ensure(plan: Any, results_dir: str | Path, *, progress: bool = True,
           run: bool = True, isolate: bool = True) -> list[Path]:
    """Run the missing probes of ``plan``'s uncalibrated algorithms (``run=False``: only
    use those that exist, as a dry run does: it plays no trajectory); set
    ``plan.cost_records_dirs``, ``plan.probed`` and ``plan.unprobed`` (the (agent key,
    experiment name) pairs left without a probe: their estimates use a default price, or
    the benchmarks' continuing measurements; :func:`unprobed_lines`); return the probe
    directories.

    Each agent configuration is probed in a process of its own (``isolate``; as a job
    plays its units): what a process ran before changes what it plays after, so that a
    probe made after others priced a job that far from its time. glibc raises its mmap
    threshold each time it frees a larger block, after which numpy's large arrays come
    from the heap instead of fresh pages: a Python plugin's episodic PSRL on DeepSea-14
    played 4x faster after a compiled plugin's probes on DeepSea-20, and its jobs took 4x
    their estimate (``benchmarks/bench_plugin_cost.py``). ``isolate=False`` probes in
    this process."""
    todo = uncalibrated(plan)
    episodic = uncalibrated_episodic(plan)
    dirs: list[Path] = []
    missing: list[tuple[str, str]] = []
    for a in plan.agents:
        if a.algorithm not in todo | episodic:
            continue
        d = probe_dir(results_dir, a.algorithm, a.fingerprint)
        if d not in dirs:
            dirs.append(d)
        wanted = _wanted(plan, a, _records(d / f"{a.key}.json"), a.algorithm in todo)
        if not wanted:
            continue
        if not run:
            missing += [(a.key, e.name) for e in wanted]
        elif isolate:
            _probe_in_child(plan, a, results_dir, progress, a.algorithm in todo)
        else:
            probe_agent(plan, a, results_dir, progress=progress,
                        continuing=a.algorithm in todo)
    plan.cost_records_dirs = [str(d) for d in dirs]
    plan.probed = set(todo)
    plan.probed_episodic = episodic
    plan.unprobed = missing
    for memo in ("_model", "_spt", "_offline", "_chunks"):  # made before the probes
        plan.__dict__.pop(memo, None)
    return dirs


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r.get("test"), r.get("prior"), r.get("horizon"), r.get("gamma"),
            "offline_s" in r, r.get("episode_length", 0))


def _wanted(plan: Any, a: Any, rows: list[dict[str, Any]], continuing: bool) -> list[Any]:
    """The experiments of ``a`` whose probe ``rows`` lack (the first of those that share
    a test set and setting: probed once); continuing ones only if ``continuing`` (an
    algorithm the benchmarks measured in continuing interactions is probed in its
    episodic experiments only)."""
    have = {_key(r) for r in rows}
    out = []
    for exp in plan.experiments_of(a):
        H = int(exp.episode_length or 0)
        if not continuing and not H:
            continue
        key = (exp.test, exp.prior, probe_horizon(exp.horizon, H), plan.config["gamma"],
               False, H)
        if key not in have:
            have.add(key)
            out.append(exp)
    return out


def probe_agent(plan: Any, a: Any, results_dir: str | Path, *, progress: bool = True,
                continuing: bool = True) -> None:
    """Probe agent configuration ``a`` of ``plan`` in this process, in each of its
    experiments without a probe (:func:`_wanted`), and add the records to its probe file
    (written atomically)."""
    from bbrlcore import protocol as E

    c = plan.config
    path = probe_dir(results_dir, a.algorithm, a.fingerprint) / f"{a.key}.json"
    rows = _records(path)
    have = {_key(r) for r in rows}
    new: list[dict[str, Any]] = []
    trained: dict[str, Any] = {}
    for exp in _wanted(plan, a, rows, continuing):
        H = int(exp.episode_length or 0)
        T = probe_horizon(exp.horizon, H)
        if progress:
            print(f"bbrl: probing {a.key} on {exp.name} for the cost model "
                  f"({TRAJECTORIES} trajectories)", file=sys.stderr, flush=True)
        prior = plan.dists[exp.prior]
        if exp.prior not in trained:
            t0 = time.perf_counter()
            trained[exp.prior] = E.train_agent(
                a.ref, a.param_dict, prior, seed=c["train_seed"], gamma=c["gamma"],
                horizon=c["horizon"], progress=False)
            off = trained[exp.prior].offline_time_s
            if (exp.prior, exp.prior, c["horizon"], c["gamma"], True, 0) not in have:
                new.append(_row(a, exp.prior, exp.prior, c, offline_s=max(off, 1e-6),
                                wall_s=time.perf_counter() - t0))
        ts = E.new_test_set(plan.test_distribution(exp.test), min(TRAJECTORIES, c["n_mdps"]),
                            c["gamma"], T, c["test_seed"], episode_length=H,
                            references=False)
        agent = trained[exp.prior]
        if agent.horizon != T:  # (no warning: trained on the plan's horizon, as its jobs)
            agent = dataclasses.replace(agent, horizon=T)
        cpu_times: list[float] = []
        table = E.run_agent(ts, agent, progress=False, cpu_times=cpu_times)
        cpu = 1000.0 * sum(cpu_times) / max(len(cpu_times), 1)
        wall = 1000.0 * float(table["online_time_s"].mean())
        # a busy machine (other work on the cores) lengthens the wall time, threads the
        # CPU time: the smaller is the trajectory's own work
        new.append(_row(a, exp.test, exp.prior, c, ms_per_trajectory=max(min(wall, cpu), 1e-6),
                        wall_ms=wall, cpu_ms=cpu, n_trajectories=ts.n_mdps, horizon=T,
                        episode_length=H))
    if new:
        out = {"meta": {"probe": True, "algorithm": a.algorithm, "agent": a.key,
                        "fingerprint": a.fingerprint, "date": time.strftime("%Y-%m-%d")},
               "rows": rows + new}
        try:
            with artefacts.atomic_path(path) as tmp:
                tmp.write_text(json.dumps(out, indent=1))
        except BBRLError as exc:
            raise BBRLError(f"probe of {a.key}: {exc}") from None


def _probe_in_child(plan: Any, a: Any, results_dir: str | Path, progress: bool,
                    continuing: bool) -> None:
    """:func:`probe_agent` in a new Python process (``python -m bbrlcore.plan.probe``,
    the plan's checked configuration on its stdin): its progress lines and the agent's
    output pass through to stderr; a failure is one :class:`BBRLError` line, its own."""
    import subprocess

    spec = {"config": {**plan.config, "preset": None}, "source": "probe",
            "calibration_dir": plan.results_dir_calibration, "agent": a.key,
            "results_dir": str(results_dir), "progress": progress,
            "continuing": continuing}
    try:
        text = json.dumps(spec)
    except (TypeError, ValueError):  # (a configuration JSON cannot hold: probed here)
        probe_agent(plan, a, results_dir, progress=progress, continuing=continuing)
        return
    proc = subprocess.Popen([sys.executable, "-m", "bbrlcore.plan.probe"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(text)
    proc.stdin.close()
    last = ""
    for line in proc.stderr:
        if line.startswith(ERROR):
            last = line[len(ERROR):].strip()
        else:
            sys.stderr.write(line)
            sys.stderr.flush()
            last = line.strip() or last
    if proc.wait() != 0:
        raise BBRLError(f"probe of {a.key}: {last or f'exit status {proc.returncode}'}")


#: How the probing process says why it failed (its last line on stderr).
ERROR = "bbrl: error: "


def _main() -> int:
    """``python -m bbrlcore.plan.probe``: probe one agent configuration of the plan given
    on stdin (:func:`_probe_in_child`); a failure is one line on stderr, exit status 2."""
    try:
        spec = json.loads(sys.stdin.read())
        from bbrlcore import plan as P

        plan = P.load(spec["config"], source=spec["source"],
                      calibration_dir=spec["calibration_dir"])
        probe_agent(plan, plan.agent(spec["agent"]), spec["results_dir"],
                    progress=spec["progress"], continuing=spec["continuing"])
    except BBRLError as exc:
        print(f"{ERROR}{exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def _row(a: Any, test: str, prior: str, c: dict[str, Any], **values: Any) -> dict[str, Any]:
    return {"algorithm": a.algorithm, "params": dict(a.params), "agent": a.key,
            "test": test, "prior": prior, "horizon": c["horizon"], "gamma": c["gamma"],
            "episode_length": 0, "fingerprint": a.fingerprint, "probe": True, **values}


def unprobed_lines(plan: Any, why: str = "a dry run plays no trajectory") -> list[str]:
    """What a plan made without running its probes (:func:`ensure` with ``run=False``)
    cannot estimate: one line per algorithm with (configuration, experiment) pairs
    without a probe, saying what its estimates use instead (a default price per step;
    for a built-in probed in episodic experiments, its continuing measurements) and that
    the chunks and time limits follow from them. Empty when every probe exists.

    >>> from types import SimpleNamespace as NS
    >>> plan = NS(unprobed=[("mine__k=1", "GC-UGC"), ("mine__k=2", "GC-UGC")],
    ...           probed={"mine"}, agents=[NS(key="mine__k=1", algorithm="mine"),
    ...                                    NS(key="mine__k=2", algorithm="mine")])
    >>> print(unprobed_lines(plan)[0])  # doctest: +NORMALIZE_WHITESPACE
    mine: no estimate for 2 runs (2 configurations on 1 experiment, e.g. mine__k=1 on
    GC-UGC): not probed yet, and a dry run plays no trajectory; a default price per step
    stands in for it, so its jobs here may be chunked otherwise than when the workflow
    runs (it probes them first; bbrl estimate does too)
    """
    alg_of = {a.key: a.algorithm for a in plan.agents}
    by: dict[str, list[tuple[str, str]]] = {}
    for key, exp in getattr(plan, "unprobed", []):
        by.setdefault(alg_of[key], []).append((key, exp))
    out = []
    for alg, pairs in sorted(by.items()):
        keys, exps = {k for k, _ in pairs}, {e for _, e in pairs}
        instead = ("its continuing measurements (the benchmarks')"
                   if alg not in plan.probed else "its probes of other experiments"
                   if _calibrated(plan, alg) else "a default price per step")
        out.append(
            f"{alg}: no estimate for {len(pairs)} run{'s' * (len(pairs) != 1)} "
            f"({len(keys)} configuration{'s' * (len(keys) != 1)} on {len(exps)} "
            f"experiment{'s' * (len(exps) != 1)}, e.g. {pairs[0][0]} on {pairs[0][1]}): not "
            f"probed yet, and {why}; {instead} stands in for it, so its jobs here may be "
            "chunked otherwise than when the workflow runs (it probes them first; bbrl "
            "estimate does too)")
    return out


def _calibrated(plan: Any, algorithm: str) -> bool:
    try:
        return bool(plan.cost_model.calibrated(algorithm))
    except AttributeError:  # (a stand-in plan without a cost model)
        return False


if __name__ == "__main__":
    sys.exit(_main())
