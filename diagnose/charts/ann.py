"""The ANN frontier: :func:`ann_frontier_chart`, quality against latency for every approximate-index setting, the
Pareto front, the setting the collection is served with and the cheapest setting recovering the run's index gaps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.charts.common import altair_module, chart_title, require
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

#: index family -> (legend label, colour): Okabe-Ito, as every chart
FAMILIES: dict[str, tuple[str, str]] = {
    "exact": ("Exact search (flat)", "#000000"),
    "hnsw": ("HNSW", "#0072B2"),
    "ivf_flat": ("IVF-Flat", "#E69F00"),
}
FRONT, DOMINATED = "on the Pareto front", "dominated (another setting is faster and better)"
CURRENT, RECOVERS = "current setting (the collection's own)", "cheapest setting recovering the index gaps"


def _setting_label(index: str, params: str) -> str:
    if index == "exact":
        return "exact search"
    return f"{FAMILIES.get(index, (index,))[0]} {params}".strip()


def ann_frontier_chart(
    table: pd.DataFrame,
    *,
    k: int,
    current: str | None = None,
    recovers: str | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """Quality (``ndcg@k``) against median latency for each setting of :meth:`diagnose.whatif.ann.AnnFrontier.table`.

    Columns read: ``index``, ``params`` (text, e.g. ``"(M=16, efConstruction=40, efSearch=32)"``), ``ndcg@k``,
    ``recall_vs_exact``, ``hit_rate@k``, ``recall@k``, ``latency_p50_ms``, ``latency_p95_ms``, ``build_s``,
    ``memory_mb``, ``pareto``. Colour: the index family; shape: on the Pareto front or dominated; a step line joins
    the front. ``current`` / ``recovers``: the ``params`` text of the served setting and of the cheapest setting
    recovering the run's index gaps (None: not marked), each ringed and named. Latency on a log scale.
    """
    alt = altair_module()
    nd = f"ndcg@{k}"
    cols = ["index", "params", nd, "recall_vs_exact", "latency_p50_ms", "latency_p95_ms", "pareto"]
    require(table, cols, "ann_frontier_chart")
    data = table.copy()
    data["setting"] = [_setting_label(i, p) for i, p in zip(data["index"], data["params"], strict=True)]
    data["family"] = [FAMILIES.get(i, (i, ""))[0] for i in data["index"]]
    data["front"] = [FRONT if p else DOMINATED for p in data["pareto"]]
    x, y, color, shape, tooltip = _encodings(alt, data, k)
    points = (
        alt.Chart(data)
        .mark_point(size=90, filled=True, opacity=0.85)
        .encode(x=x, y=y, color=color, shape=shape, tooltip=tooltip)
    )
    front = data[data["pareto"]].sort_values("latency_p50_ms")
    line = (
        alt.Chart(front)
        .mark_line(interpolate="step-after", color="#9E9E9E", strokeDash=[4, 3])
        .encode(x=x, y=y)
    )
    layers = [line, points]
    layers += _marked(alt, data, x, y, tooltip, current, recovers)
    sub = f"Approximate indexes over the same vectors: {len(data) - 1} settings and exact search"
    return alt.layer(*layers).properties(
        title=chart_title(alt, title or "Quality against latency: the ANN frontier", sub), height=380
    )


def _encodings(alt, data: pd.DataFrame, k: int) -> tuple:
    """x (latency, log), y (nDCG@k), colour (index family), shape (Pareto front) and the tooltip."""
    nd = f"ndcg@{k}"
    x = alt.X("latency_p50_ms:Q", title="Median latency per query (ms, one thread, log scale)",
              scale=alt.Scale(type="log"))  # fmt: skip
    y = alt.Y(f"{nd}:Q", title=f"nDCG@{k} on the golden set", scale=alt.Scale(zero=False))
    families = [v for v in FAMILIES.values() if v[0] in set(data["family"])]
    extra = sorted(set(data["family"]) - {v[0] for v in families})
    color = alt.Color(
        "family:N",
        title="Index",
        scale=alt.Scale(
            domain=[f for f, _ in families] + extra, range=[c for _, c in families] + ["#9E9E9E"] * len(extra)
        ),
        legend=alt.Legend(orient="bottom", labelLimit=300),
    )
    shape = alt.Shape(
        "front:N",
        title="Pareto front (nDCG vs latency)",
        scale=alt.Scale(domain=[FRONT, DOMINATED], range=["circle", "triangle-down"]),
        legend=alt.Legend(orient="bottom", labelLimit=400),
    )
    tooltip = [
        alt.Tooltip("setting:N", title="Setting"),
        alt.Tooltip("recall_vs_exact:Q", title="Recall vs exact", format=".3f"),
        *[
            alt.Tooltip(f"{m}:Q", title=m, format=".4f")
            for m in (nd, f"recall@{k}", f"hit_rate@{k}")
            if m in data
        ],
        alt.Tooltip("latency_p50_ms:Q", title="p50 ms", format=".3f"),
        alt.Tooltip("latency_p95_ms:Q", title="p95 ms", format=".3f"),
        *[
            alt.Tooltip(f"{c}:Q", title=t, format=".3f")
            for c, t in (("build_s", "build s"), ("memory_mb", "MiB"))
            if c in data
        ],
    ]
    return x, y, color, shape, tooltip


def _marked(alt, data: pd.DataFrame, x, y, tooltip, current: str | None, recovers: str | None) -> list:
    """A ring and a name on the current setting and on the cheapest setting recovering the index gaps."""
    layers: list = []
    for params, name in ((current, CURRENT), (recovers, RECOVERS)):
        marked = data[data["params"] == params] if params else data.iloc[0:0]
        if not marked.empty:
            marked = marked.head(1).assign(note=f"{name}: {marked['setting'].iloc[0]}")
            dy = -18 if name == CURRENT else 18
            ring = alt.Chart(marked).mark_point(size=420, filled=False, strokeWidth=2, color="#000000")
            text = alt.Chart(marked).mark_text(align="left", dx=12, dy=dy, fontSize=11).encode(text="note:N")
            layers += [ring.encode(x=x, y=y, tooltip=tooltip), text.encode(x=x, y=y)]
    return layers
