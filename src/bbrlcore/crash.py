"""What a process was doing when it crashed: the note a ``bbrl`` job leaves its watcher.

A compiled plugin that reads or writes out of bounds can end the process with a
segmentation fault: no Python exception, so no error line, only the shell's exit status
139. ``bbrl run`` and ``bbrl train`` therefore play in a child process that the command
watches (:mod:`bbrlcore.cli._watch`). The child keeps, in a small page of memory shared
with the watcher (:func:`new_note`, :func:`use`), what it is doing: which agent, which
plugin and which test MDP (:func:`doing`, :func:`at_mdp`), and the step a compiled
trajectory has reached (:func:`status`, the array the compiled loop writes its step
into). When the child dies of a signal, the watcher prints one line from the note
(:func:`read`, :func:`describe`), e.g.::

    bbrl: error: the process crashed (SIGSEGV, segmentation fault: ...) while playing
    agent oob (plugin /home/me/oob.py:OOB) on GC-GC, test MDP 0, at step 3; ...

The page is anonymous memory, no file: nothing is left behind whatever ends the
processes. Outside a watched child (the Python API, a test) every function here does
nothing and :func:`status` is a plain array: the note costs nothing where no one reads
it.
"""

from __future__ import annotations

import mmap
import signal
import struct
from typing import Any

#: The environment variable marking a watched child (its watcher's process id).
ENV = "BBRL_WATCHED_BY"
#: Bytes of the note: 4 int64 (the compiled loop's status: step, action, flag; the test
#: MDP), then the text of :func:`doing` (UTF-8, NUL-terminated).
SIZE = 4096
_TEXT = 32
_NO_MDP = -1

_note: Any = None  # (mmap, int64 view) in a watched child, else None


def new_note() -> mmap.mmap:
    """A new, empty note: a page of anonymous memory shared with the processes forked
    after it (the watcher reads what its child writes)."""
    mm = mmap.mmap(-1, SIZE, flags=mmap.MAP_SHARED)
    mm[:32] = struct.pack("=4q", 0, 0, 0, _NO_MDP)
    return mm


def use(note: mmap.mmap | None) -> None:
    """Write into ``note`` from now on (the watched child); None: nowhere."""
    global _note
    if note is None:
        _note = None
        return
    import numpy as np

    _note = (note, np.frombuffer(note, dtype=np.int64, count=4))


def status() -> Any:
    """The status array of a compiled trajectory (``int64[3]``: the step being played, an
    invalid action, its flag): a view of the note in a watched child, so that the
    watcher reads the step a crash happened at; a new array elsewhere."""
    import numpy as np

    if _note is None:
        return np.zeros(3, dtype=np.int64)
    view = _note[1][:3]
    view[:] = 0
    return view


def doing(text: str) -> None:
    """Record what the process is doing (``playing agent X (plugin REF) on GC-GC``);
    forgets the test MDP (:func:`at_mdp`) and the step."""
    if _note is None:
        return
    data = text.encode("utf-8", "replace")[: SIZE - _TEXT - 1]
    data = data.decode("utf-8", "ignore").encode() + b"\0"  # (no character cut in two)
    _note[1][:] = (0, 0, 0, _NO_MDP)
    _note[0][_TEXT:_TEXT + len(data)] = data


def at_mdp(index: int) -> None:
    """Record the test MDP being played (and the step back to 0)."""
    if _note is not None:
        _note[1][0] = 0
        _note[1][3] = index


def read(note: mmap.mmap) -> tuple[str, int | None, int | None]:
    """``(what, test MDP, step)`` from a note (``("", None, None)`` if nothing was
    noted); the test MDP and the step only while a test MDP was being played."""
    raw = bytes(note[:SIZE])
    step, _, _, mdp = struct.unpack_from("=4q", raw)
    what = raw[_TEXT:].split(b"\0", 1)[0].decode("utf-8", "replace")
    if not what or mdp == _NO_MDP:
        return what, None, None
    return what, mdp, step


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


def describe(signum: int, what: str, mdp: int | None, step: int | None) -> str:
    """The crash line: the signal, what the process was doing, and what to do.

    >>> describe(11, "playing agent oob (plugin oob.py:OOB) on GC-GC", 3, 7)[:70]
    'the process crashed (SIGSEGV, segmentation fault: a read or write outs'
    """
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    meaning = _MEANING.get(name)
    verb = "was killed" if name == "SIGKILL" else "crashed"
    head = f"the process {verb} ({name}{', ' + meaning if meaning else ''})"
    if not what:
        return f"{head} before it played any agent"
    where = f" while {what}"
    if mdp is not None:
        where += f", test MDP {mdp}" + (f", at step {step}" if step is not None else "")
    hint = ""
    if name == "SIGSEGV" and "plugin" in what:
        hint = ("; run it again with NUMBA_BOUNDSCHECK=1 to turn an out-of-bounds index of "
                "a compiled plugin into an IndexError naming the step")
    return head + where + hint
