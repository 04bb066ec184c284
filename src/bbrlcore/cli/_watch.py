"""``bbrl run``, ``bbrl train`` and ``bbrl batch`` in a watched child process: a crash
names the plugin and where its fault is, and leaves no output behind.

A compiled plugin that indexes an array out of bounds does not raise: it reads or writes
memory that is not its own, and the process may die of a segmentation fault, with no
error line (the shell's exit status 139, nothing on stderr, a workflow job's log ending
mid-way) — or go on, and die later (at the next allocation, at exit) after writing
tables computed with corrupted memory. The commands that run a plugin's code therefore
run as a child process of the ``bbrl`` command, which only waits for it
(:func:`watched`):

* the child keeps a note of what it is doing (:mod:`bbrlcore.crash`: the agent, its
  plugin, the test MDP, the step and hook of a compiled trajectory);
* the tables and agents it writes keep their temporary names until it has exited: the
  watcher renames them then, and prints the ``wrote ...`` lines (:func:`_publish`); if
  the child dies of a signal they are removed, with the results a ``bbrl batch`` kept
  for a later attempt when the signal is a fault (:func:`_discard`);
* when it dies of a fault of a plugin's code while playing, the watcher plays the same
  command again in a diagnostic child with numba's bounds checks
  (``NUMBA_BOUNDSCHECK=1``, in a numba cache of its own, writing nothing:
  :func:`_diagnose`), whose ``IndexError`` names the hook, the test MDP and the step;
* it prints one line, e.g. ``bbrl: error: the process crashed (SIGSEGV, segmentation
  fault: ...) while playing agent oob (plugin oob.py:OOB) on GC-GC: an out-of-bounds
  index in observe at test MDP 0, step 3 (found by playing it again with bounds checks,
  NUMBA_BOUNDSCHECK=1)`` — or ``...; where is unknown: ...`` when the diagnostic run
  finds none (the step the note held when the process died is not the fault's place) —
  on stderr and at the end of the ``--log`` file, and exits with 128 + the signal's
  number, as a shell reports it (``BBRL_DIAGNOSE=0``: no diagnostic run);
* signals sent to the watcher (``SIGTERM`` from a scheduler, ``SIGINT``, ...) are passed
  on to the child, and the child dies with the watcher (Linux: ``PR_SET_PDEATHSIG``), so
  ``kill -9`` of the command leaves no process behind.

The child is a ``fork`` of the command made before anything heavy is imported: it costs
no second interpreter start. ``BBRL_WATCH=0`` runs the command in the process itself, as
does a platform without ``fork``: a crash then prints the Python traceback
(:mod:`faulthandler`, enabled for every command run as a script), which names no plugin,
and outputs are written at once. (``PYTHONFAULTHANDLER=1`` adds that traceback in the
child too.) The child's exit status is the command's.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import tempfile
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
    command at once, with no second interpreter start. The outputs it writes are
    renamed to their paths here, once it has exited (:func:`_publish`); if it dies of a
    signal they are removed (:func:`_discard`) and, for a fault of a plugin's code, a
    diagnostic run looks for the place (:func:`_diagnose`)."""
    if os.environ.get(crash.ENV) is not None:
        return None  # (a child of a watcher: it says what this one was doing)
    if command not in WATCHED or (os.environ.get(ENV_OFF, "1") == "0"
                                  or not hasattr(os, "fork")):
        enable_faulthandler()
        return None
    try:
        note = crash.new_note()
        outputs = tempfile.TemporaryFile()  # noqa: SIM115 (closed below; no name on disk)
    except (OSError, ValueError, AttributeError):  # (no shared memory: in the process)
        enable_faulthandler()
        return None
    parent = os.getpid()
    _flush()
    try:
        pid = os.fork()
    except OSError:
        outputs.close()
        enable_faulthandler()
        return None
    if pid == 0:  # the child: the command, noting what it does
        os.environ[crash.ENV] = str(parent)
        crash.use(note, outputs)
        _die_with(parent)
        return None
    child: list[int | None] = [pid]  # (the diagnostic run's after it; None: none alive)
    sent: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        sent.append(signum)
        if child[0] is None:
            return
        try:
            os.kill(child[0], signum)
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
    log = _log_of(argv)
    try:
        rc = _wait(pid)
        child[0] = None  # (reaped: its number may be another process's now)
        entries = crash.read_outputs(outputs.fileno())
        if rc >= 0:
            return _publish(entries, rc, log)
        signum = -rc
        crashed = signum in DEADLY and signum not in sent
        _discard(entries, fault=crashed and signum in crash.FAULTS)
        if crashed:
            what, mdp, step = crash.read(note)
            found, unknown = None, ""
            if crash.plugin_fault(signum, what, mdp):
                found, unknown = _diagnose(argv, command, parent, child, sent)
            _report(f"bbrl: error: {crash.describe(signum, what, mdp, step, found, unknown)}",
                    log)
        return 128 + signum
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        note.close()
        outputs.close()


def _flush() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass


def _wait(pid: int) -> int:
    """The exit status of child ``pid`` (-N: ended by signal N)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:  # (reaped elsewhere: nothing more to know)
            status = 0
            break
    return os.waitstatus_to_exitcode(status)


def _publish(entries: list[dict[str, Any]], rc: int, log: str | None) -> int:
    """After the child has exited (status ``rc``): rename its outputs onto their paths,
    in the order it wrote them, then print the lines announcing them
    (:func:`bbrlcore.crash.announce`: on stdout, or at the end of the ``--log`` file).
    An output that cannot be renamed is one error line, the others are removed, and the
    status is 2 (if it was 0)."""
    failed = ""
    for e in entries:
        pub = e.get("publish")
        if not pub:
            continue
        tmp, target = pub
        if failed:
            _unlink(tmp)
            continue
        try:
            os.replace(tmp, target)
        except FileNotFoundError:  # (removed by the command itself: nothing to publish)
            continue
        except OSError as exc:
            failed = f"bbrl: error: {target}: cannot write ({exc.strerror or exc})"
            _unlink(tmp)
    if failed:
        _report(failed, log)
        return rc or 2
    for e in entries:
        if "say" in e:
            _say(str(e["say"]), log)
    return rc


def _discard(entries: list[dict[str, Any]], fault: bool) -> None:
    """After the child died of a signal: remove its outputs (then the directories
    created for them, when empty) and, after a ``fault``, the results it kept for a
    later attempt (its memory may have been corrupted before it computed them)."""
    dirs: list[str] = []
    for e in entries:
        pub = e.get("publish")
        if pub:
            _unlink(pub[0])
            dirs[:0] = e.get("dirs", ())  # (the last output's first: deepest first)
        elif fault and e.get("kept"):
            _unlink(e["kept"])
            dirs.insert(0, os.path.dirname(e["kept"]))
    for d in dirs:
        try:
            os.rmdir(d)  # (only when empty)
        except OSError:
            pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


#: The environment variable turning the diagnostic run after a crash off (``0``).
ENV_DIAGNOSE = "BBRL_DIAGNOSE"

_BOUNDSCHECK = "bounds checks (NUMBA_BOUNDSCHECK=1)"


def _diagnose(argv: list[str], command: str | None, parent: int,
              child: list[int | None], sent: list[int]
              ) -> tuple[tuple[str, str, str, str, int] | None, str]:
    """After a fault of a plugin's code: the same command played again in a child with
    numba's bounds checks (``NUMBA_BOUNDSCHECK=1``, in a numba cache directory of its
    own, removed afterwards: the usual cache is untouched), writing nothing
    (:func:`bbrlcore.crash.diagnosing`). ``(found, "")`` when it stops at an
    out-of-bounds index (the agent, hook, test MDP and step: the fault's place, where
    the crash itself may have come long after); else ``(None, why the place is
    unknown)``. Signals sent to the watcher meanwhile end it."""
    if os.environ.get(ENV_DIAGNOSE, "1") == "0":
        return None, (f"not looked for ({ENV_DIAGNOSE}=0); run it again with "
                      f"{_BOUNDSCHECK} to turn an out-of-bounds index of a compiled plugin "
                      "into an IndexError naming the hook, the test MDP and the step")
    import shutil

    try:
        note = crash.new_note()
        cache = tempfile.mkdtemp(prefix="bbrl-boundscheck-")
    except (OSError, ValueError):
        return None, "no diagnostic run could be started"
    n_sent = len(sent)
    try:
        _flush()
        try:
            pid = os.fork()
        except OSError:
            return None, "no diagnostic run could be started"
        if pid == 0:
            code = 0
            try:
                _diagnostic_run(argv, command, parent, note, cache)
            except BaseException:  # noqa: BLE001 - whatever it is, the error is noted
                code = 1
            finally:
                os._exit(code)
        child[0] = pid
        if len(sent) > n_sent:  # (a signal came before the line above: passed on now)
            with contextlib.suppress(OSError):
                os.kill(pid, sent[-1])
        rc = _wait(pid)
        child[0] = None
        if len(sent) > n_sent:
            return None, "the diagnostic run was interrupted"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return None, f"playing it again with {_BOUNDSCHECK} crashed too ({name})"
        err = crash.read_error(note)
        if err is not None and err[1] == "IndexError":
            return err, ""
        return None, (f"playing it again with {_BOUNDSCHECK} found no out-of-bounds index "
                      "(the fault may have shown long after its cause)")
    finally:
        note.close()
        shutil.rmtree(cache, ignore_errors=True)


def _diagnostic_run(argv: list[str], command: str | None, parent: int, note: Any,
                    cache: str) -> None:
    """In the diagnostic child: the command again, with bounds checks, output to
    nowhere, noting the error it stops with in ``note``."""
    for s in FORWARDED:  # (the watcher's handlers, copied by the fork: signals end it)
        with contextlib.suppress(OSError, ValueError):
            if signal.getsignal(s) is not signal.SIG_IGN:
                signal.signal(s, signal.SIG_DFL)
    os.environ.update({"NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": cache,
                       crash.ENV: str(parent), crash.DIAGNOSING_ENV: "1"})
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    crash.use(note)
    _die_with(parent)
    from bbrlcore.cli import _run, build_parser

    args = build_parser(command).parse_args(argv)
    _run(args)  # (not --log's file: the command's log stays as it is)
    _flush()


def _say(line: str, log: str | None) -> None:
    """``line`` at the end of the ``--log`` file (when there is one), else on stdout."""
    try:
        if log:
            with open(log, "a", errors="backslashreplace") as fh:
                fh.write(line + "\n")
        else:
            print(line, flush=True)
    except OSError:
        pass


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
