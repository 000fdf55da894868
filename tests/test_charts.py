"""Chart builders: every spec validates against the Vega-Lite schema (``to_dict()`` validates) and carries the
marks, encodings, scales and params the UI relies on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnose import charts
from diagnose.data import DataError

alt = pytest.importorskip("altair")


def units(spec: dict) -> list[dict]:
    """Every unit (single-mark) view of a spec, depth first, through layer / facet / concat."""
    out: list[dict] = []
    if "mark" in spec:
        out.append(spec)
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            out += units(child)
    if isinstance(spec.get("spec"), dict):
        out += units(spec["spec"])
    return out


def mark(u: dict) -> str:
    return u["mark"] if isinstance(u["mark"], str) else u["mark"]["type"]


def rows(spec: dict, unit: dict | None = None) -> list[dict]:
    """The data rows a unit (or the top level) reads: inline dataset referenced by name."""
    name = ((unit or {}).get("data") or spec.get("data") or {}).get("name")
    return spec["datasets"][name]


# ------------------------------------------------------------------------------------------------ overview


def _metrics(**extra) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run": ["prod", "bm25"],
            "metric": "ndcg@10",
            "value": [0.28, 0.55],
            "kind": ["run", "baseline"],
            **extra,
        }
    )


def test_metrics_bar_bands_and_error_bars():
    spec = charts.metrics_bar(_metrics(ci_low=[0.2, 0.5], ci_high=[0.33, 0.6]), k=10).to_dict()
    us = units(spec)
    bar = next(u for u in us if mark(u) == "bar")
    scale = bar["encoding"]["color"]["scale"]
    assert scale["domain"][:4] == ["poor", "acceptable", "good", "excellent"]
    assert scale["range"][:4] == [charts.BAND_COLORS[b] for b in ("poor", "acceptable", "good", "excellent")]
    rule = next(u for u in us if mark(u) == "rule")
    assert rule["encoding"]["x"]["field"] == "ci_low" and rule["encoding"]["x2"]["field"] == "ci_high"
    data = rows(spec)
    # bands from diagnose.metrics.quality_band, ndcg cut points 0.3 / 0.5 / 0.7: 0.28 < 0.3 poor, 0.5 <= 0.55 < 0.7 good
    assert [r["band"] for r in data] == ["poor", "good"]
    assert [r["label"] for r in data] == ["prod", "bm25 (baseline)"]
    assert spec["width"] == "container" and "k=10" in spec["title"]["text"]


def test_metrics_bar_without_ci_and_several_metrics():
    df = pd.concat([_metrics(), _metrics().assign(metric="recall@10")])
    spec = charts.metrics_bar(df.drop(columns="kind").assign(band="good")).to_dict()
    assert spec["facet"]["row"]["field"] == "metric"
    assert [mark(u) for u in units(spec)] == ["bar", "text"]  # no CI columns, no error bar
    with pytest.raises(ValueError, match="value"):
        charts.metrics_bar(pd.DataFrame({"run": ["a"], "metric": ["ndcg@10"]}))


def _curves(metric: str = "recall@k", ks=(1, 2, 5, 10, 20, 50, 100)) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"run": r, "metric": metric, "k": k, "value": min(1.0, 0.1 * i + k / 120)}
            for i, r in enumerate("ab")
            for k in ks
        ]
    )


def test_curve_over_k_lines_per_run_and_the_chosen_k():
    spec = charts.curve_over_k(_curves(), metric="recall", k=10).to_dict()
    us = units(spec)
    line = next(u for u in us if mark(u) == "line")
    assert line["encoding"]["color"]["field"] == "run"
    assert line["encoding"]["x"]["field"] == "k" and line["encoding"]["x"]["scale"]["type"] == "log"  # 1..100
    assert line["encoding"]["y"]["title"] == "recall@k"
    rule = next(u for u in us if mark(u) == "rule")
    assert rule["encoding"]["x"]["datum"] == 10
    linear = charts.curve_over_k(_curves(ks=(1, 2, 3, 5))).to_dict()  # spans < 10x: linear axis
    assert "type" not in next(u for u in units(linear) if mark(u) == "line")["encoding"]["x"]["scale"]
    both = charts.curve_over_k(pd.concat([_curves(), _curves("ndcg@k")])).to_dict()
    assert both["facet"]["column"]["field"] == "metric"


def test_failure_breakdown_colours_are_fixed_per_class():
    a = charts.failure_breakdown(
        pd.DataFrame({"class": ["near_miss", "semantic_gap"], "count": [3, 1]})
    ).to_dict()
    b = charts.failure_breakdown(pd.DataFrame({"class": ["ranking_failure"], "count": [7]})).to_dict()
    for spec in (a, b):
        scale = next(u for u in units(spec) if mark(u) == "bar")["encoding"]["color"]["scale"]
        mapping = dict(zip(scale["domain"], scale["range"], strict=True))
        for cls, colour in charts.CLASS_COLORS.items():
            assert mapping[charts.CLASS_LEGENDS[cls]] == colour  # same colour whatever the data holds
    assert charts.CLASS_LEGENDS["near_miss"] == "Near miss (ranked just below k)"
    assert len(set(charts.CLASS_COLORS.values())) == len(charts.CLASS_COLORS)


def test_failure_breakdown_classes_match_the_taxonomy():
    failures = pytest.importorskip("diagnose.failures")
    assert tuple(charts.CLASS_COLORS) == tuple(failures.CLASSES)
    assert set(charts.CLASS_LEGENDS) == set(failures.CLASSES)


def test_failure_breakdown_unknown_class_and_several_runs():
    df = pd.DataFrame(
        {
            "run": ["a", "a", "b"],
            "class": ["near_miss", "brand_new", "near_miss"],
            "count": [2, 1, 5],
            "label": "x",
        }
    )
    spec = charts.failure_breakdown(df).to_dict()
    (bar,) = [u for u in units(spec) if mark(u) == "bar"]
    assert bar["encoding"]["y"]["field"] == "run" and bar["encoding"]["x"]["stack"] == "zero"
    scale = bar["encoding"]["color"]["scale"]
    assert scale["domain"][-1] == "brand_new" and scale["range"][-1] == charts.OTHER_COLOR
    shares = {(r["run"], r["class"]): r["share"] for r in rows(spec)}
    assert shares == {("a", "near_miss"): 2 / 3, ("a", "brand_new"): 1 / 3, ("b", "near_miss"): 1.0}


# ------------------------------------------------------------------------------------------------ map


def _points(n_docs: int = 6) -> tuple[pd.DataFrame, pd.DataFrame]:
    roles = (["target", "retrieved"] + ["document"] * n_docs)[:n_docs]
    docs = pd.DataFrame(
        {
            "x": np.arange(n_docs, dtype=float),
            "y": np.arange(n_docs, dtype=float),
            "kind": "document",
            "id": [f"d{i}" for i in range(n_docs)],
            "snippet": "text",
            "role": roles,
            "failure_class": "",
        }
    )
    queries = pd.DataFrame(
        {
            "x": [0.5, 1.5],
            "y": [0.0, 1.0],
            "kind": "query",
            "id": ["q1", "q2"],
            "snippet": ["why?", "how?"],
            "role": ["failed query", "query"],
            "failure_class": ["near_miss", ""],
        }
    )
    points = pd.concat([docs, queries], ignore_index=True)
    edges = pd.DataFrame(
        {
            "x": [0.5, 0.5],
            "y": [0.0, 0.0],
            "x2": [0.0, 1.0],
            "y2": [0.0, 1.0],
            "query_id": "q1",
            "edge": ["target", "top retrieved"],
        }
    )
    return points, edges


def test_embedding_map_layers_and_the_query_selection():
    points, edges = _points()
    spec = charts.embedding_map(points, edges).to_dict()
    params = {p["name"]: p for p in spec["params"]}  # hoisted to the top level: what Streamlit 1.40 reads
    sel = params[charts.MAP_SELECTION]
    assert sel["name"] == "query_select"
    assert sel["select"]["type"] == "point" and sel["select"]["fields"] == ["id"]
    assert sel["views"] == ["map_queries"]
    zoom = params[charts.MAP_ZOOM]
    assert zoom["bind"] == "scales" and zoom["select"]["type"] == "interval"
    layers = {u["name"]: u for u in units(spec)}
    assert [mark(layers[n]) for n in ("map_documents", "map_edges", "map_queries")] == [
        "circle",
        "rule",
        "point",
    ]
    q = layers["map_queries"]["encoding"]
    assert q["shape"]["scale"]["domain"] == ["failed query", "query"]
    assert (
        q["shape"]["scale"]["range"][0] != q["shape"]["scale"]["range"][1]
    )  # failed queries: distinct shape
    assert q["opacity"]["condition"]["param"] == "query_select"
    assert {t["field"] for t in q["tooltip"]} >= {"id", "snippet", "class_label"}
    e = layers["map_edges"]["encoding"]
    assert e["x2"]["field"] == "x2" and e["y2"]["field"] == "y2" and e["strokeDash"]["field"] == "edge"
    # documents small and translucent, queries larger
    doc_rows = rows(spec, layers["map_documents"])
    plain = next(r for r in doc_rows if r["role"] == "document")
    failed = next(r for r in rows(spec, layers["map_queries"]) if r["role"] == "failed query")
    assert plain["point_opacity"] < 0.5 and plain["point_size"] < failed["point_size"]
    assert spec["width"] == "container"


def test_embedding_map_colour_by_class_and_no_selection():
    points, _ = _points()
    spec = charts.embedding_map(points, None, color_by="failure_class", selectable=False).to_dict()
    assert [p["name"] for p in spec["params"]] == [charts.MAP_ZOOM]
    colour = next(u for u in units(spec) if u.get("name") == "map_queries")["encoding"]["color"]
    mapping = dict(zip(colour["scale"]["domain"], colour["scale"]["range"], strict=True))
    assert mapping[charts.CLASS_LEGENDS["near_miss"]] == charts.CLASS_COLORS["near_miss"]
    assert [u.get("name") for u in units(spec)] == ["map_documents", "map_queries"]  # no edges, no line layer
    with pytest.raises(DataError, match="color_by"):
        charts.embedding_map(points, None, color_by="model")


def test_embedding_map_refuses_more_rows_than_altair_allows():
    points, _ = _points(5001)
    with pytest.raises(DataError, match="sample_for_map"):
        charts.embedding_map(points)


def test_streamlit_returns_only_the_query_selection():
    """st.altair_chart accepts the layered map with on_select and listens only to query_select when told so."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    def app():
        import pandas as pd
        import streamlit as st

        from diagnose import charts

        points = pd.DataFrame(
            {
                "x": [0.0, 1.0],
                "y": [0.0, 1.0],
                "kind": ["document", "query"],
                "id": ["d1", "q1"],
                "snippet": ["doc", "query"],
                "role": ["target", "failed query"],
                "failure_class": ["", "near_miss"],
            }
        )
        event = st.altair_chart(
            charts.embedding_map(points), on_select="rerun", selection_mode=[charts.MAP_SELECTION], key="map"
        )
        st.write(sorted(event.selection.keys()))

    at = AppTest.from_function(app).run(timeout=60)
    assert not at.exception, [e.message for e in at.exception]
    (chart,) = list(at.get("arrow_vega_lite_chart")) + list(
        at.get("vega_lite_chart")
    )  # name depends on version
    assert list(chart.proto.selection_mode) == ["query_select"]  # the zoom param would rerun on every scroll


# ------------------------------------------------------------------------------------------------ similarity


def test_similarity_histogram_rules_for_both_thresholds():
    df = pd.DataFrame(
        {"cosine": [0.2, 0.45, 0.5, 0.8, 0.9], "outcome": ["miss", "miss", "hit", "hit", "hit"]}
    )
    spec = charts.similarity_histogram(df, calibrated_threshold=0.42, bins=10).to_dict()
    us = units(spec)
    rules = [u for u in us if mark(u) == "rule"]
    assert len(rules) == 2
    data = rows(spec)
    thresholds = {r["_layer"]: r["threshold"] for r in data if r["_layer"] in ("seed", "calibrated")}
    assert thresholds == {"seed": 0.75, "calibrated": 0.42}
    assert {r["label"] for r in data if r["_layer"] != "value"} == {"seed 0.75", "calibrated 0.42"}
    # 10 bins over [0.2, 0.9] (the data range rounded to 0.05): 2 misses and 3 hits are counted, none lost
    counts = {}
    for r in data:
        if r["_layer"] == "value":
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + r["pairs"]
    assert counts == {"miss": 2, "hit": 3}
    bar = next(u for u in us if mark(u) == "bar")
    assert bar["encoding"]["y"]["stack"] is None and bar["encoding"]["color"]["field"] == "outcome"


def test_similarity_histogram_per_model_thresholds_and_no_calibration():
    df = pd.DataFrame(
        {
            "cosine": [0.3, 0.6, 0.7, 0.8],
            "outcome": ["miss", "hit", "miss", "hit"],
            "model": ["a", "a", "b", "b"],
        }
    )
    spec = charts.similarity_histogram(df, calibrated_threshold={"a": 0.4}).to_dict()
    assert spec["facet"]["row"]["field"] == "model"
    cal = [
        (r["model"], r["threshold"])
        for r in spec["datasets"][spec["data"]["name"]]
        if r["_layer"] == "calibrated"
    ]
    assert cal == [("a", 0.4)]  # model b has no calibrated threshold: only its seed rule
    one = charts.similarity_histogram(df[df["model"] == "a"]).to_dict()
    assert len([u for u in units(one) if mark(u) == "rule"]) == 1


# ------------------------------------------------------------------------------------------------ comparisons


def test_delta_chart_sorted_bars_coloured_by_change():
    df = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "reference": [0.0, 0.5, 0.5, 0.4],
            "other": [0.3, 0.0, 0.5, 0.6],
            "delta": [0.3, -0.5, 0.0, 0.2],
            "change": ["fixed", "broken", "same", "better"],
        }
    )
    spec = charts.delta_chart(df, metric="ndcg@10", run="hybrid", reference="prod").to_dict()
    bar = next(u for u in units(spec) if mark(u) == "bar")
    scale = bar["encoding"]["color"]["scale"]
    mapping = dict(zip(scale["domain"], scale["range"], strict=True))
    assert mapping["fixed"] == "#009E73" and mapping["broken"] == "#D55E00"  # green fixes, red breaks
    data = rows(spec, bar)
    assert [r["query_id"] for r in sorted(data, key=lambda r: r["position"])] == ["q2", "q3", "q4", "q1"]
    assert bar["encoding"]["y"]["title"] == "ndcg@10: hybrid − prod"


def test_delta_chart_derives_change_and_stays_under_the_row_limit():
    n = 6000
    delta = np.zeros(n)
    delta[:100] = 0.5
    delta[100:200] = -0.25
    df = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "delta": delta})
    spec = charts.delta_chart(df).to_dict()
    bar = next(u for u in units(spec) if mark(u) == "bar")
    data = rows(spec, bar)
    assert len(data) == 200 and {r["change"] for r in data} == {"better", "worse"}
    assert "5,800 unchanged queries not drawn" in spec["title"]["subtitle"]


# ------------------------------------------------------------------------------------------------ deck.gl map


def _deck_frames():
    points = pd.DataFrame(
        {
            "x": [0.0, 1.0, 2.0, 3.0, 4.0],
            "y": [0.0, 1.0, 2.0, 3.0, 4.0],
            "kind": ["document"] * 3 + ["query"] * 2,
            "id": ["d1", "d2", "d3", "q1", "q2"],
            "snippet": ["<img src=x onerror=alert(1)> {id}", "b", "c", "q one", "q two"],
            "role": ["document", "target", "retrieved", "failed query", "query"],
            "failure_class": ["", "", "", "near_miss", ""],
        }
    )
    edges = pd.DataFrame(
        {
            "x": [3.0, 3.0],
            "y": [3.0, 3.0],
            "x2": [1.0, 2.0],
            "y2": [1.0, 2.0],
            "query_id": ["q1", "q1"],
            "edge": ["target", "top retrieved"],
        }
    )
    return points, edges


def test_deck_has_the_layers_an_orthographic_view_and_no_basemap():
    import json

    from diagnose.charts import deck

    points, edges = _deck_frames()
    d = deck.embedding_deck(points, edges)
    spec = json.loads(d.to_json())
    assert [layer["id"] for layer in spec["layers"]] == list(deck.LAYER_IDS)
    assert [layer["@@type"] for layer in spec["layers"]] == ["ScatterplotLayer"] * 3 + ["LineLayer"] + [
        "ScatterplotLayer"
    ] * 2
    assert spec["views"] == [{"@@type": "OrthographicView", "controller": True, "flipY": False}]
    assert "mapStyle" not in spec and "mapProvider" not in spec  # no basemap: nothing fetched
    text = d.to_json()
    assert "http" not in text and "cartocdn" not in text and "mapbox" not in text
    # every point once, in the layer of its role; radii in pixels (a quoted literal, not an accessor)
    rows = {layer["id"]: [r["id"] for r in layer["data"]] for layer in spec["layers"]}
    assert rows["documents"] == ["d1"] and rows["targets"] == ["d2"] and rows["retrieved"] == ["d3"]
    assert rows["queries"] == ["q2"] and rows[deck.DECK_QUERY_LAYER] == ["q1"]
    assert rows["links"] == ["q1", "q1"]
    assert all(layer.get("radiusUnits") == "pixels" for layer in spec["layers"] if "radiusUnits" in layer)
    failed = spec["layers"][-1]
    assert failed["pickable"] and failed["lineWidthUnits"] == "pixels"
    # view: centred on the points; zoom z draws 2**z px per unit, the 4x4 box fits 0.9 * 660 px
    vs = spec["initialViewState"]
    assert vs["target"][:2] == [2.0, 2.0]
    assert 2 ** vs["zoom"] == pytest.approx(0.9 * 660 / (3.98 - 0.02), rel=1e-3)


def test_deck_tooltip_is_text_never_html():
    from diagnose.charts import deck

    points, edges = _deck_frames()
    d = deck.embedding_deck(points, edges)
    tip = d._tooltip  # what st.pydeck_chart reads (streamlit's _get_pydeck_tooltip)
    assert "html" not in tip and tip["text"] == "{label}: {id}\n{snippet}"
    # deck.gl puts "text" into innerText: the markup travels as data, shown as characters
    assert "<img src=x onerror=alert(1)> {id}" in d.to_json()


def _deck_strings(obj):
    """Every string value of a deck spec, at any depth (what deck.gl's JSON converter walks)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _deck_strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _deck_strings(v)


def test_deck_strings_from_user_files_are_never_read_as_code():
    """Before: ids and snippets went raw into the spec, and deck.gl's converter read "@@=..." as a JavaScript
    expression and "@@#..." as a constant: the whole map failed with a JavaScript error."""
    import json

    from diagnose.charts import deck

    points, edges = _deck_frames()
    hostile = ["@@=alert(1)", "@@#GL.ONE", "@@type", "\u2060@@=x", "\u2060plain"]
    points["id"] = hostile
    points["snippet"] = ["@@=document.cookie", "@@#COORDINATE_SYSTEM.LNGLAT", "ok", "@@", "@"]
    edges["query_id"] = [hostile[3], hostile[3]]  # q1's edges
    spec = json.loads(deck.embedding_deck(points, edges).to_json())
    strings = list(
        _deck_strings([layer["data"] for layer in spec["layers"]])
    )  # the accessors are ours: "@@=color"
    assert len(strings) > 20 and not [s for s in strings if s.startswith("@@")], (
        "deck.gl would evaluate these"
    )
    ids = [deck.from_deck_text(r["id"]) for layer in spec["layers"] for r in layer["data"]]
    # escaping is reversible: every id comes back (the two links carry q1's id again)
    assert sorted(ids) == sorted(hostile + [hostile[3]] * 2)
    failed = spec["layers"][-1]["data"][0]
    assert deck.from_deck_text(failed["id"]) == "\u2060@@=x" and failed["snippet"] == deck.DECK_ESCAPE + "@@"
    assert deck.deck_text("a@@=b") == "a@@=b"  # only a leading @@ is read as code


def test_deck_colours_failed_queries_by_class_and_checks_its_input():
    import json

    from diagnose.charts import deck

    points, edges = _deck_frames()
    by_class = json.loads(deck.embedding_deck(points, edges, color_by="failure_class").to_json())
    assert by_class["layers"][-1]["data"][0]["color"] == deck.rgba(charts.CLASS_COLORS["near_miss"])
    by_role = json.loads(deck.embedding_deck(points, edges).to_json())
    assert by_role["layers"][-1]["data"][0]["color"] == deck.rgba(charts.ROLE_COLORS["failed query"])
    with pytest.raises(DataError, match="color_by"):
        deck.embedding_deck(points, color_by="size")
    with pytest.raises(ValueError, match="lack columns"):
        deck.embedding_deck(points.drop(columns="snippet"))
    assert deck.rgba("#D55E00", 10) == [213, 94, 0, 10]  # 0xD5=213, 0x5E=94


def test_legend_strip_draws_every_item_as_data():
    from diagnose.charts import legend_strip

    items = [("failed query", "#D55E00"), ("<b>target</b>", "#009E73")]
    spec = legend_strip(items, [("line to a missed target", "#009E73")]).to_dict()
    values = [v for d in spec["datasets"].values() for v in d]
    assert {v["label"] for v in values} == {"failed query", "<b>target</b>", "line to a missed target"}
    assert {v["color"] for v in values} == {"#D55E00", "#009E73"}


def test_remedy_matrix_heatmap_colours_the_share_and_outlines_the_own_remedy():
    # vocabulary_mismatch: hybrid 6/11 (own), dense 1/11; index_gap: hybrid 0/2, dense 2/2 (own)
    df = pd.DataFrame(
        {
            "class": ["vocabulary_mismatch", "vocabulary_mismatch", "index_gap", "index_gap"],
            "remedy": ["hybrid", "dense", "hybrid", "dense"],
            "failures": [11, 11, 2, 2],
            "recovered": [6, 1, 0, 2],
            "own": [True, False, False, True],
        }
    )
    spec = charts.remedy_matrix_heatmap(df).to_dict()
    layers = spec["layer"]
    heat, own, text = layers
    assert mark(heat) == "rect" and heat["encoding"]["color"]["field"] == "share"
    assert heat["encoding"]["color"]["scale"]["domain"] == [0, 1]
    assert own["mark"]["filled"] is False and own["transform"] == [{"filter": "datum.own"}]
    assert text["encoding"]["text"]["field"] == "cell"
    rows = list(spec["datasets"].values())[0]
    cells = {(r["class"], r["remedy"]): (r["cell"], r["share"]) for r in rows}
    # 6/11 = 0.545; 2/2 = 1; the own cells carry a star
    assert cells[("vocabulary_mismatch", "hybrid")] == ("6/11 ★", pytest.approx(6 / 11))
    assert cells[("index_gap", "dense")] == ("2/2 ★", 1.0) and cells[("index_gap", "hybrid")] == ("0/2", 0.0)
    # rows in taxonomy order (index_gap before vocabulary_mismatch), columns in the order given
    legends = charts.CLASS_LEGENDS
    assert heat["encoding"]["y"]["sort"] == [legends["index_gap"], legends["vocabulary_mismatch"]]
    assert heat["encoding"]["x"]["sort"] == ["hybrid", "dense"]
    with pytest.raises(ValueError, match="own"):
        charts.remedy_matrix_heatmap(df.drop(columns="own"))


def test_findings_bars_draw_recovered_right_and_broken_left_in_rank_order():
    df = pd.DataFrame(
        {"action": ["1. Fix the ANN index", "2. Re-chunk"], "recovered": [21, 8], "breaks": [2, 0]}
    )
    spec = charts.findings_bars(df).to_dict()  # validates against the Vega-Lite schema
    rows = spec["datasets"][next(iter(spec["datasets"]))]
    # two rows per action: recovers +n, breaks -n (2. Re-chunk breaks none: a zero bar, no label)
    assert [(r["action"], r["what"], r["x"]) for r in rows] == [
        ("1. Fix the ANN index", "recovers", 21),
        ("1. Fix the ANN index", "breaks", -2),
        ("2. Re-chunk", "recovers", 8),
        ("2. Re-chunk", "breaks", 0),
    ]
    assert spec["layer"][0]["encoding"]["y"]["sort"] == ["1. Fix the ANN index", "2. Re-chunk"]
    with pytest.raises(ValueError, match="findings_bars needs columns"):
        charts.findings_bars(df.drop(columns="breaks"))
