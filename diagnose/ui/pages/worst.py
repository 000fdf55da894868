"""Worst queries: every missed pair (failed query, relevant document missing from its top k) of the run, worst first;
a row opens it. Counts say their unit: failed queries or missed pairs (:mod:`diagnose.failures.diagnosis`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.failures import CLASS_LABELS, CLASSES, sort_worst
from diagnose.ui import findings_section, finetune_section, state, tables
from diagnose.ui.text import escape_md

b = state.bundle()
state.wait_for_vectors(b, "Worst queries", "The Worst queries page")
run = b.selected_run
diag = b.diagnosis(run)

st.title("Worst queries")
st.caption(
    f"Run **{escape_md(run)}**: {len(diag.failed_queries)} of {diag.n_queries} golden queries fail at k={b.k} "
    f"({diag.n_missed_pairs} missed pairs). Worst first; a row opens the query in the inspector.",
    help=f"{escape_md(diag.counts_sentence())}. One row per missed pair (failed query, relevant document missing "
    "from its top k), worst first: not retrieved, then deepest, then lowest cosine. Click a column header to sort. "
    f"Run kind: {escape_md(diag.run_kind.sentence())}; the classes' rules, wording and remedies follow it.",
)

if not diag.failures:
    st.success(f"No query fails at k={b.k}: every golden query has a relevant document in the top {b.k}.")
    st.stop()

# ---------------------------------------------------------------------------------------------- the answer first
found = findings_section.show(b, chart=False, title="What to do about them")
# each change: the failures it recovers (query ids, or "query/doc" with failure="recall"), or a pair to judge's query
# and classes
fixes = [(str(a.rank), set(a.recovered_ids), {q for q, _ in a.pairs}, set(a.classes)) for a in found or ()]


def _fixed_by(f: Any) -> str:
    """The ranks of the changes that fix the missed pair ``f`` ("—": none measured here)."""
    unit = f.query_id if b.mode == "hit" else f"{f.query_id}/{f.doc_id}"
    ranks = [r for r, rec, judged, cls in fixes if unit in rec or (f.query_id in judged and f.cls in cls)]
    return ", ".join(ranks) or "—"


st.subheader("The missed pairs")
left, right, third = st.columns([3, 2, 1.2])
counts = diag.class_counts
present = [c for c in CLASSES if counts.get(c)]
with left:
    chosen = st.multiselect(
        "Failure classes (missed pairs)",
        present,
        default=present,
        format_func=lambda c: f"{CLASS_LABELS[c]} ({counts[c]} missed pair{'s' if counts[c] != 1 else ''})",
        key="worst_classes",
    )
with right:
    text = st.text_input("Filter by query id or text", key="worst_text", placeholder="e.g. password")
with third:
    every = st.toggle(
        "All columns",
        key="worst_every_column",
        help="Adds the tie ends of the dense and BM25 ranks, the cosine, the term overlap and the seed and calibrated "
        "rules' verdicts.",
    )

rows = []
for f in sort_worst(diag.failures):
    if f.cls not in chosen:
        continue
    if text and text.lower() not in f.query_text.lower() and text.lower() not in f.query_id.lower():
        continue
    rows.append(
        {
            "query_id": f.query_id,
            "query": f.query_text,
            "target": f.doc_id,
            "class": CLASS_LABELS[f.cls],
            "fixed by": _fixed_by(f),
            "run rank": f.run_rank,
            "dense rank": f.dense_rank,
            "dense rank (worst)": f.dense_rank_worst,
            "BM25 rank": f.bm25_rank,
            "BM25 rank (worst)": f.bm25_rank_worst,
            "cosine": f.cosine,
            "overlap": f.overlap,
            "missing terms": ", ".join(f.missing_terms),
            "seed rule": f.seed_verdict,
            "calibrated rule": f.calibrated_verdict,
        }
    )
df = pd.DataFrame(rows)
# shown with "All columns" (the default columns fit a 1,400 px page: tests/test_browser.py); the inspector has them too
EXTRA = ["dense rank (worst)", "BM25 rank (worst)", "cosine", "overlap", "seed rule", "calibrated rule"]
if not every:
    df = df.drop(columns=[c for c in EXTRA if c in df])
for c in ("run rank", "dense rank", "dense rank (worst)", "BM25 rank", "BM25 rank (worst)"):
    if c in df:
        df[c] = df[c].astype("Int64")

if df.empty:
    st.info("No missed pair matches the filters.")
else:
    st.caption(
        f"{len(df)} of {diag.n_missed_pairs} missed pairs shown ({df['query_id'].nunique()} of "
        f"{len(diag.failed_queries)} failed queries). Fixed by: the numbers of the changes above that fix it.",
        help="Run rank —: the run did not retrieve the target. Fixed by —: no change measured here fixes it.",
    )
    event = tables.show(
        df,
        on_select="rerun",
        selection_mode="single-row",
        key="worst_table",
        height=min(38 + 35 * len(df), 560),
        column_config={
            "query": st.column_config.TextColumn("query", width="medium"),
            "missing terms": st.column_config.TextColumn("missing terms", width="small"),
            "fixed by": st.column_config.TextColumn(
                "fixed by",
                width="small",
                help="the ranks of the changes in the list above that fix this failure",
            ),
            **tables.evidence_columns(),
        },
    )
    selected = ((event or {}).get("selection") or {}).get("rows") or []
    if selected:
        state.open_query(str(df.iloc[selected[0]]["query_id"]))

with st.expander("Each remedy applied to this run and measured"):
    remedies = b.analysis.remedies(run, k=b.k, failure=b.mode)
    unit = remedies.unit
    st.markdown("\n".join(f"- {escape_md(x)}" for x in remedies.sentences()))
    tables.show(
        remedies.table()
        .assign(
            **{
                "class": lambda t: t["class"].map(CLASS_LABELS),
                "remedy": lambda t: t["remedy"].fillna("no remedy offline"),
            }
        )  # the other columns: "—"
        .drop(columns="failures")  # the same numbers as the column of its unit
        .rename(
            columns={
                "class": "failure class",
                "failed_queries": "failed queries",
                "missed_pairs": "missed pairs",
                "recovered": f"recovered ({unit})",
            }
        ),
        key="worst_remedies",
        column_config={
            "failed queries": st.column_config.NumberColumn(
                help="failed queries with at least one missed pair of the class (a query can count in two classes)"
            ),
            "missed pairs": st.column_config.NumberColumn(
                help="missed pairs of the class (the filter's counts)"
            ),
            "remedy": st.column_config.TextColumn("remedy", width="medium"),
            "mean_diff": st.column_config.NumberColumn(format="%+.3f"),
            "p_value": st.column_config.NumberColumn(format="%.4f", help="paired randomization test"),
        },
    )
    fixed = (
        "the query gets a relevant document in its top k"
        if b.mode == "hit"
        else "the document enters the top k"
    )
    st.caption(
        f"recovered: the class's {unit} the remedy fixes at k={b.k} ({fixed}); "
        f"lost_hits: golden queries the run hits today that the remedied run misses; mean_diff and p_value: "
        f"{escape_md(remedies.metric)} over all {remedies.n_queries} golden queries, remedied run minus the run. A "
        "failed query whose missed pairs fall in two classes counts in both, so the failed queries per class can add "
        f"up to more than the {len(diag.failed_queries)} failed queries."
    )

with st.expander("Does the class predict the fix? Every remedy applied to every class"):
    matrix = b.analysis.remedy_matrix(run, k=b.k, failure=b.mode, finetune=finetune_section.tuned(b))
    if matrix.remedy_ids:
        # st.altair_chart sizes the whole chart (title, axes) to its height; the builder gives the plot's height
        st.altair_chart(
            charts.remedy_matrix_heatmap(matrix.frame(), unit=matrix.unit),
            width="stretch",
            height=36 * len(matrix.classes) + 120,
        )
    st.markdown("\n".join(f"- {escape_md(x)}" for x in matrix.sentences()))
    advice = b.analysis.advice(run, k=b.k, failure=b.mode)
    if advice.lines():
        st.markdown(
            "**Where the data overrules a class's rule** (measured advice):\n"
            + "\n".join(f"- {escape_md(x)}" for x in advice.lines())
        )
    st.caption(
        f"Each cell: of the class's {matrix.unit}, how many the remedied run recovers at k={b.k} (the same remedied "
        "runs as the table above, so the outlined cells are its recovered column). A class predicts its fix when its "
        "own remedy recovers far more of it than of the other classes; when it does no better, look at the evidence: "
        "the class's rule may be wrong for this data. The measured advice tests each remedy against the class's "
        "own on the class's failures (exact McNemar, Holm over the remedies tried) and says where they disagree."
    )
