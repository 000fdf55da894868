"""The ANN frontier in the app (issue 20): the chart builder (diagnose.charts.ann) and the ANN index page (AppTest on
the demo with the fake keyword encoder)."""

from __future__ import annotations

import app_testing as app
import pandas as pd
import pytest

from diagnose import charts

alt = pytest.importorskip("altair")


def _table() -> pd.DataFrame:
    """Three points as AnnFrontier.table() writes them: exact search, a fast dominated HNSW, a faster IVF."""
    rows = [
        ("exact", "()", 1.0, 0.30, 0.10, True),
        ("hnsw", "(M=16, efConstruction=40, efSearch=16)", 0.9, 0.25, 0.20, False),
        ("ivf_flat", "(nlist=4, nprobe=1)", 0.7, 0.20, 0.05, True),
    ]
    return pd.DataFrame(
        [
            {"index": i, "params": p, "recall_vs_exact": r, "ndcg@10": n, "hit_rate@10": n, "recall@10": n,
             "latency_p50_ms": ms, "latency_p95_ms": 2 * ms, "build_s": 0.1, "memory_mb": 0.2, "pareto": f}
            for i, p, r, n, ms, f in rows
        ]
    )  # fmt: skip


def _layer_data(spec: dict) -> list[list[dict]]:
    datasets = spec["datasets"]
    return [datasets[layer["data"]["name"]] for layer in spec["layer"]]


def test_the_chart_marks_the_front_the_current_setting_and_the_recovering_one():
    spec = charts.ann_frontier_chart(
        _table(), k=10, current="(M=16, efConstruction=40, efSearch=16)", recovers="(nlist=4, nprobe=1)"
    ).to_dict()  # validates against the Vega-Lite schema
    line, points, *marks = _layer_data(spec)
    # the Pareto line joins the two front points by latency: IVF (0.05 ms) then exact (0.10 ms)
    assert [r["index"] for r in line] == ["ivf_flat", "exact"]
    assert [r["front"] for r in points] == [charts.ann.FRONT, charts.ann.DOMINATED, charts.ann.FRONT]
    notes = list(dict.fromkeys(r["note"] for data in marks for r in data))  # a ring and a name per mark
    assert notes == [
        f"{charts.ann.CURRENT}: HNSW (M=16, efConstruction=40, efSearch=16)",
        f"{charts.ann.RECOVERS}: IVF-Flat (nlist=4, nprobe=1)",
    ]
    legend_labels = [r["family"] for r in points]
    assert legend_labels == ["Exact search (flat)", "HNSW", "IVF-Flat"]
    assert "None" not in str(spec["layer"]) and "null" not in str(notes)


def test_without_a_current_or_recovering_setting_nothing_is_marked():
    spec = charts.ann_frontier_chart(_table(), k=10).to_dict()
    assert len(spec["layer"]) == 2  # the front line and the points


@pytest.mark.usefixtures("keyword_encoder")
def test_the_ann_index_page_draws_the_frontier():
    pytest.importorskip("faiss")
    at = app.open_demo("ann")
    app.assert_clean(at)
    assert at.title[0].value == "ANN index"
    assert len(app.charts(at)) == 1
    table = app.frame_with(at, "setting")
    assert table["setting"].iloc[0] == "exact search" and len(table) > 10
    assert table["recall_vs_exact"].iloc[0] == 1.0  # exact search finds exact search's top k
    text = " ".join(app.unescaped(m.value) for m in at.markdown)
    assert "Index gaps of" in text and "None" not in text
