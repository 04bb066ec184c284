"""Debian tools the tests need (pdflatex, Chromium): installed with apt-get when missing.

:func:`ensure` returns the tool's path. Where it cannot be installed (no apt-get, not
root, no network) it raises :class:`Unavailable`; tests then skip with the reason, except
under ``CI=true``, where a missing tool is a failure (:func:`require`).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


class Unavailable(RuntimeError):
    """The tool cannot be installed here (the reason is the message)."""


def ensure(binary: str, packages: list[str]) -> str:
    found = shutil.which(binary)
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise Unavailable(f"{binary} missing and no apt-get")
    if os.geteuid() != 0:
        raise Unavailable(f"{binary} missing and not root: cannot apt-get install")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
            raise Unavailable(f"{' '.join(cmd)} failed: {tail[0]}")
    found = shutil.which(binary)
    if not found:
        raise Unavailable(f"installed {packages} but {binary} is still missing")
    return found


def require(binary: str, packages: list[str]) -> str:
    """:func:`ensure`, skipping the test where the tool cannot be installed (failing under
    CI=true, where it must be)."""
    try:
        return ensure(binary, packages)
    except Unavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {binary} is not available: {exc}")
        pytest.skip(str(exc))
