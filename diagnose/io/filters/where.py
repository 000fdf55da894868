"""The JSON form of the per-query filters (``{query_id: {field: condition}}``, :mod:`.conditions` documents the
subset), both forms combined, and :func:`build_filters`, what :class:`~diagnose.analysis.Analysis` calls."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from diagnose.data import DataError, Dataset
from diagnose.io.filters.conditions import (
    OPERATORS,
    Condition,
    QueryFilters,
    doc_keys_of,
    field_filter,
    value_key,
)

_FIX = (
    'Write {"QUERY_ID": {"FIELD": VALUE}} or {"QUERY_ID": {"FIELD": {"$in": [VALUE, ...]}}} '
    "($eq, $ne, $in, $nin; strings, numbers, booleans)."
)


def _line_of(text: str, qid: str) -> str:
    """``", line N"``: the line where the key ``"qid"`` first appears in the file's text, or ``""``."""
    needle = json.dumps(qid) + ":"
    for n, line in enumerate(text.splitlines(), start=1):
        if needle in line.replace('" :', '":'):
            return f", line {n}"
    return ""


def _read(path: str | Path) -> tuple[dict, str, str]:
    """The file's object, its text and its name; DataError for a missing file or malformed JSON (line, column)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"filters file {p} not found. {_FIX}", param="filters")
    text = p.read_text(encoding="utf-8-sig")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(
            f"{p}, line {e.lineno} column {e.colno}: not valid JSON ({e.msg}). {_FIX}", param="filters"
        ) from None
    return data, text, str(p)


def _scalar(value: Any, where: str) -> str:
    if isinstance(value, dict | list) or value is None:
        raise DataError(
            f"{where}: {json.dumps(value)} is not a string, number or boolean. {_FIX}", param="filters"
        )
    return value_key(value)


def _condition(fld: str, spec: Any, where: str) -> Condition:
    """One ``field: condition`` of the JSON form."""
    if not isinstance(spec, dict):
        return Condition(fld, "$eq", (_scalar(spec, where),))
    if len(spec) != 1 or next(iter(spec)) not in OPERATORS:
        raise DataError(
            f"{where}: {json.dumps(spec)} is not a supported condition (one operator of "
            f"{', '.join(OPERATORS)}; $and, $or, $gt, $lt, $contains are not supported). {_FIX}",
            param="filters",
        )
    op, arg = next(iter(spec.items()))
    if op in ("$in", "$nin"):
        if not isinstance(arg, list) or not arg:
            raise DataError(f"{where}: {op} needs a non-empty list of values. {_FIX}", param="filters")
        return Condition(fld, op, tuple(_scalar(v, where) for v in arg))
    return Condition(fld, op, (_scalar(arg, where),))


def json_filters(source: str | Path | Mapping, dataset: Dataset) -> QueryFilters:
    """The JSON form: a file or a mapping ``{query_id: {field: condition}}``; DataError naming the file, the line of
    the query, the query id and the fix for malformed JSON, a query id not among the queries, an unsupported
    condition and a field the corpus does not have."""
    if isinstance(source, Mapping):
        data, text, name = dict(source), "", "filters"
    else:
        data, text, name = _read(source)
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
