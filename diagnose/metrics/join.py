"""The qrels x run join that feeds the metric kernels of :mod:`diagnose.metrics.definitions`.

Implementation, vectorised over all queries at once (no Python loop over queries or rows): the query of each run
row comes from the blocks of consecutive equal query ids (one neighbour comparison); doc ids get a 64-bit
fingerprint computed from their UTF-8 bytes straight from the Arrow buffers (:mod:`diagnose.runtime.ids`); (query, doc)
pairs are looked up in the keys of the *positive* judgements (a direct-address table on the keys' top bits) and
every match is confirmed on the id strings, so the join is exact. Each metric is then a per-query ``np.bincount``
over the few joined rows, masked by rank cutoffs; the ideal DCG comes from the judged grades sorted once per query.
About 0.1 s for a 1M-row run of 1,000 queries (``git log -p bench/RESULTS.md``, "evaluate").

- :func:`prepare` reads the qrels once (:class:`PreparedQrels`, shared by every run of
  :func:`~diagnose.metrics.evaluate_many`);
- :class:`RunTables` joins one run to it: the retrieved relevant rows grouped by query in rank order, which is
  all a kernel reads, and (on first use) every listed document with its judgement status for ``judged@k``,
  ``hole@k`` and the bounds;
- :func:`positive_grades`, :func:`judged_pairs` and :func:`in_qrels`: the same lookups for any run rows (the tie
  audit's per-document keys, :mod:`diagnose.ties.orders`), so the qrels are joined in one place.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from diagnose.checks import positive_int
from diagnose.data import DataError, Qrels, Run
from diagnose.runtime.arrays import arrow_of, numpy_of, strings_of
from diagnose.runtime.ids import fingerprints, pair_keys, take
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.lazy import pyarrow_compute as pc
from diagnose.runtime.per_object import PerObject


def _segments(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Split a column into blocks of equal consecutive values: ``(starts, value_of_each_block)``.

    A run lists each query's results together, so the query blocks come from one vectorised comparison of
    neighbours instead of hashing every row; a query split over several blocks just gives several blocks.
    """
    n = len(arr)
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    changed = numpy_of(pc.not_equal(arr.slice(1), arr.slice(0, n - 1)))
    starts = np.concatenate(([0], np.flatnonzero(changed) + 1))
    return starts, np.asarray(arr.take(arrow_of(starts)).to_pylist(), dtype=object)


# --------------------------------------------------------------------------------------------- qrels


@dataclass(frozen=True)
class PreparedQrels:
    """Everything about the qrels that does not depend on the run (shared by :func:`evaluate_many`)."""

    relevance_level: int
    query_ids: pa.Array  # every judged query id (large_string), first-seen order; position = query code
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

    def query_codes(self, ids: Sequence[str] | np.ndarray | pa.Array) -> np.ndarray:
        """The judged query code of each id (its position in :attr:`query_ids`), -1 for an id not judged."""
        if not isinstance(ids, pa.Array):
            ids = strings_of(ids)
        if len(ids) == 0:
            return np.empty(0, dtype=np.int64)
        found = pc.index_in(ids.cast(pa.large_string()), value_set=self.query_ids)
        return numpy_of(found, null=-1).astype(np.int64)


def _grades(qrels: Qrels) -> np.ndarray:
    rel = qrels.arrow("relevance")
    if pa.types.is_integer(rel.type):
        return numpy_of(rel).astype(np.int64, copy=False)
    rel = qrels.df["relevance"]
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


_PREPARED: PerObject[PreparedQrels] = PerObject()
#: One preparation or join at a time, so that two threads asking for the same one compute it once (the joins are
#: numpy passes over the run; the small ones of the tie audit's copies wait a few ms at most).
_ONCE = threading.RLock()


def prepare(qrels: Qrels, relevance_level: int = 1) -> PreparedQrels:
    """The qrels read once for the join (:class:`PreparedQrels`); kept per golden set held as Arrow (immutable),
    so the metrics and the tie audit of every run share it."""
    positive_int(relevance_level, "relevance_level")
    if not qrels.is_arrow():
        return _prepare(qrels, relevance_level)
    kept = _PREPARED.get(qrels, relevance_level)
    if kept is not None:
        return kept
    # another thread preparing the same qrels (the tie audit beside the metrics): wait for it, then share it
    with _ONCE:
        kept = _PREPARED.get(qrels, relevance_level)
        if kept is not None:
            return kept
        return _PREPARED.keep(qrels, _prepare(qrels, relevance_level), relevance_level)


def _prepare(qrels: Qrels, relevance_level: int) -> PreparedQrels:
    query_ids, docs, q_codes, grades, keys, rows, order = _judgements(qrels)
    n_all = len(query_ids)
    n_rel_all = np.bincount(q_codes[grades >= relevance_level], minlength=n_all)
    has_rel = n_rel_all > 0
    eval_of_query = np.full(n_all, -1, dtype=np.int64)
    eval_of_query[has_rel] = np.arange(int(has_rel.sum()))
    all_ids = np.asarray(query_ids.to_pylist(), dtype=object)
    eval_ids = all_ids[has_rel]

    judged_keys, judged_q, judged_rows = keys[order], q_codes[order], rows[order]  # every judgement, by key
    order = order[grades[order] > 0]  # positive judgements, sorted by key
    pos_keys = keys[order]
    table, shift = _slot_table(pos_keys)
    pos = np.flatnonzero(grades > 0)
    iq, ig, ideal_rank = _ideal_ranking(eval_of_query[q_codes[pos]], grades[pos], len(eval_ids))
    return PreparedQrels(
        relevance_level=int(relevance_level),
        query_ids=query_ids,
        eval_of_query=eval_of_query,
        eval_ids=eval_ids,
        n_rel=n_rel_all[has_rel].astype(np.float64),
        no_relevant=[str(q) for q in all_ids[~has_rel]],
        pos_keys=pos_keys,
        pos_q=q_codes[order],
        pos_docs=docs.take(arrow_of(rows[order], pa.int64())),
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


def _judgements(
    qrels: Qrels,
) -> tuple[pa.Array, pa.Array, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The qrels as arrays: the judged query ids (first-seen order), the doc ids (all rows), and for each judgement
    kept its query code, grade, pair key and qrels row, with the order that sorts the keys. A (query, doc) pair
    judged twice keeps its last judgement, like ``Qrels.as_dict()``."""
    grades = _grades(qrels)
    q_codes, query_ids = qrels.codes("query_id")
    docs = qrels.strings("doc_id")
    keys = pair_keys(fingerprints(docs), q_codes)
    rows = np.arange(len(q_codes))
    order = np.argsort(keys)
    if len(keys) > 1 and (keys[order[1:]] == keys[order[:-1]]).any():
        # decided on the ids themselves, not on the keys, so a key collision cannot drop a judgement
        dup = pd.DataFrame({"q": q_codes, "d": docs.to_numpy(zero_copy_only=False)}).duplicated(keep="last")
        rows = np.flatnonzero(~dup.to_numpy())
        q_codes, grades, keys = q_codes[rows], grades[rows], keys[rows]
        order = np.argsort(keys)
    return query_ids, docs, q_codes, grades, keys, rows, order


def _slot_table(pos_keys: np.ndarray) -> tuple[np.ndarray, np.uint64]:
    """Direct-address table on the top bits of the sorted keys (load <= 1/8): slot -> position in ``pos_keys``, -1
    when empty, -2 when several keys share the slot (those few lookups fall back to a binary search)."""
    bits = min(25, max(16, int(np.ceil(np.log2(max(len(pos_keys), 1) * 8)))))
    shift = np.uint64(64 - bits)
    slots = (pos_keys >> shift).astype(np.intp)
    table = np.full(1 << bits, -1, dtype=np.int32 if len(pos_keys) < 2**31 else np.int64)
    table[slots] = np.arange(len(pos_keys))
    shared = np.flatnonzero(np.bincount(slots, minlength=1 << bits) > 1) if len(slots) else slots
    table[shared] = -2
    return table, shift


def _ideal_ranking(
    e: np.ndarray, grades: np.ndarray, n_eval: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ideal ranking from the positive judgements (scored query code ``e``, -1 when not scored, and grade):
    each scored query's grades sorted decreasingly, as (query, grade, 1-based position in the query)."""
    iq, ig = e[e >= 0], grades[e >= 0]
    iorder = np.lexsort((-ig, iq))
    iq, ig = iq[iorder], ig[iorder]
    first = np.searchsorted(iq, np.arange(n_eval))
    ideal_rank = np.arange(1, len(iq) + 1, dtype=np.int64) - (first[iq] if len(iq) else 0)
    return iq, ig, ideal_rank


# --------------------------------------------------------------------------------------------- run join


_JOINED: PerObject[tuple[PreparedQrels, np.ndarray, tuple[np.ndarray, np.ndarray]]] = PerObject()


def _join(prep: PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Run rows whose (query, doc) has a grade > 0: ``(run row indices, positions in prep.pos_*)``.

    Hash join on 64-bit pair keys (a direct-address table on the keys' top bits, binary search for the few
    crowded slots), each match confirmed on the query code and the doc id string, so the join is exact. The last
    join of an array of doc ids is kept with it: the tie audit asks again for the rows the metrics joined.
    """
    kept = _JOINED.get(docs)
    if kept is not None and kept[0] is prep and np.array_equal(kept[1], row_q):
        return kept[2]
    # another thread joining the same rows (the tie audit beside the metrics): wait for it, then share it
    with _ONCE:
        kept = _JOINED.get(docs)
        if kept is not None and kept[0] is prep and np.array_equal(kept[1], row_q):
            return kept[2]
        joined = _join_once(prep, row_q, docs)
        for a in joined:
            a.flags.writeable = False  # shared by the callers
        _JOINED.keep(docs, (prep, row_q, joined))
        return joined


def _join_once(prep: PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    empty = np.empty(0, dtype=np.int64)
    if len(prep.pos_keys) == 0 or len(row_q) == 0:
        return empty, empty
    if not prep.keys_unique:
        return _join_exact(prep, row_q, docs)
    keys = pair_keys(fingerprints(docs), row_q)
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
    same_doc = pc.equal(docs.take(arrow_of(cand)), prep.pos_docs.take(arrow_of(at)))
    same = (prep.pos_q[at] == row_q[cand]) & numpy_of(same_doc)
    return cand[same], at[same]


def _join_exact(prep: PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The same join as :func:`_join` with a pandas merge on the id strings (used only after a key collision)."""
    left = pd.DataFrame({"q": row_q, "d": docs.to_numpy(zero_copy_only=False), "row": np.arange(len(row_q))})
    right = pd.DataFrame(
        {"q": prep.pos_q, "d": prep.pos_docs.to_numpy(zero_copy_only=False), "at": np.arange(len(prep.pos_q))}
    )
    m = left[left["q"] >= 0].merge(right, on=["q", "d"], how="inner").sort_values("row")
    return m["row"].to_numpy(dtype=np.int64), m["at"].to_numpy(dtype=np.int64)


class _Listed(NamedTuple):
    """The distinct (scored query, document) pairs of a run, sorted by (query, rank); see :meth:`RunTables.listed`."""

    q: np.ndarray  # scored query code
    rank: np.ndarray  # best rank of the document for that query
    judged: np.ndarray  # bool: the qrels have a row for this (query, doc), any grade (ir_measures' Judged)
    in_qrels: np.ndarray  # bool: the doc is judged for *some* query of the qrels (BEIR's annotated corpus)


def judged_pairs(prep: PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Per run row: does the qrels have a row (any grade) for its (judged query code, doc)? Exact.

    Binary search of the rows' pair keys among the sorted keys of every judgement, each hit confirmed on the
    query code and the doc id string; after a key collision among the judgements, a pandas merge on the ids.
    """
    out = np.zeros(len(row_q), dtype=bool)
    if len(prep.judged_keys) == 0 or len(row_q) == 0:
        return out
    if not prep.judged_unique:
        left = pd.DataFrame({"q": row_q, "d": docs.to_numpy(zero_copy_only=False)})
        all_docs = prep.judged_docs.take(arrow_of(prep.judged_rows, pa.int64()))
        right = pd.DataFrame({"q": prep.judged_q, "d": all_docs.to_numpy(zero_copy_only=False)})
        keys = pd.MultiIndex.from_frame(right)
        return pd.MultiIndex.from_frame(left).isin(keys) & (row_q >= 0)
    keys = pair_keys(fingerprints(docs), row_q)
    at = np.minimum(np.searchsorted(prep.judged_keys, keys), len(prep.judged_keys) - 1)
    cand = np.flatnonzero((prep.judged_keys[at] == keys) & (row_q >= 0))
    if len(cand) == 0:
        return out
    at = at[cand]
    same_doc = numpy_of(
        pc.equal(docs.take(arrow_of(cand)), prep.judged_docs.take(arrow_of(prep.judged_rows[at], pa.int64())))
    )
    out[cand] = (prep.judged_q[at] == row_q[cand]) & same_doc
    return out


def _list_documents(prep: PreparedQrels, row_q: np.ndarray, ranks: np.ndarray, docs: pa.Array) -> _Listed:
    e = np.full(len(row_q), -1, dtype=np.int64)
    e[row_q >= 0] = prep.eval_of_query[row_q[row_q >= 0]]
    idx = np.flatnonzero(e >= 0)
    idx = idx[np.lexsort((ranks[idx], e[idx]))]
    sub = take(docs, idx)
    q, rank = e[idx], ranks[idx].astype(np.int64, copy=False)
    # a document listed twice for one query counts once, at its best rank. Equal (query, doc) pairs have equal
    # keys; only when keys repeat are the ids compared (a repeat may also be a key collision).
    keys = pair_keys(fingerprints(sub), q)
    if len(keys) and pd.Index(keys).has_duplicates:
        frame = pd.DataFrame({"q": q, "d": sub.to_numpy(zero_copy_only=False)})
        first = ~frame.duplicated(keep="first").to_numpy()
        idx, q, rank = idx[first], q[first], rank[first]
        sub = sub.filter(arrow_of(first))
    judged = judged_pairs(prep, row_q[idx], sub)
    return _Listed(q, rank, judged, in_qrels(prep, sub))


def in_qrels(prep: PreparedQrels, docs: pa.Array) -> np.ndarray:
    """Per document: is it judged for *some* query of the qrels (any grade)?"""
    qrels_docs = pc.unique(prep.judged_docs)
    return numpy_of(pc.is_in(docs, value_set=qrels_docs)).astype(bool)


def positive_grades(prep: PreparedQrels, row_q: np.ndarray, docs: pa.Array) -> np.ndarray:
    """Per run row (judged query code ``row_q``, -1 for none, and doc id): the grade of its (query, doc) when it is
    > 0, else 0 (float64). Exact: the join of :class:`RunTables` (:func:`_join`)."""
    out = np.zeros(len(row_q), dtype=np.float64)
    rows, at = _join(prep, row_q, docs)
    out[rows] = prep.pos_grades[at]
    return out


class RunTables:
    """The run joined to the positive judgements: only rows with grade > 0 survive, grouped by query in rank order."""

    def __init__(self, prep: PreparedQrels, run: Run) -> None:
        self.prep = prep
        self.n = len(prep.eval_ids)
        self.n_rel = prep.n_rel
        n_rows = len(run)

        # query of every row, from the query blocks of the run
        starts, block_ids = _segments(run.strings("query_id"))
        block_q = prep.query_codes(block_ids) if len(block_ids) else starts
        row_q = np.repeat(block_q, np.diff(np.append(starts, n_rows)))
        run_qids = (
            np.asarray(list(dict.fromkeys(block_ids.tolist())), dtype=object) if len(block_ids) else block_ids
        )
        run_q = prep.query_codes(run_qids) if len(run_qids) else starts
        self.unjudged = [str(q) for q, c in zip(run_qids, run_q, strict=True) if c < 0]
        present = np.zeros(self.n, dtype=bool)
        e = prep.eval_of_query[run_q[run_q >= 0]]
        present[e[e >= 0]] = True
        self.missing = [str(q) for q in prep.eval_ids[~present]]

        ranks = run.numbers("rank")
        docs = run.strings("doc_id")
        if n_rows and ranks.min() < 1:
            bad = int(np.argmin(ranks))
            raise DataError(
                f"run {run.name!r}{f' ({run.source})' if run.source else ''}: ranks must be 1-based, query "
                f"{run.strings('query_id')[bad].as_py()!r} doc {docs[bad].as_py()!r} has rank {ranks[bad]!r}. "
                "Read the run with diagnose.io, or number each query's results 1, 2, 3, ..."
            )

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
            first = np.sort(np.unique(at, return_index=True)[1])
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


# --------------------------------------------------------------------------------------------- helpers


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` elementwise, 0 where ``den`` is 0 (a kernel's "0 when both are 0" convention)."""
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out
