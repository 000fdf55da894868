"""Failure classes: :func:`failure_breakdown`, how many missed (query, relevant document) pairs fall in each class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.charts.common import altair_module, chart_title, require
from diagnose.charts.palette import CLASS_COLORS, class_label, class_scale
from diagnose.runtime.lazy import pandas as pd

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


def remedy_matrix_heatmap(
    df: pd.DataFrame, *, unit: str = "failed queries", title: str | None = None
) -> alt.Chart:
    """The remedy matrix (:mod:`diagnose.whatif.matrix`) as a heat map: failure classes (rows, taxonomy order) x
    remedies (columns, in the order given), colour = share of the class's ``unit`` the remedy recovers (0 to 1), text
    = ``recovered/failures``; each class's own remedy is outlined (the diagonal a well-separated matrix lights up).

    Columns: ``class`` (id), ``remedy`` (id), ``failures``, ``recovered``, ``own`` (bool) (:meth:`RemedyMatrix.frame`).
    """
    alt = altair_module()
    require(df, ["class", "remedy", "failures", "recovered", "own"], "remedy_matrix_heatmap")
    data = df.copy()
    data["share"] = data["recovered"] / data["failures"].where(data["failures"] > 0, 1)
    data["class_label"] = [class_label(c) for c in data["class"]]
    data["cell"] = [
        f"{r}/{n}" + (" ★" if o else "")
        for r, n, o in zip(data["recovered"], data["failures"], data["own"], strict=True)
    ]
    data["own"] = data["own"].astype(bool)
    order_of = {c: i for i, c in enumerate(CLASS_COLORS)}
    ids = sorted(dict.fromkeys(data["class"]), key=lambda c: order_of.get(c, len(order_of)))
    rows = [class_label(c) for c in ids]
    cols = list(dict.fromkeys(data["remedy"]))
    x = alt.X("remedy:N", title="Remedy", sort=cols, axis=alt.Axis(orient="top", labelAngle=0))
    y = alt.Y("class_label:N", title=None, sort=rows, axis=alt.Axis(labelLimit=360))
    tooltip = [
        alt.Tooltip("class_label:N", title="Class"),
        alt.Tooltip("remedy:N", title="Remedy"),
        alt.Tooltip("recovered:Q", title=f"Recovered ({unit})"),
        alt.Tooltip("failures:Q", title=f"Of ({unit})"),
        alt.Tooltip("share:Q", title="Share", format=".0%"),
        alt.Tooltip("own:N", title="The class's own remedy"),
    ]
    base = alt.Chart().encode(x=x, y=y)
    heat = base.mark_rect().encode(
        color=alt.Color(
            "share:Q",
            title="Share recovered",
            scale=alt.Scale(domain=[0, 1], scheme="blues"),
            legend=alt.Legend(format=".0%", gradientLength=max(40, 36 * len(rows) - 16)),
        ),
        tooltip=tooltip,
    )
    own = base.mark_rect(filled=False, stroke="#D55E00", strokeWidth=3).transform_filter("datum.own")
    text = base.mark_text(fontSize=12).encode(
        text="cell:N", color=alt.condition("datum.share > 0.55", alt.value("white"), alt.value("black"))
    )
    sub = f"Share of each class's {unit} each remedy recovers at k; outlined and ★: the class's own remedy"
    return alt.layer(heat, own, text, data=data).properties(
        width="container",
        height=max(80, 36 * len(rows)),
        title=chart_title(alt, title or "Does the class predict the fix? Every remedy on every class", sub),
    )
