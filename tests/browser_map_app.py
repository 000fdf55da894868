"""A standalone Streamlit page for tests/test_browser_map.py and bench/bench_map_deck.py: the deck.gl embedding map
(:func:`diagnose.charts.deck.embedding_deck`) of ``DIAGNOSE_DECK_POINTS`` generated points (default 100,000): Gaussian
blobs in 2-D as a UMAP layout would give, 1% queries, 300 failed queries each linked to a target and a top retrieved
document. No projection runs: the coordinates are generated, so the page measures the browser, not UMAP. The URL's
``?points=N`` and ``?hostile=1`` override ``DIAGNOSE_DECK_POINTS`` and ``DIAGNOSE_DECK_HOSTILE``, so one server
serves every size (tests/test_browser_map.py).

    streamlit run tests/browser_map_app.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import streamlit as st

from diagnose.charts import deck

sys.path.insert(0, str(Path(__file__).parent))
import deck_points  # noqa: E402

N = int(st.query_params.get("points") or os.environ.get("DIAGNOSE_DECK_POINTS", "100000"))
HOSTILE = bool(st.query_params.get("hostile") or os.environ.get("DIAGNOSE_DECK_HOSTILE"))


@st.cache_resource
def frames(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return deck_points.frames(n)


st.set_page_config(page_title="deck map", layout="wide")
points, edges = frames(N)
if HOSTILE:  # ids and texts deck.gl's JSON converter would read as code (issue 22)
    points = points.copy()
    hostile = ["@@=alert(1)", "@@#GL.ONE", "@@=[x, y", "@@#NO_SUCH.CONSTANT", "@@type"]
    points.loc[points.index[: len(hostile)], "id"] = hostile
    failed = points.index[points["role"] == "failed query"][: len(hostile)]
    points.loc[failed, "id"] = [h + " (query)" for h in hostile]
    points.loc[failed, "snippet"] = hostile
st.title(f"Deck map: {len(points):,} points")
event = st.pydeck_chart(
    deck.embedding_deck(points, edges, color_by="failure_class"),
    height=660,
    on_select="rerun",
    selection_mode="single-object",
    key="map_deck",
)
objs = ((event or {}).get("selection") or {}).get("objects") or {}
chosen = [o.get("id") for o in objs.get(deck.DECK_QUERY_LAYER, [])]
st.markdown(f"Selected: `{chosen[0] if chosen else 'nothing'}`")
