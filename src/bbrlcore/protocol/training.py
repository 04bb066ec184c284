"""Offline learning: training an agent on its prior, and agent artefacts."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from bbrlcore import agents, seeds
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp.distributions import FDMDistribution
from bbrlcore.protocol.runner import Overrun
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
    expected_s: float | None = None,
) -> TrainedAgent:
    """Offline learning of ``algorithm`` on ``prior`` (timed: ``offline_time_s``).

    ``expected_s`` (the cost model's estimate) makes a training that lasts more than
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
    if alg.train is None:  # nothing to learn offline (the prior is kept as it is)
        trained, elapsed = Trained(), 0.0
    else:
        t0 = time.perf_counter()
        trained = alg.train(prior, params, ctx)
        elapsed = time.perf_counter() - t0
        overrun.check(elapsed, final=True)
    elapsed = float(trained.info.pop("_offline_time_s", elapsed))
    agent_id = trained.info.pop("_agent_id", None) or alg.agent_id(params)
    if alg.prepare is not None and not entry.builtin:  # a compiled plugin compiles now:
        # code that cannot run fails here, and the run jobs find it compiled
        alg.prepare(prior, params, trained, Episode(
            R=prior.reward, Rstd=prior.reward_std, gaussian=prior.reward_type == "gaussian",
            initial_state=prior.initial_state, gamma=gamma, horizon=horizon))
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


def write_agent(agent: TrainedAgent, path: str | Path) -> None:
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
    artefacts.write_artefact(path, table, "agent", meta)


def read_agent(path: str | Path) -> TrainedAgent:
    """Read an agent artefact, validating its metadata (algorithm, parameters re-checked
    by the algorithm, prior, times, seed, γ, T): one :class:`BBRLError` naming the file on
    any problem."""
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
    params = alg.parse_params(m.dict("params"), source=f"{path}: params", stored=True)
    prior = FDMDistribution.from_dict(m.dict("prior_distribution"), str(path))
    agent_id = m.str("agent")
    if agent_id.split("__", 1)[0] != alg.name:
        raise m.fail("agent", f"{agent_id!r} is not an id of {alg.name}")
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
        info=m.dict("info", default={}),
        table=learned,
        ref=ref,
        fingerprint=entry.fingerprint if ref else "",
    )


