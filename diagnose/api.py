"""The light verbs of the Python API: :func:`load` (:mod:`diagnose.io.load`), :func:`evaluate` and :func:`write_qrels`
(what a user holds, a path, a record or a plain dict, becomes a record in :mod:`diagnose.io.convert`).

Nothing here imports torch, sentence-transformers, umap or Streamlit: ``diagnose.evaluate`` stays a light call
(the embedding and diagnosis pipeline is :class:`diagnose.analysis.Analysis`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diagnose import checks
from diagnose.data import DataError, Dataset, Qrels, Run
from diagnose.io.convert import as_qrels, as_run
from diagnose.io.dataset import check_run_matches_qrels
from diagnose.io.load import PathLike, load
from diagnose.io.qrels_writers import write_beir_qrels
from diagnose.io.spans import spans_path_for, write_spans
from diagnose.metrics import DEFAULT_KS, evaluate_many, expand_names
from diagnose.metrics.identical import drop_identical_ids
from diagnose.runtime.lazy import pandas as pd

__all__ = ["evaluate", "load", "write_qrels"]


def evaluate(
    qrels: Qrels | Dataset | PathLike | Mapping[str, Mapping[str, int]],
    run: Run | PathLike | Mapping[str, Mapping[str, float]] | Mapping[str, Any],
    *,
    k: int | Sequence[int] = DEFAULT_KS,
    metrics: Sequence[str] | str | None = None,
    ignore_identical_ids: bool = False,
) -> pd.DataFrame:
    """Score one run (or several) against a golden set, with trec_eval's conventions (docs/metrics.md).

    ``qrels``: a path, :class:`Qrels`, :class:`Dataset` or ``{query_id: {doc_id: grade}}``. ``run``: a path, a
    :class:`Run`, ``{query_id: {doc_id: score}}``, or a dict ``{name: run}`` of several. ``k``: cutoffs for the
    metric families; ``metrics``: names such as ``"ndcg@10"``, ``"recall"`` (taken at every k) or ``"mrr"``
    (default: precision, recall, hit_rate, mrr, ndcg and map at every k, then mrr, map, r_precision).
    ``ignore_identical_ids``: drop every retrieved document whose id is the query's before scoring, the later
    documents moving up one rank (BEIR's convention for collections whose queries are documents, MTEB's
    ``ignore_identical_ids``: :mod:`diagnose.metrics.identical`).

    Returns one row per run (index ``run``: the file name, the Run's name, the dict's key; a single
    ``{query_id: {doc_id: score}}`` dict is the row ``"unnamed run"``, give ``{name: run}`` to name it), one column
    per metric: the mean over the golden queries (queries with
    at least one relevant document; those missing from the run score 0, like ``trec_eval -c``). A run that can only
    score 0 (no results, ``{}``; no golden query id; the golden set itself) is refused as ``diagnose evaluate``
    refuses it (:func:`diagnose.io.check_run_matches_qrels`), ``DataError(param="run")``. Per-query values:
    :func:`diagnose.metrics.evaluate` or ``Analysis.per_query``.

    >>> diagnose.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.5}}, metrics=["ndcg@10", "mrr"])  # doctest: +SKIP
                 ndcg@10  mrr
    run
    unnamed run      1.0  1.0
    """

    ks = checks.cutoffs(k, "k")
    if metrics is not None:
        metrics = checks.strings(metrics, "metrics", what="metric names such as 'ndcg@10' or 'recall'")
    names = expand_names(metrics, ks)
    q = as_qrels(qrels)
    runs = _runs_argument(run)
    for one in runs.values():  # as the CLI does: a run that can only score 0 is an error, not a row of zeros
        try:
            check_run_matches_qrels(one, q)
        except DataError as e:
            raise DataError(str(e), param=e.param or "run") from None
    if checks.flag(ignore_identical_ids, "ignore_identical_ids"):
        runs = {name: drop_identical_ids(r) for name, r in runs.items()}
    results = evaluate_many(q, runs, names)
    table = pd.DataFrame([ev.aggregate for ev in results.values()], index=pd.Index(list(results), name="run"))
    return table[[str(n) for n in names]]


UNNAMED_RUN = "unnamed run"  # the row of a single {query_id: {doc_id: score}} dict in evaluate()


def _runs_argument(run: Any) -> dict[str, Run]:
    """``run`` as ``{name: Run}``: one run, or a dict of named runs (told apart from one ``{qid: {doc: score}}``
    dict by its values: each is a path, a Run, or itself a ``{qid: {doc: score}}`` dict)."""
    if isinstance(run, Mapping) and run and all(_is_one_run(v) for v in run.values()):
        return {str(n): as_run(r, name=str(n)) for n, r in run.items()}
    one = as_run(run, name=UNNAMED_RUN if isinstance(run, Mapping) else None)
    return {one.name: one}


def _is_one_run(value: Any) -> bool:
    """A path, a Run, or a ``{qid: {doc: score}}`` dict (values are dicts of numbers)."""
    if isinstance(value, Run | str | Path):
        return True
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(
            isinstance(docs, Mapping) and not any(isinstance(v, Mapping) for v in docs.values())
            for docs in value.values()
        )
    )


def write_qrels(data: Dataset | Qrels, path: PathLike, *, spans_path: PathLike | None = None) -> Path | None:
    """Write the judgements of ``data`` as a BEIR qrels TSV at ``path`` in the corpus' id space (a golden set of
    reference contexts: as mapped to the corpus, :mod:`diagnose.io.spans`), so the mapping is done once; when the
    qrels carry spans, also the spans as JSONL at ``spans_path`` (default: :func:`~diagnose.io.spans.spans_path_for`,
    ``qrels.tsv`` -> ``qrels.spans.jsonl``). Returns the spans file written, or None.

    >>> ds = diagnose.load(corpus="corpus.jsonl", qrels="golden.json")   # doctest: +SKIP
    >>> diagnose.write_qrels(ds, "qrels.tsv")                           # doctest: +SKIP
    PosixPath('qrels.spans.jsonl')
    """
    qrels = as_qrels(data)
    write_beir_qrels(qrels, path)
    if not qrels.spans:
        return None
    out = Path(spans_path) if spans_path is not None else spans_path_for(path)
    write_spans(qrels.spans, out)
    return out
