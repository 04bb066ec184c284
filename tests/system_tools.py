"""Debian tools the tests need (pdflatex, Chromium): installed with apt-get when missing.

:func:`ensure` returns the tool's path. An install held up by another one (the dpkg lock)
waits for it, up to :data:`LOCK_TIMEOUT_S`, rather than failing at once. Where the tool
cannot be installed (no apt-get, not root, no network) :func:`ensure` raises
:class:`Unavailable`; tests then skip with the reason, except under ``CI=true``, where a
missing tool is a failure (:func:`require`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest


class Unavailable(RuntimeError):
    """The tool cannot be installed here (the reason is the message)."""


#: How long an install waits for the lock of another one (apt-get, dpkg) before giving up.
LOCK_TIMEOUT_S = 600
#: What apt-get says when another process holds one of its locks.
_LOCKED = ("Could not get lock", "Unable to lock", "Unable to acquire the dpkg frontend lock")


def apt_command(*args: str) -> list[str]:
    """``apt-get ARGS`` waiting up to :data:`LOCK_TIMEOUT_S` for the dpkg lock held by
    another install, instead of failing at once (and the tests skipping)."""
    return ["apt-get", "-o", f"DPkg::Lock::Timeout={LOCK_TIMEOUT_S}", *args]


def apt_get(*args: str, timeout: float = 1200, error: type[Exception] | None = None) -> None:
    """Run :func:`apt_command`; a lock apt-get does not wait for by itself (the package
    lists' lock of ``apt-get update``) is retried until :data:`LOCK_TIMEOUT_S` has passed.
    Any other failure raises ``error`` (:class:`Unavailable`) with apt-get's last line."""
    error = error or Unavailable
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    cmd = apt_command(*args)
    while True:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=timeout + LOCK_TIMEOUT_S)
        if r.returncode == 0:
            return
        out = (r.stderr or "") + (r.stdout or "")
        if any(s in out for s in _LOCKED) and time.monotonic() < deadline:
            time.sleep(5)
            continue
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        raise error(f"{' '.join(cmd)} failed: {tail[0]}")


def apt_install(packages: list[str], *, timeout: float = 1200,
                error: type[Exception] | None = None) -> None:
    """``apt-get update`` then ``apt-get install`` of ``packages`` (see :func:`apt_get`)."""
    apt_get("update", "-qq", timeout=timeout, error=error)
    apt_get("install", "-y", "-qq", "--no-install-recommends", *packages, timeout=timeout,
            error=error)


def ensure(binary: str, packages: list[str]) -> str:
    found = shutil.which(binary)
    if found:
        return found
    if shutil.which("apt-get") is None:
        raise Unavailable(f"{binary} missing and no apt-get")
    if os.geteuid() != 0:
        raise Unavailable(f"{binary} missing and not root: cannot apt-get install")
    apt_install(packages)
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
