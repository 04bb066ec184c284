"""``bbrl merge`` and ``bbrl summary``: thin shells over :mod:`bbrlcore.analysis.results`.

* ``bbrl merge RUN... -o merged.parquet``: concatenate run tables (chunks or whole runs).
* ``bbrl summary MERGED... -o summary.parquet [--markdown summary.md] [--validation
  MERGED...]``: the tidy summary, one row per experiment × agent, with each algorithm's
  grid size (its columns: the documentation's "Columns of the tables"); ``--validation``:
  each algorithm's best configuration chosen on validation runs
  (:mod:`bbrlcore.analysis.selection`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bbrlcore.analysis.results import (
    check_test_sets,
    markdown,
    read_runs,
    read_runs_with_sizes,
    reference_agents,
    reference_warning,
    summary_table,
)
from bbrlcore.cli._io import IO
from bbrlcore.formats import artefacts


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("merge", help="concatenate run tables (chunks) into one table")
    m.add_argument("runs", nargs="+", metavar="RUN", help="run .parquet files")
    m.add_argument("--test-sets", nargs="*", default=[], metavar="TEST_SET",
                   help="the test sets the runs were played on: each run's seed, size, "
                   "gamma, horizon and references are checked against its test set's "
                   "(the workflow gives them)")
    m.add_argument("-o", "--output", required=True, help="output merged .parquet")
    m.set_defaults(func=_merge, io=IO(inputs=("runs", "test_sets"), outputs=("output",)))

    s = sub.add_parser("summary", help="one row per experiment x agent: scores and times")
    s.add_argument("merged", nargs="+", metavar="MERGED", help="merged (or run) .parquet files")
    s.add_argument("-o", "--output", required=True, help="output summary .parquet")
    s.add_argument("--markdown", help="also write a markdown table to this file")
    s.add_argument("--score", choices=("discounted", "undiscounted"), default="discounted",
                   help="rank by the discounted return (the paper's, default) or the "
                   "undiscounted sum of rewards")
    add_validation(s)
    s.set_defaults(func=_summary, io=IO(inputs=("merged", "validation"),
                                        outputs=("output", "markdown")))


#: ``--validation``'s help, the same for summary, aggregate, curves and report.
VALIDATION_HELP = (
    "choose each algorithm's configuration on these validation runs (merged tables of the "
    "runs on the validation sets: the workflow's merged_validation/*.parquet; the same "
    "experiments, other MDPs) and report its score on the test runs; without it, chosen on "
    "the test runs (the paper's selection). Given with no file: every algorithm must have "
    "a single configuration")


def add_validation(p: argparse.ArgumentParser) -> None:
    """``--validation [MERGED ...]`` (:data:`VALIDATION_HELP`)."""
    p.add_argument("--validation", nargs="*", metavar="MERGED", default=None,
                   help=VALIDATION_HELP)


def _merge(args: argparse.Namespace) -> int:
    merged, n_mdps = read_runs_with_sizes(args.runs, "merge")
    if args.test_sets:
        from bbrlcore import protocol

        check_test_sets(merged, [protocol.read_test_set(p) for p in args.test_sets],
                        list(args.test_sets), n_mdps, "merge")
    exps = merged["experiment"].unique().to_list()
    artefacts.write_artefact(
        args.output, merged, "merged", {"experiments": sorted(exps), "n_inputs": len(args.runs),
                                        "n_mdps": {e: n_mdps[e] for e in exps if e in n_mdps}}
    )
    n_agents = merged.select("agent").n_unique()
    print(f"wrote {args.output}: {len(merged)} rows, {n_agents} agents, {len(args.runs)} inputs")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from bbrlcore.analysis.selection import chosen, selection_of

    merged = read_runs(args.merged, "summary", rewards=False)
    s = chosen(summary_table(merged, args.score), merged, args.validation, "summary",
               args.score)
    line = reference_warning(reference_agents(s, args.score), args.score)
    if line:  # the normalised scores are against a reference of another criterion
        print(f"bbrl: warning: {line}", file=sys.stderr)
    artefacts.write_artefact(args.output, s, "summary", {
        "inputs": len(args.merged), "score": args.score, "selection": selection_of(s),
        "validation_inputs": len(args.validation or [])})
    if args.markdown:
        with artefacts.atomic_path(args.markdown) as tmp:
            Path(tmp).write_text(markdown(s))
    print(f"wrote {args.output}: {len(s)} rows")
    return 0
