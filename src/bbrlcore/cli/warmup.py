"""``bbrl warmup``: compile every built-in kernel into numba's cache, once.

Useful before parallel work that would otherwise compile the same kernels in every
process at once (a cluster run's first jobs on a shared cache)::

    bbrl warmup                 # every built-in algorithm and the analysis
    bbrl warmup --jobs 2        # the same over two processes
    bbrl warmup --algorithm psrl --algorithm ucrl2 --no-analysis
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bbrlcore.cli._io import IO
from bbrlcore.errors import BBRLError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("warmup", help="compile the built-in kernels into numba's cache")
    p.add_argument("--algorithm", action="append", default=None, metavar="NAME",
                   help="a built-in algorithm (repeat; default: every one)")
    p.add_argument("--no-analysis", action="store_true",
                   help="not the analysis' kernels (references, hardness, bootstrap)")
    p.add_argument("--jobs", type=int, default=1,
                   help="processes to share the work between (1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_warmup, io=IO())


def _warmup(args: argparse.Namespace) -> int:
    from bbrlcore.analysis.warmup import warm_analysis
    from bbrlcore.protocol.warmup import algorithm_names, warm_algorithms

    if args.jobs < 1:
        raise BBRLError(f"--jobs {args.jobs}: expected at least 1")
    names = algorithm_names(args.algorithm)
    t0 = time.perf_counter()
    say = (lambda what, s: None) if args.quiet else (
        lambda what, s: print(f"  {what:16s} {s:6.1f} s", file=sys.stderr, flush=True))
    analysis = not args.no_analysis
    if args.jobs == 1:
        warm_algorithms(names, report=say)
        if analysis:
            say("analysis", warm_analysis())
    else:  # round-robin over the processes, the analysis with the first
        shares = [names[i::args.jobs] for i in range(args.jobs)]
        procs = []
        for i, share in enumerate(shares):
            if not share and not (analysis and i == 0):
                continue
            cmd = [sys.executable, "-m", "bbrlcore.cli", "warmup"]
            cmd += [x for a in share for x in ("--algorithm", a)] or ["--algorithm", "random"]
            if not (analysis and i == 0):
                cmd.append("--no-analysis")
            if args.quiet:
                cmd.append("-q")
            procs.append(subprocess.Popen(cmd, env=dict(os.environ)))
        failed = [p.args for p in procs if p.wait() != 0]
        if failed:
            raise BBRLError(f"warmup: {len(failed)} of {len(procs)} processes failed "
                            "(their errors above)")
    if not args.quiet:
        what = f"{len(names)} algorithms" + (" and the analysis" if analysis else "")
        print(f"compiled {what} into {os.environ.get('NUMBA_CACHE_DIR', '')} in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0
