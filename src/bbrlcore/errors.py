"""User-facing errors: one clear line naming the file, key or parameter at fault."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class BBRLError(Exception):
    """An error caused by bad input (file, parameter, configuration).

    The command line prints ``bbrl: error: <message>`` and exits with status 2; the
    message must name what is wrong (the file, key or parameter) on one line.
    """


class OutOfMemory(Exception):  # noqa: N818 (what the command line says, not a bug)
    """Memory ran out while building something (:func:`building`): the command line prints
    ``bbrl: error: out of memory while building ...`` on one line and exits with status 1.
    Not a :class:`BBRLError`: the input is not at fault, the machine's memory is."""


@contextmanager
def building(what: str, doing: str = "building") -> Iterator[None]:
    """Turn a :class:`MemoryError` raised inside into one :class:`OutOfMemory` line
    naming ``what`` was being built (``doing``: or computed, ...; the innermost of
    nested ones names it), with the allocator's message and the process's memory limit
    (:func:`memory_detail`).

    >>> try:
    ...     with building("the test set of DeepSea-70"):
    ...         raise MemoryError("Unable to allocate 7.3 GiB")
    ... except OutOfMemory as exc:
    ...     print(exc)
    out of memory while building the test set of DeepSea-70 (Unable to allocate 7.3 GiB)
    """
    try:
        yield
    except MemoryError as exc:
        raise OutOfMemory(f"out of memory while {doing} {what}{memory_detail(exc)}") from None


def memory_detail(exc: BaseException) -> str:
    """`` (the allocator's message)`` of a :class:`MemoryError`, on one line, or ``""``;
    then, when the process's address space is limited (``ulimit -v``, a scheduler's
    memory limit enforced so), the limit and what to do:
    ``; the address space is limited to 5.7 GiB (ulimit -v): raise the limit``."""
    text = " ".join(str(exc).split())
    out = f" ({text})" if text else ""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):  # (no such limit here)
        return out
    if soft != resource.RLIM_INFINITY and soft > 0:
        out += (f"; the address space is limited to {soft / 2**30:.1f} GiB (ulimit -v): "
                "raise the limit")
    return out
