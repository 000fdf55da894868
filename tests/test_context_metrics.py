"""Context precision / recall at k from spans (diagnose.metrics.context): hand-computed values."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.data import DataError, Qrels, Span
from diagnose.metrics.context import context_scores, count_tokens, document_spans, whole_documents

# d1 tokens: alpha[0,5) beta[6,10) gamma[11,16) delta[17,22) epsilon[23,30) zeta[31,35)
TEXTS = {"d1": "alpha beta gamma delta epsilon zeta", "d2": "one two", "d3": "gamma delta"}
P, R, T = "context_precision@{}", "context_recall@{}", "tokens@{}"


def _row(scores, qid):
    k = scores.k
    row = scores.per_query.loc[qid]
    return row[P.format(k)], row[R.format(k)], row[T.format(k)]


def test_precision_recall_and_tokens_by_hand():
    spans = [Span("q1", 0, "d1", 11, 22, "exact")]  # "gamma delta": tokens 2, 3 of d1
    pieces = {"q1": [("d1", 0, 16), ("d2", 0, 7)]}  # alpha beta gamma | one two
    # k=2: 3 + 2 = 5 tokens read, 1 inside (gamma): precision 1/5; recall: gamma of gamma, delta = 1/2
    assert _row(context_scores(pieces, spans, TEXTS, 2), "q1") == pytest.approx((0.2, 0.5, 5))
    # k=1: 3 tokens read, 1 inside: 1/3; recall still 1/2
    assert _row(context_scores(pieces, spans, TEXTS, 1), "q1") == pytest.approx((1 / 3, 0.5, 3))


def test_overlapping_chunks_count_twice_in_precision_once_in_recall():
    spans = [Span("q1", 0, "d1", 11, 22, "exact")]
    pieces = {"q1": [("d1", 0, 16), ("d1", 6, 22)]}  # alpha beta gamma | beta gamma delta
    # read 3 + 3 = 6 tokens, inside 1 + 2 = 3: precision 0.5; both reference tokens covered: recall 1
    assert _row(context_scores(pieces, spans, TEXTS, 2), "q1") == pytest.approx((0.5, 1.0, 6))


def test_span_cut_mid_word_takes_the_whole_word():
    spans = [Span("q1", 0, "d1", 13, 19, "approximate", 95.0)]  # "mma de": gamma and delta
    pieces = {"q1": [("d1", 17, 35)]}  # delta epsilon zeta: 3 tokens, 1 inside; recall 1 of 2
    assert _row(context_scores(pieces, spans, TEXTS, 5), "q1") == pytest.approx((1 / 3, 0.5, 3))


def test_ambiguous_reference_counts_at_its_best_location():
    spans = [Span("q2", 0, "d1", 11, 22, "exact"), Span("q2", 0, "d3", 0, 11, "exact")]
    # d3 whole: 2 tokens, both inside: precision 1; the d3 copy is covered 2/2: recall 1
    assert _row(context_scores({"q2": [("d3", 0, 11)]}, spans, TEXTS, 1), "q2") == pytest.approx(
        (1.0, 1.0, 2)
    )
    # d1[0,16): 3 tokens, 1 inside; best location: d1 copy 1/2 (d3 0/2): recall 1/2
    got = _row(context_scores({"q2": [("d1", 0, 16)]}, spans, TEXTS, 1), "q2")
    assert got == pytest.approx((1 / 3, 0.5, 3))


def test_unmatched_and_unretrieved_queries_score_zero_and_average_in():
    spans = [Span("q1", 0, "d1", 11, 22, "exact"), Span("q3", 0, None, None, None, "unmatched", 0.0)]
    s = context_scores({"q1": [("d3", 0, 11)], "q3": [("d1", 0, 35)]}, spans, TEXTS, 3)
    # q1: d3 holds no span of q1 (its span is in d1): precision 0, recall 0, 2 tokens
    # q3: nothing to cover: 0, 0; it read 6 tokens
    assert _row(s, "q1") == pytest.approx((0.0, 0.0, 2))
    assert _row(s, "q3") == pytest.approx((0.0, 0.0, 6))
    assert s.unmatched == ("q3",)
    assert s.aggregate[T.format(3)] == pytest.approx(4.0)  # (2 + 6) / 2
    empty = context_scores({}, [Span("q1", 0, "d1", 11, 22, "exact")], TEXTS, 3)
    assert _row(empty, "q1") == pytest.approx((0.0, 0.0, 0))


def test_document_spans_make_relevant_documents_the_reference():
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["d1", "d2", "dx"], "relevance": [1, 0, 2]})
    )
    spans = document_spans(qrels, {d: len(t) for d, t in TEXTS.items()})
    assert [(s.doc_id, s.start, s.end, s.match) for s in spans] == [
        ("d1", 0, 35, "exact"),
        (None, None, None, "unmatched"),
    ]
    run_top = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["d2", "d1"], "rank": [2, 1]})
    pieces = whole_documents(run_top, TEXTS)
    assert pieces == {"q": [("d1", 0, 35), ("d2", 0, 7)]}
    # k=2 reads 6 + 2 = 8 tokens, 6 inside d1: precision 3/4; d1 covered 6/6, dx 0 of 0 tokens: recall 1
    assert _row(context_scores(pieces, spans, TEXTS, 2), "q") == pytest.approx((0.75, 1.0, 8))


def test_bad_k_names_k_and_word_tokens():
    with pytest.raises(DataError) as e:
        context_scores({}, [], TEXTS, 0)
    assert e.value.param == "k"
    assert count_tokens("Don't stop-words, 3.5!") == 6  # Don, t, stop, words, 3, 5
