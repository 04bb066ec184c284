"""The ``bbrl`` command line: a thin shell over the package.

Each subcommand group lives in its own module of this package and exposes
``register(subparsers)``. Errors caused by bad input (:class:`~bbrlcore.errors.BBRLError`)
print one line ``bbrl: error: ...`` on stderr and exit with status 2; running out of
memory prints one line naming what was being built (:func:`bbrlcore.errors.building`, or
the package's function on the traceback) and exits with status 1.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback

from bbrlcore.errors import BBRLError, OutOfMemory, memory_detail

#: Subcommand modules, in the order ``bbrl --help`` lists them.
_SUBMODULES = (
    "distribution", "families", "experiment", "hardness", "agents", "batch", "formulas",
    "results",
    "aggregate", "curves", "report", "estimate", "init", "published", "demo", "warmup",
)


#: The module of each command: a command's process imports only its own module (each
#: module imports its part of the package; ``bbrl run`` needs no plan, families or report
#: code). ``tests/test_cli.py`` checks this table against the modules' parsers.
_COMMANDS = {
    "distribution": "distribution", "families": "families", "experiment": "experiment",
    "hardness": "hardness", "train": "agents", "run": "agents", "agents": "agents",
    "batch": "batch",
    "formulas": "formulas", "merge": "results", "summary": "results",
    "aggregate": "aggregate", "curves": "curves", "report": "report",
    "estimate": "estimate", "init": "init", "compare-published": "published",
    "demo": "demo", "warmup": "warmup",
}


def _command_of(argv: list[str]) -> str | None:
    """The command named on the line (``bbrl [--log FILE] COMMAND ...``), if any."""
    args = iter(argv)
    for arg in args:
        if arg == "--log":
            next(args, None)
        elif not arg.startswith("-"):
            return arg
        elif arg == "--version":
            return arg  # (answered by the parser before any command module is needed)
        elif not arg.startswith("--log="):
            return None  # --help or a mistake: the whole parser answers
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``bbrl`` parser: every command, or only ``command``'s module when it is known
    (the others are not imported; parsing that command's line is the same)."""
    from bbrlcore import __version__

    parser = argparse.ArgumentParser(
        prog="bbrl",
        description="Benchmarking for Bayesian Reinforcement Learning (bbrlcore "
        f"{__version__}).",
    )
    parser.add_argument("--version", action="version", version=f"bbrlcore {__version__}")
    parser.add_argument(
        "--log", metavar="FILE",
        help="write everything the command prints to FILE, and its final error line to "
        "stderr too (the workflow's jobs: the reason of a failure is seen even when FILE "
        "cannot be written)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    only = _COMMANDS.get(command) if command else None
    for name in _SUBMODULES:
        if command == "--version" or (only is not None and name != only):
            continue
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    return parser


#: Errors of a full, over-quota or read-only disk: one line naming the file.
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def _run(args: argparse.Namespace) -> tuple[int, str | None]:
    """Run the parsed command: its exit status and the line to print on stderr."""
    from bbrlcore.cli._io import check, fresh_dirs, remove_fresh

    fresh: list = []
    try:
        io = getattr(args, "io", None)
        if io is not None:
            check(io, args)
            fresh = fresh_dirs(io, args)
        try:
            rc = args.func(args)
        except BaseException:  # a failed command leaves no directory it created
            remove_fresh(fresh)
            raise
        if rc:
            remove_fresh(fresh)
    except BBRLError as exc:
        return 2, f"bbrl: error: {exc}"
    except OutOfMemory as exc:
        return 1, f"bbrl: error: {exc}"
    except MemoryError as exc:  # out of memory outside any `building` block
        return 1, f"bbrl: error: out of memory {_where(exc)}{memory_detail(exc)}"
    except KeyboardInterrupt:
        return 130, "bbrl: interrupted"
    except BrokenPipeError:  # `bbrl agents | head`
        sys.stderr.close()
        return 0, None
    except OSError as exc:  # a write outside the artefacts' own checks (figures, stdout)
        if exc.errno not in _DISK_ERRORS:
            raise
        what = f"{exc.filename}: cannot write" if exc.filename else "cannot write its output"
        return 2, f"bbrl: error: {what} ({exc.strerror})"
    return int(rc or 0), None


def _where(exc: BaseException) -> str:
    """Where a :class:`MemoryError` happened: the innermost function of the package on its
    traceback (``in bbrlcore.mdp.rows.scatter``)."""
    where = ""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        module = frame.f_globals.get("__name__", "")
        if module.startswith("bbrlcore.") and not module.startswith("bbrlcore.cli"):
            where = f"in {module}.{frame.f_code.co_name}"
    return where or "(in a library the command called)"


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr on a full disk, or closed
        pass


def _account(args: argparse.Namespace) -> None:
    """A line in the log of a workflow job (``bbrl --log FILE`` run as a script): the
    process's wall time since it started and its CPU (user + system, start-up included),
    which benchmarks/bench_workflow.py adds up. Written before the final error line, if
    any (that line stays the log's last)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    try:  # the process's start (clock ticks since boot) against the time since boot
        ticks = os.sysconf("SC_CLK_TCK")
        start = float(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        wall = f"{uptime - start / ticks:.2f} s wall, "
    except (OSError, ValueError, IndexError):
        wall = ""
    try:
        print(f"bbrl {args.command}: {wall}CPU {ru.ru_utime + ru.ru_stime:.2f} s",
              flush=True)
    except (OSError, ValueError):
        pass


def _logged(args: argparse.Namespace, account: bool = False) -> int:
    """``bbrl --log FILE ...``: everything the command prints (and any library's output)
    goes to FILE; the final error line also goes to the original stderr, so that the
    reason of a failure is seen even when FILE cannot be written (a full disk). With
    ``account`` (the command run as a script), the log also says the process's wall and
    CPU time (:func:`_account`)."""
    path = args.log
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as exc:
        _say(f"bbrl: error: --log {path}: cannot write ({exc.strerror})")
        return 2
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    saved = os.dup(1), os.dup(2)
    objects = sys.stdout, sys.stderr
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    log = open(fd, "w", buffering=1, errors="backslashreplace", closefd=True)  # noqa: SIM115
    sys.stdout = sys.stderr = log
    try:
        try:
            rc, line = _run(args)
        except Exception as exc:  # a bug: the traceback in the log, one line outside
            try:
                traceback.print_exc()
            except OSError:
                pass
            first = str(exc).splitlines()[0] if str(exc) else ""
            rc, line = 1, f"bbrl: error: unexpected {type(exc).__name__}: {first}"
        if account:
            _account(args)
        if line:
            _say(line)
        try:
            log.close()
        except OSError as exc:  # the last lines could not be written
            if not rc:
                rc, line = 2, f"bbrl: error: {path}: cannot write ({exc.strerror})"
    finally:
        sys.stdout, sys.stderr = objects
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    if line:
        _say(f"{line} (log: {path})")
    return rc


def main(argv: list[str] | None = None) -> int:
    """The ``bbrl`` command. Called without ``argv`` (the installed script, ``python -m
    bbrlcore.cli``), ``bbrl run``, ``train`` and ``batch`` run in a watched child process,
    so that a crash of a plugin's code is one line naming it (:mod:`bbrlcore.cli._watch`;
    ``BBRL_WATCH=0``: in this process); with ``argv`` (the Python API, tests), in this
    process."""
    script = argv is None
    if argv is None:
        argv = sys.argv[1:]
    command = _command_of(argv)
    if script:
        from bbrlcore.cli._watch import watched

        rc = watched(argv, command)
        if rc is not None:
            return rc
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if getattr(args, "log", None):
        return _logged(args, account=script)
    rc, line = _run(args)
    if line:
        _say(line)
    return rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
