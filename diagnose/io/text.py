"""Lines and small parsers shared by the readers: the first line (to sniff a format), numbered lines, floats
and integer grades as trec_eval reads them, and JSONL lines keyed by query id."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from diagnose.io.formats import JSON_Q_KEYS
from diagnose.io.messages import fatal_error, key_list, snip
from diagnose.io.nesting import MAX_JSON_DEPTH, json_depth

_FLOAT_RE = re.compile(
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)$", re.IGNORECASE
)
INT_RE = re.compile(r"^[+-]?[0-9]+$")

#: Relevance grades must fit a signed 64-bit integer (trec_eval reads them with ``atol`` into a C long).
GRADE_MIN, GRADE_MAX = -(2**63), 2**63 - 1
GRADE_RANGE = f"integer grades in the 64-bit range {GRADE_MIN} .. {GRADE_MAX}"
GRADE_FIX = "use small integer grades (0 = not relevant, 1, 2, ... = relevant)"


def first_line(data: bytes, *, skip_comments: bool = False) -> tuple[int, str] | None:
    """(line number, text) of the first non-blank line (and not a ``#`` comment when asked), or None."""
    start = 0
    lineno = 0
    n = len(data)
    while start < n:
        end = data.find(b"\n", start)
        if end < 0:
            end = n
        lineno += 1
        line = data[start:end].decode("utf-8", errors="replace").strip()
        if line and not (skip_comments and line.startswith("#")):
            return lineno, line
        start = end + 1
    return None


def text_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line without end-of-line) for every line."""
    for i, line in enumerate(data.split(b"\n"), start=1):
        yield i, line.rstrip(b"\r")


def line_start(data: bytes, n: int) -> int:
    """Byte offset of line ``n + 1`` (the first ``n`` lines skipped); ``len(data)`` when there are fewer lines."""
    cut = 0
    for _ in range(n):
        nl = data.find(b"\n", cut)
        cut = len(data) if nl < 0 else nl + 1
    return cut


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_float(text: str) -> float | None:
    """A float from a field (``nan`` / ``inf`` allowed, so callers can name them); None when not a number."""
    text = text.strip()
    if not _FLOAT_RE.match(text):
        return None
    return float(text)


def parse_grade(text: str) -> int | None:
    """An integer grade; ``"2"`` -> 2, ``"1.0"`` -> 1; None for ``"1.5"``, ``"high"``, ``"nan"``.

    The result may lie outside :data:`GRADE_MIN` .. :data:`GRADE_MAX`; callers check with :func:`grade_fits`.
    """
    text = text.strip()
    if INT_RE.match(text):
        return int(text)
    value = parse_float(text)
    if value is None or not math.isfinite(value) or value != int(value):
        return None
    return int(value)


def not_ascii_note(text: str) -> str:
    """For a field that is not a number: say so when non-ASCII characters are why (``'９９'``: trec_eval's
    ``atof`` reads 0, Python's ``float`` 99; we refuse rather than pick one)."""
    if text.isascii():
        return ""
    return "; it contains non-ASCII characters (like full-width digits), which trec_eval would not read as this number"


def grade_fits(value: int) -> bool:
    return GRADE_MIN <= value <= GRADE_MAX


def number_text(text: str, limit: int = 40) -> str:
    """A number as shown in a message: whole when short, else its start, an ellipsis and its length."""
    text = text.strip()
    if len(text) <= limit:
        return repr(text)
    return (
        f"'{text[: limit - 1]}…' ({len(text)} digits)"
        if text.isdigit()
        else f"{snip(text, limit)} ({len(text)} characters)"
    )


def json_values(raw: bytes) -> Iterator[tuple[int, bytes, Any]]:
    """(line number, line, value) for every non-blank line of a JSONL file: the parsed JSON value, or the exception
    when the line cannot be parsed (:func:`json_error` words it); the caller decides what a bad line costs."""
    for lineno, line in text_lines(raw):
        if not line.strip():
            continue
        try:
            if line.count(b"[") + line.count(b"{") > MAX_JSON_DEPTH and json_depth(line) > MAX_JSON_DEPTH:
                raise RecursionError(f"nested more than {MAX_JSON_DEPTH} levels deep")
            value = json.loads(line)
        except (ValueError, RecursionError) as e:  # bad JSON, an integer of > 4300 digits, deep nesting
            value = e
        yield lineno, line, value


def json_error(e: BaseException) -> str:
    """Why a line is not JSON: ``<reason> at column <n>`` for a syntax error, else :func:`_json_failure`."""
    return f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else _json_failure(e)


def json_query_lines(
    raw: bytes, file: str, expected: str, not_object_fix: str
) -> Iterator[tuple[int, bytes, dict[str, Any], str]]:
    """(line number, line, object, query id) for every non-blank line of a JSONL file keyed by query.

    A line that is not valid JSON, not an object, or has no query id is fatal: the error names the file and line.
    """
    for lineno, line, obj in json_values(raw):
        if isinstance(obj, BaseException):
            what = "invalid JSON" if isinstance(obj, json.JSONDecodeError) else "cannot read the JSON"
            raise fatal_error(
                file,
                lineno,
                f"{what} ({json_error(obj)})",
                snip(line),
                expected,
                "fix the JSON on this line",
            )
        if not isinstance(obj, dict):
            raise fatal_error(
                file,
                lineno,
                f"a JSON {type(obj).__name__}, not an object",
                snip(line),
                expected,
                not_object_fix,
            )
        qid = json_key(obj, JSON_Q_KEYS)
        if qid is None:
            raise fatal_error(
                file,
                lineno,
                f"no query id (keys seen: {key_list(obj)})",
                None,
                expected,
                'add "query_id"',
            )
        yield lineno, line, obj, str(qid).strip()


def _json_failure(e: BaseException) -> str:
    """Why ``json.loads`` failed, for errors that are not ``JSONDecodeError``."""
    if isinstance(e, RecursionError):
        return f"nested too deeply (more than {MAX_JSON_DEPTH} levels of arrays and objects)"
    if "digits" in str(e):
        return "a number with more than 4300 digits"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def json_key(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if k in obj and obj[k] is not None and not isinstance(obj[k], dict | list | bool):
            return obj[k]
    return None


def json_text(value: Any) -> str:
    """``json.dumps(value)`` that never fails (ints longer than Python's 4300-digit limit included)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 10_000:
        return f"{'-' if value < 0 else ''}an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        return json.dumps(value)
    except (ValueError, TypeError):
        return repr(value)
