"""The ``bbrl`` command line: a thin shell over the package.

Each subcommand group lives in its own module of this package and exposes
``register(subparsers)``. Errors caused by bad input (:class:`~bbrlcore.errors.BBRLError`)
print one line ``bbrl: error: ...`` on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from bbrlcore.errors import BBRLError

#: Subcommand modules, in the order ``bbrl --help`` lists them.
_SUBMODULES = (
    "distribution", "families", "experiment", "hardness", "agents", "formulas", "results",
    "aggregate", "report", "estimate", "published", "demo",
)


def build_parser() -> argparse.ArgumentParser:
    from bbrlcore import __version__

    parser = argparse.ArgumentParser(
        prog="bbrl",
        description="Benchmarking for Bayesian Reinforcement Learning (bbrlcore "
        f"{__version__}).",
    )
    parser.add_argument("--version", action="version", version=f"bbrlcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _SUBMODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from bbrlcore.cli._io import check

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        io = getattr(args, "io", None)
        if io is not None:
            check(io, args)
        rc = args.func(args)
    except BBRLError as exc:
        print(f"bbrl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bbrl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `bbrl agents | head`
        sys.stderr.close()
        return 0
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
