"""Label-free failure risk: hand-computed features, a synthetic run where failing queries are flat (AUC ~ 1), a
random one (AUC ~ 0.5), and the demo corpus runs (AUCs reported, not asserted)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnose.data import DataError, Qrels, Run
from diagnose.failures.risk import FEATURES, RISK_COLUMNS, failure_risk, validate_risk

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


def run_of(lists: dict[str, list[float]], name: str = "run") -> Run:
    return Run.from_ranked_lists(
        name, {q: [(f"{q}_d{i}", s) for i, s in enumerate(sc)] for q, sc in lists.items()}
    )


def qrels_of(relevant: dict[str, str]) -> Qrels:
    return Qrels(
        pd.DataFrame(
            {
                "query_id": list(relevant),
                "doc_id": list(relevant.values()),
                "relevance": np.ones(len(relevant), int),
            }
        )
    )


def test_features_by_hand():
    # BM25-like scores (outside [-1, 1]: no confidence). q1 [3, 1], q2 [2, 2]. Pooled top-k scores 3, 1, 2, 2:
    # mean 2, population sd sqrt((1 + 1 + 0 + 0) / 4) = sqrt(0.5). z: q1 [+1.414, -1.414], q2 [0, 0].
    r = failure_risk(run_of({"q1": [3.0, 1.0], "q2": [2.0, 2.0]}), k=10).set_index("query_id")
    assert r.at["q1", "top1"] == pytest.approx(math.sqrt(2))
    assert r.at["q1", "gap12"] == pytest.approx(2 * math.sqrt(2))
    assert r.at["q1", "spread"] == pytest.approx(math.sqrt(2))  # population sd of +-1.414
    assert r.at["q1", "mean_k"] == pytest.approx(0.0) and r.at["q2", "mean_k"] == pytest.approx(0.0)
    assert np.isnan(r["confidence"]).all()
    # percentile ranks (2 queries, ties averaged): top1, gap12, spread: q1 1.0, q2 0.5; mean_k tied: 0.75 each.
    # risk = 1 - mean: q1 1 - (1 + 1 + 1 + 0.75) / 4 = 0.0625; q2 1 - (0.5 * 3 + 0.75) / 4 = 0.4375 -> q2 riskiest
    assert r.at["q1", "risk"] == pytest.approx(0.0625) and r.at["q2", "risk"] == pytest.approx(0.4375)
    assert r.at["q2", "risk_rank"] == 1 and r.at["q1", "risk_rank"] == 2


def test_confidence_for_a_dense_run_and_one_document_lists():
    # cosines (all in [-1, 1]: dense). q1 [0.9, 0.1]: confidence 1 / (1 + exp(-0.8 / 0.05)) = 1 / (1 + e^-16);
    # q2 [0.5, 0.5]: 1 / (1 + 1) = 0.5. q3 has one document: gap12 NaN (left out of its mean), spread 0.
    r = failure_risk(run_of({"q1": [0.9, 0.1], "q2": [0.5, 0.5], "q3": [0.7]})).set_index("query_id")
    assert r.at["q1", "confidence"] == pytest.approx(1 / (1 + math.exp(-16)))
    assert r.at["q2", "confidence"] == pytest.approx(0.5)
    assert np.isnan(r.at["q3", "gap12"]) and r.at["q3", "spread"] == 0.0 and r.at["q3", "n_scores"] == 1
    assert r.at["q3", "confidence"] == pytest.approx(1.0)
    assert list(failure_risk(run_of({"q": [0.5]}), dense=False).columns) == list(RISK_COLUMNS)
    assert np.isnan(failure_risk(run_of({"q": [0.5]}), dense=False)["confidence"]).all()


def test_normalised_per_run_scale_free():
    # the same run with scores x 10 + 3 (another scale): identical features in sd units and identical risk
    lists = {"q1": [0.9, 0.4, 0.3], "q2": [0.5, 0.49, 0.48], "q3": [0.8, 0.2, 0.1]}
    a = failure_risk(run_of(lists), dense=False)
    b = failure_risk(run_of({q: [10 * s + 3 for s in v] for q, v in lists.items()}), dense=False)
    pd.testing.assert_frame_equal(a, b, check_exact=False, atol=1e-9)


def test_flat_failing_queries_give_an_auc_near_one():
    # 40 queries: the 20 that succeed have a steep list (0.9 then 0.5 ... 0.41) with the relevant document first;
    # the 20 that fail have a flat list (0.6, 0.599, ...) and their relevant document is not retrieved.
    rng = np.random.default_rng(0)
    lists, rel = {}, {}
    for i in range(40):
        q = f"q{i:02d}"
        if i % 2 == 0:
            lists[q] = [0.9 + 0.05 * rng.random()] + list(np.linspace(0.5, 0.41, 9))
            rel[q] = f"{q}_d0"
        else:
            lists[q] = list(np.linspace(0.6, 0.59, 10) + 0.02 * rng.random())
            rel[q] = f"{q}_missing"
    run = run_of(lists)
    v = validate_risk(failure_risk(run, k=10), qrels_of(rel), run, 10)
    assert (v.n_queries, v.n_failed, v.n_unscored) == (40, 20, 0)
    assert v.auc >= 0.95
    assert v.failure_rate == 0.5 and v.failure_rate_top == 1.0  # the riskiest 8 (20%) all fail
    assert set(v.feature_auc) == set(FEATURES)
    assert "ROC AUC" in v.sentence() and v.to_dict()["auc"] == v.auc


def test_random_scores_give_an_auc_near_one_half():
    # 400 queries with random score lists and failures drawn independently of them (seeded): no signal.
    # The AUC's standard error at 200 vs 200 is about sqrt((n1 + n2 + 1) / (12 n1 n2)) = 0.029; +-0.1 is > 3 SE.
    rng = np.random.default_rng(42)
    lists, rel = {}, {}
    for i in range(400):
        q = f"q{i:03d}"
        lists[q] = sorted(rng.random(10), reverse=True)
        rel[q] = f"{q}_d0" if rng.random() < 0.5 else f"{q}_missing"
    run = run_of(lists)
    v = validate_risk(failure_risk(run), qrels_of(rel), run, 10)
    assert abs(v.auc - 0.5) < 0.1
    # five features alone: a looser bound (with seed 42 the farthest, spread, sits at 0.415, ~2.9 SE)
    assert all(abs(a - 0.5) < 0.15 for a in v.feature_auc.values())


def test_unjudged_and_unanswered_queries():
    # q_prod is not judged: ranked, ignored by the validation. q_none is golden but the run returned nothing:
    # no risk row, counted as unscored. All scored golden queries succeed -> the AUC is undefined (NaN).
    run = run_of({"q1": [0.9, 0.1], "q_prod": [0.3, 0.29]})
    risk = failure_risk(run)
    assert set(risk["query_id"]) == {"q1", "q_prod"}
    v = validate_risk(risk, qrels_of({"q1": "q1_d0", "q_none": "x"}), run, 10)
    assert v.n_queries == 1 and v.n_unscored == 1 and math.isnan(v.auc)
    with pytest.raises(DataError, match="columns"):
        validate_risk(risk.drop(columns="risk"), qrels_of({"q1": "q1_d0"}), run, 10)
    with pytest.raises(DataError, match="k must be"):
        failure_risk(run, k=0)
    with pytest.raises(DataError, match="no rows"):
        failure_risk(Run.from_ranked_lists("empty", {}))


@pytest.mark.parametrize("name", ["ann_minilm", "bm25_langchain"])
def test_demo_runs(name):
    from diagnose.io import load_dataset

    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / f"{name}.trec"])
    run = ds.runs[name]
    risk = failure_risk(run, k=10)
    assert len(risk) == run.df["query_id"].nunique()
    assert risk["risk_rank"].tolist() == list(range(1, len(risk) + 1))
    v = validate_risk(risk, ds.qrels, run, 10)
    # reported, not asserted: on the demo (2026-11-22) ann_minilm 0.71 (top 20%: 71% fail vs 44%), bm25_langchain
    # 0.55 (43% vs 25%) at k=10
    print(v.sentence(), v.feature_auc)
    assert 0.0 <= v.auc <= 1.0
    assert (name == "ann_minilm") == (
        not math.isnan(v.feature_auc["confidence"])
    )  # cosines only for the ANN run


def test_auc_equals_scikit_learn_with_ties():
    """The core install computes the AUC with scipy's ranks; scikit-learn's roc_auc_score is the reference."""
    from sklearn.metrics import roc_auc_score

    from diagnose.failures.risk import _auc

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        y = rng.integers(0, 2, n)
        score = rng.integers(0, 5, n).astype(float)  # many ties
        if len(set(y)) < 2:
            assert np.isnan(_auc(y, score))
            continue
        assert _auc(y, score) == pytest.approx(roc_auc_score(y, score), abs=1e-12)
