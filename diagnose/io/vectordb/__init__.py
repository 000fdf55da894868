"""A vector database as the corpus and its vectors: ``--corpus chroma:PATH#COLLECTION`` (also ``lancedb:PATH#TABLE``,
``qdrant:PATH#COLLECTION``; :mod:`diagnose.io.vectordb.spec`).

:func:`read_collection` reads a collection through the database's own client (:mod:`diagnose.io.vectordb.sources`,
the ``[vectordb]`` extra) in batches, into a :class:`CollectionCorpus`: the documents (ids, texts, metadata as
columns, checked like a corpus file) and the stored vectors, which feed the precomputed-vectors path
(:class:`~diagnose.io.vectors.PrecomputedEmbeddings`): nothing is re-encoded; only the queries are, with the
model the user names (:meth:`diagnose.search.space.VectorSpace.build`), and their dimension must match the collection's.

The distance rule: diagnose ranks by cosine. A ``cosine`` collection matches always; an ``ip`` (dot product) or
``l2`` collection ranks like cosine exactly when its stored vectors have unit length, so it is accepted then and
refused otherwise (as is any other distance), with the fix. A collection whose count (or LanceDB version) differs
before and after the read was written meanwhile: refused, never mixed.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from diagnose.checks import field_names, given, positive_int
from diagnose.data import Corpus, DataError, ValidationReport
from diagnose.io.files import check_confined_folder
from diagnose.io.formats import CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS
from diagnose.io.records import finish_records
from diagnose.io.vectordb.sources import SOURCES
from diagnose.io.vectordb.spec import FORM, SCHEMES, CollectionSpec, is_spec, parse_spec
from diagnose.runtime.extras import needs
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.progress import Progress, reporter

if TYPE_CHECKING:
    from diagnose.io.vectors import PrecomputedEmbeddings

__all__ = [
    "FORM",
    "SCHEMES",
    "CollectionCorpus",
    "CollectionSpec",
    "is_spec",
    "parse_spec",
    "read_collection",
]

#: how far from 1 a stored vector's length may be for an ``ip``/``l2`` collection to rank like cosine
UNIT_TOLERANCE = 1e-3
_ROW = "__row__"  # the column of each raw row's position (another name when a field of the data is called so)


@dataclass(frozen=True, repr=False)
class CollectionCorpus(Corpus):
    """A corpus read from a vector database, with its stored vectors (rows L2-normalised, ids = ``doc_id``) and the
    collection's distance (``cosine``, ``ip`` or ``l2``). ``index_params``: the collection's own ANN parameters when
    they can be read (HNSW ``M``/``efConstruction``/``efSearch``: Chroma's configuration,
    :func:`~.sources.chroma_hnsw_params`; Qdrant's ``hnsw_config``, :func:`~.sources.qdrant_hnsw_params`; a LanceDB
    HNSW-type index, :func:`~.sources.lance_hnsw_params`), else empty; :mod:`diagnose.whatif.ann` places that setting
    (:meth:`index_setting`) on the frontier."""

    vectors: PrecomputedEmbeddings | None = None
    metric: str = ""
    index_params: Mapping[str, int] = field(default_factory=dict)
    ef_search_per_k: float = 0.0  # LanceDB: the search ef is 1.5 x k, not stored (index_setting)

    def index_setting(self, k: int) -> dict[str, int]:
        """The served HNSW setting at cutoff ``k`` (``M``, ``efConstruction``, ``efSearch``), ``{}`` when unknown:
        :attr:`index_params`, with a LanceDB index's ``efSearch`` = ceil(1.5 x k), its default search ``ef``."""
        params = dict(self.index_params)
        if params and self.ef_search_per_k and "efSearch" not in params:
            params["efSearch"] = math.ceil(self.ef_search_per_k * k)
        return params


def read_collection(
    spec: str | CollectionSpec,
    *,
    fields: Mapping[str, str | None] | None = None,
    report: ValidationReport | None = None,
    progress: Progress = False,
    batch_size: int = 1000,
) -> CollectionCorpus:
    """The documents and stored vectors of the collection ``spec`` (``SCHEME:PATH#NAME``), read ``batch_size`` at a
    time (memory: the corpus, the vectors and one batch) with a bar on ``progress``.

    ``fields``: ``id``/``text``/``title`` naming the metadata fields to use (default: the store's id, Chroma's
    document, else the usual names, as for a corpus file). ``DataError`` (``param="corpus"``) for a malformed
    spec, an unknown collection (listing those there are), a collection written during the read, a distance that
    cannot rank like cosine, and the corpus problems of a file (no id, no vectors, NaN); ``param="fields"`` /
    ``"batch_size"`` for a ``fields`` that is not a dict of those keys to names, a ``batch_size`` that is not a
    positive integer."""
    spec, fields = _check_args(spec, fields, batch_size)
    report = report if report is not None else ValidationReport()
    source = _open(spec)
    try:
        before = source.state()
        bar = reporter(progress).bar(f"Reading {before[0]:,} documents and vectors from {spec}")
        rows, mat = _read_all(source, spec, before[0], batch_size, bar)
        after = source.state()
    except (DataError, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - the client's own error on a damaged database: named, not a traceback
        raise _unreadable(spec, e) from None
    finally:
        source.close()
    if after != before or len(rows) != before[0]:
        raise _changed(spec, before, after, len(rows))
    _check_metric(spec, source.metric, mat, [_row_id(r, fields.get("id") or source.id_field) for r in rows])
    given = (
        fields.get("id") or source.id_field,
        fields.get("text") or source.text_field,
        fields.get("title"),
    )
    df = pd.DataFrame(rows)
    row_col = _ROW
    while row_col in df.columns:  # a field of the user's named like it: kept, the position takes another name
        row_col = f"_{row_col}"
    return _corpus(spec, df.assign(**{row_col: np.arange(len(rows))}), mat, given, source, report, row_col)


FIELD_KEYS = ("id", "text", "title")


def _check_args(
    spec: object, fields: object, batch_size: object
) -> tuple[CollectionSpec, dict[str, str | None]]:
    """The parameters of :func:`read_collection`, checked before any database is opened (the spec's path last)."""
    if not isinstance(spec, str | CollectionSpec):
        raise DataError(
            f"spec must be {FORM} (a str) or a CollectionSpec, got {given(spec)}.", param="corpus"
        )
    positive_int(batch_size, "batch_size", note=" (rows read at a time)")
    named: dict[str, str | None] = {}
    if fields is not None:
        named = field_names(
            fields,
            "fields",
            FIELD_KEYS,
            expected="a dict such as {'id': 'doc_id', 'text': 'body'} (keys id, text, title)",
            naming="a metadata field (a str)",
        )
    return (parse_spec(spec) if isinstance(spec, str) else spec), named


def _row_id(row: dict, field: str | None) -> str:
    """The id of a raw row, for messages: ``field``'s value, else the first id field of a corpus file it has."""

    key = field if field is not None else next((f for f in CORPUS_ID_FIELDS if f in row), None)
    return str(row.get(key, "?")) if key is not None else "?"


#: the file a database of the scheme always holds, checked before its client opens the folder (which would create
#: a new, empty database in a folder that holds none); LanceDB's client creates nothing on reading
MARKERS = {"chroma": "chroma.sqlite3", "qdrant": "meta.json"}


def _open(spec: CollectionSpec):
    """The source of ``spec``, after :func:`_check_folder`; the client's errors on opening become DataErrors."""
    _check_folder(spec)
    try:
        return SOURCES[spec.scheme](spec)
    except (DataError, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - a locked, damaged or foreign folder: named, not a traceback
        raise _unreadable(spec, e) from None


def _check_folder(spec: CollectionSpec) -> None:
    """Refuse a folder that holds no database of the scheme (its :data:`MARKERS` file), before a client writes into
    it; and, when reads are confined (the app), a folder with a link to anything outside the data folder."""
    what, module = SCHEMES[spec.scheme][1:]
    with needs(f"Reading a {what} {SCHEMES[spec.scheme][0]}"):  # a missing client is named first
        importlib.import_module(module)
    check_confined_folder(spec.path, f"a {what} database folder inside the data folder")
    marker = MARKERS.get(spec.scheme)
    if marker is not None and (spec.path / marker).is_file() and not _starts_right(spec.path / marker):
        raise DataError(
            f"{spec}: {spec.path / marker} is not a {what} database file (empty, or not "
            f"{'SQLite' if marker.endswith('sqlite3') else 'JSON'}); it was not opened, so nothing was written to it. "
            "Fix: give the folder the database was created in, or restore the file from a backup.",
            param="corpus",
        )
    if marker is not None and not (spec.path / marker).is_file():
        raise DataError(
            f"{spec}: {spec.path} holds no {what} database (no {marker} in it); nothing was created there. Fix: "
            f"give the folder the database was created in "
            f"({'chromadb.PersistentClient(path=...)' if spec.scheme == 'chroma' else 'QdrantClient(path=...)'}).",
            param="corpus",
        )
    store = (
        spec.path / "collection" / spec.name / "storage.sqlite"
    )  # Qdrant's local mode: one file per collection
    if spec.scheme == "qdrant" and store.parent.is_dir() and not store.is_file():
        raise DataError(
            f"{spec}: the collection's storage file {store} is missing (the folder was damaged or partly copied); "
            "it was not opened, so no empty one was created. Fix: copy the whole folder the database was created "
            "in, or restore it from a backup.",
            param="corpus",
        )


def _starts_right(path: Path) -> bool:
    """Whether a marker file starts as its kind does: SQLite's 16-byte header (an empty file would be initialised
    as a new database by the client, i.e. written), or a JSON object."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return True  # unreadable: the client says why
    return head == b"SQLite format 3\x00" if path.suffix == ".sqlite3" else head.lstrip().startswith(b"{")


def _unreadable(spec: CollectionSpec, e: Exception) -> DataError:
    """The DataError for a client's error: another Qdrant client holding the folder's lock, else a database that
    cannot be read (damaged, or written by another version of the client)."""
    detail = (str(e).strip().splitlines() or [""])[0][:300]
    package = SCHEMES[spec.scheme][1]
    if spec.scheme == "qdrant" and "already accessed by another instance" in str(e):
        return DataError(
            f"{spec}: the folder is locked by another Qdrant client (a process or notebook holding "
            "QdrantClient(path=...) open); Qdrant's local mode allows one. Fix: close that client (client.close()) "
            "or stop that process, or read a copy of the folder.",
            param="corpus",
        )
    return DataError(
        f"{spec}: the {package} database in {spec.path} cannot be read ({type(e).__name__}: {detail}); it is "
        f"damaged or was written by another version of {package}. Fix: check that {package} itself opens it, "
        "or restore the folder from a backup or create it again.",
        param="corpus",
    )


def _read_all(source, spec: CollectionSpec, count: int, size: int, bar) -> tuple[list[dict], np.ndarray]:
    """Every row and vector, batch by batch into one float32 matrix allocated once (``count`` rows)."""
    rows: list[dict] = []
    mat: np.ndarray | None = None
    bar(0, count)
    for batch, vecs in source.batches(size):
        if mat is None:
            mat = np.empty((count, vecs.shape[1]), dtype=np.float32)
        if len(rows) + len(batch) > count or vecs.shape[1] != mat.shape[1]:
            raise _changed(spec, (count,), None, len(rows) + len(batch))
        mat[len(rows) : len(rows) + len(batch)] = vecs
        rows.extend(batch)
        bar(len(rows), count)
    if mat is None:
        raise DataError(f"{spec}: the {SCHEMES[spec.scheme][0]} is empty: no documents.", param="corpus")
    return rows, mat


def _changed(spec: CollectionSpec, before: tuple, after: tuple | None, read: int) -> DataError:
    then = f"{before[0]:,} documents when the read began"
    now = f", {after[0]:,} when it ended" if after is not None else ""
    version = f" (version {before[1]} -> {after[1]})" if after is not None and len(before) > 1 else ""
    return DataError(
        f"{spec}: the {SCHEMES[spec.scheme][0]} changed while it was read ({then}{now}{version}, "
        f"{read:,} rows read); nothing of it is used. Diagnose it when no writer is adding or deleting documents "
        "(or a snapshot of it).",
        param="corpus",
    )


def _check_metric(spec: CollectionSpec, metric: str, mat: np.ndarray, ids: list) -> None:
    """The distance rule of the module docstring."""
    if metric == "cosine":
        return
    if metric not in ("ip", "l2"):
        raise DataError(
            f"{spec}: the collection ranks by the {metric!r} distance; diagnose ranks by cosine (= ip and "
            "l2 on unit-length vectors), which cannot reproduce it. Index the vectors with cosine, ip or l2.",
            param="corpus",
        )
    norms = np.concatenate([np.linalg.norm(mat[i : i + 65_536], axis=1) for i in range(0, len(mat), 65_536)])
    off = np.flatnonzero(np.abs(norms - 1) > UNIT_TOLERANCE)
    if len(off):
        eg = ", ".join(f"{ids[i]} ({norms[i]:.3g})" for i in off[:3])
        raise DataError(
            f"{spec}: the collection ranks by {metric}, and {len(off):,} of {len(mat):,} stored vectors "
            f"are not unit-length (e.g. {eg}), so its ranking differs from the cosine ranking diagnose computes. "
            "Store L2-normalised vectors (e.g. normalize_embeddings=True), or use the cosine distance.",
            param="corpus",
        )


def _corpus(
    spec, df: pd.DataFrame, mat: np.ndarray, given, source, report: ValidationReport, row_col: str = _ROW
) -> CollectionCorpus:
    """The raw rows checked like a corpus file (:func:`~diagnose.io.records.finish_records`), and their vectors
    through the precomputed path's checks (:func:`~diagnose.io.vectors.checked_vectors`)."""
    # the vectors' package (diagnose.embed), imported once a collection is read: a corpus file only asks is_spec
    from diagnose.io.vectors import PrecomputedEmbeddings, checked_vectors

    where = str(spec)
    corpus = finish_records(
        df, where, report, "corpus", given, CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS
    )
    kept = corpus.df[row_col].to_numpy(dtype=np.int64)
    docs = corpus.df.drop(columns=[row_col])
    rows = mat if len(kept) == len(mat) and (kept == np.arange(len(mat))).all() else mat[kept]
    ids, vecs = checked_vectors([str(d) for d in docs["doc_id"]], rows, where, "doc", report)
    pre = PrecomputedEmbeddings(
        tuple(ids),
        vecs,
        (),
        np.zeros((0, vecs.shape[1]), dtype=np.float32),
        doc_source=where,
        doc_model=str(getattr(source, "model", "") or ""),
    )
    report.stats["corpus_vectors"] = len(ids)
    params = dict(getattr(source, "index_params", {}))
    per_k = float(getattr(source, "ef_search_per_k", 0.0))
    return CollectionCorpus(
        docs, where, vectors=pre, metric=source.metric, index_params=params, ef_search_per_k=per_k
    )
