"""One reader for the judgements people write: the journal's JSON lines and the graded judging-queue TSV, line by
line, so that a torn line anywhere (a crash, a truncated copy, a hand edit) costs that line only; and the writer of
the queue TSV, so that what it writes reads back the same.

- **Torn lines.** A line that is not valid UTF-8, not valid JSON (journal) or not a TSV row with the header's number
  of fields (queue) is ignored and counted: a ``journal_torn_line`` / ``queue_torn_line`` warning with the line
  numbers. Any line may be torn, the first one included.
- **Hostile lines** are refused with a message naming the line, never read: JSON nested deeper than
  :data:`MAX_NESTING` levels (a judgement is one flat object; Python's parser would overflow its stack) and numbers
  of more than :data:`MAX_DIGITS` digits (a 5,000-digit grade).
- **Grades** are 0, 1, 2, 3 or ``skip``; in the TSV they are read from ASCII digits only (``str.isdigit`` also
  accepts ``²`` and ``٣``).
- **Ids** round-trip: the queue TSV is written with CSV quoting (a field with a tab or a quote is quoted, a quote
  doubled, as spreadsheets do) and read with the same rules. Ids are stripped of surrounding whitespace, like the
  readers of the data set do; an id with a line break cannot be written to a line-based file and is refused.
- **Conflicts.** The last line of a pair wins (a later judgement corrects an earlier one; a ``skip`` after a grade
  withdraws it). Pairs given two different grades are reported (``judgement_conflict``, a warning naming the pair,
  the grades and their lines), never resolved silently.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from diagnose.data import DataError, ValidationReport
from diagnose.runtime.lazy import pandas as pd

GRADES = (0, 1, 2, 3)
SKIP = "skip"
QUEUE_TSV_COLUMNS = ["query_id", "query_text", "doc_id", "doc_text", "priority", "reason", "grade"]
MAX_NESTING = 16  # JSON levels a judgement line may have (it has 1)
MAX_DIGITS = 20  # digits a number of a judgement line may have

_ASCII_GRADE = re.compile(r"[+-]?[0-9]{1,20}", re.ASCII)


class Entry(NamedTuple):
    """One judgement: ``grade`` 0-3 or ``"skip"``; ``time`` ISO 8601 UTC and ``judge`` (empty from a queue TSV);
    ``line`` its line number in its file."""

    query_id: str
    doc_id: str
    grade: int | str
    time: str
    judge: str
    line: int


def check_grade(grade: Any, where: str) -> int | str:
    """``grade`` as 0-3 or ``"skip"``; else a DataError naming ``where``."""
    if isinstance(grade, str) and grade.strip().lower() == SKIP:
        return SKIP
    if isinstance(grade, bool) or not isinstance(grade, int | np.integer) or int(grade) not in GRADES:
        shown = repr(grade) if len(repr(grade)) <= 40 else f"{repr(grade)[:40]}..."
        raise DataError(f"{where}: the grade must be 0, 1, 2, 3 or 'skip', got {shown}.", param="grade")
    return int(grade)


def check_id(value: Any, what: str, where: str) -> str:
    """A query or document id as stripped text; else a DataError naming ``what`` and ``where``."""
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise DataError(f"{where}: the {what} must be a non-empty string, got {value!r}.", param=what)
    return str(value).strip()


def _lines(raw: bytes) -> Iterable[tuple[int, bytes]]:
    """``(line number, line)`` of the non-blank lines, without their ``\\r\\n`` / ``\\n`` (a UTF-8 BOM dropped)."""
    for lineno, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        if line.strip():
            yield lineno, line


# ------------------------------------------------------------------------------------------------ the journal


class _Giant(ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _Giant(digits)
    return int(text)


def _nesting(line: bytes) -> int:
    """The deepest level of ``[`` / ``{`` outside JSON strings (stops counting past :data:`MAX_NESTING`)."""
    depth = deepest = 0
    in_string = escaped = False
    for c in line:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:  # quote
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                break
        elif c in (0x5D, 0x7D):
            depth -= 1
    return deepest


_TORN = object()


def _json_line(line: bytes, where: str) -> Any:
    """The JSON value of one line, :data:`_TORN` when it is not valid JSON; DataError for hostile lines."""
    if line.count(b"[") + line.count(b"{") > MAX_NESTING and _nesting(line) > MAX_NESTING:
        raise DataError(
            f"{where}: the line is JSON nested deeper than {MAX_NESTING} levels; a judgement is one flat object "
            '{"query_id": .., "doc_id": .., "grade": ..}. Fix the line or delete it.',
            param="journal",
        )
    try:
        return json.loads(line.decode("utf-8"), parse_int=_bounded_int)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _TORN
    except _Giant as e:
        raise DataError(
            f"{where}: the line holds a number of {e.digits:,} digits; a grade is 0, 1, 2 or 3. Fix the line or "
            "delete it.",
            param="journal",
        ) from None


def journal_entries(raw: bytes, source: str) -> tuple[list[Entry], list[int]]:
    """``(entries, torn line numbers)`` of a journal's bytes (see the module docstring). A line that is valid JSON
    but not a judgement (a grade of 7, no doc id) is an error naming the line: someone edited it."""
    out: list[Entry] = []
    torn: list[int] = []
    for lineno, line in _lines(raw):
        where = f"{source}, line {lineno}"
        obj = _json_line(line, where)
        if obj is _TORN:
            torn.append(lineno)
            continue
        if not isinstance(obj, dict):
            raise DataError(
                f"{where}: expected a JSON object per line, got {type(obj).__name__}.", param="journal"
            )
        missing = [key for key in ("query_id", "doc_id", "grade") if key not in obj]
        if missing:
            raise DataError(
                f"{where}: the judgement has no {', '.join(repr(m) for m in missing)}. Expected "
                '{"query_id": .., "doc_id": .., "grade": 0-3 or "skip", "time": .., "judge": ..}. Fix the line '
                "or delete it.",
                param="journal",
            )
        out.append(
            Entry(
                check_id(obj["query_id"], "query_id", where),
                check_id(obj["doc_id"], "doc_id", where),
                check_grade(obj["grade"], where),
                str(obj.get("time", "")),
                str(obj.get("judge", "")),
                lineno,
            )
        )
    return out, torn


# ------------------------------------------------------------------------------------------ the queue TSV


def is_queue_header(line: bytes) -> bool:
    """Whether ``line`` is the header of a judging queue TSV written by :func:`write_queue_tsv`."""
    return line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r").split(b"\t") == [
        c.encode() for c in QUEUE_TSV_COLUMNS
    ]


def write_queue_tsv(table: pd.DataFrame) -> str:
    """The judging queue (columns :data:`QUEUE_TSV_COLUMNS`) as TSV text: a header, then one row per line, fields
    with a tab or a quote quoted as spreadsheets do. Ids with a line break are refused (DataError)."""
    for col in ("query_id", "doc_id"):
        bad = table[col].astype("str").str.contains(r"[\r\n]", regex=True)
        if bad.any():
            raise DataError(
                f"cannot write the judging queue: the {col} {str(table.loc[bad, col].iloc[0])!r} contains a line "
                "break, which a line-based TSV cannot hold. Fix: remove line breaks from the ids.",
                param="queries" if col == "query_id" else "corpus",
            )
    return table[QUEUE_TSV_COLUMNS].to_csv(
        sep="\t", index=False, lineterminator="\n", quoting=csv.QUOTE_MINIMAL
    )


def _tsv_row(line: bytes) -> list[str] | None:
    """The fields of one TSV line (CSV quoting rules), None when it cannot be read."""
    try:
        return next(csv.reader(io.StringIO(line.decode("utf-8")), delimiter="\t", strict=True))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        return None


def ascii_grade(text: str, where: str) -> int | str | None:
    """A grade typed in a TSV: None when empty, ``"skip"``, or 0-3 written in ASCII digits; else a DataError."""
    text = text.strip()
    if not text:
        return None
    if text.lower() == SKIP:
        return SKIP
    if not _ASCII_GRADE.fullmatch(text):
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"
        raise DataError(
            f"{where}: the grade {shown!r} is not 0, 1, 2, 3 or skip (written with the digits 0-9).",
            param="grade",
        )
    return check_grade(int(text), where)


def queue_entries(raw: bytes, source: str) -> tuple[list[Entry], list[int], int, int]:
    """``(entries, torn line numbers, ungraded rows, skipped rows)`` of a graded queue TSV's bytes: a row with an
    empty grade or ``skip`` is not a judgement (counted apart)."""
    lines = iter(_lines(raw))
    _, header = next(lines, (0, b""))
    columns = _tsv_row(header) or []
    q_at, d_at, g_at = (columns.index(c) for c in ("query_id", "doc_id", "grade"))
    out: list[Entry] = []
    torn: list[int] = []
    ungraded = skipped = 0
    for lineno, line in lines:
        row = _tsv_row(line)
        if row is None or len(row) != len(columns):
            torn.append(lineno)
            continue
        where = f"{source}, line {lineno}"
        grade = ascii_grade(row[g_at], where)
        if grade is None:
            ungraded += 1
            continue
        if grade == SKIP:
            skipped += 1
            continue
        out.append(
            Entry(
                check_id(row[q_at], "query_id", where),
                check_id(row[d_at], "doc_id", where),
                grade,
                "",
                "",
                lineno,
            )
        )
    return out, torn, ungraded, skipped


# ------------------------------------------------------------------------------------ both: torn, conflicts


def report_torn(report: ValidationReport | None, code: str, source: str, torn: list[int], what: str) -> None:
    """The ignored lines of ``source`` as a warning (``code``) naming them."""
    if not torn or report is None:
        return
    n = len(torn)
    report.add(
        code,
        f"{n} {what} line{'s are' if n != 1 else ' is'} torn (not a whole {what} line: a write interrupted by a "
        f"crash, a truncated copy or an edit) and {'were' if n != 1 else 'was'} ignored; judge "
        f"{'those pairs' if n != 1 else 'that pair'} again",
        file=source,
        count=n,
        examples=[f"line {i}" for i in torn],
    )


def latest(
    entries: Iterable[Entry], source: str, report: ValidationReport | None = None
) -> dict[tuple[str, str], int | str]:
    """``{(query_id, doc_id): grade}``: the last judgement of each pair, in the order of those last judgements.
    Pairs graded differently on different lines are reported in ``report`` (``judgement_conflict``)."""
    out: dict[tuple[str, str], int | str] = {}
    grades: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for e in entries:
        key = (e.query_id, e.doc_id)
        out.pop(key, None)  # keep the order of the latest judgement
        out[key] = e.grade
        if e.grade != SKIP:
            grades.setdefault(key, []).append((int(e.grade), e.line))
    conflicts = [
        f"{q} {d}: " + ", then ".join(f"{g} (line {n})" for g, n in seen) + f"; kept {out[(q, d)]}"
        for (q, d), seen in grades.items()
        if len({g for g, _ in seen}) > 1
    ]
    if conflicts and report is not None:
        report.add(
            "judgement_conflict",
            f"{len(conflicts)} pair{'s were' if len(conflicts) != 1 else ' was'} given different grades on different "
            "lines; the last line wins (a later judgement corrects an earlier one). Check that the kept grade is "
            "the right one",
            file=source,
            count=len(conflicts),
            examples=conflicts,
        )
    return out
