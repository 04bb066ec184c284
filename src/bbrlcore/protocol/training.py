"""Offline learning: training an agent on its prior, and agent artefacts."""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bbrlcore import agents, crash, seeds
from bbrlcore.errors import BBRLError, building
from bbrlcore.formats import artefacts
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.protocol.runner import Expected, Overrun
from bbrlcore.protocol.test_sets import MAX_HORIZON

# ---------------------------------------------------------------------------------------
# Trained agents


@dataclass(frozen=True, eq=False)
class TrainedAgent:
    """An agent after offline learning, as stored in an agent artefact."""

    algorithm: str
    agent_id: str
    params: dict[str, Any]
    prior: FDMDistribution
    offline_time_s: float
    seed: int
    gamma: float
    horizon: int
    info: dict[str, Any]
    table: pl.DataFrame | None = None
    #: how another process finds a plugin algorithm again (its registry ``ref``; "" for
    #: a built-in, found by its name) and the fingerprint of the plugin's code
    ref: str = ""
    fingerprint: str = ""


def check_checkpoint_every(seconds: float) -> float:
    """``seconds`` if it is a finite number > 0; else one :class:`BBRLError` naming
    ``--checkpoint-every``."""
    if (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
            or not (0 < seconds < math.inf)):
        raise BBRLError(f"--checkpoint-every {seconds}: must be a finite number of seconds > 0")
    return float(seconds)


def episodic_only(algorithm: str) -> str:
    """Why ``algorithm`` plays episodic interactions only ("" when it also plays continuing
    ones): the analysis room asks here rather than importing the agents room.

    >>> episodic_only("random")
    ''
    """
    return agents.registry.get(algorithm).episodic_only


def train_agent(
    algorithm: str,
    raw_params: dict[str, Any],
    prior: FDMDistribution,
    *,
    seed: int = 0,
    gamma: float = 0.95,
    horizon: int = 250,
    checkpoint: str | None = None,
    checkpoint_every: float = 60.0,
    progress: bool = True,
    source: str = "--param",
    expected_s: Expected = None,
) -> TrainedAgent:
    """Offline learning of ``algorithm`` on ``prior`` (timed: ``offline_time_s``).

    ``expected_s`` (the cost model's estimate, or a function computing it when first
    needed) makes a training that lasts more than
    :data:`OVERRUN_FACTOR` times longer say so on stderr."""
    from bbrlcore.agents.base import Episode, TrainContext, Trained

    entry = agents.registry.entry(algorithm)
    alg = entry.algorithm
    params = alg.parse_params(raw_params, source=source)
    if not (0 < gamma <= 1):
        raise BBRLError(f"--gamma must be in (0, 1], got {gamma}")
    if not 1 <= horizon <= MAX_HORIZON:
        raise BBRLError(f"--horizon must be in [1, {MAX_HORIZON}], got {horizon}")
    seeds.check_seed(seed, "--seed")
    check_checkpoint_every(checkpoint_every)
    alg.check_setting(params, prior, gamma, horizon,
                      source="" if source == "--param" else source)
    overrun = Overrun(f"training {alg.agent_id(params)}", expected_s)
    ctx = TrainContext(
        seed=seed,
        gamma=gamma,
        horizon=horizon,
        progress=_train_progress(alg.agent_id(params), overrun) if progress else None,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
    )
    origin = "built-in" if entry.builtin else f"plugin {entry.ref}"
    crash.doing(f"training agent {alg.agent_id(params)} ({origin}) on {prior.short_name}")
    if alg.train is None:  # nothing to learn offline (the prior is kept as it is)
        trained, elapsed = Trained(), 0.0
    else:
        t0 = time.perf_counter()
        with building(f"the training of {alg.agent_id(params)} on {prior.short_name}"):
            trained = alg.train(prior, params, ctx)
        elapsed = time.perf_counter() - t0
        overrun.check(elapsed, final=True)
    elapsed = float(trained.info.pop("_offline_time_s", elapsed))
    agent_id = alg.agent_id(params)
    claimed = trained.info.pop("_agent_id", None)
    if claimed is not None and claimed != agent_id:  # the id is its parameters' (the plan
        # names files after it, and reading the artefact checks it)
        raise BBRLError(f"{alg.name}: training named the agent {claimed!r}, but its "
                        f"parameters make it {agent_id!r}")
    if alg.prepare is not None and not entry.builtin:  # a compiled plugin compiles now:
        # code that cannot run fails here, and the run jobs find it compiled (on the
        # prior's sparse rows, as its runs will be, unless it wants dense arrays)
        common = dict(gaussian=int(prior.reward_type == "gaussian"),
                      initial_state=prior.initial_state, gamma=gamma, horizon=horizon)
        if alg.sparse:
            lay = prior.support_layout
            ep = Episode(R=np.array(prior.reward_rows), Rstd=np.array(prior.reward_std_rows),
                         succ=lay.succ, nsucc=lay.nsucc, **common)
        else:
            ep = Episode(R=prior.reward, Rstd=prior.reward_std, **common)
        crash.doing(f"compiling agent {agent_id} ({origin}) for {prior.short_name}")
        with building(f"the player of {alg.agent_id(params)} on {prior.short_name}"):
            alg.prepare(prior, params, trained, ep)
    return TrainedAgent(
        algorithm=alg.name,
        agent_id=agent_id,
        params=params,
        prior=prior,
        offline_time_s=elapsed,
        seed=seed,
        gamma=gamma,
        horizon=horizon,
        info=trained.info,
        table=trained.table,
        ref="" if entry.builtin else entry.ref,
        fingerprint=entry.fingerprint,
    )


def _train_progress(agent_id: str, overrun: Overrun) -> Callable[[int, int], None]:
    state = {"t0": time.perf_counter(), "last": 0.0}

    def report(done: int, total: int) -> None:
        overrun.check(time.perf_counter() - state["t0"])
        now = time.perf_counter()
        if done < total and now - state["last"] < 2.0:
            return
        state["last"] = now
        el = now - state["t0"]
        eta = el / done * (total - done) if done else float("nan")
        print(
            f"[train {agent_id}] {done}/{total} ({100 * done / max(total, 1):.0f}%), "
            f"elapsed {el:.1f} s, ~{eta:.0f} s left",
            file=sys.stderr,
            flush=True,
        )

    return report


#: The columns of an agent artefact (one row): type and meaning (the documentation's
#: column reference is generated from this; a test checks it against written agents).
AGENT_COLUMNS: dict[str, tuple[str, str]] = {
    "algorithm": ("String", "the algorithm's name"),
    "agent": ("String", "the agent's id (the algorithm and every parameter, defaults "
                        "included)"),
    "params": ("String", "its parameters, as a JSON object"),
    "prior": ("String", "the prior it was trained on"),
    "offline_time_s": ("Float64", "wall-clock seconds of its offline learning"),
    "seed": ("Int64", "the training seed"),
    "gamma": ("Float64", "the discount factor it was trained for"),
    "horizon": ("Int64", "the horizon it was trained for"),
    "info": ("String", "what the training reports, as a JSON object (OPPS-DS: the formula "
                       "selected, the pulls, ...; empty for most algorithms)"),
    "learned": ("List(Struct)", "only for algorithms that learn a table offline (OPPS-DS: "
                                "one entry per formula arm: `arm`, `rpn`, `infix`, "
                                "`pulls`, `mean_return`, `discarded`)"),
}


def write_agent(agent: TrainedAgent, path: str | Path) -> None:
    """Write an agent artefact (what it learned, its prior, its offline time),
    atomically; in a watched ``bbrl train`` or ``batch``, it appears at ``path`` once the
    process has exited cleanly (:func:`bbrlcore.crash.publish`)."""
    row = {
        "algorithm": [agent.algorithm],
        "agent": [agent.agent_id],
        "params": [json.dumps(agent.params, sort_keys=True)],
        "prior": [agent.prior.short_name],
        "offline_time_s": [agent.offline_time_s],
        "seed": [agent.seed],
        "gamma": [agent.gamma],
        "horizon": [agent.horizon],
        "info": [json.dumps(agent.info, sort_keys=True)],
    }
    table = pl.DataFrame(row)
    if agent.table is not None:
        table = table.with_columns(pl.Series("learned", [agent.table.to_dicts()]))
    meta = {
        "algorithm": agent.algorithm,
        "agent": agent.agent_id,
        "params": agent.params,
        "prior_distribution": agent.prior.to_dict(),
        "offline_time_s": agent.offline_time_s,
        "seed": agent.seed,
        "gamma": agent.gamma,
        "horizon": agent.horizon,
        "info": agent.info,
    }
    if agent.ref:
        meta["plugin"] = {"ref": agent.ref, "fingerprint": agent.fingerprint}
    artefacts.write_artefact(path, table, "agent", meta, publish=True)


#: Stands for a parameter whose rendering in the id cannot be checked (see
#: :func:`_check_agent_id`).
_ANY = "\x00"


def _stored_type_error(p, value: Any) -> str | None:
    """Why a stored parameter value is not of the parameter's declared type (JSON types:
    a float parameter takes any JSON number, an integer one an integer), or None."""
    if value is None:
        return None  # a default of None, or a required parameter (parse_params says)
    kind = {bool: "a boolean", str: "a string", dict: "an object", list: "a list",
            int: "an integer", float: "a number"}
    got = kind.get(type(value), type(value).__name__)
    if p.type is bool:
        ok = isinstance(value, bool)
    elif p.type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif p.type is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif p.type is str:
        ok = isinstance(value, str)
    else:
        ok = True
    return None if ok else f"stored as {got}, expected {kind.get(p.type, p.type.__name__)}"


def _check_agent_id(alg, params: dict[str, Any], agent_id: str, info: dict[str, Any],
                    m: artefacts.MetaReader) -> None:
    """The stored id must be the id of the stored parameters (``alg.agent_id``), else a
    hand-edited artefact runs one configuration under another's label.

    A parameter rendered through a lookup (OPPS-DS's formula set: its label, from a file
    that may have moved since training) takes the label recorded at training
    (``info[name]``); failing that, the label from the file now; failing that (the file
    is gone), any text at its place."""
    rendered: dict[str, str] = {}
    for p in alg.params:
        if p.id_value is None or params.get(p.name) is None:
            continue
        recorded = info.get(p.name)
        if isinstance(recorded, str):
            rendered[p.name] = recorded
            continue
        try:
            rendered[p.name] = p.id_value(params[p.name])
        except (BBRLError, OSError, ValueError):
            rendered[p.name] = _ANY
    expected = alg.agent_id(params, rendered)
    pattern = ".+".join(re.escape(part) for part in expected.split(_ANY))
    if not re.fullmatch(pattern, agent_id):
        raise m.fail("agent", f"{agent_id!r} is not the id of the stored parameters "
                     f"({expected.replace(_ANY, '...')!r}: edited by hand?)")


def read_agent(path: str | Path) -> TrainedAgent:
    """Read an agent artefact, validating its metadata (algorithm, parameters re-checked
    by the algorithm and of their declared types, the agent id that of the parameters,
    prior, times, seed, γ, T): one :class:`BBRLError` naming the file on any problem."""
    table, meta = artefacts.read_artefact(path, "agent")
    m = artefacts.MetaReader(path, meta, "agent")
    name = m.str("algorithm")
    plugin = m.dict("plugin", default={})
    ref = plugin.get("ref", "")
    if not isinstance(ref, str):
        raise m.fail("plugin", "must hold the plugin's reference as a string")
    try:
        entry = agents.registry.entry(ref or name)
    except BBRLError as exc:
        raise BBRLError(f"{path}: {exc}") from None
    alg = entry.algorithm
    if alg.name != name:
        raise m.fail("algorithm", f"{name!r} is not the algorithm {ref!r} defines "
                     f"({alg.name!r})")
    fingerprint = plugin.get("fingerprint", "")
    if ref and fingerprint != entry.fingerprint:
        print(f"bbrl: warning: {path} was trained with other code of plugin {name} "
              f"(fingerprint {fingerprint}, now {entry.fingerprint})", file=sys.stderr)
    raw = m.dict("params")
    declared = {p.name: p for p in alg.params}
    for key, value in raw.items():
        err = _stored_type_error(declared[key], value) if key in declared else None
        if err:
            raise m.fail("params", f"{key}={value!r}: {err}")
    params = alg.parse_params(raw, source=f"{path}: params", stored=True)
    with building(f"the prior of agent file {path}"):
        prior = FDMDistribution.from_dict(m.dict("prior_distribution"), str(path))
    agent_id = m.str("agent")
    if agent_id.split("__", 1)[0] != alg.name:
        raise m.fail("agent", f"{agent_id!r} is not an id of {alg.name}")
    info = m.dict("info", default={})
    _check_agent_id(alg, params, agent_id, info, m)
    if "agent" in table.columns and table.height and table["agent"][0] != agent_id:
        raise BBRLError(f"{path}: the table's agent {table['agent'][0]!r} is not the "
                        f"metadata's {agent_id!r}; {artefacts.REGENERATE['agent']}")
    try:
        learned = None
        if "learned" in table.columns:
            learned = pl.DataFrame(table["learned"][0].to_list())
    except (ValueError, TypeError, IndexError, pl.exceptions.PolarsError) as exc:
        raise BBRLError(f"{path}: malformed agent artefact ({exc}); "
                        f"{artefacts.REGENERATE['agent']}") from None
    return TrainedAgent(
        algorithm=alg.name,
        agent_id=agent_id,
        params=params,
        prior=prior,
        offline_time_s=m.float("offline_time_s", lo=0.0),
        seed=m.int("seed", lo=0, hi=seeds.MAX_SEED),
        gamma=m.float("gamma", lo=0.0, hi=1.0, lo_open=True),
        horizon=m.int("horizon", lo=1, hi=MAX_HORIZON),
        info=info,
        table=learned,
        ref=ref,
        fingerprint=entry.fingerprint if ref else "",
    )


