"""How the pages draw a table: ``st.dataframe`` without the index, as wide as the page."""

from __future__ import annotations

from typing import Any

import streamlit as st


def show(data: Any, **options: Any) -> Any:
    """``st.dataframe(data, hide_index=True, width="stretch", **options)``; ``options`` are st.dataframe's
    (``key``, ``column_config``, ``height``, ``on_select``, ...). Returns what st.dataframe returns (the selection
    with ``on_select``)."""
    return st.dataframe(data, hide_index=True, width="stretch", **options)
