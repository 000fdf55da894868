"""Embedding map: the chart tables (snippets, the map frame and its edges) and build_map chaining the steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from projection_testing import numbered_ids

from diagnose import projection as pj
from diagnose.data import DataError
from diagnose.projection import FailedQuery, MapSample
from diagnose.projection.frames import shorten


def test_snippet_is_plain_and_short():
    # tags dropped, entities decoded, whitespace (the decoded no-break space too) collapsed
    assert pj.snippet("<p>Vitamin&nbsp;D   and\n bones</p>") == "Vitamin D and bones"
    long = "word " * 60
    s = pj.snippet(long)
    assert len(s) <= 140 and s.endswith("…") and not s[:-1].endswith(" ")
    assert pj.snippet(None) == "" and pj.snippet("") == ""


def _snippet_whole(text: str, limit: int = pj.SNIPPET_CHARS) -> str:
    """The snippet computed by cleaning the whole text (what pj.snippet must equal; it only cleans a prefix)."""
    import html
    import re

    t = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]{0,200}>", " ", text))).strip()
    return shorten(t, limit)


def test_shorten_cuts_at_a_word_boundary_in_the_last_40_percent():
    assert shorten("short", 10) == "short"
    # limit 10: the cut keeps 9 characters "abcdefg h"; its last space (index 7) is >= int(10 * 0.6) = 6: cut there
    assert shorten("abcdefg hij", 10) == "abcdefg…"
    # "aaaa bbbb": the last space (index 4) is < 6, so the word is cut instead; 9 characters + "…" = 10
    assert shorten("aaaa bbbb cccc", 10) == "aaaa bbbb…"
    # trailing punctuation before the ellipsis is dropped: "abcdefg," -> "abcdefg"
    assert shorten("abcdefg, hij", 10) == "abcdefg…"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["word", "<b>", "</b>", "<p class='x'>", "&amp;", "&nbsp;", " ", "\n", "long" * 30, "<", ">"]
        ),
        max_size=400,
    )
)
def test_snippet_of_a_prefix_equals_the_snippet_of_the_whole_text(parts):
    text = "".join(parts)
    assert pj.snippet(text) == _snippet_whole(text)


def test_snippet_of_long_markup_matches_the_whole_text():
    prefix = 4 * pj.SNIPPET_CHARS + 256  # the part of a long text snippet() cleans first
    words = "plain words " * 10  # 120 characters of text
    # 1. mostly markup: the cleaned prefix is empty, the words come later
    text = "<i>" * (prefix // 3 + 10) + words * 3
    assert pj.snippet(text) == _snippet_whole(text) != ""
    # 2. a tag cut in half by the prefix, right after short text: its "<p ..." must not leak into the snippet
    tag = "<p class='" + "x" * 60 + "'>"
    filler = "<b>" * ((prefix - len(words) - 20) // 3)
    text = filler + words + tag + "more text " * 20
    assert len(filler + words) < prefix < len(filler + words + tag)
    assert pj.snippet(text) == _snippet_whole(text)
    assert "<" not in pj.snippet(text)
    # 3. an entity cut in half by the prefix, glued to 138 characters of text: "&nb" must not leak either
    filler = "<b>" * ((prefix - 141) // 3)
    text = filler + "x" * 138 + "&nbsp;tail " + "more " * 50
    assert len(filler) + 138 + 3 == prefix
    assert pj.snippet(text) == _snippet_whole(text)
    assert "&" not in pj.snippet(text)


def _tiny_map():
    doc_ids = ["d1", "d2", "d3", "d4"]
    doc_texts = ["one", "two <b>bold</b>", "three", "four"]
    query_ids = ["q1", "q2", "q3"]
    query_texts = ["first?", "second?", "third?"]
    failed = [FailedQuery("q1", "near_miss", ("d2", "dX"), ("d3", "d1"))]
    s = pj.sample_for_map(doc_ids, query_ids, must_docs={"d1", "d2", "d3", "dX"}, must_queries={"q1"}, cap=6)
    # cap 6: must d1, d2, d3, q1 (dX is not in the corpus) + 2 of the other 3 (d4, q2, q3)
    coords = np.arange(2 * s.n_points, dtype=np.float32).reshape(-1, 2)
    points = pj.map_frame(
        coords,
        s,
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        query_ids=query_ids,
        query_texts=query_texts,
        failed=failed,
    )
    return s, points, failed


def test_map_frame_roles_and_columns():
    s, points, _ = _tiny_map()
    assert list(points.columns) == ["x", "y", "kind", "id", "snippet", "role", "failure_class"]
    assert len(points) == 6 and s.unplaced_docs == ("dX",)
    by_id = points.set_index("id")
    assert by_id.loc["d2", "role"] == "target" and by_id.loc["d2", "snippet"] == "two bold"
    assert by_id.loc["d1", "role"] == "retrieved" and by_id.loc["d3", "role"] == "retrieved"
    assert by_id.loc["q1", "role"] == "failed query" and by_id.loc["q1", "failure_class"] == "near_miss"
    assert (points.loc[points["id"] != "q1", "failure_class"] == "").all()
    assert (points["kind"].iloc[: len(s.doc_rows)] == "document").all()
    # coordinates follow the stacked order: documents (sample order) then queries
    assert points["x"].tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    with pytest.raises(ValueError, match="expected"):
        pj.map_frame(np.zeros((2, 2)), s, doc_ids=[], doc_texts=[], query_ids=[], query_texts=[])


def test_map_edges_link_failed_queries_to_targets_and_top_retrieved():
    _, points, failed = _tiny_map()
    edges = pj.map_edges(points, failed)
    xy = points.set_index("id")[["x", "y"]]
    # d2 is the only placed target (dX is not in the corpus); d3 is the top retrieved document
    assert edges[["query_id", "edge"]].values.tolist() == [["q1", "target"], ["q1", "top retrieved"]]
    assert edges.iloc[0][["x", "y", "x2", "y2"]].tolist() == [*xy.loc["q1"], *xy.loc["d2"]]
    assert edges.iloc[1][["x2", "y2"]].tolist() == list(xy.loc["d3"])
    assert pj.map_edges(points, []).columns.tolist() == ["x", "y", "x2", "y2", "query_id", "edge"]


def test_build_map_chains_the_steps(tmp_path, fake_fit):
    rng = np.random.default_rng(4)
    doc_vecs, query_vecs = rng.normal(size=(60, 8)), rng.normal(size=(12, 8))
    doc_ids, query_ids = numbered_ids("d", 60), numbered_ids("q", 12)
    failed = [FailedQuery("q3", "semantic_gap", ("d7",), ("d1", "d2"))]
    m = pj.build_map(
        doc_ids=doc_ids,
        doc_texts=[f"text {i}" for i in range(60)],
        doc_vecs=doc_vecs,
        query_ids=query_ids,
        query_texts=[f"query {i}" for i in range(12)],
        query_vecs=query_vecs,
        failed=failed,
        cap=30,
        cache_dir=tmp_path,
    )
    assert fake_fit == [30] and len(m.points) == 30 == m.sample.n_points
    assert {"d7", "d1", "d2", "q3"} <= set(m.points["id"])
    assert len(m.edges) == 2
    assert isinstance(m.sample, MapSample) and isinstance(m.points, pd.DataFrame)
    with pytest.raises(DataError, match="same model"):
        pj.stack_vectors(m.sample, doc_vecs, query_vecs[:, :4])
