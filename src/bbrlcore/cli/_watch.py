"""``bbrl run`` and ``bbrl train`` in a watched child process: a crash names the plugin.

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

``BBRL_WATCH=0`` runs the command in the process itself, as does any platform without
``fork`` and ``exec``: a crash then prints the Python traceback (:mod:`faulthandler`,
enabled for every command run as a script), which names no plugin. (``PYTHONFAULTHANDLER=1``
adds that traceback in the child too.) The child's exit status is the command's; the
cost is one more interpreter start.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
from typing import Any

from bbrlcore import crash

#: The commands that run a plugin's code (run: the trajectories; train: its offline
#: learning and the compilation of its loop).
WATCHED = ("run", "train")

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


def _pdeathsig() -> Any:
    """A ``preexec_fn`` making the child die with this process (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # (runs in the child between fork and exec: no imports)
        prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the watcher died before the line above
            os._exit(1)

    return preexec


def watched(argv: list[str], command: str | None) -> int | None:
    """Run ``bbrl argv`` in a watched child process when ``command`` runs a plugin's code:
    its exit status (128 + the signal's number when a signal ended it, after the one line
    saying so). None: the caller runs the command in this process (another command, the
    child itself, ``BBRL_WATCH=0``, or no way to start a child)."""
    if os.environ.get(crash.ENV) is not None:
        return None  # the child: its watcher says what it was doing if it crashes
    if command not in WATCHED or (os.environ.get(ENV_OFF, "1") == "0"
                                  or os.name != "posix" or not sys.executable):
        enable_faulthandler()
        return None
    try:
        note = crash.new_note()
    except OSError:
        enable_faulthandler()
        return None
    env = dict(os.environ)
    env[crash.ENV] = note
    try:
        child = subprocess.Popen([sys.executable, "-m", "bbrlcore.cli", *argv], env=env,
                                 preexec_fn=_pdeathsig())
    except OSError:
        os.unlink(note)
        enable_faulthandler()
        return None
    sent: set[int] = set()

    def forward(signum: int, _frame: Any) -> None:
        sent.add(signum)
        try:
            child.send_signal(signum)
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
        rc = child.wait()
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        what, mdp, step = crash.read(note)
        try:
            os.unlink(note)
        except OSError:
            pass
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
