"""What the metrics could be once the run's unjudged documents are judged: :func:`metric_bounds` gives every
metric with them counted non-relevant (today's value, ``lower``) and at best (``upper``); see its docstring for
why the best of ``u + 1`` choices per query is the best of all ``2^u``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from diagnose.data import Qrels, Run
from diagnose.metrics.definitions import _safe_div
from diagnose.metrics.evaluation import Evaluation, _evaluation, _kernel_values, _prepared
from diagnose.metrics.join import _RunTables

__all__ = ["MetricBounds", "metric_bounds"]


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
    names, prep = _prepared(qrels, metrics, relevance_level)
    t = _RunTables(prep, run)
    lower = _kernel_values(t, names)
    upper = np.empty_like(lower)
    for j, (_, family, k) in enumerate(names):
        kernel = _UPPER[family]
        # s = 0 is today's value: the maximum only guards against the last bit of a different summation order
        upper[:, j] = lower[:, j] if kernel is None else np.maximum(kernel(t, k), lower[:, j])
    return MetricBounds(_evaluation(prep, run, t, names, lower), _evaluation(prep, run, t, names, upper))
