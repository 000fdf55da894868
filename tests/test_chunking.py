"""Which chunking (diagnose.whatif.chunking, Analysis.chunking, `diagnose chunking`): the grid's checks, the splitter's
offsets, a hand-computed sweep with the fake keyword encoder, the cache, the JSON contract, one real-model sweep."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import diagnose
from diagnose.cli import EXIT_INPUT, EXIT_OK, main
from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Span
from diagnose.embed import KeywordEncoder
from diagnose.whatif.chunking import ChunkingConfig, check_grid
from diagnose.whatif.chunking.splitter import encoded_texts, split_documents

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
CONTRACT = {"size", "overlap", "chunks", "recall@10", "ndcg@10", "context_precision@10", "context_recall@10",
            "tokens@10"}  # fmt: skip


def _dataset(
    texts: dict[str, str], spans: tuple[Span, ...] = (), titles: dict[str, str] | None = None
) -> Dataset:
    title = [(titles or {}).get(d, "") for d in texts]
    corpus = Corpus(pd.DataFrame({"doc_id": list(texts), "title": title, "text": list(texts.values())}))
    queries = Queries(pd.DataFrame({"query_id": ["q1"], "text": ["cherry"]}))
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": np.array([1])}), spans=spans
    )
    return Dataset(qrels=qrels, corpus=corpus, queries=queries, name="tiny")


TEXTS = {"d1": "apple banana. cherry date.", "d2": "egg fig grape"}
SPAN = (Span("q1", 0, "d1", 14, 25, "exact"),)  # "cherry date"


def test_grid_checks_name_the_flag():
    assert check_grid("128, 256", "0,32") == [ChunkingConfig(s, o) for s in (128, 256) for o in (0, 32)]
    assert check_grid([64, 64], [0]) == [ChunkingConfig(64, 0)]  # duplicates dropped
    for sizes, overlaps, param in (("", "0", "sizes"), ([], [0], "sizes"), ("64", "64", "overlaps"),
                                   ("128", "200", "overlaps"), ("0", "0", "sizes"), ("abc", "0", "sizes"),
                                   ("128", "-1", "overlaps")):  # fmt: skip
        with pytest.raises(DataError) as e:
            check_grid(sizes, overlaps)
        assert e.value.param == param, (sizes, overlaps)


def test_split_documents_gives_offsets_into_each_text():
    texts = ["apple banana. cherry date.", "  short  ", "", "one two three four five"]
    docs, starts, ends = split_documents(texts, 3, 1, None)  # word tokens: no model tokenizer
    got = [(int(d), texts[d][s:e]) for d, s, e in zip(docs, starts, ends, strict=True)]
    # d0 has 4 words > 3: chunks filled up to 3 words, the next one starting 1 word back (its "." and "cherry");
    # "short" fits: one chunk, stripped; "" has no chunk; d3 (5 words): windows of 3 sharing 1 word
    assert got == [(0, "apple banana. cherry"), (0, ". cherry date."), (1, "short"), (3, "one two three"),
                   (3, "three four five")]  # fmt: skip
    docs, starts, ends = split_documents(texts[:1], 2, 0, None)  # 2 words: one sentence each
    assert [texts[0][s:e] for s, e in zip(starts, ends, strict=True)] == ["apple banana.", "cherry date."]


def _sweep(tmp_path, texts=TEXTS, spans=SPAN, sizes=(2,), titles=None):
    a = diagnose.Analysis(_dataset(texts, spans, titles), encoder=KeywordEncoder(), cache_dir=tmp_path)
    return a.chunking(list(sizes), [0], k=1)


def test_sweep_by_hand_with_the_keyword_encoder(tmp_path):
    sw = _sweep(tmp_path)
    # size 2 words: d1 -> "apple banana." [0,13) and "cherry date." [14,26); d2 -> "egg fig", "grape": 4 chunks.
    # query "cherry": cosine 1/sqrt(2) with "cherry date.", 0 with the others: top 1 chunk = d1[14,26).
    # recall@1 = ndcg@1 = 1 (d1 relevant); 2 word tokens sent, both in the span "cherry date": precision 1, recall 1
    (p,) = sw.configurations
    assert p.chunks == 4
    assert p.metrics == pytest.approx({"recall@1": 1.0, "ndcg@1": 1.0, "hit_rate@1": 1.0, "context_precision@1": 1.0,
                                       "context_recall@1": 1.0, "tokens@1": 2.0})  # fmt: skip
    # as they are: cosine(cherry, d1) = 1/2 > 0 = cosine(cherry, d2): d1 sent whole, 4 tokens, 2 inside: 1/2
    cur = sw.current.metrics
    assert (cur["ndcg@1"], cur["context_precision@1"], cur["context_recall@1"], cur["tokens@1"]) == (
        1,
        0.5,
        1,
        4,
    )
    assert p.recovers == p.breaks == () and p.p_value == 1.0  # the same query succeeds in both
    # pareto: neither sends fewer tokens with a strictly higher nDCG than the other
    assert p.pareto and sw.current.pareto
    assert sw.reference == "spans" and sw.lengths == "word tokens"


def test_a_title_only_document_gets_one_chunk_its_title():
    texts, titles = ["apple banana", "", "   ", ""], ["Fruit", "Orchard pests", "Soil", ""]
    docs, starts, ends = split_documents(texts, 3, 0, None, titles)
    # d0 fits in 3 words: [0, 12); d1 and d2 have a title and no text: one empty chunk [0, 0) each; d3 has neither
    assert list(zip(docs.tolist(), starts.tolist(), ends.tolist(), strict=True)) == [
        (0, 0, 12),
        (1, 0, 0),
        (2, 0, 0),
    ]
    assert encoded_texts(texts, titles, docs, starts, ends) == ["Fruit apple banana", "Orchard pests", "Soil"]
    assert len(split_documents(texts, 3, 0, None)[0]) == 1  # without titles, text only


def test_sweep_finds_a_title_only_document(tmp_path):
    # d1 is relevant and holds its content in the title only; query "cherry". Size 2 words: d2 -> "egg fig",
    # "grape"; d1 -> one chunk [0, 0) encoded as "Cherry orchards": cosine 1/sqrt(2) > 0 for the others, so the
    # top 1 chunk is d1's: recall@1 = ndcg@1 = 1 (without the title d1 had no chunk at all: recall 0). The reference
    # is d1's whole text, empty: nothing to send or cover, so tokens@1 = 0
    sw = _sweep(tmp_path, texts={"d1": "", "d2": "egg fig grape"}, spans=(), titles={"d1": "Cherry orchards"})
    (p,) = sw.configurations
    assert p.chunks == 3
    assert (p.metrics["recall@1"], p.metrics["ndcg@1"], p.metrics["tokens@1"]) == (1.0, 1.0, 0.0)


def test_span_relevance_on_a_titled_document_is_in_text_coordinates(tmp_path):
    # TEXTS with d1 titled "Fruit salad" and d2 "Breakfast": size 2 words cuts the texts as without titles,
    # d1 -> [0,13) "apple banana.", [14,26) "cherry date."; each chunk encoded with its title in front, so the query
    # "cherry" meets "Fruit salad cherry date." (cosine 1/sqrt(4) = 0.5) above "Fruit salad apple banana." (0):
    # the top 1 chunk is d1[14,26), as without titles; the span [14,25) "cherry date" is read in text coordinates,
    # the title is not sent: 2 tokens, both in the span: precision 1, recall 1 (the untitled hand test's numbers)
    titled = _sweep(tmp_path, titles={"d1": "Fruit salad", "d2": "Breakfast"})
    (p,) = titled.configurations
    assert p.chunks == 4
    assert p.metrics == pytest.approx({"recall@1": 1.0, "ndcg@1": 1.0, "hit_rate@1": 1.0, "context_precision@1": 1.0,
                                       "context_recall@1": 1.0, "tokens@1": 2.0})  # fmt: skip


def test_one_chunk_per_document_equals_the_documents_as_they_are(tmp_path):
    sw = _sweep(tmp_path, spans=(), sizes=(100,))  # every document fits: one chunk each, its whole text
    (p,) = sw.configurations
    assert p.chunks == 2
    assert p.metrics == pytest.approx(sw.current.metrics)
    assert sw.reference == "documents"  # id-based qrels: the relevant document's whole text is the reference


def test_every_point_is_cached_by_content(tmp_path):
    first = _sweep(tmp_path)
    again = _sweep(tmp_path)  # a new analysis: the memo is empty, the files are not
    assert not first.configurations[0].cached and again.configurations[0].cached and again.current.cached
    assert again.configurations[0].metrics == first.configurations[0].metrics
    pd.testing.assert_frame_equal(again.configurations[0].per_query, first.configurations[0].per_query)
    changed = _sweep(tmp_path, texts={**TEXTS, "d2": "egg fig grape kiwi"})
    assert not changed.configurations[0].cached


def test_cli_json_contract_and_bad_grid(keyword_encoder, monkeypatch, capsys):
    monkeypatch.setattr(
        "diagnose.embed.load_encoder", lambda *a, **kw: KeywordEncoder()
    )  # no model in this test
    rc = main(
        ["chunking", "--data", str(DEMO), "--sizes", "64,128", "--overlaps", "0,16", "--format", "json"]
    )
    assert rc == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert [(c["size"], c["overlap"]) for c in out["configurations"]] == [
        (64, 0),
        (64, 16),
        (128, 0),
        (128, 16),
    ]
    for c in out["configurations"]:
        assert set(c) >= CONTRACT
    n_docs = sum(1 for line in (DEMO / "corpus.jsonl").read_text().splitlines() if line.strip())
    assert out["current"]["size"] is None and out["current"]["chunks"] == n_docs  # the documents as they are
    assert main(["chunking", "--data", str(DEMO), "--sizes", "64", "--overlaps", "64"]) == EXIT_INPUT
    assert "--overlaps" in capsys.readouterr().err
    assert main(["chunking", "--data", str(DEMO), "--sizes", ""]) == EXIT_INPUT
    assert "--sizes" in capsys.readouterr().err


@pytest.mark.real_model
def test_real_bundled_model_sweep(tmp_path):
    texts = {
        "d1": "Cherries are small stone fruits. They ripen in early summer and are eaten fresh or dried.",
        "d2": "Granite is an igneous rock made of quartz and feldspar, common in continental crust.",
    }
    spans = (Span("q1", 0, "d1", 0, 32, "exact"),)  # "Cherries are small stone fruits."
    a = diagnose.Analysis(_dataset(texts, spans), cache_dir=tmp_path)
    sw = a.chunking([8, 64], [0], k=1)
    small, large = sw.configurations
    assert sw.lengths == "model tokens"
    assert small.chunks > 2 and large.chunks == 2  # 8 model tokens split both; 64 holds each whole
    assert small.metrics["ndcg@1"] == 1.0 and large.metrics["ndcg@1"] == 1.0  # "cherry" finds d1 either way
    assert small.metrics["tokens@1"] < large.metrics["tokens@1"]


def test_frontier_chart_marks_the_pareto_front():
    from diagnose import charts

    df = pd.DataFrame({"chunking": ["as they are", "128/0", "256/0", "512/0"], "ndcg@10": [0.5, 0.4, 0.4, 0.3],
                       "tokens@10": [900.0, 300.0, 300.0, 600.0], "pareto": [True, True, True, False],
                       "current": [True, False, False, False]})  # fmt: skip
    spec = charts.chunking_frontier(
        df, metric="ndcg@10", tokens="tokens@10"
    ).to_dict()  # validates the schema
    front, points, labels = spec["layer"]
    assert front["mark"]["type"] == "line"
    datasets = spec["datasets"]
    front_rows = datasets[front["data"]["name"]]
    assert [r["chunking"] for r in front_rows] == ["128/0", "256/0", "as they are"]  # by tokens
    assert sorted(r["label"] for r in datasets[labels["data"]["name"]]) == [
        "128/0, 256/0",
        "512/0",
        "as they are",
    ]


@pytest.mark.usefixtures("keyword_encoder")
def test_app_page_measures_on_demand():
    import app_testing as app

    at = app.open_demo("chunking")
    assert not app.charts(at)  # nothing measured before the button
    at.text_input(key="chunking_sizes").set_value("64,128")
    at.button(key="chunking_submit").click().run()
    app.assert_clean(at)
    table = app.frame_with(at, "chunks")
    assert table["chunking"].tolist() == ["as they are", "64/0", "128/0"]
    assert len(app.charts(at)) == 1


def test_analysis_context_of_a_document_run():
    a = diagnose.Analysis(
        _dataset(TEXTS, SPAN), {"run": {"q1": {"d1": 1.0, "d2": 0.5}}}, encoder=KeywordEncoder()
    )
    got = a.context("run", k=1).per_query.loc["q1"].tolist()
    # d1 sent whole: 4 word tokens, 2 of them ("cherry date") in the span: precision 1/2, recall 2/2
    assert got == pytest.approx([0.5, 1.0, 4])
    # k=2 adds d2 (3 tokens, none inside): precision 2/7
    assert a.context("run", k=2).aggregate["context_precision@2"] == pytest.approx(2 / 7)


def test_split_cache_serves_a_sweep_measured_again(tmp_path, monkeypatch):
    first = _sweep(tmp_path)  # k=1: splits "apple banana." / "cherry date." / "egg fig" / "grape", cached
    assert len(list((tmp_path / "chunking" / "splits").glob("*.npy"))) == 1

    def no_split(*args, **kwargs):
        raise AssertionError("split again although the split cache holds it")

    monkeypatch.setattr("diagnose.whatif.chunking.splits.split_documents", no_split)
    a = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=KeywordEncoder(), cache_dir=tmp_path)
    again = a.chunking([2], [0], k=2)  # another k: every point measured again, from the cached split
    assert (
        not again.configurations[0].cached
        and again.configurations[0].chunks == first.configurations[0].chunks
    )
    monkeypatch.undo()
    fresh = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=KeywordEncoder(), cache_dir=tmp_path / "fresh")
    assert again.configurations[0].metrics == fresh.chunking([2], [0], k=2).configurations[0].metrics


@pytest.mark.real_model
def test_warm_sweep_loads_no_model_and_equals_the_cold_one(tmp_path, monkeypatch):
    texts = {
        "d1": "Cherries are small stone fruits. They ripen in early summer and are eaten fresh or dried.",
        "d2": "Granite is an igneous rock made of quartz and feldspar, common in continental crust.",
    }
    spans = (Span("q1", 0, "d1", 0, 32, "exact"),)
    cold = diagnose.Analysis(_dataset(texts, spans), cache_dir=tmp_path).chunking([8, 64], [0], k=1)
    loads = []

    def loader(*args, **kwargs):
        loads.append(args)
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("diagnose.embed.loading._sentence_transformer", loader)
    warm = diagnose.Analysis(_dataset(texts, spans), cache_dir=tmp_path).chunking([8, 64], [0], k=1)
    for p in (tmp_path / "chunking").glob(
        "*.json"
    ):  # points gone: measured again from the splits and vectors
        p.unlink()
    again = diagnose.Analysis(_dataset(texts, spans), cache_dir=tmp_path).chunking([8, 64], [0], k=1)
    assert loads == []
    assert all(p.cached for p in (warm.current, *warm.configurations))
    assert not any(p.cached for p in (again.current, *again.configurations))
    for sw in (warm, again):
        assert sw.to_dict()["current"] | {"cached": False, "encode_s": 0} == cold.to_dict()["current"] | {
            "cached": False, "encode_s": 0}  # fmt: skip
        for got, want in zip(sw.configurations, cold.configurations, strict=True):
            assert (got.size, got.chunks, got.metrics) == (want.size, want.chunks, want.metrics)
            pd.testing.assert_frame_equal(got.per_query, want.per_query)


@pytest.mark.real_model
def test_a_first_chunk_longer_than_the_window_reads_as_its_document():
    """A chunk that starts its document and is longer than the model's window is cut by the model to the same
    token ids as the whole document, so the sweep encodes the document's text for it (an embedding-cache hit on
    the dense baseline's vector); a shorter chunk, or a later one, keeps its own text."""
    from diagnose.embed import load_encoder
    from diagnose.failures.passages import model_window
    from diagnose.whatif.chunking.splitter import model_tokenizer, reads_as_document

    encoder = load_encoder(None)
    fruit = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hawthorn"]
    text = " ".join(f"The {fruit[i % 8]} orchard {i} ripens in week {i % 9}." for i in range(80))
    title = "Orchards"
    tok = model_tokenizer(encoder)
    cap = model_window(encoder).capacity
    assert len(tok.encode(text, add_special_tokens=False).ids) > 2 * cap  # the document is two windows long
    for size, replaced in ((cap + 40, True), (cap // 4, False)):
        docs, starts, ends = split_documents([text], size, 0, tok, [title])
        whole = reads_as_document(encoder, tok, [text], [title], docs, starts, ends)
        assert len(docs) > 1
        assert whole.tolist() == [replaced] + [False] * (len(docs) - 1)  # later chunks are never the document
    # what the model reads from the first long chunk is the document's first window: the same vector
    docs, starts, ends = split_documents([text], cap + 40, 0, tok, [title])
    first = encoded_texts([text], [title], docs, starts, ends)[0]
    a, b = encoder.encode([first]), encoder.encode([f"{title} {text}"])
    assert float(a[0] @ b[0]) > 0.9999


class CountingEncoder(KeywordEncoder):
    """The keyword encoder, recording the texts of every ``encode`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def encode(self, texts, **kwargs):
        self.calls.append(list(texts))
        return super().encode(texts, **kwargs)


def test_each_distinct_chunk_text_is_encoded_once(tmp_path):
    enc = CountingEncoder()
    a = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=enc, cache_dir=tmp_path)
    sw = a.chunking([2, 3, 4], [0], k=1)
    # word tokens, overlap 0: size 2 -> "apple banana." "cherry date." "egg fig" "grape" (4 chunks);
    # size 3 -> "apple banana. cherry" "date." (d1 has 4 words > 3) "egg fig grape" (d2 fits) (3);
    # size 4 -> both documents whole: "apple banana. cherry date." "egg fig grape" (2). 9 chunks, 8 distinct texts
    # (size 4's "egg fig grape" is size 3's); 2 of them are the documents as they are, encoded (with the query)
    # for the dense baseline before the sweep: the sweep encodes the other 6, size 2's 4 then size 3's 2.
    assert [p.chunks for p in sw.configurations] == [4, 3, 2]
    texts = [t for call in enc.calls for t in call]
    assert len(texts) == len(set(texts))  # no text encoded twice
    assert sorted(texts[:3]) == sorted([TEXTS["d1"], TEXTS["d2"], "cherry"])
    # each configuration's new texts longest first, the batches of a configuration measured alone
    assert enc.calls[-2:] == [
        ["apple banana.", "cherry date.", "egg fig", "grape"],
        ["apple banana. cherry", "date."],
    ]
    assert len(texts) == 3 + 6


def test_a_warm_sweep_encodes_nothing_even_for_another_k(tmp_path):
    _sweep(tmp_path, sizes=(2, 3, 4))
    enc = CountingEncoder()
    warm = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=enc, cache_dir=tmp_path).chunking(
        [2, 3, 4], [0], k=1
    )
    assert enc.calls == [] and all(p.cached for p in warm.configurations)
    # another k: no point cached, every split and vector is (the documents', the query's, the chunks')
    other = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=enc, cache_dir=tmp_path).chunking(
        [2, 3, 4], [0], k=2
    )
    assert enc.calls == [] and not any(p.cached for p in other.configurations)


def test_a_sweep_measures_each_configuration_as_it_would_alone(tmp_path):
    """Sharing the split's tokenisation and one encode across configurations changes no number: the 3-configuration
    sweep of the demo corpus equals each configuration swept alone, each in an empty cache (what the sweep did
    before it shared anything: a configuration's points depend on its own chunks only)."""
    ds = diagnose.load(DEMO)
    together = diagnose.Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path / "all").chunking(
        [16, 32, 64], [0, 8], k=5
    )
    assert len(together.configurations) == 6
    for n, p in enumerate(together.configurations):
        alone = diagnose.Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path / str(n)).chunking(
            [p.size], [p.overlap], k=5
        )
        (q,) = alone.configurations
        assert (p.chunks, p.metrics, p.index_mb, p.recovers, p.breaks) == (
            q.chunks, q.metrics, q.index_mb, q.recovers, q.breaks)  # fmt: skip
        assert (p.ndcg_diff, p.p_value) == (q.ndcg_diff, q.p_value)
        pd.testing.assert_frame_equal(p.per_query, q.per_query)


def test_document_tokens_tokenise_each_document_once():
    from diagnose.whatif.chunking.splitter import DocumentTokens

    class Tok:  # a whitespace tokenizer counting what it encodes
        def __init__(self):
            self.seen: list[str] = []

        def encode_batch(self, texts, add_special_tokens=False):
            self.seen += texts
            return [type("E", (), {"ids": [len(w) for w in t.split()]})() for t in texts]

    tok = Tok()
    tokens = DocumentTokens(tok, ["ab cde", "f"], ["T", ""])
    assert tokens.lengths() == [2, 1] and tokens.lengths() == [2, 1]
    # "T ab cde" -> word lengths [1, 2, 3]; "f" (no title) -> [1]
    assert tokens.whole_ids([1, 0]) == [[1], [1, 2, 3]]
    assert tokens.whole_ids([0, 0, 1]) == [[1, 2, 3], [1, 2, 3], [1]]
    assert tok.seen == ["ab cde", "f", "f", "T ab cde"]  # lengths once, then each whole document once


@pytest.mark.real_model
def test_real_model_sweep_encodes_each_distinct_text_once(tmp_path):
    texts = {
        "d1": "Cherries are small stone fruits. They ripen in early summer and are eaten fresh or dried.",
        "d2": "Granite is an igneous rock made of quartz and feldspar, common in continental crust.",
    }
    a = diagnose.Analysis(_dataset(texts, (Span("q1", 0, "d1", 0, 32, "exact"),)), cache_dir=tmp_path)
    enc = a.encoder
    calls: list[list[str]] = []
    encode = enc.encode
    enc.encode = lambda t, **kw: calls.append(list(t)) or encode(t, **kw)
    sw = a.chunking([8, 16, 64], [0], k=1)
    seen = [t for c in calls for t in c]
    assert len(seen) == len(set(seen))
    # 64 model tokens hold each document whole: its 2 chunks are the documents as they are, encoded once for the
    # dense baseline, and the 64-token configuration encodes nothing
    assert sw.configurations[2].chunks == 2 and texts["d1"] in seen and texts["d2"] in seen
    assert sw.configurations[2].encode_s < sw.configurations[0].encode_s


def test_progress_one_bar_for_the_encode_and_the_time_left(tmp_path):
    class Recorder:
        def __init__(self):
            self.steps: list[str] = []
            self.bars: dict[str, list[tuple[int, int]]] = {}

        def step(self, label):
            self.steps.append(label)

        def bar(self, label):
            return lambda done, total: self.bars.setdefault(label, []).append((done, total))

    rec = Recorder()
    a = diagnose.Analysis(_dataset(TEXTS, SPAN), encoder=KeywordEncoder(), cache_dir=tmp_path)
    with a.reporting(rec):
        a.chunking([2, 3, 4], [0], k=1)
    # the chunks of the 3 configurations (9 chunks, 8 distinct texts; 6 not cached: see the test above) in one bar,
    # size 2's 4 texts then size 3's 2 (size 4's are the documents', cached: no call)
    (label,) = [b for b in rec.bars if b.startswith("Encoding the chunks")]
    assert label == "Encoding the chunks of 3 configurations (9 chunks, 8 distinct texts, 6 not cached)"
    assert rec.bars[label] == [(0, 6), (4, 6), (4, 6), (6, 6)]
    split = [s for s in rec.steps if s.startswith("Chunking the 2 documents")]
    assert len(split) == 3 and "left)" not in split[0] and all(s.endswith("left)") for s in split[1:])


def test_a_warm_sweep_gives_the_cold_numbers_to_the_last_bit(tmp_path):
    """The per-query values are cached as exact floats (pandas' to_json kept 10 digits: a warm ``ndcg_diff`` moved
    in its 11th digit, and the bench's "warm equals cold" failed on 1,000 documents)."""
    ds = diagnose.load(DEMO)
    cold = diagnose.Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path).chunking([16, 64], [0], k=5)
    warm = diagnose.Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path).chunking([16, 64], [0], k=5)
    assert all(p.cached for p in warm.configurations)
    for got, want in zip(
        (warm.current, *warm.configurations), (cold.current, *cold.configurations), strict=True
    ):
        assert got.to_dict() | {"cached": 0, "encode_s": 0} == want.to_dict() | {"cached": 0, "encode_s": 0}
        pd.testing.assert_frame_equal(got.per_query, want.per_query, check_exact=True)
