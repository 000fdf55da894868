"""Queries: :func:`read_queries` from a BEIR ``queries.jsonl``, a TSV file ``id<TAB>text`` or a CSV / Parquet
table."""

from __future__ import annotations

from pathlib import Path

from diagnose.data import Queries, ValidationReport
from diagnose.io.decoding import clean_utf8, refuse_decoding_collisions
from diagnose.io.files import PathLike, check_input_path, read_bytes, suffixes
from diagnose.io.formats import QUERIES_FORMATS, QUERY_ID_FIELDS, QUERY_TEXT_FIELDS
from diagnose.io.messages import plural_of, snip, verb
from diagnose.io.records import finish_records, read_records
from diagnose.io.text import first_line, text_lines
from diagnose.runtime.lazy import pandas as pd


@refuse_decoding_collisions(("query_id",))
def read_queries(
    path: PathLike,
    *,
    id_field: str | None = None,
    text_field: str | None = None,
    report: ValidationReport | None = None,
) -> Queries:
    """Read queries: BEIR JSONL (metadata kept as columns), TSV ``id<TAB>text`` (header optional), CSV/Parquet.

    Columns: ``query_id``, ``text`` and every other field. Ids auto-detected from ``_id|id|query_id|qid``, text
    from ``text|query|question``. Unreadable lines are skipped and counted; repeated ids keep the first query;
    queries with empty text are kept and counted.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    p = Path(path)
    check_input_path(p, QUERIES_FORMATS)
    if suffixes(p) not in (".jsonl", ".json", ".ndjson", ".csv", ".parquet", ".pq"):
        raw = clean_utf8(read_bytes(p, QUERIES_FORMATS), file, report)
        first = first_line(raw)
        header = first[1].split("\t") if first else []
        is_table = len(header) > 2 and header[0].strip().lower() in (*QUERY_ID_FIELDS, "query-id")
        tab_file = suffixes(p) in (".tsv", ".tab", ".txt") or (first is not None and "\t" in first[1])
        if first is not None and tab_file and not first[1].startswith("{") and not is_table:
            df = _read_queries_id_tab_text(raw, file, report)
            return finish_records(
                df, file, report, "queries", (id_field, text_field, None), ("query_id",), ("text",), ()
            )
    df, where = read_records(p, file, report, QUERIES_FORMATS, "queries")
    return finish_records(
        df,
        file,
        report,
        "queries",
        (id_field, text_field, None),
        QUERY_ID_FIELDS,
        QUERY_TEXT_FIELDS,
        (),
        where,
    )


def _read_queries_id_tab_text(raw: bytes, file: str, report: ValidationReport) -> pd.DataFrame:
    ids: list[str] = []
    texts: list[str] = []
    bad: list[str] = []
    first = True
    for lineno, line in text_lines(raw):
        text = line.decode("utf-8")
        if not text.strip():
            continue
        qid, tab, rest = text.partition("\t")
        if first:
            first = False
            if (
                qid.strip().lower() in (*QUERY_ID_FIELDS, "query-id")
                and rest.strip().lower() in QUERY_TEXT_FIELDS
            ):
                continue  # header
        if not tab:
            bad.append(f"line {lineno}: {snip(text, 60)}")
            continue
        ids.append(qid.strip())
        texts.append(rest.strip())
    if bad:
        report.add(
            "malformed_line",
            f"{plural_of(len(bad), 'line')} {verb(len(bad), 'has', 'have')} no tab between the query id and the text and "
            f"{verb(len(bad), 'was', 'were')} skipped (expected id<TAB>text)",
            file=file,
            count=len(bad),
            examples=bad,
        )
    return pd.DataFrame({"query_id": pd.Series(ids, dtype="str"), "text": pd.Series(texts, dtype="str")})
