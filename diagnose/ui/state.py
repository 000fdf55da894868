"""The app's state: the sidebar, loading with progress, cached wrappers and the analysis bundle.

Caching (what is recomputed when):

- Heavy objects (the data set, the encoder, the vector space, the BM25 index, the baseline runs) live in
  ``st.cache_resource`` *slots*: a cached, process-wide holder per key that is filled once, outside the cached
  function, so that the work can report progress (``st.status`` / ``st.progress``; Streamlit cannot replay progress
  elements drawn from inside a cached function). Keys: the data's fingerprint (paths, sizes, mtimes), the model
  name, the BM25 engine. ``k`` and the failure definition are in no key: changing them never re-encodes or
  re-indexes. Vectors are also cached on disk by :mod:`diagnose.embed`, per model and text.
- Tables (evaluations, diagnoses, map frames) go through ``st.cache_data`` keyed by the same fingerprints plus
  ``k`` / mode; the big inputs are passed as ``_``-prefixed (unhashed) arguments.

Dependency injection: ``DIAGNOSE_ENCODER=keyword`` in the environment (or ``st.session_state["diagnose_encoder"] =
"keyword"``) replaces the default model by :class:`diagnose.embed.KeywordEncoder`, a deterministic fake, so tests
run in seconds. A model typed in the sidebar is still loaded for real.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from diagnose.data import DataError, Dataset, Run
from diagnose.ui import sources

T = TypeVar("T")

ENCODER_ENV = "DIAGNOSE_ENCODER"
ENCODER_STATE_KEY = "diagnose_encoder"
DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2 (bundled)"
BASELINE_DEPTH = 100
CURVE_KS = (1, 2, 3, 5, 10, 20, 30, 50, 100)
FAMILIES = ("hit_rate", "recall", "ndcg", "mrr", "precision", "map")
SOURCES = {
    "demo": "Demo corpus",
    "beir": "BEIR folder",
    "files": "File paths",
    "upload": "Upload files",
}
MODES = {"hit": "hit: no relevant document in the top k", "recall": "recall: any relevant document missed"}

# Page files, relative to app.py (st.Page / st.switch_page / AppTest.switch_page all take these paths).
PAGES: dict[str, tuple[str, str, str]] = {
    "overview": ("diagnose/ui/pages/overview.py", "Overview", ":material/dashboard:"),
    "worst": ("diagnose/ui/pages/worst.py", "Worst queries", ":material/format_list_numbered:"),
    "inspector": ("diagnose/ui/pages/inspector.py", "Query inspector", ":material/search:"),
    "map": ("diagnose/ui/pages/map.py", "Embedding map", ":material/scatter_plot:"),
    "similarity": ("diagnose/ui/pages/similarity.py", "Similarity", ":material/bar_chart:"),
    "compare": ("diagnose/ui/pages/compare.py", "Compare runs", ":material/compare_arrows:"),
    "models": ("diagnose/ui/pages/models.py", "Model choice", ":material/model_training:"),
    "golden": ("diagnose/ui/pages/golden.py", "Golden set", ":material/rule:"),
    "data": ("diagnose/ui/pages/data.py", "Data", ":material/dataset:"),
}


def page_path(name: str) -> str:
    return PAGES[name][0]


# ------------------------------------------------------------------------------------------------ settings


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

    @property
    def model_label(self) -> str:
        if self.model:
            return self.model
        if self.override == "keyword":
            return "keyword-hash (test encoder, DIAGNOSE_ENCODER=keyword)"
        return DEFAULT_MODEL_LABEL


def encoder_override() -> str | None:
    """``"keyword"`` when the environment or the session asks for the fake encoder, else None."""
    value = os.environ.get(ENCODER_ENV) or st.session_state.get(ENCODER_STATE_KEY)
    if not value:
        return None
    value = str(value).strip().lower()
    return value if value == "keyword" else None


def _spec_from_sidebar(kind: str) -> sources.DataSpec:
    if kind == "demo":
        return sources.demo_spec()
    if kind == "beir":
        folder = st.text_input("BEIR folder", key="beir_dir", placeholder="/path/to/scifact")
        split = st.text_input("qrels split", value="test", key="beir_split")
        runs = st.text_area("Run files, one per line ([NAME=]PATH)", key="beir_runs", height=80)
        in_folder = st.checkbox("Also load the runs in FOLDER/runs/", value=True, key="beir_folder_runs")
        return sources.beir_spec(folder, split, runs, in_folder)
    if kind == "files":
        corpus = st.text_input("Corpus (jsonl, csv, tsv, parquet, or a folder of .txt/.md)", key="f_corpus")
        queries = st.text_input("Queries (jsonl or tsv)", key="f_queries")
        qrels = st.text_input("Qrels (BEIR tsv, TREC, jsonl)", key="f_qrels")
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
    with st.sidebar:
        st.subheader("Data")
        kind = st.selectbox("Source", list(SOURCES), format_func=SOURCES.__getitem__, key="src_kind")
        spec, err = None, None
        try:
            spec = _spec_from_sidebar(kind)
        except DataError as e:
            err = str(e)
        st.subheader("Analysis")
        model_text = st.text_input(
            "Embedding model",
            value=DEFAULT_MODEL_LABEL,
            key="model",
            help="A sentence-transformers model name or a local folder. The default is bundled and works offline.",
        ).strip()
        model = None if model_text in ("", DEFAULT_MODEL_LABEL) else model_text
        if override and model is None:
            st.caption("Test encoder: `DIAGNOSE_ENCODER=keyword` replaces the default model.")
        k = int(st.number_input("k (cut-off)", min_value=1, max_value=1000, value=10, step=1, key="k"))
        mode = st.radio("A query fails when", list(MODES), format_func=MODES.__getitem__, key="mode")
        engine = st.selectbox(
            "BM25 engine",
            ["bm25s", "rank_bm25"],
            key="bm25_engine",
            help="bm25s = Lucene BM25 (Anserini settings)",
        )
    s = Settings(spec, err, model, override, k, mode, engine)
    st.session_state["_settings"] = s
    return s


# ------------------------------------------------------------------------------------------------ slots


class _Slot:
    """A process-wide holder for one heavy object, filled once (under a lock) outside any cached function."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready = False
        self.value: Any = None


@st.cache_resource(show_spinner=False, max_entries=4)
def _dataset_slot(key: str) -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=6)
def _encoder_slot(model: str | None, override: str | None) -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=6)
def _space_slot(key: str, encoder: str) -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=4)
def _bm25_slot(key: str, engine: str) -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=6)
def _baselines_slot(key: str, encoder: str, engine: str) -> _Slot:
    return _Slot()


class _Progress:
    """An ``st.status`` box created only when something actually has to be computed."""

    def __init__(self) -> None:
        self.box: Any = None

    def step(self, label: str) -> Any:
        if self.box is None:
            self.box = st.status("Preparing the analysis ...", expanded=True)
        self.box.update(label=label + " ...")
        self.box.write(label)
        return self.box

    def bar(self, label: str) -> Callable[[int, int], None]:
        box = self.step(label)
        bar = box.progress(0.0, text=label)

        def update(done: int, total: int) -> None:
            frac = min(max(done / total, 0.0), 1.0) if total else 1.0
            bar.progress(frac, text=f"{label}: {done:,} / {total:,}")

        return update

    def done(self, label: str) -> None:
        if self.box is not None:
            self.box.update(label=label, state="complete", expanded=False)

    def fail(self, label: str) -> None:
        if self.box is not None:
            self.box.update(label=label, state="error", expanded=False)


def _fill(slot: _Slot, build: Callable[[], T]) -> T:
    if not slot.ready:
        with slot.lock:
            if not slot.ready:
                slot.value = build()
                slot.ready = True
    return slot.value


# ------------------------------------------------------------------------------------------------ the bundle


@dataclass
class Bundle:
    """Everything the pages read. Built by :func:`setup`; pages get it with :func:`bundle`."""

    settings: Settings
    key: str
    ds: Dataset
    encoder: Any  # the encoder of the sidebar's model
    space: Any  # diagnose.space.VectorSpace
    bm25: Any  # diagnose.lexical.BM25Index
    runs: dict[str, Run]
    kinds: dict[str, str]  # run name -> "your run" | "baseline"
    golden: list[str]

    @property
    def encoder_name(self) -> str:
        """The encoder's identity (part of every cache key)."""
        return self.encoder.name

    @property
    def encoder_label(self) -> str:
        return label_of(self.encoder)

    @property
    def k(self) -> int:
        return self.settings.k

    @property
    def mode(self) -> str:
        return self.settings.mode

    @property
    def run_names(self) -> list[str]:
        return list(self.runs)

    @property
    def selected_run(self) -> str:
        name = st.session_state.get("run")
        return name if name in self.runs else self.run_names[0]

    def document(self, doc_id: str) -> tuple[str, str] | None:
        """``(title, text)`` of a corpus document, None when the id is not in the corpus."""
        row = self.space.doc_row.get(doc_id)
        if row is None:
            return None
        df = self.ds.corpus.df
        return str(df["title"].iat[row] or ""), str(df["text"].iat[row] or "")

    def grades(self, query_id: str) -> dict[str, int]:
        """doc id -> grade of every judgement of a query."""
        df = self.ds.qrels.df
        sel = df[df["query_id"] == query_id]
        return {str(d): int(g) for d, g in zip(sel["doc_id"], sel["relevance"], strict=True)}

    def metric_names(self, ks: tuple[int, ...]) -> list[str]:
        from diagnose.metrics import expand_metrics

        return expand_metrics([f"{fam}@{k}" for fam in FAMILIES for k in sorted(set(ks))], [])

    def evaluations(self, ks: tuple[int, ...] | None = None) -> dict[str, Any]:
        """run name -> Evaluation with every family at ``ks`` (default: the chosen k and the curve cut-offs)."""
        ks = tuple(sorted(set(ks or (*CURVE_KS, self.k))))
        return _evaluations(
            self.key, self.encoder_name, self.settings.bm25_engine, tuple(self.runs), ks, _b=self
        )

    def metrics_table(self) -> pd.DataFrame:
        """One row per run at the chosen k: the metric values (and their quality bands in ``band:<metric>``)."""
        from diagnose.metrics import quality_band

        evs = self.evaluations()
        k = self.k
        rows = []
        for name, ev in evs.items():
            row: dict[str, Any] = {"run": name, "kind": self.kinds[name], "queries": ev.n_queries}
            for fam in FAMILIES:
                m = f"{fam}@{k}"
                row[m] = float(ev.aggregate[m])
            for fam in FAMILIES:
                m = f"{fam}@{k}"
                row[f"band:{m}"] = quality_band(m, row[m])
            row["missing queries"] = len(ev.missing_queries)
            rows.append(row)
        return pd.DataFrame(rows)

    def diagnosis(self, run_name: str | None = None) -> Any:
        """The :class:`diagnose.failures.Diagnosis` of a run at the chosen k and failure definition."""
        name = run_name or self.selected_run
        return _diagnosis(
            self.key, self.encoder_name, self.settings.bm25_engine, name, self.k, self.mode, _b=self
        )


@st.cache_data(show_spinner="Scoring the runs ...", max_entries=16)
def _evaluations(key: str, encoder: str, engine: str, names: tuple[str, ...], ks: tuple[int, ...], *, _b):
    from diagnose.metrics import evaluate_many

    return evaluate_many(_b.ds.qrels, {n: _b.runs[n] for n in names}, _b.metric_names(ks))


@st.cache_data(show_spinner="Diagnosing the failures ...", max_entries=64)
def _diagnosis(key: str, encoder: str, engine: str, run: str, k: int, mode: str, *, _b):
    from diagnose.failures import diagnose_run

    return diagnose_run(_b.ds, _b.runs[run], _b.space, _b.bm25, k=k, mode=mode)


def embedding_map(b: Bundle, run_name: str, cap: int) -> Any:
    """The :class:`diagnose.projection.EmbeddingMap` of a run's failures (cached: st.cache_data, and on disk).

    The first computation of a map in this session runs inside an ``st.status`` box; later ones are instant.
    """
    key = (b.key, b.encoder_name, b.settings.bm25_engine, run_name, b.k, b.mode, cap)
    seen = st.session_state.setdefault("_maps_seen", set())
    diag = b.diagnosis(run_name)
    if key in seen:
        return _embedding_map(*key, _b=b, _diag=diag)
    with st.status(f"Projecting documents and queries with UMAP (at most {cap:,} points) ...") as box:
        emap = _embedding_map(*key, _b=b, _diag=diag)
        how = (
            "loaded from the cache"
            if emap.projection.cached
            else f"computed in {emap.projection.seconds:.1f} s"
        )
        box.update(
            label=f"Map ready: {emap.sample.n_points:,} points, {how}", state="complete", expanded=False
        )
    seen.add(key)
    return emap


@st.cache_data(show_spinner=False, max_entries=16)
def _embedding_map(key, encoder, engine, run, k, mode, cap, *, _b, _diag):
    from diagnose import projection

    failed = projection.failed_queries_from(_diag.failures, _b.runs[run].ranked_lists(), k)
    sp = _b.space
    q_text = _b.ds.queries.text_of()
    return projection.build_map(
        doc_ids=list(sp.doc_ids),
        doc_texts=_b.ds.corpus.texts(),
        doc_vecs=sp.doc_vecs,
        query_ids=list(sp.query_ids),
        query_texts=[q_text.get(q, "") for q in sp.query_ids],
        query_vecs=sp.query_vecs,
        failed=failed,
        cap=cap,
        report=_b.ds.report,
    )


def spaces_for(b: Bundle) -> dict[str, Any]:
    """label -> VectorSpace of every model encoded in this session on this data (the current model first)."""
    out = {b.encoder_label: b.space}
    for label, name in st.session_state.get("_models_seen", {}).items():
        if label not in out:
            slot = _space_slot(b.key, name)
            if slot.ready:
                out[label] = slot.value
    return out


def comparisons(b: Bundle, reference: str, metrics: tuple[str, ...]) -> list[Any]:
    """:func:`diagnose.stats.compare_all` of every run against ``reference`` (cached per data, model, k)."""
    return _comparisons(
        b.key, b.encoder_name, b.settings.bm25_engine, tuple(b.runs), reference, metrics, b.k, _b=b
    )


@st.cache_data(show_spinner="Running the paired tests ...", max_entries=32)
def _comparisons(key, encoder, engine, names, reference, metrics, k, *, _b):
    from diagnose.stats import compare_all

    evs = _b.evaluations()
    return compare_all({n: evs[n].per_query for n in names}, reference, list(metrics))


def label_noise(b: Bundle, run_name: str) -> Any:
    """:func:`diagnose.failures.find_label_noise` of a run at the chosen k (cached per data, model and k)."""
    return _label_noise(b.key, b.encoder_name, run_name, b.k, _b=b)


@st.cache_data(show_spinner="Looking for label noise ...", max_entries=16)
def _label_noise(key, encoder, run, k, *, _b):
    from diagnose.failures import find_label_noise

    return find_label_noise(_b.ds, _b.runs[run], _b.space, k=k)


def hubness_of(b: Bundle, run_name: str) -> Any:
    """:func:`diagnose.failures.hubness` of a run at the chosen k."""
    from diagnose.failures import hubness

    return hubness(b.runs[run_name], k=b.k, n_docs=len(b.ds.corpus))


def fusion_whatif(b: Bundle, a: str, other: str) -> pd.DataFrame:
    """:func:`diagnose.compare.fusion_whatif` of two runs at the chosen k (cached per data, model and k)."""
    return _fusion_whatif(b.key, b.encoder_name, b.settings.bm25_engine, a, other, b.k, _b=b)


@st.cache_data(show_spinner="Fusing the two runs ...", max_entries=32)
def _fusion_whatif(key, encoder, engine, a, other, k, *, _b):
    from diagnose.compare import fusion_whatif

    return fusion_whatif(_b.ds.qrels, [_b.runs[a], _b.runs[other]], k=k)


def model_comparison(b: Bundle, encoders: list[Any], spaces: list[Any], metric: str) -> Any:
    """:func:`diagnose.models.compare_models` of ``encoders`` (their spaces already built), cached per data and k."""
    names = tuple(e.name for e in encoders)
    return _model_comparison(
        b.key, names, b.settings.bm25_engine, b.k, metric, _b=b, _enc=encoders, _sp=spaces
    )


@st.cache_data(show_spinner="Scoring each model's dense run ...", max_entries=16)
def _model_comparison(key, names, engine, k, metric, *, _b, _enc, _sp):
    from diagnose.models import compare_models

    return compare_models(
        _b.ds, [None] * len(_enc), k=k, metric=metric, encoders=_enc, spaces=_sp, bm25=_b.bm25
    )


def _load_encoder(model: str | None, override: str | None):
    from diagnose import embed

    if model is None and override == "keyword":
        return embed.KeywordEncoder()
    try:
        return embed.load_encoder(model)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the model loader raised, the user sees a message
        raise DataError(
            f"Could not load the embedding model {model or DEFAULT_MODEL_LABEL!r}: {type(e).__name__}: {e}. "
            "Type a sentence-transformers model name or the path of a local model folder, or clear the field "
            "to use the bundled default."
        ) from e


def label_of(encoder: Any) -> str:
    """How an encoder is called on the page: its label (a model name or path), else its identity."""
    return str(getattr(encoder, "label", "") or encoder.name)


def _encoder(model: str | None, override: str | None, label: str, prog: _Progress) -> Any:
    """The encoder of ``model`` (None = the default), loaded once per process."""

    def load():
        prog.step(f"Loading the embedding model {label}")
        return _load_encoder(model, override)

    return _fill(_encoder_slot(model, override), load)


def _space(key: str, ds: Dataset, golden: list[str], encoder: Any, prog: _Progress) -> Any:
    """The corpus and the golden queries embedded by ``encoder`` (once per process and data; on disk too).

    Every model embedded here is remembered in the session, for the Similarity page."""

    def encode():
        from diagnose.space import VectorSpace

        cb = prog.bar(
            f"Encoding {len(ds.corpus):,} documents and {len(golden):,} queries with {label_of(encoder)}"
        )
        return VectorSpace.build(ds, golden, encoder=encoder, progress=cb, report=ds.report)

    space = _fill(_space_slot(key, encoder.name), encode)
    st.session_state.setdefault("_models_seen", {})[label_of(encoder)] = encoder.name
    return space


def model_space(b: Bundle, model: str) -> tuple[Any, Any]:
    """``(encoder, VectorSpace)`` of another model (a name or a local folder) on the bundle's data, with progress.

    Raises :class:`DataError` naming the model when it cannot be loaded."""
    prog = _Progress()
    try:
        encoder = _encoder(model, None, model, prog)
        space = _space(b.key, b.ds, b.golden, encoder, prog)
    except DataError:
        prog.fail(f"Could not load {model}")
        raise
    prog.done(f"{label_of(encoder)} ready")
    return encoder, space


def build_bundle(s: Settings) -> Bundle | None:
    """Load and prepare everything, with progress; show problems (never raise them). None when it failed."""
    if s.spec is None:
        st.info(s.spec_error or "Choose the data in the sidebar.")
        return None
    prog = _Progress()
    try:
        key = s.spec.fingerprint()

        def read() -> Dataset:
            from diagnose.io import load_dataset

            prog.step(f"Reading the {s.spec.label}")
            return load_dataset(**s.spec.load_kwargs())

        ds = _fill(_dataset_slot(key), read)
        st.session_state["_dataset"] = ds
        if ds.corpus is None or ds.queries is None:
            raise DataError(
                "The app needs the corpus and the queries (their texts are embedded and searched). "
                "Choose a BEIR folder, or give the corpus and queries files."
            )
        texts = ds.queries.text_of()
        golden = [q for q in ds.qrels.queries_with_relevant() if q in texts]
        if not golden:
            raise DataError(
                "No judged query has a relevant document (grade > 0) and a text in the queries file, so there is "
                "nothing to evaluate. Check that the qrels and the queries use the same query ids."
            )

        encoder = _encoder(s.model, s.override, s.model_label, prog)
        space = _space(key, ds, golden, encoder, prog)

        def index():
            from diagnose.lexical import BM25Index

            prog.step(f"Building the BM25 index ({s.bm25_engine})")
            return BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids), engine=s.bm25_engine)

        bm25 = _fill(_bm25_slot(key, s.bm25_engine), index)

        def baselines():
            from diagnose import baselines as bl

            prog.step(f"Computing the baseline runs (BM25, dense, hybrid; depth {BASELINE_DEPTH})")
            b = bl.bm25_run(ds.corpus, ds.queries, golden, depth=BASELINE_DEPTH, index=bm25, report=ds.report)
            d = bl.dense_run(
                space.doc_vecs, space.query_vecs, space.doc_ids, space.query_ids, depth=BASELINE_DEPTH
            )
            return {"bm25": b, "dense": d, "hybrid": bl.hybrid_run(b, d, depth=BASELINE_DEPTH)}

        base = _fill(_baselines_slot(key, encoder.name, s.bm25_engine), baselines)
    except DataError as e:
        prog.fail("Could not prepare the analysis")
        st.error(str(e))
        return None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        prog.fail("Could not prepare the analysis")
        st.error(f"Could not read the data: {type(e).__name__}: {e}")
        return None
    prog.done(
        f"Ready: {len(ds.corpus):,} documents, {len(golden):,} golden queries, model {label_of(encoder)}"
    )

    runs: dict[str, Run] = dict(ds.runs)
    kinds = {n: "your run" for n in runs}
    for base_name, new_name in sources.unique_names(base, runs).items():
        r = base[base_name]
        runs[new_name] = r if new_name == r.name else replace(r, name=new_name)
        kinds[new_name] = "baseline"
    return Bundle(s, key, ds, encoder, space, bm25, runs, kinds, golden)


def setup(page: Any = None) -> Bundle | None:
    """Called by app.py on every run, before the page: sidebar, loading, run picker, links and downloads."""
    s = sidebar()
    if page is not None:
        st.session_state["_page_title"] = getattr(page, "title", "")
    st.session_state["_dataset"] = None
    b = build_bundle(s)
    st.session_state["_bundle"] = b
    ds = st.session_state.get("_dataset")
    if b is None:
        if ds is not None:
            _report_link(ds)
        return None
    with st.sidebar:
        names = b.run_names
        pending = st.session_state.pop("_pending_run", None)
        if pending in names:
            st.session_state["run"] = pending
        if st.session_state.get("run") not in names:
            st.session_state["run"] = names[0]
        st.selectbox(
            "Run to diagnose",
            names,
            key="run",
            format_func=lambda n: f"{n} ({b.kinds[n]})",
            help="The run the Worst queries, Inspector, Map and Similarity pages look at.",
        )
        _report_link(b.ds)
        from diagnose.ui import downloads

        downloads.sidebar_downloads(b)
    return b


def run_page(page: Any) -> None:
    """Run the chosen page; an input problem it runs into is shown as a message, never as a traceback."""
    try:
        page.run()
    except DataError as e:
        st.error(str(e))


def _report_link(ds: Dataset) -> None:
    """The sidebar link to the validation report (the Data page), with the number of warnings."""
    n = len(ds.report.warnings)
    st.sidebar.page_link(
        page_path("data"),
        label=f"Validation report ({n} warning{'s' if n != 1 else ''})",
        icon=":material/fact_check:" if not n else ":material/warning:",
    )


def bundle() -> Bundle:
    """The bundle of this run (built by :func:`setup`), or stop the page: the problem was already shown."""
    b = st.session_state.get("_bundle")
    if b is None:
        st.stop()
    return b


def open_query(query_id: str, run: str | None = None) -> None:
    """Remember the query (and the run to diagnose it in, when given) and open it in the inspector.

    The sidebar's run picker already exists in this script run, so a new run is handed over through
    ``_pending_run`` and applied by :func:`setup` before the picker is drawn again."""
    st.session_state["query_id"] = query_id
    if run is not None and run != st.session_state.get("run"):
        st.session_state["_pending_run"] = run
    st.switch_page(page_path("inspector"))
