"""Score runs: :func:`evaluate` (one run), :func:`evaluate_many` (several runs, the qrels prepared once), and the
:class:`Evaluation` record they return (per query and aggregate, with the queries left out and why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from diagnose.data import DataError, Qrels, Run
from diagnose.metrics.join import PreparedQrels, RunTables, prepare
from diagnose.metrics.names import MetricName, parse_all
from diagnose.runtime.frames import ColumnsFrame, FrameField, frame_column, held
from diagnose.runtime.lazy import pandas as pd

__all__ = ["Evaluation", "evaluate", "evaluate_many"]


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

    per_query: pd.DataFrame = FrameField()
    aggregate: dict[str, float] = field(default_factory=dict)
    missing_queries: list[str] = field(default_factory=list)
    no_relevant_queries: list[str] = field(default_factory=list)
    unjudged_queries: list[str] = field(default_factory=list)
    run_name: str = ""

    @property
    def metrics(self) -> list[str]:
        table = held(self, "per_query")
        return list(table.columns) if isinstance(table, ColumnsFrame) else [str(c) for c in table.columns]

    @property
    def n_queries(self) -> int:
        """Number of queries averaged."""
        return len(held(self, "per_query"))

    @property
    def query_ids(self) -> np.ndarray:
        """The scored queries (the index of :attr:`per_query`), an object array."""
        table = held(self, "per_query")
        if isinstance(table, ColumnsFrame):
            return table.index
        return table.index.to_numpy(dtype=object)

    def values(self, metrics: Sequence[str] | None = None) -> np.ndarray:
        """The per-query values of ``metrics`` (all when None) as a ``(queries, metrics)`` float64 array."""
        table = held(self, "per_query")
        names = self.metrics if metrics is None else list(metrics)
        if not names:
            return np.empty((self.n_queries, 0), dtype=np.float64)
        return np.column_stack([frame_column(table, m).astype(np.float64, copy=False) for m in names])


def evaluate(
    qrels: Qrels, run: Run, metrics: Sequence[str | MetricName], *, relevance_level: int = 1
) -> Evaluation:
    """Score ``run`` against ``qrels`` with the conventions of :mod:`diagnose.metrics.definitions`.

    ``metrics``: full names such as ``["ndcg@10", "recall@100", "mrr"]`` or :class:`MetricName` records (see
    :func:`expand_metrics` to build them from families and cutoffs); duplicates are dropped, order kept. ``relevance_level``: minimum grade that
    counts as relevant (trec_eval ``-l``, default 1); nDCG gains still use every grade > 0.

    Raises :class:`DataError` for an unknown metric name or when no judged query has a relevant document.
    """
    names, prep = prepare_inputs(qrels, metrics, relevance_level)
    return _evaluate_prepared(prep, run, names)


def evaluate_many(
    qrels: Qrels, runs: Mapping[str, Run], metrics: Sequence[str | MetricName], *, relevance_level: int = 1
) -> dict[str, Evaluation]:
    """:func:`evaluate` for several runs (keyed by name, order kept), preparing the qrels once."""
    names, prep = prepare_inputs(qrels, metrics, relevance_level)
    return {key: _evaluate_prepared(prep, run, names) for key, run in runs.items()}


def _evaluate_prepared(prep: PreparedQrels, run: Run, names: list[MetricName]) -> Evaluation:
    t = RunTables(prep, run)
    return build_evaluation(prep, run, t, names, kernel_values(t, names))


def prepare_inputs(
    qrels: Qrels, metrics: Sequence[str | MetricName], relevance_level: int
) -> tuple[list[MetricName], PreparedQrels]:
    """The parsed metric names and the prepared qrels, checked to have a relevant document (the start of
    :func:`evaluate`, :func:`evaluate_many` and :func:`~diagnose.metrics.metric_bounds`)."""
    names = parse_all(metrics)
    prep = prepare(qrels, relevance_level)
    _check_has_relevant(prep, qrels)
    return names, prep


def kernel_values(t: RunTables, names: list[MetricName]) -> np.ndarray:
    """Every metric of ``names`` per scored query: an ``(n queries, n metrics)`` array from the registry's kernels."""
    values = np.empty((t.n, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        values[:, j] = name.metric.kernel(t, name.k)
    return values


def build_evaluation(
    prep: PreparedQrels,
    run: Run,
    t: RunTables,
    names: list[MetricName],
    values: np.ndarray,
) -> Evaluation:
    columns = [str(name) for name in names]
    per_query = ColumnsFrame(
        {c: values[:, j] for j, c in enumerate(columns)}, "query_id", np.asarray(prep.eval_ids, dtype=object)
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


def _check_has_relevant(prep: PreparedQrels, qrels: Qrels) -> None:
    if len(prep.eval_ids) == 0:
        where = qrels.source or "the qrels"
        raise DataError(
            f"{where}: no query has a relevant document (grade >= {prep.relevance_level}); "
            f"{len(prep.no_relevant)} judged queries, all with grades below that. Check the relevance column "
            "(relevant documents need a positive integer grade)."
        )
