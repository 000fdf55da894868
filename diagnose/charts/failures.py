"""Failure classes: :func:`failure_breakdown`, how many missed (query, relevant document) pairs fall in each class."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from diagnose.charts.common import altair_module, chart_title, require
from diagnose.charts.palette import CLASS_COLORS, class_label, class_scale

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def failure_breakdown(df: pd.DataFrame, *, title: str | None = None) -> alt.Chart:
    """How many missed (query, relevant document) pairs fall in each failure class.

    Columns: ``class`` (class id), ``count``; optional ``run``. One run: one bar per class (taxonomy order). Several
    runs: one stacked bar per run. Colours are fixed per class (:data:`CLASS_COLORS`), the legend shows
    :data:`CLASS_LEGENDS`; an unknown class is grey and labelled by its id. A ``label`` column, if any, is ignored
    (the labels here are the legend's).
    """
    alt = altair_module()
    require(df, ["class", "count"], "failure_breakdown")
    data = df.copy()
    if "run" not in data.columns:
        data["run"] = ""
    data = data.groupby(["run", "class"], as_index=False, sort=False)["count"].sum()
    data["class_label"] = [class_label(c) for c in data["class"]]
    totals = data.groupby("run")["count"].transform("sum")
    data["share"] = data["count"] / totals.where(totals > 0, 1)
    order_of = {c: i for i, c in enumerate(CLASS_COLORS)}
    data["order"] = [order_of.get(c, len(order_of)) for c in data["class"]]
    scale = class_scale(alt, data["class"].tolist())
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
            width="container", height=max(80, 30 * data["class"].nunique()), title=chart_title(alt, text, sub)
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
        .properties(width="container", height=max(80, 36 * len(runs)), title=chart_title(alt, text))
    )
