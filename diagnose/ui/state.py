"""The app's state: the sidebar, the one :class:`~diagnose.analysis.Analysis` per data and model, and progress.

The pipeline itself lives in the library (:class:`diagnose.analysis.Analysis`); this module only keeps it alive
across reruns and draws its progress:

- Heavy objects live in ``st.cache_resource`` *slots* (a process-wide holder per key, filled once under a lock,
  outside any cached function, so the work can draw ``st.status`` progress): the data set (key: the data's
  fingerprint: paths, sizes, mtimes), the encoder (key: the model), and the analysis (key: data, encoder identity,
  BM25 engine). The analysis memoises everything else itself (vectors, BM25 index, baselines, evaluations,
  diagnoses per k and failure definition, maps), so changing ``k`` or the failure definition never re-encodes or
  re-indexes, and no hand-built cache key can go stale. Vectors are also cached on disk by :mod:`diagnose.embed`.

Dependency injection: ``DIAGNOSE_ENCODER=keyword`` in the environment (or ``st.session_state["diagnose_encoder"] =
"keyword"``) replaces the default model by :class:`diagnose.embed.KeywordEncoder`, a deterministic fake, so tests
run in seconds. A model typed in the sidebar is still loaded for real.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
import streamlit as st

from diagnose import defaults, embed
from diagnose.analysis import Analysis
from diagnose.data import DataError, Dataset, Run
from diagnose.io import confine_reads, load_dataset
from diagnose.metrics import DEFAULT_FAMILIES, HEADLINE
from diagnose.report import band_of
from diagnose.retrievers import load_retriever
from diagnose.runtime.memory import is_out_of_memory
from diagnose.ui import downloads, sources

# The pages talk to this module only: what they use from the sidebar and progress modules is re-exported here.
from diagnose.ui.errors import show_error as show_error
from diagnose.ui.navigation import PAGES as PAGES
from diagnose.ui.navigation import WITHOUT_GOLDEN_SET, page_path
from diagnose.ui.navigation import open_query as open_query
from diagnose.ui.navigation import run_page as run_page
from diagnose.ui.progress import Background, ProjectionBackground, StatusProgress
from diagnose.ui.settings import Settings, retriever_specs, sidebar
from diagnose.ui.text import escape_md

if TYPE_CHECKING:
    from diagnose.embed import Encoder
    from diagnose.failures import Diagnosis
    from diagnose.metrics import Evaluation
    from diagnose.projection import EmbeddingMap
    from diagnose.search.space import VectorSpace

T = TypeVar("T")

ICON = str(Path(__file__).with_name("icon.png"))
ENCODER_DELAY_ENV = (
    "DIAGNOSE_ENCODER_DELAY"  # seconds per text for the keyword encoder: a slow model in tests
)
FOREGROUND_ENV = (
    "DIAGNOSE_FOREGROUND_SECONDS"  # how long a page waits for the vectors before drawing without them
)
FOREGROUND_SECONDS = 3.0
CURVE_KS = (1, 2, 3, 5, 10, 20, 30, 50, 100)
#: The app's metric families: every family computed at each k by default (``metrics.DEFAULT_FAMILIES``, from the
#: registry's ``by_default``), the headline ones (``metrics.HEADLINE``) first, in the order of the app's tables (hit
#: rate first: did a relevant document reach the top k at all), then the others in the registry's order.
_HEADLINE_IN_APP_ORDER = ("hit_rate", "recall", "ndcg", "mrr")
FAMILIES = (*_HEADLINE_IN_APP_ORDER, *(f for f in DEFAULT_FAMILIES if f not in HEADLINE))


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
def _encoder_slot(model: str | None, override: str | None, precision: str = "fast") -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=6)
def _analysis_slot(
    key: str, encoder: str, engine: str, retrievers: tuple[tuple[str, str], ...], identical: bool = False
) -> _Slot:
    return _Slot()


@st.cache_resource(show_spinner=False, max_entries=16)
def _retriever(target: str) -> Any:
    """The user's retriever object for ``module:attr`` (imported once per process)."""

    return load_retriever(target)


def _fill(slot: _Slot, build: Callable[[], T]) -> T:
    if not slot.ready:
        with slot.lock:
            if not slot.ready:
                slot.value = build()
                slot.ready = True
    return slot.value


@st.cache_resource(show_spinner=False, max_entries=6)
def _background(
    key: str, encoder: str, engine: str, retrievers: tuple[tuple[str, str], ...], identical: bool = False
) -> Background:
    return Background()


@st.cache_resource(show_spinner=False, max_entries=6)
def _projection_background(key: str, encoder: str, engine: str) -> ProjectionBackground:
    return ProjectionBackground()


def whole_map_background(b: Bundle, run_name: str) -> ProjectionBackground:
    """The whole-collection projection of the bundle's data and model, started if it is not running yet (one per
    data and model; it outlives script runs and page switches)."""
    bg = _projection_background(b.key, b.encoder_name, b.settings.bm25_engine)
    bg.start_map(b.analysis, run_name, b.k, b.mode)
    return bg


@dataclass
class Bundle:
    """What the pages read: the sidebar's settings and the analysis. Built by :func:`setup`; pages get it with
    :func:`bundle`. ``k`` and the failure definition come from the sidebar and are passed to every call."""

    settings: Settings
    key: str
    analysis: Analysis
    background: Background | None = None

    @property
    def ready(self) -> bool:
        """Whether the vectors (hence the diagnosis, the dense and hybrid baselines) are computed."""
        return self.analysis.vectors_ready

    @property
    def has_golden(self) -> bool:
        """False while there is no golden set yet (a query log and a corpus: the Judge page builds one)."""
        return bool(len(self.analysis.dataset.qrels))

    @property
    def ds(self) -> Dataset:
        return self.analysis.dataset

    @property
    def runs(self) -> dict[str, Run]:
        """Every run once the vectors are ready; before, the runs given and the BM25 baseline."""
        return self.analysis.ready_runs()

    @property
    def kinds(self) -> dict[str, str]:
        runs = self.runs
        return {n: kind for n, kind in self.analysis.kinds.items() if n in runs}

    @property
    def golden(self) -> list[str]:
        return self.analysis.golden

    @property
    def encoder_name(self) -> str:
        """The encoder's identity (part of every cache key)."""
        return self.analysis.encoder.name

    @property
    def encoder_label(self) -> str:
        """How the analysis' model is called (:attr:`diagnose.analysis.Analysis.model_label`)."""
        return self.analysis.model_label

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
        return self.analysis.document(doc_id)

    def metric_names(self, ks: tuple[int, ...]) -> list[str]:
        return self.analysis.metric_names([f"{fam}@{k}" for fam in FAMILIES for k in sorted(set(ks))])

    def evaluations(self, ks: tuple[int, ...] | None = None, level: str = "chunk") -> dict[str, Evaluation]:
        """run name -> Evaluation with every family at ``ks`` (default: the chosen k and the curve cut-offs);
        ``level="document"``: a chunk corpus' document level (:meth:`Analysis.document_evaluations`)."""
        ks = tuple(sorted(set(ks or (*CURVE_KS, self.k))))
        a = self.analysis
        scored = a.document_evaluations if level == "document" else a.evaluations
        return scored(self.metric_names(ks), runs=None if self.ready else list(self.runs))

    def metrics_table(self, level: str = "chunk") -> pd.DataFrame:
        """One row per run at the chosen k: the metric values (and their quality bands in ``band:<metric>``)."""

        evs = self.evaluations(level=level)
        k = self.k
        rows = []
        for name, ev in evs.items():
            row: dict[str, Any] = {"run": name, "kind": self.kinds[name], "queries": ev.n_queries}
            for fam in FAMILIES:
                m = f"{fam}@{k}"
                row[m] = float(ev.aggregate[m])
            for fam in FAMILIES:
                m = f"{fam}@{k}"
                row[f"band:{m}"] = band_of(m, row[m])
            row["missing queries"] = len(ev.missing_queries)
            rows.append(row)
        return pd.DataFrame(rows)

    def diagnosis(self, run_name: str | None = None) -> Diagnosis:
        """The :class:`diagnose.failures.Diagnosis` of a run at the chosen k and failure definition."""
        return self.analysis.diagnosis(run_name or self.selected_run, k=self.k, failure=self.mode)


def embedding_map(b: Bundle, run_name: str, cap: int) -> EmbeddingMap:
    """The :class:`diagnose.projection.EmbeddingMap` of a run's failures (memoised by the analysis, and on disk).

    The first computation of a map runs inside an ``st.status`` box; later ones are instant."""
    prog = StatusProgress()
    with b.analysis.reporting(prog):
        emap = b.analysis.embedding_map(run_name, cap=cap, k=b.k, failure=b.mode)
    if prog.box is not None:
        how = (
            "loaded from the cache"
            if emap.projection.cached
            else f"computed in {emap.projection.seconds:.1f} s"
        )
        prog.done(f"Map ready: {emap.sample.n_points:,} points, {how}")
    return emap


def spaces_for(b: Bundle) -> dict[str, VectorSpace]:
    """label -> VectorSpace of every model encoded in this session on this data (the current model first)."""
    out = {b.encoder_label: b.analysis.space}
    for label, encoder in st.session_state.get("_models_seen", {}).items():
        if label not in out and b.analysis.has_space(encoder):
            out[label] = b.analysis.space_for(encoder)
    return out


def _load_encoder(model: str | None, override: str | None, precision: str = "fast") -> Encoder:
    """The encoder of ``model`` (None: the default, or the keyword encoder under the test override); a model folder
    outside the data root is refused (:func:`~diagnose.ui.sources.check_model`); any load failure is a DataError."""
    if model is None and override == "keyword":
        return embed.KeywordEncoder(delay=float(os.environ.get(ENCODER_DELAY_ENV) or 0))
    where = sources.check_model(model) if model is not None else None  # a folder only under the data root
    try:
        return embed.load_encoder(where, precision=precision)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the model loader raised, the user sees a message
        raise DataError(
            f"Could not load the embedding model {model or embed.DEFAULT_MODEL!r}: {type(e).__name__}: {e}. "
            "Type a sentence-transformers model name or the path of a local model folder, or clear the field "
            "to use the bundled default."
        ) from e


def label_of(encoder: Encoder) -> str:
    """How an encoder is called on the page: its label (a model name or path), else its identity."""
    return str(getattr(encoder, "label", "") or encoder.name)


def _encoder(
    model: str | None, override: str | None, label: str, prog: StatusProgress, precision: str = "fast"
) -> Encoder:
    """The encoder of ``model`` (None = the default) at ``precision``, loaded once per process."""

    def load() -> Encoder:
        prog.step(f"Loading the embedding model {label}")
        return _load_encoder(model, override, precision)

    return _fill(_encoder_slot(model, override, precision), load)


def model_space(b: Bundle, model: str) -> tuple[Encoder, VectorSpace]:
    """``(encoder, VectorSpace)`` of another model (a name or a local folder) on the bundle's data, with progress.

    Raises :class:`DataError` naming the model when it cannot be loaded."""
    prog = StatusProgress()
    try:
        encoder = _encoder(model, None, model, prog, b.settings.precision)
        with b.analysis.reporting(prog):
            space = b.analysis.space_for(encoder)
    except DataError:
        prog.fail(f"Could not load {model}")
        raise
    st.session_state.setdefault("_models_seen", {})[label_of(encoder)] = encoder
    prog.done(f"{label_of(encoder)} ready")
    return encoder, space


def _vectors_key(embeddings: tuple[tuple[str, str], ...]) -> str:
    """Precomputed vector files by path, size and modification time: a rewritten file is a new analysis."""
    parts = []
    for key, path in embeddings:
        st_ = os.stat(path)
        parts.append(f"{key}={path}:{st_.st_size}:{st_.st_mtime_ns}")
    return "precomputed:" + "|".join(parts)


def _read(s: Settings, key: str, prog: StatusProgress) -> Dataset:
    """The data set of the sidebar's spec, read once per process (key: its fingerprint); it must have texts."""

    def read() -> Dataset:

        prog.step(f"Reading the {s.spec.label}")
        return load_dataset(**s.spec.load_kwargs())

    ds = _fill(_dataset_slot(key), read)
    st.session_state["_dataset"] = ds
    if ds.corpus is None or ds.queries is None:
        raise DataError(
            "The app needs the corpus and the queries (their texts are embedded and searched). "
            "Choose a BEIR folder, or give the corpus and queries files."
        )
    return ds


def _analysis(s: Settings, key: str, ds: Dataset, encoder: Encoder) -> tuple[Analysis, tuple[Any, ...]]:
    """The analysis of the data, encoder (or precomputed vectors), BM25 engine and live retrievers, made once per
    process, and the key of its slot (the background encoding shares it)."""
    specs = retriever_specs()

    def make() -> Analysis:
        live = {name: _retriever(target) for name, target in specs}
        runs = {**ds.runs, **{n: r for n, r in live.items() if n not in ds.runs}}
        if len(runs) < len(ds.runs) + len(live):
            raise DataError("A live retriever has the name of a run file; name each run differently.")
        names = sources.unique_names(list(defaults.BASELINES), runs)
        return Analysis(
            ds,
            runs,
            baselines={new: kind for kind, new in names.items()},
            model=s.model,
            encoder=encoder,
            precision=s.precision,
            bm25_engine=s.bm25_engine,
            depth=defaults.DEPTH,
            embeddings=dict(s.embeddings) or None,
            ignore_identical_ids=s.ignore_identical_ids,
        )

    vectors = _vectors_key(s.embeddings) if s.embeddings else encoder.name
    slot_key = (key, vectors, s.bm25_engine, tuple(specs), s.ignore_identical_ids)
    return _fill(_analysis_slot(*slot_key), make), slot_key


def build_bundle(s: Settings) -> Bundle | None:
    """Load and prepare the analysis, with progress; show problems (never raise them). None when it failed."""
    if s.spec is None:
        st.info(escape_md(s.spec_error or "Choose the data in the sidebar."))
        return None
    prog = StatusProgress()
    try:
        key = s.spec.fingerprint()
        ds = _read(s, key, prog)
        encoder = _encoder(s.model, s.override, s.model_label, prog, s.precision)
        analysis, slot_key = _analysis(s, key, ds, encoder)
        if not len(
            ds.qrels
        ):  # no golden set yet: only the Judge page (which builds one) and the Data page work
            prog.done("No golden set yet: judge on the Judge page")
            return Bundle(s, key, analysis, None)
        analysis.prepare(progress=prog, vectors=False)  # the runs and BM25: seconds
        background = _background(*slot_key)
        if not analysis.vectors_ready:
            background.start(analysis)  # the vectors: encoded in a thread that outlives this script run
            background.wait(float(os.environ.get(FOREGROUND_ENV) or FOREGROUND_SECONDS))
        if background.error is not None:
            raise background.error
    except DataError as e:
        prog.fail("Could not prepare the analysis")
        show_error(e)
        return None
    except (OSError, ValueError, UnicodeDecodeError, MemoryError) as e:
        prog.fail("Could not prepare the analysis")
        show_error(e, "" if is_out_of_memory(e) else f"Could not read the data: {type(e).__name__}: ")
        return None
    if analysis.vectors_ready:
        prog.done(
            f"Ready: {ds.corpus.size_phrase()}, {len(analysis.golden):,} golden queries, model {label_of(encoder)}"
        )
        st.session_state.setdefault("_models_seen", {})[label_of(encoder)] = encoder
    else:
        prog.done("Metrics ready; the vectors are being computed (the diagnosis pages fill in when they are)")
    return Bundle(s, key, analysis, background)


def setup(page: Any = None) -> Bundle | None:
    """Called by app.py on every run, before the page: sidebar, loading, run picker, links and downloads."""
    s = sidebar()
    # every file this run reads (and the background work it starts) must resolve inside the source's folders
    confine_reads(*sources.read_roots(s.spec, typed_paths=bool(s.embeddings)))
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
    if not b.has_golden:
        _report_link(b.ds)
        return b
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

        downloads.sidebar_downloads(b)
    return b


def _report_link(ds: Dataset) -> None:
    """The sidebar link to the validation report (the Data page), with the number of warnings."""
    n = len(ds.report.warnings)
    st.sidebar.page_link(
        page_path("data"),
        label=f"Validation report ({n} warning{'s' if n != 1 else ''})",
        icon=":material/fact_check:" if not n else ":material/warning:",
    )


def bundle() -> Bundle:
    """The bundle of this run (built by :func:`setup`), or stop the page: the problem was already shown. With no
    golden set yet, only the Judge and Data pages go on; the others say how to start one."""
    b = st.session_state.get("_bundle")
    if b is None:
        st.stop()
    if not b.has_golden and st.session_state.get("_page_title") not in WITHOUT_GOLDEN_SET:
        st.title(st.session_state.get("_page_title") or "diagnose")
        st.info(
            "There is no golden set yet (no qrels given): the metrics and the diagnosis need one. Build it on the "
            "Judge page: it pools the top documents of BM25, dense and hybrid search (and of your runs) for every "
            "query and asks you to grade them; then export the judgements, or load them back here as the qrels."
        )
        st.page_link(page_path("judge"), label="Open the Judge page", icon=":material/gavel:")
        st.stop()
    return b


def wait_for_vectors(b: Bundle, title: str | None = None, what: str = "This page") -> None:
    """At the top of a page that needs the vectors: when they are not ready yet, draw the page's ``title`` and the
    encoding's progress (refreshed every second; the page reruns by itself when they are) and stop the page here."""
    if b.analysis.vectors_ready:
        return
    bg = b.background
    if title:
        st.title(title)

    @st.fragment(run_every=1.0)
    def progress() -> None:
        if bg.error is not None:
            show_error(bg.error, "Could not compute the vectors: ")
            return
        if b.analysis.vectors_ready:
            st.rerun()
        st.progress(bg.fraction(), text=escape_md(bg.status()))
        st.caption(
            f"{what} needs the vectors of the corpus and the queries. The metrics of your runs and of BM25 are "
            "ready on the Overview; this page fills in by itself when the encoding ends (other pages stay usable)."
        )

    progress()
    st.stop()
