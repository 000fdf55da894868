"""The tie-order machinery: :func:`tie_key_of` (the per-document sort key of a metric, named by its family's
record, ``REGISTRY[family].tie_key``), the run's tie groups (:class:`Layout`), the keys looked up in the qrels,
and the best- and worst-case re-ordered copies of the run. Start here when a new metric family needs a new key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from diagnose.data import Qrels, Run
from diagnose.io.run_order import score32
from diagnose.metrics import Evaluation, MetricName, parse_metric
from diagnose.metrics.join import in_qrels, judged_pairs, positive_grades, prepare
from diagnose.runtime.arrays import arrow_of
from diagnose.runtime.ids import take
from diagnose.runtime.lazy import pyarrow_compute as pc


def tie_key_of(metric: str | MetricName) -> str | None:
    """The per-document key (``"gain"``, ``"judged"``, ``"unannotated"``, computed by :func:`tie_keys`) whose decreasing
    order inside tie groups maximises the metric and whose increasing order minimises it (see the package
    docstring for the argument): its family's ``tie_key``. None: the family has no proven key and is sampled."""
    return parse_metric(metric).metric.tie_key


# --------------------------------------------------------------------------------------------- layout


class Layout(NamedTuple):
    """The run's rows sorted by (query, rank) ("positions"), with their tie groups."""

    order: np.ndarray  # position -> row of run.df
    in_place: bool  # order is the identity: the rows are already by (query, rank)
    qcode: np.ndarray  # position -> run query code (first-seen order)
    qids: np.ndarray  # run query code -> query id
    rank: np.ndarray  # position -> rank value
    starts: np.ndarray  # position -> bool, a group starts here (singletons are groups of one)
    g_start: np.ndarray  # per group: first position
    g_size: np.ndarray  # per group: number of documents

    def group(self, positions: np.ndarray | None = None) -> np.ndarray:
        """The group id of each of ``positions`` (None: of every position), non-decreasing along positions."""
        if positions is None:
            return np.cumsum(self.starts) - 1
        return np.searchsorted(self.g_start, positions, side="right") - 1


def tie_layout(run: Run) -> Layout:
    n = len(run)
    qcode, qids = run.codes("query_id")
    ranks = run.numbers("rank", np.int64)
    q = qcode.astype(np.int64, copy=False)
    scores = run.numbers("score", np.float64)
    order = np.arange(n)
    in_place = run.known_trec_order() or _by_query_and_rank(q, ranks)
    if not in_place:
        order = np.lexsort((order, ranks, q))
        q, ranks, scores = q[order], ranks[order], scores[order]
    s32 = score32(scores)
    starts = np.ones(n, dtype=bool)
    if n > 1:
        np.not_equal(s32[1:], s32[:-1], out=starts[1:])  # NaN != NaN: NaN ties with nothing
        starts[1:] |= q[1:] != q[:-1]
    g_start = np.flatnonzero(starts)
    g_size = np.diff(np.append(g_start, n))
    return Layout(
        order, in_place, q, np.asarray(qids.to_pylist(), dtype=object), ranks, starts, g_start, g_size
    )


def _by_query_and_rank(q: np.ndarray, ranks: np.ndarray) -> bool:
    """Are the rows already by (query code, rank)? (A run from :mod:`diagnose.io` always is.)"""
    step_q, step_r = np.diff(q), np.diff(ranks)
    return bool(((step_q > 0) | ((step_q == 0) & (step_r > 0))).all())


def tie_keys(
    qrels: Qrels, run: Run, lay: Layout, needed: set[str], looked_up: np.ndarray
) -> dict[str, np.ndarray]:
    """Per position, the sort keys of :func:`tie_key_of` that are needed (0 where not looked up: unused there).

    Only the positions of ``looked_up`` (bool per position: the queries that have a tie group) are looked up,
    through the metrics' own join of run rows to the qrels (:mod:`diagnose.metrics.join`, exact): ``gain`` is a
    document's grade when > 0, ``judged`` 1 when its (query, doc) pair has a judgement (any grade), ``unannotated``
    1 when the doc is judged for no query."""
    n = len(lay.order)
    pos = np.flatnonzero(looked_up)
    if not len(pos) or not len(qrels):
        out = {name: np.zeros(n, dtype=np.float64) for name in needed}
        if "unannotated" in needed:
            out["unannotated"][pos] = 1.0
        return out
    prep = prepare(qrels)  # the grades and pairs do not depend on the relevance level
    docs = run.strings("doc_id")
    judged_q = prep.query_codes(lay.qids)  # run query code -> judged query code
    few = 2 * len(pos) < n  # few positions: look up only theirs; else every position, without copying strings
    if few:
        docs, row_q = take(docs, lay.order[pos]), judged_q[lay.qcode[pos]]
    else:
        docs = docs if lay.in_place else take(docs, lay.order)
        row_q = judged_q[lay.qcode]
    found = {
        "gain": lambda: positive_grades(prep, row_q, docs),
        "judged": lambda: judged_pairs(prep, row_q, docs).astype(np.float64),
        "unannotated": lambda: (~in_qrels(prep, docs)).astype(np.float64),
    }
    out = {}
    for name in needed:
        values = found[name]()
        if few:
            out[name] = np.zeros(n, dtype=np.float64)
            out[name][pos] = values
        else:
            out[name] = values if len(pos) == n else np.where(looked_up, values, 0.0)
    return out


def reordered(
    run: Run, lay: Layout, key: np.ndarray, depth: int | None = None, keep: np.ndarray | None = None
) -> Run:
    """A copy of ``run`` whose tie groups are sorted by ``key`` ascending (pass ``-key`` for descending; equal keys
    keep the run's order). Ranks stay at their positions; scores become ``-rank`` so the order is explicit.
    ``depth``: keep only ranks <= depth (for metrics that read nothing deeper). ``keep`` (bool per position): keep
    only these documents, each at the rank its new position gives it (for metrics that read nothing else)."""
    n = len(lay.order)
    perm = np.lexsort((np.arange(n), key, lay.group()))
    rows, where = lay.order[perm], lay.order
    rank = lay.rank
    kept = None if keep is None else keep[perm]
    if depth is not None:
        kept = lay.rank <= depth if kept is None else kept & (lay.rank <= depth)
    if kept is not None:
        rows, where, rank = rows[kept], where[kept], rank[kept]
    return _copy(run, where, rows, rank)


def _copy(run: Run, where: np.ndarray, rows: np.ndarray, rank: np.ndarray) -> Run:
    """The re-ordered copy: at each new position the query of row ``where``, the document of row ``rows`` and the
    rank ``rank``; the score ``-rank`` (the order is explicit). An Arrow table, like a run read from a file."""
    docs = take(run.strings("doc_id"), rows)
    table = pa.table(
        {
            "query_id": run.strings("query_id").take(arrow_of(where, pa.int64())),
            "doc_id": docs,
            "score": arrow_of(-rank.astype(np.float64)),
            "rank": arrow_of(rank.astype(np.int64, copy=False)),
        }
    )
    copy = Run(run.name, table, run.source)
    copy.keep_strings("doc_id", docs)
    return copy


def reordered_nonzero(run: Run, lay: Layout, key: np.ndarray, depth: int | None = None) -> Run:
    """What :func:`reordered` gives for ``key`` with ``keep = key != 0``, without sorting every position: inside a
    group the documents with a negative key come first, then the zeros (dropped), then the positive keys, each
    part ascending (equal keys in the run's order). Only the kept documents are sorted and placed."""
    kept = np.flatnonzero(key != 0)
    group = lay.group(kept)
    sort = np.lexsort((kept, key[kept], group))
    kept, g = kept[sort], group[sort]
    first = np.ones(len(kept), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    starts = np.flatnonzero(first)
    i = np.arange(len(kept)) - np.repeat(starts, np.diff(np.append(starts, len(kept))))  # index among kept
    n_kept = np.bincount(g, minlength=len(lay.g_size))
    zeros = lay.g_size - n_kept  # per group: documents with key 0
    where = lay.g_start[g] + i + np.where(key[kept] > 0, zeros[g], 0)
    if depth is not None:
        cut = lay.rank[where] <= depth
        kept, where = kept[cut], where[cut]
    order = np.argsort(where, kind="stable")  # the copy in (query, rank) order, as a run lists it
    where, kept = where[order], kept[order]
    return _copy(run, lay.order[where], lay.order[kept], lay.rank[where])


def deepest_rank(names: Sequence[str | MetricName]) -> int | None:
    """The deepest rank any of ``names`` reads: the largest cutoff when every one is a cutoff metric whose family's
    ``@k`` value reads only ranks <= k (``top_k_only``: the re-ordered copies can be cut there; ``judged@k``
    divides by ``min(k, n)``, which the cut keeps), else None (the whole list: ``mrr`` and ``map`` without cutoff,
    ``r_precision``)."""
    cuts = [parse_metric(m) for m in names]
    if all(c.metric.top_k_only and c.k is not None for c in cuts):
        return max(int(c.k) for c in cuts if c.k is not None)
    return None


def in_trec_order(run: Run, lay: Layout, scored: np.ndarray) -> bool:
    """Is every tie group of the scored queries (``scored``: bool per run query code) in descending doc-id order
    (trec_eval's tie-break: byte order of the UTF-8 ids, which is code-point order)?"""
    if len(lay.order) < 2 or run.known_trec_order():
        return True
    pairs = np.flatnonzero(~lay.starts[1:] & scored[lay.qcode[1:]])
    if not len(pairs):
        return True
    docs = run.strings("doc_id")
    first = docs.take(arrow_of(lay.order[pairs], pa.int64()))
    second = docs.take(arrow_of(lay.order[pairs + 1], pa.int64()))
    return bool(pc.all(pc.greater(first, second)).as_py())


def varies_in_groups(key: np.ndarray, lay: Layout) -> bool:
    """Does ``key`` take two different values inside some tie group? (Else every tie order gives the same value.)"""
    if len(key) < 2:
        return False
    return bool((~lay.starts[1:] & (key[1:] != key[:-1])).any())


def widen(
    lo: np.ndarray, hi: np.ndarray, cols: list[int], e: Evaluation, rows: np.ndarray | None = None
) -> None:
    """Widen ``lo`` / ``hi`` (golden query x metric) at ``cols`` with ``e``'s values; ``rows`` (bool per golden
    query): only those (the queries a re-ordered copy covers)."""
    v = e.values()
    if rows is not None:
        r = np.flatnonzero(rows)
        at = np.ix_(r, cols)
        lo[at] = np.minimum(lo[at], v[r])
        hi[at] = np.maximum(hi[at], v[r])
        return
    lo[:, cols] = np.minimum(lo[:, cols], v)
    hi[:, cols] = np.maximum(hi[:, cols], v)
