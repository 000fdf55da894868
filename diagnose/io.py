"""Readers and validation for corpus, queries, qrels and runs (BEIR, TREC, JSONL, CSV/TSV, Parquet, folders).

Every reader returns one of the records of :mod:`diagnose.data` and counts what it had to tolerate in a
:class:`~diagnose.data.ValidationReport`. A problem that makes going on impossible raises
:class:`~diagnose.data.DataError` with a one-paragraph message::

    <file>:<line>: what is wrong (what was seen). Expected <format>. Fix: <how>.

Fatal (``DataError``): a missing or unreadable file, a file that matches no format, a malformed line in qrels or
a run (wrong number of fields, invalid JSON, missing keys), a NaN or infinite score, a non-integer relevance
grade, empty qrels, two runs with the same name. Everything else is a counted warning (or info) and the data is
kept or the line skipped, never silently.

Formats
-------
Corpus
    BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``; the ``metadata`` object is flattened into columns,
    ``metadata.year`` -> column ``year``); CSV / TSV / Parquet with configurable id / text / title columns
    (auto-detected: id ``_id|id|doc_id|docid``, text ``text|body|content|contents``, title ``title``); or a
    folder of ``.txt`` / ``.md`` files (id = path relative to the folder with forward slashes; title = the first
    markdown heading of a ``.md`` file, removed from the text when it is the first non-blank line; else empty).
Queries
    BEIR ``queries.jsonl`` (metadata kept as columns, ``metadata.area`` -> ``area``); TSV ``id<TAB>text``
    (optional header); CSV / Parquet with id ``_id|id|query_id|qid`` and text ``text|query|question``.
Qrels
    BEIR TSV with header ``query-id corpus-id score``; TREC qrels ``qid iter docid rel`` (whitespace separated);
    JSONL ``{"query_id": .., "relevant": {"doc": grade, ..}}`` or ``"relevant": [ids]`` (grade 1). Grades are
    kept as integers (``1.0`` is read as 1 and counted as info); a document is relevant when its grade is > 0.
Runs
    TREC run files ``qid Q0 docid rank score tag`` (whitespace separated, also ``.gz``; fields after the tag are
    ignored like trec_eval does); JSONL ranked lists ``{"query_id": .., "results": [{"doc_id": .., "score": ..},
    ..]}`` or ``{"query_id": .., "doc_ids": [..]}``; CSV/TSV long format with a header
    ``query_id,doc_id,score[,rank]``.

Run order (the convention that decides every metric)
----------------------------------------------------
A TREC run file, and a CSV run without a rank column, are ordered exactly as trec_eval orders them: per query by
score descending, ties broken by doc id *descending* (``strcmp`` on the UTF-8 bytes, the same order as Python
``str`` comparison on code points). The rank column of the file is ignored for ordering (trec_eval ignores it
too); files whose rank column disagrees with that order get one ``info`` item. Scores are compared as 32-bit
floats: ``TEXT_RESULTS.sim`` is a C ``float`` in the trec_eval vendored by pytrec-eval-terrier 0.5.11, which
converts the Python float it is given, so two scores closer than float32 resolution tie there (verified: ``1.0``
and ``1.0 + 1e-9`` tie in pytrec_eval and the doc id decides; ``1e39`` and ``1e40`` both become +inf and tie).
The current usnistgov/trec_eval source declares ``double sim`` (parsed with ``atof``) and would keep such scores
apart: the two differ only for scores within ~6e-8 relative of each other (e.g. BM25 scores ``20.123401`` and
``20.123402`` are one float32). We follow pytrec-eval-terrier, the reference the metrics are tested against; the
``score`` column keeps the full float64 value read.

Ranked-list formats (JSONL, CSV with a rank column) keep their list order. A document listed twice for one query
keeps its first occurrence in final order (the best ranked one) and the rest are counted as a warning. Ranks are
then ``1..n`` per query with no gaps. Queries appear in the order they are first seen in the file.

Ids are strings, stripped of surrounding whitespace.
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import io as stdio
import itertools
import json
import math
import os
import re
import stat
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import wraps
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Run, ValidationReport

__all__ = [
    "CORPUS_FORMATS",
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_INPUT_BYTES_ENV",
    "QRELS_FORMATS",
    "QUERIES_FORMATS",
    "RUN_FORMATS",
    "check_input_files",
    "check_input_path",
    "check_run_matches_qrels",
    "load_dataset",
    "max_input_bytes",
    "parse_run_arg",
    "read_corpus",
    "read_qrels",
    "read_queries",
    "read_run",
    "trec_order",
    "write_trec_run",
]

PathLike = str | Path

CORPUS_FORMATS = (
    'a BEIR corpus.jsonl ({"_id", "title", "text"} per line), a CSV/TSV/Parquet table with id and text '
    "columns, or a folder of .txt/.md files"
)
QUERIES_FORMATS = (
    'a BEIR queries.jsonl ({"_id", "text"} per line), a TSV file id<TAB>text, or a CSV/Parquet table'
)
QRELS_FORMATS = (
    'a BEIR qrels TSV with header "query-id corpus-id score", a TREC qrels file "qid iter docid rel", or JSONL '
    '{"query_id": .., "relevant": {"doc_id": grade, ..}}'
)
RUN_FORMATS = (
    'a TREC run "qid Q0 docid rank score tag" (.gz allowed), JSONL {"query_id": .., "results": [{"doc_id": '
    '..,"score": ..}, ..]} or {"query_id": .., "doc_ids": [..]}, or CSV with header query_id,doc_id,score[,rank]'
)

TREC_RUN = 'TREC run lines "qid Q0 docid rank score tag" (6 whitespace-separated fields)'
TREC_QRELS = 'TREC qrels lines "qid iter docid rel" (4 whitespace-separated fields, integer rel)'
BEIR_QRELS = 'BEIR qrels lines "query-id<TAB>corpus-id<TAB>score" (integer score)'

CORPUS_ID_FIELDS = ("_id", "id", "doc_id", "docid")
CORPUS_TEXT_FIELDS = ("text", "body", "content", "contents")
CORPUS_TITLE_FIELDS = ("title",)
QUERY_ID_FIELDS = ("_id", "id", "query_id", "qid")
QUERY_TEXT_FIELDS = ("text", "query", "question")

_QRELS_Q_HEADER = {"query-id", "query_id", "qid", "queryid", "query"}
_QRELS_D_HEADER = {"corpus-id", "corpus_id", "doc-id", "doc_id", "docid", "docno", "doc"}
_RUN_Q_COLS = ("query_id", "qid", "query-id", "queryid")
_RUN_D_COLS = ("doc_id", "docid", "corpus_id", "corpus-id", "docno")
_JSON_Q_KEYS = ("query_id", "qid", "query-id")
_JSON_D_KEYS = ("doc_id", "docid", "id", "corpus_id")

_TEXT_SUFFIXES = (".txt", ".md")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FLOAT_RE = re.compile(
    r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)$", re.IGNORECASE
)
_INT_RE = re.compile(r"^[+-]?[0-9]+$")

#: Relevance grades must fit a signed 64-bit integer (trec_eval reads them with ``atol`` into a C long).
GRADE_MIN, GRADE_MAX = -(2**63), 2**63 - 1
GRADE_RANGE = f"integer grades in the 64-bit range {GRADE_MIN} .. {GRADE_MAX}"
_GRADE_FIX = "use small integer grades (0 = not relevant, 1, 2, ... = relevant)"

# Fast paths (pyarrow) can be switched off to check they agree with the line-by-line paths (tests do).
_FAST = True


# ============================================================================================== small helpers


def _snip(text: str | bytes, limit: int = 80) -> str:
    """A line as shown in a message: whitespace runs collapsed, at most ``limit`` characters, in double quotes."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f'"{text}"'


_ID_LIMIT = 80


def _show_id(value: str, limit: int = _ID_LIMIT) -> str:
    """An id as shown in a message or example: whole up to ``limit`` characters, else cut with its length."""
    value = str(value)
    if len(value) <= limit:
        return value
    return f"{value[: limit - 1]}… ({len(value)} characters)"


def _ids(values: Iterable[Any], n: int = 5) -> list[str]:
    """The first ``n`` ids, each cut by :func:`_show_id`, for a problem's examples."""
    return [_show_id(str(v)) for v in itertools.islice(values, n)]


def _pair(query_id: Any, doc_id: Any) -> str:
    return f"{_show_id(str(query_id))}/{_show_id(str(doc_id))}"


def _keys(obj: Mapping[str, Any]) -> str:
    return ", ".join(_show_id(str(k), 40) for k in sorted(obj)[:10]) or "none"


def _fatal(file: str, line: int | None, what: str, seen: str | None, expected: str, fix: str) -> DataError:
    where = f"{file}:{line}" if line else file
    seen_part = f" ({seen})" if seen else ""
    return DataError(f"{where}: {what}{seen_part}. Expected {expected}. Fix: {fix}.")


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _verb(n: int, singular: str, plural: str) -> str:
    return singular if n == 1 else plural


def _suffixes(path: Path) -> str:
    """The format suffix of a path, ``.gz`` removed: ``run.trec.gz`` -> ``.trec``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).suffix


# ============================================================================================== input paths

#: Environment variable that sets the largest input file read, in bytes (default :data:`DEFAULT_MAX_INPUT_BYTES`).
MAX_INPUT_BYTES_ENV = "DIAGNOSE_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = (
    4 * 2**30
)  # 4 GiB: a file is read whole into memory, and parsing needs a few times more


def max_input_bytes() -> int:
    """The size limit of one input file (and of a gzip file once decompressed, and of a corpus folder in all).

    ``DIAGNOSE_MAX_INPUT_BYTES`` (a positive integer number of bytes) overrides the 4 GiB default.
    """
    text = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_INPUT_BYTES
    if not re.fullmatch(r"[0-9]+", text) or int(text) <= 0:
        raise DataError(
            f"{MAX_INPUT_BYTES_ENV}={text!r} is not a positive whole number of bytes. Expected e.g. "
            f"{MAX_INPUT_BYTES_ENV}={8 * 2**30} for 8 GiB. Fix: set it to a number of bytes, or unset it for the "
            f"default ({_size(DEFAULT_MAX_INPUT_BYTES)})."
        )
    return int(text)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return _plural(n, "byte")


def _too_big_fix() -> str:
    return (
        f"split the file, or raise the limit with the environment variable {MAX_INPUT_BYTES_ENV} "
        f"(e.g. {MAX_INPUT_BYTES_ENV}={8 * 2**30} for 8 GiB)"
    )


_NOT_REGULAR = (
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file: reading it could wait forever"),
    (stat.S_ISCHR, "is a device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def _os_error(file: str, e: OSError, expected: str) -> DataError:
    """A DataError for an OSError raised by stat/open/read on a user path."""
    if isinstance(e, FileNotFoundError):
        return _fatal(
            file, None, "file not found", None, expected, f"check the path (relative to {Path.cwd()})"
        )
    if isinstance(e, PermissionError):
        return _fatal(
            file,
            None,
            "permission denied (the file cannot be read, or a folder on its path cannot be searched)",
            None,
            expected,
            "give read permission on the file and search (x) permission on every folder above it "
            "(e.g. chmod a+r FILE, chmod a+x FOLDER), or copy the file somewhere readable",
        )
    if e.errno == errno.ENAMETOOLONG:
        longest = max((len(part) for part in Path(file).parts), default=0)
        return _fatal(
            file,
            None,
            "the path is too long for the file system",
            f"its longest name has {longest} characters, the path {len(file)}; names are limited to 255 bytes",
            expected,
            "rename the file (or the folder) to a shorter name",
        )
    if isinstance(e, NotADirectoryError):
        return _fatal(
            file, None, "a part of the path is a file, not a folder", None, expected, "check the path"
        )
    if e.errno == errno.ELOOP:
        return _fatal(
            file, None, "too many levels of symbolic links", None, expected, "fix the symbolic links"
        )
    return _fatal(
        file,
        None,
        "cannot read the file",
        e.strerror or str(e),
        expected,
        "check the path and its permissions",
    )


def _stat(path: PathLike, expected: str) -> os.stat_result | None:
    """``os.stat(path)``; None when it does not exist; any other failure is a DataError naming the path."""
    file = str(path)
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise _os_error(file, e, expected) from None
    except ValueError:  # a NUL character in the path
        raise _fatal(
            file, None, "the path contains a NUL character", None, expected, "check the path"
        ) from None


def _exists(path: PathLike) -> bool:
    """Whether ``path`` names anything; False (never an exception) when it cannot be looked up."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def check_input_path(path: PathLike, expected: str, *, folder: bool | None = False) -> os.stat_result:
    """Refuse, before reading, a path that cannot be read safely; returns its ``os.stat`` result.

    ``folder`` False: a regular file (or a symbolic link to one) no larger than :func:`max_input_bytes`; True: a
    folder; None: either. Named pipes (FIFOs, which may never end), devices (``/dev/zero`` never ends) and
    sockets are refused. Failures of ``stat`` (not found, permission denied, a name too long) are DataErrors that
    name the path and the fix.
    """
    file = str(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise _os_error(file, e, expected) from None
    except ValueError:
        raise _fatal(
            file, None, "the path contains a NUL character", None, expected, "check the path"
        ) from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        if folder is False:
            raise _fatal(
                file, None, "is a folder, not a file", None, expected, "pass the file inside the folder"
            )
        return st
    if folder is True:
        raise _fatal(file, None, "is a file, not a folder", None, expected, "pass the folder")
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise _fatal(
                file,
                None,
                what,
                None,
                expected + " in a regular file",
                "write the data to a regular file first (e.g. cat SOURCE > run.trec) and pass that file",
            )
    if not stat.S_ISREG(mode):
        raise _fatal(file, None, "is not a regular file", None, expected, "pass a regular file")
    limit = max_input_bytes()
    if st.st_size > limit:
        raise _fatal(
            file,
            None,
            f"is {_size(st.st_size)}{f' ({st.st_size} bytes)' if st.st_size >= 1024 else ''}, more than the "
            f"input limit of {_size(limit)}",
            None,
            f"input files of at most {limit} bytes",
            _too_big_fix(),
        )
    return st


def check_input_files(*paths: PathLike | None, expected: str = "a readable regular file") -> None:
    """:func:`check_input_path` for every path that is not None (for readers outside this module)."""
    for path in paths:
        if path is not None:
            check_input_path(path, expected)


def _gunzip(raw: bytes, limit: int) -> bytes:
    """Decompressed ``raw`` (all gzip members), read in chunks: at most ``limit + 1`` bytes (a gzip bomb stops)."""
    chunks: list[bytes] = []
    size = 0
    with gzip.GzipFile(fileobj=stdio.BytesIO(raw)) as gz:
        while size <= limit:
            chunk = gz.read1(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)


def _read_bytes(path: PathLike, expected: str) -> bytes:
    """The file's bytes: gunzipped when it is gzip, UTF-8 BOM removed.

    Fatal (DataError naming the path) when missing, unreadable, not a regular file, or larger than
    :func:`max_input_bytes` (also once decompressed).
    """
    file = str(path)
    check_input_path(path, expected)  # a regular file within the limit: reading it whole ends
    limit = max_input_bytes()
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise _os_error(file, e, expected) from None
    except MemoryError:
        raise _fatal(
            file, None, "not enough memory to read the file", None, expected, "free memory, or split the file"
        ) from None
    if len(raw) > limit:  # it grew after the check
        raise _fatal(
            file, None, f"is more than the input limit of {_size(limit)}", None, expected, _too_big_fix()
        )
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = _gunzip(raw, limit)
        except (OSError, EOFError, zlib.error) as e:
            raise _fatal(
                file,
                None,
                "is not a valid gzip file",
                str(e),
                expected,
                "re-compress it or pass it uncompressed",
            ) from None
        except MemoryError:
            raise _fatal(
                file, None, "not enough memory to decompress the file", None, expected, "free memory"
            ) from None
        if len(raw) > limit:
            raise _fatal(
                file,
                None,
                f"decompresses to more than the input limit of {_size(limit)}",
                None,
                f"input files of at most {limit} bytes once decompressed",
                _too_big_fix(),
            )
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _fatal(
            file,
            1,
            "the file is UTF-16 encoded",
            "byte-order mark",
            expected + " in UTF-8",
            "re-save it as UTF-8",
        )
    return raw


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


def _refuse_decoding_collisions(id_columns: Sequence[str]) -> Callable:
    """Decorator for a public reader: ids that differ in the file but are equal after U+FFFD replacement are
    fatal (DataError naming the id and the lines), instead of silently becoming one query or document."""

    def decorate(reader: Callable) -> Callable:
        @wraps(reader)
        def read(path: PathLike, **kwargs: Any) -> Any:
            record = reader(path, **kwargs)
            if _DECODING.mark:
                return record
            df = record.df
            cols = [c for c in id_columns if c in df.columns]
            if not any(df[c].astype("str").str.contains("\ufffd", regex=False).any() for c in cols):
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
            what = col.replace("_id", " ids").replace("query", "query").replace("doc", "doc")
            raise _fatal(
                file,
                None,
                f"{len(variants)} different {what} become the same id {_show_id(shown)!r} once the bytes that are "
                f"not UTF-8 are replaced by U+FFFD ({_lines_text(lines) if lines else 'bytes differ'}); they "
                "would be merged into one",
                None,
                "a UTF-8 file (distinct ids must stay distinct)",
                "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE), so the ids keep their characters",
            )


def _clean_utf8(raw: bytes, file: str, report: ValidationReport) -> bytes:
    """``raw`` when it is valid UTF-8; otherwise each bad line decoded with U+FFFD replacements, and counted."""
    try:
        offsets = pa.py_buffer(np.array([0, len(raw)], dtype=np.int64))
        whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, pa.py_buffer(raw)])  # no copy
        whole.cast(pa.large_string())  # Arrow's (SIMD) UTF-8 validation
        return raw
    except pa.ArrowInvalid:
        pass
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
        f"{_plural(len(bad), 'line')} {_verb(len(bad), 'contains', 'contain')} bytes that are not UTF-8 (first: line {bad[0]}); "
        f"{_verb(len(bad), 'it was', 'they were')} decoded with U+FFFD replacement characters. Re-save the file as UTF-8 to "
        "keep the original characters",
        file=file,
        count=len(bad),
        examples=[f"line {i}" for i in bad],
    )
    return b"\n".join(out)


def _first_line(data: bytes, *, skip_comments: bool = False) -> tuple[int, str] | None:
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


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line without end-of-line) for every line."""
    for i, line in enumerate(data.split(b"\n"), start=1):
        yield i, line.rstrip(b"\r")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_float(text: str) -> float | None:
    """A float from a field (``nan`` / ``inf`` allowed, so callers can name them); None when not a number."""
    text = text.strip()
    if not _FLOAT_RE.match(text):
        return None
    return float(text)


def _parse_grade(text: str) -> int | None:
    """An integer grade; ``"2"`` -> 2, ``"1.0"`` -> 1; None for ``"1.5"``, ``"high"``, ``"nan"``.

    The result may lie outside :data:`GRADE_MIN` .. :data:`GRADE_MAX`; callers check with :func:`_grade_fits`.
    """
    text = text.strip()
    if _INT_RE.match(text):
        return int(text)
    value = _parse_float(text)
    if value is None or not math.isfinite(value) or value != int(value):
        return None
    return int(value)


def _not_ascii_note(text: str) -> str:
    """For a field that is not a number: say so when non-ASCII characters are why (``'９９'``: trec_eval's
    ``atof`` reads 0, Python's ``float`` 99; we refuse rather than pick one)."""
    if text.isascii():
        return ""
    return "; it contains non-ASCII characters (like full-width digits), which trec_eval would not read as this number"


def _grade_fits(value: int) -> bool:
    return GRADE_MIN <= value <= GRADE_MAX


def _number_text(text: str, limit: int = 40) -> str:
    """A number as shown in a message: whole when short, else its start, an ellipsis and its length."""
    text = text.strip()
    if len(text) <= limit:
        return repr(text)
    return (
        f"'{text[: limit - 1]}…' ({len(text)} digits)"
        if text.isdigit()
        else f"{_snip(text, limit)} ({len(text)} characters)"
    )


def _empty_run_df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": pd.Series([], dtype="str"),
            "doc_id": pd.Series([], dtype="str"),
            "score": np.array([], dtype=np.float64),
            "rank": np.array([], dtype=np.int64),
        }
    )


def _strip_ids(arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    return pc.utf8_trim_whitespace(arr)


# ============================================================================================== whitespace tables


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


def _fast_whitespace_table(data: bytes, names: list[str], types: dict[str, pa.DataType]) -> pa.Table | None:
    """Parse a whitespace-separated file with pyarrow, or None when it needs the line-by-line path.

    A file that separates fields by single tabs only, or single spaces only, is parsed as is; otherwise (mixed
    or repeated blanks, leading blanks) it is first normalised to single spaces, as trec_eval splits on any
    run of whitespace. None when: fast paths are off, a line does not have exactly ``len(names)`` fields, a
    field does not convert, or a line starts with ``#`` (a comment; the slow path skips it like trec_eval).
    Only single-byte searches run on the whole buffer (memchr speed).
    """
    if not _FAST:
        return None
    candidates: list[tuple[bytes, str]] = []
    if b"\x0b" not in data and b"\x0c" not in data:
        has_tab, has_space = b"\t" in data, b" " in data
        if not (has_tab and has_space):
            candidates.append((data, "\t" if has_tab else " "))
    candidates.append((b"", " "))  # normalised, built lazily
    for buf, delimiter in candidates:
        if not buf:
            buf = _normalise_whitespace(data)
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
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue
        if table.num_rows and pc.any(pc.starts_with(table.column(names[0]), "#")).as_py():
            return None
        return table
    return None


# ============================================================================================== run ordering


def _factorize_first_seen(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer codes numbering distinct values in order of first appearance."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return pc.dictionary_encode(arr).indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _score32(scores: np.ndarray) -> np.ndarray:
    """Scores as trec_eval (pytrec-eval-terrier) compares them: C float, -0.0 == 0.0."""
    with np.errstate(over="ignore", invalid="ignore"):
        return scores.astype(np.float32) + np.float32(0.0)


def trec_order(
    query_ids: Sequence[str] | pa.Array, doc_ids: Sequence[str] | pa.Array, scores: np.ndarray
) -> np.ndarray:
    """Row permutation that orders a run like trec_eval.

    Queries in first-seen order; within a query by ``float32(score)`` descending, ties by doc id descending
    (byte order of the UTF-8 ids = ``strcmp``, which trec_eval's ``comp_sim_docno`` uses with its arguments
    swapped). Scores must be finite (NaN has no order). Vectorised: one pyarrow multi-key sort.
    """
    q = (
        pa.array(query_ids, type=pa.string())
        if not isinstance(query_ids, pa.Array | pa.ChunkedArray)
        else query_ids
    )
    d = (
        pa.array(doc_ids, type=pa.string())
        if not isinstance(doc_ids, pa.Array | pa.ChunkedArray)
        else doc_ids
    )
    codes = _factorize_first_seen(q)
    table = pa.table({"q": codes, "s": _score32(np.asarray(scores, dtype=np.float64)), "d": d})
    return pc.sort_indices(
        table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")]
    ).to_numpy()


def _group_ranks(codes_in_order: np.ndarray) -> np.ndarray:
    """1-based position within each run of equal consecutive codes."""
    n = len(codes_in_order)
    if n == 0:
        return np.array([], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, codes_in_order[1:] != codes_in_order[:-1]])
    sizes = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, sizes) + 1


def _id_fingerprint(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A uint64 fingerprint per string: equal strings get equal fingerprints (vectorised over Arrow buffers).

    Mixes the length with three 8-byte windows of the UTF-8 bytes (start, middle, end), so strings of up to 24
    bytes that differ get different windows; longer ones may collide, which only costs an exact comparison.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    base = int(offsets[0])
    data = arr.buffers()[2]
    raw = (
        np.frombuffer(data, dtype=np.uint8)[base : int(offsets[-1])]
        if data is not None
        else np.zeros(0, np.uint8)
    )
    padded = np.concatenate([raw, np.zeros(8, np.uint8)])
    # words[i] = the 8 bytes starting at byte i (overlapping, unaligned view; gathers at memory speed)
    words = np.ndarray(shape=(len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    starts = offsets[:-1] - base
    lengths = offsets[1:] - offsets[:-1]
    keep = np.where(
        lengths >= 8,
        np.uint64(0xFFFFFFFFFFFFFFFF),
        (np.uint64(1) << (np.minimum(lengths, 7) * 8).astype(np.uint64)) - np.uint64(1),
    )
    out = lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        for shift, mult in ((0, 0xC2B2AE3D27D4EB4F), (1, 0x165667B19E3779F9), (2, 0xD6E8FEB86659FD93)):
            at = starts + (
                0
                if shift == 0
                else np.maximum(lengths // 2 - 4, 0)
                if shift == 1
                else np.maximum(lengths - 8, 0)
            )
            word = words[at] & keep
            out = (out ^ (word * np.uint64(mult))) * np.uint64(0xFF51AFD7ED558CCD)
            out ^= out >> np.uint64(33)
    return out


def _duplicate_mask(q_codes: np.ndarray, d: pa.ChunkedArray | pa.Array, order: np.ndarray) -> np.ndarray:
    """Boolean mask over the original rows: True for a (query, doc) row that is not the first one in ``order``.

    Rows whose (query, fingerprint(doc)) key is unique cannot be duplicates; only the rows sharing a key (the real
    duplicates, plus astronomically rare hash collisions) are compared as strings.
    """
    n = len(q_codes)
    mask = np.zeros(n, dtype=bool)
    if n < 2:
        return mask
    with np.errstate(over="ignore"):
        key = _id_fingerprint(d) ^ (q_codes.astype(np.uint64) * np.uint64(0x94D049BB133111EB))
    sorted_keys = np.sort(key)
    repeated = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]
    if not len(repeated):
        return mask
    rows = np.flatnonzero(np.isin(key, repeated))
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)
    rows = rows[np.argsort(position[rows], kind="stable")]
    docs = d.take(pa.array(rows)).to_pylist()
    first: set[tuple[int, str]] = set()
    for row, doc in zip(rows.tolist(), docs, strict=True):
        pair = (int(q_codes[row]), doc)
        if pair in first:
            mask[row] = True
        else:
            first.add(pair)
    return mask


def _build_run(
    name: str,
    file: str,
    q: pa.ChunkedArray | pa.Array,
    d: pa.ChunkedArray | pa.Array,
    scores: np.ndarray,
    report: ValidationReport,
    *,
    order: np.ndarray | None = None,
    file_ranks: np.ndarray | None = None,
) -> Run:
    """The Run for rows ``(q, d, scores)``: trec_eval order (``order`` None) or the given row order.

    Removes later duplicates of a (query, doc) pair (warning), numbers ranks 1..n per query, and, with
    ``file_ranks``, counts queries whose rank column disagrees with the final order (info).
    """
    n = len(scores)
    if n == 0:
        return Run(name, _empty_run_df(), file)
    q_codes = _factorize_first_seen(q)
    if order is None:
        table = pa.table({"q": q_codes, "s": _score32(scores), "d": d})
        keys = [("q", "ascending"), ("s", "descending"), ("d", "descending")]
        order = pc.sort_indices(table, sort_keys=keys).to_numpy()
    if file_ranks is not None:
        _check_rank_column(file, q, d, q_codes, order, file_ranks, report)
    dup = _duplicate_mask(q_codes, d, order)
    if dup.any():
        dropped = order[dup[order]]  # in final order
        sample = pa.array(dropped[:5])
        examples = [
            _pair(a, b) for a, b in zip(q.take(sample).to_pylist(), d.take(sample).to_pylist(), strict=True)
        ]
        report.add(
            "duplicate_doc_in_run",
            f"run {name!r}: {_plural(len(dropped), 'document')} {_verb(len(dropped), 'is', 'are')} listed more than "
            "once for the same query; the best-ranked occurrence is kept and the later ones are dropped (trec_eval "
            "refuses such files)",
            file=file,
            count=len(dropped),
            examples=examples,
        )
        order = order[~dup[order]]
    take = pa.array(order)
    table = pa.table(
        {
            "query_id": q.take(take),
            "doc_id": d.take(take),
            "score": pa.array(scores[order], type=pa.float64()),
            "rank": pa.array(_group_ranks(q_codes[order]), type=pa.int64()),
        }
    )
    return Run(name, _to_pandas(table), file)


def _check_rank_column(
    file: str,
    q: pa.ChunkedArray | pa.Array,
    d: pa.ChunkedArray | pa.Array,
    q_codes: np.ndarray,
    order: np.ndarray,
    file_ranks: np.ndarray,
    report: ValidationReport,
) -> None:
    derived = _group_ranks(q_codes[order])
    wrong = file_ranks[order] != derived  # NaN (not an integer) never equals
    if not wrong.any():
        return
    n_queries = len(np.unique(q_codes[order][wrong]))
    first = np.flatnonzero(wrong)[:5]
    rows = pa.array(order[first])
    examples = [
        f"{_pair(qq, dd)}: rank {_fmt_rank(file_ranks[order[i]])} in the file, {derived[i]} by score"
        for qq, dd, i in zip(q.take(rows).to_pylist(), d.take(rows).to_pylist(), first, strict=True)
    ]
    report.add(
        "rank_column_ignored",
        f"the rank column of {_plural(n_queries, 'query', 'queries')} disagrees with the score order; the ranks "
        "are re-derived from the scores like trec_eval does (score descending, ties by doc id descending)",
        severity="info",
        file=file,
        count=n_queries,
        examples=examples,
    )


def _fmt_rank(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) else "(not an integer)"


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """pandas frame; string columns get pandas' default ``str`` dtype (pyarrow-backed since pandas 3)."""
    df = table.to_pandas()
    for i, field in enumerate(table.schema):  # by position: a CSV header may repeat a name
        is_text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        if is_text and df.iloc[:, i].dtype != "str":
            df.isetitem(i, df.iloc[:, i].astype("str"))
    return df


# ============================================================================================== runs


def parse_run_arg(arg: str) -> tuple[str, str]:
    """``"NAME=PATH"`` or ``"PATH"`` -> ``(name, path)``; the name defaults to the file name without ``.gz`` and
    its extension (``runs/bm25.trec.gz`` -> ``bm25``).

    A ``=`` only separates a name when the part before it has no path separator and the whole argument is not
    an existing file (so ``runs/a=b.trec`` stays a path).
    """
    text = str(arg).strip()
    name: str | None = None
    path = text
    if "=" in text and not _exists(text):
        head, tail = text.split("=", 1)
        if "/" not in head and "\\" not in head:
            name, path = head.strip(), tail.strip()
            if not name:
                raise DataError(
                    f"--run {text!r}: the run name before '=' is empty. Expected NAME=PATH or PATH. "
                    "Fix: write e.g. --run bm25=runs/bm25.trec, or drop the '='."
                )
    if not path:
        raise DataError(
            f"--run {text!r}: no file given. Expected NAME=PATH or PATH. Fix: add the run file path."
        )
    return (name or _run_stem(path)), path


def _run_stem(path: PathLike) -> str:
    base = Path(path).name
    if base.lower().endswith(".gz"):
        base = base[:-3]
    return Path(base).stem or base


@_refuse_decoding_collisions(("query_id", "doc_id"))
def read_run(path: PathLike, *, name: str | None = None, report: ValidationReport | None = None) -> Run:
    """Read one run: TREC (also ``.gz``), JSONL ranked lists, or CSV/TSV long format (see the module docstring).

    The format comes from the extension (``.jsonl``/``.json``, ``.csv``, ``.tsv``; anything else is sniffed) and
    from the first non-blank line: a JSON object -> JSONL; a header naming ``query_id`` -> CSV/TSV; otherwise
    whitespace-separated fields -> TREC. TREC files are ordered like trec_eval (score descending, ties by doc id
    descending, the rank column ignored; see :func:`trec_order`); JSONL lists keep their order.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    name = name or _run_stem(path)
    raw = _clean_utf8(_read_bytes(path, RUN_FORMATS), file, report)
    first = _first_line(raw, skip_comments=True)
    if first is None:
        report.add("empty_file", f"run {name!r} is empty: every golden query scores 0", file=file)
        return Run(name, _empty_run_df(), file)
    lineno, line = first
    suffix = _suffixes(Path(path))
    if suffix in (".jsonl", ".json", ".ndjson") or line.startswith("{"):
        if not line.startswith("{"):
            raise _fatal(
                file, lineno, "not a JSON object", _snip(line), RUN_FORMATS, "write one JSON object per line"
            )
        return _read_run_jsonl(raw, file, name, report)
    fields = [f.strip().lower() for f in re.split(r"[,\t]", line)]
    if suffix in (".csv", ".tsv") or (len(fields) >= 2 and fields[0] in _RUN_Q_COLS):
        return _read_run_table(raw, file, name, report, line, lineno)
    if len(line.split()) >= 4:
        return _read_run_trec(raw, file, name, report)
    raise _fatal(
        file,
        lineno,
        "matches no run format",
        f"line {lineno} is {_snip(line)}",
        RUN_FORMATS,
        "convert the run to one of these formats",
    )


def _read_run_trec(raw: bytes, file: str, name: str, report: ValidationReport) -> Run:
    types = {"q": pa.string(), "d": pa.string(), "r": pa.float64(), "s": pa.float64()}
    table = _fast_whitespace_table(raw, ["q", "iter", "d", "r", "s", "tag"], types)
    if table is not None:
        scores = table.column("s").to_numpy()
        if np.isfinite(scores).all():
            return _build_run(
                name,
                file,
                table.column("q"),
                table.column("d"),
                scores,
                report,
                file_ranks=table.column("r").to_numpy(),
            )
    # Line by line: exact line numbers for errors, comments, extra fields after the tag.
    qs: list[str] = []
    ds: list[str] = []
    rs: list[float] = []
    ss: list[float] = []
    extra: list[int] = []
    for lineno, line in _lines(raw):
        parts = line.split()
        if not parts or parts[0].startswith(b"#"):
            continue
        if len(parts) < 6:
            fix = (
                "add the run tag column, or pass a JSONL/CSV run instead"
                if len(parts) == 5
                else "write every line as qid Q0 docid rank score tag, or pass a JSONL/CSV run instead"
            )
            raise _fatal(
                file,
                lineno,
                f'expected 6 whitespace-separated fields "qid Q0 docid rank score tag", found {len(parts)}',
                _snip(line),
                TREC_RUN,
                fix,
            )
        if len(parts) > 6:
            extra.append(lineno)
        text = parts[4].decode("utf-8")
        score = _parse_float(text)
        if score is None:
            raise _fatal(
                file,
                lineno,
                f"the score (5th field) is not a number: {text!r}{_not_ascii_note(text)}",
                _snip(line),
                TREC_RUN,
                "write a numeric score in ASCII digits",
            )
        if not math.isfinite(score):
            raise _fatal(
                file,
                lineno,
                f"the score is {text}, which cannot be ordered",
                _snip(line),
                TREC_RUN + " with finite scores",
                "fix the retriever output (a NaN usually means a zero-norm embedding) or drop the line",
            )
        rank = _parse_float(parts[3].decode("utf-8"))
        qs.append(parts[0].decode("utf-8"))
        ds.append(parts[2].decode("utf-8"))
        rs.append(rank if rank is not None else math.nan)
        ss.append(score)
    if extra:
        report.add(
            "extra_fields_ignored",
            f"{_plural(len(extra), 'line')} {_verb(len(extra), 'has', 'have')} more than 6 fields; the fields after the run tag are ignored "
            "(as trec_eval does)",
            severity="info",
            file=file,
            count=len(extra),
            examples=[f"line {i}" for i in extra],
        )
    if not qs:
        report.add("empty_file", f"run {name!r} has no result lines: every golden query scores 0", file=file)
        return Run(name, _empty_run_df(), file)
    return _build_run(
        name,
        file,
        pa.array(qs, type=pa.string()),
        pa.array(ds, type=pa.string()),
        np.asarray(ss, dtype=np.float64),
        report,
        file_ranks=np.asarray(rs, dtype=np.float64),
    )


def _read_run_jsonl(raw: bytes, file: str, name: str, report: ValidationReport) -> Run:
    expected = (
        'one JSON object per line: {"query_id": .., "results": [{"doc_id": .., "score": ..}, ..]} or '
        '{"query_id": .., "doc_ids": [..]}'
    )
    qs: list[str] = []
    ds: list[str] = []
    ss: list[float] = []
    seen: dict[str, int] = {}
    repeated: list[str] = []
    for lineno, line, obj, qid in _json_query_lines(raw, file, expected, "wrap the line in an object"):
        if "results" in obj:
            items = obj["results"]
            if not isinstance(items, list):
                raise _fatal(
                    file,
                    lineno,
                    '"results" is not a list',
                    _snip(line),
                    expected,
                    "make it a list of {doc_id, score} objects",
                )
            docs, scores = _json_results(items, file, lineno, expected)
        elif "doc_ids" in obj:
            items = obj["doc_ids"]
            if not isinstance(items, list) or not all(
                isinstance(x, str | int) and not isinstance(x, bool) for x in items
            ):
                raise _fatal(
                    file,
                    lineno,
                    '"doc_ids" is not a list of ids',
                    _snip(line),
                    expected,
                    "make it a list of strings",
                )
            docs = [str(x).strip() for x in items]
            scores = [-float(i) for i in range(1, len(docs) + 1)]
        else:
            raise _fatal(
                file,
                lineno,
                f'query {_show_id(qid)!r} has no "results" or "doc_ids" list (keys seen: {_keys(obj)})',
                None,
                expected,
                'add "results": [{"doc_id": .., "score": ..}, ..] or "doc_ids": [..]',
            )
        if qid in seen:
            repeated.append(f"{_show_id(qid)} (lines {seen[qid]} and {lineno})")
            continue
        seen[qid] = lineno
        qs.extend([qid] * len(docs))
        ds.extend(docs)
        ss.extend(scores)
    if repeated:
        report.add(
            "repeated_query_in_run",
            f"run {name!r}: {_plural(len(repeated), 'query', 'queries')} {_verb(len(repeated), 'appears', 'appear')} on more than one line; the first "
            "line is kept and the later lines are ignored",
            file=file,
            count=len(repeated),
            examples=repeated,
        )
    if not qs:
        report.add("empty_file", f"run {name!r} has no results: every golden query scores 0", file=file)
        return Run(name, _empty_run_df(), file)
    return _build_run(
        name,
        file,
        pa.array(qs, type=pa.string()),
        pa.array(ds, type=pa.string()),
        np.asarray(ss, dtype=np.float64),
        report,
        order=np.arange(len(qs), dtype=np.int64),
    )


def _json_query_lines(
    raw: bytes, file: str, expected: str, not_object_fix: str
) -> Iterator[tuple[int, bytes, dict[str, Any], str]]:
    """(line number, line, object, query id) for every non-blank line of a JSONL file keyed by query.

    A line that is not valid JSON, not an object, or has no query id is fatal: the error names the file and line.
    """
    for lineno, line in _lines(raw):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise _fatal(
                file, lineno, f"invalid JSON ({e.msg} at column {e.colno})", _snip(line), expected,
                "fix the JSON on this line",
            ) from None  # fmt: skip
        except (ValueError, RecursionError) as e:  # an integer of > 4300 digits, nesting too deep
            raise _fatal(
                file, lineno, f"cannot read the JSON ({_json_failure(e)})", _snip(line), expected,
                "fix the JSON on this line",
            ) from None  # fmt: skip
        if not isinstance(obj, dict):
            raise _fatal(
                file,
                lineno,
                f"a JSON {type(obj).__name__}, not an object",
                _snip(line),
                expected,
                not_object_fix,
            )
        qid = _json_key(obj, _JSON_Q_KEYS)
        if qid is None:
            raise _fatal(
                file, lineno, f"no query id (keys seen: {_keys(obj)})", None, expected,
                'add "query_id"',
            )  # fmt: skip
        yield lineno, line, obj, str(qid).strip()


def _json_failure(e: BaseException) -> str:
    """Why ``json.loads`` failed, for errors that are not ``JSONDecodeError``."""
    if isinstance(e, RecursionError):
        return "nested too deeply"
    if "digits" in str(e):
        return "a number with more than 4300 digits"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _json_key(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if k in obj and obj[k] is not None and not isinstance(obj[k], dict | list | bool):
            return obj[k]
    return None


def _int_fits_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _json_results(items: list, file: str, lineno: int, expected: str) -> tuple[list[str], list[float]]:
    docs: list[str] = []
    scores: list[float | None] = []
    for pos, item in enumerate(items, start=1):
        if isinstance(item, dict):
            doc = _json_key(item, _JSON_D_KEYS)
            score = item.get("score")
        else:
            doc, score = None, None
        if doc is None:
            raise _fatal(
                file,
                lineno,
                f"result #{pos} has no doc id",
                _snip(_json_text(item)),
                expected,
                'give each result a "doc_id"',
            )
        if score is not None:
            if not _is_number(score):
                raise _fatal(
                    file,
                    lineno,
                    f"result #{pos} ({_show_id(str(doc))}) has a score that is not a number",
                    _snip(_json_text(score)),
                    expected,
                    "write the score as a JSON number",
                )
            if isinstance(score, int) and not _int_fits_float(score):
                raise _fatal(
                    file,
                    lineno,
                    f"result #{pos} ({_show_id(str(doc))}) has a score too large for a 64-bit float: "
                    f"{_number_text(_json_text(score))}",
                    None,
                    expected + " with finite scores (at most about 1.8e308)",
                    "rescale the scores, or write them as floats",
                )
            if not math.isfinite(score):
                raise _fatal(
                    file,
                    lineno,
                    f"result #{pos} ({_show_id(str(doc))}) has score {score}, which cannot be ordered",
                    None,
                    expected + " with finite scores",
                    "fix the retriever output (a NaN usually means a zero-norm embedding)",
                )
            score = float(score)
        docs.append(str(doc).strip())
        scores.append(score)
    have = [s is not None for s in scores]
    if all(have):
        return docs, scores  # type: ignore[return-value]
    if any(have):
        missing = have.index(False) + 1
        raise _fatal(
            file,
            lineno,
            f"some results have a score and others not (result #{missing})",
            None,
            expected,
            "give every result a score, or none",
        )
    return docs, [-float(i) for i in range(1, len(docs) + 1)]


def _read_run_table(
    raw: bytes, file: str, name: str, report: ValidationReport, header: str, header_line: int
) -> Run:
    delimiter = "\t" if ("\t" in header or (_suffixes(Path(file)) == ".tsv" and "," not in header)) else ","
    columns = _header_fields(header, delimiter, file, header_line, RUN_FORMATS)
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise _fatal(
            file,
            header_line,
            f"the header names {', '.join(repr(_show_id(c, 40)) for c in twice)} more than once",
            _snip(header),
            "a CSV/TSV run with a header query_id,doc_id,score[,rank]",
            "give every column its own name",
        )
    lower = [c.lower() for c in columns]
    expected = "a CSV/TSV run with a header query_id,doc_id,score[,rank]"

    def find(cands: Sequence[str]) -> str | None:
        for c in cands:
            if c in lower:
                return columns[lower.index(c)]
        return None

    qcol, dcol, scol, rcol = find(_RUN_Q_COLS), find(_RUN_D_COLS), find(("score",)), find(("rank",))
    if qcol is None or dcol is None or (scol is None and rcol is None):
        raise _fatal(
            file,
            header_line,
            f"the header names no {'query id' if qcol is None else 'doc id' if dcol is None else 'score or rank'} column",
            f"columns: {', '.join(columns)}",
            expected,
            "name the columns query_id, doc_id and score (and optionally rank)",
        )
    table, line_of_row = _read_csv_table(
        raw, file, columns, delimiter, header_line, report, strict=True, expected=expected
    )
    q = _strip_ids(table.column(qcol))
    d = _strip_ids(table.column(dcol))
    n = table.num_rows
    numbers: dict[str, np.ndarray] = {}
    for col in (c for c in (scol, rcol) if c is not None):
        values = _as_float(table.column(col))
        if values is None:
            bad = _first_bad_row(table.column(col), lambda s: _parse_float(s) is None)
            value = table.column(col)[bad].as_py()
            raise _fatal(
                file,
                line_of_row(bad),
                f"the {col} column is not a number: {value!r}{_not_ascii_note(value)}",
                None,
                expected,
                f"write a numeric {col} in ASCII digits",
            )
        arr = values.to_numpy(zero_copy_only=False)
        numbers[col] = arr
        if not np.isfinite(arr).all():
            bad = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise _fatal(
                file,
                line_of_row(bad),
                f"the {col} is {table.column(col)[bad].as_py().strip()}, which cannot be ordered",
                None,
                expected + " with finite values",
                "fix the retriever output (a NaN usually means a zero-norm embedding)",
            )
    if n == 0:
        report.add("empty_file", f"run {name!r} has no result rows: every golden query scores 0", file=file)
        return Run(name, _empty_run_df(), file)
    if rcol is None:
        return _build_run(name, file, q, d, numbers[scol], report)
    ranks = numbers[rcol]
    if not (ranks == np.round(ranks)).all():
        bad = int(np.flatnonzero(ranks != np.round(ranks))[0])
        raise _fatal(
            file,
            line_of_row(bad),
            f"the rank is not an integer: {ranks[bad]}",
            None,
            expected,
            "write integer ranks",
        )
    scores = numbers[scol] if scol is not None else -ranks
    q_codes = _factorize_first_seen(q)
    order = np.lexsort((np.arange(n), ranks, q_codes))  # query first-seen, rank, file order
    return _build_run(name, file, q, d, scores.astype(np.float64), report, order=order)


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
        return [i for i, line in _lines(body) if line.strip()]
    return out


def _header_fields(line: str, delimiter: str, file: str, lineno: int, expected: str) -> list[str]:
    """The column names of a CSV/TSV header line."""
    try:
        fields = next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error as e:
        raise _fatal(
            file,
            lineno,
            f"the header line cannot be parsed ({e})",
            _snip(line),
            expected,
            "fix the header line",
        ) from None
    return [c.strip() for c in fields]


def _read_csv_table(
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
    cut = 0
    for _ in range(header_line):
        nl = raw.find(b"\n", cut)
        cut = len(raw) if nl < 0 else nl + 1
    body = raw[cut:]
    bad: list[tuple[int, str, int]] = []  # (record number within body, text, fields found)

    def on_bad(row) -> str:
        bad.append((row.number, row.text, row.actual_columns))
        return "skip"

    names = [f"c{i}" for i in range(len(columns))]
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
        raise _fatal(
            file, None, "cannot be parsed as a table", str(e).splitlines()[0], expected, "check the quoting"
        ) from None
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
            raise _fatal(
                file,
                lines[0],
                f"expected {len(columns)} fields like the header ({delimiter.join(columns)}), found {actual}",
                _snip(text),
                expected,
                "give every row the same columns as the header",
            )
        report.add(
            "malformed_line",
            f"{_plural(len(bad), 'row')} {_verb(len(bad), 'does', 'do')} not have the {len(columns)} columns of "
            f"the header and {_verb(len(bad), 'was', 'were')} skipped",
            file=file,
            count=len(bad),
            examples=[f"line {ln}: {_snip(t, 60)}" for ln, (_, t, _) in zip(lines, bad, strict=True)],
        )
    return table.rename_columns(columns), line_of_row


# ============================================================================================== qrels


@_refuse_decoding_collisions(("query_id", "doc_id"))
def read_qrels(path: PathLike, *, report: ValidationReport | None = None) -> Qrels:
    """Read judgements: BEIR TSV with header, TREC qrels (4 fields), or JSONL (see the module docstring).

    The format is sniffed from the first non-blank, non-``#`` line: a JSON object -> JSONL; 3 fields whose
    names look like ``query-id corpus-id score`` -> BEIR with header (3 fields of data: BEIR without header,
    counted as info); 4 fields -> TREC. Grades must be integers (``1.5`` or ``high`` is fatal, naming the line);
    negative grades are kept (trec_eval reads them as judged non-relevant). A (query, doc) pair judged twice
    keeps its first grade (warning). Queries whose judgements are all <= 0 are counted as info: they have no
    relevant document, so trec_eval and :mod:`diagnose.metrics` leave them out of the means.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    raw = _clean_utf8(_read_bytes(path, QRELS_FORMATS), file, report)
    first = _first_line(raw, skip_comments=True)
    if first is None:
        raise _fatal(
            file, None, "the qrels file is empty", None, QRELS_FORMATS, "pass the file with the judgements"
        )
    lineno, line = first
    if line.startswith("{"):
        df = _read_qrels_jsonl(raw, file, report)
    else:
        fields = line.split("\t") if "\t" in line else line.split()
        fields = [f.strip() for f in fields]
        lower = [f.lower() for f in fields]
        if len(fields) == 3 and lower[0] in _QRELS_Q_HEADER and lower[1] in _QRELS_D_HEADER:
            df = _read_qrels_columns(raw, file, report, 3, skip_through=lineno, tabs="\t" in line)
        elif len(fields) == 3 and _parse_grade(fields[2]) is not None:
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
            raise _fatal(
                file,
                lineno,
                "matches no qrels format",
                f"line {lineno} is {_snip(line)}",
                QRELS_FORMATS,
                "convert the judgements to one of these formats",
            )
    return _finish_qrels(df, file, report)


def _read_qrels_columns(
    raw: bytes, file: str, report: ValidationReport, nfields: int, *, skip_through: int, tabs: bool
) -> pd.DataFrame:
    """TREC (4 fields) or BEIR (3 fields, tab-separated when ``tabs``) qrels; lines up to ``skip_through`` skipped."""
    body = raw
    if skip_through:
        cut = 0
        for _ in range(skip_through):
            nl = body.find(b"\n", cut)
            cut = len(body) if nl < 0 else nl + 1
        body = b"\n" * skip_through + body[cut:]  # keep line numbers
    expected = TREC_QRELS if nfields == 4 else BEIR_QRELS
    names = ["q", "iter", "d", "g"] if nfields == 4 else ["q", "d", "g"]
    types = {"q": pa.string(), "d": pa.string(), "g": pa.int64()}
    table = None if tabs and _has_inner_spaces(body) else _fast_whitespace_table(body, names, types)
    if table is not None:
        return _to_pandas(
            pa.table(
                {"query_id": table.column("q"), "doc_id": table.column("d"), "relevance": table.column("g")}
            )
        )
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    decimals: list[int] = []
    for lineno, line in _lines(body):
        text = line.decode("utf-8")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in text.split("\t")] if tabs else text.split()
        if len(parts) != nfields:
            fields_desc = '"qid iter docid rel"' if nfields == 4 else '"query-id corpus-id score"'
            raise _fatal(
                file,
                lineno,
                f"expected {nfields} {'tab' if tabs else 'whitespace'}-separated fields {fields_desc}, found {len(parts)}",
                _snip(text),
                expected,
                "write every judgement on its own line with exactly these fields",
            )
        grade_text = parts[-1]
        grade = _parse_grade(grade_text)
        if grade is None:
            raise _fatal(
                file,
                lineno,
                f"the relevance grade is not an integer: {grade_text!r}{_not_ascii_note(grade_text)}",
                _snip(text),
                expected,
                "use integer grades in ASCII digits (0 = not relevant, 1, 2, ... = relevant); map labels like "
                "'high' to numbers first",
            )
        if not _grade_fits(grade):
            raise _fatal(
                file,
                lineno,
                f"the relevance grade is out of range: {_number_text(grade_text)}",
                None,
                GRADE_RANGE,
                _GRADE_FIX,
            )
        if not _INT_RE.match(grade_text):
            decimals.append(lineno)
        qs.append(parts[0])
        ds.append(parts[-2])
        gs.append(grade)
    if decimals:
        report.add(
            "decimal_grade",
            f"{_plural(len(decimals), 'grade')} written as decimals (like 1.0) {_verb(len(decimals), 'was', 'were')} read as integers",
            severity="info",
            file=file,
            count=len(decimals),
            examples=[f"line {i}" for i in decimals],
        )
    return pd.DataFrame(
        {
            "query_id": pd.Series(qs, dtype="str"),
            "doc_id": pd.Series(ds, dtype="str"),
            "relevance": np.asarray(gs, dtype=np.int64),
        }
    )


def _has_inner_spaces(body: bytes) -> bool:
    """True when a tab-separated field contains a space between non-blank characters (an id with a space)."""
    return b" " in body and re.search(rb"[^\s] +[^\s]", body) is not None


def _read_qrels_jsonl(raw: bytes, file: str, report: ValidationReport) -> pd.DataFrame:
    expected = '{"query_id": .., "relevant": {"doc_id": grade, ..}} or {"query_id": .., "relevant": [doc_id, ..]} per line'
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    for lineno, line, obj, qid in _json_query_lines(raw, file, expected, "write one object per line"):
        rel = obj.get("relevant")
        if isinstance(rel, list):
            pairs = [(x, 1) for x in rel]
        elif isinstance(rel, dict):
            pairs = list(rel.items())
        else:
            raise _fatal(
                file,
                lineno,
                f'query {_show_id(qid)!r} has no "relevant" object or list',
                _snip(line),
                expected,
                'add "relevant": {"doc_id": grade}',
            )
        for doc, grade in pairs:
            if not isinstance(doc, str | int) or isinstance(doc, bool):
                raise _fatal(
                    file,
                    lineno,
                    f"a relevant doc id is not a string: {_snip(_json_text(doc), 40)}",
                    None,
                    expected,
                    "write doc ids as strings",
                )
            value = _json_grade(grade)
            if value is None:
                raise _fatal(
                    file,
                    lineno,
                    f"the relevance grade of {_show_id(str(doc))!r} is not an integer: {_number_text(grade if isinstance(grade, str) else _json_text(grade))}"
                    f"{_not_ascii_note(grade) if isinstance(grade, str) else ''}",
                    None,
                    expected,
                    "use integer grades (0 = not relevant, 1, 2, ... = relevant)",
                )
            if not _grade_fits(value):
                raise _fatal(
                    file,
                    lineno,
                    f"the relevance grade of {_show_id(str(doc))!r} is out of range: {_number_text(grade if isinstance(grade, str) else _json_text(grade))}",
                    None,
                    GRADE_RANGE,
                    _GRADE_FIX,
                )
            qs.append(qid)
            ds.append(str(doc).strip())
            gs.append(value)
    return pd.DataFrame(
        {
            "query_id": pd.Series(qs, dtype="str"),
            "doc_id": pd.Series(ds, dtype="str"),
            "relevance": np.asarray(gs, dtype=np.int64),
        }
    )


def _json_grade(grade: Any) -> int | None:
    """A JSON grade as an int (possibly out of the int64 range), or None when it is not an integer."""
    if isinstance(grade, bool):
        return None
    if isinstance(grade, int):
        return grade
    if isinstance(grade, float):
        return int(grade) if math.isfinite(grade) and grade == int(grade) else None
    if isinstance(grade, str):
        return _parse_grade(grade)
    return None


def _json_text(value: Any) -> str:
    """``json.dumps(value)`` that never fails (ints longer than Python's 4300-digit limit included)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 10_000:
        return f"{'-' if value < 0 else ''}an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        return json.dumps(value)
    except (ValueError, TypeError):
        return repr(value)


def _finish_qrels(df: pd.DataFrame, file: str, report: ValidationReport) -> Qrels:
    if df.empty:
        raise _fatal(
            file,
            None,
            "the qrels file has no judgements",
            None,
            QRELS_FORMATS,
            "pass the file with the judgements",
        )
    df["query_id"] = df["query_id"].str.strip()
    df["doc_id"] = df["doc_id"].str.strip()
    dup = df.duplicated(["query_id", "doc_id"], keep="first")
    if dup.any():
        first_grade = df[~dup].set_index(["query_id", "doc_id"])["relevance"]
        rows = df[dup]
        keys = list(zip(rows["query_id"], rows["doc_id"], strict=True))
        firsts = first_grade.loc[keys].to_numpy()
        conflicts = int((firsts != rows["relevance"].to_numpy()).sum())
        report.add(
            "duplicate_judgement",
            f"{_plural(int(dup.sum()), 'judgement')} {_verb(int(dup.sum()), 'repeats', 'repeat')} a (query, doc) pair "
            f"already judged ({conflicts} with a different grade); the first judgement is kept",
            file=file,
            count=int(dup.sum()),
            examples=[_pair(q, d) for q, d in keys[:5]],
        )
        df = df[~dup].reset_index(drop=True)
    rel_any = df.groupby("query_id", sort=False)["relevance"].max()
    no_rel = rel_any.index[rel_any <= 0].tolist()
    if no_rel:
        report.add(
            "query_without_relevant",
            f"{_plural(len(no_rel), 'judged query', 'judged queries')} {_verb(len(no_rel), 'has', 'have')} no document "
            f"with grade > 0; {_verb(len(no_rel), 'it is', 'they are')} left out of the metric means (like trec_eval)",
            severity="info",
            file=file,
            count=len(no_rel),
            examples=_ids(no_rel),
        )
    report.stats["qrels_rows"] = len(df)
    report.stats["qrels_queries"] = int(df["query_id"].nunique())
    report.stats["golden_queries"] = int((rel_any > 0).sum())
    return Qrels(df.reset_index(drop=True), file)


# ============================================================================================== corpus / queries


@_refuse_decoding_collisions(("doc_id",))
def read_corpus(
    path: PathLike,
    *,
    id_field: str | None = None,
    text_field: str | None = None,
    title_field: str | None = None,
    report: ValidationReport | None = None,
) -> Corpus:
    """Read a corpus: BEIR JSONL, CSV/TSV/Parquet, or a folder of ``.txt``/``.md`` files.

    Columns: ``doc_id``, ``title``, ``text`` and every other field as a column (``metadata`` flattened). The id,
    text and title fields are auto-detected (``_id|id|doc_id|docid``, ``text|body|content|contents``, ``title``;
    case-insensitive) unless given. Lines that cannot be read, and rows without an id, are skipped and counted;
    a repeated id keeps its first document (warning); documents with empty title and text are kept and counted.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    p = Path(path)
    fields = (id_field, text_field, title_field)
    if stat.S_ISDIR(check_input_path(p, CORPUS_FORMATS, folder=None).st_mode):
        df = _read_text_folder(p, file, report)
        return _finish_records(
            df, file, report, "corpus", fields, CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS
        )
    df, where = _read_records(p, file, report, CORPUS_FORMATS, "corpus")
    return _finish_records(
        df, file, report, "corpus", fields, CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS, where
    )


@_refuse_decoding_collisions(("query_id",))
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
    if _suffixes(p) not in (".jsonl", ".json", ".ndjson", ".csv", ".parquet", ".pq"):
        raw = _clean_utf8(_read_bytes(p, QUERIES_FORMATS), file, report)
        first = _first_line(raw)
        header = first[1].split("\t") if first else []
        is_table = len(header) > 2 and header[0].strip().lower() in (*QUERY_ID_FIELDS, "query-id")
        tab_file = _suffixes(p) in (".tsv", ".tab", ".txt") or (first is not None and "\t" in first[1])
        if first is not None and tab_file and not first[1].startswith("{") and not is_table:
            df = _read_queries_id_tab_text(raw, file, report)
            return _finish_records(
                df, file, report, "queries", (id_field, text_field, None), ("query_id",), ("text",), ()
            )
    df, where = _read_records(p, file, report, QUERIES_FORMATS, "queries")
    return _finish_records(
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
    for lineno, line in _lines(raw):
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
            bad.append(f"line {lineno}: {_snip(text, 60)}")
            continue
        ids.append(qid.strip())
        texts.append(rest.strip())
    if bad:
        report.add(
            "malformed_line",
            f"{_plural(len(bad), 'line')} {_verb(len(bad), 'has', 'have')} no tab between the query id and the text and "
            f"{_verb(len(bad), 'was', 'were')} skipped (expected id<TAB>text)",
            file=file,
            count=len(bad),
            examples=bad,
        )
    return pd.DataFrame({"query_id": pd.Series(ids, dtype="str"), "text": pd.Series(texts, dtype="str")})


def _read_records(
    p: Path, file: str, report: ValidationReport, formats: str, kind: str
) -> tuple[pd.DataFrame, Callable[[int], str]]:
    """Any record file (JSONL, CSV, TSV, Parquet) as a DataFrame of raw fields, and where record ``i`` is."""
    suffix = _suffixes(p)
    check_input_path(p, formats)
    if suffix in (".parquet", ".pq") or _starts_with(p, b"PAR1"):
        try:
            return pd.read_parquet(p), lambda i: f"row {i + 1}"
        except Exception as e:  # noqa: BLE001 - pyarrow raises many types for a broken file
            raise _fatal(
                file,
                None,
                "cannot be read as Parquet",
                str(e).splitlines()[0],
                formats,
                "re-export the table",
            ) from None
    raw = _clean_utf8(_read_bytes(p, formats), file, report)
    first = _first_line(raw)
    if first is None:
        report.add("empty_file", f"the {kind} file is empty", file=file)
        return pd.DataFrame(), lambda i: f"record {i + 1}"
    lineno, line = first
    if suffix in (".jsonl", ".json", ".ndjson") or line.startswith("{"):
        if not line.startswith("{"):
            raise _fatal(
                file, lineno, "not a JSON object", _snip(line), formats, "write one JSON object per line"
            )
        return _read_jsonl_records(raw, file, report)
    if suffix in (".csv", ".tsv", ".tab") or "," in line or "\t" in line:
        delimiter = "\t" if (suffix in (".tsv", ".tab") or ("\t" in line and "," not in line)) else ","
        columns = _header_fields(line, delimiter, file, lineno, formats)
        table, line_of_row = _read_csv_table(
            raw, file, columns, delimiter, lineno, report, strict=False, expected=formats
        )
        return _to_pandas(table), lambda i: f"line {line_of_row(i)}"
    raise _fatal(
        file,
        lineno,
        f"matches no {kind} format",
        f"line {lineno} is {_snip(line)}",
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
    if _FAST:
        try:
            table = pajson.read_json(pa.BufferReader(raw))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            table = None
        if table is not None:
            table = _keep_wide_objects_whole(table)
            while any(pa.types.is_struct(f.type) for f in table.schema):
                table = table.flatten()

            def where(i: int) -> str:  # pyarrow read every non-blank line as one record
                nonblank = (n for n, line in _lines(raw) if line.strip())
                return f"line {next(itertools.islice(nonblank, i, None), '?')}"

            return _to_pandas(table), where
    rows: list[dict[str, Any]] = []
    row_lines: list[int] = []
    bad: list[str] = []
    for lineno, line in _lines(raw):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            bad.append(f"line {lineno}: {e.msg} at column {e.colno}")
            continue
        except (ValueError, RecursionError) as e:
            bad.append(f"line {lineno}: {_json_failure(e)}")
            continue
        if not isinstance(obj, dict):
            bad.append(f"line {lineno}: a JSON {type(obj).__name__}, not an object")
            continue
        rows.append(_flatten(obj))
        row_lines.append(lineno)
    rows = _collapse_wide(rows)
    if bad:
        report.add(
            "malformed_line",
            f"{_plural(len(bad), 'line')} {_verb(len(bad), 'is not a valid JSON object and was', 'are not valid JSON objects and were')} skipped (first: {bad[0]})",
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
    return pa.array([None if r is None else json.dumps(_drop_nulls(r), ensure_ascii=False) for r in rows],
                    type=pa.string())  # fmt: skip


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


def _read_text_folder(root: Path, file: str, report: ValidationReport) -> pd.DataFrame:
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    ignored: list[str] = []
    non_utf8: list[str] = []
    limit = max_input_bytes()
    total = 0
    for p, st in _walk_folder(root, file):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            ignored.append(f"{rel.as_posix()} (not a regular file)")
            continue
        if p.suffix.lower() not in _TEXT_SUFFIXES:
            ignored.append(rel.as_posix())
            continue
        total += st.st_size
        if total > limit:
            raise _fatal(
                file,
                None,
                f"the .txt/.md files of the corpus folder add up to more than the input limit of {_size(limit)}",
                f"at {rel.as_posix()}",
                f"a corpus of at most {limit} bytes",
                _too_big_fix(),
            )
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise _os_error(str(p), e, "a readable .txt or .md file in the corpus folder") from None
        if raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            content = raw.decode("utf-8", errors="replace")
            non_utf8.append(rel.as_posix())
        content = content.replace("\r\n", "\n")
        title, text = _split_markdown_title(content) if p.suffix.lower() == ".md" else ("", content)
        ids.append(rel.as_posix())
        titles.append(title)
        texts.append(text.strip())
    if ignored:
        report.add(
            "ignored_files",
            f"{_plural(len(ignored), 'file')} in the corpus folder {_verb(len(ignored), 'is', 'are')} not .txt/.md and {_verb(len(ignored), 'was', 'were')} not read",
            severity="info",
            file=file,
            count=len(ignored),
            examples=ignored,
        )
    if non_utf8:
        report.add(
            "non_utf8",
            f"{_plural(len(non_utf8), 'file')} {_verb(len(non_utf8), 'contains', 'contain')} bytes that are not UTF-8; "
            f"{_verb(len(non_utf8), 'it was', 'they were')} decoded with U+FFFD replacement characters",
            file=file,
            count=len(non_utf8),
            examples=non_utf8,
        )
    if not ids:
        report.add("empty_file", "the corpus folder has no .txt or .md files", file=file)
    return pd.DataFrame({"doc_id": pd.Series(ids, dtype="str"), "title": titles, "text": texts})


def _walk_folder(root: Path, file: str) -> list[tuple[Path, os.stat_result]]:
    """Every entry below ``root`` (sorted like ``sorted(root.rglob("*"))``; symbolic links to folders are not
    followed) with its ``os.stat``. A folder or entry that cannot be read is a DataError naming it."""
    expected = "a corpus folder whose files and subfolders can be read"
    out: list[tuple[Path, os.stat_result]] = []
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        if errors:
            break
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]  # hidden folders are skipped, not walked
        for name in (*dirnames, *filenames):
            p = Path(dirpath) / name
            st = _stat(p, expected)
            if st is None:  # a dangling symbolic link
                st = os.lstat(p)
            out.append((p, st))
    if errors:
        e = errors[0]
        raise _os_error(str(e.filename or file), e, expected)
    out.sort(key=lambda item: item[0])
    return out


def _split_markdown_title(content: str) -> tuple[str, str]:
    """(title, text): the first ATX heading is the title; it leaves the text only when it is the first line."""
    lines = content.split("\n")
    first_nonblank = next((i for i, line in enumerate(lines) if line.strip()), None)
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m:
            if i == first_nonblank:
                return m.group(1), "\n".join(lines[i + 1 :])
            return m.group(1), content
    return "", content


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
        raise _fatal(
            file,
            None,
            f"has no {role} field {given!r}",
            f"fields: {', '.join(map(str, columns)) or 'none'}",
            formats,
            f"pass {option} with one of these fields",
        )
    lower = {str(c).lower(): c for c in reversed(list(columns))}
    for cand in candidates:
        if cand in lower:
            return lower[cand]
    return None


def _finish_records(
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
    formats = CORPUS_FORMATS if is_corpus else QUERIES_FORMATS
    id_col, text_col = ("doc_id", "text") if is_corpus else ("query_id", "text")
    record = Corpus if is_corpus else Queries
    if df.empty and not len(df.columns):
        cols = [id_col, "title", "text"] if is_corpus else [id_col, "text"]
        return record(pd.DataFrame({c: pd.Series([], dtype="str") for c in cols}), file)
    columns = [str(c) for c in df.columns]
    df.columns = columns
    repeated = pd.Index(columns).duplicated()
    if repeated.any():
        names = list(dict.fromkeys(c for c, r in zip(columns, repeated, strict=True) if r))
        report.add(
            "duplicate_field",
            f"{_plural(len(names), 'field name')} {_verb(len(names), 'appears', 'appear')} more than once (in the "
            "header, or once metadata is flattened); the first field of each name is kept",
            file=file,
            count=len(names),
            examples=[repr(_show_id(n, 40)) for n in names],
        )
        df = df.loc[:, ~repeated]
        columns = [c for c, r in zip(columns, repeated, strict=True) if not r]
    src_id = _pick(columns, given[0], id_cands, "id", file, formats, "--id-field")
    src_text = _pick(columns, given[1], text_cands, "text", file, formats, "--text-field")
    src_title = (
        _pick(columns, given[2], title_cands, "title", file, formats, "--title-field") if is_corpus else None
    )
    if src_id is None or src_text is None:
        role = "id" if src_id is None else "text"
        cands = id_cands if src_id is None else text_cands
        raise _fatal(
            file,
            None,
            f"no {role} field found",
            f"fields: {', '.join(columns)}",
            f"{formats}, with the {role} in a field named {' or '.join(cands)}",
            f"rename the field, or name it with --{role}-field",
        )
    out = pd.DataFrame(index=df.index)
    at = where or (lambda i: f"record {i + 1}")
    out[id_col] = _text_column(df[src_id], file, src_id, at).str.strip()
    if is_corpus:
        out["title"] = _text_column(df[src_title], file, src_title, at) if src_title is not None else ""
        out["title"] = out["title"].astype("str")
    out["text"] = _text_column(df[src_text], file, src_text, at)
    used = {src_id, src_text, src_title}
    core = set(out.columns)
    for col in columns:
        if col in used:
            continue
        short = col[len("metadata.") :] if col.startswith("metadata.") else col
        target = short if short not in core and short not in out.columns else col
        if target in out.columns:
            continue
        out[target] = df[col]
    # rows without an id
    no_id = out[id_col] == ""
    if no_id.any():
        rows = np.flatnonzero(no_id.to_numpy())[:5]
        report.add(
            "missing_id",
            f"{_plural(int(no_id.sum()), 'record')} {_verb(int(no_id.sum()), 'has', 'have')} no {src_id!r} and "
            f"{_verb(int(no_id.sum()), 'was', 'were')} skipped",
            file=file,
            count=int(no_id.sum()),
            examples=[(where or (lambda i: f"record {i + 1}"))(int(i)) for i in rows],
        )
        out = out[~no_id]
    dup = out[id_col].duplicated(keep="first")
    if dup.any():
        ids = pd.unique(out.loc[dup, id_col]).tolist()
        report.add(
            f"duplicate_{'doc' if is_corpus else 'query'}_id",
            f"{_plural(int(dup.sum()), 'record')} {_verb(int(dup.sum()), 'repeats', 'repeat')} an id already seen "
            f"({_plural(len(ids), 'distinct id')}); the first record of each id is kept",
            file=file,
            count=int(dup.sum()),
            examples=_ids(ids),
        )
        out = out[~dup]
    blank = out["text"].str.strip() == ""
    if is_corpus:
        blank &= out["title"].str.strip() == ""
    if blank.any():
        ids = out.loc[blank, id_col].tolist()
        report.add(
            "empty_document" if is_corpus else "query_without_text",
            f"{_plural(len(ids), 'document' if is_corpus else 'query', None if is_corpus else 'queries')} "
            f"{_verb(len(ids), 'has', 'have')} no text{' and no title' if is_corpus else ''}; "
            f"{_verb(len(ids), 'it is', 'they are')} kept"
            + (
                f" ({_verb(len(ids), 'it', 'they')} can never be retrieved by text)"
                if is_corpus
                else " (empty query text)"
            ),
            file=file,
            count=len(ids),
            examples=_ids(ids),
        )
    out = out.reset_index(drop=True)
    report.stats[f"{kind}_records"] = len(out)
    return record(out, file)


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
                raise _fatal(
                    file,
                    None,
                    f"the {name!r} column holds bytes that are not UTF-8 text ({where(i)})",
                    _snip(repr(v), 60),
                    f"the {name!r} column as text",
                    "store the column as UTF-8 strings",
                ) from None
        elif isinstance(v, list | tuple | dict | np.ndarray | set):
            kind = "an object" if isinstance(v, dict) else "a list"
            raise _fatal(
                file,
                None,
                f"the {name!r} column holds {kind}, not text ({where(i)})",
                _snip(_json_text(v.tolist() if isinstance(v, np.ndarray) else v), 60),
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


# ============================================================================================== writing


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
                f"{path}: cannot write run {run.name!r} as TREC: the {col} {_show_id(bad)!r} contains whitespace. Expected ids "
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


# ============================================================================================== dataset


def load_dataset(
    *,
    data_dir: PathLike | None = None,
    split: str = "test",
    corpus: PathLike | None = None,
    queries: PathLike | None = None,
    qrels: PathLike | None = None,
    runs: Iterable[str | Path | tuple[str | None, PathLike]] = (),
    report: ValidationReport | None = None,
    corpus_fields: Mapping[str, str | None] | None = None,
    name: str | None = None,
    require_qrels: bool = True,
    qrels_transform: Callable[[Qrels], Qrels] | None = None,
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
    """
    report = report if report is not None else ValidationReport()
    if data_dir is not None:
        root = Path(data_dir)
        beir = "a BEIR folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv"
        st = _stat(root, beir)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise DataError(
                f"{data_dir}: {'not found' if st is None else 'is a file, not a folder'}. Expected {beir}. Fix: pass "
                "the folder path to --data, or the files with --corpus, --queries and --qrels."
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
                    f"{split!r} as qrels/{split}.tsv. Fix: pass --split with one of the available splits, or --qrels FILE."
                )
    if qrels is None and require_qrels:
        raise DataError(
            "No judgements given. Expected a qrels file. Fix: pass --qrels FILE, or --data DIR (a BEIR folder)."
        )

    run_specs: list[tuple[str, str]] = []
    for spec in runs:
        if isinstance(spec, tuple):
            rname, rpath = spec
            run_specs.append((rname or _run_stem(rpath), str(rpath)))
        else:
            run_specs.append(parse_run_arg(str(spec)))
    seen: dict[str, str] = {}
    for rname, rpath in run_specs:
        if rname in seen:
            raise DataError(
                f"{rpath}: the run name {rname!r} is already used by {seen[rname]}. Expected one name per run. "
                f"Fix: name the runs, e.g. --run {rname}_a={seen[rname]} --run {rname}_b={rpath}."
            )
        seen[rname] = rpath

    qrels_rec = read_qrels(qrels, report=report) if qrels is not None else empty_qrels()
    if qrels_transform is not None:
        qrels_rec = qrels_transform(qrels_rec)
    fields = dict(corpus_fields or {})
    corpus_rec = (
        read_corpus(
            corpus,
            id_field=fields.get("id") or fields.get("id_field"),
            text_field=fields.get("text") or fields.get("text_field"),
            title_field=fields.get("title") or fields.get("title_field"),
            report=report,
        )
        if corpus is not None
        else None
    )
    queries_rec = read_queries(queries, report=report) if queries is not None else None
    run_recs = {rname: read_run(rpath, name=rname, report=report) for rname, rpath in run_specs}

    for run in run_recs.values():
        check_run_matches_qrels(run, qrels_rec)
    _cross_checks(qrels_rec, run_recs, corpus_rec, queries_rec, report)
    ds_name = name or (
        Path(data_dir).name if data_dir is not None else Path(str(qrels or queries or corpus or "data")).stem
    )
    return Dataset(
        qrels=qrels_rec, runs=run_recs, corpus=corpus_rec, queries=queries_rec, report=report, name=ds_name
    )


def empty_qrels(source: str = "") -> Qrels:
    """Qrels without a judgement (a data set with no golden set yet). Evaluating them is an error: no query has a
    relevant document."""
    df = pd.DataFrame(
        {
            "query_id": pd.Series([], dtype="str"),
            "doc_id": pd.Series([], dtype="str"),
            "relevance": np.zeros(0, dtype=np.int64),
        }
    )
    return Qrels(df, source)


def check_run_matches_qrels(run: Run, qrels: Qrels) -> None:
    """Refuse a run that can only score 0: it has no results, or none of its query ids is a golden query (a query
    with a relevant document). The message names a few ids of each side and says when they would match with case,
    leading zeros or everything but their numbers ignored (``'Q1'`` vs ``'q1'``): ids are compared exactly, like
    trec_eval does. A run that shares some golden queries is fine here (the rest is counted by the cross-checks).
    """
    file = run.source or run.name
    if len(run.df) == 0:
        raise _fatal(
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
        return
    seen = f"run ids: {_id_list(in_run)}; golden ids in {qrels.source or 'the qrels'}: {_id_list(golden)}"
    hint = _id_mismatch_hint(in_run, golden)
    raise _fatal(
        file,
        None,
        f"none of the {_plural(len(in_run), 'query id')} of run {run.name!r} is a golden query of the qrels"
        + (f"; {hint}" if hint else "")
        + ": ids are compared exactly",
        seen,
        "run query ids written exactly like the query ids of the qrels",
        "rename the query ids of the run (or of the qrels) so they match, or pass the qrels of the same collection",
    )


def _id_list(ids: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(_show_id(i, 40)) for i in ids[:n])
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
                return f"they match {how} (run ids look like {_show_id(q, 40)!r}, the qrels use {_show_id(g, 40)!r})"
    return ""


def _existing(folder: Path, filename: str, expected: str) -> str | None:
    """``folder/filename`` or its ``.gz``, when it exists and is not a folder (the reader checks it further)."""
    for candidate in (folder / filename, folder / (filename + ".gz")):
        st = _stat(candidate, expected)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            return str(candidate)
    return None


def _cross_checks(
    qrels: Qrels,
    runs: Mapping[str, Run],
    corpus: Corpus | None,
    queries: Queries | None,
    report: ValidationReport,
) -> None:
    golden = pd.Index(qrels.queries_with_relevant())
    judged = pd.Index(pd.unique(qrels.df["query_id"]))
    if corpus is not None:
        doc_ids = pd.Index(corpus.df["doc_id"])
        missing = ~qrels.df["doc_id"].isin(doc_ids)
        if missing.any():
            rows = qrels.df[missing]
            n_rel = int((rows["relevance"] > 0).sum())
            n_missing = int(missing.sum())
            relevant = (
                ("relevant: it can never be retrieved" if n_rel else "not relevant")
                if n_missing == 1
                else f"{n_rel} of them relevant: {_verb(n_rel, 'that one', 'those')} can never be retrieved"
            )
            report.add(
                "qrels_doc_not_in_corpus",
                f"{_plural(n_missing, 'judgement')} {_verb(n_missing, 'names', 'name')} a document that is not in the "
                f"corpus ({relevant})",
                file=qrels.source,
                count=n_missing,
                examples=[
                    _pair(q, d) for q, d in zip(rows["query_id"].head(5), rows["doc_id"].head(5), strict=True)
                ],
            )
        for run in runs.values():
            missing = ~run.df["doc_id"].isin(doc_ids)
            if missing.any():
                rows = run.df[missing]
                report.add(
                    "run_doc_not_in_corpus",
                    f"run {run.name!r}: {_plural(int(missing.sum()), 'retrieved document')} {_verb(int(missing.sum()), 'is', 'are')} not in the corpus "
                    "(wrong corpus, or ids written differently)",
                    file=run.source,
                    count=int(missing.sum()),
                    examples=[
                        _pair(q, d)
                        for q, d in zip(rows["query_id"].head(5), rows["doc_id"].head(5), strict=True)
                    ],
                )
    for run in runs.values():
        in_run = pd.Index(pd.unique(run.df["query_id"]))
        absent = golden.difference(in_run, sort=False)
        if len(absent):
            report.add(
                "query_missing_from_run",
                f"run {run.name!r}: {_plural(len(absent), 'golden query', 'golden queries')} "
                f"{_verb(len(absent), 'has', 'have')} no results; {_verb(len(absent), 'it scores', 'they score')} 0 "
                "(like trec_eval -c)",
                file=run.source,
                count=len(absent),
                examples=_ids(absent.tolist()),
            )
        unjudged = in_run.difference(judged, sort=False)
        if len(unjudged):
            report.add(
                "run_query_not_judged",
                f"run {run.name!r}: {_plural(len(unjudged), 'query', 'queries')} {_verb(len(unjudged), 'has', 'have')} "
                f"no judgements in the qrels and {_verb(len(unjudged), 'is', 'are')} ignored by the metrics",
                file=run.source,
                count=len(unjudged),
                examples=_ids(unjudged.tolist()),
            )
        report.stats[f"run:{run.name}:rows"] = len(run.df)
    if queries is not None:
        text = queries.df.set_index("query_id")["text"]
        has_text = text[text.str.strip() != ""].index
        no_text = golden.difference(has_text, sort=False)
        if len(no_text):
            report.add(
                "golden_query_without_text",
                f"{_plural(len(no_text), 'golden query', 'golden queries')} {_verb(len(no_text), 'has', 'have')} no "
                f"text in the queries file; baselines and the failure analysis skip {_verb(len(no_text), 'it', 'them')}",
                file=queries.source,
                count=len(no_text),
                examples=_ids(no_text.tolist()),
            )
