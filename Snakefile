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


rule all:
    default_target: True
    input:
        f"{R}/summary.parquet",
        f"{R}/summary.md",
        f"{R}/report/index.html",
