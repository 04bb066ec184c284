"""``bbrl batch``: several trainings or runs in one process (a workflow job's bundle)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser(
        "batch", help="several trainings or runs in one process (a workflow job)",
        description="Execute a bundle of training or run units in one process, each "
        "exactly as bbrl train / bbrl run would (bbrlcore.protocol.batch documents the "
        "spec). The workflow writes the spec; by hand, `bbrl batch --spec @bundle.json`.")
    b.add_argument("--spec", required=True, metavar="JSON",
                   help="the bundle: JSON text, or @FILE")
    b.add_argument("--partial", metavar="DIR",
                   help="keep each finished unit here, and take the units an earlier "
                   "attempt finished from here (removed when every unit is done)")
    b.add_argument("-q", "--quiet", action="store_true",
                   help="no progress output within a unit")
    b.set_defaults(func=_batch)


def _batch(args: argparse.Namespace) -> int:
    from bbrlcore.formats import artefacts
    from bbrlcore.protocol import batch

    spec = batch.load_spec(args.spec)
    for unit in batch.expand(spec):  # refused before any unit runs, as bbrl train/run do
        artefacts.check_output_path(unit["output"])
    from bbrlcore.cli.agents import expected_run_seconds

    batch.run_batch(spec, args.partial, progress=not args.quiet,
                    expected=expected_run_seconds)
    return 0
