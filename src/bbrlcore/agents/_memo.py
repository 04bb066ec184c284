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
    import numba

    from bbrlcore import cache_base, source_digest

    h = hashlib.sha256(f"{source_digest()}:{kind}:{np.__version__}:{numba.__version__}".encode())
    for a in args:
        if isinstance(a, np.ndarray):
            h.update(repr(("array", a.dtype.str, a.shape)).encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr((type(a).__name__, a)).encode())
    key = h.hexdigest()[:32]
    if key in _PROBES:
        return _PROBES[key]
    disk = os.environ.get("BBRL_COST_CACHE", "1") != "0"
    path = Path(cache_base()) / f"{kind}-{source_digest()[:12]}" / key
    value = None
    if disk:
        try:
            stored = json.loads(path.read_text())
            value = tuple(map(float, stored)) if isinstance(stored, list) else float(stored)
        except (OSError, ValueError, TypeError):
            value = None
    if value is None:
        out = fn(*args)
        value = tuple(map(float, out)) if isinstance(out, tuple) else float(out)
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
