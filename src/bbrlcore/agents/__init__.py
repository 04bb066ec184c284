"""The benchmark's algorithms: one module per agent, and the registry.

``ALGORITHMS`` maps each algorithm name (00-decisions §5) to its
:class:`~bbrlcore.agents.base.Algorithm`. Use :func:`get` to look one up with a clear
error for unknown names.
"""

from __future__ import annotations

import importlib

from ..errors import BBRLError
from .base import Algorithm

#: name -> module (relative to this package) defining ``ALGORITHM``.
_MODULES = {
    "random": "random_agent",
    "e-greedy": "egreedy",
    "soft-max": "softmax",
    "beb": "beb",
    "sboss": "sboss",
    "opps-ds": "opps_ds",
    "bamcp": "bamcp",
    "bfs3": "bfs3",
    "optimal": "optimal",
}

NAMES: tuple[str, ...] = tuple(_MODULES)


def get(name: str) -> Algorithm:
    """The :class:`Algorithm` called ``name``; :class:`BBRLError` if there is none."""
    mod = _MODULES.get(name)
    if mod is None:
        raise BBRLError(f"unknown algorithm {name!r} (known: {', '.join(NAMES)})")
    module = importlib.import_module(f"{__name__}.{mod}")
    return module.ALGORITHM


def available() -> list[str]:
    """Names of the algorithms whose module is installed."""
    out = []
    for name, mod in _MODULES.items():
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError:
            continue
        out.append(name)
    return out
