"""A data set read at once: :func:`load_dataset` (a BEIR folder and/or explicit files, and runs), and the checks
of the files against each other (:func:`check_run_matches_qrels`, :func:`cross_checks`)."""

from __future__ import annotations

import contextlib
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from diagnose import defaults
from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Run, ValidationReport
from diagnose.io.chunks import chunk_level_qrels, with_chunks
from diagnose.io.corpus import read_corpus
from diagnose.io.files import PathLike, stat_path
from diagnose.io.formats import CORPUS_FORMATS, QRELS_FORMATS, QUERIES_FORMATS, RUN_FORMATS
from diagnose.io.golden_sets import GoldenSet, golden_kind, read_golden_set
from diagnose.io.messages import example_ids, fatal_error, pair_text, plural_of, show_id, verb
from diagnose.io.qrels import empty_qrels, golden_qrels, read_qrels
from diagnose.io.queries import read_queries
from diagnose.io.runs import QRELS_NOT_RUN_FIX, parse_run_arg, read_run, run_stem
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.threads import available_cpus, beside

if TYPE_CHECKING:
    from diagnose.runtime.progress import Progress


def load_dataset(
    *,
    data_dir: PathLike | None = None,
    split: str = defaults.SPLIT,
    corpus: PathLike | None = None,
    queries: PathLike | None = None,
    qrels: PathLike | None = None,
    runs: Iterable[str | Path | tuple[str | None, PathLike]] = (),
    report: ValidationReport | None = None,
    corpus_fields: Mapping[str, str | None] | None = None,
    name: str | None = None,
    require_qrels: bool = True,
    qrels_transform: Callable[[Qrels], Qrels] | None = None,
    progress: Progress = False,
    parent_field: str | None = None,
) -> Dataset:
    """Read everything one evaluation or diagnosis needs, and check the files against each other.

    ``data_dir`` is a BEIR folder: ``DIR/corpus.jsonl``, ``DIR/queries.jsonl`` and ``DIR/qrels/SPLIT.tsv`` (each
    also as ``.gz``); explicit paths override its files. A missing split file is fatal and lists the splits there
    are. ``runs`` are ``"NAME=PATH"`` / ``"PATH"`` strings or ``(name or None, path)`` pairs; two runs with one
    name are fatal. ``corpus_fields`` maps ``id`` / ``text`` / ``title`` to the corpus columns.

    Cross-file checks (counted in ``report``): qrels and run doc ids missing from the corpus (when a corpus is
    given), golden queries (>= 1 relevant doc) missing from a run (they score 0, like ``trec_eval -c``), run
    queries without judgements (ignored by the metrics), golden queries without text (when queries are given).

    ``require_qrels=False`` (judging a corpus that has no golden set yet, :mod:`diagnose.judging`): without a qrels
    file (none given, none in ``data_dir``) the data set gets empty qrels (:func:`empty_qrels`) instead of an error.
    ``qrels_transform`` maps the qrels read (or the empty ones) to the qrels the data set keeps, before the runs are
    checked against them (``diagnose --extra-qrels`` merges judgements there).

    ``corpus`` may name a vector database collection, ``chroma:PATH#COLLECTION``, ``lancedb:PATH#TABLE`` or
    ``qdrant:PATH#COLLECTION`` (:mod:`diagnose.io.vectordb`): its documents and stored vectors, read with a bar on
    ``progress``.

    ``parent_field``: a chunk corpus' metadata key naming each chunk's document, or ``"DOC#N"`` for ids written
    ``DOCUMENT#N`` (detected when every id is); the corpus then carries a :class:`~diagnose.data.ChunkMap` and the
    qrels are put in its id space (:mod:`diagnose.io.chunks`: reference contexts judged on the chunks, document
    judgements inherited by each chunk of the document).
    """
    report = report if report is not None else ValidationReport()
    # a golden set's own queries beat the folder's, not a queries file given explicitly
    given_queries = queries
    if data_dir is not None:
        corpus, queries, qrels = _beir_files(
            data_dir, split, corpus, queries, qrels, require_qrels=require_qrels
        )
    _require_qrels(qrels, require_qrels)
    run_specs = _run_specs(runs)

    # The runs are read in a thread beside the golden set and the texts (pyarrow's parse and numpy leave the GIL),
    # each into a report of its own, added after the texts' entries: the report, and the first error raised (the
    # golden set's, then the texts', then the runs' in order), are those of reading one file after the other. The
    # texts stay in this thread: their progress bar may be the app's.
    threaded = bool(run_specs) and available_cpus() > 1
    reading = beside(_read_runs, run_specs, name="diagnose-runs") if threaded else contextlib.nullcontext()
    with reading as pending:
        qrels_rec, corpus_rec, queries_rec = _read_texts_and_qrels(
            corpus,
            queries,
            qrels,
            corpus_fields,
            report,
            given_queries=given_queries,
            progress=progress,
            parent_field=parent_field,
        )
        if qrels_transform is not None:
            qrels_rec = qrels_transform(qrels_rec)
        if corpus_rec is not None and corpus_rec.chunks is not None:
            qrels_rec = chunk_level_qrels(qrels_rec, corpus_rec.chunks, report)
    run_recs: dict[str, Run] = {}
    for rname, run, run_report in pending.result() if pending is not None else _read_runs(run_specs):
        report.extend(run_report)
        run_recs[rname] = run

    for run in run_recs.values():
        check_run_matches_qrels(run, qrels_rec)
    cross_checks(qrels_rec, run_recs, corpus_rec, queries_rec, report)
    ds_name = name or _default_name(data_dir, qrels, queries, corpus)
    return Dataset(
        qrels=qrels_rec, runs=run_recs, corpus=corpus_rec, queries=queries_rec, report=report, name=ds_name
    )


def _read_runs(run_specs: Sequence[tuple[str, str]]) -> list[tuple[str, Run, ValidationReport]]:
    """Each run of ``run_specs`` (name, path) read, with the report of its reading."""
    out = []
    for rname, rpath in run_specs:
        run_report = ValidationReport()
        out.append((rname, read_run(rpath, name=rname, report=run_report), run_report))
    return out


def _require_qrels(qrels: PathLike | None, require_qrels: bool) -> None:
    """No qrels file at all (none given, none in the BEIR folder) is fatal when judgements are required."""
    if qrels is None and require_qrels:
        raise DataError(
            "No judgements given. Expected a qrels file. Fix: give the qrels file, or a BEIR folder.",
            param="qrels",
        )


def _default_name(
    data_dir: PathLike | None, qrels: PathLike | None, queries: PathLike | None, corpus: PathLike | None
) -> str:
    """The data set's name when none is given: the BEIR folder's name, else the stem of the first file given."""
    return (
        Path(data_dir).name if data_dir is not None else Path(str(qrels or queries or corpus or "data")).stem
    )


def _read_corpus_fields(
    corpus: PathLike,
    corpus_fields: Mapping[str, str | None] | None,
    report: ValidationReport,
    progress: Progress = False,
) -> Corpus:
    """:func:`read_corpus` with the fields named by ``corpus_fields`` (``id`` or ``id_field``, likewise text, title);
    a ``SCHEME:PATH#NAME`` corpus is a vector database collection (:func:`diagnose.io.vectordb.read_collection`)."""
    fields = dict(corpus_fields or {})
    from diagnose.io.vectordb.spec import is_spec

    if is_spec(corpus):
        from diagnose.io.vectordb import read_collection

        named = {k: fields.get(k) or fields.get(f"{k}_field") for k in ("id", "text", "title")}
        return read_collection(str(corpus), fields=named, report=report, progress=progress)
    return read_corpus(
        corpus,
        id_field=fields.get("id") or fields.get("id_field"),
        text_field=fields.get("text") or fields.get("text_field"),
        title_field=fields.get("title") or fields.get("title_field"),
        report=report,
    )


def _beir_files(
    data_dir: PathLike,
    split: str,
    corpus: PathLike | None,
    queries: PathLike | None,
    qrels: PathLike | None,
    *,
    require_qrels: bool,
) -> tuple[PathLike | None, PathLike | None, PathLike | None]:
    """The corpus, queries and qrels files: those given, else the BEIR folder's (a missing split is fatal when
    judgements are required, and the message lists the splits there are)."""
    root = Path(data_dir)
    beir = "a BEIR folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv"
    st = stat_path(root, beir)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise DataError(
            f"{data_dir}: {'not found' if st is None else 'is a file, not a folder'}. Expected {beir}. Fix: give "
            "the folder's path, or the corpus, queries and qrels files one by one.",
            param="data",
        )
    corpus = corpus if corpus is not None else _existing(root, "corpus.jsonl", CORPUS_FORMATS)
    queries = queries if queries is not None else _existing(root, "queries.jsonl", QUERIES_FORMATS)
    if qrels is None:
        qrels = _existing(root / "qrels", f"{split}.tsv", QRELS_FORMATS)
        if qrels is None and require_qrels:
            try:
                splits = sorted(p.name.split(".")[0] for p in (root / "qrels").glob("*.tsv*"))
            except OSError:
                splits = []
            have = (
                f"available splits: {', '.join(splits)}"
                if splits
                else "there is no qrels/ folder with .tsv files"
            )
            raise DataError(
                f"{root / 'qrels' / (split + '.tsv')}: file not found ({have}). Expected the judgements of split "
                f"{split!r} as qrels/{split}.tsv. Fix: choose one of the available splits, or give the qrels file.",
                param="split",
            )
    return corpus, queries, qrels


def _read_texts_and_qrels(
    corpus: PathLike | None,
    queries: PathLike | None,
    qrels: PathLike | None,
    corpus_fields: Mapping[str, str | None] | None,
    report: ValidationReport,
    *,
    given_queries: PathLike | None = None,
    progress: Progress = False,
    parent_field: str | None = None,
) -> tuple[Qrels, Corpus | None, Queries | None]:
    """The qrels, corpus and queries records. A golden set (:mod:`diagnose.io.golden_sets`) is mapped to the
    corpus' ids (:func:`golden_qrels`) and gives the queries unless a queries file is ``given_queries`` (a BEIR
    folder's queries yield to it), and for an ``EmbeddingQAFinetuneDataset`` the corpus unless one is given."""
    kind = golden_kind(qrels) if qrels is not None else None
    golden = read_golden_set(qrels, kind, report=report) if qrels is not None and kind is not None else None
    if golden is not None and given_queries is None and golden.spans is None:  # spans hold no query texts
        queries = None
    if golden is None:  # id-based qrels: read first, as always
        qrels_rec = read_qrels(qrels, report=report) if qrels is not None else empty_qrels()
    corpus_rec = _read_corpus_fields(corpus, corpus_fields, report, progress) if corpus is not None else None
    if corpus_rec is not None:
        corpus_rec = with_chunks(corpus_rec, parent_field, report)
    queries_rec = read_queries(queries, report=report) if queries is not None else None
    if golden is None:
        return qrels_rec, corpus_rec, queries_rec
    if corpus_rec is None and golden.corpus is not None:
        corpus_rec = Corpus(golden.corpus, golden.source)
    if queries_rec is None:
        queries_rec = Queries(golden.queries, golden.source)
    elif golden.spans is None:
        _report_other_question_texts(golden, queries_rec, report)
    return golden_qrels(golden, corpus_rec, report), corpus_rec, queries_rec


def _report_other_question_texts(golden: GoldenSet, queries: Queries, report: ValidationReport) -> None:
    """Count the golden questions whose text in the queries file differs from the golden set's own (compared after
    collapsing whitespace): the queries file's text is the one searched, so the user hears which won."""
    own = dict(zip(golden.queries["query_id"].astype(str), golden.queries["text"].astype(str), strict=True))
    given = zip(queries.df["query_id"].astype(str), queries.df["text"].astype(str), strict=True)
    differ = [q for q, t in given if q in own and " ".join(t.split()) != " ".join(own[q].split())]
    report.add(
        "query_text_differs",
        f"{plural_of(len(differ), 'question')} of the golden set {golden.source} {verb(len(differ), 'has', 'have')} "
        f"another text in the queries file {queries.source}: the queries file's text is the one searched. Check "
        "that both files belong together, or leave out the queries file to search the golden set's questions",
        file=queries.source,
        count=len(differ),
        examples=differ,
    )


def _run_specs(runs: Iterable[str | Path | tuple[str | None, PathLike]]) -> list[tuple[str, str]]:
    """``(name, path)`` of every run (``NAME=PATH`` parsed, a missing name from the file name); one name twice is
    fatal."""
    run_specs: list[tuple[str, str]] = []
    for spec in runs:
        if isinstance(spec, tuple):
            rname, rpath = spec
            run_specs.append((rname or run_stem(rpath), str(rpath)))
        else:
            run_specs.append(parse_run_arg(str(spec)))
    seen: dict[str, str] = {}
    for rname, rpath in run_specs:
        if rname in seen:
            raise DataError(
                f"{rpath}: the run name {rname!r} is already used by {seen[rname]}. Expected one name per run. "
                f"Fix: name the runs, e.g. {rname}_a={seen[rname]} and {rname}_b={rpath}.",
                param="runs",
            )
        seen[rname] = rpath
    return run_specs


def check_run_matches_qrels(run: Run, qrels: Qrels) -> None:
    """Refuse a run that can only score 0: it has no results, or none of its query ids is a golden query (a query
    with a relevant document). The message names a few ids of each side and says when they would match with case,
    leading zeros or everything but their numbers ignored (``'Q1'`` vs ``'q1'``): ids are compared exactly, like
    trec_eval does. A run that shares some golden queries is fine here (the rest is counted by the cross-checks).
    """
    file = run.source or run.name
    if len(run) == 0:
        raise fatal_error(
            file,
            None,
            f"run {run.name!r} has no results: every golden query would score 0",
            None,
            RUN_FORMATS + ", with at least one result line",
            "check that the retriever wrote its output to this file, or pass the right file",
        )
    golden = qrels.queries_with_relevant()
    if not golden:
        return
    in_run = run.query_ids()
    golden_set = set(golden)
    if any(q in golden_set for q in in_run):
        _refuse_the_golden_set_as_a_run(run, qrels, file)
        return
    seen = f"run ids: {_id_list(in_run)}; golden ids in {qrels.source or 'the qrels'}: {_id_list(golden)}"
    hint = _id_mismatch_hint(in_run, golden)
    raise fatal_error(
        file,
        None,
        f"none of the {plural_of(len(in_run), 'query id')} of run {run.name!r} is a golden query of the qrels"
        + (f"; {hint}" if hint else "")
        + ": ids are compared exactly",
        seen,
        "run query ids written exactly like the query ids of the qrels",
        "rename the query ids of the run (or of the qrels) so they match, or pass the qrels of the same collection",
    )


def _refuse_the_golden_set_as_a_run(run: Run, qrels: Qrels, file: str) -> None:
    """Refuse a run that is the golden set itself (a qrels file passed as a run, in any layout): every row is a
    judged pair, its score is the pair's grade, and it holds every relevant pair of its queries. It would score 1.0
    on every metric and pass any CI gate."""
    if len(run) < 2 or len(run) > len(qrels):
        return
    q = qrels.df
    grades = q.set_index(["query_id", "doc_id"])["relevance"]
    keys = pd.MultiIndex.from_frame(run.df[["query_id", "doc_id"]])
    if not keys.isin(grades.index).all():
        return
    if not np.array_equal(
        grades.reindex(keys).to_numpy(dtype=np.float64), run.df["score"].to_numpy(dtype=np.float64)
    ):
        return
    relevant = q[(q["relevance"] > 0) & q["query_id"].isin(set(run.df["query_id"]))]
    if len(relevant) > int((grades.reindex(keys) > 0).sum()):
        return
    raise fatal_error(
        file,
        None,
        f"run {run.name!r} is the golden set itself: each of its {len(run.df)} rows is a judged pair scored with its "
        "grade, so every metric would be 1.0",
        None,
        RUN_FORMATS + " written by your retriever",
        QRELS_NOT_RUN_FIX,
    )


def _id_list(ids: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(show_id(i, 40)) for i in ids[:n])
    return shown + (f" (and {len(ids) - n} more)" if len(ids) > n else "")


def _id_mismatch_hint(run_ids: Sequence[str], golden: Sequence[str]) -> str:
    """How the run's ids would match the golden ids, when they would: case, leading zeros, numbers only."""

    def unpadded(q: str) -> str:
        return re.sub(r"[0-9]+", lambda m: str(int(m.group())), q.lower())

    def numbers(q: str) -> str:
        found = re.findall(r"[0-9]+", q)
        return ".".join(str(int(x)) for x in found) if found else "\0" + q

    for how, key in (
        ("when case is ignored", str.lower),
        ("when leading zeros are ignored", unpadded),
        ("when only their numbers are compared", numbers),
    ):
        by_key = {key(g): g for g in reversed(golden)}
        for q in run_ids:
            g = by_key.get(key(q))
            if g is not None:
                return f"they match {how} (run ids look like {show_id(q, 40)!r}, the qrels use {show_id(g, 40)!r})"
    return ""


def _existing(folder: Path, filename: str, expected: str) -> str | None:
    """``folder/filename`` or its ``.gz``, when it exists and is not a folder (the reader checks it further)."""
    for candidate in (folder / filename, folder / (filename + ".gz")):
        st = stat_path(candidate, expected)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            return str(candidate)
    return None


def cross_checks(
    qrels: Qrels,
    runs: Mapping[str, Run],
    corpus: Corpus | None,
    queries: Queries | None,
    report: ValidationReport,
) -> None:
    golden = qrels.queries_with_relevant()
    judged = set(qrels.query_ids())
    if corpus is not None:
        _check_doc_ids(qrels, runs, corpus, report)
    for run in runs.values():
        in_run = run.query_ids()
        listed = set(in_run)
        absent, unjudged = [q for q in golden if q not in listed], [q for q in in_run if q not in judged]
        _count_ids(report, "query_missing_from_run", absent, run.source, run.name)
        _count_ids(report, "run_query_not_judged", unjudged, run.source, run.name)
        report.stats[f"run:{run.name}:rows"] = len(run)
    if queries is not None:
        text = queries.df.set_index("query_id")["text"]
        with_text = set(text[text.str.strip() != ""].index)
        no_text = [q for q in golden if q not in with_text]
        _count_ids(report, "golden_query_without_text", no_text, queries.source)


#: The warnings that name query ids, worded from the run's name and the number of ids.
_QUERY_ID_WARNINGS: dict[str, Callable[[str, int], str]] = {
    "query_missing_from_run": lambda run, n: (
        f"run {run!r}: {plural_of(n, 'golden query', 'golden queries')} {verb(n, 'has', 'have')} no results; "
        f"{verb(n, 'it scores', 'they score')} 0 (like trec_eval -c)"
    ),
    "run_query_not_judged": lambda run, n: (
        f"run {run!r}: {plural_of(n, 'query', 'queries')} {verb(n, 'has', 'have')} no judgements in the qrels and "
        f"{verb(n, 'is', 'are')} ignored by the metrics"
    ),
    "golden_query_without_text": lambda _, n: (
        f"{plural_of(n, 'golden query', 'golden queries')} {verb(n, 'has', 'have')} no text in the queries file; "
        f"baselines and the failure analysis skip {verb(n, 'it', 'them')}"
    ),
}


def _count_ids(report: ValidationReport, code: str, ids: list[str], file: str | None, run: str = "") -> None:
    """The warning ``code`` (:data:`_QUERY_ID_WARNINGS`) naming the first few of ``ids``, when there are any."""
    if ids:
        message = _QUERY_ID_WARNINGS[code](run, len(ids))
        report.add(code, message, file=file, count=len(ids), examples=example_ids(ids))


def _check_doc_ids(qrels: Qrels, runs: Mapping[str, Run], corpus: Corpus, report: ValidationReport) -> None:
    """Judged and retrieved documents that are not in the corpus (counted)."""
    # a Python set: Series.isin(1M arrow strings) converts every value to a pyarrow scalar (~7 s at 1M ids)
    doc_ids = set(corpus.df["doc_id"].tolist())

    def not_in_corpus(col: pd.Series) -> pd.Series:
        return pd.Series([d not in doc_ids for d in col.tolist()], index=col.index, dtype=bool)

    missing = not_in_corpus(qrels.df["doc_id"])
    if missing.any():
        rows = qrels.df[missing]
        n_rel = int((rows["relevance"] > 0).sum())
        n_missing = int(missing.sum())
        relevant = (
            ("relevant: it can never be retrieved" if n_rel else "not relevant")
            if n_missing == 1
            else f"{n_rel} of them relevant: {verb(n_rel, 'that one', 'those')} can never be retrieved"
        )
        report.add(
            "qrels_doc_not_in_corpus",
            f"{plural_of(n_missing, 'judgement')} {verb(n_missing, 'names', 'name')} a document that is not in the "
            f"corpus ({relevant})",
            file=qrels.source,
            count=n_missing,
            examples=_pairs(rows),
        )
    for run in runs.values():
        missing = not_in_corpus(run.df["doc_id"])
        if missing.any():
            n = int(missing.sum())
            report.add(
                "run_doc_not_in_corpus",
                f"run {run.name!r}: {plural_of(n, 'retrieved document')} {verb(n, 'is', 'are')} not in the corpus "
                "(wrong corpus, or ids written differently)",
                file=run.source,
                count=n,
                examples=_pairs(run.df[missing]),
            )


def _pairs(rows: pd.DataFrame) -> list[str]:
    """The first five (query, doc) pairs of ``rows``, for a problem's examples."""
    return [pair_text(q, d) for q, d in zip(rows["query_id"].head(5), rows["doc_id"].head(5), strict=True)]
