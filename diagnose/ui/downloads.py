"""Download buttons (sidebar): per-query metrics and the diagnosis as CSV and JSON, the Markdown report, and the report
a team can share (one self-contained HTML file, ``diagnose report``'s).

The files have the schema of the CLI (:mod:`diagnose.report`): the per-query JSON is ``diagnose evaluate --format
json --per-query`` at the chosen k, the diagnosis JSON is ``diagnose failures --format json``. The tables are
computed while the page is drawn; the files themselves are serialised only when a button is clicked (``data`` is a
callable). Streamlit calls those callables outside the script run, so they only touch values captured here, never
``st.session_state``.
"""

from __future__ import annotations

import streamlit as st

from diagnose import report
from diagnose.cache import slug
from diagnose.report import failures as report_failures
from diagnose.report.html import to_html
from diagnose.runtime.extras import MissingExtra
from diagnose.ui import finetune_section, sources
from diagnose.ui.text import escape_md


def report_markdown(
    b, diagnosis=None, metrics=None, page: str = "", query_id: str | None = None, finetune=None
) -> str:
    """The Markdown report of the current state of the app (without the diagnosis while the vectors are computed);
    ``finetune``: the analysis' fine-tuning result, the remedy matrix's ``finetune`` column (captured by the caller)."""
    s = b.settings
    remedies = b.analysis.remedies(diagnosis.run, k=b.k, failure=b.mode) if diagnosis is not None else None
    matrix = (
        b.analysis.remedy_matrix(diagnosis.run, k=b.k, failure=b.mode, finetune=finetune)
        if diagnosis is not None
        else None
    )
    return report.markdown_report(
        data_label=s.spec.label,
        data_lines=sources.describe(s.spec),
        model=b.encoder_name,
        k=b.k,
        mode=b.mode,
        metrics=metrics if metrics is not None else b.metrics_table(),
        diagnosis=diagnosis,
        validation=b.ds.report,
        page=page,
        query_id=query_id,
        remedies=remedies,
        remedy_matrix=matrix,
        advice=b.analysis.advice(diagnosis.run, k=b.k, failure=b.mode) if diagnosis is not None else None,
    )


def report_html(b, run: str) -> str:
    """The report a team can share of ``run`` (``diagnose report``'s HTML file) at the app's k and failure
    definition, read from the analysis; without its charts when the ``[report]`` extra is missing."""
    s, a = b.settings, b.analysis
    kwargs = dict(k=b.k, failure=b.mode, data_label=s.spec.label, data_lines=sources.describe(s.spec))
    try:
        return to_html(a.shareable_report(run, **kwargs))
    except MissingExtra:
        return to_html(a.shareable_report(run, charts=False, **kwargs))


def sidebar_downloads(b) -> None:
    """The sidebar's Downloads: per-query metrics, the diagnosis of the selected run (once ready), the report."""
    k = b.k
    run = b.selected_run
    names = b.metric_names((k,))
    evs = b.evaluations((k,))
    diag = b.diagnosis(run) if b.ready else None
    metrics = b.metrics_table()
    files = _per_query_files(b, names, evs)
    if diag is not None:
        files.append(
            (
                "Report to share (HTML)",
                lambda: report_html(b, run),
                f"diagnose_report_{slug(run)}_k{k}.html",
                "text/html",
                "dl_report_html",
            )
        )
        files += _diagnosis_files(b, run, diag)
    page = st.session_state.get("_page_title", "")
    qid = st.session_state.get("query_id")
    tuned = finetune_section.tuned(b)
    files.append(
        (
            "Report (Markdown)",
            lambda: report_markdown(b, diag, metrics, page, qid, tuned),
            f"diagnose_report_{slug(run)}_k{k}.md",
            "text/markdown",
            "dl_report",
        )
    )
    with st.sidebar.expander("Downloads", icon=":material/download:"):
        for label, data, name, mime, key in files:
            st.download_button(label, data, file_name=name, mime=mime, on_click="ignore", key=key)


def _per_query_files(b, names, evs) -> list[tuple]:
    """The per-query metrics at the chosen k as CSV and JSON (``diagnose evaluate --per-query``'s schema)."""
    k = b.k
    scores = report.EvaluationReport(
        metrics=names,
        ks=[k],
        evaluations=evs,
        reference=b.run_names[0],
        validation=b.ds.report,
        extra_columns=b.analysis.latency(),
    )
    return [
        (
            "Per-query metrics (CSV)",
            lambda: scores.to_csv(per_query=True),
            f"per_query_k{k}.csv",
            "text/csv",
            "dl_pq_csv",
        ),
        (
            "Per-query metrics (JSON)",
            lambda: scores.to_json(per_query=True),
            f"per_query_k{k}.json",
            "application/json",
            "dl_pq_json",
        ),
    ]


def _diagnosis_files(b, run: str, diag) -> list[tuple]:
    """The diagnosis of ``run`` as CSV and JSON (``diagnose failures``' schema, with label noise and hubness)."""
    k, analysis = b.k, b.analysis

    def diagnosis_json() -> str:
        noise = analysis.label_noise(run, k=k)
        hubs = analysis.hubness(run, k=k)
        return report.dumps(
            report_failures.failures_dict(diag, label_noise=noise, hubness=hubs, validation=b.ds.report)
        )

    return [
        (
            f"Diagnosis of {escape_md(run)} (CSV)",
            lambda: diag.frame().to_csv(index=False, float_format="%.6f"),
            f"failures_{slug(run)}_k{k}.csv",
            "text/csv",
            "dl_diag_csv",
        ),
        (
            f"Diagnosis of {escape_md(run)} (JSON)",
            diagnosis_json,
            f"failures_{slug(run)}_k{k}.json",
            "application/json",
            "dl_diag_json",
        ),
    ]
