"""Retrieval metrics with trec_eval's conventions, per query and averaged, vectorised over all queries at once.

One file per question a contributor brings:

- :mod:`~diagnose.metrics.definitions`: what each metric computes, and the conventions (the formula of every
  metric with its trec_eval name, ties, no relevant document, ``k`` larger than the list, graded gains, which
  queries are averaged); its kernel; the :data:`REGISTRY` of families, one :class:`Metric` record each holding
  every fact about it (upper bound, quality band, tie key, coverage, doc rows). Start here, or to add a metric.
- :mod:`~diagnose.metrics.names`: metric names (``"ndcg@10"``) parsed once into a :class:`MetricName`,
  :func:`parse_metric`, :func:`expand_metrics`, :func:`expand_names`; the default cutoffs :data:`DEFAULT_KS`.
- :mod:`~diagnose.metrics.evaluation`: :func:`evaluate`, :func:`evaluate_many` and their :class:`Evaluation`.
- :mod:`~diagnose.metrics.bounds`: :func:`metric_bounds`, each metric with the unjudged documents counted
  non-relevant and at best; the upper-bound kernels are in :mod:`~diagnose.metrics.upper`.
- :mod:`~diagnose.metrics.bands`: :func:`quality_band` (poor / acceptable / good / excellent).
- :mod:`~diagnose.metrics.docs`: :func:`markdown_table` and :func:`bands_markdown_table`, docs/metrics.md's tables.
- :mod:`~diagnose.metrics.join`: the qrels x run hash join that feeds the kernels (about 0.1 s for a 1M-row run).

Every name below is importable from ``diagnose.metrics`` itself::

    from diagnose.metrics import evaluate
    evaluate(qrels, run, ["ndcg@10", "recall@100", "mrr"]).aggregate
"""

from __future__ import annotations

from diagnose.metrics.bands import BANDS, quality_band
from diagnose.metrics.bounds import MetricBounds, metric_bounds
from diagnose.metrics.definitions import REGISTRY, Form, Metric
from diagnose.metrics.docs import bands_markdown_table, markdown_table
from diagnose.metrics.evaluation import Evaluation, evaluate, evaluate_many
from diagnose.metrics.names import (
    DEFAULT_FAMILIES,
    DEFAULT_KS,
    HEADLINE,
    MetricName,
    expand_metrics,
    expand_names,
    headline_metrics,
    metric_family,
    parse_metric,
)

__all__ = [
    "BANDS",
    "DEFAULT_FAMILIES",
    "DEFAULT_KS",
    "HEADLINE",
    "REGISTRY",
    "Evaluation",
    "Form",
    "Metric",
    "MetricBounds",
    "MetricName",
    "bands_markdown_table",
    "evaluate",
    "evaluate_many",
    "expand_metrics",
    "expand_names",
    "headline_metrics",
    "markdown_table",
    "metric_bounds",
    "metric_family",
    "parse_metric",
    "quality_band",
]
