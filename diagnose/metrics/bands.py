"""Quality bands: rules of thumb that read a metric value as poor, acceptable, good or excellent."""

from __future__ import annotations

import math

from diagnose.metrics.names import metric_family

__all__ = ["BANDS", "QUALITY_BANDS", "quality_band"]

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
