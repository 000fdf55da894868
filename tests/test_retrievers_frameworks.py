"""Live retrievers of real frameworks -> Run: LangChain retrievers and vector stores, LlamaIndex and a vector
database (Chroma), the last three with the bundled model.

The acceptance property: a Run made by ``run_retriever`` has the same ranked lists and the same metrics as the
same results written with ``write_trec_run`` and read back with ``read_run`` (trec_eval's score order).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from retrievers_testing import DEMO, round_trip

from diagnose.data import DataError, Dataset, Qrels, Run, ValidationReport
from diagnose.io import load_dataset
from diagnose.metrics import evaluate
from diagnose.retrievers import run_retriever

METRICS = ["ndcg@10", "recall@100", "mrr"]


def _assert_same_as_file(run: Run, qrels: Qrels, tmp_path: Path) -> None:
    """The acceptance test: live Run == the Run read back from its TREC file, list by list and metric by metric."""
    back = round_trip(run, tmp_path)
    assert back.ranked_lists() == run.ranked_lists()
    live = evaluate(qrels, run, METRICS).per_query
    filed = evaluate(qrels, back, METRICS).per_query
    pd.testing.assert_frame_equal(live, filed)


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

    from diagnose.search.baselines import dense_run

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
