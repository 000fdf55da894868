"""Corrections for many tests: Holm (against statsmodels and its properties) and Benjamini-Hochberg."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as hst

from diagnose.data import DataError
from diagnose.stats import benjamini_hochberg, holm

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


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


@settings(max_examples=40, deadline=None)
@given(hst.lists(hst.floats(0, 1), min_size=1, max_size=40))
def test_holm_matches_statsmodels_on_random_pvalues(pvalues):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.array(pvalues)
    # statsmodels' Holm branch ends with gc.collect() (a memory hint; the values do not depend on it): a full
    # collection over every live object of the process, ~1 s a call in a test worker that holds torch and pandas,
    # so 40 calls took 42 s. It is a no-op for the reference call only.
    with mock.patch.object(gc, "collect", lambda *args: 0):
        expected = multitest.multipletests(p, method="holm")[1]
    np.testing.assert_allclose(holm(p), expected, rtol=1e-12, atol=1e-15)


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
