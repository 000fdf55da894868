"""The embedding map (:func:`embedding_map`, documents and queries on a 2-D projection) and :func:`legend_strip` (a
legend for charts that draw none, such as the deck.gl map).

Streamlit and the map's selection (read in the Streamlit 1.40 and 1.67 sources; clicked and zoomed in headless
Chromium against Streamlit 1.67 + Altair 6.3):

- ``st.altair_chart(chart, on_select="rerun", selection_mode=[MAP_SELECTION], key="map")`` returns the clicked query
  as ``event.selection["query_select"] == [{"id": "<query id>"}]`` (a list; ``[]`` / ``{}`` when nothing is chosen).
- Pass ``selection_mode`` explicitly. Zoom/pan (``.interactive()``, i.e. an interval selection bound to the scales)
  is a selection parameter too: with the default ``selection_mode=None`` Streamlit listens to it as well, reruns the
  script on every zoom or pan and puts the zoom domain in the event.
- Layered charts work because Altair hoists a layer's params to the top-level ``params`` (with ``"views": [<layer
  name>]``); Streamlit 1.40 only looks for selection params at the top level (later versions also search layers).
  A hand-written Vega-Lite spec with params inside a layer is not found by 1.40.
- The point selection declares ``fields=["id"]``: without fields, Vega-Lite selects by an internal row id
  (``vgsid``) that is meaningless in Python, and in multi-view charts that is what Streamlit would return.
- Params and views are named explicitly (``query_select``, ``map_zoom``, ``map_queries``...): Streamlit rewrites
  Altair's auto-generated names to keep the spec stable across reruns, and 1.40's rewrite only knew Altair 5's
  numeric counters, not Altair 6's hashes. A spec that changes between reruns (other data) may reset the selection,
  so cache the chart's inputs and give the element a ``key``.
- No facet or concat in the map, so ``width="stretch"`` / ``width="container"`` works."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from diagnose.charts.common import ALTAIR_MAX_ROWS, altair_module, chart_title, require
from diagnose.charts.palette import (
    EDGE_DASH,
    NO_CLASS_LABEL,
    ROLE_COLORS,
    ROLE_OPACITY,
    ROLE_SHAPES,
    ROLE_SIZES,
    class_label,
    class_scale,
)
from diagnose.checks import one_of
from diagnose.data import DataError
from diagnose.defaults import MAP_COLORINGS
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


MAP_SELECTION = "query_select"
MAP_ZOOM = "map_zoom"


def embedding_map(
    points: pd.DataFrame,
    edges: pd.DataFrame | None = None,
    *,
    color_by: Literal["role", "failure_class"] = "role",
    selectable: bool = True,
    title: str | None = None,
    height: int = 560,
    lines_title: str | Sequence[str] = "Line to",
) -> alt.LayerChart:
    """Documents and queries on the 2-D map, lines from failed queries to their targets and top retrieved document.

    ``points``: :func:`diagnose.projection.map_frame` (columns ``x, y, kind, id, snippet, role, failure_class``),
    ``edges``: :func:`diagnose.projection.map_edges` (``x, y, x2, y2, query_id, edge``). At most 5,000 points
    (sample first with :func:`diagnose.projection.sample_for_map`; the limit is not lifted).

    Layers, bottom to top: documents (small translucent circles; targets and retrieved documents larger and
    opaque), lines (solid = target, dashed = top retrieved), queries (failed queries are triangles). Colour by
    ``role`` or by ``failure_class``. Tooltips give id, role, class and the text snippet. Scroll zooms, drag pans
    (scale-bound interval ``map_zoom``). With ``selectable`` the query layer carries a point selection named
    :data:`MAP_SELECTION` (``"query_select"``, fields ``["id"]``); in Streamlit::

        event = st.altair_chart(chart, on_select="rerun", selection_mode=[MAP_SELECTION], key="map")
        chosen = [p["id"] for p in event.selection.get(MAP_SELECTION) or []]

    ``selection_mode`` must be given, or zooming reruns the app (see the module docstring for why and for the
    other constraints). Shift-click adds to the selection, double-click clears it. ``lines_title``: the title of the
    lines' legend (a list: one line each), to say whose lines are drawn (:func:`diagnose.projection.map_lines`).
    """
    alt = altair_module()
    require(points, ["x", "y", "kind", "id", "snippet", "role", "failure_class"], "embedding_map")
    if len(points) > ALTAIR_MAX_ROWS:
        raise DataError(
            f"{len(points):,} points is more than Altair's {ALTAIR_MAX_ROWS:,}-row limit: sample them with "
            "diagnose.projection.sample_for_map (cap=4000) instead of lifting the limit.",
            param="points",
        )
    one_of(color_by, "color_by", MAP_COLORINGS)
    docs, queries = _map_layers_data(points)
    color = _map_color(alt, color_by, points["failure_class"].tolist())
    size = alt.Size("point_size:Q", scale=None)
    opacity = alt.Opacity("point_opacity:Q", scale=None)
    x = alt.X("x:Q", axis=None, scale=alt.Scale(zero=False))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(zero=False))
    layers = [_document_layer(alt, docs, x, y, color, size, opacity)]
    if edges is not None and len(edges):
        layers.append(_edge_layer(alt, edges, x, y, lines_title))
    layers.append(_query_layer(alt, queries, x, y, color, size, opacity, selectable=selectable))
    sub = "Axes have no unit: only neighbourhoods mean something. Scroll to zoom, drag to pan"
    if selectable:
        sub += ", click a query to inspect it"
    return alt.layer(*layers).properties(
        width="container",
        height=height,
        title=chart_title(alt, title or "Documents and queries in the embedding space (UMAP)", sub + "."),
    )


def _map_layers_data(points: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The documents (highlighted ones last, so drawn on top) and the queries (failed ones last), each row with its
    class label, point size and opacity."""
    data = points.copy()
    data["class_label"] = [
        class_label(c) if r == "failed query" else NO_CLASS_LABEL
        for c, r in zip(data["failure_class"], data["role"], strict=True)
    ]
    rank = {"document": 0, "retrieved": 1, "target": 2}
    docs = data[data["kind"] == "document"].copy()
    docs["_z"] = docs["role"].map(rank).fillna(0)
    docs = docs.sort_values("_z", kind="stable").drop(columns="_z")  # highlighted documents drawn on top
    queries = data[data["kind"] == "query"].copy()
    queries = queries.sort_values("role", key=lambda s: s.eq("failed query"), kind="stable")
    # Size and opacity are raw numbers per row with an identity scale (scale=None): no scale, no legend. (Encoding
    # them as scales over the role made Vega-Lite drop the colour legend; the shape reads its own copy of the role
    # for the same reason.)
    for frame in (docs, queries):
        frame["point_size"] = frame["role"].map(ROLE_SIZES).fillna(ROLE_SIZES["document"])
        frame["point_opacity"] = frame["role"].map(ROLE_OPACITY).fillna(ROLE_OPACITY["document"])
        frame["query_kind"] = frame["role"]
    return docs, queries


def _map_color(alt, color_by: str, failure_classes: Sequence[str]):
    """Colour by role (fixed role colours) or by failure class (class labels, "none" for other points)."""
    roles = list(ROLE_COLORS)
    if color_by == "role":
        return alt.Color(
            "role:N", title="Role", scale=alt.Scale(domain=roles, range=[ROLE_COLORS[r] for r in roles])
        )
    return alt.Color(
        "class_label:N",
        title="Failure class",
        scale=class_scale(alt, failure_classes, with_none=True),
        legend=alt.Legend(labelLimit=360),
    )


def _document_layer(alt, docs: pd.DataFrame, x, y, color, size, opacity):
    """Documents as circles; the layer carries the scale-bound zoom (:data:`MAP_ZOOM`)."""
    zoom = alt.selection_interval(bind="scales", name=MAP_ZOOM)
    return (
        alt.Chart(docs)
        .mark_circle()
        .encode(
            x=x,
            y=y,
            color=color,
            size=size,
            opacity=opacity,
            tooltip=[
                alt.Tooltip("id:N", title="Document"),
                alt.Tooltip("role:N", title="Role"),
                alt.Tooltip("snippet:N", title="Text"),
            ],
        )
        .add_params(zoom)
        .properties(name="map_documents")
    )


def _edge_layer(alt, edges: pd.DataFrame, x, y, title: str | Sequence[str] = "Line to"):
    """Lines from failed queries: solid to a target, dashed to the top retrieved document."""
    require(edges, ["x", "y", "x2", "y2", "query_id", "edge"], "embedding_map edges")
    kinds = list(EDGE_DASH)
    return (
        alt.Chart(edges)
        .mark_rule(color="#555555", opacity=0.6, strokeWidth=1.2)
        .encode(
            x=x,
            y=y,
            x2="x2:Q",
            y2="y2:Q",
            strokeDash=alt.StrokeDash(
                "edge:N",
                title=title if isinstance(title, str) else list(title),
                scale=alt.Scale(domain=kinds, range=[EDGE_DASH[e] for e in kinds]),
            ),
            tooltip=[alt.Tooltip("query_id:N", title="Query"), alt.Tooltip("edge:N", title="Line to")],
        )
        .properties(name="map_edges")
    )


def _query_layer(alt, queries: pd.DataFrame, x, y, color, size, opacity, *, selectable: bool):
    """Queries on top (failed queries are triangles); with ``selectable``, the click selection
    :data:`MAP_SELECTION` on the query id."""
    q_roles = list(ROLE_SHAPES)
    query_layer = (
        alt.Chart(queries)
        .mark_point(filled=True, stroke="#222222", strokeWidth=0.6)
        .encode(
            x=x,
            y=y,
            color=color,
            size=size,
            shape=alt.Shape(
                "query_kind:N",
                title="Query",
                scale=alt.Scale(domain=q_roles, range=[ROLE_SHAPES[r] for r in q_roles]),
                legend=alt.Legend(symbolFillColor="#555555", symbolOpacity=1),
            ),
            tooltip=[
                alt.Tooltip("id:N", title="Query"),
                alt.Tooltip("role:N", title="Role"),
                alt.Tooltip("class_label:N", title="Failure class"),
                alt.Tooltip("snippet:N", title="Text"),
            ],
        )
        .properties(name="map_queries")
    )
    if selectable:
        pick = alt.selection_point(name=MAP_SELECTION, fields=["id"], on="click", clear="dblclick")
        return query_layer.add_params(pick).encode(opacity=alt.condition(pick, opacity, alt.value(0.2)))
    return query_layer.encode(opacity=opacity)


def legend_strip(items: Sequence[tuple[str, str]], lines: Sequence[tuple[str, str]] = ()) -> alt.LayerChart:
    """A horizontal legend of coloured dots (``items``: ``(label, hex colour)``) and line marks (``lines``), for
    charts that draw none themselves (the deck.gl map). Labels are data, never markup."""
    alt = altair_module()
    rows = [{"i": i, "label": label, "color": c, "kind": "dot"} for i, (label, c) in enumerate(items)]
    rows += [
        {"i": len(rows) + i, "label": label, "color": c, "kind": "line"} for i, (label, c) in enumerate(lines)
    ]
    df = pd.DataFrame(rows)
    per_row = 4
    df["col"] = df["i"] % per_row
    df["row"] = df["i"] // per_row
    x = alt.X("col:O", axis=None, scale=alt.Scale(paddingInner=0, paddingOuter=0))
    y = alt.Y("row:O", axis=None)
    color = alt.Color("color:N", scale=None)
    dots = alt.Chart(df[df["kind"] == "dot"]).mark_circle(size=110, opacity=1).encode(x=x, y=y, color=color)
    dashes = (
        alt.Chart(df[df["kind"] == "line"])
        .mark_tick(thickness=3, size=18, orient="horizontal")
        .encode(x=x, y=y, color=color)
    )
    text = alt.Chart(df).mark_text(align="left", dx=12, fontSize=12).encode(x=x, y=y, text="label:N")
    return (
        (dots + dashes + text).properties(height=22 * (int(df["row"].max()) + 1)).configure_view(stroke=None)
    )
