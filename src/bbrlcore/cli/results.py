"""``bbrl merge`` and ``bbrl summary``: thin shells over :mod:`bbrlcore.analysis.results`.

* ``bbrl merge RUN... -o merged.parquet``: concatenate run tables (chunks or whole runs).
* ``bbrl summary MERGED... -o summary.parquet [--markdown summary.md]``: the tidy summary,
  one row per experiment × agent (its columns: the documentation's "Columns of the tables").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bbrlcore.analysis.results import (
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
    m.add_argument("-o", "--output", required=True, help="output merged .parquet")
    m.set_defaults(func=_merge, io=IO(inputs=("runs",), outputs=("output",)))

    s = sub.add_parser("summary", help="one row per experiment x agent: scores and times")
    s.add_argument("merged", nargs="+", metavar="MERGED", help="merged (or run) .parquet files")
    s.add_argument("-o", "--output", required=True, help="output summary .parquet")
    s.add_argument("--markdown", help="also write a markdown table to this file")
    s.add_argument("--score", choices=("discounted", "undiscounted"), default="discounted",
                   help="rank by the discounted return (the paper's, default) or the "
                   "undiscounted sum of rewards")
    s.set_defaults(func=_summary, io=IO(inputs=("merged",), outputs=("output", "markdown")))


def _merge(args: argparse.Namespace) -> int:
    merged, n_mdps = read_runs_with_sizes(args.runs, "merge")
    exps = merged["experiment"].unique().to_list()
    artefacts.write_artefact(
        args.output, merged, "merged", {"experiments": sorted(exps), "n_inputs": len(args.runs),
                                        "n_mdps": {e: n_mdps[e] for e in exps if e in n_mdps}}
    )
    n_agents = merged.select("agent").n_unique()
    print(f"wrote {args.output}: {len(merged)} rows, {n_agents} agents, {len(args.runs)} inputs")
    return 0


def _summary(args: argparse.Namespace) -> int:
    merged = read_runs(args.merged, "summary", rewards=False)
    s = summary_table(merged, args.score)
    line = reference_warning(reference_agents(s, args.score), args.score)
    if line:  # the normalised scores are against a reference of another criterion
        print(f"bbrl: warning: {line}", file=sys.stderr)
    artefacts.write_artefact(args.output, s, "summary", {"inputs": len(args.merged),
                                                          "score": args.score})
    if args.markdown:
        with artefacts.atomic_path(args.markdown) as tmp:
            Path(tmp).write_text(markdown(s))
    print(f"wrote {args.output}: {len(s)} rows")
    return 0
