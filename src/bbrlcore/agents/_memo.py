"""Memoised probes: deterministic functions of arrays that the cost features of an agent
call (BFS3's tree probes, SBOSS's simulated rebuilds), kept in the process and on disk so
that every workflow invocation and job does not recompute them."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

#: Results of :func:`pure_probe` in this process (key -> value).
_PROBES: dict[str, Any] = {}


def pure_probe(kind: str, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, a float or a tuple of floats, for a **pure** function (its result
    depends only on ``args``, arrays and scalars, and on bbrlcore's sources: it seeds its
    own generators), memoised in the process and on disk
    (``cache_base()/<kind>-<sources>/<key>``, one small JSON file each, written
    atomically; floats are read back exactly), because the workflow's every invocation
    and job plans the same estimates: BFS3's probes of its tree search take 12 s of a
    full-configuration dry run otherwise, SBOSS's simulated rebuilds 1 s.
    ``BBRL_COST_CACHE=0`` keeps only the process's memo."""
    h = _hasher(kind)
    for a in args:
        if isinstance(a, np.ndarray):
            h.update(repr(("array", a.dtype.str, a.shape)).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr((type(a).__name__, a)).encode())

    def compute() -> Any:
        out = fn(*args)
        return tuple(map(float, out)) if isinstance(out, tuple) else float(out)

    def decode(stored: Any) -> Any:
        return tuple(map(float, stored)) if isinstance(stored, list) else float(stored)

    return _memoised(kind, h.hexdigest()[:32], compute, decode)


def memo_features(kind: str, key: str, fn: Any) -> dict[str, float]:
    """``fn()``, a dict of floats that depends only on ``key`` and on bbrlcore's sources,
    memoised in the process and on disk as :func:`pure_probe` (the cost model's work
    amounts of a built-in algorithm: a dry run plans the same ones every time, and
    computing them loads numba's kernels)."""
    h = _hasher(kind)
    h.update(key.encode())

    def compute() -> dict[str, float]:
        return {str(k): float(v) for k, v in fn().items()}

    def decode(stored: Any) -> dict[str, float]:
        if not isinstance(stored, dict):
            raise TypeError("not a mapping")
        return {str(k): float(v) for k, v in stored.items()}

    return dict(_memoised(kind, h.hexdigest()[:32], compute, decode))


def _hasher(kind: str) -> Any:
    import numba

    from bbrlcore import source_digest

    return hashlib.sha256(
        f"{source_digest()}:{kind}:{np.__version__}:{numba.__version__}".encode())


def _memoised(kind: str, key: str, compute: Any, decode: Any) -> Any:
    """The value stored under ``key`` (in this process, else on disk), else ``compute()``
    stored there (one small JSON file, written atomically)."""
    from bbrlcore import cache_base, source_digest

    if key in _PROBES:
        return _PROBES[key]
    disk = os.environ.get("BBRL_COST_CACHE", "1") != "0"
    path = Path(cache_base()) / f"{kind}-{source_digest()[:12]}" / key
    value = None
    if disk:
        try:
            value = decode(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            value = None
    if value is None:
        value = compute()
        if disk:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=key, suffix=".tmp")
                with os.fdopen(fd, "w") as fh:
                    fh.write(json.dumps(value))
                os.replace(tmp, path)
            except OSError:
                pass
    _PROBES[key] = value
    return value
