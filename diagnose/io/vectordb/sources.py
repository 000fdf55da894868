"""One reader per vector database, each through its own client: open a collection, count it, read it in batches.

A source has ``metric`` (``"cosine"``, ``"ip"``, ``"l2"`` or the database's own name of another distance),
``id_field``/``text_field`` (the raw columns holding the store's id and the document text, None: auto-detected),
``state()`` (what changes when the collection is written: the row count, and LanceDB's table version) and
``batches(size)``, yielding ``(rows, vectors)``: a list of flat ``{field: value}`` dicts and a float32 matrix.
The clients are imported here, inside the functions: the core install does not need them (``[vectordb]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from diagnose.data import DataError
from diagnose.io.formats import CORPUS_ID_FIELDS
from diagnose.io.vectordb.spec import CollectionSpec
from diagnose.runtime.extras import needs

Batch = tuple[list[dict[str, Any]], np.ndarray]
STORE_ID = "_id"  # the raw column of the store's own id (Chroma's ids, Qdrant's point ids)


def _unknown(spec: CollectionSpec, names: list[str]) -> DataError:
    what = "table" if spec.scheme == "lancedb" else "collection"
    have = f"the {what}s there: {', '.join(sorted(names))}" if names else f"there is no {what} there"
    return DataError(f"{spec}: no {what} {spec.name!r} in {spec.path} ({have}).", param="corpus")


def _flat(meta: dict[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """``{"metadata": {"title": t}}`` -> ``{"metadata.title": t}`` (one level per nesting)."""
    out: dict[str, Any] = {}
    for key, value in (meta or {}).items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


class ChromaSource:
    """A Chroma collection of a persistent client (``chromadb.PersistentClient(path)``)."""

    id_field = STORE_ID
    text_field = "document"

    def __init__(self, spec: CollectionSpec) -> None:
        with needs("Reading a Chroma collection"):
            import chromadb
            from chromadb.config import Settings

        self.client = chromadb.PersistentClient(
            path=str(spec.path), settings=Settings(anonymized_telemetry=False)
        )
        names = [getattr(c, "name", c) for c in self.client.list_collections()]
        if spec.name not in names:
            raise _unknown(spec, names)
        self.collection = self.client.get_collection(spec.name)
        self.metric = _chroma_space(self.collection)
        self.index_params = chroma_hnsw_params(self.collection)
        self.model = chroma_model(self.collection)

    def state(self) -> tuple[int, ...]:
        return (self.collection.count(),)

    def batches(self, size: int) -> Iterator[Batch]:
        offset = 0
        while True:
            got = self.collection.get(
                limit=size, offset=offset, include=["documents", "metadatas", "embeddings"]
            )
            ids = got["ids"]
            if not ids:
                return
            docs = got.get("documents") or [None] * len(ids)
            metas = got.get("metadatas") or [None] * len(ids)
            rows = [
                {**_own_names(_flat(m)), STORE_ID: i, "document": d}
                for i, d, m in zip(ids, docs, metas, strict=True)
            ]
            yield rows, np.asarray(got["embeddings"], dtype=np.float32).reshape(len(ids), -1)
            offset += len(ids)

    def close(self) -> None:
        return None


#: the raw columns a Chroma row holds besides its metadata: a metadata key of one of these names is kept as
#: ``metadata.KEY`` (name it so with ``--text-field`` / ``--id-field``), never in their place
CHROMA_COLUMNS = (STORE_ID, "document")


def _own_names(meta: dict[str, Any]) -> dict[str, Any]:
    """Chroma metadata with the keys named like its own columns (:data:`CHROMA_COLUMNS`) renamed ``metadata.KEY``."""
    if not any(k in meta for k in CHROMA_COLUMNS):
        return meta
    return {f"metadata.{k}" if k in CHROMA_COLUMNS else k: v for k, v in meta.items()}


def _chroma_space(collection: Any) -> str:
    """The collection's distance: its configuration's ``hnsw.space`` (Chroma >= 1.0), else the ``hnsw:space``
    metadata key (older collections), else Chroma's default ``l2``."""
    config = getattr(collection, "configuration_json", None) or {}  # .configuration warns of legacy functions
    hnsw = config.get("hnsw") if isinstance(config, dict) else None
    space = (hnsw or {}).get("space") if isinstance(hnsw, dict) else None
    space = space or (collection.metadata or {}).get("hnsw:space") or "l2"
    return str(getattr(space, "value", space)).lower()


#: collection metadata keys that name the model which made the vectors (no standard: the common spellings)
MODEL_KEYS = ("embedding_model", "embedding_model_name", "model_name", "model")


def chroma_model(collection: Any) -> str:
    """The model that made the collection's vectors when it is recorded: its embedding function's ``model_name``
    (Chroma's configuration), else a :data:`MODEL_KEYS` key of its metadata; ``""`` when not recorded."""
    config = getattr(collection, "configuration_json", None) or {}
    function = config.get("embedding_function") if isinstance(config, dict) else None
    named = ((function or {}).get("config") or {}).get("model_name") if isinstance(function, dict) else None
    meta = getattr(collection, "metadata", None) or {}
    named = named or next(
        (meta[k] for k in MODEL_KEYS if isinstance(meta.get(k), str) and meta[k].strip()), ""
    )
    return str(named).strip() if isinstance(named, str) else ""


def chroma_hnsw_params(collection: Any) -> dict[str, int]:
    """The collection's HNSW parameters in faiss' names (``M`` = Chroma's ``max_neighbors``, ``efConstruction``,
    ``efSearch``) from its configuration's ``hnsw`` section, or ``{}`` when any is missing (e.g. a SPANN index)."""
    config = getattr(collection, "configuration_json", None) or {}
    hnsw = config.get("hnsw") if isinstance(config, dict) else None
    names = {"M": "max_neighbors", "efConstruction": "ef_construction", "efSearch": "ef_search"}
    if not isinstance(hnsw, dict) or not all(isinstance(hnsw.get(v), int) for v in names.values()):
        return {}
    return {k: int(hnsw[v]) for k, v in names.items()}


class QdrantSource:
    """A Qdrant collection in local mode (``QdrantClient(path=...)``; the folder is locked while it is open). Its
    documents' ids: the payload's id field, else the point ids (:func:`_qdrant_row`)."""

    id_field = None
    text_field = None

    def __init__(self, spec: CollectionSpec) -> None:
        with needs("Reading a Qdrant collection"):
            from qdrant_client import QdrantClient

        self.client = QdrantClient(path=str(spec.path))
        self.name = spec.name
        names = [c.name for c in self.client.get_collections().collections]
        if spec.name not in names:
            self.close()
            raise _unknown(spec, names)
        params = self.client.get_collection(spec.name).config.params.vectors
        self.vector_name: str | None = None
        if isinstance(params, dict):
            if len(params) != 1:
                self.close()
                raise DataError(
                    f"{spec}: the collection has {len(params)} named vectors ({', '.join(params)}); "
                    "diagnose reads a collection with one vector per point.",
                    param="corpus",
                )
            self.vector_name, params = next(iter(params.items()))
        distance = str(getattr(params.distance, "value", params.distance))
        self.metric = {"Cosine": "cosine", "Dot": "ip", "Euclid": "l2"}.get(distance, distance.lower())
        self.index_params = qdrant_hnsw_params(self.client.get_collection(spec.name).config, params)

    def state(self) -> tuple[int, ...]:
        return (self.client.count(self.name, exact=True).count,)

    def batches(self, size: int) -> Iterator[Batch]:
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.name,
                limit=size,
                offset=offset,
                with_payload=True,
                with_vectors=[self.vector_name] if self.vector_name else True,
            )
            if not points:
                return
            rows = [_qdrant_row(p) for p in points]
            vecs = [p.vector[self.vector_name] if self.vector_name else p.vector for p in points]
            yield rows, np.asarray(vecs, dtype=np.float32).reshape(len(points), -1)
            if offset is None:
                return

    def close(self) -> None:
        self.client.close()


def qdrant_hnsw_params(config: Any, vector_params: Any) -> dict[str, int]:
    """The collection's HNSW parameters in faiss' names: ``M`` = ``hnsw_config.m``, ``efConstruction`` =
    ``ef_construct``, the vector's own ``hnsw_config`` overriding the collection's; ``efSearch`` = ``ef_construct``,
    what Qdrant searches with when a request sets no ``hnsw_ef`` (its graph's ``ef`` is ``ef_construct``). ``{}``
    when ``m`` is 0 (no graph: Qdrant searches exhaustively) or a value is missing."""
    base = getattr(config, "hnsw_config", None)
    own = getattr(vector_params, "hnsw_config", None)

    def value(name: str) -> Any:
        v = getattr(own, name, None) if own is not None else None
        return v if v is not None else getattr(base, name, None)

    m, ef = value("m"), value("ef_construct")
    if not isinstance(m, int) or not isinstance(ef, int) or m <= 0 or ef <= 0:
        return {}
    return {"M": m, "efConstruction": ef, "efSearch": ef}


def _qdrant_row(point: Any) -> dict[str, Any]:
    """The payload, flat; the point id (an integer or a UUID) under ``_id`` only when the payload names no id of
    its own (``_id``, ``id``, ``doc_id``, ``docid``: the corpus file's id fields)."""

    row = _flat(point.payload)
    if not any(f in row for f in CORPUS_ID_FIELDS):
        row[STORE_ID] = str(point.id)
    return row


class LanceSource:
    """A LanceDB table (``lancedb.connect(path)``); its vector column is the one fixed-size list column (or
    ``vector``). LanceDB picks the distance per query (default ``l2``): that is what diagnose assumes."""

    id_field = None
    text_field = None
    metric = "l2"

    def __init__(self, spec: CollectionSpec) -> None:
        with needs("Reading a LanceDB table"):
            import lancedb
        import pyarrow as pa

        self.spec = spec
        db = lancedb.connect(str(spec.path))
        listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
        names = list(getattr(listed, "tables", listed))
        if spec.name not in names:
            raise _unknown(spec, names)
        self.table = db.open_table(spec.name)
        schema = self.table.schema
        vectors = [f.name for f in schema if pa.types.is_fixed_size_list(f.type)]
        if len(vectors) != 1 and "vector" not in vectors:
            raise DataError(
                f"{spec}: expected one vector column (a fixed-size list), found "
                f"{', '.join(vectors) or 'none'}; name the one to read 'vector'.",
                param="corpus",
            )
        self.vector = "vector" if "vector" in vectors else vectors[0]
        self.index_params = lance_hnsw_params(self.table, self.vector)
        self.model = lance_model(schema, self.vector)
        self.ef_search_per_k = LANCE_EF_PER_LIMIT if self.index_params else 0.0

    def state(self) -> tuple[int, ...]:
        return (self.table.count_rows(), int(self.table.version))

    def batches(self, size: int) -> Iterator[Batch]:
        for batch in self.table.search().limit(None).to_batches(size):
            rows = batch.drop_columns([self.vector]).to_pylist()
            rows = [_flat(r) for r in rows]
            vec = batch.column(self.vector)
            if vec.null_count:
                self._refuse_nulls(rows, vec)
            dim = vec.type.list_size
            values = vec.flatten().to_numpy(zero_copy_only=False)
            yield rows, values.astype(np.float32).reshape(len(rows), dim)

    def _refuse_nulls(self, rows: list[dict[str, Any]], vec: Any) -> None:
        """A DataError naming the rows of this batch whose vector is null (every document is ranked by its own)."""
        null = [i for i, v in enumerate(vec.is_null().to_pylist()) if v]
        key = next((f for f in CORPUS_ID_FIELDS if rows and f in rows[0]), None)
        eg = ", ".join(repr(rows[i][key]) if key else f"a row with {sorted(rows[i])[:3]}" for i in null[:3])
        raise DataError(
            f"{self.spec}: {len(null):,} rows of a batch have no vector (null in column {self.vector!r}), e.g. {eg}; "
            "diagnose ranks every document by its stored vector. Fix: write the missing vectors, or delete those "
            f'rows (table.delete("{self.vector} IS NULL")).',
            param="corpus",
        )

    def close(self) -> None:
        return None


def lance_model(schema: Any, column: str) -> str:
    """The model of the table's embedding function for ``column`` (LanceDB's ``embedding_functions`` schema
    metadata: ``[{"vector_column", "model": {"name": ..}}]``), else a :data:`MODEL_KEYS` key of the schema metadata;
    ``""`` when not recorded."""
    meta = {
        k.decode(errors="replace"): v.decode(errors="replace") for k, v in (schema.metadata or {}).items()
    }
    try:
        functions = json.loads(meta.get("embedding_functions", "[]"))
    except ValueError:
        functions = []
    for f in functions if isinstance(functions, list) else []:
        model = f.get("model") if isinstance(f, dict) else None
        name = model.get("name") or model.get("model_name") if isinstance(model, dict) else None
        if isinstance(name, str) and name.strip() and f.get("vector_column", column) == column:
            return name.strip()
    return next((meta[k].strip() for k in MODEL_KEYS if meta.get(k, "").strip()), "")


#: LanceDB's default search ``ef`` for an HNSW-type index: 1.5 x the query's limit (its ``ef()`` docstring)
LANCE_EF_PER_LIMIT = 1.5


def lance_hnsw_params(table: Any, column: str) -> dict[str, int]:
    """The HNSW parameters of the table's vector index on ``column`` in faiss' names (``M`` = ``max_connections``,
    ``efConstruction`` = ``construction_ef`` of its ``index_details``), for the HNSW-type indexes (``IVF_HNSW_SQ``,
    ``IVF_HNSW_PQ``, ``IVF_HNSW_FLAT``); ``{}`` without one. The search's ``ef`` is LanceDB's default, 1.5 x the limit,
    set per k (:attr:`~diagnose.io.vectordb.CollectionCorpus.ef_search_per_k`). An IVF-only index (``IVF_FLAT``,
    ``IVF_PQ``) gives ``{}``: LanceDB's API does not expose its partition count."""
    try:
        indices = table.list_indices()
    except Exception:  # noqa: BLE001 - an older client or a remote table: no setting, the frontier still runs
        return {}
    for ix in indices:
        details = getattr(ix, "index_details", None) or {}
        hnsw = details.get("hnsw") if isinstance(details, dict) else None
        if column in list(getattr(ix, "columns", [])) and isinstance(hnsw, dict):
            m, ef = hnsw.get("max_connections"), hnsw.get("construction_ef")
            if isinstance(m, int) and isinstance(ef, int):
                return {"M": m, "efConstruction": ef}
    return {}


SOURCES = {"chroma": ChromaSource, "lancedb": LanceSource, "qdrant": QdrantSource}
