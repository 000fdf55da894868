"""The analysis' foundation: its parameters, the memo (a lock per step, so a thread encoding never blocks one
reading metrics) and the per-thread progress reporter; the parameters are checked by :mod:`.params`. The steps
live in the subclasses: :mod:`.pipeline` (data, runs, vectors, BM25), :mod:`.scores` (metrics, comparisons, the CI gate), :mod:`.evidence`
(failures, golden-set evidence, model choice), :mod:`.pictures` (maps and charts)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from diagnose import checks, defaults
from diagnose.analysis import params
from diagnose.checks import param_error, rank_cutoff
from diagnose.data import Dataset, Run, ValidationReport
from diagnose.io import check_run_matches_qrels, cross_checks
from diagnose.metrics import DEFAULT_KS
from diagnose.retrievers import DEFAULT_TIMEOUT, check_timeout
from diagnose.runtime import progress as progress_mod
from diagnose.runtime.extras import needs

if TYPE_CHECKING:
    from diagnose.embed import Encoder
    from diagnose.failures import Thresholds
    from diagnose.io.filters import QueryFilters
    from diagnose.search.space import VectorSpace

T = TypeVar("T")

YOUR_RUN, BASELINE, LIVE = "your run", "baseline", "live retriever"


def check_runs(runs: Mapping[str, Run], ds: Dataset) -> None:
    """The cross-file checks of :func:`diagnose.io.load_dataset` for runs given after loading (doc ids missing
    from the corpus, golden queries missing from a run, unjudged run queries), counted in the data set's report."""

    for run in runs.values():
        check_run_matches_qrels(run, ds.qrels)
    scratch = ValidationReport()
    cross_checks(ds.qrels, runs, ds.corpus, None, scratch)
    ds.report.problems.extend(p for p in scratch.problems if p.code != "qrels_doc_not_in_corpus")
    ds.report.stats.update(scratch.stats)


def _filters(
    dataset: Dataset, filter_field: str | None, filters: str | Path | Mapping[str, Any] | None
) -> QueryFilters | None:
    """The per-query metadata filters (:func:`diagnose.io.filters.build_filters`); None when neither is given."""
    if filter_field is None and filters is None:
        return None
    from diagnose.io.filters import build_filters

    return build_filters(dataset, filter_field, filters)


class AnalysisBase:
    """Parameters, memo and reporting of :class:`diagnose.analysis.Analysis` (its docstring lists them)."""

    def __init__(
        self,
        dataset: Dataset,
        runs: Mapping[str, Any] | None = None,
        *,
        k: int = defaults.K,
        model: str | None = "default",
        failure: str = defaults.FAILURE,
        baselines: Sequence[str] | Mapping[str, str] = (),
        cache_dir: str | Path | None = None,
        ks: Sequence[int] = DEFAULT_KS,
        metrics: Sequence[str] | None = None,
        depth: int = defaults.DEPTH,
        bm25_engine: str = defaults.BM25_ENGINE,
        thresholds: Thresholds | None = None,
        encoder: Encoder | None = None,
        embeddings: Mapping[str, Any] | VectorSpace | None = None,
        precision: str = defaults.PRECISION,
        progress: progress_mod.Progress = False,
        retriever_timeout: float | None = DEFAULT_TIMEOUT,
        kinds: Mapping[str, str] | None = None,
        filter_field: str | None = None,
        filters: str | Path | Mapping[str, Any] | None = None,
        ignore_identical_ids: bool = False,
        passage_candidates: int | str | None = "auto",
    ) -> None:
        if not isinstance(dataset, Dataset):
            raise param_error(
                "dataset", f"dataset must be a Dataset (diagnose.load(...)), got {type(dataset).__name__}."
            )
        self.dataset = dataset
        self.k = rank_cutoff(k)
        self.ks = params.check_ks(ks, self.k)
        self.failure = params.check_failure(failure)
        self.depth = checks.positive_int(depth, "depth")
        self.bm25_engine = checks.one_of(bm25_engine, "bm25_engine", defaults.BM25_ENGINES)
        self.model = params.check_model(model)
        self.precision = checks.one_of(precision, "precision", defaults.PRECISIONS)
        self.retriever_timeout = check_timeout(retriever_timeout, "retriever_timeout")
        self.cache_dir = checks.optional_path(cache_dir, "cache_dir", what="a folder")
        self.ignore_identical_ids = checks.flag(ignore_identical_ids, "ignore_identical_ids")
        self.passage_candidates = (
            passage_candidates
            if passage_candidates is None or passage_candidates == "auto"
            else checks.positive_int(passage_candidates, "passage_candidates", note=' (or "auto", or None)')
        )
        self._metric_names = params.check_metrics(metrics)
        self._thresholds = params.check_thresholds(thresholds)
        self._encoder_given = params.check_encoder(encoder)
        self._embeddings = params.check_embeddings(embeddings)
        self._default_reporter = progress_mod.reporter(progress)
        self._local = threading.local()  # a reporter per thread (the app encodes in a background thread)
        self._lock = threading.Lock()  # guards the memo and the per-key locks only
        self._key_locks: dict[Hashable, threading.RLock] = {}
        self._memo: dict[Hashable, Any] = {}
        self._baselines = params.check_baselines(baselines)
        self._inputs: dict[str, Any] = params.check_runs(dataset.runs if runs is None else runs)
        clash = sorted(set(self._inputs) & set(self._baselines))
        if clash:
            raise param_error(
                "baselines",
                f"A run is already named {clash[0]!r}; baseline runs use that name. Rename the run, or give the "
                f"baselines other names, e.g. baselines={{'{clash[0]} (baseline)': '{self._baselines[clash[0]]}'}}.",
            )
        self._run_kinds = self._check_kinds(kinds or {})
        self.filters = _filters(dataset, filter_field, filters)

    def _check_kinds(self, kinds: Mapping[str, str]) -> dict[str, str]:
        """``kinds`` (run name -> dense, lexical, hybrid or unknown) checked: known run names, known kinds."""
        if not kinds:
            return {}
        from diagnose.failures.kind import check_kind

        known = [*self._inputs, *self._baselines]
        out = {}
        for name, kind in dict(kinds).items():
            if str(name) not in known:
                raise param_error(
                    "kinds",
                    f"kinds names a run {name!r} that is not among the runs ({', '.join(known) or 'none'}).",
                )
            out[str(name)] = check_kind(kind, "kinds")
        return out

    @property
    def search_depth(self) -> int:
        """How deep the baselines search: ``depth``, one more with ``ignore_identical_ids`` (the query's own
        document, once dropped, leaves ``depth`` documents, as BEIR's exact search retrieves k + 1)."""
        return self.depth + 1 if self.ignore_identical_ids else self.depth

    @property
    def given_embeddings(self) -> Mapping[str, Any] | VectorSpace | None:
        """The constructor's ``embeddings=`` (precomputed vectors), checked; None when the analysis encodes."""
        return self._embeddings

    @property
    def given_encoder(self) -> Encoder | None:
        """The constructor's ``encoder=`` (an encoder object); None when the model is loaded by name."""
        return self._encoder_given

    @property
    def baseline_kinds(self) -> dict[str, str]:
        """The constructor's ``baselines=``, checked: baseline run name -> kind (``"bm25"``, ``"dense"``,
        ``"hybrid"``)."""
        return dict(self._baselines)

    def _k(self, k: int | None) -> int:
        """``k`` checked, or the analysis' own when None."""
        return self.k if k is None else rank_cutoff(k)

    @property
    def model_source(self) -> str | None:
        """The sentence-transformers model this analysis encodes with, as :func:`diagnose.embed.load_encoder`
        takes it (what :meth:`finetune` trains): the given encoder's ``source`` when it has one (an encoder of
        ``load_encoder``, exact or fast: the bundled model's folder, a local folder, a Hub snapshot; the app builds
        its analysis so), else ``model`` (``"default"``: the bundled model). None when the encoder has no model
        behind it (:class:`~diagnose.embed.KeywordEncoder`, an encoder object of your own)."""
        if self._encoder_given is None:
            return self.model or "default"
        source = getattr(self._encoder_given, "source", None)
        return source if isinstance(source, str) and source.strip() else None

    def _mode(self, failure: str | None) -> str:
        """``failure`` checked, or the analysis' own when None."""
        return self.failure if failure is None else params.check_failure(failure)

    def _cached(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` once per key. Each key has its own lock, so a thread encoding the corpus does not block a
        thread reading metrics; a key only ever waits for the keys it is built from (no cycles, no deadlock)."""
        if key in self._memo:
            return self._memo[key]
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.RLock())
        with lock:
            if key not in self._memo:
                with needs(f"Analysis step {key[0] if isinstance(key, tuple) else key!r}"):  # names the extra
                    self._memo[key] = build()
            return self._memo[key]

    def _has(self, key: Hashable) -> bool:
        return key in self._memo

    @property
    def _reporter(self) -> progress_mod.Reporter:
        return getattr(self._local, "reporter", None) or self._default_reporter

    def _need_texts(self, what: str) -> None:
        ds = self.dataset
        if ds.corpus is None or ds.queries is None:
            raise param_error(
                "corpus" if ds.corpus is None else "queries",
                f"{what} needs the texts of the corpus and the queries: load the data with a BEIR folder "
                "(diagnose.load('folder')) or give corpus= and queries= files.",
            )

    @contextmanager
    def reporting(self, progress: progress_mod.Progress) -> Iterator[Any]:
        """``with analysis.reporting(reporter): ...``: what this thread computes inside the block reports to
        ``progress`` (the app passes its ``st.status`` box); other threads keep their own reporter."""
        saved = getattr(self._local, "reporter", None)
        if progress is not None:
            self._local.reporter = progress_mod.reporter(progress)
        try:
            yield self
        finally:
            self._local.reporter = saved

    def prepare(self, progress: progress_mod.Progress = None, *, vectors: bool = True) -> Self:
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
