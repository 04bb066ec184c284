# Helpers shared by every stage: configuration (preset overlay, checks), the plan
# (agent configurations, chunks, resources) and input/param functions.

import os
import shlex
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import bbrlcore
from bbrlcore import plan as bbrl_plan
from bbrlcore.errors import BBRLError

# ---- configuration: base config.yaml, then the preset overlay, then --config ---------
_CONFIG_NAME = os.path.basename(workflow.configfiles[0]) if workflow.configfiles else "config"
try:
    # only the --config values override the preset (overwrite_config also holds the
    # whole --configfile, which would undo the overlay)
    PLAN = bbrl_plan.load(config, dict(workflow.config_settings.config), source=_CONFIG_NAME)
except BBRLError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(PLAN.config)
try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError as exc:  # keep it to one line naming the key
    first = [l for l in str(exc).splitlines() if l.strip()]
    raise WorkflowError(f"{_CONFIG_NAME}: " + (first[1] if len(first) > 1 else first[0])) from None

R = config["results_dir"].rstrip("/")
VERSION = bbrlcore.__version__
EXPERIMENTS = {e.name: e for e in PLAN.experiments}
AGENTS = {a.key: a for a in PLAN.agents}
CONDA_ENV = "../../envs/bbrl.yaml"

# The bbrl command: from PATH (a conda env, an activated venv), else beside this Python.
if shutil.which("bbrl"):
    BBRL = "bbrl"
else:
    BBRL = shlex.quote(str(Path(sys.executable).with_name("bbrl")))


wildcard_constraints:
    experiment="|".join(sorted(EXPERIMENTS)) or "NONE",
    dist="|".join(PLAN.distributions),
    test="|".join(PLAN.tests),
    prior="|".join(PLAN.priors),
    agent="[^/]+",
    fs="[^/]+",
    algorithm="|".join(PLAN.algorithms),
    start=r"\d+",
    stop=r"\d+",


# ---- paths ---------------------------------------------------------------------------
def warmup_path(algorithm):
    return f"{R}/warmup/{algorithm}.txt"


def agent_path(prior, key):
    return f"{R}/agents/{prior}/{key}.parquet"


def chunk_paths(exp_name, key):
    exp = EXPERIMENTS[exp_name]
    agent = AGENTS[key]
    return [
        f"{R}/runs/{exp_name}/{key}/{a}-{b}.parquet" for a, b in PLAN.chunks(exp, agent)
    ]


def all_chunks(exp_name):
    return [p for key in AGENTS for p in chunk_paths(exp_name, key)]


FORMULA_PATHS = {fs: f"{R}/formula_sets/{fs}.parquet" for fs in PLAN.formula_sets_used}


def formula_paths():
    return FORMULA_PATHS


# ---- input and parameter functions -----------------------------------------------------
def train_inputs(wildcards):
    agent = AGENTS[wildcards.agent]
    out = {
        "prior": f"{R}/distributions/{wildcards.prior}.parquet",
        "warmup": ancient(warmup_path(agent.algorithm)),
    }
    fs = agent.param_dict.get("formula_set")
    if fs is not None and fs in config["formula_sets"]:
        out["formula_set"] = f"{R}/formula_sets/{fs}.parquet"
    return out


def agent_cli(wildcards):
    return AGENTS[wildcards.agent].cli(formula_paths())


def agent_params(wildcards):
    """The agent's parameters as text (a change reruns its jobs)."""
    return repr(AGENTS[wildcards.agent].params)


def algorithm_of(wildcards):
    return AGENTS[wildcards.agent].algorithm


def checkpoint_args(wildcards):
    """OPPS-DS trains for hours: resume from a checkpoint that is NOT a declared output
    (Snakemake deletes a failed job's outputs)."""
    if AGENTS[wildcards.agent].algorithm != "opps-ds":
        return ""
    ck = f"{R}/checkpoints/{wildcards.prior}/{wildcards.agent}.ckpt"
    every = config["checkpoint_every_seconds"]
    return f"--checkpoint {shlex.quote(ck)} --checkpoint-every {every:g}"


def train_mem(wildcards):
    return PLAN.train_mem_mb(AGENTS[wildcards.agent])


#: Slurm time limits are this many times the cost model's estimate (plus 10 minutes): the
#: benchmarks that calibrate it keep the best of several passes, and a machine of this
#: class can run everything 1.6-1.8 times slower for a while (benchmarks/README.md).
RUNTIME_SAFETY = 3


def train_runtime(wildcards):
    """Minutes: RUNTIME_SAFETY times the estimated offline time plus 10 minutes."""
    s = PLAN.offline_seconds(wildcards.prior, AGENTS[wildcards.agent])
    return int(10 + RUNTIME_SAFETY * s / 60)


def run_experiment_of(wildcards):
    return EXPERIMENTS[wildcards.experiment]


def run_inputs(wildcards):
    exp = EXPERIMENTS[wildcards.experiment]
    return {
        "test_set": f"{R}/test_sets/{exp.test}.parquet",
        "agent": agent_path(exp.prior, wildcards.agent),
        "warmup": ancient(warmup_path(AGENTS[wildcards.agent].algorithm)),
    }


def run_mem(wildcards):
    return PLAN.run_mem_mb(AGENTS[wildcards.agent])


def run_runtime(wildcards):
    """Minutes: RUNTIME_SAFETY times the chunk's estimate plus 10 minutes (process start,
    loading)."""
    exp = EXPERIMENTS[wildcards.experiment]
    size = int(wildcards.stop) - int(wildcards.start)
    return int(10 + RUNTIME_SAFETY * PLAN.run_minutes(exp, AGENTS[wildcards.agent], size))


def distribution_spec(wildcards):
    return shlex.quote(PLAN.distribution_spec(wildcards.dist))
