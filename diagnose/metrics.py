"""Retrieval metrics with trec_eval's conventions, per query and averaged, vectorised over all queries at once.

Metric names (ranx style, ``k`` any positive integer), with their trec_eval equivalents:

- ``precision@k`` = rel(k) / k  (``P_k``)
- ``recall@k`` = rel(k) / R  (``recall_k``)
- ``hit_rate@k`` = 1 if rel(k) > 0 else 0  (``success_k``)
- ``mrr`` = 1 / r1, and 0 when no relevant document is retrieved  (``recip_rank``)
- ``mrr@k`` = 1 / r1 if r1 <= k else 0  (no trec_eval measure; ranx ``mrr@k``)
- ``ndcg@k`` = DCG@k / IDCG@k, DCG@k = sum over ranks i <= k of g_i / log2(i + 1)  (``ndcg_cut_k``)
- ``map`` = (1 / R) * sum over the relevant retrieved documents d of P(rank(d))  (``map``)
- ``map@k`` = (1 / R) * sum over the relevant d with rank(d) <= k of P(rank(d))  (``map_cut_k``)
- ``r_precision`` = rel(R) / R  (``Rprec``)
- ``f1@k`` = 2 P R / (P + R), P = precision@k, R = recall@k; 0 when both are 0  (ranx ``f1@k``)
- ``judged@k`` = judged(k) / min(k, n)  (ir_measures ``Judged@k``)
- ``hole@k`` = (documents in the top k judged for no query) / k  (BEIR ``Hole@k``)

where ``rel(k)`` is the number of relevant documents at ranks ``1..k``, ``R`` the number of relevant documents
of the query in the qrels (retrieved or not), ``r1`` the rank of the first relevant document and ``P(r)`` the
precision at rank ``r``; ``judged(k)`` the number of documents in the top ``k`` with a qrels row for the query
(any grade: 0 and negative grades count as judged) and ``n`` the number of results of the query.

Coverage metrics (how far the qrels cover the run, not how good it is; no quality band):

- **judged@k** follows ir_measures 0.4.3 (``providers/judged_provider.py``): its denominator is ``min(k, n)``, so
  a run with 3 results, 2 of them judged, has judged@10 = 2/3. Judged means judged *for this query*.
- **hole@k** follows BEIR 2.2.0 (``beir/retrieval/custom_metrics.py``, ``hole``): a document is a hole when it
  appears in the qrels of *no* query (BEIR's "annotated corpus"), so a document judged only for another query is
  neither judged for this one nor a hole: ``judged@k + hole@k`` can be below 1. The denominator is ``k`` even when
  the run lists fewer. BEIR's own average sums over the run's queries and divides by the number of qrels queries;
  here, like every metric, it is the mean over the scored queries.
- A query missing from the run scores 0 on both (nothing retrieved: nothing judged, no hole).
- :func:`metric_bounds` gives every metric with the unjudged documents counted non-relevant (today's value) and
  at best (upper bound).

Conventions (the numbers equal trec_eval 9.0.x ``-c`` to floating point; checked in
``tests/test_metrics_reference.py`` against pytrec_eval, ranx and trec_eval's own test outputs):

- **Relevant** means grade ``>= relevance_level`` (default 1, i.e. grade > 0 on integer grades; trec_eval ``-l``).
  Grade 0 and negative grades are non-relevant. trec_eval reads a negative grade as "in the pool but not
  judged"; no metric here distinguishes that from non-relevant.
- **nDCG**: gain = grade (linear, Järvelin & Kekäläinen, like trec_eval; *not* ``2^grade - 1``) for every
  grade > 0, whatever ``relevance_level``; negative grades gain 0. Discount ``log2(rank + 1)``. The ideal DCG
  sorts *all* judged grades of the query (retrieved or not) in decreasing order and cuts at ``k``
  (``ndcg_cut``). trec_eval does not divide the gain at rank 1; that is the same number, ``log2(2) = 1``.
- **precision@k** divides by ``k`` even when the run has fewer than ``k`` results (``P_k``).
- **map@k** divides by ``R``, not by ``min(k, R)`` (trec_eval ``map_cut``; sentence-transformers'
  ``MAP@k`` divides by ``min(k, R)`` and gives larger numbers).
- **mrr** has no cutoff (``recip_rank``); ``mrr@k`` is 0 when the first relevant document is below rank ``k``.
- **Order**: the run is already in its final order; metrics read the ``rank`` column (1-based) and ignore
  ``score``. :mod:`diagnose.io` orders TREC files like trec_eval (score descending, ties by doc id descending,
  scores compared as C ``float`` like the trec_eval inside pytrec-eval-terrier; see its docstring).
- **Which queries count**: the aggregate is the mean over the *golden queries* (in the qrels) with at least one
  relevant document. Those missing from the run score 0 on every metric and are listed in
  ``Evaluation.missing_queries`` (trec_eval ``-c``; without ``-c`` trec_eval averages only over queries present
  in both files). Judged queries without any relevant document are listed in ``no_relevant_queries`` and not
  averaged (trec_eval would average their zeros). Run queries absent from the qrels are ignored and listed in
  ``unjudged_queries``.
- **Duplicates**: readers remove a document repeated within one query's results. If one slips through, it is
  counted once, at its best rank (so no metric exceeds 1), while its other rows still occupy their ranks;
  trec_eval refuses such a file. A (query, doc) pair judged twice in the qrels keeps the last grade.

Implementation, vectorised over all queries at once (no Python loop over queries or rows): the query of each run
row comes from the blocks of consecutive equal query ids (one neighbour comparison); doc ids get a 64-bit
fingerprint computed from their UTF-8 bytes straight from the Arrow buffers; (query, doc) pairs are looked up in
the keys of the *positive* judgements (a direct-address table on the keys' top bits) and every match is confirmed
on the id strings, so the join is exact. Each metric is then a per-query ``np.bincount`` over the few joined
rows, masked by rank cutoffs; the ideal DCG comes from the judged grades sorted once per query. About 0.1 s for a
1M-row run of 1,000 queries (see ``bench/RESULTS.md``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
import pandas as pd

from diagnose.data import DataError, Qrels, Run

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BANDS",
    "DEFAULT_FAMILIES",
    "QUALITY_BANDS",
    "REGISTRY",
    "Evaluation",
    "Metric",
    "MetricBounds",
    "evaluate",
    "evaluate_many",
    "expand_metrics",
    "metric_bounds",
    "metric_family",
    "parse_metric",
    "quality_band",
]


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Evaluation:
    """Scores of one run.

    ``per_query``: index ``query_id`` (golden queries with >= 1 relevant document, in the qrels' first-seen order),
    one float column per metric in the order asked; queries missing from the run are rows of zeros.
    ``aggregate``: metric name -> mean of its column (the number to report).
    ``missing_queries``: golden queries with >= 1 relevant document and no result in the run (scored 0).
    ``no_relevant_queries``: judged queries without any relevant document (not scored, not averaged).
    ``unjudged_queries``: run queries absent from the qrels (ignored).
    """

    per_query: pd.DataFrame
    aggregate: dict[str, float]
    missing_queries: list[str] = field(default_factory=list)
    no_relevant_queries: list[str] = field(default_factory=list)
    unjudged_queries: list[str] = field(default_factory=list)
    run_name: str = ""

    @property
    def metrics(self) -> list[str]:
        return [str(c) for c in self.per_query.columns]

    @property
    def n_queries(self) -> int:
        """Number of queries averaged."""
        return len(self.per_query)


class Metric(NamedTuple):
    """One metric family: ``kernel(tables, k)`` returns the per-query values of every scored query."""

    name: str
    kernel: Callable[[_RunTables, int | None], np.ndarray]
    cutoff: Literal["required", "optional", "none"]
    trec_eval: str
    definition: str


# --------------------------------------------------------------------------------------------- string keys

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def _arrow(values: pd.Series) -> pa.Array:
    """The column as one contiguous Arrow ``large_string`` array (zero-copy for pandas' Arrow-backed ``str``)."""
    import pyarrow as pa

    if isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
        arr = pa.array(values.array)
    else:
        obj = values.to_numpy(dtype=object)
        try:
            arr = pa.array(obj, type=pa.large_string())
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # ids that are not str (the records promise str)
            arr = pa.array([str(v) for v in obj], type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], type=pa.large_string())
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    if arr.null_count:
        import pyarrow.compute as pc

        arr = pc.fill_null(arr, "")
    return arr


def _fingerprints(arr: pa.Array) -> np.ndarray:
    """64-bit fingerprint of each string of a ``large_string`` array, from its UTF-8 bytes and length.

    Vectorised: an unaligned little-endian 64-bit view over the data buffer gives, for any byte offset, the next
    8 bytes; word ``j`` of every string is gathered at ``start + 8 j``, masked past the string's end, and mixed in.
    Equal strings always get equal fingerprints, whatever the other strings of the array; two different strings
    collide with probability ~2^-64, and every match found through fingerprints is confirmed on the strings
    themselves (see :func:`_join`).
    """
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    lens = np.diff(offs)
    lo, hi = int(offs[0]), int(offs[-1])
    pad = np.zeros(hi - lo + 8, dtype=np.uint8)
    if hi > lo:
        pad[: hi - lo] = np.frombuffer(bufs[2], dtype=np.uint8)[lo:hi]
    words = np.ndarray(shape=(hi - lo + 1,), dtype="<u8", buffer=pad, strides=(1,))  # words[i]: bytes i..i+7
    starts = offs[:-1] - lo
    keep = np.array([(1 << (8 * b)) - 1 for b in range(9)], dtype=np.uint64)  # mask of the first b bytes
    h = lens.astype(np.uint64) * _M1
    for j in range(-(-int(lens.max()) // 8)):
        rows = None if lens.min() > 8 * j else np.flatnonzero(lens > 8 * j)  # strings that have a word j
        at = starts + 8 * j if rows is None else starts[rows] + 8 * j
        nb = np.minimum(lens - 8 * j if rows is None else lens[rows] - 8 * j, 8)
        x = ((h if rows is None else h[rows]) ^ (words[at].astype(np.uint64, copy=False) & keep[nb])) * _M2
        x ^= x >> np.uint64(31)
        if rows is None:
            h = x
        else:
            h[rows] = x
    h ^= h >> np.uint64(29)
    return h * _M3


def _pair_keys(doc_fp: np.ndarray, query_code: np.ndarray) -> np.ndarray:
    """64-bit key of a (judged query code, doc fingerprint) pair."""
    k = doc_fp ^ ((query_code.astype(np.uint64) + np.uint64(1)) * _M3)
    k ^= k >> np.uint64(33)
    k *= _M2
    k ^= k >> np.uint64(29)
    return k


def _segments(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Split a column into blocks of equal consecutive values: ``(starts, value_of_each_block)``.

    A run lists each query's results together, so the query blocks come from one vectorised comparison of
    neighbours instead of hashing every row; a query split over several blocks just gives several blocks.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    changed = pc.not_equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.concatenate(([0], np.flatnonzero(changed) + 1))
    return starts, np.asarray(arr.take(pa.array(starts)).to_pylist(), dtype=object)


# --------------------------------------------------------------------------------------------- qrels


@dataclass(frozen=True)
class _PreparedQrels:
    """Everything about the qrels that does not depend on the run (shared by :func:`evaluate_many`)."""

    relevance_level: int
    query_index: pd.Index  # every judged query id (object), first-seen order; position = judged query code
    eval_of_query: np.ndarray  # judged query code -> scored query code (-1: no relevant document)
    eval_ids: np.ndarray  # scored query ids (object), output order
    n_rel: np.ndarray  # R per scored query, float64
    no_relevant: list[str]
    pos_keys: np.ndarray  # sorted pair keys of the grade > 0 judgements
    pos_q: np.ndarray  # their judged query codes, aligned with pos_keys
    pos_docs: pa.Array  # their doc ids (large_string), aligned
    pos_grades: np.ndarray  # their grades (int64), aligned
    table: np.ndarray  # slot (key >> shift) -> position in pos_keys; -1 empty, -2 shared by several keys
    shift: np.uint64
    keys_unique: bool  # False if two positive pairs share a key (then the exact, slower join is used)
    ideal_q: np.ndarray  # scored query code of each grade > 0 judgement, sorted by (query, grade desc)
    ideal_rank: np.ndarray  # 1-based position of that grade in the ideal ranking of its query
    ideal_gain: np.ndarray  # the grade (float64)
    judged_keys: np.ndarray  # sorted pair keys of *every* judgement (any grade), for judged@k and the bounds
    judged_q: np.ndarray  # their judged query codes, aligned with judged_keys
    judged_rows: np.ndarray  # their positions in judged_docs, aligned
    judged_docs: pa.Array  # doc ids of the qrels rows (large_string), indexed by judged_rows
    judged_unique: bool  # False if two judgements share a key (then the exact, slower lookup is used)


def _grades(qrels: Qrels) -> np.ndarray:
    rel = qrels.df["relevance"]
    if pd.api.types.is_integer_dtype(rel.dtype):
        return rel.to_numpy(dtype=np.int64)
    values = pd.to_numeric(rel, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{qrels.source or 'qrels'}: relevance must be an integer grade; query "
            f"{qrels.df['query_id'].iloc[i]!r} doc {qrels.df['doc_id'].iloc[i]!r} has {rel.iloc[i]!r} "
            f"({int(bad.sum())} such rows). Round the grades (trec_eval reads them as integers)."
        )
    return values.astype(np.int64)


def _prepare(qrels: Qrels, relevance_level: int = 1) -> _PreparedQrels:
    import pyarrow as pa

    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)):
        raise DataError(f"relevance_level must be an integer >= 1, got {relevance_level!r}.")
    if relevance_level < 1:
        raise DataError(f"relevance_level must be an integer >= 1, got {relevance_level!r}.")
    df = qrels.df
    grades = _grades(qrels)
    q_codes, q_ids = pd.factorize(df["query_id"], sort=False)
    q_codes = q_codes.astype(np.int64)
    docs = _arrow(df["doc_id"])
    keys = _pair_keys(_fingerprints(docs), q_codes)
    rows = np.arange(len(df))
    order = np.argsort(keys)
    if len(keys) > 1 and (keys[order[1:]] == keys[order[:-1]]).any():
        # a (query, doc) pair judged twice: the last judgement wins, like Qrels.as_dict(). Decided on the ids
        # themselves, not on the keys, so a key collision cannot drop a judgement.
        dup = pd.DataFrame({"q": q_codes, "d": docs.to_numpy(zero_copy_only=False)}).duplicated(keep="last")
        rows = np.flatnonzero(~dup.to_numpy())
        q_codes, grades, keys = q_codes[rows], grades[rows], keys[rows]
        order = np.argsort(keys)
    query_index = pd.Index(np.asarray(q_ids, dtype=object), dtype=object)
    n_all = len(query_index)

    n_rel_all = np.bincount(q_codes[grades >= relevance_level], minlength=n_all)
    has_rel = n_rel_all > 0
    eval_of_query = np.full(n_all, -1, dtype=np.int64)
    eval_of_query[has_rel] = np.arange(int(has_rel.sum()))
    eval_ids = query_index.to_numpy()[has_rel]
    no_relevant = [str(q) for q in query_index.to_numpy()[~has_rel]]

    judged_keys, judged_q, judged_rows = keys[order], q_codes[order], rows[order]  # every judgement, by key
    pos = np.flatnonzero(grades > 0)
    order = order[grades[order] > 0]  # positive judgements, sorted by key
    pos_keys = keys[order]
    # direct-address table on the top bits of the key (load <= 1/8): slot -> position in pos_keys, -1 when empty,
    # -2 when several positive keys share the slot (those few lookups fall back to a binary search)
    bits = min(25, max(16, int(np.ceil(np.log2(max(len(pos_keys), 1) * 8)))))
    shift = np.uint64(64 - bits)
    slots = (pos_keys >> shift).astype(np.intp)
    table = np.full(1 << bits, -1, dtype=np.int32 if len(pos_keys) < 2**31 else np.int64)
    table[slots] = np.arange(len(pos_keys))
    shared = np.flatnonzero(np.bincount(slots, minlength=1 << bits) > 1) if len(slots) else slots
    table[shared] = -2

    # ideal ranking: grades of each scored query sorted decreasingly (queries without relevant docs dropped)
    pe, pg = eval_of_query[q_codes[pos]], grades[pos]
    iq, ig = pe[pe >= 0], pg[pe >= 0]
    iorder = np.lexsort((-ig, iq))
    iq, ig = iq[iorder], ig[iorder]
    first = np.searchsorted(iq, np.arange(len(eval_ids)))
    ideal_rank = np.arange(1, len(iq) + 1, dtype=np.int64) - (first[iq] if len(iq) else 0)

    return _PreparedQrels(
        relevance_level=int(relevance_level),
        query_index=query_index,
        eval_of_query=eval_of_query,
        eval_ids=eval_ids,
        n_rel=n_rel_all[has_rel].astype(np.float64),
        no_relevant=no_relevant,
        pos_keys=pos_keys,
        pos_q=q_codes[order],
        pos_docs=docs.take(pa.array(rows[order], type=pa.int64())),
        pos_grades=grades[order],
        table=table,
        shift=shift,
        keys_unique=not (pos_keys[1:] == pos_keys[:-1]).any(),
        ideal_q=iq,
        ideal_rank=ideal_rank,
        ideal_gain=ig.astype(np.float64),
        judged_keys=judged_keys,
        judged_q=judged_q,
        judged_rows=judged_rows,
        judged_docs=docs,
        judged_unique=not (judged_keys[1:] == judged_keys[:-1]).any(),
    )


# --------------------------------------------------------------------------------------------- run join


def _join(prep: _PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Run rows whose (query, doc) has a grade > 0: ``(run row indices, positions in prep.pos_*)``.

    Hash join on 64-bit pair keys (a direct-address table on the keys' top bits, binary search for the few
    crowded slots), each match confirmed on the query code and the doc id string, so the join is exact.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = np.empty(0, dtype=np.int64)
    if len(prep.pos_keys) == 0 or len(row_q) == 0:
        return empty, empty
    if not prep.keys_unique:
        return _join_exact(prep, row_q, docs)
    keys = _pair_keys(_fingerprints(docs), row_q)
    slot = prep.table[(keys >> prep.shift).astype(np.intp)]
    slot[row_q < 0] = -1  # run queries without judgements
    cand = np.flatnonzero(slot != -1)
    at = slot[cand].astype(np.int64)
    crowded = np.flatnonzero(at == -2)
    if len(crowded):
        at[crowded] = np.minimum(np.searchsorted(prep.pos_keys, keys[cand[crowded]]), len(prep.pos_keys) - 1)
    found = prep.pos_keys[at] == keys[cand]
    cand, at = cand[found], at[found]
    if len(cand) == 0:
        return empty, empty
    same_doc = pc.equal(docs.take(pa.array(cand)), prep.pos_docs.take(pa.array(at)))
    same = (prep.pos_q[at] == row_q[cand]) & same_doc.to_numpy(zero_copy_only=False)
    return cand[same], at[same]


def _join_exact(prep: _PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The same join as :func:`_join` with a pandas merge on the id strings (used only after a key collision)."""
    left = pd.DataFrame({"q": row_q, "d": docs.to_numpy(zero_copy_only=False), "row": np.arange(len(row_q))})
    right = pd.DataFrame(
        {"q": prep.pos_q, "d": prep.pos_docs.to_numpy(zero_copy_only=False), "at": np.arange(len(prep.pos_q))}
    )
    m = left[left["q"] >= 0].merge(right, on=["q", "d"], how="inner").sort_values("row")
    return m["row"].to_numpy(dtype=np.int64), m["at"].to_numpy(dtype=np.int64)


class _Listed(NamedTuple):
    """The distinct (scored query, document) pairs of a run, sorted by (query, rank); see :meth:`_RunTables.listed`."""

    q: np.ndarray  # scored query code
    rank: np.ndarray  # best rank of the document for that query
    judged: np.ndarray  # bool: the qrels have a row for this (query, doc), any grade (ir_measures' Judged)
    in_qrels: np.ndarray  # bool: the doc is judged for *some* query of the qrels (BEIR's annotated corpus)


def _judged_pairs(prep: _PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Per run row: does the qrels have a row (any grade) for its (judged query code, doc)? Exact.

    Binary search of the rows' pair keys among the sorted keys of every judgement, each hit confirmed on the
    query code and the doc id string; after a key collision among the judgements, a pandas merge on the ids.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.zeros(len(row_q), dtype=bool)
    if len(prep.judged_keys) == 0 or len(row_q) == 0:
        return out
    if not prep.judged_unique:
        left = pd.DataFrame({"q": row_q, "d": docs.to_numpy(zero_copy_only=False)})
        all_docs = prep.judged_docs.take(pa.array(prep.judged_rows, type=pa.int64()))
        right = pd.DataFrame({"q": prep.judged_q, "d": all_docs.to_numpy(zero_copy_only=False)})
        keys = pd.MultiIndex.from_frame(right)
        return pd.MultiIndex.from_frame(left).isin(keys) & (row_q >= 0)
    keys = _pair_keys(_fingerprints(docs), row_q)
    at = np.minimum(np.searchsorted(prep.judged_keys, keys), len(prep.judged_keys) - 1)
    cand = np.flatnonzero((prep.judged_keys[at] == keys) & (row_q >= 0))
    if len(cand) == 0:
        return out
    at = at[cand]
    same_doc = pc.equal(
        docs.take(pa.array(cand)), prep.judged_docs.take(pa.array(prep.judged_rows[at], type=pa.int64()))
    ).to_numpy(zero_copy_only=False)
    out[cand] = (prep.judged_q[at] == row_q[cand]) & same_doc
    return out


def _list_documents(prep: _PreparedQrels, row_q: np.ndarray, ranks: np.ndarray, docs: pa.Array) -> _Listed:
    import pyarrow as pa
    import pyarrow.compute as pc

    e = np.full(len(row_q), -1, dtype=np.int64)
    e[row_q >= 0] = prep.eval_of_query[row_q[row_q >= 0]]
    idx = np.flatnonzero(e >= 0)
    idx = idx[np.lexsort((ranks[idx], e[idx]))]
    sub = docs.take(pa.array(idx, type=pa.int64()))
    q, rank = e[idx], ranks[idx].astype(np.int64, copy=False)
    # a document listed twice for one query counts once, at its best rank. Equal (query, doc) pairs have equal
    # keys; only when keys repeat are the ids compared (a repeat may also be a key collision).
    keys = _pair_keys(_fingerprints(sub), q)
    if len(keys) and pd.Index(keys).has_duplicates:
        frame = pd.DataFrame({"q": q, "d": sub.to_numpy(zero_copy_only=False)})
        first = ~frame.duplicated(keep="first").to_numpy()
        idx, q, rank = idx[first], q[first], rank[first]
        sub = sub.filter(pa.array(first))
    judged = _judged_pairs(prep, row_q[idx], sub)
    qrels_docs = pc.unique(prep.judged_docs)
    in_qrels = pc.is_in(sub, value_set=qrels_docs).to_numpy(zero_copy_only=False).astype(bool)
    return _Listed(q, rank, judged, in_qrels)


class _RunTables:
    """The run joined to the positive judgements: only rows with grade > 0 survive, grouped by query in rank order."""

    def __init__(self, prep: _PreparedQrels, run: Run) -> None:
        self.prep = prep
        self.n = len(prep.eval_ids)
        self.n_rel = prep.n_rel
        df = run.df
        n_rows = len(df)

        # query of every row, from the query blocks of the run
        starts, block_ids = _segments(_arrow(df["query_id"]))
        block_q = prep.query_index.get_indexer(block_ids).astype(np.int64) if len(block_ids) else starts
        row_q = np.repeat(block_q, np.diff(np.append(starts, n_rows)))
        run_qids = pd.unique(block_ids) if len(block_ids) else block_ids
        run_q = prep.query_index.get_indexer(run_qids) if len(run_qids) else starts
        self.unjudged = [str(q) for q, c in zip(run_qids, run_q, strict=True) if c < 0]
        present = np.zeros(self.n, dtype=bool)
        e = prep.eval_of_query[run_q[run_q >= 0]]
        present[e[e >= 0]] = True
        self.missing = [str(q) for q in prep.eval_ids[~present]]

        ranks = df["rank"].to_numpy()
        if n_rows and ranks.min() < 1:
            bad = int(np.argmin(ranks))
            raise DataError(
                f"run {run.name!r}{f' ({run.source})' if run.source else ''}: ranks must be 1-based, query "
                f"{df['query_id'].iloc[bad]!r} doc {df['doc_id'].iloc[bad]!r} has rank {ranks[bad]!r}. "
                "Read the run with diagnose.io, or number each query's results 1, 2, 3, ..."
            )

        docs = _arrow(df["doc_id"])
        self._row_q, self._ranks, self._docs = row_q, ranks, docs  # for the lazy tables of :meth:`listed`
        self._listed: _Listed | None = None
        rows, at = _join(prep, row_q, docs)  # rows ascending
        q = prep.eval_of_query[prep.pos_q[at]]
        scored = q >= 0
        rows, at, q = rows[scored], at[scored], q[scored]
        rank = ranks[rows].astype(np.int64, copy=False)
        # group the joined rows by query, in rank order. A run read by diagnose.io already lists each query once,
        # ranks increasing, so row order is that order; anything else is sorted.
        increasing = np.diff(ranks) > 0
        increasing[starts[1:] - 1] = True  # a new query block may restart at rank 1
        if len(run_qids) != len(block_ids) or not increasing.all():
            order = np.lexsort((rank, q))
            q, rank, at = q[order], rank[order], at[order]
        # a document listed twice for one query counts once, at its best (first) rank
        if len(at) and np.bincount(at).max() > 1:
            first = ~pd.Index(at).duplicated(keep="first")
            q, rank, at = q[first], rank[first], at[first]
        grade = prep.pos_grades[at]

        self.gain_q, self.gain_rank, self.gain = q, rank, grade.astype(np.float64)
        is_rel = grade >= prep.relevance_level
        self.rel_q, self.rel_rank = q[is_rel], rank[is_rel]
        # each query's relevant rows are contiguous and in rank order: the head of a group is the first
        # relevant document (rank r1; inf when none), and the position in the group counts relevant ranks
        self.first_rank = np.full(self.n, np.inf)
        head = np.concatenate(([True], self.rel_q[1:] != self.rel_q[:-1])) if len(self.rel_q) else self.rel_q
        heads = np.flatnonzero(head)
        self.first_rank[self.rel_q[heads]] = self.rel_rank[heads]
        self.rel_pos = np.arange(1, len(self.rel_q) + 1) - heads[np.cumsum(head) - 1] if len(heads) else heads
        self._cache: dict[int, np.ndarray] = {}

    def listed(self) -> _Listed:
        """Every distinct document each scored query lists, with its judgement status (computed on first use).

        Sorted by (scored query, rank); a document listed twice for one query is kept once, at its best rank.
        """
        if self._listed is None:
            self._listed = _list_documents(self.prep, self._row_q, self._ranks, self._docs)
        return self._listed

    def count(
        self, values: np.ndarray, mask: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> np.ndarray:
        """Per scored query: number of ``values`` (query codes) kept by ``mask``, or sum of their ``weights``."""
        if mask is not None:
            values = values[mask]
            weights = None if weights is None else weights[mask]
        return np.bincount(values, weights=weights, minlength=self.n).astype(np.float64)

    def rel_at(self, k: int) -> np.ndarray:
        """Number of relevant documents at ranks 1..k, per scored query."""
        if k not in self._cache:
            self._cache[k] = self.count(self.rel_q, self.rel_rank <= k)
        return self._cache[k]


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


# --------------------------------------------------------------------------------------------- kernels


def _precision(t: _RunTables, k: int | None) -> np.ndarray:
    """``precision@k = rel(k) / k``; divides by ``k`` even if fewer than ``k`` results (trec_eval ``P_k``)."""
    return t.rel_at(k) / k


def _recall(t: _RunTables, k: int | None) -> np.ndarray:
    """``recall@k = rel(k) / R``, R = relevant documents of the query in the qrels (trec_eval ``recall_k``)."""
    return t.rel_at(k) / t.n_rel


def _hit_rate(t: _RunTables, k: int | None) -> np.ndarray:
    """``hit_rate@k = 1`` if a relevant document is in the top ``k`` else 0 (trec_eval ``success_k``)."""
    return (t.first_rank <= k).astype(np.float64)


def _mrr(t: _RunTables, k: int | None) -> np.ndarray:
    """``mrr = 1 / rank of the first relevant document`` (0 if none: trec_eval ``recip_rank``).

    ``mrr@k`` is 0 when that rank is above ``k`` (ranx ``mrr@k``).
    """
    rr = 1.0 / t.first_rank  # 1/inf = 0
    if k is not None:
        rr = np.where(t.first_rank <= k, rr, 0.0)
    return rr


def _ndcg(t: _RunTables, k: int | None) -> np.ndarray:
    """``ndcg@k = DCG@k / IDCG@k`` with ``DCG@k = sum_{rank<=k} grade / log2(rank + 1)`` over grades > 0.

    IDCG@k is the DCG of all judged grades of the query sorted decreasingly, cut at ``k`` (trec_eval ``ndcg_cut_k``;
    linear gains, unlike the ``2^grade - 1`` of Burges et al.).
    """
    m = t.gain_rank <= k
    dcg = t.count(t.gain_q, m, t.gain / np.log2(t.gain_rank + 1.0))
    p = t.prep
    im = p.ideal_rank <= k
    idcg = t.count(p.ideal_q, im, p.ideal_gain / np.log2(p.ideal_rank + 1.0))
    return _safe_div(dcg, idcg)


def _average_precision(t: _RunTables, k: int | None) -> np.ndarray:
    """``map = (1/R) sum_{relevant retrieved d} P(rank(d))``; ``map@k`` keeps ``rank(d) <= k`` and still divides
    by R (trec_eval ``map`` / ``map_cut_k``; sentence-transformers divides MAP@k by ``min(k, R)``)."""
    prec = t.rel_pos / t.rel_rank
    m = None if k is None else t.rel_rank <= k
    return t.count(t.rel_q, m, prec) / t.n_rel


def _r_precision(t: _RunTables, k: int | None) -> np.ndarray:
    """``r_precision = rel(R) / R``: precision at rank R, the number of relevant documents (trec_eval ``Rprec``)."""
    m = t.rel_rank <= t.n_rel[t.rel_q]
    return t.count(t.rel_q, m) / t.n_rel


def _f1(t: _RunTables, k: int | None) -> np.ndarray:
    """``f1@k = 2 P R / (P + R)`` with ``P = precision@k`` and ``R = recall@k``; 0 when both are 0."""
    p, r = _precision(t, k), _recall(t, k)
    return _safe_div(2.0 * p * r, p + r)


def _judged(t: _RunTables, k: int | None) -> np.ndarray:
    """``judged@k`` = (documents in the top ``k`` with a qrels row for this query, any grade, even 0 or negative)
    / (documents in the top ``k``): ir_measures' ``Judged@k`` (0.4.3), whose denominator is ``min(k, number of
    results)``, not ``k``. A query missing from the run scores 0 (nothing retrieved, so nothing judged)."""
    lst = t.listed()
    top = lst.rank <= k
    return _safe_div(t.count(lst.q, top & lst.judged), t.count(lst.q, top))


def _hole(t: _RunTables, k: int | None) -> np.ndarray:
    """``hole@k`` = (documents in the top ``k`` that appear nowhere in the qrels) / ``k``: BEIR's ``Hole@k``
    (``beir.retrieval.custom_metrics.hole``, 2.2.0). A document judged for *another* query is not a hole, and
    the denominator is ``k`` even when the run lists fewer results. A query missing from the run scores 0."""
    lst = t.listed()
    return t.count(lst.q, (lst.rank <= k) & ~lst.in_qrels) / k


REGISTRY: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("precision", _precision, "required", "P_k", "relevant in top k / k"),
        Metric("recall", _recall, "required", "recall_k", "relevant in top k / relevant judged"),
        Metric("hit_rate", _hit_rate, "required", "success_k", "1 if a relevant document is in the top k"),
        Metric("mrr", _mrr, "optional", "recip_rank", "1 / rank of the first relevant document"),
        Metric("ndcg", _ndcg, "required", "ndcg_cut_k", "DCG@k / ideal DCG@k, linear gains, log2(rank+1)"),
        Metric(
            "map", _average_precision, "optional", "map / map_cut_k", "mean precision at relevant ranks, / R"
        ),
        Metric("r_precision", _r_precision, "none", "Rprec", "relevant in top R / R"),
        Metric("f1", _f1, "required", "-", "harmonic mean of precision@k and recall@k"),
        Metric(
            "judged", _judged, "required", "-", "share of the top k judged for the query (ir_measures Judged)"
        ),
        Metric("hole", _hole, "required", "-", "share of the top k judged for no query, / k (BEIR Hole)"),
    )
}
"""Metric family -> :class:`Metric`. A metric *name* is ``family`` or ``family@k`` (see :func:`parse_metric`)."""

DEFAULT_FAMILIES = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
"""Families taken at every k by :func:`expand_metrics` when no metric is given (then ``mrr``, ``map``,
``r_precision`` without cutoff are added)."""

_NAME = re.compile(r"^([a-z0-9_]+)(?:@(.*))?$")
# trec_eval / ir_measures spellings people type, to suggest the right name
_ALIASES = {
    "p": "precision",
    "prec": "precision",
    "r": "recall",
    "success": "hit_rate",
    "hits": "hit_rate",
    "hitrate": "hit_rate",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "ap": "map",
    "rprec": "r_precision",
    "r-precision": "r_precision",
    "f": "f1",
}


def _valid_names() -> str:
    parts = []
    for m in REGISTRY.values():
        if m.cutoff == "required":
            parts.append(f"{m.name}@k")
        elif m.cutoff == "optional":
            parts.append(f"{m.name}, {m.name}@k")
        else:
            parts.append(m.name)
    return ", ".join(parts) + " (k a positive integer, e.g. ndcg@10)"


def _unknown(name: str, family: str, k: str | None) -> DataError:
    guess = _ALIASES.get(re.sub(r"[._]?\d+$", "", family)) or next(
        iter(difflib.get_close_matches(family, list(REGISTRY), n=1)), None
    )
    cut = (
        k
        if k is not None
        else (re.search(r"(\d+)$", family).group(1) if re.search(r"\d+$", family) else None)
    )
    hint = ""
    if guess:
        suggestion = f"{guess}@{cut}" if cut and REGISTRY[guess].cutoff != "none" else guess
        hint = f" Did you mean {suggestion!r}?"
    return DataError(f"Unknown metric {name!r}.{hint} Valid metrics: {_valid_names()}.")


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"ndcg@10" -> ("ndcg", 10)``, ``"mrr" -> ("mrr", None)``. Case and surrounding spaces are ignored.

    Raises :class:`DataError` (listing the valid names) for an unknown family, a missing or non-positive ``k``,
    or a ``k`` on ``r_precision``.
    """
    text = str(name).strip().lower()
    match = _NAME.match(text)
    if not match:
        raise _unknown(str(name), text, None)
    family, k_text = match.group(1), match.group(2)
    if family not in REGISTRY:
        raise _unknown(str(name), family, k_text)
    spec = REGISTRY[family]
    if k_text is None:
        if spec.cutoff == "required":
            raise DataError(
                f"Metric {name!r} needs a cutoff, e.g. {family}@10. Valid metrics: {_valid_names()}."
            )
        return family, None
    if spec.cutoff == "none":
        raise DataError(f"Metric {name!r}: {family} takes no cutoff (its cutoff is R). Use {family!r}.")
    if not re.fullmatch(r"\d+", k_text) or int(k_text) < 1:
        raise DataError(f"Metric {name!r}: the cutoff after @ must be a positive integer, e.g. {family}@10.")
    return family, int(k_text)


def metric_family(name: str) -> str:
    """``"ndcg@10" -> "ndcg"``."""
    return parse_metric(name)[0]


def _canonical(name: str) -> str:
    family, k = parse_metric(name)
    return family if k is None else f"{family}@{k}"


def expand_metrics(metrics: Sequence[str] | None, ks: Sequence[int]) -> list[str]:
    """Turn user metric names into full names, in order, without duplicates.

    - ``None``: ``precision, recall, hit_rate, mrr, ndcg, map`` at every k, then ``mrr``, ``map``, ``r_precision``.
    - a name with ``@`` is kept as is (``ndcg@10`` stays even if 10 is not in ``ks``);
    - a family that needs a cutoff (``precision recall hit_rate ndcg f1 judged hole``) is taken at every k:
      ``"ndcg"`` with ks ``[1, 10]`` -> ``ndcg@1, ndcg@10``;
    - ``mrr`` and ``map`` without ``@`` mean the metric without cutoff (``recip_rank``, ``map``); write ``mrr@10``
      for the cut version; ``r_precision`` has no cutoff.

    Unknown names raise :class:`DataError` listing the valid ones.
    """
    ks = list(ks)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise DataError(f"Cutoffs must be positive integers, got {k!r} in {ks!r}.")
    if metrics is None:
        names = [f"{f}@{k}" for f in DEFAULT_FAMILIES for k in ks] + ["mrr", "map", "r_precision"]
        return list(dict.fromkeys(names))
    out: list[str] = []
    for raw in metrics:
        text = str(raw).strip().lower()
        if not text:
            continue
        if "@" in text:
            out.append(_canonical(text))
            continue
        family = text
        if family not in REGISTRY:
            raise _unknown(str(raw), family, None)
        if REGISTRY[family].cutoff == "required":
            if not ks:
                raise DataError(f"Metric {raw!r} needs a cutoff: give cutoffs (k) or write {family}@10.", param="k")
            out.extend(f"{family}@{k}" for k in ks)
        else:
            out.append(family)
    if not out:
        raise DataError(f"No metric given. Valid metrics: {_valid_names()}.")
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------- evaluate


def _evaluate_prepared(
    prep: _PreparedQrels, run: Run, names: list[tuple[str, str, int | None]]
) -> Evaluation:
    t = _RunTables(prep, run)
    values = np.empty((t.n, len(names)), dtype=np.float64)
    for j, (_, family, k) in enumerate(names):
        values[:, j] = REGISTRY[family].kernel(t, k)
    return _evaluation(prep, run, t, names, values)


def _evaluation(
    prep: _PreparedQrels,
    run: Run,
    t: _RunTables,
    names: list[tuple[str, str, int | None]],
    values: np.ndarray,
) -> Evaluation:
    columns = [name for name, _, _ in names]
    per_query = pd.DataFrame(
        values, columns=columns, index=pd.Index(prep.eval_ids, name="query_id", dtype=object)
    )
    aggregate = dict(zip(columns, values.mean(axis=0).tolist(), strict=True))
    return Evaluation(
        per_query=per_query,
        aggregate=aggregate,
        missing_queries=t.missing,
        no_relevant_queries=list(prep.no_relevant),
        unjudged_queries=t.unjudged,
        run_name=run.name,
    )


def _parse_all(metrics: Sequence[str]) -> list[tuple[str, str, int | None]]:
    if isinstance(metrics, str):
        metrics = [metrics]
    parsed = {}
    for m in metrics:
        family, k = parse_metric(m)
        name = family if k is None else f"{family}@{k}"
        parsed.setdefault(name, (name, family, k))
    if not parsed:
        raise DataError(f"No metric given. Valid metrics: {_valid_names()}.")
    return list(parsed.values())


def _check_has_relevant(prep: _PreparedQrels, qrels: Qrels) -> None:
    if len(prep.eval_ids) == 0:
        where = qrels.source or "the qrels"
        raise DataError(
            f"{where}: no query has a relevant document (grade >= {prep.relevance_level}); "
            f"{len(prep.no_relevant)} judged queries, all with grades below that. Check the relevance column "
            "(relevant documents need a positive integer grade)."
        )


def evaluate(qrels: Qrels, run: Run, metrics: Sequence[str], *, relevance_level: int = 1) -> Evaluation:
    """Score ``run`` against ``qrels`` with the conventions of the module docstring.

    ``metrics``: full names such as ``["ndcg@10", "recall@100", "mrr"]`` (see :func:`expand_metrics` to build
    them from families and cutoffs); duplicates are dropped, order kept. ``relevance_level``: minimum grade that
    counts as relevant (trec_eval ``-l``, default 1); nDCG gains still use every grade > 0.

    Raises :class:`DataError` for an unknown metric name or when no judged query has a relevant document.
    """
    names = _parse_all(metrics)
    prep = _prepare(qrels, relevance_level)
    _check_has_relevant(prep, qrels)
    return _evaluate_prepared(prep, run, names)


def evaluate_many(
    qrels: Qrels, runs: Mapping[str, Run], metrics: Sequence[str], *, relevance_level: int = 1
) -> dict[str, Evaluation]:
    """:func:`evaluate` for several runs (keyed by name, order kept), preparing the qrels once."""
    names = _parse_all(metrics)
    prep = _prepare(qrels, relevance_level)
    _check_has_relevant(prep, qrels)
    return {key: _evaluate_prepared(prep, run, names) for key, run in runs.items()}


# --------------------------------------------------------------------------------------------- bounds


@dataclass(frozen=True)
class MetricBounds:
    """What the metrics could be once the run's unjudged documents are judged (see :func:`metric_bounds`).

    ``lower``: today's scores (unjudged documents non-relevant), the same :class:`Evaluation` as
    :func:`evaluate`. ``upper``: the best score each query can reach over every way of judging the unjudged
    documents of its top ``k`` (relevant or not), as an :class:`Evaluation` with the same queries and columns.
    """

    lower: Evaluation
    upper: Evaluation

    @property
    def aggregate(self) -> pd.DataFrame:
        """Index ``metric``; columns ``lower``, ``upper`` (means over the scored queries), ``gap = upper - lower``."""
        metrics = self.lower.metrics
        lo = np.array([self.lower.aggregate[m] for m in metrics])
        hi = np.array([self.upper.aggregate[m] for m in metrics])
        return pd.DataFrame(
            {"lower": lo, "upper": hi, "gap": hi - lo}, index=pd.Index(metrics, name="metric", dtype=object)
        )

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per (query, metric): columns ``query_id``, ``metric``, ``lower``, ``upper``, ``gap``."""
        lo = self.lower.per_query.stack().rename("lower")
        hi = self.upper.per_query.stack().rename("upper")
        out = pd.concat([lo, hi], axis=1)
        out.index = out.index.set_names(["query_id", "metric"])
        out["gap"] = out["upper"] - out["lower"]
        return out.reset_index()


def _unjudged(t: _RunTables, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unjudged documents (no qrels row for the query) of each scored query at ranks <= ``k`` (all ranks when
    ``k`` is None): ``(query, rank, start)``, sorted by (query, rank); ``start[q]:start[q + 1]`` are query q's."""
    lst = t.listed()
    m = ~lst.judged if k is None else ~lst.judged & (lst.rank <= k)
    q, r = lst.q[m], lst.rank[m]
    return q, r, np.searchsorted(q, np.arange(t.n + 1))


def _relevant_by_query(t: _RunTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The retrieved relevant documents ``(query, rank, position among the query's relevant)`` sorted by query
    code (``t.rel_*`` are grouped by query in the run's query order, which need not be the qrels' order)."""
    order = np.argsort(t.rel_q, kind="stable")
    return t.rel_q[order], t.rel_rank[order], t.rel_pos[order]


def _choices(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs (query, s) with ``s = 0..u[query]``: ``(query, s, offset of each query's first pair)``."""
    size = u.astype(np.int64) + 1
    offs = np.cumsum(size) - size
    pq = np.repeat(np.arange(len(u)), size)
    return pq, np.arange(pq.size) - offs[pq], offs


def _upper_precision(t: _RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return (t.rel_at(k) + u) / k


def _upper_recall(t: _RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return (t.rel_at(k) + u) / (t.n_rel + u)


def _upper_hit_rate(t: _RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return ((t.first_rank <= k) | (u > 0)).astype(np.float64)


def _upper_mrr(t: _RunTables, k: int | None) -> np.ndarray:
    _, r, start = _unjudged(t, k)
    first_unjudged = np.full(t.n, np.inf)
    has = np.diff(start) > 0
    first_unjudged[has] = r[start[:-1][has]]
    first = np.minimum(t.first_rank, first_unjudged)
    return 1.0 / first if k is None else np.where(first <= k, 1.0 / first, 0.0)


def _upper_f1(t: _RunTables, k: int | None) -> np.ndarray:
    p, r = _upper_precision(t, k), _upper_recall(t, k)
    return _safe_div(2.0 * p * r, p + r)


def _upper_ndcg(t: _RunTables, k: int | None) -> np.ndarray:
    """max over s of (DCG@k + sum of g / log2(rank + 1) over the s best-ranked unjudged) / IDCG@k(s), where the
    ideal ranking of IDCG@k(s) holds every judged grade plus s grades g = relevance_level."""
    assert k is not None
    q, r, start = _unjudged(t, k)
    u = np.diff(start)
    g = float(t.prep.relevance_level)
    dcg = t.count(t.gain_q, t.gain_rank <= k, t.gain / np.log2(t.gain_rank + 1.0))
    pq, ps, offs = _choices(u)
    cw = np.concatenate(([0.0], np.cumsum(g / np.log2(r + 1.0))))
    added = cw[start[pq] + ps] - cw[start[pq]]
    # ideal ranking: the a judged grades >= g first (ideal ranks 1..a), then the s new grades g, then the grades
    # between 0 and g (only when relevance_level > 1), each pushed s places down
    p = t.prep
    high = p.ideal_gain >= g
    a = t.count(p.ideal_q, high).astype(np.int64)
    head = t.count(p.ideal_q, high & (p.ideal_rank <= k), p.ideal_gain / np.log2(p.ideal_rank + 1.0))
    disc = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))))  # disc[x]: sum_{i<=x}
    new = g * (disc[np.minimum(a[pq] + ps, k)] - disc[np.minimum(a[pq], k)])
    tail = np.zeros(pq.size)
    low = ~high & (p.ideal_rank <= k)
    if low.any():
        lq, lr, lg = p.ideal_q[low], p.ideal_rank[low], p.ideal_gain[low]
        reps = u[lq].astype(np.int64) + 1
        entry = np.repeat(np.arange(lq.size), reps)
        shift = np.arange(entry.size) - (np.cumsum(reps) - reps)[entry]
        rank = lr[entry] + shift
        keep = rank <= k
        tail = np.bincount(
            (offs[lq[entry]] + shift)[keep],
            weights=(lg[entry] / np.log2(rank + 1.0))[keep],
            minlength=pq.size,
        )
    values = (dcg[pq] + added) / (head[pq] + new + tail)
    return np.maximum.reduceat(values, offs)


def _upper_map(t: _RunTables, k: int | None) -> np.ndarray:
    """max over s of AP (or AP@k) with the s best-ranked unjudged documents relevant, divided by R + s."""
    q, r, start = _unjudged(t, k)
    u = np.diff(start)
    rq, rr, ri = _relevant_by_query(t)
    if k is not None:
        m = rr <= k
        rq, rr, ri = rq[m], rr[m], ri[m]
    rstart = np.searchsorted(rq, np.arange(t.n + 1))
    big = int(max(rr.max(initial=0), r.max(initial=0))) + 2
    ukey, rkey = q * big + r, rq * big + rr
    above_rel = np.searchsorted(ukey, rkey) - start[rq]  # U_i: unjudged ranked above relevant document i
    above_unj = np.searchsorted(rkey, ukey) - rstart[q]  # relevant ranked above unjudged document j
    j = np.arange(len(q)) - start[q] + 1
    cb = np.concatenate(([0.0], np.cumsum((j + above_unj) / r)))
    pq, ps, offs = _choices(u)
    new = cb[start[pq] + ps] - cb[start[pq]]  # precisions at the s new relevant ranks
    # each judged relevant document i gains min(s, U_i) / r_i; U_i grows with i inside a query
    big2 = int(u.max(initial=0)) + 2
    split = np.searchsorted(rq * big2 + above_rel, pq * big2 + ps, side="right")
    cu = np.concatenate(([0.0], np.cumsum(above_rel / rr)))
    cr = np.concatenate(([0.0], np.cumsum(1.0 / rr)))
    base = t.count(rq, None, ri / rr)
    old = base[pq] + (cu[split] - cu[rstart[pq]]) + ps * (cr[rstart[pq + 1]] - cr[split])
    values = (old + new) / (t.n_rel[pq] + ps)
    return np.maximum.reduceat(values, offs)


def _upper_r_precision(t: _RunTables, k: int | None) -> np.ndarray:
    """max over s of (relevant in the top R + s, counting the s best-ranked unjudged) / (R + s)."""
    q, r, start = _unjudged(t, None)
    pq, ps, offs = _choices(np.diff(start))
    depth = t.n_rel.astype(np.int64)[pq] + ps
    rq, rr, _ = _relevant_by_query(t)
    big = int(max(rr.max(initial=0), r.max(initial=0), depth.max(initial=0))) + 2
    rstart = np.searchsorted(rq, np.arange(t.n + 1))
    rel = np.searchsorted(rq * big + rr, pq * big + depth, side="right") - rstart[pq]
    unj = np.searchsorted(q * big + r, pq * big + depth, side="right") - start[pq]
    values = (rel + np.minimum(ps, unj)) / depth
    return np.maximum.reduceat(values, offs)


_UPPER: dict[str, Callable[[_RunTables, int | None], np.ndarray] | None] = {
    "precision": _upper_precision,
    "recall": _upper_recall,
    "hit_rate": _upper_hit_rate,
    "mrr": _upper_mrr,
    "ndcg": _upper_ndcg,
    "map": _upper_map,
    "r_precision": _upper_r_precision,
    "f1": _upper_f1,
    "judged": None,  # does not depend on the grades: upper = lower
    "hole": None,
}
"""Family -> kernel of the upper bound (None: the metric does not depend on what the judgements say)."""


def metric_bounds(
    qrels: Qrels, run: Run, metrics: Sequence[str], *, relevance_level: int = 1
) -> MetricBounds:
    """Each metric with the run's unjudged documents counted non-relevant (``lower``) and at best (``upper``).

    **Unjudged** means: no qrels row for this (query, document), whatever the grade (a grade 0 or negative
    judgement is judged non-relevant and stays so; the same sense as ``judged@k``). Only documents the run lists
    within the metric's depth are considered: ranks ``<= k`` for ``metric@k``; every rank for ``mrr``, ``map`` and
    ``r_precision``. Documents the run did not retrieve keep their status (judging more of them relevant could
    only raise R and lower every metric, so it never matters for the upper bound).

    - ``lower`` is today's value, what :func:`evaluate` and trec_eval report (unjudged = non-relevant).
    - ``upper`` is the largest value the metric can take when each of those unjudged documents is judged either
      non-relevant or relevant with grade ``relevance_level`` (1 by default), for each query separately (so the
      mean of the ``upper`` column is also the largest possible mean). A document judged relevant joins the
      qrels: R becomes ``R + s`` and the ideal ranking of nDCG holds every judged grade *plus* ``s`` grades
      ``relevance_level``, sorted decreasingly and cut at ``k``, where ``s`` is the number counted relevant.

      For ``precision``, ``recall`` (``(rel(k) + u) / (R + u)``), ``hit_rate``, ``mrr`` and ``f1`` every extra
      relevant document helps, so ``upper`` is the value with all ``u`` unjudged documents of the top ``k``
      relevant. For ``ndcg``, ``map`` and ``r_precision`` it is not: a relevant document low in the list raises R
      (or the ideal DCG) more than it adds. Example: one relevant document at rank 1 and an unjudged one at rank
      10 give nDCG@10 1.0 as judged today, but (1 + 1/log2 11) / (1 + 1/log2 3) = 0.79 if the unjudged one is
      relevant; AP goes from 1 to (1 + 2/10) / 2 = 0.6. So ``upper`` is the maximum over ``s = 0..u`` of the
      value with the ``s`` *best-ranked* unjudged documents relevant: for a given ``s`` the normaliser (R + s, or
      the ideal DCG) is fixed and moving a relevant document up never lowers the numerator, so these ``u + 1``
      choices contain the best of all ``2^u``. ``tests/test_metrics_holes.py`` checks this against every subset.
    - ``judged@k`` and ``hole@k`` do not depend on what the judgements say: ``upper = lower``.

    ``lower`` is not a minimum for ``ndcg``, ``map`` and ``r_precision`` (see the example): it is the
    convention of every evaluation tool, the value the run has on the qrels as they are. Queries and aggregate
    follow :func:`evaluate` (a query missing from the run has nothing unjudged: both bounds are 0).
    """
    names = _parse_all(metrics)
    prep = _prepare(qrels, relevance_level)
    _check_has_relevant(prep, qrels)
    t = _RunTables(prep, run)
    lower = np.empty((t.n, len(names)), dtype=np.float64)
    upper = np.empty_like(lower)
    for j, (_, family, k) in enumerate(names):
        lower[:, j] = REGISTRY[family].kernel(t, k)
        kernel = _UPPER[family]
        # s = 0 is today's value: the maximum only guards against the last bit of a different summation order
        upper[:, j] = lower[:, j] if kernel is None else np.maximum(kernel(t, k), lower[:, j])
    return MetricBounds(_evaluation(prep, run, t, names, lower), _evaluation(prep, run, t, names, upper))


# --------------------------------------------------------------------------------------------- quality bands

# family: (a, b, c) read as  poor < a <= acceptable < b <= good < c <= excellent.
# These are rules of thumb for a RAG retriever on its own golden set, not laws; the reasoning:
# - ndcg: BM25 averages ~0.43 nDCG@10 over the 18 BEIR datasets (Thakur et al. 2021) and strong dense or
#   re-ranked systems reach ~0.50-0.55; NFCorpus BM25 is 0.32. So < 0.3 is poor, 0.5 good, 0.7 excellent.
# - mrr: 0.5 means the first relevant passage is at rank ~2 on average; below 0.3 the answer usually sits
#   below rank 3, where a generator with few passages in context misses it.
# - recall / hit_rate: the share of questions whose evidence reaches the context. Missing it for half of the
#   questions is poor; 0.9 is what production RAG teams usually target for recall@k at their context size.
# - map / r_precision: ranking quality over all relevant documents, lower than nDCG on the same run (TREC ad
#   hoc BM25 runs score ~0.2-0.3 MAP); 0.2 / 0.4 / 0.6.
# - precision / f1: loose bands. Their ceiling is min(1, R/k), so with one or two relevant documents per question
#   precision@10 cannot exceed 0.1-0.2; read them next to recall.
QUALITY_BANDS: dict[str, tuple[float, float, float]] = {
    "ndcg": (0.3, 0.5, 0.7),
    "mrr": (0.3, 0.5, 0.7),
    "recall": (0.5, 0.7, 0.9),
    "hit_rate": (0.5, 0.7, 0.9),
    "map": (0.2, 0.4, 0.6),
    "r_precision": (0.2, 0.4, 0.6),
    "precision": (0.1, 0.2, 0.4),
    "f1": (0.1, 0.2, 0.4),
}

BANDS = ("poor", "acceptable", "good", "excellent")


def quality_band(metric: str, value: float) -> str:
    """``"poor"``, ``"acceptable"``, ``"good"`` or ``"excellent"`` for a metric value (see :data:`QUALITY_BANDS`):
    ``value < a`` poor, ``a <= value < b`` acceptable, ``b <= value < c`` good, ``value >= c`` excellent.
    ``"n/a"`` for NaN and for ``judged@k`` / ``hole@k``, which measure the qrels' coverage of the run, not its
    quality. Raises :class:`DataError` for an unknown metric name.
    """
    family = metric_family(metric)
    v = float(value)
    if math.isnan(v) or family not in QUALITY_BANDS:
        return "n/a"
    a, b, c = QUALITY_BANDS[family]
    return BANDS[int(v >= a) + int(v >= b) + int(v >= c)]
