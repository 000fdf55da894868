"""ANN index: the recall/latency frontier of approximate indexes over the analysis' vectors (Analysis.ann_frontier),
the Pareto front, the collection's own setting and the cheapest setting recovering the run's index gaps."""

from __future__ import annotations

import streamlit as st

from diagnose import charts
from diagnose.ui import state, tables
from diagnose.ui.progress import StatusProgress
from diagnose.ui.text import escape_md
from diagnose.whatif.ann import QUALITY_FAMILIES, AnnSetting

b = state.bundle()
state.wait_for_vectors(b, "ANN index", "The ANN index page")
k = b.k
run = b.selected_run

st.title("ANN index")
st.caption(
    "A production index is approximate. Here faiss builds HNSW (over M, efConstruction, efSearch) and IVF-Flat (over "
    f"nprobe) indexes over the same vectors and measures each against exact search and the golden set: recall of "
    f"exact search's top {k}, nDCG@{k}, and the median latency of one query on one thread, measured here. Needs the "
    "`[ann]` extra (faiss)."
)

prog = StatusProgress()
with b.analysis.reporting(prog):
    frontier = b.analysis.ann_frontier(run, k=k)
prog.done(f"{len(frontier.settings)} approximate indexes measured")


def _params(point) -> str | None:  # noqa: ANN001 - an AnnPoint or an AnnSetting
    """The params text of a setting as :meth:`AnnFrontier.table` writes it, None without one."""
    return None if point is None else AnnSetting(point.index, point.params).label()[len(point.index) :]


rec = frontier.recovers_index_gap
current = frontier.current
table = frontier.table()
chart = charts.ann_frontier_chart(
    table,
    k=k,
    current=_params(current),
    recovers=_params(rec.setting) if rec.recovers != "none" else None,
)
st.altair_chart(chart, width="stretch")

if current is not None:
    st.markdown(
        f"**The collection's own setting** ({escape_md(AnnSetting(current.index, current.params).label())}): "
        f"recall against exact search {current.recall_vs_exact:.3f}, nDCG@{k} {current.metrics[f'ndcg@{k}']:.4f}, "
        f"{current.latency_p50_ms:.3f} ms per query{' (on the Pareto front)' if current.pareto else ''}."
    )
if rec.setting is not None and rec.recovers != "none":
    lost = f", losing {rec.lost_hits} hit{'s' if rec.lost_hits != 1 else ''}" if rec.lost_hits else ""
    st.markdown(
        f"**Index gaps of {escape_md(run)}**: {escape_md(rec.setting.label())} is the cheapest setting that recovers "
        f"{'all' if rec.recovers == 'all' else 'the most'} ({len(rec.recovered)} of {len(rec.failures)}) of its "
        f"index_gap failures, at {rec.latency_p50_ms:.3f} ms per query{lost} (mean hit_rate@{k} difference "
        f"{rec.mean_diff:+.3f}, paired randomization test p = {rec.p_value:.3g})."
    )
else:
    st.markdown(
        f"**Index gaps of {escape_md(run)}**: {escape_md(rec.note or 'no setting recovers any of them')}."
    )

number = st.column_config.NumberColumn
quality = [f"{family}@{k}" for family in QUALITY_FAMILIES]
shown = table.assign(
    setting=[
        f"{i} {p}" if i != "exact" else "exact search"
        for i, p in zip(table["index"], table["params"], strict=True)
    ]
)
tables.show(
    shown[
        [
            "setting",
            "recall_vs_exact",
            *quality,
            "latency_p50_ms",
            "latency_p95_ms",
            "build_s",
            "memory_mb",
            "pareto",
        ]
    ],  # fmt: skip
    key="ann_table",
    column_config={
        "recall_vs_exact": number(
            "recall vs exact", format="%.3f", help=f"share of exact search's top {k} found"
        ),
        **{m: number(format="%.4f") for m in quality},
        "latency_p50_ms": number("p50 ms", format="%.3f", help="median time of one query, one thread"),
        "latency_p95_ms": number("p95 ms", format="%.3f"),
        "build_s": number("build s", format="%.3f"),
        "memory_mb": number("MiB", format="%.2f", help="the serialized index"),
        "pareto": st.column_config.CheckboxColumn(
            "Pareto", help=f"no other setting is faster and better on nDCG@{k}"
        ),
    },
)
st.caption(
    f"The same as `diagnose ann --run {run} --k {k}`. A collection's own HNSW setting (Chroma's configuration, "
    "Qdrant's hnsw_config, a LanceDB HNSW-type index) is measured as the current setting when the corpus is one."
)
