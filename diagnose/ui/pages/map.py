"""Embedding map: documents and queries in one UMAP projection; failed queries linked to their targets.

Two views (the "Map" toggle): the whole collection drawn by deck.gl (every document, WebGL; projected once per data
and model in a background thread, then cached on disk), and the sample drawn by Altair (at most 4,000 points, ready
in seconds). While the whole collection is being projected the page shows the sample and the projection's progress,
and switches by itself when it is ready.

Lines join a failed query to its missed targets and its top retrieved document: those of the selected query and of the
worst few (:data:`diagnose.defaults.MAP_WORST_LINES`), or of every failed query with the "every failed query" toggle
(on NFCorpus, ~1,200 lines: a hairball).
"""

from __future__ import annotations

import streamlit as st

from diagnose import charts, defaults
from diagnose.charts import deck
from diagnose.failures import CLASS_LABELS, worst_queries
from diagnose.projection import MapLines, map_lines
from diagnose.ui import state
from diagnose.ui.text import escape_md

WHOLE = "Whole collection (deck.gl)"
SAMPLE = "Sample (Altair)"
CAPS = [500, 1000, 2000, 4000]
MAX_CAP = CAPS[-1]

b = state.bundle()
state.wait_for_vectors(b, "Embedding map", "The Embedding map page")
run_name = b.selected_run
diag = b.diagnosis(run_name)
failed_ids = set(diag.failed_queries)

st.title("Embedding map")
c0, c1, c2 = st.columns([2, 2, 1])
space = b.analysis.space
n_points = len(space.doc_ids) + len(space.query_ids)
# Up to the sample's largest cap the sample *is* the whole collection, and Altair draws it with shapes and a legend.
view = c0.radio(
    "Map",
    [WHOLE, SAMPLE],
    index=0 if n_points > MAX_CAP else 1,
    horizontal=True,
    key="map_view",
    help="Whole collection: every document and query, drawn with WebGL (deck.gl), projected once in the background. "
    "Sample: at most 4,000 points (every failed query, its targets and top k, the rest at random), drawn with Altair.",
)
colour = c1.radio(
    "Colour by",
    ["role", "failure class"],
    horizontal=True,
    key="map_colour",
    help="role: failed query, query, "
    "target (a missed relevant document), retrieved (in a failed query's top k), document",
)
color_by = "role" if colour == "role" else "failure_class"
all_lines = st.toggle(
    "Lines for every failed query",
    key="map_all_lines",
    help=f"Off: lines only for the query selected in the inspector and the {defaults.MAP_WORST_LINES} worst failed "
    "queries (worst: as on Worst queries). On: every failed query's lines (a hairball on a large collection).",
)
worst = worst_queries(diag.failures)


def lines_of(edges) -> MapLines:
    n = None if all_lines else defaults.MAP_WORST_LINES
    return map_lines(edges, worst, st.session_state.get("query_id"), n)


def open_selected(ids: list[str]) -> None:
    for qid in ids:
        if qid in failed_ids:
            state.open_query(qid)
        elif qid:
            st.info(f"Query {escape_md(qid)} did not fail at k={b.k}: nothing to inspect.")


def class_counts(points) -> None:
    counts = points.query("role == 'failed query'")["failure_class"].value_counts()
    if len(counts):
        st.caption(
            "Failed queries on the map by class: "
            + ", ".join(f"{CLASS_LABELS.get(c, c)} {n}" for c, n in counts.items())
            + "."
        )


def sample_map() -> None:
    cap = c2.select_slider("Points at most", CAPS, value=MAX_CAP, key="map_cap")
    emap = state.embedding_map(b, run_name, int(cap))
    st.caption(escape_md(emap.sample.caption()))
    st.caption(
        f"{escape_md(emap.projection.describe())} Projection: {emap.projection.method.upper()} of "
        f"{escape_md(b.encoder_label)} vectors (cosine), {'loaded from the cache' if emap.projection.cached else f'computed in {emap.projection.seconds:.1f} s'}."
    )
    if emap.sample.over_cap:
        st.warning(
            f"The failed queries of {escape_md(run_name)} with their targets and top {b.k} already exceed {cap:,} "
            "points; all of them are drawn. Lower k or pick a run with fewer failures for a lighter map."
        )
    lines = lines_of(emap.edges)
    chart = charts.embedding_map(
        emap.points, lines.edges, color_by=color_by, lines_title=lines.legend_title()
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
        f"{escape_md(lines.sentence())} A line joins a failed query of {escape_md(run_name)} to a missed target "
        "(solid) or to its top retrieved document (dashed). Hover a point for its id and text; click a query to "
        "open it in the Query inspector."
    )
    # The event is a dict: {"selection": {"query_select": [{"id": ...}, ...]}} (empty lists/dicts when nothing is chosen).
    selection = (event or {}).get("selection") or {}
    selected = [p for p in (selection.get(charts.MAP_SELECTION) or []) if isinstance(p, dict)]
    open_selected([str(p.get("id", "")) for p in selected])
    class_counts(emap.points)


def legend(points, drawn: MapLines) -> None:
    """deck.gl draws no legend: an Altair strip in the same colours (labels are data, never markup), and which
    lines are drawn."""
    classes = points.loc[points["role"] == "failed query", "failure_class"].tolist()
    items = deck.legend_items(color_by, classes)
    lines = [
        ("line to a missed target", deck.EDGE_COLORS["target"]),
        ("line to the top retrieved document", deck.EDGE_COLORS["top retrieved"]),
    ]
    st.altair_chart(charts.legend_strip(items, lines), width="stretch")
    st.caption(escape_md(drawn.sentence()))


def whole_map() -> None:
    emap = b.analysis.whole_embedding_map(run_name, k=b.k, failure=b.mode)
    proj = emap.projection
    n_d, n_q = emap.sample.n_docs, emap.sample.n_queries
    st.caption(
        f"Every document and query: {n_d:,} documents and {n_q:,} queries ({len(failed_ids):,} failed at k={b.k}), "
        f"drawn with WebGL. Scroll to zoom, drag to pan, hover a point for its id and text; click a failed query "
        "(large, outlined) to open it in the Query inspector."
    )
    how = "loaded from the cache" if proj.cached else f"computed in {proj.seconds:.0f} s"
    st.caption(
        f"{escape_md(proj.describe())} Projection: {proj.method.upper()} of {escape_md(b.encoder_label)} vectors "
        f"({escape_md(proj.recipe) or 'cosine'}), {how}."
    )
    drawn = lines_of(emap.edges)
    legend(emap.points, drawn)
    chart = _deck(emap, color_by, drawn)
    event = st.pydeck_chart(
        chart, height=660, on_select="rerun", selection_mode="single-object", key="map_deck"
    )
    # PydeckState: {"selection": {"indices": {layer id: [i]}, "objects": {layer id: [row dict]}}}
    objects = ((event or {}).get("selection") or {}).get("objects") or {}
    chosen = [o for layer in (deck.DECK_QUERY_LAYER, "queries") for o in objects.get(layer) or []]
    open_selected([deck.from_deck_text(str(o.get("id", ""))) for o in chosen if isinstance(o, dict)])
    if emap.sample.unplaced_docs:
        st.caption(
            f"{len(emap.sample.unplaced_docs):,} target/retrieved ids are not in the corpus and cannot be drawn."
        )
    class_counts(emap.points)


def _deck(emap, color_by: str, lines: MapLines):
    """The Deck of this map, built once per map, colouring and lines (100k rows take seconds to lay out)."""
    memo = st.session_state.setdefault("_map_decks", {})
    key = (id(emap), color_by, lines.query_ids)
    if key not in memo:
        memo.clear()  # one deck at a time: they are large
        memo[key] = deck.embedding_deck(emap.points, lines.edges, color_by=color_by)
    return memo[key]


if view == SAMPLE:
    sample_map()
else:
    bg = state.whole_map_background(b, run_name)
    if bg.finished:
        whole_map()
    else:

        @st.fragment(run_every=1.0)
        def progress() -> None:
            if bg.error is not None:
                state.show_error(bg.error, "Could not project the whole collection: ")
                return
            if bg.finished:
                st.rerun()
            st.progress(bg.fraction(), text=escape_md("Whole collection: " + bg.status()))
            st.caption(
                "The whole collection is being projected in the background (once per data and model; cached on "
                "disk). Meanwhile, the sample below; the whole map replaces it by itself when it is ready."
            )

        progress()
        sample_map()
