"""Tie audit (diagnose.ties): metrics of runs with tied scores, over every order of the tied documents.

Hand-computed fixtures with the arithmetic in comments (TREC files read by diagnose.io, so the run order is the
trec_eval order, and the trec_eval-order value is cross-checked with pytrec_eval); a brute-force check of the
exact min / max against every permutation of the tie groups of small random runs (hypothesis), which is what
proves the monotonicity argument of the module docstring for every metric family of the registry.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from metrics_testing import every_name

from diagnose import ties
from diagnose.data import DataError, Qrels, Run, ValidationReport
from diagnose.io import read_run
from diagnose.metrics import REGISTRY, evaluate
from diagnose.ties import TieAudit, add_to_report, tie_audit


def make_qrels(rows: list[tuple[str, str, int]]) -> Qrels:
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return Qrels(df.astype({"relevance": np.int64}))


def trec_run(tmp_path: Path, rows: list[tuple[str, str, float]], name: str = "run") -> Run:
    """Write ``(query, doc, score)`` rows as a TREC run file (rank column deliberately 1..n in the given order, which
    trec_eval ignores) and read it back: diagnose.io orders it like trec_eval."""
    path = tmp_path / f"{name}.trec"
    path.write_text("".join(f"{q} Q0 {d} {i} {s!r} tag\n" for i, (q, d, s) in enumerate(rows, start=1)))
    return read_run(path, name=name)


def pytrec(qrels: Qrels, path: Path, measures: set[str]) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return pytrec_eval.RelevanceEvaluator(qrels.as_dict(), measures).evaluate(run)


def row(audit: TieAudit, query_id: str) -> pd.Series:
    return audit.per_query.set_index("query_id").loc[query_id]


# --------------------------------------------------------------------------------------------- hand-computed


def test_mteb_5092_all_candidates_same_score(tmp_path):
    # MTEB issue 5092: every candidate gets score 0.5. The only relevant document is named d09, and trec_eval
    # breaks ties by doc id descending, so the order is d09, d08, ..., d00: d09 at rank 1, MRR@10 = 1/1 = 1.0.
    qrels = make_qrels([("q1", "d09", 1)])
    rows = [("q1", f"d{i:02d}", 0.5) for i in range(10)]
    run = trec_run(tmp_path, rows, name="flat")
    assert run.df["doc_id"].iloc[0] == "d09"
    res = pytrec(qrels, tmp_path / "flat.trec", {"recip_rank", "ndcg_cut_10"})
    assert res["q1"]["recip_rank"] == 1.0  # trec_eval itself says 1.0

    audit = tie_audit(qrels, run, ["mrr@10", "mrr", "hit_rate@10", "ndcg@10"], k=10)
    r = row(audit, "q1")
    # the relevant document can sit at any rank 1..10: MRR in [1/10, 1/1]
    assert r["mrr@10"] == 1.0 and r["mrr@10_min"] == pytest.approx(1 / 10) and r["mrr@10_max"] == 1.0
    assert r["mrr_min"] == pytest.approx(0.1) and r["mrr_max"] == 1.0
    # hit_rate@10: all 10 candidates are in the top 10 whatever the order -> always 1
    assert r["hit_rate@10_min"] == r["hit_rate@10_max"] == 1.0
    # nDCG@10 with one relevant document (IDCG = 1): 1 / log2(rank + 1), rank 10 at worst -> 1 / log2(11)
    assert r["ndcg@10"] == pytest.approx(res["q1"]["ndcg_cut_10"]) == 1.0
    assert r["ndcg@10_min"] == pytest.approx(1 / math.log2(11))
    # one group covering ranks 1..10: inside the top 10, not across it (nothing below rank 10)
    assert r["tie_groups"] == 1 and r["ties_in_top_k"] and not r["crossing_cutoff"]
    assert audit.n_queries_with_ties == 1 and audit.n_queries_crossing_cutoff == 0
    assert audit.n_queries_metric_depends_on_order == 1 and audit.examples == ("q1",)
    assert audit.trec_order and audit.sampled_orders == 0
    assert audit.aggregate["mrr@10"] == (1.0, pytest.approx(0.1), 1.0, True)

    msg = audit.message()
    assert msg is not None
    assert "run 'flat'" in msg and "mrr@10 ranges 0.100-1.000" in msg and "doc-id order gives 1.000" in msg
    assert "break ties in the retriever" in msg

    report = ValidationReport()
    add_to_report(audit, report)
    (p,) = report.by_code("score_ties")
    assert p.severity == "warning" and p.count == 1 and p.message == msg
    assert p.examples == ("q1: mrr@10 0.100-1.000 (run order 1.000)",)
    assert p.file == str(tmp_path / "flat.trec")


def test_mteb_case_with_cutoff_below_the_group(tmp_path):
    # same run, k = 5: the group spans ranks 1..10 and straddles rank 5. The relevant document lands at rank 6..10
    # in the worst order: MRR@5 = 0; precision@5 in [0/5, 1/5]
    qrels = make_qrels([("q1", "d09", 1)])
    run = trec_run(tmp_path, [("q1", f"d{i:02d}", 0.5) for i in range(10)])
    audit = tie_audit(qrels, run, ["mrr@5", "precision@5"], k=5)
    r = row(audit, "q1")
    assert r["crossing_cutoff"] and audit.n_queries_crossing_cutoff == 1
    assert (r["mrr@5_min"], r["mrr@5"], r["mrr@5_max"]) == (0.0, 1.0, 1.0)
    assert (r["precision@5_min"], r["precision@5_max"]) == (0.0, pytest.approx(0.2))
    assert "1 of 1 queries have tied scores across rank 5" in audit.message()


def test_no_ties_no_warning(tmp_path):
    qrels = make_qrels([("q1", "a", 1), ("q2", "x", 2)])
    run = trec_run(
        tmp_path, [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0), ("q2", "y", 0.9), ("q2", "x", 0.8)]
    )
    audit = tie_audit(qrels, run, ["ndcg@10", "mrr", "map", "r_precision", "hole@10", "judged@10"], k=10)
    assert audit.message() is None and not audit.depends_on_order
    assert audit.n_queries_with_ties == audit.n_queries_crossing_cutoff == 0 and audit.examples == ()
    assert (audit.per_query["tie_groups"] == 0).all()
    base = evaluate(qrels, run, list(audit.metrics))
    for m in audit.metrics:
        np.testing.assert_array_equal(audit.per_query[m], base.per_query[m])
        np.testing.assert_array_equal(audit.per_query[f"{m}_min"], base.per_query[m])
        np.testing.assert_array_equal(audit.per_query[f"{m}_max"], base.per_query[m])
        assert audit.aggregate[m].min == audit.aggregate[m].value == audit.aggregate[m].max
    report = ValidationReport()
    add_to_report(audit, report)
    assert len(report) == 0
    assert audit.to_dict()["queries"] == []


def test_ties_inside_top_k_change_mrr_not_hit_rate(tmp_path):
    # scores a 3, b 2, c 2, d 1, e 0; c is relevant. trec_eval order among the tie: c > b, so c, b -> c at rank 2.
    # The group {b, c} holds ranks 2..3: MRR in [1/3, 1/2]; hit_rate@10 is 1 either way.
    qrels = make_qrels([("q1", "c", 1)])
    rows = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 2.0), ("q1", "d", 1.0), ("q1", "e", 0.0)]
    run = trec_run(tmp_path, rows)
    assert run.df["doc_id"].tolist() == ["a", "c", "b", "d", "e"]

    only_hits = tie_audit(qrels, run, ["hit_rate@10"], k=10)
    assert only_hits.n_queries_with_ties == 1 and only_hits.n_queries_metric_depends_on_order == 0
    assert only_hits.message() is None
    report = ValidationReport()
    add_to_report(only_hits, report)
    (p,) = report.by_code("score_ties")
    assert p.severity == "info" and p.count == 1 and p.examples == ("q1",)
    assert "none of the metrics (hit_rate@10) changes" in p.message

    audit = tie_audit(qrels, run, ["hit_rate@10", "mrr"], k=10)
    r = row(audit, "q1")
    assert r["ties_in_top_k"] and not r["crossing_cutoff"] and r["depends_on_order"]
    assert (r["mrr_min"], r["mrr"], r["mrr_max"]) == (pytest.approx(1 / 3), 0.5, 0.5)
    assert r["hit_rate@10_min"] == r["hit_rate@10_max"] == 1.0
    assert audit.headline == "mrr" and audit.varying_metrics == ["mrr"]
    assert "1 of 1 queries have tied scores in the top 10" in audit.message()
    assert "mrr ranges 0.333-0.500" in audit.message()


def test_ties_crossing_the_cutoff(tmp_path):
    # k = 2. a 3 (not relevant), then b, c, d all 1 with c relevant (R = 1). trec_eval order: d, c, b, so c is at
    # rank 3 and the top 2 is a, d: hit_rate@2 = 0, precision@2 = 0/2, recall@2 = 0/1, mrr = 1/3.
    # The group holds ranks 2..4 and straddles rank 2; c can be at rank 2 (best) or 4 (worst):
    # hit_rate@2 in [0, 1], precision@2 in [0, 1/2], recall@2 in [0, 1], mrr in [1/4, 1/2].
    qrels = make_qrels([("q1", "c", 1), ("q1", "a", 0)])
    rows = [("q1", "a", 3.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q1", "d", 1.0)]
    run = trec_run(tmp_path, rows)
    audit = tie_audit(qrels, run, ["hit_rate@2", "precision@2", "recall@2", "mrr"], k=2)
    r = row(audit, "q1")
    assert r["crossing_cutoff"] and r["tie_groups"] == 1
    assert (r["hit_rate@2_min"], r["hit_rate@2"], r["hit_rate@2_max"]) == (0.0, 0.0, 1.0)
    assert (r["precision@2_min"], r["precision@2"], r["precision@2_max"]) == (0.0, 0.0, 0.5)
    assert (r["recall@2_min"], r["recall@2"], r["recall@2_max"]) == (0.0, 0.0, 1.0)
    assert (r["mrr_min"], r["mrr"], r["mrr_max"]) == (0.25, pytest.approx(1 / 3), 0.5)
    res = pytrec(qrels, tmp_path / "run.trec", {"recip_rank", "success_2", "P_2"})
    assert (r["mrr"], r["hit_rate@2"], r["precision@2"]) == pytest.approx(
        (res["q1"]["recip_rank"], res["q1"]["success_2"], res["q1"]["P_2"])
    )
    assert audit.n_queries_crossing_cutoff == 1
    assert audit.message().startswith("run 'run': 1 of 1 queries have tied scores across rank 2, and 1 has")


def test_graded_ndcg(tmp_path):
    # k = 3. q1: x 2.0 (grade 0), then y, z, w tied at 1.0 with grades y 2, z 0, w 1.
    # IDCG@3 = 2/log2(2) + 1/log2(3) = 2 + 0.63093 = 2.63093 (grades sorted 2, 1, 0).
    # trec_eval order of the tie: z > y > w -> z rank 2, y rank 3, w rank 4: DCG@3 = 2/log2(4) = 1.0 -> 0.38009.
    # best: y, w, z at ranks 2, 3, 4: DCG@3 = 2/log2(3) + 1/log2(4) = 1.26186 + 0.5 -> 0.66967
    # worst: z, w, y: DCG@3 = 0 + 1/log2(4) = 0.5 (y falls to rank 4, below the cut) -> 0.19005
    # q2: one relevant document at rank 1, no tie: nDCG@3 = 1 in every order.
    qrels = make_qrels([("q1", "y", 2), ("q1", "z", 0), ("q1", "w", 1), ("q2", "p", 3)])
    rows = [
        ("q1", "x", 2.0),
        ("q1", "y", 1.0),
        ("q1", "z", 1.0),
        ("q1", "w", 1.0),
        ("q2", "p", 5.0),
        ("q2", "o", 4.0),
    ]
    run = trec_run(tmp_path, rows)
    audit = tie_audit(qrels, run, ["ndcg@3"], k=3)
    idcg = 2 + 1 / math.log2(3)
    r = row(audit, "q1")
    assert r["ndcg@3"] == pytest.approx((2 / math.log2(4)) / idcg)
    assert r["ndcg@3_max"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(4)) / idcg)
    assert r["ndcg@3_min"] == pytest.approx((1 / math.log2(4)) / idcg)
    res = pytrec(qrels, tmp_path / "run.trec", {"ndcg_cut_3"})
    assert r["ndcg@3"] == pytest.approx(res["q1"]["ndcg_cut_3"])
    r2 = row(audit, "q2")
    assert r2["ndcg@3_min"] == r2["ndcg@3"] == r2["ndcg@3_max"] == 1.0 and not r2["depends_on_order"]
    # aggregate: means over the 2 golden queries
    agg = audit.aggregate["ndcg@3"]
    assert agg.min == pytest.approx((0.5 / idcg + 1) / 2) and agg.max == pytest.approx(
        (1.76186 / idcg + 1) / 2, abs=1e-5
    )
    assert agg.value == pytest.approx(evaluate(qrels, run, ["ndcg@3"]).aggregate["ndcg@3"])
    assert audit.n_queries == 2 and audit.n_queries_metric_depends_on_order == 1
    # relevance_level 2: only y is relevant; MRR in [1/4, 1/2] (y at rank 2..4), trec order puts y at rank 3
    lvl = tie_audit(qrels, run, ["mrr"], k=3, relevance_level=2)
    assert (row(lvl, "q1")["mrr_min"], row(lvl, "q1")["mrr"], row(lvl, "q1")["mrr_max"]) == (
        0.25,
        pytest.approx(1 / 3),
        0.5,
    )


def test_judged_and_hole_have_their_own_keys(tmp_path):
    # k = 1; q1 lists u (unjudged, in no qrels row), n (judged 0 for q1) and o (judged only for q2), all tied.
    # judged@1: the top-1 document is judged for q1 only when it is n -> [0, 1];
    # hole@1: the top-1 document is a hole (judged for no query) only when it is u -> [0, 1].
    # trec order u > o > n: u first -> judged@1 = 0, hole@1 = 1. Grades alone (all 0 here) could not order these.
    qrels = make_qrels([("q1", "r", 1), ("q1", "n", 0), ("q2", "o", 1)])
    run = trec_run(tmp_path, [("q1", "n", 1.0), ("q1", "o", 1.0), ("q1", "u", 1.0)])
    audit = tie_audit(qrels, run, ["judged@1", "hole@1"], k=1)
    r = row(audit, "q1")
    assert (r["judged@1_min"], r["judged@1"], r["judged@1_max"]) == (0.0, 0.0, 1.0)
    assert (r["hole@1_min"], r["hole@1"], r["hole@1_max"]) == (0.0, 1.0, 1.0)
    # q2 is golden but missing from the run: no ties, 0 everywhere
    r2 = row(audit, "q2")
    assert not r2["ties_in_top_k"] and r2["tie_groups"] == 0 and r2["judged@1_max"] == 0.0


def test_ranked_list_order_is_not_trec_order():
    # a ranked list that puts the tied documents in *ascending* id order: the value is the list's, and the message
    # says so. Equal scores that are not neighbours (q1: 1.0, 2.0, 1.0) are not a tie: the list decided.
    qrels = make_qrels([("q1", "b", 1), ("q2", "b", 1)])
    run = Run.from_ranked_lists(
        "lists", {"q1": [("a", 1.0), ("c", 2.0), ("b", 1.0)], "q2": [("a", 1.0), ("b", 1.0)]}
    )
    audit = tie_audit(qrels, run, ["mrr"], k=10)
    assert not audit.trec_order
    r1, r2 = row(audit, "q1"), row(audit, "q2")
    assert r1["tie_groups"] == 0 and not r1["depends_on_order"]
    assert (r2["mrr_min"], r2["mrr"], r2["mrr_max"]) == (0.5, 0.5, 1.0)
    # q1: b at rank 3 -> 1/3; q2: b at rank 2 -> 1/2; mean = (1/3 + 1/2) / 2 = 5/12 = 0.41667
    assert audit.aggregate["mrr"].value == pytest.approx(5 / 12)
    assert "(the run's order gives 0.417)" in audit.message()


def test_float32_ties_like_trec_eval(tmp_path):
    # 1.0 and 1.0 + 1e-9 are one float32: trec_eval (pytrec_eval) ties them and the doc id decides
    qrels = make_qrels([("q1", "a", 1)])
    run = trec_run(tmp_path, [("q1", "a", 1.0 + 1e-9), ("q1", "b", 1.0)])
    assert run.df["doc_id"].tolist() == ["b", "a"]  # tie -> doc id descending
    audit = tie_audit(qrels, run, ["mrr"], k=10)
    assert row(audit, "q1")["tie_groups"] == 1
    assert (row(audit, "q1")["mrr_min"], row(audit, "q1")["mrr_max"]) == (0.5, 1.0)


def test_sampling_fallback_for_a_family_without_exact_key(tmp_path, monkeypatch):
    # pretend mrr had no proven key: its range comes from sampled orders plus the gain orders, flagged inexact
    monkeypatch.setitem(REGISTRY, "mrr", REGISTRY["mrr"]._replace(tie_key=None))
    qrels = make_qrels([("q1", "d09", 1)])
    run = trec_run(tmp_path, [("q1", f"d{i:02d}", 0.5) for i in range(10)])
    audit = tie_audit(qrels, run, ["mrr", "ndcg@10"], k=10, n_orders=7, seed=1)
    assert audit.sampled_orders == 7
    assert not audit.aggregate["mrr"].exact and audit.aggregate["ndcg@10"].exact
    r = row(audit, "q1")
    # the sampled orders include the two gain orders (relevant first / last), so here they reach [1/10, 1]
    assert r["mrr_min"] == pytest.approx(0.1) and r["mrr_max"] == 1.0
    assert "mrr ranges at least" in audit.message()


def test_bad_parameters():
    qrels = make_qrels([("q1", "a", 1)])
    run = Run.from_ranked_lists("r", {"q1": [("a", 1.0)]})
    with pytest.raises(DataError) as e:
        tie_audit(qrels, run, ["mrr"], k=0)
    assert e.value.param == "k"
    with pytest.raises(DataError) as e:
        tie_audit(qrels, run, ["mrr"], n_orders=0)
    assert e.value.param == "n_orders"
    with pytest.raises(DataError, match="Unknown metric"):
        tie_audit(qrels, run, ["ndgc@10"])


def test_to_dict_is_json(tmp_path):
    qrels = make_qrels([("q1", "c", 1), ("q2", "a", 1)])
    run = trec_run(tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0)])
    audit = tie_audit(qrels, run, None, k=2)
    assert audit.metrics[0] == "precision@2"  # expand_metrics(None, [2])
    d = json.loads(json.dumps(audit.to_dict()))
    assert d["n_queries"] == 2 and d["n_queries_crossing_cutoff"] == 1 and d["message"] == audit.message()
    assert [q["query_id"] for q in d["queries"]] == ["q1"]  # only the query with ties
    assert d["aggregate"]["mrr"]["exact"] is True and isinstance(d["queries"][0]["crossing_cutoff"], bool)


def test_given_evaluation_is_reused_and_gives_the_same_audit(tmp_path):
    # q1: relevant c tied with a, b at 1.0 (doc-id order c, b, a: MRR 1, worst order 1/3); q2: no ties at all
    qrels = make_qrels([("q1", "c", 1), ("q2", "a", 1)])
    run = trec_run(tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0)])
    metrics = ["mrr", "ndcg@2", "judged@2"]
    alone = tie_audit(qrels, run, metrics, k=2)
    calls = []
    real = ties.audit.evaluate

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    base = evaluate(qrels, run, ["map", *metrics])  # a superset, in another order
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ties.audit, "evaluate", counting)
        reused = tie_audit(qrels, run, metrics, k=2, base=base)
    assert all(set(c) != set(metrics) for c in calls)  # the run itself was not scored again: only the copies
    pd.testing.assert_frame_equal(reused.per_query, alone.per_query)
    assert reused.aggregate == alone.aggregate and reused.metrics == ("mrr", "ndcg@2", "judged@2")
    assert row(reused, "q1")["mrr_min"] == pytest.approx(1 / 3) and row(reused, "q2")["mrr_min"] == 1.0


def test_the_work_done_beside_the_evaluation_gives_the_same_audit(tmp_path):
    """``tie_work`` (what needs no evaluation of the run) then ``audit_from_work(base=)`` is ``tie_audit`` alone; a
    base of other golden queries (another relevance level) is not taken: the run is scored again."""
    qrels = make_qrels([("q1", "c", 2), ("q1", "a", 1), ("q2", "a", 1), ("q3", "z", 1)])
    run = trec_run(
        tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0), ("q2", "b", 2.0)]
    )
    metrics = ["mrr", "ndcg@2", "recall@1"]
    alone = tie_audit(qrels, run, metrics, k=2)
    work = ties.tie_work(qrels, run, metrics, k=2)
    assert work.names == ["mrr", "ndcg@2", "recall@1"] and list(work.golden) == ["q1", "q2", "q3"]
    split = ties.audit_from_work(qrels, run, work, base=evaluate(qrels, run, metrics))
    pd.testing.assert_frame_equal(split.per_query, alone.per_query)
    assert split.aggregate == alone.aggregate and split.examples == alone.examples
    other = evaluate(qrels, run, metrics, relevance_level=2)  # golden queries: q1 only
    calls = []
    real = ties.audit.evaluate

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ties.audit, "evaluate", counting)
        again = ties.audit_from_work(qrels, run, work, base=other)
    assert calls == [metrics]  # the run was scored here, not taken from the other base
    pd.testing.assert_frame_equal(again.per_query, alone.per_query)


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("leave", [0, 1, 2, 5])
def test_copies_left_by_the_work_are_evaluated_by_the_audit(tmp_path, monkeypatch, leave, cpus):
    """``tie_work(leave=n)`` leaves its last n re-ordered copies unevaluated (``pending``), and ``audit_from_work``
    evaluates them (side by side with two CPUs): the audit is ``tie_audit``'s whatever is left, and the work is not
    changed by it."""
    import threading

    import diagnose.runtime.threads

    monkeypatch.setattr(diagnose.runtime.threads, "available_cpus", lambda: cpus)
    threads = set()
    real = ties.audit.evaluate

    def recording(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    qrels = make_qrels([("q1", "c", 2), ("q1", "a", 1), ("q2", "a", 1), ("q2", "b", 0), ("q3", "z", 1)])
    rows = [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0), ("q2", "b", 2.0)]
    run = trec_run(tmp_path, [*rows, ("q2", "x", 2.0)])
    metrics = ["mrr", "ndcg@2", "judged@2", "recall@1"]  # two sort keys that vary in a group: four copies
    alone = tie_audit(qrels, run, metrics, k=2)
    everything = ties.tie_work(qrels, run, metrics, k=2)
    assert everything.pending == () and np.isfinite(everything.lo).any()
    work = ties.tie_work(qrels, run, metrics, k=2, leave=leave)
    assert len(work.pending) == min(leave, 4)
    assert sorted(c.key_name for c in work.pending) == sorted(
        ["gain", "gain", "judged", "judged"][4 - min(leave, 4) :]
    )
    lo, hi = work.lo.copy(), work.hi.copy()
    monkeypatch.setattr(ties.audit, "evaluate", recording)
    split = ties.audit_from_work(qrels, run, work, base=evaluate(qrels, run, metrics))
    me = threading.current_thread().name
    if not leave:
        assert threads == set()
    elif cpus == 2 and leave >= 2:  # in the pool's threads (one of them may run both, if it is free first)
        assert threads and me not in threads
    else:
        assert threads == {me}
    pd.testing.assert_frame_equal(split.per_query, alone.per_query)
    assert split.aggregate == alone.aggregate and split.examples == alone.examples
    assert np.array_equal(work.lo, lo) and np.array_equal(work.hi, hi)  # the work is left as it was
    if leave == 0:
        assert np.array_equal(work.lo, everything.lo) and np.array_equal(work.hi, everything.hi)


@pytest.mark.parametrize("cpus", [1, 2])
def test_the_evaluation_report_audits_beside_the_evaluations_with_the_same_result(
    tmp_path, monkeypatch, cpus
):
    """``Analysis.evaluation_report`` computes the runs' tie work in a thread beside the evaluations (two CPUs):
    the audits, the report's entries and their order are those of the serial computation."""
    import threading

    import diagnose.analysis.scores as scores_module
    from diagnose import Analysis
    from diagnose.data import Dataset

    monkeypatch.setattr(scores_module, "available_cpus", lambda: cpus)
    threads = []
    real_work = scores_module.tie_work

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real_work(*args, **kwargs)

    monkeypatch.setattr(scores_module, "tie_work", recording)
    qrels = make_qrels([("q1", "c", 2), ("q1", "a", 1), ("q2", "a", 1), ("q3", "z", 1)])
    one = trec_run(tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0)], "one")
    two = trec_run(tmp_path, [("q1", "c", 3.0), ("q2", "b", 1.0), ("q2", "a", 1.0), ("q3", "y", 1.0)], "two")

    def report() -> tuple:
        ds = Dataset(qrels=qrels, runs={"one": one, "two": two}, report=ValidationReport())
        rep = Analysis(ds, k=2, ks=[1, 2]).evaluation_report()
        audits = {n: (a.per_query.to_dict(), a.aggregate, a.examples) for n, a in rep.ties.items()}
        return audits, [(p.code, p.message, p.count) for p in ds.report]

    serial = report() if cpus == 1 else None
    threads.clear()
    got = report()
    assert len(threads) == 2 and all(t.startswith("diagnose-ties") == (cpus == 2) for t in threads)
    if serial is not None:
        assert got == serial
    monkeypatch.setattr(scores_module, "available_cpus", lambda: 1)
    assert got == report()  # with the thread (cpus=2) or without: the same
    assert got[1] and all(code == "score_ties" for code, _, _ in got[1])


def test_to_dict_without_per_query_keeps_the_summary(tmp_path):
    qrels = make_qrels([("q1", "c", 1), ("q2", "a", 1)])
    run = trec_run(tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0), ("q2", "a", 2.0)])
    audit = tie_audit(qrels, run, None, k=2)
    full, summary = audit.to_dict(), audit.to_dict(per_query=False)
    assert "queries" not in summary and full.pop("queries")
    assert summary == full


def test_cli_evaluate_prints_no_library_warning(tmp_path):
    # 33 metrics at k = 1,3,5,10,100 give the per-query table 5 + 3 x 33 = 104 columns: inserted one by one they
    # fragmented the frame and pandas printed a PerformanceWarning to the terminal
    import subprocess
    import sys

    rows = [(f"q{i}", f"d{j}", float(j // 3)) for i in range(4) for j in range(12)]  # ties in threes
    run_path = tmp_path / "run.trec"
    run_path.write_text("".join(f"{q} Q0 {d} {r} {s!r} t\n" for r, (q, d, s) in enumerate(rows, start=1)))
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"q{i} 0 d{j} {1 + j % 2}\n" for i in range(4) for j in (0, 5, 7)))
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "diagnose",
            "evaluate",
            "--qrels",
            str(qrels_path),
            "--run",
            f"r={run_path}",
            "--k",
            "1,3,5,10,100",
            "--format",
            "json",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Warning" not in done.stderr, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["ties"]["r"]["n_queries_with_ties"] == 4 and "queries" not in out["ties"]["r"]


# --------------------------------------------------------------------------------------------- brute force


def all_metrics(k: int) -> list[str]:
    return every_name([k])  # every registered family, so a new one's tie key is checked against every order


POOL = list("abcdefgh")


@st.composite
def tiny_cases(draw: st.DrawFn) -> tuple[Qrels, Run, int, int]:
    """1-2 queries, up to 6 documents each from a shared pool (so a document may be judged for the other query
    only), scores in {0, 1, 2} (many ties), grades in {unjudged, -1, 0, 1, 2, 3}, and some relevant documents the
    run did not retrieve."""
    qrels_rows, lists = [], {}
    for qi in range(draw(st.integers(1, 2))):
        q = f"q{qi}"
        docs = draw(st.permutations(POOL).map(lambda p: p[:6]))[: draw(st.integers(1, 6))]
        scores = [draw(st.sampled_from([0.0, 1.0, 2.0])) for _ in docs]
        for d in POOL:
            grade = draw(st.sampled_from([None, None, None, -1, 0, 1, 2, 3]))
            if grade is not None:
                qrels_rows.append((q, d, grade))
        ranked = sorted(zip(docs, scores, strict=True), key=lambda t: (-t[1], [-ord(c) for c in t[0]]))
        lists[q] = ranked  # trec_eval order: score descending, doc id descending
    level = draw(st.sampled_from([1, 2]))
    assume(any(g >= level for _, _, g in qrels_rows))  # evaluate needs a query with a relevant document
    return make_qrels(qrels_rows), Run.from_ranked_lists("tiny", lists), draw(st.integers(1, 4)), level


def brute_force(qrels: Qrels, run: Run, metrics: list[str], relevance_level: int) -> pd.DataFrame:
    """min and max of every metric over ALL permutations inside every tie group, by evaluating one copy of each
    query per permutation (copy "q#i" with the qrels of q copied too; other queries' judgements stay, so a
    document's "judged for some query" status, which hole@k reads, is unchanged)."""
    lists = {
        q: list(zip(g["doc_id"], g["score"], strict=True)) for q, g in run.df.groupby("query_id", sort=False)
    }
    copies: dict[str, list[tuple[str, float]]] = {}
    origin: dict[str, str] = {}
    for q, items in lists.items():
        groups = [list(g) for _, g in itertools.groupby(items, key=lambda t: np.float32(t[1]))]
        for i, combo in enumerate(itertools.product(*(itertools.permutations(g) for g in groups))):
            copies[f"{q}#{i}"] = [t for group in combo for t in group]
            origin[f"{q}#{i}"] = q
    qdf = qrels.df
    extra = [
        qdf[qdf["query_id"] == q].assign(query_id=c)
        for c, q in origin.items()
        if (qdf["query_id"] == q).any()
    ]
    big_qrels = Qrels(pd.concat([qdf, *extra], ignore_index=True))
    ev = evaluate(big_qrels, Run.from_ranked_lists("all", copies), metrics, relevance_level=relevance_level)
    pq = ev.per_query[ev.per_query.index.isin(list(origin))]
    by = pq.groupby(pq.index.map(origin))
    return pd.concat({"min": by.min(), "max": by.max()}, axis=1)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(tiny_cases())
def test_exact_range_equals_brute_force_over_all_tie_orders(case):
    qrels, run, k, level = case
    metrics = all_metrics(k)
    audit = tie_audit(qrels, run, metrics, k=k, relevance_level=level)
    base = evaluate(qrels, run, metrics, relevance_level=level)
    brute = brute_force(qrels, run, metrics, level)
    pq = audit.per_query.set_index("query_id")
    for m in metrics:
        # the value in the run's (trec_eval) order is evaluate's
        np.testing.assert_allclose(pq[m].to_numpy(), base.per_query[m].to_numpy(), rtol=0, atol=1e-12)
        for q in pq.index:
            if q in brute.index:
                assert pq.at[q, f"{m}_min"] == pytest.approx(brute.at[q, ("min", m)], abs=1e-12), (q, m)
                assert pq.at[q, f"{m}_max"] == pytest.approx(brute.at[q, ("max", m)], abs=1e-12), (q, m)
            else:  # golden query missing from the run
                assert pq.at[q, f"{m}_min"] == pq.at[q, f"{m}_max"] == 0.0
    assert all(r.exact for r in audit.aggregate.values()) and audit.sampled_orders == 0
    depends = pd.Series(False, index=pq.index)
    for m in metrics:
        depends |= pq[f"{m}_max"] - pq[f"{m}_min"] > 1e-12
    assert audit.n_queries_metric_depends_on_order == int(depends.sum())
    assert (audit.message() is None) == (not depends.any())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(tiny_cases(), st.randoms(use_true_random=False))
def test_trec_file_audit_equals_the_checked_audit(case, rnd):
    # A run read from a TREC file carries the reader's trec_eval order (Run.keep_trec_order): the audit skips the
    # order check and the doc-id comparison of the tied documents. The same rows, written in a shuffled order and
    # read back, must give the audit of the same rows as ranked lists (whose order is checked, not recorded).
    qrels, run, k, level = case
    rows = list(zip(run.df["query_id"], run.df["doc_id"], run.df["score"], strict=True))
    rnd.shuffle(rows)
    metrics = all_metrics(k)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tiny.trec"
        path.write_text("".join(f"{q} Q0 {d} 0 {s!r} tag\n" for q, d, s in rows))
        read = read_run(path, name="tiny")
    assert read.known_trec_order()
    checked = Run("tiny", read.df.copy())  # a DataFrame: nothing recorded, every check runs
    assert not checked.known_trec_order()
    a = tie_audit(qrels, read, metrics, k=k, relevance_level=level)
    b = tie_audit(qrels, checked, metrics, k=k, relevance_level=level)
    assert a.trec_order and b.trec_order  # the reader's order is trec_eval's, as the check finds
    pd.testing.assert_frame_equal(a.per_query, b.per_query)
    assert a.aggregate == b.aggregate and a.examples == b.examples


def test_trec_order_is_forgotten_once_the_table_can_change(tmp_path):
    run = trec_run(tmp_path, [("q1", "a", 1.0), ("q1", "b", 1.0)])
    assert run.known_trec_order()
    df = (
        run.df
    )  # the first read builds a DataFrame, which its reader can change in place: the record is dropped
    assert not run.known_trec_order()
    df["doc_id"] = ["a", "b"]  # the tied documents now in ascending id order, not trec_eval's
    assert not tie_audit(make_qrels([("q1", "a", 1)]), run, ["mrr"], k=10).trec_order
