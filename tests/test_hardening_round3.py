"""Issue 38, hardening round 3 (security, vector databases, golden sets, chunk corpora, deep nesting): each case
a clear DataError naming the file, line, key or parameter and the fix, or success with every problem counted.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from io_testing import write

import diagnose.io as dio
from diagnose.data import DataError, ValidationReport
from diagnose.io.vectordb import read_collection

CORPUS = '{"_id": "d1", "text": "alpha beta gamma delta"}\n{"_id": "d2", "text": "other words here"}\n'
DEEP = 100_000  # levels: Python's json recurses once per level and stops near 1,000


# --- deep nesting -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("q.jsonl", '{"query_id": "q1", "relevant": ' + "[" * DEEP + "]" * DEEP + "}\n"),
        (
            "q.json",
            '{\n"queries": {"q1": "a"}, "corpus": {"d1": "b"},\n"relevant_docs": '
            + "[" * DEEP
            + "]" * DEEP
            + "}\n",
        ),
    ],
    ids=["qrels-jsonl", "pretty-embedding-qa"],
)
def test_deeply_nested_qrels_or_golden_set_is_a_data_error(tmp_path, name, text):
    f = write(tmp_path / name, text)
    with pytest.raises(DataError, match=r"nested .*deep.*Fix: flatten") as err:
        dio.read_qrels(f)
    assert name in str(err.value)


# --- golden sets --------------------------------------------------------------------------------------------------


def _load(tmp_path, golden: str, name: str = "g.json", corpus: str = CORPUS, queries: str | None = None):
    report = ValidationReport()
    ds = dio.load_dataset(
        corpus=write(tmp_path / "c.jsonl", corpus),
        queries=write(tmp_path / "queries.jsonl", queries) if queries is not None else None,
        qrels=write(tmp_path / name, golden),
        report=report,
    )
    return ds, report


@pytest.mark.parametrize("node_text", ["", "   ", None, "missing"], ids=["empty", "blank", "null", "missing"])
def test_embedding_qa_node_without_text_is_skipped_and_counted(tmp_path, node_text):
    corpus = {"n1": "alpha beta gamma delta"}
    if node_text != "missing":
        corpus["n2"] = node_text  # None: JSON null, once read as the text "None"
    golden = {
        "queries": {"q1": "alpha?", "q2": "nothing?"},
        "corpus": corpus,
        "relevant_docs": {"q1": ["n1"], "q2": ["n2"]},
    }
    ds, report = _load(tmp_path, json.dumps(golden))
    # n1's text is d1's: q1 -> d1; n2 has no text: skipped, not matched to d1 and d2 (an empty string is in both)
    assert sorted(map(tuple, ds.qrels.df[["query_id", "doc_id"]].values.tolist())) == [("q1", "d1")]
    assert report.by_code("node_without_text")[0].count == 1


def test_approximate_match_needs_the_document_to_cover_the_context(tmp_path):
    context = " ".join(
        ["alpha", "beta", "gamma"] + [f"word{i}" for i in range(19)]
    )  # 22 words, found nowhere
    corpus = '{"_id": "short", "text": "alpha beta gamma"}\n{"_id": "d2", "text": "other words here"}\n'
    golden = json.dumps({"query": "q?", "reference_contexts": [context]}) + "\n"
    ds, report = _load(tmp_path, golden, "g.jsonl", corpus)
    # the 3-word document is 16 of the context's 166 characters (10 %): no match of the whole context
    assert report.stats["references_approximate"] == 0
    assert report.stats["references_unmatched"] == 1


def test_first_line_over_64_kib_keeps_the_golden_set_format(tmp_path):
    long_context = "alpha beta gamma delta " + "x" * 70_000  # the first line is > 64 KiB
    golden = (
        json.dumps({"query": "q?", "reference_contexts": ["alpha beta gamma delta", long_context]}) + "\n"
    )
    ds, report = _load(tmp_path, golden, "g.jsonl")
    assert report.stats["golden_set_format"] == "jsonl"
    assert ds.qrels.df["doc_id"].tolist()[0] == "d1"


def test_pretty_printed_golden_set_is_detected_from_its_keys_past_64_kib(tmp_path):
    pad = {"meta": "x" * 70_000}  # the key "examples" comes after 64 KiB
    golden = json.dumps(
        {**pad, "examples": [{"query": "q?", "reference_contexts": ["alpha beta gamma delta"]}]}, indent=1
    )
    ds, report = _load(tmp_path, golden)
    assert report.stats["golden_set_format"] == "labelled_rag"
    assert ds.qrels.df["doc_id"].tolist() == ["d1"]


def test_non_utf8_bytes_in_a_golden_set_are_counted(tmp_path):
    lines = [
        json.dumps({"query": "q one?", "reference_contexts": ["alpha beta gamma delta"]}).encode(),
        b'{"query": "q two \xff?", "reference_contexts": ["other words here"]}',
    ]
    ds, report = _load(tmp_path, b"\n".join(lines) + b"\n", "g.jsonl")
    assert report.by_code("non_utf8")[0].count == 1  # line 2 holds the byte 0xff
    assert len(ds.qrels.df) == 2


def test_queries_file_text_differing_from_the_golden_question_is_counted(tmp_path):
    golden = "".join(
        json.dumps({"query_id": q, "query": t, "reference_contexts": [c]}) + "\n"
        for q, t, c in [
            ("q1", "what is alpha?", "alpha beta gamma delta"),
            ("q2", "other?", "other words here"),
        ]
    )
    queries = '{"_id": "q1", "text": "what  is alpha?"}\n{"_id": "q2", "text": "a different question"}\n'
    ds, report = _load(tmp_path, golden, "g.jsonl", queries=queries)
    # q1 differs by whitespace only (not counted); q2's text differs
    problem = report.by_code("query_text_differs")[0]
    assert problem.count == 1 and problem.examples == ("q2",)


# --- security: no byte of the data acts on the terminal -------------------------------------------------------------

ESC_TITLE = "\x1b]0;pwned\x07"  # OSC 0: retitles the terminal
ESC_CLEAR = "\x1b[2J"  # CSI 2 J: clears it


def _cli(tmp_path, run: str, capsys) -> tuple[int, str, str]:
    from diagnose.cli import main

    write(tmp_path / "c.jsonl", CORPUS)
    write(tmp_path / "q.jsonl", '{"_id": "q1", "text": "alpha"}\n')
    write(tmp_path / "qrels.tsv", "q1\td1\t1\n")
    write(tmp_path / "run.trec", run)
    d = str(tmp_path)
    code = main(
        [
            "evaluate",
            "--corpus",
            f"{d}/c.jsonl",
            "--queries",
            f"{d}/q.jsonl",
            "--qrels",
            f"{d}/qrels.tsv",
            "--run",
            f"{d}/run.trec",
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_escape_sequences_in_a_run_line_are_escaped_in_cli_errors(tmp_path, capsys):
    code, out, err = _cli(tmp_path, f"q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 {ESC_TITLE} r\n", capsys)
    assert code == 2 and "run.trec:2" in err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;pwned\\x07" in err  # shown, escaped: the user sees what the line holds


def test_escape_sequences_in_ids_are_escaped_in_cli_warnings_and_tables(tmp_path, capsys):
    code, out, err = _cli(
        tmp_path, f"q1 Q0 d1 1 1.0 r{ESC_CLEAR}\nq1 Q0 d{ESC_CLEAR}9 2 0.5 r{ESC_CLEAR}\n", capsys
    )
    assert code == 0 and "q1/d\\x1b[2J9" in err  # the warning: a retrieved document not in the corpus
    assert "\x1b" not in err + out


def test_terminal_safe_escapes_c0_del_and_c1_but_keeps_tab_and_newline():
    from diagnose.runtime.terminal import terminal_safe

    # C0 ESC and BEL, CR, DEL (0x7f) and C1 CSI (0x9b) escaped; tab and line feed kept
    assert terminal_safe("a\x1b\x07\r\x7f\x9b\tb\nc") == "a\\x1b\\x07\\x0d\\x7f\\x9b\tb\nc"


def test_progress_labels_are_terminal_safe(capsys):
    from diagnose.runtime.progress import Terminal

    # a label names what the user gave (a file, a model, a collection): its escape sequences are shown, not acted on
    progress = Terminal(force=True)
    progress.step("Reading evil\x1b]0;pwned\x07.jsonl")
    update = progress.bar("Encoding \x1b[2J")
    update(1, 1)
    err = capsys.readouterr().err
    assert "evil\\x1b]0;pwned\\x07.jsonl ..." in err and "Encoding \\x1b[2J" in err
    assert "\x1b]" not in err and "\x1b[2J" not in err


# --- vector databases ---------------------------------------------------------------------------------------------

VECS = np.eye(4, dtype=np.float32)[:3]  # three unit vectors: every distance ranks like cosine


def _chroma(folder, metadatas=None) -> str:
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(
        "docs", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    col.add(ids=["a", "b", "c"], documents=["alpha", "beta", "gamma"], embeddings=VECS, metadatas=metadatas)
    return f"chroma:{folder}#docs"


def _qdrant(folder):
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=VectorParams(size=4, distance=Distance.COSINE))
    client.upsert(
        "docs",
        points=[PointStruct(id=n, vector=v.tolist(), payload={"text": f"t{n}"}) for n, v in enumerate(VECS)],
    )
    return client


@pytest.mark.parametrize("kind", ["chroma", "qdrant"])
def test_reading_a_folder_without_a_database_creates_nothing(kind, tmp_path):
    pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[kind])
    with pytest.raises(DataError, match=r"holds no .*database .*nothing was created.*Fix:"):
        read_collection(f"{kind}:{tmp_path}#docs")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", [b"", b"garbage" * 100], ids=["empty", "not-sqlite"])
def test_a_chroma_file_that_is_no_sqlite_database_is_refused_unwritten(tmp_path, content):
    pytest.importorskip("chromadb")
    (tmp_path / "chroma.sqlite3").write_bytes(content)  # an empty file would be initialised: a write
    with pytest.raises(DataError, match=r"is not a chromadb database file .*nothing was written.*Fix:"):
        read_collection(f"chroma:{tmp_path}#docs")
    assert (tmp_path / "chroma.sqlite3").read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["chroma.sqlite3"]


def test_a_qdrant_collection_without_its_storage_file_is_refused_unwritten(tmp_path):
    _qdrant(tmp_path).close()
    (
        tmp_path / "collection" / "docs" / "storage.sqlite"
    ).unlink()  # partly copied: the client would create it empty
    with pytest.raises(DataError, match=r"storage file .* is missing.*no empty one was created.*Fix:"):
        read_collection(f"qdrant:{tmp_path}#docs")
    assert list((tmp_path / "collection" / "docs").iterdir()) == []


def test_qdrant_folder_locked_by_another_client_is_a_data_error(tmp_path):
    client = _qdrant(tmp_path)  # still open: it holds the folder's lock
    try:
        with pytest.raises(DataError, match=r"locked by another Qdrant client.*Fix: close"):
            read_collection(f"qdrant:{tmp_path}#docs")
    finally:
        client.close()
    assert len(read_collection(f"qdrant:{tmp_path}#docs").df) == 3  # closed: read


def test_lancedb_null_vector_is_a_data_error_naming_the_row(tmp_path):
    lancedb = pytest.importorskip("lancedb")
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("vector", pa.list_(pa.float32(), 4))])
    table = lancedb.connect(str(tmp_path)).create_table("docs", schema=schema)
    table.add(
        [{"id": "a", "text": "x", "vector": VECS[0].tolist()}, {"id": "b", "text": "y", "vector": None}]
    )
    with pytest.raises(DataError, match=r"1 rows of a batch have no vector .*'b'.*Fix:"):
        read_collection(f"lancedb:{tmp_path}#docs")


def test_corrupt_chroma_qdrant_and_lance_files_are_data_errors(tmp_path):
    pytest.importorskip("lancedb")
    (tmp_path / "ch").mkdir()
    (tmp_path / "ch" / "chroma.sqlite3").write_bytes(
        b"SQLite format 3\x00" + b"garbage" * 100
    )  # a damaged body
    _qdrant(tmp_path / "qd").close()
    for f in (tmp_path / "qd").rglob("*.sqlite"):
        f.write_bytes(b"garbage" * 100)
    import lancedb

    lancedb.connect(str(tmp_path / "la")).create_table(
        "docs", data=[{"id": "a", "text": "x", "vector": [1.0, 0.0]}]
    )
    shutil.rmtree(tmp_path / "la" / "docs.lance" / "data")  # the table's data files are gone
    for spec in (
        f"chroma:{tmp_path / 'ch'}#docs",
        f"qdrant:{tmp_path / 'qd'}#docs",
        f"lancedb:{tmp_path / 'la'}#docs",
    ):
        with pytest.raises(DataError, match=r"cannot be read .*Fix: check that"):
            read_collection(spec)


def test_chroma_metadata_named_like_its_columns_does_not_replace_texts_or_ids(tmp_path):
    spec = _chroma(tmp_path, metadatas=[{"document": "SAME", "_id": "x"}] * 3)
    corpus = read_collection(spec)
    # before: 3 records with the id 'x' (2 dropped as duplicates) holding the text 'SAME'
    assert corpus.df["doc_id"].tolist() == ["a", "b", "c"]
    assert corpus.df["text"].tolist() == ["alpha", "beta", "gamma"]
    # kept as metadata (read as metadata.document, shown without the prefix like other metadata)
    assert corpus.df["document"].tolist() == ["SAME"] * 3 and corpus.df["_id"].tolist() == ["x"] * 3


def test_a_lancedb_column_named_like_the_internal_row_column_is_kept(tmp_path):
    lancedb = pytest.importorskip("lancedb")
    rows = [
        {"id": i, "text": t, "__row__": f"user {i}", "vector": v.tolist()}
        for i, t, v in zip("ab", "xy", VECS[:2], strict=True)
    ]
    lancedb.connect(str(tmp_path)).create_table("docs", data=rows)
    corpus = read_collection(f"lancedb:{tmp_path}#docs")
    assert corpus.df["doc_id"].tolist() == ["a", "b"]
    assert corpus.df["__row__"].tolist() == ["user a", "user b"]  # the user's values, not positions 0, 1


@pytest.mark.parametrize("kind", ["lancedb", "qdrant"])
def test_lance_and_qdrant_folders_whose_entries_link_out_of_the_root_are_refused(tmp_path, kind):
    outside = tmp_path / "outside"
    if kind == "qdrant":
        _qdrant(outside).close()
    else:
        lancedb = pytest.importorskip("lancedb")
        lancedb.connect(str(outside)).create_table(
            "docs", data=[{"id": "a", "text": "x", "vector": [1.0, 0.0]}]
        )
    db = tmp_path / "root" / "db"
    db.mkdir(parents=True)
    for (
        entry
    ) in outside.iterdir():  # a real folder under the root, every entry a link to the database outside
        (db / entry.name).symlink_to(entry)
    token = dio.confine_reads(tmp_path / "root")
    try:
        with pytest.raises(DataError, match=r"outside the data folder"):
            read_collection(f"{kind}:{db}#docs")
    finally:
        dio.files._READ_ROOTS.reset(token)


@pytest.mark.parametrize("linked", ["chroma.sqlite3", "folder"])
def test_a_link_inside_a_database_folder_to_outside_the_data_root_is_refused(tmp_path, linked):
    outside = tmp_path / "outside"
    _chroma(outside)
    root = tmp_path / "root"
    db = root / "db"
    if linked == "folder":
        root.mkdir()
        db.symlink_to(outside)  # the whole folder is a link: resolved, it leaves the root
    else:
        db.mkdir(parents=True)
        (db / "chroma.sqlite3").symlink_to(outside / "chroma.sqlite3")
    token = dio.confine_reads(root)
    try:
        with pytest.raises(DataError, match=r"outside the data folder"):
            read_collection(f"chroma:{db}#docs")
    finally:
        dio.files._READ_ROOTS.reset(token)
    assert len(read_collection(f"chroma:{db}#docs").df) == 3  # not confined (the CLI): read through the link


# --- chunk corpora ------------------------------------------------------------------------------------------------


def _chunks(tmp_path, records, golden=None, parent_field=None):
    report = ValidationReport()
    corpus = write(tmp_path / "chunks.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    qrels = write(tmp_path / "g.jsonl", json.dumps(golden) + "\n") if golden else None
    ds = dio.load_dataset(
        corpus=corpus, qrels=qrels, report=report, parent_field=parent_field, require_qrels=False
    )
    return ds, report


def test_chunk_offsets_far_beyond_the_text_are_refused_naming_the_chunk(tmp_path):
    records = [
        {"_id": "d#0", "text": "alpha beta", "start_index": 0},
        {"_id": "d#1", "text": "gamma delta", "start_index": 10**15},  # 10^15 spaces would be rebuilt
    ]
    with pytest.raises(
        DataError, match=r"chunk 'd#1' of document 'd' ends at character 1,000,000,000,000,011.*Fix:"
    ):
        _chunks(tmp_path, records)


def test_chunk_end_disagreeing_with_its_text_is_counted_and_offsets_not_used(tmp_path):
    # the document "alpha beta gamma delta epsilon zeta": chunks at 0-10, 11-22, 23-35; d#0's end is written 35
    records = [
        {"_id": "d#0", "text": "alpha beta", "start": 0, "end": 35},
        {"_id": "d#1", "text": "gamma delta", "start": 11, "end": 22},
        {"_id": "d#2", "text": "epsilon zeta", "start": 23, "end": 35},
    ]
    golden = {"query_id": "q1", "query": "which?", "reference_contexts": ["gamma delta"]}
    ds, report = _chunks(tmp_path, records, golden)
    # with d#0 claiming 0-35 it held the whole span [11, 22) too: d#0 and d#1 relevant; the texts: only d#1
    assert ds.qrels.df["doc_id"].tolist() == ["d#1"]
    problem = report.by_code("chunk_offsets_disagree")[0]
    assert problem.count == 1 and problem.examples[0].startswith("d#0: start 0, end 35 for 10 characters")


def test_overlapping_chunks_whose_texts_disagree_are_reported(tmp_path):
    records = [
        {"_id": "d#0", "text": "alpha beta gamma", "start": 0, "end": 16},
        {"_id": "d#1", "text": "XXXXX delta", "start": 11, "end": 22},  # characters 11-16: "gamma" vs "XXXXX"
        {"_id": "d#2", "text": "delta", "start": 17, "end": 22},  # overlaps d#1 and agrees with it
    ]
    ds, report = _chunks(tmp_path, records)
    problem = report.by_code("chunk_overlap_disagrees")[0]
    assert problem.count == 1 and problem.examples == ("d#0 / d#1 at characters 11-16 of d",)


@pytest.mark.parametrize("nested", [True, False], ids=["metadata-doc_id", "top-level-doc_id"])
def test_doc_id_is_accepted_as_the_parent_key(tmp_path, nested):
    parents = {"c1": "p1", "c2": "p1", "c3": "p2"}

    def record(cid):
        if nested:  # LangChain's MultiVectorRetriever: the parent's id in metadata["doc_id"]
            return {"id": cid, "text": f"text of {cid}", "metadata": {"doc_id": parents[cid]}}
        return {"_id": cid, "text": f"text of {cid}", "doc_id": parents[cid]}

    ds, report = _chunks(tmp_path, [record(c) for c in parents], parent_field="doc_id")
    assert ds.corpus.df["doc_id"].tolist() == ["c1", "c2", "c3"]  # the chunks keep their own ids
    assert dict(ds.corpus.chunks.parent) == parents


@pytest.mark.parametrize("key", ["text", "doc_id"])
def test_the_chunk_s_own_text_or_id_as_parent_key_is_refused(tmp_path, key):
    # no metadata key of that name: "text" grouped chunks by their text, "doc_id" made each chunk its own document
    records = [{"_id": f"c{i}", "text": "same words", "metadata": {"source": "p1"}} for i in range(3)]
    with pytest.raises(DataError) as e:
        _chunks(tmp_path, records, parent_field=key)
    message = str(e.value)
    assert f"parent_field={key!r} names the chunk's own" in message and "metadata keys: 'source'" in message
    assert e.value.param == "parent_field"


# --- security: the app's model folder ------------------------------------------------------------------------------


def test_app_model_folder_outside_the_data_root_is_refused(tmp_path, monkeypatch):
    from diagnose.embed.loading import default_model_path
    from diagnose.ui import sources

    root = tmp_path / "root"
    (root / "models" / "mine").mkdir(parents=True)
    monkeypatch.setenv(sources.DATA_ROOT_ENV, str(root))
    bundled = str(default_model_path())  # a real model folder, outside the root
    with pytest.raises(DataError, match=r"model folder path .* is outside the data folder"):
        sources.check_model(bundled)
    (root / "link").symlink_to(default_model_path())  # a link inside the root to it: resolved, refused too
    with pytest.raises(DataError, match=r"outside the data folder"):
        sources.check_model("link")
    assert sources.check_model("models/mine") == str(root / "models" / "mine")  # inside: its resolved path
    assert (
        sources.check_model("sentence-transformers/all-MiniLM-L6-v2")
        == "sentence-transformers/all-MiniLM-L6-v2"
    )
    assert sources.check_model("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"  # a Hub id: the HF cache


def test_app_refuses_to_load_a_model_folder_outside_the_data_root(tmp_path, monkeypatch):
    from diagnose.embed.loading import default_model_path
    from diagnose.ui import sources, state

    monkeypatch.setenv(sources.DATA_ROOT_ENV, str(tmp_path))
    loaded = []
    monkeypatch.setattr(state.embed, "load_encoder", lambda *a, **k: loaded.append(a))
    with pytest.raises(DataError, match="outside the data folder"):
        state._load_encoder(str(default_model_path()), None)
    assert loaded == []  # never handed to the loader


# --- vector databases and precomputed vectors: one answer for document vectors without query vectors ---------------

DOCS = {"d1": "alpha beta gamma", "d2": "delta epsilon", "d3": "zeta eta theta"}
QUERIES = {"q1": "alpha gamma", "q2": "epsilon"}


def _tiny(tmp_path, corpus=None):
    from diagnose.embed import KeywordEncoder

    write(tmp_path / "c.jsonl", "".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    write(tmp_path / "q.jsonl", "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    write(tmp_path / "qrels.tsv", "q1\td1\t1\nq2\td2\t1\n")
    ds = dio.load_dataset(
        corpus=corpus or tmp_path / "c.jsonl", queries=tmp_path / "q.jsonl", qrels=tmp_path / "qrels.tsv"
    )
    return ds, KeywordEncoder()


def test_document_vectors_alone_are_accepted_and_the_queries_encoded_with_a_warning(tmp_path):
    from diagnose.analysis import Analysis

    ds, enc = _tiny(tmp_path)
    np.save(tmp_path / "docs.npy", np.asarray(enc.encode(list(DOCS.values())), dtype=np.float32))
    write(tmp_path / "docs.txt", "\n".join(DOCS) + "\n")
    emb = {"doc": tmp_path / "docs.npy", "doc_ids": tmp_path / "docs.txt"}
    space = Analysis(ds, encoder=enc, embeddings=emb, cache_dir=tmp_path / "cache").space
    encoded = Analysis(ds, encoder=enc, cache_dir=tmp_path / "cache2").space
    # the same model made the document vectors: the same cosines as encoding everything
    assert np.allclose(space.cosine("q1", "d1"), encoded.cosine("q1", "d1"), atol=1e-6)
    problem = ds.report.by_code("query_model_for_stored_vectors")[0]
    assert "keyword-hash-256" in problem.message and "docs.npy" in problem.message
    with pytest.raises(
        DataError, match="need the document vectors too"
    ):  # query vectors alone: still refused
        _ = Analysis(ds, encoder=enc, embeddings={"query": tmp_path / "docs.npy"}).space


def test_collection_model_other_than_the_query_model_is_named_by_evaluate_dense(
    tmp_path, capsys, monkeypatch
):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    from diagnose import embed
    from diagnose.cli import main

    _, enc = _tiny(tmp_path)
    client = chromadb.PersistentClient(
        path=str(tmp_path / "db"), settings=Settings(anonymized_telemetry=False)
    )
    col = client.create_collection(
        "docs", embedding_function=None, metadata={"embedding_model": "BAAI/bge-small-en-v1.5"}
    )
    col.add(
        ids=list(DOCS), documents=list(DOCS.values()), embeddings=np.asarray(enc.encode(list(DOCS.values())))
    )
    spec = f"chroma:{tmp_path / 'db'}#docs"
    assert read_collection(spec).vectors.doc_model == "BAAI/bge-small-en-v1.5"
    monkeypatch.setattr(embed, "load_encoder", lambda *a, **k: enc)  # the query model: the keyword encoder
    argv = [
        "evaluate",
        "--corpus",
        spec,
        "--queries",
        f"{tmp_path}/q.jsonl",
        "--qrels",
        f"{tmp_path}/qrels.tsv",
    ]
    assert main([*argv, "--baseline", "dense", "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    assert "made by 'BAAI/bge-small-en-v1.5'" in err and "encoded with 'keyword-hash-256'" in err


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "piped"])
def test_judge_queue_on_a_terminal_is_escaped_and_piped_is_exact(tmp_path, capsys, monkeypatch, tty):
    import sys

    from diagnose.cli import main

    write(tmp_path / "c.jsonl", CORPUS + '{"_id": "d\\u001b[2J3", "text": "alpha gamma"}\n')
    write(tmp_path / "q.jsonl", '{"_id": "q1", "text": "alpha"}\n')
    write(tmp_path / "qrels.tsv", "q1\td1\t1\n")
    write(tmp_path / "run.trec", f"q1 Q0 d1 1 2.0 r\nq1 Q0 d{ESC_CLEAR}3 2 1.0 r\n")
    d = str(tmp_path)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    argv = [
        "judge-queue",
        "--corpus",
        f"{d}/c.jsonl",
        "--queries",
        f"{d}/q.jsonl",
        "--qrels",
        f"{d}/qrels.tsv",
    ]
    assert main([*argv, "--run", f"{d}/run.trec"]) == 0
    out = capsys.readouterr().out
    # the unjudged document d<ESC>[2J3 is in the queue: escaped on a terminal, exact in a pipe (merged back by id)
    assert ("d\\x1b[2J3" in out and "\x1b" not in out) if tty else f"d{ESC_CLEAR}3" in out
