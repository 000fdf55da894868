"""Baseline runs to compare a retriever against: BM25, exact dense search, and their RRF hybrid.

- ``bm25``: :class:`diagnose.lexical.BM25Index` over ``Corpus.texts()`` (title + " " + text), Lucene BM25
  (bm25s, k1=0.9, b=0.4) by default: the "standard BM25" of the BEIR/Anserini tables.
- ``dense``: exact inner-product search of L2-normalised vectors (cosine), :func:`diagnose.embed.dense_search`.
- ``hybrid``: reciprocal rank fusion (k=60) of the two, :func:`diagnose.search.fusion.rrf`.

All three order ties by doc id descending (trec_eval's order) and cut each query's list at ``depth``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from diagnose import defaults
from diagnose.checks import positive_int
from diagnose.data import Corpus, DataError, Queries, Run, ValidationReport
from diagnose.embed import dense_rank_range
from diagnose.embed.search import dense_search_ranked
from diagnose.lexical import BM25Index
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.fusion import rrf

if TYPE_CHECKING:
    from diagnose.lexical import BM25Index


def bm25_run(
    corpus: Corpus,
    queries: Queries,
    query_ids: Sequence[str] | None = None,
    *,
    depth: int = defaults.DEPTH,
    engine: str = defaults.BM25_ENGINE,
    index: BM25Index | None = None,
    report: ValidationReport | None = None,
) -> Run:
    """BM25 top-``depth`` for ``query_ids`` (default: every query), as a run named "bm25".

    ``index``: a prebuilt :class:`~diagnose.lexical.BM25Index` over this corpus (then ``engine`` is ignored).
    A query id without a text in ``queries`` raises :class:`DataError`, or, when ``report`` is given, is counted
    there (code ``bm25_query_without_text``) and left out of the run. Queries that match no document have no rows.
    """
    return bm25_run_ranked(
        corpus, queries, query_ids, [], depth=depth, engine=engine, index=index, report=report
    )[0]


def bm25_run_ranked(
    corpus: Corpus,
    queries: Queries,
    query_ids: Sequence[str] | None,
    pairs: Sequence[tuple[str, str]],
    *,
    depth: int = defaults.DEPTH,
    engine: str = defaults.BM25_ENGINE,
    index: BM25Index | None = None,
    report: ValidationReport | None = None,
) -> tuple[Run, dict[tuple[str, str], tuple[int | None, int | None, float]]]:
    """:func:`bm25_run`, and from the same scores the BM25 ``(best, worst, score)`` of each (query id, doc id) of
    ``pairs`` whose query is in the run's queries (:meth:`~diagnose.lexical.BM25Index.to_run_ranked`)."""
    if index is None:
        index = BM25Index.build(corpus.texts(), list(corpus.ids), engine=engine)
    elif len(index) != len(corpus) or not np.array_equal(index.ids, corpus.ids.astype(object)):
        raise DataError(
            f"The BM25 index given ({len(index)} docs) was not built over this corpus ({len(corpus)} docs, "
            "same ids in the same order). Build it with BM25Index.build(corpus.texts(), corpus.ids)."
        )
    text_of = queries.text_of()
    qids = [str(q) for q in (queries.ids if query_ids is None else query_ids)]
    qids = list(dict.fromkeys(qids))  # a repeated id would only repeat the same list
    missing = [q for q in qids if q not in text_of]
    if missing:
        msg = (
            f"{len(missing)} query ids have no text in the queries file, so BM25 cannot run them"
            f" (e.g. {', '.join(repr(q) for q in missing[:5])})."
        )
        if report is None:
            raise DataError(msg + " Add them to the queries file or drop them from the judgements.")
        report.add(
            "bm25_query_without_text",
            msg + " Left out of the bm25 run.",
            count=len(missing),
            examples=missing,
        )
        qids = [q for q in qids if q in text_of]
    return index.to_run_ranked(qids, [text_of[q] for q in qids], pairs, depth=depth, name="bm25")


def dense_run(
    doc_vecs: np.ndarray,
    query_vecs: np.ndarray,
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    *,
    depth: int = defaults.DEPTH,
    name: str = "dense",
) -> Run:
    """Exact top-``depth`` by inner product (cosine for L2-normalised rows) of every query over every document.

    Row i of ``query_vecs`` is query ``query_ids[i]``, row j of ``doc_vecs`` is document ``doc_ids[j]``.
    Every query gets ``min(depth, #docs)`` rows; within the list, equal scores are ordered by doc id descending
    (which of several documents tied at the cut-off makes the list is up to ``dense_search``).
    """
    return dense_run_ranked(doc_vecs, query_vecs, doc_ids, query_ids, [], [], depth=depth, name=name)[0]


def dense_run_ranked(
    doc_vecs: np.ndarray,
    query_vecs: np.ndarray,
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    query_rows: Sequence[int] | np.ndarray,
    doc_rows: Sequence[int] | np.ndarray,
    *,
    depth: int = defaults.DEPTH,
    name: str = "dense",
) -> tuple[Run, tuple[np.ndarray, np.ndarray]]:
    """:func:`dense_run` and, from the same pass over the documents, the tie range ``(best, worst)`` among all
    documents (:func:`diagnose.embed.dense_rank_range`) of each pair ``(query_rows[i], doc_rows[i])`` (rows of the
    matrices; float32 vectors)."""
    doc_vecs = np.asarray(doc_vecs)
    query_vecs = np.asarray(query_vecs)
    d_ids = np.asarray([str(x) for x in doc_ids], dtype=object)
    q_ids = np.asarray([str(x) for x in query_ids], dtype=object)
    if doc_vecs.ndim != 2 or query_vecs.ndim != 2 or doc_vecs.shape[1] != query_vecs.shape[1]:
        raise DataError(
            f"Dense run: document vectors {doc_vecs.shape} and query vectors {query_vecs.shape} must be 2-D "
            "with the same dimension (were they made by the same model?)."
        )
    if len(d_ids) != len(doc_vecs) or len(q_ids) != len(query_vecs):
        raise DataError(
            f"Dense run: {len(doc_vecs)} document vectors for {len(d_ids)} ids and {len(query_vecs)} query "
            f"vectors for {len(q_ids)} ids; give one id per row."
        )
    depth = positive_int(depth, "depth")
    k = min(depth, len(d_ids))
    if k == 0 or len(q_ids) == 0:
        return Run.from_ranked_lists(name, {}), dense_rank_range(query_vecs, doc_vecs, query_rows, doc_rows)
    idx, scores, ranks = dense_search_ranked(query_vecs, doc_vecs, k, query_rows, doc_rows)
    return topk_run(name, idx, scores, d_ids, q_ids, source="exact dense search"), ranks


def topk_run(
    name: str, idx: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray, query_ids: np.ndarray, *, source: str
) -> Run:
    """The run of a top-k search: row i of ``idx``/``scores`` (``[n_queries, k]``) is query ``query_ids[i]``'s
    documents (rows of ``doc_ids``) and scores. Within a list, equal scores are ordered by doc id descending (the
    dense baseline's order); ranks are 1-based. An index of -1 (an approximate index that found fewer than k
    documents, faiss' convention) is left out, so that query's list is shorter."""
    nq, k = np.asarray(idx).shape
    flat = np.asarray(idx, dtype=np.int64).reshape(-1)
    keep = flat >= 0
    df = pd.DataFrame(
        {
            "_q": np.repeat(np.arange(nq), k)[keep],
            "query_id": pd.Series(np.repeat(np.asarray(query_ids, dtype=object), k)[keep], dtype=object),
            "doc_id": pd.Series(np.asarray(doc_ids, dtype=object)[flat[keep]], dtype=object),
            "score": np.asarray(scores, dtype=np.float64).reshape(-1)[keep],
        }
    )
    df = df.sort_values(["_q", "score", "doc_id"], ascending=[True, False, False], kind="mergesort")
    df["rank"] = df.groupby("_q").cumcount().to_numpy(dtype=np.int64) + 1
    return Run(name, df.drop(columns="_q").reset_index(drop=True), source=source)


def hybrid_run(bm25: Run, dense: Run, *, k: int = defaults.RRF_K, depth: int = defaults.DEPTH) -> Run:
    """Reciprocal rank fusion of a BM25 and a dense run (``k=60``), cut at ``depth``, named "hybrid"."""
    return rrf([bm25, dense], k=k, name="hybrid", depth=depth)
