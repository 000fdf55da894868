"""The failure taxonomy, one hand-built world per class.

Each world is a handful of documents with hand-chosen 3-d vectors (normalised by the helper), one query, its
judgements, the run, and the BM25 scores a fake index returns. k = 2, so a near miss is a run rank in 3..6, and the
calibrated cosine threshold is fixed at 0.5 unless a test calibrates it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from diagnose.data import Corpus, Dataset, Qrels, Queries, Run
from diagnose.failures import (
    CLASS_BY_ID,
    CLASS_LABELS,
    CLASSES,
    FAILURE_CLASSES,
    RECOMMENDATIONS,
    Calibration,
    PairEvidence,
    Thresholds,
    calibrate,
    class_table,
    classify,
    diagnose_run,
    failed_pairs,
    find_label_noise,
    hubness,
    normalise_text,
    recommendation,
    within,
)
from diagnose.failures.passages import PassageMatch
from diagnose.search.space import VectorSpace

K = 2
CAL = Calibration("fake", seed=0.75, calibrated=0.5, percentile=10, n_pairs=10, fallback=False)


class FakeBM25:
    """Returns fixed scores per query text, in corpus order."""

    def __init__(self, scores: dict[str, list[float]]):
        self._scores = scores
        self.weights: dict[str, float] = {}

    def scores(self, text: str) -> np.ndarray:
        return np.asarray(self._scores[text], dtype=np.float64)

    def term_weights(self, stems) -> dict[str, float]:
        # every term weighs 1 unless the test says otherwise: the share of the query's BM25 weight is then the share
        # of its terms (repeats counted)
        return {s: self.weights.get(s, 1.0) for s in stems}


def world(docs, query, qrels, run, bm25):
    """docs: {id: (text, vec)}; query: (id, text, vec); qrels: {doc: grade}; run: [doc ids]; bm25: [scores]."""
    ids = list(docs)
    corpus = Corpus(pd.DataFrame({"doc_id": ids, "title": "", "text": [docs[d][0] for d in ids]}))
    qid, qtext, qvec = query
    queries = Queries(pd.DataFrame({"query_id": [qid], "text": [qtext]}))
    qr = Qrels(
        pd.DataFrame(
            {
                "query_id": qid,
                "doc_id": list(qrels),
                "relevance": np.array(list(qrels.values()), dtype=np.int64),
            }
        )
    )
    r = Run.from_ranked_lists("run", {qid: [(d, 10.0 - i) for i, d in enumerate(run)]})
    ds = Dataset(qrels=qr, runs={"run": r}, corpus=corpus, queries=queries)
    dv = np.array([docs[d][1] for d in ids], dtype=np.float32)
    dv /= np.linalg.norm(dv, axis=1, keepdims=True)
    qv = np.array([qvec], dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    space = VectorSpace.from_arrays("fake", ids, dv, [qid], qv)
    return ds, r, space, FakeBM25({qtext: bm25})


# a, b and c have cos ~1 with q = (1,0,0), so a target t of cos < 0.99 has dense rank 4 > k; the run retrieves a, b
OUTRANKERS = {"a": ("a", [1, 0.01, 0]), "b": ("b", [1, 0.02, 0]), "c": ("c", [1, 0, 0.01])}


def outranked_world(target_text, query_text, bm25, target_vec=(0.3, 0.954, 0)):
    """The world of a target t (cos(q,t) = 0.3 by default) outranked by a, b, c; bm25: scores of a, b, c, t."""
    docs = {**OUTRANKERS, "t": (target_text, list(target_vec))}
    return world(docs, ("q", query_text, [1, 0, 0]), {"t": 1}, ["a", "b"], bm25)


def only_failure(ds, run, space, bm25, **kw):
    diag = diagnose_run(ds, run, space, bm25, k=K, calibration=CAL, **kw)
    assert len(diag.failures) == 1
    return diag.failures[0]


def test_missing_document():
    # the golden set points at "ghost", which the corpus lacks; the run finds nothing relevant
    ds, run, space, bm25 = world(
        {"a": ("alpha", [1, 0, 0]), "b": ("beta", [0, 1, 0])},
        ("q", "alpha question", [1, 0, 0]),
        {"ghost": 1},
        ["a", "b"],
        [1.0, 0.0],
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "missing_document"
    assert f.cosine is None and f.dense_rank is None and f.bm25_rank is None
    assert "not in the corpus" in f.evidence


def test_label_gap():
    # target t = (0,1,0); the run's #1 is d = (0.05,1,0)/|.|, cos(t,d) = 1/sqrt(1.0025) = 0.9988 >= 0.95, unjudged
    ds, run, space, bm25 = world(
        {
            "t": ("reset the vpn token", [0, 1, 0]),
            "d": ("reset the vpn token (archived)", [0.05, 1, 0]),
            "a": ("cafeteria menu", [0, 0, 1]),
        },
        ("q", "vpn token reset", [1, 1, 0]),
        {"t": 2},
        ["d", "a"],
        [2.0, 2.1, 0.0],
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "label_gap"
    assert f.duplicate_doc_id == "d"
    assert f.duplicate_cosine == pytest.approx(1 / np.sqrt(1.0025), abs=1e-6)


def test_label_gap_by_identical_normalised_text():
    # same text up to case and punctuation, vectors far apart (cos(t,d) = 0): still a duplicate
    ds, run, space, bm25 = world(
        {"t": ("Reset the VPN token.", [0, 1, 0]), "d": ("reset the vpn token", [0, 0, 1])},
        ("q", "vpn token", [1, 1, 1]),
        {"t": 1},
        ["d"],
        [1.0, 1.0],
    )
    assert only_failure(ds, run, space, bm25).cls == "label_gap"


def test_near_miss():
    # k = 2: the run ranks the target 4th, inside k+1 .. 3k = 3..6
    # q = (1,0,0), t = (0.6,0.8,0): cos = 0.6; a, b, c = (0,0,1): cos(t, .) = 0, so no duplicate
    ds, run, space, bm25 = world(
        {
            "a": ("x", [0, 0, 1]),
            "b": ("y", [0, 0.1, 1]),
            "c": ("z", [0.1, 0, 1]),
            "t": ("target", [0.6, 0.8, 0]),
        },
        ("q", "target words", [1, 0, 0]),
        {"t": 1},
        ["a", "b", "c", "t"],
        [0.0, 0.0, 0.0, 1.0],
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "near_miss"
    assert f.run_rank == 4 and f.run_depth == 4
    assert f.cosine == pytest.approx(0.6, abs=1e-6)
    assert f.dense_rank == 1  # cos(q, t) = 0.6 beats cos(q, a|b|c) <= 0.1
    # margin = cos(q, 2nd retrieved = b) - cos(q, t) = 0 - 0.6
    assert f.margin == pytest.approx(-0.6, abs=1e-6)


def test_index_gap():
    # exact dense search puts t first (cos(q,t) = 1), but the run (7 docs, none near t) never retrieved it
    docs = {f"n{i}": (f"noise {i}", [0, 1, i / 10]) for i in range(7)}
    docs["t"] = ("the target", [1, 0, 0])
    ds, run, space, bm25 = world(
        docs, ("q", "target", [1, 0, 0]), {"t": 1}, [f"n{i}" for i in range(7)], [0.0] * 8
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "index_gap"
    assert f.run_rank is None and f.dense_rank == 1


def test_vocabulary_mismatch_bm25_finds_it():
    # q = (1,0,0); t = (0.3,0.954,0): cos 0.3 < 0.5 calibrated; a, b, c have cos ~1 so dense rank of t = 4 > k;
    # BM25 puts t first (score 5 vs 0) -> vocabulary_mismatch
    ds, run, space, bm25 = outranked_world("ERR-4291 webhook", "ERR-4291 on webhook", [0.0, 0.0, 0.0, 5.0])
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "vocabulary_mismatch"
    assert f.dense_rank == 4 and f.bm25_rank == 1
    assert f.seed_verdict == "vocabulary mismatch" and f.calibrated_verdict == "vocabulary mismatch"


def test_vocabulary_mismatch_no_shared_terms():
    # BM25 ranks t 3rd (> k), but the query shares no term with it (overlap 0 < 0.2) and cos 0.3 < 0.5
    ds, run, space, bm25 = outranked_world(
        "credential recovery procedure", "forgot the password", [3.0, 2.0, 0.0, 1.0]
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "vocabulary_mismatch"
    assert f.bm25_rank == 3 and f.overlap == 0.0
    assert set(f.missing_terms) == {"forgot", "password"}  # "the" is a stopword


def test_question_words_do_not_make_a_vocabulary_mismatch():
    # same geometry as above (cos 0.3 < 0.5, dense rank 4 > k, BM25 rank 3 > k). BM25's terms of the query:
    # how, do, i, vpn, token, expire -> 2 of 6 in the target = 0.333; without the query stop words how/do/i:
    # 2 of 3 = 0.667. Both >= 0.2, so semantic_gap; the evidence lists only the content words.
    ds, run, space, bm25 = outranked_world(
        "vpn token lifetime policy", "how do I fix an expired vpn token", [3.0, 2.0, 0.0, 1.0]
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "semantic_gap"
    assert f.present_terms == ("vpn", "token") and f.missing_terms == ("fix", "expired")
    assert f.ignored_terms == ("how", "do", "i")
    # taxonomy overlap 2 / 4 (fix, expired, vpn, token); BM25's 2 / 7 (how, do, i, fix, expir, vpn, token)
    assert f.overlap == pytest.approx(2 / 4) and f.bm25_overlap == pytest.approx(2 / 7)
    d = f.to_dict()
    assert d["ignored_terms"] == ["how", "do", "i"] and d["bm25_overlap"] == pytest.approx(2 / 7)


def test_question_words_in_the_denominator_no_longer_hide_a_match():
    # the target shares one word ("laptop") with the query. BM25's terms (Lucene drops "a", "for"): how, do, i,
    # get, new, laptop, my, team -> 1 / 8 = 0.125 < 0.2, which made it a vocabulary_mismatch when every term
    # counted alike; the rule reads the share of the query's BM25 weight, where the question words weigh what their
    # idf gives them (in most documents of a real corpus: 0.1 here, against 1 for the others):
    # 1 / (4 x 0.1 + 4 x 1) = 1 / 4.4 = 0.227 >= 0.2 (no hits to calibrate on: min_overlap), and BM25 rank 3 > k:
    # semantic_gap
    ds, run, space, bm25 = outranked_world(
        "laptop refresh policy", "how do I get a new laptop for my team", [3.0, 2.0, 0.0, 1.0]
    )
    bm25.weights = dict.fromkeys(("how", "do", "i", "my"), 0.1)
    f = only_failure(ds, run, space, bm25)
    assert f.bm25_overlap == pytest.approx(1 / 8) and f.overlap == pytest.approx(1 / 4)
    assert f.weight_share == pytest.approx(1 / 4.4) and f.weight_share_threshold is None  # min_overlap
    assert f.cls == "semantic_gap"
    assert f.ignored_terms == ("how", "do", "i", "my")


def test_semantic_gap():
    # same geometry (cos 0.3, dense rank 4) but the words overlap (vpn, token: 2 of 3 terms) and BM25 ranks t 3rd
    ds, run, space, bm25 = outranked_world(
        "vpn token lifetime policy", "vpn token expired", [3.0, 2.0, 0.0, 1.0]
    )
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "semantic_gap"
    assert f.overlap == pytest.approx(2 / 3)
    assert set(f.present_terms) == {"vpn", "token"}


def test_ranking_failure():
    # cos(q,t) = 0.6 >= 0.5 calibrated, dense rank 4 (a,b,c ~1), BM25 rank 1, run depth 2: findable but outranked
    ds, run, space, bm25 = outranked_world("vpn", "vpn", [0.0, 0.0, 0.0, 4.0], target_vec=(0.6, 0.8, 0))
    f = only_failure(ds, run, space, bm25)
    assert f.cls == "ranking_failure"
    assert (
        f.seed_verdict == "vocabulary mismatch"
    )  # 0.6 < 0.75: the seed rule and the calibrated rule disagree
    assert f.calibrated_verdict == "ranking issue"


def test_first_rule_wins_order():
    # a document that is both a near miss and findable by exact search is a near miss (rule 3 before rule 4)
    common = dict(bm25_rank=1, cosine=0.9, overlap=1.0, k=10, calibrated=0.5)
    assert classify(PairEvidence(run_rank=15, dense_rank=1, **common)) == "near_miss"
    assert classify(PairEvidence(run_rank=31, dense_rank=1, **common)) == "index_gap"  # 31 > 3k
    assert classify(PairEvidence(run_rank=31, dense_rank=11, **common)) == "ranking_failure"
    assert classify(PairEvidence(in_corpus=False, **common)) == "missing_document"
    assert classify(PairEvidence(run_rank=15, dense_rank=1, duplicate_doc_id="d", **common)) == "label_gap"


def test_zero_bm25_score_has_no_rank_and_no_longer_makes_a_ranking_failure():
    # cos(q,t) = 0.6 >= 0.5 calibrated, dense rank 4 > k (a, b, c ~1); BM25 scores every document 0 (the query's
    # words occur nowhere). The old rule gave t rank 1 + #{score > 0} = 1 + 0 = 1 <= k: "findable", a
    # ranking_failure. A score of 0 has no rank, so neither dense nor BM25 ranks it within k: semantic_gap.
    ds, run, space, bm25 = outranked_world(
        "credential recovery", "forgot password", [0.0, 0.0, 0.0, 0.0], target_vec=(0.6, 0.8, 0)
    )
    f = only_failure(ds, run, space, bm25)
    assert f.bm25_score == 0.0 and f.bm25_rank is None and f.bm25_rank_worst is None
    assert f.cls == "semantic_gap"
    assert "no query term in the target" in f.evidence and "BM25 rank #" not in f.evidence
    d = f.to_dict()
    assert d["bm25_rank"] is None and d["bm25_rank_worst"] is None


@pytest.mark.parametrize(
    ("bm25", "best", "worst", "cls"),
    [
        # t ties with a and c at 5.0: the group holds ranks 1..3, and 3 > k = 2: BM25 does not rank it within k
        ([5.0, 0.0, 5.0, 5.0], 1, 3, "semantic_gap"),
        # t ties with a only: ranks 1..2, the whole group fits k = 2: findable, so a ranking_failure
        ([5.0, 0.0, 0.0, 5.0], 1, 2, "ranking_failure"),
        # t alone below a and b (9 > 7 > 5): ranks 3..3 > k
        ([9.0, 7.0, 0.0, 5.0], 3, 3, "semantic_gap"),
    ],
)
def test_bm25_rank_is_a_tie_range_and_within_k_needs_the_whole_group(bm25, best, worst, cls):
    # cos(q,t) = 0.6 >= 0.5 calibrated and dense rank 4 > k: the class turns on BM25 alone; the words overlap
    # (query "vpn token", target "vpn token": overlap 1), so never a vocabulary_mismatch
    ds, run, space, fake = outranked_world("vpn token", "vpn token", bm25, target_vec=(0.6, 0.8, 0))
    f = only_failure(ds, run, space, fake)
    assert (f.bm25_rank, f.bm25_rank_worst) == (best, worst)
    assert f.cls == cls
    rank = f"#{best}" if best == worst else f"#{best}–{worst}"
    assert f"BM25 rank {rank}," in f.evidence


@pytest.mark.parametrize(("copies", "worst", "cls"), [(1, 2, "index_gap"), (2, 3, "ranking_failure")])
def test_dense_rank_is_a_tie_range_and_index_gap_needs_the_whole_group(copies, worst, cls):
    # t = (1,0,0) = q: cos 1; `copies` noise documents with t's exact vector tie with it at cos 1 (as float32).
    # One copy: the group holds ranks 1..2 <= k = 2 and the run (n0..n6) missed t: index_gap. Two copies: ranks
    # 1..3, 3 > k, so exact search does not rank it within k for every tie order; BM25 puts t alone first
    # (score 5): ranking_failure (the old rule read rank 1 and said index_gap).
    docs = {f"n{i}": (f"noise {i}", [0, 1, i / 10]) for i in range(7)}
    docs.update({f"copy{i}": (f"copy {i}", [1, 0, 0]) for i in range(copies)})
    docs["t"] = ("the target", [1, 0, 0])
    bm25 = [0.0] * (7 + copies) + [5.0]
    ds, run, space, fake = world(
        docs, ("q", "target", [1, 0, 0]), {"t": 1}, [f"n{i}" for i in range(7)], bm25
    )
    f = only_failure(ds, run, space, fake)
    assert (f.dense_rank, f.dense_rank_worst) == (1, worst)
    assert f.cls == cls
    assert f"exact dense rank #1–{worst}," in f.evidence


def test_classify_reads_the_worst_rank():
    # k = 10; cos 0.9 >= 0.5: only the ranks decide. A group 8..12 straddles k: not within it.
    common = dict(run_rank=None, cosine=0.9, overlap=1.0, k=10, calibrated=0.5)
    assert classify(PairEvidence(dense_rank=8, dense_rank_worst=10, **common)) == "index_gap"
    assert classify(PairEvidence(dense_rank=8, dense_rank_worst=12, **common)) == "semantic_gap"
    assert classify(
        PairEvidence(dense_rank=8, dense_rank_worst=12, bm25_rank=3, bm25_rank_worst=10, **common)
    ) == ("ranking_failure")
    assert classify(
        PairEvidence(dense_rank=8, dense_rank_worst=12, bm25_rank=3, bm25_rank_worst=11, **common)
    ) == ("semantic_gap")
    # no worst given: no tie, the best rank decides (the API before tie ranges)
    assert classify(PairEvidence(dense_rank=8, **common)) == "index_gap"
    assert within(8, None, 10) and not within(None, None, 10) and not within(1, 11, 10)


def test_every_class_has_a_recommendation():
    assert set(RECOMMENDATIONS) == set(CLASSES)
    assert all(len(r) > 80 for r in RECOMMENDATIONS.values())


def test_the_views_follow_the_records():
    # CLASSES, CLASS_LABELS and RECOMMENDATIONS are read off the records, in rule order, ids unique
    assert tuple(c.id for c in FAILURE_CLASSES) == CLASSES and len(set(CLASSES)) == len(CLASSES)
    assert list(CLASS_LABELS) == list(CLASSES) and list(RECOMMENDATIONS) == list(CLASSES)
    for c in FAILURE_CLASSES:
        assert CLASS_BY_ID[c.id] is c
        assert CLASS_LABELS[c.id] == c.label and RECOMMENDATIONS[c.id] == c.recommendation.format(
            near_miss_factor=3
        )
        # the legend is the label with what it means in brackets
        assert c.legend.startswith(c.label + " (") and c.legend.endswith(")")
        assert c.rule and c.what_to_do and c.evidence and c.remedy.id and c.remedy.text


def test_thresholds_own_the_near_miss_depth_and_the_texts_say_it():
    # near_miss_factor 3 at k=10: 3 * 10 = 30; factor 5 at k=4: 20
    assert Thresholds().near_miss_depth(10) == 30 and Thresholds(near_miss_factor=5).near_miss_depth(4) == 20
    # the default texts say "top 3k"; with factor 5 the same sentences say "top 5k", never "3k"
    assert "over the top 3k candidates" in recommendation("near_miss")
    five = Thresholds(near_miss_factor=5)
    assert "over the top 5k candidates" in recommendation("near_miss", thresholds=five)
    for kind in ("lexical", "hybrid"):
        assert "top 3k" in recommendation("index_gap", kind)
        text = recommendation("index_gap", kind, five)
        assert "top 5k" in text and "3k" not in text
    # the table of classes formats the rules with the same values: near_miss' rule is "k+1 … 5k"
    assert "k+1 … 5k" in class_table(five) and "k+1 … 3k" in class_table()


# One hand-built evidence record per class, k = 10, calibrated threshold 0.5, default thresholds (near-miss depth
# 3 x 10 = 30, min_overlap 0.2, diluted_margin 0.15); each record states only what its case needs.
_WINDOW = dict(window_tokens=256, capacity=254, target_tokens=400, passage_text="p", passage_char=1200)
EVIDENCE_PER_CLASS = {
    "missing_document": dict(in_corpus=False),
    "filtered_out": dict(filtered_out=True, filter_why="tenant = 'b' (the document has 'a')"),
    "label_gap": dict(duplicate_doc_id="dup", duplicate_cosine=0.97),
    # merged with its neighbours the split target ranks #4 <= 10; the chunk alone has no dense rank within k
    "split": dict(split_share=0.6, split_cosine=0.55, split_rank=4),
    # the best passage starts at token 300 >= 254 (the window less 2 special tokens); whole 0.1 < 0.5 <= 0.6
    "truncated": dict(
        passage=PassageMatch(
            passage_offset=300,
            passage_cosine=0.6,
            target_cosine=0.1,
            first_good_offset=None,
            window_char=1000,
            **_WINDOW,
        )  # fmt: skip
    ),
    # the passage at 100 < 254 is read; 0.6 >= 0.5 and 0.6 - 0.1 = 0.5 >= 0.15
    "diluted": dict(
        passage=PassageMatch(
            passage_offset=100,
            passage_cosine=0.6,
            target_cosine=0.1,
            first_good_offset=100,
            window_char=None,
            **_WINDOW,
        )  # fmt: skip
    ),
    "near_miss": dict(run_rank=15, dense_rank=1, cosine=0.9),  # 10 < 15 <= 30
    "index_gap": dict(
        run_rank=None, dense_rank=3, cosine=0.9
    ),  # exact search: 3 <= 10; the run: not retrieved
    # cosine 0.2 < 0.5 and dense #40 > 10, while BM25 ranks it #2 <= 10
    "vocabulary_mismatch": dict(dense_rank=40, bm25_rank=2, cosine=0.2, overlap=0.5),
    # dense #40 and no BM25 rank; overlap 0.5 >= 0.2: the words are there, so not a mismatch
    "semantic_gap": dict(dense_rank=40, bm25_rank=None, bm25_score=0.0, cosine=0.2, overlap=0.5),
    # BM25 #3 <= 10, dense #12 > 10 with cosine 0.9 >= 0.5: findable, but outranked
    "ranking_failure": dict(run_rank=None, dense_rank=12, bm25_rank=3, cosine=0.9, overlap=1.0),
}


@pytest.mark.parametrize("cls", CLASSES)
def test_classify_reads_one_hand_built_evidence_record_per_class(cls):
    from diagnose.failures.taxonomy import evidence_sentence

    e = PairEvidence(doc_id="t", k=10, calibrated=0.5, run_depth=100, **EVIDENCE_PER_CLASS[cls])
    assert classify(e, Thresholds()) == cls
    sentence = evidence_sentence(cls, e)  # the record is also all the class's sentence reads
    assert sentence.endswith(".") and "{" not in sentence


def test_every_class_has_a_hand_built_evidence_record():
    assert list(EVIDENCE_PER_CLASS) == list(CLASSES)


def test_classify_rules_are_in_the_records_order():
    """The n-th rule of classify() returns the n-th record's id: the records' order is the rules' order (a new class
    is one record and one rule, at the same place in both)."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(classify)))
    # ast.walk is breadth-first: sort the returned ids by their line to read the rules top to bottom
    returned = sorted(
        (node.lineno, node.value.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
    )
    assert [cls for _, cls in returned] == list(CLASSES)


@pytest.mark.parametrize("cls", CLASSES)
def test_every_class_has_an_evidence_sentence(cls):
    # every field a template may read: the pair's evidence (the window and best passage too), {base}, {ov}, {found}
    from diagnose.failures.taxonomy import evidence_sentence

    e = PairEvidence(
        doc_id="t",
        k=2,
        run_rank=4,
        run_depth=10,
        dense_rank=1,
        bm25_rank=3,
        cosine=0.4,
        calibrated=0.5,
        overlap=0.25,
        duplicate_doc_id="d",
        duplicate_cosine=0.97,
        passage=PassageMatch(256, 254, 400, 300, 0.6, "p", 0.3, None, 1200, 1000),
    )
    sentence = evidence_sentence(cls, e)  # near_hi: 3 x 2 = 6
    assert sentence.endswith(".") and "{" not in sentence


def test_calibrate_percentile():
    # five successes with cosines 0.9, 0.8, 0.7, 0.6, 0.5; the 10th percentile with linear interpolation sits at
    # position 0.1 * (5 - 1) = 0.4 between 0.5 and 0.6: 0.5 + 0.4 * 0.1 = 0.54
    cosines = [0.9, 0.8, 0.7, 0.6, 0.5]
    ids = [f"d{i}" for i in range(5)]
    qids = [f"q{i}" for i in range(5)]
    dv = np.array([[c, np.sqrt(1 - c * c)] for c in cosines], dtype=np.float32)
    qv = np.tile(np.array([[1, 0]], dtype=np.float32), (5, 1))
    space = VectorSpace.from_arrays("fake", ids, dv, qids, qv)
    qrels = Qrels(pd.DataFrame({"query_id": qids, "doc_id": ids, "relevance": np.ones(5, dtype=np.int64)}))
    run = Run.from_ranked_lists("r", {q: [(d, 1.0)] for q, d in zip(qids, ids, strict=True)})
    ds = Dataset(qrels=qrels, runs={"r": run})
    cal = calibrate(ds, run, space, k=1)
    assert not cal.fallback and cal.n_pairs == 5
    assert cal.calibrated == pytest.approx(0.54, abs=1e-6)
    # fewer successes than min_calibration_pairs: the seed threshold, flagged
    cal2 = calibrate(ds, run, space, k=1, thresholds=Thresholds(min_calibration_pairs=6))
    assert cal2.fallback and cal2.calibrated == 0.75


def test_recall_mode_counts_partial_failures():
    # q has relevant t1 (found at rank 1) and t2 (not retrieved): hit mode -> no failure, recall mode -> one
    ds, run, space, bm25 = world(
        {"t1": ("one", [1, 0, 0]), "t2": ("two", [0, 1, 0]), "a": ("a", [0, 0, 1])},
        ("q", "one two", [1, 1, 0]),
        {"t1": 1, "t2": 1},
        ["t1", "a"],
        [1.0, 1.0, 0.0],
    )
    assert failed_pairs(ds, run, K, "hit")[0] == []
    assert failed_pairs(ds, run, K, "recall")[0] == [("q", "t2", 1)]


def test_json_contract_keys():
    ds, run, space, bm25 = world(
        {"a": ("a", [1, 0.01, 0]), "b": ("b", [1, 0.02, 0]), "t": ("vpn", [0.6, 0.8, 0])},
        ("q", "vpn", [1, 0, 0]),
        {"t": 1},
        ["a", "b"],
        [0.0, 0.0, 4.0],
    )
    d = diagnose_run(ds, run, space, bm25, k=K, calibration=CAL).to_dict()
    assert {"failures", "class_counts", "threshold"} <= set(d)
    f = d["failures"][0]
    assert {
        "query_id",
        "doc_id",
        "class",
        "cosine",
        "run_rank",
        "dense_rank",
        "bm25_rank",
        "missing_terms",
        "present_terms",
        "overlap",
        "ignored_terms",  # added with the query stop words; the keys above are unchanged
        "bm25_overlap",
        "dense_rank_worst",  # added with the tie ranges
        "bm25_rank_worst",
    } <= set(f)
    assert set(d["class_counts"]) == set(CLASSES)


def test_label_noise_and_duplicates():
    # d is an unjudged near-duplicate (cos 0.9988) of the judged-relevant t, retrieved at rank 1 for q
    ds, run, space, _ = world(
        {
            "t": ("reset the vpn token", [0, 1, 0]),
            "d": ("Reset the VPN token", [0.05, 1, 0]),
            "a": ("menu", [0, 0, 1]),
        },
        ("q", "vpn token", [0, 1, 0]),
        {"t": 2},
        ["d", "t"],
        [0.0, 0.0, 0.0],
    )
    noise = find_label_noise(ds, run, space, k=2)
    assert noise.unjudged_duplicates[["query_id", "doc_id", "duplicate_of"]].values.tolist() == [
        ["q", "d", "t"]
    ]
    # "Reset the VPN token" and "reset the vpn token" normalise to the same text
    assert noise.duplicate_documents[["doc_id", "duplicate_of"]].values.tolist() == [["d", "t"]]


def test_conflicting_duplicate_queries():
    corpus = Corpus(pd.DataFrame({"doc_id": ["a", "b"], "title": "", "text": ["alpha", "beta"]}))
    queries = Queries(pd.DataFrame({"query_id": ["q1", "q2"], "text": ["How do I X?", "how do i x"]}))
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": np.array([1, 1])})
    )
    run = Run.from_ranked_lists("r", {"q1": [("a", 1.0)], "q2": [("a", 1.0)]})
    space = VectorSpace.from_arrays(
        "f", ["a", "b"], np.eye(2, dtype=np.float32), ["q1", "q2"], np.eye(2, dtype=np.float32)
    )
    noise = find_label_noise(Dataset(qrels, {"r": run}, corpus, queries), run, space, k=1)
    assert noise.conflicting_queries["query_ids"].tolist() == ["q1, q2"]


def test_hubness():
    # doc h is in the top 2 of all 4 queries; others once each. k-occurrence over 6 docs: [4,1,1,1,1,0]
    run = Run.from_ranked_lists("r", {f"q{i}": [("h", 2.0), (f"d{i}", 1.0)] for i in range(4)})
    h = hubness(run, k=2, n_docs=6, min_share=0.5)
    assert h.hubs["doc_id"].tolist() == ["h"]
    assert h.hubs["share"].tolist() == [1.0]
    occ = np.array([4, 1, 1, 1, 1, 0], dtype=float)
    expected = ((occ - occ.mean()) ** 3).mean() / occ.std() ** 3
    assert h.skewness == pytest.approx(expected)
    assert h.skewness > 1


def _normalise_by_regex(text: str) -> str:
    """The definition: NFKC, lowercase, [^\\w\\s] -> space, whitespace folded (normalise_text's general path)."""
    import re
    import unicodedata

    t = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", t)).strip()


@settings(max_examples=500, deadline=None)
@given(hst.text(alphabet=hst.characters(max_codepoint=127), max_size=80))
def test_normalise_text_ascii_fast_path_matches_the_definition(text):
    assert normalise_text(text) == _normalise_by_regex(text)


def test_normalise_text_non_ascii_and_control_characters():
    for text in ["Ünïcode—dash ﬁle", "a\x1cb\x1fc\x0bd\te", "snake_case_id", "İstanbul"]:
        assert normalise_text(text) == _normalise_by_regex(text)


def test_normalise_text():
    assert normalise_text("  Reset the VPN-token! ") == "reset the vpn token"


_TEXT_PIECES = hst.text(
    alphabet=hst.sampled_from(list("aZ_9 .-,!\t\n\r\x0b\x0c\x1c\x1f\x00\x7féﬁ\u00a0")), max_size=12
)


@settings(max_examples=200, deadline=None)
@given(docs=hst.lists(hst.tuples(_TEXT_PIECES, _TEXT_PIECES), max_size=12))
def test_normalised_fingerprints_on_bytes_equal_those_of_normalise_text(docs):
    """The byte-level normalisation of ASCII texts (numpy) gives the string ``normalise_text`` gives: the same
    fingerprints, the same empties, for every document (title + text), ASCII or not, empty or not."""
    import pyarrow as pa

    import diagnose.failures.golden as golden
    from diagnose.runtime.ids import fingerprints

    corpus = Corpus(
        pd.DataFrame(
            {
                "doc_id": [f"d{i}" for i in range(len(docs))],
                "title": [t for t, _ in docs],
                "text": [x for _, x in docs],
            }
        )
    )
    want = [golden.normalise_text(t) for t in corpus.texts()]
    digest, empty = golden._normalised_fingerprints(corpus, slice(0, len(docs)))
    np.testing.assert_array_equal(digest, fingerprints(pa.array(want, type=pa.large_string())))
    np.testing.assert_array_equal(empty, [not w for w in want])


@settings(max_examples=60, deadline=None)
@given(
    texts=hst.lists(
        hst.sampled_from(["Alpha beta", "alpha, BETA!", "gamma", "", "  ", "Gamma.", "delta é"]), max_size=30
    ),
    block=hst.integers(min_value=1, max_value=7),
)
def test_same_text_documents_read_in_blocks_equal_the_whole_list(texts, block):
    """``same_text_rows`` reads the corpus a block at a time and keeps digests; the pairs must be those of the
    plain reading: every non-empty normalised text seen before, paired with its first document, in corpus order."""
    import diagnose.failures.golden as golden

    corpus = Corpus(
        pd.DataFrame({"doc_id": [f"d{i}" for i in range(len(texts))], "title": "", "text": texts})
    )
    first: dict[str, int] = {}
    expected = []
    for row, t in enumerate(corpus.texts()):
        norm = golden.normalise_text(t)
        if norm and norm in first:
            expected.append((row, first[norm]))
        else:
            first.setdefault(norm, row)
    saved = golden.TEXT_BLOCK
    golden.TEXT_BLOCK = block
    try:
        assert golden.same_text_rows(corpus) == expected
    finally:
        golden.TEXT_BLOCK = saved


@pytest.mark.parametrize(
    ("bm25_rank", "overlap", "says"),
    [
        # the BM25 branch: BM25 #10 <= k=10 (the boundary) -> the words tell
        (10, 0.5, "while the words tell (BM25 ranks it within k)"),
        # the few-words branch: 10% of the query's BM25 weight < the run's 20% and BM25 #11 > 10 (one past the
        # boundary) or no BM25 rank at all
        (
            11,
            0.1,
            "and the target holds 10% of the query's BM25 weight, less than the 20% that 90% of the relevant",
        ),
        (None, 0.1, "and the target holds 10% of the query's BM25 weight, less than the 20% that 90% of the"),
    ],
)
def test_the_vocabulary_mismatch_sentence_says_the_branch_that_fired(bm25_rank, overlap, says):
    """Issue: "the words tell" beside "BM25 rank #2168". The sentence follows the rule's branch, at its boundary."""
    from diagnose.failures.taxonomy import evidence_sentence

    e = PairEvidence(
        doc_id="t", k=10, calibrated=0.5, run_depth=100, dense_rank=40, bm25_rank=bm25_rank,
        bm25_score=None if bm25_rank else 0.0, cosine=0.2, overlap=overlap, weight_share=overlap,
        weight_share_threshold=0.2,
    )  # fmt: skip
    assert classify(e, Thresholds()) == "vocabulary_mismatch"
    sentence = evidence_sentence("vocabulary_mismatch", e)
    assert says in sentence
    assert ("the words tell" in sentence) == (bm25_rank is not None and bm25_rank <= 10)


def test_the_overlap_sentence_says_bm25_also_scores_the_stop_words():
    """Issue: "0% of the query terms occur in the target" beside a BM25 score of 0.68: the overlap leaves the query's
    stop words out while BM25 scores them. The record carries both shares; the sentence says both when they differ."""
    from diagnose.failures.taxonomy import evidence_sentence

    base = dict(doc_id="t", k=10, calibrated=0.5, run_depth=100, dense_rank=40, bm25_rank=50, bm25_score=0.68)
    # 0 of 2 content terms; 1 of 4 terms BM25 scores (a stop word): 25%
    e = PairEvidence(**base, cosine=0.2, overlap=0.0, bm25_overlap=0.25)
    sentence = evidence_sentence(classify(e, Thresholds()), e)
    assert (
        "0% of the query terms occur in the target (stop words left out; 25% of every term BM25 scores)"
        in sentence
    )
    same = PairEvidence(
        **base, cosine=0.2, overlap=0.0, bm25_overlap=0.0
    )  # nothing shared at all: nothing to add
    assert "stop words left out" not in evidence_sentence(classify(same, Thresholds()), same)
