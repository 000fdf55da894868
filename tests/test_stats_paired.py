"""The paired significance tests: the t-test and the Wilcoxon signed-rank test against scipy, the randomization
test exact and Monte Carlo, with their size under the null and their power.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats as st
from hypothesis import assume, given, settings
from hypothesis import strategies as hst
from stats_testing import FIXED_A, FIXED_B, null_pair

from diagnose.stats import paired_ttest, randomization_test, wilcoxon_test

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


def test_ttest_equals_scipy_on_fixed_data():
    t, p = paired_ttest(FIXED_A, FIXED_B)
    ref = st.ttest_rel(FIXED_B, FIXED_A)  # our sign convention: b - a
    assert t == pytest.approx(ref.statistic, rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)
    assert p == pytest.approx(st.ttest_rel(FIXED_A, FIXED_B).pvalue, rel=1e-12)  # p does not depend on order
    assert t > 0  # b is higher on average


@settings(max_examples=50, deadline=None)
@given(hst.lists(hst.tuples(hst.floats(0, 1), hst.floats(0, 1)), min_size=3, max_size=40))
def test_ttest_equals_scipy_property(pairs):
    a, b = np.array(pairs).T
    d = b - a
    assume(np.std(d) > 1e-6)  # scipy's own precision-loss regime is not what we test here
    # we set float-noise differences (|d| <= 1e-12) to 0, as documented; scipy does not
    assume(not np.any((d != 0) & (np.abs(d) <= 1e-12)))
    t, p = paired_ttest(a, b)
    ref = st.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic, rel=1e-9)
    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)


def test_ttest_two_queries_hand_computed():
    # d = [1, 2]: mean 1.5, sd = sqrt(((-.5)^2 + .5^2) / 1) = 0.7071, t = 1.5 / (0.7071 / sqrt 2) = 3.0
    # df = 1 is the Cauchy distribution: sf(3) = 1/2 - atan(3)/pi = 0.102416, p = 0.204833
    t, p = paired_ttest([1.0, 2.0], [2.0, 4.0])
    assert t == pytest.approx(3.0)
    assert p == pytest.approx(1 - 2 * math.atan(3) / math.pi)
    assert p == pytest.approx(st.ttest_rel([2.0, 4.0], [1.0, 2.0]).pvalue)


def test_ttest_edge_cases_give_plain_numbers():
    assert paired_ttest(FIXED_A, FIXED_A) == (0.0, 1.0)  # scipy: (nan, nan)
    t, p = paired_ttest([0.3], [0.7])  # scipy: (nan, nan), df = 0
    assert math.isnan(t) and p == 1.0
    # constant non-zero difference (exactly: 0.5 on every query): t = +inf, p = 0 (as scipy)
    assert paired_ttest([0.25, 0.5, 0.75], [0.75, 1.0, 1.25]) == (math.inf, 0.0)
    # a bitwise-different copy (float noise 1e-17) is the same run, not an infinitely significant one
    noisy = FIXED_A + np.where(np.arange(FIXED_A.size) % 2, 1e-17, 0) + 3e-17
    assert paired_ttest(FIXED_A, noisy) == (0.0, 1.0)


def _rounded_diffs(n: int, seed: int) -> np.ndarray:
    """Differences on a 0.05 grid: metric-like ties and zeros (exactly representable: b - 0 == b)."""
    return np.round(np.random.default_rng(seed).normal(0.05, 0.15, n) / 0.05) * 0.05


WILCOXON_CASES = {
    "n=8, ties and zeros (exact sign-flip distribution)": np.array([0.1, -0.2, 0.2, 0, 0.3, 0.1, 0.4, 0]),
    "n=20, no ties (exact distribution)": np.random.default_rng(0).normal(0.05, 0.15, 20),
    "n=30, ties and zeros (normal approximation)": _rounded_diffs(30, 1),
    "n=80 (normal approximation)": _rounded_diffs(80, 2),
}


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize("case", list(WILCOXON_CASES))
def test_wilcoxon_equals_scipy(case, zero_method):
    d = WILCOXON_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = st.wilcoxon(d, zero_method=zero_method).pvalue
    a = np.zeros(d.size)
    assert wilcoxon_test(a, d, zero_method=zero_method) == pytest.approx(ref, rel=1e-12)
    assert wilcoxon_test(d, a, zero_method=zero_method) == pytest.approx(ref, rel=1e-12)  # two-sided


def test_wilcoxon_edge_cases():
    assert wilcoxon_test(FIXED_A, FIXED_A) == 1.0  # all differences zero
    assert wilcoxon_test([0.2], [0.5]) == 1.0  # one query: exact distribution, p = 1
    # two queries, d = [0.1, -0.2]: W+ = 1, exact two-sided p = 1.0 (every outcome is as extreme)
    assert wilcoxon_test([0.5, 0.5], [0.6, 0.3]) == pytest.approx(st.wilcoxon([0.1, -0.2]).pvalue)
    # five queries all improving, no ties: exact p = 2 / 2^5 = 0.0625
    assert wilcoxon_test(np.zeros(5), [0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(0.0625)


def test_randomization_exact_hand_computed():
    # d = [1, 2, 3]: the 8 sign-flipped sums are +-6, +-4, +-2, 0, 0; |sum| >= 6 for 2 of them -> p = 2/8
    assert randomization_test(np.zeros(3), [1.0, 2.0, 3.0]) == 0.25
    # d = [-0.2, 0.4, 0.9, 0.3], total 1.4. Flipping a subset S gives 1.4 - 2 sum(S), so |.| >= 1.4 iff
    # sum(S) <= 0: {}, {-.2}; or sum(S) >= 1.4: {.4, .9, .3} (1.6), all four (1.4)  -> p = 4/16 = 0.25.
    # "All four" ties the observed |sum| exactly; in floats it misses by rounding (3/16 without a tolerance).
    assert randomization_test(np.zeros(4), [-0.2, 0.4, 0.9, 0.3]) == 0.25
    # zero differences do not count: d = [1, 1, 0, 0] -> {}, all of the two non-zero -> 2/4
    assert randomization_test(np.zeros(4), [1.0, 1.0, 0.0, 0.0]) == 0.5


def test_randomization_detects_large_difference_and_never_returns_zero():
    rng = np.random.default_rng(1)
    a, b = null_pair(rng, 200, shift=0.3)
    assert randomization_test(a, b, n_resamples=99) == pytest.approx(1 / 100)  # the add-one minimum
    assert randomization_test(a, b) == pytest.approx(1 / 10_001)


def test_randomization_null_is_not_small_and_seeded():
    rng = np.random.default_rng(2)
    a, b = null_pair(rng, 100)
    p = randomization_test(a, b, seed=7)
    assert p == randomization_test(a, b, seed=7)  # reproducible
    assert p > 0.05
    assert randomization_test(a, a) == 1.0
    # Monte Carlo and the t-test agree roughly on a well-behaved null sample
    assert p == pytest.approx(paired_ttest(a, b)[1], abs=0.05)


@settings(max_examples=30, deadline=None)
@given(hst.lists(hst.tuples(hst.floats(0, 1), hst.floats(0, 1)), min_size=1, max_size=40))
def test_randomization_p_in_range_and_symmetric(pairs):
    a, b = np.array(pairs).T
    p = randomization_test(a, b, n_resamples=200)
    assert 0 < p <= 1
    assert p == randomization_test(b, a, n_resamples=200)


def test_monte_carlo_agrees_with_exact():
    d = np.array([0.05, -0.1, 0.2, 0.15, 0.3, -0.05, 0.1, 0.25, -0.2, 0.12, 0.08, 0.4])  # 12 non-zero
    exact = randomization_test(np.zeros(12), d, n_resamples=4096)  # 2^12 = 4096 -> enumerated
    mc = randomization_test(np.zeros(12), d, n_resamples=4095, seed=3)  # one short -> Monte Carlo
    assert mc == pytest.approx(exact, abs=0.01)


def test_size_under_the_null():
    """Over many seeded null samples, each test rejects at alpha = 0.05 about 5% of the time."""
    rng = np.random.default_rng(2024)
    trials = 400
    rejected_rand = rejected_t = 0
    for trial in range(trials):
        a, b = null_pair(rng, 50)
        rejected_rand += randomization_test(a, b, n_resamples=1000, seed=trial) < 0.05
        rejected_t += paired_ttest(a, b)[1] < 0.05
    # binomial(400, 0.05): sd 1.1%, so [2%, 9%] is about -2.8 .. +3.7 sd
    assert 0.02 <= rejected_rand / trials <= 0.09
    assert 0.02 <= rejected_t / trials <= 0.09


def test_power_against_a_real_difference():
    rng = np.random.default_rng(5)
    trials = 100
    hits = sum(
        randomization_test(*null_pair(rng, 50, shift=0.2), n_resamples=1000, seed=t) < 0.05
        for t in range(trials)
    )
    assert hits / trials >= 0.9


def test_mcnemar_exact_is_the_sign_test_of_the_discordant_pairs():
    from diagnose.stats import mcnemar_exact

    # 6 wins, 0 losses: both tails of Binomial(6, 1/2) at 0 and 6: 2 * (1/64) = 0.03125
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    # 3 wins, 1 loss: P(X <= 1) = (1 + 4) / 16, doubled: 10/16 = 0.625
    assert mcnemar_exact(3, 1) == pytest.approx(10 / 16)
    assert mcnemar_exact(2, 2) == 1.0 and mcnemar_exact(0, 0) == 1.0  # capped at 1; no discordant pair
    for wins, losses in [(0, 9), (7, 2), (13, 4), (40, 25)]:
        assert mcnemar_exact(wins, losses) == pytest.approx(st.binomtest(wins, wins + losses).pvalue)
