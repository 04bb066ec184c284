"""``bbrl formulas``: generate, import and show OPPS-DS formula sets."""

from __future__ import annotations

import argparse
import sys
import time

from bbrlcore.agents import formulas as F
from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("formulas", help="formula sets of OPPS-DS (generate/import/show)")
    sub = p.add_subparsers(dest="formulas_command", metavar="SUBCOMMAND", required=True)

    g = sub.add_parser(
        "generate",
        help="enumerate and reduce all formulas up to a size",
        description="Enumerate all RPN formulas of size <= N over ABS LN SQRT INV OPP SUB "
        "DIV ADD2 MUL2 MIN2 MAX2 X0 X1 X2, reduce them by ranking equivalence on random "
        "points, and write a formula-set Parquet file (or the original .dat text).",
    )
    g.add_argument("--max-size", type=int, required=True, metavar="N")
    g.add_argument("--n-points", type=int, default=F.DEFAULT_N_POINTS)
    g.add_argument("--range", type=float, nargs=2, default=list(F.DEFAULT_RANGE),
                   metavar=("LO", "HI"))
    g.add_argument("--seed", type=int, default=F.DEFAULT_SEED)
    g.add_argument("--reference-rng", action="store_true",
                   help="draw the points with glibc rand() like the C++ reference "
                   "(seed 1 reproduces the original F2..F6 files byte for byte)")
    g.add_argument("-o", "--output", required=True,
                   help="output file: .parquet (artefact) or .dat (original text format)")
    g.set_defaults(func=_generate, io=IO(outputs=("output",)))

    i = sub.add_parser("import", help="convert an original formula-set file to Parquet")
    i.add_argument("file", help="original FormulaVector file (plain or zlib-compressed)")
    i.add_argument("-o", "--output", required=True)
    i.set_defaults(func=_import, io=IO(inputs=("file",), outputs=("output",)))

    s = sub.add_parser("show", help="print a formula set (name F2..F6, Parquet or .dat)")
    s.add_argument("set", help="F2..F6, a Parquet formula set or an original file")
    s.add_argument("--head", type=int, default=None, help="print only the first rows")
    s.set_defaults(func=_show, io=IO(inputs=("set",)))


def _write(fs: F.FormulaSet, out: str) -> None:
    if out.endswith(".dat"):
        from bbrlcore.formats.artefacts import atomic_path

        with atomic_path(out) as tmp:
            tmp.write_text(fs.to_dat())
    else:
        F.write_parquet(fs, out)


def _generate(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    fs = F.generate(
        args.max_size,
        n_points=args.n_points,
        lo=args.range[0],
        hi=args.range[1],
        seed=args.seed,
        reference_rng=args.reference_rng,
    )
    _write(fs, args.output)
    print(
        f"{args.output}: {len(fs)} formulas ({fs.label}) in {time.perf_counter() - t0:.2f} s",
        file=sys.stderr,
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    fs = F.read_dat(args.file)
    if args.output.endswith(".dat"):
        raise BBRLError(f"-o {args.output}: import writes a Parquet file")
    F.write_parquet(fs, args.output)
    print(f"{args.output}: {len(fs)} formulas ({fs.label})", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    fs = F.load(args.set)
    n = len(fs) if args.head is None else min(args.head, len(fs))
    print(f"# {fs.label}: {len(fs)} formulas")
    for i in range(n):
        codes = fs.codes[i, : fs.lengths[i]]
        print(f"{i}\t{fs.rpn[i]}\t{F.infix(codes)}")
    return 0
