"""What a user holds, a path, a record or a plain dict, as the records of :mod:`diagnose.data`: :func:`as_qrels`
(``{query_id: {doc_id: grade}}``) and :func:`as_run` (``{query_id: {doc_id: score}}``, ordered like trec_eval). Read
by :func:`diagnose.evaluate`, :class:`diagnose.analysis.Analysis` and the CLI."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.data import DataError, Dataset, Qrels, Run, ValidationReport
from diagnose.io.qrels import read_qrels
from diagnose.io.run_order import trec_order
from diagnose.io.runs import read_run
from diagnose.runtime.lazy import pandas as pd

PathLike = str | Path


def _nested(given: Mapping, name: str, value: str, hint: str = "") -> Iterator[tuple[Any, Any, Any]]:
    """``(query_id, doc_id, value)`` of a ``{query_id: {doc_id: value}}`` dict, in its order; a query whose value is
    not a dict is refused when reached, naming it (``name``: the parameter, ``value``: what each document maps to)."""
    for qid, docs in given.items():
        if not isinstance(docs, Mapping):
            raise DataError(
                f"{name}[{qid!r}] is a {type(docs).__name__}; expected a dict {{doc_id: {value}}} per query{hint}.",
                param=name,
            )
        for doc, v in docs.items():
            yield qid, doc, v


def as_qrels(qrels: Qrels | Dataset | PathLike | Mapping[str, Mapping[str, int]]) -> Qrels:
    """Qrels from a :class:`Qrels`, a :class:`Dataset`, a file path, or ``{query_id: {doc_id: grade}}``.

    Grades must be integers (``True``/``False`` are refused: write 1/0); ids are converted with ``str``."""
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, Dataset):
        return qrels.qrels
    if isinstance(qrels, str | Path):
        return read_qrels(qrels)
    if isinstance(qrels, Mapping):
        q, d, g = [], [], []
        for qid, doc, grade in _nested(qrels, "qrels", "grade"):
            if isinstance(grade, bool) or not isinstance(grade, int | np.integer):
                raise DataError(
                    f"qrels[{qid!r}][{doc!r}] = {grade!r}: grades are integers (0 = not relevant, > 0 = relevant)."
                )
            q.append(str(qid))
            d.append(str(doc))
            g.append(int(grade))
        if not q:
            raise DataError("The qrels dict is empty: give at least one {query_id: {doc_id: grade}}.")
        df = pd.DataFrame(
            {
                "query_id": pd.Series(q, dtype=object),
                "doc_id": pd.Series(d, dtype=object),
                "relevance": np.asarray(g, dtype=np.int64),
            }
        )
        return Qrels(df, source="dict")
    raise DataError(
        f"qrels: expected a path, a Qrels, a Dataset or a dict {{query_id: {{doc_id: grade}}}}, got {type(qrels).__name__}.",
        param="qrels",
    )


def as_run(
    run: Run | PathLike | Mapping[str, Mapping[str, float]],
    *,
    name: str | None = None,
    report: ValidationReport | None = None,
) -> Run:
    """A :class:`Run` from a Run, a run file, or ``{query_id: {doc_id: score}}``.

    A dict is ordered like a TREC file (trec_eval's order: score descending, ties by doc id descending; scores
    compared as float32, see :mod:`diagnose.io`); scores must be finite numbers. ``name`` renames the run."""
    from dataclasses import replace

    if isinstance(run, Run):
        return run if name is None or name == run.name else replace(run, name=name)
    if isinstance(run, str | Path):
        return read_run(run, name=name, report=report)
    if isinstance(run, Mapping):
        q, d, s = [], [], []
        hint = " (for a ranked list without scores, use a Run or a live retriever)"
        for qid, doc, score in _nested(run, "run", "score", hint):
            if isinstance(score, bool) or not isinstance(score, int | float | np.integer | np.floating):
                raise DataError(f"run[{qid!r}][{doc!r}] = {score!r}: scores are numbers.")
            if not np.isfinite(score):
                raise DataError(f"run[{qid!r}][{doc!r}] = {score!r}: scores must be finite.")
            q.append(str(qid))
            d.append(str(doc))
            s.append(float(score))
        scores = np.asarray(s, dtype=np.float64)
        order = trec_order(q, d, scores) if q else np.zeros(0, dtype=np.int64)
        lists: dict[str, list[tuple[str, float]]] = {}
        for i in order.tolist():
            lists.setdefault(q[i], []).append((d[i], s[i]))
        return Run.from_ranked_lists(name or "run", lists, source="dict")
    raise DataError(
        f"run {name or ''!r}: expected a path, a Run or a dict {{query_id: {{doc_id: score}}}}, got "
        f"{type(run).__name__} (a live retriever goes to Analysis(runs=...) or diagnose.run_retriever).",
        param="run",
    )
