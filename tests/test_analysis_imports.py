"""The analysis room imports in one direction: no module of ``bbrlcore.analysis`` imports,
directly or through others, a module that imports it back.

The graph is read from the source with :mod:`ast` (every ``import`` and ``from ...
import`` anywhere in a module, the function-level ones included: a cycle hidden in a
function is still a cycle), so a circle that comes back fails here before it fails at an
import order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bbrlcore.analysis

PACKAGE = "bbrlcore.analysis"
ROOT = Path(bbrlcore.analysis.__file__).parent


def _modules(root: Path = ROOT) -> dict[str, Path]:
    return {p.stem: p for p in sorted(root.glob("*.py")) if p.stem != "__init__"}


def _imported(tree: ast.AST, names: set[str]) -> set[str]:
    """The modules of ``names`` (analysis modules) that ``tree`` imports, anywhere."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[:2] == PACKAGE.split(".") and len(parts) > 2 and parts[2] in names:
                    out.add(parts[2])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from .x import y
                base = (node.module or "").split(".")[0]
                if node.level == 1 and base in names:
                    out.add(base)
                elif node.level == 1 and not base:
                    out |= {a.name for a in node.names if a.name in names}
                continue
            mod = (node.module or "").split(".")
            if mod[:2] != PACKAGE.split("."):
                continue
            if len(mod) > 2:
                if mod[2] in names:
                    out.add(mod[2])
            else:  # from bbrlcore.analysis import stats
                out |= {a.name for a in node.names if a.name in names}
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the analysis modules it imports (itself excluded)."""
    mods = _modules(root)
    names = set(mods)
    return {m: _imported(ast.parse(p.read_text()), names) - {m} for m, p in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None when it is acyclic."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_the_checker_sees_cycles_and_function_level_imports(tmp_path):
    (tmp_path / "a.py").write_text("from bbrlcore.analysis.b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from bbrlcore.analysis import c\n")
    (tmp_path / "c.py").write_text("def g():\n    import bbrlcore.analysis.a as A\n")
    (tmp_path / "d.py").write_text("from bbrlcore.analysis import stats\n")
    g = import_graph(tmp_path)
    assert g == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(g) == ["a", "b", "c", "a"]
    g["c"] = set()
    assert find_cycle(g) is None


def test_the_analysis_modules_import_each_other_in_one_direction():
    g = import_graph()
    assert {"curves", "aggregate", "exploration", "results", "selection"} <= set(g)
    cycle = find_cycle(g)
    assert cycle is None, "import cycle in bbrlcore.analysis: " + " -> ".join(cycle)


@pytest.mark.parametrize("low, high", [("exploration", "aggregate"), ("aggregate", "curves"),
                                       ("results", "selection"), ("choice", "results")])
def test_the_direction_is_the_documented_one(low, high):
    """The lower module never reaches the higher one (through any chain)."""
    g = import_graph()
    seen, todo = set(), [low]
    while todo:
        m = todo.pop()
        for n in g[m] - seen:
            seen.add(n)
            todo.append(n)
    assert high not in seen
