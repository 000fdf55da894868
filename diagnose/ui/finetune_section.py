"""The Model choice page's fine-tuning section: :meth:`diagnose.analysis.Analysis.finetune` behind a form (a training
qrels file, or cross-fitting folds; the output folder), then base vs tuned with the paired tests, the failures
recovered and broken per class, and where the model was saved."""

from __future__ import annotations

import weakref
from typing import Any

import pandas as pd
import streamlit as st

from diagnose.data import DataError
from diagnose.io import read_qrels
from diagnose.ui import tables
from diagnose.ui.progress import StatusProgress
from diagnose.ui.text import escape_md


def render(b: Any) -> None:
    """The section for the bundle ``b`` (its analysis); the last result stays in the session."""
    st.subheader("Fine-tune the model on this golden set")
    st.caption(
        "Trains the model (sentence-transformers' trainer, MultipleNegativesRankingLoss, hard negatives from the "
        "dense and BM25 results) and measures it on queries it never saw: on a training qrels file if you give one "
        "(measured on this golden set), else by cross-fitting (each query scored by a model trained on the other "
        "folds, none of its relevant documents in training). The cost is shown before training starts. The same as "
        "`diagnose finetune`."
    )
    with st.form("finetune_form"):
        c1, c2, c3 = st.columns([3, 1, 3])
        train = c1.text_input("Training qrels file (optional)", key="finetune_train")
        folds = c2.number_input("Folds", min_value=2, max_value=20, value=5, key="finetune_folds")
        out = c3.text_input("Save the model to", key="finetune_out", placeholder="/path/to/tuned-model")
        go = st.form_submit_button("Fine-tune", key="finetune_submit")
    if go:
        _run(b, train.strip(), int(folds), out.strip())
    result = st.session_state.get("finetune_result")
    if result is not None:
        _show(result)


def tuned(b: Any) -> Any:
    """The last fine-tuning result of the bundle's analysis, for the remedy matrix's ``finetune`` column; None before
    one, or once the data or the model changed (another analysis)."""
    of = st.session_state.get("finetune_analysis")
    if of is None or of() is not b.analysis:
        return None
    return st.session_state.get("finetune_result")


def _run(b: Any, train: str, folds: int, out: str) -> None:
    if not out:
        st.error("Give the folder to save the model to.")
        return
    progress = StatusProgress()
    try:
        qrels = read_qrels(train) if train else None
        with b.analysis.reporting(progress):
            st.session_state["finetune_result"] = b.analysis.finetune(
                out, train_qrels=qrels, folds=None if qrels is not None else folds,
                announce=lambda cost: progress.step(cost.sentence()),
            )  # fmt: skip
            st.session_state["finetune_analysis"] = weakref.ref(b.analysis)  # not kept alive by the session
    except DataError as e:
        st.error(str(e))


def _show(result: Any) -> None:
    rows = [
        {"metric": m, "base": result.base[m], "tuned": v, "change": v - result.base[m]}
        for m, v in result.tuned.items()
    ]
    tables.show(pd.DataFrame(rows))
    for c in result.comparisons:
        st.write(c.verdict())
    st.write(
        f"Failures recovered per class: {result.recovered or 'none'}; broken: {result.broken or 'none'}. "
        f"Model trained on {result.train_pairs:,} pairs, saved to `{result.model_path}` (use it as the model), "
        f"{result.seconds:.0f} s."
    )
    if result.excluded_by_text:
        shown = ", ".join(result.excluded_by_text[:5]) + (", ..." if len(result.excluded_by_text) > 5 else "")
        st.warning(
            f"{len(result.excluded_by_text)} training queries asked an evaluated question under another id and were "
            f"left out of training ({escape_md(shown)})."
        )
