"""Chunk corpora (diagnose.io.chunks): parents and offsets, relevance at the chunk and document level, the ``split``
failure class and its ``merge`` remedy.

The chunked demo corpus is cut by LangChain's RecursiveCharacterTextSplitter (``add_start_index=True``), as a RAG
team's ingestion would; the split class's cases are tiny hand-built corpora whose offsets are counted in comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import diagnose
from diagnose.cli import main
from diagnose.data import ChunkMap, DataError, Qrels, Run, Span
from diagnose.embed import KeywordEncoder
from diagnose.failures import PairEvidence, Thresholds, classify
from diagnose.failures.split import split_targets, split_windows
from diagnose.io.chunks import CHUNK_SHARE, document_qrels
from diagnose.search.documents import document_run

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
METRICS = ["ndcg@10", "recall@10", "hit_rate@10", "mrr", "map@10", "precision@5", "r_precision"]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _chunk_demo(tmp_path: Path, *, ids: str = "pattern") -> tuple[Path, dict[str, list[str]]]:
    """The demo corpus cut into ~300-character chunks by LangChain's splitter: ids ``DOC#N`` (``ids="pattern"``) or
    ``cN`` with the document under the metadata key ``parent`` (``ids="field"``); ``start_index`` from the splitter.
    Returns the file and each document's chunk ids in order."""
    splitters = pytest.importorskip("langchain_text_splitters")
    splitter = splitters.RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0, add_start_index=True)
    rows, chunks_of, n = [], {}, 0
    for line in (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for i, piece in enumerate(splitter.create_documents([doc["text"]])):
            n += 1
            cid = f"{doc['_id']}#{i}" if ids == "pattern" else f"c{n}"
            meta = {"start_index": piece.metadata["start_index"]}
            if ids == "field":
                meta["parent"] = doc["_id"]
            rows.append({"_id": cid, "title": doc["title"], "text": piece.page_content, "metadata": meta})
            chunks_of.setdefault(doc["_id"], []).append(cid)
    return _write_jsonl(tmp_path / "chunks.jsonl", rows), chunks_of


def _chunk_run(run: Run, chunks_of: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """A chunk run from a document run: each retrieved document's chunks in a row, at the document's place, the
    first chunk with the document's score (so the best chunk of each document is the document)."""
    out: dict[str, dict[str, float]] = {}
    for q, items in run.df.groupby("query_id", sort=False):
        scores, n = {}, 0
        for d in items["doc_id"]:
            for c in chunks_of.get(d, [d]):
                n += 1
                scores[c] = -float(n)
        out[str(q)] = scores
    return out


def test_a_chunked_copy_gives_the_document_corpus_metrics_at_the_document_level(tmp_path):
    """Done-when of issue 19 part 3: the demo cut by a real splitter, every chunk carrying its document's id-based
    relevance (a chunk-id qrels file), and a chunk run whose best chunk of each document is where the document run
    has it: the document-level metrics equal the document corpus' metrics on every metric."""
    corpus, chunks_of = _chunk_demo(tmp_path, ids="field")
    docs = diagnose.load(DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    run = docs.runs["ann_minilm"]
    # every chunk of a document judged with the document's grade, written with chunk ids
    qrels = [(q, c, g) for q, d, g in docs.qrels.df.itertuples(index=False) for c in chunks_of.get(d, [d])]
    qrels_file = tmp_path / "chunk_qrels.tsv"
    qrels_file.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t{g}\n" for q, c, g in qrels), encoding="utf-8"
    )
    chunked = diagnose.load(
        corpus=corpus, queries=DEMO / "queries.jsonl", qrels=qrels_file, parent_field="parent"
    )
    assert chunked.corpus.chunks.offsets == "start_index" and chunked.report.stats["qrels_level"] == "chunk"
    # the app's status and overview say what the records are: chunks, and of how many documents
    n_chunks = sum(len(v) for v in chunks_of.values()) + len(set(docs.corpus.ids) - set(chunks_of))
    assert chunked.corpus.size_phrase() == f"{n_chunks:,} chunks of {len(docs.corpus):,} documents"
    assert docs.corpus.size_phrase() == f"{len(docs.corpus):,} documents"
    a_docs = diagnose.Analysis(docs, {"ann": run}, encoder=KeywordEncoder())
    a_chunks = diagnose.Analysis(chunked, {"ann": _chunk_run(run, chunks_of)}, encoder=KeywordEncoder())
    expected = a_docs.metrics(METRICS)
    got = a_chunks.metrics(METRICS, level="document")
    pd.testing.assert_frame_equal(got, expected)
    # the chunk level is another measure: a query's chunks of one relevant document share its relevance
    assert not a_chunks.metrics(METRICS).equals(expected)


def test_document_qrels_over_a_chunk_corpus_are_inherited_by_the_chunks(tmp_path):
    """The demo's own qrels (document ids) over its chunked copy with ids DOC#N (detected, no parent_field): each
    chunk of a judged document carries the document's grade, and the document-level metrics are the document
    corpus'."""
    corpus, chunks_of = _chunk_demo(tmp_path, ids="pattern")
    ds = diagnose.load(DEMO, corpus=corpus)
    assert ds.corpus.chunks.how.startswith("id pattern DOC#N (detected")
    assert ds.report.stats["qrels_level"] == "document"
    grades = ds.qrels.as_dict()
    # q001 judges hr-0001 with grade 2 (demo_corpus/qrels/test.tsv): every chunk of hr-0001 has grade 2
    assert {c: grades["q001"][c] for c in chunks_of["hr-0001"]} == dict.fromkeys(chunks_of["hr-0001"], 2)
    docs = diagnose.load(DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    run = docs.runs["ann_minilm"]
    a_chunks = diagnose.Analysis(ds, {"ann": _chunk_run(run, chunks_of)}, encoder=KeywordEncoder())
    expected = diagnose.Analysis(docs, {"ann": run}, encoder=KeywordEncoder()).metrics(METRICS)
    pd.testing.assert_frame_equal(a_chunks.metrics(METRICS, level="document"), expected)
    report = a_chunks.evaluation_report().to_dict()
    assert report["level"] == "chunk" and report["document_level"]["level"] == "document"
    doc_ndcg = report["document_level"]["runs"]["ann"]["aggregate"]["ndcg@10"]
    assert doc_ndcg == pytest.approx(expected.loc["ann", "ndcg@10"])


def test_document_run_keeps_each_document_at_its_best_chunk():
    # chunks a#0, b#0, a#1, c#0 ranked 1..4: documents a (rank 1), b (rank 2), c (rank 3 once a#1 merged into a)
    cmap = ChunkMap({"a#0": "a", "a#1": "a", "b#0": "b", "c#0": "c"})
    run = Run.from_ranked_lists("r", {"q": [("a#0", 0.9), ("b#0", 0.8), ("a#1", 0.7), ("c#0", 0.6)]})
    docs = document_run(run, cmap)
    assert docs.df["doc_id"].tolist() == ["a", "b", "c"] and docs.df["score"].tolist() == [0.9, 0.8, 0.6]
    # a document's grade is the best of its chunks': a#0 (0) and a#1 (2) -> a has 2
    qrels = Qrels(pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a#0", "a#1"], "relevance": [0, 2]}))
    assert document_qrels(qrels, cmap).as_dict() == {"q": {"a": 2}}


# A document of 3 chunks with offsets, counted by hand:
#   text = "Filler words here. Alpha beta gamma delta. More filler text here. Omega sigma tau."
#   chunk d1#0 = text[0:29]  = "Filler words here. Alpha beta"
#   chunk d1#1 = text[30:65] = "gamma delta. More filler text here."   (text[29] = " " is in no chunk)
#   chunk d1#2 = text[66:82] = "Omega sigma tau."
TEXT = "Filler words here. Alpha beta gamma delta. More filler text here. Omega sigma tau."
CHUNKS = [("d1#0", 0, 29), ("d1#1", 30, 65), ("d1#2", 66, 82)]  # len(TEXT) = 82
OTHERS = {"d2#0": "Zeta eta theta iota kappa lambda.", "d3#0": "Mu nu xi omicron pi rho."}


def _tiny(
    tmp_path: Path, contexts: dict[str, list[str]], run: dict[str, list[str]], others: dict[str, str] = OTHERS
) -> diagnose.Dataset:
    """The document above (offsets under ``start``/``end``, document under ``parent``) and one-chunk ``others``,
    a plain-JSONL golden set of ``contexts`` per query (the query text is the first context), and ``run``."""
    assert (
        TEXT[0:29] == "Filler words here. Alpha beta" and TEXT[30:65] == "gamma delta. More filler text here."
    )
    rows = [
        {"_id": c, "text": TEXT[s:e], "metadata": {"parent": "d1", "start": s, "end": e}}
        for c, s, e in CHUNKS
    ]
    rows += [
        {"_id": c, "text": t, "metadata": {"parent": c.split("#")[0], "start": 0, "end": len(t)}}
        for c, t in others.items()
    ]
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", rows)
    golden = _write_jsonl(
        tmp_path / "golden.jsonl",
        [{"query_id": q, "query": refs[0], "reference_contexts": refs} for q, refs in contexts.items()],
    )
    lines = [f"{q} Q0 {d} {r} {10 - r} x\n" for q, docs in run.items() for r, d in enumerate(docs, start=1)]
    (tmp_path / "run.trec").write_text("".join(lines), encoding="utf-8")
    return diagnose.load(corpus=corpus, qrels=golden, parent_field="parent", runs=[tmp_path / "run.trec"])


def test_spans_are_located_in_the_documents_and_judged_on_the_chunks(tmp_path):
    ds = _tiny(
        tmp_path,
        {
            # inside d1#1 (text[30:41]): d1#1 alone
            "q1": ["gamma delta"],
            # text[19:41] = "Alpha beta gamma delta" (22 characters): d1#0 holds 19..29 = 10, d1#1 30..41 = 11;
            # d1#1 holds the largest part; d1#0's 10 < 0.5 x 22 and < 0.5 x 29 (its length): d1#1 alone
            "q2": ["Alpha beta gamma delta"],
            # text[13:41] = "here. Alpha beta gamma delta" (28): d1#0 holds 13..29 = 16, the largest part; d1#1's
            # 11 < 0.5 x 28 = 14 and < 0.5 x 35 (its length): d1#0 alone
            "q3": ["here. Alpha beta gamma delta"],
            # text[19:75] (56 characters) over three chunks: d1#0 holds 10, d1#1 all its 35 (the largest part),
            # d1#2 66..75 = 9 >= 0.5 x 16 (its length; the span fills more than half of it): d1#1 and d1#2;
            # d1#0's 10 < 0.5 x 56 and < 0.5 x 29
            "q4": ["Alpha beta gamma delta. More filler text here. Omega sig"],
        },
        {"q1": ["d2#0"], "q2": ["d2#0"], "q3": ["d2#0"], "q4": ["d2#0"]},
    )
    assert CHUNK_SHARE == 0.5
    assert ds.qrels.as_dict() == {
        "q1": {"d1#1": 1},
        "q2": {"d1#1": 1},
        "q3": {"d1#0": 1},
        "q4": {"d1#1": 1, "d1#2": 1},
    }
    # the spans are in the document's coordinates, so they survive re-chunking
    assert [(s.query_id, s.doc_id, s.start, s.end) for s in ds.qrels.spans] == [
        ("q1", "d1", 30, 41),
        ("q2", "d1", 19, 41),
        ("q3", "d1", 13, 41),
        ("q4", "d1", 19, 75),
    ]
    # --write-qrels writes the corpus' ids (chunks), the spans the documents' offsets
    out = tmp_path / "out" / "qrels.tsv"
    out.parent.mkdir()
    diagnose.write_qrels(ds, out)
    assert out.read_text().splitlines()[1:] == [
        "q1\td1#1\t1",
        "q2\td1#1\t1",
        "q3\td1#0\t1",
        "q4\td1#1\t1",
        "q4\td1#2\t1",
    ]
    spans = [json.loads(line) for line in (tmp_path / "out" / "qrels.spans.jsonl").read_text().splitlines()]
    assert spans[1]["doc_id"] == "d1" and (spans[1]["start"], spans[1]["end"]) == (19, 41)


def test_split_targets_are_the_larger_part_of_a_span_no_chunk_holds_whole():
    cmap = ChunkMap(
        {c: "d1" for c, _, _ in CHUNKS}, {c: s for c, s, _ in CHUNKS}, {c: e for c, _, e in CHUNKS}
    )
    corpus = diagnose.data.Corpus(pd.DataFrame({"doc_id": [], "title": [], "text": []}), chunks=cmap)
    spans = (
        Span("q1", 0, "d1", 30, 41, "exact"),  # whole in d1#1: not split
        Span("q2", 0, "d1", 19, 41, "exact"),  # d1#0 10 of 22, d1#1 11 of 22: d1#1, share 0.5
        Span("q3", 0, None, None, None, "unmatched", 0.0),
    )
    qrels = Qrels(pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1#1"], "relevance": [1]}), spans=spans)
    assert split_targets(qrels, corpus) == {("q2", "d1#1"): 0.5}
    # without offsets there is nothing to read
    plain = diagnose.data.Corpus(corpus.df, chunks=ChunkMap(cmap.parent))
    assert split_targets(qrels, plain) == {}


def test_split_windows_join_the_target_with_the_neighbours_holding_the_rest():
    cmap = ChunkMap(
        {c: "d1" for c, _, _ in CHUNKS}, {c: s for c, s, _ in CHUNKS}, {c: e for c, _, e in CHUNKS}
    )
    corpus = diagnose.data.Corpus(pd.DataFrame({"doc_id": [], "title": [], "text": []}), chunks=cmap)
    pairs = [
        ("d1#0", "d1#1"),
        ("d1#1", "d1#2"),
    ]  # neighbour_windows' order: window 0 = d1#0+d1#1, 1 = d1#1+d1#2
    spans = (
        Span(
            "q2", 0, "d1", 19, 41, "exact"
        ),  # d1#0 10, d1#1 11: target d1#1, the rest in d1#0: window 0 only
        Span("q4", 0, "d1", 25, 70, "exact"),  # d1#0 4, d1#1 35, d1#2 4: target d1#1, the rest on both sides
    )
    qrels = Qrels(pd.DataFrame({"query_id": ["q2"], "doc_id": ["d1#1"], "relevance": [1]}), spans=spans)
    assert split_windows(qrels, corpus, pairs) == {("q2", "d1#1"): [0], ("q4", "d1#1"): [0, 1]}


def test_classify_split_comes_after_label_gap_and_before_near_miss():
    common = dict(
        run_rank=12,
        dense_rank=11,
        bm25_rank=1,
        cosine=0.9,
        overlap=1.0,
        k=10,
        calibrated=0.5,
    )
    assert classify(PairEvidence(split_share=0.6, split_rank=3, **common)) == "split"
    assert (
        classify(PairEvidence(duplicate_doc_id="d", split_share=0.6, split_rank=3, **common)) == "label_gap"
    )
    assert classify(PairEvidence(**common)) == "near_miss"  # rank 12 in k+1..3k


def test_classify_split_needs_the_merged_chunk_within_k_and_the_chunk_alone_beyond_it():
    common = dict(run_rank=12, bm25_rank=1, cosine=0.9, overlap=1.0, split_cosine=0.9)
    common |= dict(k=10, calibrated=0.5, split_share=0.6)
    # merged with its neighbours it ranks #10 <= k, alone #11 > k: merged, it is found
    assert classify(PairEvidence(split_rank=10, dense_rank=11, **common)) == "split"
    # merged #11 > k (whatever the window's cosine, 0.9 here), or unknown (no model, beyond the merged run's depth):
    # the split is not why it failed, the next rule decides
    assert classify(PairEvidence(split_rank=11, dense_rank=11, **common)) == "near_miss"
    assert classify(PairEvidence(split_rank=None, dense_rank=11, **common)) == "near_miss"
    # the chunk alone is ranked within k by exact dense search (#10, or a tie group 9-10): merging is not what it
    # needs
    assert classify(PairEvidence(split_rank=1, dense_rank=10, **common)) == "near_miss"
    assert classify(PairEvidence(split_rank=1, dense_rank=9, dense_rank_worst=10, **common)) == "near_miss"
    # a tie group 10-11 is not wholly within k: the chunk alone may be missed
    assert classify(PairEvidence(split_rank=1, dense_rank=10, dense_rank_worst=11, **common)) == "split"


# The window of d1#0 and d1#1 (text[0:65], no title), which holds q2's span text[19:41] whole; with the keyword encoder
# its cosine with the query "Alpha beta gamma delta" is 4 shared words / (|q| 2 x |window| sqrt(15)) = 0.516: window
# counts filler 2, here 2, words, alpha, beta, gamma, delta, more, text 1 each: 4 + 4 + 7 = 15
WINDOW = TEXT[0:65]
KEYWORD_WINDOW_COSINE = 4 / (2 * 15**0.5)


# Two one-chunk documents that hold two query words each: cosine 2 / (2 x 2) = 0.5 with "Alpha beta gamma delta",
# above d1#0 (0.447) and d1#1 (0.408) alone, below the window of both (0.516)
DECOYS = {"d4#0": "Alpha beta one two.", "d5#0": "Gamma delta three four."}


def _split_analysis(
    tmp_path: Path, encoder, seed: float = 0.5, others: dict[str, str] = OTHERS
) -> diagnose.Analysis:
    # q2's context text[19:41] is split between d1#0 and d1#1 (d1#1 holds the larger part and is its relevant chunk);
    # the run retrieves two chunks without a query word, so q2 fails at k=2 with target d1#1. No golden query
    # succeeds, so the calibrated threshold is the seed threshold (fallback): ``seed``
    ds = _tiny(tmp_path, {"q2": ["Alpha beta gamma delta"]}, {"q2": ["d2#0", "d3#0"]}, others)
    thresholds = Thresholds(seed_cosine=seed)
    return diagnose.Analysis(
        ds, k=2, encoder=encoder, cache_dir=tmp_path / "cache", depth=5, thresholds=thresholds
    )


def test_a_missed_larger_part_is_a_split_and_merging_neighbours_recovers_it(tmp_path):
    a = _split_analysis(tmp_path, KeywordEncoder(), others=OTHERS | DECOYS)
    failures = a.failures("run")
    assert failures[["query_id", "doc_id", "class"]].values.tolist() == [["q2", "d1#1", "split"]]
    # alone, d1#1 (0.408) ranks #4 behind the decoys (0.5, 0.5) and d1#0 (0.447): beyond k = 2; merged, d1#0 and
    # d1#1 take the window's 0.516 and lead the decoys: #1 and #2, d1#1 within k
    assert failures["dense_rank"].iloc[0] == 4 and failures["split_rank"].iloc[0] <= 2
    assert failures["split_cosine"].iloc[0] == pytest.approx(KEYWORD_WINDOW_COSINE)
    evidence = failures["evidence"].iloc[0]
    assert "crosses a chunk boundary" in evidence and "50% of it" in evidence
    assert f"cosine {KEYWORD_WINDOW_COSINE:.3f}" in evidence and "within k=2" in evidence
    row = a.remedies("run").row("split")
    # the window d1#0 + d1#1 = text[0:65] holds all four query words: d1#0 and d1#1 get its cosine and lead every
    # other chunk, so q2 gets d1#1 in its top 2: 1 of 1 failed query recovered, no hit to lose
    assert (row.remedy_id, row.failures, row.recovered, row.lost_hits) == ("merge", 1, 1, 0)
    matrix = a.remedy_matrix("run").to_dict()
    assert matrix["split"]["merge"] == {"failures": 1, "recovered": 1}


def test_a_split_target_the_index_lost_is_an_index_gap(tmp_path):
    # the same split target without the decoys: the chunk d1#1 alone, "gamma delta. More filler text here.", shares 2
    # words with the query, cosine 2 / (2 sqrt(6)) = 0.408, and d1#0 "Filler words here. Alpha beta" 2 / (2 sqrt(5))
    # = 0.447, the other chunks none: exact dense search ranks d1#1 #2, within k = 2, while the run did not retrieve
    # it: what the index lost comes before the document's shape, index_gap, though merged it is found too
    a = _split_analysis(tmp_path, KeywordEncoder())
    failures = a.failures("run")
    assert failures[["query_id", "doc_id", "class"]].values.tolist() == [["q2", "d1#1", "index_gap"]]
    assert failures["split_cosine"].iloc[0] == pytest.approx(KEYWORD_WINDOW_COSINE)  # still reported
    assert failures["split_rank"].iloc[0] <= 2
    assert a.remedy_matrix("run").to_dict().get("split", {}).get("merge", {"failures": 0})["failures"] == 0


@pytest.mark.real_model
def test_split_with_the_bundled_model_is_what_merging_recovers(tmp_path):
    """The bundled model: the class is split exactly when the merge remedy's run ranks the target within k = 2 and
    exact dense search of the chunk alone does not; then the remedy recovers it."""
    a = _split_analysis(tmp_path, None, others=OTHERS | DECOYS)
    f = a.failures("run").iloc[0]
    merged = a.remedies("run").runs["merge"]
    ranked = merged.ranked_lists()["q2"]
    # seven chunks in the corpus, depth 5: the top 5 chunks of the one golden query
    assert len(ranked) == 5 and len(set(ranked)) == 5
    merged_rank = ranked.index("d1#1") + 1 if "d1#1" in ranked else None
    assert f["split_rank"] == merged_rank or (merged_rank is None and f["split_rank"] is None)
    is_split = merged_rank is not None and merged_rank <= 2 and f["dense_rank"] > 2
    assert (f["class"] == "split") == is_split
    row = a.remedies("run").row("split")
    assert row.remedy_id == "merge" and row.failures == int(is_split) and row.recovered == int(is_split)


def test_without_a_chunk_corpus_the_merge_remedy_is_not_tried():
    ds = diagnose.load(DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    a = diagnose.Analysis(ds, encoder=KeywordEncoder())
    row = a.remedies().row("split")
    assert row.failures == 0 and not row.available and "chunk corpus" in row.note


def test_parent_field_errors_name_the_parameter_and_the_flag(tmp_path, capsys):
    rows = [{"_id": "c1", "text": "a", "metadata": {"parent": "d1"}}, {"_id": "c2", "text": "b"}]
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", rows)
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tc1\t1\n", encoding="utf-8")
    with pytest.raises(DataError, match="1 of the 2 chunks have no 'parent'") as e:
        diagnose.load(corpus=corpus, qrels=qrels, parent_field="parent")
    assert e.value.param == "parent_field"
    with pytest.raises(DataError, match="no metadata key 'source'.*'parent'"):
        diagnose.load(corpus=corpus, qrels=qrels, parent_field="source")
    with pytest.raises(DataError, match="2 of the 2 ids do not look like that"):
        diagnose.load(corpus=corpus, qrels=qrels, parent_field="DOC#N")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 c1 1 1.0 x\n", encoding="utf-8")
    code = main(
        [
            "evaluate",
            "--qrels",
            str(qrels),
            "--corpus",
            str(corpus),
            "--parent-field",
            "source",
            "--run",
            str(run),
        ]
    )
    assert code == 2 and "--parent-field" in capsys.readouterr().err
