"""What an audit reports: :class:`TieRange` (one metric over tie orders) and :class:`TieAudit` (one run: counts,
per-query table, means, the message and the JSON form).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from diagnose.runtime.frames import FrameField, frame_column, held
from diagnose.runtime.lazy import pandas as pd

TOL = 1e-12
PRINTED_DIGITS = 4  # the reports print a metric's mean to 4 decimals: a narrower range is not worth a warning
EXAMPLE_DIGITS = 3  # an example query's range is printed to 3 decimals
TOOL_SOURCES = (
    "BM25 (",
    "RRF(",
    "exact dense search",
)  # Run.source of the runs the tool makes (baselines, fusion)


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
    per_query: pd.DataFrame = FrameField()
    aggregate: dict[str, TieRange] = field(default_factory=dict)
    trec_order: bool = True
    sampled_orders: int = 0
    source: str = ""

    @property
    def depends_on_order(self) -> bool:
        """Whether the order of tied documents changes a reported number: a metric's mean differs at the printed
        precision (:data:`PRINTED_DIGITS`) between tie orders (issue 23: a map of 0.466629-0.466631 is not)."""
        return bool(self.reported_metrics)

    @property
    def tool_made(self) -> bool:
        """A run the tool made (its BM25, dense or hybrid baseline, a fusion): its ties are equal scores ordered by
        doc id, nothing the user could break in a retriever."""
        return self.source.startswith(TOOL_SOURCES)

    @cached_property
    def reported_metrics(self) -> list[str]:
        """The varying metrics whose mean's range shows at the printed precision (computed once: the message, the
        examples and the report each ask)."""
        return [m for m in self.varying_metrics if _shown_apart(self.aggregate[m], PRINTED_DIGITS)]

    @cached_property
    def varying_metrics(self) -> list[str]:
        """Metrics (in the order asked) whose value changes with the tie order for at least one query."""
        pq = held(self, "per_query")
        return [
            m
            for m in self.metrics
            if (frame_column(pq, f"{m}_max") - frame_column(pq, f"{m}_min") > TOL).any()
        ]

    @property
    def headline(self) -> str | None:
        """The metric the message speaks of: the first one asked whose mean changes with the tie order (at the
        printed precision)."""
        varying = self.reported_metrics
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
            f"with the order of the tied documents; {m} ranges {approx}{_span(r)} over "
            f"tie orders ({order} gives {r.value:.{digits}f})"
        )
        others = [o for o in self.reported_metrics if o != m]
        if others:
            shown = ", ".join(f"{o} {_span(self.aggregate[o])}" for o in others[:2])
            more = f" and {len(others) - 2} more" if len(others) > 2 else ""
            text += f"; also {shown}{more}"
        if self.tool_made:
            return text + (
                ". This run is the tool's own (equal scores, ordered by doc id as trec_eval does): its "
                "numbers carry this uncertainty, there is no retriever of yours to change."
            )
        return text + ". The metrics depend on how documents are named: break ties in the retriever."

    def query_examples(self) -> list[str]:
        """The example queries with a range that varies, e.g. ``"q7: mrr 0.200-1.000 (run order 1.000)"``: the
        headline metric, else the first reported metric whose range shows at 3 decimals for that query (an example
        whose ranges all print the same, "precision@1 1.000-1.000", is left out); bare ids when no metric depends
        on the order."""
        if self.headline is None:
            return list(self.examples)
        pq = held(self, "per_query")
        row_of = {q: i for i, q in enumerate(frame_column(pq, "query_id").tolist())}
        out = []
        for q in self.examples:
            i = row_of[q]
            for m in self.reported_metrics:
                r = TieRange(*(float(frame_column(pq, c)[i]) for c in (m, f"{m}_min", f"{m}_max")))
                if _shown_apart(r, EXAMPLE_DIGITS):
                    out.append(f"{q}: {m} {r.min:.3f}-{r.max:.3f} (run order {r.value:.3f})")
                    break
        return out

    def to_dict(self, *, per_query: bool = True) -> dict[str, Any]:
        """JSON-safe: counts, ``aggregate`` ``{metric: {value, min, max, exact}}``, the message, and (``per_query``)
        ``queries``: the per-query rows of the queries with ties in the top k or a metric that depends on the order.
        ``diagnose evaluate --format json`` writes ``queries`` only with ``--per-query``."""
        out = {
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
        }
        if per_query:
            pq = self.per_query
            keep = pq[pq["ties_in_top_k"] | pq["depends_on_order"]]
            out["queries"] = [
                {c: _plain(v) for c, v in zip(keep.columns, row, strict=True)}
                for row in keep.itertuples(index=False, name=None)
            ]
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.bool_ | bool):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating | float):
        return float(v)
    return v


def _shown_apart(r: TieRange, digits: int) -> bool:
    return f"{r.min:.{digits}f}" != f"{r.max:.{digits}f}"


def _span(r: TieRange) -> str:
    """A range as ``min-max``, with the decimals that show its two ends apart."""
    digits = _digits(r.min, r.max)
    return f"{r.min:.{digits}f}-{r.max:.{digits}f}"


def _digits(low: float, high: float) -> int:
    """Decimals that show a range's two ends apart (3, up to 6 for a range narrower than 0.001)."""
    for d in range(3, 7):
        if f"{low:.{d}f}" != f"{high:.{d}f}":
            return d
    return 3
