"""Fingerprints of ids: a 64-bit number per id string, and one per (query, doc) pair, computed from the Arrow
buffers without a Python loop. The run reader (:mod:`diagnose.io.run_order`, repeated documents) and the metric
join (:mod:`diagnose.metrics.join`) both find candidate matches through them and confirm every candidate on the
id strings themselves: a collision costs an exact comparison, never a wrong result.

The fingerprints of an array are kept while the array lives (:func:`remember_fingerprints`), so the reader, the
metrics and the tie audit hash a run's 1M doc ids once, not once each; a copy of the run re-ordered by the audit
is given its fingerprints by the same take that made its doc ids.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from diagnose.runtime.arrays import arrow_of, strings_of
from diagnose.runtime.per_object import PerObject

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_KEEP = np.array([(1 << (8 * b)) - 1 for b in range(9)], dtype=np.uint64)  # _KEEP[b]: the first b bytes


#: Strings longer than this many bytes are hashed one by one (BLAKE2b, 8 bytes); the others 8 bytes at a time across
#: the whole array. The word loop then runs at most ``_VECTOR_BYTES / 8`` times whatever the longest id (a 500 MB id
#: once meant 62 million passes over every id), and each pass touches only the strings that still have a word: the
#: work is linear in the total bytes.
_VECTOR_BYTES = 512


_KNOWN: PerObject[np.ndarray] = PerObject()


def remember_fingerprints(arr: pa.Array | pa.ChunkedArray, fps: np.ndarray) -> np.ndarray:
    """Keep ``fps`` as the fingerprints of the array object ``arr`` for as long as it lives (read-only: callers
    share them); :func:`fingerprints` of that object returns them without hashing. Returns ``fps``."""
    fps.flags.writeable = False
    return _KNOWN.keep(arr, fps)


def known_fingerprints(arr: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """The fingerprints kept for this very array object, or None."""
    return _KNOWN.get(arr)


def take(arr: pa.Array, rows: np.ndarray) -> pa.Array:
    """``arr.take(rows)``, its fingerprints (when known) taken along: the subset is never hashed again."""
    out = arr.take(arrow_of(rows, pa.int64()))
    known = known_fingerprints(arr)
    if known is not None:
        remember_fingerprints(out, known[rows])
    return out


def fingerprints(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """64-bit fingerprint (uint64) of each string of a ``string`` / ``large_string`` array, from all its UTF-8
    bytes and its length.

    Vectorised: an unaligned little-endian 64-bit view over the data buffer gives, for any byte offset, the next
    8 bytes; word ``j`` of every string is gathered at ``start + 8 j``, masked past the string's end, and mixed in.
    Strings over :data:`_VECTOR_BYTES` bytes are hashed with BLAKE2b instead (the rule depends on the string alone).
    Equal strings always get equal fingerprints, whatever the other strings of the array (and whatever its chunks,
    slice offset or string type); two different strings collide with probability ~2^-64, every byte counts (ids
    that share a long prefix and suffix, like URLs, do not collide). Callers confirm matches on the strings.
    Time and memory are linear in the total bytes of the strings.
    """
    known = known_fingerprints(arr)
    if known is not None:
        return known
    return remember_fingerprints(arr, _hash(arr))


def string_bytes(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The UTF-8 bytes of a string array without copying them: ``(data, starts, lens)``, string ``i`` being
    ``data[starts[i] : starts[i] + lens[i]]`` (uint8, int64, int64)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else strings_of([])
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())  # a dictionary or string_view array, say
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bufs = arr.buffers()
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offs = np.frombuffer(bufs[1], dtype=width)[arr.offset : arr.offset + n + 1].astype(np.int64)
    lo, hi = int(offs[0]), int(offs[-1])
    data = np.frombuffer(bufs[2], dtype=np.uint8)[lo:hi] if hi > lo else np.zeros(0, dtype=np.uint8)
    return data, offs[:-1] - lo, np.diff(offs)


#: A chunked array whose chunks hold this many strings on average is hashed chunk by chunk (no copy of its strings
#: into one array, passes that fit the cache: a CSV reader's 34 chunks of a 1M-line run, 29 ms against 51 ms).
CHUNK_BY_CHUNK = 4096


def _hash(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if (
        isinstance(arr, pa.ChunkedArray)
        and arr.num_chunks > 1
        and len(arr) >= CHUNK_BY_CHUNK * arr.num_chunks
    ):
        return np.concatenate([_hash(chunk) for chunk in arr.chunks])
    data, starts, lens = string_bytes(arr)
    if len(lens) == 0:
        return np.empty(0, dtype=np.uint64)
    h = lens.astype(np.uint64) * _M1
    long_rows = np.flatnonzero(lens > _VECTOR_BYTES)
    h = _mix_words(h, data, starts, lens, long_rows)
    for i in long_rows.tolist():
        digest = hashlib.blake2b(data[starts[i] : starts[i] + lens[i]], digest_size=8).digest()
        h[i] = np.uint64(int.from_bytes(digest, "little"))
    h ^= h >> np.uint64(29)
    return h * _M3


def _mix_words(
    h: np.ndarray, data: np.ndarray, starts: np.ndarray, lens: np.ndarray, long_rows: np.ndarray
) -> np.ndarray:
    """``h`` with every 8-byte word of the strings mixed in (except ``long_rows``, hashed whole), pass ``j`` over
    the strings that have a word ``j``. While many strings are left they are found by one scan of the lengths; once
    few are left, among the previous pass's strings: a pass costs at most 8 times the strings it mixes."""
    pad = np.zeros(len(data) + 8, dtype=np.uint8)
    pad[: len(data)] = data
    words = np.ndarray(
        shape=(len(data) + 1,), dtype="<u8", buffer=pad, strides=(1,)
    )  # words[i]: bytes i..i+7
    n = len(lens)
    todo = lens
    if len(long_rows):
        todo = lens.copy()
        todo[long_rows] = 0
    rows: np.ndarray | None = None  # the strings of pass j; None: all of them
    j = 0
    while True:
        if rows is None and todo.min() > 8 * j:
            pass
        elif rows is None or len(rows) * 8 > n:
            rows = np.flatnonzero(todo > 8 * j)
        else:
            rows = rows[todo[rows] > 8 * j]
        if rows is not None and len(rows) == 0:
            return h
        at = starts + 8 * j if rows is None else starts[rows] + 8 * j
        nb = np.minimum(lens - 8 * j if rows is None else lens[rows] - 8 * j, 8)
        x = ((h if rows is None else h[rows]) ^ (words[at].astype(np.uint64, copy=False) & _KEEP[nb])) * _M2
        x ^= x >> np.uint64(31)
        if rows is None:
            h = x
        else:
            h[rows] = x
        j += 1


def pair_keys(doc_fp: np.ndarray, query_code: np.ndarray) -> np.ndarray:
    """64-bit key of each (query code, doc fingerprint) pair: equal pairs get equal keys (query codes >= -1)."""
    k = doc_fp ^ ((query_code.astype(np.uint64) + np.uint64(1)) * _M3)
    k ^= k >> np.uint64(33)
    k *= _M2
    k ^= k >> np.uint64(29)
    return k
