"""bbrlcore: Benchmarking for Bayesian Reinforcement Learning.

A numba-accelerated successor of the BBRL C++ library (Castronovo, Ernst, Couëtoux and
Fonteneau, "Benchmarking for Bayesian Reinforcement Learning", PLOS ONE 2016).

The package is a row of rooms, one per stage; data flows one way through them::

    mdp  ->  agents  ->  protocol  ->  analysis  ->  report
    (problems)  (algorithms)  (test sets, training, timed runs)  (tables, statistics)

    plan (configuration, cost model: what the workflow runs)   cli (the ``bbrl`` command)

``errors``, ``crash`` (what a watched command is doing, for the line of a crash),
``seeds`` (the seed tree) and ``formats`` (file formats, artefact I/O) are the
foundation every room stands on. ``src/bbrlcore/README.md`` is the map: what each
room holds, what flows in and out, and where a new algorithm, problem, metric or report
section goes.

The version recorded in every artefact is :data:`__version__`; the environment variable
``BBRL_VERSION_OVERRIDE`` replaces it (tests use it to simulate a core upgrade).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from bbrlcore._version import __version__ as _static_version

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


#: Environment variables of numba's settings that change the code it generates (numba's
#: cache index keys none of them: a kernel compiled without bounds checks would be
#: loaded again under ``NUMBA_BOUNDSCHECK=1``). When one is set, the default cache
#: directory is another one (:func:`_default_numba_cache_dir`); the compiled plugins'
#: kernels key on them wherever they are cached (``agents._kernel_cache``).
CODEGEN_ENV = (
    "NUMBA_BOUNDSCHECK", "NUMBA_OPT", "NUMBA_DEBUGINFO", "NUMBA_LOOP_VECTORIZE",
    "NUMBA_SLP_VECTORIZE", "NUMBA_ENABLE_AVX", "NUMBA_DISABLE_INTEL_SVML",
    "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_EXTEND_VARIABLE_LIFETIMES",
    "NUMBA_LLVM_REFPRUNE_PASS", "NUMBA_LLVM_REFPRUNE_FLAGS", "NUMBA_NRT_STATS",
    "NUMBA_DEBUG_NRT", "NUMBA_ENABLE_PROFILING",
)


def _default_numba_cache_dir() -> str:
    """A numba cache directory keyed by this source tree and numba's code-generation
    settings (:data:`CODEGEN_ENV`, when any is set).

    numba's cache only checks the defining file's time stamp, not the modules a kernel
    calls into: keying the directory by the package's source content makes a changed
    helper module recompile everything instead of silently using a stale kernel. Nor
    does it key the settings that change the compiled code: ``NUMBA_BOUNDSCHECK=1`` (or
    ``NUMBA_OPT=0``, ...) gets a directory of its own, so every kernel is compiled with
    it.
    """
    name = f"numba-{_static_version}-{source_digest()[:12]}"
    settings = [f"{k}={os.environ[k]}" for k in CODEGEN_ENV if os.environ.get(k, "")]
    if settings:
        name += "-" + hashlib.sha256("\n".join(settings).encode()).hexdigest()[:8]
    return os.path.join(cache_base(), name)


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _default_numba_cache_dir()


# ---------------------------------------------------------------------------------------
# Paths of the flat layout (0.1.0): still importable, as aliases of the new modules.

#: Old module path -> the module it now is (see CHANGELOG.md, "The package's rooms").
MOVED: dict[str, str] = {
    "bbrlcore.distributions": "bbrlcore.mdp.distributions",
    "bbrlcore.solvers": "bbrlcore.mdp.solvers",
    "bbrlcore.formulas": "bbrlcore.agents.formulas",
    "bbrlcore.experiment": "bbrlcore.protocol",
    "bbrlcore.gym": "bbrlcore.protocol.gym",
    "bbrlcore.results": "bbrlcore.analysis.results",
    "bbrlcore.stats": "bbrlcore.analysis.stats",
    "bbrlcore.aggregate": "bbrlcore.analysis.aggregate",
    "bbrlcore.published": "bbrlcore.analysis.published",
    "bbrlcore.cost": "bbrlcore.plan.cost",
    "bbrlcore.probe": "bbrlcore.plan.probe",
    "bbrlcore.workflow_support": "bbrlcore.plan.workflow",
}


class _MovedFinder:
    """Finds ``bbrlcore.distributions`` and the other old paths: the module is the new
    one itself (same object, so ``isinstance`` and module state are shared)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> object:
        if name not in MOVED:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(name, _MovedFinder)

    @staticmethod
    def create_module(spec: object) -> object:
        import importlib

        return importlib.import_module(MOVED[spec.name])  # type: ignore[attr-defined]

    @staticmethod
    def exec_module(module: object) -> None:
        return None


if not any(isinstance(f, type) and f.__name__ == "_MovedFinder" for f in sys.meta_path):
    sys.meta_path.append(_MovedFinder)  # type: ignore[arg-type]

__all__ = ["__version__"]
