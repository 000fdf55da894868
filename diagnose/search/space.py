"""One vector space for a data set: document and query vectors, aligned with their ids.

The vectors come either from an encoder (the bundled default, any sentence-transformers model, or a fake encoder in
tests), encoded once and cached on disk, or from vectors the user already has from the production index
(``--doc-embeddings/--query-embeddings``); then nothing is re-embedded. Rows are L2-normalised, so cosine = dot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from diagnose import embed
from diagnose.data import DataError, Dataset, Qrels, Run, ValidationReport
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.progress import Progress


@dataclass(frozen=True)
class VectorSpace:
    """Document vectors for the whole corpus and query vectors for the queries asked for."""

    model: str
    doc_ids: np.ndarray
    doc_vecs: np.ndarray
    query_ids: np.ndarray
    query_vecs: np.ndarray
    doc_row: dict[str, int] = field(repr=False, compare=False)
    query_row: dict[str, int] = field(repr=False, compare=False)
    label: str = field(
        default="", compare=False
    )  # how people call the model ("all-MiniLM-L6-v2 (bundled), bf16")

    @property
    def model_label(self) -> str:
        """The model's human label, else its identity (``model``, a fingerprint such as ``st-sha256:...+bf16``)."""
        return self.label or self.model

    @classmethod
    def from_arrays(
        cls,
        model: str,
        doc_ids: Sequence[str],
        doc_vecs: np.ndarray,
        query_ids: Sequence[str],
        query_vecs: np.ndarray,
        label: str = "",
    ) -> VectorSpace:
        d_ids = np.asarray(doc_ids, dtype=object)
        q_ids = np.asarray(query_ids, dtype=object)
        return cls(
            model=model,
            doc_ids=d_ids,
            doc_vecs=np.ascontiguousarray(doc_vecs, dtype=np.float32),
            query_ids=q_ids,
            query_vecs=np.ascontiguousarray(query_vecs, dtype=np.float32),
            doc_row={d: i for i, d in enumerate(d_ids)},
            query_row={q: i for i, q in enumerate(q_ids)},
            label=label,
        )

    @property
    def dim(self) -> int:
        return int(self.doc_vecs.shape[1])

    def query_vec(self, query_id: str) -> np.ndarray:
        return self.query_vecs[self.query_row[query_id]]

    def doc_vec(self, doc_id: str) -> np.ndarray:
        return self.doc_vecs[self.doc_row[doc_id]]

    def cosine(self, query_id: str, doc_id: str) -> float:
        return float(self.query_vec(query_id) @ self.doc_vec(doc_id))

    def with_vectors(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``pairs`` (columns ``query_id``, ``doc_id``) whose query and document both have a vector."""
        # membership tested pair by pair: Series.isin(dict) converts every key (1M documents: ~4 s)
        known = [
            q in self.query_row and d in self.doc_row
            for q, d in zip(pairs["query_id"], pairs["doc_id"], strict=True)
        ]
        return pairs[np.asarray(known, dtype=bool)]

    def pair_cosines(self, pairs: pd.DataFrame) -> np.ndarray:
        """cos(query, document) of every row of ``pairs`` (columns ``query_id``, ``doc_id``, all with vectors: see
        :meth:`with_vectors`), float32 in row order."""
        qi = pairs["query_id"].map(self.query_row).to_numpy(dtype=np.int64)
        di = pairs["doc_id"].map(self.doc_row).to_numpy(dtype=np.int64)
        return np.einsum("ij,ij->i", self.query_vecs[qi], self.doc_vecs[di])

    @classmethod
    def build(
        cls,
        ds: Dataset,
        query_ids: Sequence[str] | None = None,
        *,
        model: str | None = None,
        encoder=None,
        doc_embeddings: str | Path | None = None,
        query_embeddings: str | Path | None = None,
        doc_ids: str | Path | None = None,
        query_ids_file: str | Path | None = None,
        cache_dir: str | Path | None = None,
        progress: Progress = False,
        report: ValidationReport | None = None,
    ) -> VectorSpace:
        """Embed (or load) the corpus and ``query_ids`` (default: every query with text).

        ``encoder`` (an object with ``name`` and ``encode``) wins over ``model``; precomputed vectors win over both.
        ``progress`` (:data:`diagnose.runtime.progress.Progress`): the bar of the documents' encoding.
        """

        if ds.corpus is None or ds.queries is None:
            raise DataError(
                "Embeddings need the corpus and the queries: load a BEIR folder, or give the corpus and queries "
                "files.",
                param="corpus" if ds.corpus is None else "queries",
            )
        report = report if report is not None else ds.report
        texts_of = ds.queries.text_of()
        qids = list(query_ids) if query_ids is not None else list(texts_of)
        if query_embeddings and not doc_embeddings:
            raise DataError(
                "Precomputed query vectors need the document vectors too (--doc-embeddings / doc_embeddings=); "
                "document vectors alone are accepted (the queries are then encoded by the model).",
                param="embeddings",
            )
        if doc_embeddings and not query_embeddings:  # like a vector database's stored vectors
            pre = embed.load_precomputed(doc_embeddings, None, doc_ids, report=report)
            encoder = encoder if encoder is not None else embed.load_encoder(model)
            return cls.with_stored(ds, qids, pre, encoder, cache_dir=cache_dir, report=report)
        if doc_embeddings:
            pre = embed.load_precomputed(
                doc_embeddings, query_embeddings, doc_ids, query_ids_file, report=report
            )
            corpus_ids = list(ds.corpus.ids)
            return cls.from_arrays(
                f"precomputed:{Path(doc_embeddings).name}",
                corpus_ids,
                pre.doc_matrix(corpus_ids),
                qids,
                pre.query_matrix(qids),
            )
        if encoder is None:
            encoder = embed.load_encoder(model)
        return cls._encoded(ds, qids, texts_of, encoder, cache_dir, progress, report)

    @classmethod
    def with_stored(
        cls,
        ds: Dataset,
        query_ids: Sequence[str],
        stored: Any,
        encoder: Any,
        *,
        cache_dir: str | Path | None = None,
        report: ValidationReport | None = None,
    ) -> VectorSpace:
        """The corpus's stored vectors (``stored``: a :class:`~diagnose.io.vectors.PrecomputedEmbeddings`,
        e.g. of a vector database collection, :mod:`diagnose.io.vectordb`) and ``query_ids`` encoded by ``encoder``;
        ``DataError(param="model")`` when the query vectors' dimension is not the documents'."""

        report = report if report is not None else ds.report
        texts_of = ds.queries.text_of()
        qids = list(query_ids)
        cache = embed.EmbeddingCache(Path(cache_dir) / "embeddings" if cache_dir else None)
        query_vecs = embed.embed_texts(encoder, _query_texts(qids, texts_of), cache=cache, report=report)
        if query_vecs.shape[1] != stored.dim:
            raise DataError(
                f"{stored.doc_source} holds {stored.dim}-dimensional vectors but the model {encoder.name} encodes "
                f"queries into {query_vecs.shape[1]} dimensions; name the model that embedded the collection "
                "(--model / model=).",
                param="model",
            )
        corpus_ids = list(ds.corpus.ids)
        label = str(getattr(encoder, "label", "") or encoder.name)
        _report_query_model(stored, label, report)
        return cls.from_arrays(
            f"{encoder.name} + {stored.doc_source}",
            corpus_ids,
            stored.doc_matrix(corpus_ids),
            qids,
            query_vecs,
            label=f"{label} + {stored.doc_source}",
        )

    @classmethod
    def _encoded(
        cls,
        ds: Dataset,
        qids: list[str],
        texts_of: dict[str, str],
        encoder: Any,
        cache_dir: str | Path | None,
        progress: Progress,
        report: ValidationReport,
    ) -> VectorSpace:
        """The space of ``encoder``'s vectors of the corpus and the queries ``qids`` (read from the embedding cache
        under ``cache_dir`` when there; the documents' encoding reported to ``progress``)."""

        cache = embed.EmbeddingCache(Path(cache_dir) / "embeddings" if cache_dir else None)
        query_texts = _query_texts(qids, texts_of)
        doc_vecs = embed.embed_texts(
            encoder, ds.corpus.texts(), cache=cache, progress=progress, report=report
        )
        query_vecs = embed.embed_texts(encoder, query_texts, cache=cache, progress=False, report=report)
        return cls.from_arrays(
            encoder.name,
            list(ds.corpus.ids),
            doc_vecs,
            qids,
            query_vecs,
            label=str(getattr(encoder, "label", "") or ""),
        )


def same_model(a: str, b: str) -> bool:
    """Whether two model names name one model: compared case-blind by their last path part (``org/name`` ->
    ``name``), every name of the bundled model (:data:`~diagnose.embed.loading.DEFAULT_ALIASES`) being one."""

    def norm(name: str) -> str:
        n = name.strip().lower()
        return "all-minilm-l6-v2" if n in embed.DEFAULT_ALIASES else n.rstrip("/").rsplit("/", 1)[-1]

    return norm(a) == norm(b)


def _report_query_model(stored: Any, label: str, report: ValidationReport) -> None:
    """Warn that the queries are encoded by ``label`` for document vectors made elsewhere: they match only when the
    same model made both; when the store records its model (``doc_model``) and it is another, say which two."""
    recorded = getattr(stored, "doc_model", "")
    if recorded and same_model(recorded, label):
        return
    if recorded:
        message = (
            f"{stored.doc_source} records that its vectors were made by {recorded!r}, but the queries are encoded "
            f"with {label!r}: the cosines of two models mean nothing (and the dense metrics with them). Name the "
            f"model that made the vectors (--model {recorded} / model=)"
        )
    else:
        message = (
            f"the queries are encoded with {label!r} for the document vectors of {stored.doc_source}: they match "
            "only if that same model (and version) made the document vectors. Name it with --model / model= (or "
            "give the query vectors too)"
        )
    report.add("query_model_for_stored_vectors", message, file=stored.doc_source)


def _query_texts(qids: list[str], texts_of: dict[str, str]) -> list[str]:
    """The texts of ``qids``; ``DataError`` naming the queries without one."""
    missing_text = [q for q in qids if q not in texts_of]
    if missing_text:
        raise DataError(
            f"{len(missing_text)} queries have no text in the queries file (e.g. {', '.join(missing_text[:5])}); "
            "add them to the queries file so they can be embedded."
        )
    return [texts_of[q] for q in qids]


def relevant_pair_cosines(qrels: Qrels, run: Run, space: VectorSpace, k: int) -> pd.DataFrame:
    """cos(query, relevant document) of every judged relevant pair that has vectors in ``space``.

    Columns ``query_id, doc_id, cosine, outcome``: ``"hit"`` when the run has the document in its top ``k``,
    ``"miss"`` otherwise (qrels order). Pairs whose query or document has no vector are left out."""
    rel = qrels.relevant()[["query_id", "doc_id"]]
    top = run.top(k)[["query_id", "doc_id"]].assign(found=True)
    pairs = space.with_vectors(rel.merge(top, on=["query_id", "doc_id"], how="left"))
    cos = space.pair_cosines(pairs)
    found = pairs["found"].eq(True).to_numpy()
    return pd.DataFrame(
        {
            "query_id": pairs["query_id"].to_numpy(),
            "doc_id": pairs["doc_id"].to_numpy(),
            "cosine": cos.astype(np.float64),
            "outcome": np.where(found, "hit", "miss"),
        }
    )
