"""``bbrl init FILE``: a configuration of your own study, outside ``config.yaml``.

The workflow reads the repository's ``config.yaml`` (the paper's configuration), then the
file given with ``--configfile``, whose top-level keys replace the base's. ``bbrl init``
writes such a file, complete for the keys a study sets (experiments, algorithms, N, the
results directory, compat variants), so that::

    bbrl init my-study.yaml --algorithm my_agents.py:MyGreedy
    bbrl estimate my-study.yaml
    snakemake --cores all --configfile my-study.yaml

plan, price and run the same study, with its results in their own directory
(``results/my-study``), without editing ``config.yaml``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bbrlcore.errors import BBRLError

TEMPLATE = """\
# {name}: a bbrl study of your own (written by `bbrl init`).
#
#   bbrl estimate {file}                                  # CPU-hours, before computing
#   snakemake --cores all --configfile {file}             # run it (a laptop)
#   snakemake --profile slurm --configfile {file}         # run it (a SLURM cluster)
#
# The workflow reads the repository's config.yaml, then this file: each top-level key
# below replaces the base's (README, "Your own study"). Everything is checked before any
# job runs; an error names the key.

results_dir: {results_dir}        # this study's artefacts, report in {results_dir}/report/
n_mdps: {n_mdps}                  # N test MDPs per test distribution (the paper: 500)
gamma: 0.95
horizon: 250
test_seed: 0
train_seed: 0

# Experiments: a test distribution and the prior the agents get (accurate: the same;
# inaccurate: the uniform U... prior). Built-ins: GC, GDL, Grid, UGC, UGDL, UGrid; your
# own distribution files go under `distributions:` (a name of your own -> a file).
experiments:
{experiments}
distributions: {{}}

# Algorithms: a grid of parameters each (lists are crossed); `bbrl agents` lists every
# algorithm and its parameters. Random and Optimal normalise the scores (0 and 1).
algorithms:
  random: {{}}
  e-greedy: {{epsilon: [0.0, 0.1]}}
  bamcp: {{K: [50], D: [15]}}
  beb: {{beta: [0.5, 2.5]}}
  optimal: {{}}
{plugins}
# compat variants (soft-max, beb, sboss with the original program's quirks) double
# those algorithms' agents; the paper's configuration turns them on.
compat_variants: false
extended: false
formula_sets: {{}}
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init", help="write a configuration of your own study (snakemake --configfile)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("file", help="the configuration to write (e.g. my-study.yaml)")
    p.add_argument("--algorithm", action="append", default=[], metavar="'REF [k=v ...]'",
                   help="your algorithm: a plugin name, module:NAME or file.py:NAME, then "
                   "its parameters (a value or a YAML list: 'my.py:Mine eps=[0.1,0.2]'); "
                   "repeatable")
    p.add_argument("--experiment", action="append", default=[], metavar="TEST-PRIOR",
                   help="an experiment as TEST:PRIOR, e.g. GC:UGC (repeatable; default: "
                   "the paper's six)")
    p.add_argument("--n-mdps", type=int, default=100)
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_init)


def render(file: str, algorithms: list[str], experiments: list[str], n_mdps: int) -> str:
    """The configuration's text (checked by :func:`bbrlcore.plan.load` before it is
    written)."""
    if n_mdps < 1:
        raise BBRLError(f"--n-mdps {n_mdps}: must be >= 1")
    pairs = []
    for e in experiments or ["GC:GC", "GDL:GDL", "Grid:Grid", "GC:UGC", "GDL:UGDL",
                             "Grid:UGrid"]:
        if e.count(":") != 1 or not all(e.split(":")):
            raise BBRLError(f"--experiment {e!r}: expected TEST:PRIOR, e.g. GC:UGC")
        t, p = e.split(":")
        pairs.append(f"  - {{test: {t}, prior: {p}}}")
    import yaml

    plugins = ""
    for spec in algorithms:
        ref, *kvs = spec.split()
        grid = {}
        for kv in kvs:
            if "=" not in kv:
                raise BBRLError(f"--algorithm {spec!r}: {kv!r} is not key=value")
            k, v = kv.split("=", 1)
            try:
                grid[k] = yaml.safe_load(v)
            except (yaml.YAMLError, RecursionError) as exc:
                first = (str(exc).splitlines() or ["syntax error"])[0]
                raise BBRLError(f"--algorithm {spec!r}: {kv!r}: the value is not valid YAML "
                                f"({first})") from None
        flow = yaml.safe_dump(grid, default_flow_style=True).strip()
        plugins += f"  {yaml.safe_dump(ref).splitlines()[0]}: {flow}\n"
    stem = Path(file).stem
    return TEMPLATE.format(name=stem, file=file, results_dir=f"results/{stem}",
                           n_mdps=n_mdps, experiments="\n".join(pairs), plugins=plugins)


def _init(args: argparse.Namespace) -> int:
    import yaml

    from bbrlcore import plan as P
    from bbrlcore.formats.artefacts import atomic_path

    path = Path(args.file)
    if path.exists() and not args.force:
        raise BBRLError(f"{path}: exists (give --force to overwrite it)")
    if path.suffix not in (".yaml", ".yml"):
        raise BBRLError(f"{path}: give a .yaml file name")
    text = render(str(path), args.algorithm, args.experiment, args.n_mdps)
    try:  # the study is valid before it exists
        P.load(yaml.safe_load(text), source=str(path))
    except BBRLError as exc:
        hint = (" (give your algorithm's parameters: --algorithm 'REF name=value ...')"
                if "is required" in str(exc) else "")
        raise BBRLError(f"{exc}{hint}") from None
    if path.parent != Path("") and not path.parent.is_dir():
        raise BBRLError(f"{path}: no such directory {path.parent}")
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    print(f"wrote {path}; next: bbrl estimate {path}; "
          f"snakemake --cores all --configfile {path}")
    if not os.environ.get("BBRL_QUIET"):
        print(f"results will go to results/{path.stem}/ (report: "
              f"results/{path.stem}/report/index.html)")
    return 0
