"""Planning: how many queries a difference needs (:func:`topic_set_size`, Sakai) and which difference the present
queries can detect (:func:`min_detectable_difference`)."""

from __future__ import annotations

import math

import numpy as np

from diagnose.data import DataError
from diagnose.stats.scores import Scores, check_fraction, diffs_or_values


def topic_set_size(diff: float, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Number of queries a two-sided paired t-test at level ``alpha`` needs to detect a true mean difference
    ``diff`` with probability ``power``, when the per-query differences have standard deviation ``sd``
    (Sakai's topic set size design, "Topic set size design", Information Retrieval Journal 2016, t-test case).

    The smallest ``n >= 2`` with ``P(|T| >= t_{1-alpha/2, n-1}) >= power``, ``T`` noncentral t with ``n - 1``
    degrees of freedom and noncentrality ``sqrt(n) * |diff| / sd``: the exact power, both tails, as
    ``statsmodels.stats.power.TTestPower().solve_power(effect_size=diff / sd, alpha=alpha, power=power)``,
    which returns the real-valued ``n``; this is its ceiling. (Sakai's Excel tool starts from a normal
    approximation and then searches with the same noncentral t power.) Take ``sd`` from the observed
    differences of a pilot comparison (``np.std(b - a, ddof=1)``) and ``diff`` the smallest difference worth
    detecting. ``sd == 0`` -> 2 (any difference is certain). Raises :class:`DataError` for ``diff == 0`` (no
    number of queries detects no difference) or a negative ``sd``.
    """
    from scipy import stats as _st

    alpha = check_fraction(alpha, "alpha")
    power = check_fraction(power, "power")
    diff, sd = float(diff), float(sd)
    if not (math.isfinite(diff) and math.isfinite(sd)) or sd < 0:
        raise DataError(f"topic_set_size: diff must be finite and sd finite and >= 0, got {diff!r}, {sd!r}.")
    if diff == 0:
        raise DataError("topic_set_size: diff must be non-zero (no number of queries detects no difference).")
    if sd == 0:
        return 2
    es = abs(diff) / sd

    def achieved(n: int) -> float:
        df = n - 1
        crit = _st.t.ppf(1 - alpha / 2, df)
        nc = math.sqrt(n) * es
        return float(_st.nct.sf(crit, df, nc) + _st.nct.cdf(-crit, df, nc))

    lo, hi = 2, 2
    while achieved(hi) < power:  # power grows with n: double, then bisect
        lo, hi = hi + 1, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if achieved(mid) >= power:
            hi = mid
        else:
            lo = mid + 1
    return hi


def min_detectable_difference(
    a: Scores, b: Scores | None = None, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest mean difference a two-sided paired t-test at level ``alpha`` would detect with probability
    ``power``, given the spread of the per-query differences:

    ``MDD = (t_{1-alpha/2, n-1} + t_{power, n-1}) * sd(d) / sqrt(n)``  (``sd`` with ddof=1)

    Pass ``(a, b)`` for ``d = b - a``, or the differences alone as ``a``. It is an approximation: it replaces the
    noncentral t distribution by a shifted central one (slightly optimistic: true power at the MDD is a little
    below ``power`` for small ``n``) and treats the observed ``sd(d)`` as the true one. It concerns one test at
    ``alpha``; after a Holm correction over many comparisons the detectable difference is larger.
    No variance (all differences equal) -> 0.0. Fewer than 2 queries -> ``inf`` (nothing is detectable).
    """
    from scipy import stats as _st

    d = diffs_or_values(a, b, "min_detectable_difference")
    alpha = check_fraction(alpha, "alpha")
    power = check_fraction(power, "power")
    n = d.size
    if n < 2:
        return math.inf
    if np.ptp(d) == 0:
        return 0.0
    sd = float(np.std(d, ddof=1))
    df = n - 1
    return float((_st.t.ppf(1 - alpha / 2, df) + _st.t.ppf(power, df)) * sd / math.sqrt(n))
