"""What the app's metric tables show beyond the runs' metrics: the level of a chunk corpus' metrics (chunks or
documents, read from :meth:`Analysis.metrics(level=...) <diagnose.analysis.Analysis.metrics>`'s evaluations) and the
span-based context precision and recall of a golden set with located spans (:meth:`Analysis.context`). Nothing is
computed here: the analysis computes and memoises, the pages draw."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from diagnose.ui.state import Bundle

LEVEL_KEY = "metrics_level"
KEPT_LEVEL = (
    "_metrics_level"  # Streamlit drops a widget's state on a page without it: the choice is kept here
)
LEVELS = {
    "chunk": "chunks (the corpus' ids)",
    "document": "documents (each at the rank of its best chunk)",
}
LEVEL_HELP = (
    "A corpus of chunks is scored at two levels: its chunks, as the runs return them and the golden set judges "
    "them, or its documents (a document retrieved at the rank of its best chunk, judged by its best chunk), as "
    "`diagnose evaluate` reports under document_level. Judgements given on documents are inherited by every chunk, "
    "which keeps chunk-level recall low by construction: read the document level then."
)


def is_chunked(b: Bundle) -> bool:
    """Whether the data is a chunk corpus (parents from --parent-field / the sidebar, or ids DOC#N)."""
    return b.analysis.chunks is not None


def level_choice(b: Bundle) -> str:
    """For a chunk corpus, the chunk / document level radio; ``"chunk"`` for a corpus of documents, where both
    levels are the same (no widget drawn). The choice carries across pages: Streamlit forgets a widget's state on
    a page that does not draw it, so it is kept under :data:`KEPT_LEVEL` and given back to the radio each run."""
    if not is_chunked(b):
        return "chunk"
    st.session_state[LEVEL_KEY] = st.session_state.get(KEPT_LEVEL, "chunk")
    level = st.radio(
        "Metrics of",
        list(LEVELS),
        format_func=LEVELS.__getitem__,
        horizontal=True,
        key=LEVEL_KEY,
        help=LEVEL_HELP,
        on_change=_keep_level,
    )
    return str(level)


def _keep_level() -> None:
    st.session_state[KEPT_LEVEL] = st.session_state[LEVEL_KEY]


def context_columns(b: Bundle, runs: list[str]) -> dict[str, list[float]]:
    """With located reference spans: ``context_precision@k`` and ``context_recall@k`` at the chosen k, one value
    per run of ``runs`` (:meth:`Analysis.context`); empty without spans (no column, not zeros)."""
    if not b.ds.qrels.spans:
        return {}
    k = b.k
    scores = [b.analysis.context(name, k).aggregate for name in runs]
    return {m: [s[m] for s in scores] for m in (f"context_precision@{k}", f"context_recall@{k}")}
