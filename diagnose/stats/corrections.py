"""Multiple-comparison corrections of a family of p-values: :func:`holm` (family-wise error rate, any
dependence) and :func:`benjamini_hochberg` (false discovery rate)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from diagnose.data import DataError


def _pvalues(pvalues: ArrayLike, what: str) -> np.ndarray:
    """The p-values as a flat float64 array; a DataError naming ``what`` unless every one is a number in [0, 1]."""
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size and (not np.isfinite(p).all() or p.min() < 0 or p.max() > 1):
        raise DataError(f"{what}: p-values must be numbers in [0, 1], got {p.tolist()[:10]}.")
    return p


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted: ``adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))``. Rejecting
    the hypotheses with ``adj <= alpha`` is Holm's procedure at family-wise error rate ``alpha`` (valid under any
    dependence). The adjusted values are monotone in the raw ones, ``>= p`` and ``<= min(1, m * p)``.
    Ties among the p-values get equal adjusted values. Empty input -> empty array.
    """
    p = _pvalues(pvalues, "holm")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (false discovery rate), in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted: ``adj_(i) = min(1, min_{j >= i} m * p_(j) / j)``. Rejecting the
    hypotheses with ``adj <= q`` controls the expected share of false discoveries at ``q`` for independent or
    positively dependent tests (Benjamini & Hochberg 1995; Benjamini & Yekutieli 2001). Less strict than
    :func:`holm`, which controls the chance of *any* false discovery: ``adj_BH <= adj_Holm`` always. Same
    numbers as ``statsmodels.stats.multitest.multipletests(p, method="fdr_bh")[1]``. Empty input -> empty array.
    """
    p = _pvalues(pvalues, "benjamini_hochberg")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out
