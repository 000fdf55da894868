"""No None, nan or <NA> on screen (issue 23 item 3): every page table goes through diagnose.ui.tables.show, which
shows a missing value as "—". The helper is tested on frames with holes; the pages with AppTest on the demo (fake
keyword encoder), reading what each table displays (a Styler's display values where there is one)."""

from __future__ import annotations

import app_testing as app
import pandas as pd
import pytest
import streamlit as st

from diagnose.ui.navigation import PAGES
from diagnose.ui.tables import MISSING, without_holes

RAW_HOLES = {"None", "nan", "NaN", "<NA>", "NaT", "none"}


def test_text_and_number_holes_become_a_dash_and_the_rest_is_kept():
    frame = pd.DataFrame(
        {
            "name": ["a", None],
            "rank": pd.array([3, None], dtype="Int64"),
            "cos": [0.25, float("nan")],
            "full": [1.5, 2.0],
        }
    )
    config = {"cos": st.column_config.NumberColumn("cosine", format="%.2f", help="h")}
    shown, cfg = without_holes(frame, config)
    # row 0 keeps its values (3 as a whole number, 0.25 with the column's %.2f); "full" has no hole: numbers kept
    assert shown.values.tolist() == [["a", "3", "0.25", 1.5], [MISSING, MISSING, MISSING, 2.0]]
    assert cfg["cos"]["type_config"]["type"] == "text" and (cfg["cos"]["label"], cfg["cos"]["help"]) == (
        "cosine",
        "h",
    )
    assert (
        frame["cos"].isna().sum() == 1 and config["cos"]["type_config"]["type"] == "number"
    )  # inputs untouched


pytestmark = pytest.mark.usefixtures("keyword_encoder")


def _raw_holes(frame: pd.DataFrame) -> list:
    """Missing values Streamlit would draw as "None" (a missing number is drawn so even under a Styler's "—"), and
    texts that read as one."""
    return [(c, v) for c in frame.columns for v in frame[c] if _is_hole(v)]


def _is_hole(value) -> bool:
    if value is None or str(value).strip() in RAW_HOLES:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def test_app_no_page_table_shows_a_raw_missing_value():
    """Fails when any table of any page shows None / nan / <NA> (before: the remedy table's rows without a remedy,
    the Worst queries' run rank of a target not retrieved)."""
    at = app.demo_app()
    seen = 0
    for name in PAGES:
        app.open_page(at, name)
        for element in at.dataframe:
            bad = _raw_holes(element.value)
            assert not bad, f"page {name}: {bad[:5]}"
            seen += 1
    assert seen >= 10  # the check looked at the tables (the demo's pages draw more than ten)
