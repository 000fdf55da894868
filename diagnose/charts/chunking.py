"""Which chunking: :func:`chunking_frontier`, quality against the tokens sent to the generator, the Pareto front
marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.charts.common import altair_module, chart_title, require
from diagnose.charts.palette import OTHER_COLOR, RUN_PALETTE
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def chunking_frontier(
    df: pd.DataFrame, *, metric: str, tokens: str, title: str | None = None
) -> alt.LayerChart:
    """One point per chunking: ``tokens`` (x, tokens sent at k) against ``metric`` (y), labelled by ``chunking``;
    points with ``pareto`` true are filled and joined by the front line (sorted by tokens), the others hollow.

    Columns: ``chunking`` (label), ``metric``, ``tokens``, ``pareto`` (bool); optional ``current`` (bool: the
    documents as they are, drawn as a square). Chunkings at the same point share one label."""
    alt = altair_module()
    require(df, ["chunking", metric, tokens, "pareto"], "chunking_frontier")
    data = df[["chunking", metric, tokens, "pareto"]].copy()
    current = df["current"].astype(bool) if "current" in df else pd.Series(False, index=df.index)
    data["kind"] = current.map({True: "documents as they are", False: "re-chunked (size/overlap)"})
    # chunkings at the same point (e.g. sizes every document fits in) share one label
    data["label"] = data.groupby([tokens, metric])["chunking"].transform(lambda s: ", ".join(s))
    data["front"] = data["pareto"].map({True: "on the Pareto front", False: "dominated"})
    x = alt.X(
        f"{tokens}:Q", title=f"{tokens} (word tokens sent to the generator)", scale=alt.Scale(zero=False)
    )
    y = alt.Y(f"{metric}:Q", title=metric, scale=alt.Scale(zero=False))
    tooltip = [
        "chunking:N",
        alt.Tooltip(f"{metric}:Q", format=".4f"),
        alt.Tooltip(f"{tokens}:Q", format=".0f"),
    ]
    front = (
        alt.Chart(data[data["pareto"]].sort_values(tokens))
        .mark_line(color=RUN_PALETTE[0], strokeDash=[4, 3])
        .encode(x=x, y=y, order=alt.Order(f"{tokens}:Q"))
    )
    points = (
        alt.Chart(data)
        .mark_point(size=140, strokeWidth=2)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape(
                "kind:N",
                scale=alt.Scale(
                    domain=["documents as they are", "re-chunked (size/overlap)"], range=["square", "circle"]
                ),
                legend=alt.Legend(title=None),
            ),
            color=alt.Color(
                "front:N",
                scale=alt.Scale(
                    domain=["on the Pareto front", "dominated"], range=[RUN_PALETTE[0], OTHER_COLOR]
                ),
                legend=alt.Legend(title=None),
            ),
            fill=alt.Fill(
                "front:N",
                scale=alt.Scale(
                    domain=["on the Pareto front", "dominated"], range=[RUN_PALETTE[0], "transparent"]
                ),
                legend=None,
            ),
            tooltip=tooltip,
        )
    )
    labels = (
        alt.Chart(data.drop_duplicates("label"))
        .mark_text(align="left", dx=9, dy=-8)
        .encode(x=x, y=y, text="label:N")
    )
    subtitle = "Up and left is better; the dashed line joins the chunkings no other beats on both."
    return alt.layer(front, points, labels).properties(
        width="container",
        height=360,
        title=chart_title(alt, title or f"{metric} against tokens sent", subtitle),
    )
