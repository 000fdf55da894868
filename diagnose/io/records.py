"""Record files shared by the corpus and query readers: JSONL (``metadata`` flattened into columns, very wide
objects kept as one column of JSON text), CSV/TSV and Parquet, then the id / text / title columns picked and checked."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson

from diagnose.data import Corpus, Queries, ValidationReport
from diagnose.io.decoding import clean_utf8
from diagnose.io.files import check_input_path, read_bytes, suffixes
from diagnose.io.formats import (
    CORPUS_FORMATS,
    CORPUS_ID_FIELDS,
    CORPUS_TITLE_FIELDS,
    QUERIES_FORMATS,
    QUERY_ID_FIELDS,
)
from diagnose.io.messages import example_ids, fatal_error, plural_of, show_id, snip, verb
from diagnose.io.nesting import check_json_depth
from diagnose.io.tables import fast_paths, header_fields, read_csv_table
from diagnose.io.text import first_line, json_error, json_text, json_values, text_lines
from diagnose.runtime.frames import arrow_to_pandas
from diagnose.runtime.lazy import pandas as pd


def read_records(
    p: Path, file: str, report: ValidationReport, formats: str, kind: str
) -> tuple[pd.DataFrame, Callable[[int], str]]:
    """Any record file (JSONL, CSV, TSV, Parquet) as a DataFrame of raw fields, and where record ``i`` is."""
    suffix = suffixes(p)
    check_input_path(p, formats)
    if suffix in (".parquet", ".pq") or _starts_with(p, b"PAR1"):
        try:
            return pd.read_parquet(p), lambda i: f"row {i + 1}"
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a broken file
            raise fatal_error(
                file,
                None,
                "cannot be read as Parquet",
                str(e).splitlines()[0],
                formats,
                "re-export the table",
            ) from None
    raw = clean_utf8(read_bytes(p, formats), file, report)
    first = first_line(raw)
    if first is None:
        report.add("empty_file", f"the {kind} file is empty", file=file)
        return pd.DataFrame(), lambda i: f"record {i + 1}"
    lineno, line = first
    if suffix in (".jsonl", ".json", ".ndjson") or line.startswith("{"):
        if not line.startswith("{"):
            raise fatal_error(
                file, lineno, "not a JSON object", snip(line), formats, "write one JSON object per line"
            )
        check_json_depth(raw, file, formats)  # pyarrow dies with SIGSEGV on a line 20,000 levels deep
        return _read_jsonl_records(raw, file, report)
    if suffix in (".csv", ".tsv", ".tab") or "," in line or "\t" in line:
        delimiter = "\t" if (suffix in (".tsv", ".tab") or ("\t" in line and "," not in line)) else ","
        columns = header_fields(line, delimiter, file, lineno, formats)
        table, line_of_row = read_csv_table(
            raw, file, columns, delimiter, lineno, report, strict=False, expected=formats
        )
        return arrow_to_pandas(table), lambda i: f"line {line_of_row(i)}"
    raise fatal_error(
        file,
        lineno,
        f"matches no {kind} format",
        f"line {lineno} is {snip(line)}",
        formats,
        "convert the file to one of these formats",
    )


def _starts_with(p: Path, magic: bytes) -> bool:
    try:
        with p.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def _read_jsonl_records(
    raw: bytes, file: str, report: ValidationReport
) -> tuple[pd.DataFrame, Callable[[int], str]]:
    """JSONL objects -> DataFrame; nested objects flattened with dotted names. pyarrow first, then line by line."""
    if fast_paths():
        try:
            table = pajson.read_json(pa.BufferReader(raw))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            table = None
        if table is not None:
            table = _keep_wide_objects_whole(table)
            while any(pa.types.is_struct(f.type) for f in table.schema):
                table = table.flatten()

            def where(i: int) -> str:  # pyarrow read every non-blank line as one record
                nonblank = (n for n, line in text_lines(raw) if line.strip())
                return f"line {next(itertools.islice(nonblank, i, None), '?')}"

            return arrow_to_pandas(table), where
    rows: list[dict[str, Any]] = []
    row_lines: list[int] = []
    bad: list[str] = []
    for lineno, _, obj in json_values(raw):
        if isinstance(obj, BaseException):
            bad.append(f"line {lineno}: {json_error(obj)}")
        elif not isinstance(obj, dict):
            bad.append(f"line {lineno}: a JSON {type(obj).__name__}, not an object")
        else:
            rows.append(_flatten(obj))
            row_lines.append(lineno)
    rows = _collapse_wide(rows)
    if bad:
        report.add(
            "malformed_line",
            f"{plural_of(len(bad), 'line')} {verb(len(bad), 'is not a valid JSON object and was', 'are not valid JSON objects and were')} skipped (first: {bad[0]})",
            file=file,
            count=len(bad),
            examples=bad,
        )
    return pd.DataFrame(rows), lambda i: f"line {row_lines[i]}"


#: A nested object with more fields than this (SciFact's query metadata: one key per cited document) is kept as one
#: column of JSON text instead of one column per field; ``slice_metrics`` still slices by a field inside it.
MAX_OBJECT_FIELDS = 32


def _n_leaves(t: pa.DataType) -> int:
    return sum(_n_leaves(f.type) for f in t) if pa.types.is_struct(t) else 1


def _keep_wide_objects_whole(table: pa.Table) -> pa.Table:
    """Objects with more than :data:`MAX_OBJECT_FIELDS` leaves become JSON text (nulls dropped), the innermost
    wide object first: ``metadata: {"area": .., "cites": {437 keys}}`` keeps ``area`` as a column."""
    for i, f in enumerate(table.schema):
        if pa.types.is_struct(f.type):
            table = table.set_column(i, f.name, _narrow(table.column(i).combine_chunks()))
    return table


def _narrow(arr: pa.Array) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        return arr
    children = [_narrow(arr.field(j)) for j in range(arr.type.num_fields)]
    names = [arr.type.field(j).name for j in range(arr.type.num_fields)]
    arr = pa.StructArray.from_arrays(children, names=names, mask=arr.is_null())
    if _n_leaves(arr.type) <= MAX_OBJECT_FIELDS:
        return arr
    rows = arr.to_pylist()
    return pa.array(
        [None if r is None else json.dumps(_drop_nulls(r), ensure_ascii=False) for r in rows],
        type=pa.string(),
    )


def _drop_nulls(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _drop_nulls(v) for k, v in obj.items() if v is not None}
    return obj


def _flatten(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _collapse_wide(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The line-by-line twin of :func:`_keep_wide_objects_whole`: an object whose fields over the whole file are
    more than :data:`MAX_OBJECT_FIELDS` leaves is put back together as JSON text, the innermost first."""
    leaves = list(dict.fromkeys(k for r in rows for k in r))
    while True:
        under: dict[str, list[str]] = {}
        for name in leaves:
            parts = name.split(".")
            for depth in range(1, len(parts)):
                under.setdefault(".".join(parts[:depth]), []).append(name)
        wide = [p for p, names in under.items() if len(names) > MAX_OBJECT_FIELDS]
        if not wide:
            return rows
        prefix = max(wide, key=lambda p: p.count("."))  # the innermost wide object
        names = set(under[prefix])
        for r in rows:
            obj: dict[str, Any] = {}
            for name in [n for n in r if n in names]:
                value = r.pop(name)
                if value is None:
                    continue
                node = obj
                *path, last = name[len(prefix) + 1 :].split(".")
                for part in path:
                    node = node.setdefault(part, {})
                node[last] = value
            r[prefix] = json.dumps(obj, ensure_ascii=False) if obj else None
        leaves = [n for n in leaves if n not in names] + [prefix]


def _pick(
    columns: Sequence[str],
    given: str | None,
    candidates: Sequence[str],
    role: str,
    file: str,
    formats: str,
    option: str,
) -> str | None:
    """The column for ``role``: ``given`` (must exist) or the first candidate present (case-insensitive)."""
    if given:
        if given in columns:
            return given
        raise fatal_error(
            file,
            None,
            f"has no {role} field {given!r}",
            f"fields: {', '.join(map(str, columns)) or 'none'}",
            formats,
            f"give the {role} field as one of these ({option})",
            param=option,
        )
    lower = {str(c).lower(): c for c in reversed(list(columns))}
    for cand in candidates:
        if cand in lower:
            return lower[cand]
    return None


def finish_records(
    df: pd.DataFrame,
    file: str,
    report: ValidationReport,
    kind: str,
    given: tuple[str | None, str | None, str | None],
    id_cands: Sequence[str],
    text_cands: Sequence[str],
    title_cands: Sequence[str],
    where: Callable[[int], str] | None = None,
) -> Any:
    """Raw fields -> Corpus / Queries: pick and rename the columns, clean ids, count problems."""
    is_corpus = kind == "corpus"
    id_col = "doc_id" if is_corpus else "query_id"
    record = Corpus if is_corpus else Queries
    if df.empty and not len(df.columns):
        cols = [id_col, "title", "text"] if is_corpus else [id_col, "text"]
        return record(pd.DataFrame({c: pd.Series([], dtype="str") for c in cols}), file)
    df, columns = _drop_repeated_fields(df, file, report)
    sources = _pick_fields(columns, given, (id_cands, text_cands, title_cands), is_corpus, file)
    at = where or (lambda i: f"record {i + 1}")
    out = _record_columns(df, columns, sources, id_col, file, at)
    out = _drop_records_without_id(out, id_col, sources[0], file, report, at)
    dup = out[id_col].duplicated(keep="first")
    if dup.any():
        ids = pd.unique(out.loc[dup, id_col]).tolist()
        n = int(dup.sum())
        report.add(
            f"duplicate_{'doc' if is_corpus else 'query'}_id",
            f"{plural_of(n, 'record')} {verb(n, 'repeats', 'repeat')} an id already seen "
            f"({plural_of(len(ids), 'distinct id')}); the first record of each id is kept",
            file=file,
            count=n,
            examples=example_ids(ids),
        )
        out = out[~dup]
    _count_records_without_text(out, id_col, is_corpus, file, report)
    out = out.reset_index(drop=True)
    report.stats[f"{kind}_records"] = len(out)
    return record(out, file)


def _drop_repeated_fields(
    df: pd.DataFrame, file: str, report: ValidationReport
) -> tuple[pd.DataFrame, list[str]]:
    """The frame with string column names, the first field of each name kept (warning), and those names."""
    columns = [str(c) for c in df.columns]
    df.columns = columns
    repeated = pd.Index(columns).duplicated()
    if not repeated.any():
        return df, columns
    names = list(dict.fromkeys(c for c, r in zip(columns, repeated, strict=True) if r))
    report.add(
        "duplicate_field",
        f"{plural_of(len(names), 'field name')} {verb(len(names), 'appears', 'appear')} more than once (in the "
        "header, or once metadata is flattened); the first field of each name is kept",
        file=file,
        count=len(names),
        examples=[repr(show_id(n, 40)) for n in names],
    )
    return df.loc[:, ~repeated], [c for c, r in zip(columns, repeated, strict=True) if not r]


def _pick_fields(
    columns: Sequence[str],
    given: tuple[str | None, str | None, str | None],
    candidates: tuple[Sequence[str], Sequence[str], Sequence[str]],
    is_corpus: bool,
    file: str,
) -> tuple[str, str, str | None]:
    """The id, text and title fields (title: corpus only, may be missing); fatal when no id or text field."""
    formats = CORPUS_FORMATS if is_corpus else QUERIES_FORMATS
    id_cands, text_cands, title_cands = candidates
    src_id = _pick(columns, given[0], id_cands, "id", file, formats, "id_field")
    src_text = _pick(columns, given[1], text_cands, "text", file, formats, "text_field")
    src_title = (
        _pick(columns, given[2], title_cands, "title", file, formats, "title_field") if is_corpus else None
    )
    if src_id is None or src_text is None:
        role = "id" if src_id is None else "text"
        cands = id_cands if src_id is None else text_cands
        raise fatal_error(
            file,
            None,
            f"no {role} field found",
            f"fields: {', '.join(columns)}",
            f"{formats}, with the {role} in a field named {' or '.join(cands)}",
            f"rename the field, or name it with --{role}-field",
        )
    return src_id, src_text, src_title


def _record_columns(
    df: pd.DataFrame,
    columns: Sequence[str],
    sources: tuple[str, str, str | None],
    id_col: str,
    file: str,
    at: Callable[[int], str],
) -> pd.DataFrame:
    """The id, (title,) text columns as strings, then every other field (``metadata.`` dropped from its name when
    that name is free; a field named like one of those columns but not read as it, e.g. ``doc_id`` beside ``_id``,
    kept as ``metadata.NAME``, never dropped)."""
    src_id, src_text, src_title = sources
    out = pd.DataFrame(index=df.index)
    out[id_col] = _text_column(df[src_id], file, src_id, at).str.strip()
    if id_col == "doc_id":
        out["title"] = _text_column(df[src_title], file, src_title, at) if src_title is not None else ""
        out["title"] = out["title"].astype("str")
    out["text"] = _text_column(df[src_text], file, src_text, at)
    used = set(sources)
    core = set(out.columns)
    for col in columns:
        if col in used:
            continue
        short = col[len("metadata.") :] if col.startswith("metadata.") else col
        target = short if short not in core and short not in out.columns else col
        if (
            target in core
        ):  # a field named like a column of the record ("doc_id" beside "_id"): kept, qualified
            target = f"metadata.{col}"
        if target in out.columns:
            continue
        out[target] = df[col]
    return out


def _drop_records_without_id(
    out: pd.DataFrame, id_col: str, src_id: str, file: str, report: ValidationReport, at: Callable[[int], str]
) -> pd.DataFrame:
    no_id = out[id_col] == ""
    if not no_id.any():
        return out
    rows = np.flatnonzero(no_id.to_numpy())[:5]
    n = int(no_id.sum())
    report.add(
        "missing_id",
        f"{plural_of(n, 'record')} {verb(n, 'has', 'have')} no {src_id!r} and {verb(n, 'was', 'were')} skipped",
        file=file,
        count=n,
        examples=[at(int(i)) for i in rows],
    )
    return out[~no_id]


def _count_records_without_text(
    out: pd.DataFrame, id_col: str, is_corpus: bool, file: str, report: ValidationReport
) -> None:
    """Documents with no text and no title, queries with no text: kept, and counted."""
    blank = out["text"].str.strip() == ""
    if is_corpus:
        blank &= out["title"].str.strip() == ""
    if not blank.any():
        return
    ids = out.loc[blank, id_col].tolist()
    report.add(
        "empty_document" if is_corpus else "query_without_text",
        f"{plural_of(len(ids), 'document' if is_corpus else 'query', None if is_corpus else 'queries')} "
        f"{verb(len(ids), 'has', 'have')} no text{' and no title' if is_corpus else ''}; "
        f"{verb(len(ids), 'it is', 'they are')} kept"
        + (
            f" ({verb(len(ids), 'it', 'they')} can never be retrieved by text)"
            if is_corpus
            else " (empty query text)"
        ),
        file=file,
        count=len(ids),
        examples=example_ids(ids),
    )


def _text_column(s: pd.Series, file: str, name: str, where: Callable[[int], str]) -> pd.Series:
    """Any column as strings; missing values -> ``""``; integral floats (from JSON numbers) without ``.0``.

    Lists, arrays and objects (a Parquet list or struct column, a JSON list) are refused rather than turned into
    ``"[1 2]"``; binary values are decoded as UTF-8 (refused when they are not UTF-8).
    """
    if s.dtype == "str":
        return s.fillna("")
    if pd.api.types.is_float_dtype(s.dtype):
        values = s.to_numpy()
        out = [("" if math.isnan(v) else (str(int(v)) if v == int(v) else repr(v))) for v in values]
        return pd.Series(out, index=s.index, dtype="str")
    texts: list[str] = []
    for i, v in enumerate(s.tolist()):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            texts.append("")
        elif isinstance(v, str):
            texts.append(v)
        elif isinstance(v, bytes):
            try:
                texts.append(v.decode("utf-8"))
            except UnicodeDecodeError:
                raise fatal_error(
                    file,
                    None,
                    f"the {name!r} column holds bytes that are not UTF-8 text ({where(i)})",
                    snip(repr(v), 60),
                    f"the {name!r} column as text",
                    "store the column as UTF-8 strings",
                ) from None
        elif isinstance(v, list | tuple | dict | np.ndarray | set):
            kind = "an object" if isinstance(v, dict) else "a list"
            raise fatal_error(
                file,
                None,
                f"the {name!r} column holds {kind}, not text ({where(i)})",
                snip(json_text(v.tolist() if isinstance(v, np.ndarray) else v), 60),
                f"the {name!r} column as plain strings",
                f"join the parts into one string per row before saving (or name another column with --{_role(name)}-field)",
            )
        else:
            texts.append(str(v))
    return pd.Series(texts, index=s.index, dtype="str")


def _role(column: str) -> str:
    low = column.lower()
    if low in CORPUS_TITLE_FIELDS:
        return "title"
    if low in (*CORPUS_ID_FIELDS, *QUERY_ID_FIELDS):
        return "id"
    return "text"
