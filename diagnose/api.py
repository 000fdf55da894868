"""The light verbs of the Python API: :func:`load`, :func:`evaluate` and :func:`write_qrels` (what a user holds, a
path, a record or a plain dict, becomes a record in :mod:`diagnose.io.convert`).

Nothing here imports torch, sentence-transformers, umap or Streamlit: ``diagnose.evaluate`` stays a light call
(the embedding and diagnosis pipeline is :class:`diagnose.analysis.Analysis`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diagnose import checks, defaults
from diagnose.data import DataError, Dataset, Qrels, Run
from diagnose.io import load_dataset
from diagnose.io.convert import as_qrels, as_run
from diagnose.io.spans import spans_path_for, write_spans
from diagnose.lazy import pandas as pd
from diagnose.metrics import DEFAULT_KS, evaluate_many, expand_names

PathLike = str | Path


def load(
    data: PathLike | None = None,
    *,
    corpus: PathLike | None = None,
    queries: PathLike | None = None,
    qrels: PathLike | None = None,
    split: str = defaults.SPLIT,
    runs: Sequence[str | Path | tuple[str | None, PathLike]] | PathLike = (),
    require_qrels: bool = True,
    corpus_fields: Mapping[str, str] | None = None,
    parent_field: str | None = None,
) -> Dataset:
    """Read a data set: a BEIR folder ``data`` (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and/or
    explicit files (which override the folder's). Formats and checks: :func:`diagnose.io.load_dataset`.
    ``corpus_fields``: the corpus columns or keys of ``id``, ``text`` and ``title`` when they are not auto-detected,
    e.g. ``{"id": "doc_id", "text": "body"}``. ``corpus`` may be a vector database collection,
    ``"chroma:PATH#COLLECTION"``, ``"lancedb:PATH#TABLE"`` or ``"qdrant:PATH#COLLECTION"``: its documents and stored
    vectors (:mod:`diagnose.vectordb`; an :class:`~diagnose.analysis.Analysis` of it encodes only the queries).
    ``require_qrels=False``: no golden set yet (a query log and a corpus get empty qrels, to judge: see
    :mod:`diagnose.judging`). ``parent_field``: for a corpus of chunks, the metadata key holding each chunk's
    document id, or ``"DOC#N"`` for chunk ids written ``DOCUMENT#N`` (detected when every id is); relevance and
    metrics then come at the chunk and at the document level (:mod:`diagnose.chunks`).

    ``runs``: run files, ``"NAME=PATH"`` or ``(name, path)`` (one run may be given alone); runs can also be given later to
    :class:`~diagnose.analysis.Analysis`. Problems that do not stop the work are counted in ``Dataset.report``;
    the others raise :class:`~diagnose.data.DataError` naming the file, line and fix.

    >>> ds = diagnose.load("demo_corpus")          # doctest: +SKIP
    >>> ds                                          # doctest: +SKIP
    Dataset('demo_corpus': 190 documents, 106 queries, 163 judgements (106 golden queries), 0 runs, 0 warnings)
    """
    from diagnose.vectordb.spec import is_spec  # the vector database package: only when a data set is loaded

    collection = (
        corpus if is_spec(corpus) else None
    )  # chroma:PATH#NAME stays a str (a Path would lose its scheme)
    data, corpus, queries, qrels = (
        checks.optional_path(value, param)
        for param, value in (("data", data), ("corpus", corpus), ("queries", queries), ("qrels", qrels))
    )
    corpus = collection if collection is not None else corpus
    split = checks.text(split, "split", what="the name of a qrels split (a str, e.g. 'test')")
    if parent_field is not None:
        parent_field = checks.text(parent_field, "parent_field", what="a metadata key (a str) or 'DOC#N'")
    runs = checks.list_of(
        runs,
        "runs",
        _run_spec,
        expected="run files, 'NAME=PATH' or (name, path) (a list)",
        single=lambda v: isinstance(v, str | Path),
    )
    _check_load_options(data, qrels, require_qrels=require_qrels, corpus_fields=corpus_fields)
    return load_dataset(
        data_dir=data,
        split=split,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        runs=runs,
        require_qrels=require_qrels,
        corpus_fields=corpus_fields,
        parent_field=parent_field,
    )


def _check_load_options(
    data: Path | None, qrels: Path | None, *, require_qrels: Any, corpus_fields: Any
) -> None:
    """:func:`load`'s ``corpus_fields`` and ``require_qrels`` checked, and a golden set given when one is required."""
    if corpus_fields is not None:
        checks.mapping(
            corpus_fields, "corpus_fields", expected="a dict such as {'id': 'doc_id', 'text': 'body'}"
        )
    if not isinstance(require_qrels, bool):
        raise DataError(
            f"require_qrels must be True or False, got {checks.given(require_qrels)}.", param="require_qrels"
        )
    if data is None and qrels is None and require_qrels:
        raise DataError(
            "No golden set given: pass a BEIR folder (data='path/to/folder') or a qrels file (qrels='qrels.tsv')."
        )


def _run_spec(spec: Any) -> Any:
    """One run of :func:`load`'s ``runs``, checked and returned as given: a path, ``"NAME=PATH"`` or
    ``(name, path)``."""
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str | None):
        checks.path(spec[1], "runs", label=f"the path of run {spec[0]!r}")
    else:
        checks.path(spec, "runs", what="a run file, 'NAME=PATH' or (name, path)", label="each run")
    return spec


def evaluate(
    qrels: Qrels | Dataset | PathLike | Mapping[str, Mapping[str, int]],
    run: Run | PathLike | Mapping[str, Mapping[str, float]] | Mapping[str, Any],
    *,
    k: int | Sequence[int] = DEFAULT_KS,
    metrics: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Score one run (or several) against a golden set, with trec_eval's conventions (docs/metrics.md).

    ``qrels``: a path, :class:`Qrels`, :class:`Dataset` or ``{query_id: {doc_id: grade}}``. ``run``: a path, a
    :class:`Run`, ``{query_id: {doc_id: score}}``, or a dict ``{name: run}`` of several. ``k``: cutoffs for the
    metric families; ``metrics``: names such as ``"ndcg@10"``, ``"recall"`` (taken at every k) or ``"mrr"``
    (default: precision, recall, hit_rate, mrr, ndcg and map at every k, then mrr, map, r_precision).

    Returns one row per run (index ``run``: the file name, the Run's name, the dict's key; a single
    ``{query_id: {doc_id: score}}`` dict is the row ``"unnamed run"``, give ``{name: run}`` to name it), one column
    per metric: the mean over the golden queries (queries with
    at least one relevant document; those missing from the run score 0, like ``trec_eval -c``). Per-query values:
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
    from diagnose.judging.merge import write_beir_qrels

    qrels = as_qrels(data)
    write_beir_qrels(qrels, path)
    if not qrels.spans:
        return None
    out = Path(spans_path) if spans_path is not None else spans_path_for(path)
    write_spans(qrels.spans, out)
    return out
