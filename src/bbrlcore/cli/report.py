"""``bbrl report``: figures, tables, HTML and LaTeX from merged run tables."""

from __future__ import annotations

import argparse

from bbrlcore import protocol as E
from bbrlcore import seeds
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="HTML and LaTeX report from merged run tables")
    p.add_argument("merged", nargs="+", help="merged (or run) .parquet files")
    p.add_argument("--test-sets", nargs="*", default=[], help="test-set .parquet files "
                   "(for the hardness section)")
    p.add_argument("--alpha", type=float, default=0.05, help="level of the Z-test (0.05)")
    p.add_argument("--n-bounds", type=int, default=8, help="bounds per time axis (8)")
    p.add_argument("--correction", choices=("none", "holm"), default="none",
                   help="multiple comparisons in 'among the best': none (the paper's "
                   "procedure) or holm (family-wise error at most alpha)")
    p.add_argument("--bootstrap-resamples", type=int, default=2000,
                   help="resamples of the aggregates' stratified bootstrap (2000)")
    p.add_argument("--bootstrap-seed", type=int, default=0, help="its seed (0)")
    p.add_argument("--score", choices=("discounted", "undiscounted"), default="discounted",
                   help="the score everywhere in the report: the discounted return (the "
                   "paper's, default) or the undiscounted sum of rewards over the horizon")
    p.add_argument("--versus", metavar="NAME",
                   help="one algorithm (as the report names it, e.g. 'BEB (compat)', or its "
                   "id) against every other, at the top of the statistics across experiments")
    p.add_argument("--plugins", nargs="*", default=[], metavar="REF",
                   help="plugin references (path/to/file.py:NAME, module:NAME) whose "
                   "display names the report shows; installed plugins are found by name")
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex")
    from bbrlcore.cli.results import add_validation

    add_validation(p)
    p.add_argument("-o", "--output", default="results/report", help="output directory")
    p.set_defaults(func=_report, io=IO(inputs=("merged", "test_sets", "validation"),
                                       outdirs=("output",)))


def _report(args: argparse.Namespace) -> int:
    """``bbrl report``. A SIGTERM or SIGHUP (a job's time limit) ends it with status 128
    + the signal's number wherever it lands (:func:`bbrlcore.report.ended_as_signal`);
    the report is moved into place only when complete and no signal arrived."""
    from bbrlcore.report import ended_as_signal

    with ended_as_signal():
        return _report_of(args)


def _report_of(args: argparse.Namespace) -> int:
    from bbrlcore import report
    from bbrlcore.analysis.curves import curve_agents
    from bbrlcore.analysis.results import (
        attach_rewards,
        check_test_sets,
        read_runs_with_sizes,
        summary_table,
    )

    if not (0 < args.alpha < 1):
        raise BBRLError(f"--alpha {args.alpha}: must be in (0, 1)")
    if args.n_bounds < 1:
        raise BBRLError(f"--n-bounds {args.n_bounds}: must be >= 1")
    # the per-step rewards of the agents the learning curves draw only (the best agent of
    # each algorithm, Random, Optimal): a whole configuration's would be gigabytes
    from bbrlcore.analysis.selection import chosen

    merged, n_mdps = read_runs_with_sizes(args.merged, "report", rewards=False)
    summary = chosen(summary_table(merged, args.score), merged, args.validation, "report",
                     args.score)
    warn_reference(summary, args.score)
    merged = attach_rewards(merged, list(args.merged),
                            curve_agents(merged, args.score, summary=summary))
    test_sets = [E.read_test_set(p) for p in args.test_sets]
    check_test_sets(merged, test_sets, list(args.test_sets), n_mdps)
    if args.bootstrap_resamples < 100:
        raise BBRLError(f"--bootstrap-resamples {args.bootstrap_resamples}: must be >= 100")
    seeds.check_seed(args.bootstrap_seed, "--bootstrap-seed")
    names = display_names(summary["algorithm"].unique().to_list(), args.plugins)
    index = report.build(merged, summary, args.output, test_sets, alpha=args.alpha,
                         n_bounds=args.n_bounds, pdf=not args.no_pdf,
                         correction=args.correction,
                         bootstrap_resamples=args.bootstrap_resamples,
                         bootstrap_seed=args.bootstrap_seed, display_names=names,
                         score=args.score, versus=args.versus,
                         resamples_option="--bootstrap-resamples")
    print(f"wrote {index}")
    return 0


def warn_reference(summary, score: str) -> None:
    """One line on stderr when the runs hold only an Optimal of another criterion than
    ``score`` in some experiment (the report says it too)."""
    import sys

    from bbrlcore.analysis.results import reference_agents, reference_warning

    line = reference_warning(reference_agents(summary, score), score)
    if line:
        print(f"bbrl: warning: {line}", file=sys.stderr)


def display_names(algorithms: list[str], refs: list[str]) -> dict[str, str]:
    """The display names declared by the plugins among ``algorithms``
    (:func:`bbrlcore.agents.registry.display_names`)."""
    from bbrlcore.agents import registry

    return registry.display_names(algorithms, refs)
