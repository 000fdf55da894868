"""The cosine rerank: a run's top documents reordered by exact cosine to the query (:func:`cosine_rerank`).

With the same embedding model as the run it mostly undoes an approximate index's reordering; with another model it is
a cheap bi-encoder reranker. The remedy of the near-miss and ranking-failure classes
(:data:`diagnose.whatif.registry.REMEDIES`, id ``"rerank"``), reordering the run's top near-miss depth.
"""

from __future__ import annotations

import numpy as np

from diagnose.checks import positive_int
from diagnose.data import Run
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.space import VectorSpace

#: run rows whose cosines :func:`cosine_rerank` computes at a time
RERANK_BLOCK = 16_384


def cosine_rerank(run: Run, space: VectorSpace, depth: int, *, name: str | None = None) -> Run:
    """The run with each query's top ``depth`` documents reordered by exact cosine to the query.

    Score of a reranked row = cos(query, document) from ``space`` (float32 dot product of L2-normalised rows, stored
    as float64); order by cosine descending, ties by doc id descending (trec_eval's order). Edge cases:

    - a document of the top ``depth`` without a vector (not in the corpus) scores -2.0, below every cosine;
    - rows below ``depth`` keep their order after the reranked ones, with score ``-2.0 - rank`` (their original
      rank), so the score order is the rank order and the run survives a round trip through a TREC file;
    - a query without a vector keeps its order; all its rows get ``-2.0 - rank``.

    Ranks are renumbered 1..n per query; queries keep their order. ``name`` defaults to ``"<run> (cosine rerank)"``.
    """
    positive_int(depth, "depth")
    df = run.df
    qids = df["query_id"].to_numpy(dtype=object)
    docs = df["doc_id"].to_numpy(dtype=object)
    ranks = df["rank"].to_numpy(dtype=np.int64)
    q_row = np.fromiter((space.query_row.get(q, -1) for q in qids), dtype=np.int64, count=len(qids))
    d_row = np.fromiter((space.doc_row.get(d, -1) for d in docs), dtype=np.int64, count=len(docs))
    top = (ranks <= depth) & (q_row >= 0)
    known = top & (d_row >= 0)
    score = -2.0 - ranks.astype(np.float64)
    score[top] = -2.0
    qk, dk = q_row[known], d_row[known]
    cos = np.empty(len(qk), dtype=np.float32)
    # a block at a time: the rows' vectors of a 1M-line run are GBs
    for lo in range(0, len(qk), RERANK_BLOCK):
        part = slice(lo, lo + RERANK_BLOCK)
        cos[part] = np.einsum("ij,ij->i", space.query_vecs[qk[part]], space.doc_vecs[dk[part]])
    score[known] = cos.astype(np.float64)
    order_q = pd.Categorical(qids, categories=pd.unique(qids), ordered=True)
    out = pd.DataFrame({"_q": order_q, "query_id": qids, "doc_id": docs, "score": score + 0.0})
    out = out.sort_values(["_q", "score", "doc_id"], ascending=[True, False, False], kind="mergesort")
    out["rank"] = out.groupby("_q", observed=True).cumcount().to_numpy(dtype=np.int64) + 1
    out = out.drop(columns="_q").reset_index(drop=True)
    out["query_id"] = out["query_id"].astype(object)
    out["doc_id"] = out["doc_id"].astype(object)
    return Run(
        name or f"{run.name} (cosine rerank)",
        out,
        source=f"{run.name}, top {depth} reranked by {space.model}",
    )
