"""Compare runs: every run against a reference, paired tests with Holm correction, and per-query deltas."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.ui import state
from diagnose.ui.text import escape_md

b = state.bundle()
st.title("Compare runs")
names = b.run_names
if len(names) < 2:
    st.info("Comparing needs at least two runs.")
    st.stop()

k = b.k
c1, c2 = st.columns([1, 2])
ref = c1.selectbox("Reference run", names, key="cmp_ref", help="every other run is compared with this one")
options = [f"{fam}@{k}" for fam in state.FAMILIES]
chosen = c2.multiselect("Metrics", options, default=[f"ndcg@{k}", f"recall@{k}"], key="cmp_metrics")
if not chosen:
    st.info("Choose at least one metric.")
    st.stop()

evs = b.evaluations()
comparisons = state.comparisons(b, ref, tuple(chosen))
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
        "significant": c.significant,
        "wins": c.wins,
        "ties": c.ties,
        "losses": c.losses,
        "min. detectable diff": c.mdd,
    }
    for c in comparisons
]
st.dataframe(
    pd.DataFrame(rows),
    hide_index=True,
    width="stretch",
    column_config={
        c: st.column_config.NumberColumn(format="%.4f")
        for c in ("mean diff", "CI low", "CI high", "p (randomization)", "p (Holm)", "min. detectable diff")
    },
)
st.markdown("\n".join(f"- {escape_md(c.verdict())}" for c in comparisons))

st.subheader("Per-query differences")
others = [n for n in names if n != ref]
d1, d2 = st.columns(2)
other = d1.selectbox("Run", others, key="cmp_other")
metric = d2.selectbox("Metric", chosen, key="cmp_metric")
from diagnose.compare import per_query_deltas  # noqa: E402

deltas = per_query_deltas(evs[ref], evs[other], metric)
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
with st.expander("Per-query table"):
    st.dataframe(deltas, hide_index=True, width="stretch")
