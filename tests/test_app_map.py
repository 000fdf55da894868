"""The Embedding map page in both views, with AppTest on the demo corpus and the fake keyword encoder (as
tests/test_app_pages.py): the sample drawn by Altair, and the whole collection drawn by deck.gl once the background
projection is done (on the demo's 296 points it takes seconds, so the test waits for the thread, never a clock)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("pydeck")

from app_testing import PAGES, assert_clean, start_app  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from diagnose.charts import deck  # noqa: E402

pytestmark = pytest.mark.usefixtures("keyword_encoder")

TIMEOUT = 180


def _open_map(view: str | None = None) -> AppTest:
    at = start_app(TIMEOUT)
    at.switch_page(PAGES.format("map")).run()
    if view is not None:
        at.radio(key="map_view").set_value(view).run()
    assert_clean(at)
    return at


def _decks(at: AppTest) -> list:
    return list(at.get("deck_gl_json_chart"))


def _wait_whole(at: AppTest) -> None:
    """Join the background projection thread, then rerun: the page draws the deck."""
    b = at.session_state["_bundle"]
    from diagnose.ui import state

    bg = state._projection_background(b.key, b.encoder_name, b.settings.bm25_engine)
    assert bg.thread is not None, "the whole-collection projection was not started"
    bg.thread.join(timeout=TIMEOUT)
    assert bg.error is None, bg.error
    assert bg.finished
    at.run()
    assert_clean(at)


def test_a_small_collection_opens_on_the_sample_view_with_the_altair_chart():
    at = _open_map()
    assert (
        at.radio(key="map_view").value == "Sample (Altair)"
    )  # 296 points: the sample is the whole collection
    assert list(at.get("arrow_vega_lite_chart")) + list(at.get("vega_lite_chart"))
    assert not _decks(at)


def test_whole_collection_view_shows_progress_then_the_deck_with_every_point():
    at = _open_map("Whole collection (deck.gl)")
    _wait_whole(at)
    decks = _decks(at)
    assert len(decks) == 1
    spec = json.loads(decks[0].proto.json)
    assert [layer["id"] for layer in spec["layers"]][-1] == deck.DECK_QUERY_LAYER
    assert spec["views"][0]["@@type"] == "OrthographicView"
    b = at.session_state["_bundle"]
    n_points = sum(len(layer["data"]) for layer in spec["layers"] if layer["@@type"] == "ScatterplotLayer")
    assert n_points == len(b.analysis.space.doc_ids) + len(b.analysis.space.query_ids)
    failed = {row["id"] for row in spec["layers"][-1]["data"]}
    assert failed == set(b.diagnosis().failed_queries)
    captions = " ".join(c.value for c in at.caption)
    assert "Trustworthiness" in captions and "Every document and query" in captions


def test_clicking_a_failed_query_on_the_deck_opens_it_in_the_inspector():
    at = _open_map("Whole collection (deck.gl)")
    _wait_whole(at)
    qid = at.session_state["_bundle"].diagnosis().failed_queries[0]
    at.session_state["map_deck"] = {
        "selection": {
            "indices": {deck.DECK_QUERY_LAYER: [0]},
            "objects": {deck.DECK_QUERY_LAYER: [{"id": qid}]},
        }
    }
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="inspector_query").value == qid
