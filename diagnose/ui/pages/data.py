"""Data: the validation report and the statistics of the data set."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose.ui import sources, state, tables
from diagnose.ui.text import escape_md

st.title("Data")
settings: state.Settings | None = st.session_state.get("_settings")
b = st.session_state.get("_bundle")
ds = b.ds if b is not None else st.session_state.get("_dataset")
if ds is None or settings is None or settings.spec is None:
    st.info("The data could not be loaded; the problem is shown above. Fix it in the sidebar.")
    st.stop()
runs = b.runs if b is not None else ds.runs
kinds = b.kinds if b is not None else dict.fromkeys(ds.runs, "your run")

st.markdown(f"**{escape_md(settings.spec.label)}**")
st.code("\n".join(sources.describe(settings.spec)), language=None)

st.subheader("Validation report")
problems = list(ds.report)
if not problems:
    st.success("No problems found in the input.")
else:
    n_err = sum(p.severity == "error" for p in problems)
    n_warn = sum(p.severity == "warning" for p in problems)
    n_info = len(problems) - n_err - n_warn
    st.caption(f"{n_err} errors, {n_warn} warnings, {n_info} notes. Nothing was dropped without a line here.")
    for p in problems:
        where = f"{p.file}: " if p.file else ""
        msg = f"**{escape_md(p.code)}** ({p.count}x): {escape_md(where + p.message)}"
        if p.examples:
            msg += "  \ne.g. " + ", ".join(escape_md(e) for e in p.examples)
        {"error": st.error, "warning": st.warning}.get(p.severity, st.info)(msg)
    tables.show(
        pd.DataFrame([p.to_dict() for p in problems]).assign(examples=lambda d: d["examples"].map(", ".join)),
    )

st.subheader("Statistics")
qrels = ds.qrels.df
judged = qrels["query_id"].nunique()
golden = len(ds.qrels.queries_with_relevant())
c = st.columns(5)
c[0].metric("Documents", f"{len(ds.corpus):,}")
c[1].metric("Queries", f"{len(ds.queries):,}")
c[2].metric("Judged queries", f"{judged:,}", help="queries with at least one judgement")
c[3].metric(
    "Golden queries", f"{golden:,}", help="judged queries with at least one relevant document (grade > 0)"
)
c[4].metric("Qrels rows", f"{len(qrels):,}")

left, right = st.columns([1, 2])
with left:
    st.markdown("**Grade distribution**")
    grades = (
        qrels["relevance"].value_counts().sort_index().rename_axis("grade").reset_index(name="judgements")
    )
    tables.show(grades)
    rel_per_q = ds.qrels.relevant().groupby("query_id").size()
    if len(rel_per_q):
        st.caption(
            f"Relevant documents per golden query: min {rel_per_q.min()}, median {rel_per_q.median():g}, "
            f"max {rel_per_q.max()}."
        )
with right:
    st.markdown("**Runs**")
    rows = []
    golden_set = set(ds.qrels.queries_with_relevant())
    for name, run in runs.items():
        df = run.df
        per_q = df.groupby("query_id").size()
        rows.append(
            {
                "run": name,
                "kind": kinds[name],
                "queries": int(df["query_id"].nunique()),
                "golden queries covered": len(golden_set & set(per_q.index)),
                "rows": len(df),
                "depth (max)": int(per_q.max()) if len(per_q) else 0,
                "depth (median)": float(per_q.median()) if len(per_q) else 0.0,
                "source": run.source,
            }
        )
    tables.show(pd.DataFrame(rows))

lengths = ds.corpus.df["text"].fillna("").str.split().str.len()
model = escape_md(b.encoder_label) if b is not None else "not loaded"
st.caption(
    f"Document length in words: median {lengths.median():g}, 95th percentile {lengths.quantile(0.95):g}, "
    f"max {lengths.max():g}. Embedding model: {model}; BM25 engine: {settings.bm25_engine}."
)
if ds.report.stats:
    with st.expander("Reader statistics"):
        st.json(ds.report.stats)
