"""Power and sizes: the minimum detectable difference, win/tie/loss counts, effect sizes and the topic set size."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from stats_testing import FIXED_A, FIXED_B

from diagnose.data import DataError
from diagnose.stats import effect_size, min_detectable_difference, topic_set_size, win_tie_loss

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


def test_mdd_hand_computed():
    # d = [0.1, 0.3, 0.2, 0.0, 0.4]: n = 5, mean 0.2, squared deviations .01 + .01 + 0 + .04 + .04 = .10,
    # sd = sqrt(.10 / 4) = 0.158114; t_{0.975, 4} = 2.776445, t_{0.8, 4} = 0.940965 (t tables)
    # MDD = (2.776445 + 0.940965) * 0.158114 / sqrt(5) = 3.717410 * 0.0707107 = 0.262861
    d = [0.1, 0.3, 0.2, 0.0, 0.4]
    assert min_detectable_difference(d) == pytest.approx(0.262861, abs=1e-6)
    assert min_detectable_difference(np.zeros(5), d) == pytest.approx(0.262861, abs=1e-6)
    assert min_detectable_difference([0.1, 0.1, 0.1]) == 0.0  # no variance
    assert min_detectable_difference([0.1]) == math.inf  # one query: nothing detectable
    # more queries, same spread -> smaller MDD
    assert min_detectable_difference(d * 4) < min_detectable_difference(d)


def test_power_at_the_mdd_is_about_the_requested_power():
    n, sd = 30, 0.2
    z = np.random.default_rng(0).normal(size=n)
    diffs = (z - z.mean()) / z.std(ddof=1) * sd  # sample sd exactly 0.2
    mdd = min_detectable_difference(diffs)
    # exact power of the two-sided paired t-test when the true mean difference is the MDD: noncentral t
    nc = mdd * math.sqrt(n) / sd
    crit = st.t.ppf(0.975, n - 1)
    power = st.nct.sf(crit, n - 1, nc) + st.nct.cdf(-crit, n - 1, nc)
    assert 0.77 <= power <= 0.81  # the approximation is slightly optimistic, as documented
    # and by simulation
    rng = np.random.default_rng(1)
    samples = rng.normal(mdd, sd, size=(2000, n))
    rate = np.mean(st.ttest_1samp(samples, 0.0, axis=1).pvalue < 0.05)
    assert 0.75 <= rate <= 0.85


def test_win_tie_loss_hand_computed():
    # d = b - a = [+0.05, -0.05, +0.2, +0.05, 0, +0.09, +0.1, -0.05, +0.27, +0.02, 0, +0.11]
    assert win_tie_loss(FIXED_A, FIXED_B) == (8, 2, 2)
    assert win_tie_loss(FIXED_B, FIXED_A) == (2, 2, 8)
    assert win_tie_loss([0.5], [0.5 + 1e-12]) == (0, 1, 0)  # within tol


def test_effect_size_hand_computed_and_edge_cases():
    # d = 0.3 - 0.1 = 0.2 and 0.4 - 0.0 = 0.4: mean 0.3, sd sqrt((0.1^2 + 0.1^2) / 1) = 0.1414 -> d_z = 2.1213
    assert effect_size([0.1, 0.0], [0.3, 0.4]) == pytest.approx(0.3 / math.sqrt(0.02))
    # d_z = t / sqrt(n)
    t = st.ttest_rel(FIXED_B, FIXED_A).statistic
    assert effect_size(FIXED_A, FIXED_B) == pytest.approx(t / math.sqrt(FIXED_A.size))
    assert effect_size(FIXED_A, FIXED_A) == 0.0
    assert effect_size([0.1, 0.2], [0.3, 0.4]) == math.inf  # constant difference 0.2
    assert math.isnan(effect_size([0.1], [0.3]))
    assert effect_size(np.array([0.2, 0.4])) == pytest.approx(0.3 / math.sqrt(0.02))  # differences alone


def test_topic_set_size_matches_statsmodels():
    from statsmodels.stats.power import TTestPower

    for diff, sd in [(0.05, 0.2), (0.1, 0.3), (0.02, 0.25), (0.3, 0.2), (-0.1, 0.3)]:
        n = topic_set_size(diff, sd)
        real = TTestPower().solve_power(effect_size=abs(diff) / sd, alpha=0.05, power=0.8)
        assert n == math.ceil(real), (diff, sd)
        # by construction: power at n reaches 0.8, power at n - 1 does not
        assert (
            TTestPower().power(abs(diff) / sd, n, 0.05)
            >= 0.8
            > TTestPower().power(abs(diff) / sd, n - 1, 0.05)
        )
    # the normal approximation n = ((z_0.975 + z_0.8) / (diff / sd))^2 = ((1.960 + 0.842) / 0.5)^2 = 31.4 is a
    # little optimistic; the t distribution needs a few more queries: 34
    assert topic_set_size(0.1, 0.2) == 34
    assert topic_set_size(0.1, 0.2, power=0.9) > 34 and topic_set_size(0.1, 0.2, alpha=0.01) > 34
    assert topic_set_size(0.1, 0.0) == 2
    with pytest.raises(DataError, match="non-zero"):
        topic_set_size(0.0, 0.2)
    with pytest.raises(DataError, match="sd"):
        topic_set_size(0.1, -1.0)
