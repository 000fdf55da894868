"""Download buttons (sidebar): per-query metrics and the diagnosis as CSV and JSON, and the Markdown report.

The tables are computed (cached) while the page is drawn; the files themselves are serialised only when a
button is clicked (``data`` is a callable). Streamlit calls those callables outside the script run, so they only
touch values captured here, never ``st.session_state`` or a cached function.
"""

from __future__ import annotations

import streamlit as st

from diagnose.cache import slug
from diagnose.ui import report, sources
from diagnose.ui.text import escape_md


def report_markdown(b, diagnosis=None, metrics=None, page: str = "", query_id: str | None = None) -> str:
    """The Markdown report of the current state of the app."""
    s = b.settings
    return report.markdown_report(
        data_label=s.spec.label,
        data_lines=sources.describe(s.spec),
        model=b.encoder_name,
        k=b.k,
        mode=b.mode,
        metrics=metrics if metrics is not None else b.metrics_table(),
        diagnosis=diagnosis if diagnosis is not None else b.diagnosis(),
        validation=b.ds.report,
        page=page,
        query_id=query_id,
    )


def sidebar_downloads(b) -> None:
    k = b.k
    run = b.selected_run
    evs = b.evaluations()
    diag = b.diagnosis(run)
    metrics = b.metrics_table()
    page = st.session_state.get("_page_title", "")
    qid = st.session_state.get("query_id")
    with st.sidebar.expander("Downloads", icon=":material/download:"):
        st.download_button(
            "Per-query metrics (CSV)",
            lambda: report.per_query_frame(evs, k).to_csv(index=False, float_format="%.6f"),
            file_name=f"per_query_k{k}.csv",
            mime="text/csv",
            on_click="ignore",
            key="dl_pq_csv",
        )
        st.download_button(
            "Per-query metrics (JSON)",
            lambda: report.per_query_json(evs, k),
            file_name=f"per_query_k{k}.json",
            mime="application/json",
            on_click="ignore",
            key="dl_pq_json",
        )
        st.download_button(
            f"Diagnosis of {escape_md(run)} (CSV)",
            lambda: diag.frame().to_csv(index=False, float_format="%.6f"),
            file_name=f"failures_{slug(run)}_k{k}.csv",
            mime="text/csv",
            on_click="ignore",
            key="dl_diag_csv",
        )
        st.download_button(
            f"Diagnosis of {escape_md(run)} (JSON)",
            lambda: report.diagnosis_json(diag),
            file_name=f"failures_{slug(run)}_k{k}.json",
            mime="application/json",
            on_click="ignore",
            key="dl_diag_json",
        )
        st.download_button(
            "Report (Markdown)",
            lambda: report_markdown(b, diag, metrics, page, qid),
            file_name=f"diagnose_report_{slug(run)}_k{k}.md",
            mime="text/markdown",
            on_click="ignore",
            key="dl_report",
        )
