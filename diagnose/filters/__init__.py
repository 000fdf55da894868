"""Metadata filters: per query, which documents its search may return, and what that costs.

- :mod:`.conditions`: the two forms (a field match, ``--filter-field``; a JSON filter per query, ``--filters``) and
  :class:`QueryFilters`, which answers per query and document (the documented subset is there);
- :mod:`.where`: the JSON form's reader and :func:`build_filters`;
- :mod:`.recall`: the filter applied to a run, exact dense search under the filter, recall@k with and without it.

A relevant document the query's filter excludes is a ``filtered_out`` failure (:mod:`diagnose.failures`), whose
remedy, the unfiltered search, is measured by :mod:`diagnose.remedies`.
"""

from __future__ import annotations

from diagnose.filters.conditions import OPERATORS, Condition, QueryFilters, field_filter, value_key
from diagnose.filters.recall import RUNS, FilterRecall, apply_filter, filter_recall, filtered_dense_run
from diagnose.filters.where import build_filters, combine, json_filters

__all__ = [
    "OPERATORS",
    "RUNS",
    "Condition",
    "FilterRecall",
    "QueryFilters",
    "apply_filter",
    "build_filters",
    "combine",
    "field_filter",
    "filter_recall",
    "filtered_dense_run",
    "json_filters",
    "value_key",
]
