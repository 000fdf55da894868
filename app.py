"""Streamlit entry point: `streamlit run app.py`. A small router over the pages in diagnose/ui/pages.

The sidebar (data, model, k, failure definition) and the loading live in diagnose.ui.state.setup, which runs here on
every page so its widgets keep their values across pages. Set DIAGNOSE_ENCODER=keyword to use the fast fake encoder.
"""

from __future__ import annotations

import streamlit as st

from diagnose.ui import state

# A local icon file: an emoji or a material icon as page_icon makes the browser fetch it from an outside host.
st.set_page_config(page_title="diagnose: why your retriever fails", page_icon=state.ICON, layout="wide")

page = st.navigation(
    [
        st.Page(path, title=title, icon=icon, default=(name == "overview"))
        for name, (path, title, icon) in state.PAGES.items()
    ]
)
state.setup(page)
state.run_page(page)
