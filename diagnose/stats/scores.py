"""Per-query scores in: one finite value per golden query, two runs aligned on query id (or by position), the
differences ``b - a`` with float noise (``|d| <= ZERO_TOL``) set to 0, and the checks every test shares. Nothing is
dropped silently: a mismatch raises :class:`~diagnose.data.DataError` naming the ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from diagnose.checks import finite_number, positive_int
from diagnose.data import DataError
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    import pandas

Scores: TypeAlias = (
    "ArrayLike | pandas.Series"  # a string: pandas is imported on first use (diagnose.runtime.lazy)
)
ZERO_TOL = 1e-12
"""Per-query differences with ``|b - a| <= ZERO_TOL`` are treated as exact ties (float rounding noise)."""
CHUNK_ELEMENTS = 1 << 20  # resampled values held in memory at once (8 MB of float64 / int64)


def _examples(ids: Sequence[Any], k: int = 5) -> str:
    shown = ", ".join(repr(str(i)) for i in list(ids)[:k])
    return shown + (f" (and {len(ids) - k} more)" if len(ids) > k else "")


def score_values(x: Scores, what: str) -> np.ndarray:
    """One run's scores as a finite float64 1-D array."""
    if isinstance(x, pd.DataFrame):
        raise DataError(
            f"{what}: got a table with columns {list(x.columns)}; pass one metric column (df[metric])."
        )
    try:
        arr = np.asarray(x.to_numpy() if isinstance(x, pd.Series) else x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what}: per-query scores must be numbers ({exc}).") from None
    if arr.ndim != 1:
        raise DataError(f"{what}: per-query scores must be 1-D (one value per query), got shape {arr.shape}.")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = x.index[bad] if isinstance(x, pd.Series) else np.flatnonzero(bad)
        label = "query ids" if isinstance(x, pd.Series) else "positions"
        raise DataError(
            f"{what}: score is NaN or infinite for {int(bad.sum())} queries ({label} {_examples(list(where))}). "
            "Every golden query needs a score; a query the run did not answer scores 0 "
            "(that is what diagnose.metrics.evaluate does)."
        )
    return arr


def paired_scores(a: Scores, b: Scores, what: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    """Align two runs' per-query scores: Series on their query-id index, anything else by position."""
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        for s, side in ((a, "reference"), (b, "run")):
            dup = s.index[s.index.duplicated()]
            if len(dup):
                raise DataError(
                    f"{what}: query ids repeat in the {side} scores: {_examples(list(dup.unique()))}."
                )
        if not a.index.equals(b.index):
            only_a = a.index.difference(b.index)
            only_b = b.index.difference(a.index)
            if len(only_a) or len(only_b):
                msg = f"{what}: the two runs were scored on different queries"
                if len(only_a):
                    msg += f"; only in the reference: {_examples(list(only_a))}"
                if len(only_b):
                    msg += f"; only in the run: {_examples(list(only_b))}"
                raise DataError(
                    msg + ". Evaluate both runs against the same qrels so every golden query has a score."
                )
            b = b.reindex(a.index)
    av, bv = score_values(a, f"{what} (reference)"), score_values(b, f"{what} (run)")
    if av.shape != bv.shape:
        raise DataError(
            f"{what}: the runs have {av.size} and {bv.size} per-query scores; paired tests need one score per "
            "query for both runs, in the same order (or pass pandas Series indexed by query id)."
        )
    if av.size == 0:
        raise DataError(f"{what}: no queries to compare (the per-query scores are empty).")
    return av, bv


def diffs(a: Scores, b: Scores, what: str = "scores") -> np.ndarray:
    """Per-query ``b - a``, with float-noise differences (``|d| <= ZERO_TOL``) set to exactly 0."""
    av, bv = paired_scores(a, b, what)
    d = bv - av
    d[np.abs(d) <= ZERO_TOL] = 0.0
    return d


def diffs_or_values(a: Scores, b: Scores | None, what: str) -> np.ndarray:
    """:func:`diffs` of ``(a, b)``, or ``a`` itself taken as the differences when ``b`` is None."""
    return diffs(a, b, what) if b is not None else score_values(a, what)


def check_fraction(value: float, name: str) -> float:
    return finite_number(
        value,
        name,
        low=0.0,
        high=1.0,
        open_low=True,
        open_high=True,
        message=f"{name} must be strictly between 0 and 1, got {{value!r}}.",
    )


def check_resamples(n_resamples: int) -> int:
    return positive_int(n_resamples, "n_resamples")


def metric_scores(table: Any, metric: str, name: str) -> pd.Series:
    """``metric`` column of one run's per-query table (DataFrame, mapping of Series, or an Evaluation)."""
    if hasattr(table, "per_query") and not isinstance(table, pd.DataFrame | Mapping):
        table = table.per_query
    if isinstance(table, pd.Series):
        return table
    if isinstance(table, pd.DataFrame):
        columns = list(table.columns)
    elif isinstance(table, Mapping):
        columns = list(table.keys())
    else:
        raise DataError(
            f"run {name!r}: expected per-query scores as a DataFrame (columns = metrics) or a mapping "
            f"metric -> Series, got {type(table).__name__}."
        )
    if metric not in columns:
        raise DataError(f"run {name!r} has no per-query scores for metric {metric!r}; it has {columns}.")
    scores = table[metric]
    return scores if isinstance(scores, pd.Series) else pd.Series(np.asarray(scores, dtype=np.float64))
