"""run_retriever with plain callables (core only, no optional package): scores, ties, failures, chunk ids,
golden queries from a Dataset, latency, progress and the messages of bad inputs.

The acceptance property: a Run made by ``run_retriever`` has the same ranked lists and the same metrics as the
same results written with ``write_trec_run`` and read back with ``read_run`` (trec_eval's score order).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
from retrievers_testing import DEMO, ROOT, round_trip

from diagnose.data import DataError, Dataset, Qrels, Queries, Run, ValidationReport
from diagnose.io import load_dataset
from diagnose.metrics import evaluate
from diagnose.retrievers import run_retriever


def test_import_does_not_load_optional_or_heavy_packages():
    code = (
        "import sys, diagnose.retrievers\n"
        "heavy = {'langchain_core', 'llama_index', 'chromadb', 'torch'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_callable_without_scores_gets_negative_ranks_and_str_ids(tmp_path):
    run = run_retriever(lambda text: [7, "d2", 3], {"q1": "anything"}, name="ids")
    # ids -> str; no scores -> score = -rank, so score-descending order = the retriever's order
    assert run.df["doc_id"].tolist() == ["7", "d2", "3"]
    assert run.df["score"].tolist() == [-1.0, -2.0, -3.0]
    assert run.df["rank"].tolist() == [1, 2, 3]
    assert round_trip(run, tmp_path).ranked_lists() == {"q1": ["7", "d2", "3"]}


def test_tied_and_out_of_order_scores_keep_the_retriever_order_through_a_trec_file(tmp_path):
    results = [("b", 2.0), ("c", 2.0), ("a", 2.0), ("z", 1.0), ("y", 3.0), ("x", 0.5)]
    naive = Run.from_ranked_lists("naive", {"q1": results})
    # the hazard: written as is, trec_eval re-orders ties by doc id descending and puts y (3.0) first
    assert round_trip(naive, tmp_path).ranked_lists()["q1"] == ["y", "c", "b", "a", "z", "x"]

    report = ValidationReport()
    run = run_retriever(lambda text: results, {"q1": "t"}, name="ties", report=report)
    assert run.ranked_lists() == {"q1": ["b", "c", "a", "z", "y", "x"]}
    s32 = run.df["score"].to_numpy().astype(np.float32)
    assert (np.diff(s32) < 0).all()  # strictly decreasing as trec_eval compares them
    # b keeps 2.0; c, a are 1 and 2 float32 ulps below; z keeps 1.0; y (3.0 > 1.0) is pulled to 1 ulp below 1.0
    one_below = np.nextafter(np.float32(2.0), np.float32(-np.inf))
    assert s32[1] == one_below and s32[2] == np.nextafter(one_below, np.float32(-np.inf))
    assert run.df["score"].iloc[3] == 1.0 and s32[4] == np.nextafter(np.float32(1.0), np.float32(-np.inf))
    assert run.df["score"].iloc[5] == 0.5
    assert round_trip(run, tmp_path).ranked_lists() == run.ranked_lists()
    assert report.by_code("retriever_scores_adjusted")[0].count == 1


def test_some_missing_scores_fall_back_to_negative_ranks():
    report = ValidationReport()
    run = run_retriever(lambda t: [("a", 0.9), ("b", None), ("c", float("nan"))], {"q1": "t"}, report=report)
    assert run.df["score"].tolist() == [-1.0, -2.0, -3.0]
    assert report.by_code("retriever_scores_replaced")[0].count == 1


def test_a_query_that_raises_is_counted_and_the_others_still_run():
    def retrieve(text: str) -> list[tuple[str, float]]:
        if text == "bad query":
            raise RuntimeError("index shard 3 offline")
        return [("d1", 0.5), ("d2", 0.25)]

    queries = {"q1": "good", "q2": "bad query", "q3": "also good"}
    report = ValidationReport()
    run = run_retriever(retrieve, queries, report=report, concurrency=2)
    assert run.query_ids() == ["q1", "q3"]
    [problem] = report.by_code("retriever_error")
    assert problem.count == 1 and problem.severity == "error"
    assert problem.examples == ("q2: RuntimeError: index shard 3 offline",)
    assert run.errors == {"q2": "RuntimeError: index shard 3 offline"}
    assert set(run.latency_ms) == {"q1", "q3"}
    # the failed query is not dropped from the evaluation: it scores 0 like trec_eval -c
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["d1", "d1", "d2"], "relevance": [1, 1, 1]})
    )
    per_query = evaluate(qrels, run, ["mrr"]).per_query["mrr"]
    assert per_query.to_dict() == {"q1": 1.0, "q2": 0.0, "q3": 0.5}


def test_every_query_failing_raises_with_the_first_error():
    def broken(text: str) -> list[str]:
        raise ConnectionError("vector db at localhost:6333 refused")

    with pytest.raises(DataError, match=r"every one of the 2 queries.*'q1'.*ConnectionError: vector db"):
        run_retriever(broken, {"q1": "a", "q2": "b"}, concurrency=1)


def test_chunk_ids_collapse_with_a_callable_mapping():
    chunks = [("A#0", 0.9), ("B#0", 0.8), ("A#1", 0.95), ("C#2", 0.7), ("B#1", 0.85)]
    report = ValidationReport()
    run = run_retriever(lambda t: chunks, {"q1": "t"}, chunk_to_doc=lambda c: c.split("#")[0], report=report)
    # A: first at rank 1, best score max(0.9, 0.95) = 0.95; B: rank 2, max(0.8, 0.85) = 0.85; C: rank 3, 0.7
    assert list(run.df[["doc_id", "score", "rank"]].itertuples(index=False, name=None)) == [
        ("A", 0.95, 1),
        ("B", 0.85, 2),
        ("C", 0.7, 3),
    ]
    assert report.by_code("retriever_chunks_collapsed")[0].count == 2  # A#1 and B#1 merged
    # depth applies after collapsing: 2 documents, not 2 chunks
    short = run_retriever(lambda t: chunks, {"q1": "t"}, chunk_to_doc=lambda c: c.split("#")[0], depth=2)
    assert short.ranked_lists() == {"q1": ["A", "B"]}


def test_chunk_to_doc_none_keeps_ids_and_counts_repeats():
    report = ValidationReport()
    results = [("A", 0.9), ("B", 0.8), ("A", 0.95)]
    run = run_retriever(lambda t: results, {"q1": "t"}, chunk_to_doc=None, report=report)
    # first occurrence kept with its own score (0.9), the repeat counted; "max" would have given A 0.95
    assert list(run.df[["doc_id", "score"]].itertuples(index=False, name=None)) == [("A", 0.9), ("B", 0.8)]
    assert report.by_code("retriever_duplicate_ids")[0].examples == ("q1: 1",)
    merged = run_retriever(lambda t: results, {"q1": "t"})
    assert merged.df["score"].tolist() == [0.95, 0.8]


def test_dataset_input_runs_the_golden_queries_with_a_text(tmp_path):
    ds = load_dataset(data_dir=DEMO)
    golden = ds.qrels.queries_with_relevant()
    dropped = golden[0]
    queries = Queries(ds.queries.df[ds.queries.df["query_id"] != dropped].reset_index(drop=True))
    partial = Dataset(qrels=ds.qrels, corpus=ds.corpus, queries=queries)
    report = ValidationReport()
    seen: list[str] = []
    lock = threading.Lock()

    def record(text: str) -> list[str]:
        with lock:
            seen.append(text)
        return ["hr-0001"]

    run = run_retriever(record, partial, report=report)
    assert run.query_ids() == golden[1:]  # the golden order, minus the query without a text
    assert sorted(seen) == sorted(queries.text_of()[q] for q in golden[1:])
    assert report.by_code("retriever_query_without_text")[0].examples == (dropped,)


def test_latency_is_per_query_not_a_share_of_the_batch():
    in_flight, peak = 0, 0
    lock = threading.Lock()

    def slow(text: str) -> list[str]:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return ["d1"]

    queries = {f"q{i}": f"text {i}" for i in range(8)}
    run = run_retriever(slow, queries, concurrency=2)
    assert peak <= 2
    # each query slept 50 ms: its own latency is >= 50 ms (a batch time divided by 8 would be ~25 ms)
    assert set(run.latency_ms) == set(queries)
    assert min(run.latency_ms.values()) >= 50.0


def test_progress_writes_nothing_when_stderr_is_not_a_terminal(capfd):
    run_retriever(lambda t: ["d1"], {"q1": "a", "q2": "b"}, progress=True)
    assert capfd.readouterr().err == ""


def test_bad_inputs_say_what_to_pass():
    with pytest.raises(DataError, match="not a retriever"):
        run_retriever(42, {"q1": "a"})
    with pytest.raises(DataError, match="no query to run"):
        run_retriever(lambda t: [], {})
    with pytest.raises(DataError, match=r"query 'q1' has text None"):
        run_retriever(lambda t: [], {"q1": None})
    with pytest.raises(DataError, match=r"returned a str for query 'q1'"):
        run_retriever(lambda t: "d1 d2", {"q1": "a"})
    with pytest.raises(DataError, match="chunk_to_doc"):
        run_retriever(lambda t: [], {"q1": "a"}, chunk_to_doc="mean")
    with pytest.raises(DataError, match="depth"):
        run_retriever(lambda t: [], {"q1": "a"}, depth=0)
