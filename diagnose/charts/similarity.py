"""Similarity of queries to their relevant documents: :func:`similarity_histogram`, hits vs misses, with the seed and
calibrated thresholds."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from diagnose import defaults
from diagnose.charts.common import altair_module, chart_title, require
from diagnose.charts.palette import OTHER_COLOR, OUTCOME_COLORS
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


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


def _calibrated(
    calibrated_threshold: float | Mapping[str, float] | None, models: Sequence[str]
) -> dict[str, float]:
    """Model -> calibrated threshold: one value for every model, or the given ones (NaN and None left out)."""
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
    return cal


def _histogram_bars(alt, outcomes: Sequence[str]):
    """The binned counts, hits and misses overlaid (not stacked), from the rows of layer ``value``."""
    x = alt.X("bin_start:Q", bin="binned", title="cosine(query, relevant document)")
    return (
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


def similarity_histogram(
    df: pd.DataFrame,
    *,
    seed_threshold: float = defaults.SEED_COSINE,
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
    alt = altair_module()
    require(df, ["cosine", "outcome"], "similarity_histogram")
    data = df.copy()
    if "model" not in data.columns:
        data["model"] = "model"
    models = list(dict.fromkeys(data["model"].astype(str)))
    data["model"] = data["model"].astype(str)
    cal = _calibrated(calibrated_threshold, models)
    hist = _histogram_rows(data, bins, [float(seed_threshold), *cal.values()])
    hist["_layer"] = "value"
    full = pd.concat([hist, pd.DataFrame(_threshold_rows(models, seed_threshold, cal))], ignore_index=True)
    outcomes = list(OUTCOME_COLORS) + sorted(set(hist["outcome"]) - set(OUTCOME_COLORS))
    layers = [_histogram_bars(alt, outcomes), *_threshold_layers(alt, with_calibrated=bool(cal))]
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
            .properties(title=chart_title(alt, text, sub))
        )
    return chart.properties(
        width="container", height=280, title=chart_title(alt, text, [sub, f"Model {models[0]}"])
    )


def _threshold_rows(models: Sequence[str], seed_threshold: float, cal: Mapping[str, float]) -> list[dict]:
    """The rows of layers ``seed`` (every model) and ``calibrated`` (the models in ``cal``): the rules' positions."""
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
    return rules


def _threshold_layers(alt, *, with_calibrated: bool) -> list:
    """A rule and its label per threshold: the seed (dark, dashed), then the calibrated one (pink) when any."""
    layers = []
    for kind, colour, dash, dy in (("seed", "#333333", [6, 4], 10), ("calibrated", "#CC79A7", [1, 0], 26)):
        if kind == "calibrated" and not with_calibrated:
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
    return layers
