"""``bbrl report``: figures, tables, HTML and LaTeX from merged run tables."""

from __future__ import annotations

import argparse

from .. import experiment as E
from ..errors import BBRLError
from ._io import IO


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="HTML and LaTeX report from merged run tables")
    p.add_argument("merged", nargs="+", help="merged (or run) .parquet files")
    p.add_argument("--test-sets", nargs="*", default=[], help="test-set .parquet files "
                   "(for the hardness section)")
    p.add_argument("--alpha", type=float, default=0.05, help="level of the Z-test (0.05)")
    p.add_argument("--n-bounds", type=int, default=8, help="bounds per time axis (8)")
    p.add_argument("--no-pdf", action="store_true", help="do not run pdflatex")
    p.add_argument("-o", "--output", default="results/report", help="output directory")
    p.set_defaults(func=_report, io=IO(inputs=("merged", "test_sets"), outdirs=("output",)))


def _report(args: argparse.Namespace) -> int:
    from .. import report
    from ..results import read_runs, summary_table

    if not (0 < args.alpha < 1):
        raise BBRLError(f"--alpha {args.alpha}: must be in (0, 1)")
    if args.n_bounds < 1:
        raise BBRLError(f"--n-bounds {args.n_bounds}: must be >= 1")
    merged = read_runs(args.merged)
    summary = summary_table(merged)
    test_sets = [E.read_test_set(p) for p in args.test_sets]
    index = report.build(merged, summary, args.output, test_sets, alpha=args.alpha,
                         n_bounds=args.n_bounds, pdf=not args.no_pdf)
    print(f"wrote {index}")
    return 0
