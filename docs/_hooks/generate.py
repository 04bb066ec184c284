"""MkDocs hook: adds the pages generated from the code (``reference.py``) and the
changelog (``CHANGELOG.md`` at the repository's root) to the site at build time."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).parent))

import reference  # noqa: E402

ROOT = reference.ROOT


def on_files(files, config):
    for path, make in reference.PAGES.items():
        files.append(File.generated(config, path, content=make()))
    changelog = (ROOT / "CHANGELOG.md").read_text()
    files.append(File.generated(config, "changelog.md", content=changelog))
    return files


def on_serve(server, config, builder):  # `mkdocs serve`: rebuild when the sources change
    for path in ("src/bbrlcore", "workflow/schemas", "config.yaml", "CHANGELOG.md",
                 "examples"):
        server.watch(str(ROOT / path))
    return server
