"""The injected-fault benchmark's injector (bench/faults.py) on the demo corpus with the fake keyword encoder: each
fault does what it says to the collection and the run, and the classes whose cause is mechanical (an index that lost
the target, a deleted target, an unjudged copy, a filter that excludes it) are told apart exactly, with index_gap's
and filtered_out's remedies recovering all; a split answer in a chunk corpus is split exactly where merging finds it.
The benchmark itself (real model, NFCorpus, CACM) is bench/bench_faults.py; its table is in docs/taxonomy.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from faults import inject, load_injected, score  # noqa: E402

import diagnose  # noqa: E402
from diagnose.embed import KeywordEncoder  # noqa: E402
from diagnose.lexical import tokenize  # noqa: E402

DEMO = ROOT / "demo_corpus"
K = 10


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    out = tmp_path_factory.mktemp("faults")
    truth = inject(
        DEMO,
        out,
        kind="lexical",
        k=K,
        per_class=3,
        seed=1,
        encoder=KeywordEncoder(),
        cache_dir=tmp_path_factory.mktemp("cache"),
        classes=("index_gap", "near_miss", "missing_document", "label_gap", "filtered_out"),
    )
    return out, truth


def _lists(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, *_ = line.split()
        out.setdefault(q, []).append(d)
    return out


def test_each_fault_is_in_the_collection_and_the_run(injected: tuple[Path, list]) -> None:
    out, truth = injected
    assert [t.cls for t in truth] == ["index_gap"] * 3 + ["near_miss"] * 3 + ["missing_document"] * 3 + [
        "label_gap"
    ] * 3 + ["filtered_out"] * 3
    assert len({t.doc_id for t in truth}) == 15  # one target per document
    filters = json.loads((out / "filters.json").read_text())
    corpus = {json.loads(line)["_id"] for line in (out / "corpus.jsonl").read_text().splitlines()}
    lists = _lists(out / "run.trec")
    qrels = (out / "qrels" / "test.tsv").read_text().splitlines()[1:]
    for t in truth:
        judged = [line.split("\t")[1] for line in qrels if line.split("\t")[0] == t.query_id]
        assert judged == [t.doc_id]  # the picked query keeps its target only
        ranked = lists[t.query_id]
        if t.cls == "index_gap":
            assert t.doc_id in corpus and t.doc_id not in ranked
        elif t.cls == "near_miss":
            assert K < ranked.index(t.doc_id) + 1 <= 2 * K
        elif t.cls == "missing_document":
            assert t.doc_id not in corpus and t.doc_id not in ranked
        elif (
            t.cls == "filtered_out"
        ):  # in the corpus, excluded by the query's filter, so not in the filtered run
            assert t.doc_id in corpus and t.doc_id not in ranked
            assert filters[t.query_id] == {"doc_id": {"$nin": [t.doc_id]}}
        else:
            assert ranked[0] == f"{t.doc_id}~copy" and f"{t.doc_id}~copy" in corpus and t.doc_id not in ranked
    assert json.loads((out / "injected.json").read_text())["kind"] == "lexical"


def test_mechanical_causes_are_classified_exactly(injected: tuple[Path, list], tmp_path: Path) -> None:
    out, truth = injected
    ds = diagnose.load(out, runs=[("injected", out / "run.trec")])
    a = diagnose.Analysis(
        ds,
        k=K,
        baselines=("bm25", "dense"),
        kinds={"injected": "lexical"},
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        filters=out / "filters.json",
    )
    scores = {s.cls: s for s in score(truth, a, "injected", K)}
    for cls in ("index_gap", "missing_document", "label_gap", "filtered_out"):
        s = scores[cls]
        assert (s.injected, s.failed, s.precision, s.recall) == (3, 3, 1.0, 1.0), s
    # the lexical run's index gap: this tool's BM25 ranks the dropped target within k, and its remedy (the BM25
    # baseline replaces the run) finds all three
    assert scores["index_gap"].remedy == "bm25" and scores["index_gap"].recovered == 3
    # a lexical run's filtered-out target: its remedy is the unfiltered search of its kind, this tool's BM25, which
    # ranked each target within k before the fault (a healthy query) over a corpus the filter does not change
    assert scores["filtered_out"].remedy == "unfiltered" and scores["filtered_out"].recovered == 3


@pytest.fixture(scope="module")
def split_injected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, Path]:
    out, cache = tmp_path_factory.mktemp("split"), tmp_path_factory.mktemp("split_cache")
    truth = inject(
        DEMO, out, kind="dense", k=K, per_class=3, seed=1, encoder=KeywordEncoder(), cache_dir=cache,
        classes=("split",),
    )  # fmt: skip
    return out, truth, cache


def test_the_split_fault_cuts_the_answer_across_two_chunks(split_injected: tuple[Path, list, Path]) -> None:
    out, truth, _ = split_injected
    assert truth and all(t.cls == "split" and t.doc_id.endswith("#1") for t in truth)
    rows = {r["_id"]: r for r in map(json.loads, (out / "corpus.jsonl").read_text().splitlines())}
    golden = {r["query_id"]: r for r in map(json.loads, (out / "golden.jsonl").read_text().splitlines())}
    lists = _lists(out / "run.trec")
    for t in truth:
        parent = t.doc_id[: -len("#1")]
        head, tail = rows[f"{parent}#0"], rows[t.doc_id]
        # two chunks of one document, side by side: [0, cut) and [cut, end), the tail shorter than the head
        cut = head["metadata"]["end"]
        assert head["metadata"] == {"parent": parent, "start": 0, "end": cut}
        assert tail["metadata"] == {"parent": parent, "start": cut, "end": cut + len(tail["text"])}
        assert len(tail["text"]) < len(head["text"]) and parent not in rows
        # the span: from half the tail's length before the cut to the end; the tail holds 2/3 of it, the head 1/3
        (span,) = golden[t.query_id]["reference_contexts"]
        assert span == (head["text"] + tail["text"])[cut - len(tail["text"]) // 2 :]
        # the dense run (exact search over the chunks) misses the tail: the fault was kept only then
        assert t.doc_id not in lists[t.query_id][:K]


def test_a_split_is_classed_split_exactly_where_merging_finds_it(
    split_injected: tuple[Path, list, Path],
) -> None:
    out, truth, cache = split_injected
    ds = load_injected(out, runs=[("injected", out / "run.trec")])
    a = diagnose.Analysis(
        ds, k=K, baselines=("bm25", "dense"), kinds={"injected": "dense"}, encoder=KeywordEncoder(),
        cache_dir=cache,
    )  # fmt: skip
    failures = {(f.query_id, f.doc_id): f for f in a.diagnosis("injected").failures}
    merged = a.remedies("injected").runs["merge"].ranked_lists()
    split = 0
    for t in truth:
        f = failures[(t.query_id, t.doc_id)]  # every injected split failed (the test above)
        rank = merged[t.query_id].index(t.doc_id) + 1 if t.doc_id in merged[t.query_id] else None
        assert f.split_rank == rank
        findable = rank is not None and rank <= K and f.dense_rank > K
        assert (f.cls == "split") == findable
        split += f.cls == "split"
    s = {s.cls: s for s in score(truth, a, "injected", K)}["split"]
    # the remedy recovers every failure classed split (its merged rank is within k) and the precision is 1
    assert s.recovered == split and (s.precision == 1.0 or split == 0)


def test_a_lexical_vocabulary_fault_is_read_as_vocabulary_mismatch(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # the lexical vocabulary fault deletes every word of the target whose stem is a query term: BM25 cannot find it
    # (score 0, so the BM25 run does not retrieve it) and it holds 0% of the query's BM25 weight, below the run's
    # calibrated share (the 10th percentile over the targets it finds, which hold some of it); issue 35 measured
    # 0.30 recall when the rule also asked dense search to rank it within 3k
    out = tmp_path_factory.mktemp("vocab")
    cache = tmp_path_factory.mktemp("vcache")
    enc = KeywordEncoder()
    kw = dict(kind="lexical", k=K, seed=1, encoder=enc, cache_dir=cache)
    truth = inject(DEMO, out, per_class=4, classes=("index_gap", "vocabulary_mismatch"), **kw)
    corpus = {
        json.loads(line)["_id"]: json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()
    }
    queries = {
        json.loads(line)["_id"]: json.loads(line)["text"]
        for line in (out / "queries.jsonl").read_text().splitlines()
    }
    for t in truth:
        if t.cls == "vocabulary_mismatch":
            d = corpus[t.doc_id]
            doc_stems = set(tokenize([d.get("title", "") + " " + d["text"]])[0])
            assert not doc_stems & set(tokenize([queries[t.query_id]])[0])
    ds = diagnose.load(out, runs=[("injected", out / "run.trec")])
    a = diagnose.Analysis(
        ds, k=K, baselines=("bm25", "dense"), kinds={"injected": "lexical"}, encoder=enc, cache_dir=cache
    )
    s = {c.cls: c for c in score(truth, a, "injected", K)}["vocabulary_mismatch"]
    assert (s.injected, s.failed, s.precision, s.recall) == (4, 4, 1.0, 1.0), s
