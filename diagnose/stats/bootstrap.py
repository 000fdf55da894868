"""Bootstrap confidence intervals over queries: :func:`bootstrap_ci` (percentile or BCa) of a mean and
:func:`paired_bootstrap_ci` of a mean difference."""

from __future__ import annotations

from typing import Literal

import numpy as np

from diagnose import defaults
from diagnose.data import DataError
from diagnose.stats.scores import CHUNK_ELEMENTS, Scores, check_fraction, check_resamples, diffs, score_values

BootstrapMethod = Literal["percentile", "bca"]


def _bootstrap_means(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``x`` (queries drawn with replacement), drawn in chunks."""
    n = x.size
    out = np.empty(n_resamples)
    chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int32 if n < 2**31 else np.int64)
        out[start:stop] = x[idx].mean(axis=1)
    return out


def bootstrap_ci(
    values: Scores,
    *,
    n_resamples: int = defaults.RESAMPLES,
    confidence: float = 0.95,
    seed: int = defaults.SEED,
    method: BootstrapMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap confidence interval of the **mean** of per-query values (queries resampled with replacement).

    ``method="percentile"``: the ``(1-c)/2`` and ``(1+c)/2`` quantiles of the ``n_resamples`` resampled means
    (linear interpolation, numpy's default — the same as ``scipy.stats.bootstrap(method="percentile")``).

    ``method="bca"``: bias-corrected and accelerated (Efron & Tibshirani 1993, eq. 14.10 / 14.15), as in
    ``scipy.stats.bootstrap(method="BCa")``: with ``theta`` the sample mean, ``theta*_b`` the resampled means,
    ``z0 = Phi^-1((#{theta*_b < theta} + #{theta*_b <= theta}) / 2B)``, acceleration from the jackknife means
    ``theta_(i)`` (computed in closed form, ``(sum - x_i)/(n-1)``):
    ``a = sum((m - theta_(i))^3) / (6 * sum((m - theta_(i))^2)^1.5)`` with ``m`` their mean, and the quantile
    levels ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` for ``z_q = Phi^-1((1-c)/2), Phi^-1((1+c)/2)``.
    If the correction is undefined (all resampled means on one side of ``theta``) the percentile interval is
    returned instead of NaN.

    Edge cases: one query, or all values equal -> ``(mean, mean)``. Reproducible for a given ``seed``.
    """
    from scipy import special  # lazy: keeps `import diagnose` fast

    x = score_values(values, "bootstrap_ci")
    if x.size == 0:
        raise DataError("bootstrap_ci: no values (no queries).")
    n_resamples = check_resamples(n_resamples)
    confidence = check_fraction(confidence, "confidence")
    if method not in ("percentile", "bca"):
        raise DataError(f"bootstrap method must be 'percentile' or 'bca', got {method!r}.")
    theta = float(x.mean())
    if x.size == 1 or np.ptp(x) == 0:
        return theta, theta
    rng = np.random.default_rng(seed)
    means = _bootstrap_means(x, n_resamples, rng)
    tail = (1.0 - confidence) / 2.0
    levels = np.array([tail, 1.0 - tail])
    if method == "bca":
        below = np.count_nonzero(means < theta) + np.count_nonzero(means <= theta)
        z0 = special.ndtri(below / (2.0 * n_resamples))
        jack = (x.sum() - x) / (x.size - 1)
        u = jack.mean() - jack
        den = 6.0 * float(np.sum(u**2)) ** 1.5
        accel = float(np.sum(u**3)) / den if den > 0 else 0.0
        zq = special.ndtri(levels)
        with np.errstate(all="ignore"):
            corrected = special.ndtr(z0 + (z0 + zq) / (1.0 - accel * (z0 + zq)))
        if np.isfinite(corrected).all():
            levels = corrected
    low, high = np.quantile(means, levels)
    return float(low), float(high)


def paired_bootstrap_ci(
    a: Scores,
    b: Scores,
    *,
    n_resamples: int = defaults.RESAMPLES,
    confidence: float = 0.95,
    seed: int = defaults.SEED,
    method: BootstrapMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap CI of the mean difference ``mean(b) - mean(a)``, resampling **queries** (the same resampled
    query indices for both runs). Since ``mean(b[i]) - mean(a[i]) == mean((b - a)[i])`` for any index vector
    ``i``, this is exactly :func:`bootstrap_ci` of the per-query differences ``b - a``; pairing keeps the
    query-difficulty variation shared by both runs out of the interval."""
    return bootstrap_ci(
        diffs(a, b, "paired_bootstrap_ci"),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        method=method,
    )
