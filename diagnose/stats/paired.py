"""Paired tests of two runs on the same queries (every signed value is ``b - a``): the t-test, the randomization
(sign-flip) test that decides significance, Wilcoxon signed-rank, the effect size ``d_z`` and wins / ties / losses."""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np

from diagnose import defaults
from diagnose.data import DataError
from diagnose.stats.scores import (
    CHUNK_ELEMENTS,
    ZERO_TOL,
    Scores,
    check_resamples,
    diffs,
    diffs_or_values,
)

_EXACT_MAX_NONZERO = 16  # enumerate all 2^m sign vectors up to m = 16 (65,536 x 16)


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

    d = diffs(a, b, "paired_ttest")
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
    chunk = max(1024, (16 * CHUNK_ELEMENTS) // nbytes)  # <= 16 MB of random bytes, >= 1024 rows per lookup
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        flips = rng.integers(0, 256, size=(nbytes, rows), dtype=np.uint8)
        flipped = np.zeros(rows)
        for j in range(nbytes):
            flipped += table[j].take(flips[j])
        sums = total - 2.0 * flipped
        count += int(np.count_nonzero(np.abs(sums) >= observed))
    return (count + 1) / (n_resamples + 1)


def randomization_test(
    a: Scores, b: Scores, *, n_resamples: int = defaults.RESAMPLES, seed: int = defaults.SEED
) -> float:
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
    d = diffs(a, b, "randomization_test")
    return _sign_flip_pvalue(d, check_resamples(n_resamples), seed)


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
    d = diffs(a, b, "wilcoxon_test")
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


def effect_size(a: Scores, b: Scores | None = None) -> float:
    """Paired standardised effect (Cohen's ``d_z``): ``mean(d) / sd(d)``, ``d = b - a``, ``sd`` with ddof=1.

    Pass ``(a, b)``, or the differences alone as ``a``. It is the t statistic divided by ``sqrt(n)``: the size of
    the difference in units of its per-query spread, independent of the number of queries (0.2 small, 0.5
    medium, 0.8 large in Cohen's rule of thumb). All differences zero -> 0.0; a constant non-zero difference
    (spread <= ``ZERO_TOL``) -> ``+-inf``; fewer than 2 queries -> NaN (no spread to measure).
    """
    d = diffs_or_values(a, b, "effect_size")
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


def win_tie_loss(a: Scores, b: Scores, *, tol: float = 1e-9) -> tuple[int, int, int]:
    """Count queries where ``b`` wins (``b - a > tol``), ties (``|b - a| <= tol``), loses (``b - a < -tol``)."""
    d = diffs(a, b, "win_tie_loss")
    wins = int(np.count_nonzero(d > tol))
    losses = int(np.count_nonzero(d < -tol))
    return wins, d.size - wins - losses, losses


def mcnemar_exact(wins: int, losses: int) -> float:
    """The exact (binomial) McNemar test of two paired binary outcomes, two-sided: the sign test of the discordant
    pairs.

    ``wins``: the items ``b`` gets right and ``a`` does not; ``losses``: the reverse (the items both get right or
    both get wrong carry no information and are not counted). Under the null each discordant item is a fair coin:
    ``p = min(1, 2 * P(X <= min(wins, losses)))`` with ``X ~ Binomial(wins + losses, 1/2)``, exact for any count
    (McNemar 1947; the same number as ``scipy.stats.binomtest(wins, wins + losses).pvalue`` and statsmodels'
    ``mcnemar(exact=True)``). No discordant item: 1.0. E.g. 6 wins, 0 losses: ``2 * 0.5**6 = 0.03125``.
    """
    if wins < 0 or losses < 0:
        raise DataError(f"mcnemar_exact: counts must be >= 0, got wins={wins}, losses={losses}.")
    n, low = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2.0 * tail)
