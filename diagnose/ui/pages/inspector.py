"""Query inspector: one failed query, its missed targets with their evidence, and what the run retrieved instead.

The targets are grouped by failure class (the recommendation once per class), worst first as on Worst queries; the
worst few (:data:`diagnose.defaults.INSPECT_OPEN`) are cards, the others a compact table per class (a row opens its
card; a toggle opens them all): a query can miss dozens of targets.
"""

from __future__ import annotations

import streamlit as st

from diagnose import defaults
from diagnose.data import document_text
from diagnose.failures import CLASS_LABELS, Failure, rank_range_text, worst_queries
from diagnose.failures.inspection import Target, TargetGroup, targets_table
from diagnose.lexical import highlight_spans
from diagnose.ui import state, tables
from diagnose.ui.text import (
    chips,
    escape_md,
    fmt,
    highlight_md,
    margin_words,
    passage_md,
    rank_text,
    truncate,
)

b = state.bundle()
state.wait_for_vectors(b, "Query inspector", "The Query inspector page")
run_name = b.selected_run
diag = b.diagnosis(run_name)
cal = diag.calibration
th = diag.thresholds

st.title("Query inspector")
failed = worst_queries(diag.failures)
if not failed:
    st.success(f"Run {escape_md(run_name)} has no failed query at k={b.k}: nothing to inspect.")
    st.stop()

q_text = b.ds.queries.text_of()
current = st.session_state.get("query_id")
if current not in failed:
    current = failed[0]
st.session_state["inspector_query"] = current


def _on_pick() -> None:
    st.session_state["query_id"] = st.session_state["inspector_query"]


qid = st.selectbox(
    f"Failed query ({len(failed)} in run {escape_md(run_name)}, worst first)",
    failed,
    key="inspector_query",
    on_change=_on_pick,
    format_func=lambda q: f"{q}: {truncate(q_text.get(q, ''), 90)}",
)
st.session_state["query_id"] = qid
query = q_text.get(qid, "")
view = b.analysis.inspect(qid, run_name, k=b.k, failure=b.mode)

st.subheader("Query")
st.markdown(f"**{escape_md(qid)}**: {escape_md(query)}")
terms = view.query_terms
st.caption(
    f"Query terms (BM25 tokenizer: stopwords dropped, stemmed): {escape_md(', '.join(terms)) or 'none'}. "
    f"Cosine thresholds of {b.encoder_label}: seed {th.seed_cosine:.2f}, calibrated {cal.calibrated:.3f} "
    f"({cal.to_dict()['method']}; {cal.n_pairs} pairs)."
)
st.caption(f"Run kind: {escape_md(diag.run_kind.sentence())}. {escape_md(diag.window_note())}")


def document_md(title: str, text: str, stems: tuple[str, ...]) -> str:
    body = highlight_md(text, highlight_spans(text, stems), style="background")
    head = highlight_md(title, highlight_spans(title, stems), style="background") if title else ""
    return (f"Title: {head}  \n" if head else "") + body


def show_passage(title: str, text: str, f) -> None:  # noqa: ANN001 - a Failure
    """The target's best-matching passage highlighted in its text, and where the model's window ends."""
    if f.passage_text is None:
        return
    beyond = f.window_char is not None and f.passage_char >= f.window_char
    where = "beyond the window" if beyond else "within the window"
    st.markdown(
        f"**Best-matching passage** (cosine {f.passage_cosine:.3f} vs {fmt(f.cosine)} for the whole target; starts "
        f"at token {f.passage_offset} of {f.target_tokens}, {where}; the model reads {f.window_tokens} tokens "
        "including its special tokens):"
    )
    body = document_text(title, text)
    st.markdown(passage_md(body, f.passage_char, len(f.passage_text), f.window_char, f.window_tokens))


def metrics(f: Failure) -> None:
    """The target's numbers in a row: cosine, the run's, dense and BM25 ranks, the query terms in it."""
    c = st.columns(5)
    c[0].metric("cos(query, target)", fmt(f.cosine), help=f"calibrated threshold {cal.calibrated:.3f}")
    c[1].metric(
        "Run rank",
        rank_text(f.run_rank) if f.run_rank else "—",
        delta=None if f.run_rank else "not retrieved",  # under the value: "not retrieved" is too long for it
        delta_color="off",
        delta_arrow="off",
        help=f"the target's rank in the run; not retrieved = not among the {f.run_depth} documents it returned",
    )
    c[2].metric(
        "Exact dense rank",
        rank_range_text(f.dense_rank, f.dense_rank_worst, none="—"),
        help="among all documents, by cosine; #a–b: documents with the same cosine (as float32) tie at ranks a "
        "to b",
    )
    c[3].metric(
        "BM25 rank",
        rank_range_text(f.bm25_rank, f.bm25_rank_worst, none="—"),
        delta="not retrieved" if f.bm25_rank is None and f.bm25_score is not None else None,
        delta_color="off",
        delta_arrow="off",
        help="among all documents, by BM25 score; #a–b: a tie at ranks a to b; not retrieved: BM25 score 0, no query "
        "term in the target (BM25 does not retrieve it)",
    )
    c[4].metric(
        "Query terms in target",
        fmt(f.overlap, 2) if f.overlap is None else f"{f.overlap:.0%}",
        help="share of the query's terms (stemmed, stopwords dropped) that occur in the target",
    )


def card(t: Target) -> None:
    f = t.failure
    with st.container(border=True):
        st.markdown(f"#### {CLASS_LABELS[f.cls]}: target {escape_md(f.doc_id)} (grade {f.grade})")
        metrics(f)
        st.markdown("**Evidence.** " + escape_md(f.evidence))
        if f.margin is not None:
            st.caption(
                f"Similarity margin: cos(query, the run's #{b.k}) − cos(query, target) = {f.margin:+.3f} "
                f"({margin_words(f.margin, b.k)})."
            )
        v1, v2 = st.columns(2)
        v1.markdown(f"**Seed rule** (cosine < {th.seed_cosine:.2f}): {escape_md(f.seed_verdict)}")
        v2.markdown(f"**Calibrated rule** (cosine < {cal.calibrated:.3f}): {escape_md(f.calibrated_verdict)}")
        if f.seed_verdict != f.calibrated_verdict:
            st.caption(
                "The two rules disagree: the seed threshold 0.75 does not fit this model's cosine scale."
            )
        if f.duplicate_doc_id:
            st.warning(
                f"Near-duplicate in the top {b.k}: {escape_md(f.duplicate_doc_id)} (cosine "
                f"{fmt(f.duplicate_cosine)}) is not judged relevant.",
                icon=":material/content_copy:",
            )
        if not t.in_corpus:
            st.error(f"Document {escape_md(f.doc_id)} is not in the corpus.")
        else:
            st.markdown("**The target** (query terms it contains are highlighted):")
            with st.container(height=200):
                st.markdown(document_md(t.title, t.text, t.present_stems))
            if f.missing_terms:
                st.markdown("**Query terms missing from it:** " + chips(f.missing_terms))
            else:
                st.markdown("**Every query term occurs in it.**")
            show_passage(t.title, t.text, f)


def collapsed(g: TargetGroup) -> None:
    """The group's targets that are not cards: one row each, worst first; a selected row opens its card."""
    more = "more " if g.opened else ""
    with st.expander(
        f"{len(g.collapsed)} {more}{g.label} target{'s' if len(g.collapsed) > 1 else ''}, worst first"
    ):
        event = tables.show(
            targets_table(g.collapsed),
            key=f"inspector_more_{g.cls}",
            on_select="rerun",
            selection_mode="single-row",
            height=min(38 + 35 * len(g.collapsed), 400),
            column_config=TARGET_COLUMNS,
        )
        st.caption("Select a row to see that target's evidence below.")
        rows = ((event or {}).get("selection") or {}).get("rows") or []
        if rows:
            card(g.collapsed[rows[0]])


TARGET_COLUMNS = {
    **tables.evidence_columns(),
    "missing terms": st.column_config.TextColumn(width="large"),
}

targets = view.targets
st.subheader(f"Missed relevant document{'s' if len(targets) > 1 else ''} ({len(targets)})")
open_all = False
if len(targets) > defaults.INSPECT_OPEN:
    open_all = st.toggle(
        f"Show all {len(targets)} targets as cards",
        key="inspector_open_all",
        help=f"By default the {defaults.INSPECT_OPEN} worst targets are cards and the others one row each.",
    )
    st.caption(
        f"Grouped by failure class, worst first (as on Worst queries: not retrieved, then deepest, then lowest cosine); "
        f"the {defaults.INSPECT_OPEN} worst are open."
    )
groups = view.groups(open_n=len(targets) if open_all else defaults.INSPECT_OPEN)
for g in groups:
    st.markdown(f"### {g.label} ({len(g.targets)} target{'s' if len(g.targets) > 1 else ''})")
    st.info("**Recommendation.** " + g.recommendation, icon=":material/lightbulb:")
    for t in g.opened:
        card(t)
    if g.collapsed:
        collapsed(g)

st.subheader(f"What the run retrieved (top {b.k})")
table = view.retrieved
if len(table):
    marks = {"unjudged": "· "}
    table = table.assign(
        judgement=[
            (marks.get(j) or ("✅ " if j.startswith("relevant") else "❌ ")) + j for j in table["judgement"]
        ]
    ).rename(columns={"bm25_rank": "BM25 rank", "bm25_rank_worst": "BM25 rank (worst of tie)"})
    # cos(document, target) for the targets shown as cards (the others: their card, opened from their row)
    shown = {f"cos to {t.failure.doc_id}" for g in groups for t in g.opened}
    hidden = [c for c in table.columns if c.startswith("cos to ") and c not in shown]
    table = table.drop(columns=hidden)
    cos_cols = [c for c in table.columns if c.startswith("cos to ")]
    tables.show(
        table,
        pin=("rank", "doc_id"),
        column_config={
            "cosine": st.column_config.NumberColumn(format="%.3f", help="cos(query, document)"),
            **{
                c: st.column_config.NumberColumn(
                    format="%.3f",
                    help=f"cos(document, missed target {c[7:]}): near 1 = a near-duplicate of it",
                )
                for c in cos_cols
            },
            "run score": st.column_config.NumberColumn(format="%.4f"),
            "BM25 rank": st.column_config.NumberColumn(
                help="best rank of the document's BM25 tie group among all documents; empty: BM25 score 0 (no "
                "query term in it)"
            ),
            "document": st.column_config.TextColumn(width="large"),
        },
    )
    if hidden:
        st.caption(
            f"cos to: the cosine of each document to the targets shown as cards ({len(cos_cols)}); "
            f"the other {len(hidden)} targets' are left out (show all targets as cards to see them)."
        )
else:
    st.warning(f"The run has no results for query {escape_md(qid)}: it scores 0 on every metric.")
