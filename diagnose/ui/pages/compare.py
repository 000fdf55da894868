"""Compare runs: every run against a reference, paired tests with Holm correction, and per-query deltas."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.failures import CLASS_LABELS
from diagnose.ui import metric_views, state, tables
from diagnose.ui.text import escape_md

b = state.bundle()
st.title("Compare runs")
names = b.run_names
if len(names) < 2:
    st.info("Comparing needs at least two runs.")
    st.stop()

k = b.k
level = metric_views.level_choice(b)
if level == "document":
    st.caption(
        "The comparisons, the Tukey test, the queries needed and the per-query differences are at the document "
        "level; the failure classes, the fusion and the slices stay over the chunks the runs return."
    )
c1, c2 = st.columns([1, 2])
ref = c1.selectbox("Reference run", names, key="cmp_ref", help="every other run is compared with this one")
options = [f"{fam}@{k}" for fam in state.FAMILIES]
chosen = c2.multiselect("Metrics", options, default=[f"ndcg@{k}", f"recall@{k}"], key="cmp_metrics")
if not chosen:
    st.info("Choose at least one metric.")
    st.stop()

comparisons = b.analysis.comparisons(ref, tuple(chosen), level=level)
st.caption(
    f"{len(comparisons)} comparisons (every run vs {escape_md(ref)} on {len(chosen)} metric(s)), one family: "
    "significance = paired randomization test, Holm-corrected over the family (alpha 0.05); 95% paired bootstrap "
    "CIs of the mean difference (not adjusted). Differences are run minus reference."
)
rows = [
    {
        "run": c.run,
        "metric": c.metric,
        "mean diff": c.mean_diff,
        "CI low": c.ci_low,
        "CI high": c.ci_high,
        "p (randomization)": c.p_randomization,
        "p (Holm)": c.p_holm,
        "p (BH)": c.p_bh,
        "effect size": c.effect_size,
        "significant": c.significant,
        "wins": c.wins,
        "ties": c.ties,
        "losses": c.losses,
        "min. detectable diff": c.mdd,
    }
    for c in comparisons
]
tables.show(
    pd.DataFrame(rows),
    pin=("run", "metric"),
    column_config={
        c: st.column_config.NumberColumn(format="%.4f")
        for c in (
            "mean diff",
            "CI low",
            "CI high",
            "p (randomization)",
            "p (Holm)",
            "p (BH)",
            "min. detectable diff",
        )
    }
    | {
        "effect size": st.column_config.NumberColumn(
            format="%.2f", help="paired Cohen's d_z = mean difference / sd of the per-query differences"
        )
    },
)
st.markdown("\n".join(f"- {escape_md(c.verdict())}" for c in comparisons))
st.caption(
    "p (Holm) controls the family-wise error and decides *significant*; p (BH) is Benjamini-Hochberg's false "
    "discovery rate over the same family, for screening many runs."
)
with st.expander("How many queries would it take?"):
    diff = st.number_input(
        "Smallest difference worth detecting",
        min_value=0.001,
        max_value=1.0,
        value=0.02,
        step=0.005,
        format="%.3f",
        key="cmp_detect",
    )
    need = b.analysis.queries_needed(float(diff), ref, chosen, level=level)
    tables.show(
        need,
        key="cmp_need",
        column_config={"sd_of_differences": st.column_config.NumberColumn(format="%.3f")},
    )
    st.caption(
        "Topic-set size (Sakai): queries a paired t-test at alpha 0.05 needs to detect that difference with 80% "
        "power, from the standard deviation of the per-query differences observed on this golden set."
    )
if len(names) >= 3:
    st.subheader("Every pair at once (randomised Tukey HSD)")
    tukey = b.analysis.tukey(chosen[0], level=level)
    tables.show(
        tukey,
        key="cmp_tukey",
        column_config={
            "mean_diff": st.column_config.NumberColumn(format="%.4f"),
            "effect_size": st.column_config.NumberColumn(format="%.2f"),
            "p_tukey": st.column_config.NumberColumn(format="%.4f"),
        },
    )
    st.caption(
        f"{escape_md(chosen[0])}: each query's scores shuffled among the {len(names)} runs; a pair differs when the "
        "range of the shuffled run means rarely reaches its observed difference (family-wise error controlled over "
        "all pairs, no further correction)."
    )

st.subheader("Per-query differences")
others = [n for n in names if n != ref]
d1, d2 = st.columns(2)
other = d1.selectbox("Run", others, key="cmp_other")
metric = d2.selectbox("Metric", chosen, key="cmp_metric")

deltas = b.analysis.query_deltas(other, ref, metric, level=level)
counts = deltas["change"].value_counts()
m = st.columns(5)
for col, what in zip(m, ("fixed", "better", "same", "worse", "broken"), strict=True):
    col.metric(what.capitalize(), int(counts.get(what, 0)))
st.caption(
    f"fixed: {escape_md(ref)} scored 0 and {escape_md(other)} > 0; broken: the reverse. One bar per golden query, "
    f"sorted by {metric} difference ({escape_md(other)} minus {escape_md(ref)})."
)
st.altair_chart(
    charts.delta_chart(deltas, metric=metric, run=other, reference=ref), width="stretch", height=400
)


def _classes(run: str) -> dict[str, str]:
    """query id -> the failure classes of its missed relevant documents in ``run`` (at k, the sidebar's definition)."""
    out: dict[str, set[str]] = {}
    if not b.ready:
        return {}
    for f in b.diagnosis(run).failures:
        out.setdefault(f.query_id, set()).add(CLASS_LABELS[f.cls])
    return {q: ", ".join(sorted(c)) for q, c in out.items()}


failed_ref, failed_other = _classes(ref), _classes(other)
q_text = b.ds.queries.text_of()
table = deltas.rename(columns={"reference": f"{metric}: {ref}", "other": f"{metric}: {other}"})
table.insert(1, "query", [q_text.get(q, "") for q in deltas["query_id"]])
table[f"fails in {ref}"] = [failed_ref.get(q, "") for q in deltas["query_id"]]
table[f"fails in {other}"] = [failed_other.get(q, "") for q in deltas["query_id"]]
st.caption(
    f"The failure class columns say why a query fails at k={k} in each run (empty: it does not fail). Click a row "
    "to open the query in the inspector, in the run where it fails."
)
event = tables.show(
    table,
    height=400,
    on_select="rerun",
    selection_mode="single-row",
    key="cmp_table",
    column_config={
        "query": st.column_config.TextColumn(width="medium"),
        "delta": st.column_config.NumberColumn(format="%+.4f"),
    },
)
rows = ((event or {}).get("selection") or {}).get("rows") or []
if rows:
    qid = str(table.iloc[rows[0]]["query_id"])
    if qid in failed_other:
        state.open_query(qid, run=other)
    elif qid in failed_ref:
        state.open_query(qid, run=ref)
    else:
        st.info(f"Query {escape_md(qid)} fails in neither run at k={k}: nothing to inspect.")

st.subheader(f"What if {escape_md(ref)} and {escape_md(other)} were fused?")
fusions = b.analysis.fusion(ref, other, k=b.k)
tables.show(
    fusions,
    column_config={
        c: st.column_config.NumberColumn(format="%.4f") for c in fusions.columns if "@" in c or c == "mrr"
    },
)
best = fusions.sort_values(f"ndcg@{k}", ascending=False).iloc[0]
st.caption(
    f"Reciprocal rank fusion (k=60) and weighted fusion of min-max normalised scores, scored on the same golden "
    f"queries. recovers_X: queries X fails at k={k} (no relevant document in its top k) that the fusion does not; "
    f"loses_X: the reverse. Best nDCG@{k} here: {escape_md(best['fusion'])} ({best[f'ndcg@{k}']:.3f})."
)

fields = [c for c in b.ds.queries.df.columns if c not in ("query_id", "text")]
if fields:
    st.subheader("Slices")
    s1, s2 = st.columns(2)
    field = s1.selectbox("Query metadata field", fields, key="cmp_slice")
    slice_metric = s2.selectbox("Metric", options, index=options.index(metric), key="cmp_slice_metric")
    sliced = b.analysis.slices(field, [slice_metric])
    pivot = sliced.pivot_table(index=[field, "n"], columns="run", values=slice_metric, sort=True)
    pivot = pivot[[n for n in names if n in pivot.columns]].reset_index()
    tables.show(
        pivot,
        column_config={n: st.column_config.NumberColumn(format="%.3f") for n in names},
    )
    st.caption(
        f"Mean {slice_metric} per value of the queries' {escape_md(field)} field (n golden queries each). A mean "
        "over a handful of queries is noisy: read small slices as hints. To compare recall with and without a "
        "metadata filter, load the filtered and the unfiltered runs as two runs and compare them above."
    )
