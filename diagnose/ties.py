"""Score ties: how much a run's metrics depend on the order of documents that have the same score.

trec_eval breaks score ties by doc id (descending, see :mod:`diagnose.io`), so when a retriever gives several
documents the same score, its metrics depend on how the documents happen to be *named*. MTEB issue 5092: a model
that gave every candidate the same score reached MRR@10 = 1.0, because the doc-id order put the relevant document
first. :func:`tie_audit` measures that dependence per query and for the mean.

Definitions
-----------
- **Tie group**: a maximal block of >= 2 *consecutive* documents of one query's ranking (rows ordered by the
  ``rank`` column, the order every metric reads) whose scores are equal as 32-bit floats, the way trec_eval
  (pytrec-eval-terrier) compares them (``-0.0 == 0.0``; NaN ties with nothing). For a run read from a TREC file,
  equal scores are always consecutive; in a ranked list (JSONL, CSV with ranks) two equal scores separated by a
  different one are not a tie: the list's order is taken as the retriever's decision.
- **Tie order**: any permutation of the documents *inside* each tie group. The positions (rank values) a group
  occupies never change, only which document sits where. The run as given is one tie order: trec_eval's doc-id
  order for TREC files (``TieAudit.trec_order`` says whether every group is in descending doc-id order).
- A query has **ties in the top k** when a tie group starts at rank <= k, and ties **crossing the cutoff** when a
  group starts at rank <= k and ends below rank k (it straddles rank k).
- A query's metric **depends on the order** when its maximum over tie orders exceeds its minimum (by > 1e-12).
- Only golden queries (>= 1 relevant document, the queries :func:`diagnose.metrics.evaluate` averages) count;
  a golden query missing from the run has no ties and value = min = max = 0.

How min and max are computed
----------------------------
Exactly, without enumerating orders: each metric family has a *sort key* per document such that, inside every
tie group, putting the documents with the larger key first gives the maximum of the metric and putting them last
gives the minimum. :func:`tie_audit` builds these two re-ordered copies of the run (ranks unchanged, documents
moved inside their groups, scores replaced by ``-rank`` so the copy's order is explicit and strictly decreasing)
and scores them with :func:`diagnose.metrics.evaluate`: no metric is computed twice in two places.

Why the keys are right (every family of :data:`diagnose.metrics.REGISTRY`; ``tests/test_ties.py`` checks each
one against all permutations of the tie groups of small random runs):

- key ``gain`` = the document's grade for the query, clipped at 0 (0 when unjudged). Relevant (grade >=
  ``relevance_level``) documents have a larger key than non-relevant ones, and nDCG's gains grow with the key.
  Moving a document with a larger key above one with a smaller key inside a group never lowers:

  * ``precision@k``, ``recall@k``, ``hit_rate@k``, ``f1@k``, ``r_precision``: increasing functions of the number
    of relevant documents at ranks <= c (c = k, or R), which can only grow; R and k do not depend on the order.
  * ``mrr``, ``mrr@k``: the first relevant rank can only move up.
  * ``map``, ``map@k``: AP = (1/R) sum_m m / p_m over the sorted ranks p_1 < p_2 < ... of the relevant documents
    (those <= k for map@k). Moving one relevant document to a smaller free rank makes the sorted vector elementwise
    smaller, so every term grows and none drops out of the cutoff.
  * ``ndcg@k``: DCG = sum of gain x discount(rank) with a non-increasing discount (0 below k); by the
    rearrangement inequality, gains sorted decreasingly over the group's fixed positions maximise it and
    increasingly minimise it. The ideal DCG does not depend on the order.

  One key serves all these families at once, so one best-case and one worst-case copy give every maximum and
  minimum, for every query independently: the mean of the per-query maxima is the largest mean any tie order
  can reach (and likewise for the minimum).
- key ``judged`` (1 when the qrels have a row for this query and document, any grade): ``judged@k`` counts judged
  documents in the top k over ``min(k, n)``, n fixed. The grade key would be wrong here (a grade-0 judgement and
  an unjudged document share gain 0), hence its own key and its own two copies.
- key ``unannotated`` (1 when the document appears in no qrels row): ``hole@k`` counts those in the top k over k.

A family without a key in :data:`EXACT_KEYS` (a metric added to the registry later) falls back to sampling:
the value is evaluated on ``n_orders`` random tie orders (``seed``) plus the run's own order and the ``gain``
best and worst orders, and min / max are taken over those. That range is a lower bound on the true one
(``TieRange.exact`` is False, and :meth:`TieAudit.message` says "at least").

Both copies are scored and the per-query min and max taken over them and the run's own order, so the result does
not rest on which of the two orders is the best one, only on the pair containing both extremes.

Cost: three calls of :func:`~diagnose.metrics.evaluate` (two more per extra key when ``judged@k`` / ``hole@k`` are
asked, on copies cut at rank k since those read nothing deeper), an Arrow hash lookup of the tied rows in the
qrels, and a few sorts. Measured once on 1,000 queries x 1,000 documents (1M rows, 3 judgements per query, shared
2-core machine): all scores tied 0.5-0.9 s with the 9 default metrics at k = 10 (``evaluate`` alone 0.2 s), 1.3 s
with ``judged@10`` and ``hole@10`` added; no ties 0.2 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from diagnose.data import DataError, Qrels, Run, ValidationReport
from diagnose.metrics import Evaluation, evaluate, expand_metrics, metric_family, parse_metric

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["EXACT_KEYS", "TieAudit", "TieRange", "add_to_report", "tie_audit"]

EXACT_KEYS: dict[str, str] = {
    "precision": "gain",
    "recall": "gain",
    "hit_rate": "gain",
    "mrr": "gain",
    "ndcg": "gain",
    "map": "gain",
    "r_precision": "gain",
    "f1": "gain",
    "judged": "judged",
    "hole": "unannotated",
}
"""Metric family -> the per-document key whose decreasing order inside tie groups maximises the metric and whose
increasing order minimises it (see the module docstring for the argument). Families missing here are sampled."""

_TOP_K_ONLY = frozenset({"precision", "recall", "hit_rate", "mrr", "ndcg", "map", "f1", "judged", "hole"})
"""Families whose ``@k`` value reads only ranks <= k (so the re-ordered copies can be cut there; ``judged@k``
divides by ``min(k, n)``, which the cut keeps). ``mrr``, ``map`` without cutoff and ``r_precision`` read the whole
list."""

_TOL = 1e-12
MAX_EXAMPLES = 5


class TieRange(NamedTuple):
    """One metric over tie orders: ``value`` in the run's own order (trec_eval's for TREC files), ``min`` and
    ``max`` over every tie order, ``exact`` False when min / max come from sampled orders (a lower bound on the
    range). In :attr:`TieAudit.aggregate` each number is a mean over the golden queries."""

    value: float
    min: float
    max: float
    exact: bool = True


@dataclass(frozen=True)
class TieAudit:
    """How much one run's metrics depend on the order of tied scores (see the module docstring).

    ``per_query``: one row per golden query (the queries of :func:`~diagnose.metrics.evaluate`, same order), columns
    ``query_id``, ``tie_groups`` (tie groups anywhere in its list), ``ties_in_top_k``, ``crossing_cutoff``,
    ``depends_on_order`` (bool), then for each metric ``m``: ``m`` (value in the run's order), ``m_min``, ``m_max``.
    ``aggregate``: metric -> :class:`TieRange` of the means. ``examples``: up to 5 query ids whose metrics depend
    on the order, widest range of the headline metric first (else queries with ties in the top k).
    ``trec_order``: every tie group is in descending doc-id order (trec_eval's tie-break), so ``value`` is what
    trec_eval reports. ``sampled_orders``: random orders evaluated for families without an exact key (0 when all
    ranges are exact).
    """

    run: str
    k: int
    metrics: tuple[str, ...]
    n_queries: int
    n_queries_with_ties: int
    n_queries_crossing_cutoff: int
    n_queries_metric_depends_on_order: int
    examples: tuple[str, ...]
    per_query: pd.DataFrame
    aggregate: dict[str, TieRange]
    trec_order: bool = True
    sampled_orders: int = 0
    source: str = ""

    @property
    def depends_on_order(self) -> bool:
        return self.n_queries_metric_depends_on_order > 0

    @property
    def varying_metrics(self) -> list[str]:
        """Metrics (in the order asked) whose value changes with the tie order for at least one query."""
        return [
            m for m in self.metrics if (self.per_query[f"{m}_max"] - self.per_query[f"{m}_min"] > _TOL).any()
        ]

    @property
    def headline(self) -> str | None:
        """The metric the message speaks of: the first one asked whose mean changes with the tie order."""
        varying = self.varying_metrics
        return varying[0] if varying else None

    def message(self) -> str | None:
        """One plain-language warning, or None when no metric depends on the order of tied documents."""
        m = self.headline
        if m is None:
            return None
        r = self.aggregate[m]
        order = "trec_eval's doc-id order" if self.trec_order else "the run's order"
        n_dep = self.n_queries_metric_depends_on_order
        approx = "" if r.exact else "at least "
        if self.n_queries_crossing_cutoff:
            where = f"{self.n_queries_crossing_cutoff} of {self.n_queries} queries have tied scores across rank {self.k}"
        elif self.n_queries_with_ties:
            where = (
                f"{self.n_queries_with_ties} of {self.n_queries} queries have tied scores in the top {self.k}"
            )
        else:
            where = f"some of the {self.n_queries} queries have tied scores below rank {self.k}"
        digits = _digits(r.min, r.max)
        text = (
            f"run {self.run!r}: {where}, and {n_dep} {'has' if n_dep == 1 else 'have'} metrics that change "
            f"with the order of the tied documents; {m} ranges {approx}{r.min:.{digits}f}-{r.max:.{digits}f} over "
            f"tie orders ({order} gives {r.value:.{digits}f})"
        )
        others = [o for o in self.varying_metrics if o != m]
        if others:
            shown = ", ".join(
                f"{o} {self.aggregate[o].min:.{_digits(self.aggregate[o].min, self.aggregate[o].max)}f}-"
                f"{self.aggregate[o].max:.{_digits(self.aggregate[o].min, self.aggregate[o].max)}f}"
                for o in others[:2]
            )
            more = f" and {len(others) - 2} more" if len(others) > 2 else ""
            text += f"; also {shown}{more}"
        return text + ". The metrics depend on how documents are named: break ties in the retriever."

    def query_examples(self) -> list[str]:
        """The example queries with their range of the headline metric, e.g. ``"q7: mrr 0.200-1.000 (run order
        1.000)"``; bare ids when no metric depends on the order."""
        m = self.headline
        if m is None:
            return list(self.examples)
        rows = self.per_query.set_index("query_id")
        return [
            f"{q}: {m} {rows.at[q, f'{m}_min']:.3f}-{rows.at[q, f'{m}_max']:.3f} "
            f"(run order {rows.at[q, m]:.3f})"
            for q in self.examples
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: counts, ``aggregate`` ``{metric: {value, min, max, exact}}``, the message, and ``queries``:
        the per-query rows of the queries with ties in the top k or a metric that depends on the order."""
        pq = self.per_query
        keep = pq[pq["ties_in_top_k"] | pq["depends_on_order"]]
        queries = [
            {c: _plain(v) for c, v in zip(keep.columns, row, strict=True)}
            for row in keep.itertuples(index=False, name=None)
        ]
        return {
            "run": self.run,
            "k": int(self.k),
            "metrics": list(self.metrics),
            "n_queries": int(self.n_queries),
            "n_queries_with_ties": int(self.n_queries_with_ties),
            "n_queries_crossing_cutoff": int(self.n_queries_crossing_cutoff),
            "n_queries_metric_depends_on_order": int(self.n_queries_metric_depends_on_order),
            "examples": list(self.examples),
            "trec_order": bool(self.trec_order),
            "sampled_orders": int(self.sampled_orders),
            "message": self.message(),
            "aggregate": {
                m: {f: _plain(v) for f, v in r._asdict().items()} for m, r in self.aggregate.items()
            },
            "queries": queries,
        }


def _plain(v: Any) -> Any:
    if isinstance(v, np.bool_ | bool):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        return float(v)
    return v


# --------------------------------------------------------------------------------------------- layout


class _Layout(NamedTuple):
    """The run's rows sorted by (query, rank) ("positions"), with their tie groups."""

    order: np.ndarray  # position -> row of run.df
    qcode: np.ndarray  # position -> run query code (first-seen order)
    qids: np.ndarray  # run query code -> query id
    rank: np.ndarray  # position -> rank value
    group: np.ndarray  # position -> group id (non-decreasing; singletons are groups of one)
    tied: np.ndarray  # position -> bool, in a group of >= 2
    g_start: np.ndarray  # per group: first position
    g_size: np.ndarray  # per group: number of documents


def _layout(run: Run) -> _Layout:
    df = run.df
    n = len(df)
    qcode, qids = pd.factorize(df["query_id"], sort=False)
    ranks = df["rank"].to_numpy(dtype=np.int64)
    order = np.lexsort((np.arange(n), ranks, qcode))
    q, r = qcode[order].astype(np.int64), ranks[order]
    with np.errstate(over="ignore", invalid="ignore"):
        s32 = df["score"].to_numpy(dtype=np.float64)[order].astype(np.float32) + np.float32(0.0)
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (q[1:] != q[:-1]) | (s32[1:] != s32[:-1])  # NaN != NaN: NaN ties with nothing
    group = np.cumsum(new) - 1
    g_start = np.flatnonzero(new)
    g_size = np.diff(np.append(g_start, n))
    tied = g_size[group] > 1 if n else np.zeros(0, dtype=bool)
    return _Layout(order, q, np.asarray(qids, dtype=object), r, group, tied, g_start, g_size)


def _strings(values: pd.Series) -> pa.Array:
    """A column of ids as one Arrow ``large_string`` array (zero-copy for pandas' Arrow-backed strings)."""
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
    return arr.cast(pa.large_string()) if arr.type != pa.large_string() else arr


def _keys(qrels: Qrels, run: Run, lay: _Layout, needed: set[str]) -> dict[str, np.ndarray]:
    """Per position, the sort keys of :data:`EXACT_KEYS` that are needed (0 outside tie groups: unused there).

    Only tied positions are looked up: their doc ids are coded against the qrels' doc ids with Arrow's hash
    ``index_in``, their queries against the run's query codes, and the (query, doc) code pairs found by binary
    search among the qrels' pairs (exact: codes come from the strings, not from hashes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lay.order)
    out = {name: np.zeros(n, dtype=np.float64) for name in needed}
    pos = np.flatnonzero(lay.tied)
    if not len(pos) or not len(qrels.df):
        if "unannotated" in needed:
            out["unannotated"][pos] = 1.0
        return out
    qdf = qrels.df
    q_docs = _strings(qdf["doc_id"])
    doc_values = pc.unique(q_docs)
    q_doc = pc.fill_null(pc.index_in(q_docs, value_set=doc_values), -1).to_numpy(zero_copy_only=False)
    q_doc = q_doc.astype(np.int64)
    q_query = pd.Index(lay.qids, dtype=object).get_indexer(qdf["query_id"].to_numpy(dtype=object))
    docs = _strings(run.df["doc_id"]).take(pa.array(lay.order[pos], type=pa.int64()))
    doc = pc.fill_null(pc.index_in(docs, value_set=doc_values), -1).to_numpy(zero_copy_only=False)
    doc = doc.astype(np.int64)
    if "unannotated" in needed:
        out["unannotated"][pos] = (doc < 0).astype(np.float64)
    if needed & {"gain", "judged"}:
        width = np.int64(len(doc_values) + 1)
        keep = q_query >= 0  # judgements of queries the run lists
        pair = q_query[keep].astype(np.int64) * width + q_doc[keep]
        grade = pd.to_numeric(qdf["relevance"]).to_numpy(dtype=np.float64)[keep]
        # a (query, doc) pair judged twice keeps the last grade, like diagnose.metrics: stable sort, take the last
        srt = np.argsort(pair, kind="stable")
        pair, grade = pair[srt], grade[srt]
        last = np.append(pair[1:] != pair[:-1], True)
        pair, grade = pair[last], grade[last]
        found = doc >= 0
        look = lay.qcode[pos[found]] * width + doc[found]
        at = np.minimum(np.searchsorted(pair, look), max(len(pair) - 1, 0))
        hit = pair[at] == look if len(pair) else np.zeros(len(look), dtype=bool)
        where = pos[found][hit]
        if "gain" in needed:
            out["gain"][where] = np.maximum(grade[at[hit]], 0.0)
        if "judged" in needed:
            out["judged"][where] = 1.0
    return out


def _reordered(run: Run, lay: _Layout, key: np.ndarray, depth: int | None = None) -> Run:
    """A copy of ``run`` whose tie groups are sorted by ``key`` ascending (pass ``-key`` for descending; equal keys
    keep the run's order). Ranks stay at their positions; scores become ``-rank`` so the order is explicit.
    ``depth``: keep only ranks <= depth (for metrics that read nothing deeper)."""
    n = len(lay.order)
    perm = np.lexsort((np.arange(n), key, lay.group))
    rows, where = lay.order[perm], lay.order
    rank = lay.rank
    if depth is not None:
        keep = lay.rank <= depth
        rows, where, rank = rows[keep], where[keep], rank[keep]
    df = run.df
    out = pd.DataFrame(
        {
            "query_id": df["query_id"].take(where).reset_index(drop=True),
            "doc_id": df["doc_id"].take(rows).reset_index(drop=True),
            "score": -rank.astype(np.float64),
            "rank": rank,
        }
    )
    return Run(run.name, out, run.source)


def _depth(names: Sequence[str]) -> int | None:
    """The deepest rank any of ``names`` reads: the largest cutoff when every one is a cutoff metric of a family in
    :data:`_TOP_K_ONLY`, else None (the whole list)."""
    cuts = [parse_metric(m) for m in names]
    if all(f in _TOP_K_ONLY and c is not None for f, c in cuts):
        return max(int(c) for _, c in cuts if c is not None)
    return None


def _in_trec_order(run: Run, lay: _Layout, scored: np.ndarray) -> bool:
    """Is every tie group of the scored queries (``scored``: bool per run query code) in descending doc-id order
    (trec_eval's tie-break: byte order of the UTF-8 ids, which is code-point order)?"""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(lay.order) < 2:
        return True
    pairs = np.flatnonzero((lay.group[1:] == lay.group[:-1]) & scored[lay.qcode[1:]])
    if not len(pairs):
        return True
    docs = _strings(run.df["doc_id"])
    first = docs.take(pa.array(lay.order[pairs], type=pa.int64()))
    second = docs.take(pa.array(lay.order[pairs + 1], type=pa.int64()))
    return bool(pc.all(pc.greater(first, second)).as_py())


# --------------------------------------------------------------------------------------------- audit


def tie_audit(
    qrels: Qrels,
    run: Run,
    metrics: Sequence[str] | None = None,
    *,
    k: int = 10,
    n_orders: int = 20,
    seed: int = 0,
    relevance_level: int = 1,
) -> TieAudit:
    """Audit ``run`` for score ties that make its metrics depend on document naming (see the module docstring).

    ``metrics``: full names as for :func:`~diagnose.metrics.evaluate` (``["ndcg@10", "mrr"]``); None means
    :func:`~diagnose.metrics.expand_metrics` of None at cutoff ``k``. ``k``: the cutoff whose crossing is counted
    (it does not change the metrics asked). ``n_orders`` and ``seed``: random tie orders for metric families without
    an exact key (none today). ``relevance_level``: as for :func:`~diagnose.metrics.evaluate`.

    Raises :class:`~diagnose.data.DataError` for a bad ``k`` / ``n_orders``, an unknown metric, or qrels without
    any relevant document.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise DataError(f"k must be a positive integer, got {k!r}.", param="k")
    if isinstance(n_orders, bool) or not isinstance(n_orders, int | np.integer) or n_orders < 1:
        raise DataError(f"n_orders must be a positive integer, got {n_orders!r}.", param="n_orders")
    k = int(k)
    names = expand_metrics(None, [k]) if metrics is None else list(metrics)
    base = evaluate(qrels, run, names, relevance_level=relevance_level)
    names = base.metrics
    golden = base.per_query.index
    lay = _layout(run)

    # per run query: tie groups, ties in the top k, crossing k
    groups = np.flatnonzero(lay.g_size > 1)
    gq = lay.qcode[lay.g_start[groups]]
    g_first = lay.rank[lay.g_start[groups]]
    g_last = lay.rank[lay.g_start[groups] + lay.g_size[groups] - 1]
    n_run_q = len(lay.qids)
    n_groups = np.bincount(gq, minlength=n_run_q)
    in_top = np.bincount(gq, weights=g_first <= k, minlength=n_run_q) > 0
    crossing = np.bincount(gq, weights=(g_first <= k) & (g_last > k), minlength=n_run_q) > 0
    at = pd.Index(lay.qids, dtype=object).get_indexer(golden) if n_run_q else np.full(len(golden), -1)
    present = at >= 0

    def per_golden(values: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full(len(golden), fill, dtype=values.dtype)
        out[present] = values[at[present]]
        return out

    lo = base.per_query.to_numpy(dtype=np.float64, copy=True)
    hi = lo.copy()
    exact = {m: metric_family(m) in EXACT_KEYS for m in names}
    sampled = 0
    if len(groups):
        needed = {EXACT_KEYS[metric_family(m)] for m in names if exact[m]}
        if not all(exact.values()):
            needed.add("gain")
        keys = _keys(qrels, run, lay, needed)
        for key_name in sorted(needed):
            cols = [j for j, m in enumerate(names) if EXACT_KEYS.get(metric_family(m), "gain") == key_name]
            key = keys[key_name]
            if not _varies_in_groups(key, lay):
                continue
            sub = [names[j] for j in cols]
            for sign in (-1.0, 1.0):
                e = evaluate(
                    qrels, _reordered(run, lay, sign * key, _depth(sub)), sub, relevance_level=relevance_level
                )
                _widen(lo, hi, cols, e)
        inexact = [j for j, m in enumerate(names) if not exact[m]]
        if inexact:
            rng = np.random.default_rng(seed)
            sub = [names[j] for j in inexact]
            for _ in range(n_orders):
                e = evaluate(
                    qrels,
                    _reordered(run, lay, rng.random(len(lay.order)), _depth(sub)),
                    sub,
                    relevance_level=relevance_level,
                )
                _widen(lo, hi, inexact, e)
            sampled = n_orders

    value = base.per_query.to_numpy(dtype=np.float64)
    depends = (hi - lo > _TOL).any(axis=1) if len(names) else np.zeros(len(golden), dtype=bool)
    ties_top = per_golden(in_top, False)
    cross = per_golden(crossing, False)
    per_query = pd.DataFrame(
        {
            "query_id": np.asarray(golden, dtype=object),
            "tie_groups": per_golden(n_groups.astype(np.int64), 0),
            "ties_in_top_k": ties_top,
            "crossing_cutoff": cross,
            "depends_on_order": depends,
        }
    )
    for j, m in enumerate(names):
        per_query[m] = value[:, j]
        per_query[f"{m}_min"] = lo[:, j]
        per_query[f"{m}_max"] = hi[:, j]
    aggregate = {
        m: TieRange(
            float(value[:, j].mean()) if len(golden) else math.nan,
            float(lo[:, j].mean()) if len(golden) else math.nan,
            float(hi[:, j].mean()) if len(golden) else math.nan,
            exact[m],
        )
        for j, m in enumerate(names)
    }
    # examples: queries whose metrics depend on the order, widest range of the first varying metric first
    varying = [j for j in range(len(names)) if (hi[:, j] - lo[:, j] > _TOL).any()]
    if varying:
        width = hi[:, varying[0]] - lo[:, varying[0]]
        idx = np.flatnonzero(depends)
        idx = idx[np.argsort(-width[idx], kind="stable")]
    else:
        idx = np.flatnonzero(ties_top)
    examples = tuple(str(golden[i]) for i in idx[:MAX_EXAMPLES])
    return TieAudit(
        run=run.name,
        k=k,
        metrics=tuple(names),
        n_queries=len(golden),
        n_queries_with_ties=int(ties_top.sum()),
        n_queries_crossing_cutoff=int(cross.sum()),
        n_queries_metric_depends_on_order=int(depends.sum()),
        examples=examples,
        per_query=per_query,
        aggregate=aggregate,
        trec_order=_in_trec_order(run, lay, np.isin(np.arange(n_run_q), at[present])),
        sampled_orders=sampled,
        source=run.source,
    )


def _varies_in_groups(key: np.ndarray, lay: _Layout) -> bool:
    """Does ``key`` take two different values inside some tie group? (Else every tie order gives the same value.)"""
    if len(key) < 2:
        return False
    same_group = lay.group[1:] == lay.group[:-1]
    return bool((same_group & (key[1:] != key[:-1])).any())


def _widen(lo: np.ndarray, hi: np.ndarray, cols: list[int], e: Evaluation) -> None:
    v = e.per_query.to_numpy(dtype=np.float64)
    lo[:, cols] = np.minimum(lo[:, cols], v)
    hi[:, cols] = np.maximum(hi[:, cols], v)


def add_to_report(audit: TieAudit, report: ValidationReport) -> None:
    """Add the audit to ``report`` under code ``score_ties``: one warning (count = queries whose metrics depend on
    the tie order, examples = those queries with their range) when any metric depends on the order; one info
    (count = queries with ties in the top k) when ties exist but change none of the metrics asked; nothing else."""
    file = audit.source or None
    if audit.depends_on_order:
        report.add(
            "score_ties",
            audit.message() or "",
            severity="warning",
            file=file,
            count=audit.n_queries_metric_depends_on_order,
            examples=audit.query_examples(),
        )
    elif audit.n_queries_with_ties:
        report.add(
            "score_ties",
            f"run {audit.run!r}: {audit.n_queries_with_ties} of {audit.n_queries} queries have tied scores in the "
            f"top {audit.k}, but none of the metrics ({', '.join(audit.metrics)}) changes with the order of the "
            "tied documents",
            severity="info",
            file=file,
            count=audit.n_queries_with_ties,
            examples=audit.examples,
        )


def _digits(low: float, high: float) -> int:
    """Decimals that show a range's two ends apart (3, up to 6 for a range narrower than 0.001)."""
    for d in range(3, 7):
        if f"{low:.{d}f}" != f"{high:.{d}f}":
            return d
    return 3
