"""Text beyond the model's window and diluted passages: the window, the passages, the truncated and diluted rules,
the passage max-sim remedy (diagnose/failures/passages.py), with a fake keyword encoder and with the real model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from diagnose import Analysis
from diagnose.data import Corpus, Dataset, Qrels, Queries, Run
from diagnose.embed import KeywordEncoder
from diagnose.failures import PairEvidence, Thresholds, classify
from diagnose.failures.passages import (
    PassageMatch,
    PassageScorer,
    maxsim_run,
    model_window,
    remedy_candidates,
    split_passages,
    split_sentences,
    word_window,
)

# ------------------------------------------------------------------------------------------ sentences, passages


def test_split_sentences_ends_at_punctuation_before_a_capital_or_a_line_break():
    text = "First one. Second one! e.g. lower stays. Third?\nFourth"
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "First one.",
        "Second one! e.g. lower stays.",
        "Third?",
        "Fourth",
    ]
    assert split_sentences("") == [] and split_sentences("no end") == [(0, 6)]


def test_passages_are_sentence_windows_cut_at_the_end_of_the_window():
    # 4 sentences of 2 words each = 8 words; the model reads 6 - 1 = 5 words, so "E f." (words 4-5) is two units,
    # "E" (read) and "f." (not read): units 0-2, 2-4, 4-5, 5-6, 6-8
    text = "a b. C d. E f. G h."
    w = word_window(6, specials=1)
    t = split_passages([text], w, size=2)
    # windows of 2 units: 0-4; 2-5 (stops at the window's end); 4-5 ends where 2-5 did (left out); 5-8; 6-8 ends
    # where 5-8 did (left out)
    assert list(zip(t.start.tolist(), t.end.tolist(), strict=True)) == [(0, 4), (2, 5), (5, 8)]
    assert t.texts == ["a b. C d.", "C d. E", "f. G h."]
    assert t.n_tokens.tolist() == [8]
    assert (
        text[t.window_char[0] :] == "f. G h."
    )  # the 6th word (offset 5) is the first the model does not read
    # windows of 3 units: 0-5 (3 units, 5 words), then 5-8; the others end where one of these does
    t3 = split_passages([text], w, size=3)
    assert list(zip(t3.start.tolist(), t3.end.tolist(), strict=True)) == [(0, 5), (5, 8)]
    # side by side (the remedy's index): 0-4, then 4-5 (the window's end stops it), then 5-8
    side = split_passages([text], w, size=2, stride=2)
    assert side.texts == ["a b. C d.", "E", "f. G h."]


def test_a_long_sentence_is_cut_into_pieces_overlapping_by_half():
    # one sentence of 10 words, a limit of 4: pieces of 4 words every 2 (0-4, 2-6, 4-8), the last ending at 10 (6-10)
    text = " ".join(f"w{i}" for i in range(10)) + "."
    t = split_passages([text], word_window(100), size=3, limit=4)
    assert list(zip(t.start.tolist(), t.end.tolist(), strict=True)) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    # a window stops before a sentence that would take it over the limit: "A b." then the 10-word sentence: the
    # first passage is "A b." alone (2 words), the long sentence's pieces follow at offset 2
    t2 = split_passages(["A b. " + text.capitalize()], word_window(100), size=3, limit=4)
    assert t2.texts[0] == "A b." and t2.start.tolist() == [0, 2, 4, 6, 8]


def _answer_passages(
    text: str, window_words: int = 20, limit: int | None = None
) -> list[tuple[int, int, str]]:
    """(start, end, text) of the passages of ``text`` that hold the whole answer "Quokka habitat here."."""
    kw = {} if limit is None else {"limit": limit}
    t = split_passages([text], word_window(window_words + 2, 2), **kw)
    cap = window_words
    # no passage holds both a word the model reads and one it does not, none is longer than the limit
    for s, e in zip(t.start.tolist(), t.end.tolist(), strict=True):
        assert not s < cap < e and e - s <= min(cap, limit or cap)
    return [
        (s, e, x) for s, e, x in zip(t.start.tolist(), t.end.tolist(), t.texts, strict=True) if ANSWER in x
    ]


ANSWER = "Quokka habitat here."
SHORT = " ".join(f"Short{i} sentence." for i in range(12))  # 12 sentences of 2 words: 24 words


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        # after one 30-word sentence (no sentence ends in it): its units 0-20 and 20-30, then the answer 30-33; the
        # passage from 20 holds it (20-33, 13 words <= 20), the answer's own (30-33) ends where it does
        (" ".join(f"long{i}" for i in range(30)) + ". " + ANSWER, 20),
        # after many short ones (24 words): "Short10 sentence." is 20-22, "Short11 sentence." 22-24, the answer
        # 24-27; the windows from 20, 22 and 24 hold it, the earliest from 20
        (f"{SHORT} {ANSWER}", 20),
        # after a sentence that straddles the window's end (words 18-25): its unread part 20-25, then the answer
        # 25-28: the windows from 20 and 25; none starts within the window (before: one from 18, at offset 18)
        (" ".join(f"Short{i} sentence." for i in range(9)) + " " + " ".join(f"s{i}" for i in range(7)) + ". "
         + ANSWER, 20),
    ],
)  # fmt: skip
def test_an_answer_beyond_the_window_is_in_a_passage_beyond_it_whatever_the_sentence_lengths(text, offset):
    found = _answer_passages(text)
    assert found and min(s for s, _, _ in found) == offset and all(s >= 20 for s, _, _ in found)


def test_an_answer_before_long_sentences_or_inside_one_is_in_a_short_passage():
    # the answer (3 words at 24-27) followed by two sentences of 15 words: with a limit of 8 a window from the
    # answer stops before the long sentence, so the answer alone is a passage (24-27), not diluted by 15 words
    long15 = " ".join(f"Junk{i}" for i in range(15)) + "."
    found = _answer_passages(f"{SHORT} {ANSWER} {long15} {long15}", limit=8)
    assert (24, 27, ANSWER) in found
    # inside a 40-word sentence (words 30-33 of it, no sentence end around it): pieces of 8 words every 4 words
    # starting at the unit's start 20 (the window's end): 20-28, 24-32, 28-36, ...; 28-36 holds 30-33 whole
    inside = (
        " ".join(f"x{i}" for i in range(30)) + " quokka habitat here " + " ".join(f"y{i}" for i in range(7))
    )
    t = split_passages([inside + "."], word_window(22, 2), limit=8)
    holding = [
        (s, e)
        for s, e, x in zip(t.start.tolist(), t.end.tolist(), t.texts, strict=True)
        if "quokka habitat here" in x
    ]
    assert holding == [(28, 36)]


def test_the_window_of_a_fake_encoder_and_of_none():
    enc = KeywordEncoder(dim=64)
    assert model_window(enc) is None  # no tokenizer, no window: unknown
    enc.window = word_window(10, 2)
    assert model_window(enc).capacity == 8


# ------------------------------------------------------------------------------------------ the rules


def _match(offset: int, passage: float, whole: float, good: int | None = None) -> PassageMatch:
    # window 256 with 2 special tokens: capacity 254
    return PassageMatch(256, 254, 400, offset, passage, "p", whole, good, 0, 1000)


COMMON = dict(
    run_rank=None,
    dense_rank=50,
    bm25_rank=None,
    overlap=0.5,
    k=10,
    cosine=0.1,
)


@pytest.mark.parametrize(
    ("passage", "expected"),
    [
        (_match(300, 0.6, 0.1), "truncated"),  # best passage starts at 300 >= 254
        (_match(300, 0.6, 0.1, good=100), "truncated"),  # the best starts beyond, one within reaches 0.5 too
        (
            _match(300, 0.45, 0.1),
            "semantic_gap",
        ),  # beyond, but no passage reaches the calibrated 0.5: no match
        (_match(300, 0.6, 0.55), "semantic_gap"),  # the whole target reaches 0.5: the model read enough
        (_match(100, 0.6, 0.1, good=100), "diluted"),  # in the window, 0.6 >= 0.5 and 0.6 - 0.1 = 0.5 >= 0.15
        (_match(100, 0.6, 0.46, good=100), "semantic_gap"),  # 0.6 - 0.46 = 0.14 < 0.15
        (_match(100, 0.45, 0.1), "semantic_gap"),  # the passage is below the calibrated 0.5
        (None, "semantic_gap"),  # the window unknown: the two rules are not used
    ],
)
def test_truncated_and_diluted_rules(passage, expected):
    assert classify(PairEvidence(**COMMON, calibrated=0.5, passage=passage)) == expected


def test_diluted_reads_the_runs_kth_document_and_the_whole_targets_dense_rank():
    # no k-th document: the calibrated 0.5 is the bar (above). With the run's k-th at cosine 0.4, a passage at 0.45
    # (< 0.5, >= 0.4) puts the target above it: diluted (0.45 - 0.1 = 0.35 >= 0.15); at 0.39 it does not
    common = COMMON | {"calibrated": 0.5, "kth_cosine": 0.4}
    assert classify(PairEvidence(**common, passage=_match(100, 0.45, 0.1))) == "diluted"
    assert classify(PairEvidence(**common, passage=_match(100, 0.39, 0.1))) == "semantic_gap"
    # exact dense search ranks the whole target #3 <= 10: the document is found whole, what the index lost
    common |= {"dense_rank": 3}
    assert classify(PairEvidence(**common, passage=_match(100, 0.45, 0.1))) == "index_gap"


def test_label_gap_comes_first_and_the_margin_is_a_threshold():
    assert (
        classify(PairEvidence(**COMMON, duplicate_doc_id="d", calibrated=0.5, passage=_match(300, 0.6, 0.1)))
        == "label_gap"
    )
    loose = Thresholds(diluted_margin=0.1)  # 0.6 - 0.46 = 0.14 >= 0.1
    assert (
        classify(PairEvidence(**COMMON, calibrated=0.5, passage=_match(100, 0.6, 0.46)), loose) == "diluted"
    )
    with pytest.raises(Exception, match="diluted_margin"):
        Thresholds(diluted_margin=float("nan"))


# ------------------------------------------------------------------------------------------ fake encoder, end to end

FILLER = " ".join(f"filler{i}." if i % 6 == 5 else f"filler{i}" for i in range(60))


def _tiny(late: str, diluted: str) -> Dataset:
    """q1's target d1 says "quokka habitat" only after 60 filler words; q2's target d2 holds "wombat burrow" in one
    sentence among filler; d3/d4 are what the run found instead. One query more (q3) is a hit."""
    docs = {
        "d1": f"{FILLER} Quokka habitat is here.",
        "d2": diluted,
        "d3": "quokka zoo tickets",
        "d4": "wombat plush toy",
        "d5": "kangaroo facts",
    }
    corpus = Corpus(pd.DataFrame({"doc_id": list(docs), "title": "", "text": list(docs.values())}))
    queries = Queries(
        pd.DataFrame(
            {"query_id": ["q1", "q2", "q3"], "text": ["quokka habitat", "wombat burrow", "kangaroo"]}
        )
    )
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["d1", "d2", "d5"], "relevance": 1})
    )
    return Dataset(corpus=corpus, queries=queries, qrels=qrels)


def _run(ds: Dataset) -> Run:
    rows = [("q1", "d3", 1.0), ("q2", "d4", 1.0), ("q3", "d5", 1.0)]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).assign(rank=1)
    return Run("mine", df)


def _analysis(ds: Dataset, tmp_path, window=True) -> Analysis:
    enc = KeywordEncoder(dim=512)
    if window:
        enc.window = word_window(22, 2)  # reads 20 words
    # the seed threshold 0.5 is the calibrated one: one hit (q3) is too few to calibrate
    th = Thresholds(seed_cosine=0.5)
    return Analysis(ds, {"mine": _run(ds)}, k=1, encoder=enc, cache_dir=tmp_path, thresholds=th)


DILUTED = "Wombat burrow. " + " ".join(f"Other{i} more{i}." for i in range(7))  # 8 sentences of 2 words


def test_the_fake_encoder_finds_truncated_and_diluted_and_the_passages_recover_them(tmp_path):
    ds = _tiny("", DILUTED)
    a = _analysis(ds, tmp_path)
    f = a.failures("mine").set_index("query_id")
    # q1: FILLER is one sentence (its periods precede lower-case words), so d1 is 2 sentences, one window, cut into
    # pieces of 20 words: 0-20, 20-40, 40-60, 60-64; the last, "Quokka habitat is here." (offset 60 >= 20 read), has
    # cosine 2 / (sqrt(2) * 2) = 0.71 >= 0.5; the whole d1 shares 2 of 64 words: 2 / (sqrt(2) * 8) = 0.18 < 0.5
    assert f.at["q1", "class"] == "truncated" and f.at["q1", "passage_offset"] >= 20
    assert f.at["q1", "window_tokens"] == 22 and f.at["q1", "target_tokens"] == 64
    assert "Quokka habitat" in f.at["q1", "passage_text"]
    assert f.at["q1", "cosine"] < 0.2  # ~0.18; two filler words sharing a hash bucket lower it a little
    assert f.at["q1", "passage_offset"] == 60
    assert f.at["q1", "passage_cosine"] == pytest.approx(2 / (np.sqrt(2) * 2), abs=1e-6)
    # q2: the first passage (3 sentences, 6 words) holds both query words: cosine 2 / (sqrt(2) * sqrt(6)) = 0.58
    # >= 0.5; the whole d2 (16 words): 2 / (sqrt(2) * 4) = 0.35 < 0.5, a gain of 0.22 >= 0.15
    assert f.at["q2", "class"] == "diluted" and f.at["q2", "passage_offset"] == 0
    assert f.at["q2", "passage_cosine"] == pytest.approx(2 / (np.sqrt(2) * np.sqrt(6)), abs=1e-6)
    assert f.at["q2", "cosine"] == pytest.approx(2 / (np.sqrt(2) * 4), abs=1e-6)
    rem = a.remedies("mine")
    for cls in ("truncated", "diluted"):
        row = rem.row(cls)
        assert row.remedy_id == "passages" and row.failures == 1 and row.recovered == 1
    matrix = a.remedy_matrix("mine").to_dict()
    assert matrix["truncated"]["passages"] == {"failures": 1, "recovered": 1}


def test_without_a_window_the_fields_are_null_and_the_classes_unused(tmp_path):
    ds = _tiny("", DILUTED)
    a = _analysis(ds, tmp_path, window=False)
    d = a.diagnosis("mine")
    assert d.window is None and "unknown" in d.window_note()
    assert not {"truncated", "diluted"} & {f.cls for f in d.failures}
    f = a.failures("mine")
    assert (
        f[["window_tokens", "target_tokens", "passage_offset", "passage_cosine", "passage_text"]]
        .isna()
        .all()
        .all()
    )
    row = a.remedies("mine").row("truncated")
    assert not row.available and "unknown" in row.note
    # the JSON contract: the keys are there (null), and the report says the window is unknown once
    from diagnose.report.failures import failures_text

    payload = d.to_dict()
    assert payload["window"] is None and "unknown" in payload["window_note"]
    for key in ("window_tokens", "target_tokens", "passage_offset", "passage_cosine", "passage_text"):
        assert all(key in f and f[key] is None for f in payload["failures"])
    assert failures_text(d, model="fake").count("window is unknown") == 1


def test_maxsim_run_over_candidates_rescores_only_them(tmp_path):
    ds = _tiny("", DILUTED)
    enc = KeywordEncoder(dim=512)
    scorer = PassageScorer(ds, enc, word_window(22, 2), cache_dir=tmp_path)
    full = maxsim_run(scorer, _run(ds), ["q1", "q2"])
    # the run's candidate (d3 / d4) and the failed target (d1 / d2): remedy_candidates with n=1, no baselines
    cand = remedy_candidates(["q1", "q2"], [_run(ds)], 1, [("q1", "d1"), ("q2", "d2")])
    assert cand == {"q1": ["d3", "d1"], "q2": ["d4", "d2"]}
    bounded = maxsim_run(scorer, _run(ds), ["q1", "q2"], candidates=cand)
    assert full.top(1)["doc_id"].tolist() == ["d1", "d2"]  # the relevant documents' passages win
    # only the 2 candidates of each query are scored: 2 rows a query, the same winners
    assert bounded.df.groupby("query_id").size().tolist() == [2, 2]
    assert bounded.top(1)["doc_id"].tolist() == ["d1", "d2"]


class _CountingEncoder(KeywordEncoder):
    """The fake keyword encoder, recording every text it is asked to encode."""

    def __init__(self, dim: int = 512) -> None:
        super().__init__(dim=dim)
        self.window = word_window(22, 2)
        self.seen: list[str] = []

    def encode(self, texts, **kw):  # noqa: ANN001, ANN003, ANN201 - the encoder protocol
        self.seen += list(texts)
        return super().encode(texts, **kw)


#: Documents no query's top 1 (run, dense, BM25) holds: they share no word with any query. Five sentences each, so
#: their remedy passages (sentences 0-2 and 3-4, side by side) are not their whole text.
_FAR = {f"far{i}": " ".join(f"Unrelated{i} note{j}." for j in range(5)) for i in range(3)}


def _with_far(ds: Dataset) -> Dataset:
    extra = pd.DataFrame({"doc_id": list(_FAR), "title": "", "text": list(_FAR.values())})
    corpus = Corpus(pd.concat([ds.corpus.df, extra], ignore_index=True))
    return Dataset(corpus=corpus, queries=ds.queries, qrels=ds.qrels)


def _passage_texts_of_far(seen: list[str]) -> set[str]:
    """The encoded texts that are a far document's text but not the whole of it (its passages)."""
    return {t for t in seen if any(t != whole and t in whole for whole in _FAR.values())}


def test_the_remedy_encodes_only_the_passages_of_targets_and_candidates(tmp_path):
    """passage_candidates=1: each golden query re-scores the top 1 of the run, dense and BM25 and its failed target;
    the far documents are in none of them, so none of their passages is encoded (their whole text is: the dense
    space encodes every document). The whole-corpus remedy encodes them: the count this test reads can fail."""
    ds = _with_far(_tiny("", DILUTED))
    th = Thresholds(seed_cosine=0.5)
    counts = {}
    for n in (1, None):
        enc = _CountingEncoder()
        a = Analysis(
            ds, {"mine": _run(ds)}, k=1, encoder=enc, cache_dir=tmp_path / str(n), thresholds=th,
            passage_candidates=n,
        )  # fmt: skip
        rem = a.remedies("mine")
        assert rem.row("truncated").recovered == 1 and rem.row("diluted").recovered == 1
        counts[n] = _passage_texts_of_far(enc.seen)
        run = rem.runs["passages"]
        counts[(n, "docs")] = set(run.df["doc_id"])
    assert counts[1] == set()
    # 3 far documents x 2 side-by-side passages (sentences 0-2, 3-4) = 6 passages, each encoded once
    assert len(counts[None]) == 6
    # the bounded run ranks the candidates only: q1 {d3, d1}, q2 {d4, d2}, q3 {d5} and the top 1 of dense and BM25,
    # never a far document; the whole-corpus run ranks every document with a passage, the far ones too
    assert not counts[(1, "docs")] & set(_FAR) and set(_FAR) <= counts[(None, "docs")]


def test_the_bounded_remedy_equals_the_whole_corpus_one_when_the_bound_covers_everything(tmp_path):
    """passage_candidates=5 on 5 documents: exact dense search's top 5 is the whole corpus (every document, cosine 0
    included), so every query re-scores every document and the two remedies give the same run and the same rows."""
    ds = _tiny("", DILUTED)
    th = Thresholds(seed_cosine=0.5)
    out = {}
    for n in (5, None):
        a = Analysis(
            ds, {"mine": _run(ds)}, k=1, encoder=KeywordEncoder(dim=512), cache_dir=tmp_path / str(n),
            thresholds=th, passage_candidates=n,
        )  # fmt: skip
        a.encoder.window = word_window(22, 2)
        out[n] = a.remedies("mine")
    bounded, whole = (out[n].runs["passages"].df.reset_index(drop=True) for n in (5, None))
    assert len(whole) == 3 * 5  # 3 golden queries x 5 documents, each with a passage
    pd.testing.assert_frame_equal(bounded, whole)
    assert [r.to_dict() for r in out[5].rows] == [r.to_dict() for r in out[None].rows]


def test_the_cli_flags_set_the_passage_bound(tmp_path, capsys):
    from diagnose.cli import main
    from diagnose.cli.parser import build_parser
    from diagnose.cli.shared import build_analysis

    ds = _tiny("", DILUTED)
    base = ["failures", "--qrels", "q.tsv", "--run", "r.trec"]
    for extra, expected in [
        ([], "auto"),
        (["--passage-candidates", "3"], 3),
        (["--passage-remedy-corpus"], None),
    ]:
        args = build_parser().parse_args(base + extra)
        assert build_analysis(args, ds, runs={"mine": _run(ds)}).passage_candidates == expected, extra
    # a bound of 0 is refused at the door, naming the flag
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 r\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "alpha"}) + "\n")
    (tmp_path / "qs.jsonl").write_text(json.dumps({"_id": "q1", "text": "alpha"}) + "\n")
    files = ["--qrels", "q.tsv", "--run", "r.trec", "--corpus", "c.jsonl", "--queries", "qs.jsonl"]
    files = [str(tmp_path / f) if i % 2 else f for i, f in enumerate(files)]
    code = main(["failures", *files, "--passage-candidates", "0"])
    err = capsys.readouterr().err
    assert code != 0 and "passage-candidates" in err


# ------------------------------------------------------------------------------------------ the real model


@pytest.mark.real_model
def test_the_real_model_window_truncated_and_diluted(tmp_path):
    """all-MiniLM-L6-v2 reads 256 word pieces including [CLS] and [SEP]. d1 answers q1 only after ~300 word pieces
    of unrelated text; d2 answers q2 in one sentence among notes about other things."""
    office = (
        "The office opens at eight. Desks are booked in the app the day before. Meeting rooms are named after "
        "rivers. The kitchen has coffee and tea. Printers print with your badge. Fire drills happen twice a year. "
    )
    d1 = office * 7 + "Cycling to work: a locked bike cage is in the basement, with two showers next to it."
    d2 = (
        "Notes from the stand-up. The plant rota moves upstairs. The team lunch is on Friday. The book club reads "
        "a detective novel. Conversion fees on refunds in a foreign currency are paid by us, never taken off the "
        "refund. The quiz team needs a fifth player. Birthdays: two this month. The coffee machine is broken."
    )
    docs = {
        "d1": d1,
        "d2": d2,
        "d3": "Parking in the garage needs a booking.",
        "d4": "Refund policy: 30 days.",
    }
    # documents in no query's top 1 (run, dense, BM25): the bounded remedy never encodes their passages
    far = {
        f"far{i}": f"Recipe {i}. Whisk the eggs. Fold in the flour. Bake for twenty minutes. Serve with jam."
        for i in range(3)
    }
    docs |= far
    ds = Dataset(
        corpus=Corpus(pd.DataFrame({"doc_id": list(docs), "title": "", "text": list(docs.values())})),
        queries=Queries(
            pd.DataFrame(
                {
                    "query_id": ["q1", "q2"],
                    "text": [
                        "where can I lock my bicycle and shower after cycling in",
                        "who pays the currency conversion fee when we refund a customer abroad",
                    ],
                }
            )
        ),
        qrels=Qrels(pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": 1})),
    )
    run = Run(
        "mine", pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d3", "d4"], "score": 1.0, "rank": 1})
    )
    a = Analysis(
        ds,
        {"mine": run},
        k=1,
        cache_dir=tmp_path,
        thresholds=Thresholds(seed_cosine=0.3),
        passage_candidates=1,
    )
    seen: list[str] = []
    encode = a.encoder.encode

    def spy(texts, **kw):  # noqa: ANN001, ANN003, ANN202 - the encoder protocol
        seen.extend(texts)
        return encode(texts, **kw)

    a.encoder.encode = spy
    window = model_window(a.encoder)
    assert (window.tokens, window.specials) == (256, 2)
    f = a.failures("mine").set_index("query_id")
    assert f.at["q1", "target_tokens"] > 254 and f.at["q1", "passage_offset"] >= 254
    assert "bike cage" in f.at["q1", "passage_text"]
    assert f.at["q1", "class"] == "truncated"
    assert f.at["q2", "class"] == "diluted" and "Conversion fees" in f.at["q2", "passage_text"]
    assert f.at["q2", "passage_cosine"] - f.at["q2", "cosine"] >= 0.15
    rem = a.remedies("mine")
    assert rem.row("truncated").recovered == 1 and rem.row("diluted").recovered == 1
    # the far recipes were encoded whole (the dense space), never as passages ("Recipe 0. Whisk ... flour.")
    assert {t for t in seen if "Whisk" in t} == set(far.values())
    assert not set(rem.runs["passages"].df["doc_id"]) & set(far)


@pytest.mark.real_model
def test_the_bundled_model_window_comes_from_its_files_without_loading_the_weights():
    """The window of a model that is not loaded is read from its folder (the tokenizer alone): the same tokens,
    special tokens and token spans as the loaded model's, and the weights stay unloaded."""
    from diagnose.embed import load_encoder

    lazy, loaded = load_encoder(None, precision="exact"), load_encoder(None, precision="exact")
    loaded.model  # noqa: B018 - the weights, for the reference window
    window = model_window(lazy)
    assert window is not None and not lazy.loaded
    reference = model_window(loaded)
    assert (window.tokens, window.specials) == (reference.tokens, reference.specials) == (256, 2)
    texts = ["Héllo wörld, 東京 is big. Ünïcödé — dashes…", "word " * 400, "Tabs\tand\n\nbreaks  here", ""]
    assert window.spans(texts) == reference.spans(texts)
    assert len(window.spans(texts)[1]) == 400  # every word piece, none cut at the window


def test_a_model_folder_that_changes_its_tokenizer_is_loaded_for_the_window(tmp_path):
    """``do_lower_case`` (or any setting the reader does not know) in sentence_bert_config.json: sentence-transformers
    would change the tokenizer, so the folder reader declines (and model_window loads the model for its window)."""
    from diagnose.embed.loading import default_model_path
    from diagnose.embed.tokenizer import folder_tokenizer

    source = default_model_path()
    assert folder_tokenizer(source) is not None
    for name, config in [
        ("lower", {"max_seq_length": 128, "do_lower_case": True}),
        ("args", {"max_seq_length": 128, "tokenizer_args": {}}),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        for f in source.iterdir():
            if f.name != "sentence_bert_config.json":
                (folder / f.name).symlink_to(f)
        (folder / "sentence_bert_config.json").write_text(json.dumps(config), encoding="utf-8")
        assert folder_tokenizer(folder) is None, name
    assert folder_tokenizer(tmp_path / "missing") is None
