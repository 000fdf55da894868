"""Pure Altair chart builders: a tidy DataFrame in, an ``alt.Chart`` (or layer/facet of charts) out.

No Streamlit here; the UI passes the result to ``st.altair_chart``. Each builder documents the columns it reads.
Colours are colour-blind-safe (Okabe-Ito) and fixed per meaning, so a failure class or a quality band has the same
colour on every page. Altair's 5,000-row limit is kept: builders aggregate in pandas (histograms) or expect sampled
data (the embedding map, see :mod:`diagnose.projection`).

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
- No facet or concat in the map, so ``width="stretch"`` / ``width="container"`` works.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

#: Stable failure class ids (same order as ``diagnose.failures.CLASSES``) -> colour (Okabe-Ito palette).
CLASS_COLORS: dict[str, str] = {
    "missing_document": "#000000",
    "label_gap": "#CC79A7",
    "near_miss": "#E69F00",
    "index_gap": "#56B4E9",
    "vocabulary_mismatch": "#009E73",
    "semantic_gap": "#0072B2",
    "ranking_failure": "#D55E00",
}
#: Legend labels: the class and, in brackets, what it means (see ``diagnose.failures`` for the rules).
CLASS_LABELS: dict[str, str] = {
    "missing_document": "Missing document (not in the corpus)",
    "label_gap": "Label gap (unjudged near-duplicate retrieved)",
    "near_miss": "Near miss (ranked just below k)",
    "index_gap": "Index gap (exact search finds it, the run does not)",
    "vocabulary_mismatch": "Vocabulary mismatch (different words)",
    "semantic_gap": "Semantic gap (neither dense nor BM25 finds it)",
    "ranking_failure": "Ranking failure (findable but outranked)",
}
OTHER_COLOR = "#9E9E9E"
NO_CLASS_LABEL = "None (not a failed query)"

BAND_COLORS: dict[str, str] = {
    "poor": "#D55E00",
    "acceptable": "#E69F00",
    "good": "#56B4E9",
    "excellent": "#009E73",
    "n/a": OTHER_COLOR,
}
RUN_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
OUTCOME_COLORS: dict[str, str] = {"hit": "#0072B2", "miss": "#D55E00"}
CHANGE_COLORS: dict[str, str] = {
    "fixed": "#009E73",
    "better": "#8CCFB9",
    "same": "#BDBDBD",
    "worse": "#F0A47A",
    "broken": "#D55E00",
}
ROLE_COLORS: dict[str, str] = {
    "failed query": "#D55E00",
    "query": "#0072B2",
    "target": "#009E73",
    "retrieved": "#E69F00",
    "document": "#9E9E9E",
}
ROLE_SIZES: dict[str, int] = {
    "failed query": 180,
    "query": 70,
    "target": 110,
    "retrieved": 60,
    "document": 22,
}
ROLE_OPACITY: dict[str, float] = {
    "failed query": 1.0,
    "query": 0.85,
    "target": 0.95,
    "retrieved": 0.85,
    "document": 0.35,
}
ROLE_SHAPES: dict[str, str] = {"failed query": "triangle-up", "query": "circle"}
EDGE_DASH: dict[str, list[int]] = {"target": [1, 0], "top retrieved": [4, 3]}

MAP_SELECTION = "query_select"
MAP_ZOOM = "map_zoom"
ALTAIR_MAX_ROWS = 5000


def _alt():
    import altair as alt

    return alt


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs columns {list(columns)}; missing {missing} (got {list(df.columns)})")


def _title(alt, text: str, subtitle: str | Sequence[str] | None = None):
    if subtitle:
        return alt.TitleParams(text=text, subtitle=subtitle, anchor="start")
    return alt.TitleParams(text=text, anchor="start")


def class_label(cls: str) -> str:
    """Human label of a failure class id (the id itself for an unknown class, "None ..." for "")."""
    if not cls:
        return NO_CLASS_LABEL
    return CLASS_LABELS.get(cls, cls)


def _class_scale(alt, classes: Sequence[str], *, with_none: bool = False):
    """Colour scale over class *labels*: every known class in taxonomy order (so a colour never moves), then any
    unknown class present in the data (grey), then the "none" label when asked."""
    known = list(CLASS_COLORS)
    extra = sorted({c for c in classes if c and c not in CLASS_COLORS})
    domain = [class_label(c) for c in known + extra]
    colours = [CLASS_COLORS[c] for c in known] + [OTHER_COLOR] * len(extra)
    if with_none:
        domain.append(NO_CLASS_LABEL)
        colours.append("#C8C8C8")
    return alt.Scale(domain=domain, range=colours)


# ---------------------------------------------------------------------------------------------------------------
# Overview
# ---------------------------------------------------------------------------------------------------------------


def metrics_bar(df: pd.DataFrame, *, k: int | None = None, title: str | None = None) -> alt.Chart:
    """Metric value per run (and baseline) at the chosen k, coloured by quality band, with CI error bars.

    Columns: ``run``, ``metric`` (e.g. "ndcg@10"), ``value``; optional ``ci_low``/``ci_high`` (drawn as error bars
    when present), ``band`` (poor/acceptable/good/excellent; computed with :func:`diagnose.metrics.quality_band`
    when absent), ``kind`` ("run"/"baseline"; a baseline is labelled "name (baseline)"). One panel per metric
    (rows) when there are several. The x axis is fixed to [0, 1].
    """
    alt = _alt()
    _require(df, ["run", "metric", "value"], "metrics_bar")
    data = df.copy()
    if "band" not in data.columns:
        from diagnose.metrics import quality_band

        def band(m: str, v: float) -> str:
            try:
                return quality_band(m, v)
            except Exception:  # a metric without bands (e.g. precision)
                return "n/a"

        data["band"] = [band(m, v) for m, v in zip(data["metric"], data["value"], strict=True)]
    if "kind" in data.columns:
        data["label"] = [
            f"{r} ({kd})" if isinstance(kd, str) and kd and kd != "run" else str(r)
            for r, kd in zip(data["run"], data["kind"], strict=True)
        ]
    else:
        data["label"] = data["run"].astype(str)
    has_ci = {"ci_low", "ci_high"} <= set(data.columns)
    order = list(dict.fromkeys(data["label"]))
    bands = list(BAND_COLORS)
    tooltip = [
        alt.Tooltip("run:N", title="Run"),
        alt.Tooltip("metric:N", title="Metric"),
        alt.Tooltip("value:Q", title="Value", format=".3f"),
        alt.Tooltip("band:N", title="Quality band"),
    ]
    if has_ci:
        tooltip += [
            alt.Tooltip("ci_low:Q", title="95% CI low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="95% CI high", format=".3f"),
        ]
    y = alt.Y("label:N", title=None, sort=order, axis=alt.Axis(labelLimit=260))
    bars = (
        alt.Chart()
        .mark_bar(height={"band": 0.7})
        .encode(
            y=y,
            x=alt.X("value:Q", title="Value", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "band:N",
                title="Quality band",
                scale=alt.Scale(domain=bands, range=[BAND_COLORS[b] for b in bands]),
            ),
            tooltip=tooltip,
        )
    )
    layers = [bars]
    if has_ci:
        layers.append(
            alt.Chart()
            .mark_rule(color="#333333", strokeWidth=1.5)
            .encode(y=y, x="ci_low:Q", x2="ci_high:Q", tooltip=tooltip)
        )
    layers.append(
        alt.Chart()
        .mark_text(align="left", dx=4, fontSize=11)
        .encode(y=y, x=alt.X("ci_high:Q" if has_ci else "value:Q"), text=alt.Text("value:Q", format=".3f"))
    )
    metrics = list(dict.fromkeys(data["metric"]))
    text = title or (f"Metrics at k={k}" if k is not None else "Metrics")
    subtitle = "Bars: mean over the golden queries" + ("; lines: 95% bootstrap CI" if has_ci else "")
    chart = alt.layer(*layers, data=data)
    if len(metrics) == 1:
        return chart.properties(
            width="container",
            height=max(60, 28 * len(order)),
            title=_title(alt, f"{text}: {metrics[0]}", subtitle),
        )
    return (
        chart.properties(width=420, height=max(60, 28 * len(order)))
        .facet(
            row=alt.Row(
                "metric:N", title=None, sort=metrics, header=alt.Header(labelAngle=0, labelAlign="left")
            )
        )
        .properties(title=_title(alt, text, subtitle))
    )


def curve_over_k(
    df: pd.DataFrame, *, metric: str | None = None, k: int | None = None, title: str | None = None
) -> alt.Chart:
    """A metric over cut-offs k, one line per run; a dashed rule marks the chosen ``k``.

    Columns: ``run``, ``metric`` (e.g. "recall@k" or "recall"), ``k`` (int), ``value``. With several metrics in
    ``df`` (and no ``metric`` given) one panel per metric. The k axis is logarithmic when k spans a factor >= 10
    (1..100 would otherwise crush the interesting small k), ticks at the k values present.
    """
    alt = _alt()
    _require(df, ["run", "metric", "k", "value"], "curve_over_k")
    data = df.copy()
    data["k"] = data["k"].astype(int)
    ks = sorted(set(data["k"].tolist()) | ({int(k)} if k is not None else set()))
    log = bool(ks) and ks[0] >= 1 and ks[-1] / ks[0] >= 10
    scale = alt.Scale(type="log", domain=[ks[0], ks[-1]], nice=False) if log else alt.Scale(zero=False)
    metrics = list(dict.fromkeys(data["metric"]))
    name = metric or (metrics[0].split("@")[0] if len(metrics) == 1 else "value")
    runs = list(dict.fromkeys(data["run"]))
    color = alt.Color(
        "run:N",
        title="Run",
        sort=runs,
        scale=alt.Scale(domain=runs, range=[RUN_PALETTE[i % len(RUN_PALETTE)] for i in range(len(runs))]),
    )
    x = alt.X("k:Q", title="k (cut-off)", scale=scale, axis=alt.Axis(values=ks, format="d"))
    y = alt.Y("value:Q", title=f"{name}@k", scale=alt.Scale(domain=[0, 1]))
    tooltip = [
        alt.Tooltip("run:N", title="Run"),
        alt.Tooltip("metric:N", title="Metric"),
        alt.Tooltip("k:Q", title="k"),
        alt.Tooltip("value:Q", title="Value", format=".3f"),
    ]
    lines = alt.Chart().mark_line(strokeWidth=2).encode(x=x, y=y, color=color)
    points = alt.Chart().mark_point(filled=True, size=40).encode(x=x, y=y, color=color, tooltip=tooltip)
    layers = [lines, points]
    if k is not None:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 4], color="#555555").encode(x=alt.datum(int(k))))
        layers.append(
            alt.Chart()
            .mark_text(align="left", dx=4, dy=-4, color="#555555")
            .encode(x=alt.datum(int(k)), y=alt.value(8), text=alt.datum(f"k={int(k)}"))
        )
    text = title or f"{name}@k over k"
    chart = alt.layer(*layers, data=data)
    if len(metrics) > 1 and metric is None:
        return chart.properties(width=280, height=240).facet(
            column=alt.Column("metric:N", title=None, sort=metrics)
        )
    return chart.properties(width="container", height=260, title=_title(alt, text))


def failure_breakdown(df: pd.DataFrame, *, title: str | None = None) -> alt.Chart:
    """How many missed (query, relevant document) pairs fall in each failure class.

    Columns: ``class`` (class id), ``count``; optional ``run``. One run: one bar per class (taxonomy order). Several
    runs: one stacked bar per run. Colours are fixed per class (:data:`CLASS_COLORS`), the legend shows
    :data:`CLASS_LABELS`; an unknown class is grey and labelled by its id. A ``label`` column, if any, is ignored
    (the labels here are the legend's).
    """
    alt = _alt()
    _require(df, ["class", "count"], "failure_breakdown")
    data = df.copy()
    if "run" not in data.columns:
        data["run"] = ""
    data = data.groupby(["run", "class"], as_index=False, sort=False)["count"].sum()
    data["class_label"] = [class_label(c) for c in data["class"]]
    totals = data.groupby("run")["count"].transform("sum")
    data["share"] = data["count"] / totals.where(totals > 0, 1)
    order_of = {c: i for i, c in enumerate(CLASS_COLORS)}
    data["order"] = [order_of.get(c, len(order_of)) for c in data["class"]]
    scale = _class_scale(alt, data["class"].tolist())
    labels_order = scale.domain
    color = alt.Color(
        "class_label:N",
        title="Failure class",
        scale=scale,
        sort=labels_order,
        legend=alt.Legend(labelLimit=360),
    )
    tooltip = [
        alt.Tooltip("class_label:N", title="Class"),
        alt.Tooltip("count:Q", title="Missed pairs"),
        alt.Tooltip("share:Q", title="Share", format=".0%"),
    ]
    runs = list(dict.fromkeys(data["run"]))
    text = title or "Why relevant documents were missed"
    if len(runs) <= 1:
        y = alt.Y("class_label:N", title=None, sort=labels_order, axis=alt.Axis(labelLimit=360))
        bars = (
            alt.Chart()
            .mark_bar()
            .encode(y=y, x=alt.X("count:Q", title="Missed pairs"), color=color, tooltip=tooltip)
        )
        labels = alt.Chart().mark_text(align="left", dx=4).encode(y=y, x="count:Q", text="count:Q")
        sub = f"Run {runs[0]}" if runs and runs[0] else None
        return alt.layer(bars, labels, data=data).properties(
            width="container", height=max(80, 30 * data["class"].nunique()), title=_title(alt, text, sub)
        )
    tooltip.insert(0, alt.Tooltip("run:N", title="Run"))
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("run:N", title=None, sort=runs),
            x=alt.X("count:Q", title="Missed pairs", stack="zero"),
            color=color,
            order=alt.Order("order:Q"),
            tooltip=tooltip,
        )
        .properties(width="container", height=max(80, 36 * len(runs)), title=_title(alt, text))
    )


# ---------------------------------------------------------------------------------------------------------------
# Embedding map
# ---------------------------------------------------------------------------------------------------------------


def embedding_map(
    points: pd.DataFrame,
    edges: pd.DataFrame | None = None,
    *,
    color_by: Literal["role", "failure_class"] = "role",
    selectable: bool = True,
    title: str | None = None,
    height: int = 560,
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
    other constraints). Shift-click adds to the selection, double-click clears it.
    """
    alt = _alt()
    _require(points, ["x", "y", "kind", "id", "snippet", "role", "failure_class"], "embedding_map")
    if len(points) > ALTAIR_MAX_ROWS:
        raise ValueError(
            f"{len(points):,} points is more than Altair's {ALTAIR_MAX_ROWS:,}-row limit: sample them with "
            "diagnose.projection.sample_for_map (cap=4000) instead of lifting the limit."
        )
    if color_by not in ("role", "failure_class"):
        raise ValueError(f"color_by must be 'role' or 'failure_class', got {color_by!r}")
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

    roles = list(ROLE_COLORS)
    if color_by == "role":
        color = alt.Color(
            "role:N", title="Role", scale=alt.Scale(domain=roles, range=[ROLE_COLORS[r] for r in roles])
        )
    else:
        color = alt.Color(
            "class_label:N",
            title="Failure class",
            scale=_class_scale(alt, data["failure_class"].tolist(), with_none=True),
            legend=alt.Legend(labelLimit=360),
        )
    # Size and opacity are raw numbers per row with an identity scale (scale=None): no scale, no legend. (Encoding
    # them as scales over the role made Vega-Lite drop the colour legend; the shape reads its own copy of the role
    # for the same reason.)
    for frame in (docs, queries):
        frame["point_size"] = frame["role"].map(ROLE_SIZES).fillna(ROLE_SIZES["document"])
        frame["point_opacity"] = frame["role"].map(ROLE_OPACITY).fillna(ROLE_OPACITY["document"])
        frame["query_kind"] = frame["role"]
    size = alt.Size("point_size:Q", scale=None)
    opacity = alt.Opacity("point_opacity:Q", scale=None)
    x = alt.X("x:Q", axis=None, scale=alt.Scale(zero=False))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(zero=False))
    zoom = alt.selection_interval(bind="scales", name=MAP_ZOOM)

    doc_layer = (
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
    layers = [doc_layer]
    if edges is not None and len(edges):
        _require(edges, ["x", "y", "x2", "y2", "query_id", "edge"], "embedding_map edges")
        kinds = list(EDGE_DASH)
        layers.append(
            alt.Chart(edges)
            .mark_rule(color="#555555", opacity=0.6, strokeWidth=1.2)
            .encode(
                x=x,
                y=y,
                x2="x2:Q",
                y2="y2:Q",
                strokeDash=alt.StrokeDash(
                    "edge:N",
                    title="Line to",
                    scale=alt.Scale(domain=kinds, range=[EDGE_DASH[e] for e in kinds]),
                ),
                tooltip=[alt.Tooltip("query_id:N", title="Query"), alt.Tooltip("edge:N", title="Line to")],
            )
            .properties(name="map_edges")
        )
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
        query_layer = query_layer.add_params(pick).encode(
            opacity=alt.condition(pick, opacity, alt.value(0.2))
        )
    else:
        query_layer = query_layer.encode(opacity=opacity)
    layers.append(query_layer)
    sub = "Axes have no unit: only neighbourhoods mean something. Scroll to zoom, drag to pan"
    if selectable:
        sub += ", click a query to inspect it"
    return alt.layer(*layers).properties(
        width="container",
        height=height,
        title=_title(alt, title or "Documents and queries in the embedding space (UMAP)", sub + "."),
    )


# ---------------------------------------------------------------------------------------------------------------
# Similarity and comparisons
# ---------------------------------------------------------------------------------------------------------------


def _histogram_rows(df: pd.DataFrame, bins: int, extra: Sequence[float]) -> pd.DataFrame:
    import numpy as np

    values = pd.to_numeric(df["cosine"], errors="coerce").dropna()
    lo_v = min([float(values.min())] + list(extra)) if len(values) else min(extra, default=0.0)
    hi_v = max([float(values.max())] + list(extra)) if len(values) else max(extra, default=1.0)
    lo, hi = math.floor(lo_v * 20) / 20, math.ceil(hi_v * 20) / 20
    if hi <= lo:
        hi = lo + 0.05
    edges = np.linspace(lo, hi, bins + 1)
    rows = []
    for (model, outcome), g in df.groupby(["model", "outcome"], sort=False):
        v = pd.to_numeric(g["cosine"], errors="coerce").dropna().to_numpy()
        counts, _ = np.histogram(np.clip(v, lo, hi), bins=edges)
        for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True):
            rows.append(
                {
                    "model": model,
                    "outcome": outcome,
                    "bin_start": float(a),
                    "bin_end": float(b),
                    "pairs": int(c),
                }
            )
    return pd.DataFrame(rows, columns=["model", "outcome", "bin_start", "bin_end", "pairs"])


def similarity_histogram(
    df: pd.DataFrame,
    *,
    seed_threshold: float = 0.75,
    calibrated_threshold: float | Mapping[str, float] | None = None,
    bins: int = 40,
    title: str | None = None,
) -> alt.Chart:
    """Histogram of cosine(query, relevant document), hits vs misses, with the seed and calibrated thresholds.

    Columns: ``cosine``, ``outcome`` ("hit": the relevant document was in the top k; "miss": it was not); optional
    ``model`` (one panel per model when there are several). ``calibrated_threshold``: one value, or one per model
    (``{model: threshold}``); a model without one gets only the seed rule. Counts are binned here (``bins`` equal
    bins over the data's range rounded to 0.05, thresholds included), so any number of pairs stays a few hundred
    rows. The two outcomes are overlaid (not stacked), each with its own count scale shared across panels.
    """
    alt = _alt()
    _require(df, ["cosine", "outcome"], "similarity_histogram")
    data = df.copy()
    if "model" not in data.columns:
        data["model"] = "model"
    models = list(dict.fromkeys(data["model"].astype(str)))
    data["model"] = data["model"].astype(str)
    if isinstance(calibrated_threshold, Mapping):
        cal = {
            str(m): float(v)
            for m, v in calibrated_threshold.items()
            if v is not None and not math.isnan(float(v))
        }
    elif calibrated_threshold is not None and not math.isnan(float(calibrated_threshold)):
        cal = {m: float(calibrated_threshold) for m in models}
    else:
        cal = {}
    hist = _histogram_rows(data, bins, [float(seed_threshold), *cal.values()])
    hist["_layer"] = "value"
    rules = [
        {
            "model": m,
            "_layer": "seed",
            "threshold": float(seed_threshold),
            "label": f"seed {seed_threshold:.2f}",
        }
        for m in models
    ]
    rules += [
        {"model": m, "_layer": "calibrated", "threshold": cal[m], "label": f"calibrated {cal[m]:.2f}"}
        for m in models
        if m in cal
    ]
    full = pd.concat([hist, pd.DataFrame(rules)], ignore_index=True)
    outcomes = list(OUTCOME_COLORS) + sorted(set(hist["outcome"]) - set(OUTCOME_COLORS))
    x = alt.X("bin_start:Q", bin="binned", title="cosine(query, relevant document)")
    bars = (
        alt.Chart()
        .transform_filter(alt.datum._layer == "value")
        .mark_bar(opacity=0.6, binSpacing=0)
        .encode(
            x=x,
            x2="bin_end:Q",
            y=alt.Y("pairs:Q", title="(query, relevant document) pairs", stack=None),
            color=alt.Color(
                "outcome:N",
                title="Relevant document",
                scale=alt.Scale(
                    domain=outcomes, range=[OUTCOME_COLORS.get(o, OTHER_COLOR) for o in outcomes]
                ),
                legend=alt.Legend(
                    labelExpr="datum.label == 'hit' ? 'hit (in the top k)' : datum.label == 'miss' ? 'miss (not in the top k)' : datum.label"
                ),
            ),
            tooltip=[
                alt.Tooltip("outcome:N", title="Outcome"),
                alt.Tooltip("bin_start:Q", title="cosine from", format=".2f"),
                alt.Tooltip("bin_end:Q", title="cosine to", format=".2f"),
                alt.Tooltip("pairs:Q", title="Pairs"),
            ],
        )
    )
    layers = [bars]
    for kind, colour, dash, dy in (("seed", "#333333", [6, 4], 10), ("calibrated", "#CC79A7", [1, 0], 26)):
        if kind == "calibrated" and not cal:
            continue
        sel = alt.Chart().transform_filter(alt.datum._layer == kind)
        layers.append(
            sel.mark_rule(color=colour, strokeDash=dash, strokeWidth=2).encode(
                x=alt.X("threshold:Q"),
                tooltip=[alt.Tooltip("label:N", title="Threshold"), alt.Tooltip("threshold:Q", format=".3f")],
            )
        )
        layers.append(
            sel.mark_text(align="left", dx=4, color=colour, fontWeight="bold").encode(
                x="threshold:Q", y=alt.value(dy), text="label:N"
            )
        )
    text = title or "How similar are queries to their relevant documents?"
    sub = (
        f"Seed rule: cosine < {seed_threshold:.2f} reads as vocabulary mismatch; the calibrated threshold is this "
        "model's own low percentile of cosine over the relevant documents it found."
    )
    chart = alt.layer(*layers, data=full)
    if len(models) > 1:
        return (
            chart.properties(width=520, height=180)
            .facet(row=alt.Row("model:N", title="Model", sort=models))
            .properties(title=_title(alt, text, sub))
        )
    return chart.properties(
        width="container", height=280, title=_title(alt, text, [sub, f"Model {models[0]}"])
    )


def delta_chart(
    df: pd.DataFrame,
    *,
    metric: str = "",
    run: str = "B",
    reference: str = "A",
    title: str | None = None,
) -> alt.Chart:
    """Per-query difference ``run - reference``, one bar per query sorted by the difference.

    Columns: ``query_id``, ``delta``; optional ``change`` (fixed/better/same/worse/broken as
    :func:`diagnose.compare.per_query_deltas` gives it; else derived from the sign of ``delta``), ``reference``,
    ``other``. Green = fixed/better, red = worse/broken (Okabe-Ito green/vermillion, distinguishable with the common
    colour-vision deficiencies), grey = same. Above 5,000 queries the unchanged ones are left out of the drawing (the
    subtitle says how many) so the chart stays under Altair's row limit; beyond that only the 2,500 largest gains and
    losses are drawn, again said in the subtitle.
    """
    alt = _alt()
    _require(df, ["query_id", "delta"], "delta_chart")
    data = df.copy()
    if "change" not in data.columns:
        data["change"] = ["better" if d > 1e-9 else "worse" if d < -1e-9 else "same" for d in data["delta"]]
    data = data.sort_values("delta", kind="stable").reset_index(drop=True)
    notes = []
    if len(data) > ALTAIR_MAX_ROWS:
        same = data["change"] == "same"
        notes.append(f"{int(same.sum()):,} unchanged queries not drawn")
        data = data[~same].reset_index(drop=True)
    if len(data) > ALTAIR_MAX_ROWS:
        half = ALTAIR_MAX_ROWS // 2
        notes.append(f"only the {half:,} largest losses and gains of {len(data):,} drawn")
        data = pd.concat([data.head(half), data.tail(half)], ignore_index=True)
    data["position"] = range(len(data))
    changes = list(CHANGE_COLORS)
    tooltip = [
        alt.Tooltip("query_id:N", title="Query"),
        alt.Tooltip("delta:Q", title="Difference", format="+.3f"),
    ]
    if "reference" in data.columns:
        tooltip.append(alt.Tooltip("reference:Q", title=str(reference), format=".3f"))
    if "other" in data.columns:
        tooltip.append(alt.Tooltip("other:Q", title=str(run), format=".3f"))
    tooltip.append(alt.Tooltip("change:N", title="Change"))
    ylab = f"{metric}: {run} − {reference}" if metric else f"{run} − {reference}"
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "position:O",
                title=f"Queries, sorted by difference ({len(data):,})",
                axis=alt.Axis(labels=False, ticks=False),
            ),
            y=alt.Y("delta:Q", title=ylab),
            color=alt.Color(
                "change:N",
                title="Change",
                scale=alt.Scale(domain=changes, range=[CHANGE_COLORS[c] for c in changes]),
                sort=changes,
            ),
            tooltip=tooltip,
        )
    )
    zero = alt.Chart().mark_rule(color="#555555").encode(y=alt.datum(0))
    sub = f"Per query: {run} minus {reference}" + (f" on {metric}" if metric else "")
    if notes:
        sub += " (" + "; ".join(notes) + ")"
    return alt.layer(bars, zero).properties(
        width="container", height=260, title=_title(alt, title or "Per-query differences", sub)
    )


def legend_strip(items: Sequence[tuple[str, str]], lines: Sequence[tuple[str, str]] = ()) -> alt.LayerChart:
    """A horizontal legend of coloured dots (``items``: ``(label, hex colour)``) and line marks (``lines``), for
    charts that draw none themselves (the deck.gl map). Labels are data, never markup."""
    alt = _alt()
    rows = [{"i": i, "label": label, "color": c, "kind": "dot"} for i, (label, c) in enumerate(items)]
    rows += [{"i": len(rows) + i, "label": label, "color": c, "kind": "line"} for i, (label, c) in enumerate(lines)]
    df = pd.DataFrame(rows)
    per_row = 4
    df["col"] = df["i"] % per_row
    df["row"] = df["i"] // per_row
    x = alt.X("col:O", axis=None, scale=alt.Scale(paddingInner=0, paddingOuter=0))
    y = alt.Y("row:O", axis=None)
    color = alt.Color("color:N", scale=None)
    dots = alt.Chart(df[df["kind"] == "dot"]).mark_circle(size=110, opacity=1).encode(x=x, y=y, color=color)
    dashes = alt.Chart(df[df["kind"] == "line"]).mark_tick(thickness=3, size=18, orient="horizontal").encode(
        x=x, y=y, color=color
    )
    text = alt.Chart(df).mark_text(align="left", dx=12, fontSize=12).encode(x=x, y=y, text="label:N")
    return (dots + dashes + text).properties(height=22 * (int(df["row"].max()) + 1)).configure_view(stroke=None)
