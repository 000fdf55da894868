"""What the metrics could be once the run's unjudged documents are judged: :func:`metric_bounds` gives every
metric with them counted non-relevant (today's value, ``lower``) and at best (``upper``); see its docstring for
why the best of ``u + 1`` choices per query is the best of all ``2^u``. The upper-bound kernels are in
:mod:`diagnose.metrics.upper`, each family's named by its record (``REGISTRY[family].upper``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from diagnose.data import Qrels, Run
from diagnose.metrics.evaluation import Evaluation, build_evaluation, kernel_values, prepare_inputs
from diagnose.metrics.join import RunTables
from diagnose.metrics.names import MetricName
from diagnose.runtime.lazy import pandas as pd

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


def metric_bounds(
    qrels: Qrels, run: Run, metrics: Sequence[str | MetricName], *, relevance_level: int = 1
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
    names, prep = prepare_inputs(qrels, metrics, relevance_level)
    t = RunTables(prep, run)
    lower = kernel_values(t, names)
    upper = np.empty_like(lower)
    for j, name in enumerate(names):
        kernel = name.metric.upper
        # s = 0 is today's value: the maximum only guards against the last bit of a different summation order
        upper[:, j] = lower[:, j] if kernel is None else np.maximum(kernel(t, name.k), lower[:, j])
    return MetricBounds(
        build_evaluation(prep, run, t, names, lower), build_evaluation(prep, run, t, names, upper)
    )
