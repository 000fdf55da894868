"""pyarrow fast paths shared by the readers: whitespace-separated files (TREC runs and qrels) and CSV/TSV files
with a header, read into Arrow tables (:func:`diagnose.runtime.frames.arrow_to_pandas` makes frames of them).

``diagnose.io._FAST = False`` switches the fast paths off, so that the tests can check the line-by-line paths
give the same result (:func:`fast_paths` reads the flag at each call)."""

from __future__ import annotations

import csv
from collections.abc import Callable

import pyarrow as pa
import pyarrow.csv as pacsv

from diagnose import io
from diagnose.data import ValidationReport
from diagnose.io.files import RawBytes, as_bytes
from diagnose.io.messages import fatal_error, plural_of, snip, verb
from diagnose.io.text import line_start, text_lines
from diagnose.runtime.lazy import pyarrow_compute as pc


def fast_paths() -> bool:
    """Whether the pyarrow fast paths are on: ``diagnose.io._FAST``, read at each call (tests switch it)."""

    return io._FAST


def strip_ids(arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    return pc.utf8_trim_whitespace(arr)


def _normalise_whitespace(data: bytes) -> bytes:
    """One space between fields, no leading/trailing blanks on a line; line count unchanged (vectorised)."""
    data = data.translate(_WS_TO_SPACE)
    while b"  " in data:
        data = data.replace(b"  ", b" ")
    if b"\n " in data:
        data = data.replace(b"\n ", b"\n")
    if b" \n" in data:
        data = data.replace(b" \n", b"\n")
    if data.startswith(b" "):
        data = data[1:]
    if data.endswith(b" "):
        data = data[:-1]
    return data


_WS_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")


def fast_whitespace_table(data: RawBytes, names: list[str], types: dict[str, pa.DataType]) -> pa.Table | None:
    """Parse a whitespace-separated file with pyarrow, or None when it needs the line-by-line path.

    A file that separates fields by single tabs only, or single spaces only, is parsed as is; otherwise (mixed
    or repeated blanks, leading blanks) it is first normalised to single spaces, as trec_eval splits on any
    run of whitespace. None when: fast paths are off, a line does not have exactly ``len(names)`` fields, a
    field does not convert, or a line starts with ``#`` (a comment; the slow path skips it like trec_eval).
    Only single-byte searches run on the whole buffer (memchr speed). ``data`` is valid UTF-8 (the readers pass
    it through :func:`~diagnose.io.decoding.clean_utf8` first), so the string columns are not checked again; it may
    be a :func:`~diagnose.io.files.read_mapped` map, parsed in place.
    """
    if not fast_paths():
        return None
    candidates: list[tuple[RawBytes, str]] = []
    if b"\x0b" not in data and b"\x0c" not in data:
        has_tab, has_space = b"\t" in data, b" " in data
        if not (has_tab and has_space):
            candidates.append((data, "\t" if has_tab else " "))
    candidates.append((b"", " "))  # normalised, built lazily
    for buf, delimiter in candidates:
        if not buf:
            buf = _normalise_whitespace(as_bytes(data))
        try:
            table = pacsv.read_csv(
                pa.BufferReader(buf),
                read_options=pacsv.ReadOptions(column_names=names),
                parse_options=pacsv.ParseOptions(
                    delimiter=delimiter,
                    quote_char=False,
                    escape_char=False,
                    newlines_in_values=False,
                    ignore_empty_lines=True,
                ),
                convert_options=pacsv.ConvertOptions(
                    include_columns=list(types),
                    column_types=types,
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                    check_utf8=False,  # checked whole by clean_utf8
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue
        if table.num_rows and _starts_with_hash(table.column(names[0])):
            return None
        return table
    return None


def _starts_with_hash(column: pa.ChunkedArray) -> bool:
    """Whether a value of ``column`` starts with ``#``; for a dictionary column, a value of a chunk's dictionary
    (the CSV reader's dictionaries hold the chunk's values only)."""
    if pa.types.is_dictionary(column.type):
        return any(pc.any(pc.starts_with(c.dictionary, "#")).as_py() for c in column.chunks)
    return bool(pc.any(pc.starts_with(column, "#")).as_py())


def _csv_record_lines(body: bytes, delimiter: str) -> list[int]:
    """Start line (1-based, within ``body``) of every non-empty CSV record (quoted newlines span lines)."""
    reader = csv.reader(body.decode("utf-8").split("\n"), delimiter=delimiter)
    out: list[int] = []
    previous = 0
    try:
        for fields in reader:
            if fields:
                out.append(previous + 1)
            previous = reader.line_num
    except csv.Error:  # a lone CR inside a field: number the non-blank lines (quoted newlines not followed)
        return [i for i, line in text_lines(body) if line.strip()]
    return out


def header_fields(line: str, delimiter: str, file: str, lineno: int, expected: str) -> list[str]:
    """The column names of a CSV/TSV header line."""
    try:
        fields = next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error as e:
        raise fatal_error(
            file,
            lineno,
            f"the header line cannot be parsed ({e})",
            snip(line),
            expected,
            "fix the header line",
        ) from None
    return [c.strip() for c in fields]


def read_csv_table(
    raw: bytes,
    file: str,
    columns: list[str],
    delimiter: str,
    header_line: int,
    report: ValidationReport,
    *,
    strict: bool,
    expected: str,
) -> tuple[pa.Table, Callable[[int], int]]:
    """The rows after the header line, every column as strings (ids like ``007`` stay ``007``), and a function
    from a table row to its file line. Rows with the wrong number of fields are fatal (``strict``) or skipped and
    counted."""
    body = raw[line_start(raw, header_line) :]
    table, bad = _parse_csv_body(body, len(columns), delimiter, file, expected)
    record_lines: list[int] = []

    def record_line(number: int) -> int:  # pyarrow numbers non-empty records from 1
        if not record_lines:
            record_lines.extend(_csv_record_lines(body, delimiter))
        return header_line + (record_lines[number - 1] if 0 < number <= len(record_lines) else number)

    bad_numbers = sorted(num for num, _, _ in bad)

    def line_of_row(i: int) -> int:
        number = i + 1
        for b in bad_numbers:  # skipped records shift the rows after them
            if b <= number:
                number += 1
        return record_line(number)

    if bad:
        lines = [record_line(num) for num, _, _ in bad]
        if strict:
            _, text, actual = bad[0]
            raise fatal_error(
                file,
                lines[0],
                f"expected {len(columns)} fields like the header ({delimiter.join(columns)}), found {actual}",
                snip(text),
                expected,
                "give every row the same columns as the header",
            )
        report.add(
            "malformed_line",
            f"{plural_of(len(bad), 'row')} {verb(len(bad), 'does', 'do')} not have the {len(columns)} columns of "
            f"the header and {verb(len(bad), 'was', 'were')} skipped",
            file=file,
            count=len(bad),
            examples=[f"line {ln}: {snip(t, 60)}" for ln, (_, t, _) in zip(lines, bad, strict=True)],
        )
    return table.rename_columns(columns), line_of_row


def _parse_csv_body(
    body: bytes, n_columns: int, delimiter: str, file: str, expected: str
) -> tuple[pa.Table, list[tuple[int, str, int]]]:
    """pyarrow's parse of the rows, every column as strings, and the rows it skipped for a wrong number of fields:
    ``(record number within body, text, fields found)``."""
    bad: list[tuple[int, str, int]] = []

    def on_bad(row) -> str:
        bad.append((row.number, row.text, row.actual_columns))
        return "skip"

    names = [f"c{i}" for i in range(n_columns)]
    try:
        table = pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, newlines_in_values=True, invalid_row_handler=on_bad
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except pa.ArrowInvalid as e:
        raise fatal_error(
            file, None, "cannot be parsed as a table", str(e).splitlines()[0], expected, "check the quoting"
        ) from None
    return table, bad
