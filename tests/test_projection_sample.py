"""Embedding map: the sample drawn for the map (must-keep rows, the cap, proportions, seed, caption) and the exact
cosine k-NN.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from projection_testing import numbered_ids

from diagnose import projection as pj
from diagnose.projection import FailedQuery


@settings(max_examples=150, deadline=None)
@given(
    n_docs=st.integers(0, 120),
    n_queries=st.integers(0, 40),
    cap=st.integers(0, 200),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_sample_keeps_every_must_row_and_respects_the_cap(n_docs, n_queries, cap, seed, data):
    docs, queries = numbered_ids("d", n_docs), numbered_ids("q", n_queries)
    must_d = set(data.draw(st.lists(st.sampled_from(docs), unique=True))) if docs else set()
    must_q = set(data.draw(st.lists(st.sampled_from(queries), unique=True))) if queries else set()
    s = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=cap, seed=seed)
    kept_d = {docs[i] for i in s.doc_rows}
    kept_q = {queries[i] for i in s.query_rows}
    assert must_d <= kept_d and must_q <= kept_q
    n_must = len(must_d) + len(must_q)
    # never more than the cap, unless the must-keep rows alone exceed it; never fewer than min(cap, everything)
    assert s.n_points <= max(cap, n_must)
    assert s.n_points == max(min(cap, n_docs + n_queries), n_must)
    assert s.over_cap == (n_must > cap)
    for rows, n in ((s.doc_rows, n_docs), (s.query_rows, n_queries)):
        assert rows.dtype == np.int64
        assert list(rows) == sorted(set(rows.tolist()))
        assert all(0 <= r < n for r in rows)
    assert (s.n_docs, s.n_queries, s.n_must_docs, s.n_must_queries) == (
        n_docs,
        n_queries,
        len(must_d),
        len(must_q),
    )
    again = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=cap, seed=seed)
    assert np.array_equal(again.doc_rows, s.doc_rows) and np.array_equal(again.query_rows, s.query_rows)


def test_sample_splits_the_rest_in_proportion_and_is_seeded():
    docs, queries = numbered_ids("d", 1000), numbered_ids("q", 100)
    must_d, must_q = set(docs[:10]), set(queries[:5])
    s = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=115, seed=0)
    # budget 115 - 15 = 100 over 990 other docs + 95 other queries (1085):
    # queries floor(100*95/1085) = 8, docs floor(100*990/1085) = 91, one left over; remainders
    # 100*990 % 1085 = 265 < 100*95 % 1085 = 820, so it goes to the queries: 91 + 10 docs, 9 + 5 queries.
    assert (len(s.doc_rows), len(s.query_rows)) == (101, 14)
    other = pj.sample_for_map(docs, queries, must_docs=must_d, must_queries=must_q, cap=115, seed=1)
    assert not np.array_equal(other.doc_rows, s.doc_rows)  # another seed, another sample of the rest
    doc_rows, query_rows = s  # unpacks like the (doc_rows, query_rows) tuple
    assert doc_rows is s.doc_rows and query_rows is s.query_rows


def test_sample_caption_and_unplaced_ids():
    s = pj.sample_for_map(
        numbered_ids("d", 50),
        numbered_ids("q", 10),
        must_docs={"d1", "not-in-corpus"},
        must_queries={"q2"},
        cap=20,
        seed=3,
    )
    assert s.unplaced_docs == ("not-in-corpus",)
    assert s.sampled
    # 20 points, 2 must (d1, q2); rest 18 split 49:9 of 58 -> docs floor(18*49/58)=15, queries floor(18*9/58)=2,
    # 1 left: remainders 18*49 % 58 = 12, 18*9 % 58 = 46 -> queries: 16 docs, 4 queries.
    assert s.caption().startswith("Showing 16 of 50 documents and 4 of 10 queries")
    assert "not in the corpus" in s.caption()
    everything = pj.sample_for_map(numbered_ids("d", 5), numbered_ids("q", 2), cap=4000)
    assert not everything.sampled
    assert everything.caption() == "Showing 5 of 5 documents and 2 of 2 queries."


def test_sample_keeps_all_must_rows_above_the_cap():
    s = pj.sample_for_map(
        numbered_ids("d", 10),
        numbered_ids("q", 10),
        must_docs=set(numbered_ids("d", 6)),
        must_queries={"q0"},
        cap=4,
    )
    assert (len(s.doc_rows), len(s.query_rows)) == (6, 1) and s.over_cap


def test_must_keep_and_failed_queries_from_failures():
    f = [
        SimpleNamespace(query_id="q1", doc_id="d1", cls="near_miss"),
        SimpleNamespace(query_id="q1", doc_id="d2", cls="semantic_gap"),
        SimpleNamespace(query_id="q1", doc_id="d3", cls="semantic_gap"),
        SimpleNamespace(query_id="q2", doc_id="d4", cls="label_gap"),
        SimpleNamespace(query_id="q2", doc_id="d5", cls="near_miss"),
    ]
    lists = {"q1": ["d9", "d8", "d7", "d6"], "q2": ["d7"]}
    out = pj.failed_queries_from(f, lists, k=3)
    # q1: semantic_gap twice vs near_miss once; q2: a 1-1 tie goes to its first failure (label_gap)
    assert out == [
        FailedQuery("q1", "semantic_gap", ("d1", "d2", "d3"), ("d9", "d8", "d7")),
        FailedQuery("q2", "label_gap", ("d4", "d5"), ("d7",)),
    ]
    docs, queries = pj.must_keep(out)
    assert queries == {"q1", "q2"}
    assert docs == {"d1", "d2", "d3", "d4", "d5", "d9", "d8", "d7"}


def test_exact_cosine_knn_matches_brute_force_and_puts_self_first():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(57, 6)).astype(np.float32)
    x[5] = 0.0  # a zero vector: cosine 0 with everything, distance 1
    idx, dist = pj.exact_cosine_knn(x, 7, block=10)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    np.fill_diagonal(sims, np.inf)
    for i in range(len(x)):
        expected = sorted(range(len(x)), key=lambda j: (-sims[i, j], j))[:7]
        assert idx[i].tolist() == expected
    assert (idx[:, 0] == np.arange(len(x))).all() and (dist[:, 0] == 0).all()
    assert (np.diff(dist, axis=1) >= 0).all()
    assert np.allclose(dist[5, 1:], 1.0)
    idx2, _ = pj.exact_cosine_knn(x[:3], 7)  # k larger than n: every point
    assert idx2.shape == (3, 3)
