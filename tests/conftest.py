"""Shared fixtures. Tests may read ../shared (the original data) from the project root."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.exists():
        pytest.skip(f"{SHARED} not present")
    return SHARED


@pytest.fixture(scope="session")
def bbrl_cmd() -> list[str]:
    """The command line, run with the test interpreter."""
    return [sys.executable, "-m", "bbrlcore.cli"]


@pytest.fixture(scope="session")
def env_with_cache() -> dict[str, str]:
    """Environment for subprocesses: the same numba cache as this process."""
    import bbrlcore  # noqa: F401  (sets NUMBA_CACHE_DIR)

    return dict(os.environ)


#: The longest test files, longest first (measured in CI: workflow runs, the
#: documentation's examples, kills and resumes). ``make test`` gives each pytest-xdist
#: worker whole files in collection order (``--dist loadfile --no-loadscope-reorder``):
#: starting with these, the workers end together instead of one of them finishing the
#: documentation's examples alone.
LONGEST_FIRST = (
    "test_docs_examples.py", "test_workflow.py", "test_reliability.py", "test_bad_input.py",
    "test_families_integration.py", "test_rewards.py", "test_docs.py", "test_docs_site.py",
    "test_report.py",
    "test_report_browser.py", "test_cost.py", "test_families.py", "test_fidelity.py",
    "test_extended_agents.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    # a stable sort: the other files after these, in their usual order
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture
def isolated_registry():
    """Plugin references a test loads in this process (from a copy in its tmp_path) are
    forgotten afterwards: another test of the same worker may load the original file,
    whose algorithm has the same name."""
    from bbrlcore.agents import registry

    saved = dict(registry._REFERENCES)
    yield
    registry._REFERENCES.clear()
    registry._REFERENCES.update(saved)


@pytest.fixture(autouse=True, scope="module")
def _registry_per_test_file():
    """Each test file starts from the plugin references loaded before it: the parallel
    workers run the files in an order that depends on timing, and two files may load
    different files defining algorithms of the same name."""
    from bbrlcore.agents import registry

    saved = dict(registry._REFERENCES)
    yield
    registry._REFERENCES.clear()
    registry._REFERENCES.update(saved)
