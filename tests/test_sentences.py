"""Every class's evidence sentence at the rules' boundaries cannot contradict its own numbers (issue 35 part 3: "the
words tell" beside "BM25 rank #2168"; "0% of the query terms" beside a BM25 score of 0.68; "beyond the window" for a
passage inside it).

A grid of hand-built evidence records puts each number at a rule's boundary (ranks at k, k+1, 3k, 3k+1 and None; the
cosine just below, at and just above the calibrated threshold; overlaps 0, <1%, 1; a BM25 score > 0 with an overlap
of 0; the weight share just below and at its threshold; passages at the last token the model reads and the first it
does not); each record is classified and its class's sentence is read back by :func:`contradictions`, which names
each claim a sentence makes and checks it against the record.
"""

from __future__ import annotations

import itertools
import re

import pytest

from diagnose.failures import CLASSES, PairEvidence, Thresholds, classify
from diagnose.failures.passages import PassageMatch
from diagnose.failures.taxonomy import evidence_sentence, within

K, CAL = 10, 0.5
T = Thresholds()  # near-miss depth 3 x 10 = 30


def _pct(text: str) -> float:
    """A printed share back to a number: "<1%" -> 0.005 (an upper bound), ">99%" -> 0.995 (a lower bound)."""
    if text == "<1%":
        return 0.005
    if text == ">99%":
        return 0.995
    return float(text.rstrip("%")) / 100


def contradictions(cls: str, e: PairEvidence, s: str) -> list[str]:
    """Each claim of sentence ``s`` that the record ``e`` contradicts, in words (empty: none)."""
    bad = []
    dense_in = within(e.dense_rank, e.dense_rank_worst, e.k)
    bm25_in = within(e.bm25_rank, e.bm25_rank_worst, e.k)
    if "the words tell" in s and not bm25_in:
        bad.append("'the words tell' beside a BM25 rank beyond k")
    if "Neither dense nor BM25 ranks the target within k" in s and (dense_in or bm25_in):
        bad.append("'neither ranks it within k' while one does")
    if s.startswith("Exact dense search ranks the target") and not dense_in:
        bad.append("'exact dense search ranks it within k' while it does not")
    if s.startswith("This tool's BM25 ranks the target") and not bm25_in:
        bad.append("'BM25 ranks it within k' while it does not")
    if s.startswith("BM25 does not rank the target within k") and bm25_in:
        bad.append("'BM25 does not rank it within k' while it does")
    if "while exact dense search ranks it within" in s and not within(
        e.dense_rank, e.dense_rank_worst, T.near_miss_depth(e.k)
    ):
        bad.append("'dense search ranks it within 3k' while it does not")
    m = re.search(r"merged it ranks #(\d+), within k", s)
    if m and not (e.split_rank is not None and int(m.group(1)) == e.split_rank <= e.k):
        bad.append("'merged it ranks within k' beside a merged rank beyond k")
    if "just below k" in s and not (e.run_rank is not None and e.k < e.run_rank <= T.near_miss_depth(e.k)):
        bad.append("'just below k' for a rank outside k+1..3k")
    # a cosine beside its threshold: the printed numbers compare as the numbers do
    for cos, thr in re.findall(r"cosine (\d\.\d+) \(calibrated threshold (\d\.\d+)\)", s):
        printed = (float(cos) > float(thr)) - (float(cos) < float(thr))
        actual = (e.cosine > e.calibrated) - (e.cosine < e.calibrated)
        if printed != actual:
            bad.append(
                f"cosine {cos} against threshold {thr} compares otherwise than {e.cosine} and {e.calibrated}"
            )
    if "scores the target low" in s and not (e.cosine is not None and e.cosine < e.calibrated):
        bad.append("'scores the target low' with a cosine at or above the threshold")
    # shares: 0% and 100% only when they are
    m = re.search(r"(<1%|>99%|\d+%) of the query terms occur", s)
    if m:
        said = m.group(1)
        if (said == "0%") != (e.overlap == 0) or (said == "100%") != (e.overlap == 1):
            bad.append(f"'{said} of the query terms' for an overlap of {e.overlap}")
        if said == "0%" and e.bm25_score and "stop words" not in s:
            bad.append("'0% of the query terms' beside a BM25 score > 0 with no word why")
    if "no query term in the target" in s and (e.bm25_score or e.overlap or e.bm25_overlap):
        bad.append("'no query term in the target' while the record has some")
    if "(score 0" in s and e.bm25_score != 0:
        bad.append(f"'score 0' for a BM25 score of {e.bm25_score}")
    # the weight share beside its threshold: printed so they compare as the numbers do, and "less than" only if so
    m = re.search(r"holds (<1%|>99%|[\d.]+%) of the query's BM25 weight, (not )?less than (?:the |min_overlap \()"
                  r"(<1%|>99%|[\d.]+%)", s)  # fmt: skip
    if m:
        share, negated, thr = _pct(m.group(1)), m.group(2), _pct(m.group(3))
        threshold = e.weight_share_threshold if e.weight_share_threshold is not None else T.min_overlap
        if (negated is None) != (e.weight_share < threshold):
            bad.append("'less than' the threshold against the numbers")
        if (negated is None) != (share < thr):
            bad.append(f"printed share {m.group(1)} and threshold {m.group(3)} compare otherwise than said")
    # "beyond" the tokens the model reads only for an offset at or past them
    m = re.search(r"starts at token (\d+) of \d+, beyond the (\d+) tokens the model reads", s)
    if m and int(m.group(1)) < int(m.group(2)):
        bad.append(f"'beyond the {m.group(2)} tokens' for a passage at token {m.group(1)}")
    inside = e.passage is not None and e.passage.passage_offset < e.passage.capacity
    if inside and re.search(r"starts at token \d+ of \d+, beyond", s):
        bad.append("'beyond' for a passage inside the window")
    return bad


def _boundary_records() -> list[PairEvidence]:
    """The grid (module docstring): ranks, cosines, overlaps, BM25 and the weight share at the boundaries, for each
    run kind; then the passage and split records at theirs."""
    eps = 1e-7
    runs = (None, K + 1, 3 * K, 3 * K + 1)
    denses = ((None, None), (K, K), (K - 1, K + 1), (K + 1, K + 1), (3 * K, 3 * K), (3 * K + 1, 3 * K + 1))
    # (rank, worst, score): within k at the boundary, one past it, far (#2168 with a score from the stop words), none
    bm25s = ((K, K, 3.0), (K + 1, K + 1, 2.0), (2168, 2168, 0.68), (None, None, 0.0), (None, None, None))
    cosines = (CAL - eps, CAL, CAL + eps)
    # (overlap, bm25_overlap): none; none of the content terms but a stop word; a trace; all; unknown
    overlaps = ((0.0, 0.0), (0.0, 0.25), (0.004, 0.004), (1.0, 1.0), (None, None))
    shares = ((0.0, 0.2), (0.2 - eps, 0.2), (0.2, 0.2), (0.004, None), (1.0, None), (None, None))
    out = []
    for run, (d, dw), (b, bw, score), cos, (ov, bov), (ws, wt), kind in itertools.product(
        runs, denses, bm25s, cosines, overlaps, shares, ("dense", "lexical", "hybrid")
    ):
        # only records the evidence can hold: BM25 scores a target > 0 exactly when it holds a term BM25 scores,
        # which is when it holds some of the query's BM25 weight (every present term has idf > 0)
        known = [x > 0 for x in (score, bov, ws) if x is not None]
        if len(set(known)) > 1:
            continue
        out.append(
            PairEvidence(
                doc_id="t",
                k=K,
                calibrated=CAL,
                run_rank=run,
                run_depth=100,
                dense_rank=d,
                dense_rank_worst=dw,
                bm25_rank=b,
                bm25_rank_worst=bw,
                bm25_score=score,
                cosine=cos,
                overlap=ov,
                bm25_overlap=bov,
                weight_share=ws,
                weight_share_threshold=wt,
                kind=kind,
            )  # fmt: skip
        )
    window = dict(window_tokens=256, capacity=254, target_tokens=400, passage_text="p", passage_char=1200)
    for offset, p_cos, good in itertools.product((253, 254), (CAL - eps, CAL, CAL + 0.2), (None, 253, 254)):
        passage = PassageMatch(
            passage_offset=offset, passage_cosine=p_cos, target_cosine=0.1, first_good_offset=good,
            window_char=1000, **window,
        )  # fmt: skip
        out.append(PairEvidence(doc_id="t", k=K, calibrated=CAL, dense_rank=40, cosine=0.1, passage=passage))
    # split: the merged rank (the merge remedy's run) at k, k+1 and not ranked; the chunk alone beyond k
    for split_cos, split_rank in itertools.product((CAL - eps, CAL, CAL + eps), (K, K + 1, None)):
        out.append(
            PairEvidence(doc_id="t", k=K, calibrated=CAL, dense_rank=40, cosine=0.1, split_share=0.6,
                         split_cosine=split_cos, split_rank=split_rank)
        )  # fmt: skip
    out += [
        PairEvidence(doc_id="t", k=K, calibrated=CAL, in_corpus=False),
        PairEvidence(
            doc_id="t", k=K, calibrated=CAL, filtered_out=True, filter_why="tenant = 'b'", cosine=0.1
        ),
        PairEvidence(doc_id="t", k=K, calibrated=CAL, duplicate_doc_id="d", duplicate_cosine=0.95),
    ]
    return out


def test_no_sentence_contradicts_its_numbers_at_the_rules_boundaries():
    seen: dict[str, int] = {}
    for e in _boundary_records():
        cls = classify(e, T)
        seen[cls] = seen.get(cls, 0) + 1
        s = evidence_sentence(cls, e, T)
        assert "{" not in s and s.endswith("."), s
        assert not contradictions(cls, e, s), (cls, e, s, contradictions(cls, e, s))
    # the grid reaches every class, so every class's template (and a lexical and hybrid variant) was read
    assert set(seen) == set(CLASSES), set(CLASSES) - set(seen)


@pytest.mark.parametrize(
    ("sentence_of", "claim"),
    [
        # the sentences before this test: each contradicts its numbers, and the checker says so
        (
            dict(cls="vocabulary_mismatch", bm25_rank=2168, bm25_score=0.68, cosine=0.2, overlap=0.0),
            "While the words tell (BM25 ranks it within k): run rank n/a, cosine 0.200 (calibrated threshold 0.500)",
        ),
        (
            dict(cls="semantic_gap", bm25_rank=2168, bm25_score=0.68, cosine=0.2, overlap=0.0),
            "cosine 0.200 (calibrated threshold 0.500); 0% of the query terms occur in the target.",
        ),
        (
            dict(cls="semantic_gap", cosine=0.4999999, overlap=0.5),
            "cosine 0.500 (calibrated threshold 0.500); 50% of the query terms occur in the target.",
        ),
    ],
)
def test_the_checker_catches_the_old_contradictions(sentence_of, claim):
    # the checker itself must be able to fail: the sentences the issue quotes (and a cosine printed equal to its
    # threshold) are caught
    cls = sentence_of.pop("cls")
    e = PairEvidence(doc_id="t", k=K, calibrated=CAL, dense_rank=40, **sentence_of)
    assert contradictions(cls, e, claim)


def test_a_passage_at_the_last_token_the_model_reads_is_not_beyond_it():
    # capacity 254 (a window of 256 less 2 special tokens): offset 253 is the last token read, 254 the first not
    window = dict(window_tokens=256, capacity=254, target_tokens=400, passage_text="p", passage_char=1200)
    for offset, beyond in ((253, False), (254, True)):
        p = PassageMatch(passage_offset=offset, passage_cosine=0.6, target_cosine=0.1, first_good_offset=offset,
                         window_char=1000, **window)  # fmt: skip
        s = evidence_sentence(
            "truncated", PairEvidence(doc_id="t", k=K, calibrated=CAL, cosine=0.1, passage=p)
        )
        assert (f"starts at token {offset} of 400, beyond the 254 tokens the model reads" in s) == beyond, s
