"""The Streamlit app with other rankers than the fake keyword encoder: the real bundled model, a live retriever
(its latency shown), and a slow model (the metrics come first, the pages that need the vectors fill in when they are
ready).

How these tests work (the fake keyword encoder, expected values from the demo files): tests/app_testing.py.
"""

from __future__ import annotations

import app_testing as app
import pytest

pytestmark = pytest.mark.usefixtures("keyword_encoder")


@pytest.mark.real_model
def test_overview_with_the_real_bundled_model(monkeypatch, model_cache):
    monkeypatch.delenv("DIAGNOSE_ENCODER", raising=False)
    # the run's shared model_cache (conftest): the demo's vectors of the other real-model tests
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    monkeypatch.setenv(
        "DIAGNOSE_FOREGROUND_SECONDS", "600"
    )  # wait for the real vectors, however busy the machine
    at = app.start_app(600)
    app.assert_clean(at)
    b = at.session_state["_bundle"]
    assert b.encoder_name.startswith("st-sha256:")
    table = app.frame_with(at, "run")
    assert sorted(table["run"]) == sorted(app.DEMO_RUNS + app.BASELINES)
    assert len(app.charts(at)) >= 3


LIVE_MODULE = '''
"""A live retriever for the tests: BM25 over the demo corpus, as a user's RAG code would expose one."""
from pathlib import Path

from diagnose import load
from diagnose.lexical import BM25Index

_ds = load(Path(__file__).parent / "demo")
_index = BM25Index.build(_ds.corpus.texts(), list(_ds.corpus.ids))


def make_retriever():
    return lambda text: _index.search([text], 20)[0]
'''


def test_a_live_retriever_shows_its_latency_on_overview_and_model_choice(tmp_path, monkeypatch):
    (tmp_path / "demo").symlink_to(app.DEMO)
    (tmp_path / "my_rag.py").write_text(LIVE_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DIAGNOSE_RETRIEVERS", "live=my_rag:make_retriever")
    at = app.demo_app()
    app.assert_clean(at)
    table = app.frame_with(at, "latency_p50_ms")
    table = table.assign(**{c: app.numbers(table[c]) for c in ("latency_p50_ms", "latency_p95_ms")})
    row = table.set_index("run").loc["live"]
    # the run's cell says its kind ("live (live retriever)"): drawn by the table's Styler, the data keeps the name
    assert at.session_state["_bundle"].kinds["live"] == "live retriever"
    assert row["latency_p95_ms"] >= row["latency_p50_ms"] > 0
    # the file runs have no latency: shown as "—", never None or nan (issue 23)
    assert (app.frame_with(at, "latency_p50_ms").set_index("run")["latency_p50_ms"].drop("live") == "—").all()
    at = app.open_demo("models", at)
    live = app.frame_with(at, "retriever")
    assert live["retriever"].tolist() == ["live"] and (live["latency_p50_ms"] > 0).all()


def test_metrics_come_before_the_vectors_and_pages_fill_in_when_they_are_ready(tmp_path, monkeypatch):
    """A slow model: the Overview shows the metrics of the runs and of BM25 at once, pages that need the vectors
    show the encoding's progress, switching pages does not restart it, and the pages fill in when it ends."""
    import time

    import streamlit as st

    st.cache_resource.clear()  # no analysis left ready by another test
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DIAGNOSE_ENCODER_DELAY", "0.02")  # ~6 s for the 296 demo texts
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "0")
    at = app.demo_app()
    app.assert_clean(at)
    b = at.session_state["_bundle"]
    assert not b.ready
    table = app.frame_with(at, "run")
    assert sorted(table["run"]) == sorted([*app.DEMO_RUNS, "bm25"])  # dense and hybrid need the vectors
    assert (
        table["failed queries"] == "computing…"
    ).all()  # not None while the vectors are computed (issue 23)
    assert at.get("progress"), "no progress bar while encoding"
    background = b.background
    at = app.open_demo("worst", at)
    assert at.title[0].value == "Worst queries" and not [
        d for d in at.dataframe if "class" in d.value.columns
    ]
    deadline = time.monotonic() + 120
    while not at.session_state["_bundle"].ready and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    at.run()
    app.assert_clean(at)
    assert at.session_state["_bundle"].background is background  # one encoding, never restarted
    assert len(app.frame_with(at, "class")) > 0
    st.cache_resource.clear()
