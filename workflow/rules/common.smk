# Helpers shared by every stage: configuration (preset overlay, checks), the plan
# (agent configurations, chunks, resources), input/param functions, and the lock guard.

import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import bbrlcore
from bbrlcore import plan as bbrl_plan
from bbrlcore.plan import bundles as bbrl_bundles
from bbrlcore.plan import probe as bbrl_probe
from bbrlcore.plan import workflow as bbrl_support
from bbrlcore.errors import BBRLError

# ---- configuration: config.yaml, or a study of one's own alone (--config study=FILE, read
# here so that a YAML error names the file and the line; or the --configfile files, which
# Snakemake reads first), never merged into config.yaml, as `bbrl estimate FILE` reads it;
# then the preset overlay, then the other --config values
try:
    # only the --config values override the preset (overwrite_config also holds the
    # whole --configfile, which would undo the overlay)
    _OVERRIDES = dict(workflow.config_settings.config)
    _BASE, _CONFIG_NAME = bbrl_plan.study_configuration(
        _OVERRIDES.pop("study", None), workflow.overwrite_configfiles
    ) or (config, "config.yaml")
    PLAN = bbrl_plan.load(_BASE, _OVERRIDES, source=_CONFIG_NAME)
except BBRLError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(PLAN.config)
try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError as exc:  # keep it to one line naming the key
    raise WorkflowError(
        bbrl_support.schema_error(str(exc), PLAN, _CONFIG_NAME)
    ) from None

R = str(Path(config["results_dir"]))
VERSION = bbrlcore.__version__
EXPERIMENTS = {e.name: e for e in PLAN.experiments}
AGENTS = {a.key: a for a in PLAN.agents}
CONDA_ENV = "../../envs/bbrl.yaml"

if workflow.is_main_process:  # a lock left by a killed run (bbrlcore.plan.workflow)
    bbrl_support.clear_stale_lock()

# Algorithms the benchmarks do not calibrate (plugins) are probed once, by the main
# process, before the chunks are sized (bbrlcore.plan.probe); jobs reuse the probes. A dry
# run (snakemake -n) plays no trajectory: it uses the probes that exist and says which
# estimates it lacks.
DRY_RUN = bool(getattr(workflow.output_settings, "dryrun", False))
try:
    bbrl_probe.ensure(PLAN, R, run=workflow.is_main_process and not DRY_RUN)
except BBRLError as exc:
    raise WorkflowError(str(exc)) from None
# `bbrl` (beside this Python) first on PATH for the shell rules; the probes for the jobs
bbrl_support.setup_environment(PLAN.cost_records_dirs)
# warm-ups made for other kernels (a changed bbrlcore) run again for their parameter, and
# Snakemake then leaves the jobs after them to the next invocation (snakemake#4166): say so
STALE_WARMUPS = bbrl_support.stale_warmups(R)
if STALE_WARMUPS:
    print(bbrl_support.stale_warmup_note(STALE_WARMUPS, False), file=sys.stderr)

if workflow.is_main_process:  # what the plan runs (compat variants named, never silent)
    print(
        f"bbrl: {len(PLAN.experiments)} experiment{'s' * (len(PLAN.experiments) != 1)}, "
        f"{len(PLAN.agents)} agent "
        f"configurations; agents per algorithm:",
        *(f"  {line}" for line in PLAN.agents_summary()),
        sep="\n",
        file=sys.stderr,
    )
    # a single interaction beyond the chunk budget, named before anything runs
    for _line in PLAN.over_budget():
        print(f"bbrl: warning: {_line}", file=sys.stderr)
    # an experiment without Random or Optimal: empty normalised scores at the end
    for _line in PLAN.missing_references():
        print(f"bbrl: warning: {_line}", file=sys.stderr)
    # what the plan leaves out (Colosseum's instances bbrl does not express yet)
    for _line in PLAN.notes:
        print(f"bbrl: note: {_line}", file=sys.stderr)
    # estimates a dry run cannot make (probes it did not run)
    for _line in bbrl_probe.unprobed_lines(PLAN):
        print(f"bbrl: dry run: {_line}", file=sys.stderr)


def one_of(names):
    """A wildcard constraint matching exactly these names."""
    return "|".join(re.escape(n) for n in sorted(names)) or "NONE"


wildcard_constraints:
    experiment=one_of(EXPERIMENTS),
    dist=one_of(PLAN.distributions),
    test=one_of(PLAN.tests),
    testset=one_of(PLAN.test_sets),
    prior=one_of(PLAN.priors),
    agent="[^/]+",
    fs="[^/]+",
    algorithm=one_of(bbrl_bundles.warmed_algorithms(PLAN)),
    start=r"\d+",
    stop=r"\d+",


# ---- paths ---------------------------------------------------------------------------
def warmup_path(algorithm):
    return f"{R}/warmup/{algorithm}.txt"


def agent_path(prior, key):
    return f"{R}/agents/{prior}/{key}.parquet"


def chunk_paths(exp_name, key, split="test"):
    exp = EXPERIMENTS[exp_name]
    agent = AGENTS[key]
    runs = "runs_validation" if split == "validation" else "runs"
    return [
        f"{R}/{runs}/{exp_name}/{key}/{a}-{b}.parquet"
        for a, b in PLAN.chunks(exp, agent, split)
    ]


def all_chunks(exp_name):
    exp = EXPERIMENTS[exp_name]
    return [p for a in PLAN.agents_of(exp) for p in chunk_paths(exp_name, a.key)]


# ---- choosing configurations on validation sets (selection: validation) ----------------
VALIDATION_EXPERIMENTS = sorted(e.name for e in PLAN.validation_experiments)


def validation_chunks(exp_name):
    """The runs of experiment exp_name on its validation set (the configurations of the
    algorithms with several; none with selection: test)."""
    exp = EXPERIMENTS[exp_name]
    return [
        p
        for a in PLAN.validation_agents(exp)
        for p in chunk_paths(exp_name, a.key, "validation")
    ]


def validation_merged():
    """The merged validation tables, one per experiment that has validation runs."""
    return [f"{R}/merged_validation/{e}.parquet" for e in VALIDATION_EXPERIMENTS]


def validation_args(wildcards, input):
    """``--validation MERGED...`` of bbrl summary and report with selection: validation
    (every merged validation table; none when no algorithm has several configurations),
    nothing with selection: test (chosen on the test MDPs, the paper's)."""
    if not PLAN.validating:
        return ""
    return " ".join(["--validation", *map(shlex.quote, input.validation)])


FORMULA_PATHS = {fs: f"{R}/formula_sets/{fs}.parquet" for fs in PLAN.formula_sets_used}

# ---- jobs: bundles of units of one algorithm (bbrlcore.plan.bundles) --------------------
BUNDLES = bbrl_bundles.bundles(PLAN)
TRAIN_BUNDLES = [b for b in BUNDLES if b.kind == "train"]
RUN_BUNDLES = [b for b in BUNDLES if b.kind == "run"]
WARMED = set(bbrl_bundles.warmed_algorithms(PLAN))


def bundle_inputs(bundle):
    """What a bundle reads (priors, test sets, trained agents, formula sets), and the
    warm-up of its algorithm when it has one (ancient: re-warming reruns nothing); a
    bundle on the validation sets of an algorithm without one waits for its test runs'
    bundle, which compiles its kernels (ancient too)."""
    out = bbrl_bundles.inputs(PLAN, bundle, R, FORMULA_PATHS)
    if bundle.algorithm in WARMED:
        out.append(ancient(warmup_path(bundle.algorithm)))
    after = bbrl_bundles.compiled_after(PLAN, bundle, R)
    if after is not None:
        out.append(ancient(after))
    return out


def bundle_spec(bundle):
    """The bundle as ``bbrl batch`` executes it (JSON): a change of any unit's agent,
    parameters, inputs or outputs changes it, and the job reruns."""
    return bbrl_bundles.spec_json(PLAN, bundle, R, FORMULA_PATHS)


def bundle_mem(bundle):
    """MB: the largest need of its units."""
    if bundle.kind == "train":
        return max(PLAN.train_mem_mb(u.agent) for u in bundle.units)
    return max(PLAN.run_mem_mb(u.agent) for u in bundle.units)


def bundle_runtime(bundle):
    """Minutes: the plan's time limit for the bundle's estimate, longer on each retry (a
    job killed at its limit gets a longer one; its finished units are kept)."""
    seconds = bundle.seconds

    def runtime(wildcards, attempt):
        return PLAN.runtime_minutes(seconds, attempt)

    return runtime


def all_outputs():
    """Every artefact the workflow declares, so that a missing one (a deleted chunk,
    agent or merged table) is regenerated and what depends on it refreshed."""
    out = [f"{R}/distributions/{d}.parquet" for d in PLAN.distributions]
    out += [f"{R}/test_sets/{t}.parquet" for t in PLAN.test_sets]
    out += [f"{R}/test_sets/{t}.validation.parquet" for t in PLAN.validation_tests]
    out += list(FORMULA_PATHS.values())
    out += [p for b in TRAIN_BUNDLES for p in b.outputs(R)]  # agents that learn offline
    out += [p for exp in sorted(EXPERIMENTS) for p in all_chunks(exp)]
    out += [p for exp in VALIDATION_EXPERIMENTS for p in validation_chunks(exp)]
    out += [f"{R}/merged/{exp}.parquet" for exp in sorted(EXPERIMENTS)]
    out += validation_merged()
    out += [f"{R}/summary.parquet", f"{R}/summary.md", f"{R}/report/index.html"]
    return out


def formula_paths():
    return FORMULA_PATHS


# ---- input and parameter functions -----------------------------------------------------


def plugin_args():
    """``--plugins REF...`` of bbrl report: the plugins' references (the report shows the
    display names they declare), or nothing without plugins."""
    refs = sorted({a.plugin_ref for a in PLAN.agents} - {""})
    return " ".join(["--plugins", *map(shlex.quote, refs)]) if refs else ""


def warmup_agent(wildcards):
    """The plugin reference (or name) and the first configuration of an algorithm: the
    warm-up trains and runs it once (same kernels and types as every configuration)."""
    a = next(a for a in PLAN.agents if a.algorithm == wildcards.algorithm)
    return json.dumps({"ref": a.ref, "params": dict(a.params)}, sort_keys=True)


def test_set_input(wildcards):
    """The test distribution of a test set (``{test}`` or ``{test}@{label}``)."""
    return f"{R}/distributions/{PLAN.test_sets[wildcards.testset].test}.parquet"


def test_set_setting(wildcards):
    """The options of ``bbrl experiment new`` for the test set's setting of the
    interaction (horizon, or episodes and episode length; checkpoints; label)."""
    return PLAN.test_sets[wildcards.testset].test_set_args()


def distribution_spec(wildcards):
    return PLAN.distribution_spec(wildcards.dist)


def warmup_inputs(wildcards):
    """A prior and a test distribution of the plan, as artefacts (user distributions
    included): the warm-up compiles on their shapes."""
    return {  # ancient: a regenerated distribution does not call for re-warming
        "prior": ancient(f"{R}/distributions/{PLAN.priors[0]}.parquet"),
        "test": ancient(f"{R}/distributions/{PLAN.tests[0]}.parquet"),
    }


def fs_setting(wildcards, key, default=None):
    return config["formula_sets"][wildcards.fs].get(key, default)


def fs_max_size(wildcards):
    return fs_setting(wildcards, "max_size")


def fs_seed(wildcards):
    return fs_setting(wildcards, "seed", 1)


def fs_mem(wildcards):
    return 16000 if fs_max_size(wildcards) >= 6 else 4000


def fs_runtime(wildcards):
    return 600 if fs_max_size(wildcards) >= 6 else 60


def merge_inputs(wildcards):
    return all_chunks(wildcards.experiment)


def merge_validation_inputs(wildcards):
    return validation_chunks(wildcards.experiment)


def merge_test_set(wildcards):
    """The test set of the experiment's runs: merge checks them against it."""
    return f"{R}/test_sets/{EXPERIMENTS[wildcards.experiment].test_set}.parquet"


def merge_validation_test_set(wildcards):
    """The validation set of the experiment's validation runs."""
    return (
        f"{R}/test_sets/{EXPERIMENTS[wildcards.experiment].test_set}.validation.parquet"
    )


def versus_arg(wildcards):
    """``--versus NAME`` when the configuration names an algorithm to compare."""
    v = config.get("versus")
    return f"--versus {shlex.quote(v)}" if v else ""


def report_dir(wildcards, output):
    """The report's directory (the one its index.html is in)."""
    return os.path.dirname(output.index)
