"""One measure of a change (diagnose.whatif.gain): hand-built runs where every recovered and broken unit is worked out
in a comment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_remedies import diagnosis_of, failure, qrels_of, run_of

from diagnose.data import DataError, Run
from diagnose.stats import randomization_test
from diagnose.whatif.gain import (
    Gain,
    class_units,
    diagnosis_gain,
    failure_unit,
    failure_units,
    measure_gain,
    right_units,
    unit_classes,
    unit_id,
)

# Golden set (grade > 0 is relevant): q1 -> d1 (1), d2 (2); q2 -> d3; q3 -> d4 (d5 judged 0: not relevant).
QRELS = qrels_of({"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}, "q3": {"d4": 1, "d5": 0}})
# k = 2.
# base:      q1 [d1, x1, d2] (hit: d1; d2 missed), q2 [x2, x3, d3] (miss), q3 [d4, x4] (hit)
# candidate: q1 [d2, d1] (hit),                    q2 [d3, x2] (hit),     q3 absent (scores 0: miss)
BASE = run_of("base", {"q1": ["d1", "x1", "d2"], "q2": ["x2", "x3", "d3"], "q3": ["d4", "x4"]})
CANDIDATE = run_of("candidate", {"q1": ["d2", "d1"], "q2": ["d3", "x2"]})


def test_hit_unit_recovers_the_missed_query_and_breaks_the_query_absent_from_the_candidate():
    # hit_rate@2: base q1 1, q2 0, q3 1; candidate q1 1, q2 1, q3 0 (absent).
    # recovered: base failures {q2} that the candidate hits -> (q2,); broken: base hits {q1, q3} the candidate
    # misses -> (q3,); q1 is a hit in both: neither.
    g = measure_gain(2, "hit", qrels=QRELS, base=BASE, candidate=CANDIDATE)
    assert g == Gain(("q2",), ("q3",), None, None, None, "query", 2)


def test_recall_unit_counts_relevant_pairs_of_the_top_k():
    # Relevant pairs in qrels order: (q1,d1), (q1,d2), (q2,d3), (q3,d4); (q3,d5) has grade 0: not a unit.
    # base top 2: (q1,d1), (q1,x1), (q2,x2), (q2,x3), (q3,d4), (q3,x4) -> right: (q1,d1), (q3,d4);
    #   failures: (q1,d2), (q2,d3).
    # candidate top 2: (q1,d2), (q1,d1), (q2,d3), (q2,x2) -> recovered: (q1,d2), (q2,d3); broken: (q3,d4)
    g = measure_gain(2, "recall", qrels=QRELS, base=BASE, candidate=CANDIDATE)
    assert g.recovered == (("q1", "d2"), ("q2", "d3")) and g.broken == (("q3", "d4"),)
    assert g.unit == "pair" and g.mean_diff is None and g.p_value is None


def test_metric_mean_difference_and_p_value_with_the_absent_query_at_zero():
    # recall@2: base q1 1/2 (d1 of d1, d2), q2 0, q3 1; candidate q1 1, q2 1, q3 0 (absent -> 0).
    # differences +0.5, +1, -1: mean 0.5 / 3 = 0.16667. Exact sign flips of the 3 non-zero differences: the sums
    # +-0.5 +-1 +-1 are 2.5, 0.5, 0.5, -1.5, 1.5, -0.5, -0.5, -2.5; all 8 have |sum| >= 0.5 -> p = 8/8 = 1.
    g = measure_gain(2, "hit", qrels=QRELS, base=BASE, candidate=CANDIDATE, metric="recall@2")
    assert g.mean_diff == pytest.approx(0.5 / 3) and g.p_value == 1.0 and g.metric == "recall@2"
    assert g.recovered == ("q2",) and g.broken == ("q3",)  # the units do not depend on the metric


def test_p_value_is_the_paired_randomization_test_of_the_same_arrays():
    rng = np.random.default_rng(7)
    index = pd.Index([f"q{i}" for i in range(40)], name="query_id")
    a = pd.DataFrame(
        {"hit_rate@3": rng.integers(0, 2, 40).astype(float), "ndcg@3": rng.random(40)}, index=index
    )
    b = pd.DataFrame(
        {"hit_rate@3": rng.integers(0, 2, 40).astype(float), "ndcg@3": rng.random(40)}, index=index
    )
    g = measure_gain(3, base_per_query=a, candidate_per_query=b, metric="ndcg@3", n_resamples=2_000, seed=11)
    assert g.p_value == randomization_test(a["ndcg@3"], b["ndcg@3"], n_resamples=2_000, seed=11)
    assert g.p_value != randomization_test(a["ndcg@3"], b["ndcg@3"], n_resamples=2_000, seed=12)
    assert g.mean_diff == pytest.approx(float(np.mean(b["ndcg@3"] - a["ndcg@3"])))
    # recovered: a misses and b hits; broken: the reverse, both in the index's order
    assert g.recovered == tuple(q for q in index if a.at[q, "hit_rate@3"] == 0 and b.at[q, "hit_rate@3"] == 1)
    assert g.broken == tuple(q for q in index if a.at[q, "hit_rate@3"] == 1 and b.at[q, "hit_rate@3"] == 0)


def test_per_query_frames_give_the_same_gain_as_evaluating_the_runs():
    from diagnose.metrics import evaluate

    names = ["hit_rate@2", "ndcg@2"]
    frames = measure_gain(
        2,
        base_per_query=evaluate(QRELS, BASE, names).per_query,
        candidate_per_query=evaluate(QRELS, CANDIDATE, names).per_query,
        metric="ndcg@2",
    )
    assert frames == measure_gain(2, qrels=QRELS, base=BASE, candidate=CANDIDATE, metric="ndcg@2")


def test_ties_in_score_are_broken_by_the_rank_and_unchanged_units_count_nowhere():
    # k = 1. q1's base has d1 and x1 tied at 5.0, x1 ranked first: the rank decides, d1 is at rank 2 -> q1 fails.
    # The candidate ranks the same tie the other way: d1 at rank 1 -> q1 recovered (hit and recall alike).
    # q2: both runs miss (x2 first in both): a failure in both, neither recovered nor broken.
    qrels = qrels_of({"q1": {"d1": 1}, "q2": {"d2": 1}})

    def run(name: str, first: str) -> Run:
        other = "x1" if first == "d1" else "d1"
        df = pd.DataFrame(
            {
                "query_id": ["q1", "q1", "q2", "q2"],
                "doc_id": [first, other, "x2", "d2"],
                "score": [5.0, 5.0, 9.0, 1.0],
                "rank": [1, 2, 1, 2],
            }
        )
        return Run(name, df)

    base, candidate = run("base", "x1"), run("candidate", "d1")
    hit = measure_gain(1, "hit", qrels=qrels, base=base, candidate=candidate, metric="hit_rate@1")
    assert (hit.recovered, hit.broken) == (("q1",), ())
    # hit_rate@1: base [0, 0], candidate [1, 0]: mean 1/2; one non-zero difference: signs +1, -1, both |.| >= 1 -> p 1
    assert hit.mean_diff == 0.5 and hit.p_value == 1.0
    pairs = measure_gain(1, "recall", qrels=qrels, base=base, candidate=candidate)
    assert (pairs.recovered, pairs.broken) == ((("q1", "d1"),), ())


def test_named_failures_are_recovered_in_their_order_even_when_the_base_got_them_right():
    # failures given (a diagnosis's): q3 then q2. The candidate hits q2 and misses q3 -> recovered (q2,).
    # q1 is named too although the base hits it: a named failure the candidate gets right counts (the caller's
    # failures are the truth); broken still compares the two runs: (q3,).
    g = measure_gain(2, qrels=QRELS, base=BASE, candidate=CANDIDATE, failures=["q3", "q1", "q2"])
    assert g.recovered == ("q1", "q2") and g.broken == ("q3",)
    assert g.among(["q2", "q3", "q1"]) == ("q2", "q1")


def test_no_golden_query_gives_no_difference_and_p_one():
    empty = pd.DataFrame({"hit_rate@1": [], "ndcg@1": []}, index=pd.Index([], dtype=object))
    g = measure_gain(1, base_per_query=empty, candidate_per_query=empty, metric="ndcg@1")
    assert (g.recovered, g.broken, g.mean_diff, g.p_value) == ((), (), 0.0, 1.0)


def test_unknown_mode_names_the_parameter():
    with pytest.raises(DataError) as e:
        measure_gain(1, "pairs", qrels=QRELS, base=BASE, candidate=CANDIDATE)  # type: ignore[arg-type]
    assert e.value.param == "failure"


def test_right_units_of_each_mode():
    # top 2 of the candidate: q1 [d2, d1], q2 [d3, x2]; hit_rate@2 > 0: q1, q2 (q3 absent)
    assert right_units(2, "hit", qrels=QRELS, run=CANDIDATE) == {"q1", "q2"}
    assert right_units(2, "recall", run=CANDIDATE) == {("q1", "d2"), ("q1", "d1"), ("q2", "d3"), ("q2", "x2")}


def test_the_failure_unit_rule():
    # q1's two missed pairs are one failed query under hit, two missed pairs under recall
    pairs = [("q1", "a"), ("q2", "b"), ("q1", "c"), ("q2", "b")]
    assert failure_unit("q1", "a", "hit") == "q1" and failure_unit("q1", "a", "recall") == ("q1", "a")
    assert failure_units(pairs, "hit") == ("q1", "q2")
    assert failure_units(pairs, "recall") == (("q1", "a"), ("q2", "b"), ("q1", "c"))
    assert unit_id("q1") == "q1" and unit_id(("q1", "a")) == "q1/a"


def test_class_units_and_unit_classes_of_a_diagnosis():
    # q1 has a missed pair in two classes: a unit of both under hit; q2 one pair of near_miss
    fs = [failure("q1", "a", "near_miss"), failure("q2", "b", "near_miss"), failure("q1", "c", "index_gap")]
    hit = diagnosis_of(BASE, fs, 2, "hit")
    units = class_units(hit)
    assert units["near_miss"] == ("q1", "q2") and units["index_gap"] == ("q1",) and len(units) == 2
    assert unit_classes(hit) == {"q1": {"near_miss", "index_gap"}, "q2": {"near_miss"}}
    recall = diagnosis_of(BASE, fs, 2, "recall")
    assert class_units(recall)["near_miss"] == (("q1", "a"), ("q2", "b"))


def test_diagnosis_gain_compares_the_failure_units():
    # base fails q1 and q2, the tuned run q2 and q3: recovered (q1,), broken (q3,); q2 fails in both
    base = diagnosis_of(BASE, [failure("q1", "a", "near_miss"), failure("q2", "b", "near_miss")], 2)
    tuned = diagnosis_of(BASE, [failure("q2", "b", "index_gap"), failure("q3", "c", "index_gap")], 2)
    assert diagnosis_gain(base, tuned) == Gain(("q1",), ("q3",), None, None, None, "query", 2)
    with pytest.raises(ValueError):
        diagnosis_gain(base, diagnosis_of(BASE, [], 2, "recall"))


def test_a_query_missing_from_the_candidate_frame_scores_zero():
    # frames as a caller holds them (e.g. a cached sweep point without q2): base hits q1 and q2 (ndcg 1, 0.5); the
    # candidate's frame has only q1 (hit, ndcg 1) -> q2 scores 0: broken (q2,); ndcg differences 0 and -0.5: mean -0.25
    index = pd.Index(["q1", "q2"], name="query_id")
    base = pd.DataFrame({"hit_rate@1": [1.0, 1.0], "ndcg@1": [1.0, 0.5]}, index=index)
    candidate = pd.DataFrame({"hit_rate@1": [1.0], "ndcg@1": [1.0]}, index=pd.Index(["q1"], name="query_id"))
    g = measure_gain(1, base_per_query=base, candidate_per_query=candidate, metric="ndcg@1")
    assert (g.recovered, g.broken, g.mean_diff) == ((), ("q2",), -0.25)


def test_a_pair_judged_zero_is_never_a_unit():
    # k = 1. q1: d1 relevant (1), d0 judged non-relevant (0). base [x, d1]: (q1,d1) failed. candidate [d0, d1]:
    # d0 enters the top 1 but is not relevant: nothing recovered; (q1,d1) is still missed
    qrels = qrels_of({"q1": {"d1": 1, "d0": 0}})
    base, candidate = run_of("base", {"q1": ["x", "d1"]}), run_of("candidate", {"q1": ["d0", "d1"]})
    g = measure_gain(1, "recall", qrels=qrels, base=base, candidate=candidate)
    assert (g.recovered, g.broken) == ((), ())
