"""What each command reads and writes, checked before it does any work.

Every subcommand declares its file arguments with :class:`IO` (``set_defaults(io=...)``);
:func:`check` runs before the command and refuses, with one line naming the path:

* an output that resolves to one of the command's inputs (``bbrl run --experiment e.parquet
  ... -o e.parquet`` would replace its input);
* two outputs that are the same file;
* an output that cannot be written (an existing directory, a path below a regular file, a
  directory that is not writable), so that ``bbrl run`` fails before playing a single
  trajectory rather than after all of them;
* an output directory (``bbrl report -o DIR``) where a file is, or that would overwrite one
  of the inputs.

:func:`fresh_dirs` records the directories a command is about to create (missing parents
of its outputs, and its missing output directories); when the command fails,
:func:`remove_fresh` removes them again, so that a refused command leaves no trace (an
output directory the command created is removed with what it holds; a created parent of
an output file only when empty, so that a checkpoint kept for a resume stays).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bbrlcore.errors import BBRLError
from bbrlcore.formats import artefacts

#: (argument label, path) pairs
Paths = list[tuple[str, str]]


@dataclass(frozen=True)
class IO:
    """File arguments of a command: attribute names of the parsed arguments holding input
    paths, output files and output directories (a value may be a path, a list of paths or
    None). ``extra_inputs`` finds inputs hidden in other arguments (``--param
    formula_set=FILE``). Inputs that are not existing files (built-in names) are ignored."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    outdirs: tuple[str, ...] = ()
    extra_inputs: Callable[[argparse.Namespace], Paths] | None = None
    #: what the command writes inside its output directories
    outdir_files: tuple[str, ...] = ("index.html", "report.tex", "report.pdf", "data",
                                     "figures")


#: Positional file arguments (shown in upper case in messages, as in ``--help``).
_POSITIONAL = {"file", "runs", "merged", "distribution", "set", "config", "results"}


def _label(attr: str) -> str:
    if attr in _POSITIONAL:
        return attr.upper()
    return "-o" if attr == "output" else "--" + attr.replace("_", "-")


def _values(args: argparse.Namespace, attrs: tuple[str, ...]) -> Paths:
    out: Paths = []
    for attr in attrs:
        v = getattr(args, attr, None)
        for item in v if isinstance(v, list) else [v]:
            if item is not None and str(item) != "":
                out.append((_label(attr), str(item)))
    return out


def check(io: IO, args: argparse.Namespace) -> None:
    """Refuse bad output paths before the command runs (see the module docstring)."""
    inputs = [(lab, p) for lab, p in _values(args, io.inputs) if Path(p).is_file()]
    if io.extra_inputs is not None:
        inputs += [(lab, p) for lab, p in io.extra_inputs(args) if Path(p).is_file()]
    outputs = _values(args, io.outputs)
    for i, (lab, out) in enumerate(outputs):
        artefacts.check_output_path(out)
        for ilab, inp in inputs:
            if artefacts.same_file(out, inp):
                raise BBRLError(
                    f"{lab} {out}: is the input {inp} ({ilab}); writing it would replace "
                    "the input: choose another output path"
                )
        for olab, other in outputs[:i]:
            if artefacts.same_file(out, other):
                raise BBRLError(f"{lab} {out}: the same file as {olab} {other}")
    for lab, d in _values(args, io.outdirs):
        artefacts.check_output_path(d, directory=True)
        written = [Path(d) / name for name in io.outdir_files]
        for ilab, inp in inputs:
            for w in written:
                pi, pw = Path(inp).resolve(), w.resolve()
                if pi == pw or pw in pi.parents:
                    raise BBRLError(
                        f"{lab} {d}: would overwrite the input {inp} ({ilab}); choose "
                        "another output directory"
                    )


@dataclass(frozen=True)
class Fresh:
    """A directory that did not exist before the command ran; ``owned``: an output
    directory of the command (removed with its contents on failure) rather than a parent
    of an output file (removed only when empty)."""

    path: Path
    owned: bool


def _topmost_missing(path: Path) -> Path | None:
    path = Path(path).absolute()
    if path.exists() or path.is_symlink():
        return None
    top = path
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    return top


def fresh_dirs(io: IO, args: argparse.Namespace) -> list[Fresh]:
    """The directories the command may create (see the module docstring)."""
    out: list[Fresh] = []
    for _, f in _values(args, io.outputs):
        top = _topmost_missing(Path(f).absolute().parent)
        if top is not None:
            out.append(Fresh(top, False))
    for _, d in _values(args, io.outdirs):
        top = _topmost_missing(Path(d))
        if top is not None:
            out.append(Fresh(top, True))
    return out


def remove_fresh(fresh: list[Fresh]) -> None:
    """Remove the directories of :func:`fresh_dirs` the failed command created (best
    effort: an error while removing is ignored)."""
    for f in fresh:
        if not f.path.is_dir() or f.path.is_symlink():
            continue
        if f.owned:
            shutil.rmtree(f.path, ignore_errors=True)
            continue
        for sub in sorted((p for p in f.path.rglob("*") if p.is_dir()), reverse=True):
            try:
                sub.rmdir()  # only when empty
            except OSError:
                pass
        try:
            f.path.rmdir()
        except OSError:
            pass
