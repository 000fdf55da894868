"""RRF and weighted fusion against hand computations (arithmetic in the comments).

Both functions also agree with ranx.fuse (method="rrf", k=60; method="wsum", norm="min-max") on random runs; that
check is not in the suite because ranx's numba compilation takes ~30 s.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from diagnose.data import DataError, Run
from diagnose.search.fusion import rrf, weighted_fusion


def run(name: str, lists: dict[str, list[tuple[str, float]]]) -> Run:
    return Run.from_ranked_lists(name, lists)


A = run("a", {"q1": [("d1", 10.0), ("d2", 6.0), ("d3", 2.0)], "q2": [("x", 1.0)]})
B = run("b", {"q1": [("d2", 0.9), ("d4", 0.5)], "q3": [("y", 3.0)]})


def as_lists(r: Run) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in zip(r.df["query_id"], r.df["doc_id"], r.df["score"], strict=True):
        out.setdefault(q, []).append((d, s))
    return out


def check_run_shape(r: Run) -> None:
    assert list(r.df.columns) == ["query_id", "doc_id", "score", "rank"]
    assert r.df["rank"].dtype == np.int64 and r.df["score"].dtype == np.float64
    for _, g in r.df.groupby("query_id", sort=False):
        assert g["rank"].tolist() == list(range(1, len(g) + 1))
        assert (np.diff(g["score"].to_numpy()) <= 0).all()


def test_rrf_by_hand():
    fused = rrf([A, B])
    check_run_shape(fused)
    lists = as_lists(fused)
    # q1: d1 = 1/61 (A rank 1); d2 = 1/62 + 1/61 (A rank 2, B rank 1); d3 = 1/63; d4 = 1/62 (B rank 2)
    #     -> d2 0.032522 > d1 0.016393 > d4 0.016129 > d3 0.015873
    assert [d for d, _ in lists["q1"]] == ["d2", "d1", "d4", "d3"]
    assert [s for _, s in lists["q1"]] == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62, 1 / 63])
    # queries only one run has keep that run's RRF score; order of first appearance: q1, q2 (A), q3 (B)
    assert fused.query_ids() == ["q1", "q2", "q3"]
    assert lists["q3"] == [("y", pytest.approx(1 / 61))]
    assert fused.name == "hybrid"


def test_rrf_k_and_depth():
    fused = rrf([A, B], k=0, depth=2, name="x")
    # k = 0: d2 = 1/2 + 1/1 = 1.5, d1 = 1/1 = 1, then cut at depth 2
    assert as_lists(fused)["q1"] == [("d2", 1.5), ("d1", 1.0)]
    assert fused.name == "x"


def test_rrf_ties_by_doc_id_descending():
    # x and y swap ranks: both 1/61 + 1/62 -> tie -> "y" > "x" comes first (trec_eval order)
    r1 = run("r1", {"q": [("x", 2.0), ("y", 1.0)]})
    r2 = run("r2", {"q": [("y", 2.0), ("x", 1.0)]})
    assert [d for d, _ in as_lists(rrf([r1, r2]))["q"]] == ["y", "x"]
    # three runs: ranks (1,2,3), (3,1,2), (2,3,1) for x, y, z -> all 1/61 + 1/62 + 1/63, summed in different
    # orders; rounding makes them tie exactly -> z, y, x
    r1 = run("r1", {"q": [("x", 3.0), ("y", 2.0), ("z", 1.0)]})
    r2 = run("r2", {"q": [("y", 3.0), ("z", 2.0), ("x", 1.0)]})
    r3 = run("r3", {"q": [("z", 3.0), ("x", 2.0), ("y", 1.0)]})
    assert [d for d, _ in as_lists(rrf([r1, r2, r3]))["q"]] == ["z", "y", "x"]


def test_rrf_uses_ranks_not_scores():
    # same order, wildly different scores -> same fused list
    scaled = Run("a", A.df.assign(score=A.df["score"] * 1000 - 7))
    pd.testing.assert_frame_equal(rrf([A, B]).df, rrf([scaled, B]).df)


def test_weighted_minmax_by_hand():
    fused = weighted_fusion([A, B], [0.7, 0.3], norm="minmax")
    check_run_shape(fused)
    # A q1: (s - 2) / (10 - 2): d1 1, d2 0.5, d3 0;  B q1: (s - 0.5) / 0.4: d2 1, d4 0
    # d1 = 0.7 * 1 = 0.7; d2 = 0.7 * 0.5 + 0.3 * 1 = 0.65; d3 = 0; d4 = 0 -> tie d4 > d3 by id
    assert as_lists(fused)["q1"] == [
        ("d1", pytest.approx(0.7)),
        ("d2", pytest.approx(0.65)),
        ("d4", 0.0),
        ("d3", 0.0),
    ]
    # a one-document list has max == min -> 0
    assert as_lists(fused)["q2"] == [("x", 0.0)]
    assert fused.name == "fused"


def test_weighted_zscore_by_hand():
    fused = weighted_fusion([A, B], [1, 1], norm="zscore")
    # A q1: mean 6, population std sqrt((16 + 0 + 16) / 3) = 3.26599 -> d1 1.22474, d2 0, d3 -1.22474
    # B q1: mean 0.7, std 0.2 -> d2 1, d4 -1;  missing = 0
    # d1 1.22474, d2 0 + 1 = 1, d4 -1, d3 -1.22474
    z = 4 / math.sqrt(32 / 3)
    assert as_lists(fused)["q1"] == [
        ("d1", pytest.approx(z)),
        ("d2", pytest.approx(1.0)),
        ("d4", pytest.approx(-1.0)),
        ("d3", pytest.approx(-z)),
    ]


def test_weighted_none_and_depth():
    fused = weighted_fusion([A, B], [1, 2], norm="none", depth=2)
    # d1 10, d2 6 + 2 * 0.9 = 7.8, d3 2, d4 2 * 0.5 = 1 -> top 2: d1, d2
    assert as_lists(fused)["q1"] == [("d1", 10.0), ("d2", pytest.approx(7.8))]


def test_errors():
    with pytest.raises(DataError, match="one weight per run"):
        weighted_fusion([A, B], [1.0])
    with pytest.raises(DataError, match="Unknown norm"):
        weighted_fusion([A, B], [1, 1], norm="max")
    with pytest.raises(DataError, match="at least one run"):
        rrf([])
    with pytest.raises(DataError, match="sequence of runs"):
        rrf(A)
    dup = Run("dup", pd.concat([A.df, A.df.iloc[:1]], ignore_index=True))
    with pytest.raises(DataError, match="'dup' lists document 'd1' more than once for query 'q1'"):
        rrf([dup, B])


def test_zscore_constant_list_is_zero():
    # three equal scores whose float mean is not exactly 0.1: the std is ~1e-17, not 0, yet the list gets 0
    const = run("c", {"q": [("a", 0.1), ("b", 0.1), ("c", 0.1)]})
    other = run("o", {"q": [("a", 2.0), ("b", 1.0)]})
    fused = weighted_fusion([const, other], [1, 1], norm="zscore")
    # other: mean 1.5, std 0.5 -> a 1, b -1; const adds 0 -> a 1, c 0, b -1
    assert as_lists(fused)["q"] == [("a", 1.0), ("c", 0.0), ("b", -1.0)]
