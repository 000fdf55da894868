"""Tests of diagnose.stats: scipy cross-checks, hand-computed examples, and seeded simulations of the
statistical properties users rely on (test size under the null, CI coverage, power at the MDD)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from hypothesis import assume, given, settings
from hypothesis import strategies as hst

from diagnose.data import DataError
from diagnose.stats import (
    Comparison,
    benjamini_hochberg,
    bootstrap_ci,
    compare,
    compare_all,
    effect_size,
    holm,
    min_detectable_difference,
    paired_bootstrap_ci,
    paired_ttest,
    randomised_tukey_hsd,
    randomization_test,
    rank_with_ties,
    topic_set_size,
    wilcoxon_test,
    win_tie_loss,
)

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


def _null_pair(rng: np.random.Generator, n: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Metric-like scores of two runs on n queries: a shared per-query difficulty plus i.i.d. run noise,
    clipped to [0, 1]. With shift=0 the runs are exchangeable on every query (the null is true)."""
    difficulty = rng.random(n)
    a = np.clip(difficulty + rng.normal(0, 0.2, n), 0, 1)
    b = np.clip(difficulty + shift + rng.normal(0, 0.2, n), 0, 1)
    return a, b


FIXED_A = np.array([0.30, 0.55, 0.10, 0.90, 0.42, 0.61, 0.00, 0.75, 0.33, 0.50, 0.20, 0.80])
FIXED_B = np.array([0.35, 0.50, 0.30, 0.95, 0.42, 0.70, 0.10, 0.70, 0.60, 0.52, 0.20, 0.91])


# ---------------------------------------------------------------------------------------------- t-test


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


# ---------------------------------------------------------------------------------------------- wilcoxon


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


# ---------------------------------------------------------------------------------------------- holm


def test_holm_hand_computed():
    # p = [0.01, 0.04, 0.03, 0.005], m = 4. Sorted: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1)
    # times (m - j + 1) = 4, 3, 2, 1:      0.020,      0.030,     0.060,     0.040
    # running max (step-down monotone):    0.020,      0.030,     0.060,     0.060
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # capped at 1: [0.5, 0.6] -> sorted times 2, 1 = 1.0, 0.6 -> running max 1.0, 1.0
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])
    assert holm([0.2]).tolist() == [0.2]
    assert holm([]).size == 0


def test_holm_matches_statsmodels():
    multitest = pytest.importorskip(
        "statsmodels.stats.multitest"
    )  # a test dependency; skipped only without it
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.001])
    np.testing.assert_allclose(holm(p), multitest.multipletests(p, method="holm")[1])


@settings(max_examples=40, deadline=None)  # statsmodels' multipletests takes ~60 ms a call
@given(hst.lists(hst.floats(0, 1), min_size=1, max_size=40))
def test_holm_matches_statsmodels_on_random_pvalues(pvalues):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.array(pvalues)
    np.testing.assert_allclose(holm(p), multitest.multipletests(p, method="holm")[1], rtol=1e-12, atol=1e-15)


def test_holm_rejects_bad_pvalues():
    with pytest.raises(DataError, match="p-values"):
        holm([0.1, float("nan")])
    with pytest.raises(DataError, match="p-values"):
        holm([1.2])


@settings(max_examples=100, deadline=None)
@given(
    hst.lists(hst.floats(0, 1), min_size=1, max_size=30),
    hst.floats(0.001, 0.5),
)
def test_holm_properties(pvalues, alpha):
    p = np.array(pvalues)
    adj = holm(p)
    m = p.size
    assert np.all(adj >= p) and np.all(adj <= 1.0)
    assert np.all(adj <= np.minimum(1.0, m * p) + 1e-15)  # never worse than Bonferroni
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)  # monotone in the raw p-values
    # Same decisions as the textbook step-down: walk the sorted p-values, reject while p_(j) <= alpha/(m-j+1).
    assume(all(abs(pj * (m - j) - alpha) > 1e-9 for j, pj in enumerate(np.sort(p))))  # no float boundary
    rejected = set()
    for j, i in enumerate(order):
        if p[i] > alpha / (m - j):
            break
        rejected.add(int(i))
    assert rejected == {int(i) for i in np.flatnonzero(adj <= alpha)}


# ---------------------------------------------------------------------------------------------- randomization


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
    a, b = _null_pair(rng, 200, shift=0.3)
    assert randomization_test(a, b, n_resamples=99) == pytest.approx(1 / 100)  # the add-one minimum
    assert randomization_test(a, b) == pytest.approx(1 / 10_001)


def test_randomization_null_is_not_small_and_seeded():
    rng = np.random.default_rng(2)
    a, b = _null_pair(rng, 100)
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
        a, b = _null_pair(rng, 50)
        rejected_rand += randomization_test(a, b, n_resamples=1000, seed=trial) < 0.05
        rejected_t += paired_ttest(a, b)[1] < 0.05
    # binomial(400, 0.05): sd 1.1%, so [2%, 9%] is about -2.8 .. +3.7 sd
    assert 0.02 <= rejected_rand / trials <= 0.09
    assert 0.02 <= rejected_t / trials <= 0.09


def test_power_against_a_real_difference():
    rng = np.random.default_rng(5)
    trials = 100
    hits = sum(
        randomization_test(*_null_pair(rng, 50, shift=0.2), n_resamples=1000, seed=t) < 0.05
        for t in range(trials)
    )
    assert hits / trials >= 0.9


# ---------------------------------------------------------------------------------------------- bootstrap


def test_bootstrap_edge_cases_and_seed():
    assert bootstrap_ci([0.4]) == (0.4, 0.4)
    assert bootstrap_ci([0.25] * 7, method="bca") == (0.25, 0.25)
    # BCa undefined (a single resample lies on one side of the mean): falls back to percentile, no NaN
    assert bootstrap_ci(FIXED_A, n_resamples=1, method="bca") == bootstrap_ci(FIXED_A, n_resamples=1)
    assert bootstrap_ci(FIXED_A, seed=3) == bootstrap_ci(FIXED_A, seed=3)
    low, high = bootstrap_ci(FIXED_A)
    assert low < FIXED_A.mean() < high
    with pytest.raises(DataError, match="method"):
        bootstrap_ci(FIXED_A, method="basic")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="confidence"):
        bootstrap_ci(FIXED_A, confidence=95)


def test_paired_bootstrap_uses_the_same_queries():
    rng = np.random.default_rng(4)
    a = rng.random(60)
    # b beats a by exactly 0.05 on every query: whatever queries are resampled, the mean difference is 0.05,
    # although a itself varies a lot (an unpaired bootstrap would give a wide interval around 0.05).
    low, high = paired_bootstrap_ci(a, a + 0.05)
    assert low == pytest.approx(0.05) and high == pytest.approx(0.05)
    b = a + rng.normal(0.02, 0.05, 60)
    assert paired_bootstrap_ci(a, b, seed=9) == bootstrap_ci(b - a, seed=9)


def _scipy_bootstrap(x, method, n_resamples):
    rng = np.random.default_rng(11)
    seed_kw = "rng" if "rng" in inspect.signature(st.bootstrap).parameters else "random_state"
    ci = st.bootstrap((x,), np.mean, method=method, n_resamples=n_resamples, **{seed_kw: rng})
    return ci.confidence_interval


@pytest.mark.parametrize(("ours", "theirs"), [("percentile", "percentile"), ("bca", "BCa")])
def test_bootstrap_agrees_with_scipy(ours, theirs):
    # skewed metric-like data, so BCa and percentile differ; independent RNG streams -> compare up to Monte
    # Carlo error (bootstrap sd of the mean ~ 0.03; sd of a 2.5% quantile estimate from 20,000 resamples ~ 0.0007)
    x = np.random.default_rng(6).beta(0.6, 1.5, size=40)
    low, high = bootstrap_ci(x, n_resamples=20_000, method=ours)
    ref = _scipy_bootstrap(x, theirs, 20_000)
    assert low == pytest.approx(ref.low, abs=0.004)
    assert high == pytest.approx(ref.high, abs=0.004)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_coverage(method):
    """The 95% CI of the mean covers the true mean about 95% of the time (skewed metric-like data, n = 50).
    Over 3,000 such samples we measured 94.2% (percentile) and 94.9% (BCa): a little under 95%, as expected
    for the percentile interval on skewed data."""
    rng = np.random.default_rng(1)
    true_mean = 1 / 3  # Beta(1, 2): mean 1 / (1 + 2)
    trials = 500
    covered = 0
    for trial in range(trials):
        low, high = bootstrap_ci(rng.beta(1, 2, size=50), n_resamples=1000, seed=trial, method=method)
        covered += low <= true_mean <= high
    # binomial(500, 0.945): sd 1.0%, so [90%, 99%] is about -4.5 .. +4.5 sd
    assert 0.90 <= covered / trials <= 0.99


# ---------------------------------------------------------------------------------------------- MDD, W/T/L


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


# ---------------------------------------------------------------------------------------------- inputs


def test_series_are_aligned_on_query_id():
    ids = [f"q{i}" for i in range(FIXED_A.size)]
    a = pd.Series(FIXED_A, index=ids)
    b = pd.Series(FIXED_B, index=ids).iloc[::-1]  # same queries, other order
    assert paired_ttest(a, b) == paired_ttest(FIXED_A, FIXED_B)
    assert win_tie_loss(a, b) == win_tie_loss(FIXED_A, FIXED_B)
    assert paired_bootstrap_ci(a, b) == paired_bootstrap_ci(FIXED_A, FIXED_B)


def test_input_mistakes_name_the_queries():
    ids = ["q1", "q2", "q3"]
    a = pd.Series([0.1, 0.2, 0.3], index=ids)
    with pytest.raises(DataError, match=r"only in the run: 'q9'") as err:
        paired_ttest(a, pd.Series([0.1, 0.2, 0.3], index=["q1", "q2", "q9"]))
    assert "'q3'" in str(err.value)
    with pytest.raises(DataError, match="'q2'"):
        paired_ttest(a, pd.Series([0.1, np.nan, 0.3], index=ids))
    with pytest.raises(DataError, match="repeat"):
        paired_ttest(a, pd.Series([0.1, 0.2, 0.3], index=["q1", "q1", "q3"]))
    with pytest.raises(DataError, match="3 and 2"):
        paired_ttest([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(DataError, match="no queries"):
        randomization_test([], [])
    with pytest.raises(DataError, match="numbers"):
        win_tie_loss(["a", "b"], [0.1, 0.2])


# ---------------------------------------------------------------------------------------------- compare


CONTRACT_KEYS = {
    "metric", "run", "reference", "mean_diff", "ci_low", "ci_high",
    "p_ttest", "p_randomization", "p_wilcoxon", "p_holm", "wins", "ties", "losses",
}  # fmt: skip


def test_compare_record_and_json_contract():
    c = compare(FIXED_A, FIXED_B, metric="ndcg@10", run="bm25", reference="ann")
    assert [f.name for f in dataclasses.fields(Comparison)] == [
        "metric", "run", "reference", "mean_diff", "ci_low", "ci_high", "p_ttest", "p_randomization",
        "p_wilcoxon", "p_holm", "wins", "ties", "losses", "n_queries", "mdd", "significant", "effect_size", "p_bh",
    ]  # fmt: skip
    assert c.mean_diff == pytest.approx(FIXED_B.mean() - FIXED_A.mean())
    assert (c.wins, c.ties, c.losses, c.n_queries) == (8, 2, 2, 12)
    assert c.p_ttest == pytest.approx(st.ttest_rel(FIXED_B, FIXED_A).pvalue)
    assert c.p_holm == c.p_bh == c.p_randomization  # a family of one
    d = FIXED_B - FIXED_A
    assert c.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    assert c.ci_low < c.mean_diff < c.ci_high
    d = c.to_dict()
    assert set(d) >= CONTRACT_KEYS
    json.dumps(d, allow_nan=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.p_holm = 0.0  # type: ignore[misc]
    one = compare([0.2], [0.6], metric="mrr", run="x", reference="y").to_dict()
    assert one["mdd"] is None and one["p_ttest"] == 1.0 and one["effect_size"] is None  # NaN with one query
    json.dumps(one, allow_nan=False)


def test_verdicts():
    rng = np.random.default_rng(3)
    a, b = _null_pair(rng, 200, shift=0.1)
    sig = compare(a, b, metric="ndcg@10", run="bm25", reference="ann")
    assert sig.significant
    text = sig.verdict()
    assert text.startswith(f"bm25 is {sig.mean_diff:.3f} higher than ann on ndcg@10 (95% CI ")
    assert text.endswith(": significant.")
    assert "lower than bm25" in compare(b, a, metric="ndcg@10", run="ann", reference="bm25").verdict()

    a, b = _null_pair(rng, 30)
    ns = compare(a, b, metric="ndcg@10", run="bm25", reference="ann")
    assert not ns.significant
    assert "not significant: the data cannot tell them apart" in ns.verdict()
    assert f"~{ns.mdd:.2g})" in ns.verdict()

    assert "no difference" in compare(a, a, metric="mrr", run="x", reference="y").verdict()


def _tables(rng, n=80):
    ids = [f"q{i}" for i in range(n)]
    base, better = _null_pair(rng, n, shift=0.2)
    _, same = _null_pair(rng, n)
    frame = lambda x: pd.DataFrame({"ndcg@10": x, "recall@10": np.clip(x + 0.1, 0, 1)}, index=ids)  # noqa: E731
    return {"ann": frame(base), "bm25": frame(better), "hybrid": frame(same)}


def test_compare_all_holm_family():
    tables = _tables(np.random.default_rng(12))
    results = compare_all(tables, "ann", ["ndcg@10", "recall@10"], n_resamples=2000)
    assert [(c.metric, c.run) for c in results] == [
        ("ndcg@10", "bm25"), ("ndcg@10", "hybrid"), ("recall@10", "bm25"), ("recall@10", "hybrid"),
    ]  # fmt: skip
    p = [c.p_randomization for c in results]
    # Holm's first step is Bonferroni over the family of 4
    smallest = int(np.argmin(p))
    assert results[smallest].p_holm == pytest.approx(min(1.0, 4 * p[smallest]))
    assert all(c.p_holm >= c.p_randomization for c in results)
    assert all(c.significant == (c.p_holm < 0.05) for c in results)
    assert results[0].significant and not results[1].significant
    # a comparison gives the same raw p-value alone as in the family
    alone = compare(
        tables["ann"]["ndcg@10"], tables["hybrid"]["ndcg@10"], metric="ndcg@10", run="hybrid",
        reference="ann", n_resamples=2000,
    )  # fmt: skip
    assert alone.p_randomization == results[1].p_randomization
    # Benjamini-Hochberg over the same family: its first step for the largest p is p itself, and BH <= Holm
    assert [c.p_bh for c in results] == pytest.approx(list(benjamini_hochberg(p)))
    assert results[int(np.argmax(p))].p_bh == pytest.approx(max(p))
    assert all(c.p_bh <= c.p_holm for c in results)
    # mapping metric -> Series works too
    as_mappings = {name: {"ndcg@10": df["ndcg@10"]} for name, df in tables.items()}
    again = compare_all(as_mappings, "ann", ["ndcg@10"], n_resamples=2000)
    assert [c.p_randomization for c in again] == p[:2]


def test_compare_all_mistakes():
    tables = _tables(np.random.default_rng(13))
    with pytest.raises(DataError, match="'dense'"):
        compare_all(tables, "dense", ["ndcg@10"])
    with pytest.raises(DataError, match="mrr"):
        compare_all(tables, "ann", ["mrr"])
    tables["hybrid"] = tables["hybrid"].drop(index="q5")
    with pytest.raises(DataError, match="'q5'"):
        compare_all(tables, "ann", ["ndcg@10"])


def test_rank_with_ties():
    rng = np.random.default_rng(14)
    n = 150
    ids = [f"q{i}" for i in range(n)]
    best = rng.uniform(0.2, 0.8, n)

    def noise(sd: float) -> np.ndarray:  # mean exactly 0
        z = rng.normal(0, sd, n)
        return z - z.mean()

    # close: 0.002 below the best on average, per-query noise sd 0.05 -> SE 0.004, z ~ 0.5: cannot be told apart
    # worse / worst: 0.1 / 0.2 below with noise sd 0.1 -> SE 0.008, z > 12: clearly below
    runs = {
        name: pd.Series(x, index=ids)
        for name, x in [
            ("worse", best - 0.1 + noise(0.1)),
            ("close", best - 0.002 + noise(0.05)),
            ("best", best),
            ("worst", best - 0.2 + noise(0.1)),
        ]
    }
    rows = rank_with_ties(runs, "ndcg@10", n_resamples=2000)
    assert [(r.rank, r.name, r.tied_with_best) for r in rows] == [
        (1, "best", True), (1, "close", True), (3, "worse", False), (4, "worst", False),
    ]  # fmt: skip
    assert rows[0].mean == pytest.approx(best.mean())
    rank, name, mean, tied = rows[2]  # plain 4-tuples
    assert (rank, name, tied) == (3, "worse", False)
    assert rank_with_ties({"only": runs["best"]}, "ndcg@10") == [
        (1, "only", pytest.approx(best.mean()), True)
    ]


# ---------------------------------------------------------------------------------------------- many runs


def test_benjamini_hochberg_hand_computed():
    # sorted: 0.01 (rank 1), 0.03 (2), 0.04 (3), 0.2 (4); m p / rank = 0.04, 0.06, 0.0533, 0.2;
    # running minimum from the largest down: 0.2, 0.0533, 0.0533, 0.04
    adj = benjamini_hochberg([0.01, 0.04, 0.03, 0.2])
    assert adj == pytest.approx([0.04, 4 * 0.04 / 3, 4 * 0.04 / 3, 0.2])
    assert benjamini_hochberg([]).size == 0
    assert benjamini_hochberg([0.5, 0.5]).tolist() == [0.5, 0.5]  # 2 * 0.5 / 2 for both
    with pytest.raises(DataError, match="p-values"):
        benjamini_hochberg([0.1, 1.5])


@settings(max_examples=40, deadline=None)  # statsmodels' multipletests takes ~60 ms a call
@given(hst.lists(hst.floats(0, 1), min_size=1, max_size=40))
def test_benjamini_hochberg_matches_statsmodels(pvalues):
    from statsmodels.stats.multitest import multipletests

    ours = benjamini_hochberg(pvalues)
    assert ours == pytest.approx(multipletests(pvalues, method="fdr_bh")[1], abs=1e-12)
    assert (ours <= holm(pvalues) + 1e-12).all() and (ours >= np.asarray(pvalues) - 1e-12).all()


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


def _runs(rng: np.random.Generator, n: int, shifts: list[float], difficulty_sd: float = 0.0) -> dict:
    ids = [f"q{i}" for i in range(n)]
    difficulty = rng.normal(0, difficulty_sd, n) if difficulty_sd else np.zeros(n)
    return {
        f"r{i}": pd.Series(np.clip(0.5 + s + difficulty + rng.normal(0, 0.15, n), 0, 1), index=ids)
        for i, s in enumerate(shifts)
    }


def test_tukey_hsd_agrees_with_statsmodels_verdicts():
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    # no shared per-query difficulty, so the independent-groups test is a fair (approximate) reference:
    # r0 and r1 equal, r2 0.15 higher (SE of a difference 0.15 * sqrt(2 / 60) = 0.027: z ~ 5.5)
    runs = _runs(np.random.default_rng(21), 60, [0.0, 0.0, 0.15])
    ours = randomised_tukey_hsd(runs, n_resamples=2000)
    assert list(zip(ours["reference"], ours["run"], strict=True)) == [
        ("r0", "r1"),
        ("r0", "r2"),
        ("r1", "r2"),
    ]
    values = np.concatenate([s.to_numpy() for s in runs.values()])
    groups = np.repeat(list(runs), 60)
    theirs = pairwise_tukeyhsd(values, groups, alpha=0.05)  # pairs in the same order: r0-r1, r0-r2, r1-r2
    assert ours["significant"].tolist() == list(theirs.reject) == [False, True, True]
    assert ours["mean_diff"].to_numpy() == pytest.approx(np.asarray(theirs.meandiffs))
    assert ours["p_tukey"].iloc[0] > 0.2 and theirs.pvalues[0] > 0.2


def test_tukey_hsd_two_runs_is_the_randomization_test():
    # with two runs, shuffling a query's two scores is flipping the sign of its difference, and the range of the
    # two means is |mean difference|: the same test as randomization_test (both Monte Carlo, different draws)
    rng = np.random.default_rng(22)
    a, b = _null_pair(rng, 40, shift=0.05)
    p_tukey = randomised_tukey_hsd({"a": a, "b": b}, n_resamples=20_000)["p_tukey"].iloc[0]
    p_rand = randomization_test(a, b, n_resamples=20_000)
    # two independent estimates of the same p: Monte Carlo SE <= sqrt(0.25 / 20000) = 0.0035 each, <= 0.005 apart
    assert abs(p_tukey - p_rand) < 0.015


def test_tukey_hsd_size_under_the_null():
    # 300 null collections (4 exchangeable runs with a shared per-query difficulty, 20 queries): the chance that
    # *any* of the 6 pairs is called significant should be ~5% (family-wise). Binomial SE sqrt(.05 .95 / 300)
    # = 0.013, so [0.015, 0.10] is ~ -2.7 to +3.9 SE
    rng = np.random.default_rng(23)
    rejected = 0
    for seed in range(300):
        runs = _runs(rng, 20, [0.0] * 4, difficulty_sd=0.2)
        rejected += bool(randomised_tukey_hsd(runs, n_resamples=200, seed=seed)["significant"].any())
    assert 0.015 <= rejected / 300 <= 0.10


def test_tukey_hsd_power_seed_and_inputs():
    rng = np.random.default_rng(24)
    runs = _runs(rng, 50, [0.0, 0.05, 0.2], difficulty_sd=0.2)
    first = randomised_tukey_hsd(runs, n_resamples=1000, seed=3)
    assert first.equals(randomised_tukey_hsd(runs, n_resamples=1000, seed=3))
    assert first.set_index(["reference", "run"]).loc[("r0", "r2"), "significant"]
    # a DataFrame with a column per run, and per-query tables with a metric column, give the same numbers
    frame = pd.DataFrame(runs)
    assert randomised_tukey_hsd(frame, n_resamples=1000, seed=3).equals(first)
    tables = {name: pd.DataFrame({"ndcg@10": s}) for name, s in runs.items()}
    assert randomised_tukey_hsd(tables, "ndcg@10", n_resamples=1000, seed=3).equals(first)
    # p is never 0 (add-one) and the effect size is the paired d_z
    assert (first["p_tukey"] >= 1 / 1001).all()
    d = runs["r2"] - runs["r0"]
    assert first["effect_size"].iloc[1] == pytest.approx(d.mean() / d.std(ddof=1))
    with pytest.raises(DataError, match="at least two runs"):
        randomised_tukey_hsd({"only": runs["r0"]})
    runs["r1"] = runs["r1"].drop(index="q7")
    with pytest.raises(DataError, match="'q7'"):
        randomised_tukey_hsd(runs)
