"""The readers' tests share these: the fixture data set (tests/fixtures, the same small data in every format, see
make_fixtures.py there), where the trec_eval reference data lives, and three small helpers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from diagnose.data import ValidationReport

FIX = Path(__file__).resolve().parent / "fixtures"


# q1: d1 0.5, d2 0.5, d3 0.7 -> d3 first (0.7), then the 0.5 tie broken by doc id descending: d2, d1
# q2: 007 1.2, d3 0.9, d1 -0.1 -> 007, d3, d1
RUN_ORDER = {"q1": ["d3", "d2", "d1"], "q2": ["007", "d3", "d1"]}


def records(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return sorted(df[cols].itertuples(index=False, name=None))


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def codes(report: ValidationReport) -> dict[str, int]:
    return {p.code: p.count for p in report.problems}
