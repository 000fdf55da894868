"""Tokenizer, BM25 engines (against hand arithmetic, bm25s and rank-bm25 themselves), term overlap, NFCorpus check."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnose.data import DataError
from diagnose.lexical import (
    QUERY_STOPWORDS,
    STOPWORDS_EN,
    TOKEN_RE,
    BM25Index,
    bm25_rank_range,
    highlight_spans,
    term_overlap,
    tokenize,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
K1, B = 0.9, 0.4

# Tiny corpus; "cat", "dog", "bird", "fish" are their own Snowball stems.
#   d0 "cat cat dog" -> len 3, d1 "dog bird" -> len 2, d2 "fish" -> len 1;  N = 3, avgdl = 6 / 3 = 2
#   df: cat 1, dog 2, bird 1, fish 1
TINY_IDS = ["d0", "d1", "d2"]
TINY = ["The cat, the cat and a dog.", "Dog bird", "FISH!"]


def _norm(dl: float) -> float:
    # k1 * (1 - b + b * dl / avgdl) with avgdl = 2
    return K1 * (1 - B + B * dl / 2)


# ---------------------------------------------------------------------------------------------------------------
# tokenizer


def test_tokenize_rules():
    # lowercase; split on anything not a letter or digit (hyphen, apostrophe, underscore, dot); drop the 33
    # Lucene/bm25s stopwords ("the", "of", "is", "s" is NOT one); Snowball English stems.
    assert tokenize(["The Statins reduced Breast-cancer deaths"]) == [
        ["statin", "reduc", "breast", "cancer", "death"]
    ]
    assert tokenize(["COVID_19 patient's risk is 3.5"]) == [["covid", "19", "patient", "s", "risk", "3", "5"]]
    # unicode letters are letters: "Ärzte" is one token, lowercased
    assert tokenize(["Ärzte über"]) == [[_stem("ärzte"), _stem("über")]]
    assert tokenize(["", "the of is", None]) == [[], [], []]


def _stem(word: str) -> str:
    import Stemmer

    return Stemmer.Stemmer("english").stemWord(word)


def test_tokenize_ids_is_tokenize_as_arrays():
    from itertools import chain

    from diagnose.lexical.terms import tokenize_ids

    texts = [
        "The Statins reduced Breast-cancer deaths", "COVID_19 patient's risk is 3.5", "Ärzte über İstanbul",
        "", None, "the of is", "tab\tnbsp\u00a0ctrl\x1fend__x", "statins STATIN statin's", "über-ärzte 3,5",
    ]  # fmt: skip
    tokens = tokenize(texts)
    vocab, ids, lengths = tokenize_ids(texts)
    # vocab in first-seen order of the stems: "the" is a stopword, so "statin" comes first
    assert vocab == list(dict.fromkeys(chain.from_iterable(tokens))) and vocab[0] == "statin"
    assert [vocab[i] for i in ids] == list(chain.from_iterable(tokens))
    assert lengths.tolist() == [len(t) for t in tokens] and lengths.tolist()[3:6] == [0, 0, 0]
    # the ASCII path of tokenize() splits as the regex does
    assert tokenize(["a_b C-3po x\x7fy"]) == [[_stem(w) for w in ["b", "c", "3po", "x", "y"]]]


def test_tokenize_ids_byte_table_splits_every_ascii_character_as_tokenize():
    from itertools import chain

    from diagnose.lexical.terms import tokenize_ids

    # every ASCII character between words, runs of separators, and non-ASCII letters next to them
    every = "".join(chr(c) for c in range(128))
    texts = [f"Ab{every}cD", f"x{every}{every}y", "naïve\x00Über--CAFÉ", "a1_b2", "Zz" + every[::-1]]
    tokens = tokenize(texts)
    vocab, ids, lengths = tokenize_ids(texts)
    assert [vocab[i] for i in ids] == list(chain.from_iterable(tokens))
    assert lengths.tolist() == [len(t) for t in tokens]
    # no text with a single byte: nothing to split
    vocab, ids, lengths = tokenize_ids(["", None])
    assert (vocab, ids.tolist(), lengths.tolist()) == ([], [], [0, 0])


def test_tokenize_refuses_a_single_string():
    with pytest.raises(DataError, match=r"tokenize\(\[text\]\)"):
        tokenize("a query")


def test_stopwords_are_bm25s_english_list():
    from bm25s.stopwords import STOPWORDS_EN as BM25S_EN

    assert frozenset(BM25S_EN) == STOPWORDS_EN
    assert len(STOPWORDS_EN) == 33  # Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET


def test_import_is_lazy():
    code = (
        "import sys, diagnose.lexical; sys.exit(int(any(m in sys.modules for m in ('bm25s', 'rank_bm25'))))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1]).returncode == 0
    )


# ---------------------------------------------------------------------------------------------------------------
# BM25 scores by hand


def test_bm25s_lucene_scores_by_hand():
    idx = BM25Index.build(TINY, TINY_IDS)
    # idf_lucene(df) = ln(1 + (N - df + 0.5) / (df + 0.5)); cat: ln(1 + 2.5/1.5) = ln(8/3) = 0.98083
    # d0: tf 2, dl 3 -> 2 / (2 + 0.9 * (0.6 + 0.4 * 1.5)) = 2 / 3.08 = 0.64935 -> 0.63690
    idf_cat = math.log(1 + 2.5 / 1.5)
    # dog: df 2 -> ln(1 + 1.5/2.5) = ln(1.6) = 0.47000; d0: tf 1, dl 3 -> 1/2.08; d1: tf 1, dl 2 -> 1/(1 + 0.9) = 1/1.9
    idf_dog = math.log(1 + 1.5 / 2.5)
    expected_cat = [idf_cat * 2 / (2 + _norm(3)), 0, 0]
    expected_dog = [idf_dog / (1 + _norm(3)), idf_dog / (1 + _norm(2)), 0]
    np.testing.assert_allclose(idx.scores("cats"), expected_cat, rtol=1e-6)
    np.testing.assert_allclose(idx.scores("dog"), expected_dog, rtol=1e-6)
    # a repeated query term counts twice; unknown and stop words add nothing
    np.testing.assert_allclose(idx.scores("cat cat the unicorn"), 2 * np.array(expected_cat), rtol=1e-6)
    np.testing.assert_allclose(idx.scores("cat dog"), np.add(expected_cat, expected_dog), rtol=1e-6)
    # dog is in d1 (shorter, dl 2 < 3) with the same tf -> d1 first
    assert [d for d, _ in idx.search(["dog"], 10)[0]] == ["d1", "d0"]


def test_rank_bm25_floors_common_terms_at_quarter_mean_idf():
    idx = BM25Index.build(TINY, TINY_IDS, engine="rank_bm25")
    # raw idf = ln((N - df + 0.5) / (df + 0.5)): cat, bird, fish ln(2.5/1.5) = 0.51083; dog ln(1.5/2.5) = -0.51083
    # dog (df 2 > N/2) is floored at 0.25 * mean raw idf = 0.25 * (3 * 0.51083 - 0.51083) / 4 = 0.06385
    eps = 0.25 * (3 * math.log(2.5 / 1.5) + math.log(1.5 / 2.5)) / 4
    # tf part with (k1 + 1): d0 1 * 1.9 / (1 + 1.08), d1 1 * 1.9 / (1 + 0.9)
    np.testing.assert_allclose(idx.scores("dog"), [eps * 1.9 / (1 + _norm(3)), eps * 1.9 / (1 + _norm(2)), 0])
    cat = math.log(2.5 / 1.5) * 2 * 1.9 / (2 + _norm(3))
    np.testing.assert_allclose(idx.scores("cat"), [cat, 0, 0])
    # bm25s robertson clamps the same term at idf 0 instead: dog scores 0 everywhere, nothing is retrieved
    rob = BM25Index.build(TINY, TINY_IDS, method="robertson")
    np.testing.assert_array_equal(rob.scores("dog"), [0, 0, 0])
    assert rob.search(["dog"], 3) == [[]]
    # ... and where df <= N/2 it is exactly rank-bm25 / (k1 + 1)
    np.testing.assert_allclose(rob.scores("cat"), np.array([cat, 0, 0]) / (K1 + 1), rtol=1e-6)


def _random_corpus(rng: np.random.Generator, n_docs: int, vocab: int) -> list[str]:
    words = [f"w{i}x" for i in range(vocab)]  # "w12x": Snowball leaves these alone
    return [" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(n_docs)]


@pytest.mark.parametrize("seed", range(5))
def test_robertson_equals_okapi_over_k1_plus_1_when_no_term_is_in_half_the_docs(seed):
    rng = np.random.default_rng(seed)
    texts = _random_corpus(rng, 60, 80)
    ids = [f"doc{i:02d}" for i in range(60)]
    df = {}
    for toks in tokenize(texts):
        for t in set(toks):
            df[t] = df.get(t, 0) + 1
    assert max(df.values()) <= 30  # precondition: no term in more than half of the docs
    rob = BM25Index.build(texts, ids, method="robertson")
    oka = BM25Index.build(texts, ids, engine="rank_bm25")
    queries = [" ".join(rng.choice(list(df), size=3)) for _ in range(20)]
    for q in queries:
        np.testing.assert_allclose(rob.scores(q), oka.scores(q) / (K1 + 1), rtol=1e-6, atol=1e-9)
    assert [[d for d, _ in r] for r in rob.search(queries, 10)] == [
        [d for d, _ in r] for r in oka.search(queries, 10)
    ]


def test_scores_match_the_engines_own_scoring():
    import bm25s
    from rank_bm25 import BM25Okapi

    rng = np.random.default_rng(7)
    texts = _random_corpus(rng, 50, 30)  # 30 words: many terms are in > half of the docs
    ids = [str(i) for i in range(50)]
    toks = tokenize(texts)
    queries = [" ".join(rng.choice([f"w{i}x" for i in range(30)], size=4)) for _ in range(10)]
    for method in ("lucene", "robertson", "atire"):
        ref = bm25s.BM25(k1=K1, b=B, method=method)
        ref.index(toks, show_progress=False)
        idx = BM25Index.build(texts, ids, method=method)
        for q in queries:
            np.testing.assert_allclose(idx.scores(q), ref.get_scores(tokenize([q])[0]), rtol=1e-5, atol=1e-6)
    ref = BM25Okapi(toks, k1=K1, b=B)
    idx = BM25Index.build(texts, ids, engine="rank-bm25")
    for q in queries:
        np.testing.assert_allclose(idx.scores(q), ref.get_scores(tokenize([q])[0]), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# ranking conventions


DUPS = ["cat dog", "cat dog", "cat fish fish fish", "bird"]
DUP_IDS = ["a", "b", "c", "z"]


@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
def test_search_ties_by_doc_id_descending_and_zero_scores_left_out(engine):
    idx = BM25Index.build(DUPS, DUP_IDS, engine=engine)
    # "cat dog": a and b are identical (tie, both contain both terms) > c (cat only); z shares nothing
    (res,) = idx.search(["cat dog"], 10)
    assert [d for d, _ in res] == ["b", "a", "c"]
    assert res[0][1] == res[1][1] > res[2][1] > 0
    # k cuts after the tie order: top 1 is "b"
    assert [d for d, _ in idx.search(["cat dog"], 1)[0]] == ["b"]
    # no query term in the corpus -> empty list; several queries in one call keep their order
    assert idx.search(["unicorn", "bird", "the"], 5) == [[], [("z", idx.scores("bird")[3])], []]


def test_rank_of_counts_strictly_higher_scores():
    idx = BM25Index.build(DUPS, DUP_IDS)
    s = idx.scores("cat dog")  # a == b > c > z == 0
    ranks = idx.rank_of("cat dog", ["a", "b", "c", "z", "nope"])
    # a, b: nobody higher -> 1; c: a, b higher -> 3; z: score 0, no query term in it -> no rank; unknown -> None
    assert s[3] == 0.0
    assert [r for r, _ in ranks] == [1, 1, 3, None, None]
    assert [sc for _, sc in ranks[:4]] == pytest.approx(list(s))
    assert math.isnan(ranks[4][1])


def test_to_run_ranked_gives_the_rank_range_from_the_same_scores(monkeypatch):
    idx = BM25Index.build(DUPS, DUP_IDS)
    texts = ["cat dog", "unicorn", "fish"]
    plain = idx.to_run(["q1", "q2", "q3"], texts, depth=2, name="lex")
    blocks = []
    real = idx._score_block32
    monkeypatch.setattr(idx, "_score_block32", lambda toks: blocks.append(len(toks)) or real(toks))
    pairs = [("q1", "c"), ("q1", "b"), ("q1", "z"), ("q3", "c"), ("q2", "b"), ("q9", "a"), ("q1", "nope")]
    run, ranks = idx.to_run_ranked(["q1", "q2", "q3"], texts, pairs, depth=2, name="lex")
    assert blocks == [3]  # the three queries scored once, in one block, for the run and the ranks
    pd.testing.assert_frame_equal(run.df, plain.df)
    # q9 is not searched and "nope" is not indexed: left out
    assert set(ranks) == {("q1", "c"), ("q1", "b"), ("q1", "z"), ("q3", "c"), ("q2", "b")}
    s1 = idx.scores("cat dog")  # a == b > c > z == 0 (test_rank_of_counts_strictly_higher_scores)
    # b ties with a: first and last place of the pair are 1 and 2; c: a, b above -> 3..3; z scores 0: no rank
    assert ranks[("q1", "b")] == (1, 2, s1[1]) and ranks[("q1", "c")] == (3, 3, s1[2])
    assert ranks[("q1", "z")] == (None, None, 0.0) and ranks[("q2", "b")] == (None, None, 0.0)
    assert ranks[("q3", "c")] == (1, 1, idx.scores("fish")[2])  # only c has "fish"


def test_bm25_rank_range_is_the_tie_group_and_zero_has_none():
    # scores of 7 documents for one query: 2.5 > 1.0 == 1.0 == 1.0 > 0.5 > 0 == 0
    s = np.array([1.0, 0.0, 2.5, 1.0, 0.5, 1.0, 0.0])
    # row 0 (1.0): one higher (2.5) -> best 1 + 1 = 2; higher or equal: 2.5 and the three 1.0 -> worst 4
    assert bm25_rank_range(s, 0) == (2, 4)
    assert bm25_rank_range(s, 3) == bm25_rank_range(s, 5) == (2, 4)  # the same tie group, the same range
    assert bm25_rank_range(s, 2) == (1, 1)  # alone at the top
    assert bm25_rank_range(s, 4) == (5, 5)  # four higher, no tie
    # score 0: no rank at all, although 1 + #higher would say 6
    assert bm25_rank_range(s, 1) == bm25_rank_range(s, 6) == (None, None)


def test_bm25_rank_range_of_a_query_whose_terms_occur_nowhere():
    # "unicorn" is in no document: every document scores 0 and none has a rank (the old rule said #1 for all)
    idx = BM25Index.build(DUPS, DUP_IDS)
    s = idx.scores("unicorn")
    assert not s.any()
    assert [bm25_rank_range(s, i) for i in range(len(DUPS))] == [(None, None)] * len(DUPS)
    assert [r for r, _ in idx.rank_of("unicorn", DUP_IDS)] == [None] * len(DUPS)


def test_to_run():
    idx = BM25Index.build(DUPS, DUP_IDS)
    run = idx.to_run(["q1", "q2", "q3"], ["cat dog", "unicorn", "fish"], depth=2, name="lex")
    assert run.name == "lex"
    assert run.df["query_id"].tolist() == ["q1", "q1", "q3"]  # q2 matches nothing: no rows
    assert run.df["doc_id"].tolist() == ["b", "a", "c"]
    assert run.df["rank"].tolist() == [1, 2, 1]
    assert run.df["rank"].dtype == np.int64 and run.df["score"].dtype == np.float64
    with pytest.raises(DataError, match="duplicate query ids"):
        idx.to_run(["q1", "q1"], ["cat", "dog"])


def test_build_errors():
    with pytest.raises(DataError, match="duplicate document ids.*'a'"):
        BM25Index.build(["x", "y"], ["a", "a"])
    with pytest.raises(DataError, match="2 texts but 1 ids"):
        BM25Index.build(["x", "y"], ["a"])
    with pytest.raises(DataError, match="empty"):
        BM25Index.build([], [])
    with pytest.raises(DataError, match="no document has a single indexable word"):
        BM25Index.build(["the", "...", ""], ["a", "b", "c"])
    with pytest.raises(DataError, match="Unknown BM25 engine"):
        BM25Index.build(["x"], ["a"], engine="lucene")
    with pytest.raises(DataError, match="only implements BM25Okapi"):
        BM25Index.build(["x"], ["a"], engine="rank_bm25", method="lucene")


# ---------------------------------------------------------------------------------------------------------------
# term overlap


def test_term_overlap_groups_surface_forms_by_stem():
    q = "Do statins and statin drugs reduce the breast-cancer risk?"
    doc = "Statin use and breast cancer survival: a cohort of drugs"
    ov = term_overlap(q, doc)
    # BM25 terms (Lucene stopwords "and", "the" dropped): do, statins/statin, drugs, reduce, breast, cancer, risk;
    # "do" is a query stop word, so 6 terms remain, 4 of them in the document
    assert ov.query_terms == ("statins/statin", "drugs", "reduce", "breast", "cancer", "risk")
    assert ov.stems == ("statin", "drug", "reduc", "breast", "cancer", "risk")
    assert ov.present == ("statins/statin", "drugs", "breast", "cancer")
    assert ov.missing == ("reduce", "risk")
    assert ov.stems_present == ("statin", "drug", "breast", "cancer")
    assert ov.stems_missing == ("reduc", "risk")
    assert ov.overlap_ratio == pytest.approx(4 / 6)
    assert ov.ignored == ("do",) and ov.ignored_stems == ("do",)
    # BM25's view: 4 of its 7 terms are in the document ("do" is not)
    assert ov.bm25_overlap_ratio == pytest.approx(4 / 7)


def test_term_overlap_without_query_stopwords_is_bm25s_view():
    # query_stopwords=frozenset(): every BM25 token is a term, as before the query stop words existed
    q = "Do statins and statin drugs reduce the breast-cancer risk?"
    doc = "Statin use and breast cancer survival: a cohort of drugs"
    ov = term_overlap(q, doc, query_stopwords=frozenset())
    assert ov.query_terms == ("do", "statins/statin", "drugs", "reduce", "breast", "cancer", "risk")
    assert ov.missing == ("do", "reduce", "risk")
    assert ov.ignored == ()
    assert ov.overlap_ratio == ov.bm25_overlap_ratio == pytest.approx(4 / 7)


def test_term_overlap_question_words_are_not_evidence():
    q = "How can I reset my VPN password, please?"
    doc = "You can reset the VPN token from your profile page."
    ov = term_overlap(q, doc)
    # BM25 terms: how, can, i, reset, my, vpn, password, pleas(e); the question words are ignored
    assert ov.query_terms == ("reset", "vpn", "password")
    assert ov.present == ("reset", "vpn") and ov.missing == ("password",)
    assert ov.ignored == ("how", "can", "i", "my", "please")
    assert ov.overlap_ratio == pytest.approx(2 / 3)
    # BM25's view: reset, vpn and "can" (in the document too) of 8 terms: 3 / 8 -- the two views differ both ways
    assert ov.bm25_overlap_ratio == pytest.approx(3 / 8)


def test_term_overlap_keeps_a_stem_with_a_content_form():
    # "can" is a query stop word but "cans" is not; both stem to "can": the term stays (shown with both forms)
    ov = term_overlap("can I recycle cans", "recycling cans and bottles")
    assert ov.query_terms == ("can/cans", "recycle")
    assert ov.present == ("can/cans", "recycle") and ov.ignored == ("i",)


def test_query_stopwords_are_lowercase_words_of_the_tokenizer():
    # every entry is one token of the tokenizer (so a query word can match it) and lowercase
    for w in QUERY_STOPWORDS:
        assert w == w.lower() and TOKEN_RE.fullmatch(w), w
    # negations and "us" stay evidence
    assert not {"no", "not", "nor", "us"} & QUERY_STOPWORDS
    assert {"what", "how", "do", "i", "my", "can", "please", "whose", "could"} <= QUERY_STOPWORDS


def test_term_overlap_empty_query():
    ov = term_overlap("the of", "anything")
    assert ov.query_terms == () and ov.overlap_ratio == 0.0
    ov = term_overlap("what do I", "anything")  # only query stop words: no evidence either way
    assert ov.query_terms == () and ov.overlap_ratio == 0.0 and ov.ignored == ("what", "do", "i")
    assert ov.bm25_overlap_ratio == 0.0


def test_highlight_spans():
    text = "Statins: the statin-use of STATIN users"
    spans = highlight_spans(text, {"statin", "use"})
    # "Statins" 0-7, "statin" 13-19, "use" 20-23, "STATIN" 27-33; "users" stems to "user", not "use"
    assert spans == [(0, 7), (13, 19), (20, 23), (27, 33)]
    assert [text[a:b] for a, b in spans] == ["Statins", "statin", "use", "STATIN"]
    assert highlight_spans(text, {"the"}) == []  # stopwords are never terms
    assert highlight_spans(text, []) == []
    # "İ".lower() is two characters; spans still index the original text
    t2 = "İzmir statins"
    assert [t2[a:b] for a, b in highlight_spans(t2, {"statin"})] == ["statins"]


def test_overlap_uses_the_index_tokenizer():
    # every stem term_overlap reports present is a term BM25 scores for that document, and vice versa
    idx = BM25Index.build(DUPS, DUP_IDS)
    for q in ["cat dogs", "fishes birds cats"]:
        for j, doc in enumerate(DUPS):
            ov = term_overlap(q, doc)
            assert (idx.scores(" ".join(ov.stems_present))[j] > 0) == bool(ov.stems_present)
            for stem in ov.stems_missing:
                assert idx.scores(stem)[j] == 0


@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
def test_missing_terms_overlap_weight_share_and_bm25_agree(engine):
    # one tokenizer: a term is present exactly when BM25 scores it for that document, the query stop words too
    # ("how", "do", "my": left out of the overlap, scored by BM25), and the document holds some of the query's BM25
    # weight exactly when BM25 scores it above 0
    docs = ["How do cats sleep? My cat sleeps.", "Dogs, birds & FISH", "do re mi", "Ærøskøbing's cats"]
    idx = BM25Index.build(docs, ["a", "b", "c", "d"], engine=engine)
    for q in ["how do my cats sleep", "do fish dream?", "the bird", "ærøskøbing", "unicorn how"]:
        scores = idx.scores(q)
        weights = idx.term_weights(set(tokenize([q])[0]))
        for j, doc in enumerate(docs):
            ov = term_overlap(q, doc, weights=weights)
            scored = ov.stems_present + tuple(s for s in ov.ignored_stems if s in set(tokenize([doc])[0]))
            assert bool(scored) == (ov.bm25_overlap_ratio > 0) == (ov.weight_share > 0), (q, doc)
            # rank_bm25's idf is ln((N - df + 0.5) / (df + 0.5)): 0 for a term in half the documents ("cat": 2 of
            # 4), so a present term can score 0 there; Lucene's idf (bm25s, the weights) is > 0 for every df
            assert (scores[j] > 0) == bool(scored) if engine == "bm25s" else (scores[j] <= 0 or bool(scored))
            for stem in scored if engine == "bm25s" else ():
                assert idx.scores(stem)[j] > 0, (q, doc, stem)
            for stem in ov.stems_missing:
                assert idx.scores(stem)[j] == 0, (q, doc, stem)


def test_weight_share_is_the_share_of_the_query_idf_by_hand():
    idx = BM25Index.build(TINY, TINY_IDS)
    # N = 3; cat df 1: ln(1 + 2.5 / 1.5) = ln(8/3) = 0.98083; dog df 2: ln(1 + 1.5 / 2.5) = ln(1.6) = 0.47000;
    # unicorn df 0: no document holds it, BM25 cannot score it -> 0
    w = idx.term_weights({"cat", "dog", "unicorn"})
    assert w == pytest.approx({"cat": math.log(8 / 3), "dog": math.log(1.6), "unicorn": 0.0})
    # "cat dog" in d1 ("Dog bird"): 0.47000 / (0.98083 + 0.47000) = 0.32395; "cat cat dog": cat counts twice, as
    # BM25 scores it: 0.47000 / (2 x 0.98083 + 0.47000) = 0.19330
    assert term_overlap("cat dog", TINY[1], weights=w).weight_share == pytest.approx(
        0.47000 / 1.45083, rel=1e-4
    )
    assert term_overlap("cat cat dog", TINY[1], weights=w).weight_share == pytest.approx(
        0.47000 / 2.43166, rel=1e-4
    )
    assert term_overlap("cat dog", TINY[1]).weight_share is None  # no weights given


# ---------------------------------------------------------------------------------------------------------------
# the published baseline


@pytest.mark.skipif(not (SHARED / "nfcorpus").is_dir(), reason="../shared/data/nfcorpus not available")
def test_nfcorpus_ndcg10_matches_anserini():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    root = SHARED / "nfcorpus"
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open()]
    queries = {o["_id"]: o["text"] for o in map(json.loads, (root / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        qrels.setdefault(q, {})[d] = int(s)
    idx = BM25Index.build([f"{d['title']} {d['text']}".strip() for d in docs], [d["_id"] for d in docs])
    qids = list(qrels)
    res = idx.search([queries[q] for q in qids], 100)
    run = {q: {d: s for d, s in r} for q, r in zip(qids, res, strict=True)}
    per_q = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    assert len(qids) == 323
    ndcg = sum(v["ndcg_cut_10"] for v in per_q.values()) / len(qids)
    r100 = sum(v["recall_100"] for v in per_q.values()) / len(qids)
    # Anserini BM25 flat (BEIR): nDCG@10 0.3218, R@100 0.2457
    assert abs(ndcg - 0.3218) < 0.015
    assert abs(r100 - 0.2457) < 0.015


@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
def test_documents_without_words_are_indexed_but_never_retrieved(engine):
    # "" and "the of" have no token: they count in N (3) and in avgdl ((1 + 0 + 0) / 3), and always score 0
    idx = BM25Index.build(["cat", "", "the of"], ["a", "b", "c"], engine=engine)
    assert len(idx) == 3
    assert [d for d, _ in idx.search(["cat"], 3)[0]] == ["a"]
    # b and c score 0 (no word at all): no rank
    assert [r for r, _ in idx.rank_of("cat", ["a", "b", "c"])] == [1, None, None]


@pytest.mark.parametrize("as_arrow", [False, True])
def test_cached_index_gives_the_same_scores_without_tokenising(tmp_path, monkeypatch, as_arrow):
    import pyarrow as pa

    import diagnose.lexical as lexical

    def given(texts: list[str]):  # a list of strings, or the Arrow array Corpus.joined_texts() gives
        return pa.array(texts, type=pa.large_string()) if as_arrow else texts

    texts = ["the vpn token expired", "reset your password in keystone", "vpn client for linux", ""]
    ids = ["a", "b", "c", "d"]
    fresh = lexical.BM25Index.build(given(texts), ids, cache_dir=tmp_path)
    expected = fresh.score_matrix(["vpn token", "password reset linux"])

    calls = []
    real, real_ids = lexical.tokenize, lexical.terms.tokenize_ids
    monkeypatch.setattr(lexical.bm25, "tokenize", lambda t: calls.append(len(t)) or real(t))
    monkeypatch.setattr(lexical.bm25, "tokenize_ids", lambda t: calls.append(len(t)) or real_ids(t))
    cached = lexical.BM25Index.build(given(texts), ids, cache_dir=tmp_path)
    assert calls == []  # served from disk: the corpus was not tokenised again
    np.testing.assert_array_equal(cached.score_matrix(["vpn token", "password reset linux"]), expected)
    # another text, another key: rebuilt; also when one character differs and the lengths do not
    calls.clear()
    lexical.BM25Index.build(given([*texts[:3], "new text"]), ids, cache_dir=tmp_path)
    assert calls == [4]
    calls.clear()
    lexical.BM25Index.build(given([*texts[:2], "vpn client for linuz", ""]), ids, cache_dir=tmp_path)
    assert calls == [4]
    # the same texts with the ids of two documents swapped: another key
    calls.clear()
    lexical.BM25Index.build(given(texts), ["b", "a", "c", "d"], cache_dir=tmp_path)
    assert calls == [4]


def test_tokenize_ids_of_an_arrow_array_equals_that_of_the_strings():
    import pyarrow as pa

    from diagnose.lexical.terms import tokenize_ids

    texts = ["Statins reduce", None, "Ärzte über İstanbul", "", "x\x1fy_z 3,5", "the of", "naïve CAFÉ latte"]
    want = tokenize_ids(texts)
    arrays = {
        "large_string": pa.array(texts, type=pa.large_string()),
        "string": pa.array(texts, type=pa.string()),
        "chunked": pa.chunked_array([pa.array(texts[:3]), pa.array(texts[3:])]),
        "sliced": pa.array(["padding words", *texts, "more padding"], type=pa.large_string())[1:-1],
        "ascii only, sliced": pa.array(["a b", *[t for t in texts if t is None or t.isascii()]])[1:],
    }
    for name, arr in arrays.items():
        expected = want if name != "ascii only, sliced" else tokenize_ids(arr.to_pylist())
        vocab, ids, lengths = tokenize_ids(arr)
        assert vocab == expected[0], name
        np.testing.assert_array_equal(ids, expected[1], err_msg=name)
        np.testing.assert_array_equal(lengths, expected[2], err_msg=name)


def test_index_of_the_joined_texts_equals_that_of_the_texts():
    # Corpus.joined_texts() is title + " " + text, not stripped: the same tokens as Corpus.texts(), so the same index
    from diagnose.data import Corpus
    from diagnose.lexical import BM25Index

    corpus = Corpus(
        pd.DataFrame(
            {
                "doc_id": ["a", "b", "c", "d", "e"],
                "title": ["VPN", "", " Reset ", "Ärzte", ""],
                "text": ["token expired", "password reset", "keystone  ", "", ""],
            }
        )
    )
    joined = corpus.joined_texts()
    assert joined.to_pylist() == ["VPN token expired", " password reset", " Reset  keystone  ", "Ärzte ", " "]
    assert corpus.joined_texts(slice(1, 3)).to_pylist() == joined.to_pylist()[1:3]
    a = BM25Index.build(corpus.texts(), list(corpus.ids))
    b = BM25Index.build(joined, list(corpus.ids))
    queries = ["vpn token", "reset password", "keystone", "ärzte"]
    np.testing.assert_array_equal(a.score_matrix(queries), b.score_matrix(queries))
    assert (
        a.score_matrix(queries).any(axis=1).all()
    )  # every query finds something: the comparison is not of zeros


def test_corrupt_cached_index_is_rebuilt(tmp_path):
    from diagnose.data import ValidationReport

    texts, ids = ["alpha beta", "beta gamma"], ["x", "y"]
    want = BM25Index.build(texts, ids).score_matrix(["beta"])
    BM25Index.build(texts, ids, cache_dir=tmp_path)
    for f in tmp_path.glob("*.npy"):
        f.write_bytes(b"garbage")
    report = ValidationReport()
    again = BM25Index.build(texts, ids, cache_dir=tmp_path, report=report)
    np.testing.assert_array_equal(again.score_matrix(["beta"]), want)
    assert report.by_code("cache_corrupt")
