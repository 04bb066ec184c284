"""The documentation site builds with no warning, and what it says is generated from the
code: every configuration key, command, algorithm and column (docs/_hooks/reference.py).
The short README points into it; the report's references to it resolve.

(The examples of the pages run in tests/test_docs_examples.py.)
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from docs_blocks import blocks

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "_hooks"


def _module(name: str):
    sys.path.insert(0, str(HOOKS))
    try:
        spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(HOOKS))


@pytest.fixture(scope="module")
def reference():
    return _module("reference")


# ---------------------------------------------------------------------------------------
# The build


def test_the_site_builds_strictly_offline_with_every_page(tmp_path):
    """``mkdocs build --strict`` (what ``make docs`` runs): a warning (a broken link or
    anchor, a page outside the navigation, a docstring griffe cannot read) fails it. The
    pages load nothing from the network (no web font, no remote script or style)."""
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                       cwd=ROOT, capture_output=True, text=True,
                       env={"PATH": str(Path(sys.executable).parent), "NO_MKDOCS_2_WARNING": "1",
                            "HOME": str(tmp_path)})
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "WARNING" not in log, log[-4000:]
    for page in ("index", "reference/config", "reference/cli", "reference/columns",
                 "reference/algorithms", "reference/api/agents-api", "changelog",
                 "tutorials/own-algorithm", "explanations/performance"):
        assert (site / f"{page}.html").is_file(), page
    assert "Unreleased" in (site / "changelog.html").read_text()
    assert "MyGreedyJit" in (site / "tutorials" / "own-algorithm.html").read_text()  # snippet
    api = (site / "reference" / "api" / "agents-api.html").read_text()
    assert "PythonAgent" in api and "trajectory_kernel" in api
    remote = re.compile(r"""<(?:link|script|img)[^>]+(?:href|src)=["'](?:https?:)?//""")
    for html in site.rglob("*.html"):
        text = html.read_text()
        assert not remote.search(text), f"{html}: {remote.search(text).group(0)}"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html


def test_make_docs_is_the_strict_build():
    r = subprocess.run(["make", "-n", "docs"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "mkdocs build --strict" in r.stdout
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    assert cfg["strict"] is True and cfg["theme"]["font"] is False
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in cfg["plugins"]]
    assert "privacy" not in plugins and "social" not in plugins
    assert "/site/" in (ROOT / ".gitignore").read_text().splitlines()


def test_the_docs_dependencies_are_an_extra_that_dev_includes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    docs = project["optional-dependencies"]["docs"]
    assert {re.split(r"[<>=\[]", d)[0] for d in docs} == {"mkdocs", "mkdocs-material",
                                                           "mkdocstrings"}
    assert set(docs) <= set(project["optional-dependencies"]["dev"])


# ---------------------------------------------------------------------------------------
# Generated reference pages


def test_every_configuration_key_has_a_description_and_its_default(reference):
    import jsonschema

    from bbrlcore.plan import DEFAULTS

    schema = yaml.safe_load(reference.SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    rows = reference.schema_rows(schema)
    assert {p for p, _ in rows} >= {"n_mdps", "experiments[].test", "experiments[].prior",
                                    "formula_sets.NAME.max_size", "distributions.NAME",
                                    "experiments[].test.family", "extended_algorithms"}
    missing = [p for p, node in rows if not node.get("description") and not (
        node.get("$ref") and schema["$defs"][node["$ref"].rsplit("/", 1)[-1]].get(
            "description"))]
    assert not missing, f"keys without a description in the schema: {missing}"
    assert set(schema["properties"]) == set(DEFAULTS)
    for key, node in schema["properties"].items():
        if "default" in node:
            assert node["default"] == DEFAULTS[key], key
    page = reference.config_page()
    for path, _ in rows:
        assert f"## `{path}`" in page, path
    for preset in yaml.safe_load((ROOT / "config.yaml").read_text())["presets"]:
        assert f"| `{preset}` |" in page, preset


def test_every_command_and_option_is_in_the_command_reference(reference):
    from bbrlcore.cli import build_parser

    page = reference.cli_page()
    commands = reference.commands(build_parser())
    names = {c for c, _, _ in commands}
    assert {"bbrl run", "bbrl train", "bbrl distribution new", "bbrl formulas import",
            "bbrl init", "bbrl aggregate"} <= names
    for full, _, parser in commands:
        assert f" `{full}`\n" in page, full
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"{opt}" in page.split(f" `{full}`\n", 1)[1], (full, opt)


def test_every_builtin_algorithm_is_in_the_algorithm_reference(reference):
    from bbrlcore.agents import BUILTINS, registry

    page = reference.algorithms_page()
    for name in BUILTINS:
        assert f"## `{name}`" in page, name
        for p in registry.get(name).params:
            assert f"| `{p.name}` |" in page.split(f"## `{name}`", 1)[1], (name, p.name)


def test_every_run_table_column_and_counter_has_a_description():
    from bbrlcore.agents import BUILTINS, registry
    from bbrlcore.analysis.curves import CURVE_COLUMN_DOCS
    from bbrlcore.analysis.results import SUMMARY_COLUMN_DOCS, SUMMARY_COLUMNS
    from bbrlcore.protocol.runner import COUNTER_DOCS, RUN_COLUMN_DOCS, RUN_COLUMNS

    assert list(RUN_COLUMN_DOCS) == list(RUN_COLUMNS)
    assert all(d.strip() for d in RUN_COLUMN_DOCS.values())
    counters = {c for name in BUILTINS for c in registry.get(name).counters}
    assert counters == set(COUNTER_DOCS)
    assert tuple(SUMMARY_COLUMN_DOCS) == SUMMARY_COLUMNS
    assert all(d.strip() for _, d in CURVE_COLUMN_DOCS.values())


def _types(path) -> dict[str, str]:
    out = {}
    for name, dtype in pl.read_parquet_schema(path).items():
        s = str(dtype)
        if s.startswith("List(Struct"):
            s = "List(Struct)"
        elif s.startswith("Array("):
            s = re.sub(r", shape=.*\)$", ")", s)
        out[name] = s
    return out


def test_the_column_reference_matches_real_artefacts(tmp_path, reference):
    """Every artefact kind, written for real: its columns and their types are those the
    column reference lists (optional columns, such as an agent's ``learned``, may be
    absent)."""
    from bbrlcore import protocol as E
    from bbrlcore.agents import formulas
    from bbrlcore.analysis import results
    from bbrlcore.formats import artefacts
    from bbrlcore.mdp import distributions as D
    from bbrlcore.mdp import hardness

    gc = D.builtin("GC")
    ts = E.new_test_set(gc, 3, 0.95, 10, seed=0)
    E.write_test_set(ts, tmp_path / "ts.parquet")
    runs = []
    for name, params in (("random", {}), ("optimal", {}),
                         ("sboss", {"epsilon": "1", "delta": "1"}),
                         ("formula", {"formula": "Q0"})):
        agent = E.train_agent(name, params, gc, progress=False)
        E.write_agent(agent, tmp_path / f"{name}-agent.parquet")
        runs.append(E.run_agent(ts, agent, progress=False))
    merged = results.merge_tables(runs)
    artefacts.write_artefact(tmp_path / "merged.parquet", merged, "merged", {})
    summary = results.summary_table(merged)
    artefacts.write_artefact(tmp_path / "summary.parquet", summary, "summary", {})
    from bbrlcore.analysis import curves as C

    C.write_tables(C.curves(merged, n_resamples=100, points=5), tmp_path / "curves")
    D.write_parquet(gc, tmp_path / "dist.parquet")
    formulas.write_parquet(formulas.FormulaSet(["X0", "X2 X0 DIV"]), tmp_path / "fs.parquet")
    h = hardness.hardness_table(ts)
    h.write_parquet(tmp_path / "h.parquet")
    hardness.hardness_summary(h).write_parquet(tmp_path / "hs.parquet")

    documented = {title: {c: t for c, t, _ in rows}
                  for title, _, rows in reference.column_tables()}
    optional = {"learned", "reward_variance", *documented["Run tables and merged tables"]}
    files = {"Run tables and merged tables": ["merged.parquet"],
             "Summary": ["summary.parquet"], "Learning curves": ["curves/curves.parquet"],
             "Test sets": ["ts.parquet"],
             "Agents": [f"{n}-agent.parquet" for n in ("random", "optimal", "sboss")],
             "Distributions": ["dist.parquet"], "Hardness": ["h.parquet"],
             "Hardness summary": ["hs.parquet"], "Formula sets": ["fs.parquet"]}
    assert set(files) == set(documented)
    for title, names in files.items():
        for name in names:
            real = _types(tmp_path / name)
            doc = documented[title]
            assert set(real) <= set(doc), (title, set(real) - set(doc))
            assert set(doc) - set(real) <= optional, (title, set(doc) - set(real))
            for col, t in real.items():
                assert doc[col] == t, (title, col, doc[col], t)
    assert np.isfinite(merged["discounted_return"].to_numpy()).all()


# ---------------------------------------------------------------------------------------
# The README, the citation, the report's references


def test_the_readme_is_short_and_points_into_the_documentation():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150, len(lines)
    assert "    $ make run" in lines and "    $ make test" in lines
    # .ci/run takes the test command from the README
    ci = subprocess.run(["sed", "-n", r"s/^    \$ \(make test.*\)$/\1/p", "README.md"], cwd=ROOT,
                        capture_output=True, text=True).stdout.split("\n")[0]
    assert ci == "make test"
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text, re.S)
    assert images and all((ROOT / i).is_file() for i in images), images
    links = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert len([t for t in links if t.startswith("docs/")]) >= 15
    for target in links:
        assert (ROOT / target).exists(), target
    assert "## Benchmark your own algorithm" in text
    own = text.split("## Benchmark your own algorithm", 1)[1].split("\n## ", 1)[0]
    code = [b for b in blocks(ROOT / "README.md") if b.lang in ("python", "sh")
            and b.code in own]
    assert 10 <= sum(len(b.code.strip().splitlines()) for b in code) <= 16
    assert "CITATION.cff" in text and "GPL-2.0-or-later" in text
    assert "doi:10.1371/journal.pone.0157088" in text


def test_the_citation_file_cites_bbrl_and_the_paper():
    import bbrlcore

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == bbrlcore.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["license"] == project["license"] == "GPL-2.0-or-later"
    assert cff["authors"] and cff["title"]
    paper = cff["references"][0]
    assert paper["doi"] == "10.1371/journal.pone.0157088" and paper["year"] == 2016
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()


def test_the_reports_references_to_the_documentation_resolve():
    """The report names documentation pages by their source path: each exists (and the
    site builds it, strict); no reference is left to a README section."""
    templates = ROOT / "src" / "bbrlcore" / "report" / "templates"
    found = []
    for f in templates.iterdir():
        text = f.read_text()
        assert not re.search(r"README[,\"]", text), f
        for target in re.findall(r"docs/[\w/-]+\.md", text):
            assert (ROOT / target).is_file(), (f.name, target)
            found.append(target)
        for page in re.findall(r"site/([\w/-]+)\.html", text):
            assert (ROOT / "docs" / f"{page}.md").is_file(), (f.name, page)
    assert "docs/explanations/fidelity.md" in found
    mkdocs = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert mkdocs["use_directory_urls"] is False  # docs/X.md is site/X.html


def test_docstrings_become_markdown_on_the_site():
    g = _module("griffe_rst")
    text = g.rewrite("See :class:`~a.b.C` and :func:`f`.\n\n>>> 1 + 1\n2\n\nEnd.\n\n"
                     ".. math:: z = 1\n\n====  =====\nname  what\n====  =====\n"
                     "``a``  first\n``b``  second\n====  =====\n")
    assert "See `C` and `f`." in text
    assert "```pycon\n>>> 1 + 1\n2\n```" in text
    assert "```tex\nz = 1\n```" in text
    assert "| name | what |\n|---|---|\n| ``a`` | first |\n| ``b`` | second |" in text
    # numpy "Examples" sections are left to griffe, which reads their doctests itself
    kept = g.rewrite("Examples\n--------\n>>> 1\n1\n")
    assert "```" not in kept
