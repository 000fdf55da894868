"""How the pages draw a table: ``st.dataframe`` without the index, as wide as the page, a missing value shown as
"—" (never None, nan or <NA>: issue 23), its key column pinned (a table wider than the page scrolls sideways with
the key column kept in view: the first column unless the page names others, :func:`show`'s ``pin``).

Streamlit draws a missing number as "None" and ignores a Styler's text in a number column that has a format, so a
column with holes is drawn as text: its numbers formatted as the column's ``format`` says (else whole numbers
without decimals, others to 3 decimals), its holes "—", its column_config turned into a text column with the same
label, help and width (it then sorts as text). Columns without holes keep their numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

MISSING = "—"


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def cell(value: Any, fmt: str | None = None) -> str:
    """A value of a column with holes as the page shows it."""
    if _missing(value):
        return MISSING
    if fmt and "%" in fmt:
        try:
            return fmt % value
        except (TypeError, ValueError):
            pass
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.3f}"
    return str(value)


def without_holes(
    data: Any, column_config: dict[str, Any] | None = None
) -> tuple[Any, dict[str, Any] | None]:
    """``(data, column_config)`` with every missing value of a DataFrame shown as "—" (see the module docstring).
    Anything else (a page's own Styler formats its own columns: give it ``na_rep=MISSING``) passes through."""
    if not isinstance(data, pd.DataFrame) or data.empty:
        return data, column_config
    holes = [c for c in data.columns if data[c].isna().any()]
    if not holes:
        return data, column_config
    data = data.copy()
    config = dict(column_config or {})
    for c in holes:
        cfg = config.get(c)
        cfg = dict(cfg) if isinstance(cfg, dict) else ({"label": cfg} if isinstance(cfg, str) else {})
        kind = (cfg.get("type_config") or {}).get("type")
        if kind not in (None, "number", "text"):
            data[c] = (
                data[c].astype(object).where(data[c].notna(), None)
            )  # a chart/progress column: left empty
            continue
        data[c] = [cell(v, (cfg.get("type_config") or {}).get("format")) for v in data[c]]
        if kind == "number" or c in config:
            config[c] = st.column_config.TextColumn(
                cfg.get("label"), help=cfg.get("help"), width=cfg.get("width")
            )
    return data, (config or column_config)


def pinned(
    data: Any, column_config: dict[str, Any] | None, pin: Sequence[str] | None
) -> dict[str, Any] | None:
    """``column_config`` with the ``pin`` columns of a DataFrame (or a Styler's) pinned (``pin`` None: its first
    column); a column's own config (label, help, width, type) is kept."""
    frame = data.data if isinstance(data, Styler) else data
    if not isinstance(frame, pd.DataFrame) or not len(frame.columns):
        return column_config
    names = [frame.columns[0]] if pin is None else [c for c in pin if c in frame.columns]
    if not names:
        return column_config
    config = dict(column_config or {})
    for c in names:
        cfg = config.get(c)
        cfg = dict(cfg) if isinstance(cfg, dict) else {"label": cfg} if isinstance(cfg, str) else {}
        config[c] = {**cfg, "pinned": True}
    return config


def show(data: Any, *, pin: Sequence[str] | None = None, **options: Any) -> Any:
    """``st.dataframe(data, hide_index=True, width="stretch", **options)`` with missing values shown as "—" and the
    ``pin`` columns pinned (None: the first column; ``()``: none); ``options`` are st.dataframe's (``key``,
    ``column_config``, ``height``, ``on_select``, ...). Returns what st.dataframe returns (the selection with
    ``on_select``)."""
    data, config = without_holes(data, options.pop("column_config", None))
    config = pinned(data, config, pin)
    if config is not None:
        options["column_config"] = config
    return st.dataframe(data, hide_index=True, width="stretch", **options)


def evidence_columns() -> dict[str, Any]:
    """The column_config of a missed pair's evidence columns (Worst queries' table, the inspector's other targets):
    ``cosine``, ``overlap``, ``run rank``, ``dense rank``, ``BM25 rank`` and their ``(worst)`` tie ends."""
    number = st.column_config.NumberColumn
    return {
        "cosine": number("cosine", format="%.3f", help="cos(query, target)"),
        "overlap": st.column_config.ProgressColumn(
            "term overlap",
            min_value=0.0,
            max_value=1.0,
            format="percent",
            help="share of query terms in the target",
        ),
        "run rank": number(help=f"the target's rank in the run ({MISSING}: not retrieved)"),
        "dense rank": number(
            help="exact dense rank over the whole corpus: the best rank of the target's tie group"
        ),
        "dense rank (worst)": number(help="the worst rank of the target's dense tie group"),
        "BM25 rank": number(
            help=f"BM25 rank over the whole corpus, best of its tie group; {MISSING}: BM25 score 0 (no query term "
            "in it)"
        ),
        "BM25 rank (worst)": number(help="the worst rank of the target's BM25 tie group"),
    }
