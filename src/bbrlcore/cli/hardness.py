"""``bbrl hardness TEST_SET... [-o FILE] [--summary FILE]``: Colosseum's hardness measures
of every test MDP, and their summary per test set."""

from __future__ import annotations

import argparse
import math
import sys

import polars as pl

from bbrlcore import protocol as E
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts
from bbrlcore.mdp import hardness as H


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hardness", help="hardness measures of the test MDPs (diameter, value norm, gaps)",
        description="For every MDP of the test sets: its optimal value from the initial "
        "state, diameter (exact, undiscounted), environmental value norm and sum of the "
        "reciprocals of the sub-optimality gaps (Colosseum, Conserva & Rauber 2022; "
        "bbrlcore.mdp.hardness), all on the states reachable from the initial state (with "
        "the number of unreachable ones; transition probabilities below 1e-12 count as "
        "zero); printed summarised per test set (and per MDP with --per-mdp), written as "
        "Parquet with -o and --summary (their metadata: the test sets' paths, seeds and "
        "gamma). At gamma = 1 the value measures are undefined (left empty); a gamma too "
        "close to 1 for float64 is refused.")
    p.add_argument("test_sets", nargs="+", metavar="TEST_SET", help="test-set .parquet files")
    p.add_argument("--gamma", type=float, default=None,
                   help="discount factor of the value measures, in (0, 1) (default: each "
                   "test set's; at gamma = 1 they are undefined)")
    p.add_argument("--per-mdp", action="store_true", help="also print one line per MDP")
    p.add_argument("-o", "--output", help="write the per-MDP table here (.parquet)")
    p.add_argument("--summary", help="write the summary per test set here (.parquet)")
    p.set_defaults(func=_hardness, io=IO(inputs=("test_sets",),
                                         outputs=("output", "summary")))


def _num(v: float | int | None) -> str:
    if v is None:
        return "–"
    if isinstance(v, int):
        return str(v)
    return "inf" if math.isinf(v) else f"{v:.4g}"


def _print(table: pl.DataFrame) -> None:
    cols = table.columns
    rows = [[_num(v) if not isinstance(v, str) else v for v in r] for r in table.iter_rows()]
    widths = [max(len(c), *(len(r[k]) for r in rows)) for k, c in enumerate(cols)]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))


def _hardness(args: argparse.Namespace) -> int:
    if args.gamma is not None and not 0 < args.gamma < 1:
        raise BBRLError(f"--gamma {args.gamma}: must be in (0, 1)")
    seen: dict[str, str] = {}
    sets = []
    for path in args.test_sets:
        ts = E.read_test_set(path)
        name = ts.test.short_name
        if name in seen:
            raise BBRLError(f"{path}: a test set of {name} again ({seen[name]}): give one "
                            "test set per test distribution")
        seen[name] = path
        sets.append(ts)
    gammas = [float(args.gamma if args.gamma is not None else ts.gamma) for ts in sets]
    print(f"Measures on the states reachable from each test set's initial state "
          f"(transition probabilities below {H.REACH_TOLERANCE:g} count as zero); the "
          "diameter is undiscounted, the value measures use "
          + (f"gamma={args.gamma:g}." if args.gamma is not None else "each test set's gamma."))
    undefined = [ts.test.short_name for ts, g in zip(sets, gammas, strict=True) if g >= 1]
    if undefined:
        print(f"{', '.join(undefined)}: {H.UNDEFINED_AT_GAMMA_1}; give --gamma in (0, 1) "
              "to measure them.")
    print()
    tables = [H.hardness_table(ts, g, progress=lambda msg: print(msg, file=sys.stderr,
                                                                 flush=True))
              for ts, g in zip(sets, gammas, strict=True)]
    table = pl.concat(tables)
    summary = H.hardness_summary(table)
    if args.per_mdp:
        _print(table)
        print()
    _print(summary.drop("q05", "q95"))
    meta = {"test_sets": list(args.test_sets),
            "tests": [ts.test.short_name for ts in sets],
            "seeds": [ts.seed for ts in sets],
            "n_mdps": [ts.n_mdps for ts in sets],
            "test_set_gamma": [ts.gamma for ts in sets],
            "gamma": gammas,
            "gamma_option": args.gamma,
            "measured_on": "states reachable from the initial state",
            "reach_tolerance": H.REACH_TOLERANCE}
    if args.output:
        artefacts.write_artefact(args.output, table, "hardness", meta)
        print(f"wrote {args.output} ({table.height} MDPs)")
    if args.summary:
        artefacts.write_artefact(args.summary, summary, "hardness-summary", meta)
        print(f"wrote {args.summary}")
    return 0
