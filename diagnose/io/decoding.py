"""UTF-8 decoding: lines with bytes that are not UTF-8 are decoded with U+FFFD and counted, and ids that differ
only in such bytes are refused instead of merged (:func:`refuse_decoding_collisions`, around every public reader)."""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

import numpy as np
import pyarrow as pa

from diagnose.data import DataError, ValidationReport
from diagnose.io.files import PathLike, RawBytes, as_bytes
from diagnose.io.messages import fatal_error, plural_of, show_id, verb
from diagnose.runtime.frames import Tabular
from diagnose.runtime.lazy import pandas as pd

# Bytes that are not UTF-8 become U+FFFD, so ``q\xff2`` and ``q\xfe2`` would both become the id ``q\ufffd2``. To
# see such merges, a reader that produced an id with U+FFFD reads the file once more with every bad byte decoded
# to its own private-use character (U+10FE80 + byte - 0x80, injective): ids that are distinct there but equal
# after U+FFFD replacement collide, which is fatal.
_MARK_BASE = 0x10FE00
_MARKED = re.compile("[\U0010fe80-\U0010feff]+")


def _mark_bad_bytes(e: UnicodeError) -> tuple[str, int]:
    assert isinstance(e, UnicodeDecodeError)
    return "".join(chr(_MARK_BASE + b) for b in e.object[e.start : e.end]), e.end


codecs.register_error("diagnose.mark", _mark_bad_bytes)


class _Decoding(threading.local):
    mark = False  # decode bad bytes to marks instead of U+FFFD
    original: bytes | None = None  # the raw bytes of the last file decoded with marks


_DECODING = _Decoding()


def _unmark(text: str) -> str:
    """A marked string as the U+FFFD decoding gives it (the same replacement characters, run for run)."""
    return _MARKED.sub(
        lambda m: bytes(ord(c) - _MARK_BASE for c in m.group()).decode("utf-8", "replace"), text
    )


def _marked_bytes(text: str) -> bytes:
    """The original bytes of a marked string."""
    out = bytearray()
    for c in text:
        out += bytes([ord(c) - _MARK_BASE]) if 0x10FE80 <= ord(c) <= 0x10FEFF else c.encode("utf-8")
    return bytes(out)


def _line_of(raw: bytes, token: bytes) -> int | None:
    """The first line where ``token`` stands as a whole field (else anywhere), 1-based; None when absent."""
    m = re.search(rb'(?<![^\s,"\[{:])' + re.escape(token) + rb'(?![^\s,"\]}:])', raw)
    pos = m.start() if m else raw.find(token)
    return None if pos < 0 else raw.count(b"\n", 0, pos) + 1


def _lines_text(lines: Sequence[int]) -> str:
    ordered = sorted(set(lines))
    if len(ordered) == 1:
        return f"line {ordered[0]}"
    return "lines " + ", ".join(map(str, ordered[:-1])) + f" and {ordered[-1]}"


def refuse_decoding_collisions(id_columns: Sequence[str]) -> Callable:
    """Decorator for a public reader: ids that differ in the file but are equal after U+FFFD replacement are
    fatal (DataError naming the id and the lines), instead of silently becoming one query or document."""

    def decorate(reader: Callable) -> Callable:
        @wraps(reader)
        def read(path: PathLike, **kwargs: Any) -> Any:
            record = reader(path, **kwargs)
            if _DECODING.mark:
                return record
            cols = [c for c in id_columns if c in _columns(record)]
            if not any(_has_replacement(record, c) for c in cols):
                return record
            _DECODING.mark, _DECODING.original = True, None
            try:
                marked = reader(path, **{**kwargs, "report": ValidationReport()}).df
                original = _DECODING.original
            except DataError:
                return record
            finally:
                _DECODING.mark = False
                _DECODING.original = None
            if original is not None:
                _check_collisions(str(path), marked, cols, original)
            return record

        return read

    return decorate


def _columns(record: Any) -> list[str]:
    return record.columns if isinstance(record, Tabular) else [str(c) for c in record.df.columns]


def _has_replacement(record: Any, column: str) -> bool:
    """Whether an id of ``column`` holds U+FFFD (a byte that was not UTF-8), read from Arrow when the record is."""
    if isinstance(record, Tabular):
        return _holds_replacement(record.strings(column))
    return bool(record.df[column].astype("str").str.contains("\ufffd", regex=False).any())


_REPLACEMENT = np.frombuffer("\ufffd".encode(), dtype=np.uint8)  # EF BF BD


def _holds_replacement(strings: pa.Array) -> bool:
    """Whether a ``large_string`` array holds U+FFFD: a scan of its bytes for EF followed by BF BD (no string is
    decoded; the bytes are valid UTF-8, so EF BF BD is that character wherever it starts)."""
    n = len(strings)
    if n == 0:
        return False
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset : strings.offset + n + 1]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    lead = np.flatnonzero(data[: max(len(data) - 2, 0)] == _REPLACEMENT[0])
    return bool(((data[lead + 1] == _REPLACEMENT[1]) & (data[lead + 2] == _REPLACEMENT[2])).any())


def _check_collisions(file: str, marked: pd.DataFrame, cols: Sequence[str], original: bytes) -> None:
    for col in cols:
        groups: dict[str, list[str]] = {}
        for value in pd.unique(marked[col].astype("str")):
            if "\ufffd" in value or _MARKED.search(value):
                groups.setdefault(_unmark(value), []).append(value)
        for shown, variants in groups.items():
            if len(variants) < 2:
                continue
            lines = [ln for v in variants[:5] if (ln := _line_of(original, _marked_bytes(v))) is not None]
            what = col.replace("_id", " ids")
            raise fatal_error(
                file,
                None,
                f"{len(variants)} different {what} become the same id {show_id(shown)!r} once the bytes that are "
                f"not UTF-8 are replaced by U+FFFD ({_lines_text(lines) if lines else 'bytes differ'}); they "
                "would be merged into one",
                None,
                "a UTF-8 file (distinct ids must stay distinct)",
                "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE), so the ids keep their characters",
            )


def clean_utf8(raw: RawBytes, file: str, report: ValidationReport) -> RawBytes:
    """``raw`` when it is valid UTF-8 (a :func:`~diagnose.io.files.read_mapped` map stays one); otherwise each bad
    line decoded with U+FFFD replacements, and counted (bytes)."""
    try:
        offsets = pa.py_buffer(np.array([0, len(raw)], dtype=np.int64))
        whole = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(raw)])  # no copy
        whole.validate(full=True)  # Arrow's (SIMD) UTF-8 validation, without pyarrow.compute
        return raw
    except pa.ArrowInvalid:
        pass
    raw = as_bytes(raw)
    out, bad = [], []
    errors = "diagnose.mark" if _DECODING.mark else "replace"
    if _DECODING.mark:
        _DECODING.original = raw
    for i, line in enumerate(raw.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
            out.append(line)
        except UnicodeDecodeError:
            bad.append(i)
            out.append(line.decode("utf-8", errors=errors).encode("utf-8"))
    report.add(
        "non_utf8",
        f"{plural_of(len(bad), 'line')} {verb(len(bad), 'contains', 'contain')} bytes that are not UTF-8 (first: line {bad[0]}); "
        f"{verb(len(bad), 'it was', 'they were')} decoded with U+FFFD replacement characters. Re-save the file as UTF-8 to "
        "keep the original characters",
        file=file,
        count=len(bad),
        examples=[f"line {i}" for i in bad],
    )
    return b"\n".join(out)
