"""Span-based context precision and recall in ``diagnose evaluate``'s report (diagnose.report.context): the JSON
block ``context`` and the text table are ``Analysis.context`` at each k, present only when the golden set has
located spans; over a chunk corpus with offsets the pieces are the retrieved chunks, where they lie in their
documents (hand arithmetic on a tiny corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_testing import DEMO, golden_examples

import diagnose
from diagnose.cli import main

RUNS = [DEMO / "runs" / "ann_minilm.trec", DEMO / "runs" / "bm25_langchain.trec"]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demo_golden(tmp_path_factory) -> Path:
    """The demo golden set of reference contexts (tests/golden_testing.py) as plain JSONL: the demo's query ids, so
    the demo runs score against it."""
    examples, _, _ = golden_examples()
    return _write_jsonl(tmp_path_factory.mktemp("golden") / "golden.jsonl", examples)


def _evaluate_json(capsys, *args: str) -> dict:
    code = main(["evaluate", *args, "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_evaluate_reports_the_analysis_context_at_every_k(demo_golden, capsys):
    runs = [a for r in RUNS for a in ("--run", str(r))]
    corpus = str(DEMO / "corpus.jsonl")
    got = _evaluate_json(
        capsys, "--corpus", corpus, "--qrels", str(demo_golden), *runs, "--k", "5,10", "--per-query"
    )
    ds = diagnose.load(corpus=DEMO / "corpus.jsonl", qrels=demo_golden, runs=RUNS)
    a = diagnose.Analysis(ds, ks=(5, 10))
    ctx = got["context"]
    assert ctx["level"] == "document" and ctx["k"] == [5, 10]
    # the golden set's two questions whose contexts are in no document (golden_testing.ABSENT)
    assert ctx["unmatched_queries"] == ["qx1", "qx2"]
    assert set(ctx["runs"]) == {"ann_minilm", "bm25_langchain"}
    for name, entry in ctx["runs"].items():
        for k in (5, 10):
            want = a.context(name, k)
            for col, value in want.aggregate.items():
                assert entry["aggregate"][col] == pytest.approx(value), (name, col)
            assert entry["n_queries"] == len(want.per_query)
            for q, row in want.per_query.iterrows():
                for col, value in row.items():
                    assert entry["per_query"][q][col] == pytest.approx(value), (name, q, col)
    # the notebook's dict is the same document (Analysis.evaluation_report builds both)
    assert a.to_dict(per_query=True)["context"] == ctx
    # a real measure, not zeros: some of the text sent is reference text, and more k covers more of it
    agg = ctx["runs"]["bm25_langchain"]["aggregate"]
    assert 0 < agg["context_precision@5"] < 1 and agg["context_recall@10"] >= agg["context_recall@5"] > 0


def test_text_report_has_the_context_table(demo_golden, capsys):
    args = ["--corpus", str(DEMO / "corpus.jsonl"), "--qrels", str(demo_golden), "--run", str(RUNS[0])]
    assert main(["evaluate", *args, "--k", "10", "--per-query"]) == 0
    out = capsys.readouterr().out
    assert "Context precision and recall from the reference spans (each retrieved document sent whole" in out
    value = diagnose.Analysis(diagnose.load(corpus=DEMO / "corpus.jsonl", qrels=demo_golden, runs=RUNS[:1]))
    assert f"{value.context('ann_minilm', 10).aggregate['context_recall@10']:.4f}" in out
    assert "context per query: ann_minilm" in out and "2 golden queries without a located reference" in out


def test_without_spans_the_report_says_nothing_of_context(capsys):
    args = ["--qrels", str(DEMO / "qrels" / "test.tsv"), "--run", str(RUNS[0]), "--per-query"]
    got = _evaluate_json(capsys, "--corpus", str(DEMO / "corpus.jsonl"), *args)
    assert "context" not in got
    assert not any("context_" in m for entry in got["runs"].values() for m in entry["aggregate"])
    assert main(["evaluate", "--corpus", str(DEMO / "corpus.jsonl"), *args]) == 0
    assert "context" not in capsys.readouterr().out.lower()


# one document cut into three chunks with offsets (the same as tests/test_chunks.py):
#   d1#0 = text[0:29]  = "Filler words here. Alpha beta"        5 tokens
#   d1#1 = text[30:65] = "gamma delta. More filler text here."  6 tokens
#   d1#2 = text[66:82] = "Omega sigma tau."                     3 tokens
TEXT = "Filler words here. Alpha beta gamma delta. More filler text here. Omega sigma tau."
CHUNKS = [("d1#0", 0, 29), ("d1#1", 30, 65), ("d1#2", 66, 82)]
OTHER = "Zeta eta theta iota kappa lambda."  # d2#0, the whole of d2: 6 tokens


def _tiny_files(tmp_path: Path) -> list[str]:
    rows = [
        {"_id": c, "text": TEXT[s:e], "metadata": {"parent": "d1", "start": s, "end": e}}
        for c, s, e in CHUNKS
    ]
    rows.append({"_id": "d2#0", "text": OTHER, "metadata": {"parent": "d2", "start": 0, "end": len(OTHER)}})
    corpus = _write_jsonl(tmp_path / "chunks.jsonl", rows)
    contexts = {"q1": "gamma delta", "q2": "Alpha beta gamma delta"}
    golden = _write_jsonl(
        tmp_path / "golden.jsonl",
        [{"query_id": q, "query": t, "reference_contexts": [t]} for q, t in contexts.items()],
    )
    run = {"q1": ["d1#1", "d2#0"], "q2": ["d1#0", "d1#1"]}
    lines = [f"{q} Q0 {d} {r} {10 - r} x\n" for q, docs in run.items() for r, d in enumerate(docs, start=1)]
    (tmp_path / "run.trec").write_text("".join(lines), encoding="utf-8")
    return [
        "--corpus",
        str(corpus),
        "--qrels",
        str(golden),
        "--parent-field",
        "parent",
        "--run",
        str(tmp_path / "run.trec"),
    ]


def test_a_chunk_corpus_sends_the_chunks_where_they_lie_in_their_documents(tmp_path, capsys):
    args = _tiny_files(tmp_path)
    got = _evaluate_json(capsys, *args, "--k", "1,2", "--per-query")
    ctx = got["context"]
    assert ctx["level"] == "chunk"
    per_query = ctx["runs"]["run"]["per_query"]
    # q1: reference "gamma delta" = d1[30:41], 2 tokens. k=1: d1#1 sent, 6 tokens, 2 inside: precision 2/6, recall
    # 2/2; k=2 adds d2#0 (6 tokens, none inside): precision 2/12
    assert [
        per_query["q1"][c] for c in ("context_precision@1", "context_recall@1", "tokens@1")
    ] == pytest.approx([1 / 3, 1.0, 6])
    assert per_query["q1"]["context_precision@2"] == pytest.approx(1 / 6)
    # q2: reference d1[19:41] "Alpha beta gamma delta", 4 tokens. k=1: d1#0 (5 tokens) holds "Alpha beta":
    # precision 2/5, recall 2/4; k=2 adds d1#1 (6 tokens, "gamma delta" inside): precision 4/11, recall 4/4
    assert [per_query["q2"][c] for c in ("context_precision@1", "context_recall@1")] == pytest.approx(
        [0.4, 0.5]
    )
    assert [per_query["q2"][c] for c in ("context_precision@2", "context_recall@2")] == pytest.approx(
        [4 / 11, 1.0]
    )
    # the mean over the two golden queries: (1/3 + 2/5) / 2
    assert ctx["runs"]["run"]["aggregate"]["context_precision@1"] == pytest.approx((1 / 3 + 0.4) / 2)
    assert main(["evaluate", *args, "--k", "1"]) == 0
    assert "each retrieved chunk, where it lies in its document" in capsys.readouterr().out
