"""Quality bands: rules of thumb that read a metric value as poor, acceptable, good or excellent. Each family's
limits are its record's ``band`` (:data:`~diagnose.metrics.REGISTRY`, where the reasoning is written)."""

from __future__ import annotations

import math

from diagnose.metrics.names import MetricName, parse_metric

__all__ = ["BANDS", "quality_band"]

BANDS = ("poor", "acceptable", "good", "excellent")


def quality_band(metric: str | MetricName, value: float) -> str:
    """``"poor"``, ``"acceptable"``, ``"good"`` or ``"excellent"`` for a metric value (its family's ``band``
    ``(a, b, c)``): ``value < a`` poor, ``a <= value < b`` acceptable, ``b <= value < c`` good, ``value >= c``
    excellent. ``"n/a"`` for NaN and for ``judged@k`` / ``hole@k``, which measure the qrels' coverage of the run,
    not its quality. Raises :class:`DataError` for an unknown metric name.
    """
    band = parse_metric(metric).metric.band
    v = float(value)
    if math.isnan(v) or band is None:
        return "n/a"
    a, b, c = band
    return BANDS[int(v >= a) + int(v >= b) + int(v >= c)]
