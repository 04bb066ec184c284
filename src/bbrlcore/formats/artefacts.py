"""Parquet artefacts: atomic writes, recorded provenance, and clear errors on bad files.

Every artefact bbrl writes is a Parquet file whose key-value metadata holds, under the key
``bbrl``, a JSON object with at least ``kind`` (``distribution``, ``test-set``, ``agent``,
``run``, ``formula-set``, ...), ``bbrlcore_version`` and whatever produced it (parameters,
seeds). Files are written to a temporary name beside the target and renamed, so a killed
job never leaves a half-written artefact behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from ..errors import BBRLError

META_KEY = b"bbrl"

#: How to regenerate each kind of artefact (named in error messages).
REGENERATE = {
    "distribution": "regenerate it with `bbrl distribution import FILE.dat -o OUT.parquet`",
    "test-set": "regenerate it with `bbrl experiment new ... -o OUT.parquet`",
    "agent": "regenerate it with `bbrl train ... -o OUT.parquet`",
    "run": "regenerate it with `bbrl run ... -o OUT.parquet`",
    "formula-set": "regenerate it with `bbrl formulas generate ... -o OUT.parquet`",
    "merged": "regenerate it by re-running the workflow (delete the file first)",
    "summary": "regenerate it by re-running the workflow (delete the file first)",
    "aggregate": "regenerate it with `bbrl aggregate MERGED... -o DIR`",
}


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates files readable by owner only
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_artefact(
    path: str | os.PathLike[str],
    table: pl.DataFrame | pa.Table,
    kind: str,
    meta: dict[str, Any] | None = None,
) -> None:
    """Write ``table`` to ``path`` atomically, recording ``kind``, version and ``meta``."""
    record = {"kind": kind, "bbrlcore_version": __version__}
    record.update(meta or {})
    arrow = table.to_arrow() if isinstance(table, pl.DataFrame) else table
    existing = dict(arrow.schema.metadata or {})
    existing[META_KEY] = json.dumps(record, sort_keys=True).encode()
    arrow = arrow.replace_schema_metadata(existing)
    with atomic_path(path) as tmp:
        pq.write_table(arrow, tmp, compression="zstd")


def read_meta(path: str | os.PathLike[str], kind: str | None = None) -> dict[str, Any]:
    """Read only the bbrl metadata of an artefact, checking its kind."""
    p = Path(path)
    _check_exists(p, kind)
    try:
        schema = pq.read_schema(p)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise BBRLError(_corrupt_message(p, kind, exc)) from None
    return _meta_from_schema(p, schema.metadata, kind)


def read_artefact(
    path: str | os.PathLike[str], kind: str | None = None
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read an artefact; return its table and its bbrl metadata.

    Raises :class:`BBRLError` with a one-line message naming the file when it is missing,
    truncated, not Parquet, not a bbrl artefact, or an artefact of another kind.
    """
    p = Path(path)
    _check_exists(p, kind)
    try:
        arrow = pq.read_table(p)
    except Exception as exc:
        raise BBRLError(_corrupt_message(p, kind, exc)) from None
    meta = _meta_from_schema(p, arrow.schema.metadata, kind)
    return pl.from_arrow(arrow), meta  # type: ignore[return-value]


def _check_exists(p: Path, kind: str | None) -> None:
    if not p.exists():
        hint = f"; {REGENERATE[kind]}" if kind in REGENERATE else ""
        raise BBRLError(f"{p}: no such file{hint}")
    if p.is_dir():
        raise BBRLError(f"{p}: is a directory, expected a Parquet file")


def _corrupt_message(p: Path, kind: str | None, exc: Exception) -> str:
    hint = REGENERATE.get(kind or "", "delete it and regenerate it")
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{p}: not a readable Parquet file (truncated or foreign: {first}); {hint}"


def _meta_from_schema(p: Path, metadata: dict | None, kind: str | None) -> dict[str, Any]:
    raw = (metadata or {}).get(META_KEY)
    hint = REGENERATE.get(kind or "", "regenerate it with bbrl")
    if raw is None:
        raise BBRLError(f"{p}: a Parquet file but not a bbrl artefact (no 'bbrl' metadata); {hint}")
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError:
        raise BBRLError(f"{p}: corrupt bbrl metadata; {hint}") from None
    if kind is not None and meta.get("kind") != kind:
        raise BBRLError(
            f"{p}: is a {meta.get('kind')!r} artefact, expected a {kind!r} artefact; {hint}"
        )
    return meta
