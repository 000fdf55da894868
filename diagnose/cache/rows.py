""":class:`RowStore`: rows by key (one vector per text), appended in checked shard files and compacted."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache.base import report_corrupt, unlink, warn
from diagnose.cache.files import load_arrays, save_arrays, sweep_tmp
from diagnose.data import ValidationReport

_SHARD_RE = re.compile(r"^shard-[0-9a-f-]+\.npy$")


class RowStore:
    """Fixed-width rows stored under short ASCII keys (e.g. :func:`text_key`), in append-only shards.

    Layout: ``directory/shard-<time>-<uuid>.npy``, each ONE structured array with fields ``key`` (``S<key_width>``)
    and ``row`` (``dtype``, ``(width,)``) in a checked file (see the module doc), so a key and its row are always
    written together and the shard's digest binds every row to its key: swapped or altered rows, a changed key, or
    a shard of another store (other ``meta``, e.g. another model; other width or dtype) do not verify. The stored
    metadata is ``kind``, ``width``, ``dtype``, ``key_width``, ``rows`` (the record count) and the store's ``meta``.
    :meth:`put` adds one new shard (never rewrites an existing one): concurrent writers each add their own, and a
    key present in several shards resolves to the first shard in name order (same content key, so the same row). When more than ``max_shards`` shards exist, :meth:`put` compacts them into one (writes the merged
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
            warn(
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
            unlink(self.directory / name)
        self._shards = {}
        self._listing = None
        self._reset_index()
        sweep_tmp(self.directory)

    def clear(self) -> None:
        """Delete every shard."""
        for name in self._list():
            unlink(self.directory / name)
        self._shards, self._listing = {}, None
        self._reset_index()
