"""Findings: :func:`findings_bars`, what each ranked change recovers and breaks (:mod:`diagnose.whatif.findings`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.charts.common import altair_module, chart_title, require
from diagnose.charts.palette import CHANGE_COLORS
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def findings_bars(df: pd.DataFrame, *, unit: str = "failed queries", title: str | None = None) -> alt.Chart:
    """One row of two bars per measured change, in rank order: the failures it recovers (right, green) and the hits
    it breaks (left, drawn as a negative count, orange), each bar labelled with its count.

    Columns: ``action`` (the row's label, e.g. "1. Fix the ANN index"), ``recovered``, ``breaks`` (whole numbers;
    a change whose broken hits were not measured has ``breaks`` 0 and is said so in its sentence). ``unit``: what
    ``recovered`` counts (the x axis' title). Rows keep the frame's order (the findings' rank).
    """
    alt = altair_module()
    require(df, ["action", "recovered", "breaks"], "findings_bars")
    order = list(dict.fromkeys(df["action"]))
    rows = [
        {"action": r.action, "what": what, "count": int(n), "x": sign * int(n)}
        for r in df.itertuples()
        for what, n, sign in (("recovers", r.recovered, 1), ("breaks", r.breaks, -1))
    ]
    data = pd.DataFrame(rows, columns=["action", "what", "count", "x"])
    colors = {"recovers": CHANGE_COLORS["fixed"], "breaks": CHANGE_COLORS["broken"]}
    y = alt.Y("action:N", title=None, sort=order, axis=alt.Axis(labelLimit=320))
    color = alt.Color(
        "what:N",
        title=None,
        scale=alt.Scale(domain=list(colors), range=list(colors.values())),
        legend=alt.Legend(orient="top"),
    )
    tooltip = [
        alt.Tooltip("action:N", title="Change"),
        alt.Tooltip("what:N", title="What"),
        alt.Tooltip("count:Q", title="Count"),
    ]
    bars = alt.Chart().mark_bar().encode(y=y, x=alt.X("x:Q", title=f"hits broken (left), {unit} recovered (right)"),
                                         color=color, tooltip=tooltip)  # fmt: skip
    labels = (
        alt.Chart()
        .transform_filter("datum.count > 0")
        .mark_text(dx=4, align="left")
        .encode(y=y, x=alt.X("x:Q"), text="count:Q", detail="what:N")
    )
    labels_left = labels.transform_filter("datum.x < 0").mark_text(dx=-4, align="right")
    labels_right = labels.transform_filter("datum.x > 0")
    rule = alt.Chart().mark_rule(color="#666").encode(x=alt.datum(0))
    return alt.layer(bars, labels_right, labels_left, rule, data=data).properties(
        width="container",
        height=max(60, 30 * len(order)),
        title=chart_title(alt, title or "What each change recovers and breaks"),
    )
