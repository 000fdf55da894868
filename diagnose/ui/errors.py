"""How the app shows a user's mistake: a message, escaped (user text is never rendered as Markdown, links or
images), never a traceback."""

from __future__ import annotations

import streamlit as st

from diagnose.runtime.memory import is_out_of_memory, out_of_memory
from diagnose.ui.text import escape_md


def show_error(e: BaseException, prefix: str = "") -> None:
    """An input problem as a message: user text is escaped (never rendered as Markdown, links or images). Running
    out of memory is one too: how much the step needed and how much the machine allowed."""
    if is_out_of_memory(e) and not str(e).startswith("out of memory"):
        e = out_of_memory(e)
    st.error(escape_md(prefix + str(e)), icon=":material/error:")
