"""The embedding cache on disk (:class:`EmbeddingCache`, ``encoder.json``) and :func:`embed_texts`, which reads
vectors from it and encodes only the texts it does not hold."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache import (
    CacheCorrupt,
    RowStore,
    atomic_write_bytes,
    default_cache_root,
    json_checksum,
    open_regular,
    report_corrupt,
    slug,
    text_key,
)
from diagnose.checks import positive_int
from diagnose.data import ValidationReport
from diagnose.embed.encoders import Encoder, SentenceTransformerEncoder, renormalise
from diagnose.runtime.progress import Progress, reporter

log = logging.getLogger("diagnose.embed")  # the name it logged under as one module


def _unit_or_zero(rows: np.ndarray) -> np.ndarray:
    """Validation of cached rows: finite, and L2 norm within 1e-3 of 1 or exactly 0."""
    finite = np.isfinite(rows).all(axis=1)
    norms = np.linalg.norm(np.where(np.isfinite(rows), rows, 0), axis=1)
    return finite & ((np.abs(norms - 1.0) < 1e-3) | (norms == 0))


#: Version of the ``encoder.json`` layout; a file of another version is rewritten.
ENCODER_META_FORMAT = 1


def _encoder_meta(name: str, dim: int) -> dict[str, Any]:
    """Content of ``encoder.json``: format, name, dim and the BLAKE2b of their canonical JSON."""
    body = {"format": ENCODER_META_FORMAT, "name": name, "dim": int(dim)}
    return {**body, "blake2b": json_checksum(body)}


def _read_encoder_meta(path: Path, encoder_name: str) -> tuple[int | None, str | None]:
    """``(dim, None)`` for a valid ``encoder.json``, ``(None, None)`` when there is none, ``(None, reason)`` when it
    does not verify (not JSON, not an object, another format, dim not a positive int, another name, bad checksum)."""
    try:
        with open_regular(path) as f:  # a FIFO named encoder.json would block a plain read forever
            raw = f.read()
    except FileNotFoundError:
        return None, None
    except CacheCorrupt as e:
        return None, str(e)
    except OSError as e:
        return None, f"{type(e).__name__}: {e}"
    try:
        meta = json.loads(raw)
    except ValueError:  # includes UnicodeDecodeError
        return None, "not JSON"
    if not isinstance(meta, dict):
        return None, f"a JSON {type(meta).__name__}, expected an object"
    if meta.get("format") != ENCODER_META_FORMAT:
        return None, f"format {meta.get('format')!r}, expected {ENCODER_META_FORMAT} (another version?)"
    dim = meta.get("dim")
    if type(dim) is not int or dim < 1:
        return None, f"dim {dim!r} is not a positive integer"
    if meta.get("name") != encoder_name:
        return None, f"written for encoder {meta.get('name')!r}, expected {encoder_name!r}"
    if meta.get("blake2b") != json_checksum({k: meta[k] for k in ("format", "name", "dim")}):
        return None, "checksum mismatch: it was edited after it was written"
    return dim, None


class EmbeddingCache:
    """Vectors on disk, keyed by encoder identity and by the SHA-1 of each text.

    Layout: ``<directory>/<slug(encoder.name)>-<sha1(encoder.name)[:12]>/`` is one :class:`~diagnose.cache.RowStore`
    per encoder (checked shards of ``(sha1(text) hex, float32[dim])`` records whose metadata names the encoder, so
    a shard copied from another encoder's folder does not verify) plus ``encoder.json`` (format, name, dim and a
    BLAKE2b checksum of the three), which lets a run served wholly from the cache skip loading the model.
    ``encoder.json`` is verified before its dim is used; one that does not verify (or disagrees with a loaded
    model's dim) is reported as ``cache_corrupt`` and rewritten. ``directory`` defaults to
    ``default_cache_root() / "embeddings"``: ``$DIAGNOSE_CACHE_DIR/embeddings`` when the variable is set, else
    ``platformdirs.user_cache_dir("diagnose")/embeddings``.
    """

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_root() / "embeddings"
        self._stores: dict[tuple[str, int], RowStore] = {}

    def store_dir(self, encoder_name: str) -> Path:
        return self.directory / f"{slug(encoder_name)}-{text_key(encoder_name)[:12]}"

    def known_dim(self, encoder_name: str, report: ValidationReport | None = None) -> int | None:
        """The vector size recorded for this encoder identity, if it was cached before (no model needed).

        ``None`` when there is no ``encoder.json``, or when it does not verify: then it is reported (``cache_corrupt``
        in ``report``, else a :class:`~diagnose.cache.CacheWarning`) and deleted, and :meth:`store` writes it again.
        """
        path = self.store_dir(encoder_name) / "encoder.json"
        dim, problem = _read_encoder_meta(path, encoder_name)
        if problem is not None:
            report_corrupt(report, path, problem)
        return dim

    def store(self, encoder: Encoder, report: ValidationReport | None = None) -> RowStore:
        dim = int(encoder.dim)
        key = (encoder.name, dim)
        st = self._stores.get(key)
        if st is None:
            d = self.store_dir(encoder.name)
            st = RowStore(
                d,
                width=dim,
                dtype=np.float32,
                validate=_unit_or_zero,
                report=report,
                meta={"encoder": encoder.name},
            )
            self._stores[key] = st
            path = d / "encoder.json"
            recorded = self.known_dim(encoder.name, report)
            if recorded is not None and recorded != dim:
                report_corrupt(report, path, f"dim {recorded}, but the encoder gives vectors of {dim}")
            if recorded != dim:
                try:
                    text = json.dumps(_encoder_meta(encoder.name, dim), indent=1) + "\n"
                    atomic_write_bytes(path, text.encode())
                except OSError:
                    pass  # the RowStore reports a write failure when it happens
        st.report = report
        return st

    def clear(self) -> None:
        """Delete every cached vector of every encoder (the folders stay)."""
        for st in self._stores.values():
            st.clear()
        if self.directory.is_dir():
            for d in self.directory.iterdir():
                if d.is_dir() and (d / "encoder.json").exists():
                    for f in d.glob("shard-*.npy"):
                        f.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.directory)!r})"


#: Rows written to the cache at once while encoding (so an interrupted run keeps most of its work).
CACHE_FLUSH_ROWS = 8192


def embed_texts(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
    batch_size: int = 64,
    progress: Progress = False,
    report: ValidationReport | None = None,
) -> np.ndarray:
    """Vectors of ``texts`` (float32 ``[len(texts), encoder.dim]``, L2-normalised rows, row i for text i).

    - Identical texts are encoded once (deduplicated by SHA-1 of the text).
    - With ``cache``, vectors already stored for ``encoder.name`` are read, not encoded; only the missing texts
      are encoded and then stored (in flushes of :data:`CACHE_FLUSH_ROWS`, and on interruption). ``cache=None``
      means no disk cache at all. Cache problems (corrupt file -> recomputed; unwritable folder) become
      warnings in ``report`` (or :class:`~diagnose.cache.CacheWarning` warnings without one); they never raise.
    - Texts to encode are sorted by length (longest first, less padding per batch), encoded in chunks of
      ``4 * batch_size``, and put back in the input order.
    - ``progress`` (:data:`diagnose.runtime.progress.Progress`; ``True``: tqdm on a terminal or in a notebook) gets
      ``(done, total)``, where ``total`` is the number of distinct texts to encode (``(0, total)`` first and
      ``(total, total)`` last; never called when everything came from the cache).
    - Encoder rows whose norm is off 1 by more than 1e-5 are re-normalised (others are kept bit for bit; rows of
      norm 0 stay 0); non-finite output raises ``RuntimeError``.
    - ``batch_size``: a positive integer (0, -1, ``True`` or 2.5: ``DataError(param="batch_size")``).
    """
    batch_size = positive_int(batch_size, "batch_size", note=" (texts per forward pass)")
    texts = list(texts)
    if cache is not None and isinstance(encoder, SentenceTransformerEncoder) and not encoder.loaded:
        known = cache.known_dim(encoder.name, report)
        if known is not None and encoder._dim is None:
            encoder.dim = known  # the cache may serve everything: do not load the model just for its size
    dim = int(encoder.dim)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    keys = [text_key(t) for t in texts]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    ukeys = list(first)
    store = cache.store(encoder, report) if cache is not None else None
    if store is not None:
        found, uvecs = store.get(ukeys)  # rows of misses are zeros, filled below
        todo = np.flatnonzero(~found)
    else:
        uvecs = np.zeros((len(ukeys), dim), dtype=np.float32)
        todo = np.arange(len(ukeys))
    log.info(
        "embed_texts[%s]: %d texts, %d distinct, %d to encode",
        encoder.name,
        len(texts),
        len(ukeys),
        len(todo),
    )

    if len(todo):
        order = sorted(todo.tolist(), key=lambda u: -len(texts[first[ukeys[u]]]))
        _encode_missing(encoder, texts, ukeys, first, order, uvecs, store, batch_size, progress)

    if len(ukeys) == len(keys):  # no duplicates: first-occurrence order is the input order
        return uvecs
    pos = {k: u for u, k in enumerate(ukeys)}
    return uvecs[[pos[k] for k in keys]]


def _encode_missing(
    encoder: Encoder,
    texts: list[str],
    ukeys: list[str],
    first: dict[str, int],
    order: list[int],
    uvecs: np.ndarray,
    store: RowStore | None,
    batch_size: int,
    progress: Progress,
) -> None:
    total = len(order)
    update = reporter(progress).bar(f"Embedding ({getattr(encoder, 'label', encoder.name)})")
    update(0, total)
    pending: list[int] = []

    def flush() -> None:
        if store is not None and pending:
            store.put([ukeys[u] for u in pending], uvecs[pending])
        pending.clear()

    step = max(1, 4 * batch_size)
    try:
        for start in range(0, total, step):
            chunk = order[start : start + step]
            vecs = np.asarray(encoder.encode([texts[first[ukeys[u]]] for u in chunk], batch_size=batch_size))
            if vecs.shape != (len(chunk), uvecs.shape[1]):
                raise RuntimeError(
                    f"encoder {encoder.name!r} returned shape {vecs.shape}, expected {(len(chunk), uvecs.shape[1])}"
                )
            if not np.isfinite(vecs).all():
                raise RuntimeError(f"encoder {encoder.name!r} returned non-finite values (NaN/inf)")
            uvecs[chunk] = renormalise(vecs)
            pending.extend(chunk)
            update(min(start + step, total), total)
            if len(pending) >= CACHE_FLUSH_ROWS:
                flush()
    finally:
        flush()  # also on KeyboardInterrupt: the next run resumes from what was encoded
