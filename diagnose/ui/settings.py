"""The sidebar: what the user chose (data source, model, precision, k, failure definition, BM25 engine, identical
ids, precomputed vectors) as a :class:`Settings` record, and the live retrievers given by whoever started the app."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from diagnose import defaults
from diagnose.data import DataError
from diagnose.embed import DEFAULT_MODEL
from diagnose.retrievers import parse_retriever_spec
from diagnose.ui import launch, sources
from diagnose.ui.text import escape_md

ENCODER_ENV = "DIAGNOSE_ENCODER"
ENCODER_STATE_KEY = "diagnose_encoder"
RETRIEVERS_ENV = "DIAGNOSE_RETRIEVERS"
SOURCES = {
    "launch": "Your data (--data)",
    "demo": "Demo corpus",
    "beir": "BEIR folder",
    "files": "File paths",
    "upload": "Upload files",
}
MODES = {"hit": "hit: no relevant document in the top k", "recall": "recall: any relevant document missed"}


@dataclass(frozen=True)
class Settings:
    """What the sidebar chose. ``spec`` is None when the data source is incomplete (``spec_error`` says why)."""

    spec: sources.DataSpec | None
    spec_error: str | None
    model: str | None  # None = the bundled default
    override: str | None  # "keyword": the fake encoder replaces the default model
    k: int
    mode: str
    bm25_engine: str
    embeddings: tuple[
        tuple[str, str], ...
    ] = ()  # precomputed vectors: ("doc", path), ("query", path), ids files
    precision: str = defaults.PRECISION  # "fast" (bf16 where the CPU has it) or "exact" (fp32)
    ignore_identical_ids: bool = False  # BEIR's convention: drop a retrieved document whose id is the query's

    @property
    def model_label(self) -> str:
        if self.model:
            return self.model
        if self.override == "keyword":
            return "keyword-hash (test encoder, DIAGNOSE_ENCODER=keyword)"
        return DEFAULT_MODEL


def encoder_override() -> str | None:
    """``"keyword"`` when the environment or the session asks for the fake encoder, else None."""
    value = os.environ.get(ENCODER_ENV) or st.session_state.get(ENCODER_STATE_KEY)
    if not value:
        return None
    value = str(value).strip().lower()
    return value if value == "keyword" else None


def _spec_from_sidebar(kind: str) -> sources.DataSpec:
    if kind == "launch":
        return sources.launch_spec(launch.read_launch())
    if kind == "demo":
        return sources.demo_spec()
    if kind == "beir":
        folder = st.text_input("BEIR folder", key="beir_dir", placeholder="/path/to/scifact")
        split = st.text_input("qrels split", value=defaults.SPLIT, key="beir_split")
        runs = st.text_area("Run files, one per line ([NAME=]PATH)", key="beir_runs", height=80)
        in_folder = st.checkbox("Also load the runs in FOLDER/runs/", value=True, key="beir_folder_runs")
        return sources.beir_spec(folder, split, runs, in_folder)
    if kind == "files":
        corpus = st.text_input(
            "Corpus (jsonl, csv, tsv, parquet, a folder of .txt/.md, or a vector database: chroma:PATH#COLLECTION, "
            "lancedb:PATH#TABLE, qdrant:PATH#COLLECTION)",
            key="f_corpus",
        )
        queries = st.text_input("Queries (jsonl or tsv; none: a golden set's own)", key="f_queries")
        qrels = st.text_input(
            "Qrels or golden set (BEIR tsv, TREC, jsonl; LlamaIndex, RAGAS: see docs/formats.md)",
            key="f_qrels",
        )
        runs = st.text_area("Run files, one per line ([NAME=]PATH)", key="f_runs", height=80)
        return sources.files_spec(corpus, queries, qrels, runs)
    up_c = st.file_uploader("Corpus", key="up_corpus")
    up_q = st.file_uploader("Queries", key="up_queries")
    up_r = st.file_uploader("Qrels", key="up_qrels")
    up_runs = st.file_uploader("Runs (one or more)", key="up_runs", accept_multiple_files=True)

    def up(f: Any) -> sources.Upload | None:
        return sources.Upload(f.name, f.getvalue()) if f is not None else None

    return sources.upload_spec(up(up_c), up(up_q), up(up_r), [up(f) for f in up_runs or []])  # type: ignore[misc]


def sidebar() -> Settings:
    """Draw the data / model / k / failure-definition controls (entry script: they keep their state across pages)."""
    override = encoder_override()
    given = launch.read_launch()
    if given.error:
        # the user's text escaped (a path's "_" is no emphasis), the usage in code ("--" is no dash)
        st.error(escape_md(given.error) + " " + launch.HINT.format(usage=f"`{launch.USAGE}`"))
    kinds = [k for k in SOURCES if k != "launch" or given.data]  # the data the app was started on comes first
    with st.sidebar:
        st.subheader("Data")
        kind = st.selectbox("Source", kinds, format_func=SOURCES.__getitem__, key="src_kind")
        spec, err = None, None
        try:
            spec = _spec_from_sidebar(kind)
        except DataError as e:
            err = str(e)
        spec = _with_parent_field(spec)
        st.subheader("Analysis")
        model_text = st.text_input(
            "Embedding model",
            value=DEFAULT_MODEL,
            key="model",
            help="A sentence-transformers model name or a local folder. The default is bundled and works offline.",
        ).strip()
        model = None if model_text in ("", DEFAULT_MODEL) else model_text
        if override and model is None:
            st.caption("Test encoder: `DIAGNOSE_ENCODER=keyword` replaces the default model.")
        k = int(
            st.number_input("k (cut-off)", min_value=1, max_value=1000, value=defaults.K, step=1, key="k")
        )
        mode = st.radio("A query fails when", list(MODES), format_func=MODES.__getitem__, key="mode")
        engine = st.selectbox(
            "BM25 engine",
            list(defaults.BM25_ENGINES),
            key="bm25_engine",
            help="bm25s = Lucene BM25 (Anserini settings)",
        )
        precision = st.selectbox(
            "Encoding precision",
            list(defaults.PRECISIONS),
            key="precision",
            help="fast: the model's transformer in bfloat16 on CPUs that support it (vectors within cosine 0.9999 of "
            "fp32, ~3x faster here); exact: fp32, as sentence-transformers encodes. Cached separately.",
        )
        identical = st.checkbox(
            "Ignore identical ids",
            key="ignore_identical_ids",
            help="Drop a retrieved document whose id is the query's before scoring, the next ones moving up "
            "(BEIR's convention where queries are documents: ArguAna, Touche, CQADupStack, Quora; "
            "--ignore-identical-ids).",
        )
        embeddings, emb_err = _precomputed_vectors()
        if emb_err is not None:
            err = err or emb_err
            spec = None
    s = Settings(spec, err, model, override, k, mode, engine, embeddings, precision, bool(identical))
    st.session_state["_settings"] = s
    return s


def _with_parent_field(spec: sources.DataSpec | None) -> sources.DataSpec | None:
    """The sidebar's "Parent document field" box (``parent_field=`` of :func:`diagnose.load`) on ``spec``."""
    key = st.text_input(
        "Parent document field",
        key="parent_field",
        placeholder="empty: chunk ids DOC#N are detected",
        help="For a corpus of chunks: the metadata key holding each chunk's document (--parent-field). Empty: ids "
        "written DOCUMENT#N are detected; otherwise the corpus is read as documents.",
    ).strip()
    return replace(spec, parent_field=key) if spec is not None and key else spec


def _precomputed_vectors() -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The sidebar's "Precomputed vectors" expander: the (kind, checked path) pairs typed, and the error of a path
    that does not pass the check (then no pairs)."""
    embeddings: tuple[tuple[str, str], ...] = ()
    with st.expander("Precomputed vectors (optional)"):
        st.caption(
            "Your production index's vectors instead of encoding: .npy or .parquet (id + vector columns); "
            "for .npy also the id files, one id per line. Paths under the data folder."
        )
        fields = [
            ("doc", "Document vectors"),
            ("query", "Query vectors"),
            ("doc_ids", "Document ids (.npy)"),
            ("query_ids", "Query ids (.npy)"),
        ]
        typed = {key: st.text_input(label, key=f"emb_{key}").strip() for key, label in fields}
        if typed["doc"] or typed["query"]:
            try:
                embeddings = tuple(
                    (key, sources.check_path(path, label))
                    for (key, label), path in zip(fields, typed.values(), strict=True)
                    if path
                )
            except DataError as e:
                return (), str(e)
    return embeddings, None


def retriever_specs() -> list[tuple[str, str]]:
    """Live retrievers chosen by whoever started the app (never from the page): ``streamlit run app.py --
    --retriever NAME=module:attr`` (repeatable), or ``DIAGNOSE_RETRIEVERS="NAME=module:attr;NAME2=..."``."""
    import sys

    items = [
        a.split("=", 1)[1] if a.startswith("--retriever=") else a
        for i, a in enumerate(sys.argv[1:], start=1)
        if a.startswith("--retriever=") or (i > 1 and sys.argv[i - 1] == "--retriever")
    ]
    items += [x for x in os.environ.get(RETRIEVERS_ENV, "").split(";") if x.strip()]
    try:
        return [parse_retriever_spec(item) for item in items]
    except DataError as e:  # the parameter is set where the app was started: name both ways of setting it
        raise DataError(f"--retriever (or {RETRIEVERS_ENV}): {e}", param=e.param) from None
