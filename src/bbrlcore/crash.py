"""What a process was doing when it crashed: the note a ``bbrl`` job leaves its watcher,
and the outputs it leaves it to publish.

A compiled plugin that reads or writes out of bounds can end the process with a
segmentation fault: no Python exception, so no error line, only the shell's exit status
139. ``bbrl run``, ``bbrl train`` and ``bbrl batch`` therefore run in a child process
that the command watches (:mod:`bbrlcore.cli._watch`). The child keeps, in a small page
of memory shared with the watcher (:func:`new_note`, :func:`use`), what it is doing:
which agent, which plugin and which test MDP (:func:`doing`, :func:`at_mdp`), and where
a compiled trajectory is (:func:`status`, the array the compiled loop writes its step
and the hook it runs into). When the child dies of a signal, the watcher prints one line
from the note (:func:`read`, :func:`describe`), e.g.::

    bbrl: error: the process crashed (SIGSEGV, segmentation fault: ...) while playing
    agent oob (plugin /home/me/oob.py:OOB) on GC-GC: an out-of-bounds index in observe at
    test MDP 0, step 3 (found by playing it again with bounds checks, NUMBA_BOUNDSCHECK=1)

A memory fault may surface long after the write that caused it (at the next
allocation, at exit): the step the note holds when the process dies is then not where
the fault is. The watcher therefore names a place only when a diagnostic run of the same
command with numba's bounds checks (:func:`diagnosing`) stops at an out-of-bounds index
(:func:`error_at`, :func:`read_error`), and says the place is unknown otherwise.

**Outputs appear after a clean exit.** The tables and agents the child writes
(:func:`publish`, called by :func:`bbrlcore.formats.artefacts.atomic_path` for
:func:`~bbrlcore.formats.artefacts.write_artefact` ``(..., publish=True)``) stay under
their temporary names until the child has exited: the watcher renames them then, and
prints the lines that announce them (:func:`announce`: ``wrote r.parquet: ...``); if the
child dies of a signal, it removes them (a table computed by a process whose memory was
corrupted is not trusted), with the results a ``bbrl batch`` kept for a later attempt
(:func:`kept`) when the signal is a fault.

The page is anonymous memory and the list of outputs an unnamed temporary file: nothing
is left behind whatever ends the processes. Outside a watched child (the Python API, a
test, ``BBRL_WATCH=0``) every function here does nothing, :func:`publish` lets the
caller rename its file at once, and :func:`status` is a plain array: the note costs
nothing where no one reads it.
"""

from __future__ import annotations

import json
import mmap
import os
import signal
import struct
from pathlib import Path
from typing import Any

#: The environment variable marking a watched child (its watcher's process id).
ENV = "BBRL_WATCHED_BY"
#: The environment variable marking a diagnostic run (``1``): the same command played
#: again with numba's bounds checks after a crash, writing nothing (:func:`diagnosing`).
DIAGNOSING_ENV = "BBRL_DIAGNOSING"
#: Bytes of the note: 8 int64 (the compiled loop's status: step, invalid action, its
#: flag, hook, episode; then the test MDP of an error, the test MDP being played), the
#: text of :func:`doing` (UTF-8, NUL-terminated), then the error of :func:`error_at`.
SIZE = 8192
_INTS = 8
_TEXT = 64
_ERROR = 4096
#: Bytes of the text of :func:`doing` (the rest is cut, never inside a character).
TEXT_BYTES = _ERROR - _TEXT - 1
_NO_MDP = -1
_MDP, _ERROR_MDP = 7, 6

_note: Any = None  # (mmap, int64 view) in a watched child, else None
_outputs: int | None = None  # the watcher's list of outputs (a file descriptor)
_outputs_file: Any = None  # (its file object, kept open)
_staged: dict[str, Path] = {}  # target -> its temporary file, waiting for the exit


def new_note() -> mmap.mmap:
    """A new, empty note: a page of anonymous memory shared with the processes forked
    after it (the watcher reads what its child writes)."""
    mm = mmap.mmap(-1, SIZE, flags=mmap.MAP_SHARED)
    mm[:_INTS * 8] = struct.pack(f"={_INTS}q", *([0] * (_INTS - 2)), _NO_MDP, _NO_MDP)
    return mm


def use(note: mmap.mmap | None, outputs: Any = None) -> None:
    """Write into ``note`` from now on (the watched child), and list the outputs to
    publish in the file ``outputs`` (an open file shared with the watcher, kept open
    here); None: nowhere."""
    global _note, _outputs, _outputs_file
    _outputs_file = outputs
    _outputs = outputs.fileno() if outputs is not None else None
    _staged.clear()
    if note is None:
        _note = None
        return
    import numpy as np

    _note = (note, np.frombuffer(note, dtype=np.int64, count=_INTS))


def status() -> Any:
    """The status array of a compiled trajectory (``int64[5]``: the step being played, an
    invalid action, its flag, the hook being run and the episode k of
    ``episode_start``: :data:`bbrlcore.agents.api.HOOKS`): a view of the note in a
    watched child; a new array elsewhere."""
    import numpy as np

    if _note is None:
        return np.zeros(5, dtype=np.int64)
    view = _note[1][:5]
    view[:] = 0
    return view


def doing(text: str) -> None:
    """Record what the process is doing (``playing agent X (plugin REF) on GC-GC``);
    forgets the test MDP (:func:`at_mdp`) and the step."""
    if _note is None:
        return
    data = text.encode("utf-8", "replace")[:TEXT_BYTES]
    data = data.decode("utf-8", "ignore").encode() + b"\0"  # (no character cut in two)
    _note[1][:5] = 0
    _note[1][_MDP] = _NO_MDP
    _note[0][_TEXT:_TEXT + len(data)] = data


def at_mdp(index: int) -> None:
    """Record the test MDP being played (and the step back to 0)."""
    if _note is not None:
        _note[1][0] = 0
        _note[1][_MDP] = index


def read(note: mmap.mmap) -> tuple[str, int | None, int | None]:
    """``(what, test MDP, step)`` from a note (``("", None, None)`` if nothing was
    noted); the test MDP and the step only while a test MDP was being played."""
    raw = bytes(note[:SIZE])
    ints = struct.unpack_from(f"={_INTS}q", raw)
    what = raw[_TEXT:_ERROR].split(b"\0", 1)[0].decode("utf-8", "replace")
    if not what or ints[_MDP] == _NO_MDP:
        return what, None, None
    return what, ints[_MDP], ints[0]


def error_at(error: str, hook: str, place: str, mdp: int) -> None:
    """Record the error a trajectory stopped with (the exception's type name, the hook
    and place of :func:`bbrlcore.agents.api.hook_place`, the test MDP), which a
    diagnostic run reports to the watcher (:func:`read_error`)."""
    if _note is None:
        return
    data = "\0".join((error, hook, place)).encode("utf-8", "replace")[:SIZE - _ERROR - 1]
    _note[0][_ERROR:_ERROR + len(data) + 1] = data + b"\0"
    _note[1][_ERROR_MDP] = mdp


def read_error(note: mmap.mmap) -> tuple[str, str, str, str, int] | None:
    """``(what, error, hook, place, test MDP)`` of the error recorded by
    :func:`error_at` (``what``: what the process was doing then), or None."""
    raw = bytes(note[:SIZE])
    mdp = struct.unpack_from(f"={_INTS}q", raw)[_ERROR_MDP]
    parts = raw[_ERROR:].split(b"\0")
    if mdp == _NO_MDP or len(parts) < 3:
        return None
    error, hook, place = (p.decode("utf-8", "replace") for p in parts[:3])
    what = raw[_TEXT:_ERROR].split(b"\0", 1)[0].decode("utf-8", "replace")
    return what, error, hook, place, mdp


def diagnosing() -> bool:
    """Whether this process is a diagnostic run (:data:`DIAGNOSING_ENV`): it plays as
    the crashed command did, but publishes nothing and keeps nothing."""
    return os.environ.get(DIAGNOSING_ENV) == "1"


# ---------------------------------------------------------------------------------------
# Outputs published by the watcher


def _record(entry: dict[str, Any]) -> bool:
    """Append ``entry`` to the watcher's list of outputs (False: nowhere to)."""
    if _outputs is None:
        return False
    try:
        os.write(_outputs, (json.dumps(entry) + "\n").encode())
    except OSError:
        return False
    return True


def publish(tmp: Path, target: Path, created: list[Path] | tuple[Path, ...] = ()) -> bool:
    """Hand the finished file ``tmp`` over to the watcher, which renames it onto
    ``target`` once this process has exited cleanly (or removes it, and the directories
    ``created`` for it when empty, if the process dies of a signal). True when handed
    over (a diagnostic run: removed at once, nothing is published); False outside a
    watched child: the caller renames it now."""
    if diagnosing():
        Path(tmp).unlink(missing_ok=True)
        for d in created:  # (deepest first)
            try:
                Path(d).rmdir()
            except OSError:
                break
        return True
    entry = {"publish": [os.path.abspath(tmp), os.path.abspath(target)],
             "dirs": [os.path.abspath(d) for d in created]}
    if not _record(entry):
        return False
    _staged[os.path.abspath(target)] = Path(tmp)
    return True


def location(target: str | os.PathLike[str]) -> Path:
    """Where the file written for ``target`` is now: its temporary name while it waits
    for the watcher (:func:`publish`), else ``target`` itself."""
    return _staged.get(os.path.abspath(target), Path(target))


def kept(path: str | os.PathLike[str]) -> None:
    """Record a result kept for a later attempt (``bbrl batch --partial``): removed by
    the watcher if this process dies of a fault (its memory may have been corrupted),
    kept if it is killed from outside or exits."""
    _record({"kept": os.path.abspath(path)})


def announce(line: str) -> None:
    """Print ``line`` (``wrote r.parquet: ...``) on stdout once the outputs are
    published: by the watcher after this process has exited cleanly (in a watched
    child), at once elsewhere; never in a diagnostic run."""
    if diagnosing():
        return
    if not _record({"say": line}):
        print(line, flush=True)


def read_outputs(fd: int) -> list[dict[str, Any]]:
    """The entries a child listed in ``fd`` (:func:`publish`, :func:`kept`,
    :func:`announce`), in order; a line cut short (a child killed while writing it) is
    skipped."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0) if size else b""
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


# ---------------------------------------------------------------------------------------
# The crash line


#: What each deadly signal means, for the crash line.
_MEANING = {
    "SIGSEGV": "segmentation fault: a read or write outside the process's memory, e.g. a "
               "compiled plugin indexing an array out of bounds",
    "SIGBUS": "bus error: a bad memory access",
    "SIGILL": "illegal instruction",
    "SIGFPE": "arithmetic fault",
    "SIGABRT": "aborted",
    "SIGKILL": "from outside, often the system's when memory runs out",
}

#: Signals a process raises on itself for a fault of its own (its memory may be
#: corrupted): a diagnostic run looks for the place, and the results it kept are removed.
FAULTS = tuple(getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE",
                                            "SIGABRT", "SIGSYS") if hasattr(signal, n))


def describe(signum: int, what: str, mdp: int | None, step: int | None = None,
             found: tuple[str, str, str, str, int] | None = None, unknown: str = "") -> str:
    """The crash line: the signal, what the process was doing, and where the fault is.

    ``found`` (:func:`read_error` of a diagnostic run that stopped at an out-of-bounds
    index, an ``IndexError``) names the place; else ``unknown`` says why the place is
    not known (a plugin that crashed with a fault: no place is named from the note,
    which may be long past the fault); else, for a built-in agent or a signal from
    outside, the test MDP the process was at when it died. ``step`` is not shown (a
    compiled plugin's last step is not where a fault is).

    >>> describe(11, "playing agent oob (plugin oob.py:OOB) on GC-GC", 3)[:70]
    'the process crashed (SIGSEGV, segmentation fault: a read or write outs'
    """
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    meaning = _MEANING.get(name)
    verb = "was killed" if name == "SIGKILL" else "crashed"
    head = f"the process {verb} ({name}{', ' + meaning if meaning else ''})"
    if found is not None:
        f_what, _, hook, place, f_mdp = found
        return (f"{head} while {f_what}: an out-of-bounds index in {hook} at test MDP {f_mdp}, "
                f"{place.removeprefix('at ')} (found by playing it again with bounds "
                "checks, NUMBA_BOUNDSCHECK=1)")
    if not what:
        return f"{head} before it played any agent"
    line = f"{head} while {what}"
    if unknown:
        return f"{line}; where is unknown: {unknown}"
    if mdp is not None:
        line += f" (at test MDP {mdp} when it {'was killed' if name == 'SIGKILL' else 'died'})"
    return line


def plugin_fault(signum: int, what: str, mdp: int | None) -> bool:
    """Whether a crash is a fault of a plugin's code while it was played: what a
    diagnostic run looks for."""
    return signum in FAULTS and mdp is not None and "(plugin " in what
