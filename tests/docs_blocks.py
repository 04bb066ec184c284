"""The code blocks of the documentation (README.md and docs/**/*.md), as the tests run
them (tests/test_docs_examples.py, tests/test_plugins.py).

Conventions the pages follow (and tests/test_docs_examples.py enforces):

* ```` ```sh ```` blocks are run: every command line (continuations joined, trailing
  comments removed) starts with ``bbrl``, ``python`` (run for real) or ``snakemake`` (run
  as a dry run);
* ```` ```python ```` blocks are run as scripts; one whose first line is ``# file: NAME``
  is also written to ``NAME`` first (a plugin the next commands use);
* a ```` ```text ```` block right after a ``sh`` or ``python`` block is what it must
  print: each of its lines, ``...`` excepted, is found in the output, in order;
* ```` ```console ```` blocks show commands the tests cannot run (``make``, ``pip
  install``, ``source``), each line starting with ``$``;
* ``--8<-- "path"`` includes a file of the repository (pymdownx.snippets), as on the site.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
SNIPPET = re.compile(r'^[ \t]*--8<--[ \t]+"([^"]+)"[ \t]*$', re.M)
#: What a command line of a ``sh`` block may start with.
RUNNABLE = ("bbrl", "python", "snakemake")
#: What a ``console`` block may show (commands the tests cannot run).
CONSOLE_ONLY = ("make", "pip install", "source")


@dataclass
class Block:
    lang: str
    code: str
    #: what the block must print (the ``text`` block right after it), or None
    expected: str | None = None
    #: the file a ``python`` block is written to (``# file: NAME``), or None
    file: str | None = None
    #: the repository's file a block shows whole (``--8<-- "path"``), or None: it runs as
    #: that file (numba caches the functions of a file, not of a string)
    source: str | None = None


def pages() -> list[Path]:
    """README.md and every page of the site (the generated ones are not files)."""
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md")
                                        if "_hooks" not in p.parts)]


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def include_snippets(text: str) -> str:
    return SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text(), text)


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, in order, each with the output it must print."""
    text = path.read_text()
    out: list[Block] = []
    prev_end, prev = 0, None
    for m in FENCE.finditer(text):
        lang = (m.group("info").strip().split() or [""])[0]
        body = textwrap.dedent(m.group("body"))
        whole = SNIPPET.fullmatch(body.strip())
        code = include_snippets(body)
        adjacent = prev is not None and not text[prev_end:m.start()].strip()
        if lang == "text" and adjacent and prev.lang in ("sh", "python"):
            prev.expected = code
        else:
            first = code.splitlines()[0] if code.strip() else ""
            f = re.match(r"#\s*file:\s*(\S+)", first)
            block = Block(lang, code, file=f.group(1) if f else None,
                          source=whole.group(1) if whole else None)
            out.append(block)
            prev = block
        prev_end = m.end()
    return out


def command_lines(code: str) -> list[str]:
    """The command lines of a ``sh`` block: continuations joined, comments removed."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s+)#.*$", "", line).strip()
        if line:
            out.append(" ".join(line.split()))
    return out


def check_output(expected: str, output: str) -> str | None:
    """None when every line of ``expected`` (``...`` excepted) is found in ``output``'s
    lines in order (each within one line, spaces normalised); else what is missing."""
    lines = [" ".join(s.split()) for s in output.splitlines()]
    i = 0
    for want in expected.splitlines():
        want = " ".join(want.split())
        if not want or want == "...":
            continue
        while i < len(lines) and want not in lines[i]:
            i += 1
        if i == len(lines):
            return want
        i += 1
    return None
