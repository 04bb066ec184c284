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
