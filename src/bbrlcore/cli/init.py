"""``bbrl init FILE``: a configuration of your own study, outside ``config.yaml``.

Given with ``--config study=FILE``, the file is the workflow's whole configuration: the workflow
does not read the repository's ``config.yaml`` then, and the keys the file does not set
take bbrl's defaults (:data:`bbrlcore.plan.DEFAULTS`, the paper's protocol, job and
statistics settings), exactly as ``bbrl estimate FILE`` reads it. ``bbrl init`` writes
such a file, complete for the keys a study sets (experiments, algorithms, N, the results
directory, compat variants), so that::

    bbrl init my-study.yaml --algorithm my_agents.py:MyGreedy
    bbrl estimate my-study.yaml
    snakemake --cores all --config study=my-study.yaml

plan, price and run the same study, with its results in their own directory
(``results/my-study``), without editing ``config.yaml``.

The file holds exactly what was asked: the algorithms given with ``--algorithm`` (an
algorithm given several times is one grid, ``beb beta=3`` and ``beb beta=4`` give
``beb: {beta: [3, 4]}``), with Random and Optimal, the references of the normalised
score, or an example set when none is given. It is written by the YAML library and read
back before it exists: a file name that YAML or the workflow cannot carry is refused in
one line.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
from pathlib import Path
from typing import Any

from bbrlcore.errors import BBRLError

#: The paper's six experiments (the default of ``--experiment``).
PAPER_EXPERIMENTS = ("GC:GC", "GDL:GDL", "Grid:Grid", "GC:UGC", "GDL:UGDL", "Grid:UGrid")
#: The algorithms of a study when ``--algorithm`` names none: an example to edit.
EXAMPLE_ALGORITHMS: dict[str, Any] = {
    "random": {}, "e-greedy": {"epsilon": [0.0, 0.1]}, "bamcp": {"K": [50], "D": [15]},
    "beb": {"beta": [0.5, 2.5]}, "optimal": {}}
#: The references of the normalised score (Random = 0, Optimal = 1), always in a study.
REFERENCES = ("random", "optimal")
#: Beyond this many steps an interaction is long (its run tables keep checkpoints, not
#: every step's reward): ``bbrl init``'s score is then undiscounted by default.
LONG_STEPS = 10_000

HEADER = """\
# {name}: a bbrl study of your own (written by `bbrl init`).
#
#   bbrl estimate {file}                              # CPU-hours, before computing
#   snakemake --cores all {run}       # run it (a laptop)
#   snakemake --profile slurm {run}   # run it (a SLURM cluster)
#
# Given with --config study=FILE, this file is the whole configuration: the workflow does not
# read the repository's config.yaml, and keys not set here take bbrl's defaults (the
# paper's protocol, jobs and statistics), as `bbrl estimate` reads it (documentation: "Running
# the workflow"). Everything is checked before any job runs; an error names the key.
"""

def run_option(file: str) -> str:
    """The Snakemake option that runs the study ``file``: ``--config study=FILE`` (the
    workflow reads the file, a YAML error names the file and the line), or
    ``--configfile FILE`` for a name that Snakemake's ``--config`` would not read back as
    given (it parses values as YAML: ``a #b.yaml`` would be ``a``).

    >>> run_option("my-study.yaml")
    '--config study=my-study.yaml'
    >>> run_option("a #b.yaml")
    "--configfile 'a #b.yaml'"
    """
    import yaml

    try:
        same = yaml.load(file, Loader=yaml.BaseLoader) == file
    except yaml.YAMLError:
        same = False
    return f"--config study={shlex.quote(file)}" if same else f"--configfile {shlex.quote(file)}"


#: (comment, keys) of each section of the file, in order.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("# This study's artefacts (its report: RESULTS_DIR/report/index.html); N test MDPs per\n"
     "# test distribution (the paper: 500), the discount, the horizon T (one continuing\n"
     "# interaction of T steps) or `episodes: E` (E episodes of each test's natural length),\n"
     "# the seeds; `score` ranks the agents: discounted (the discounted return, the paper's)\n"
     "# or undiscounted (the sum of rewards: long and episodic interactions).",
     ("results_dir", "n_mdps", "gamma", "horizon", "episodes", "score", "test_seed",
      "train_seed")),
    ("# Each algorithm's best configuration is chosen on validation_mdps validation MDPs\n"
     "# (the same distributions, another seed) and its score reported on the test MDPs;\n"
     "# `selection: test` chooses on the test MDPs themselves, as the paper does (biased\n"
     "# upwards, the more so the larger an algorithm's grid).",
     ("selection", "validation_mdps")),
    ("# Experiments: a test distribution and the prior the agents get (accurate: the same;\n"
     "# inaccurate: the uniform U... prior). Built-ins: GC, GDL, Grid, UGC, UGDL, UGrid; a\n"
     "# problem family's name (DeepSea-20; bbrl families) or {family: NAME, size: [...]};\n"
     "# your own distribution files go under `distributions:` (a name of your own -> a file).",
     ("experiments", "distributions")),
    ("# Algorithms: a grid of parameters each (lists are crossed); `bbrl agents` lists every\n"
     "# algorithm and its parameters. Random and Optimal normalise the scores (0 and 1).",
     ("algorithms",)),
    ("# compat variants (soft-max, beb, sboss with the original program's quirks) double\n"
     "# those algorithms' agents; the paper's configuration turns them on.",
     ("compat_variants", "extended", "formula_sets")),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init", help="write a configuration of your own study (snakemake --config study=FILE)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("file", help="the configuration to write (e.g. my-study.yaml)")
    p.add_argument("--algorithm", action="append", default=[], metavar="'REF [k=v ...]'",
                   help="an algorithm: a built-in or plugin name, module:NAME or "
                   "file.py:NAME, then its parameters (a value or a YAML list: 'my.py:Mine "
                   "eps=[0.1,0.2]'); repeatable (the same algorithm again adds to its "
                   "grid); Random and Optimal are added as the references of the "
                   "normalised score (default: an example set)")
    p.add_argument("--experiment", action="append", default=[], metavar="TEST-PRIOR",
                   help="an experiment as TEST:PRIOR, e.g. GC:UGC (repeatable; default: "
                   "the paper's six)")
    p.add_argument("--n-mdps", type=int, default=100)
    p.add_argument("--horizon", metavar="T",
                   help="one continuing interaction of T steps per test MDP (default: 250, "
                   "the paper's)")
    p.add_argument("--episodes", metavar="E",
                   help="an episodic interaction instead: E episodes of each test's natural "
                   "length (DeepSea N: N steps; bbrl families)")
    p.add_argument("--score", metavar="SCORE",
                   help="what ranks the agents: discounted (the discounted return, the "
                   "paper's) or undiscounted (the sum of rewards); default: undiscounted "
                   f"for an episodic or long interaction (T > {LONG_STEPS:,}), discounted "
                   "otherwise")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_init)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _values(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


def combine(grids: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    """The grids of one algorithm given several times, as one configuration entry: grids
    with the same parameters that differ in one parameter at most become one grid (their
    values joined), others stay tiers (a list of grids), so that the entry stands for
    exactly the configurations given.

    >>> combine([{"beta": 3}, {"beta": 4}])
    {'beta': [3, 4]}
    >>> combine([{"K": 1, "D": 15}, {"K": 2, "D": 15}, {"K": 2, "D": 25}])
    [{'K': [1, 2], 'D': 15}, {'K': 2, 'D': 25}]
    >>> combine([{}, {}])
    {}
    """
    tiers: list[dict[str, Any]] = []
    for g in grids:
        last = tiers[-1] if tiers else None
        if last is not None and set(last) == set(g):
            diff = [k for k in g if len(_values(last[k])) != len(_values(g[k])) or not all(
                _same(a, b) for a, b in zip(_values(last[k]), _values(g[k]), strict=True))]
            if len(diff) <= 1:
                for k in diff:
                    joined = _values(last[k])
                    joined += [v for v in _values(g[k]) if not any(_same(v, w) for w in joined)]
                    last[k] = joined
                continue
        tiers.append(dict(g))
    return tiers[0] if len(tiers) == 1 else tiers


def _algorithm(spec: str) -> tuple[str, dict[str, Any]]:
    """``'REF k=v ...'`` as (REF, grid); a key given twice joins its values."""
    import yaml

    words = spec.split()
    if not words:
        raise BBRLError(f"--algorithm {spec!r}: expected REF [name=value ...], e.g. "
                        "'beb beta=2.5'")
    ref, *kvs = words
    grid: dict[str, Any] = {}
    for kv in kvs:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise BBRLError(f"--algorithm {spec!r}: {kv!r} is not name=value")
        try:
            value = yaml.safe_load(v)
        except (yaml.YAMLError, RecursionError) as exc:
            first = (str(exc).splitlines() or ["syntax error"])[0]
            raise BBRLError(f"--algorithm {spec!r}: {kv!r}: the value is not valid YAML "
                            f"({first})") from None
        if k in grid:
            joined = _values(grid[k])
            joined += [x for x in _values(value) if not any(_same(x, w) for w in joined)]
            value = joined
        grid[k] = value
    return ref, grid


def setting(n_mdps: Any = 100, horizon: Any = None, episodes: Any = None,
            score: Any = None) -> dict[str, Any]:
    """The settings ``bbrl init`` writes (``n_mdps``, ``horizon``, ``episodes``,
    ``score``), checked by the configuration's own rules (an error names the option):
    the paper's continuing 250 steps unless ``--horizon`` or ``--episodes`` says
    otherwise (not both: an episode's length is its test's), and the score undiscounted
    for an episodic or long interaction unless ``--score`` says.

    >>> setting(5, episodes="1000")
    {'n_mdps': 5, 'horizon': 250, 'episodes': 1000, 'score': 'undiscounted'}
    >>> setting(5, horizon=100)["score"], setting(5, horizon=100_000)["score"]
    ('discounted', 'undiscounted')
    >>> setting(5, horizon=0)
    Traceback (most recent call last):
    bbrlcore.errors.BBRLError: --horizon 0: must be >= 1
    """
    from bbrlcore.plan.config import check_settings

    if horizon is not None and episodes is not None:
        raise BBRLError(f"--horizon {horizon} --episodes {episodes}: give one of them (an "
                        "episodic interaction lasts E episodes of its test's natural "
                        "length; --horizon is a continuing one's)")
    values = {"n_mdps": n_mdps, "horizon": 250 if horizon is None else horizon,
              "episodes": episodes}
    options = {"n_mdps": "--n-mdps", "horizon": "--horizon", "episodes": "--episodes",
               "score": "--score"}
    out = check_settings(values, options)
    long = out["episodes"] is not None or out["horizon"] > LONG_STEPS
    out["score"] = check_settings(
        {"score": score if score is not None else
         ("undiscounted" if long else "discounted")}, options)["score"]
    return out


def study(file: str, algorithms: list[str], experiments: list[str],
          n_mdps: int, *, horizon: Any = None, episodes: Any = None,
          score: Any = None) -> dict[str, Any]:
    """The configuration ``bbrl init`` writes, as a mapping (:func:`render` writes it):
    configurations chosen on validation MDPs (``selection: validation``), in the
    interaction of :func:`setting`."""
    from bbrlcore.plan.model import VALIDATION_MDPS

    fixed = setting(n_mdps, horizon, episodes, score)
    n_mdps = fixed["n_mdps"]
    exps = []
    for e in experiments or PAPER_EXPERIMENTS:
        t, colon, p = e.partition(":")
        if not colon or not t or not p or ":" in p:
            raise BBRLError(f"--experiment {e!r}: expected TEST:PRIOR, e.g. GC:UGC")
        exps.append({"test": t, "prior": p})
    grids: dict[str, list[dict[str, Any]]] = {}
    for spec in algorithms:
        ref, grid = _algorithm(spec)
        grids.setdefault(ref, []).append(grid)
    if grids:
        algs: dict[str, Any] = {} if "random" in grids else {"random": {}}
        algs.update({ref: combine(gs) for ref, gs in grids.items()})
        if "optimal" not in grids:
            algs["optimal"] = {}
    else:
        algs = {k: dict(v) for k, v in EXAMPLE_ALGORITHMS.items()}
    return {"results_dir": results_dir(file), "n_mdps": n_mdps, "gamma": 0.95,
            "horizon": fixed["horizon"], "episodes": fixed["episodes"],
            "score": fixed["score"], "test_seed": 0, "train_seed": 0,
            "selection": "validation",
            "validation_mdps": min(n_mdps, VALIDATION_MDPS), "experiments": exps,
            "distributions": {}, "algorithms": algs, "compat_variants": False,
            "extended": False, "formula_sets": {}}


def results_dir(file: str) -> str:
    """``results/STEM``, the results directory of a study written to ``file``; a name the
    workflow cannot use as a directory is refused in one line.

    >>> results_dir("studies/my-study.yaml")
    'results/my-study'
    """
    stem = Path(file).stem
    if stem in ("", ".", ".."):
        raise BBRLError(f"{file}: give the file a name (its results go to results/NAME)")
    return f"results/{stem}"


def render(file: str, algorithms: list[str], experiments: list[str], n_mdps: int,
           **interaction: Any) -> str:
    """The configuration's text: a header comment, then each section (a comment and its
    keys, written by the YAML library). It is read back before it is returned: a name that
    YAML cannot carry is one :class:`BBRLError` line. The configuration itself is checked
    by :func:`bbrlcore.plan.load` before it is written."""
    import yaml

    if not file.isprintable():
        raise BBRLError(f"{file!r}: the file name has a character that is not printable "
                        "(it is written into the file's comments): choose another name")
    data = study(file, algorithms, experiments, n_mdps, **interaction)
    quoted = shlex.quote(file)
    parts = [HEADER.format(name=Path(file).stem, file=quoted, run=run_option(file))]
    for comment, keys in SECTIONS:
        parts.append(f"{comment}\n{dump({k: data[k] for k in keys})}")
    text = "\n".join(parts)
    try:
        back = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = (str(exc).splitlines() or ["syntax error"])[0]
        raise BBRLError(f"{file}: cannot be written as a YAML configuration ({first}): "
                        "choose another name") from None
    if back != data:  # a writer's bug, never a silently different study
        raise BBRLError(f"{file}: the written configuration would not read back as given: "
                        "choose another name")
    return text


def dump(data: dict[str, Any]) -> str:
    """``data`` as YAML, by the YAML library: its keys and their mappings or lists in
    block style, everything deeper in flow style (``- {test: GC, prior: UGC}``,
    ``beb: {beta: [0.5, 2.5]}``).

    >>> print(dump({"n_mdps": 5, "algorithms": {"beb": {"beta": [3, 4]}}}), end="")
    n_mdps: 5
    algorithms:
      beb: {beta: [3, 4]}
    """
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    node = Dumper(None, sort_keys=False).represent_data(data)

    def style(n: Any, depth: int) -> None:
        if isinstance(n, yaml.MappingNode):
            n.flow_style = depth >= 2
            for k, v in n.value:
                style(k, depth + 1)
                style(v, depth + 1)
        elif isinstance(n, yaml.SequenceNode):
            n.flow_style = depth >= 2
            for v in n.value:
                style(v, depth + 1)

    style(node, 0)
    return yaml.serialize(node, Dumper=Dumper, allow_unicode=True, width=math.inf)


def _init(args: argparse.Namespace) -> int:
    import yaml

    from bbrlcore import plan as P
    from bbrlcore.formats.artefacts import atomic_path

    path = Path(args.file)
    if path.suffix not in (".yaml", ".yml"):
        raise BBRLError(f"{args.file}: give a .yaml file name")
    text = render(args.file, args.algorithm, args.experiment, args.n_mdps,
                  horizon=args.horizon, episodes=args.episodes, score=args.score)
    try:
        exists = path.exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise BBRLError(f"{args.file}: not a usable file name ({exc})") from None
    if exists and not args.force:
        raise BBRLError(f"{path}: exists (give --force to overwrite it)")
    try:  # the study is valid before it exists
        plan = P.load(yaml.safe_load(text), source=str(path))
    except BBRLError as exc:
        hint = (" (give your algorithm's parameters: --algorithm 'REF name=value ...')"
                if "is required" in str(exc) else "")
        raise BBRLError(f"{exc}{hint}") from None
    if path.parent != Path("") and not path.parent.is_dir():
        raise BBRLError(f"{path}: no such directory {path.parent}")
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    q = shlex.quote(str(path))
    print(f"wrote {path}; next: bbrl estimate {q}; snakemake --cores all {run_option(str(path))}")
    if not os.environ.get("BBRL_QUIET"):
        out = plan.config["results_dir"]
        print(f"results will go to {out}/ (report: {out}/report/index.html)")
    return 0
