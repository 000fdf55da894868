"""Judge: grade the (query, document) pairs most likely to be missed relevant documents, one at a time.

The queue is :func:`diagnose.judging.judge_queue` over the analysis (every run and baseline pooled at k). Each grade
is appended to the journal (:class:`diagnose.judging.Journal`: one JSON line, fsynced) the moment it is clicked, so
closing the tab loses nothing and reopening resumes at the first pair not judged yet. A journal that cannot be read
(a hand-edited line) or written (read-only) is a message on the page, never a traceback. Keys: Streamlit 1.67's
``st.button(shortcut=...)``: 0, 1, 2, 3 grade and S skips (the keys do nothing while a text field has the focus).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from diagnose import judging
from diagnose.data import DataError, ValidationReport
from diagnose.lexical import highlight_spans, term_overlap
from diagnose.ui import state, tables
from diagnose.ui.errors import show_error
from diagnose.ui.text import escape_md, highlight_md, truncate

GRADE_LABELS = {0: "0 · not relevant", 1: "1 · related", 2: "2 · relevant", 3: "3 · highly relevant"}
SHOWN_ROWS = 200

b = state.bundle()
if b.has_golden:
    state.wait_for_vectors(b, "Judge", "The Judge page")


def journal_path() -> Path:
    """``$DIAGNOSE_JOURNAL``, else beside the data (a BEIR folder, or the folder of the qrels or queries file); the
    bundled demo and uploads (a temporary folder) keep theirs under the cache root."""
    spec = b.settings.spec
    data = spec.data_dir or spec.qrels or spec.queries if spec is not None else None
    in_data = spec is not None and spec.kind in ("beir", "files")
    return judging.default_journal_path(data, name=b.ds.name or "data", in_data=in_data)


@st.cache_resource(show_spinner="Pooling the runs and ranking the pairs to judge ...", max_entries=8)
def _queue(key: str, encoder: str, k: int, _analysis: Any) -> pd.DataFrame:
    """The judging queue of one analysis at k (shared by the sessions on the same data; never modified)."""
    return judging.judge_queue(_analysis, k=k)


def _grade(journal: judging.Journal, query_id: str, doc_id: str, grade: int | str) -> None:
    try:
        journal.add(query_id, doc_id, grade)
    except (
        DataError
    ) as e:  # read-only journal, full disk: say so on the page (a callback's error is a traceback)
        st.session_state["_judge_error"] = e
        return
    st.session_state["_judge_last"] = (query_id, doc_id, grade)


def _file_bytes(write: Any, qrels: Any) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qrels"
        write(qrels, path)
        return path.read_bytes()


path = journal_path()
journal = judging.Journal(path)
problems = ValidationReport()
try:
    judged = journal.judgements(problems)
except DataError as e:
    st.title("Judge")
    show_error(
        e,
        "The journal cannot be read, so judging is paused until it is fixed (or DIAGNOSE_JOURNAL points "
        "to another file): ",
    )
    st.stop()
queue = _queue(b.key, b.encoder_name, b.k, b.analysis)
todo = judging.pending(queue, judged)
q_text = b.ds.queries.text_of()
grades = b.ds.qrels.as_dict()

st.title("Judge")
st.caption(
    f"The unjudged documents in the top {b.k} of every run and baseline "
    f"({escape_md(', '.join(queue.attrs.get('pooled_runs', [])))}), most likely missed relevant documents first: "
    "near-duplicates of a judged relevant document, then the agreement of the BM25 rank, the dense rank, the "
    "similarity to the judged relevant documents and the number of runs that retrieved it. Every grade is written "
    f"to the journal at once: {escape_md(str(path))}."
)
for p in problems:
    st.warning(escape_md(p.format()), icon=":material/warning:")

in_queue = sum(1 for q, d in zip(queue["query_id"], queue["doc_id"], strict=True) if (q, d) in judged)
c = st.columns(4)
c[0].metric("Pairs in the queue", f"{len(queue):,}")
c[1].metric("Judged (journal)", f"{len(judged):,}", help="every pair in the journal, skipped ones included")
c[2].metric("Left to judge", f"{len(todo):,}")
c[3].metric("Near-duplicates left", f"{int(todo['near_duplicate'].sum()):,}" if len(todo) else "0")

failed = st.session_state.pop("_judge_error", None)
if failed is not None:
    show_error(failed)
last = st.session_state.get("_judge_last")
if last:
    q, d, g = last
    st.toast(f"Saved: {escape_md(q)} / {escape_md(d)} = {escape_md(str(g))}", icon=":material/check:")
    st.session_state["_judge_last"] = None

if todo.empty:
    st.success("Every pair of the queue is judged. Export the judgements below, or raise k in the sidebar.")
else:
    row = todo.iloc[0]
    qid, did = str(row["query_id"]), str(row["doc_id"])
    st.subheader(f"Pair {in_queue + 1} of {len(queue):,} (priority #{int(row['priority'])})")
    st.markdown("**Why this pair.** " + escape_md(str(row["reason"])))
    query = q_text.get(qid, "")
    doc = b.document(did) or ("", "")
    title, body = doc
    overlap = term_overlap(query, f"{title} {body}")
    left, right = st.columns(2, border=True)
    with left:
        st.markdown(f"##### Query {escape_md(qid)}")
        st.markdown(f"#### {escape_md(query)}")
        st.caption(
            f"Query terms: {escape_md(', '.join(overlap.query_terms)) or 'none'}. In the document: "
            f"{escape_md(', '.join(overlap.present)) or 'none'}."
        )
        known = {d: g for d, g in grades.get(qid, {}).items() if g > 0}
        if known:
            st.markdown("**Judged relevant for this query:**")
            for d, g in list(known.items())[:5]:
                other = b.document(d)
                name = truncate(other[0] or other[1], 90) if other else "(not in the corpus)"
                st.markdown(f"- {escape_md(d)} (grade {g}): {escape_md(name)}")
        else:
            st.caption("No document is judged relevant for this query yet.")
    with right:
        st.markdown(f"##### Document {escape_md(did)}")
        stems = overlap.stems_present
        with st.container(height=240, border=False):
            if title:
                st.markdown(
                    "**" + highlight_md(title, highlight_spans(title, stems), style="background") + "**"
                )
            st.markdown(highlight_md(body, highlight_spans(body, stems), style="background"))
    st.markdown("**Is the document relevant to the query?**")
    buttons = st.columns(5)
    for i, (g, label) in enumerate(GRADE_LABELS.items()):
        buttons[i].button(
            label,
            key=f"judge_{g}",
            shortcut=str(g),
            width="stretch",
            type="primary" if g == 2 else "secondary",
            on_click=_grade,
            args=(journal, qid, did, g),
        )
    buttons[4].button(
        "Skip",
        key="judge_skip",
        shortcut="S",
        width="stretch",
        on_click=_grade,
        args=(journal, qid, did, judging.SKIP),
        help="cannot tell: the pair leaves the queue, no grade is recorded",
    )
    st.caption(
        "Keys: **0**, **1**, **2**, **3** grade the pair, **S** skips it (when no text field has the focus). "
        "0 = not relevant, 1 = related but does not answer, 2 = answers the query, 3 = answers it fully."
    )

st.subheader("Queue")
shown = todo.head(SHOWN_ROWS).copy()
shown.insert(2, "query", [truncate(q_text.get(q, ""), 70) for q in shown["query_id"]])
tables.show(
    shown[
        [
            "priority",
            "query_id",
            "query",
            "doc_id",
            "reason",
            "runs",
            "bm25_rank",
            "dense_rank",
            "max_cos_to_relevant",
        ]
    ],
    key="judge_queue",
    column_config={
        "max_cos_to_relevant": st.column_config.NumberColumn("max cos to relevant", format="%.3f"),
        "reason": st.column_config.TextColumn(width="large"),
    },
)
if len(todo) > SHOWN_ROWS:
    st.caption(f"The first {SHOWN_ROWS} of {len(todo):,} pairs left.")

st.subheader("Export")
new = journal.as_qrels()
merged = judging.merge(b.ds.qrels, new)
counts = judging.merge_counts(b.ds.qrels, new)
st.caption(
    f"{len(new):,} graded judgements in the journal (skips left out); merged into the golden set: {counts.added:,} "
    f"new pairs, {counts.overridden:,} overriding an existing grade ({counts.changed:,} with a different grade)."
)
e = st.columns(4)
name = b.ds.name or "data"
for col, (label, write, data, fname, key) in zip(
    e,
    [
        (
            "New judgements (TREC qrels)",
            judging.write_trec_qrels,
            new,
            f"{name}_judgements.qrels",
            "dl_new_trec",
        ),
        ("New judgements (BEIR TSV)", judging.write_beir_qrels, new, f"{name}_judgements.tsv", "dl_new_beir"),
        (
            "Golden set + new (TREC qrels)",
            judging.write_trec_qrels,
            merged,
            f"{name}_merged.qrels",
            "dl_merged_trec",
        ),
        (
            "Golden set + new (BEIR TSV)",
            judging.write_beir_qrels,
            merged,
            f"{name}_merged.tsv",
            "dl_merged_beir",
        ),
    ],
    strict=True,
):
    col.download_button(
        label,
        data=(lambda w=write, q=data: _file_bytes(w, q)),
        file_name=fname,
        mime="text/plain",
        key=key,
        disabled=len(data) == 0,
        width="stretch",
    )

st.subheader("What the judgements changed")
if len(new) == 0:
    st.info("No graded judgement yet: the metrics are those of the golden set as loaded.")
else:
    signature = (b.key, b.encoder_name, b.k, len(journal), path.stat().st_mtime_ns if path.exists() else 0)
    cached = st.session_state.get("_judge_effect")
    if not cached or cached[0] != signature:
        with st.spinner("Recomputing the metrics with the new judgements ..."):
            after = judging.with_judgements(b.analysis, new)
            effect = judging.judgement_effect(b.analysis, after, b.k)
        st.session_state["_judge_effect"] = cached = (signature, effect)
    effect = cached[1]
    for run_name, sentence in effect["sentences"].items():
        st.markdown(f"- **{escape_md(run_name)}**: {escape_md(sentence)}")
    table = pd.DataFrame.from_dict(effect["runs"], orient="index").drop(columns=["run", "label_gap_queries"])
    tables.show(
        table.rename_axis("run").reset_index(),
        key="judge_effect",
        column_config={c: st.column_config.NumberColumn(format="%.4f") for c in ("before", "after")},
    )
    st.caption(
        f"{effect['metric']} over each side's golden queries; a failure is a golden query with no relevant document "
        f"in the top {b.k}; a label gap is a former failure that is now a hit because a newly judged relevant "
        "document is in the run's top k (the run was right, the golden set had a hole)."
    )
