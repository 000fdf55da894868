"""Golden sets of reference contexts (diagnose.io.golden_sets, diagnose.io.spans): every format is recognised, each
context is located in the corpus (exact, normalised, approximate, ambiguous, unmatched) and maps back to the qrels
the golden set was built from, and the mapping is written once (--write-qrels, diagnose.write_qrels).

The LlamaIndex fixtures in tests/fixtures/golden were written by the real classes' own ``save_json``
(make_golden.py there); the demo golden set is built by tests/golden_testing.py from the demo's qrels.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import pandas as pd
import pytest
from golden_testing import DEMO, demo_pairs, golden_examples
from io_testing import FIX, write

import diagnose
from diagnose.cli import main
from diagnose.data import DataError, ValidationReport
from diagnose.io import read_qrels
from diagnose.io.golden_sets import golden_kind
from diagnose.io.spans import APPROX_THRESHOLD, UNMATCHED_PREFIX, normalise_with_offsets
from diagnose.runtime.extras import MissingExtra

GOLDEN = FIX / "golden"
CORPUS = DEMO / "corpus.jsonl"


def _pairs(ds) -> set[tuple[str, str]]:
    rel = ds.qrels.relevant()
    return {
        (q, d)
        for q, d in zip(rel["query_id"], rel["doc_id"], strict=True)
        if not d.startswith(UNMATCHED_PREFIX)
    }


def _expected_by_position():
    """The demo golden set's expected pairs and kinds with ids q1, q2, ... by position (a LabelledRagDataset has
    no query ids)."""
    examples, kinds, expected = golden_examples()
    rename = {e["query_id"]: f"q{i}" for i, e in enumerate(examples, start=1)}
    pairs = {(rename[q], d) for q, d in expected}
    return examples, rename, kinds, pairs


def test_labelled_rag_dataset_maps_back_to_the_qrels_it_was_built_from():
    examples, rename, kinds, expected = _expected_by_position()
    assert golden_kind(GOLDEN / "labelled_rag_demo.json") == "labelled_rag"
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    # every relevant pair of the demo qrels (grade > 0), plus the duplicates that hold the same sentence
    assert {(q, d) for q, d in demo_pairs()} <= {(q, d) for q, d in golden_examples()[2]}
    assert _pairs(ds) == expected
    # the queries come from the file, ids by position
    assert ds.queries.text_of()["q1"] == examples[0]["query"]
    # the counts, one per reference context; a sentence held by several documents is found exactly (ambiguous)
    want = Counter("exact" if k == "ambiguous" else k for k in kinds.values())
    stats = ds.report.stats
    for kind in ("exact", "normalised", "approximate", "unmatched"):
        assert stats[f"references_{kind}"] == want[kind], kind
    assert stats["references_ambiguous"] == sum(k == "ambiguous" for k in kinds.values())
    assert want["approximate"] > 0 and want["normalised"] > 0 and want["unmatched"] == 2
    assert {p.code for p in ds.report} >= {
        "reference_matching",
        "approximate_reference",
        "ambiguous_reference",
        "unmatched_reference",
    }
    # each span's kind is the one the builder made
    got = {f"{s.query_id}#{s.reference}": s.match for s in ds.qrels.spans}
    assert got == {
        f"{rename[k.split('#')[0]]}#{k.split('#')[1]}": ("exact" if v == "ambiguous" else v)
        for k, v in kinds.items()
    }


def test_unmatched_context_keeps_its_query_golden_and_says_why():
    examples, rename, _, _ = _expected_by_position()
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    absent = rename["qx1"]
    assert ds.qrels.as_dict()[absent] == {f"{UNMATCHED_PREFIX}{absent}:0": 1}
    assert absent in ds.qrels.queries_with_relevant()
    (problem,) = ds.report.by_code("unmatched_reference")
    assert problem.count == 2 and problem.examples[0].startswith(f"{absent}#0: ")


def test_spans_point_at_the_text_that_was_matched():
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    texts = dict(zip(ds.corpus.df["doc_id"], ds.corpus.df["text"], strict=True))
    refs = {f"q{i}": e["reference_contexts"] for i, e in enumerate(golden_examples()[0], start=1)}
    for s in ds.qrels.spans:
        ref = refs[s.query_id][s.reference]
        if s.match == "exact":
            assert texts[s.doc_id][s.start : s.end] == ref
        elif s.match == "normalised":  # upper-cased, spaces doubled
            assert " ".join(texts[s.doc_id][s.start : s.end].upper().split()) == " ".join(ref.split())
        elif s.match == "approximate":
            assert s.score >= APPROX_THRESHOLD and s.end - s.start >= len(ref) - 5


def test_normalise_with_offsets_maps_back_to_the_original():
    text = "Ａpple  PIE\n\tﬁne"
    norm, starts, ends = normalise_with_offsets(text)
    # NFKC: "Ａ" -> "a" (same length), "ﬁ" -> "fi" (longer: both characters map to the whole token)
    assert norm == "apple pie fine"
    pos = norm.find("pie fine")
    assert text[starts[pos] : ends[pos + len("pie fine") - 1]] == "PIE\n\tﬁne"


def test_embedding_qa_dataset_brings_queries_corpus_and_qrels():
    path = GOLDEN / "embedding_qa_demo.json"
    assert golden_kind(path) == "embedding_qa"
    ds = diagnose.load(qrels=path)
    raw = json.loads(path.read_text())
    assert len(ds.corpus) == len(raw["corpus"]) and len(ds.queries) == len(raw["queries"])
    assert ds.qrels.as_dict() == {q: dict.fromkeys(docs, 1) for q, docs in raw["relevant_docs"].items()}
    # over the demo corpus the node ids are corpus ids: used as they are, no span search
    ds2 = diagnose.load(corpus=CORPUS, qrels=path)
    assert ds2.qrels.as_dict() == ds.qrels.as_dict() and ds2.qrels.spans == ()
    # read_qrels alone reads its judgements
    assert read_qrels(path).as_dict() == ds.qrels.as_dict()


def test_embedding_qa_with_other_ids_is_mapped_through_the_texts(tmp_path):
    raw = json.loads((GOLDEN / "embedding_qa_demo.json").read_text())
    renamed = {f"node-{i}": d for i, d in enumerate(raw["corpus"])}
    back = {d: n for n, d in renamed.items()}
    raw["corpus"] = {n: raw["corpus"][d] for n, d in renamed.items()}
    raw["relevant_docs"] = {q: [back[d] for d in docs] for q, docs in raw["relevant_docs"].items()}
    path = write(tmp_path / "qa.json", json.dumps(raw))
    ds = diagnose.load(corpus=CORPUS, qrels=path)
    assert ds.qrels.as_dict() == {
        q: {renamed[n]: 1 for n in docs} for q, docs in raw["relevant_docs"].items()
    }


def _ragas_frame(n: int = 10) -> tuple[pd.DataFrame, set[tuple[str, str]]]:
    examples, _, expected = golden_examples()
    rows = examples[:n]
    frame = pd.DataFrame(
        {
            "user_input": [e["query"] for e in rows],
            "reference_contexts": [e["reference_contexts"] for e in rows],
            "reference": [e["reference_answer"] for e in rows],
        }
    )
    rename = {e["query_id"]: f"q{i}" for i, e in enumerate(rows, start=1)}
    return frame, {(rename[q], d) for q, d in expected if q in rename}


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
def test_ragas_test_sets_in_every_file_format(tmp_path, suffix):
    # what RAGAS' EvaluationDataset.to_csv / to_parquet / to_jsonl write: its pandas frame, the contexts a list
    # (in CSV the list's text)
    frame, expected = _ragas_frame()
    path = tmp_path / f"testset.{suffix}"
    if suffix == "csv":
        frame.to_csv(path, index=False)
    elif suffix == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    assert golden_kind(path) == "ragas"
    ds = diagnose.load(corpus=CORPUS, qrels=path)
    assert _pairs(ds) == expected
    assert ds.queries.text_of()["q1"] == frame["user_input"][0]


def test_plain_jsonl_keeps_its_query_ids(tmp_path):
    examples, _, expected = golden_examples()
    path = write(tmp_path / "golden.jsonl", "".join(json.dumps(e) + "\n" for e in examples))
    assert golden_kind(path) == "jsonl"
    ds = diagnose.load(corpus=CORPUS, qrels=path)
    assert _pairs(ds) == expected


def test_reference_contexts_without_a_corpus_say_how_to_fix():
    with pytest.raises(DataError, match="pass the corpus too") as e:
        read_qrels(GOLDEN / "labelled_rag_demo.json")
    assert e.value.param == "corpus"
    with pytest.raises(DataError, match="pass the corpus too"):
        diagnose.load(qrels=GOLDEN / "labelled_rag_demo.json")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query_id": "a", "query": "x", "reference_contexts": "oops"}', "not a list of strings"),
        ('{"query_id": "a", "query": "x", "reference_contexts": [1, 2]}', "not a list of strings"),
        ('{"query_id": "a", "reference_contexts": ["x y"]}', "no question text"),
        (
            '{"query_id": "a", "query": "x", "reference_contexts": ["x y"]}\n{"query_id": "a", "query": "y", '
            '"reference_contexts": ["x y"]}',
            "used twice",
        ),
    ],
)
def test_bad_golden_jsonl_names_the_line_and_the_fix(tmp_path, line, message):
    path = write(tmp_path / "golden.jsonl", line + "\n")
    with pytest.raises(DataError, match=message) as e:
        diagnose.load(corpus=CORPUS, qrels=path)
    assert str(path) in str(e.value) and "Fix:" in str(e.value)


def test_a_question_without_contexts_is_counted(tmp_path):
    path = write(
        tmp_path / "golden.jsonl",
        '{"query_id": "a", "query": "x", "reference_contexts": []}\n'
        '{"query_id": "b", "query": "y", "reference_contexts": ["Zzz unknown words never seen anywhere"]}\n',
    )
    report = ValidationReport()
    ds = diagnose.load(corpus=CORPUS, qrels=path)
    report = ds.report
    assert report.by_code("query_without_reference")[0].examples == ("a",)
    assert report.stats["references_unmatched"] == 1


def test_write_qrels_round_trip(tmp_path):
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    spans_path = diagnose.write_qrels(ds, tmp_path / "mapped.tsv")
    assert spans_path == tmp_path / "mapped.spans.jsonl"
    assert read_qrels(tmp_path / "mapped.tsv").as_dict() == ds.qrels.as_dict()
    lines = [json.loads(x) for x in spans_path.read_text().splitlines()]
    assert len(lines) == len(ds.qrels.spans)
    assert set(lines[0]) == {"query_id", "reference", "doc_id", "start", "end", "match", "score"}


def test_written_spans_are_read_back_without_matching_again(tmp_path):
    """``--qrels F.spans.jsonl`` (the spans --write-qrels wrote) gives the same judgements and spans as the golden
    set they were mapped from, without locating the contexts again; the report says they were read as written."""
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    spans_path = diagnose.write_qrels(ds, tmp_path / "mapped.tsv")
    assert golden_kind(spans_path) == "spans"
    again = diagnose.load(corpus=CORPUS, qrels=spans_path)
    assert again.qrels.spans == ds.qrels.spans
    assert again.qrels.as_dict() == ds.qrels.as_dict()
    assert "reference_spans_read" in {p.code for p in again.report.problems}
    assert "reference_matching" not in {p.code for p in again.report.problems}


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"query_id": "q1", "reference": 0, "doc_id": "nope", "start": 0, "end": 5, "match": "exact"}',
         "'nope', which is not in the corpus"),
        ('{"query_id": "q1", "reference": 0, "doc_id": "hr-0001", "start": 0, "end": 999999, "match": "exact"}',
         "the span ends at 999,999"),
        ('{"query_id": "q1", "reference": 0, "doc_id": "hr-0001", "start": 9, "end": 2, "match": "exact"}',
         ":1: not a span (start 9 and end 2"),
        ('{"query_id": "q1", "reference": 0, "doc_id": null, "start": 0, "end": 2, "match": "unmatched"}',
         ":1: not a span (doc_id, start and end are all null"),
        # JSON true is a Python bool (an int): refused, not read as offset 1
        ('{"query_id": "q1", "reference": 0, "doc_id": "hr-0001", "start": true, "end": 2, "match": "exact"}',
         ":1: not a span (start True and end 2"),
    ],
)  # fmt: skip
def test_spans_that_do_not_fit_the_corpus_name_the_line_or_document(tmp_path, line, message):
    path = write(tmp_path / "s.spans.jsonl", line + "\n")
    with pytest.raises(DataError) as e:
        diagnose.load(corpus=CORPUS, qrels=path)
    assert message in str(e.value) and "--write-qrels" in str(e.value)


def test_cli_write_qrels_and_spans(tmp_path, capsys):
    out, spans = tmp_path / "q.tsv", tmp_path / "s.jsonl"
    code = main(
        [
            "evaluate",
            "--corpus",
            str(CORPUS),
            "--qrels",
            str(GOLDEN / "labelled_rag_demo.json"),
            "--run",
            str(DEMO / "runs" / "ann_minilm.trec"),
            "--write-qrels",
            str(out),
            "--write-spans",
            str(spans),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0 and "Wrote" in err
    ds = diagnose.load(corpus=CORPUS, qrels=GOLDEN / "labelled_rag_demo.json")
    assert read_qrels(out).as_dict() == ds.qrels.as_dict()
    assert len(spans.read_text().splitlines()) == len(ds.qrels.spans)


def test_write_spans_without_write_qrels_is_refused(capsys):
    code = main(
        [
            "evaluate",
            "--qrels",
            str(DEMO / "qrels" / "test.tsv"),
            "--run",
            str(DEMO / "runs" / "ann_minilm.trec"),
            "--write-spans",
            "x.jsonl",
        ]
    )
    assert code == 2 and "--write-qrels" in capsys.readouterr().err


def test_missing_rapidfuzz_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    examples, kinds, _ = golden_examples()
    approx = [
        (e, i)
        for e in examples
        for i, _ in enumerate(e["reference_contexts"])
        if kinds[f"{e['query_id']}#{i}"] == "approximate"
    ]
    e, _ = approx[0]
    path = write(tmp_path / "golden.jsonl", json.dumps(e) + "\n")
    with pytest.raises(MissingExtra, match=r"\[rag\]"):
        diagnose.load(corpus=CORPUS, qrels=path)


def test_the_real_llamaindex_classes_write_what_is_read(tmp_path):
    """With a llama-index-core that still ships LabelledRagDataset (0.12; skipped with 0.14, which dropped it)."""
    rag = pytest.importorskip("llama_index.core.llama_dataset")
    examples, _, expected = golden_examples()
    ds_obj = rag.LabelledRagDataset(
        examples=[
            rag.LabelledRagDataExample(
                query=e["query"],
                reference_contexts=e["reference_contexts"],
                reference_answer=e["reference_answer"],
            )
            for e in examples
        ]
    )
    ds_obj.save_json(str(tmp_path / "rag.json"))
    ds = diagnose.load(corpus=CORPUS, qrels=tmp_path / "rag.json")
    rename = {e["query_id"]: f"q{i}" for i, e in enumerate(examples, start=1)}
    assert _pairs(ds) == {(rename[q], d) for q, d in expected}


def test_a_golden_set_beside_a_beir_folder_brings_its_own_queries():
    """--data DIR --qrels GOLDEN: the corpus from the folder, the questions from the golden set (the folder's
    queries have other ids); an explicit queries file still wins."""
    examples = golden_examples()[0]
    ds = diagnose.load(DEMO, qrels=GOLDEN / "labelled_rag_demo.json")
    assert len(ds.queries) == len(examples) and ds.queries.text_of()["q1"] == examples[0]["query"]
    ds2 = diagnose.load(DEMO, qrels=GOLDEN / "labelled_rag_demo.json", queries=DEMO / "queries.jsonl")
    assert "q001" in ds2.queries.text_of()
