"""The app's pages: their titles, icons and files, the link to a page, and opening a query in the inspector.

A new page is a file ``diagnose/ui/pages/NAME.py`` and a line in :data:`_PAGE_TITLES`; ``app.py`` builds the
navigation from :data:`PAGES`.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from diagnose.data import DataError
from diagnose.runtime.memory import is_out_of_memory
from diagnose.ui.errors import show_error

# Page name -> (title, icon); its file is diagnose/ui/pages/<name>.py.
_PAGE_TITLES: dict[str, tuple[str, str]] = {
    "overview": ("Overview", ":material/dashboard:"),
    "worst": ("Worst queries", ":material/format_list_numbered:"),
    "inspector": ("Query inspector", ":material/search:"),
    "map": ("Embedding map", ":material/scatter_plot:"),
    "similarity": ("Similarity", ":material/bar_chart:"),
    "compare": ("Compare runs", ":material/compare_arrows:"),
    "models": ("Model choice", ":material/model_training:"),
    "ann": ("ANN index", ":material/speed:"),
    "chunking": ("Which chunking", ":material/view_agenda:"),
    "golden": ("Golden set", ":material/rule:"),
    "judge": ("Judge", ":material/gavel:"),
    "data": ("Data", ":material/dataset:"),
}
# (file, title, icon) of each page; files are relative to app.py (st.Page / st.switch_page / AppTest.switch_page all
# take these paths).
PAGES: dict[str, tuple[str, str, str]] = {
    name: (f"diagnose/ui/pages/{name}.py", title, icon) for name, (title, icon) in _PAGE_TITLES.items()
}


def page_path(name: str) -> str:
    return PAGES[name][0]


WITHOUT_GOLDEN_SET = ("Judge", "Data")  # the pages that work before there is a golden set


def run_page(page: Any) -> None:
    """Run the chosen page; an input problem it runs into is shown as a message, never as a traceback."""
    try:
        page.run()
    except DataError as e:
        show_error(e)
    except Exception as e:  # noqa: BLE001 - out of memory is a message, anything else stays a bug
        if not is_out_of_memory(e):
            raise
        show_error(e)


def open_query(query_id: str, run: str | None = None) -> None:
    """Remember the query (and the run to diagnose it in, when given) and open it in the inspector.

    The sidebar's run picker already exists in this script run, so a new run is handed over through
    ``_pending_run`` and applied by :func:`setup` before the picker is drawn again."""
    st.session_state["query_id"] = query_id
    if run is not None and run != st.session_state.get("run"):
        st.session_state["_pending_run"] = run
    st.switch_page(page_path("inspector"))
