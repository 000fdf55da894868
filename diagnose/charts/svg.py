"""A chart as inline SVG, for a file that opens without a server or the network (:mod:`diagnose.report.html`).

:func:`to_svg` renders an Altair chart with vl-convert (the Vega-Lite compiler and Vega's renderer in one wheel, no
browser; the ``[report]`` extra), offline: the data are inline in the spec, the text is drawn with the system's
fonts, nothing is fetched. A ``"container"`` width (the app's charts fill their column) has no container in a file:
it becomes ``width`` pixels. The namespace attributes are dropped (an inline ``<svg>`` in HTML needs none), so the
SVG holds no URL.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.runtime.extras import needs

#: the width, in pixels, of a chart whose builder asks for its container's width
SVG_WIDTH = 640

_NAMESPACES = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')


def _fixed_width(spec: Any, width: int) -> Any:
    if isinstance(spec, dict):
        return {
            k: width if k == "width" and v == "container" else _fixed_width(v, width) for k, v in spec.items()
        }
    if isinstance(spec, list):
        return [_fixed_width(v, width) for v in spec]
    return spec


def to_svg(chart: Any, *, width: int = SVG_WIDTH) -> str:
    """The chart (an Altair chart, or its ``to_dict()`` Vega-Lite spec) as one ``<svg>`` element, offline."""
    with needs("A chart in a report"):
        import vl_convert

    spec = chart if isinstance(chart, dict) else chart.to_dict()
    svg = vl_convert.vegalite_to_svg(_fixed_width(spec, width))
    return _NAMESPACES.sub("", svg, count=0).strip()
