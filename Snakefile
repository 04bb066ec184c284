# bbrl: the paper's comparison as a DAG of Parquet artefacts (local, or --profile slurm).
#
#   snakemake --cores all --config preset=quick   # all algorithms, small grids, < 10 min
#   snakemake --cores all                          # the paper's full configuration
#   snakemake --profile slurm                      # the same on a SLURM cluster
#
# Stages (workflow/rules/): distributions -> formula sets -> numba warm-up -> training
# (prior x agent) -> test sets -> runs (experiment x agent x chunk of test MDPs) -> merge
# (one table per experiment) -> summary -> report (results/report/index.html). Outputs live under results_dir (results/).

from snakemake.utils import min_version

min_version("9.0")


# config.yaml is read by Snakemake; check its YAML first, so that a syntax error names the
# file and the line (Snakemake's own message names neither). A study of one's own
# (--config study=FILE, or --configfile FILE) is read alone, never merged into config.yaml
# (workflow/rules/common.smk).
import os as _os

from snakemake.exceptions import WorkflowError as _WorkflowError

from bbrlcore.errors import BBRLError as _BBRLError
from bbrlcore.plan import check_yaml_file as _check_yaml_file

if (
    not workflow.overwrite_configfiles
    and "study" not in workflow.config_settings.config
):
    if _os.path.exists("config.yaml"):
        try:
            _check_yaml_file("config.yaml")
        except _BBRLError as _exc:
            raise _WorkflowError(str(_exc)) from None

    configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/distributions.smk"
include: "workflow/rules/formula_sets.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/test_sets.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/merge.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/report.smk"


onstart:
    bbrl_support.record_lock_owner()


onsuccess:
    bbrl_support.release_lock_owner()
    if STALE_WARMUPS:
        print(bbrl_support.stale_warmup_note(STALE_WARMUPS, True), file=sys.stderr)


onerror:
    bbrl_support.release_lock_owner()


rule all:
    """Every declared artefact: a missing one is regenerated, and what depends on it is
    refreshed (merge, summary, report)."""
    default_target: True
    input:
        all_outputs(),
