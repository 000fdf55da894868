"""Golden set: signs that the judgements, not the retriever, are wrong (label noise), and the run's hub documents."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose.ui import state, tables
from diagnose.ui.text import escape_md, truncate

COSINE = {"cosine": st.column_config.NumberColumn(format="%.3f")}

b = state.bundle()
state.wait_for_vectors(b, "Golden set", "The Golden set page")
run_name = b.selected_run
k = b.k
noise = b.analysis.label_noise(run_name, k=b.k)
hubs = b.analysis.hubness(run_name, k=b.k)
q_text = b.ds.queries.text_of()
grades = b.ds.qrels.as_dict()


def title_of(doc_id: str) -> str:
    doc = b.document(doc_id)
    return truncate(doc[0] or doc[1], 90) if doc else "(not in the corpus)"


st.title("Golden set")
st.caption(
    f"Run **{escape_md(run_name)}** at k={k}, model {escape_md(b.encoder_label)}. Near-duplicate = cosine >= 0.95 "
    "between document vectors, or the same normalised text. Each table is a list of suspects to check by hand."
)

st.subheader(
    f"Unjudged near-duplicates of relevant documents in the top {k} ({len(noise.unjudged_duplicates)})"
)
if noise.unjudged_duplicates.empty:
    st.success(
        f"No unjudged document in the top {k} of {escape_md(run_name)} duplicates a judged relevant one."
    )
else:
    table = noise.unjudged_duplicates.copy()
    table.insert(1, "query", [q_text.get(q, "") for q in table["query_id"]])
    table["document"] = [title_of(d) for d in table["doc_id"]]
    table["grade of the original"] = [
        grades[q][o] for q, o in zip(table["query_id"], table["duplicate_of"], strict=True)
    ]
    tables.show(table, key="noise_unjudged", column_config=COSINE)
    st.caption(
        "The run was probably right and the golden set incomplete: these documents say what a judged relevant "
        "document says, but nobody judged them. Lines to add to a BEIR qrels file after checking them:"
    )
    st.code(
        "".join(
            f"{q}\t{d}\t{g}\n"
            for q, d, g in zip(
                table["query_id"], table["doc_id"], table["grade of the original"], strict=True
            )
        ),
        language=None,
    )

st.subheader(f"Duplicate documents in the corpus ({len(noise.duplicate_documents)})")
if noise.duplicate_documents.empty:
    st.success("No two documents have the same normalised text or a cosine >= 0.95.")
else:
    dups = noise.duplicate_documents.copy()
    dups["document"] = [title_of(d) for d in dups["doc_id"]]
    dups["original"] = [title_of(d) for d in dups["duplicate_of"]]
    tables.show(dups, key="noise_duplicates", column_config=COSINE)
    st.caption(
        "A duplicate splits the relevance between copies: judge both, or deduplicate the corpus before indexing. "
        f"Near-duplicate search: {escape_md(noise.near_duplicate_search)}."
    )

st.subheader(f"Identical queries with different judgements ({len(noise.conflicting_queries)})")
if noise.conflicting_queries.empty:
    st.success("No two queries with the same normalised text are judged differently.")
else:
    tables.show(noise.conflicting_queries, key="noise_conflicts")
    st.caption(
        "The same question cannot have two different right answers: one of the judgements is incomplete. Whichever "
        "document the run returns, one of these queries counts as a failure."
    )

if len(noise.query_copies):  # a collection whose queries are documents (shown only when it is one)
    st.subheader(f"Copies of the query in its top {k} ({noise.n_queries_with_copies} queries)")
    copies = noise.query_copies.copy()
    copies.insert(1, "query", [q_text.get(q, "") for q in copies["query_id"]])
    copies["document"] = [title_of(d) for d in copies["doc_id"]]
    tables.show(copies, key="noise_query_copies", column_config=COSINE)
    st.caption(
        "A document that repeats the query (cosine >= 0.95, or the same normalised text) under another id: in a "
        "collection whose queries are documents it is the query itself, and it takes a top-k slot from an answer. "
        "A document whose id is the query's is left to the sidebar's \"Ignore identical ids\"."
    )

st.subheader(f"Hub documents of {escape_md(run_name)}")
st.markdown(
    f"Skewness of the {k}-occurrence (how many queries' top {k} each document is in, over the whole corpus): "
    f"**{hubs.skewness:.2f}** over {hubs.n_queries:,} queries (> 1: a few documents crowd many result lists)."
)
if hubs.hubs.empty:
    st.success(f"No document is in the top {k} of 10% or more of the queries.")
else:
    table = hubs.hubs.copy()
    table["document"] = [title_of(d) for d in table["doc_id"]]
    table["judged relevant for"] = [
        sum(1 for q in grades if grades[q].get(d, 0) > 0) for d in table["doc_id"]
    ]
    tables.show(
        pd.DataFrame(table),
        key="hubs_table",
        column_config={
            "share": st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0)
        },
    )
    st.caption(
        "A hub that is relevant to few of the queries it is retrieved for takes a top-k slot from the right "
        "document each time: generic pages (FAQ, glossary, directories) often do. Consider down-weighting or "
        "excluding them, or splitting them into focused chunks."
    )

st.subheader("Which queries to judge first")
risk = b.analysis.risk(run_name, k=k)
validation = b.analysis.risk_validation(run_name, k=k)
judged = set(b.ds.qrels.query_ids())
risk.insert(1, "judged", [q in judged for q in risk["query_id"]])
risk.insert(2, "query", [q_text.get(q, "") for q in risk["query_id"]])
st.markdown(escape_md(validation.sentence()))
st.caption(
    "Risk from the shape of each query's top-k scores alone (top score, gap between ranks 1 and 2, spread, mean, and "
    "for dense runs the softmax confidence of the top document), normalised per run and rank-averaged: it needs no "
    "judgement, so it ranks production queries too. The AUC says how well it finds the golden queries that fail; "
    "judge the riskiest unjudged queries first."
)
tables.show(
    risk.head(200),
    key="golden_risk",
    column_config={
        c: st.column_config.NumberColumn(format="%.3f")
        for c in ("top1", "gap12", "spread", "mean_k", "confidence", "risk")
    },
)
