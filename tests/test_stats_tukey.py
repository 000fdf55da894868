"""Tukey's HSD over many runs (randomized): against statsmodels, equal to the randomization test for two runs, its
size under the null, power, seed and inputs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from stats_testing import null_pair

from diagnose.data import DataError
from diagnose.stats import randomised_tukey_hsd, randomization_test

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


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
    a, b = null_pair(rng, 40, shift=0.05)
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
