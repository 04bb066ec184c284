"""``bbrl distribution new|show|import|export``."""

from __future__ import annotations

import argparse
from typing import Any

from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError, building
from bbrlcore.mdp import distributions as D


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("distribution", help="write, show, import and export distributions")
    s = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    new = s.add_parser(
        "new", help="write a problem family's test distribution or one of its priors",
        description="Write the test distribution of a problem family (bbrl families lists "
        "them) with the given parameters, or with --prior its accurate or uniform prior (an "
        "FDM). A test distribution that draws its structure per MDP (DeepSea, FrozenLake, "
        "MiniGrid-Empty, Taxi) is written as its accurate prior plus the family and its "
        "parameters: `bbrl experiment new --test FILE` draws from the family and `bbrl train "
        "--prior FILE` reads the prior; in config.yaml name such a family in experiments "
        "(test: {family: deepsea, size: 20}) rather than declaring its file under "
        "distributions:, which takes FDM files only.")
    new.add_argument("family", help="family id (deepsea, riverswim, ...: bbrl families)")
    new.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a parameter (repeatable; the others keep their defaults)")
    new.add_argument("--prior", choices=("accurate", "uniform"),
                     help="write this prior instead of the test distribution")
    new.add_argument("-o", "--output", required=True, help="output .parquet")
    new.set_defaults(func=_new, io=IO(outputs=("output",)))

    show = s.add_parser("show", help="describe a built-in distribution or a file")
    show.add_argument("distribution", help="GC, GDL, Grid, UGC, UGDL, UGrid, a problem "
                      "family's name (DeepSea-20, UDeepSea-20), a .dat or .parquet")
    show.add_argument("--dat", action="store_true", help="print the original .dat text")
    show.set_defaults(func=_show, io=IO(inputs=("distribution",)))

    imp = s.add_parser("import", help="convert an original .dat file to a Parquet artefact")
    imp.add_argument("file", help=".dat file (plain or zlib-compressed), a built-in name, a "
                     "problem family's name (DeepSea-20) or a distribution .parquet")
    imp.add_argument("--short-name", help="rename the distribution (its short name names "
                     "experiments: {test}-{prior})")
    imp.add_argument("-o", "--output", required=True, help="output .parquet")
    imp.set_defaults(func=_import, io=IO(inputs=("file",), outputs=("output",)))

    exp = s.add_parser("export", help="write a distribution in the original .dat format")
    exp.add_argument("distribution", help="built-in name, .dat or .parquet")
    exp.add_argument("-o", "--output", required=True, help="output .dat")
    exp.add_argument("--compress", action="store_true", help="zlib-compress (level 9)")
    exp.set_defaults(func=_export, io=IO(inputs=("distribution",), outputs=("output",)))


def family_params(items: list[str], family: str) -> dict[str, Any]:
    """``--param NAME=VALUE`` items as numbers (the family checks their ranges)."""
    from bbrlcore.cli.agents import parse_kv

    out: dict[str, Any] = {}
    for k, v in parse_kv(items).items():
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                raise BBRLError(f"--param {k}={v}: family {family}: expected a number") from None
    return out


def _new(args: argparse.Namespace) -> int:
    from bbrlcore.mdp import families as F

    spec = F.get_family(args.family)
    try:
        problem = F.make(spec.name, **family_params(args.param, spec.name))
    except BBRLError as exc:  # "family F: k=v: what" -> "--param k=v: family F: what"
        msg, head = str(exc), f"family {spec.name}: "
        if msg.startswith(head) and not msg.startswith(head + "unknown"):
            key, _, what = msg[len(head):].partition(": ")
            msg = f"--param {key}: {head}{what}"
        elif msg.startswith(head):
            msg = f"--param: {msg}"
        raise BBRLError(msg) from None
    what = "test distribution" if args.prior is None else f"{args.prior} prior"
    with building(f"the {what} of {problem.short_name}"):
        d = problem.test if args.prior is None else problem.prior(args.prior)
        D.write_parquet(d, args.output)
    drawn = "" if isinstance(d, D.FDMDistribution) else ", structure drawn per MDP"
    print(f"wrote {args.output} ({d.short_name}: {what} of family {spec.name}, "
          f"{d.n_states} states, {d.n_actions} actions{drawn})")
    return 0


def _show(args: argparse.Namespace) -> int:
    if args.dat:
        print(D.load(args.distribution).to_dat(), end="")
    else:
        print(D.load_test(args.distribution).describe())
    return 0


def _import(args: argparse.Namespace) -> int:
    d = D.load_test(args.file)
    if args.short_name is not None and args.short_name != d.short_name:
        d = D.renamed(d, args.short_name)
    D.write_parquet(d, args.output)
    print(f"wrote {args.output} ({d.short_name}: {d.n_states} states, {d.n_actions} actions)")
    return 0


def _export(args: argparse.Namespace) -> int:
    d = D.load(args.distribution)
    D.write_dat(d, args.output, compress=args.compress)
    t = D.load_test(args.distribution)
    note = "" if isinstance(t, D.FDMDistribution) else (
        f" (the accurate prior of {t.short_name}, whose test MDPs draw their structure: the "
        ".dat format holds FDM distributions only)")
    print(f"wrote {args.output}{note}")
    return 0
