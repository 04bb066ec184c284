"""bbrlcore: Benchmarking for Bayesian Reinforcement Learning.

A numba-accelerated successor of the BBRL C++ library (Castronovo, Ernst, Couëtoux and
Fonteneau, "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016).

Data flows one way through the package::

    distributions  ->  experiment (test sets)  ->  agents (train, then play)
                   ->  run tables  ->  stats  ->  report

The version recorded in every artefact is :data:`__version__`; the environment variable
``BBRL_VERSION_OVERRIDE`` replaces it (tests use it to simulate a core upgrade).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ._version import __version__ as _static_version

__version__: str = os.environ.get("BBRL_VERSION_OVERRIDE") or _static_version


def source_digest() -> str:
    """SHA-256 of the package's Python sources (names and contents), computed once: keys
    the caches derived from the code (numba's, the cost model's)."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        src = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for p in sorted(src.rglob("*.py")):
            h.update(str(p.relative_to(src)).encode())
            h.update(p.read_bytes())
        _SOURCE_DIGEST = h.hexdigest()
    return _SOURCE_DIGEST


_SOURCE_DIGEST: str | None = None


def cache_base() -> str:
    """``$XDG_CACHE_HOME/bbrlcore`` (default ``~/.cache/bbrlcore``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "bbrlcore")


def _default_numba_cache_dir() -> str:
    """A numba cache directory keyed by this source tree.

    numba's cache only checks the defining file's time stamp, not the modules a kernel
    calls into: keying the directory by the package's source content makes a changed
    helper module recompile everything instead of silently using a stale kernel.
    """
    return os.path.join(cache_base(), f"numba-{_static_version}-{source_digest()[:12]}")


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _default_numba_cache_dir()

__all__ = ["__version__"]
