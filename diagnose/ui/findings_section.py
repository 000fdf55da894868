"""The answer first: the findings block that opens the Overview and the Worst queries pages (what to fix, ranked by
net gain: :meth:`diagnose.analysis.Analysis.findings`), with its chart; the long explanation sits behind a help icon.

The list's lines are :meth:`diagnose.whatif.findings.Action.sentence`, the same as the first lines of ``diagnose
failures`` and the report's first section."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from diagnose import charts
from diagnose.ui.text import escape_md

#: The help icon's text: what the numbers of a sentence mean.
HELP = (
    "Recovered: failures of the listed classes that the changed run fixes at k. Breaks: golden queries hit today "
    "and missed after the change. p: the paired randomization test of the mean hit-rate difference over every "
    "golden query. The tags give the failure classes and the cost: a configuration change, a re-index, re-chunking, "
    "training or judging. Pairs to judge are not measured: they come last. The Worst queries page has the evidence; "
    "its expanders hold every remedy on every class."
)


def show(b: Any, *, chart: bool = True, title: str = "What to fix first") -> Any:
    """The findings of the sidebar's run at its k and failure definition (None before the vectors are ready):
    the numbered sentences, the changes not advised, a one-line caption with its help icon and, with ``chart``, the
    bars of what each measured change recovers and breaks."""
    st.subheader(title)
    if not b.ready:
        st.caption(
            "The ranked changes appear here when the vectors are ready (the metrics below are ready now)."
        )
        return None
    with st.spinner("Measuring each change on your data…"):
        found = b.analysis.findings(b.selected_run, k=b.k, failure=b.mode)
    if found:
        st.markdown("\n".join(f"{a.rank}. {escape_md(a.sentence())}" for a in found))
    else:
        st.info(escape_md((found.lines()[1:] or [found.head()])[0]))
    for a in found.rejected:
        st.caption(escape_md(a.sentence()))
    st.caption(
        f"Run {escape_md(found.run)}: {found.total} {found.unit} at k={found.k}. Each change was measured on this "
        "run, then ranked by net gain.",
        help=HELP,
    )
    measured = [a for a in found if a.recovered is not None]
    if chart and measured:
        frame = pd.DataFrame(
            {
                "action": [f"{a.rank}. {short(a.change)}" for a in measured],
                "recovered": [a.recovered for a in measured],
                "breaks": [a.lost_hits or 0 for a in measured],
            }
        )
        # st.altair_chart sizes the whole chart (title, legend, axis) to its height; the builder gives the bars' height
        st.altair_chart(
            charts.findings_bars(frame, unit=found.unit), width="stretch", height=44 * len(frame) + 150
        )
    return found


def short(change: str) -> str:
    """A change's words up to its colon ("Fix the ANN index: exact search finds these" -> "Fix the ANN index")."""
    return change.split(":", 1)[0]
