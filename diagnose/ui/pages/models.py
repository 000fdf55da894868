"""Model choice: exact dense retrieval with each embedding model on the golden set, with CIs and ties."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.data import DataError
from diagnose.failures import CLASS_LABELS, CLASSES
from diagnose.metrics import headline_metrics
from diagnose.ui import finetune_section, state, tables
from diagnose.ui.text import escape_md

b = state.bundle()
state.wait_for_vectors(b, "Model choice", "The Model choice page")
k = b.k

st.title("Model choice")
st.caption(
    f"Each model embeds the corpus and the {len(b.golden):,} golden queries and retrieves by exact cosine search "
    "over the whole corpus; its run is scored like any other. The model in the sidebar is always included; add "
    "others below (a sentence-transformers name needs the network the first time, a local folder does not). "
    "Embeddings are cached, so a model is encoded once per data set."
)

with st.form("models_form"):
    c1, c2 = st.columns([3, 1])
    extra = c1.text_area(
        "Other models, one per line",
        key="models_extra",
        height=90,
        placeholder="sentence-transformers/all-mpnet-base-v2\n/path/to/a/local/model",
    )
    metric = c2.selectbox("Rank by", headline_metrics(k), key="models_metric")
    submitted = c2.form_submit_button("Compare", type="primary", width="stretch", key="models_submit")
if submitted:
    st.session_state["models_requested"] = [
        line.strip()
        for line in (extra or "").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
requested = list(dict.fromkeys(st.session_state.get("models_requested", [])))

encoders = [b.analysis.encoder]
for name in requested:
    try:
        enc, _ = state.model_space(b, name)
    except DataError as e:
        state.show_error(e)
        continue
    if enc.name in {e.name for e in encoders}:
        st.info(f"{escape_md(name)} is the same model as {escape_md(state.label_of(enc))}: compared once.")
        continue
    encoders.append(enc)

cmp = b.analysis.models(encoders, metric=metric, k=b.k)
table = cmp.table()
ranked_by = cmp.metric
tied = table.loc[table["tied_with_best"], "model"].tolist()
best = table["model"].iloc[0]
if len(table) == 1:
    st.info(f"Only {escape_md(best)} so far: add a model above to compare.")
elif len(tied) > 1:
    fastest = table[table["tied_with_best"]].sort_values("docs_per_s", ascending=False).iloc[0]
    st.markdown(
        f"**Statistically tied for the best {escape_md(ranked_by)}**: {', '.join(escape_md(m) for m in tied)} "
        f"(Holm-corrected paired randomization test against the best, alpha 0.05, {len(b.golden):,} queries: the "
        f"data cannot tell them apart). Among them, **{escape_md(fastest['model'])}** encodes fastest "
        f"({fastest['docs_per_s']:.0f} documents/s here) with {int(fastest['dim'])}-dimensional vectors."
    )
else:
    st.markdown(
        f"**{escape_md(best)}** is significantly better than every other model on {escape_md(ranked_by)} "
        f"(Holm-corrected paired randomization test, alpha 0.05, {len(b.golden):,} queries)."
    )

cols = {
    "rank": "rank",
    "model": "model",
    ranked_by: ranked_by,
    "ci_low": "CI low",
    "ci_high": "CI high",
    f"recall@{k}": f"recall@{k}",
    "dim": "dim",
    "docs_per_s": "docs/s",
    "index_mb": "index MB",
    "ms_per_query": "ms/query",
    f"recall@{k}_per_ms": f"recall@{k} per ms",
    "calibrated_threshold": "calibrated cosine",
    f"hubness_skew@{k}": "hubness skew",
}
shown = table[[c for c in dict.fromkeys(cols) if c in table.columns]].rename(columns=cols)
number = st.column_config.NumberColumn
tables.show(
    shown,
    key="models_table",
    pin=("rank", "model"),
    column_config={
        ranked_by: number(format="%.4f"),
        "CI low": number(format="%.4f", help="95% paired bootstrap CI of the mean"),
        "CI high": number(format="%.4f"),
        f"recall@{k}": number(format="%.4f"),
        "docs/s": number(format="%.0f", help="bare encode throughput on this machine (64 documents)"),
        "index MB": number(format="%.2f", help="documents x dim x 4 bytes (float32)"),
        "ms/query": number(format="%.3f", help="exact search over the corpus, per query"),
        f"recall@{k} per ms": number(format="%.2f"),
        "calibrated cosine": number(
            format="%.3f", help="this model's vocabulary-mismatch threshold (10th percentile of the hits)"
        ),
        "hubness skew": number(
            format="%.2f", help=f"skewness of how often each document is in some query's top {k}; > 1: hubs"
        ),
    },
)
st.caption(
    "Rank: models tied with the best share rank 1. Throughput and search time are measured on this machine in "
    "this session; the index size assumes float32 vectors."
)

latency = b.analysis.latency(k)
if latency:
    st.subheader("Live retrievers")
    evs = b.evaluations()
    live = pd.DataFrame(
        [
            {
                "retriever": name,
                f"recall@{k}": evs[name].aggregate[f"recall@{k}"],
                f"ndcg@{k}": evs[name].aggregate[f"ndcg@{k}"],
                **values,
            }
            for name, values in latency.items()
        ]
    )
    tables.show(
        live,
        key="live_table",
        column_config={
            f"recall@{k}": number(format="%.4f"),
            f"ndcg@{k}": number(format="%.4f"),
            "latency_p50_ms": number("p50 ms", format="%.1f", help="median wall-clock time of one query"),
            "latency_p95_ms": number("p95 ms", format="%.1f"),
            f"recall@{k}_per_ms": number(f"recall@{k} per ms", format="%.3f"),
        },
    )
    st.caption(
        "The live retrievers the app was started with (`--retriever`), timed query by query over the golden set "
        f"(end to end: embedding the query, the index, the network), beside the exact search of each model above "
        f"(ms/query: search only). recall@{k} per ms = recall@{k} / median latency."
    )

bars = pd.DataFrame(
    [
        {
            "run": r.name,
            "metric": m,
            "value": float(r.evaluation.aggregate[m]),
            "ci_low": r.ci[m][0],
            "ci_high": r.ci[m][1],
        }
        for m in dict.fromkeys([ranked_by, f"recall@{k}"])
        for r in cmp.results
    ]
)
st.altair_chart(charts.metrics_bar(bars, k=k, title="Models on the golden set"), width="stretch")

st.subheader("Failure classes per model")
counts = pd.DataFrame(
    [
        {"model": r.name, **{CLASS_LABELS[c]: r.diagnosis.class_counts.get(c, 0) for c in CLASSES}}
        for r in cmp.results
    ]
)
tables.show(counts)
st.caption(
    f"Missed (query, relevant document) pairs of the queries each model's own dense run fails at k={k} (no relevant "
    "document in its top k; BM25 evidence from the sidebar's engine). Every model seen here is also offered on the "
    "Similarity page."
)

finetune_section.render(b)
