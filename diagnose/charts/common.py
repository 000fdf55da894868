"""What every chart builder shares: the lazy Altair import, the column check, titles, Altair's row limit."""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.runtime.lazy import pandas as pd

ALTAIR_MAX_ROWS = 5000


def altair_module():
    import altair as alt

    return alt


def require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs columns {list(columns)}; missing {missing} (got {list(df.columns)})")


def chart_title(alt, text: str, subtitle: str | Sequence[str] | None = None):
    if subtitle:
        return alt.TitleParams(text=text, subtitle=subtitle, anchor="start")
    return alt.TitleParams(text=text, anchor="start")
