"""Hand-computed cases for every metric (arithmetic in the comments) and property tests of invariants."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metrics_testing import every_name

import diagnose.metrics.join as M
from diagnose.data import DataError, Qrels, Run
from diagnose.metrics import (
    REGISTRY,
    Evaluation,
    MetricName,
    evaluate,
    evaluate_many,
    expand_metrics,
    expand_names,
    parse_metric,
    quality_band,
)

ALL = [
    "precision@1",
    "precision@3",
    "precision@5",
    "precision@10",
    "recall@3",
    "recall@5",
    "recall@10",
    "hit_rate@1",
    "hit_rate@3",
    "mrr",
    "mrr@1",
    "mrr@2",
    "ndcg@3",
    "ndcg@5",
    "map",
    "map@3",
    "r_precision",
    "f1@1",
    "f1@5",
]


def make_qrels(rows: list[tuple[str, str, int]]) -> Qrels:
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    df["relevance"] = df["relevance"].astype(np.int64)
    return Qrels(df)


def make_run(lists: dict[str, list[str]], name: str = "run") -> Run:
    """Ranked lists in final order; scores decrease with rank."""
    return Run.from_ranked_lists(
        name, {q: [(d, -float(i)) for i, d in enumerate(ds)] for q, ds in lists.items()}
    )


# q1: R = 3 relevant (d1 grade 2, d2 and d4 grade 1); d3 grade 0, d5 grade -1 (non-relevant, gain 0).
# q2: only a grade-0 judgement -> no relevant document.  q3: one relevant document, missing from the run.
QRELS = make_qrels(
    [
        ("q1", "d1", 2),
        ("q1", "d2", 1),
        ("q1", "d3", 0),
        ("q1", "d4", 1),
        ("q1", "d5", -1),
        ("q2", "d1", 0),
        ("q3", "d7", 1),
    ]
)
# q1 ranks: 1 d3 (0), 2 d1 (2), 3 d9 (unjudged), 4 d5 (-1), 5 d2 (1); d4 is never retrieved. q9 is not judged.
RUN = make_run({"q1": ["d3", "d1", "d9", "d5", "d2"], "q2": ["d1", "d2"], "q9": ["d1"]})

LOG2_3, LOG2_6 = math.log2(3), math.log2(6)
IDCG = 2 + 1 / LOG2_3 + 1 / math.log2(4)  # ideal grades [2, 1, 1] at ranks 1, 2, 3
Q1 = {
    "precision@1": 0.0,  # rank 1 is d3 (grade 0)
    "precision@3": 1 / 3,  # d1 at rank 2
    "precision@5": 2 / 5,  # d1, d2; d5 (grade -1) does not count
    "precision@10": 2 / 10,  # k larger than the list: still divided by 10 (trec_eval P_10)
    "recall@3": 1 / 3,
    "recall@5": 2 / 3,  # d4 is relevant but never retrieved
    "recall@10": 2 / 3,
    "hit_rate@1": 0.0,
    "hit_rate@3": 1.0,
    "mrr": 1 / 2,  # first relevant at rank 2
    "mrr@1": 0.0,  # ... which is beyond k = 1
    "mrr@2": 1 / 2,
    "ndcg@3": (2 / LOG2_3) / IDCG,  # DCG: grade 2 at rank 2; IDCG@3 = 2/1 + 1/log2(3) + 1/log2(4)
    "ndcg@5": (2 / LOG2_3 + 1 / LOG2_6) / IDCG,  # + grade 1 at rank 5; IDCG@5 = IDCG@3 (only 3 gains)
    "map": (1 / 2 + 2 / 5) / 3,  # precision at ranks 2 and 5, divided by R = 3 -> 0.3
    "map@3": (1 / 2) / 3,  # only rank 2 is within k, still divided by R = 3 (trec_eval map_cut)
    "r_precision": 1 / 3,  # R = 3: one relevant in the top 3
    "f1@1": 0.0,  # P = R = 0
    "f1@5": 2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3),  # = (8/15) / (16/15) = 0.5
}


def test_every_metric_hand_computed():
    ev = evaluate(QRELS, RUN, ALL)
    assert isinstance(ev, Evaluation)
    assert list(ev.per_query.columns) == ALL
    assert ev.per_query.index.name == "query_id"
    assert list(ev.per_query.index) == ["q1", "q3"]  # qrels order, q2 has no relevant document
    for name, expected in Q1.items():
        assert ev.per_query.loc["q1", name] == pytest.approx(expected, abs=1e-12), name
    assert Q1["map"] == pytest.approx(0.3) and Q1["f1@5"] == pytest.approx(0.5)


def test_missing_no_relevant_and_unjudged_queries():
    ev = evaluate(QRELS, RUN, ALL)
    assert ev.missing_queries == ["q3"]
    assert (ev.per_query.loc["q3"] == 0.0).all()  # scored 0 on every metric, like trec_eval -c
    assert ev.no_relevant_queries == ["q2"]
    assert ev.unjudged_queries == ["q9"]
    # the aggregate averages q1 and q3 (zeros): half of q1's values
    for name, expected in Q1.items():
        assert ev.aggregate[name] == pytest.approx(expected / 2, abs=1e-12), name
    assert ev.n_queries == 2 and ev.run_name == "run"


def test_graded_gains_are_linear():
    # grades 3 and 1; run puts the grade-1 doc first.
    # DCG@2 = 1/1 + 3/log2(3) = 2.8928; IDCG@2 = 3/1 + 1/log2(3) = 3.6309; exponential gains would give
    # (1 + 7/log2 3) / (7 + 1/log2 3) = 0.7213 instead.
    qrels = make_qrels([("q", "a", 3), ("q", "b", 1)])
    ev = evaluate(qrels, make_run({"q": ["b", "a"]}), ["ndcg@2", "ndcg@1"])
    assert ev.aggregate["ndcg@2"] == pytest.approx((1 + 3 / LOG2_3) / (3 + 1 / LOG2_3), abs=1e-12)
    assert ev.aggregate["ndcg@1"] == pytest.approx(1 / 3, abs=1e-12)  # DCG@1 = 1, IDCG@1 = 3


def test_ideal_dcg_uses_unretrieved_judgements():
    # a (2) is retrieved at rank 1, b (2) is judged but not retrieved: IDCG@2 = 2 + 2/log2(3), DCG@2 = 2
    qrels = make_qrels([("q", "a", 2), ("q", "b", 2), ("q", "c", 0)])
    ev = evaluate(qrels, make_run({"q": ["a", "c"]}), ["ndcg@2", "ndcg@10"])
    assert ev.aggregate["ndcg@2"] == pytest.approx(2 / (2 + 2 / LOG2_3), abs=1e-12)
    assert ev.aggregate["ndcg@10"] == pytest.approx(2 / (2 + 2 / LOG2_3), abs=1e-12)


def test_no_relevant_retrieved_is_zero_everywhere():
    qrels = make_qrels([("q", "a", 1), ("q", "b", 0)])
    ev = evaluate(qrels, make_run({"q": ["b", "x", "y"]}), ALL)
    assert (ev.per_query.loc["q"] == 0.0).all()
    assert ev.missing_queries == []


def test_negative_grades_are_not_relevant():
    # grade -1 at rank 1, grade 1 at rank 2: precision@1 = 0, mrr = 1/2, R = 1 (the -1 is not counted)
    qrels = make_qrels([("q", "neg", -1), ("q", "pos", 1)])
    ev = evaluate(qrels, make_run({"q": ["neg", "pos"]}), ["precision@1", "mrr", "recall@2", "ndcg@2"])
    assert ev.aggregate == pytest.approx(
        {"precision@1": 0.0, "mrr": 0.5, "recall@2": 1.0, "ndcg@2": 1 / LOG2_3}
    )


def test_query_with_only_negative_and_zero_grades_is_no_relevant():
    qrels = make_qrels([("a", "d", -1), ("a", "e", 0), ("b", "d", 1)])
    ev = evaluate(qrels, make_run({"a": ["d"], "b": ["d"]}), ["ndcg@10"])
    assert ev.no_relevant_queries == ["a"]
    assert list(ev.per_query.index) == ["b"]


def test_ties_are_already_ordered_by_rank_not_by_row_order_or_score():
    # same score for both docs: the rank column decides (the reader ordered ties the trec_eval way)
    df = pd.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["rel", "non"], "score": [1.0, 1.0], "rank": np.array([2, 1])}
    )
    ev = evaluate(make_qrels([("q", "rel", 1)]), Run("r", df), ["mrr", "precision@1"])
    assert ev.aggregate == {"mrr": 0.5, "precision@1": 0.0}


def test_relevance_level_two():
    # trec_eval -l2: relevant = grade >= 2, nDCG still gains every grade > 0.
    # q: a (1) rank 1, b (2) rank 2, c (3) unretrieved. R = 2 (b, c). mrr = 1/2, map = (1/2)/2.
    qrels = make_qrels([("q", "a", 1), ("q", "b", 2), ("q", "c", 3), ("z", "a", 1)])
    ev = evaluate(qrels, make_run({"q": ["a", "b"]}), ["mrr", "map", "ndcg@3"], relevance_level=2)
    dcg = 1 + 2 / LOG2_3
    idcg = 3 + 2 / LOG2_3 + 1 / math.log2(4)
    assert ev.aggregate == pytest.approx({"mrr": 0.5, "map": 0.25, "ndcg@3": dcg / idcg})
    assert ev.no_relevant_queries == ["z"]  # only a grade-1 judgement
    with pytest.raises(DataError, match="relevance_level"):
        evaluate(qrels, make_run({"q": ["a"]}), ["mrr"], relevance_level=0)


def test_duplicate_doc_in_run_counts_once_at_best_rank():
    # a at ranks 1 and 3 (a reader would have removed the second): R = 1, recall@3 = 1 not 2, map = 1/1
    ev = evaluate(
        make_qrels([("q", "a", 1)]), make_run({"q": ["a", "x", "a"]}), ["recall@3", "map", "precision@3"]
    )
    assert ev.aggregate == pytest.approx({"recall@3": 1.0, "map": 1.0, "precision@3": 1 / 3})


def test_duplicate_judgement_keeps_the_last_grade():
    qrels = make_qrels([("q", "a", 1), ("q", "b", 1), ("q", "a", 0)])  # a: 1 then 0 -> not relevant; R = 1
    ev = evaluate(qrels, make_run({"q": ["a", "b"]}), ["mrr", "recall@1"])
    assert ev.aggregate == {"mrr": 0.5, "recall@1": 0.0}


def test_empty_run_scores_every_query_zero():
    run = Run(
        "empty",
        pd.DataFrame({"query_id": [], "doc_id": [], "score": [], "rank": np.array([], dtype=np.int64)}),
    )
    ev = evaluate(QRELS, run, ["ndcg@10", "mrr"])
    assert ev.missing_queries == ["q1", "q3"]
    assert ev.aggregate == {"ndcg@10": 0.0, "mrr": 0.0}


def test_zero_based_ranks_are_a_data_error():
    df = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "rank": np.array([0])})
    with pytest.raises(DataError, match="ranks must be 1-based.*'q'.*'a'"):
        evaluate(make_qrels([("q", "a", 1)]), Run("r", df), ["mrr"])


def test_no_relevant_document_at_all_is_a_data_error():
    with pytest.raises(DataError, match="no query has a relevant document"):
        evaluate(make_qrels([("q", "a", 0)]), make_run({"q": ["a"]}), ["mrr"])


def test_non_integer_grades():
    df = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1.0, 0.0]})
    assert evaluate(Qrels(df), make_run({"q": ["a"]}), ["mrr"]).aggregate == {"mrr": 1.0}
    df["relevance"] = [0.5, 1.0]
    with pytest.raises(DataError, match="integer grade.*'a'"):
        evaluate(Qrels(df, source="q.tsv"), make_run({"q": ["a"]}), ["mrr"])


def test_evaluate_many_matches_evaluate_and_keeps_order():
    other = make_run({"q1": ["d4", "d2", "d1"], "q3": ["d7"]}, name="other")
    many = evaluate_many(QRELS, {"b": RUN, "a": other}, ALL)
    assert list(many) == ["b", "a"]
    for key, run in [("b", RUN), ("a", other)]:
        single = evaluate(QRELS, run, ALL)
        pd.testing.assert_frame_equal(many[key].per_query, single.per_query)
        assert many[key].missing_queries == single.missing_queries
    assert many["a"].aggregate["mrr"] == pytest.approx(1.0)  # d4 relevant at rank 1, d7 at rank 1


def test_arrow_and_object_string_columns_agree():
    arrow_q = Qrels(QRELS.df.astype({"query_id": "str", "doc_id": "str"}))
    arrow_r = Run("run", RUN.df.astype({"query_id": "str", "doc_id": "str"}))
    a, b = evaluate(arrow_q, arrow_r, ALL), evaluate(QRELS, RUN, ALL)
    pd.testing.assert_frame_equal(a.per_query, b.per_query, check_index_type=False)
    assert (a.missing_queries, a.unjudged_queries) == (b.missing_queries, b.unjudged_queries)


def test_fingerprint_collisions_are_caught_on_the_ids(monkeypatch):
    # fingerprint = string length: "x" looks like relevant "a", "yy" like relevant "bb". The key lookup finds them,
    # the check on the id strings must drop them: relevant at ranks 2 and 4 -> mrr 1/2, precision@5 2/5, recall 1.
    monkeypatch.setattr(M, "fingerprints", lambda arr: np.array([len(s) for s in arr.to_pylist()], np.uint64))
    qrels = make_qrels([("q", "a", 1), ("q", "bb", 1)])
    assert M.prepare(qrels).keys_unique  # the two positive keys differ: the fast join is used
    ev = evaluate(qrels, make_run({"q": ["x", "a", "yy", "bb", "zzz"]}), ["mrr", "precision@5", "recall@5"])
    assert ev.aggregate == pytest.approx({"mrr": 0.5, "precision@5": 0.4, "recall@5": 1.0})


def test_colliding_positive_keys_use_the_exact_join(monkeypatch):
    expected = evaluate(QRELS, RUN, ALL).per_query
    monkeypatch.setattr(M, "fingerprints", lambda arr: np.zeros(len(arr), dtype=np.uint64))
    assert not M.prepare(QRELS).keys_unique  # d1, d2, d4 of q1 now share one key: pandas merge on the ids
    pd.testing.assert_frame_equal(evaluate(QRELS, RUN, ALL).per_query, expected)


def test_crowded_table_slots_fall_back_to_binary_search(monkeypatch):
    expected = evaluate(QRELS, RUN, ALL).per_query
    # small keys (byte sums of the ids, distinct here): every key lands in table slot 0, which is then marked
    # crowded -> binary search for every lookup
    monkeypatch.setattr(
        M, "fingerprints", lambda arr: np.array([sum(s.encode()) for s in arr.to_pylist()], np.uint64)
    )
    monkeypatch.setattr(M, "pair_keys", lambda fp, q: fp * np.uint64(1000) + (q + 1).astype(np.uint64))
    prep = M.prepare(QRELS)
    assert prep.keys_unique and prep.table[0] == -2
    pd.testing.assert_frame_equal(evaluate(QRELS, RUN, ALL).per_query, expected)


# --------------------------------------------------------------------------------------------- names


def test_parse_metric():
    assert parse_metric("ndcg@10") == ("ndcg", 10)
    assert parse_metric(" NDCG@10 ") == ("ndcg", 10)
    assert parse_metric("mrr") == ("mrr", None)
    assert parse_metric("map@100") == ("map", 100)
    assert parse_metric("r_precision") == ("r_precision", None)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("precision", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("ndcg@0", "positive integer"),
        ("ndcg@x", "positive integer"),
        ("P_10", "Did you mean 'precision@10'"),
        ("ndcg_cut_10", "Did you mean 'ndcg@10'"),
        ("recip_rank", "Did you mean 'mrr'"),
        ("ndgc@10", "Did you mean 'ndcg@10'"),
        ("bpref", "Valid metrics: precision@k"),
    ],
)
def test_bad_metric_names(name, message):
    with pytest.raises(DataError, match=message):
        evaluate(QRELS, RUN, [name])


def test_expand_metrics():
    assert expand_metrics(["ndcg"], [1, 10]) == ["ndcg@1", "ndcg@10"]
    assert expand_metrics(["ndcg@5", "mrr", "map", "r_precision", "f1"], [10]) == [
        "ndcg@5",
        "mrr",
        "map",
        "r_precision",
        "f1@10",
    ]
    assert expand_metrics(["recall", "recall@10", "RECALL@10"], [10]) == ["recall@10"]
    default = expand_metrics(None, [1, 10])
    assert default == [
        *(f"{f}@{k}" for f in ["precision", "recall", "hit_rate", "mrr", "ndcg", "map"] for k in [1, 10]),
        "mrr",
        "map",
        "r_precision",
    ]
    evaluate(QRELS, RUN, default)  # every default name is valid
    with pytest.raises(DataError, match="Valid metrics"):
        expand_metrics(["ndcg", "foo"], [10])
    with pytest.raises(DataError, match="positive integers"):
        expand_metrics(["ndcg"], [0])
    with pytest.raises(DataError, match="needs a cutoff"):
        expand_metrics(["ndcg"], [])


def test_every_family_declares_its_band():
    # a quality metric has band limits 0 < a < b < c <= 1; a coverage metric (how far the qrels cover the run,
    # tests/test_metrics_holes.py) has none, and quality_band says so
    for m in REGISTRY.values():
        name = m.name if m.cutoff == "none" else f"{m.name}@10"
        if m.coverage:
            assert m.band is None and quality_band(name, 0.5) == "n/a", m.name
        else:
            a, b, c = m.band
            assert 0 < a < b < c <= 1, m.name
            assert [quality_band(name, v) for v in (0.0, a, b, c)] == [
                "poor",
                "acceptable",
                "good",
                "excellent",
            ]


def test_metric_name_is_parsed_once():
    n = parse_metric(" NDCG@10 ")
    assert n == MetricName("ndcg", 10) and str(n) == "ndcg@10" and n.metric is REGISTRY["ndcg"]
    assert parse_metric(n) is n  # a record passes through unparsed
    family, k = parse_metric("mrr")  # still a (family, k) pair
    assert (family, k) == ("mrr", None) and str(MetricName("mrr")) == "mrr"
    # expand_names keeps records as they are and parses text; expand_metrics gives the same names as text
    names = expand_names([MetricName("map", 5), "recall", "mrr"], [1, 10])
    assert names == [
        MetricName("map", 5),
        MetricName("recall", 1),
        MetricName("recall", 10),
        MetricName("mrr"),
    ]
    assert expand_metrics([MetricName("map", 5), "recall", "mrr"], [1, 10]) == [str(n) for n in names]
    ev = evaluate(QRELS, RUN, [MetricName("ndcg", 3), "ndcg@3", "mrr"])  # duplicates dropped
    assert ev.metrics == ["ndcg@3", "mrr"]


@pytest.mark.parametrize(
    ("metric", "value", "band"),
    [
        ("ndcg@10", 0.29, "poor"),
        ("ndcg@10", 0.3, "acceptable"),
        ("ndcg@10", 0.49, "acceptable"),
        ("ndcg@10", 0.5, "good"),
        ("ndcg@10", 0.7, "excellent"),
        ("recall@100", 0.95, "excellent"),
        ("mrr", 0.1, "poor"),
        ("r_precision", 0.45, "good"),
        ("ndcg@10", float("nan"), "n/a"),
    ],
)
def test_quality_band(metric, value, band):
    assert quality_band(metric, value) == band


def test_quality_band_unknown_metric():
    with pytest.raises(DataError):
        quality_band("bpref", 0.5)


# --------------------------------------------------------------------------------------------- properties

DOCS = [f"d{i}" for i in range(8)]


@st.composite
def collections(draw):
    """Random graded qrels (grades -1..3) and a run over 1-4 queries, ties and all."""
    n_q = draw(st.integers(1, 4))
    rows, lists = [], {}
    for qi in range(n_q):
        q = f"q{qi}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        grades = draw(st.lists(st.integers(-1, 3), min_size=len(judged), max_size=len(judged)))
        rows += [(q, d, g) for d, g in zip(judged, grades, strict=True)]
        if draw(st.booleans()) or qi == 0:
            lists[q] = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
    if not any(g > 0 for _, _, g in rows):
        rows.append(("q0", "d0", 1))
    return make_qrels(rows), make_run(lists)


KS = [1, 2, 3, 5, 10]
PROPS = every_name(KS)  # every registered family, so a new one is checked in [0, 1] and for row order
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(collections())
def test_properties(data):
    qrels, run = data
    ev = evaluate(qrels, run, PROPS)
    values = ev.per_query.to_numpy()
    assert ((values >= 0) & (values <= 1 + 1e-12)).all()
    pq = dict(zip(PROPS, values.T, strict=True))
    for a, b in zip(KS, KS[1:], strict=False):
        assert (pq[f"recall@{a}"] <= pq[f"recall@{b}"] + 1e-12).all()  # recall@k grows with k
        assert (pq[f"hit_rate@{a}"] <= pq[f"hit_rate@{b}"]).all()
        assert (pq[f"map@{a}"] <= pq[f"map@{b}"] + 1e-12).all()
    for k in KS:
        p, h = pq[f"precision@{k}"], pq[f"hit_rate@{k}"]
        assert (h >= p).all()  # hit_rate@k >= precision@k ...
        assert ((p > 0) == (h > 0)).all()  # ... and precision@k > 0 iff hit_rate@k > 0
        assert ((pq[f"mrr@{k}"] > 0) == (h > 0)).all()
    assert (pq["mrr"] >= pq["mrr@10"]).all()
    assert ev.aggregate["ndcg@10"] == pytest.approx(pq["ndcg@10"].mean())  # plain mean of the column


@FAST
@given(collections())
def test_ideal_run_scores_one(data):
    qrels, _ = data
    df = qrels.df
    # every judged document of each query, by decreasing grade: the ideal ranking
    ideal = {
        q: list(g.sort_values("relevance", ascending=False, kind="stable")["doc_id"])
        for q, g in df.groupby("query_id", sort=False)
    }
    ev = evaluate(qrels, make_run(ideal), ["ndcg@1", "ndcg@3", "ndcg@10", "map", "r_precision", "mrr"])
    assert np.allclose(ev.per_query.to_numpy(), 1.0)


@FAST
@given(collections(), st.randoms(use_true_random=False))
def test_row_order_does_not_matter(data, rnd):
    qrels, run = data
    order = list(range(len(run.df)))
    rnd.shuffle(order)
    shuffled = Run(run.name, run.df.iloc[order].reset_index(drop=True))
    a, b = evaluate(qrels, run, PROPS), evaluate(qrels, shuffled, PROPS)
    assert np.array_equal(a.per_query.to_numpy(), b.per_query.to_numpy())
    assert sorted(a.unjudged_queries) == sorted(b.unjudged_queries)


def test_the_headline_metrics_take_k_where_their_family_requires_a_cutoff():
    from diagnose.metrics import HEADLINE, headline_metrics

    # ndcg, recall and hit_rate require a cutoff (@5); mrr's is optional, so the headline takes it over the whole ranking
    assert headline_metrics(5) == ["ndcg@5", "recall@5", "hit_rate@5", "mrr"]
    assert [m.split("@")[0] for m in headline_metrics(1)] == list(HEADLINE)


def test_the_fusion_table_and_the_bounds_show_the_headline_metrics():
    from diagnose.analysis import Analysis
    from diagnose.data import Dataset
    from diagnose.whatif.compare import fusion_whatif

    qrels = make_qrels([("q1", "d1", 1)])
    a, b = make_run({"q1": ["d1", "d2"]}, name="a"), make_run({"q1": ["d2", "d1"]}, name="b")
    table = fusion_whatif(qrels, [a, b], k=3)
    # the metric columns, in HEADLINE's order at k=3 (mrr without a cutoff)
    assert [c for c in table.columns if c in {"ndcg@3", "recall@3", "hit_rate@3", "mrr"}] == [
        "ndcg@3", "recall@3", "hit_rate@3", "mrr"
    ]  # fmt: skip
    bounds = Analysis(Dataset(qrels=qrels), {"a": a}, k=3).bounds()
    assert list(dict.fromkeys(bounds["metric"])) == ["ndcg@3", "recall@3", "hit_rate@3", "mrr"]
