"""A griffe extension: bbrlcore's docstrings are reStructuredText (read by ``help()``,
doctest and ``bbrl agents``); the site renders them as Markdown. Two rewrites keep them
readable there, without touching the code:

* Sphinx roles (``:class:`~a.b.C```, ``:func:`f```, ``:data:`X```) become code spans
  (``C``, ``f``, ``X``);
* doctest examples (``>>>`` lines, their continuations and output) become ``pycon`` code
  blocks, where Markdown would otherwise read ``>>>`` as nested quotes;
* ``.. math::`` directives become ``tex`` code blocks (the site loads no script from the
  network to typeset them), ``:math:`` roles code spans;
* simple tables (``====  ====`` borders) become Markdown tables.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term|math):"
                  r"`(~?)([^`]+)`")
HEADER = re.compile(r"^\s*-{3,}\s*$")
BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")
MATH = re.compile(r"^(\s*)\.\. math::\s*(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")


def _role(m: re.Match) -> str:
    target = m.group(2)
    if "<" in target and target.endswith(">"):  # :ref:`text <target>`
        target = target.split("<", 1)[0].strip()
    elif m.group(1) == "~":
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def rewrite(text: str) -> str:
    """The docstring ``text`` as Markdown (see the module docstring; tests/test_docs_site.py)."""
    out: list[str] = []
    lines = text.splitlines()
    i, fenced, examples = 0, False, False
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            fenced = not fenced
        if i + 1 < len(lines) and line.strip() and HEADER.match(lines[i + 1]) and (
                len(lines[i + 1].strip()) >= len(line.strip())):
            # a numpy section: griffe reads the doctests of "Examples" itself
            examples = line.strip() == "Examples"
        m = MATH.match(line) if not fenced else None
        if m:
            indent, body = m.group(1), [m.group(2)] if m.group(2).strip() else []
            i += 1
            while i < len(lines) and (not lines[i].strip() or
                                      lines[i].startswith(indent + " ")):
                if lines[i].strip():
                    body.append(lines[i].strip())
                elif body:
                    break
                i += 1
            out += [f"{indent}```tex", *(f"{indent}{b}" for b in body), f"{indent}```"]
            continue
        if not fenced and BORDER.match(line):
            i = _table(lines, i, out)
            continue
        if not fenced and not examples and line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(f"{indent}```")
            continue
        out.append(line if fenced else ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


def _table(lines: list[str], i: int, out: list[str]) -> int:
    """A simple table starting at ``lines[i]`` (its top border) as a Markdown table;
    returns the index after its bottom border."""
    border = lines[i]
    starts = [m.start() for m in re.finditer(r"=+", border)]
    rows: list[list[str]] = []
    borders = 1
    i += 1
    while i < len(lines) and borders < 3:
        line = lines[i]
        i += 1
        if BORDER.match(line):
            borders += 1
            if borders == 2 and len(rows) == 1:
                continue  # the border under the header
            if borders == 2:  # a table without a header: this border ends it
                break
            continue
        if not line.strip():
            continue
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows.append(cells)
    if not rows:
        return i
    indent = border[: len(border) - len(border.lstrip())]
    out.append(f"{indent}| " + " | ".join(rows[0]) + " |")
    out.append(f"{indent}|" + "---|" * len(rows[0]))
    out += [f"{indent}| " + " | ".join(r) + " |" for r in rows[1:]]
    return i


class RestToMarkdown(griffe.Extension):
    """Rewrites every docstring griffe loads (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
