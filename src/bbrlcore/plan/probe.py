"""Probes: short measurements of algorithms the benchmarks do not calibrate (plugins).

The cost model (:mod:`bbrlcore.plan.cost`) prices an algorithm's work from measurements. The
built-ins are measured by ``benchmarks/``; a plugin is measured here, by a **probe**: for
each of its configurations and each experiment it runs in, one training on the prior
(timed: the offline time) and :data:`TRAJECTORIES` trajectories on test MDPs drawn from
the test distribution with the plan's γ and test seed, in the experiment's setting
(timed: the online time): continuing or in episodes of its H steps, over its T steps
or, for a long interaction, its first :data:`PROBE_STEPS` (whole episodes; recorded as
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
           run: bool = True) -> list[Path]:
    """Run the missing probes of ``plan``'s uncalibrated algorithms (``run=False``: only
    use those that exist); set ``plan.cost_records_dirs`` and ``plan.probed``; return the
    probe directories."""
    from bbrlcore import protocol as E

    todo = uncalibrated(plan)
    episodic = uncalibrated_episodic(plan)
    dirs: list[Path] = []
    c = plan.config
    for a in plan.agents:
        if a.algorithm not in todo | episodic:
            continue
        d = probe_dir(results_dir, a.algorithm, a.fingerprint)
        if d not in dirs:
            dirs.append(d)
        path = d / f"{a.key}.json"
        if not run:
            continue
        rows = _records(path)
        have = {(r.get("test"), r.get("prior"), r.get("horizon"), r.get("gamma"),
                 "offline_s" in r, r.get("episode_length", 0)) for r in rows}
        new: list[dict[str, Any]] = []
        trained: dict[str, Any] = {}
        for exp in plan.experiments_of(a):
            H = int(exp.episode_length or 0)
            if a.algorithm not in todo and not H:
                continue  # (measured by the benchmarks in continuing interactions)
            T = probe_horizon(exp.horizon, H)
            key = (exp.test, exp.prior, T, c["gamma"], False, H)
            if key in have:
                continue
            have.add(key)  # (a ladder's experiments that share a test set: probed once)
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
            table = E.run_agent(ts, agent, progress=False)
            ms = 1000.0 * float(table["online_time_s"].mean())
            new.append(_row(a, exp.test, exp.prior, c, ms_per_trajectory=max(ms, 1e-6),
                            n_trajectories=ts.n_mdps, horizon=T, episode_length=H))
        if new:
            out = {"meta": {"probe": True, "algorithm": a.algorithm, "agent": a.key,
                            "fingerprint": a.fingerprint, "date": time.strftime("%Y-%m-%d")},
                   "rows": rows + new}
            try:
                with artefacts.atomic_path(path) as tmp:
                    tmp.write_text(json.dumps(out, indent=1))
            except BBRLError as exc:
                raise BBRLError(f"probe of {a.key}: {exc}") from None
    plan.cost_records_dirs = [str(d) for d in dirs]
    plan.probed = set(todo)
    plan.probed_episodic = episodic
    for memo in ("_model", "_spt", "_offline", "_chunks"):  # made before the probes
        plan.__dict__.pop(memo, None)
    return dirs


def _row(a: Any, test: str, prior: str, c: dict[str, Any], **values: Any) -> dict[str, Any]:
    return {"algorithm": a.algorithm, "params": dict(a.params), "agent": a.key,
            "test": test, "prior": prior, "horizon": c["horizon"], "gamma": c["gamma"],
            "episode_length": 0, "fingerprint": a.fingerprint, "probe": True, **values}
