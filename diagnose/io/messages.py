"""How a reader words a problem: lines and ids cut to a readable length, counts with their plurals, and the
one-paragraph fatal error ``<file>:<line>: what is wrong (what was seen). Expected <format>. Fix: <how>.``"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from diagnose.data import DataError, ValidationReport


def snip(text: str | bytes, limit: int = 80) -> str:
    """A line as shown in a message: whitespace runs collapsed, at most ``limit`` characters, in double quotes."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f'"{text}"'


_ID_LIMIT = 80


def show_id(value: str, limit: int = _ID_LIMIT) -> str:
    """An id as shown in a message or example: whole up to ``limit`` characters, else cut with its length."""
    value = str(value)
    if len(value) <= limit:
        return value
    return f"{value[: limit - 1]}… ({len(value)} characters)"


def example_ids(values: Iterable[Any], n: int = 5) -> list[str]:
    """The first ``n`` ids, each cut by :func:`show_id`, for a problem's examples."""
    return [show_id(str(v)) for v in itertools.islice(values, n)]


def pair_text(query_id: Any, doc_id: Any) -> str:
    return f"{show_id(str(query_id))}/{show_id(str(doc_id))}"


def key_list(obj: Mapping[str, Any]) -> str:
    return ", ".join(show_id(str(k), 40) for k in sorted(obj)[:10]) or "none"


def fatal_error(
    file: str,
    line: int | None,
    what: str,
    seen: str | None,
    expected: str,
    fix: str,
    *,
    param: str | None = None,
) -> DataError:
    where = f"{file}:{line}" if line else file
    seen_part = f" ({seen})" if seen else ""
    return DataError(f"{where}: {what}{seen_part}. Expected {expected}. Fix: {fix}.", param=param)


def plural_of(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def verb(n: int, singular: str, plural: str) -> str:
    return singular if n == 1 else plural


def note_lines(report: ValidationReport, code: str, message: str, lines: Sequence[int], file: str) -> None:
    """An info item about ``lines`` (line numbers, shown as ``line N``), when there are any."""
    if lines:
        examples = [f"line {i}" for i in lines]
        report.add(code, message, severity="info", file=file, count=len(lines), examples=examples)
