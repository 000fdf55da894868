"""Is run B really better than run A on *these* queries? Paired tests, bootstrap CIs, Holm and BH corrections,
effect sizes, randomised Tukey HSD for many runs, topic set size.

Every function takes per-query scores of two runs on the same golden queries, one value per query:

- ``a`` is the **reference** (the run you compare against), ``b`` the **run** under study;
- every signed quantity is ``b - a``: a positive mean difference, a positive t statistic and a "win" all mean
  that ``b`` scores higher;
- inputs are 1-D arrays / lists (aligned by position) or ``pd.Series`` indexed by query id (as in
  ``diagnose.metrics.evaluate(...).per_query[metric]``). Two Series are aligned on their index; if the two
  sets of query ids differ, or an id repeats, or a score is NaN / infinite, :class:`~diagnose.data.DataError`
  says which ids — nothing is dropped silently;
- per-query differences with ``|b - a| <= ZERO_TOL`` (1e-12) are float rounding noise (two code paths computing
  the same nDCG can differ in the last bit) and are set to exactly 0 before any test. Without this, a run compared
  with a bitwise-different copy of itself could come out "significant" with a difference of 1e-17.

Choices (and why):

- **Significance = Holm-corrected paired randomization test.** The randomization (sign-flip permutation) test makes
  no distributional assumption, which matters for IR metrics: bounded, skewed, and often discrete (hit rate is
  0/1, reciprocal rank takes values 1/k). Smucker, Allan & Carterette (CIKM 2007) found it the test to use for IR;
  the t-test and Wilcoxon p-values are reported beside it for comparison but do not decide ``significant``.
- **Holm family** (:func:`compare_all`): all (run vs reference, metric) comparisons made in one call. Holm controls
  the family-wise error rate under any dependence between the tests (the same queries, correlated metrics).
- **Benjamini-Hochberg beside Holm**: ``compare_all`` also gives ``p_bh`` (false discovery rate) over the same
  family, for screening many runs; ``significant`` stays on Holm.
- **Effect size beside every p-value**: paired Cohen's ``d_z = mean(d) / sd(d)``. A p-value says whether the data
  can tell the runs apart; ``d_z`` says how large the difference is against its per-query spread.
- **Many runs at once**: :func:`randomised_tukey_hsd` compares all pairs of three or more runs with the
  randomised Tukey HSD (Carterette 2012, Sakai 2014), which controls the family-wise error over all pairs.
- **Planning**: :func:`topic_set_size` (Sakai) is the number of queries needed to detect a given difference,
  :func:`min_detectable_difference` the difference the present queries can detect.
- **Bootstrap CI**: percentile bootstrap over queries by default (``method="bca"`` available); 95%. CIs are
  per comparison and **not** multiplicity-adjusted, so a CI may exclude 0 while ``p_holm`` is not significant.
- Everything is seeded with ``np.random.default_rng(seed)``: the same inputs and seed give the same numbers.
  ``compare_all`` uses the same seed for every comparison, so a comparison gives the same p-value alone or in a
  family.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from diagnose.data import DataError

__all__ = [
    "CI_LEVEL",
    "ZERO_TOL",
    "Comparison",
    "RankedModel",
    "benjamini_hochberg",
    "bootstrap_ci",
    "compare",
    "compare_all",
    "effect_size",
    "holm",
    "min_detectable_difference",
    "paired_bootstrap_ci",
    "paired_ttest",
    "randomised_tukey_hsd",
    "randomization_test",
    "rank_with_ties",
    "topic_set_size",
    "wilcoxon_test",
    "win_tie_loss",
]

Scores = ArrayLike | pd.Series
BootstrapMethod = Literal["percentile", "bca"]

ZERO_TOL = 1e-12
"""Per-query differences with ``|b - a| <= ZERO_TOL`` are treated as exact ties (float rounding noise)."""

CI_LEVEL = 0.95
"""Confidence level of the CIs in :class:`Comparison` (the verdict says "95% CI")."""

_CHUNK_ELEMENTS = 1 << 20  # resampled values held in memory at once (8 MB of float64 / int64)
_EXACT_MAX_NONZERO = 16  # enumerate all 2^m sign vectors up to m = 16 (65,536 x 16)


# ----------------------------------------------------------------------------------------------------------
# input handling


def _examples(ids: Sequence[Any], k: int = 5) -> str:
    shown = ", ".join(repr(str(i)) for i in list(ids)[:k])
    return shown + (f" (and {len(ids) - k} more)" if len(ids) > k else "")


def _values(x: Scores, what: str) -> np.ndarray:
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


def _pair(a: Scores, b: Scores, what: str = "scores") -> tuple[np.ndarray, np.ndarray]:
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
    av, bv = _values(a, f"{what} (reference)"), _values(b, f"{what} (run)")
    if av.shape != bv.shape:
        raise DataError(
            f"{what}: the runs have {av.size} and {bv.size} per-query scores; paired tests need one score per "
            "query for both runs, in the same order (or pass pandas Series indexed by query id)."
        )
    if av.size == 0:
        raise DataError(f"{what}: no queries to compare (the per-query scores are empty).")
    return av, bv


def _diffs(a: Scores, b: Scores, what: str = "scores") -> np.ndarray:
    """Per-query ``b - a``, with float-noise differences (``|d| <= ZERO_TOL``) set to exactly 0."""
    av, bv = _pair(a, b, what)
    d = bv - av
    d[np.abs(d) <= ZERO_TOL] = 0.0
    return d


def _check_fraction(value: float, name: str) -> float:
    if not 0.0 < value < 1.0:
        raise DataError(f"{name} must be strictly between 0 and 1, got {value!r}.")
    return float(value)


def _check_resamples(n_resamples: int) -> int:
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise DataError(f"n_resamples must be a positive integer, got {n_resamples!r}.")
    return int(n_resamples)


# ----------------------------------------------------------------------------------------------------------
# bootstrap


def _bootstrap_means(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``x`` (queries drawn with replacement), drawn in chunks."""
    n = x.size
    out = np.empty(n_resamples)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int32 if n < 2**31 else np.int64)
        out[start:stop] = x[idx].mean(axis=1)
    return out


def bootstrap_ci(
    values: Scores,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
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

    x = _values(values, "bootstrap_ci")
    if x.size == 0:
        raise DataError("bootstrap_ci: no values (no queries).")
    n_resamples = _check_resamples(n_resamples)
    confidence = _check_fraction(confidence, "confidence")
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
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap CI of the mean difference ``mean(b) - mean(a)``, resampling **queries** (the same resampled
    query indices for both runs). Since ``mean(b[i]) - mean(a[i]) == mean((b - a)[i])`` for any index vector
    ``i``, this is exactly :func:`bootstrap_ci` of the per-query differences ``b - a``; pairing keeps the
    query-difficulty variation shared by both runs out of the interval."""
    return bootstrap_ci(
        _diffs(a, b, "paired_bootstrap_ci"),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        method=method,
    )


# ----------------------------------------------------------------------------------------------------------
# tests


def paired_ttest(a: Scores, b: Scores) -> tuple[float, float]:
    """Two-sided paired t-test of ``mean(b - a) = 0``: ``t = mean(d) / (sd(d) / sqrt(n))``, ``sd`` with ddof=1,
    ``p = 2 * T_{n-1}.sf(|t|)``.

    Same numbers as ``scipy.stats.ttest_rel(b, a)`` — note the order: ``t > 0`` means ``b`` is higher, like
    every other signed value here (``ttest_rel(a, b)`` has the opposite sign of ``t`` and the same ``p``).
    Where scipy returns NaN we return plain values, without warnings:

    - all differences zero (identical runs): ``(0.0, 1.0)`` — no difference, no evidence;
    - fewer than 2 queries (no variance estimate): ``(nan, 1.0)`` — ``t`` is undefined, ``p`` says "no evidence";
    - constant non-zero difference on >= 2 queries: ``(+-inf, 0.0)``, as scipy.
    """
    from scipy import stats as _st

    d = _diffs(a, b, "paired_ttest")
    if not d.any():
        return 0.0, 1.0
    if d.size < 2:
        return math.nan, 1.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = _st.ttest_1samp(d, 0.0)  # == ttest_rel(b, a): it computes the same d and the same moments
    return float(res.statistic), float(res.pvalue)


def _sign_flip_pvalue(d: np.ndarray, n_resamples: int, seed: int) -> float:
    d = d[d != 0.0]  # zero differences are the same under every sign flip
    m = d.size
    if m == 0:
        return 1.0
    total = float(d.sum())
    # sum of sign-flipped d = total - 2 * (sum of the flipped entries); compare |.| with a relative tolerance so
    # that permutations tying the observed sum are counted despite rounding (they are common: 0/1 metrics).
    gamma = 1e-10 * float(np.abs(d).sum())
    observed = abs(total) - gamma
    if m <= _EXACT_MAX_NONZERO and 2**m <= n_resamples:
        # exact: enumerate all 2^m sign vectors (includes the observed one, so p >= 2 / 2^m > 0)
        bits = (np.arange(2**m, dtype=np.int64)[:, None] >> np.arange(m)) & 1
        sums = total - 2.0 * (bits @ d)
        return float(np.count_nonzero(np.abs(sums) >= observed)) / 2**m
    # Monte Carlo. Each random byte flips 8 differences at once: table[j, v] is the sum of the differences of
    # block j (d[8j:8j+8]) whose bit is set in v, so a resample costs m/8 lookups (in a 2 KB table, one block
    # at a time) instead of m multiply-adds.
    nbytes = -(-m // 8)
    blocks = np.zeros(nbytes * 8)
    blocks[:m] = d
    bit_of = (np.arange(256)[:, None] >> np.arange(8)) & 1  # (256, 8)
    table = blocks.reshape(nbytes, 8) @ bit_of.T  # (nbytes, 256)
    rng = np.random.default_rng(seed)
    count = 0
    chunk = max(1024, (16 * _CHUNK_ELEMENTS) // nbytes)  # <= 16 MB of random bytes, >= 1024 rows per lookup
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        flips = rng.integers(0, 256, size=(nbytes, rows), dtype=np.uint8)
        flipped = np.zeros(rows)
        for j in range(nbytes):
            flipped += table[j].take(flips[j])
        sums = total - 2.0 * flipped
        count += int(np.count_nonzero(np.abs(sums) >= observed))
    return (count + 1) / (n_resamples + 1)


def randomization_test(a: Scores, b: Scores, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip permutation) test of ``mean(b - a) = 0``.

    Under the null hypothesis that the two runs are exchangeable on each query, each per-query difference is
    equally likely to have either sign. With ``d = b - a`` and ``n_resamples`` random sign vectors ``s``:
    ``p = (#{ |mean(s * d)| >= |mean(d)| } + 1) / (n_resamples + 1)`` — the add-one estimate (Phipson & Smyth
    2010), valid at any ``n_resamples`` and never 0 (its minimum is ``1 / (n_resamples + 1)``, so use more
    resamples when many comparisons are Holm-corrected). Smucker, Allan & Carterette (2007) for IR.

    When all ``2^m`` sign vectors of the ``m`` non-zero differences fit in ``n_resamples`` (``m <= 13`` at the
    default; never beyond ``m = 16``), they are enumerated and the exact p-value ``#{...} / 2^m`` is returned (no randomness).
    All differences zero -> 1.0. Vectorised in chunks; reproducible for a given ``seed``.
    """
    d = _diffs(a, b, "randomization_test")
    return _sign_flip_pvalue(d, _check_resamples(n_resamples), seed)


def _signed_rank_permutation_pvalue(d: np.ndarray, zero_method: str) -> float:
    """Exact two-sided sign-flip p-value of the Wilcoxon statistic ``r_plus``, enumerating all ``2^m`` signs of
    the ``m`` non-zero differences: what ``scipy.stats.wilcoxon(method="auto")`` computes for ``n <= 13`` with
    ties or zeros (through the generic, slow ``permutation_test``): ``p = min(1, 2 min(P(T <= t), P(T >= t)))``.
    """
    from scipy import stats as _st

    nonzero = d != 0
    ranks = _st.rankdata(np.abs(d[nonzero] if zero_method == "wilcox" else d))
    r = ranks if zero_method == "wilcox" else ranks[nonzero]
    observed = float(r[d[nonzero] > 0].sum())  # the zsplit constant is added to both sides: it cancels
    m = r.size
    bits = (np.arange(2**m, dtype=np.int64)[:, None] >> np.arange(m)) & 1
    null = bits @ r
    gamma = abs(100 * np.finfo(np.float64).eps * observed)  # scipy.stats.permutation_test's tolerance
    less = np.count_nonzero(null <= observed + gamma) / null.size
    greater = np.count_nonzero(null >= observed - gamma) / null.size
    return float(min(1.0, 2 * min(less, greater)))


def wilcoxon_test(
    a: Scores, b: Scores, *, zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox"
) -> float:
    """Two-sided Wilcoxon signed-rank test p-value for the differences ``b - a``, with the semantics of
    ``scipy.stats.wilcoxon(b - a, zero_method=zero_method)`` and its defaults (``method="auto"``, no continuity
    correction): for more than 50 queries the normal approximation (with tie correction); for at most 50
    without ties or zeros the exact distribution; for at most 13 with ties or zeros the exact sign-flip
    distribution (computed here in closed form: scipy's generic permutation test takes seconds for n = 13);
    between 14 and 50 with ties or zeros the normal approximation.

    ``zero_method="wilcox"`` (scipy's default) drops zero differences (queries where the runs tie) before
    ranking; ``"pratt"`` ranks them, then drops them; ``"zsplit"`` splits their ranks between the two signs.
    All differences zero -> 1.0 (no evidence), without warnings.
    """
    from scipy import stats as _st

    if zero_method not in ("wilcox", "pratt", "zsplit"):
        raise DataError(f"zero_method must be 'wilcox', 'pratt' or 'zsplit', got {zero_method!r}.")
    d = _diffs(a, b, "wilcoxon_test")
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 1.0
    has_ties = np.unique(np.abs(nonzero)).size < nonzero.size
    if d.size <= 13 and (has_ties or nonzero.size < d.size):
        return _signed_rank_permutation_pvalue(d, zero_method)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        p = float(_st.wilcoxon(d, zero_method=zero_method).pvalue)
    return p if np.isfinite(p) else 1.0


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted: ``adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))``. Rejecting
    the hypotheses with ``adj <= alpha`` is Holm's procedure at family-wise error rate ``alpha`` (valid under any
    dependence). The adjusted values are monotone in the raw ones, ``>= p`` and ``<= min(1, m * p)``.
    Ties among the p-values get equal adjusted values. Empty input -> empty array.
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size and (not np.isfinite(p).all() or p.min() < 0 or p.max() > 1):
        raise DataError(f"holm: p-values must be numbers in [0, 1], got {p.tolist()[:10]}.")
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
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size and (not np.isfinite(p).all() or p.min() < 0 or p.max() > 1):
        raise DataError(f"benjamini_hochberg: p-values must be numbers in [0, 1], got {p.tolist()[:10]}.")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def effect_size(a: Scores, b: Scores | None = None) -> float:
    """Paired standardised effect (Cohen's ``d_z``): ``mean(d) / sd(d)``, ``d = b - a``, ``sd`` with ddof=1.

    Pass ``(a, b)``, or the differences alone as ``a``. It is the t statistic divided by ``sqrt(n)``: the size of
    the difference in units of its per-query spread, independent of the number of queries (0.2 small, 0.5
    medium, 0.8 large in Cohen's rule of thumb). All differences zero -> 0.0; a constant non-zero difference
    (spread <= ``ZERO_TOL``) -> ``+-inf``; fewer than 2 queries -> NaN (no spread to measure).
    """
    d = _diffs(a, b, "effect_size") if b is not None else _values(a, "effect_size")
    if d.size == 0:
        raise DataError("effect_size: no queries (the per-query differences are empty).")
    if not d.any():
        return 0.0
    if d.size < 2:
        return math.nan
    mean = float(d.mean())
    if np.ptp(d) <= ZERO_TOL:  # constant up to float noise (0.3 - 0.1 != 0.4 - 0.2 in the last bit)
        return math.copysign(math.inf, mean)
    return mean / float(np.std(d, ddof=1))


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

    alpha = _check_fraction(alpha, "alpha")
    power = _check_fraction(power, "power")
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

    d = (
        _diffs(a, b, "min_detectable_difference")
        if b is not None
        else _values(a, "min_detectable_difference")
    )
    alpha = _check_fraction(alpha, "alpha")
    power = _check_fraction(power, "power")
    n = d.size
    if n < 2:
        return math.inf
    if np.ptp(d) == 0:
        return 0.0
    sd = float(np.std(d, ddof=1))
    df = n - 1
    return float((_st.t.ppf(1 - alpha / 2, df) + _st.t.ppf(power, df)) * sd / math.sqrt(n))


def win_tie_loss(a: Scores, b: Scores, *, tol: float = 1e-9) -> tuple[int, int, int]:
    """Count queries where ``b`` wins (``b - a > tol``), ties (``|b - a| <= tol``), loses (``b - a < -tol``)."""
    d = _diffs(a, b, "win_tie_loss")
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, d.size - wins - losses, losses


# ----------------------------------------------------------------------------------------------------------
# comparison records


def _fmt_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"={p:.3f}"


def _fmt_diffs(*xs: float) -> list[str]:
    """Three decimals, unless every value is below 0.001 in size (then scientific, so 4e-05 does not read 0)."""
    if all(abs(x) < 0.001 for x in xs) and any(x != 0 for x in xs):
        return [f"{x:.1e}" for x in xs]
    return [f"{x:.3f}" for x in xs]


def _json_number(x: Any) -> Any:
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer | np.bool_):
        return x.item()
    return x


@dataclass(frozen=True)
class Comparison:
    """``run`` vs ``reference`` on one metric; every difference is ``run - reference``.

    ``ci_low, ci_high``: 95% paired bootstrap CI of ``mean_diff``. ``p_ttest``: paired t-test;
    ``p_randomization``: paired sign-flip randomization test; ``p_wilcoxon``: Wilcoxon signed-rank (zero
    differences dropped). ``p_holm``: ``p_randomization`` Holm-adjusted over the family of :func:`compare_all`
    (equal to ``p_randomization`` from :func:`compare` alone). ``significant``: ``p_holm < alpha``.
    ``wins/ties/losses``: queries where the run scores higher / the same (within 1e-9) / lower.
    ``mdd``: :func:`min_detectable_difference` at ``alpha`` and 80% power (``inf`` with < 2 queries).
    ``effect_size``: paired Cohen's ``d_z = mean_diff / sd(differences)`` (:func:`effect_size`; NaN with one
    query, ``+-inf`` for a constant non-zero difference). ``p_bh``: ``p_randomization`` Benjamini-Hochberg-adjusted
    over the same family as ``p_holm`` (a false-discovery-rate view; ``significant`` still follows ``p_holm``).
    """

    metric: str
    run: str
    reference: str
    mean_diff: float
    ci_low: float
    ci_high: float
    p_ttest: float
    p_randomization: float
    p_wilcoxon: float
    p_holm: float
    wins: int
    ties: int
    losses: int
    n_queries: int
    mdd: float
    significant: bool
    effect_size: float
    p_bh: float

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe dict of all fields (non-finite floats, e.g. ``mdd`` with one query, become None)."""
        return {f.name: _json_number(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def verdict(self) -> str:
        """One plain sentence, e.g. ``"bm25 is 0.042 higher than ann on ndcg@10 (95% CI 0.010 to 0.071,
        p_holm=0.012): significant."``"""
        queries = f"{self.n_queries} quer{'y' if self.n_queries == 1 else 'ies'}"
        if self.wins == 0 and self.losses == 0 and self.mean_diff == 0:
            return f"{self.run} and {self.reference} score the same on {self.metric} on all {queries}: no difference."
        diff, low, high = _fmt_diffs(abs(self.mean_diff), self.ci_low, self.ci_high)
        if self.mean_diff == 0:
            head = f"{self.run} scores the same as {self.reference} on average on {self.metric}"
        else:
            direction = "higher" if self.mean_diff > 0 else "lower"
            head = f"{self.run} is {diff} {direction} than {self.reference} on {self.metric}"
        effect = f", effect size d_z {self.effect_size:.2f}" if math.isfinite(self.effect_size) else ""
        detail = f" ({round(CI_LEVEL * 100)}% CI {low} to {high}, p_holm{_fmt_p(self.p_holm)}{effect}, {queries})"
        if self.significant:
            return f"{head}{detail}: significant."
        if math.isfinite(self.mdd) and self.mdd > 0:
            why = f"the smallest difference this many queries can detect is ~{self.mdd:.2g}"
        elif self.n_queries < 2:
            why = "one query cannot show a difference"
        else:
            why = f"{self.n_queries} queries are too few for the randomization test"
        return f"{head}{detail}: not significant: the data cannot tell them apart ({why})."


def compare(
    a: Scores,
    b: Scores,
    *,
    metric: str,
    run: str,
    reference: str,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    bootstrap_method: BootstrapMethod = "percentile",
) -> Comparison:
    """Compare run ``b`` (named ``run``) with reference ``a`` (named ``reference``) on one metric.

    Runs every test above on the same per-query differences ``b - a``; the CI is the 95% paired bootstrap CI
    (``bootstrap_method``), the randomization test and the bootstrap use ``n_resamples`` and ``seed``.
    Alone, ``p_holm = p_bh = p_randomization`` (a family of one); :func:`compare_all` fills them for a family.
    """
    alpha = _check_fraction(alpha, "alpha")
    what = f"{metric}: {run} vs {reference}"
    av, bv = _pair(a, b, what)
    d = _diffs(av, bv, what)
    lo, hi = bootstrap_ci(d, n_resamples=n_resamples, confidence=CI_LEVEL, seed=seed, method=bootstrap_method)
    p_rand = randomization_test(av, bv, n_resamples=n_resamples, seed=seed)
    wins, ties, losses = win_tie_loss(av, bv)
    return Comparison(
        metric=metric,
        run=run,
        reference=reference,
        mean_diff=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        p_ttest=paired_ttest(av, bv)[1],
        p_randomization=p_rand,
        p_wilcoxon=wilcoxon_test(av, bv),
        p_holm=p_rand,
        wins=wins,
        ties=ties,
        losses=losses,
        n_queries=int(d.size),
        mdd=min_detectable_difference(d, alpha=alpha),
        significant=bool(p_rand < alpha),
        effect_size=effect_size(d),
        p_bh=p_rand,
    )


def _metric_scores(table: Any, metric: str, name: str) -> pd.Series:
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


def compare_all(
    per_query: Mapping[str, Any],
    reference: str,
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    bootstrap_method: BootstrapMethod = "percentile",
) -> list[Comparison]:
    """Every run vs ``reference`` on every metric, Holm-corrected as one family.

    ``per_query``: run name -> that run's per-query scores: a DataFrame indexed by query id with one column per
    metric (``Evaluation.per_query``), a mapping metric -> Series, or an ``Evaluation``. Runs are aligned on
    query id (a mismatch raises :class:`DataError` naming the ids).

    **Family**: all ``len(metrics) * (number of runs - 1)`` comparisons of this call. ``p_holm`` is
    :func:`holm` applied to their ``p_randomization`` values, and ``significant = p_holm < alpha``. Since the
    randomization p-value is at least ``1 / (n_resamples + 1)``, nothing can be significant unless
    ``family size / (n_resamples + 1) < alpha``: raise ``n_resamples`` for very large families.

    ``p_bh`` is :func:`benjamini_hochberg` over the same family: read it when a share of false discoveries
    is acceptable (screening many runs); ``significant`` stays on Holm.

    Order: metric by metric (in ``metrics`` order), runs in ``per_query`` order, the reference skipped.
    """
    if reference not in per_query:
        raise DataError(f"reference run {reference!r} is not among the runs {list(per_query)}.")
    alpha = _check_fraction(alpha, "alpha")
    results = [
        compare(
            _metric_scores(per_query[reference], metric, reference),
            _metric_scores(table, metric, name),
            metric=metric,
            run=name,
            reference=reference,
            alpha=alpha,
            n_resamples=n_resamples,
            seed=seed,
            bootstrap_method=bootstrap_method,
        )
        for metric in metrics
        for name, table in per_query.items()
        if name != reference
    ]
    raw = [c.p_randomization for c in results]
    return [
        dataclasses.replace(c, p_holm=float(p), significant=bool(p < alpha), p_bh=float(q))
        for c, p, q in zip(results, holm(raw), benjamini_hochberg(raw), strict=True)
    ]


class RankedModel(NamedTuple):
    """A row of the model-choice table. ``tied_with_best``: not significantly different from the best."""

    rank: int
    name: str
    mean: float
    tied_with_best: bool


def rank_with_ties(
    per_query: Mapping[str, Any],
    metric: str,
    *,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[RankedModel]:
    """Rank models by mean ``metric`` (higher is better), sharing rank 1 among those statistically tied with
    the best.

    The best is the highest mean (first in ``per_query`` order on an exact tie). Every other model is compared
    with it by the paired randomization test; the ``k - 1`` p-values are Holm-corrected as one family; a model
    with ``p_holm >= alpha`` is **tied with the best** and gets rank 1. The rows list the tied group first, then
    the others by decreasing mean, ranked by competition ranking (``1, 1, 1, 4, 5``; equal means share a rank).
    "Tied" means "the data cannot tell them apart", not "equal".

    ``per_query``: model name -> per-query scores (a Series for ``metric``, or a table as in :func:`compare_all`).
    """
    alpha = _check_fraction(alpha, "alpha")
    if not per_query:
        return []
    scores = {name: _metric_scores(table, metric, name) for name, table in per_query.items()}
    means = {name: float(_values(s, f"{metric}: {name}").mean()) for name, s in scores.items()}
    best = max(means, key=lambda name: means[name])  # first of equal maxima, in mapping order
    others = [name for name in scores if name != best]
    pvals = [
        randomization_test(scores[best], scores[name], n_resamples=n_resamples, seed=seed) for name in others
    ]
    tied = {best} | {name for name, p in zip(others, holm(pvals), strict=True) if p >= alpha}
    order = sorted(scores, key=lambda name: (name not in tied, -means[name]))
    rows: list[RankedModel] = []
    for i, name in enumerate(order):
        if name in tied:
            rank = 1
        elif i > 0 and order[i - 1] not in tied and means[order[i - 1]] == means[name]:
            rank = rows[-1].rank
        else:
            rank = i + 1
        rows.append(RankedModel(rank, name, means[name], name in tied))
    return rows


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
        _metric_scores(table, metric, name) if metric is not None else table
        for name, table in zip(names, per_query.values(), strict=True)
    ]
    first = scores[0]
    columns = [
        _pair(first, s, f"{metric or 'scores'}: {names[0]} vs {name}")[1]
        for s, name in zip(scores, names, strict=True)
    ]
    return names, np.column_stack(columns)


def randomised_tukey_hsd(
    per_query: Mapping[str, Any] | pd.DataFrame,
    metric: str | None = None,
    *,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
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
    alpha = _check_fraction(alpha, "alpha")
    n_resamples = _check_resamples(n_resamples)
    names, x = _score_matrix(per_query, metric)
    n, m = x.shape
    means = x.mean(axis=0)
    i, j = np.triu_indices(m, k=1)
    observed = np.abs(means[j] - means[i])
    observed[observed <= ZERO_TOL] = 0.0
    gamma = 1e-10 * float(
        np.abs(x).max()
    )  # permutations that tie the observed difference count, despite rounding
    rng = np.random.default_rng(seed)
    ranges = np.empty(n_resamples)
    chunk = max(1, _CHUNK_ELEMENTS // (n * m))
    base = np.broadcast_to(np.arange(m), (chunk, n, m))
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        perm = rng.permuted(base[:rows], axis=2)
        shuffled_means = np.take_along_axis(np.broadcast_to(x, (rows, n, m)), perm, axis=2).mean(axis=1)
        ranges[start : start + rows] = np.ptp(shuffled_means, axis=1)
    ranges.sort()
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
