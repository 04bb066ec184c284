"""Jobs as they will run: units of work packed into bundles, one process per bundle.

A **unit** is the smallest piece of work the workflow tracks on disk, each with its own
artefact:

* a *training* unit: one agent configuration learning offline on one prior
  (``results/agents/{prior}/{agent}.parquet``). Only algorithms that learn offline
  (OPPS-DS, a plugin with ``train``) have training units: any other agent is built from its
  prior inside the run that plays it (its offline time is zero either way);
* a *run* unit: one agent configuration on one chunk of the test MDPs of one experiment
  (``results/runs/{experiment}/{agent}/{start}-{stop}.parquet``), as before;
* a *validation* run unit (``selection: validation``): the same on a chunk of the
  experiment's **validation set** (``results/test_sets/{test}.validation.parquet``),
  written to ``results/runs_validation/{experiment}/{agent}/{start}-{stop}.parquet``;
  only the configurations of algorithms with several in the experiment have them
  (:meth:`bbrlcore.plan.model.Plan.validation_agents`). They are packed into bundles of
  their own (``validate_{algorithm}_{i}``), so that switching ``selection`` adds or
  removes jobs and never changes (reruns) the test runs' ones.

A **bundle** is one workflow job, one ``bbrl batch`` process: units of **one algorithm**
packed, in a stable order, up to a target length (``bundle_minutes``, and never beyond
``chunk_budget_minutes``) by the cost model's estimates. One process then pays the
start-up (imports, loading the algorithm's compiled kernels, reading the test set and the
prior) once for all its units instead of once per unit. A unit estimated longer than the
target is a bundle of its own (its chunks already respect the chunk budget).

What stays as it was:

* every unit's artefact is a declared output of its bundle: a deleted one comes back,
  and polars reads each agent's results as before;
* only what is stale recomputes: editing, adding or removing an agent configuration of
  algorithm A changes only A's bundles (their units, hence their ``params``), and each
  holds at most ``bundle_minutes`` of estimated work (or one unit), so a change reruns at
  most A's bundles on the experiments that run that agent;
* returns are bit-identical whatever the bundling: a trajectory's seed depends on the
  test set, the agent id and the MDP index only (the seed tree, :mod:`bbrlcore.seeds`);
* a bundle that fails or is killed loses nothing it finished: each finished unit is also
  kept under ``results/.partial/{bundle}/`` (a hard link), and the bundle's next attempt
  takes it from there instead of playing it again (the directory is removed when the
  bundle succeeds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bbrlcore import __version__

if TYPE_CHECKING:
    from bbrlcore.plan.model import AgentConfig, Experiment, Plan

#: Estimated seconds of one unit's own bookkeeping inside a bundle (reading its inputs
#: when they are new to the process, writing its artefact).
UNIT_OVERHEAD_S = 0.05


@dataclass(frozen=True)
class TrainUnit:
    """One agent configuration trained on one prior."""

    prior: str
    agent: AgentConfig
    seconds: float

    @property
    def output(self) -> str:
        return f"agents/{self.prior}/{self.agent.key}.parquet"


@dataclass(frozen=True)
class RunUnit:
    """One agent configuration played on test MDPs ``start:stop`` of an experiment."""

    experiment: Experiment
    agent: AgentConfig
    start: int
    stop: int
    seconds: float
    #: "test": the experiment's test set; "validation": its validation set
    split: str = "test"

    @property
    def output(self) -> str:
        runs = "runs_validation" if self.split == "validation" else "runs"
        return (f"{runs}/{self.experiment.name}/{self.agent.key}/"
                f"{self.start}-{self.stop}.parquet")


@dataclass(frozen=True)
class Bundle:
    """One job: units of one algorithm, run by one ``bbrl batch`` process."""

    kind: str  # "train" or "run"
    algorithm: str
    index: int
    units: tuple[Any, ...]
    #: a run bundle's units play the test sets ("test") or the validation sets
    split: str = "test"

    @property
    def name(self) -> str:
        """The job's name (a Snakemake rule name: letters, digits and ``_``):
        ``train_…``, ``run_…``, or ``validate_…`` for runs on validation sets."""
        prefix = "validate" if self.split == "validation" else self.kind
        return f"{prefix}_{identifier(self.algorithm)}_{self.index}"

    @property
    def seconds(self) -> float:
        """The cost model's estimate of the whole job (single core)."""
        return sum(u.seconds for u in self.units)

    def outputs(self, results_dir: str) -> list[str]:
        return [f"{results_dir}/{u.output}" for u in self.units]


def identifier(name: str) -> str:
    """``name`` with every character but letters and digits replaced by ``_``.

    >>> identifier("e-greedy"), identifier("examples/my_agents.py:MyGreedy")
    ('e_greedy', 'examples_my_agents_py_MyGreedy')
    """
    return re.sub(r"\W", "_", name, flags=re.ASCII)


def learns_offline(agent: AgentConfig) -> bool:
    """Whether the agent's algorithm learns anything offline (then it is trained in a
    job of its own and its artefact written; otherwise the run builds it)."""
    from bbrlcore import agents

    return agents.get(agent.ref).train is not None


def target_seconds(plan: Plan) -> float:
    """A bundle's target length: ``bundle_minutes``, at most the chunk budget."""
    c = plan.config
    return 60.0 * min(float(c["bundle_minutes"]), float(c["chunk_budget_minutes"]))


def pack(units: Iterable[Any], target_s: float) -> list[list[Any]]:
    """Units in their given order, cut into consecutive groups of at most ``target_s``
    estimated seconds (a unit longer than that alone).

    >>> from types import SimpleNamespace as U
    >>> [[u.seconds for u in g] for g in pack([U(seconds=s) for s in (1, 2, 3, 9, 1)], 5)]
    [[1, 2], [3], [9], [1]]
    """
    groups: list[list[Any]] = []
    cur: list[Any] = []
    total = 0.0
    for u in units:
        if cur and total + u.seconds > target_s:
            groups.append(cur)
            cur, total = [], 0.0
        cur.append(u)
        total += u.seconds
    if cur:
        groups.append(cur)
    return groups


def train_units(plan: Plan) -> list[TrainUnit]:
    """Every training unit of the plan: agents that learn offline, on each of their
    priors (in the plan's order of agents, then priors)."""
    out = []
    for a in plan.agents:
        if not learns_offline(a):
            continue
        for prior in plan.priors_of(a):
            out.append(TrainUnit(prior, a, plan.offline_seconds(prior, a) + UNIT_OVERHEAD_S))
    return out


def run_units(plan: Plan, split: str = "test") -> list[RunUnit]:
    """Every run unit on the test sets: per experiment (the plan's order), its agents,
    their chunks; ``split="validation"``: every run unit on the validation sets (the
    agents of :meth:`~bbrlcore.plan.model.Plan.validation_agents`)."""
    out = []
    for exp in plan.experiments:
        agents = plan.agents_of(exp) if split == "test" else plan.validation_agents(exp)
        for a in agents:
            spt = plan.seconds_per_trajectory(exp, a)
            for start, stop in plan.chunks(exp, a, split):
                out.append(RunUnit(exp, a, start, stop, (stop - start) * spt
                                   + UNIT_OVERHEAD_S, split))
    return out


def bundles(plan: Plan) -> list[Bundle]:
    """The plan's training and run jobs: each algorithm's units packed in a stable order
    (training: agent, prior; runs: agent, experiment, chunk) up to
    :func:`target_seconds`; runs on the validation sets in bundles of their own.
    Memoised on the plan."""
    memo = plan.__dict__.get("_bundles")
    if memo is not None:
        return memo
    target = target_seconds(plan)
    out: list[Bundle] = []
    exp_order = {e.name: i for i, e in enumerate(plan.experiments)}
    for kind, split, units in (("train", "test", train_units(plan)),
                               ("run", "test", run_units(plan)),
                               ("run", "validation", run_units(plan, "validation"))):
        by_alg: dict[str, list[Any]] = {}
        for u in units:
            by_alg.setdefault(u.agent.algorithm, []).append(u)
        for alg in sorted(by_alg):
            if kind == "train":
                order = sorted(by_alg[alg], key=lambda u: (u.agent.key, u.prior))
            else:
                order = sorted(by_alg[alg], key=lambda u: (
                    u.agent.key, exp_order[u.experiment.name], u.start))
            groups = [g[k:k + MAX_UNITS] for g in pack(order, target)
                      for k in range(0, len(g), MAX_UNITS)]
            for i, group in enumerate(groups):
                out.append(Bundle(kind, alg, i, tuple(group), split))
    plan.__dict__["_bundles"] = out
    return out


def warmed_algorithms(plan: Plan) -> list[str]:
    """Algorithms whose kernels are compiled by a warm-up job before their bundles: those
    with more than one run bundle on the test sets (which would otherwise compile in
    parallel, each writing numba's cache). An algorithm with one compiles in it, and its
    bundles on the validation sets wait for it (:func:`compiled_after`): switching
    ``selection`` then never adds a warm-up to a test run's job (a new input would rerun
    it)."""
    n: dict[str, int] = {}
    for b in bundles(plan):
        if b.kind == "run" and b.split == "test":
            n[b.algorithm] = n.get(b.algorithm, 0) + 1
    return sorted(a for a, k in n.items() if k > 1)


def compiled_after(plan: Plan, bundle: Bundle, results_dir: str) -> str | None:
    """What a bundle on the validation sets of an algorithm without a warm-up job waits
    for: the first output of the algorithm's (single) run bundle on the test sets, which
    compiles and caches its kernels; None for any other bundle."""
    if bundle.split != "validation" or bundle.algorithm in warmed_algorithms(plan):
        return None
    first = next(b for b in bundles(plan) if b.kind == "run" and b.split == "test"
                 and b.algorithm == bundle.algorithm)
    return first.outputs(results_dir)[0]


# ---- what a bundle's process is told ---------------------------------------------------

def _raw_params(agent: AgentConfig, formula_paths: Mapping[str, str]) -> dict[str, Any]:
    """The agent's parameters as ``bbrl train --param`` would pass them: formula-set
    names of the workflow replaced by their generated files."""
    out = {}
    for k, v in agent.params:
        if k == "formula_set" and v in formula_paths:
            v = formula_paths[v]
        out[k] = v
    return out


#: At most this many units in one job: its spec is one argument of the job's shell command
#: (Linux limits one argument to 128 KiB; a unit takes about 60 bytes of it).
MAX_UNITS = 1000


def spec(plan: Plan, bundle: Bundle, results_dir: str,
         formula_paths: Mapping[str, str]) -> dict[str, Any]:
    """The JSON-able description of ``bundle`` that ``bbrl batch`` executes
    (:mod:`bbrlcore.protocol.batch` documents it): the agents once, then each unit as
    names under ``results_dir`` (``root``), from which the files follow the workflow's
    layout."""
    c = plan.config
    agents: dict[str, Any] = {}
    units: list[list[Any]] = []
    log_every: dict[str, int] = {}
    for u in bundle.units:
        a = u.agent
        if a.key not in agents:
            agent: dict[str, Any] = {"ref": a.ref, "params": _raw_params(a, formula_paths)}
            if a.fingerprint:
                agent["fingerprint"] = a.fingerprint
            if learns_offline(a):
                agent["learned"] = True  # runs read its trained artefact
                if a.algorithm == "opps-ds":  # hours of training: resume from a checkpoint
                    agent["checkpoint"] = True
            agents[a.key] = agent
        if bundle.kind == "train":
            units.append([a.key, u.prior])
        else:
            exp = u.experiment
            unit = [a.key, exp.prior, exp.name, exp.test_set, u.start, u.stop]
            if exp.log_every is not None:
                log_every[exp.name] = exp.log_every
            if u.split == "validation":
                unit.append("validation")
            units.append(unit)
    out: dict[str, Any] = {"bundle": bundle.name, "kind": bundle.kind,
                           "version": __version__, "root": results_dir, "agents": agents,
                           "units": units, "seed": c["train_seed"], "gamma": c["gamma"],
                           "horizon": c["horizon"]}
    if bundle.kind == "train":
        out["checkpoint_every"] = c["checkpoint_every_seconds"]
    if log_every:  # (only then: the specs of runs without indicators are unchanged)
        out["log_every"] = log_every
    return out


def spec_json(plan: Plan, bundle: Bundle, results_dir: str,
              formula_paths: Mapping[str, str]) -> str:
    """:func:`spec` as compact JSON (a job's ``params``: a change reruns the job)."""
    return json.dumps(spec(plan, bundle, results_dir, formula_paths), sort_keys=True,
                      separators=(",", ":"))


def inputs(plan: Plan, bundle: Bundle, results_dir: str,
           formula_paths: Mapping[str, str]) -> list[str]:
    """The files ``bundle`` reads (its units' priors, test sets, trained agents, formula
    sets), in the order of its units."""
    from bbrlcore.protocol.batch import expand

    files: list[str] = []
    for unit in expand(spec(plan, bundle, results_dir, formula_paths)):
        ag = unit["agent"]
        for p in (ag.get("file"), ag.get("prior"), unit.get("prior"), unit.get("test_set")):
            if p and p not in files:
                files.append(p)
        fs = ag.get("params", {}).get("formula_set")
        if isinstance(fs, str) and fs in formula_paths.values() and fs not in files:
            files.append(fs)
    return files


def summary(plan: Plan) -> dict[str, int]:
    """How many jobs of each kind the plan runs: training bundles, run bundles on the
    test sets and (``validate``) run bundles on the validation sets."""
    out = {"train": 0, "run": 0, "validate": 0}
    for b in bundles(plan):
        out["validate" if b.split == "validation" else b.kind] += 1
    return out
