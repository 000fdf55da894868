"""Per-query metadata filters: what each query's search may return, in the two documented forms.

**A field match** (``filter_field``, CLI ``--filter-field``): ``FIELD`` (the same field in the query's metadata and the
document's) or ``QUERY_FIELD=DOC_FIELD``. Each query may only return documents whose ``DOC_FIELD`` equals the query's
``QUERY_FIELD`` (``--filter-field tenant``: a query of tenant ``acme`` sees acme's documents). A query without a value
for the field has no filter; those queries are counted (:attr:`QueryFilters.no_filter`), not dropped.

**A JSON filter per query** (``filters``, CLI ``--filters FILE``): an object ``{query_id: {field: condition, ...}}``
in a subset of Chroma's ``where`` language. A condition is one of

=================================  ===========================================================================
``value``                          equal to ``value`` (a string, number or boolean); the same as ``{"$eq": value}``
``{"$eq": value}``                 equal
``{"$ne": value}``                 present and not equal
``{"$in": [value, ...]}``          equal to one of the values (a non-empty list)
``{"$nin": [value, ...]}``         present and equal to none of the values
=================================  ===========================================================================

Several fields of one query are all required (AND). Not supported (refused with the fix): ``$and``/``$or``,
``$gt``/``$gte``/``$lt``/``$lte``, ``$contains``, ``null``, ``NaN`` and infinite values, nested objects, and from
Python a set or a tuple (as a value or a value list: ``$in`` takes a list, whose order and JSON form are defined).
A filters file is a regular UTF-8 file nested at most 100 levels (a filter nests 4). A query absent from the file has no
filter. Field names are the corpus' metadata columns (a BEIR ``metadata.tenant`` is ``tenant``; a vector database's
metadata or payload keys), ``doc_id`` and ``title`` included; ``text`` is not filterable.

Both forms may be given: a query's conditions are then all required. Values compare by type, as Chroma does: the
number 3 matches 3 and 3.0, not the text ``"3"``; ``true`` matches only a boolean. A document without the field
matches no condition, not even ``$ne``/``$nin`` (Chroma's rule). A list value (a Qdrant payload list) compares as a
whole. Errors name the file, the line of the query id, the query, the field and the fix (``DataError``,
``param="filters"`` or ``"filter_field"``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from diagnose.data import Corpus, DataError, Queries
from diagnose.runtime.lazy import pandas as pd

#: The operators of the JSON form.
OPERATORS = ("$eq", "$ne", "$in", "$nin")
_NOT_FILTERABLE = ("text",)
SHOWN = 5  # values of an $in / $nin list a sentence shows


def value_key(value: Any) -> str | None:
    """A metadata value as a comparable key: None for a missing value (None, NaN), else its type and value
    (``"n:3.0"`` for 3 and 3.0, ``"s:3"`` for the text, ``"b:True"``; anything else as JSON, ``"j:[...]"``)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool | np.bool_):
        return f"b:{bool(value)}"
    if isinstance(value, int | float | np.integer | np.floating):
        return None if math.isnan(float(value)) else f"n:{float(value)!r}"
    if isinstance(value, str):
        return f"s:{value}"
    return "j:" + json.dumps(value, sort_keys=True, default=str)


def _shown(key: str | None) -> str:
    """A key for a person: ``'acme'``, ``3``, ``true``, or "no value"."""
    if key is None:
        return "no value"
    kind, text = key[0], key[2:]
    if kind == "s":
        return repr(text)
    if kind == "n":
        return f"{float(text):g}"
    return text.lower() if kind == "b" else text


class Condition(NamedTuple):
    """One condition: the document field, the operator (:data:`OPERATORS`) and the values as keys
    (:func:`value_key`)."""

    field: str
    op: str
    values: tuple[str, ...]

    def text(self) -> str:
        vals = [_shown(v) for v in self.values]
        if self.op in ("$eq", "$ne"):
            return f"{self.field} {'=' if self.op == '$eq' else '≠'} {vals[0]}"
        shown = ", ".join(vals[:SHOWN]) + (f", … ({len(vals):,} values)" if len(vals) > SHOWN else "")
        return f"{self.field} {'in' if self.op == '$in' else 'not in'} [{shown}]"

    def holds(self, keys: np.ndarray) -> np.ndarray:
        """Which documents (their keys of :attr:`field`) meet the condition; a missing value meets none."""
        present = np.array([k is not None for k in keys], dtype=bool)
        inside = np.isin(keys, np.array(self.values, dtype=object))
        return present & (inside if self.op in ("$eq", "$in") else ~inside)


@dataclass(frozen=True)
class QueryFilters:
    """Every query's filter over one corpus: ``conditions`` (query id -> its conditions, all required), ``source``
    (the form as given, e.g. ``"query.tenant = doc.tenant"`` or the file), ``no_filter`` (queries of a field match
    without a value: searched unfiltered). :meth:`mask` / :meth:`excludes` answer per query and document."""

    conditions: Mapping[str, tuple[Condition, ...]]
    source: str
    doc_row: Mapping[str, int] = field(repr=False)
    doc_keys: Mapping[str, np.ndarray] = field(repr=False)  # field -> key per corpus row
    no_filter: tuple[str, ...] = ()
    _masks: dict = field(default_factory=dict, repr=False, compare=False)

    def mask(self, query_id: str) -> np.ndarray | None:
        """The documents (corpus rows) the query's search may return, or None when the query has no filter."""
        conds = self.conditions.get(query_id)
        if not conds:
            return None
        if conds not in self._masks:
            ok = np.ones(len(self.doc_row), dtype=bool)
            for c in conds:
                ok &= c.holds(self.doc_keys[c.field])
            self._masks[conds] = ok
        return self._masks[conds]

    def excludes(self, query_id: str, doc_id: str) -> bool:
        """Whether the query's filter keeps ``doc_id`` out (a document not in the corpus has no metadata: out)."""
        m = self.mask(query_id)
        if m is None:
            return False
        row = self.doc_row.get(doc_id)
        return row is None or not bool(m[row])

    def why(self, query_id: str, doc_id: str) -> str:
        """The failing conditions with the document's values, e.g. ``"tenant = 'acme' (the document has
        'globex')"``."""
        row = self.doc_row.get(doc_id)
        parts = []
        for c in self.conditions.get(query_id, ()):
            key = self.doc_keys[c.field][row] if row is not None else None
            if row is None or not c.holds(np.array([key], dtype=object))[0]:
                parts.append(f"{c.text()} (the document has {_shown(key)})")
        return "; ".join(parts)

    def text(self, query_id: str) -> str:
        """The query's filter in words, ``""`` without one."""
        return " and ".join(c.text() for c in self.conditions.get(query_id, ()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "filtered_queries": sum(1 for c in self.conditions.values() if c),
            "no_filter": list(self.no_filter),
        }


def doc_keys_of(corpus: Corpus, fields: set[str], param: str, where: str) -> dict[str, np.ndarray]:
    df = corpus.df
    usable = [c for c in df.columns if c not in _NOT_FILTERABLE]
    for f in sorted(fields):
        if f not in usable:
            raise DataError(
                f"{where}: the corpus has no metadata field {f!r}; its fields are {', '.join(map(repr, usable))}. "
                "Name one of them (a BEIR metadata.FIELD is FIELD).",
                param=param,
            )
    return {f: np.array([value_key(v) for v in df[f].tolist()], dtype=object) for f in fields}


def field_filter(spec: str, queries: Queries, corpus: Corpus) -> QueryFilters:
    """The field-match form (module docstring): ``FIELD`` or ``QUERY_FIELD=DOC_FIELD``."""
    q_field, _, d_field = str(spec).partition("=")
    q_field, d_field = q_field.strip(), (d_field or q_field).strip()
    where = f"filter_field {spec!r}"
    if not q_field or not d_field:
        raise DataError(f"{where}: write FIELD or QUERY_FIELD=DOC_FIELD, e.g. tenant.", param="filter_field")
    if queries is None or q_field not in queries.df.columns or q_field in ("query_id", "text"):
        have = [
            c for c in (queries.df.columns if queries is not None else []) if c not in ("query_id", "text")
        ]
        raise DataError(
            f"{where}: the queries have no metadata field {q_field!r} (they have: {', '.join(have) or 'none'}). "
            'Give the queries a metadata object (BEIR queries.jsonl: "metadata": {"tenant": ...}).',
            param="filter_field",
        )
    keys = doc_keys_of(corpus, {d_field}, "filter_field", where)
    conditions, no_filter = {}, []
    for qid, value in zip(queries.df["query_id"], queries.df[q_field].tolist(), strict=True):
        key = value_key(value)
        if key is None:
            no_filter.append(str(qid))
        else:
            conditions[str(qid)] = (Condition(d_field, "$eq", (key,)),)
    source = f"query.{q_field} = doc.{d_field}"
    return QueryFilters(conditions, source, corpus.index_of(), keys, tuple(no_filter))
