"""compare and compare_all: input alignment and mistakes, the record and JSON contract, verdicts, the Holm family
over many runs and the ranking with ties.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from stats_testing import FIXED_A, FIXED_B, null_pair

from diagnose.data import DataError
from diagnose.stats import (
    Comparison,
    benjamini_hochberg,
    compare,
    compare_all,
    paired_bootstrap_ci,
    paired_ttest,
    randomization_test,
    rank_with_ties,
    win_tie_loss,
)

# Our functions promise plain numbers without warnings: turn any warning into a failure in this file.
pytestmark = pytest.mark.filterwarnings("error")


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


CONTRACT_KEYS = {
    "metric",
    "run",
    "reference",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_ttest",
    "p_randomization",
    "p_wilcoxon",
    "p_holm",
    "wins",
    "ties",
    "losses",
}


def test_compare_record_and_json_contract():
    c = compare(FIXED_A, FIXED_B, metric="ndcg@10", run="bm25", reference="ann")
    assert [f.name for f in dataclasses.fields(Comparison)] == [
        "metric",
        "run",
        "reference",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p_ttest",
        "p_randomization",
        "p_wilcoxon",
        "p_holm",
        "wins",
        "ties",
        "losses",
        "n_queries",
        "mdd",
        "significant",
        "effect_size",
        "p_bh",
    ]
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
    a, b = null_pair(rng, 200, shift=0.1)
    sig = compare(a, b, metric="ndcg@10", run="bm25", reference="ann")
    assert sig.significant
    text = sig.verdict()
    assert text.startswith(f"bm25 is {sig.mean_diff:.3f} higher than ann on ndcg@10 (95% CI ")
    assert text.endswith(": significant.")
    assert "lower than bm25" in compare(b, a, metric="ndcg@10", run="ann", reference="bm25").verdict()

    a, b = null_pair(rng, 30)
    ns = compare(a, b, metric="ndcg@10", run="bm25", reference="ann")
    assert not ns.significant
    assert "not significant: the data cannot tell them apart" in ns.verdict()
    assert f"~{ns.mdd:.2g})" in ns.verdict()

    assert "no difference" in compare(a, a, metric="mrr", run="x", reference="y").verdict()


def _tables(rng, n=80):
    ids = [f"q{i}" for i in range(n)]
    base, better = null_pair(rng, n, shift=0.2)
    _, same = null_pair(rng, n)
    frame = lambda x: pd.DataFrame({"ndcg@10": x, "recall@10": np.clip(x + 0.1, 0, 1)}, index=ids)  # noqa: E731
    return {"ann": frame(base), "bm25": frame(better), "hybrid": frame(same)}


def test_compare_all_holm_family():
    tables = _tables(np.random.default_rng(12))
    results = compare_all(tables, "ann", ["ndcg@10", "recall@10"], n_resamples=2000)
    assert [(c.metric, c.run) for c in results] == [
        ("ndcg@10", "bm25"),
        ("ndcg@10", "hybrid"),
        ("recall@10", "bm25"),
        ("recall@10", "hybrid"),
    ]
    p = [c.p_randomization for c in results]
    # Holm's first step is Bonferroni over the family of 4
    smallest = int(np.argmin(p))
    assert results[smallest].p_holm == pytest.approx(min(1.0, 4 * p[smallest]))
    assert all(c.p_holm >= c.p_randomization for c in results)
    assert all(c.significant == (c.p_holm < 0.05) for c in results)
    assert results[0].significant and not results[1].significant
    # a comparison gives the same raw p-value alone as in the family
    alone = compare(
        tables["ann"]["ndcg@10"],
        tables["hybrid"]["ndcg@10"],
        metric="ndcg@10",
        run="hybrid",
        reference="ann",
        n_resamples=2000,
    )
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
        (1, "best", True),
        (1, "close", True),
        (3, "worse", False),
        (4, "worst", False),
    ]
    assert rows[0].mean == pytest.approx(best.mean())
    rank, name, mean, tied = rows[2]  # plain 4-tuples
    assert (rank, name, tied) == (3, "worse", False)
    assert rank_with_ties({"only": runs["best"]}, "ndcg@10") == [
        (1, "only", pytest.approx(best.mean()), True)
    ]
