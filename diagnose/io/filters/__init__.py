"""Metadata filters as input: per query, which documents its search may return.

- :mod:`.conditions`: the two forms (a field match, ``--filter-field``; a JSON filter per query, ``--filters``) and
  :class:`QueryFilters`, which answers per query and document (the documented subset is there);
- :mod:`.where`: the JSON form's reader and :func:`build_filters`;
- what the filters cost (the filter applied to a run, exact dense search under it, recall@k with and without it) is
  :mod:`diagnose.whatif.filter_recall`.

A relevant document the query's filter excludes is a ``filtered_out`` failure (:mod:`diagnose.failures`), whose
remedy, the unfiltered search, is measured by :mod:`diagnose.whatif.remedies`.
"""

from __future__ import annotations

from diagnose.io.filters.conditions import OPERATORS, Condition, QueryFilters, field_filter, value_key
from diagnose.io.filters.where import build_filters, combine, json_filters

__all__ = [
    "OPERATORS",
    "Condition",
    "QueryFilters",
    "build_filters",
    "combine",
    "field_filter",
    "json_filters",
    "value_key",
]
