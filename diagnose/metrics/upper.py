"""The upper-bound kernels of :func:`~diagnose.metrics.metric_bounds`: each metric at its best once the run's
unjudged documents are judged, per scored query. ``REGISTRY[family].upper`` names the kernel of each family (see
:mod:`diagnose.metrics.definitions`); the argument for the best of ``u + 1`` choices is in ``metric_bounds``.
"""

from __future__ import annotations

import numpy as np

from diagnose.metrics.join import RunTables, safe_div

__all__ = [
    "upper_f1",
    "upper_hit_rate",
    "upper_map",
    "upper_mrr",
    "upper_ndcg",
    "upper_precision",
    "upper_r_precision",
    "upper_recall",
]


def _unjudged(t: RunTables, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unjudged documents (no qrels row for the query) of each scored query at ranks <= ``k`` (all ranks when
    ``k`` is None): ``(query, rank, start)``, sorted by (query, rank); ``start[q]:start[q + 1]`` are query q's."""
    lst = t.listed()
    m = ~lst.judged if k is None else ~lst.judged & (lst.rank <= k)
    q, r = lst.q[m], lst.rank[m]
    return q, r, np.searchsorted(q, np.arange(t.n + 1))


def _relevant_by_query(t: RunTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def upper_precision(t: RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return (t.rel_at(k) + u) / k


def upper_recall(t: RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return (t.rel_at(k) + u) / (t.n_rel + u)


def upper_hit_rate(t: RunTables, k: int | None) -> np.ndarray:
    u = np.diff(_unjudged(t, k)[2])
    return ((t.first_rank <= k) | (u > 0)).astype(np.float64)


def upper_mrr(t: RunTables, k: int | None) -> np.ndarray:
    _, r, start = _unjudged(t, k)
    first_unjudged = np.full(t.n, np.inf)
    has = np.diff(start) > 0
    first_unjudged[has] = r[start[:-1][has]]
    first = np.minimum(t.first_rank, first_unjudged)
    return 1.0 / first if k is None else np.where(first <= k, 1.0 / first, 0.0)


def upper_f1(t: RunTables, k: int | None) -> np.ndarray:
    p, r = upper_precision(t, k), upper_recall(t, k)
    return safe_div(2.0 * p * r, p + r)


def upper_ndcg(t: RunTables, k: int | None) -> np.ndarray:
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


def upper_map(t: RunTables, k: int | None) -> np.ndarray:
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


def upper_r_precision(t: RunTables, k: int | None) -> np.ndarray:
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
