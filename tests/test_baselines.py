"""Baseline runs: BM25 over a Corpus, exact dense search, RRF hybrid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnose.data import Corpus, DataError, Queries, Run, ValidationReport
from diagnose.lexical import BM25Index
from diagnose.search.baselines import bm25_run, dense_run, hybrid_run

CORPUS = Corpus(
    pd.DataFrame(
        {
            "doc_id": ["d1", "d2", "d3", "d4"],
            "title": ["Statins", "", "Vitamin D", ""],
            "text": [
                "and breast cancer",
                "statin side effects",
                "sunlight and bones",
                "nothing relevant here",
            ],
        }
    )
)
QUERIES = Queries(
    pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["statin cancer", "vitamin", "zebra"]})
)


def test_bm25_run_indexes_title_and_text():
    r = bm25_run(CORPUS, QUERIES, ["q1", "q2", "q3"], depth=10)
    assert r.name == "bm25"
    lists = r.ranked_lists()
    # q1 "statin cancer": d1 has both (title "Statins" + "cancer" in the text), d2 only "statin"
    assert lists["q1"] == ["d1", "d2"]
    # q2 "vitamin" is only in d3's title; q3 matches nothing -> no rows
    assert lists["q2"] == ["d3"]
    assert "q3" not in lists
    assert r.df["rank"].tolist() == [1, 2, 1]


def test_bm25_run_all_queries_depth_and_prebuilt_index():
    idx = BM25Index.build(CORPUS.texts(), list(CORPUS.ids), engine="rank_bm25")
    r = bm25_run(CORPUS, QUERIES, depth=1, index=idx)
    assert r.ranked_lists() == {"q1": ["d1"], "q2": ["d3"]}
    np.testing.assert_allclose(r.df["score"].iloc[0], idx.scores("statin cancer")[0])
    other = BM25Index.build(["x"], ["d9"])
    with pytest.raises(DataError, match="not built over this corpus"):
        bm25_run(CORPUS, QUERIES, index=other)


def test_bm25_run_query_without_text():
    with pytest.raises(DataError, match="1 query ids have no text.*'q9'"):
        bm25_run(CORPUS, QUERIES, ["q1", "q9"])
    report = ValidationReport()
    r = bm25_run(CORPUS, QUERIES, ["q1", "q9"], report=report)
    assert r.query_ids() == ["q1"]
    (p,) = report.by_code("bm25_query_without_text")
    assert p.count == 1 and p.examples == ("q9",)


def _unit(rows):
    v = np.asarray(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_dense_run_exact_cosine_order():
    pytest.importorskip("diagnose.embed")
    # docs: e1, e2, (e1 + e2)/sqrt2, and "b" a copy of e1; query e1 -> cosines 1, 0, 0.7071, 1
    docs = _unit([[1, 0], [0, 1], [1, 1], [1, 0]])
    q = _unit([[1, 0], [0, 1]])
    r = dense_run(docs, q, ["a", "c", "m", "b"], ["q1", "q2"], depth=3)
    assert r.name == "dense"
    lists = r.ranked_lists()
    # q1: a and b tie at 1.0 -> doc id descending: b, a; then m (0.7071)
    assert lists["q1"] == ["b", "a", "m"]
    # q2 = e2: c 1.0, m 0.7071, then a and b tie at 0 -> only one fits in depth 3
    assert lists["q2"][:2] == ["c", "m"] and lists["q2"][2] in {"a", "b"}
    np.testing.assert_allclose(r.df["score"].to_numpy()[:3], [1.0, 1.0, np.sqrt(0.5)], rtol=1e-6)
    assert r.df["rank"].tolist() == [1, 2, 3, 1, 2, 3]
    # depth larger than the corpus -> every document once
    assert len(dense_run(docs, q, ["a", "c", "m", "b"], ["q1", "q2"], depth=100).ranked_lists()["q1"]) == 4


def test_dense_run_shape_errors():
    with pytest.raises(DataError, match="same dimension"):
        dense_run(np.ones((3, 4)), np.ones((2, 5)), ["a", "b", "c"], ["q1", "q2"])
    with pytest.raises(DataError, match="one id per row"):
        dense_run(np.ones((3, 4)), np.ones((2, 4)), ["a", "b"], ["q1", "q2"])


def test_hybrid_run_is_rrf_of_the_two():
    bm = Run.from_ranked_lists("bm25", {"q": [("d1", 9.0), ("d2", 5.0), ("d3", 1.0)]})
    de = Run.from_ranked_lists("dense", {"q": [("d3", 0.9), ("d1", 0.8)]})
    h = hybrid_run(bm, de, depth=2)
    # d1 = 1/61 + 1/62 = 0.032522; d3 = 1/63 + 1/61 = 0.032266; d2 = 1/62 -> top 2: d1, d3
    assert h.name == "hybrid"
    assert h.ranked_lists() == {"q": ["d1", "d3"]}
    assert h.df["score"].tolist() == pytest.approx([1 / 61 + 1 / 62, 1 / 63 + 1 / 61])
