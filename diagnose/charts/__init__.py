"""Pure Altair chart builders: a tidy DataFrame in, an ``alt.Chart`` (or layer/facet of charts) out.

No Streamlit here; the UI passes the result to ``st.altair_chart``. Each builder documents the columns it reads.
Colours are colour-blind-safe (Okabe-Ito) and fixed per meaning, so a failure class or a quality band has the same
colour on every page. Altair's 5,000-row limit is kept: builders aggregate in pandas (histograms) or expect sampled
data (the embedding map, see :mod:`diagnose.projection`).

One file per question a contributor brings:

- :mod:`~diagnose.charts.palette`: the colours, sizes and labels fixed per meaning (failure classes, quality bands,
  runs, map roles), :func:`class_label`. Start here to change a colour (a failure class's colour and legend are
  fields of its record in :mod:`diagnose.failures.classes`).
- :mod:`~diagnose.charts.metrics`: :func:`metrics_bar`, :func:`curve_over_k`, :func:`delta_chart`.
- :mod:`~diagnose.charts.failures`: :func:`failure_breakdown`, :func:`remedy_matrix_heatmap`.
- :mod:`~diagnose.charts.findings`: :func:`findings_bars` (what each ranked change recovers and breaks).
- :mod:`~diagnose.charts.maps`: :func:`embedding_map`, :func:`legend_strip`, the map's selection names and how
  Streamlit reads them.
- :mod:`~diagnose.charts.similarity`: :func:`similarity_histogram`.
- :mod:`~diagnose.charts.ann`: :func:`ann_frontier_chart` (quality against latency of approximate indexes).
- :mod:`~diagnose.charts.chunking`: :func:`chunking_frontier`.
- :mod:`~diagnose.charts.common`: what the builders share (lazy Altair import, column checks, titles, the row limit).

Every name below is importable from ``diagnose.charts`` itself::

    from diagnose import charts
    st.altair_chart(charts.metrics_bar(df, k=10))
"""

from __future__ import annotations

from diagnose.charts.ann import ann_frontier_chart
from diagnose.charts.chunking import chunking_frontier
from diagnose.charts.common import ALTAIR_MAX_ROWS
from diagnose.charts.failures import failure_breakdown, remedy_matrix_heatmap
from diagnose.charts.findings import findings_bars
from diagnose.charts.maps import MAP_SELECTION, MAP_ZOOM, embedding_map, legend_strip
from diagnose.charts.metrics import curve_over_k, delta_chart, metrics_bar
from diagnose.charts.palette import (
    BAND_COLORS,
    CHANGE_COLORS,
    CLASS_COLORS,
    CLASS_LEGENDS,
    EDGE_DASH,
    NO_CLASS_LABEL,
    OTHER_COLOR,
    OUTCOME_COLORS,
    ROLE_COLORS,
    ROLE_OPACITY,
    ROLE_SHAPES,
    ROLE_SIZES,
    RUN_PALETTE,
    class_label,
)
from diagnose.charts.similarity import similarity_histogram

__all__ = [
    "chunking_frontier",
    "findings_bars",
    "ALTAIR_MAX_ROWS",
    "BAND_COLORS",
    "CHANGE_COLORS",
    "CLASS_COLORS",
    "CLASS_LEGENDS",
    "EDGE_DASH",
    "MAP_SELECTION",
    "MAP_ZOOM",
    "NO_CLASS_LABEL",
    "OTHER_COLOR",
    "OUTCOME_COLORS",
    "ROLE_COLORS",
    "ROLE_OPACITY",
    "ROLE_SHAPES",
    "ROLE_SIZES",
    "RUN_PALETTE",
    "ann_frontier_chart",
    "class_label",
    "curve_over_k",
    "delta_chart",
    "embedding_map",
    "failure_breakdown",
    "legend_strip",
    "metrics_bar",
    "remedy_matrix_heatmap",
    "similarity_histogram",
]
