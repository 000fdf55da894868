"""Golden sets as RAG teams keep them: questions with reference contexts (the passages that answer them), read by
:func:`read_golden_set` after :func:`golden_kind` recognised the file. The contexts are located in the corpus by
:mod:`diagnose.io.spans`; :func:`diagnose.io.read_qrels` and :func:`diagnose.io.load_dataset` dispatch here.

Formats (sniffed from the file's suffix and first bytes):

- ``labelled_rag``: LlamaIndex ``LabelledRagDataset.save_json``: ``{"examples": [{"query", "reference_contexts",
  "reference_answer", ...}]}``;
- ``embedding_qa``: LlamaIndex ``EmbeddingQAFinetuneDataset.save_json``: ``{"queries": {id: text}, "corpus":
  {id: text}, "relevant_docs": {query id: [doc id, ...]}}``: queries, corpus and id-based judgements in one file;
- ``ragas``: a RAGAS test set / evaluation dataset (``to_jsonl``, ``to_csv``, ``to_parquet``): ``user_input``,
  ``reference_contexts`` (a list; in CSV the list as text), ``reference``;
- ``jsonl``: ``{"query_id", "query", "reference_contexts": [..], "reference_answer"}`` per line;
- ``spans``: the spans ``--write-qrels F`` wrote beside ``F`` (``F.spans.jsonl``, :func:`diagnose.io.spans.write_spans`):
  ``{"query_id", "reference", "doc_id", "start", "end", "match", "score"}`` per line, read back as they are (no
  matching again; the queries come from the queries file or the data folder).

Query ids: the file's (``query_id``/``id`` key or column, ``embedding_qa``'s keys), else ``q1``, ``q2``, ... by
position of the example (1-based).
"""

from __future__ import annotations

import ast
import gzip
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.data import DataError, Span, ValidationReport
from diagnose.io.decoding import clean_utf8
from diagnose.io.files import PathLike, check_input_path, max_input_bytes, read_bytes, suffixes
from diagnose.io.messages import fatal_error, plural_of, snip
from diagnose.io.nesting import MAX_JSON_DEPTH, check_json_depth, json_depth
from diagnose.runtime.lazy import pandas as pd

GOLDEN_FORMATS = (
    'a LlamaIndex LabelledRagDataset JSON {"examples": [{"query", "reference_contexts", "reference_answer"}]}, '
    'a LlamaIndex EmbeddingQAFinetuneDataset JSON {"queries", "corpus", "relevant_docs"}, a RAGAS test set '
    "(JSONL, CSV or Parquet with user_input, reference_contexts, reference), or JSONL "
    '{"query_id", "query", "reference_contexts": [..], "reference_answer"}'
)
_TEXT_KEYS = ("query", "user_input", "question")
_ID_KEYS = ("query_id", "id", "qid")
_HEAD = 1 << 16


@dataclass(frozen=True)
class GoldenSet:
    """A golden set as read: ``queries`` (``query_id``, ``text``), ``references`` ``(query_id, index, text)``
    (contexts to locate in the corpus), and for ``embedding_qa`` its own ``corpus`` (``doc_id``, ``title``,
    ``text``) and id-based ``judgements`` (``query_id``, ``doc_id``)."""

    kind: str
    source: str
    queries: pd.DataFrame
    references: list[tuple[str, int, str]] = field(default_factory=list)
    corpus: pd.DataFrame | None = None
    judgements: pd.DataFrame | None = None
    spans: tuple[Span, ...] | None = None  # ``spans``: located already (no query texts in the file)


def _head(path: PathLike) -> bytes:
    """The file's start up to the end of its first non-blank line, however long that line is (decompressed when
    gzip, BOM dropped; at most the input limit); b"" when it cannot be read (the reader reports)."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gz else open(path, "rb") as f:
            raw, limit = b"", max_input_bytes()
            while len(raw) <= limit:
                piece = f.read(_HEAD)
                raw += piece
                if not piece or b"\n" in raw.lstrip():
                    break
    except (OSError, EOFError, gzip.BadGzipFile):
        return b""
    return raw.removeprefix(b"\xef\xbb\xbf")


def _whole_object_keys(path: PathLike) -> set[str]:
    """The top-level keys of a JSON object spread over several lines (a pretty-printed file), read whole: the format
    is judged from the structure, never from a byte budget. Nesting deeper than :data:`MAX_JSON_DEPTH` raises naming
    it; a file that is no JSON object gives no keys."""
    try:
        raw = read_bytes(path, GOLDEN_FORMATS).removeprefix(b"\xef\xbb\xbf")
    except DataError:
        return set()
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth(raw) > MAX_JSON_DEPTH:
        raise _too_deep(str(path))
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        return set()
    return set(obj) if isinstance(obj, dict) else set()


def _too_deep(file: str) -> DataError:
    return fatal_error(
        file,
        None,
        f"JSON nested more than {MAX_JSON_DEPTH} levels deep",
        None,
        GOLDEN_FORMATS + " or a qrels file",
        f"flatten the file (at most {MAX_JSON_DEPTH} levels of arrays and objects)",
        param="qrels",
    )


def golden_kind(path: PathLike) -> str | None:
    """The golden-set format of ``path`` (see the module docstring), or None for any other file (id-based qrels).
    JSON is judged from its first line parsed whole (however long), else from the top-level keys of the whole file
    (a pretty-printed object). A line or file nested deeper than :data:`MAX_JSON_DEPTH` raises a DataError."""
    suffix = suffixes(Path(path))
    if suffix == ".parquet":
        return "ragas"
    head = _head(path)
    if suffix in (".csv", ".tsv"):
        first = head.split(b"\n", 1)[0].lower()
        return "ragas" if b"user_input" in first or b"reference_contexts" in first else None
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    line = text.split(b"\n", 1)[0]
    check_json_depth(line, str(path), GOLDEN_FORMATS + " or a qrels file")
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # a pretty-printed object: judge from its keys
        first = None
    if isinstance(first, dict) and first.keys() >= _SPAN_KEYS:
        return "spans"
    if isinstance(first, dict) and "reference_contexts" in first:
        return "ragas" if "user_input" in first and "query" not in first else "jsonl"
    keys = first.keys() if isinstance(first, dict) else _whole_object_keys(path)
    if "examples" in keys:
        return "labelled_rag"
    if "relevant_docs" in keys:
        return "embedding_qa"
    return None


def read_golden_set(path: PathLike, kind: str, *, report: ValidationReport | None = None) -> GoldenSet:
    """Read the golden set ``path`` of format ``kind`` (from :func:`golden_kind`). Problems a user can fix raise a
    DataError naming the file, the example (line or position) and the fix."""
    report = report if report is not None else ValidationReport()
    file = str(path)
    check_input_path(path, GOLDEN_FORMATS)
    if kind == "ragas" and suffixes(Path(path)) in (".parquet", ".csv", ".tsv"):
        rows = _table_rows(path, file, report)
    elif kind == "spans":
        return _spans(_jsonl_rows(_text_bytes(path, file, report), file), file)
    elif kind in ("ragas", "jsonl"):
        rows = _jsonl_rows(_text_bytes(path, file, report), file)
    else:
        obj = _json_object(_text_bytes(path, file, report), file)
        if kind == "embedding_qa":
            return _embedding_qa(obj, file, report)
        rows = _examples(obj, file)
    return _from_rows(rows, kind, file, report)


def _text_bytes(path: PathLike, file: str, report: ValidationReport) -> bytes:
    """The file's bytes, its lines that are not UTF-8 decoded with U+FFFD replacements and counted (``non_utf8``)."""
    return bytes(clean_utf8(read_bytes(path, GOLDEN_FORMATS), file, report))


_SPAN_KEYS = frozenset({"query_id", "reference", "doc_id", "start", "end", "match"})
_SPANS_FORMAT = 'one span per line: {"query_id", "reference", "doc_id", "start", "end", "match", "score"}'


def _spans(rows: list[tuple[str, Any]], file: str) -> GoldenSet:
    """The spans of a ``.spans.jsonl`` file as written (module docstring), each checked: a line that is not one
    raises naming it."""
    spans: list[Span] = []
    for where, row in rows:
        try:
            if not isinstance(row, dict) or not row.keys() >= _SPAN_KEYS:
                raise ValueError(f"expected the keys {', '.join(sorted(_SPAN_KEYS))}")
            start, end, doc = row["start"], row["end"], row["doc_id"]
            located = doc is not None
            if located != (start is not None) or located != (end is not None):
                raise ValueError("doc_id, start and end are all null (unmatched) or all given")
            # a JSON true is a Python bool, an int subclass: refused, not read as offset 1
            ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
            if located and not (ints and 0 <= start <= end):
                raise ValueError(f"start {start!r} and end {end!r} must be integers with 0 <= start <= end")
            doc = None if doc is None else str(doc)
            score = float(row.get("score", 100.0))
            spans.append(
                Span(str(row["query_id"]), int(row["reference"]), doc, start, end, str(row["match"]), score)
            )
        except (ValueError, TypeError) as e:
            raise fatal_error(
                *_place(file, where), f"not a span ({e})", snip(json.dumps(row)), _SPANS_FORMAT,
                "write the spans again with --write-qrels, or fix the line",
            ) from None  # fmt: skip
    qids = list(dict.fromkeys(s.query_id for s in spans))
    return GoldenSet(
        "spans", file, pd.DataFrame({"query_id": qids, "text": [""] * len(qids)}), spans=tuple(spans)
    )


def _json_object(raw: bytes, file: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise fatal_error(
            file, None, f"invalid JSON ({e})", None, GOLDEN_FORMATS, "fix the JSON (or re-save it)"
        ) from None
    if not isinstance(obj, dict):
        raise fatal_error(
            file,
            None,
            f"a JSON {type(obj).__name__}, not an object",
            None,
            GOLDEN_FORMATS,
            "save the dataset with its save_json",
        )
    return obj


def _examples(obj: dict[str, Any], file: str) -> list[tuple[str, Any]]:
    examples = obj.get("examples")
    if not isinstance(examples, list):
        raise fatal_error(
            file,
            None,
            '"examples" is not a list',
            None,
            GOLDEN_FORMATS,
            "save the dataset with LabelledRagDataset.save_json",
        )
    return [(f"example {i}", ex) for i, ex in enumerate(examples, start=1)]


def _jsonl_rows(raw: bytes, file: str) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {lineno}", json.loads(line)))
        except (ValueError, RecursionError) as e:
            raise fatal_error(
                file,
                lineno,
                f"invalid JSON ({e})",
                snip(line),
                GOLDEN_FORMATS,
                "write one JSON object per line",
            ) from None
    return rows


def _table_rows(path: PathLike, file: str, report: ValidationReport) -> list[tuple[str, Any]]:
    """The rows of a RAGAS CSV or Parquet test set, as dicts (a CSV's list column parsed by :func:`_as_list`)."""
    try:
        if suffixes(Path(path)) == ".parquet":
            df = pd.read_parquet(io.BytesIO(read_bytes(path, GOLDEN_FORMATS)))
        else:
            sep = "\t" if suffixes(Path(path)) == ".tsv" else ","
            df = pd.read_csv(
                io.BytesIO(_text_bytes(path, file, report)), sep=sep, dtype=str, keep_default_na=False
            )
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - any parse failure of a user file becomes a DataError
        raise fatal_error(
            file,
            None,
            f"cannot read the table ({type(e).__name__}: {e})",
            None,
            GOLDEN_FORMATS,
            "re-save it with RAGAS' to_csv / to_parquet",
        ) from None
    first = 1 if suffixes(Path(path)) == ".parquet" else 2  # a CSV's header is line 1: its rows start at 2
    return [(f"row {i + first}", rec) for i, rec in enumerate(df.to_dict("records"))]


def _as_list(value: Any, table: bool) -> Any:
    """A reference_contexts value as a list: a list/array as is; in a table (``table``), a CSV cell
    ``"['a', 'b']"`` or ``'["a"]'`` parsed, another text as one context."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        return value.tolist()
    if not table:
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        for parse in (json.loads, ast.literal_eval):
            try:
                return parse(value)
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                continue
    return [value] if isinstance(value, str) and value.strip() else value


def _from_rows(rows: list[tuple[str, Any]], kind: str, file: str, report: ValidationReport) -> GoldenSet:
    """Queries and references from ``(where, example)`` pairs; a row without question text or with contexts that
    are not a list of strings is fatal, naming it."""
    ids: list[str] = []
    texts: list[str] = []
    refs: list[tuple[str, int, str]] = []
    no_refs: list[str] = []
    empty = 0
    for pos, (where, ex) in enumerate(rows, start=1):
        place, line = _place(file, where)
        if not isinstance(ex, dict):
            raise fatal_error(
                place,
                line,
                f"a {type(ex).__name__}, not an object",
                None,
                GOLDEN_FORMATS,
                "write one object per example",
            )
        text = next((ex[k] for k in _TEXT_KEYS if isinstance(ex.get(k), str) and ex[k].strip()), None)
        if text is None:
            raise fatal_error(
                place,
                line,
                f"no question text (keys seen: {', '.join(map(str, ex))})",
                None,
                GOLDEN_FORMATS,
                'give each example its "query" (or "user_input")',
            )
        qid = next((str(ex[k]).strip() for k in _ID_KEYS if ex.get(k) not in (None, "")), f"q{pos}")
        contexts = _as_list(ex.get("reference_contexts"), where.startswith("row"))
        if contexts is None or contexts == []:
            no_refs.append(qid)
            contexts = []
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise fatal_error(
                place,
                line,
                f"reference_contexts of query {qid!r} is not a list of strings",
                snip(str(contexts)),
                GOLDEN_FORMATS,
                "write the contexts as a list of strings",
            )
        ids.append(qid)
        texts.append(text.strip())
        for i, c in enumerate(contexts):
            if c.strip():
                refs.append((qid, i, c))
            else:
                empty += 1
    _check_ids(ids, file)
    _report_missing(report, file, no_refs, empty)
    report.stats["golden_set_format"] = kind
    report.stats["golden_references"] = len(refs)
    queries = pd.DataFrame({"query_id": pd.Series(ids, dtype="str"), "text": texts})
    return GoldenSet(kind, file, queries, refs)


def _place(file: str, where: str) -> tuple[str, int | None]:
    """``(file, line)`` for :func:`fatal_error`: a JSONL line number as the line, an example or row named beside the file."""
    kind, _, n = where.partition(" ")
    return (file, int(n)) if kind == "line" else (f"{file} ({where})", None)


def _check_ids(ids: list[str], file: str) -> None:
    dup = pd.Series(ids)[pd.Series(ids).duplicated()].tolist()
    if dup:
        raise fatal_error(
            file,
            None,
            f"{plural_of(len(dup), 'query id')} used twice, e.g. {dup[0]!r}",
            None,
            GOLDEN_FORMATS,
            "give each question its own query_id (or drop the ids: q1, q2, ... are given by position)",
        )


def _report_missing(report: ValidationReport, file: str, no_refs: list[str], empty: int) -> None:
    report.add(
        "query_without_reference",
        f"{plural_of(len(no_refs), 'question')} without reference contexts: not judged (left out of the metrics)",
        file=file,
        count=len(no_refs),
        examples=no_refs,
    )
    report.add(
        "empty_reference", f"{plural_of(empty, 'empty reference context')} ignored", file=file, count=empty
    )


def _embedding_qa(obj: dict[str, Any], file: str, report: ValidationReport) -> GoldenSet:
    """An EmbeddingQAFinetuneDataset: its queries, its corpus and its id-based judgements (grade 1)."""
    parts = {k: obj.get(k) for k in ("queries", "corpus", "relevant_docs")}
    for key, value in parts.items():
        if not isinstance(value, dict):
            raise fatal_error(
                file,
                None,
                f'"{key}" is not an object',
                None,
                GOLDEN_FORMATS,
                "save the dataset with EmbeddingQAFinetuneDataset.save_json",
            )
    queries = pd.DataFrame(
        {
            "query_id": pd.Series(list(parts["queries"]), dtype="str"),
            "text": ["" if t is None else str(t) for t in parts["queries"].values()],
        }
    )
    corpus = pd.DataFrame(
        {
            "doc_id": pd.Series(list(parts["corpus"]), dtype="str"),
            "title": "",
            "text": ["" if t is None else str(t) for t in parts["corpus"].values()],
        }
    )
    qs: list[str] = []
    ds: list[str] = []
    for qid, docs in parts["relevant_docs"].items():
        if not isinstance(docs, list):
            raise fatal_error(
                file,
                None,
                f"relevant_docs[{qid!r}] is not a list of doc ids",
                snip(str(docs)),
                GOLDEN_FORMATS,
                "write each query's relevant node ids as a list",
            )
        for d in docs:
            qs.append(str(qid))
            ds.append(str(d))
    report.stats["golden_set_format"] = "embedding_qa"
    judgements = pd.DataFrame({"query_id": pd.Series(qs, dtype="str"), "doc_id": pd.Series(ds, dtype="str")})
    return GoldenSet("embedding_qa", file, queries, corpus=corpus, judgements=judgements)
