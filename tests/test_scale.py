"""Pages that scale (issue 23 item 5), the library's part: the failed queries worst first, a query's missed targets
worst first and grouped by class (the worst few opened, the recommendation once per class), and the map's lines of the
selected and the worst failed queries only.

Failures are built by hand (only what the ordering and grouping read: query, target, class, run rank, cosine,
recommendation); the expected orders are worked out in the comments from :func:`diagnose.failures.sort_worst`'s rule
(not retrieved first, then the deepest run rank, then the lowest cosine)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from test_remedies import failure

from diagnose import defaults
from diagnose.failures import worst_queries
from diagnose.failures.inspection import Inspection, Target, group_targets, targets_table
from diagnose.projection import EDGE_COLUMNS, map_lines


def missed(q: str, d: str, cls: str, rank: int | None, cosine: float) -> Target:
    f = dataclasses.replace(
        failure(q, d, cls), run_rank=rank, run_depth=100, cosine=cosine, recommendation=f"do the {cls} thing"
    )
    return Target(f, title="", text="", present_stems=())


def test_failed_queries_come_in_the_order_of_their_worst_missed_pair():
    fs = [
        missed("qa", "d1", "near_miss", 12, 0.5).failure,  # retrieved at 12
        missed("qb", "d2", "semantic_gap", None, 0.3).failure,  # not retrieved: the worst kind
        missed("qa", "d3", "semantic_gap", None, 0.1).failure,  # not retrieved, lower cosine than qb's: first
        missed("qc", "d4", "near_miss", 40, 0.6).failure,  # deeper than qa's d1
    ]
    # sort_worst: qa/d3 (none, 0.1), qb/d2 (none, 0.3), qc/d4 (#40), qa/d1 (#12) -> queries qa, qb, qc
    assert worst_queries(fs) == ["qa", "qb", "qc"]
    assert worst_queries([]) == []


def test_targets_group_by_class_in_the_order_of_their_worst_target_with_the_worst_few_opened():
    # already worst first (as inspect_query holds them): t0..t5
    targets = (
        missed("q", "t0", "semantic_gap", None, 0.1),
        missed("q", "t1", "ranking_failure", None, 0.2),
        missed("q", "t2", "semantic_gap", None, 0.3),
        missed("q", "t3", "semantic_gap", 50, 0.4),
        missed("q", "t4", "near_miss", 12, 0.5),
        missed("q", "t5", "ranking_failure", 11, 0.6),
    )
    groups = group_targets(targets, open_n=3)
    # classes by their first (worst) target: semantic_gap (t0), ranking_failure (t1), near_miss (t4)
    assert [g.cls for g in groups] == ["semantic_gap", "ranking_failure", "near_miss"]
    ids = [[t.failure.doc_id for t in g.targets] for g in groups]
    assert ids == [["t0", "t2", "t3"], ["t1", "t5"], ["t4"]]
    # the 3 worst overall (t0, t1, t2) are opened; every other target is collapsed in its class
    assert [[t.failure.doc_id for t in g.opened] for g in groups] == [["t0", "t2"], ["t1"], []]
    assert [[t.failure.doc_id for t in g.collapsed] for g in groups] == [["t3"], ["t5"], ["t4"]]
    # one recommendation per class, the class's own
    assert [g.recommendation for g in groups] == [f"do the {g.cls} thing" for g in groups]
    assert sum(len(g.targets) for g in groups) == len(targets)


def test_opening_every_target_or_none():
    targets = tuple(missed("q", f"t{i}", "semantic_gap", None, i / 10) for i in range(5))
    (every,) = group_targets(targets, open_n=len(targets))
    assert len(every.opened) == 5 and every.collapsed == ()
    (none,) = group_targets(targets, open_n=0)
    assert none.opened == () and len(none.collapsed) == 5
    assert group_targets((), open_n=3) == ()
    with pytest.raises(ValueError, match="open_n"):
        group_targets(targets, open_n=-1)
    assert defaults.INSPECT_OPEN >= 1


def test_targets_table_has_a_row_per_target_and_empty_ranks_for_not_retrieved():
    targets = (missed("q", "t0", "semantic_gap", None, 0.1), missed("q", "t1", "near_miss", 12, 0.5))
    table = targets_table(targets)
    assert list(table["target"]) == ["t0", "t1"]
    assert pd.isna(table["run rank"].iloc[0]) and table["run rank"].iloc[1] == 12
    assert str(table["run rank"].dtype) == "Int64"
    assert targets_table(()).empty


def _edges(lines: dict[str, int]) -> pd.DataFrame:
    rows = [(0.0, 0.0, 1.0, 1.0, q, "target") for q, n in lines.items() for _ in range(n)]
    return pd.DataFrame(rows, columns=list(EDGE_COLUMNS))


def test_map_lines_are_the_selected_query_and_the_n_worst():
    edges = _edges({"qa": 3, "qb": 2, "qc": 4, "qd": 1})  # 10 lines
    worst = ["qc", "qa", "qd", "qb"]
    two = map_lines(edges, worst, selected="qb", n_worst=2)
    # qb (selected) + qc, qa (the 2 worst): 2 + 4 + 3 = 9 lines
    assert two.query_ids == ("qb", "qc", "qa")
    assert len(two.edges) == 9 and two.n_all == 10
    assert set(two.edges["query_id"]) == {"qb", "qc", "qa"}
    assert "the selected query qb and the 2 worst failed queries" in two.sentence()
    assert "9 of 10 lines" in two.sentence()
    assert two.legend_title()[0] == "Lines of the selected query + 2 worst queries"
    # a selected query that did not fail has no lines: only the worst
    one = map_lines(edges, worst, selected="not-failed", n_worst=1)
    assert one.query_ids == ("qc",) and len(one.edges) == 4 and one.selected is None
    assert one.legend_title()[0] == "Lines of 1 worst query"
    # the selected query among the worst is not counted twice
    assert map_lines(edges, worst, selected="qa", n_worst=2).query_ids == ("qa", "qc")


def test_map_lines_can_be_every_failed_querys():
    edges = _edges({"qa": 3, "qb": 2})
    every = map_lines(edges, ["qb", "qa"], n_worst=None)
    assert len(every.edges) == 5 and "every failed query (2)" in every.sentence()
    with pytest.raises(ValueError, match="n_worst"):
        map_lines(edges, ["qa"], n_worst=-1)


def test_the_notebook_view_says_each_class_recommendation_once():
    targets = (
        missed("q", "t0", "semantic_gap", None, 0.1),
        missed("q", "t1", "near_miss", 11, 0.2),
        missed("q", "t2", "semantic_gap", None, 0.3),
    )
    view = Inspection(
        query_id="q",
        query_text="a query",
        run="r",
        k=10,
        mode="hit",
        query_terms=("queri",),
        calibrated_threshold=0.3,
        seed_threshold=0.75,
        targets=targets,
        retrieved=pd.DataFrame(),
    )
    page = view._repr_html_()
    assert page.count("do the semantic_gap thing") == 1 and page.count("do the near_miss thing") == 1
    # semantic_gap (t0, t2) before near_miss (t1): the group of the worst target first
    assert page.index("target t0") < page.index("target t2") < page.index("target t1")
