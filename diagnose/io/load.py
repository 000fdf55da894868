"""The Python API's :func:`load`: what a user names (a BEIR folder, files, a vector database collection, run files)
checked parameter by parameter, then read by :func:`diagnose.io.dataset.load_dataset`. ``diagnose.load`` is this
function (:mod:`diagnose.api`); the judging workflow reads a data set without a golden set through it too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from diagnose import checks, defaults
from diagnose.data import DataError, Dataset
from diagnose.io.dataset import load_dataset

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
    vectors (:mod:`diagnose.io.vectordb`; an :class:`~diagnose.analysis.Analysis` of it encodes only the queries).
    ``require_qrels=False``: no golden set yet (a query log and a corpus get empty qrels, to judge: see
    :mod:`diagnose.judging`). ``parent_field``: for a corpus of chunks, the metadata key holding each chunk's
    document id, or ``"DOC#N"`` for chunk ids written ``DOCUMENT#N`` (detected when every id is); relevance and
    metrics then come at the chunk and at the document level (:mod:`diagnose.io.chunks`).

    ``runs``: run files, ``"NAME=PATH"`` or ``(name, path)`` (one run may be given alone); runs can also be given later to
    :class:`~diagnose.analysis.Analysis`. Problems that do not stop the work are counted in ``Dataset.report``;
    the others raise :class:`~diagnose.data.DataError` naming the file, line and fix.

    >>> ds = diagnose.load("demo_corpus")          # doctest: +SKIP
    >>> ds                                          # doctest: +SKIP
    Dataset('demo_corpus': 190 documents, 106 queries, 163 judgements (106 golden queries), 0 runs, 0 warnings)
    """
    from diagnose.io.vectordb.spec import (
        is_spec,
    )  # the vector database package: only when a data set is loaded

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
        checks.field_names(
            corpus_fields,
            "corpus_fields",
            ("id", "text", "title", "id_field", "text_field", "title_field"),
            expected="a dict such as {'id': 'doc_id', 'text': 'body'}",
            naming="a corpus column or key (a str)",
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
