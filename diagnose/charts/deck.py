"""The whole-collection embedding map as a deck.gl chart: a pure builder, map tables in, ``pydeck.Deck`` out.

The Altair map (:func:`diagnose.charts.embedding_map`) renders in the browser with Vega, one SVG/canvas mark per
point, and stays below 5,000 rows. deck.gl draws with WebGL, a buffer per layer, so every document of a 100k+
collection fits (measured in headless Chromium on software WebGL in ``bench/RESULTS.md``, "map: the whole
collection"). The UI passes the result to ``st.pydeck_chart``; nothing here imports Streamlit.

What the chart holds (layer ids, bottom to top; ids are stable so Streamlit keeps the selection across reruns):

- ``documents``, ``retrieved``, ``targets``: ScatterplotLayers of the documents by role (radii in pixels, so a
  point stays visible at every zoom; plain documents small and translucent).
- ``links``: a LineLayer from each failed query to its missed targets (green) and its top retrieved document
  (orange), the same edges as :func:`diagnose.projection.map_edges`.
- ``queries``: the queries that did not fail; ``failed_queries``: the failed ones, large and outlined, coloured by
  role or by failure class. :data:`DECK_QUERY_LAYER` is the layer a click selects a failed query on::

      event = st.pydeck_chart(deck, on_select="rerun", selection_mode="single-object", key="map_deck")
      chosen = [o["id"] for o in event.selection.objects.get(DECK_QUERY_LAYER, [])]

Choices:

- **No basemap and no network.** The view is an ``OrthographicView`` (UMAP coordinates are abstract, not
  longitude/latitude), ``map_provider=None``, ``map_style=None``. Streamlit 1.67's frontend (its bundled deck.gl)
  only adds a Carto basemap (fetched from ``basemaps.cartocdn.com``) when every view is a ``MapView``; with an
  orthographic view it fetches nothing. The browser test asserts that no request leaves 127.0.0.1.
- **Tooltips are text, never HTML.** deck.gl puts a tooltip's ``html`` into ``innerHTML`` and its ``text`` into
  ``innerText``; ids and snippets come from user files, so only the ``text`` form is used (a ``<script>`` in a
  document shows as the characters it is).
- **User strings are escaped against the JSON converter.** deck.gl's converter (``@deck.gl/json``, which pydeck
  and Streamlit use) reads every string of the spec, data rows included: one starting with ``@@=`` becomes a
  JavaScript expression, one with ``@@#`` a constant lookup, so a document id or text like that broke the whole
  map. :func:`deck_text` puts an invisible WORD JOINER (U+2060) in front of such strings; :func:`from_deck_text`
  takes it off again (the map page does, on the id of a clicked query).
- **Payload.** deck.gl's JSON format carries data as rows: the 100k-point spec is a few tens of MB
  (coordinates rounded to :data:`COORD_DECIMALS` decimals, snippets cut to ``snippet_chars``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from diagnose.charts import CLASS_COLORS, OTHER_COLOR, ROLE_COLORS, class_label
from diagnose.checks import one_of
from diagnose.defaults import MAP_COLORINGS
from diagnose.projection.frames import EDGE_COLUMNS, MAP_COLUMNS, shorten
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import pydeck

DECK_QUERY_LAYER = "failed_queries"
LAYER_IDS = ("documents", "retrieved", "targets", "links", "queries", "failed_queries")
COORD_DECIMALS = 4
DECK_SNIPPET_CHARS = 100
#: Radius in pixels per role (constant on screen whatever the zoom).
ROLE_RADIUS: dict[str, float] = {
    "document": 1.6,
    "retrieved": 3.0,
    "target": 4.0,
    "query": 3.0,
    "failed query": 7.0,
}
ROLE_ALPHA: dict[str, int] = {
    "document": 110,
    "retrieved": 220,
    "target": 240,
    "query": 200,
    "failed query": 255,
}
EDGE_COLORS: dict[str, str] = {"target": ROLE_COLORS["target"], "top retrieved": ROLE_COLORS["retrieved"]}
TOOLTIP_TEXT = "{label}: {id}\n{snippet}"


#: Put in front of a user string that deck.gl's JSON converter would read as code (see the module docstring).
DECK_ESCAPE = "\u2060"


def deck_text(text: str) -> str:
    """``text`` as deck.gl shows it, never evaluates it: a string starting with ``@@`` (``@@=`` expression, ``@@#``
    constant) or with :data:`DECK_ESCAPE` itself gets one :data:`DECK_ESCAPE` in front, so the escaping is
    reversible for every string (:func:`from_deck_text`)."""
    return DECK_ESCAPE + text if text.startswith(("@@", DECK_ESCAPE)) else text


def from_deck_text(text: str) -> str:
    """The user string :func:`deck_text` escaped (the id of a point clicked on the map)."""
    return text[1:] if text.startswith(DECK_ESCAPE) else text


def rgba(hex_color: str, alpha: int = 255) -> list[int]:
    """``"#D55E00"`` -> ``[213, 94, 0, alpha]``."""
    h = hex_color.lstrip("#")
    return [int(h[i : i + 2], 16) for i in (0, 2, 4)] + [int(alpha)]


def _rows(frame: pd.DataFrame, label: Sequence[str] | str, snippet_chars: int) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "x": frame["x"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "y": frame["y"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "id": [deck_text(i) for i in frame["id"].astype(str)],
            "label": label if isinstance(label, str) else list(label),
            "snippet": [deck_text(shorten(str(s), snippet_chars)) for s in frame["snippet"]],
        }
    )
    return out.reset_index(drop=True)


def initial_view(points: pd.DataFrame, *, width: int = 1000, height: int = 660) -> dict[str, object]:
    """Centre and zoom that fit the middle 99% of the points into ``width x height`` pixels (orthographic zoom z
    draws one coordinate unit as 2**z pixels; outliers beyond the 0.5% / 99.5% quantiles may fall outside)."""
    if len(points) == 0:
        return {"target": [0.0, 0.0, 0.0], "zoom": 0.0, "minZoom": -4.0, "maxZoom": 12.0}
    lo = points[["x", "y"]].quantile(0.005).to_numpy(dtype=float)
    hi = points[["x", "y"]].quantile(0.995).to_numpy(dtype=float)
    span = np.maximum(hi - lo, 1e-6)
    scale = 0.9 * min(width / span[0], height / span[1])
    zoom = math.log2(scale)
    centre = (lo + hi) / 2
    return {
        "target": [round(float(centre[0]), 4), round(float(centre[1]), 4), 0.0],
        "zoom": round(zoom, 3),
        "minZoom": round(zoom - 3, 3),
        "maxZoom": round(zoom + 9, 3),
    }


def legend_items(
    color_by: Literal["role", "failure_class"], classes: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """``(label, hex colour)`` pairs for the legend the page draws beside the chart (deck.gl has none)."""
    if color_by == "role":
        return [(role, ROLE_COLORS[role]) for role in ROLE_COLORS]
    seen = list(dict.fromkeys(c for c in classes if c))
    items = [(class_label(c), CLASS_COLORS.get(c, OTHER_COLOR)) for c in seen]
    return items + [("documents and other queries: by role", ROLE_COLORS["document"])]


def embedding_deck(
    points: pd.DataFrame,
    edges: pd.DataFrame | None = None,
    *,
    color_by: Literal["role", "failure_class"] = "role",
    height: int = 660,
    width_hint: int = 1000,
    snippet_chars: int = DECK_SNIPPET_CHARS,
) -> pydeck.Deck:
    """Every point of ``points`` on a deck.gl map, lines for ``edges``, a selectable failed-query layer.

    ``points``: :func:`diagnose.projection.map_frame` (``x, y, kind, id, snippet, role, failure_class``), any
    number of rows. ``edges``: :func:`diagnose.projection.map_edges` (``x, y, x2, y2, query_id, edge``).
    ``color_by``: ``"role"`` (:data:`diagnose.charts.ROLE_COLORS`) or ``"failure_class"`` (failed queries take
    their class's colour from :data:`diagnose.charts.CLASS_COLORS`, the rest keep their role's colour).
    ``width_hint``: the expected chart width in pixels, used only for the initial zoom. Layers and ids: see the
    module docstring. Raises ``ValueError`` for missing columns or an unknown ``color_by``.
    """
    import pydeck as pdk

    missing = [c for c in MAP_COLUMNS if c not in points.columns]
    if missing:
        raise ValueError(f"embedding_deck: points lack columns {missing}")
    one_of(color_by, "color_by", MAP_COLORINGS)

    layers = [
        _role_layer(pdk, points, "documents", "document", "Document", snippet_chars),
        _role_layer(
            pdk, points, "retrieved", "retrieved", "Retrieved (top k of a failed query)", snippet_chars
        ),
        _role_layer(pdk, points, "targets", "target", "Missed target", snippet_chars),
    ]
    if edges is not None and len(edges):
        layers.append(_links_layer(pdk, edges))
    layers.append(_role_layer(pdk, points, "queries", "query", "Query", snippet_chars))
    layers.append(_failed_query_layer(pdk, points, color_by, snippet_chars))
    view = pdk.View(type="OrthographicView", controller=True, flip_y=False)
    return pdk.Deck(
        layers=layers,
        views=[view],
        initial_view_state=pdk.ViewState(**initial_view(points, width=width_hint, height=height)),
        map_provider=None,
        map_style=None,
        tooltip={
            "text": TOOLTIP_TEXT,
            "style": {"maxWidth": "380px", "whiteSpace": "pre-wrap", "fontSize": "12px"},
        },
        height=height,
    )


def _role_layer(
    pdk: Any, points: pd.DataFrame, layer_id: str, role: str, label: str, snippet_chars: int
) -> pydeck.Layer:
    """The points of one ``role``, in that role's colour, alpha and radius (pixels), pickable."""
    return pdk.Layer(
        "ScatterplotLayer",
        id=layer_id,
        data=_rows(points[points["role"] == role], label, snippet_chars),
        get_position=["x", "y"],
        get_fill_color=rgba(ROLE_COLORS[role], ROLE_ALPHA[role]),
        get_radius=ROLE_RADIUS[role],
        radius_units='"pixels"',
        pickable=True,
        auto_highlight=True,
        highlight_color=[0, 0, 0, 90],
    )


def _links_layer(pdk: Any, edges: pd.DataFrame) -> pydeck.Layer:
    """The ``links`` layer: a line from each failed query to a missed target (green) or its top retrieved
    document (orange)."""
    miss = [c for c in EDGE_COLUMNS if c not in edges.columns]
    if miss:
        raise ValueError(f"embedding_deck: edges lack columns {miss}")
    lines = pd.DataFrame(
        {
            "x": edges["x"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "y": edges["y"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "x2": edges["x2"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "y2": edges["y2"].to_numpy(dtype=np.float64).round(COORD_DECIMALS),
            "id": [deck_text(i) for i in edges["query_id"].astype(str)],
            "label": ["Line from failed query to its " + str(e) for e in edges["edge"]],
            "snippet": ["" for _ in range(len(edges))],
            "color": [rgba(EDGE_COLORS.get(str(e), OTHER_COLOR), 200) for e in edges["edge"]],
        }
    )
    return pdk.Layer(
        "LineLayer",
        id="links",
        data=lines,
        get_source_position=["x", "y"],
        get_target_position=["x2", "y2"],
        get_color="color",
        get_width=1.5,
        width_units='"pixels"',
        pickable=True,
    )


def _failed_query_layer(pdk: Any, points: pd.DataFrame, color_by: str, snippet_chars: int) -> pydeck.Layer:
    """:data:`DECK_QUERY_LAYER`: the failed queries, large and outlined, coloured by role or by failure class."""
    failed = points[points["role"] == "failed query"]
    labels = [
        f"Failed query ({class_label(c) if c else 'no class'}), click to inspect"
        for c in failed["failure_class"]
    ]
    fq = _rows(failed, labels, snippet_chars)
    if color_by == "failure_class":
        fq["color"] = [rgba(CLASS_COLORS.get(str(c), OTHER_COLOR)) for c in failed["failure_class"]]
    else:
        fq["color"] = [rgba(ROLE_COLORS["failed query"])] * len(fq)
    return pdk.Layer(
        "ScatterplotLayer",
        id=DECK_QUERY_LAYER,
        data=fq,
        get_position=["x", "y"],
        get_fill_color="color",
        get_radius=ROLE_RADIUS["failed query"],
        radius_units='"pixels"',
        stroked=True,
        get_line_color=[34, 34, 34, 255],
        get_line_width=1,
        line_width_units='"pixels"',  # the default unit is a coordinate unit: 2**zoom pixels wide
        line_width_min_pixels=1,
        pickable=True,
        auto_highlight=True,
        highlight_color=[0, 0, 0, 90],
    )


__all__ = [
    "DECK_ESCAPE",
    "DECK_QUERY_LAYER",
    "LAYER_IDS",
    "deck_text",
    "embedding_deck",
    "from_deck_text",
    "initial_view",
    "legend_items",
    "rgba",
]
