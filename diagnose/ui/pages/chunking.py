"""Which chunking: the documents re-chunked at a grid of sizes and overlaps, each measured on the golden set against
the documents as they are (Analysis.chunking), quality against the tokens sent to the generator."""

from __future__ import annotations

import streamlit as st

from diagnose import charts, defaults
from diagnose.ui import state, tables
from diagnose.ui.progress import StatusProgress

b = state.bundle()
state.wait_for_vectors(b, "Which chunking", "The Which chunking page")
k = b.k

st.title("Which chunking")
st.caption(
    "Each configuration re-chunks the documents' text (semantic-text-splitter, sizes and overlaps in the model's "
    f"tokens), encodes the chunks with the sidebar's model, searches them exactly and ranks each document by its "
    f"best chunk; the top {k} chunks are what a generator would be sent. Every configuration is cached on disk, so "
    "a second look costs nothing."
)
with st.form("chunking_form"):
    c1, c2, c3 = st.columns([2, 2, 1])
    sizes = c1.text_input("Chunk sizes", ",".join(map(str, defaults.CHUNK_SIZES)), key="chunking_sizes")
    overlaps = c2.text_input("Overlaps", ",".join(map(str, defaults.CHUNK_OVERLAPS)), key="chunking_overlaps")
    submitted = c3.form_submit_button("Measure", type="primary", width="stretch", key="chunking_submit")
if submitted:
    st.session_state["chunking_grid"] = (sizes, overlaps)
grid = st.session_state.get("chunking_grid")
if grid is None:
    st.info(
        "Choose the sizes and overlaps to compare, then Measure (encoding the chunks takes a while the first time)."
    )
    st.stop()

prog = StatusProgress()
with b.analysis.reporting(prog):
    sweep = b.analysis.chunking(grid[0], grid[1], k=k)
prog.done("Chunking measured")

table = sweep.table()
table["current"] = table["chunking"] == "as they are"
metric = st.radio("Quality", [f"ndcg@{k}", f"recall@{k}", f"context_recall@{k}", f"context_precision@{k}"],
                  horizontal=True, key="chunking_metric")  # fmt: skip
table["pareto"] = table["chunking"].map(sweep.front(metric))
st.altair_chart(charts.chunking_frontier(table, metric=metric, tokens=f"tokens@{k}"), width="stretch")

best = [p for p in sweep.configurations if p.pareto]
cur = sweep.current.metrics
lines = [f"**As they are**: {cur[f'ndcg@{k}']:.4f} nDCG@{k}, {cur[f'tokens@{k}']:.0f} tokens sent at {k}."]
for p in best:
    lines.append(
        f"**{p.label}** (on the front): nDCG@{k} {p.metrics[f'ndcg@{k}']:.4f} ({p.ndcg_diff:+.4f}, paired p = "
        f"{p.p_value:.3f}), {p.metrics[f'tokens@{k}']:.0f} tokens; recovers {len(p.recovers)} queries, breaks "
        f"{len(p.breaks)}."
    )
st.markdown("  \n".join(lines))

number = st.column_config.NumberColumn
cols = ["chunking", "chunks", f"recall@{k}", f"ndcg@{k}", f"context_precision@{k}", f"context_recall@{k}",
        f"tokens@{k}", "encode_s", "index_mb", "recovers", "breaks", "ndcg_diff", "p_value", "pareto"]  # fmt: skip
tables.show(
    table[cols],
    key="chunking_table",
    column_config={
        **{c: number(format="%.4f") for c in cols[2:6] + ["ndcg_diff", "p_value"]},
        f"tokens@{k}": number(
            format="%.0f", help=f"word tokens of the top {k} chunks (whole documents as they are)"
        ),
        "encode_s": number("encode s", format="%.1f", help="0 when the chunks' vectors were cached"),
        "index_mb": number("index MB", format="%.2f", help="chunks x dim x 4 bytes (float32)"),
        "recovers": number(
            help=f"golden queries with a relevant document in the top {k} only with this chunking"
        ),
        "breaks": number(help=f"golden queries that lose their relevant documents in the top {k}"),
    },
)
st.caption(
    f"Document level: a document is at the rank of its best chunk. Context precision / recall: word tokens of the "
    f"top {k} chunks inside the reference "
    + ("spans of the golden set" if sweep.reference == "spans" else "documents (no spans in the golden set)")
    + f" / of the references covered. p_value: paired randomization test of nDCG@{k} against the documents as they "
    f"are. Sizes and overlaps count {sweep.lengths}."
)
