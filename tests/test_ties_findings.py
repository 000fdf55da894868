"""Tie findings a user can act on (issue 23 item 6): a warning only where the order of tied documents changes a
reported number (at the printed precision), examples that show a real range, and the tool's own baselines never
told to "break ties in the retriever". Audits are built by hand: the numbers are the test's, not the audit's."""

from __future__ import annotations

import pandas as pd

from diagnose.data import ValidationReport
from diagnose.ties import add_to_report
from diagnose.ties.records import TieAudit, TieRange


def _audit(per_query: list[dict], aggregate: dict[str, TieRange], source: str = "runs/mine.trec") -> TieAudit:
    metrics = tuple(aggregate)
    frame = pd.DataFrame(per_query)
    return TieAudit(
        run="r",
        k=10,
        metrics=metrics,
        n_queries=len(frame),
        n_queries_with_ties=len(frame),
        n_queries_crossing_cutoff=len(frame),
        n_queries_metric_depends_on_order=int(frame["depends_on_order"].sum()),
        examples=tuple(frame["query_id"]),
        per_query=frame,
        aggregate=aggregate,
        source=source,
    )


def _row(q: str, **ranges: tuple[float, float, float]) -> dict:
    row = {
        "query_id": q,
        "tie_groups": 1,
        "ties_in_top_k": True,
        "crossing_cutoff": True,
        "depends_on_order": True,
    }
    for m, (value, low, high) in ranges.items():
        row |= {m: value, f"{m}_min": low, f"{m}_max": high}
    return row


def test_a_range_narrower_than_the_printed_decimals_is_no_warning():
    # map's mean ranges 0.466629-0.466631: both print 0.4666 (4 decimals, as the reports print a mean)
    narrow = _audit([_row("q1", map=(0.5, 0.49999, 0.50001))], {"map": TieRange(0.46663, 0.466629, 0.466631)})
    assert not narrow.depends_on_order and narrow.message() is None
    report = ValidationReport()
    add_to_report(narrow, report)
    assert not report.warnings
    # 0.4660-0.4670 prints apart: a warning naming the range
    wide = _audit([_row("q1", map=(0.5, 0.4, 0.6))], {"map": TieRange(0.466, 0.466, 0.467)})
    assert wide.depends_on_order and "map ranges 0.466-0.467" in wide.message()


def test_each_example_shows_a_metric_whose_range_varies_for_that_query():
    # q1: precision@1 is 1.000 in every order, only mrr moves (0.5-1.0); q2: precision@1 moves (0-1)
    audit = _audit(
        [
            _row("q1", **{"precision@1": (1.0, 1.0, 1.0), "mrr": (1.0, 0.5, 1.0)}),
            _row("q2", **{"precision@1": (0.0, 0.0, 1.0), "mrr": (0.5, 0.5, 1.0)}),
        ],
        {"precision@1": TieRange(0.5, 0.5, 1.0), "mrr": TieRange(0.75, 0.5, 1.0)},
    )
    assert audit.query_examples() == [
        "q1: mrr 0.500-1.000 (run order 1.000)",
        "q2: precision@1 0.000-1.000 (run order 0.000)",
    ]


def test_the_tools_own_baselines_are_not_told_to_break_ties_in_the_retriever():
    ranges = {"mrr": TieRange(0.75, 0.5, 1.0)}
    rows = [_row("q1", mrr=(1.0, 0.5, 1.0))]
    for source in ("BM25 (bm25s, lucene, k1=0.9, b=0.4)", "RRF(k=60) of bm25, dense"):
        audit = _audit(rows, ranges, source=source)
        assert "break ties in the retriever" not in audit.message() and "tool's own" in audit.message()
        report = ValidationReport()
        add_to_report(audit, report)
        assert [p.severity for p in report] == ["info"]
    mine = _audit(rows, ranges)
    assert mine.message().endswith("break ties in the retriever.")
