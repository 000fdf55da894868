"""The text and Markdown tables every report prints: :func:`cell` (one value as table text),
:func:`text_table` (aligned plain text) and :func:`markdown_table` (GitHub Markdown).

Importable from :mod:`diagnose.report` too, where the reports that use them live.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from diagnose.runtime.lazy import pandas as pd

# --------------------------------------------------------------------------------------------- cells and tables


def cell(v: Any) -> str:
    """A value as table text: floats with 4 decimals, NaN and None as an en dash."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned text table (numbers right-aligned)."""
    cells = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    numeric = _numeric(rows, columns)

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(list(columns)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def markdown_table(
    rows: Sequence[Mapping[str, Any]] | pd.DataFrame, columns: Sequence[str] | None = None
) -> str:
    """A GitHub Markdown table (numbers right-aligned; ``|`` and newlines in cells escaped)."""
    if isinstance(rows, pd.DataFrame):
        columns = list(columns or rows.columns)
        rows = rows[columns].to_dict(orient="records")
    columns = list(columns or (rows[0].keys() if rows else []))
    if not rows:
        return "_(none)_"
    numeric = _numeric(rows, columns)
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for r in rows:
        out.append(
            "| "
            + " | ".join(cell(r.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in columns)
            + " |"
        )
    return "\n".join(out)


def _numeric(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[bool]:
    """Per column: every row holds a number there (not a bool), so the column is right-aligned; False with no rows."""
    return [
        bool(rows) and all(isinstance(r.get(c), int | float) and not isinstance(r.get(c), bool) for r in rows)
        for c in columns
    ]


def records_text(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A DataFrame as the plain text table of the ``table`` format (``columns``: which, in order; default all)."""
    return text_table(
        frame.to_dict(orient="records"), list(frame.columns) if columns is None else list(columns)
    )
