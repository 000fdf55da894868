"""How a command's result becomes text: each command builds an :class:`Output` (one renderer per format it offers)
and :func:`emit` prints the one ``--format`` asked for, so every format is written the same way in every command
(JSON through :func:`diagnose.report.dumps`, CSV tables with 6 decimals and no index), as sqlite-utils'
``output_rows`` does for its commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from diagnose.report import dumps
from diagnose.report.tables import records_text
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.terminal import terminal_safe


@dataclass(frozen=True)
class Output:
    """A command's result in the formats it prints; each renderer is called only for the format asked for.

    ``table``: the text for people. ``json``: the payload (a dict, written with :func:`~diagnose.report.dumps`).
    ``csv``: a table (a DataFrame, written without its index, floats with 6 decimals) or CSV text as is.
    ``markdown``: Markdown text. A format a command does not offer is None (its parser does not offer it)."""

    table: Callable[[], str]
    json: Callable[[], Any]
    csv: Callable[[], pd.DataFrame | str] | None = None
    markdown: Callable[[], str] | None = None


def emit(result: Output, fmt: str) -> None:
    """Print ``result`` in ``fmt`` (``table``, ``json``, ``csv`` or ``markdown``) on standard output, through
    :func:`say` (JSON escapes control characters itself)."""
    if fmt == "json":
        print(dumps(result.json()))
    elif fmt == "csv" and result.csv is not None:
        rows = result.csv()
        say(rows if isinstance(rows, str) else rows.to_csv(index=False, float_format="%.6f"), end="")
    elif fmt == "markdown" and result.markdown is not None:
        say(result.markdown())
    else:
        say(result.table())


def say(text: str = "", *, err: bool = False, end: str = "\n") -> None:
    """The one way the CLI writes text that may hold data (tables, errors, warnings, notes): on standard output, or
    standard error with ``err``, flushed, its control characters escaped (:func:`~diagnose.runtime.terminal.terminal_safe`)
    so that no byte of the data acts on the terminal."""
    stream = sys.stderr if err else sys.stdout
    stream.write(terminal_safe(text) + end)
    stream.flush()


def frame_output(frame: pd.DataFrame, payload: Callable[[], Mapping[str, Any]]) -> Output:
    """The output of a command whose result is one table: its text, ``payload`` as JSON, the table as CSV."""
    return Output(table=lambda: records_text(frame), json=payload, csv=lambda: frame)
