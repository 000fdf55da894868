"""The span-based context precision and recall of ``diagnose evaluate``'s report (:mod:`diagnose.metrics.context`),
as the JSON block ``context`` and the text report's table. Reported only when the golden set has located spans
(a golden set of reference contexts, or its spans file): without spans the report says nothing about them.

JSON (``context``): ``level`` (what the generator is sent: ``"document"``, each retrieved document whole, or
``"chunk"``, each retrieved chunk of a chunk corpus, where it lies in its document), ``k`` (the cut-offs),
``unmatched_queries`` (golden queries whose references were all unmatched: they score 0) and ``runs``: per run,
``aggregate`` (``context_precision@K``, ``context_recall@K``, ``tokens@K`` at each K: means over the golden queries
with references), ``n_queries`` and, with ``--per-query``, ``per_query`` (query id -> the same keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from diagnose.io.messages import plural_of
from diagnose.report.tables import cell, text_table
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    from diagnose.metrics.context import ContextScores

#: what the generator is sent at each level (the text report's heading)
SENT = {
    "document": "each retrieved document sent whole",
    "chunk": "each retrieved chunk, where it lies in its document",
}


def context_frame(scores: Sequence[ContextScores]) -> pd.DataFrame:
    """One run's per-query table: the columns of each k side by side (index: query id)."""
    return pd.concat([s.per_query for s in scores], axis=1)


def _aggregate(scores: Sequence[ContextScores]) -> dict[str, float]:
    return {c: float(v) for s in scores for c, v in s.aggregate.items()}


def context_dict(
    context: Mapping[str, Sequence[ContextScores]], level: str, *, per_query: bool = False
) -> dict[str, Any]:
    """The JSON block ``context`` (module docstring) of ``context`` (run -> its scores at each k)."""
    runs: dict[str, Any] = {}
    for name, scores in context.items():
        frame = context_frame(scores)
        entry: dict[str, Any] = {"aggregate": _aggregate(scores), "n_queries": int(len(frame))}
        if per_query:
            entry["per_query"] = {
                str(q): {c: float(v) for c, v in row.items()} for q, row in frame.iterrows()
            }
        runs[name] = entry
    first = next(iter(context.values()), ())
    return {
        "level": level,
        "k": [s.k for s in first],
        "unmatched_queries": list(first[0].unmatched) if first else [],
        "runs": runs,
    }


def context_text(
    context: Mapping[str, Sequence[ContextScores]], level: str, *, per_query: bool = False
) -> list[str]:
    """The text report's lines: a table of the measures (rows) by run (columns), then per query if asked."""
    aggregates = {name: _aggregate(scores) for name, scores in context.items()}
    measures = list(dict.fromkeys(c for agg in aggregates.values() for c in agg))
    table = [
        {"measure": m, **{n: _value(m, agg.get(m, float("nan"))) for n, agg in aggregates.items()}}
        for m in measures
    ]
    first = next(iter(context.values()), ())
    unmatched = list(first[0].unmatched) if first else []
    lines = [
        "",
        f"Context precision and recall from the reference spans ({SENT.get(level, level)}; token shares, "
        "docs/metrics.md):",
        text_table(table, ["measure", *aggregates]),
    ]
    if unmatched:
        lines.append(
            f"{plural_of(len(unmatched), 'golden query', 'golden queries')} without a located reference (scored 0): "
            + ", ".join(unmatched[:8])
        )
    if per_query:
        for name, scores in context.items():
            frame = context_frame(scores)
            rows = [
                {"query_id": q, **{c: _value(c, v) for c, v in row.items()}} for q, row in frame.iterrows()
            ]
            lines += ["", f"context per query: {name}", text_table(rows, ["query_id", *frame.columns])]
    return lines


def _value(measure: str, v: float) -> str:
    """A share with 4 decimals; a token count as a number of tokens."""
    return f"{v:,.1f}" if measure.startswith("tokens@") else cell(v)
