"""Atomic on-disk array caches: whole arrays by key (:class:`ArrayCache`) and rows by key (:class:`RowStore`).

Both only ever write ``.npy`` files and read them back with ``np.load(..., allow_pickle=False)``: a cache file can
never execute code. Every file is written whole to a temporary file in the same directory, flushed, fsynced and
moved into place with ``os.replace`` (atomic on POSIX and Windows), so a reader sees either the old file or the new
one, never half of one. Concurrent writers of the same key: the last ``os.replace`` wins.

A file that cannot be read back (truncated, garbage, wrong dtype or shape, rows that fail the ``validate`` hook) is
reported once -- as a ``cache_corrupt`` warning in the :class:`~diagnose.data.ValidationReport` passed in, or as a
:class:`CacheWarning` through :mod:`warnings` when there is none -- deleted, and treated as a miss, so the values
are recomputed. A cache that cannot be written (read-only disk, disk full) is reported as ``cache_write_failed``
and the work goes on without it. A cache problem never stops a diagnosis.

Where the caches live: :func:`default_cache_root` is ``$DIAGNOSE_CACHE_DIR`` when set, else
``platformdirs.user_cache_dir("diagnose")`` (``~/.cache/diagnose`` on Linux). Each user of the cache takes a
sub-folder (``embeddings/``, ``projections/``, ...).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

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
        f"cache file was unreadable ({reason}); it was deleted and its values are recomputed",
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


def atomic_save(path: Path, array: np.ndarray) -> None:
    """Write ``array`` to ``path`` as ``.npy`` atomically: temp file in the same folder, fsync, ``os.replace``.

    Raises ``ValueError`` for object arrays (they would need pickle) and ``OSError`` when the disk refuses.
    """
    array = np.asarray(array)
    if array.dtype.hasobject:
        raise ValueError("object arrays cannot be cached (they would need pickle)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npy", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink(Path(tmp))
        raise


def load_npy(
    path: Path,
    *,
    dtype: np.dtype | str | None = None,
    shape: tuple[int | None, ...] | None = None,
    mmap: bool = False,
    report: ValidationReport | None = None,
) -> np.ndarray | None:
    """Read a cache ``.npy``; ``None`` when absent, or when corrupt (then reported and deleted).

    ``dtype`` must match exactly when given; ``shape`` may use ``None`` for "any length" on an axis.
    ``mmap=True`` memory-maps read-only (no copy; fast for large arrays).
    """
    path = Path(path)
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except FileNotFoundError:
        return None
    except (ValueError, OSError, EOFError) as e:
        report_corrupt(report, path, f"{type(e).__name__}: {e}")
        return None
    if not isinstance(arr, np.ndarray):  # an .npz archive under an .npy name
        report_corrupt(report, path, "not a single .npy array")
        return None
    if dtype is not None and arr.dtype != np.dtype(dtype):
        report_corrupt(report, path, f"dtype {arr.dtype}, expected {np.dtype(dtype)}")
        return None
    if shape is not None and (
        arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape, strict=True))
    ):
        report_corrupt(report, path, f"shape {arr.shape}, expected {shape}")
        return None
    return arr


class ArrayCache:
    """Whole arrays stored under string keys, one ``<sha1(key)>.npy`` file each, in ``directory``.

    Meant for results that are recomputed as a whole (e.g. UMAP coordinates keyed by model identity + data hash
    + parameters). ``get`` returns ``None`` on a miss or a corrupt file (reported, deleted).
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
        return load_npy(self.path_for(key), dtype=dtype, shape=shape, mmap=mmap, report=self.report)

    def put(self, key: str, array: np.ndarray) -> bool:
        """Store ``array`` under ``key`` (atomic). Returns ``False`` (and reports) when the disk refuses."""
        try:
            atomic_save(self.path_for(key), array)
        except OSError as e:
            _warn(
                self.report,
                "cache_write_failed",
                f"could not write the cache ({e}); going on without it",
                None,
            )
            return False
        return True


_SHARD_RE = re.compile(r"^shard-[0-9a-f-]+\.npy$")


class RowStore:
    """Fixed-width rows stored under short ASCII keys (e.g. :func:`text_key`), in append-only shards.

    Layout: ``directory/shard-<time>-<uuid>.npy``, each ONE structured array with fields ``key`` (``S<key_width>``)
    and ``row`` (``dtype``, ``(width,)``), so a key and its row are always written together and a shard is
    self-consistent. :meth:`put` adds one new shard (never rewrites an existing one): concurrent writers each add
    their own, and a key present in several shards resolves to the first shard in name order (same content key, so
    the same row). When more than ``max_shards`` shards exist, :meth:`put` compacts them into one (writes the merged
    shard, then deletes the merged ones; a concurrent reader that misses a shard just sees a miss and recomputes).

    Reading memory-maps the shards (``allow_pickle=False``) and, once per change of the folder listing, builds a
    ``key -> (shard, row)`` index (a dict over all keys: ~0.1 s for 100k); rows are gathered from the memory maps
    with one fancy-index per shard. Keys are stored NUL-padded, so a key must not end with ``\\0``.

    ``validate(rows) -> bool mask`` is applied to the rows :meth:`get` returns; a failing row condemns its whole
    shard (reported as ``cache_corrupt``, deleted, its rows treated as misses). This catches bytes damaged inside a
    file of the right size, which ``np.load`` cannot see.
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
                arr = load_npy(path, dtype=self.record_dtype, shape=(None,), mmap=True, report=self.report)
                if arr is not None:
                    shards[name] = arr
            if vanished:
                continue
            self._shards = shards
            self._build_index()
            self._listing = self._list() if len(shards) != len(listing) else listing
            return

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
            atomic_save(self.directory / self._new_name(), rec)
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
        atomic_save(self.directory / self._new_name(), rec)
        for name in names:
            _unlink(self.directory / name)
        self._shards = {}
        self._listing = None
        self._reset_index()
        self._sweep_tmp()

    def _sweep_tmp(self, older_than_s: float = 3600.0) -> None:
        """Delete temp files left by killed writers (older than an hour, so never one being written)."""
        now = time.time()
        for p in self.directory.glob(".tmp-*"):
            try:
                if now - p.stat().st_mtime > older_than_s:
                    p.unlink()
            except OSError:
                pass

    def clear(self) -> None:
        """Delete every shard."""
        for name in self._list():
            _unlink(self.directory / name)
        self._shards, self._listing = {}, None
        self._reset_index()
