"""Runs: :func:`read_run` (TREC run files, JSONL ranked lists, CSV/TSV long format), :func:`parse_run_arg`
(``NAME=PATH``) and :func:`write_trec_run`. The order of the rows is decided in :mod:`diagnose.io.run_order`."""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from diagnose.data import DataError, Run, ValidationReport
from diagnose.io.decoding import clean_utf8, refuse_decoding_collisions
from diagnose.io.files import PathLike, RawBytes, as_bytes, check_unchanged, exists, read_mapped, suffixes
from diagnose.io.formats import RUN_D_COLS, RUN_FORMATS, RUN_Q_COLS, TREC_RUN
from diagnose.io.messages import fatal_error, note_lines, plural_of, show_id, snip, verb
from diagnose.io.run_order import (
    build_run,
    empty_run,
    empty_run_df,
    run_from_lists,
)
from diagnose.io.runs_jsonl import read_run_jsonl
from diagnose.io.tables import fast_whitespace_table, header_fields, read_csv_table, strip_ids
from diagnose.io.text import first_line, not_ascii_note, parse_float, text_lines
from diagnose.runtime.arrays import numpy_of
from diagnose.runtime.frames import first_seen_codes
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.lazy import pyarrow_compute as pc


def parse_run_arg(arg: str) -> tuple[str, str]:
    """``"NAME=PATH"`` or ``"PATH"`` -> ``(name, path)``; the name defaults to the file name without ``.gz`` and
    its extension (``runs/bm25.trec.gz`` -> ``bm25``).

    A ``=`` only separates a name when the part before it has no path separator and the whole argument is not
    an existing file (so ``runs/a=b.trec`` stays a path).
    """
    text = str(arg).strip()
    name: str | None = None
    path = text
    if "=" in text and not exists(text):
        head, tail = text.split("=", 1)
        if "/" not in head and "\\" not in head:
            name, path = head.strip(), tail.strip()
            if not name:
                raise DataError(
                    f"run {text!r}: the run name before '=' is empty. Expected NAME=PATH or PATH. "
                    "Fix: write e.g. bm25=runs/bm25.trec, or drop the '='.",
                    param="runs",
                )
    if not path:
        raise DataError(
            f"run {text!r}: no file given. Expected NAME=PATH or PATH. Fix: add the run file path.",
            param="runs",
        )
    return (name or run_stem(path)), path


def run_stem(path: PathLike) -> str:
    base = Path(path).name
    if base.lower().endswith(".gz"):
        base = base[:-3]
    return Path(base).stem or base


@refuse_decoding_collisions(("query_id", "doc_id"))
def read_run(path: PathLike, *, name: str | None = None, report: ValidationReport | None = None) -> Run:
    """Read one run: TREC (also ``.gz``), JSONL ranked lists, or CSV/TSV long format (see the module docstring).

    The format comes from the extension (``.jsonl``/``.json``, ``.csv``, ``.tsv``; anything else is sniffed) and
    from the first non-blank line: a JSON object -> JSONL; a header naming ``query_id`` -> CSV/TSV; otherwise
    whitespace-separated fields -> TREC. TREC files are ordered like trec_eval (score descending, ties by doc id
    descending, the rank column ignored; see :func:`trec_order`); JSONL lists keep their order.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    name = name or run_stem(path)
    raw = clean_utf8(read_mapped(path, RUN_FORMATS), file, report)  # a large TREC run is parsed in place
    run = _parse_run(raw, path, file, name, report)
    check_unchanged(raw, path, RUN_FORMATS)  # a map's file rewritten during the parse: refused, not mixed
    return run


def _parse_run(raw: RawBytes, path: PathLike, file: str, name: str, report: ValidationReport) -> Run:
    """:func:`read_run` once the bytes are read: the format, then its reader."""
    first = first_line(raw, skip_comments=True)
    if first is None:
        report.add("empty_file", f"run {name!r} is empty: every golden query scores 0", file=file)
        return Run(name, empty_run_df(), file)
    lineno, line = first
    suffix = suffixes(Path(path))
    if suffix in (".jsonl", ".json", ".ndjson") or line.startswith("{"):
        if not line.startswith("{"):
            raise fatal_error(
                file, lineno, "not a JSON object", snip(line), RUN_FORMATS, "write one JSON object per line"
            )
        return read_run_jsonl(as_bytes(raw), file, name, report)
    fields = [f.strip().lower() for f in re.split(r"[,\t]", line)]
    if suffix in (".csv", ".tsv") or (len(fields) >= 2 and fields[0] in RUN_Q_COLS):
        return _read_run_table(as_bytes(raw), file, name, report, line, lineno)
    if len(line.split()) >= 4:
        return _read_run_trec(raw, file, name, report)
    raise fatal_error(
        file,
        lineno,
        "matches no run format",
        f"line {lineno} is {snip(line)}",
        RUN_FORMATS,
        "convert the run to one of these formats",
    )


def _read_run_trec(raw: RawBytes, file: str, name: str, report: ValidationReport) -> Run:
    fast = _read_run_trec_fast(raw, file, name, report)
    if fast is not None:
        return fast
    raw = as_bytes(raw)
    # Line by line: exact line numbers for errors, comments, extra fields after the tag.
    qs: list[str] = []
    ds: list[str] = []
    rs: list[float] = []
    ss: list[float] = []
    extra: list[int] = []
    for lineno, line in text_lines(raw):
        parts = line.split()
        if not parts or parts[0].startswith(b"#"):
            continue
        if len(parts) > 6:
            extra.append(lineno)
        score = _trec_score(parts, line, lineno, file)
        rank = parse_float(parts[3].decode("utf-8"))
        qs.append(parts[0].decode("utf-8"))
        ds.append(parts[2].decode("utf-8"))
        rs.append(rank if rank is not None else math.nan)
        ss.append(score)
    note_lines(
        report,
        "extra_fields_ignored",
        f"{plural_of(len(extra), 'line')} {verb(len(extra), 'has', 'have')} more than 6 fields; the fields after the run tag are ignored "
        "(as trec_eval does)",
        extra,
        file,
    )
    file_ranks = np.asarray(rs, dtype=np.float64)
    return run_from_lists(name, file, (qs, ds, ss), report, what="result lines", file_ranks=file_ranks)


def _read_run_trec_fast(raw: RawBytes, file: str, name: str, report: ValidationReport) -> Run | None:
    """The run through pyarrow, or None when the file needs the line-by-line reader (or a score is not finite)."""
    # the query ids dictionary-encoded by the reader's threads: few distinct values, their codes come with the parse
    types = {
        "q": pa.dictionary(pa.int32(), pa.string()),
        "d": pa.string(),
        "r": pa.float64(),
        "s": pa.float64(),
    }
    table = fast_whitespace_table(raw, ["q", "iter", "d", "r", "s", "tag"], types)
    if table is None:
        return None
    scores = numpy_of(table.column("s"))
    if not np.isfinite(scores).all():
        return None
    q, d, ranks = table.column("q"), table.column("d"), numpy_of(table.column("r"))
    return build_run(name, file, q, d, scores, report, file_ranks=ranks)


def _trec_score(parts: list[bytes], line: bytes, lineno: int, file: str) -> float:
    """The score of a TREC run line split into ``parts``; fatal when fields are missing or it is not finite."""
    if len(parts) == 4 and parts[3].lstrip(b"-").isdigit():
        raise fatal_error(
            file,
            lineno,
            'this line looks like TREC qrels ("qid iter docid relevance": 4 fields, an integer grade last), '
            "a golden set, not a run",
            snip(line),
            TREC_RUN,
            QRELS_NOT_RUN_FIX,
        )
    if len(parts) < 6:
        fix = (
            "add the run tag column, or pass a JSONL/CSV run instead"
            if len(parts) == 5
            else "write every line as qid Q0 docid rank score tag, or pass a JSONL/CSV run instead"
        )
        raise fatal_error(
            file,
            lineno,
            f'expected 6 whitespace-separated fields "qid Q0 docid rank score tag", found {len(parts)}',
            snip(line),
            TREC_RUN,
            fix,
        )
    text = parts[4].decode("utf-8")
    score = parse_float(text)
    if score is None:
        raise fatal_error(
            file,
            lineno,
            f"the score (5th field) is not a number: {text!r}{not_ascii_note(text)}",
            snip(line),
            TREC_RUN,
            "write a numeric score in ASCII digits",
        )
    if not math.isfinite(score):
        raise fatal_error(
            file,
            lineno,
            f"the score is {text}, which cannot be ordered",
            snip(line),
            TREC_RUN + " with finite scores",
            "fix the retriever output (a NaN usually means a zero-norm embedding) or drop the line",
        )
    return score


_RUN_TABLE = "a CSV/TSV run with a header query_id,doc_id,score[,rank]"


def _read_run_table(
    raw: bytes, file: str, name: str, report: ValidationReport, header: str, header_line: int
) -> Run:
    delimiter = "\t" if ("\t" in header or (suffixes(Path(file)) == ".tsv" and "," not in header)) else ","
    columns = header_fields(header, delimiter, file, header_line, RUN_FORMATS)
    qcol, dcol, scol, rcol = _run_table_columns(columns, header, file, header_line)
    table, line_of_row = read_csv_table(
        raw, file, columns, delimiter, header_line, report, strict=True, expected=_RUN_TABLE
    )
    q = strip_ids(table.column(qcol))
    d = strip_ids(table.column(dcol))
    numbers = {col: _number_column(table, col, file, line_of_row) for col in (scol, rcol) if col is not None}
    if table.num_rows == 0:
        return empty_run(name, file, report, "result rows")
    if rcol is None:
        _refuse_qrels_table(numbers[scol], columns, file, header_line, header)
        return build_run(name, file, q, d, numbers[scol], report)
    ranks = numbers[rcol]
    if not (ranks == np.round(ranks)).all():
        bad = int(np.flatnonzero(ranks != np.round(ranks))[0])
        raise fatal_error(
            file,
            line_of_row(bad),
            f"the rank is not an integer: {ranks[bad]}",
            None,
            _RUN_TABLE,
            "write integer ranks",
        )
    scores = numbers[scol] if scol is not None else -ranks
    q_codes = first_seen_codes(q)[0]
    order = np.lexsort((np.arange(table.num_rows), ranks, q_codes))  # query first-seen, rank, file order
    return build_run(name, file, q, d, scores.astype(np.float64), report, order=order)


QRELS_NOT_RUN_FIX = (
    "pass this file as the golden set (--qrels, or --extra-qrels for more judgements; qrels= in Python), "
    "and as the run the ranked output of your retriever"
)


def _refuse_qrels_table(
    scores: np.ndarray, columns: list[str], file: str, header_line: int, header: str
) -> None:
    """Refuse a BEIR qrels table given as a run: the BEIR qrels columns (a ``corpus-id`` column), no rank column and
    every score a small integer grade (-1..4), e.g. ``qrels/test.tsv``. A run with other column names and integer
    scores is read as a run; once the golden set is known, :func:`diagnose.io.check_run_matches_qrels` refuses any
    run that is the golden set itself, whatever its layout."""
    beir = any(c.strip().lower() in ("corpus-id", "corpus_id") for c in columns)
    grades = len(scores) > 0 and bool(((scores == np.round(scores)) & (scores >= -1) & (scores <= 4)).all())
    if beir and grades:
        raise fatal_error(
            file,
            header_line,
            f"this looks like a qrels file, a golden set, not a run: columns {', '.join(columns)}, no rank "
            "column, and every score is an integer grade between -1 and 4",
            snip(header),
            _RUN_TABLE,
            QRELS_NOT_RUN_FIX + " (a run whose scores really are such integers: add a rank column)",
        )


def _run_table_columns(
    columns: list[str], header: str, file: str, header_line: int
) -> tuple[str, str, str | None, str | None]:
    """The query id, doc id, score and rank columns named by the header (score or rank may be missing, not both)."""
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise fatal_error(
            file,
            header_line,
            f"the header names {', '.join(repr(show_id(c, 40)) for c in twice)} more than once",
            snip(header),
            _RUN_TABLE,
            "give every column its own name",
        )
    lower = [c.lower() for c in columns]

    def find(cands: Sequence[str]) -> str | None:
        for c in cands:
            if c in lower:
                return columns[lower.index(c)]
        return None

    qcol, dcol, scol, rcol = find(RUN_Q_COLS), find(RUN_D_COLS), find(("score",)), find(("rank",))
    if qcol is None or dcol is None or (scol is None and rcol is None):
        raise fatal_error(
            file,
            header_line,
            f"the header names no {'query id' if qcol is None else 'doc id' if dcol is None else 'score or rank'} column",
            f"columns: {', '.join(columns)}",
            _RUN_TABLE,
            "name the columns query_id, doc_id and score (and optionally rank)",
        )
    return qcol, dcol, scol, rcol


def _number_column(table: pa.Table, col: str, file: str, line_of_row: Callable[[int], int]) -> np.ndarray:
    """A score or rank column as float64; fatal (naming the line) when a value is not a number or not finite."""
    values = _as_float(table.column(col))
    if values is None:
        bad = _first_bad_row(table.column(col), lambda s: parse_float(s) is None)
        value = table.column(col)[bad].as_py()
        raise fatal_error(
            file,
            line_of_row(bad),
            f"the {col} column is not a number: {value!r}{not_ascii_note(value)}",
            None,
            _RUN_TABLE,
            f"write a numeric {col} in ASCII digits",
        )
    arr = numpy_of(values)
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise fatal_error(
            file,
            line_of_row(bad),
            f"the {col} is {table.column(col)[bad].as_py().strip()}, which cannot be ordered",
            None,
            _RUN_TABLE + " with finite values",
            "fix the retriever output (a NaN usually means a zero-norm embedding)",
        )
    return arr


def _as_float(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """The column parsed as float64, or None when a value is not a number."""
    try:
        return pc.cast(pc.utf8_trim_whitespace(col), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _first_bad_row(col: pa.ChunkedArray, is_bad) -> int:
    for i, value in enumerate(col.to_pylist()):
        if is_bad(value):
            return i
    return 0


def write_trec_run(run: Run, path: PathLike, tag: str | None = None) -> None:
    """Write ``run`` as a TREC run file ``qid Q0 docid rank score tag`` (gzip when ``path`` ends in ``.gz``).

    Rows are written in the run's order with its ranks; scores with Python's shortest round-trip repr. The tag
    defaults to the run name (whitespace replaced by ``_``). trec_eval re-orders by score: a run whose scores do
    not decrease along its ranks (a re-ranked list with stale scores) reads back in score order, not rank order.
    Ids containing whitespace cannot be written (DataError).
    """
    tag = re.sub(r"\s+", "_", (tag or run.name or "run").strip()) or "run"
    df = run.df
    for col in ("query_id", "doc_id"):
        has_space = df[col].astype("str").str.contains(r"\s", regex=True)
        if has_space.any():
            bad = df.loc[has_space, col].iloc[0]
            raise DataError(
                f"{path}: cannot write run {run.name!r} as TREC: the {col} {show_id(bad)!r} contains whitespace. Expected ids "
                "without spaces (TREC fields are whitespace-separated). Fix: replace the spaces in the ids, or keep "
                "the run as JSONL."
            )
    scores = [repr(float(s)) for s in df["score"].to_numpy()]
    lines = (
        df["query_id"].astype("str")
        + " Q0 "
        + df["doc_id"].astype("str")
        + " "
        + df["rank"].astype("int64").astype("str")
        + " "
        + pd.Series(scores, index=df.index, dtype="str")
        + " "
        + tag
    )
    text = "\n".join(lines.tolist()) + ("\n" if len(lines) else "")
    data = text.encode("utf-8")
    p = Path(path)
    if p.name.lower().endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    p.write_bytes(data)
