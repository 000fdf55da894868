"""Relevance over a chunk corpus, at two levels.

**Chunk level** (the corpus' id space: what ``Dataset.qrels`` holds and ``--write-qrels`` writes):

- from **spans** (a golden set of reference contexts, :mod:`diagnose.io.spans`, located in the documents rebuilt
  from the chunks' offsets): a chunk is relevant to a span, with the span's grade (1), when it holds **the largest
  part of the span** (every chunk tied for it), or **at least** :data:`CHUNK_SHARE` **of the span**, or when the
  span fills at least :data:`CHUNK_SHARE` **of the chunk** (a span longer than the chunk):
  :func:`chunk_qrels_from_spans`. So a span inside one chunk makes that chunk relevant; a span cut 70/30 by a chunk
  boundary, the chunk with 70%; cut 50/50, both; a long span over five chunks, every chunk it fills. Its document
  is the document-level judgement. Without offsets the contexts are located in the chunks' own texts, each chunk
  holding one is relevant (a context cut by a boundary is then found only approximately, or not at all);
- from **document judgements** (id-based qrels naming documents, not chunks): every chunk of a judged document
  carries the document's grade (:func:`chunk_level_qrels`). The chunk-level metrics then count every chunk of a
  relevant document (recall@k is low by construction): read the document level. Judgements naming chunk ids are
  kept as they are; an id that is both a chunk and a document is a chunk.

**Document level**: a document's grade is the best grade of its chunks (and of ids that are documents already)
(:func:`document_qrels`); a run's document is retrieved at the rank of its best chunk, with its best score
(:func:`diagnose.search.documents.document_run`, the collapse :func:`diagnose.run_retriever` applies with ``chunk_to_doc="max"``). Over a
chunked copy of a corpus whose chunks all carry their document's judgement, the document-level metrics equal the
document corpus' (``tests/test_chunks.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.data import ChunkMap, Qrels, Span, ValidationReport
from diagnose.io.chunks.corpus import chunks_by_document
from diagnose.runtime.lazy import pandas as pd

#: the share of a span a chunk must hold (or of a chunk a span must fill) to be relevant (module docstring)
CHUNK_SHARE = 0.5


def held(span_start: int, span_end: int, start: int, end: int) -> int:
    """How many characters of the span ``[span_start, span_end)`` the chunk ``[start, end)`` holds."""
    return max(0, min(span_end, end) - max(span_start, start))


def relevant_chunks(span: Span, chunks: Sequence[tuple[int, int, str]]) -> list[str]:
    """The chunks (``(start, end, id)`` of the span's document) relevant to ``span`` by the rule of the module
    docstring, in document order."""
    assert span.start is not None and span.end is not None
    parts = [(held(span.start, span.end, s, e), e - s, c) for s, e, c in chunks]
    parts = [p for p in parts if p[0] > 0]
    if not parts:
        return []
    most = max(h for h, _, _ in parts)
    length = span.end - span.start
    return [
        c for h, n, c in parts if h == most or h >= CHUNK_SHARE * length or (n > 0 and h >= CHUNK_SHARE * n)
    ]


def chunk_qrels_from_spans(spans: Sequence[Span], cmap: ChunkMap, placeholder: str) -> list[tuple[str, str]]:
    """The relevant ``(query_id, chunk_id)`` pairs of ``spans`` located in the documents of ``cmap`` (which has
    offsets), in span order, each once. An unmatched span keeps its placeholder ``placeholder + QUERY:N``; a span no
    chunk overlaps keeps its document id (counted as a judgement outside the corpus)."""
    by_doc = chunks_by_document(cmap)
    pairs: dict[tuple[str, str], None] = {}
    for s in spans:
        if s.doc_id is None:
            pairs[(s.query_id, f"{placeholder}{s.query_id}:{s.reference}")] = None
            continue
        found = relevant_chunks(s, by_doc.get(s.doc_id, []))
        for c in found or [s.doc_id]:
            pairs[(s.query_id, c)] = None
    return list(pairs)


def chunk_level_qrels(qrels: Qrels, cmap: ChunkMap, report: ValidationReport) -> Qrels:
    """``qrels`` in the chunk corpus' id space: judgements of documents become judgements of each of their chunks,
    with the document's grade; judgements of chunks stay (module docstring). Counted in ``report``
    (``stats["qrels_level"]``: ``chunk``, ``document`` or ``mixed``)."""
    df = qrels.df
    ids = df["doc_id"].tolist()
    chunks_of: dict[str, list[str]] = {}
    for c, d in cmap.parent.items():
        chunks_of.setdefault(d, []).append(c)
    is_doc = [i not in cmap.parent and i in chunks_of for i in ids]
    n_doc = sum(is_doc)
    if not n_doc:
        report.stats["qrels_level"] = "chunk"
        return qrels
    report.stats["qrels_level"] = "document" if n_doc == len(ids) else "mixed"
    rows = [
        (q, c, g)
        for q, d, g, doc in zip(df["query_id"], ids, df["relevance"], is_doc, strict=True)
        for c in (chunks_of[d] if doc else [d])
    ]
    out = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype({"relevance": "int64"})
    out = out.drop_duplicates(["query_id", "doc_id"], keep="first").reset_index(drop=True)
    out["query_id"] = out["query_id"].astype(object)
    out["doc_id"] = out["doc_id"].astype(object)
    report.add(
        "qrels_documents_to_chunks",
        f"{n_doc:,} of the {len(ids):,} judgements of the golden set name documents of the chunk corpus, not "
        f"chunks: each of their chunks carries the document's grade ({len(out):,} chunk "
        "judgements). Chunk-level metrics then count every chunk of a relevant document: read the document-level "
        "metrics",
        severity="info",
        file=qrels.source,
    )
    return Qrels(out, qrels.source, spans=qrels.spans)


def document_qrels(qrels: Qrels, cmap: ChunkMap) -> Qrels:
    """The document-level judgements of chunk-level ``qrels``: each judged id mapped to its document
    (:meth:`ChunkMap.document_of`), a document's grade the best of its chunks; first-seen order."""
    df = qrels.df
    docs = [cmap.document_of(d) for d in df["doc_id"].tolist()]
    out = pd.DataFrame({"query_id": df["query_id"].tolist(), "doc_id": docs, "relevance": df["relevance"]})
    out = out.groupby(["query_id", "doc_id"], sort=False, as_index=False)["relevance"].max()
    out["query_id"] = out["query_id"].astype(object)
    out["doc_id"] = out["doc_id"].astype(object)
    out["relevance"] = out["relevance"].astype("int64")
    return Qrels(out, qrels.source, spans=qrels.spans)
