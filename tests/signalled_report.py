"""``bbrl report`` held at a chosen point until a signal arrives, for the signal tests of
tests/test_report.py: the signal then lands exactly there, however loaded the machine.

``python tests/signalled_report.py POINT MARKER ARGS...`` runs ``bbrl ARGS...`` in this
process; on reaching POINT it writes the file MARKER and waits (no CPU) for the test's
signal, for at most :data:`WAIT_S` seconds (then it fails: no signal came). Points:

* ``inputs`` — while the run tables are read, before the staging directory exists;
* ``python`` — in the report's own Python code, the staging directory being written;
* ``polars`` — in a Python function polars calls back (the signal's ``SystemExit``
  comes out of polars as a ``SystemExit`` whose code is polars' message);
* ``swallowed`` — in code that catches the signal's exception and goes on: the report
  runs to its end;
* ``moving`` — while the finished report is moved into place (the signal is held until
  the move is complete: the wait ends when the report has recorded the signal).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

#: The longest wait for the test's signal (seconds).
WAIT_S = 600.0


def _wait(marker: str, until=lambda: False) -> None:
    Path(marker).write_text("reached\n")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if until():
            return
        time.sleep(0.01)
    raise RuntimeError(f"no signal within {WAIT_S:.0f} s")


def _patch(point: str, marker: str) -> None:
    import polars as pl

    import bbrlcore.report as R
    from bbrlcore.analysis import results

    if point == "inputs":
        read = results.read_runs_with_sizes

        def held_read(*args, **kwargs):
            _wait(marker)
            return read(*args, **kwargs)

        results.read_runs_with_sizes = held_read
        return
    if point == "moving":
        move = R._move_into

        def held_move(stage, out):
            _wait(marker, until=lambda: "signum" in (R._TERM or {}))
            return move(stage, out)

        R._move_into = held_move
        return
    style_map = R.figures.style_map

    def held(families):
        if point == "python":
            _wait(marker)
        elif point == "polars":
            pl.DataFrame({"x": [1]}).select(pl.col("x").map_elements(
                lambda x: _wait(marker) or x, return_dtype=pl.Int64))
        elif point == "swallowed":
            try:
                _wait(marker)
            except BaseException:
                pass
        else:
            raise ValueError(f"unknown point {point!r}")
        return style_map(families)

    R.figures.style_map = held


def main(argv: list[str]) -> int:
    point, marker, *args = argv
    _patch(point, marker)
    from bbrlcore.cli import main as bbrl

    return bbrl(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
