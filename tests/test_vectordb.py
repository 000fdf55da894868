"""A vector database as the corpus and its vectors (issue 20 part 1, diagnose.io.vectordb): real embedded databases
(Chroma persistent, LanceDB, Qdrant local mode) built in a temporary folder from the demo corpus; what is diagnosed
from a collection equals what is diagnosed from the same vectors given as ``.npy`` (``--doc-embeddings``)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from diagnose.analysis import Analysis
from diagnose.data import DataError
from diagnose.embed import KeywordEncoder
from diagnose.embed.loading import default_model_path
from diagnose.io import load_dataset
from diagnose.io.vectordb import read_collection

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
N_DOCS = sum(1 for line in (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())
RUN = DEMO / "runs" / "ann_minilm.trec"


def build_chroma(folder: Path, name: str, ids, titles, texts, vecs, space: str = "cosine") -> str:
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(name, embedding_function=None, configuration={"hnsw": {"space": space}})
    col.add(ids=list(ids), documents=list(texts), metadatas=[{"title": t} for t in titles], embeddings=vecs)
    return f"chroma:{folder}#{name}"


def build_lancedb(folder: Path, name: str, ids, titles, texts, vecs) -> str:
    lancedb = pytest.importorskip("lancedb")
    rows = [
        {"id": i, "title": t, "text": x, "vector": v.tolist()}
        for i, t, x, v in zip(ids, titles, texts, vecs, strict=True)
    ]
    lancedb.connect(str(folder)).create_table(name, data=rows)
    return f"lancedb:{folder}#{name}"


def build_qdrant(folder: Path, name: str, ids, titles, texts, vecs, distance: str = "Cosine") -> str:
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    client = QdrantClient(path=str(folder))
    client.create_collection(
        name, vectors_config=VectorParams(size=vecs.shape[1], distance=Distance(distance))
    )
    points = [
        PointStruct(id=n, vector=v.tolist(), payload={"doc_id": i, "title": t, "text": x})
        for n, (i, t, x, v) in enumerate(zip(ids, titles, texts, vecs, strict=True))
    ]
    client.upsert(name, points=points)
    client.close()  # local mode locks the folder while a client holds it
    return f"qdrant:{folder}#{name}"


BUILDERS = {"chroma": build_chroma, "lancedb": build_lancedb, "qdrant": build_qdrant}


@pytest.fixture(scope="module")
def demo():
    return load_dataset(data_dir=DEMO)


@pytest.fixture(scope="module")
def keyword(demo, tmp_path_factory) -> SimpleNamespace:
    """The demo corpus and its golden queries under the fake keyword encoder (unit-length rows), and the same
    vectors as .npy + id files."""
    enc = KeywordEncoder()
    df = demo.corpus.df
    text_of = demo.queries.text_of()
    qids = [q for q in demo.qrels.queries_with_relevant() if q in text_of]
    doc_vecs = np.asarray(enc.encode(demo.corpus.texts()), dtype=np.float32)
    query_vecs = np.asarray(enc.encode([text_of[q] for q in qids]), dtype=np.float32)
    out = tmp_path_factory.mktemp("npy")
    np.save(out / "docs.npy", doc_vecs)
    np.save(out / "queries.npy", query_vecs)
    (out / "docs.txt").write_text("\n".join(df["doc_id"]) + "\n", encoding="utf-8")
    (out / "queries.txt").write_text("\n".join(qids) + "\n", encoding="utf-8")
    return SimpleNamespace(
        ids=list(df["doc_id"]), titles=list(df["title"]), texts=list(df["text"]), vecs=doc_vecs, npy=out
    )


def _build(kind: str, folder: Path, kw: SimpleNamespace, name: str = "demo", **kwargs) -> str:
    return BUILDERS[kind](folder / kind, name, kw.ids, kw.titles, kw.texts, kw.vecs, **kwargs)


def _from_collection(spec: str, tmp_path: Path, **kwargs) -> Analysis:
    import diagnose

    ds = diagnose.load(
        corpus=spec, queries=DEMO / "queries.jsonl", qrels=DEMO / "qrels" / "test.tsv", runs=[("ann", RUN)]
    )
    return Analysis(ds, cache_dir=tmp_path / "cache", **kwargs)


@pytest.mark.parametrize("kind", ["chroma", "lancedb", "qdrant"])
def test_collection_diagnoses_like_the_same_vectors_as_npy(kind, demo, keyword, tmp_path):
    spec = _build(kind, tmp_path, keyword)
    db = _from_collection(spec, tmp_path, encoder=KeywordEncoder())
    assert isinstance(db.dataset.corpus.vectors.doc_vectors, np.ndarray)
    npy = keyword.npy
    files = Analysis(
        load_dataset(data_dir=DEMO, runs=[("ann", RUN)]),
        cache_dir=tmp_path / "cache2",
        encoder=KeywordEncoder(),
        embeddings={
            "doc": npy / "docs.npy",
            "query": npy / "queries.npy",
            "doc_ids": npy / "docs.txt",
            "query_ids": npy / "queries.txt",
        },
    )
    # the same documents (ids, titles, texts, in the same order) and the same vectors
    cols = ["doc_id", "title", "text"]
    pd.testing.assert_frame_equal(db.dataset.corpus.df[cols], demo.corpus.df[cols].reset_index(drop=True))
    np.testing.assert_allclose(db.space.doc_vecs, files.space.doc_vecs, atol=1e-6)
    np.testing.assert_allclose(db.space.query_vecs, files.space.query_vecs, atol=1e-6)
    # failures and metrics, of the run given and of the baselines (bm25, dense over the stored vectors)
    pd.testing.assert_frame_equal(db.failures("ann"), files.failures("ann"))
    pd.testing.assert_frame_equal(db.metrics(), files.metrics())
    pd.testing.assert_frame_equal(db.class_counts(), files.class_counts())
    assert db.space.model.endswith(spec)  # the space says where its document vectors come from


def test_documents_are_not_encoded(keyword, tmp_path):
    """Only the golden queries are encoded (each distinct text once: two queries share a text): the documents'
    vectors are the stored ones."""
    spec = _build("chroma", tmp_path, keyword)
    seen: list[int] = []

    class Counting(KeywordEncoder):
        def encode(self, texts, *args, **kwargs):
            seen.append(len(texts))
            return super().encode(texts, *args, **kwargs)

    a = _from_collection(spec, tmp_path, encoder=Counting())
    a.space  # noqa: B018 - build it
    text_of = a.dataset.queries.text_of()
    assert sum(seen) == len({text_of[q] for q in a.golden}) < len(a.dataset.corpus)


def test_progress_reports_each_batch(keyword, tmp_path):
    spec = _build("chroma", tmp_path, keyword)
    calls: list[tuple[int, int]] = []
    read_collection(spec, progress=lambda done, total: calls.append((done, total)), batch_size=50)
    # N_DOCS (151-200) documents in batches of 50: 0, 50, 100, 150, N_DOCS
    assert 150 < N_DOCS <= 200
    assert calls == [(0, N_DOCS), (50, N_DOCS), (100, N_DOCS), (150, N_DOCS), (N_DOCS, N_DOCS)]


@pytest.mark.parametrize("kind", ["chroma", "lancedb", "qdrant"])
def test_collection_written_during_the_read_is_refused(kind, keyword, tmp_path, monkeypatch):
    """A writer adds a document after the first batch: the counts before and after differ; nothing is returned."""
    from diagnose.io.vectordb import sources

    spec = _build(kind, tmp_path, keyword)
    cls = sources.SOURCES[kind]
    read = cls.batches

    def batches(self, size):
        for n, batch in enumerate(read(self, size)):
            yield batch
            if n == 0:
                _add_one(kind, self, keyword)

    monkeypatch.setattr(cls, "batches", batches)
    with pytest.raises(DataError, match="changed while it was read") as e:
        read_collection(spec, batch_size=50)
    # seen during the read (one row more than counted) or at its end (N_DOCS + 1 counted): either way refused
    assert f"{N_DOCS} documents when the read began" in str(e.value) and str(N_DOCS + 1) in str(e.value)


def _add_one(kind: str, source, kw: SimpleNamespace) -> None:
    vec = kw.vecs[0].tolist()
    if kind == "chroma":
        source.collection.add(ids=["new"], documents=["new"], embeddings=[vec])
    elif kind == "lancedb":
        source.table.add([{"id": "new", "title": "", "text": "new", "vector": vec}])
    else:
        from qdrant_client.models import PointStruct

        source.client.upsert(
            source.name, points=[PointStruct(id=10_000, vector=vec, payload={"doc_id": "new"})]
        )


def test_dimension_of_the_query_model_must_match(keyword, tmp_path):
    spec = _build("chroma", tmp_path, keyword)
    a = _from_collection(spec, tmp_path, encoder=KeywordEncoder(dim=64))
    with pytest.raises(DataError, match="holds 256-dimensional vectors but the model keyword-hash-64") as e:
        a.space  # noqa: B018
    assert e.value.param == "model"


def test_distance_rule(keyword, tmp_path):
    """l2 and ip rank like cosine on unit-length vectors only; Manhattan never."""
    unit = _build("chroma", tmp_path, keyword, name="unit", space="l2")
    assert read_collection(unit).metric == "l2"
    scaled = SimpleNamespace(**{**vars(keyword), "vecs": keyword.vecs * 3})  # every length 3
    spec = _build("chroma", tmp_path, scaled, name="scaled", space="ip")
    with pytest.raises(
        DataError, match=f"ranks by ip, and {N_DOCS} of {N_DOCS} stored vectors are not unit-length"
    ):
        read_collection(spec)
    spec = _build("lancedb", tmp_path, scaled)  # LanceDB: l2, its default
    with pytest.raises(DataError, match=r"ranks by l2, .* \(e.g. it-0001 \(3\)"):
        read_collection(spec)
    spec = _build("qdrant", tmp_path, keyword, distance="Manhattan")
    with pytest.raises(DataError, match="'manhattan' distance"):
        read_collection(spec)


def test_cosine_collection_of_unnormalised_vectors_is_normalised(keyword, tmp_path):
    scaled = SimpleNamespace(**{**vars(keyword), "vecs": keyword.vecs * 3})
    corpus = read_collection(_build("chroma", tmp_path, scaled))
    np.testing.assert_allclose(corpus.vectors.doc_vectors, keyword.vecs, atol=1e-6)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("pinecone:{tmp}#docs", "unknown vector database 'pinecone'; write chroma:PATH#COLLECTION"),
        ("chroma:{tmp}", "no collection named; write chroma:PATH#COLLECTION"),
        ("lancedb:{tmp}#", "no table named; write lancedb:PATH#TABLE"),
        ("qdrant:#docs", "no path; write qdrant:PATH#docs"),
        ("chroma:{tmp}/absent#docs", "absent not found; give the folder"),
    ],
)
def test_bad_specs_name_the_fix(spec, message, tmp_path):
    with pytest.raises(DataError, match=message) as e:
        load_dataset(corpus=spec.format(tmp=tmp_path), qrels=DEMO / "qrels" / "test.tsv")
    assert e.value.param == "corpus"


@pytest.mark.parametrize("kind", ["chroma", "lancedb", "qdrant"])
def test_unknown_collection_lists_those_there_are(kind, keyword, tmp_path):
    spec = _build(kind, tmp_path, keyword)
    what = "table" if kind == "lancedb" else "collection"
    with pytest.raises(DataError, match=f"no {what} 'nope' in .* \\(the {what}s there: demo\\)"):
        read_collection(spec.replace("#demo", "#nope"))


def test_a_corpus_file_is_still_a_file(tmp_path):
    """A file whose name has a colon and a # is read as a file when it exists."""
    path = tmp_path / "my:corpus#1.jsonl"
    path.write_text('{"_id": "d1", "text": "hello"}\n', encoding="utf-8")
    ds = load_dataset(corpus=str(path), qrels=None, require_qrels=False)
    assert list(ds.corpus.ids) == ["d1"]


@pytest.mark.parametrize(
    ("kind", "module"), [("chroma", "chromadb"), ("lancedb", "lancedb"), ("qdrant", "qdrant_client")]
)
def test_missing_client_names_the_extra(kind, module, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import fails: ModuleNotFoundError
    with pytest.raises(DataError, match=r"pip install 'diagnose-rag\[vectordb\]'"):
        read_collection(f"{kind}:{tmp_path}#docs")


@pytest.fixture(scope="module")
def minilm(demo, tmp_path_factory) -> SimpleNamespace:
    """The bundled MiniLM (fp32: ``--precision exact``): the demo corpus and its golden queries encoded once for
    the tests below, the same vectors as .npy, and a Chroma collection (cosine) of the documents' vectors. The
    documents are encoded through an embedding cache (``cache``, a ``--cache-dir``'s layout): the CLI's passage
    evidence reads the whole targets' vectors from it instead of encoding the same documents with the same model
    again (the queries are not in it: the CLI encodes them)."""
    from diagnose.embed import EmbeddingCache, embed_texts, load_encoder

    enc = load_encoder(None, precision="exact")
    text_of = demo.queries.text_of()
    qids = [q for q in demo.qrels.queries_with_relevant() if q in text_of]
    out = tmp_path_factory.mktemp("minilm")
    kw = SimpleNamespace(
        ids=list(demo.corpus.ids),
        titles=list(demo.corpus.df["title"]),
        texts=list(demo.corpus.df["text"]),
        vecs=embed_texts(enc, demo.corpus.texts(), cache=EmbeddingCache(out / "cache" / "embeddings")),
    )
    query_vecs = np.asarray(enc.encode([text_of[q] for q in qids]), dtype=np.float32)
    np.save(out / "docs.npy", kw.vecs)
    np.save(out / "queries.npy", query_vecs)
    (out / "docs.txt").write_text("\n".join(kw.ids) + "\n", encoding="utf-8")
    (out / "queries.txt").write_text("\n".join(qids) + "\n", encoding="utf-8")
    spec = build_chroma(out / "chroma", "demo", kw.ids, kw.titles, kw.texts, kw.vecs)
    return SimpleNamespace(
        spec=spec,
        npy=out,
        cache=out / "cache",
        qids=qids,
        query_vecs=dict(zip(qids, query_vecs, strict=True)),
        encoder=enc,
    )


def _failures_json(capsys, *argv) -> dict:
    from diagnose.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _close(a, b, tol: float = 1e-6) -> bool:
    """``a == b`` for nested JSON values, floats within ``tol``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol
    return a == b


@pytest.mark.real_model
def test_cli_corpus_from_chroma_equals_npy_with_the_bundled_model(minilm, capsys, tmp_path):
    """``diagnose failures --corpus chroma:PATH#COLLECTION`` (queries encoded by the bundled model here) gives the
    failures of the same document vectors given as .npy with the same model's query vectors."""
    # the documents' vectors the fixture encoded; the first run adds the passages and queries, the second reads them
    cache = tmp_path / "cache"
    shutil.copytree(minilm.cache, cache)
    common = [
        "failures",
        "--run",
        f"ann={RUN}",
        "--precision",
        "exact",
        "--cache-dir",
        cache,
        "--format",
        "json",
    ]
    db = _failures_json(
        capsys,
        *common,
        "--corpus",
        minilm.spec,
        "--queries",
        DEMO / "queries.jsonl",
        "--qrels",
        DEMO / "qrels" / "test.tsv",
    )
    npy = minilm.npy
    files = _failures_json(
        capsys,
        *common,
        "--data",
        DEMO,
        "--doc-embeddings",
        npy / "docs.npy",
        "--doc-ids",
        npy / "docs.txt",
        "--query-embeddings",
        npy / "queries.npy",
        "--query-ids",
        npy / "queries.txt",
        # the model that made the vectors, named by its folder ("default" names none with precomputed vectors): its
        # window gives the passage evidence, as the Chroma side (queries encoded by the model) has it
        "--model",
        default_model_path(),
    )
    assert db["n_failed_queries"] > 0
    # the same failures, classes, remedies...; cosines agree to float32 rounding (the vectors come back from
    # Chroma within ~1e-8 of those written)
    for key in ("n_failed_queries", "failures", "class_counts", "remedies", "label_noise", "hubness"):
        assert _close(db[key], files[key]), key
    assert db["threshold"]["calibrated"] == pytest.approx(files["threshold"]["calibrated"], abs=1e-6)


@pytest.mark.real_model
def test_langchain_retriever_over_the_collection_equals_its_own_search(demo, minilm):
    """Part 5: a LangChain retriever (langchain-core's BaseRetriever; langchain-chroma is not installed, so it
    wraps the collection's own ``query``) run through run_retriever gives the run of the collection's own batch
    search at the same settings (n_results=100, the collection's HNSW parameters, the same query vectors)."""
    chromadb = pytest.importorskip("chromadb")
    pytest.importorskip("langchain_core")
    from chromadb.config import Settings
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from diagnose.data import Run
    from diagnose.retrievers import run_retriever

    path, _, name = minilm.spec.removeprefix("chroma:").rpartition("#")
    col = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False)).get_collection(
        name
    )
    text_of = demo.queries.text_of()
    vec_of = {text_of[q]: minilm.query_vecs[q] for q in minilm.qids}

    class ChromaRetriever(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager) -> list:
            hits = col.query(query_embeddings=[vec_of[query].tolist()], n_results=100, include=["distances"])
            return [
                Document(page_content="", metadata={"doc_id": i, "score": 1.0 - d})
                for i, d in zip(hits["ids"][0], hits["distances"][0], strict=True)
            ]

    live = run_retriever(ChromaRetriever(), demo, id_key="doc_id", name="chroma", timeout=None)
    own = col.query(
        query_embeddings=np.stack([minilm.query_vecs[q] for q in minilm.qids]).tolist(),
        n_results=100,
        include=["distances"],
    )
    direct = Run.from_ranked_lists(
        "chroma",
        {
            q: [(i, 1.0 - d) for i, d in zip(ids, ds, strict=True)]
            for q, ids, ds in zip(minilm.qids, own["ids"], own["distances"], strict=True)
        },
    )
    assert live.query_ids() == direct.query_ids() == minilm.qids
    assert live.ranked_lists() == direct.ranked_lists()


def test_app_sidebar_takes_a_collection_under_the_data_root(keyword, tmp_path, monkeypatch):
    """The sidebar's corpus field takes the same spec; its folder must lie under the data root like any path."""
    from diagnose.ui import sources

    spec = _build("chroma", tmp_path, keyword)
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    for name in ("queries.jsonl", "qrels.tsv"):
        (tmp_path / name).write_text("", encoding="utf-8")
    data = sources.files_spec("chroma:chroma#demo", "queries.jsonl", "qrels.tsv", "")
    assert data.corpus == spec  # the folder resolved under the root
    assert tmp_path / "chroma" in data.paths()  # the fingerprint follows the database folder
    ds = load_dataset(corpus=data.corpus, queries=DEMO / "queries.jsonl", qrels=DEMO / "qrels" / "test.tsv")
    assert len(ds.corpus) == N_DOCS
    with pytest.raises(DataError, match="outside the data folder"):
        sources.files_spec("chroma:/etc#demo", "queries.jsonl", "qrels.tsv", "")


def test_one_splitter_of_the_spec_form():
    """parse_spec and the app's folder resolution read the same split: the path is what lies before the last '#'."""
    from diagnose.io.vectordb.spec import split_spec
    from diagnose.ui.sources import _collection_folder

    assert split_spec("chroma:./a#b#docs") == ("chroma", "./a#b", "docs", True)
    assert split_spec("Qdrant:/x/db") == ("Qdrant", "/x/db", "", False)
    assert split_spec("corpus.jsonl") == ("", "", "", False)
    assert _collection_folder("chroma:./a#b#docs") == "./a#b"
    assert _collection_folder("chroma:./db") is None  # no '#': no collection named, the reader says so
