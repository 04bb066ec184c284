"""The original BBRL text format (``.dat``), plain or zlib-compressed.

A serialized object is a chain of *sections*, base class first; each section is a line
with the class name, a line with a field count, then the fields, one per line. Matrices of
shape (nX, nU, nX) are written as nU·nX lines (outer loop over u, inner over x), each line
holding the nX values of row (x, u, ·) separated by TABs. Reals are written with 15
significant digits.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np

from bbrlcore.errors import BBRLError


def read_text(path: str | Path) -> str:
    """File content as text; zlib streams are decompressed first (any extension)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise BBRLError(f"{p}: no such file") from None
    except OSError as exc:
        raise BBRLError(f"{p}: cannot read ({exc.strerror})") from None
    try:
        raw = zlib.decompress(raw)
    except zlib.error:
        pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BBRLError(f"{p}: not a BBRL text file (not UTF-8 text nor a zlib stream)") from None


def fmt_real(v: float) -> str:
    """A real as the C++ stream at precision 15 writes it (``%.15g``)."""
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return format(v, ".15g")


#: Largest integer field accepted (sizes, indices, flags); larger ones are refused.
MAX_INT = 2**31 - 1


class Reader:
    """Sequential reader of BBRL fields with line numbers in its errors."""

    def __init__(self, text: str, source: str) -> None:
        self.lines = text.split("\n")
        self.pos = 0
        self.source = source

    def _fail(self, what: str) -> BBRLError:
        return BBRLError(f"{self.source}: line {self.pos}: {what}")

    def line(self) -> str:
        if self.pos >= len(self.lines):
            raise BBRLError(f"{self.source}: truncated file (ends at line {self.pos})")
        s = self.lines[self.pos]
        self.pos += 1
        return s.rstrip("\r")

    def section(self, name: str) -> int:
        got = self.line()
        if got != name:
            raise self._fail(f"expected section {name!r}, found {got!r}")
        return self.integer(f"field count of {name}")

    def integer(self, what: str) -> int:
        s = self.line().strip()
        try:
            v = int(s)
        except ValueError:
            try:
                f = float(s)
            except ValueError:
                raise self._fail(f"expected an integer ({what}), found {s!r}") from None
            if not math.isfinite(f) or f != int(f):
                raise self._fail(f"expected an integer ({what}), found {s!r}") from None
            v = int(f)
        if abs(v) > MAX_INT:
            raise self._fail(f"{what} {s!r} is out of range (|value| <= {MAX_INT})")
        return v

    def real(self, what: str) -> float:
        s = self.line().strip()
        try:
            return float(s)
        except ValueError:
            raise self._fail(f"expected a number ({what}), found {s!r}") from None

    def matrix(self, nX: int, nU: int, what: str) -> np.ndarray:
        """An (nX, nU, nX) block in the u-major line layout."""
        out = np.empty((nX, nU, nX))
        for u in range(nU):
            for x in range(nX):
                s = self.line()
                fields = s.split("\t")
                if len(fields) != nX:
                    raise self._fail(
                        f"{what} row (x={x}, u={u}) has {len(fields)} values, expected {nX}"
                    )
                try:
                    out[x, u, :] = [float(f) for f in fields]
                except ValueError:
                    raise self._fail(f"{what} row (x={x}, u={u}) holds a non-number") from None
        return out


def write_matrix(lines: list[str], m: np.ndarray) -> None:
    nX, nU, _ = m.shape
    for u in range(nU):
        for x in range(nX):
            lines.append("\t".join(fmt_real(v) for v in m[x, u, :]))
