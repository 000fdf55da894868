"""Qrels: :func:`read_qrels` (BEIR TSV, TREC qrels, JSONL with ``"relevant"``, and the golden sets of
:mod:`diagnose.io.golden_sets`), grades kept as integers, :func:`golden_qrels` (a golden set of reference contexts
mapped to a corpus' ids), and :func:`empty_qrels` for a data set with no golden set yet."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from diagnose.data import Corpus, Qrels, Span, ValidationReport
from diagnose.io.chunks import chunk_qrels_from_spans, document_texts
from diagnose.io.decoding import clean_utf8, refuse_decoding_collisions
from diagnose.io.files import PathLike, read_bytes
from diagnose.io.formats import BEIR_QRELS, QRELS_D_HEADER, QRELS_FORMATS, QRELS_Q_HEADER, TREC_QRELS
from diagnose.io.golden_sets import GoldenSet, golden_kind, read_golden_set
from diagnose.io.messages import (
    example_ids,
    fatal_error,
    note_lines,
    pair_text,
    plural_of,
    show_id,
    snip,
    verb,
)
from diagnose.io.spans import UNMATCHED_PREFIX, locate_references
from diagnose.io.tables import fast_whitespace_table, strip_ids
from diagnose.io.text import (
    GRADE_FIX,
    GRADE_RANGE,
    INT_RE,
    first_line,
    grade_fits,
    json_query_lines,
    json_text,
    line_start,
    not_ascii_note,
    number_text,
    parse_grade,
    text_lines,
)
from diagnose.runtime.arrays import arrow_of, numpy_of
from diagnose.runtime.frames import first_seen_codes


@refuse_decoding_collisions(("query_id", "doc_id"))
def read_qrels(path: PathLike, *, report: ValidationReport | None = None) -> Qrels:
    """Read judgements: BEIR TSV with header, TREC qrels (4 fields), or JSONL (see the module docstring).

    The format is sniffed from the first non-blank, non-``#`` line: a JSON object -> JSONL; 3 fields whose
    names look like ``query-id corpus-id score`` -> BEIR with header (3 fields of data: BEIR without header,
    counted as info); 4 fields -> TREC. Grades must be integers (``1.5`` or ``high`` is fatal, naming the line);
    negative grades are kept (trec_eval reads them as judged non-relevant). A (query, doc) pair judged twice
    keeps its first grade (warning). Queries whose judgements are all <= 0 are counted as info: they have no
    relevant document, so trec_eval and :mod:`diagnose.metrics` leave them out of the means.

    A golden set (:mod:`diagnose.io.golden_sets`) is recognised first: an ``EmbeddingQAFinetuneDataset`` gives its
    id-based judgements; one of reference contexts needs the corpus (:func:`diagnose.io.load_dataset`), so it is
    refused here with that fix.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    kind = golden_kind(path)
    if kind is not None:
        return golden_qrels(read_golden_set(path, kind, report=report), None, report)
    raw = clean_utf8(read_bytes(path, QRELS_FORMATS), file, report)
    first = first_line(raw, skip_comments=True)
    if first is None:
        raise fatal_error(
            file, None, "the qrels file is empty", None, QRELS_FORMATS, "pass the file with the judgements"
        )
    lineno, line = first
    if line.startswith("{"):
        df = _read_qrels_jsonl(raw, file, report)
    else:
        fields = line.split("\t") if "\t" in line else line.split()
        fields = [f.strip() for f in fields]
        lower = [f.lower() for f in fields]
        if len(fields) == 3 and lower[0] in QRELS_Q_HEADER and lower[1] in QRELS_D_HEADER:
            df = _read_qrels_columns(raw, file, report, 3, skip_through=lineno, tabs="\t" in line)
        elif len(fields) == 3 and parse_grade(fields[2]) is not None:
            report.add(
                "qrels_without_header",
                "3-field qrels without a header line; read as BEIR query-id corpus-id score",
                severity="info",
                file=file,
            )
            df = _read_qrels_columns(raw, file, report, 3, skip_through=0, tabs="\t" in line)
        elif len(line.split()) == 4:
            df = _read_qrels_columns(raw, file, report, 4, skip_through=0, tabs=False)
        else:
            raise fatal_error(
                file,
                lineno,
                "matches no qrels format",
                f"line {lineno} is {snip(line)}",
                QRELS_FORMATS,
                "convert the judgements to one of these formats",
            )
    return _finish_qrels(df, file, report)


def _read_qrels_columns(
    raw: bytes, file: str, report: ValidationReport, nfields: int, *, skip_through: int, tabs: bool
) -> pa.Table:
    """TREC (4 fields) or BEIR (3 fields, tab-separated when ``tabs``) qrels; lines up to ``skip_through`` skipped."""
    body = raw
    if skip_through:  # blank lines in place of the skipped ones keep the line numbers
        body = b"\n" * skip_through + raw[line_start(raw, skip_through) :]
    names = ["q", "iter", "d", "g"] if nfields == 4 else ["q", "d", "g"]
    types = {"q": pa.string(), "d": pa.string(), "g": pa.int64()}
    table = None if tabs and _has_inner_spaces(body) else fast_whitespace_table(body, names, types)
    if table is not None:
        return pa.table(
            {"query_id": table.column("q"), "doc_id": table.column("d"), "relevance": table.column("g")}
        )
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    decimals: list[int] = []
    for lineno, line in text_lines(body):
        text = line.decode("utf-8")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in text.split("\t")] if tabs else text.split()
        grade = _qrels_line_grade(parts, text, lineno, file, nfields, tabs)
        if not INT_RE.match(parts[-1]):
            decimals.append(lineno)
        qs.append(parts[0])
        ds.append(parts[-2])
        gs.append(grade)
    note_lines(
        report,
        "decimal_grade",
        f"{plural_of(len(decimals), 'grade')} written as decimals (like 1.0) {verb(len(decimals), 'was', 'were')} read as integers",
        decimals,
        file,
    )
    return _qrels_frame(qs, ds, gs)


def _qrels_line_grade(parts: list[str], text: str, lineno: int, file: str, nfields: int, tabs: bool) -> int:
    """The grade of a qrels line split into ``parts``; fatal when the fields are wrong or the grade no integer."""
    expected = TREC_QRELS if nfields == 4 else BEIR_QRELS
    if len(parts) != nfields:
        fields_desc = '"qid iter docid rel"' if nfields == 4 else '"query-id corpus-id score"'
        raise fatal_error(
            file,
            lineno,
            f"expected {nfields} {'tab' if tabs else 'whitespace'}-separated fields {fields_desc}, found {len(parts)}",
            snip(text),
            expected,
            "write every judgement on its own line with exactly these fields",
        )
    grade_text = parts[-1]
    grade = parse_grade(grade_text)
    if grade is None:
        raise fatal_error(
            file,
            lineno,
            f"the relevance grade is not an integer: {grade_text!r}{not_ascii_note(grade_text)}",
            snip(text),
            expected,
            "use integer grades in ASCII digits (0 = not relevant, 1, 2, ... = relevant); map labels like "
            "'high' to numbers first",
        )
    if not grade_fits(grade):
        raise fatal_error(
            file,
            lineno,
            f"the relevance grade is out of range: {number_text(grade_text)}",
            None,
            GRADE_RANGE,
            GRADE_FIX,
        )
    return grade


def _qrels_frame(qs: list[str], ds: list[str], gs: list[int]) -> pa.Table:
    """Judgements as the qrels table: ``query_id``, ``doc_id`` (string) and ``relevance`` (int64)."""
    return pa.table(
        {
            "query_id": pa.array(qs, type=pa.string()),
            "doc_id": pa.array(ds, type=pa.string()),
            "relevance": pa.array(np.asarray(gs, dtype=np.int64)),
        }
    )


def _has_inner_spaces(body: bytes) -> bool:
    """True when a tab-separated field contains a space between non-blank characters (an id with a space)."""
    return b" " in body and re.search(rb"[^\s] +[^\s]", body) is not None


def _read_qrels_jsonl(raw: bytes, file: str, report: ValidationReport) -> pa.Table:
    expected = '{"query_id": .., "relevant": {"doc_id": grade, ..}} or {"query_id": .., "relevant": [doc_id, ..]} per line'
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    for lineno, line, obj, qid in json_query_lines(raw, file, expected, "write one object per line"):
        rel = obj.get("relevant")
        if isinstance(rel, list):
            pairs = [(x, 1) for x in rel]
        elif isinstance(rel, dict):
            pairs = list(rel.items())
        else:
            raise fatal_error(
                file,
                lineno,
                f'query {show_id(qid)!r} has no "relevant" object or list',
                snip(line),
                expected,
                'add "relevant": {"doc_id": grade}',
            )
        for doc, grade in pairs:
            if not isinstance(doc, str | int) or isinstance(doc, bool):
                raise fatal_error(
                    file,
                    lineno,
                    f"a relevant doc id is not a string: {snip(json_text(doc), 40)}",
                    None,
                    expected,
                    "write doc ids as strings",
                )
            value = _json_grade(grade)
            if value is None:
                raise fatal_error(
                    file,
                    lineno,
                    f"the relevance grade of {show_id(str(doc))!r} is not an integer: {number_text(grade if isinstance(grade, str) else json_text(grade))}"
                    f"{not_ascii_note(grade) if isinstance(grade, str) else ''}",
                    None,
                    expected,
                    "use integer grades (0 = not relevant, 1, 2, ... = relevant)",
                )
            if not grade_fits(value):
                raise fatal_error(
                    file,
                    lineno,
                    f"the relevance grade of {show_id(str(doc))!r} is out of range: {number_text(grade if isinstance(grade, str) else json_text(grade))}",
                    None,
                    GRADE_RANGE,
                    GRADE_FIX,
                )
            qs.append(qid)
            ds.append(str(doc).strip())
            gs.append(value)
    return _qrels_frame(qs, ds, gs)


def _json_grade(grade: Any) -> int | None:
    """A JSON grade as an int (possibly out of the int64 range), or None when it is not an integer."""
    if isinstance(grade, bool):
        return None
    if isinstance(grade, int):
        return grade
    if isinstance(grade, float):
        return int(grade) if math.isfinite(grade) and grade == int(grade) else None
    if isinstance(grade, str):
        return parse_grade(grade)
    return None


def _finish_qrels(table: pa.Table, file: str, report: ValidationReport) -> Qrels:
    """The golden set of the judgements read (``query_id``, ``doc_id``, ``relevance``): ids stripped, a repeated
    (query, doc) pair keeps its first judgement (warning), queries without a grade > 0 counted (info)."""
    if table.num_rows == 0:
        raise fatal_error(
            file,
            None,
            "the qrels file has no judgements",
            None,
            QRELS_FORMATS,
            "pass the file with the judgements",
        )
    q = strip_ids(table.column("query_id")).combine_chunks()
    d = strip_ids(table.column("doc_id")).combine_chunks()
    grades = numpy_of(table.column("relevance")).astype(np.int64, copy=False)
    q_codes, d_codes = first_seen_codes(q)[0], first_seen_codes(d)[0]
    pair = q_codes * (int(d_codes.max()) + 1) + d_codes  # one exact integer per (query, doc) pair
    _, first = np.unique(pair, return_index=True)
    if len(first) < len(pair):
        keep = np.zeros(len(pair), dtype=bool)
        keep[first] = True
        dup = np.flatnonzero(~keep)
        first_of = dict(zip(pair[first].tolist(), first.tolist(), strict=True))
        conflicts = int((grades[[first_of[p] for p in pair[dup].tolist()]] != grades[dup]).sum())
        shown = arrow_of(dup[:5])
        report.add(
            "duplicate_judgement",
            f"{plural_of(len(dup), 'judgement')} {verb(len(dup), 'repeats', 'repeat')} a (query, doc) pair "
            f"already judged ({conflicts} with a different grade); the first judgement is kept",
            file=file,
            count=len(dup),
            examples=[
                pair_text(a, b)
                for a, b in zip(q.take(shown).to_pylist(), d.take(shown).to_pylist(), strict=True)
            ],
        )
        rows = arrow_of(np.flatnonzero(keep))
        q, d, grades, q_codes = q.take(rows), d.take(rows), grades[keep], q_codes[keep]
    n_queries = int(q_codes.max()) + 1
    best = np.full(n_queries, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(best, q_codes, grades)
    first_row = np.full(n_queries, len(q_codes), dtype=np.int64)
    np.minimum.at(first_row, q_codes, np.arange(len(q_codes)))
    no_rel_rows = np.sort(first_row[best <= 0])  # first-seen order
    if len(no_rel_rows):
        no_rel = q.take(arrow_of(no_rel_rows)).to_pylist()
        report.add(
            "query_without_relevant",
            f"{plural_of(len(no_rel), 'judged query', 'judged queries')} {verb(len(no_rel), 'has', 'have')} no document "
            f"with grade > 0; {verb(len(no_rel), 'it is', 'they are')} left out of the metric means (like trec_eval)",
            severity="info",
            file=file,
            count=len(no_rel),
            examples=example_ids(no_rel),
        )
    report.stats["qrels_rows"] = len(q_codes)
    report.stats["qrels_queries"] = n_queries
    report.stats["golden_queries"] = int((best > 0).sum())
    return Qrels(pa.table({"query_id": q, "doc_id": d, "relevance": arrow_of(grades)}), file)


def empty_qrels(source: str = "") -> Qrels:
    """Qrels without a judgement (a data set with no golden set yet). Evaluating them is an error: no query has a
    relevant document."""
    return Qrels(_qrels_frame([], [], []), source)


def _spans_in(
    spans: Sequence[Span], texts: Mapping[str, str], file: str, report: ValidationReport
) -> list[Span]:
    """The spans of a ``.spans.jsonl`` file, checked against the documents they were located in: a document that is
    not in the corpus, or a span beyond its text, raises naming it (the corpus changed since the spans were
    written: write them again)."""
    for s in spans:
        if s.doc_id is None:
            continue
        text = texts.get(s.doc_id)
        if text is None or (s.end or 0) > len(text or ""):
            what = (
                "is not in the corpus"
                if text is None
                else f"has {len(text or ''):,} characters, the span ends at {s.end:,}"
            )
            raise fatal_error(
                file, None, f"the span of query {s.query_id!r} lies in document {s.doc_id!r}, which {what}", None,
                "spans written for this corpus", "write the spans again with --qrels GOLDEN_SET --write-qrels F",
                param="qrels",
            )  # fmt: skip
    counts = Counter(s.match for s in spans)
    report.add(
        "reference_spans_read",
        f"{plural_of(len(spans), 'span')} read as written ("
        + ", ".join(f"{n} {m}" for m, n in sorted(counts.items())) + "): not matched again",
        severity="info", file=file, count=len(spans),
    )  # fmt: skip
    return list(spans)


def _node_references(golden: GoldenSet, file: str, report: ValidationReport) -> list[tuple[str, int, str]]:
    """The texts of an ``embedding_qa`` file's relevant nodes as reference contexts to locate in another corpus. A
    node whose text is missing from the file's corpus, empty or blank is counted and skipped: an empty text is a
    substring of every document and would make them all relevant."""
    j = golden.judgements
    node_text = dict(zip(golden.corpus["doc_id"], golden.corpus["text"], strict=True))
    refs: list[tuple[str, int, str]] = []
    skipped: list[str] = []
    for i, (q, d) in enumerate(zip(j["query_id"], j["doc_id"], strict=True)):
        text = node_text.get(d)
        if isinstance(text, str) and text.strip():
            refs.append((q, i, text))
        else:
            skipped.append(f"{q} -> {d} ({'not in its corpus' if text is None else 'empty text'})")
    report.add(
        "node_without_text",
        f"{plural_of(len(skipped), 'relevant node')} of the golden set {'has' if len(skipped) == 1 else 'have'} no "
        'text to locate in the corpus (missing from its "corpus", empty or blank): skipped, not matched to every '
        "document; give each relevant node its text in the file's corpus",
        file=file,
        count=len(skipped),
        examples=skipped,
    )
    return refs


def golden_qrels(golden: GoldenSet, corpus: Corpus | None, report: ValidationReport) -> Qrels:
    """The qrels of a golden set (:mod:`diagnose.io.golden_sets`) in the id space of ``corpus``.

    Reference contexts are located in the corpus (:func:`diagnose.io.spans.locate_references`): every document
    holding one is relevant with grade 1; the spans are kept on ``Qrels.spans``. An ``embedding_qa`` file's
    judgements are ids of its own corpus: used as they are without a corpus or when every id is in ``corpus``,
    else the texts of its relevant nodes are located in ``corpus`` like reference contexts."""
    file = golden.source
    refs = golden.references
    if golden.judgements is not None:
        j = golden.judgements
        if corpus is None or set(j["doc_id"]).issubset(set(corpus.df["doc_id"])):
            return _finish_qrels(
                _qrels_frame(j["query_id"].tolist(), j["doc_id"].tolist(), [1] * len(j)), file, report
            )
        refs = _node_references(golden, file, report)
    if corpus is None:
        raise fatal_error(
            file,
            None,
            "this golden set holds reference contexts (text), not document ids",
            None,
            "the corpus they come from",
            "pass the corpus too (corpus=... in diagnose.load, --corpus or --data on "
            "the command line) so that each context is located in a document",
            param="corpus",
        )
    cmap = corpus.chunks
    # a chunk corpus with offsets: the spans lie in its documents, the judgements go to its chunks
    chunked = cmap is not None and cmap.has_offsets
    if chunked:
        texts = document_texts(corpus, cmap)
    else:
        texts = dict(zip(corpus.df["doc_id"].tolist(), corpus.df["text"].tolist(), strict=True))
    if golden.spans is not None:
        spans = _spans_in(golden.spans, texts, file, report)
    else:
        spans = locate_references(refs, list(texts), list(texts.values()), report=report, file=file)
    if chunked:
        pairs = dict.fromkeys(chunk_qrels_from_spans(spans, cmap, UNMATCHED_PREFIX))
    else:
        pairs = dict.fromkeys(
            (
                s.query_id,
                s.doc_id if s.doc_id is not None else f"{UNMATCHED_PREFIX}{s.query_id}:{s.reference}",
            )
            for s in spans
        )
    qs = [q for q, _ in pairs]
    ds = [d for _, d in pairs]
    qrels = _finish_qrels(_qrels_frame(qs, ds, [1] * len(qs)), file, report)
    return Qrels(qrels.df, qrels.source, spans=tuple(spans))
