"""The one pipeline: data -> golden queries -> vectors -> BM25 -> baselines -> metrics -> failures.

:class:`Analysis` is what a notebook, the ``diagnose`` CLI and the Streamlit app all call. Every step is lazy and
computed once per analysis (memoised by its parameters, thread-safe): metrics need neither a model nor torch;
the vector space is encoded the first time a step needs it (and cached on disk by :mod:`diagnose.embed`);
changing ``k`` or the failure definition in a call re-encodes and re-indexes nothing.

>>> import diagnose                                                              # doctest: +SKIP
>>> a = diagnose.Analysis(diagnose.load("demo_corpus"), {"ann": "demo_corpus/runs/ann_minilm.trec"},
...                       baselines=("bm25", "hybrid"))                          # doctest: +SKIP
>>> a.metrics()[["ndcg@10", "recall@10"]]                                         # doctest: +SKIP
>>> a.failures("ann").head()                                                       # doctest: +SKIP
>>> a.inspect("q17", "ann")                                                        # doctest: +SKIP

Errors name the parameter (``DataError.param``); the CLI and the app translate it into their flag or widget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from diagnose import progress as progress_mod
from diagnose.api import as_run
from diagnose.data import DataError, Dataset, Run
from diagnose.extras import missing_extra, needs
from diagnose.report import EvaluationReport, failures_dict

if TYPE_CHECKING:
    import altair as alt

    from diagnose.failures import Diagnosis, Hubness, LabelNoise, Thresholds
    from diagnose.inspection import Inspection
    from diagnose.lexical import BM25Index
    from diagnose.metrics import Evaluation
    from diagnose.models import ModelComparison
    from diagnose.projection import EmbeddingMap, Projection
    from diagnose.remedies import Remedies
    from diagnose.risk import RiskValidation
    from diagnose.space import VectorSpace
    from diagnose.ties import TieAudit

T = TypeVar("T")

BASELINES = ("bm25", "dense", "hybrid")
FAILURE_MODES = ("hit", "recall")
DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_DEPTH = 100
YOUR_RUN, BASELINE, LIVE = "your run", "baseline", "live retriever"


def _param_error(param: str, message: str) -> DataError:
    return DataError(message, param=param)


def _check_k(k: Any, param: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise _param_error(param, f"{param} must be a positive integer (the rank cutoff), got {k!r}.")
    return int(k)


def _check_runs(runs: Mapping[str, Run], ds: Dataset) -> None:
    """The cross-file checks of :func:`diagnose.io.load_dataset` for runs given after loading (doc ids missing
    from the corpus, golden queries missing from a run, unjudged run queries), counted in the data set's report."""
    from diagnose.data import ValidationReport
    from diagnose.io import _cross_checks, check_run_matches_qrels

    for run in runs.values():
        check_run_matches_qrels(run, ds.qrels)
    scratch = ValidationReport()
    _cross_checks(ds.qrels, runs, ds.corpus, None, scratch)
    ds.report.problems.extend(p for p in scratch.problems if p.code != "qrels_doc_not_in_corpus")
    ds.report.stats.update(scratch.stats)


def _is_run_like(value: Any) -> bool:
    return isinstance(value, Run | str | Path | Mapping)


class Analysis:
    """A retriever analysis over one data set.

    ``dataset``: a :class:`~diagnose.data.Dataset` (``diagnose.load(...)``). ``runs``: ``{name: run}`` where a run
    is a file path, a :class:`~diagnose.data.Run`, a dict ``{query_id: {doc_id: score}}``, or a live retriever (a
    callable ``str -> list[doc_id | (doc_id, score)]``, a LangChain or LlamaIndex retriever; run over the golden
    queries by :func:`diagnose.retrievers.run_retriever` the first time it is needed, latency recorded); default:
    the runs loaded with the data set. ``k``: the cutoff of the failures and of the headline metrics; ``ks``: the
    cutoffs of the metric table (``k`` is always added). ``model``: a sentence-transformers model name or folder
    (``"default"``: the bundled all-MiniLM-L6-v2, offline); ``precision``: ``"fast"`` (bf16 transformer where the CPU supports it, vectors
    within cosine 0.9999 of fp32) or ``"exact"`` (fp32, as sentence-transformers encodes); ``encoder``: an encoder
    object instead (``name`` +
    ``encode``, e.g. :class:`diagnose.embed.KeywordEncoder` in tests); ``embeddings``: precomputed vectors instead,
    ``{"doc": path, "query": path}`` (optional ``"doc_ids"``, ``"query_ids"`` files for ``.npy``) or a
    :class:`~diagnose.space.VectorSpace`. ``failure``: ``"hit"`` (a query fails when no relevant document is in its
    top k) or ``"recall"`` (any relevant document missing). ``baselines``: any of ``"bm25"``, ``"dense"``,
    ``"hybrid"`` (names as given), or a mapping ``{run name: kind}``. ``cache_dir``: where vectors and the BM25
    index are cached (default: the user cache folder, ``DIAGNOSE_CACHE_DIR``). ``progress``: ``True`` (tqdm and
    stage labels on a terminal), ``False``, or a reporter (:mod:`diagnose.progress`).
    """

    def __init__(
        self,
        dataset: Dataset,
        runs: Mapping[str, Any] | None = None,
        *,
        k: int = 10,
        model: str | None = "default",
        failure: str = "hit",
        baselines: Sequence[str] | Mapping[str, str] = (),
        cache_dir: str | Path | None = None,
        ks: Sequence[int] = DEFAULT_KS,
        metrics: Sequence[str] | None = None,
        depth: int = DEFAULT_DEPTH,
        bm25_engine: str = "bm25s",
        thresholds: Thresholds | None = None,
        encoder: Any = None,
        embeddings: Mapping[str, Any] | VectorSpace | None = None,
        precision: str = "fast",
        progress: bool | progress_mod.Reporter | None = False,
    ) -> None:
        if not isinstance(dataset, Dataset):
            raise _param_error(
                "dataset", f"dataset must be a Dataset (diagnose.load(...)), got {type(dataset).__name__}."
            )
        self.dataset = dataset
        self.k = _check_k(k)
        self.ks = tuple(sorted({*(_check_k(x, "ks") for x in ks), self.k}))
        self.failure = self._check_failure(failure)
        self.depth = _check_k(depth, "depth")
        if bm25_engine not in ("bm25s", "rank_bm25"):
            raise _param_error("bm25_engine", f"bm25_engine must be 'bm25s' or 'rank_bm25', got {bm25_engine!r}.")
        self.bm25_engine = bm25_engine
        self.model = None if model in (None, "", "default") else str(model)
        if precision not in ("fast", "exact"):
            raise _param_error("precision", f"precision must be 'fast' or 'exact', got {precision!r}.")
        self.precision = precision
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._metric_names = list(metrics) if metrics is not None else None
        self._thresholds = thresholds
        self._encoder_given = encoder
        self._embeddings = embeddings
        self._default_reporter = progress_mod.reporter(progress)
        self._local = threading.local()  # a reporter per thread (the app encodes in a background thread)
        self._lock = threading.Lock()  # guards the memo and the per-key locks only
        self._key_locks: dict[Hashable, threading.RLock] = {}
        self._memo: dict[Hashable, Any] = {}
        self._baselines = self._check_baselines(baselines)
        given = dict(dataset.runs) if runs is None else dict(runs)
        self._inputs: dict[str, Any] = {str(n): r for n, r in given.items()}
        clash = sorted(set(self._inputs) & set(self._baselines))
        if clash:
            raise _param_error(
                "baselines",
                f"A run is already named {clash[0]!r}; baseline runs use that name. Rename the run, or give the "
                f"baselines other names, e.g. baselines={{'{clash[0]} (baseline)': '{self._baselines[clash[0]]}'}}.",
            )

    # ------------------------------------------------------------------------------------------ plumbing

    @staticmethod
    def _check_failure(failure: str) -> str:
        if failure not in FAILURE_MODES:
            raise _param_error(
                "failure",
                f"failure must be 'hit' (no relevant document in the top k) or 'recall' (any relevant document "
                f"missing), got {failure!r}.",
            )
        return failure

    @staticmethod
    def _check_baselines(baselines: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
        items = dict(baselines) if isinstance(baselines, Mapping) else {b: b for b in dict.fromkeys(baselines)}
        bad = [kind for kind in items.values() if kind not in BASELINES]
        if bad:
            raise _param_error(
                "baselines", f"Unknown baseline {bad[0]!r}; choose among {', '.join(BASELINES)}."
            )
        return {str(n): str(kind) for n, kind in items.items()}

    def _cached(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` once per key. Each key has its own lock, so a thread encoding the corpus does not block a
        thread reading metrics; a key only ever waits for the keys it is built from (no cycles, no deadlock)."""
        if key in self._memo:
            return self._memo[key]
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.RLock())
        with lock:
            if key not in self._memo:
                try:
                    self._memo[key] = build()
                except ModuleNotFoundError as e:  # an optional package: name the extra that installs it
                    err = missing_extra(e, f"Analysis step {key[0] if isinstance(key, tuple) else key!r}")
                    if err is None:
                        raise
                    raise err from None
            return self._memo[key]

    def _has(self, key: Hashable) -> bool:
        return key in self._memo

    @property
    def _reporter(self) -> progress_mod.Reporter:
        return getattr(self._local, "reporter", None) or self._default_reporter

    def _need_texts(self, what: str) -> None:
        ds = self.dataset
        if ds.corpus is None or ds.queries is None:
            raise _param_error(
                "corpus" if ds.corpus is None else "queries",
                f"{what} needs the texts of the corpus and the queries: load the data with a BEIR folder "
                "(diagnose.load('folder')) or give corpus= and queries= files.",
            )

    @contextmanager
    def reporting(self, progress: bool | progress_mod.Reporter | None) -> Iterator[Analysis]:
        """``with analysis.reporting(reporter): ...``: what this thread computes inside the block reports to
        ``progress`` (the app passes its ``st.status`` box); other threads keep their own reporter."""
        saved = getattr(self._local, "reporter", None)
        if progress is not None:
            self._local.reporter = progress_mod.reporter(progress)
        try:
            yield self
        finally:
            self._local.reporter = saved

    def prepare(self, progress: bool | progress_mod.Reporter | None = None, *, vectors: bool = True) -> Analysis:
        """Compute the heavy parts now (runs, BM25 index, vector space, baselines), reporting to ``progress``
        (default: the analysis' own reporter). ``vectors=False`` stops before anything needs a model."""
        with self.reporting(progress):
            self.user_runs()
            needs_text = vectors or any(kind in ("bm25", "hybrid") for kind in self._baselines.values())
            if needs_text and self.dataset.corpus is not None and self.dataset.queries is not None:
                _ = self.bm25
            if vectors:
                _ = self.space
                _ = self.runs
            else:
                self.ready_runs()
        return self

    # ------------------------------------------------------------------------------------------ data and runs

    @property
    def golden(self) -> list[str]:
        """The golden queries: judged with at least one relevant document (grade > 0), and with a text when the
        queries are loaded (those are embedded, searched by the baselines and diagnosed). Qrels order."""

        def build() -> list[str]:
            ds = self.dataset
            golden = ds.qrels.queries_with_relevant()
            if ds.queries is not None:
                texts = ds.queries.text_of()
                golden = [q for q in golden if str(texts.get(q, "")).strip()]
            if not golden:
                raise _param_error(
                    "queries",
                    "No judged query has a relevant document (grade > 0)"
                    + (" and a text in the queries file" if ds.queries is not None else "")
                    + ", so there is nothing to evaluate. Check that the qrels and the queries use the same query "
                    "ids and that relevant documents have a positive grade.",
                )
            return golden

        return self._cached("golden", build)

    def document(self, doc_id: str) -> tuple[str, str] | None:
        """``(title, text)`` of a corpus document, None when the id is not in the corpus (or there is no corpus)."""
        corpus = self.dataset.corpus
        if corpus is None:
            return None
        row = self._cached("doc_row", corpus.index_of).get(doc_id)
        if row is None:
            return None
        return str(corpus.df["title"].iat[row] or ""), str(corpus.df["text"].iat[row] or "")

    @property
    def kinds(self) -> dict[str, str]:
        """Run name -> ``"your run"``, ``"live retriever"`` or ``"baseline"``, in the order of :attr:`runs`."""
        out = {n: (YOUR_RUN if _is_run_like(r) else LIVE) for n, r in self._inputs.items()}
        out.update({n: BASELINE for n in self._baselines})
        return out

    @property
    def run_names(self) -> list[str]:
        return list(self.kinds)

    def user_runs(self) -> dict[str, Run]:
        """The runs given (files read, dicts converted, live retrievers run over the golden queries)."""
        return self._cached("user_runs", self._read_runs)

    def _read_runs(self) -> dict[str, Run]:
        ds = self.dataset
        out: dict[str, Run] = {}
        fresh: dict[str, Run] = {}
        for name, value in self._inputs.items():
            if isinstance(value, Run) and ds.runs.get(name) is value:
                out[name] = value  # loaded (and cross-checked) with the data set
            elif _is_run_like(value):
                out[name] = fresh[name] = as_run(value, name=name, report=ds.report)
            else:
                from diagnose.retrievers import run_retriever

                self._need_texts(f"The live retriever {name!r}")
                self._reporter.step(f"Running the retriever {name} over {len(self.golden):,} golden queries")
                out[name] = fresh[name] = run_retriever(
                    value,
                    {q: t for q, t in ds.queries.text_of().items() if q in set(self.golden)},
                    depth=self.depth,
                    name=name,
                    report=ds.report,
                    progress=self._reporter.bar(f"Retriever {name}"),
                )
        if fresh:
            _check_runs(fresh, ds)
        return out

    def baseline_runs(self) -> dict[str, Run]:
        """The baselines asked for: ``bm25`` (Lucene BM25 over title + text), ``dense`` (exact cosine search with
        the model), ``hybrid`` (RRF, k=60, of the two), each cut at ``depth``, under the names given."""
        return {name: self._baseline(kind, name) for name, kind in self._baselines.items()}

    def _baseline(self, kind: str, name: str | None = None) -> Run:
        """One baseline run (memoised per kind), renamed to ``name``."""

        def build() -> Run:
            from diagnose import baselines as bl

            self._need_texts("A baseline run")
            if kind == "bm25":
                self._reporter.step(f"Computing the BM25 baseline (depth {self.depth})")
                return bl.bm25_run(
                    self.dataset.corpus, self.dataset.queries, self.golden, depth=self.depth, index=self.bm25,
                    report=self.dataset.report,
                )  # fmt: skip
            if kind == "dense":
                sp = self.space
                self._reporter.step(f"Computing the dense baseline (exact search, depth {self.depth})")
                return bl.dense_run(sp.doc_vecs, sp.query_vecs, sp.doc_ids, sp.query_ids, depth=self.depth)
            return bl.hybrid_run(self._baseline("bm25"), self._baseline("dense"), depth=self.depth)

        run = self._cached(("baseline", kind), build)
        return run if name is None or run.name == name else replace(run, name=name)

    @property
    def vectors_ready(self) -> bool:
        """Whether the vector space is computed (what the diagnosis, dense and hybrid baselines need)."""
        return self._has("space")

    def ready_runs(self) -> dict[str, Run]:
        """The runs available without waiting for the vectors: the runs given, the BM25 baseline, and the dense and
        hybrid baselines once :attr:`vectors_ready` (the app shows these while the corpus is being encoded)."""
        if self.vectors_ready:
            return self.runs
        out = dict(self.user_runs())
        out.update({n: self._baseline(kind, n) for n, kind in self._baselines.items() if kind == "bm25"})
        return out

    @property
    def runs(self) -> dict[str, Run]:
        """Every run: the runs given, then the baselines."""
        return {**self.user_runs(), **self.baseline_runs()}

    def run(self, name: str | None = None) -> Run:
        """One run by name (default: the first)."""
        return self.runs[self._run_name(name)]

    def _run_name(self, name: str | None) -> str:
        names = self.run_names
        if not names:
            raise _param_error("runs", "No run to analyse: give runs={name: path or run} or baselines=('bm25',).")
        if name is None:
            return names[0]
        if name not in names:
            raise _param_error("run", f"No run named {name!r}; the runs are: {', '.join(names)}.")
        return name

    # ------------------------------------------------------------------------------------------ heavy objects

    @property
    def encoder(self) -> Any:
        """The encoder of ``model`` (loaded lazily: the weights are read the first time something is encoded)."""

        def build() -> Any:
            if self._encoder_given is not None:
                return self._encoder_given
            from diagnose import embed

            self._reporter.step(f"Loading the embedding model {self.model or embed.DEFAULT_MODEL}")
            return embed.load_encoder(self.model, precision=self.precision)

        return self._cached("encoder", build)

    @property
    def space(self) -> VectorSpace:
        """The corpus and the golden queries in the model's vector space (rows L2-normalised)."""

        def build() -> VectorSpace:
            from diagnose.space import VectorSpace

            self._need_texts("The vector space")
            emb = self._embeddings
            if isinstance(emb, VectorSpace):
                return emb
            if emb is not None:
                self._reporter.step("Loading the precomputed vectors")
                return VectorSpace.build(
                    self.dataset, self.golden, doc_embeddings=emb.get("doc"), query_embeddings=emb.get("query"),
                    doc_ids=emb.get("doc_ids"), query_ids_file=emb.get("query_ids"), report=self.dataset.report,
                )  # fmt: skip
            return self.space_for(self.encoder)

        return self._cached("space", build)

    def space_for(self, encoder: Any) -> VectorSpace:
        """The vector space of another encoder on the same data and golden queries (memoised per encoder name)."""

        def build() -> VectorSpace:
            from diagnose.space import VectorSpace

            self._need_texts("The vector space")
            label = getattr(encoder, "label", "") or encoder.name
            bar = self._reporter.bar(
                f"Encoding {len(self.dataset.corpus):,} documents and {len(self.golden):,} queries with {label}"
            )
            return VectorSpace.build(
                self.dataset, self.golden, encoder=encoder, cache_dir=self.cache_dir, progress=bar,
                report=self.dataset.report,
            )  # fmt: skip

        return self._cached(("space", encoder.name), build)

    def has_space(self, encoder: Any) -> bool:
        """Whether the vectors of ``encoder`` were already computed in this analysis."""
        return self._has(("space", encoder.name)) or (self._has("space") and self._has("encoder")
                                                       and self._memo["encoder"].name == encoder.name)  # fmt: skip

    @property
    def bm25(self) -> BM25Index:
        """The BM25 index of the corpus (title + text), cached on disk for the bm25s engine."""

        def build() -> BM25Index:
            from diagnose.cache import default_cache_root
            from diagnose.lexical import BM25Index

            self._need_texts("BM25")
            self._reporter.step(f"Building the BM25 index ({self.bm25_engine})")
            root = self.cache_dir or default_cache_root()
            corpus = self.dataset.corpus
            return BM25Index.build(
                corpus.texts(), list(corpus.ids), engine=self.bm25_engine, cache_dir=root / "bm25",
                report=self.dataset.report,
            )  # fmt: skip

        return self._cached("bm25", build)

    @property
    def thresholds(self) -> Thresholds:
        from diagnose.failures import Thresholds

        return self._thresholds or Thresholds()

    # ------------------------------------------------------------------------------------------ metrics

    def metric_names(self, metrics: Sequence[str] | None = None) -> list[str]:
        """Full metric names: ``metrics`` (or the analysis' own, or the CLI's default set) expanded at ``ks``."""
        from diagnose.metrics import expand_metrics

        return expand_metrics(metrics if metrics is not None else self._metric_names, self.ks)

    def evaluations(
        self, metrics: Sequence[str] | None = None, *, runs: Sequence[str] | None = None
    ) -> dict[str, Evaluation]:
        """Run name -> :class:`~diagnose.metrics.Evaluation` (per query and aggregate), of every run and baseline
        (or of the runs named: the app scores the runs it has while the vectors are still being computed)."""
        names = tuple(self.metric_names(metrics))
        chosen = tuple(runs) if runs is not None else None

        def build() -> dict[str, Evaluation]:
            from diagnose.metrics import evaluate_many

            pool = self.runs if chosen is None else self.ready_runs()
            return evaluate_many(self.dataset.qrels, {n: pool[n] for n in (chosen or pool)}, list(names))

        return self._cached(("evaluations", names, chosen), build)

    def latency(self, k: int | None = None) -> dict[str, dict[str, float]]:
        """For runs with recorded latency (live retrievers): ``latency_p50_ms``, ``latency_p95_ms`` (over the
        queries that returned) and ``recall@k_per_ms`` (recall@k divided by the median latency: recall bought per
        millisecond of a query)."""
        out: dict[str, dict[str, float]] = {}
        with_latency = {n: r for n, r in self.user_runs().items() if getattr(r, "latency_ms", None)}
        if not with_latency:
            return out
        recall = f"recall@{self.k if k is None else _check_k(k)}"
        evs = self.evaluations([recall], runs=list(with_latency))
        for name, r in with_latency.items():
            ms = np.asarray(list(r.latency_ms.values()), dtype=np.float64)
            p50 = float(np.percentile(ms, 50))
            out[name] = {
                "latency_p50_ms": p50,
                "latency_p95_ms": float(np.percentile(ms, 95)),
                f"{recall}_per_ms": evs[name].aggregate[recall] / p50 if p50 > 0 else float("nan"),
            }
        return out

    def metrics(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean metrics: one row per run (index: run names, baselines included), one column per metric (the
        CLI's names, e.g. ``ndcg@10``); live retrievers add ``latency_p50_ms``, ``latency_p95_ms`` and
        ``recall@k_per_ms``."""
        evs = self.evaluations(metrics)
        names = self.metric_names(metrics)
        table = pd.DataFrame(
            [evs[n].aggregate for n in evs], index=pd.Index(list(evs), name="run"), columns=names
        )
        lat = self.latency()
        if lat:
            extra = pd.DataFrame.from_dict(lat, orient="index")
            table = table.join(extra)
        return table

    def per_query(self, run: str | None = None, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Per-query metrics of one run (index: golden query ids; missing queries score 0)."""
        return self.evaluations(metrics)[self._run_name(run)].per_query.copy()

    # ------------------------------------------------------------------------------------------ failures

    def diagnosis(self, run: str | None = None, *, k: int | None = None, failure: str | None = None) -> Diagnosis:
        """The :class:`~diagnose.failures.Diagnosis` of a run: every failed (query, relevant document) pair with
        its evidence, class and recommendation."""
        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        mode = self.failure if failure is None else self._check_failure(failure)

        def build() -> Diagnosis:
            from diagnose.failures import diagnose_run

            self._need_texts("The failure analysis")
            run_obj = self.runs[name]
            space, bm25 = self.space, self.bm25
            self._reporter.step(f"Diagnosing the failures of {name} at k={k}")
            return diagnose_run(self.dataset, run_obj, space, bm25, k=k, mode=mode, thresholds=self.thresholds)

        return self._cached(("diagnosis", name, k, mode), build)

    def failures(self, run: str | None = None, *, k: int | None = None, failure: str | None = None) -> pd.DataFrame:
        """One row per failed (query, target) pair, worst first; the columns are the keys of ``diagnose failures
        --format json`` (``class``, ``label``, ``cosine``, ``run_rank``, ``dense_rank``, ``bm25_rank``,
        ``missing_terms``, ``evidence``, ``recommendation``, ``top_retrieved``, ...)."""
        from diagnose.failures import Failure, sort_worst

        d = self.diagnosis(run, k=k, failure=failure)
        rows = [f.to_dict() for f in sort_worst(d.failures)]
        columns = list(Failure.__dataclass_fields__)
        columns[columns.index("cls")] = "class"
        columns.insert(columns.index("class") + 1, "label")
        return pd.DataFrame(rows, columns=columns)

    def class_counts(self, k: int | None = None, failure: str | None = None) -> pd.DataFrame:
        """Failure classes per run: one row per run, one column per class id (taxonomy order)."""
        from diagnose.failures import CLASSES

        rows = {n: self.diagnosis(n, k=k, failure=failure).class_counts for n in self.run_names}
        return pd.DataFrame.from_dict(rows, orient="index", columns=list(CLASSES)).rename_axis("run")

    def label_noise(self, run: str | None = None, *, k: int | None = None) -> LabelNoise:
        """Unjudged near-duplicates of relevant documents in the top k, duplicate documents, conflicting queries."""
        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)

        def build() -> LabelNoise:
            from diagnose.failures import find_label_noise

            self._need_texts("The label-noise finder")
            return find_label_noise(
                self.dataset, self.runs[name], self.space, k=k, duplicate_cosine=self.thresholds.duplicate_cosine
            )

        return self._cached(("label_noise", name, k), build)

    def hubness(self, run: str | None = None, *, k: int | None = None) -> Hubness:
        """Documents in the top k of unusually many queries (k-occurrence skewness)."""
        from diagnose.failures import hubness

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        n_docs = len(self.dataset.corpus) if self.dataset.corpus is not None else None
        return hubness(self.runs[name], k=k, n_docs=n_docs)

    def ties(self, run: str | None = None, *, k: int | None = None) -> TieAudit:
        """The tie audit of a run: queries whose score ties in the top k (or across rank k) make the metrics depend
        on how documents are named, with each metric's exact range over tie orders. Computed once per run; a run
        whose metrics depend on tie order gets a ``score_ties`` warning in the data set's report."""
        from diagnose.ties import add_to_report, tie_audit

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)

        def build() -> TieAudit:
            audit = tie_audit(self.dataset.qrels, self.runs[name], self.metric_names(), k=k)
            add_to_report(audit, self.dataset.report)
            return audit

        return self._cached(("ties", name, k), build)

    def remedies(self, run: str | None = None, *, k: int | None = None, failure: str | None = None) -> Remedies:
        """Each failure class's remedy applied to this run and measured: hybrid RRF with BM25 for
        vocabulary_mismatch, exact dense search for index_gap, the top 3k reranked by exact cosine for near_miss
        and ranking_failure; what each recovers and what hits it loses, with a paired randomization test."""
        from diagnose.remedies import prove_remedies

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        mode = self.failure if failure is None else self._check_failure(failure)

        def build() -> Remedies:
            sp = self.space
            return prove_remedies(
                self.dataset, self.runs[name], self.diagnosis(name, k=k, failure=mode), space=sp,
                bm25_run=self._baseline("bm25"), dense_run=self._baseline("dense"),
            )  # fmt: skip

        return self._cached(("remedies", name, k, mode), build)

    def risk(self, run: str | None = None, *, k: int | None = None) -> pd.DataFrame:
        """Every query of the run (judged or not) ranked by how likely it fails, from its top-k scores alone
        (:func:`diagnose.risk.failure_risk`): which unlabelled queries to judge first."""
        from diagnose.risk import failure_risk

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        return self._cached(("risk", name, k), lambda: failure_risk(self.runs[name], k=k)).copy()

    def risk_validation(self, run: str | None = None, *, k: int | None = None) -> RiskValidation:
        """How well :meth:`risk` finds the golden queries that fail at k (ROC AUC, per feature too)."""
        from diagnose.risk import validate_risk

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        return validate_risk(self.risk(name, k=k), self.dataset.qrels, self.runs[name], k)

    def bounds(self, metrics: Sequence[str] | None = None, *, runs: Sequence[str] | None = None) -> pd.DataFrame:
        """How far the unjudged documents could move each metric: per run (all, or those named) and metric,
        ``lower`` (unjudged = non-relevant, today's value), ``upper`` (unjudged judged at best) and ``gap``."""
        from diagnose.metrics import metric_bounds

        names = self.metric_names(metrics or [f"ndcg@{self.k}", f"recall@{self.k}", f"hit_rate@{self.k}", "mrr"])
        chosen = tuple(runs) if runs is not None else None

        def build() -> pd.DataFrame:
            frames = []
            pool = self.runs if chosen is None else self.ready_runs()
            for name in chosen or pool:
                run = pool[name]
                agg = metric_bounds(self.dataset.qrels, run, names).aggregate.reset_index()
                agg.insert(0, "run", name)
                frames.append(agg)
            return pd.concat(frames, ignore_index=True)

        return self._cached(("bounds", tuple(names), chosen), build).copy()

    def inspect(
        self, query_id: str, run: str | None = None, *, k: int | None = None, failure: str | None = None
    ) -> Inspection:
        """One query in one run: its missed targets with their evidence (terms present and missing marked), class
        and recommendation, and what the run retrieved instead. Shows itself as HTML in a notebook."""
        from diagnose.inspection import inspect_query

        name = self._run_name(run)
        qid = str(query_id)
        if self.dataset.queries is not None and qid not in self.dataset.queries.text_of():
            raise _param_error("query_id", f"No query {qid!r} in the queries file.")
        diag = self.diagnosis(name, k=k, failure=failure)
        return inspect_query(self.dataset, self.runs[name], diag, self.space, self.bm25, qid)

    # ------------------------------------------------------------------------------------------ comparisons

    def _reference(self, reference: str | None) -> str:
        return self._run_name(reference)

    def comparisons(
        self,
        reference: str | None = None,
        metrics: Sequence[str] | None = None,
        *,
        n_resamples: int = 10_000,
        seed: int = 0,
    ) -> list[Any]:
        """Paired comparisons (:class:`diagnose.stats.Comparison`) of every run with ``reference`` (default: the
        first run) on ``metrics`` (default: nDCG and recall at k, and MRR), Holm-corrected as one family."""
        ref = self._reference(reference)
        names = tuple(metrics or (f"ndcg@{self.k}", f"recall@{self.k}", "mrr"))

        def build() -> list[Any]:
            from diagnose.stats import compare_all

            if len(self.runs) < 2:
                return []
            evs = self.evaluations([*self.metric_names(), *names])
            per_query = {n: ev.per_query for n, ev in evs.items()}
            return compare_all(per_query, ref, list(names), n_resamples=n_resamples, seed=seed)

        return self._cached(("comparisons", ref, names, n_resamples, seed), build)

    def tukey(
        self, metric: str | None = None, *, n_resamples: int = 10_000, seed: int = 0
    ) -> pd.DataFrame:
        """Every pair of runs at once (three or more runs): the randomised Tukey HSD test on ``metric`` (default
        nDCG@k), which controls the family-wise error over all pairs; one row per pair with ``mean_diff``,
        ``effect_size``, ``p_tukey``, ``significant``. Empty with fewer than three runs."""
        from diagnose.stats import randomised_tukey_hsd

        m = self.metric_names([metric or f"ndcg@{self.k}"])[0]

        def build() -> pd.DataFrame:
            if len(self.runs) < 3:
                return pd.DataFrame(columns=["reference", "run", "mean_diff", "effect_size", "p_tukey", "significant"])
            evs = self.evaluations([*self.metric_names(), m])
            return randomised_tukey_hsd({n: ev.per_query for n, ev in evs.items()}, m, n_resamples=n_resamples,
                                        seed=seed)  # fmt: skip

        return self._cached(("tukey", m, n_resamples, seed), build).copy()

    def compare(
        self, reference: str | None = None, metrics: Sequence[str] | None = None, *, n_resamples: int = 10_000,
        seed: int = 0,
    ) -> pd.DataFrame:  # fmt: skip
        """:meth:`comparisons` as a table: one row per (metric, run), the columns of the CLI's ``comparisons``
        (``metric, run, reference, mean_diff, ci_low, ci_high, p_ttest, p_randomization, p_wilcoxon, p_holm, wins,
        ties, losses, n_queries, mdd, significant``)."""
        rows = [c.to_dict() for c in self.comparisons(reference, metrics, n_resamples=n_resamples, seed=seed)]
        return pd.DataFrame(rows)

    def queries_needed(
        self, difference: float, reference: str | None = None, metrics: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Topic-set size (Sakai): per run and metric, the number of golden queries a paired t-test (alpha 0.05,
        power 0.8) needs to detect a mean difference of ``difference`` from the reference, given the standard
        deviation of the per-query differences observed here; beside the number of queries there are."""
        import math

        from diagnose.stats import topic_set_size

        if isinstance(difference, bool) or not isinstance(difference, int | float) or not math.isfinite(difference) \
                or difference <= 0:  # fmt: skip
            raise _param_error("difference", f"difference must be a positive number, got {difference!r}.")
        ref = self._reference(reference)
        names = self.metric_names(metrics or [f"ndcg@{self.k}", f"recall@{self.k}", "mrr"])
        evs = self.evaluations([*self.metric_names(), *names])
        rows = []
        for m in names:
            base = evs[ref].per_query[m]
            for name, ev in evs.items():
                if name == ref:
                    continue
                d = (ev.per_query[m].reindex(base.index).fillna(0.0) - base).to_numpy()
                sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
                need = topic_set_size(difference, sd) if math.isfinite(sd) else None
                rows.append({"metric": m, "run": name, "reference": ref, "difference": float(difference),
                             "sd_of_differences": sd, "queries_needed": need, "queries": len(d)})  # fmt: skip
        return pd.DataFrame(rows)

    def query_changes(self, reference: str | None = None, *, k: int | None = None) -> dict[str, dict[str, Any]]:
        """Per run: the golden queries it fixes (the reference has no relevant document in its top k, the run
        has) and breaks (the reverse), by ``hit_rate@k``."""
        from diagnose.compare import per_query_deltas

        ref = self._reference(reference)
        k = self.k if k is None else _check_k(k)
        metric = f"hit_rate@{k}"
        evs = self.evaluations([*self.metric_names(), metric])
        out: dict[str, dict[str, Any]] = {}
        for name, ev in evs.items():
            if name == ref:
                continue
            d = per_query_deltas(evs[ref], ev, metric)
            out[name] = {
                "metric": metric,
                "fixed": d.loc[d["change"] == "fixed", "query_id"].astype(str).tolist(),
                "broken": d.loc[d["change"] == "broken", "query_id"].astype(str).tolist(),
            }
        return out

    def gate(
        self,
        fail_under: Mapping[str, float] | None = None,
        max_drop: Mapping[str, float] | None = None,
        *,
        reference: str | None = None,
        skip_reference: bool = False,
    ) -> list[str]:
        """The CI gate: a message for every bound a run breaks (empty: passed). ``fail_under``: metric -> lowest
        allowed mean; ``max_drop``: metric -> largest allowed drop below the reference's mean. The reference
        itself is not gated when ``skip_reference``."""
        import math

        fail_under, max_drop = dict(fail_under or {}), dict(max_drop or {})
        for param, bounds in (("fail_under", fail_under), ("max_drop", max_drop)):
            for metric, bound in bounds.items():
                if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
                    raise _param_error(param, f"{param}[{metric!r}] must be a finite number, got {bound!r}.")
                if param == "max_drop" and bound < 0:
                    raise _param_error(param, f"{param}[{metric!r}] must be >= 0, got {bound!r}.")
        if max_drop and len(self.runs) < 2:
            raise _param_error("max_drop", "max_drop needs a reference run to compare with: give a second run.")
        ref = self._reference(reference)
        evs = self.evaluations([*self.metric_names(), *fail_under, *max_drop])
        out = []
        for name, ev in evs.items():
            if name == ref and skip_reference:
                continue
            for metric, bound in fail_under.items():
                value = ev.aggregate[self.metric_names([metric])[0]]
                if value < bound:
                    out.append(f"run {name!r}: {metric} = {value:.4f} is below the bound {bound:g} (fail_under)")
            for metric, drop in max_drop.items():
                m = self.metric_names([metric])[0]
                value, refv = ev.aggregate[m], evs[ref].aggregate[m]
                if refv - value > drop:
                    out.append(
                        f"run {name!r}: {metric} = {value:.4f} dropped {refv - value:.4f} below the reference "
                        f"{ref!r} ({refv:.4f}); the allowed drop is {drop:g} (max_drop)"
                    )
        return out

    def slices(self, field: str, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean metrics per run and per value of the query metadata ``field``."""
        from diagnose.compare import slice_metrics

        if self.dataset.queries is None:
            raise _param_error("slice_by", "Slicing needs the queries file with its metadata (queries=...).")
        try:
            return slice_metrics(self.evaluations(metrics), self.dataset.queries, field)
        except DataError as e:
            raise DataError(str(e), param="slice_by") from None

    def fusion(self, a: str, b: str, *, k: int | None = None, rrf_k: int = 60) -> pd.DataFrame:
        """What if runs ``a`` and ``b`` were fused (RRF and weighted): metrics and failures recovered or lost."""
        from diagnose.compare import fusion_whatif

        k = self.k if k is None else _check_k(k)
        rrf_k = _check_k(rrf_k, "rrf_k")
        return fusion_whatif(self.dataset.qrels, [self.run(a), self.run(b)], k=k, rrf_k=rrf_k)

    def evaluation_report(
        self,
        reference: str | None = None,
        *,
        headline: Sequence[str] | None = None,
        fail_under: Mapping[str, float] | None = None,
        max_drop: Mapping[str, float] | None = None,
        skip_reference: bool = False,
        slice_by: str | None = None,
        n_resamples: int = 10_000,
        seed: int = 0,
    ) -> EvaluationReport:
        """Everything ``diagnose evaluate`` reports, in one object (``to_dict``, ``to_csv``, ``to_text``, ...)."""
        if not self.runs:
            raise _param_error(
                "runs", "No run to evaluate: give runs={name: path or run} or baselines=('bm25', 'dense', 'hybrid')."
            )
        names = self.metric_names()
        extra = [m for m in self.metric_names([*(fail_under or {}), *(max_drop or {})]) if m not in names] if (
            fail_under or max_drop) else []  # fmt: skip
        names = names + extra
        ref = self._reference(reference)
        evs = self.evaluations(names)
        heads = list(dict.fromkeys([*(headline or (f"ndcg@{self.k}", f"recall@{self.k}", "mrr")), *(max_drop or {})]))
        heads = self.metric_names(heads)
        comparisons = self.comparisons(ref, heads, n_resamples=n_resamples, seed=seed) if len(evs) > 1 else []
        changes = self.query_changes(ref, k=max(self.ks)) if len(evs) > 1 else {}
        gate = self.gate(fail_under, max_drop, reference=ref, skip_reference=skip_reference)
        ties = {name: self.ties(name) for name in evs}
        tukey = self.tukey(heads[0], n_resamples=n_resamples, seed=seed) if len(evs) >= 3 else None
        slices = self.slices(slice_by, names) if slice_by else None
        return EvaluationReport(
            metrics=names, ks=list(self.ks), evaluations=evs, reference=ref, comparisons=comparisons,
            query_changes=changes, gate=gate, slices=slices, slice_field=slice_by,
            validation=self.dataset.report, extra_columns=self.latency(), ties=ties, tukey=tukey,
        )  # fmt: skip

    # ------------------------------------------------------------------------------------------ models

    def models(
        self,
        models: Sequence[Any],
        *,
        metric: str | None = None,
        k: int | None = None,
        n_resamples: int = 10_000,
        seed: int = 0,
    ) -> ModelComparison:
        """Which embedding model for this golden set: each model (a name, a folder, ``"default"``, or an encoder
        object) searches the corpus exactly; metrics with CIs, ties with the best, speed, memory, failure classes.
        Vectors are the analysis' own (memoised and cached on disk)."""
        from diagnose import embed
        from diagnose.models import compare_models

        k = self.k if k is None else _check_k(k)
        self._need_texts("Comparing models")
        encoders = []
        for m in models or ["default"]:
            if isinstance(m, str | Path) or m is None:
                name = None if m in (None, "", "default") else str(m)
                enc = (self.encoder if name == self.model and self._encoder_given is None
                       else embed.load_encoder(name, precision=self.precision))  # fmt: skip
            else:
                enc = m
            encoders.append(enc)
        spaces = [self.space if e is self.encoder else self.space_for(e) for e in encoders]
        key = ("models", tuple(e.name for e in encoders), metric, k, n_resamples, seed)
        return self._cached(key, lambda: compare_models(
            self.dataset, self.golden, encoders, spaces, bm25=self.bm25, k=k, metric=metric, depth=self.depth,
            n_resamples=n_resamples, seed=seed,
        ))  # fmt: skip

    # ------------------------------------------------------------------------------------------ pictures

    def embedding_map(
        self, run: str | None = None, *, cap: int = 4000, k: int | None = None, failure: str | None = None
    ) -> EmbeddingMap:
        """Documents and queries in one UMAP projection (at most ``cap`` points; every failed query, its targets
        and top k kept), with the failed queries linked to their targets (cached on disk)."""
        from diagnose import projection

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        cap = _check_k(cap, "cap")
        mode = self.failure if failure is None else self._check_failure(failure)

        def build() -> EmbeddingMap:
            return projection.build_map(
                **self._map_inputs(name, k, mode), cap=cap, report=self.dataset.report, progress=self._reporter.step
            )

        return self._cached(("map", name, k, mode, cap), build)

    def _map_inputs(self, name: str, k: int, mode: str) -> dict[str, Any]:
        """What both maps draw: every document and golden query (ids, texts, vectors) and the run's failed queries."""
        from diagnose import projection

        diag = self.diagnosis(name, k=k, failure=mode)
        sp, ds = self.space, self.dataset
        q_text = ds.queries.text_of()
        return {
            "doc_ids": list(sp.doc_ids), "doc_texts": ds.corpus.texts(), "doc_vecs": sp.doc_vecs,
            "query_ids": list(sp.query_ids), "query_texts": [q_text.get(q, "") for q in sp.query_ids],
            "query_vecs": sp.query_vecs,
            "failed": projection.failed_queries_from(diag.failures, self.runs[name].ranked_lists(), k),
        }  # fmt: skip

    def whole_projection(self) -> Projection:
        """Every document and query of the analysis in one 2-D projection (no sampling; the large recipe from
        20,000 points on, see :func:`diagnose.projection.recipe_for`). Minutes for 100k points the first time
        (stages and epochs reported to this thread's reporter), then read from the disk cache."""
        from diagnose import projection

        def build() -> Projection:
            sp = self.space
            return projection.project_collection(
                sp.doc_vecs, sp.query_vecs, progress=self._reporter, report=self.dataset.report
            )

        return self._cached(("whole_projection",), build)

    def whole_embedding_map(self, run: str | None = None, *, k: int | None = None,
                            failure: str | None = None) -> EmbeddingMap:  # fmt: skip
        """:meth:`embedding_map` of every document and query (for the deck.gl map): the failed queries of
        ``run`` on :meth:`whole_projection`."""
        from diagnose import projection

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        mode = self.failure if failure is None else self._check_failure(failure)

        def build() -> EmbeddingMap:
            proj = self.whole_projection()
            return projection.build_whole_map(**self._map_inputs(name, k, mode), projected=proj)

        return self._cached(("whole_map", name, k, mode), build)

    def map(self, run: str | None = None, *, cap: int = 4000, color_by: str = "role") -> alt.LayerChart:
        """The embedding map as an Altair chart (``color_by``: ``"role"`` or ``"failure_class"``)."""
        with needs("The embedding map"):
            from diagnose import charts

        emap = self.embedding_map(run, cap=cap)
        return charts.embedding_map(emap.points, emap.edges, color_by=color_by, selectable=False)

    def similarity_frame(self, run: str | None = None, *, k: int | None = None,
                         spaces: Mapping[str, VectorSpace] | None = None) -> pd.DataFrame:  # fmt: skip
        """cos(query, relevant document) of every golden pair, with ``outcome`` "hit" (in the run's top k) or
        "miss", per model (``spaces``: label -> vector space; default: the analysis' model)."""
        from diagnose.space import relevant_pair_cosines

        name = self._run_name(run)
        k = self.k if k is None else _check_k(k)
        spaces = spaces or {self.model_label: self.space}
        frames = [
            relevant_pair_cosines(self.dataset.qrels, self.runs[name], sp, k).assign(model=label)
            for label, sp in spaces.items()
        ]
        return pd.concat(frames, ignore_index=True)

    def similarity(self, run: str | None = None, *, k: int | None = None) -> alt.Chart:
        """Histogram of cos(query, relevant document), hits vs misses, with the seed and calibrated thresholds."""
        with needs("The similarity chart"):
            from diagnose import charts

        d = self.diagnosis(run, k=k)
        return charts.similarity_histogram(
            self.similarity_frame(run, k=k), seed_threshold=d.calibration.seed,
            calibrated_threshold=d.calibration.calibrated,
        )  # fmt: skip

    @property
    def model_label(self) -> str:
        """How the model is called: its label (a name or path), else its identity."""
        if self._embeddings is not None and not self._has("encoder") and self._encoder_given is None:
            return "precomputed vectors"
        enc = self.encoder
        return str(getattr(enc, "label", "") or enc.name)

    # ------------------------------------------------------------------------------------------ output

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """The same dict as ``diagnose evaluate --format json``, plus ``failures`` (run -> the ``diagnose
        failures --format json`` dict) for every diagnosis computed so far."""
        payload = self.evaluation_report().to_dict(per_query=per_query)
        diagnosed = [key for key in list(self._memo) if isinstance(key, tuple) and key[0] == "diagnosis"]
        if diagnosed:
            payload["failures"] = {
                f"{name}@{k}:{mode}" if (k, mode) != (self.k, self.failure) else name: failures_dict(self._memo[key])
                for key in diagnosed
                for _, name, k, mode in [key]
            }
        return payload

    def summary(self) -> pd.DataFrame:
        """The headline table: per run, nDCG, recall and hit rate at k, MRR, and (when the texts are loaded)
        the number of failed queries and the failure classes."""
        k = self.k
        cols = [f"ndcg@{k}", f"recall@{k}", f"hit_rate@{k}", "mrr"]
        table = self.metrics(cols)
        if self.dataset.corpus is not None and self.dataset.queries is not None:
            table["failed queries"] = [len(self.diagnosis(n).failed_queries) for n in table.index]
            counts = self.class_counts()
            table = table.join(counts.loc[:, counts.sum() > 0])
        return table

    def __repr__(self) -> str:
        ds = self.dataset
        parts = [f"{len(ds.corpus):,} documents" if ds.corpus is not None else "no corpus",
                 f"{len(ds.qrels.queries_with_relevant()):,} golden queries",
                 f"runs: {', '.join(self.run_names) or 'none'}", f"k={self.k}", f"failure={self.failure!r}",
                 f"model={self.model or 'default'!r}"]  # fmt: skip
        return f"Analysis({ds.name!r}: " + "; ".join(parts) + ")"

    def _repr_html_(self) -> str:
        import html

        try:
            table = self.summary()
        except DataError as e:
            return f"<p><b>Analysis</b>: {html.escape(str(e))}</p>"
        head = html.escape(repr(self))
        body = table.to_html(float_format=lambda v: f"{v:.4f}", escape=True, border=0)
        note = (
            f"<p>Failure classes count missed (query, relevant document) pairs at k={self.k} "
            f"({html.escape(self.failure)}). <code>.failures(run)</code> lists them, <code>.inspect(query_id, "
            "run)</code> shows one.</p>"
            if "failed queries" in table
            else ""
        )
        return f"<div><p><b>{head}</b></p>{body}{note}</div>"
