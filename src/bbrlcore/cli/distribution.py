"""``bbrl distribution show|import|export``."""

from __future__ import annotations

import argparse

from bbrlcore.cli._io import IO
from bbrlcore.mdp import distributions as D


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("distribution", help="show, import and export FDM distributions")
    s = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    show = s.add_parser("show", help="describe a built-in distribution or a file")
    show.add_argument("distribution", help="GC, GDL, Grid, UGC, UGDL, UGrid, a .dat or .parquet")
    show.add_argument("--dat", action="store_true", help="print the original .dat text")
    show.set_defaults(func=_show, io=IO(inputs=("distribution",)))

    imp = s.add_parser("import", help="convert an original .dat file to a Parquet artefact")
    imp.add_argument("file", help=".dat file (plain or zlib-compressed), a built-in name or "
                     "a distribution .parquet")
    imp.add_argument("--short-name", help="rename the distribution (its short name names "
                     "experiments: {test}-{prior})")
    imp.add_argument("-o", "--output", required=True, help="output .parquet")
    imp.set_defaults(func=_import, io=IO(inputs=("file",), outputs=("output",)))

    exp = s.add_parser("export", help="write a distribution in the original .dat format")
    exp.add_argument("distribution", help="built-in name, .dat or .parquet")
    exp.add_argument("-o", "--output", required=True, help="output .dat")
    exp.add_argument("--compress", action="store_true", help="zlib-compress (level 9)")
    exp.set_defaults(func=_export, io=IO(inputs=("distribution",), outputs=("output",)))


def _show(args: argparse.Namespace) -> int:
    d = D.load(args.distribution)
    print(d.to_dat() if args.dat else d.describe(), end="" if args.dat else "\n")
    return 0


def _import(args: argparse.Namespace) -> int:
    d = D.load(args.file)
    if args.short_name is not None and args.short_name != d.short_name:
        d = D.renamed(d, args.short_name)
    D.write_parquet(d, args.output)
    print(f"wrote {args.output} ({d.short_name}: {d.n_states} states, {d.n_actions} actions)")
    return 0


def _export(args: argparse.Namespace) -> int:
    d = D.load(args.distribution)
    D.write_dat(d, args.output, compress=args.compress)
    print(f"wrote {args.output}")
    return 0
