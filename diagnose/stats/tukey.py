"""Many runs at once: :func:`randomised_tukey_hsd`, every pair compared with the randomised Tukey HSD test, which
controls the family-wise error rate over all pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from diagnose import defaults
from diagnose.data import DataError
from diagnose.runtime.lazy import pandas as pd
from diagnose.stats.paired import effect_size
from diagnose.stats.scores import (
    CHUNK_ELEMENTS,
    ZERO_TOL,
    check_fraction,
    check_resamples,
    metric_scores,
    paired_scores,
)


def _score_matrix(
    per_query: Mapping[str, Any] | pd.DataFrame, metric: str | None
) -> tuple[list[str], np.ndarray]:
    """Runs' per-query scores as an ``(n queries, m runs)`` matrix, aligned on query id like :func:`compare_all`."""
    if isinstance(per_query, pd.DataFrame) and metric is None:
        per_query = {str(c): per_query[c] for c in per_query.columns}
    names = [str(n) for n in per_query]
    if len(names) < 2:
        raise DataError(f"randomised_tukey_hsd: needs at least two runs, got {names}.")
    if len(set(names)) < len(names):
        raise DataError(f"randomised_tukey_hsd: run names repeat: {names}.")
    scores = [
        metric_scores(table, metric, name) if metric is not None else table
        for name, table in zip(names, per_query.values(), strict=True)
    ]
    first = scores[0]
    columns = [
        paired_scores(first, s, f"{metric or 'scores'}: {names[0]} vs {name}")[1]
        for s, name in zip(scores, names, strict=True)
    ]
    return names, np.column_stack(columns)


def _shuffled_ranges(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The null distribution, sorted: for each of ``n_resamples`` trials, the scores of each query (row of ``x``)
    shuffled among the runs (columns), independently per query, and the range ``max - min`` of the run means."""
    n, m = x.shape
    rng = np.random.default_rng(seed)
    ranges = np.empty(n_resamples)
    chunk = max(1, CHUNK_ELEMENTS // (n * m))
    base = np.broadcast_to(np.arange(m), (chunk, n, m))
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        perm = rng.permuted(base[:rows], axis=2)
        shuffled_means = np.take_along_axis(np.broadcast_to(x, (rows, n, m)), perm, axis=2).mean(axis=1)
        ranges[start : start + rows] = np.ptp(shuffled_means, axis=1)
    ranges.sort()
    return ranges


def randomised_tukey_hsd(
    per_query: Mapping[str, Any] | pd.DataFrame,
    metric: str | None = None,
    *,
    alpha: float = 0.05,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
) -> pd.DataFrame:
    """Every pair of runs compared at once with the randomised Tukey HSD test (Carterette, TOIS 2012; Sakai,
    "Statistical reform in IR", SIGIR Forum 2014): a multiple-comparison test for three or more runs on the same
    queries that controls the family-wise error rate over all ``m (m - 1) / 2`` pairs.

    Null hypothesis: on every query the runs' scores are exchangeable. Each of ``n_resamples`` trials shuffles
    the scores of each query among the runs (independently per query) and records the range of the run means,
    ``max_i mean_i - min_i mean_i``. The p-value of pair ``(i, j)`` is the share of trials whose range reaches
    the observed ``|mean_j - mean_i|``, with the add-one estimate used throughout this module:
    ``p = (#{range >= |observed|} + 1) / (n_resamples + 1)`` (Sakai counts ``#{...} / B``; the two differ by
    less than ``1 / B``). Using the maximum over all pairs as the null statistic is what corrects for the
    number of pairs, so no further Holm step is needed.

    ``statsmodels.stats.multicomp.pairwise_tukeyhsd`` is the parametric Tukey HSD for *independent* groups
    (one-way ANOVA, studentized range): it ignores that every run answered the same queries, so it only agrees
    approximately (on data without a shared per-query difficulty), and is weaker when query difficulty varies.

    ``per_query``: run name -> per-query scores (a Series indexed by query id, aligned like :func:`compare_all`,
    or an array in a common query order), or a DataFrame with one column per run; with ``metric``, the values
    are per-query tables as in :func:`compare_all` and the ``metric`` column is used.

    Returns one row per pair ``(reference, run)`` with ``reference`` before ``run`` in input order: columns
    ``reference``, ``run``, ``mean_diff`` (run - reference), ``effect_size`` (paired ``d_z``), ``p_tukey``,
    ``significant`` (``p_tukey < alpha``). Seeded: the same inputs and seed give the same p-values.
    """
    alpha = check_fraction(alpha, "alpha")
    n_resamples = check_resamples(n_resamples)
    names, x = _score_matrix(per_query, metric)
    m = x.shape[1]
    means = x.mean(axis=0)
    i, j = np.triu_indices(m, k=1)
    observed = np.abs(means[j] - means[i])
    observed[observed <= ZERO_TOL] = 0.0
    gamma = 1e-10 * float(
        np.abs(x).max()
    )  # permutations that tie the observed difference count, despite rounding
    ranges = _shuffled_ranges(x, n_resamples, seed)
    count = n_resamples - np.searchsorted(ranges, observed - gamma, side="left")
    p = (count + 1) / (n_resamples + 1)
    return pd.DataFrame(
        {
            "reference": [names[a] for a in i],
            "run": [names[b] for b in j],
            "mean_diff": means[j] - means[i],
            "effect_size": [effect_size(x[:, a], x[:, b]) for a, b in zip(i, j, strict=True)],
            "p_tukey": p,
            "significant": p < alpha,
        }
    )
