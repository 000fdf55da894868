"""Embedding map: documents and queries in one UMAP projection; failed queries linked to their targets."""

from __future__ import annotations

import streamlit as st

from diagnose import charts
from diagnose.failures import CLASS_LABELS
from diagnose.ui import state
from diagnose.ui.text import escape_md

b = state.bundle()
state.wait_for_vectors(b, "Embedding map", "The Embedding map page")
run_name = b.selected_run
diag = b.diagnosis(run_name)

st.title("Embedding map")
c1, c2 = st.columns([2, 1])
colour = c1.radio(
    "Colour by", ["role", "failure class"], horizontal=True, key="map_colour", help="role: failed query, query, "
    "target (a missed relevant document), retrieved (in a failed query's top k), document"
)  # fmt: skip
cap = c2.select_slider("Points at most", [500, 1000, 2000, 4000], value=4000, key="map_cap")

emap = state.embedding_map(b, run_name, int(cap))
st.caption(escape_md(emap.sample.caption()))
st.caption(
    f"{escape_md(emap.projection.describe())} Projection: {emap.projection.method.upper()} of "
    f"{escape_md(b.encoder_label)} vectors (cosine), {'loaded from the cache' if emap.projection.cached else f'computed in {emap.projection.seconds:.1f} s'}."
)
if emap.sample.over_cap:
    st.warning(
        f"The failed queries of {escape_md(run_name)} with their targets and top {b.k} already exceed {cap:,} points; "
        "all of them are drawn. Lower k or pick a run with fewer failures for a lighter map."
    )

chart = charts.embedding_map(
    emap.points, emap.edges, color_by="role" if colour == "role" else "failure_class"
)
event = st.altair_chart(
    chart,
    width="stretch",
    height=660,
    on_select="rerun",
    key="map_chart",
    selection_mode=[charts.MAP_SELECTION],
)
st.caption(
    f"Lines join each failed query of {escape_md(run_name)} to its missed targets and to its top retrieved document. "
    "Hover a point for its id and text; click a query to open it in the Query inspector."
)

# The event is a dict: {"selection": {"query_select": [{"id": ...}, ...]}} (empty lists/dicts when nothing is chosen).
selection = (event or {}).get("selection") or {}
selected = [p for p in (selection.get(charts.MAP_SELECTION) or []) if isinstance(p, dict)]
failed = set(diag.failed_queries)
for p in selected:
    qid = str(p.get("id", ""))
    if qid in failed:
        state.open_query(qid)
    elif qid:
        st.info(f"Query {escape_md(qid)} did not fail at k={b.k}: nothing to inspect.")

counts = emap.points.query("role == 'failed query'")["failure_class"].value_counts()
if len(counts):
    st.caption(
        "Failed queries on the map by class: "
        + ", ".join(f"{CLASS_LABELS.get(c, c)} {n}" for c, n in counts.items())
        + "."
    )
