"""The ANN frontier (diagnose.whatif.ann, Analysis.ann_frontier, `diagnose ann`): faiss indexes against exact search and the
golden set. Unit tests use the fake keyword encoder on the demo or random unit vectors; one test runs the bundled
model on the demo through the CLI. No wall-clock assertions: latencies are only checked to be measured (> 0)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("faiss")

import diagnose  # noqa: E402
from diagnose.analysis import Analysis  # noqa: E402
from diagnose.cli import main  # noqa: E402
from diagnose.data import DataError, Qrels  # noqa: E402
from diagnose.embed import KeywordEncoder  # noqa: E402
from diagnose.metrics import evaluate  # noqa: E402
from diagnose.search.space import VectorSpace  # noqa: E402
from diagnose.whatif.ann import AnnSetting, ann_frontier, default_settings, ivf_nlist  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
RUN = DEMO / "runs" / "ann_minilm.trec"
K = 10
# a weak graph (few links, a short build beam) so that efSearch matters on small data
WEAK = [
    AnnSetting("hnsw", {"M": 4, "efConstruction": 8, "efSearch": ef}) for ef in (1, 8, 16, 32, 64, 128, 512)
]


@pytest.fixture(scope="module")
def demo():
    return Analysis(diagnose.load(DEMO), {"ann": RUN}, encoder=KeywordEncoder(), baselines=("dense",))


def _random_space(n_docs: int = 2000, n_queries: int = 60, dim: int = 32, seed: int = 0):
    """Random unit vectors; each query's one relevant document is a random document (qrels need not be easy)."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(n_docs, dim)).astype(np.float32)
    queries = rng.normal(size=(n_queries, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    d_ids, q_ids = [f"d{i}" for i in range(n_docs)], [f"q{i}" for i in range(n_queries)]
    space = VectorSpace.from_arrays("random", d_ids, docs, q_ids, queries)
    rel = rng.integers(0, n_docs, size=n_queries)
    qrels = Qrels(pd.DataFrame({"query_id": q_ids, "doc_id": [d_ids[j] for j in rel], "relevance": 1}))
    return space, qrels


def test_the_exact_point_is_the_dense_baseline(demo):
    f = demo.ann_frontier(k=K)
    base = demo.metrics([f"hit_rate@{K}", f"recall@{K}", f"ndcg@{K}"]).loc["dense"]
    for name, value in base.items():
        assert f.exact.metrics[name] == pytest.approx(value, abs=1e-12)
    assert f.exact.recall_vs_exact == 1.0  # exact search returns exact search's top k
    assert f.exact.latency_p50_ms > 0 and f.exact.memory_mb > 0


def test_the_default_grid_is_measured_and_the_front_is_pareto(demo):
    f = demo.ann_frontier(k=K)
    n_docs = len(demo.space.doc_ids)
    # 2 M x 2 efConstruction x 5 efSearch = 20 HNSW settings; IVF nlist = min(round(4 sqrt(190)) = 55, 190 // 39 = 4)
    # = 4, nprobe in {1, 4, 16, 64} clipped to nlist = {1, 4}
    assert ivf_nlist(n_docs) == 4
    assert len(f.settings) == len(default_settings(n_docs)) == 22
    points = [f.exact, *f.settings]
    nd = f"ndcg@{K}"
    for p in points:
        assert 0.0 <= p.recall_vs_exact <= 1.0 and p.latency_p95_ms >= p.latency_p50_ms > 0
        dominated = any(o.latency_p50_ms < p.latency_p50_ms and o.metrics[nd] > p.metrics[nd] for o in points)
        assert p.pareto == (not dominated)
    assert any(p.pareto for p in points)  # the fastest point is never dominated


def test_recall_against_exact_does_not_decrease_with_ef_search():
    space, qrels = _random_space()
    f = ann_frontier(qrels, space, k=K, settings=WEAK)
    recalls = [p.recall_vs_exact for p in f.settings]
    assert recalls == sorted(recalls), recalls
    # the weak graph at efSearch 1 misses some of exact search's top 10 on random 32-d vectors; efSearch 512 over
    # 2000 documents nearly scans them
    assert recalls[0] < recalls[-1]
    assert all(p.build_s == f.settings[0].build_s for p in f.settings)  # one build for every efSearch


def _low_ef_run(demo):
    """The run a weak HNSW index serves at efSearch 1, as a user run of a new analysis."""
    f = demo.ann_frontier(k=K, settings=WEAK)
    low = f.settings[0].run
    assert f.settings[0].recall_vs_exact < 1.0  # it misses some of exact search's top k
    return Analysis(demo.dataset, {"hnsw": low}, encoder=KeywordEncoder(), baselines=("dense",),
                    kinds={"hnsw": "dense"})  # fmt: skip


def test_the_frontier_names_the_setting_that_recovers_a_low_ef_search_run(demo):
    a = _low_ef_run(demo)
    gaps = {x.query_id for x in a.diagnosis("hnsw").failures if x.cls == "index_gap"}
    assert gaps, (
        "the efSearch=1 run has index_gap failures (relevant documents exact search ranks in its top k)"
    )
    # the weak graph alone, even at efSearch 512, cannot reach some documents on the keyword encoder's sparse
    # vectors: the grid needs the default settings too (IVF with nprobe = nlist scans every list: exact)
    grid = WEAK + default_settings(len(a.space.doc_ids))
    f = a.ann_frontier("hnsw", k=K, settings=grid)
    rec = f.recovers_index_gap
    assert rec.run == "hnsw" and set(rec.failures) == gaps
    assert rec.recovers == "all" and set(rec.recovered) == gaps
    assert rec.setting is not None and rec.setting != WEAK[0]  # the run's own setting does not recover them
    # the cheapest: no setting faster at p50 recovers them all
    chosen = grid.index(rec.setting)
    assert rec.latency_p50_ms == f.settings[chosen].latency_p50_ms
    hit = f"hit_rate@{K}"
    for p in f.settings:
        if p.latency_p50_ms < rec.latency_p50_ms:
            per_query = evaluate(a.dataset.qrels, p.run, [hit]).per_query[hit]
            assert sum(per_query.get(q, 0.0) > 0 for q in gaps) < len(gaps)
    assert 0.0 < rec.p_value <= 1.0 and rec.mean_diff > 0.0


def test_without_a_run_the_recovery_says_so(demo):
    rec = demo.ann_frontier(k=K, settings=WEAK[:1]).recovers_index_gap
    assert rec.setting is None and rec.run is None and "no run" in rec.note


def test_a_bad_setting_names_the_parameter():
    space, qrels = _random_space(n_docs=50, n_queries=3)
    with pytest.raises(DataError) as e:
        ann_frontier(
            qrels, space, k=K, settings=[AnnSetting("hnsw", {"M": 0, "efConstruction": 8, "efSearch": 8})]
        )
    assert e.value.param == "settings"
    with pytest.raises(DataError):
        ann_frontier(qrels, space, k=K, settings=[AnnSetting("ivf_flat", {"nlist": 51, "nprobe": 1})])


@pytest.mark.real_model
def test_cli_json_shape_with_the_bundled_model(capsys, model_cache):
    """`diagnose ann --format json` with the real bundled model on the demo (its documents). The run's shared
    model cache (conftest), not the user's: with the user's cache warm the test loaded no model, with it cold (a
    new machine) it loaded the bundled model, unmarked."""
    argv = ["ann", "--data", str(DEMO), "--run", str(RUN), "--k", "5", "--format", "json"]
    code = main([*argv, "--cache-dir", str(model_cache)])
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out)
    assert list(payload) == ["exact", "settings", "recovers_index_gap", "warnings"]
    keys = ["index", "params", "recall_vs_exact", "hit_rate@5", "recall@5", "ndcg@5", "latency_p50_ms",
            "latency_p95_ms", "build_s", "memory_mb", "pareto"]  # fmt: skip
    assert list(payload["exact"]) == keys and payload["exact"]["index"] == "exact"
    assert payload["settings"] and all(list(s) == keys for s in payload["settings"])
    assert {s["index"] for s in payload["settings"]} == {"hnsw", "ivf_flat"}
    rec = payload["recovers_index_gap"]
    assert rec["run"] == "ann_minilm" and rec["metric"] == "hit_rate@5"
    assert rec["recovers"] in ("all", "most", "none")


@pytest.mark.real_model
def test_cli_table_prints_every_point(capsys, model_cache):
    code = main(["ann", "--data", str(DEMO), "--k", "10", "--cache-dir", str(model_cache)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("hnsw ") == 20 and "ivf_flat" in out and "index_gap: no run given" in out


def test_without_faiss_the_error_names_the_extra(monkeypatch):
    """The core does not import faiss; a frontier without it says which extra to install."""
    from diagnose.runtime.extras import MissingExtra

    monkeypatch.setitem(__import__("sys").modules, "faiss", None)  # `import faiss` raises ModuleNotFoundError
    space, qrels = _random_space(n_docs=50, n_queries=3)
    with pytest.raises(MissingExtra, match=r"diagnose-rag\[ann\]"):
        ann_frontier(qrels, space, k=K, settings=WEAK[:1])


def test_a_chroma_collection_s_own_hnsw_setting_is_on_the_frontier(tmp_path):
    """A Chroma collection made with max_neighbors 12, ef_construction 50, ef_search 20: that setting is measured
    and reported as `current` (faiss' names: M, efConstruction, efSearch)."""
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    ds = diagnose.load(DEMO)
    df = ds.corpus.df
    vecs = np.asarray(KeywordEncoder().encode(ds.corpus.texts()), dtype=np.float32)
    client = chromadb.PersistentClient(
        path=str(tmp_path / "db"), settings=Settings(anonymized_telemetry=False)
    )
    hnsw = {"space": "cosine", "max_neighbors": 12, "ef_construction": 50, "ef_search": 20}
    col = client.create_collection("demo", embedding_function=None, configuration={"hnsw": hnsw})
    col.add(ids=list(df["doc_id"]), documents=list(df["text"]), embeddings=vecs)
    db = diagnose.load(corpus=f"chroma:{tmp_path / 'db'}#demo", queries=DEMO / "queries.jsonl",
                       qrels=DEMO / "qrels" / "test.tsv")  # fmt: skip
    a = Analysis(db, {}, encoder=KeywordEncoder(), baselines=("dense",), cache_dir=tmp_path / "cache")
    f = a.ann_frontier(k=K, settings=WEAK[:1])
    current = AnnSetting("hnsw", {"M": 12, "efConstruction": 50, "efSearch": 20})
    assert f.current is not None and dict(f.current.params) == dict(current.params)
    assert [dict(p.params) for p in f.settings] == [dict(WEAK[0].params), dict(current.params)]
    assert f.to_dict()["current"]["params"] == {"M": 12, "efConstruction": 50, "efSearch": 20}
    assert "current" not in demo_frontier_dict()  # files, not a collection: no current setting


def _collection_frontier(spec: str, tmp_path: Path):
    db = diagnose.load(corpus=spec, queries=DEMO / "queries.jsonl", qrels=DEMO / "qrels" / "test.tsv")
    a = Analysis(db, {}, encoder=KeywordEncoder(), baselines=("dense",), cache_dir=tmp_path / "cache")
    return db.corpus, a.ann_frontier(k=K, settings=WEAK[:1])


def _demo_vectors():
    ds = diagnose.load(DEMO)
    return ds.corpus.df, np.asarray(KeywordEncoder().encode(ds.corpus.texts()), dtype=np.float32)


def test_a_qdrant_collection_s_hnsw_config_is_on_the_frontier(tmp_path):
    """A Qdrant collection whose vector has hnsw_config m=6, ef_construct=40: M 6, efConstruction 40, and efSearch
    40 (Qdrant searches with ef = ef_construct when a request sets no hnsw_ef). (Local mode keeps a vector's
    hnsw_config; its collection-level config always reads as Qdrant's defaults, m 16 and ef_construct 100.)"""
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, HnswConfigDiff, PointStruct, VectorParams

    df, vecs = _demo_vectors()
    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection(
        "demo",
        vectors_config=VectorParams(
            size=vecs.shape[1], distance=Distance.COSINE, hnsw_config=HnswConfigDiff(m=6, ef_construct=40)
        ),
    )
    points = [
        PointStruct(id=n, vector=v.tolist(), payload={"doc_id": d, "text": t})
        for n, (d, t, v) in enumerate(zip(df["doc_id"], df["text"], vecs, strict=True))
    ]
    client.upsert("demo", points=points)
    client.close()
    corpus, f = _collection_frontier(f"qdrant:{tmp_path / 'q'}#demo", tmp_path)
    assert dict(corpus.index_params) == {"M": 6, "efConstruction": 40, "efSearch": 40}
    assert f.current is not None and dict(f.current.params) == {"M": 6, "efConstruction": 40, "efSearch": 40}
    assert f.to_dict()["current"]["index"] == "hnsw"


def test_a_vector_s_own_qdrant_hnsw_config_overrides_the_collection_s():
    from types import SimpleNamespace as NS

    from diagnose.io.vectordb.sources import qdrant_hnsw_params

    config = NS(hnsw_config=NS(m=16, ef_construct=100))
    assert qdrant_hnsw_params(config, NS(hnsw_config=NS(m=8, ef_construct=None))) == {
        "M": 8,
        "efConstruction": 100,
        "efSearch": 100,
    }
    assert (
        qdrant_hnsw_params(NS(hnsw_config=NS(m=0, ef_construct=100)), NS(hnsw_config=None)) == {}
    )  # no graph


def test_a_lancedb_hnsw_index_is_on_the_frontier(tmp_path):
    """A LanceDB table with an IVF_HNSW_SQ index (m=10, ef_construction=60): M 10, efConstruction 60, and efSearch
    ceil(1.5 x k) = 15 at k=10 (LanceDB's default ef is 1.5 x the limit)."""
    lancedb = pytest.importorskip("lancedb")
    from lancedb.index import HnswSq

    df, vecs = _demo_vectors()
    rows = [
        {"id": d, "text": t, "vector": v.tolist()}
        for d, t, v in zip(df["doc_id"], df["text"], vecs, strict=True)
    ]
    table = lancedb.connect(str(tmp_path / "l")).create_table("demo", data=rows)
    table.create_index(
        "vector", config=HnswSq(distance_type="cosine", num_partitions=1, m=10, ef_construction=60)
    )
    corpus, f = _collection_frontier(f"lancedb:{tmp_path / 'l'}#demo", tmp_path)
    assert dict(corpus.index_params) == {"M": 10, "efConstruction": 60}
    assert corpus.index_setting(K) == {"M": 10, "efConstruction": 60, "efSearch": 15}
    assert f.current is not None and dict(f.current.params) == {"M": 10, "efConstruction": 60, "efSearch": 15}


def test_a_lancedb_table_without_an_hnsw_index_places_no_current_setting(tmp_path):
    lancedb = pytest.importorskip("lancedb")

    df, vecs = _demo_vectors()
    rows = [
        {"id": d, "text": t, "vector": v.tolist()}
        for d, t, v in zip(df["doc_id"], df["text"], vecs, strict=True)
    ]
    lancedb.connect(str(tmp_path / "l")).create_table("demo", data=rows)
    corpus, f = _collection_frontier(f"lancedb:{tmp_path / 'l'}#demo", tmp_path)
    assert dict(corpus.index_params) == {} and f.current is None


def demo_frontier_dict() -> dict:
    a = Analysis(diagnose.load(DEMO), {}, encoder=KeywordEncoder(), baselines=("dense",))
    return a.ann_frontier(k=K, settings=WEAK[:1]).to_dict()


def test_a_frontier_run_on_the_analysis_is_an_action_of_its_findings(demo):
    """Issue 36: once the frontier of a run has been measured, the findings hold its action, with its numbers."""
    a = _low_ef_run(demo)
    before = a.findings("hnsw", k=K)
    assert "ann" not in [x.remedy_id for x in before]
    nlist = ivf_nlist(len(a.space.doc_ids))
    # IVF scanning every list is exact search: it recovers every index_gap failure
    f = a.ann_frontier(
        "hnsw", k=K, settings=[WEAK[0], AnnSetting("ivf_flat", {"nlist": nlist, "nprobe": nlist})]
    )
    rec = f.recovers_index_gap
    assert rec.recovers == "all"
    after = a.findings("hnsw", k=K)
    (act,) = [x for x in after if x.remedy_id == "ann"]
    assert (act.recovered, act.lost_hits, act.net) == (
        len(rec.recovered),
        rec.lost_hits,
        len(rec.recovered) - rec.lost_hits,
    )
    assert (act.mean_diff, act.p_value, act.recovered_ids) == (rec.mean_diff, rec.p_value, rec.recovered)
    assert act.change.startswith(f"Rebuild the ANN index as ivf_flat(nlist={nlist}, nprobe={nlist})")
    # ranked with the others by net gain: the measured actions' nets do not increase down the list
    nets = [x.net for x in after if x.net is not None]
    assert nets == sorted(nets, reverse=True) and len(after) == len(before) + 1
