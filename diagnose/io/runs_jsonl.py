"""JSONL runs for :func:`diagnose.io.runs.read_run`: one object per query, ``{"query_id": .., "results": [{"doc_id":
.., "score": ..}, ..]}`` or ``{"query_id": .., "doc_ids": [..]}``. The lists keep their order (no score: the order is
the ranking); a query on several lines keeps its first line (warning)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from diagnose.data import Run, ValidationReport
from diagnose.io.formats import JSON_D_KEYS
from diagnose.io.messages import fatal_error, key_list, plural_of, show_id, snip, verb
from diagnose.io.run_order import run_from_lists
from diagnose.io.text import is_number, json_key, json_query_lines, json_text, number_text

_EXPECTED = (
    'one JSON object per line: {"query_id": .., "results": [{"doc_id": .., "score": ..}, ..]} or '
    '{"query_id": .., "doc_ids": [..]}'
)


def read_run_jsonl(raw: bytes, file: str, name: str, report: ValidationReport) -> Run:
    qs: list[str] = []
    ds: list[str] = []
    ss: list[float] = []
    seen: dict[str, int] = {}
    repeated: list[str] = []
    for lineno, line, obj, qid in json_query_lines(raw, file, _EXPECTED, "wrap the line in an object"):
        docs, scores = _json_ranked_list(obj, line, lineno, qid, file)
        if qid in seen:
            repeated.append(f"{show_id(qid)} (lines {seen[qid]} and {lineno})")
            continue
        seen[qid] = lineno
        qs.extend([qid] * len(docs))
        ds.extend(docs)
        ss.extend(scores)
    if repeated:
        report.add(
            "repeated_query_in_run",
            f"run {name!r}: {plural_of(len(repeated), 'query', 'queries')} {verb(len(repeated), 'appears', 'appear')} on more than one line; the first "
            "line is kept and the later lines are ignored",
            file=file,
            count=len(repeated),
            examples=repeated,
        )
    order = np.arange(len(qs), dtype=np.int64)
    return run_from_lists(name, file, (qs, ds, ss), report, what="results", order=order)


def _json_ranked_list(
    obj: dict[str, Any], line: bytes, lineno: int, qid: str, file: str
) -> tuple[list[str], list[float]]:
    """The doc ids and scores of one query's line (``results`` or ``doc_ids``; no scores: minus the positions)."""
    if "results" in obj:
        items = obj["results"]
        if not isinstance(items, list):
            raise fatal_error(
                file,
                lineno,
                '"results" is not a list',
                snip(line),
                _EXPECTED,
                "make it a list of {doc_id, score} objects",
            )
        return _json_results(items, file, lineno)
    if "doc_ids" in obj:
        items = obj["doc_ids"]
        if not isinstance(items, list) or not all(
            isinstance(x, str | int) and not isinstance(x, bool) for x in items
        ):
            raise fatal_error(
                file,
                lineno,
                '"doc_ids" is not a list of ids',
                snip(line),
                _EXPECTED,
                "make it a list of strings",
            )
        docs = [str(x).strip() for x in items]
        return docs, [-float(i) for i in range(1, len(docs) + 1)]
    raise fatal_error(
        file,
        lineno,
        f'query {show_id(qid)!r} has no "results" or "doc_ids" list (keys seen: {key_list(obj)})',
        None,
        _EXPECTED,
        'add "results": [{"doc_id": .., "score": ..}, ..] or "doc_ids": [..]',
    )


def _int_fits_float(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _json_results(items: list, file: str, lineno: int) -> tuple[list[str], list[float]]:
    docs: list[str] = []
    scores: list[float | None] = []
    for pos, item in enumerate(items, start=1):
        if isinstance(item, dict):
            doc = json_key(item, JSON_D_KEYS)
            score = item.get("score")
        else:
            doc, score = None, None
        if doc is None:
            raise fatal_error(
                file,
                lineno,
                f"result #{pos} has no doc id",
                snip(json_text(item)),
                _EXPECTED,
                'give each result a "doc_id"',
            )
        docs.append(str(doc).strip())
        scores.append(None if score is None else _json_score(score, pos, doc, file, lineno))
    have = [s is not None for s in scores]
    if all(have):
        return docs, scores  # type: ignore[return-value]
    if any(have):
        missing = have.index(False) + 1
        raise fatal_error(
            file,
            lineno,
            f"some results have a score and others not (result #{missing})",
            None,
            _EXPECTED,
            "give every result a score, or none",
        )
    return docs, [-float(i) for i in range(1, len(docs) + 1)]


def _json_score(score: Any, pos: int, doc: Any, file: str, lineno: int) -> float:
    """The JSON score of result ``pos`` as a float; fatal when not a number, too large for a float, or not finite."""
    if not is_number(score):
        raise fatal_error(
            file,
            lineno,
            f"result #{pos} ({show_id(str(doc))}) has a score that is not a number",
            snip(json_text(score)),
            _EXPECTED,
            "write the score as a JSON number",
        )
    if isinstance(score, int) and not _int_fits_float(score):
        raise fatal_error(
            file,
            lineno,
            f"result #{pos} ({show_id(str(doc))}) has a score too large for a 64-bit float: "
            f"{number_text(json_text(score))}",
            None,
            _EXPECTED + " with finite scores (at most about 1.8e308)",
            "rescale the scores, or write them as floats",
        )
    if not math.isfinite(score):
        raise fatal_error(
            file,
            lineno,
            f"result #{pos} ({show_id(str(doc))}) has score {score}, which cannot be ordered",
            None,
            _EXPECTED + " with finite scores",
            "fix the retriever output (a NaN usually means a zero-norm embedding)",
        )
    return float(score)
