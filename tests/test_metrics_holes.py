"""Metrics over the holes of the qrels: judged@k (ir_measures), hole@k (BEIR), and metric_bounds.

Hand-computed fixtures with the arithmetic in comments; judged@k cross-checked with ir_measures on random runs;
hole@k with BEIR's definition (transcribed below: BEIR needs torch and datasets to install); the upper bounds
checked against every way of judging the unjudged documents.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from metrics_testing import every_name

from diagnose.data import Qrels, Run
from diagnose.metrics import (
    REGISTRY,
    MetricBounds,
    evaluate,
    expand_metrics,
    metric_bounds,
    parse_metric,
    quality_band,
)


def make_qrels(rows: list[tuple[str, str, int]]) -> Qrels:
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return Qrels(df.astype({"relevance": np.int64}))


def make_run(lists: dict[str, list[str]], name: str = "run") -> Run:
    return Run.from_ranked_lists(
        name, {q: [(d, -float(i)) for i, d in enumerate(ds)] for q, ds in lists.items()}
    )


# q1 judges a (2), b (0), c (-1); q2 judges x (1), y (0); q3 judges z (1) and is missing from the run.
QRELS = make_qrels(
    [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", -1), ("q2", "x", 1), ("q2", "y", 0), ("q3", "z", 1)]
)
# q1: a (judged), n1 (judged nowhere), x (judged for q2 only), b (judged 0), c (judged -1).  q2: x, n2, n3.
RUN = make_run({"q1": ["a", "n1", "x", "b", "c"], "q2": ["x", "n2", "n3"]})


def test_judged_and_hole_hand_computed():
    ev = evaluate(
        QRELS, RUN, ["judged@1", "judged@3", "judged@5", "judged@10", "hole@1", "hole@3", "hole@10"]
    )
    q1, q2, q3 = (ev.per_query.loc[q] for q in ["q1", "q2", "q3"])
    assert q1["judged@1"] == 1.0  # a
    assert q1["judged@3"] == pytest.approx(1 / 3)  # a; n1 unjudged; x is judged for q2, not for q1
    assert q1["judged@5"] == pytest.approx(3 / 5)  # a, b (grade 0), c (grade -1) all count as judged
    assert q1["judged@10"] == pytest.approx(3 / 5)  # 5 results: divided by min(10, 5) = 5 (ir_measures)
    assert q1["hole@1"] == 0.0
    assert q1["hole@3"] == pytest.approx(1 / 3)  # n1 only: x is in the qrels (of q2), so not a hole (BEIR)
    assert q1["hole@10"] == pytest.approx(1 / 10)  # divided by k = 10 although q1 has 5 results (BEIR)
    assert q2["judged@3"] == pytest.approx(1 / 3)  # x
    assert q2["judged@10"] == pytest.approx(1 / 3)  # 3 results -> / 3
    assert q2["hole@3"] == pytest.approx(2 / 3)  # n2, n3
    assert q2["hole@10"] == pytest.approx(2 / 10)
    assert (q3 == 0.0).all() and ev.missing_queries == ["q3"]  # missing from the run: 0, like every metric
    # aggregate: mean over q1, q2, q3 (q3 counts as 0)
    assert ev.aggregate["judged@3"] == pytest.approx((1 / 3 + 1 / 3 + 0) / 3)
    assert ev.aggregate["hole@10"] == pytest.approx((0.1 + 0.2 + 0) / 3)


def test_judged_ignores_relevance_level_and_counts_duplicates_once():
    # relevance_level changes what is relevant, not what is judged
    a = evaluate(QRELS, RUN, ["judged@5", "hole@5"]).per_query
    b = evaluate(QRELS, RUN, ["judged@5", "hole@5"], relevance_level=2).per_query
    assert b.loc["q1"].tolist() == a.loc["q1"].tolist()
    # "n1" listed twice for q1 (ranks 2 and 3): one distinct unjudged doc in the top 3 -> hole@3 = 1/3; the top 3
    # holds 2 distinct docs (a, n1), 1 judged -> judged@3 = 1/2
    df = pd.DataFrame(
        {"query_id": ["q1"] * 3, "doc_id": ["a", "n1", "n1"], "score": [3.0, 2.0, 1.0], "rank": [1, 2, 3]}
    )
    ev = evaluate(QRELS, Run("dup", df), ["judged@3", "hole@3"])
    assert ev.per_query.loc["q1", "hole@3"] == pytest.approx(1 / 3)
    assert ev.per_query.loc["q1", "judged@3"] == pytest.approx(1 / 2)


def test_names_and_bands():
    assert parse_metric("judged@10") == ("judged", 10) and parse_metric("HOLE@5") == ("hole", 5)
    assert expand_metrics(["judged", "hole"], [1, 10]) == ["judged@1", "judged@10", "hole@1", "hole@10"]
    assert not {"judged", "hole"} & set(expand_metrics(None, [10]))  # not in the default families
    assert quality_band("judged@10", 0.2) == "n/a" and quality_band("hole@10", 0.9) == "n/a"
    # every family says how its upper bound is computed: a kernel, or None for the coverage metrics, which do not
    # depend on what the judgements say (upper = lower)
    assert all((m.upper is None) == m.coverage for m in REGISTRY.values())


# --------------------------------------------------------------------------------------------- references

DOCS = ["d1", "d2", "d10", "d11", "D3", "dé", "dz", "a-7", "b", "d20"]


@st.composite
def collections(draw):
    """``(qrels, run)`` dicts without score ties; grades -1..3; some queries missing, one maybe unjudged."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qi in range(draw(st.integers(1, 4))):
        q = f"q{qi}"
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
        grades = draw(st.lists(st.integers(-1, 3), min_size=len(judged), max_size=len(judged)))
        qrels[q] = dict(zip(judged, grades, strict=True))
        if draw(st.integers(0, 4)) > 0:
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
            order = draw(st.permutations(range(len(docs))))
            run[q] = {d: float(s) + 0.5 for d, s in zip(docs, order, strict=True)}
    if draw(st.booleans()):
        run["unjudged"] = {"d1": 1.0, "zz": 0.5}
    if not any(g > 0 for docs in qrels.values() for g in docs.values()):
        qrels["q0"][next(iter(qrels["q0"]))] = 1
    return qrels, run


def qrels_from_dict(qrels: dict[str, dict[str, int]]) -> Qrels:
    return make_qrels([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()])


def run_from_dict(run: dict[str, dict[str, float]]) -> Run:
    """Tie-free scores: rank = order of decreasing score (every library agrees on it)."""
    return make_run({q: sorted(docs, key=lambda d: -docs[d]) for q, docs in run.items()})


KS = [1, 2, 3, 5, 10, 20]
REFERENCE = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@REFERENCE
@given(collections())
def test_judged_matches_ir_measures(data):
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = data
    ours = evaluate(qrels_from_dict(qrels), run_from_dict(run), [f"judged@{k}" for k in KS])
    theirs = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc([ir_measures.Judged @ k for k in KS], qrels, run)
    }
    checked = 0
    for q in ours.per_query.index:
        if q not in run:
            assert (ours.per_query.loc[q] == 0).all()  # ir_measures yields nothing for it; we score 0
            continue
        for k in KS:
            assert ours.per_query.loc[q, f"judged@{k}"] == pytest.approx(
                theirs[(q, f"Judged@{k}")], abs=1e-12
            )
            checked += 1
    assume(checked)


def beir_hole(qrels: dict[str, dict[str, int]], results: dict[str, dict[str, float]], k_values: list[int]):
    """BEIR 2.2.0 ``beir/retrieval/custom_metrics.py::hole``, transcribed (logging and rounding to 5 places left
    out): the annotated corpus is every doc id of the qrels, any query, any grade; each run query adds
    (its top-k docs outside that set) / k; the sum is divided by the number of qrels queries."""
    hole = {f"Hole@{k}": 0.0 for k in k_values}
    annotated_corpus = {doc_id for docs in qrels.values() for doc_id in docs}
    k_max = max(k_values)
    for scores in results.values():
        top_hits = sorted(scores.items(), key=lambda item: item[1], reverse=True)[0:k_max]
        for k in k_values:
            hole_docs = [row[0] for row in top_hits[0:k] if row[0] not in annotated_corpus]
            hole[f"Hole@{k}"] += len(hole_docs) / k
    return {name: value / len(qrels) for name, value in hole.items()}


@REFERENCE
@given(collections())
def test_hole_matches_beir(data):
    qrels, run = data
    ours = evaluate(qrels_from_dict(qrels), run_from_dict(run), [f"hole@{k}" for k in KS])
    for q in ours.per_query.index:  # per query: BEIR on a one-query run, times its divisor len(qrels)
        ref = beir_hole(qrels, {q: run[q]} if q in run else {}, KS)
        for k in KS:
            assert ours.per_query.loc[q, f"hole@{k}"] == pytest.approx(
                ref[f"Hole@{k}"] * len(qrels), abs=1e-12
            )
    # the aggregates agree when BEIR's average has the same terms: every qrels query has a relevant document
    # (else BEIR divides by more queries) and every run query is judged (else BEIR adds its holes)
    if set(ours.per_query.index) == set(qrels) and set(run) <= set(qrels):
        ref = beir_hole(qrels, run, KS)
        for k in KS:
            assert ours.aggregate[f"hole@{k}"] == pytest.approx(ref[f"Hole@{k}"], abs=1e-12)


@REFERENCE
@given(collections())
def test_judged_and_hole_properties(data):
    qrels, run = data
    ev = evaluate(
        qrels_from_dict(qrels), run_from_dict(run), [f"{f}@{k}" for f in ("judged", "hole") for k in KS]
    )
    pq = ev.per_query
    assert ((pq >= 0) & (pq <= 1)).all().all()
    for q in pq.index:
        n = len(run.get(q, {}))
        for k in KS:
            # top k = judged for q + judged for other queries only + holes, so with m = min(k, n):
            # judged@k * m / k + hole@k <= m / k <= 1
            m = min(k, n)
            assert pq.loc[q, f"judged@{k}"] * m / k + pq.loc[q, f"hole@{k}"] <= m / k + 1e-12


# --------------------------------------------------------------------------------------------- bounds


def test_bounds_hand_computed():
    # one relevant doc "r" (grade 1); the run lists r, then u1 .. u9 unjudged and j0 judged 0 at rank 10
    qrels = make_qrels([("q", "r", 1), ("q", "j0", 0)])
    run = make_run({"q": ["r", *(f"u{i}" for i in range(1, 9)), "j0", "u9"]})
    names = [
        "precision@10",
        "recall@10",
        "hit_rate@1",
        "mrr",
        "ndcg@10",
        "map@10",
        "map",
        "r_precision",
        "f1@10",
    ]
    b = metric_bounds(qrels, run, names)
    assert isinstance(b, MetricBounds)
    lo, hi = b.lower.aggregate, b.upper.aggregate
    assert lo == evaluate(qrels, run, names).aggregate  # lower: today's values
    # precision@10: 1/10 today; with u1..u8 relevant (8 unjudged in the top 10; j0 stays 0): 9/10
    assert (lo["precision@10"], hi["precision@10"]) == (pytest.approx(0.1), pytest.approx(0.9))
    # recall@10: 1/1 today; R becomes 1 + 8: (1 + 8) / (1 + 8) = 1
    assert (lo["recall@10"], hi["recall@10"]) == (1.0, 1.0)
    assert (lo["hit_rate@1"], hi["hit_rate@1"], lo["mrr"], hi["mrr"]) == (1.0, 1.0, 1.0, 1.0)
    # ndcg@10: 1 today. With the s best-ranked unjudged relevant (ranks 2..s+1), DCG = IDCG = sum_{i<=s+1}
    # 1/log2(i+1): also 1. Any other choice is below 1, e.g. u8 alone (rank 9): (1 + 1/log2 10) / (1 + 1/log2 3)
    assert (lo["ndcg@10"], hi["ndcg@10"]) == (pytest.approx(1.0), pytest.approx(1.0))
    # map@10 and map: 1 today; relevant ranks 1..s+1 give AP = 1 as well
    assert hi["map@10"] == pytest.approx(1.0) and hi["map"] == pytest.approx(1.0)
    assert hi["r_precision"] == pytest.approx(1.0) and hi["f1@10"] == pytest.approx(2 * 0.9 * 1 / 1.9)
    assert list(b.aggregate.columns) == ["lower", "upper", "gap"]
    assert b.aggregate.loc["precision@10", "gap"] == pytest.approx(0.8)


def test_bounds_when_counting_everything_relevant_would_lower_the_score():
    # relevant "r" at rank 1, judged-0 docs at ranks 2..9, unjudged "u" at rank 10
    qrels = make_qrels([("q", "r", 1), *(("q", f"j{i}", 0) for i in range(2, 10))])
    run = make_run({"q": ["r", *(f"j{i}" for i in range(2, 10)), "u"]})
    b = metric_bounds(qrels, run, ["ndcg@10", "map", "r_precision", "recall@10", "precision@10"])
    hi = b.upper.aggregate
    # u relevant: nDCG@10 = (1 + 1/log2 11) / (1 + 1/log2 3) = 0.79 < 1; AP = (1/1 + 2/10) / 2 = 0.6 < 1;
    # R-prec = 1/2. The best is to leave u non-relevant (s = 0): upper = 1 for all three
    assert (1 + 1 / math.log2(11)) / (1 + 1 / math.log2(3)) == pytest.approx(0.790, abs=1e-3)
    assert hi["ndcg@10"] == pytest.approx(1.0) and hi["map"] == pytest.approx(1.0)
    assert hi["r_precision"] == pytest.approx(1.0)
    # recall and precision always gain: recall (1 + 1) / (1 + 1) = 1, precision@10 = 2/10
    assert hi["recall@10"] == 1.0 and hi["precision@10"] == pytest.approx(0.2)


def test_bounds_graded_ideal_and_relevance_level():
    # grades: a 3 (retrieved at rank 2), b 1 (not retrieved). Run: u (unjudged), a. relevance_level 1.
    qrels = make_qrels([("q", "a", 3), ("q", "b", 1)])
    run = make_run({"q": ["u", "a"]})
    b = metric_bounds(qrels, run, ["ndcg@2", "recall@2", "map"])
    # today: DCG@2 = 3/log2 3; IDCG@2 = 3 + 1/log2 3
    l3 = math.log2(3)
    assert b.lower.aggregate["ndcg@2"] == pytest.approx((3 / l3) / (3 + 1 / l3))
    # u relevant with grade 1: DCG = 1 + 3/log2 3; ideal grades [3, 1, 1] cut at 2 -> 3 + 1/log2 3
    assert b.upper.aggregate["ndcg@2"] == pytest.approx((1 + 3 / l3) / (3 + 1 / l3))
    # recall@2: 1/2 today; (1 + 1) / (2 + 1) = 2/3
    assert b.upper.aggregate["recall@2"] == pytest.approx(2 / 3)
    # map: (1/2) / 2 today; with u: (1/1 + 2/2) / 3 = 2/3
    assert b.lower.aggregate["map"] == pytest.approx(0.25) and b.upper.aggregate["map"] == pytest.approx(
        2 / 3
    )
    # relevance_level 2: b (grade 1) is judged, not relevant, gain 1 in the ideal; a counted-relevant doc gets
    # grade 2: ideal grades [3, 2, 1] cut at 2 -> 3 + 2/log2 3; DCG = 2 + 3/log2 3
    b2 = metric_bounds(qrels, run, ["ndcg@2", "recall@2"], relevance_level=2)
    assert b2.upper.aggregate["ndcg@2"] == pytest.approx((2 + 3 / l3) / (3 + 2 / l3))
    assert b2.upper.aggregate["recall@2"] == pytest.approx(1.0)  # R = 1 (a) + 1 (u): 2/2


def test_bounds_per_query_table_and_missing_query():
    b = metric_bounds(QRELS, RUN, ["precision@3", "judged@3"])
    table = b.per_query
    assert list(table.columns) == ["query_id", "metric", "lower", "upper", "gap"]
    assert len(table) == 3 * 2  # q1, q2 (q3 missing from the run) x 2 metrics
    row = table.set_index(["query_id", "metric"])
    # q1 top 3: a (2), n1 (unjudged for q1), x (unjudged for q1): precision@3 from 1/3 up to 3/3
    assert (row.loc[("q1", "precision@3"), "lower"], row.loc[("q1", "precision@3"), "upper"]) == (
        pytest.approx(1 / 3),
        pytest.approx(1.0),
    )
    assert (row.xs("judged@3", level="metric")["gap"] == 0).all()  # judged does not depend on the grades
    assert (row.loc["q3"][["lower", "upper"]] == 0).all().all()  # missing from the run: nothing to judge


@st.composite
def small_collections(draw):
    """One to three queries over six docs, grades -1..3, relevance level 1 or 2, query order shuffled."""
    level = draw(st.sampled_from([1, 1, 2]))
    docs = [f"d{i}" for i in range(6)]
    rows, lists = [], {}
    for q in ["q0", "q1", "q2"][: draw(st.integers(1, 3))]:
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=4, unique=True))
        rows += [(q, d, draw(st.integers(-1, 3))) for d in judged]
        if draw(st.integers(0, 3)) > 0:
            lists[q] = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=6, unique=True))
    if not any(g >= level for *_, g in rows):
        rows.append((rows[0][0], rows[0][1] + "x", level))
    order = draw(st.permutations(list(lists)))
    return rows, {q: lists[q] for q in order}, level


BOUND_METRICS = every_name([1, 3, 5])  # every registered family, so a new one's upper bound is checked here


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_collections())
def test_upper_bound_is_the_best_of_every_judgement(data):
    rows, lists, level = data
    qrels, run = make_qrels(rows), make_run(lists)
    b = metric_bounds(qrels, run, BOUND_METRICS, relevance_level=level)
    assert b.lower.per_query.equals(evaluate(qrels, run, BOUND_METRICS, relevance_level=level).per_query)
    judged = {(q, d) for q, d, _ in rows}
    for q in b.upper.per_query.index:
        unjudged = [d for d in lists.get(q, []) if (q, d) not in judged]
        # brute force: judge every subset of the query's unjudged documents relevant (grade = level). Judging
        # them for the whole run (not only the top k) is allowed: it can only help or lower, never beat the max
        best = None
        for mask in itertools.product([False, True], repeat=len(unjudged)):
            extra = [(q, d, level) for d, x in zip(unjudged, mask, strict=True) if x]
            row = evaluate(make_qrels(rows + extra), run, BOUND_METRICS, relevance_level=level).per_query.loc[
                q
            ]
            best = row if best is None else np.maximum(best, row)
        for m in BOUND_METRICS:
            if (
                parse_metric(m).metric.upper is None
            ):  # judged, hole count judgements: adding rows changes them
                assert b.upper.per_query.loc[q, m] == b.lower.per_query.loc[q, m]
            else:
                assert b.upper.per_query.loc[q, m] == pytest.approx(best[m], abs=1e-12), (q, m)
