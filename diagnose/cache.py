"""Atomic, checksummed on-disk array caches: whole arrays by key (:class:`ArrayCache`) and rows by key
(:class:`RowStore`).

File format (:func:`save_arrays`): one or more standard ``.npy`` segments (the first one readable by plain
``np.load``), then a trailer: a JSON object, its length (8 bytes, little-endian) and the 8 magic bytes
:data:`TRAILER_MAGIC`. The JSON holds the format version, where each array starts, the caller's metadata (the cache
key, model identity, width, row count, ...) and a BLAKE2b digest (16 bytes) of every payload byte (``.npy`` headers
and data) followed by the canonical JSON of everything else in the trailer. :func:`load_arrays` recomputes the
digest and compares the metadata with what the caller expects, so flipped bits, swapped rows, a truncated file, an
edited header or a file renamed from another key are all caught. Files are only ever read back with
``allow_pickle=False`` semantics (object dtypes are refused): a cache file can never execute code.

Every file is written whole to a temporary file (``.tmp-*``) in the same directory, flushed, fsynced and moved into
place with ``os.replace`` (atomic on POSIX and Windows), so a reader sees either the old file or the new one, never
half of one, and a writer killed mid-write leaves only a temporary file that no reader opens. The digest is computed
from the bytes in memory before they reach the disk. Concurrent writers of the same key: the last ``os.replace`` wins
(both wrote the same values, since the key names the inputs).

A file that does not verify (absent trailer -- e.g. written by an older version --, digest mismatch, unexpected
metadata, truncated, garbage, wrong dtype or shape, rows that fail the ``validate`` hook) is reported once -- as a
``cache_corrupt`` warning in the :class:`~diagnose.data.ValidationReport` passed in, or as a :class:`CacheWarning`
through :mod:`warnings` when there is none -- deleted, and treated as a miss, so the values are recomputed and
written again. A cache that cannot be written (read-only disk, disk full) is reported as ``cache_write_failed``
and the work goes on without it. A cache problem never stops a diagnosis.

Where the caches live: :func:`default_cache_root` is ``$DIAGNOSE_CACHE_DIR`` when set, else
``platformdirs.user_cache_dir("diagnose")`` (``~/.cache/diagnose`` on Linux). Each user of the cache takes a
sub-folder (``embeddings/``, ``projections/``, ...).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import struct
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.data import ValidationReport

CACHE_ENV_VAR = "DIAGNOSE_CACHE_DIR"


class CacheWarning(UserWarning):
    """A cache file was unreadable or could not be written; the values are recomputed."""


def default_cache_root() -> Path:
    """``$DIAGNOSE_CACHE_DIR`` if set and non-empty, else ``platformdirs.user_cache_dir("diagnose")``."""
    env = os.environ.get(CACHE_ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("diagnose"))


def text_key(text: str) -> str:
    """Content key of a text: the hex SHA-1 of its UTF-8 bytes (40 ASCII characters).

    Lone surrogates (possible in text decoded from broken JSON) are kept with ``surrogatepass`` so every ``str`` has
    a key and different strings never share one.
    """
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def slug(name: str, max_len: int = 48) -> str:
    """A filesystem-safe, readable prefix of ``name`` (letters, digits, ``-_.``), for folder names."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")
    return s[:max_len] or "x"


def _warn(report: ValidationReport | None, code: str, message: str, path: Path | None) -> None:
    if report is not None:
        report.add(code, message, severity="warning", file=str(path) if path else None)
    else:
        where = f"{path}: " if path else ""
        warnings.warn(f"{where}{message}", CacheWarning, stacklevel=3)


def report_corrupt(report: ValidationReport | None, path: Path, reason: str) -> None:
    """Report a cache file that could not be used (a ``cache_corrupt`` warning, or a :class:`CacheWarning` without
    a report) and delete it, so its values are recomputed and written again."""
    _warn(
        report,
        "cache_corrupt",
        f"cache file was unreadable or failed its check ({reason}); it was deleted and its values are recomputed",
        path,
    )
    _unlink(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:  # e.g. Windows refuses to delete a file that is memory-mapped; a later run retries
        pass


# -- checked file format ---------------------------------------------------------------------------------------

#: Version of the checked layout (trailer fields and digest rule); a file of another version does not verify.
CHECK_FORMAT = 1
#: Last 8 bytes of every checked cache file.
TRAILER_MAGIC = b"DGNCHK01"
_TAIL = struct.Struct("<Q8s")  # JSON length, magic
_MAX_TRAILER = 1 << 24  # a trailer lists a few arrays and short metadata; more means garbage
_ALIGN = 64  # segments start on 64-byte boundaries, like the data inside an .npy


class CacheCorrupt(Exception):
    """Raised inside this module when a cache file does not verify; the message is the reason reported."""


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def checksum(*parts: bytes | memoryview | np.ndarray) -> str:
    """Hex BLAKE2b digest (16 bytes) of the concatenated ``parts``: the hash every cache file is checked with."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(p)
    return h.hexdigest()


def json_checksum(obj: Any) -> str:
    """:func:`checksum` of the canonical JSON of ``obj`` (sorted keys, no spaces, ASCII): for small JSON files."""
    return checksum(_canonical(obj))


def _npy_header(array: np.ndarray) -> bytes:
    """The ``.npy`` header (magic, version, dict, padding) of a C-contiguous array, as ``np.save`` writes it."""
    d = np.lib.format.header_data_from_array_1_0(array)
    for write in (np.lib.format.write_array_header_1_0, np.lib.format.write_array_header_2_0):
        buf = io.BytesIO()
        try:
            write(buf, d)
        except ValueError:  # header longer than 64 KiB: version 2.0 has room for it
            continue
        return buf.getvalue()
    raise ValueError("array header too large for the .npy format")


def _bytes_of(array: np.ndarray) -> np.ndarray:
    """The C-order bytes of ``array`` as a flat uint8 view (no copy when it is already C-contiguous)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _write_checked(f: Any, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
    h = hashlib.blake2b(digest_size=16)
    pos = 0
    entries = []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            raise ValueError("object arrays cannot be cached (they would need pickle)")
        header = _npy_header(array)
        data = _bytes_of(array)
        pad = b"\0" * (-(len(header) + len(data)) % _ALIGN)
        for chunk in (header, data, pad):
            h.update(chunk)
            f.write(chunk)
        entries.append(
            {"name": str(name), "offset": pos, "data": pos + len(header), "nbytes": int(data.size)}
        )
        pos += len(header) + len(data) + len(pad)
    info = {"format": CHECK_FORMAT, "arrays": entries, "payload": pos, "meta": dict(meta)}
    h.update(_canonical(info))
    info["blake2b"] = h.hexdigest()
    trailer = _canonical(info)
    f.write(trailer)
    f.write(_TAIL.pack(len(trailer), TRAILER_MAGIC))


def _atomic_write(path: Path, write: Callable[[Any], None], suffix: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink(Path(tmp))
        raise


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any] | None = None) -> None:
    """Write named arrays plus JSON-able ``meta`` to ``path`` as one checked file, atomically (see the module doc).

    Raises ``ValueError`` for object arrays (they would need pickle) and ``OSError`` when the disk refuses.
    """
    if not arrays:
        raise ValueError("save_arrays needs at least one array")
    _atomic_write(Path(path), lambda f: _write_checked(f, arrays, meta or {}), ".npy")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, ``os.replace``)."""
    _atomic_write(Path(path), lambda f: f.write(data), path.suffix)


def _read_trailer(f: Any, size: int) -> dict[str, Any]:
    if size < _TAIL.size:
        raise CacheCorrupt(f"{size} bytes, too short to hold a checksum")
    f.seek(size - _TAIL.size)
    n, magic = _TAIL.unpack(f.read(_TAIL.size))
    if magic != TRAILER_MAGIC:
        raise CacheCorrupt("no checksum trailer: truncated, damaged, or written by an older version")
    if n > min(_MAX_TRAILER, size - _TAIL.size):
        raise CacheCorrupt("checksum trailer length out of range")
    f.seek(size - _TAIL.size - n)
    try:
        info = json.loads(f.read(n))
    except ValueError as e:
        raise CacheCorrupt(f"checksum trailer is not JSON ({e})") from None
    ok = (
        isinstance(info, dict)
        and info.get("format") == CHECK_FORMAT
        and isinstance(info.get("blake2b"), str)
        and isinstance(info.get("meta"), dict)
        and info.get("payload") == size - _TAIL.size - n
        and isinstance(info.get("arrays"), list)
        and all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and all(
                type(e.get(k)) is int and 0 <= e[k] <= info["payload"] for k in ("offset", "data", "nbytes")
            )
            for e in info["arrays"]
        )
    )
    if not ok:
        raise CacheCorrupt("checksum trailer is malformed or of another format version")
    return info


def _array_at(raw: np.ndarray, entry: dict[str, Any]) -> np.ndarray:
    off, data, nbytes = entry["offset"], entry["data"], entry["nbytes"]
    if not off < data <= len(raw) or data + nbytes > len(raw):
        raise CacheCorrupt(f"array {entry['name']!r} lies outside the file")
    f = io.BytesIO(raw[off:data].tobytes())
    version = np.lib.format.read_magic(f)
    read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(
        version
    )
    if read is None:
        raise CacheCorrupt(f".npy version {version} is not one this cache writes")
    shape, fortran, dtype = read(f)
    if dtype.hasobject:
        raise CacheCorrupt("object array (would need pickle)")
    count = 1
    for s in shape:
        count *= s
    if count * dtype.itemsize != nbytes:
        raise CacheCorrupt(f"array {entry['name']!r}: header and length disagree")
    arr = raw[data : data + nbytes].view(dtype) if nbytes else np.zeros(0, dtype=dtype)
    return arr.reshape(shape, order="F" if fortran else "C")


def load_arrays(
    path: Path,
    *,
    meta: Mapping[str, Any] | None = None,
    names: Sequence[str] | None = None,
    check: Callable[[dict[str, np.ndarray], dict[str, Any]], str | None] | None = None,
    mmap: bool = False,
    report: ValidationReport | None = None,
) -> dict[str, np.ndarray] | None:
    """Read a file written by :func:`save_arrays` and verify it; ``None`` when absent or when it does not verify.

    Verified: the trailer, the BLAKE2b digest over every payload byte and the trailer's metadata, every entry of
    ``meta`` (e.g. the cache key, the model identity), the array ``names`` when given, and last ``check(arrays,
    stored_meta)``, which returns the reason the content is unusable or ``None``. A file that fails is reported
    once (``cache_corrupt`` in ``report``, else a :class:`CacheWarning`) and deleted.
    ``mmap=True`` memory-maps read-only: the digest reads every byte once, the arrays are views of the map.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            info = _read_trailer(f, size)
            payload = info["payload"]
            if payload == 0:
                raise CacheCorrupt("no arrays")
            if mmap:
                raw = np.memmap(f, dtype=np.uint8, mode="r", shape=(payload,))
            else:
                buf = bytearray(payload)
                f.seek(0)
                if f.readinto(buf) != payload:
                    raise CacheCorrupt("shorter than its trailer says")
                raw = np.frombuffer(buf, dtype=np.uint8)
        body = {k: v for k, v in info.items() if k != "blake2b"}
        if checksum(raw, _canonical(body)) != info["blake2b"]:
            raise CacheCorrupt("checksum mismatch: its bytes changed after it was written")
        for k, want in (meta or {}).items():
            got = info["meta"].get(k)
            if got != want:
                raise CacheCorrupt(f"written for {k}={got!r}, expected {want!r}")
        arrays = {e["name"]: _array_at(raw, e) for e in info["arrays"]}
        if names is not None and sorted(arrays) != sorted(names):
            raise CacheCorrupt(f"holds arrays {sorted(arrays)}, expected {sorted(names)}")
        problem = check(arrays, info["meta"]) if check is not None else None
        if problem:
            raise CacheCorrupt(problem)
    except FileNotFoundError:
        return None
    except CacheCorrupt as e:
        report_corrupt(report, path, str(e))
        return None
    except (ValueError, OSError, EOFError, TypeError) as e:
        report_corrupt(report, path, f"{type(e).__name__}: {e}")
        return None
    return arrays


def atomic_save(path: Path, array: np.ndarray, meta: Mapping[str, Any] | None = None) -> None:
    """Write one ``array`` (and ``meta``) as a checked file, atomically; plain ``np.load(path)`` also reads it.

    Raises ``ValueError`` for object arrays (they would need pickle) and ``OSError`` when the disk refuses.
    """
    save_arrays(path, {"array": np.asarray(array)}, meta)


def load_npy(
    path: Path,
    *,
    dtype: np.dtype | str | None = None,
    shape: tuple[int | None, ...] | None = None,
    mmap: bool = False,
    meta: Mapping[str, Any] | None = None,
    report: ValidationReport | None = None,
) -> np.ndarray | None:
    """Read and verify a file of :func:`atomic_save`; ``None`` when absent, or when it does not verify (then
    reported and deleted).

    ``meta`` entries must match the stored metadata; ``dtype`` must match exactly when given; ``shape`` may use
    ``None`` for "any length" on an axis. ``mmap=True`` memory-maps read-only.
    """

    def shape_ok(arrays: dict[str, np.ndarray], _meta: dict[str, Any]) -> str | None:
        arr = arrays["array"]
        if dtype is not None and arr.dtype != np.dtype(dtype):
            return f"dtype {arr.dtype}, expected {np.dtype(dtype)}"
        if shape is not None and (
            arr.ndim != len(shape)
            or any(s is not None and s != a for s, a in zip(shape, arr.shape, strict=True))
        ):
            return f"shape {arr.shape}, expected {shape}"
        return None

    arrays = load_arrays(path, meta=meta, names=("array",), check=shape_ok, mmap=mmap, report=report)
    return None if arrays is None else arrays["array"]


def sweep_tmp(directory: Path, older_than_s: float = 3600.0) -> None:
    """Delete temp files left by killed writers (older than an hour, so never one being written)."""
    now = time.time()
    for p in Path(directory).glob(".tmp-*"):
        try:
            if now - p.stat().st_mtime > older_than_s:
                p.unlink()
        except OSError:
            pass


class ArrayCache:
    """Arrays stored under string keys, one checked ``<sha1(key)>.npy`` file per key, in ``directory``.

    Meant for results that are recomputed as a whole (e.g. UMAP coordinates keyed by model identity + data hash
    + parameters). Each file records its full key, so a file renamed or copied from another key does not verify.
    ``get`` returns ``None`` on a miss or a file that does not verify (reported, deleted). :meth:`put_arrays` /
    :meth:`get_arrays` keep several arrays that belong together (e.g. the parts of an index) in one file: one
    write, one checksum over all of them.
    """

    def __init__(self, directory: Path, *, report: ValidationReport | None = None) -> None:
        self.directory = Path(directory)
        self.report = report

    def path_for(self, key: str) -> Path:
        return self.directory / f"{text_key(key)}.npy"

    def get(
        self,
        key: str,
        *,
        dtype: np.dtype | str | None = None,
        shape: tuple[int | None, ...] | None = None,
        mmap: bool = False,
    ) -> np.ndarray | None:
        return load_npy(
            self.path_for(key), dtype=dtype, shape=shape, mmap=mmap, meta={"key": key}, report=self.report
        )

    def get_arrays(
        self,
        key: str,
        names: Sequence[str],
        *,
        check: Callable[[dict[str, np.ndarray], dict[str, Any]], str | None] | None = None,
        mmap: bool = False,
    ) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key`` by :meth:`put_arrays` (exactly ``names``), or ``None``; ``check`` as in
        :func:`load_arrays`."""
        return load_arrays(
            self.path_for(key), meta={"key": key}, names=names, check=check, mmap=mmap, report=self.report
        )

    def put(self, key: str, array: np.ndarray) -> bool:
        """Store ``array`` under ``key`` (atomic). Returns ``False`` (and reports) when the disk refuses."""
        return self.put_arrays(key, {"array": np.asarray(array)})

    def put_arrays(self, key: str, arrays: Mapping[str, np.ndarray]) -> bool:
        """Store named ``arrays`` under ``key`` in one checked file (atomic); ``False`` (reported) when the disk
        refuses."""
        try:
            save_arrays(self.path_for(key), arrays, {"key": key})
        except OSError as e:
            _warn(
                self.report,
                "cache_write_failed",
                f"could not write the cache ({e}); going on without it",
                None,
            )
            return False
        sweep_tmp(self.directory)
        return True


_SHARD_RE = re.compile(r"^shard-[0-9a-f-]+\.npy$")


class RowStore:
    """Fixed-width rows stored under short ASCII keys (e.g. :func:`text_key`), in append-only shards.

    Layout: ``directory/shard-<time>-<uuid>.npy``, each ONE structured array with fields ``key`` (``S<key_width>``)
    and ``row`` (``dtype``, ``(width,)``) in a checked file (see the module doc), so a key and its row are always
    written together and the shard's digest binds every row to its key: swapped or altered rows, a changed key, or
    a shard of another store (other ``meta``, e.g. another model; other width or dtype) do not verify. The stored
    metadata is ``kind``, ``width``, ``dtype``, ``key_width``, ``rows`` (the record count) and the store's ``meta``. :meth:`put` adds one new shard (never rewrites an existing one): concurrent writers each add
    their own, and a key present in several shards resolves to the first shard in name order (same content key, so
    the same row). When more than ``max_shards`` shards exist, :meth:`put` compacts them into one (writes the merged
    shard, then deletes the merged ones; a concurrent reader that misses a shard just sees a miss and recomputes).

    Reading memory-maps the shards, verifies each one once per store object when it is first seen (the digest reads
    the whole shard: ~2 ms per MB), and, once per change of the folder listing, builds a
    ``key -> (shard, row)`` index (a dict over all keys: ~0.1 s for 100k); rows are gathered from the memory maps
    with one fancy-index per shard. Keys are stored NUL-padded, so a key must not end with ``\\0``.

    ``validate(rows) -> bool mask`` is applied to the rows :meth:`get` returns; a failing row condemns its whole
    shard (reported as ``cache_corrupt``, deleted, its rows treated as misses): a second line of defence behind the
    digest, for rows that were wrong before they were written.
    """

    def __init__(
        self,
        directory: Path,
        *,
        width: int,
        dtype: np.dtype | str = np.float32,
        key_width: int = 40,
        validate: Callable[[np.ndarray], np.ndarray] | None = None,
        report: ValidationReport | None = None,
        max_shards: int = 16,
        meta: Mapping[str, str | int] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.width = int(width)
        self.key_width = int(key_width)
        self.key_dtype = np.dtype(f"S{self.key_width}")
        self.record_dtype = np.dtype([("key", self.key_dtype), ("row", np.dtype(dtype), (self.width,))])
        self.row_dtype = np.dtype(dtype)
        self.validate = validate
        self.report = report
        self.max_shards = max_shards
        self.meta = {
            "kind": "rows",
            "width": self.width,
            "dtype": self.row_dtype.str,
            "key_width": self.key_width,
            **(meta or {}),
        }
        self._shards: dict[str, np.ndarray] = {}
        self._listing: tuple[str, ...] | None = None
        self._reset_index()

    def _reset_index(self) -> None:
        self._names: list[str] = []  # shard names; _shard_of holds indices into it
        self._pos: dict[bytes, int] = {}  # key -> entry (first occurrence, in shard name order)
        self._keys = np.zeros(0, dtype=self.key_dtype)  # entries: every record of every shard
        self._shard_of = np.zeros(0, dtype=np.int32)
        self._row_of = np.zeros(0, dtype=np.int64)

    # -- reading ---------------------------------------------------------------------------------------------
    def _list(self) -> tuple[str, ...]:
        try:
            return tuple(sorted(n for n in os.listdir(self.directory) if _SHARD_RE.match(n)))
        except OSError:  # absent, not a folder, no permission: an empty cache (writing will report it)
            return ()

    def _refresh(self) -> None:
        for _attempt in range(3):
            listing = self._list()
            if listing == self._listing:
                return
            vanished = False
            shards: dict[str, np.ndarray] = {}
            for name in listing:
                if name in self._shards:
                    shards[name] = self._shards[name]
                    continue
                path = self.directory / name
                if not path.exists():  # deleted by a concurrent compaction: list again
                    vanished = True
                    break
                arrays = load_arrays(
                    path, meta=self.meta, names=("records",), check=self._check, mmap=True, report=self.report
                )
                if arrays is not None:
                    shards[name] = arrays["records"]
            if vanished:
                continue
            self._shards = shards
            self._build_index()
            self._listing = self._list() if len(shards) != len(listing) else listing
            return

    def _check(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> str | None:
        rec = arrays["records"]
        if rec.dtype != self.record_dtype or rec.ndim != 1:
            return (
                f"records of dtype {rec.dtype} and shape {rec.shape}, expected {self.record_dtype} and (n,)"
            )
        if meta.get("rows") != len(rec):
            return f"holds {len(rec)} rows, its metadata says {meta.get('rows')!r}"
        return None

    def _build_index(self) -> None:
        self._reset_index()
        if not self._shards:
            return
        self._names = list(self._shards)
        keys = np.concatenate([np.asarray(a["key"]) for a in self._shards.values()])
        shard_of = np.concatenate(
            [np.full(len(a), i, dtype=np.int32) for i, a in enumerate(self._shards.values())]
        )
        row_of = np.concatenate([np.arange(len(a), dtype=np.int64) for a in self._shards.values()])
        self._keys, self._shard_of, self._row_of = keys, shard_of, row_of
        n = len(keys)
        # assigned from the last record to the first, so for a repeated key the earliest shard wins
        self._pos = dict(zip(keys[::-1].tolist(), range(n - 1, -1, -1), strict=True))

    def _lookup(self, keys: Sequence[str]) -> np.ndarray:
        """Entry of each key, -1 when absent."""
        get = self._pos.get
        return np.fromiter((get(k.encode("ascii"), -1) for k in keys), dtype=np.int64, count=len(keys))

    def __len__(self) -> int:
        self._refresh()
        return len(self._pos)

    def __contains__(self, key: str) -> bool:
        self._refresh()
        return bool(self._lookup([key])[0] >= 0)

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Rows for ``keys``: ``(found: bool[n], rows: dtype[n, width])``; rows of misses are zeros."""
        found = np.zeros(len(keys), dtype=bool)
        rows = np.zeros((len(keys), self.width), dtype=self.row_dtype)
        for _attempt in range(3):
            self._refresh()
            found[:] = False
            pos = self._lookup(keys)
            hit = np.flatnonzero(pos >= 0)
            shard = self._shard_of[pos[hit]]
            bad: list[str] = []
            for s in np.unique(shard):
                name = self._names[s]
                out = hit[shard == s]
                src = self._row_of[pos[out]]
                try:
                    chunk = np.asarray(self._shards[name]["row"][src])
                except (OSError, ValueError) as e:  # I/O error under the mmap
                    report_corrupt(self.report, self.directory / name, f"{type(e).__name__}: {e}")
                    bad.append(name)
                    continue
                if self.validate is not None:
                    ok = np.asarray(self.validate(chunk), dtype=bool)
                    if not ok.all():
                        report_corrupt(
                            self.report, self.directory / name, f"{int((~ok).sum())} row(s) failed validation"
                        )
                        bad.append(name)
                        continue
                if len(out) == len(keys):  # every key from this one shard: no second copy
                    rows = chunk
                else:
                    rows[out] = chunk
                found[out] = True
            if not bad:
                break
            for name in bad:
                self._shards.pop(name, None)
            self._listing = None  # re-index without them
        return found, rows

    # -- writing ---------------------------------------------------------------------------------------------
    def put(self, keys: Sequence[str], rows: np.ndarray) -> bool:
        """Add rows under keys as one new shard (atomic); compact when there are too many shards.

        Keys must be ASCII of at most ``key_width`` characters. Returns ``False`` (and reports
        ``cache_write_failed``) when the disk refuses; the caller goes on without the cache.
        """
        rows = np.asarray(rows)
        if rows.shape != (len(keys), self.width):
            raise ValueError(f"rows have shape {rows.shape}, expected ({len(keys)}, {self.width})")
        if len(keys) == 0:
            return True
        enc = [k.encode("ascii") for k in keys]
        if max(map(len, enc)) > self.key_width:
            raise ValueError(f"keys longer than {self.key_width} characters")
        rec = np.empty(len(keys), dtype=self.record_dtype)
        rec["key"] = enc
        rec["row"] = rows
        try:
            self._save(rec)
            if len(self._list()) > self.max_shards:
                self.compact()
        except OSError as e:
            _warn(
                self.report,
                "cache_write_failed",
                f"could not write the cache ({e}); going on without it",
                self.directory,
            )
            return False
        return True

    def _save(self, rec: np.ndarray) -> None:
        save_arrays(self.directory / self._new_name(), {"records": rec}, {**self.meta, "rows": len(rec)})

    @staticmethod
    def _new_name() -> str:
        return f"shard-{time.time_ns():020d}-{uuid.uuid4().hex}.npy"

    def compact(self) -> None:
        """Merge every shard into one (first occurrence of a key wins), then delete the merged shards.

        Shards whose rows fail ``validate`` (or cannot be read) are reported and dropped, not merged.
        """
        self._refresh()
        names = list(self._names)
        if len(names) <= 1:
            return
        entries = np.fromiter(self._pos.values(), dtype=np.int64, count=len(self._pos))
        keys: list[np.ndarray] = []
        chunks: list[np.ndarray] = []
        for s, name in enumerate(names):
            sel = entries[self._shard_of[entries] == s]
            try:
                chunk = np.asarray(self._shards[name]["row"][self._row_of[sel]])
            except (OSError, ValueError) as e:
                report_corrupt(self.report, self.directory / name, f"{type(e).__name__}: {e}")
                continue
            if self.validate is not None and not np.asarray(self.validate(chunk), dtype=bool).all():
                report_corrupt(self.report, self.directory / name, "row(s) failed validation")
                continue
            keys.append(self._keys[sel])
            chunks.append(chunk)
        rec = np.empty(sum(len(k) for k in keys), dtype=self.record_dtype)
        if keys:
            rec["key"] = np.concatenate(keys)
            rec["row"] = np.concatenate(chunks)
        self._save(rec)
        for name in names:
            _unlink(self.directory / name)
        self._shards = {}
        self._listing = None
        self._reset_index()
        sweep_tmp(self.directory)

    def clear(self) -> None:
        """Delete every shard."""
        for name in self._list():
            _unlink(self.directory / name)
        self._shards, self._listing = {}, None
        self._reset_index()
