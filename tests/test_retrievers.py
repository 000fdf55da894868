"""Live retrievers -> Run: plain callables, LangChain, LlamaIndex and a vector database, all real components.

The acceptance property: a Run made by ``run_retriever`` has the same ranked lists and the same metrics as the
same results written with ``write_trec_run`` and read back with ``read_run`` (trec_eval's score order).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from diagnose.data import DataError, Dataset, Qrels, Queries, Run, ValidationReport
from diagnose.io import load_dataset, read_run, write_trec_run
from diagnose.metrics import evaluate
from diagnose.retrievers import load_retriever, run_retriever

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_corpus"
METRICS = ["ndcg@10", "recall@100", "mrr"]


def _round_trip(run: Run, tmp_path: Path) -> Run:
    path = tmp_path / f"{run.name}.trec"
    write_trec_run(run, path)
    return read_run(path, name=run.name)


def _assert_same_as_file(run: Run, qrels: Qrels, tmp_path: Path) -> None:
    """The acceptance test: live Run == the Run read back from its TREC file, list by list and metric by metric."""
    back = _round_trip(run, tmp_path)
    assert back.ranked_lists() == run.ranked_lists()
    live = evaluate(qrels, run, METRICS).per_query
    filed = evaluate(qrels, back, METRICS).per_query
    pd.testing.assert_frame_equal(live, filed)


# ================================================================================================ core only


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
    assert _round_trip(run, tmp_path).ranked_lists() == {"q1": ["7", "d2", "3"]}


def test_tied_and_out_of_order_scores_keep_the_retriever_order_through_a_trec_file(tmp_path):
    results = [("b", 2.0), ("c", 2.0), ("a", 2.0), ("z", 1.0), ("y", 3.0), ("x", 0.5)]
    naive = Run.from_ranked_lists("naive", {"q1": results})
    # the hazard: written as is, trec_eval re-orders ties by doc id descending and puts y (3.0) first
    assert _round_trip(naive, tmp_path).ranked_lists()["q1"] == ["y", "c", "b", "a", "z", "x"]

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
    assert _round_trip(run, tmp_path).ranked_lists() == run.ranked_lists()
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
    with pytest.raises(ValueError, match="chunk_to_doc"):
        run_retriever(lambda t: [], {"q1": "a"}, chunk_to_doc="mean")
    with pytest.raises(ValueError, match="depth"):
        run_retriever(lambda t: [], {"q1": "a"}, depth=0)


# ================================================================================================ load_retriever

MODULE = """
CALLS = []

def search(text):
    return ["d1", "d2"]

def make_retriever():
    CALLS.append(1)
    return search

def broken_factory():
    raise RuntimeError("no index at ./index")

def returns_number():
    return 42

class Store:
    def as_retriever(self, **kwargs):
        return search

store = Store()
value = 42
"""


@pytest.fixture
def rag_module(tmp_path, monkeypatch):
    name = f"rag_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    sys.modules.pop(name, None)


def test_load_retriever_object_factory_and_file_path(rag_module, tmp_path):
    search = load_retriever(f"{rag_module}:search")  # one-argument function: the retriever itself
    assert search("x") == ["d1", "d2"]
    made = load_retriever(f"{rag_module}:make_retriever")  # zero-argument factory: called once
    assert made is search and sys.modules[rag_module].CALLS == [1]
    by_path = load_retriever(f"{tmp_path / (rag_module + '.py')}:search")
    assert by_path("x") == ["d1", "d2"]
    assert run_retriever(made, {"q1": "a"}).ranked_lists() == {"q1": ["d1", "d2"]}


@pytest.mark.parametrize(
    ("attr_or_spec", "message"),
    [
        ("no_such_module_xyz:r", r"no module named 'no_such_module_xyz'.*Fix: run from the folder"),
        ("{m}:nope", r"has no attribute 'nope' \(it defines: .*make_retriever"),
        (
            "{m}:broken_factory",
            r"calling the factory broken_factory\(\) raised RuntimeError: no index at ./index",
        ),
        ("{m}:returns_number", r"returned an int, not a retriever"),
        ("{m}:value", r"value is an int, not a retriever"),
        ("{m}:store", r"looks like a vector store or an index.*as_retriever"),
        ("{m}", r"expected 'module:attr'"),
    ],
)
def test_load_retriever_errors_name_the_spec_and_the_fix(rag_module, attr_or_spec, message):
    spec = attr_or_spec.format(m=rag_module)
    with pytest.raises(DataError, match=message) as err:
        load_retriever(spec)
    assert repr(spec) in str(err.value)


# ================================================================================================ LangChain


def _langchain_fixed_retriever(results: dict[str, list[Any]]) -> Any:
    """A real LangChain BaseRetriever returning fixed Documents per query text ('fail' raises)."""
    from langchain_core.retrievers import BaseRetriever

    class Fixed(BaseRetriever):
        table: dict

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list:
            if query == "fail":
                raise ValueError("collection 'kb' does not exist")
            return self.table[query]

    return Fixed(table=results)


def test_langchain_documents_with_doc_id_metadata_collapse_and_errors_are_counted(tmp_path):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    def chunk(doc: str, i: int) -> Document:
        return Document(page_content=f"{doc} part {i}", id=f"{doc}#{i}", metadata={"doc_id": doc})

    docs = [chunk("A", 0), chunk("B", 0), chunk("A", 1), chunk("C", 0), chunk("B", 1)]
    retriever = _langchain_fixed_retriever({"t1": docs, "t2": docs[2:]})
    report = ValidationReport()
    run = run_retriever(retriever, {"q1": "t1", "q2": "fail", "q3": "t2"}, id_key="doc_id", report=report)
    # LangChain gives no scores: q1 chunks A,B,A,C,B -> A (rank 1), B (2), C (3), scores -1, -2, -3;
    # q3 chunks A,C,B -> A, C, B
    assert list(run.df[["query_id", "doc_id", "score"]].itertuples(index=False, name=None)) == [
        ("q1", "A", -1.0),
        ("q1", "B", -2.0),
        ("q1", "C", -3.0),
        ("q3", "A", -1.0),
        ("q3", "C", -2.0),
        ("q3", "B", -3.0),
    ]
    assert run.errors == {"q2": "ValueError: collection 'kb' does not exist"}
    assert report.by_code("retriever_error")[0].examples == (
        "q2: ValueError: collection 'kb' does not exist",
    )
    # latency timed per query through the batch's callbacks, for every query that returned
    assert set(run.latency_ms) == {"q1", "q3"} and all(v > 0 for v in run.latency_ms.values())
    assert not report.by_code("retriever_latency_unmeasured")
    # without id_key: Document.id (the chunk id), mapped by a callable
    by_chunk = run_retriever(retriever, {"q1": "t1"}, chunk_to_doc=lambda c: c.split("#")[0])
    assert by_chunk.ranked_lists() == {"q1": ["A", "B", "C"]}
    with pytest.raises(DataError, match=r"no metadata\['source'\].*metadata keys: doc_id"):
        run_retriever(retriever, {"q1": "t1"}, id_key="source")


def test_langchain_batch_bounds_concurrency_and_times_each_query():
    pytest.importorskip("langchain_core")
    from langchain_core.retrievers import BaseRetriever

    state = {"in_flight": 0, "peak": 0}
    lock = threading.Lock()

    class Slow(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list:
            from langchain_core.documents import Document

            with lock:
                state["in_flight"] += 1
                state["peak"] = max(state["peak"], state["in_flight"])
            time.sleep(0.05)
            with lock:
                state["in_flight"] -= 1
            return [Document(page_content=query, id=f"d-{query}")]

    run = run_retriever(Slow(), {f"q{i}": str(i) for i in range(6)}, concurrency=2)
    assert state["peak"] <= 2
    assert len(run.latency_ms) == 6 and min(run.latency_ms.values()) >= 50.0


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return load_dataset(data_dir=DEMO)


def _langchain_embeddings(embed: Any) -> Any:
    from langchain_core.embeddings import Embeddings

    class EncoderEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

    return EncoderEmbeddings()


def test_langchain_store_without_k_is_asked_for_depth_and_round_trips(demo, tmp_path):
    """InMemoryVectorStore over the demo corpus with the keyword-hash encoder (no model): as_retriever() without
    k would give LangChain's 4 results; run_retriever copies it with k=depth and leaves the user's object alone."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from diagnose.embed import KeywordEncoder

    enc = KeywordEncoder(dim=512)
    store = InMemoryVectorStore(_langchain_embeddings(enc.encode))
    store.add_documents(
        [Document(page_content=t) for t in demo.corpus.texts()], ids=[str(d) for d in demo.corpus.ids]
    )
    retriever = store.as_retriever()
    report = ValidationReport()
    run = run_retriever(retriever, demo, depth=20, name="lc-keyword", report=report)
    assert "k" not in retriever.search_kwargs
    assert report.by_code("retriever_k_set")
    assert run.df.groupby("query_id").size().max() == 20
    _assert_same_as_file(run, demo.qrels, tmp_path)


# ================================================================================================ real model


@pytest.fixture(scope="module")
def vectors(demo) -> SimpleNamespace:
    """The bundled MiniLM, every corpus and golden query text encoded once; ``embed`` looks texts up (and encodes
    any other text), so the three stores below share one encoding pass."""
    from diagnose.embed import load_encoder

    encoder = load_encoder(None)
    text_of = demo.queries.text_of()
    qids = [q for q in demo.qrels.queries_with_relevant() if q in text_of]
    doc_texts = demo.corpus.texts()
    query_texts = [text_of[q] for q in qids]
    doc_vecs = encoder.encode(doc_texts)
    query_vecs = encoder.encode(query_texts)
    cache = dict(zip(doc_texts + query_texts, np.concatenate([doc_vecs, query_vecs]), strict=True))
    lock = threading.Lock()

    def embed(texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in cache]
        if missing:
            with lock:
                cache.update(zip(missing, encoder.encode(missing), strict=True))
        return np.stack([cache[t] for t in texts])

    from diagnose.baselines import dense_run

    dense = dense_run(doc_vecs, query_vecs, list(demo.corpus.ids), qids, depth=100)
    return SimpleNamespace(
        embed=embed, doc_texts=doc_texts, doc_vecs=doc_vecs, qids=qids, dense=dense.ranked_lists()
    )


def _agreement_with_exact_dense(run: Run, dense: dict[str, list[str]], k: int = 10) -> tuple[float, float]:
    """(share of queries whose top-k list equals the exact dense top-k, mean top-k overlap)."""
    lists = run.ranked_lists()
    same = [lists[q][:k] == dense[q][:k] for q in dense]
    overlap = [len(set(lists[q][:k]) & set(dense[q][:k])) / k for q in dense]
    return float(np.mean(same)), float(np.mean(overlap))


def _check_live_run(run: Run, demo: Dataset, vectors: SimpleNamespace, tmp_path: Path) -> None:
    assert run.query_ids() == vectors.qids
    assert run.errors == {}
    assert set(run.latency_ms) == set(vectors.qids) and all(v > 0 for v in run.latency_ms.values())
    assert (run.df.groupby("query_id").size() == 100).all()
    _assert_same_as_file(run, demo.qrels, tmp_path)


@pytest.mark.real_model
def test_langchain_in_memory_vector_store(demo, vectors, tmp_path):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(_langchain_embeddings(vectors.embed))
    store.add_documents(
        [Document(page_content=t) for t in vectors.doc_texts], ids=[str(d) for d in demo.corpus.ids]
    )
    run = run_retriever(store.as_retriever(search_kwargs={"k": 100}), demo, name="langchain")
    _check_live_run(run, demo, vectors, tmp_path)
    # the same model, exact cosine in both: InMemoryVectorStore (float64) vs our dense baseline (float32);
    # they may only disagree on near-ties (measured here: identical top 10 for all 106 queries)
    same, overlap = _agreement_with_exact_dense(run, vectors.dense)
    assert same >= 0.95 and overlap >= 0.99


@pytest.mark.real_model
def test_llamaindex_vector_store_index(demo, vectors, tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from pydantic import PrivateAttr

    embed = vectors.embed

    class EncoderEmbedding(BaseEmbedding):
        _embed: Any = PrivateAttr()

        def __init__(self) -> None:
            super().__init__(model_name="bundled-minilm")
            self._embed = embed

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._embed([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._embed([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._embed(texts).tolist()

    # one node per document, node id "<doc>#0", its source document "<doc>": the run must use ref_doc_id
    nodes = [
        TextNode(
            id_=f"{d}#0", text=t, relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(d))}
        )
        for d, t in zip(demo.corpus.ids, vectors.doc_texts, strict=True)
    ]
    index = VectorStoreIndex(nodes, embed_model=EncoderEmbedding())
    report = ValidationReport()
    run = run_retriever(index.as_retriever(similarity_top_k=100), demo, name="llamaindex", report=report)
    _check_live_run(run, demo, vectors, tmp_path)
    assert set(run.df["doc_id"]) <= set(demo.corpus.ids)
    same, overlap = _agreement_with_exact_dense(run, vectors.dense)
    assert same >= 0.95 and overlap >= 0.99


@pytest.mark.real_model
def test_chromadb_with_our_own_vectors(demo, vectors, tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "demo-corpus", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    collection.add(ids=[str(d) for d in demo.corpus.ids], embeddings=vectors.doc_vecs.tolist())

    def search(text: str) -> list[tuple[str, float]]:
        hits = collection.query(
            query_embeddings=vectors.embed([text]).tolist(), n_results=100, include=["distances"]
        )
        return [(i, 1.0 - dist) for i, dist in zip(hits["ids"][0], hits["distances"][0], strict=True)]

    run = run_retriever(search, demo, name="chroma")
    _check_live_run(run, demo, vectors, tmp_path)
    # HNSW is approximate, but on 190 vectors with ef_search=100 it finds the exact top 10 (measured: all 106
    # queries; beyond rank 10 about half the lists swap near-tied neighbours, so only the top 10 is compared)
    same, overlap = _agreement_with_exact_dense(run, vectors.dense)
    assert same >= 0.95 and overlap >= 0.99
