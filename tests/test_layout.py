"""The package's rooms (src/bbrlcore/README.md): data flows one way, and old paths still
import.

Each module belongs to a room; a room may import only itself and the rooms listed for it
below (never a room above it), so no two rooms use each other. The check reads every
``import`` of every module, including those inside functions.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import bbrlcore

PKG = Path(bbrlcore.__file__).resolve().parent

FOUNDATION = {"bbrlcore", "errors", "crash", "_version", "seeds", "formats"}
#: room -> the rooms it may import (besides itself and the foundation)
ALLOWED: dict[str, set[str]] = {
    "foundation": set(),
    "mdp": set(),
    "agents": {"mdp"},
    "protocol": {"mdp", "agents"},
    "analysis": {"mdp", "protocol"},
    "report": {"mdp", "protocol", "analysis"},
    "plan": {"mdp", "agents", "protocol"},
    "cli": {"mdp", "agents", "protocol", "analysis", "report", "plan"},
}


def room_of_module(name: str) -> str:
    parts = name.split(".")
    if parts[0] != "bbrlcore":
        raise ValueError(name)
    if len(parts) == 1 or parts[1] in FOUNDATION or not (PKG / parts[1]).is_dir():
        return "foundation"  # the package's face (__version__, ...) or a top-level module
    return parts[1]


def room_of_file(path: Path) -> str:
    rel = path.relative_to(PKG).parts
    if len(rel) == 1 or rel[0] in FOUNDATION:
        return "foundation"
    return rel[0]


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import (use bbrlcore.…)"
            if node.module and node.module.split(".")[0] == "bbrlcore":
                if node.module == "bbrlcore":  # from bbrlcore import mdp, ...
                    out += [(node.lineno, f"bbrlcore.{a.name}") for a in node.names]
                else:
                    out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names
                    if a.name.split(".")[0] == "bbrlcore"]
    return out


def test_rooms_import_only_the_rooms_below_them():
    assert set(ALLOWED) - {"foundation"} <= {p.name for p in PKG.iterdir() if p.is_dir()}
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        room = room_of_file(path)
        assert room in ALLOWED, f"{path}: module outside every room (add it to a room)"
        for line, mod in imports_of(path):
            if mod in bbrlcore.MOVED:
                bad.append(f"{path.relative_to(PKG)}:{line}: old path {mod} (now "
                           f"{bbrlcore.MOVED[mod]})")
                continue
            target = room_of_module(mod)
            if target in ("foundation", room) or target in ALLOWED[room]:
                continue
            bad.append(f"{path.relative_to(PKG)}:{line}: {room} imports {mod} ({target})")
    assert not bad, "\n".join(bad)


def test_the_top_level_holds_only_the_foundation():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == ["__init__.py", "_version.py", "crash.py", "errors.py", "seeds.py"]


@pytest.mark.parametrize("old", sorted(bbrlcore.MOVED))
def test_old_paths_still_import_as_the_new_modules(old):
    assert importlib.import_module(old) is importlib.import_module(bbrlcore.MOVED[old])


def test_old_from_imports_work():
    from bbrlcore.distributions import FDMDistribution

    from bbrlcore import distributions as D
    from bbrlcore import experiment as E
    from bbrlcore.mdp import distributions

    assert D is distributions and D.FDMDistribution is FDMDistribution
    assert E.new_test_set is importlib.import_module("bbrlcore.protocol").new_test_set


def test_paths_into_the_repository_survive_the_moves():
    """Modules that find files beside the package (the benchmarks' records that calibrate
    the cost model, the shipped tables, the report's templates) find them."""
    from bbrlcore.analysis import published
    from bbrlcore.plan import cost
    from bbrlcore.report import TEMPLATES

    root = PKG.parents[1]
    if (root / "benchmarks" / "results").is_dir():  # a source checkout
        assert cost.default_results_dir() == root / "benchmarks" / "results"
    assert published.PUBLISHED_FILE.is_file() and published.REFERENCE_FILE.is_file()
    assert (TEMPLATES / "index.html.j2").is_file()


def test_the_longest_first_test_files_exist():
    """``conftest.LONGEST_FIRST`` orders the test files for the parallel workers: a file
    renamed or removed would silently fall back to the usual order."""
    from pathlib import Path

    from conftest import LONGEST_FIRST

    here = Path(__file__).parent
    assert [n for n in LONGEST_FIRST if not (here / n).exists()] == []
