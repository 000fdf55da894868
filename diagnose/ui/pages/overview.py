"""Overview: what to fix first (the findings and their chart), then the metrics of every run and baseline at k with
quality bands, curves over k, failure classes."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose import charts, defaults
from diagnose.failures import CLASS_LABELS, CLASSES
from diagnose.metrics import BANDS, REGISTRY
from diagnose.ui import findings_section, metric_views, state, tables
from diagnose.ui.text import escape_md

b = state.bundle()
k = b.k
ds = b.ds

st.title("Overview")

# ---------------------------------------------------------------------------------------------- the answer first
findings_section.show(b)

st.caption(
    f"{escape_md(b.settings.spec.label)}: {ds.corpus.size_phrase()}, {len(b.golden):,} golden queries. "
    f"Model {escape_md(b.encoder_label)}, k={k}. A query fails when "
    f"{'no relevant document is in its top k' if b.mode == 'hit' else 'any relevant document is missing from its top k'}."
)
n_warn = len(ds.report.warnings)
if n_warn:
    st.warning(
        f"The validation found {n_warn} problem{'s' if n_warn > 1 else ''} in the input (e.g. "
        f"{escape_md(ds.report.warnings[0].message)}).",
        icon=":material/warning:",
    )
    st.page_link(state.page_path("data"), label="Open the validation report", icon=":material/fact_check:")

# ---------------------------------------------------------------------------------------------- metrics table
LEVEL_WORDS = {
    "chunk": "chunks, as the runs return them",
    "document": "documents, each at the rank of its best chunk and judged by its best chunk",
}
st.subheader(f"Metrics at k={k}")
level = metric_views.level_choice(b)
table = b.metrics_table(level)
diagnoses = {name: b.diagnosis(name) for name in b.run_names} if b.ready else {}
table["failed queries"] = [len(diagnoses[n].failed_queries) if n in diagnoses else None for n in table["run"]]
table["missed pairs"] = [diagnoses[n].n_missed_pairs if n in diagnoses else None for n in table["run"]]
metric_cols = [f"{fam}@{k}" for fam in state.FAMILIES]
# banded, charted and bounded below: nDCG and recall at k, the headline's graded and set measures at the cutoff (the
# failures count the queries without a hit at k; mrr has no cutoff)
charted = [f"ndcg@{k}", f"recall@{k}"]
context = metric_views.context_columns(b, list(table["run"]))
for col, values in context.items():
    table[col] = values
same_n = table["queries"].nunique() == 1
latency = b.analysis.latency(k)
latency_cols = ["latency_p50_ms", "latency_p95_ms", f"recall@{k}_per_ms"] if latency else []
for col in latency_cols:
    table[col] = [latency.get(n, {}).get(col) for n in table["run"]]
shown = table[
    [
        "run",
        *([] if same_n else ["queries"]),
        *metric_cols,
        *context,
        "failed queries",
        "missed pairs",
        *latency_cols,
    ]
].copy()
for m in charted:
    shown.insert(shown.columns.get_loc(m) + 1, f"{m.split('@')[0]} band", table[f"band:{m}"])


def _colour(col: pd.Series) -> list[str]:
    """The quality band's colour (the same as in the charts), light enough to read the number on it."""
    bands = table[f"band:{col.name}"]
    return [
        f"background-color: {charts.BAND_COLORS.get(x, charts.OTHER_COLOR)}55; color: #1f1f1f" for x in bands
    ]


# precision@k is bounded by R/k (0.1 at k=10 with one relevant document per query): a band would call every run poor
coloured = [m for fam, m in zip(state.FAMILIES, metric_cols, strict=True) if REGISTRY[fam].band_in_tables]
# as text: Streamlit draws a missing number as "None" (a file run has no latency; the counts wait for the vectors)
for col in ("failed queries", "missed pairs"):
    shown[col] = ["computing…" if pd.isna(v) else f"{int(v):,}" for v in shown[col]]
for col in latency_cols:
    shown[col] = [tables.cell(v, "%.3f" if col.endswith("per_ms") else "%.1f") for v in shown[col]]
# the kind in the run's cell as the bar chart labels it ("bm25 (baseline)"), drawn by the Styler so the data keeps the
# run's name: without a kind column the table fits a 1,400 px page (tests/test_browser.py)
kind_of = dict(zip(table["run"], table["kind"], strict=True))
styled = shown.style.apply(_colour, subset=coloured).format(
    {m: "{:.3f}" for m in [*metric_cols, *context]}
    | {"run": lambda n: n if kind_of.get(n) == "your run" else f"{n} ({kind_of.get(n)})"},
    na_rep=tables.MISSING,
)
tables.show(
    styled,
    key="metrics_table",
    column_config={
        "failed queries": st.column_config.TextColumn(
            "failed queries",
            help=f"golden queries that fail at k={k} ({b.mode})"
            + ("; the diagnosis is over the chunks the runs return" if metric_views.is_chunked(b) else ""),
        ),
        "missed pairs": st.column_config.TextColumn(
            "missed pairs",
            help="(failed query, relevant document missing from its top k) pairs: the failure classes below count "
            "these",
        ),
        **{
            c: st.column_config.TextColumn(
                help="live retrievers: wall-clock milliseconds per query (median, 95th percentile) and recall@k "
                "per millisecond of the median query",
            )
            for c in latency_cols
        },
        **{
            c: st.column_config.NumberColumn(
                help="span-based, without an LLM: the share of the tokens of the top k that lie in the reference "
                "contexts (precision) and the share of the reference contexts' tokens the top k cover (recall); "
                "docs/metrics.md"
            )
            for c in context
        },
    },
)
legend = " · ".join(
    f"{fam}: poor < {a:g} ≤ acceptable < {bb:g} ≤ good < {c:g} ≤ excellent"
    for fam in ("ndcg", "mrr", "recall")
    for a, bb, c in [REGISTRY[fam].band]
)
st.caption(
    (f"Every run is scored on the same {int(table['queries'].iloc[0]):,} golden queries. " if same_n else "")
    + "Cell colours are quality bands. Baselines are computed here."
    + (f" Metrics of the {LEVEL_WORDS[level]}." if metric_views.is_chunked(b) else ""),
    help=f"Quality bands ({', '.join(BANDS)}; the colours of the bar chart's legend; precision@{k} is left "
    f"uncoloured because it cannot exceed (relevant documents)/{k}) are rules of thumb for a RAG retriever: {legend}. "
    f"Baselines (depth {defaults.DEPTH}): BM25 ({b.settings.bm25_engine}), exact dense search with the chosen model, "
    "and their reciprocal rank fusion (hybrid, k=60).",
)

bars = pd.DataFrame(
    [
        {
            "run": r.run,
            "kind": "baseline" if r.kind == "baseline" else "run",
            "metric": m,
            "value": r.v,
        }
        for m in charted
        for r in table[["run", "kind", m]].rename(columns={m: "v"}).itertuples()
    ]
)
st.altair_chart(charts.metrics_bar(bars, k=k), width="stretch")

# ---------------------------------------------------------------------------------------------- holes
st.subheader(f"How much of the top {k} is judged")
if metric_views.is_chunked(b):
    st.caption("Over the chunks the runs return (the corpus' ids), whichever level the table above shows.")
available = None if b.ready else b.run_names
coverage = b.analysis.evaluations([f"judged@{k}", f"hole@{k}"], runs=available)
bounds = b.analysis.bounds(charted, runs=available).set_index(["run", "metric"])
holes = pd.DataFrame(
    [
        {
            "run": name,
            f"judged@{k}": ev.aggregate[f"judged@{k}"],
            f"hole@{k}": ev.aggregate[f"hole@{k}"],
            **{f"{m} {side}": bounds.loc[(name, m), side] for m in charted for side in ("lower", "upper")},
        }
        for name, ev in coverage.items()
    ]
)
tables.show(
    holes,
    key="holes_table",
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in holes.columns if c != "run"},
)
st.caption(
    "A wide gap between lower and upper means the golden set, not the retriever, decides the number.",
    help=f"judged@{k}: share of the top {k} with a judgement for the query (ir_measures' Judged); hole@{k}: share "
    "judged for no query (BEIR's Hole). lower = the metric as reported (unjudged = not relevant); upper = the best it "
    "could be if the unjudged documents in the run's list were judged (each relevant or not, at best). Judge the top "
    "documents before trusting a number with a wide gap.",
)

# ---------------------------------------------------------------------------------------------- curves
st.subheader("Curves over k")
evs = b.evaluations(level=level)
ks = sorted({*state.CURVE_KS, k})
rows = []
for name, ev in evs.items():
    for kk in ks:
        for fam in ("recall", "ndcg"):
            rows.append(
                {"run": name, "k": kk, "metric": f"{fam}@k", "value": float(ev.aggregate[f"{fam}@{kk}"])}
            )
curves = pd.DataFrame(rows)
# st.altair_chart sizes the whole chart (title, axes) to its height; the builders give the plot's height.
CURVE_HEIGHT = 360
c1, c2 = st.columns(2)
with c1:
    st.altair_chart(
        charts.curve_over_k(curves[curves["metric"] == "recall@k"], metric="recall", k=k),
        width="stretch",
        height=CURVE_HEIGHT,
    )
with c2:
    st.altair_chart(
        charts.curve_over_k(curves[curves["metric"] == "ndcg@k"], metric="ndcg", k=k),
        width="stretch",
        height=CURVE_HEIGHT,
    )

# ---------------------------------------------------------------------------------------------- failures
st.subheader("Failure classes")
state.wait_for_vectors(b, None, "The failure classes section")
rows = []
for name, d in diagnoses.items():
    for cls in CLASSES:
        n = d.class_counts.get(cls, 0)
        if n:
            rows.append({"run": name, "class": cls, "label": CLASS_LABELS[cls], "count": n})
breakdown = pd.DataFrame(rows, columns=["run", "class", "label", "count"])
if breakdown.empty:
    st.success(f"No run misses a relevant document at k={k}.")
else:
    # Streamlit sizes the whole chart (title, axes, legend) to the spec's height: leave room for the bars.
    n_runs = breakdown["run"].nunique()
    st.altair_chart(charts.failure_breakdown(breakdown), width="stretch", height=max(240, 110 + 36 * n_runs))
    st.caption(
        "One count per missed pair: the bars add up to the table's missed pairs.",
        help="A missed pair is a failed query and a relevant document missing from its top k: a query with three "
        "missed relevant documents counts three times. The Worst queries page lists them for the run chosen in the "
        "sidebar; the Query inspector shows the evidence.",
    )
