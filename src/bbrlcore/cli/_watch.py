"""``bbrl run``, ``bbrl train`` and ``bbrl batch`` in a watched child process: a crash
names the plugin.

A compiled plugin that indexes an array out of bounds does not raise: it reads or writes
memory that is not its own, and the process may die of a segmentation fault, with no
error line (the shell's exit status 139, nothing on stderr, a workflow job's log ending
mid-way). The two commands that run a plugin's code therefore run as a child process of
the ``bbrl`` command, which only waits for it (:func:`watched`):

* the child keeps a note of what it is doing (:mod:`bbrlcore.crash`: the agent, its
  plugin, the test MDP, the step of a compiled trajectory);
* when it dies of a signal, the watcher prints one line from the note, e.g.
  ``bbrl: error: the process crashed (SIGSEGV, segmentation fault: ...) while playing
  agent oob (plugin oob.py:OOB) on GC-GC, test MDP 0, at step 3; run it again with
  NUMBA_BOUNDSCHECK=1 ...``, on stderr and at the end of the ``--log`` file, and exits
  with 128 + the signal's number, as a shell reports it;
* signals sent to the watcher (``SIGTERM`` from a scheduler, ``SIGINT``, ...) are passed
  on to the child, and the child dies with the watcher (Linux: ``PR_SET_PDEATHSIG``), so
  ``kill -9`` of the command leaves no process behind.

The child is a ``fork`` of the command made before anything heavy is imported: it costs
no second interpreter start. ``BBRL_WATCH=0`` runs the command in the process itself, as
does a platform without ``fork``: a crash then prints the Python traceback
(:mod:`faulthandler`, enabled for every command run as a script), which names no plugin.
(``PYTHONFAULTHANDLER=1`` adds that traceback in the child too.) The child's exit
status is the command's.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from typing import Any

from bbrlcore import crash

#: The commands that run a plugin's code (run: the trajectories; train: its offline
#: learning and the compilation of its loop; batch: the workflow's jobs, both).
WATCHED = ("run", "train", "batch")

#: The environment variable turning the watcher off (``0``).
ENV_OFF = "BBRL_WATCH"

#: Signals the watcher passes on to the child.
FORWARDED = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT",
                                               "SIGUSR1", "SIGUSR2", "SIGXCPU")
                  if hasattr(signal, n))

#: Signals that end the child without it being asked to: a crash (or the system killing
#: it), said in one line.
DEADLY = tuple(getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE",
                                            "SIGABRT", "SIGKILL", "SIGSYS")
               if hasattr(signal, n))


def enable_faulthandler() -> None:
    """Dump the Python traceback on a fatal signal, to stderr (the ``--log`` file once
    the command redirects it: the same file descriptor)."""
    try:
        faulthandler.enable(file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError):  # (no usable stderr)
        pass


def _log_of(argv: list[str]) -> str | None:
    """The ``--log FILE`` given before the command, if any."""
    args = iter(argv)
    for arg in args:
        if arg == "--log":
            return next(args, None)
        if arg.startswith("--log="):
            return arg.split("=", 1)[1]
        if not arg.startswith("-"):
            return None
    return None


def _die_with(parent: int) -> None:
    """In the child: die when ``parent`` (the watcher) dies (Linux ``PR_SET_PDEATHSIG``;
    elsewhere nothing), or at once if it already has."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the watcher died before the line above
        os._exit(128 + int(signal.SIGKILL))


def watched(argv: list[str], command: str | None) -> int | None:
    """Run ``bbrl argv`` in a watched child process when ``command`` runs a plugin's code:
    its exit status (128 + the signal's number when a signal ended it, after the one line
    saying so). None: the caller runs the command in this process (another command,
    ``BBRL_WATCH=0``, no way to start a child, or this process is the child).

    The child is a ``fork`` of this process, made before the command's modules (numpy,
    numba, polars) are imported and before any thread starts: it goes on with the
    command at once, with no second interpreter start."""
    if os.environ.get(crash.ENV) is not None:
        return None  # (a child of a watcher: it says what this one was doing)
    if command not in WATCHED or (os.environ.get(ENV_OFF, "1") == "0"
                                  or not hasattr(os, "fork")):
        enable_faulthandler()
        return None
    try:
        note = crash.new_note()
    except (OSError, ValueError, AttributeError):  # (no shared memory: in the process)
        enable_faulthandler()
        return None
    parent = os.getpid()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    try:
        pid = os.fork()
    except OSError:
        enable_faulthandler()
        return None
    if pid == 0:  # the child: the command, noting what it does
        os.environ[crash.ENV] = str(parent)
        crash.use(note)
        _die_with(parent)
        return None
    sent: set[int] = set()

    def forward(signum: int, _frame: Any) -> None:
        sent.add(signum)
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    saved = {}
    for s in FORWARDED:
        try:
            if signal.getsignal(s) is signal.SIG_IGN:
                continue  # (ignored here, so in the child too: a background job's SIGINT)
            saved[s] = signal.signal(s, forward)
        except (OSError, ValueError):  # (not the main thread: nothing to forward)
            pass
    try:
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:  # (reaped elsewhere: nothing more to know)
                status = 0
                break
        rc = os.waitstatus_to_exitcode(status)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        what, mdp, step = crash.read(note)
        note.close()
    if rc >= 0:
        return rc
    signum = -rc
    if signum in DEADLY and signum not in sent:
        _report(f"bbrl: error: {crash.describe(signum, what, mdp, step)}", _log_of(argv))
    return 128 + signum


def _report(line: str, log: str | None) -> None:
    """``line`` at the end of the ``--log`` file (when there is one) and on stderr."""
    if log:
        try:
            with open(log, "a", errors="backslashreplace") as fh:
                fh.write(line + "\n")
        except OSError:
            pass
        line = f"{line} (log: {log})"
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
