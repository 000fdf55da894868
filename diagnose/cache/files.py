"""The checked file: atomic writes (temporary file, fsync, ``os.replace``), the trailer and its checksum
(:func:`save_arrays`, :func:`checksum`), verification on read (:func:`load_arrays`, :func:`load_npy`), and
:func:`sweep_tmp` for the temporary files of killed writers.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import struct
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache.base import report_corrupt, unlink
from diagnose.data import ValidationReport

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


def open_regular(path: Path) -> io.BufferedReader:
    """``open(path, "rb")`` for a regular file only: a FIFO (whose open waits for a writer forever), a device or a
    socket named like a cache file raises :class:`CacheCorrupt`, without blocking (``O_NONBLOCK`` on open)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise CacheCorrupt("not a regular file (a named pipe, a device or a socket)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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
        unlink(Path(tmp))
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
        with open_regular(path) as f:
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
