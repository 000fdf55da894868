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

One file per concept:

- :mod:`~diagnose.cache.base`: :data:`CACHE_ENV_VAR`, :func:`default_cache_root`, :func:`text_key`, :func:`slug`,
  :class:`CacheWarning`, :func:`report_corrupt` (what every cache shares).
- :mod:`~diagnose.cache.files`: the checked file format and atomic writes (:func:`save_arrays`,
  :func:`load_arrays`, :func:`atomic_save`, :func:`load_npy`, :func:`atomic_write_bytes`, :func:`checksum`,
  :func:`json_checksum`, :class:`CacheCorrupt`, :func:`open_regular`, :func:`sweep_tmp`).
- :mod:`~diagnose.cache.arrays`: :class:`ArrayCache`, whole arrays by key.
- :mod:`~diagnose.cache.rows`: :class:`RowStore`, rows by key.

Every name below is importable from ``diagnose.cache`` itself.
"""

from __future__ import annotations

from diagnose.cache.arrays import ArrayCache
from diagnose.cache.base import (
    CACHE_ENV_VAR,
    CacheWarning,
    default_cache_root,
    report_corrupt,
    slug,
    text_key,
)
from diagnose.cache.files import (
    CHECK_FORMAT,
    TRAILER_MAGIC,
    CacheCorrupt,
    atomic_save,
    atomic_write_bytes,
    checksum,
    json_checksum,
    load_arrays,
    load_npy,
    open_regular,
    save_arrays,
    sweep_tmp,
)
from diagnose.cache.rows import RowStore

__all__ = [
    "ArrayCache",
    "CACHE_ENV_VAR",
    "CHECK_FORMAT",
    "CacheCorrupt",
    "CacheWarning",
    "RowStore",
    "TRAILER_MAGIC",
    "atomic_save",
    "atomic_write_bytes",
    "checksum",
    "default_cache_root",
    "json_checksum",
    "load_arrays",
    "load_npy",
    "open_regular",
    "report_corrupt",
    "save_arrays",
    "slug",
    "sweep_tmp",
    "text_key",
]
