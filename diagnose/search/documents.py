"""A run of chunks read at the document level: each document at the rank of its best chunk, with its best score (what
``chunk_to_doc="max"`` does to a live retriever's lists, :func:`diagnose.retrievers.results.document_list`)."""

from __future__ import annotations

from diagnose.data import ChunkMap, Run
from diagnose.retrievers.results import document_list


def document_run(run: Run, cmap: ChunkMap) -> Run:
    """``run`` (of chunks) at the document level: each query's chunks mapped to their documents, a document at the
    rank of its best chunk with its best score (:func:`diagnose.retrievers.results.document_list`)."""
    lists: dict[str, list[tuple[str, float | None]]] = {}
    for q, d, s in zip(
        run.df["query_id"].tolist(), run.df["doc_id"].tolist(), run.df["score"].tolist(), strict=True
    ):
        lists.setdefault(q, []).append((d, s))
    docs = {q: document_list(items, cmap.document_of, q) for q, items in lists.items()}
    out = Run.from_ranked_lists(
        run.name, docs, source=f"{run.source or run.name}, chunks as documents (best chunk)"
    )
    return Run(out.name, out.df, out.source, latency_ms=run.latency_ms, errors=run.errors)
