"""Retrieval metrics with trec_eval's conventions, per query and averaged, vectorised over all queries at once.

One file per question a contributor brings:

- :mod:`~diagnose.metrics.definitions`: what each metric computes, and the conventions (the formula of every
  metric with its trec_eval name, ties, no relevant document, ``k`` larger than the list, graded gains, which
  queries are averaged); its kernel; the :data:`REGISTRY` of families. Start here, or to add a metric.
- :mod:`~diagnose.metrics.names`: metric names (``"ndcg@10"``), :func:`parse_metric`, :func:`expand_metrics`.
- :mod:`~diagnose.metrics.evaluation`: :func:`evaluate`, :func:`evaluate_many` and their :class:`Evaluation`.
- :mod:`~diagnose.metrics.bounds`: :func:`metric_bounds`, each metric with the unjudged documents counted
  non-relevant and at best.
- :mod:`~diagnose.metrics.bands`: :data:`QUALITY_BANDS`, :func:`quality_band` (poor / acceptable / good /
  excellent).
- :mod:`~diagnose.metrics.join`: the qrels x run hash join that feeds the kernels (about 0.1 s for a 1M-row run).

Every name below is importable from ``diagnose.metrics`` itself::

    from diagnose.metrics import evaluate
    evaluate(qrels, run, ["ndcg@10", "recall@100", "mrr"]).aggregate
"""

from __future__ import annotations

from diagnose.metrics.bands import BANDS, QUALITY_BANDS, quality_band
from diagnose.metrics.bounds import _UPPER as _UPPER
from diagnose.metrics.bounds import MetricBounds, metric_bounds
from diagnose.metrics.definitions import REGISTRY, Metric
from diagnose.metrics.evaluation import Evaluation, evaluate, evaluate_many
from diagnose.metrics.names import DEFAULT_FAMILIES, expand_metrics, metric_family, parse_metric

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
