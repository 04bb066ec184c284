"""Parquet artefacts: atomic writes, recorded provenance, and clear errors on bad files.

Every artefact bbrl writes is a Parquet file whose key-value metadata holds, under the key
``bbrl``, a JSON object with at least ``kind`` (``distribution``, ``test-set``, ``agent``,
``run``, ``formula-set``, ...), ``bbrlcore_version`` and whatever produced it (parameters,
seeds). Files are written to a temporary name beside the target and renamed, so a killed
job never leaves a half-written artefact behind.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from bbrlcore import __version__, crash
from bbrlcore.errors import BBRLError

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
    "curves": "regenerate it with `bbrl curves MERGED... -o DIR`",
}


def check_output_path(path: str | os.PathLike[str], *, directory: bool = False) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    The path must not be an existing directory (or, with ``directory=True``, an existing
    regular file); its first existing ancestor must be a writable directory (missing
    directories are created when the output is written). Raises :class:`BBRLError`
    naming the path.
    """
    target = Path(path)
    if directory:
        if target.exists() and not target.is_dir():
            raise BBRLError(f"{target}: cannot write the output directory: a file is there")
    elif target.is_dir():
        raise BBRLError(f"{target}: cannot write: is a directory")
    anc = target.parent if str(target.parent) else Path(".")
    while not anc.exists():
        if anc.is_symlink():  # a dangling link
            raise BBRLError(f"{target}: cannot write: {anc} is a broken symbolic link")
        if anc == anc.parent:
            break
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise BBRLError(f"{target}: cannot write: {anc} is not a directory")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise BBRLError(f"{target}: cannot write: directory {anc} is not writable")
    try:  # the only sure test (read-only or special filesystems, root's permissions)
        fd, probe = tempfile.mkstemp(prefix=".bbrl-probe.", dir=anc)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise BBRLError(f"{target}: cannot write in {anc} ({exc.strerror or exc})") from None


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file (after symbolic links; missing files compare
    by their resolved paths)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    return pa.resolve() == pb.resolve()


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, publish: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed, ``path`` is left untouched and the
    directories created for it are removed again (when empty). An
    operating-system error (no space, permission, not a directory, ...) becomes one
    :class:`BBRLError` naming ``path``.

    ``publish`` (a command's output: run tables, agents): in a watched child process
    (``bbrl run``, ``train``, ``batch``) the finished file keeps its temporary name
    until the process has exited cleanly, and its watcher renames it then
    (:func:`bbrlcore.crash.publish`): a process that crashes leaves no output behind.
    """
    target = Path(path)
    check_output_path(target)
    parent = target.parent if str(target.parent) else Path(".")
    created = [d for d in (parent, *parent.parents) if not d.exists()]  # deepest first

    def undo() -> None:  # the directories created here, when still empty
        for d in created:
            try:
                d.rmdir()
            except OSError:
                break

    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        undo()
        raise BBRLError(f"{target}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates files readable by owner only
        if not (publish and crash.publish(tmp_path, target, created)):
            os.replace(tmp_path, target)
    except OSError as exc:
        tmp_path.unlink(missing_ok=True)
        undo()
        raise BBRLError(f"{target}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        undo()
        raise


#: zstd levels of the kinds of artefact that are worth compressing harder than Arrow's
#: default (level 1): run and merged tables, which hold every step's reward (9: 5 % smaller
#: than level 1 on the paper's problems, for a few percent more writing time;
#: benchmarks/bench_rewards.py).
ZSTD_LEVELS = {"run": 9, "merged": 9}


#: The metadata of an artefact (its JSON record, in the Parquet footer) is refused above
#: this size when written, and read up to Thrift's largest sizes: the footers of
#: artefacts written before the distributions stored only their entries (an agent on
#: UTaxi-8 embedded 94 MB of dense prior) exceed the readers' default limit (100 MB).
MAX_META_BYTES = 1_000_000_000
THRIFT_LIMITS = {"thrift_string_size_limit": 2**31 - 1,
                 "thrift_container_size_limit": 2**31 - 1}


def write_artefact(
    path: str | os.PathLike[str],
    table: pl.DataFrame | pa.Table,
    kind: str,
    meta: dict[str, Any] | None = None,
    *,
    publish: bool = False,
) -> None:
    """Write ``table`` to ``path`` atomically, recording ``kind``, version and ``meta``
    (Parquet, zstd at the level :data:`ZSTD_LEVELS` gives ``kind``, else Arrow's).
    ``publish``: a command's output, renamed onto ``path`` only once a watched process
    has exited cleanly (:func:`atomic_path`)."""
    record = {"kind": kind, "bbrlcore_version": __version__}
    record.update(meta or {})
    arrow = table.to_arrow() if isinstance(table, pl.DataFrame) else table
    existing = dict(arrow.schema.metadata or {})
    existing[META_KEY] = json.dumps(record, sort_keys=True).encode()
    if len(existing[META_KEY]) > MAX_META_BYTES:  # a footer no reader would accept
        raise BBRLError(f"{path}: its metadata would hold {len(existing[META_KEY]) / 1e6:,.0f} "
                        f"MB (an embedded distribution of that many transitions), more than "
                        f"the {MAX_META_BYTES / 1e6:,.0f} MB a Parquet footer may hold")
    arrow = arrow.replace_schema_metadata(existing)
    with atomic_path(path, publish=publish) as tmp:
        pq.write_table(arrow, tmp, compression="zstd", compression_level=ZSTD_LEVELS.get(kind))


def read_meta(path: str | os.PathLike[str], kind: str | None = None) -> dict[str, Any]:
    """Read only the bbrl metadata of an artefact, checking its kind."""
    p = Path(path)
    _check_exists(p, kind)
    try:
        with pq.ParquetFile(p, **THRIFT_LIMITS) as f:
            schema = f.schema_arrow
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise BBRLError(_corrupt_message(p, kind, exc)) from None
    return _meta_from_schema(p, schema.metadata, kind)


def read_artefact(
    path: str | os.PathLike[str], kind: str | None = None, exclude: tuple[str, ...] = ()
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Read an artefact; return its table (without the ``exclude`` columns: a run table's
    per-step ``rewards`` are most of its bytes) and its bbrl metadata.

    Raises :class:`BBRLError` with a one-line message naming the file when it is missing,
    truncated, not Parquet, not a bbrl artefact, or an artefact of another kind.
    """
    p = Path(path)
    _check_exists(p, kind)
    try:
        # ParquetFile, not read_table: read_table imports pyarrow.dataset (0.7 s of every
        # command's start-up) for what one file needs nothing of
        with pq.ParquetFile(p, **THRIFT_LIMITS) as f:
            names = f.schema_arrow.names
            arrow = f.read(columns=[c for c in names if c not in exclude] if exclude
                           else None)
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
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BBRLError(f"{p}: corrupt bbrl metadata (not JSON); {hint}") from None
    if not isinstance(meta, dict):
        raise BBRLError(f"{p}: corrupt bbrl metadata (a JSON {type(meta).__name__}, "
                        f"expected an object); {hint}")
    if kind is not None and meta.get("kind") != kind:
        raise BBRLError(
            f"{p}: is a {meta.get('kind')!r} artefact, expected a {kind!r} artefact; {hint}"
        )
    version = meta.get("bbrlcore_version")
    if not isinstance(version, str) or not version:
        raise BBRLError(f"{p}: corrupt bbrl metadata (no bbrlcore_version); {hint}")
    warn_version(p, version)
    return meta


_WARNED: set[tuple[str, str]] = set()


def warn_version(p: str | os.PathLike[str], version: str) -> None:
    """The rule for artefacts of another bbrlcore version: **accept with a warning** naming
    both versions (once per file), on stderr. Nothing is silently mixed: a run table
    records the version that ran it, and merging refuses run tables of different versions
    within an experiment (:func:`bbrlcore.analysis.results.merge_tables`)."""
    if version == __version__:
        return
    key = (str(Path(p).resolve()), version)
    if key in _WARNED:
        return
    _WARNED.add(key)
    print(
        f"bbrl: warning: {p} was written by bbrlcore {version}; this is bbrlcore "
        f"{__version__} (regenerate it if the difference matters)",
        file=sys.stderr,
    )


_MISSING: Any = object()


class MetaReader:
    """Typed access to an artefact's metadata: a missing key or a value of the wrong JSON
    type is one :class:`BBRLError` naming the file and the key.

    Examples
    --------
    >>> m = MetaReader("x.parquet", {"gamma": 0.95, "seed": "7"}, None)
    >>> m.float("gamma", lo=0.0, hi=1.0)
    0.95
    >>> m.int("seed")
    Traceback (most recent call last):
    ...
    bbrlcore.errors.BBRLError: x.parquet: metadata 'seed' must be an integer, got '7'; ...
    """

    def __init__(self, path: str | os.PathLike[str], meta: dict[str, Any],
                 kind: str | None) -> None:
        self.path = Path(path)
        self.meta = meta
        self.hint = REGENERATE.get(kind or "", "regenerate it with bbrl")

    def fail(self, key: str, msg: str) -> BBRLError:
        return BBRLError(f"{self.path}: metadata {key!r} {msg}; {self.hint}")

    def _get(self, key: str, default: Any) -> Any:
        if key in self.meta:
            return self.meta[key]
        if default is _MISSING:
            raise self.fail(key, "is missing")
        return default

    def int(self, key: str, *, lo: int | None = None, hi: int | None = None,
            default: Any = _MISSING) -> int:
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(key, f"must be an integer, got {_show(v)}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.fail(key, f"must be in [{lo}, {hi}], got {v}")
        return v

    def float(self, key: str, *, lo: float | None = None, hi: float | None = None,
              lo_open: bool = False, default: Any = _MISSING) -> float:
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(key, f"must be a number, got {_show(v)}")
        f = float(v)
        if not math.isfinite(f):
            raise self.fail(key, f"must be finite, got {f}")
        if (lo is not None and (f < lo or (lo_open and f == lo))) or (
                hi is not None and f > hi):
            left = "(" if lo_open else "["
            raise self.fail(key, f"must be in {left}{lo}, {hi}], got {f:g}")
        return f

    def str(self, key: str, *, default: Any = _MISSING) -> str:
        v = self._get(key, default)
        if not isinstance(v, str):
            raise self.fail(key, f"must be a string, got {_show(v)}")
        return v

    def dict(self, key: str, *, default: Any = _MISSING) -> dict[str, Any]:
        v = self._get(key, default)
        if not isinstance(v, dict):
            raise self.fail(key, f"must be a JSON object, got {_show(v)}")
        return v


def _show(v: Any) -> str:
    s = json.dumps(v) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."
