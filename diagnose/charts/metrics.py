"""Metrics of runs: :func:`metrics_bar` (one value per run, quality bands, CIs), :func:`curve_over_k` (a metric over
cut-offs) and :func:`delta_chart` (per-query differences between two runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.charts.common import ALTAIR_MAX_ROWS, altair_module, chart_title, require
from diagnose.charts.palette import BAND_COLORS, CHANGE_COLORS, RUN_PALETTE
from diagnose.metrics import quality_band
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def metrics_bar(df: pd.DataFrame, *, k: int | None = None, title: str | None = None) -> alt.Chart:
    """Metric value per run (and baseline) at the chosen k, coloured by quality band, with CI error bars.

    Columns: ``run``, ``metric`` (e.g. "ndcg@10"), ``value``; optional ``ci_low``/``ci_high`` (drawn as error bars
    when present), ``band`` (poor/acceptable/good/excellent; computed with :func:`diagnose.metrics.quality_band`
    when absent), ``kind`` ("run"/"baseline"; a baseline is labelled "name (baseline)"). One panel per metric
    (rows) when there are several. The x axis is fixed to [0, 1].
    """
    alt = altair_module()
    require(df, ["run", "metric", "value"], "metrics_bar")
    data = _with_band_and_label(df)
    has_ci = {"ci_low", "ci_high"} <= set(data.columns)
    order = list(dict.fromkeys(data["label"]))
    layers = _metric_layers(alt, order, has_ci)
    metrics = list(dict.fromkeys(data["metric"]))
    text = title or (f"Metrics at k={k}" if k is not None else "Metrics")
    subtitle = "Bars: mean over the golden queries" + ("; lines: 95% bootstrap CI" if has_ci else "")
    chart = alt.layer(*layers, data=data)
    if len(metrics) == 1:
        return chart.properties(
            width="container",
            height=max(60, 28 * len(order)),
            title=chart_title(alt, f"{text}: {metrics[0]}", subtitle),
        )
    return (
        chart.properties(width=420, height=max(60, 28 * len(order)))
        .facet(
            row=alt.Row(
                "metric:N", title=None, sort=metrics, header=alt.Header(labelAngle=0, labelAlign="left")
            )
        )
        .properties(title=chart_title(alt, text, subtitle))
    )


def _metric_layers(alt, order: list[str], has_ci: bool) -> list:
    """The bars coloured by quality band, the CI rules (``has_ci``) and the values written at the bars' ends, on
    one y axis of the runs' labels in ``order``."""
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
    return layers


def _with_band_and_label(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with ``band`` (:func:`diagnose.metrics.quality_band` when absent; "n/a" for a metric without
    bands) and ``label`` (the run, "name (baseline)" for a baseline)."""
    data = df.copy()
    if "band" not in data.columns:

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
    return data


def curve_over_k(
    df: pd.DataFrame, *, metric: str | None = None, k: int | None = None, title: str | None = None
) -> alt.Chart:
    """A metric over cut-offs k, one line per run; a dashed rule marks the chosen ``k``.

    Columns: ``run``, ``metric`` (e.g. "recall@k" or "recall"), ``k`` (int), ``value``. With several metrics in
    ``df`` (and no ``metric`` given) one panel per metric. The k axis is logarithmic when k spans a factor >= 10
    (1..100 would otherwise crush the interesting small k), ticks at the k values present.
    """
    alt = altair_module()
    require(df, ["run", "metric", "k", "value"], "curve_over_k")
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
    return chart.properties(width="container", height=260, title=chart_title(alt, text))


def _drawn_deltas(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows :func:`delta_chart` draws, sorted by ``delta`` and numbered (``position``), with ``change`` derived
    when absent, and the notes on what was left out to stay under :data:`ALTAIR_MAX_ROWS` (the unchanged queries
    first, then all but the largest losses and gains)."""
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
    return data, notes


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
    :func:`diagnose.whatif.compare.per_query_deltas` gives it; else derived from the sign of ``delta``), ``reference``,
    ``other``. Green = fixed/better, red = worse/broken (Okabe-Ito green/vermillion, distinguishable with the common
    colour-vision deficiencies), grey = same. Above 5,000 queries the unchanged ones are left out of the drawing (the
    subtitle says how many) so the chart stays under Altair's row limit; beyond that only the 2,500 largest gains and
    losses are drawn, again said in the subtitle.
    """
    alt = altair_module()
    require(df, ["query_id", "delta"], "delta_chart")
    data, notes = _drawn_deltas(df)
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
        width="container", height=260, title=chart_title(alt, title or "Per-query differences", sub)
    )
