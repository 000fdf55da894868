"""The JSON form of the per-query filters (``{query_id: {field: condition}}``, :mod:`.conditions` documents the
subset), both forms combined, and :func:`build_filters`, what :class:`~diagnose.analysis.Analysis` calls."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from diagnose import checks
from diagnose.checks import is_number
from diagnose.data import DataError, Dataset
from diagnose.io.files import read_bytes
from diagnose.io.filters.conditions import (
    OPERATORS,
    Condition,
    QueryFilters,
    doc_keys_of,
    field_filter,
    value_key,
)
from diagnose.io.messages import fatal_error
from diagnose.io.nesting import MAX_JSON_DEPTH, json_depth

_FIX = (
    'Write {"QUERY_ID": {"FIELD": VALUE}} or {"QUERY_ID": {"FIELD": {"$in": [VALUE, ...]}}} '
    "($eq, $ne, $in, $nin; strings, numbers, booleans)."
)
_EXPECTED = "a JSON object of metadata filters per query"


def _line_of(text: str, qid: str) -> str:
    """``", line N"``: the line where the key ``"qid"`` first appears in the file's text, or ``""``."""
    needle = json.dumps(qid) + ":"
    for n, line in enumerate(text.splitlines(), start=1):
        if needle in line.replace('" :', '":'):
            return f", line {n}"
    return ""


def _read(path: str | Path) -> tuple[dict, str, str]:
    """The file's object, its text and its name. DataError (``param="filters"``) for a path that is missing or not a
    regular file (a FIFO, a device: :func:`~diagnose.io.files.read_bytes`), bytes that are not UTF-8 (the line),
    JSON nested deeper than :data:`~diagnose.io.nesting.MAX_JSON_DEPTH` (checked before ``json`` recurses),
    malformed JSON (line, column) and ``NaN``/``Infinity`` (not JSON; a filter value must be comparable)."""
    file = str(path)
    try:
        raw = read_bytes(path, _EXPECTED)
    except DataError as e:
        raise DataError(str(e), param="filters") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise fatal_error(
            file, line, "bytes that are not UTF-8", f"byte 0x{raw[e.start]:02x}", _EXPECTED + " in UTF-8",
            "re-save the file as UTF-8 (a filter value must match the corpus' metadata exactly)", param="filters",
        ) from None  # fmt: skip
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise fatal_error(
            file, None, f"JSON nested {depth:,} levels deep, more than the {MAX_JSON_DEPTH} a filter file may",
            None, _EXPECTED, "write {query_id: {field: condition}} (a filter nests 4 levels)", param="filters",
        )  # fmt: skip
    try:
        data = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as e:
        raise DataError(
            f"{file}, line {e.lineno} column {e.colno}: not valid JSON ({e.msg}). {_FIX}", param="filters"
        ) from None
    except _NotJson as e:
        raise DataError(
            f"{file}{_line_of_token(text, e.args[0])}: {e.args[0]} is not a JSON value (nor a comparable filter "
            f"value). {_FIX}",
            param="filters",
        ) from None
    return data, text, file


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a filters file (Python's ``json`` accepts them; JSON does not)."""


def _not_json(token: str) -> Any:
    raise _NotJson(token)


def _line_of_token(text: str, token: str) -> str:
    """``", line N"``: the first line holding ``token`` outside a string (roughly: anywhere), or ``""``."""
    for n, line in enumerate(text.splitlines(), start=1):
        if token in line:
            return f", line {n}"
    return ""


def _shown(value: Any) -> str:
    """A value for a message: its JSON for JSON types, else its repr (a set, a tuple, NaN); cut at 80 characters."""
    try:
        text = json.dumps(value, allow_nan=False) if isinstance(value, str | list | dict) else repr(value)
    except (TypeError, ValueError, RecursionError):
        text = f"a {type(value).__name__} that is not JSON"
    return text if len(text) <= 80 else text[:79] + "…"


def _scalar(value: Any, where: str) -> str:
    """A filter value: a string, a boolean or a finite number (numpy's too); anything else (a list, an object,
    null, NaN, a Python set or tuple, whose order or JSON form is not defined) is refused naming ``where``."""
    ok = isinstance(value, str | bool | np.bool_) or (is_number(value) and math.isfinite(float(value)))
    if not ok:
        what = (
            "NaN or infinite (never equal to anything)"
            if is_number(value)
            else f"a {type(value).__name__}" if not isinstance(value, dict | list) and value is not None
            else "not a string, number or boolean"
        )  # fmt: skip
        raise DataError(f"{where}: {_shown(value)} is {what}. {_FIX}", param="filters")
    return value_key(value)


def _condition(fld: str, spec: Any, where: str) -> Condition:
    """One ``field: condition`` of the JSON form."""
    if not isinstance(spec, dict):
        return Condition(fld, "$eq", (_scalar(spec, where),))
    if len(spec) != 1 or next(iter(spec)) not in OPERATORS:
        raise DataError(
            f"{where}: {_shown(spec)} is not a supported condition (one operator of "
            f"{', '.join(OPERATORS)}; $and, $or, $gt, $lt, $contains are not supported). {_FIX}",
            param="filters",
        )
    op, arg = next(iter(spec.items()))
    if op in ("$in", "$nin"):
        if not isinstance(arg, list) or not arg:
            got = f" (got a {type(arg).__name__}: a list keeps the order and is JSON)" if arg else ""
            raise DataError(f"{where}: {op} needs a non-empty list of values{got}. {_FIX}", param="filters")
        return Condition(fld, op, tuple(_scalar(v, where) for v in arg))
    return Condition(fld, op, (_scalar(arg, where),))


def json_filters(source: str | Path | Mapping, dataset: Dataset) -> QueryFilters:
    """The JSON form: a file or a mapping ``{query_id: {field: condition}}``; DataError naming the file, the line of
    the query, the query id and the fix for malformed JSON, a query id not among the queries, an unsupported
    condition and a field the corpus does not have."""
    if isinstance(source, Mapping):
        data, text, name = dict(source), "", "filters"
    else:
        what = "a JSON filters file or a dict {query_id: {field: condition}}"
        data, text, name = _read(checks.path(source, "filters", what=what))
    if not isinstance(data, dict):
        raise DataError(
            f"{name}: the filters must be a JSON object keyed by query id. {_FIX}", param="filters"
        )
    known = set(dataset.queries.df["query_id"]) if dataset.queries is not None else set()
    conditions: dict[str, tuple[Condition, ...]] = {}
    for qid, fields in data.items():
        where = f"{name}{_line_of(text, qid)}, query {qid!r}"
        if qid not in known:
            raise DataError(
                f"{where}: no query has this id ({len(known):,} queries loaded). Use the ids of the queries file.",
                param="filters",
            )
        if not isinstance(fields, dict):
            raise DataError(f"{where}: expected an object of field conditions. {_FIX}", param="filters")
        conditions[qid] = tuple(_condition(f, c, f"{where}, field {f!r}") for f, c in fields.items())
    used = {c.field for conds in conditions.values() for c in conds}
    keys = doc_keys_of(dataset.corpus, used, "filters", name)
    return QueryFilters(conditions, name, dataset.corpus.index_of(), keys)


def combine(a: QueryFilters, b: QueryFilters) -> QueryFilters:
    """Both filters: a query's conditions are all of ``a``'s and ``b``'s."""
    ids = list(dict.fromkeys([*a.conditions, *b.conditions]))
    conditions = {q: a.conditions.get(q, ()) + b.conditions.get(q, ()) for q in ids}
    no_filter = tuple(q for q in a.no_filter if q not in conditions or not conditions[q])
    return QueryFilters(
        conditions, f"{a.source} and {b.source}", a.doc_row, {**a.doc_keys, **b.doc_keys}, no_filter
    )


def build_filters(
    dataset: Dataset, filter_field: str | None = None, filters: str | Path | Mapping | None = None
) -> QueryFilters | None:
    """The per-query filters of ``filter_field`` and/or ``filters`` over the data set (None when neither is given);
    needs the corpus (its metadata) and the queries."""
    if filter_field is None and filters is None:
        return None
    if dataset.corpus is None or dataset.queries is None:
        raise DataError(
            "A metadata filter needs the corpus (its metadata) and the queries: load them with the data.",
            param="filter_field" if filter_field is not None else "filters",
        )
    parts = []
    if filter_field is not None:
        parts.append(field_filter(filter_field, dataset.queries, dataset.corpus))
    if filters is not None:
        parts.append(json_filters(filters, dataset))
    return parts[0] if len(parts) == 1 else combine(*parts)
