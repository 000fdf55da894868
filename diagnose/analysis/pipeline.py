"""The pipeline's inputs, each computed once: the golden queries, the runs (files, dicts, live retrievers), the
baselines, the encoder, the vector space and the BM25 index."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self

from diagnose.data import Qrels, Run, ValidationReport
from diagnose.io.convert import as_run

if TYPE_CHECKING:
    from diagnose.embed import Encoder
    from diagnose.failures import Thresholds
    from diagnose.failures.passages import PassageScorer
    from diagnose.lexical import BM25Index
    from diagnose.search.space import VectorSpace

from diagnose import checks
from diagnose.analysis.base import (
    BASELINE,
    LIVE,
    YOUR_RUN,
    AnalysisBase,
    check_runs,
)
from diagnose.analysis.params import is_run_like
from diagnose.checks import given, param_error
from diagnose.retrievers import run_retriever
from diagnose.runtime.threads import release_freed_memory


class Pipeline(AnalysisBase):
    """See :class:`diagnose.analysis.Analysis`."""

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
                raise param_error(
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
        out = {n: (YOUR_RUN if is_run_like(r) else LIVE) for n, r in self._inputs.items()}
        out.update({n: BASELINE for n in self._baselines})
        return out

    @property
    def run_names(self) -> list[str]:
        return list(self.kinds)

    def user_runs(self) -> dict[str, Run]:
        """The runs given (files read, dicts converted, live retrievers run over the golden queries); with
        ``ignore_identical_ids``, without the documents whose id is the query's (:mod:`diagnose.metrics.identical`)."""
        return self._cached(
            "user_runs", lambda: {n: self._identical_ids(r) for n, r in self._read_runs().items()}
        )

    def _identical_ids(self, run: Run, depth: int | None = None) -> Run:
        """``run`` as every step sees it: with ``ignore_identical_ids``, its documents whose id is the query's
        dropped (the next ones move up; ``depth``: each list cut there); without, unchanged, and the validation
        report told when many golden queries retrieve themselves (:func:`~diagnose.metrics.identical.warn_self_retrieval`)."""
        from diagnose.metrics.identical import drop_identical_ids, warn_self_retrieval

        if self.ignore_identical_ids:
            return drop_identical_ids(run, depth=depth)
        warn_self_retrieval(self.dataset.report, run, self.dataset.qrels.queries_with_relevant())
        return run

    def _read_runs(self) -> dict[str, Run]:
        ds = self.dataset
        out: dict[str, Run] = {}
        fresh: dict[str, Run] = {}
        for name, value in self._inputs.items():
            if isinstance(value, Run) and ds.runs.get(name) is value:
                out[name] = value  # loaded (and cross-checked) with the data set
            elif is_run_like(value):
                out[name] = fresh[name] = as_run(value, name=name, report=ds.report)
            else:
                self._need_texts(f"The live retriever {name!r}")
                golden = set(self.golden)
                self._reporter.step(f"Running the retriever {name} over {len(golden):,} golden queries")
                out[name] = fresh[name] = run_retriever(
                    value,
                    {q: t for q, t in ds.queries.text_of().items() if q in golden},
                    depth=self.depth,
                    name=name,
                    timeout=self.retriever_timeout,
                    report=ds.report,
                    progress=self._reporter.bar(f"Retriever {name}"),
                )
        if fresh:
            check_runs(fresh, ds)
        return out

    def baseline_runs(self) -> dict[str, Run]:
        """The baselines asked for: ``bm25`` (Lucene BM25 over title + text), ``dense`` (exact cosine search with
        the model), ``hybrid`` (RRF, k=60, of the two), each cut at ``depth``, under the names given. With
        ``ignore_identical_ids`` each searches one deeper (:attr:`search_depth`) and drops the query's own document,
        and the hybrid fuses the two lists without it."""
        return {name: self._baseline(kind, name) for name, kind in self._baselines.items()}

    def baseline(self, kind: str) -> Run:
        """The baseline run of ``kind`` (``"bm25"``, ``"dense"`` or ``"hybrid"``) over the golden queries, cut at
        ``depth`` (memoised): what :meth:`baseline_runs` holds, computed whether or not ``baselines=`` asked for it."""
        return self._baseline(checks.one_of(kind, "kind", ("bm25", "dense", "hybrid")))

    def _baseline(self, kind: str, name: str | None = None) -> Run:
        """One baseline run (memoised per kind), renamed to ``name``."""

        def build() -> Run:
            from diagnose.search import baselines as bl

            self._need_texts("A baseline run")
            if kind == "bm25":
                self._reporter.step(f"Computing the BM25 baseline (depth {self.depth})")
                return bl.bm25_run(
                    self.dataset.corpus,
                    self.dataset.queries,
                    self.golden,
                    depth=self.search_depth,
                    index=self.bm25,
                    report=self.dataset.report,
                )
            if kind == "dense":
                sp = self.space
                self._reporter.step(f"Computing the dense baseline (exact search, depth {self.depth})")
                return bl.dense_run(
                    sp.doc_vecs, sp.query_vecs, sp.doc_ids, sp.query_ids, depth=self.search_depth
                )
            return bl.hybrid_run(self._baseline("bm25"), self._baseline("dense"), depth=self.depth)

        raw = self._cached(("baseline", kind), build)
        run = self._cached(("baseline seen", kind), lambda: self._identical_ids(raw, depth=self.depth))
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

    def _run_names(self, names: Any, param: str = "runs") -> list[str]:
        """``names``: run names (one name, a str, or a list), each checked by :meth:`_run_name`."""
        return checks.list_of(
            names,
            param,
            self._run_name,
            expected="run names (a str or a list of str)",
            single=lambda v: isinstance(v, str),
        )

    def _run_name(self, name: str | None) -> str:
        names = self.run_names
        if not names:
            raise param_error(
                "runs", "No run to analyse: give runs={name: path or run} or baselines=('bm25',)."
            )
        if name is None:
            return names[0]
        if name not in names:
            raise param_error("run", f"No run named {name!r}; the runs are: {', '.join(names)}.")
        return name

    @property
    def encoder(self) -> Encoder:
        """The encoder of ``model`` (loaded lazily: the weights are read the first time something is encoded)."""

        def build() -> Encoder:
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
            from diagnose.search.space import VectorSpace

            self._need_texts("The vector space")
            emb = self._embeddings
            if isinstance(emb, VectorSpace):
                return emb
            if emb is not None:
                self._reporter.step("Loading the precomputed vectors")
                return VectorSpace.build(
                    self.dataset,
                    self.golden,
                    doc_embeddings=emb.get("doc"),
                    query_embeddings=emb.get("query"),
                    doc_ids=emb.get("doc_ids"),
                    query_ids_file=emb.get("query_ids"),
                    encoder=None
                    if emb.get("query")
                    else self.encoder,  # document vectors alone: queries encoded
                    cache_dir=self.cache_dir,
                    report=self.dataset.report,
                )
            stored = getattr(
                self.dataset.corpus, "vectors", None
            )  # a vector database's (diagnose.io.vectordb)
            if stored is not None:
                self._reporter.step(
                    f"Encoding {len(self.golden):,} queries (the documents' vectors are stored)"
                )
                return VectorSpace.with_stored(
                    self.dataset,
                    self.golden,
                    stored,
                    self.encoder,
                    cache_dir=self.cache_dir,
                    report=self.dataset.report,
                )
            return self.space_for(self.encoder)

        return self._cached("space", build)

    def space_for(self, encoder: Encoder) -> VectorSpace:
        """The vector space of another encoder on the same data and golden queries (memoised per encoder name)."""

        def build() -> VectorSpace:
            from diagnose.search.space import VectorSpace

            self._need_texts("The vector space")
            label = getattr(encoder, "label", "") or encoder.name
            # the bar counts distinct texts still to encode (identical documents once, cached ones not at all)
            bar = self._reporter.bar(
                f"Encoding the {len(self.dataset.corpus):,} documents with {label} (counted in distinct texts not "
                f"cached yet), then {len(self.golden):,} queries"
            )
            return VectorSpace.build(
                self.dataset,
                self.golden,
                encoder=encoder,
                cache_dir=self.cache_dir,
                progress=bar,
                report=self.dataset.report,
            )

        return self._cached(("space", encoder.name), build)

    def has_space(self, encoder: Encoder) -> bool:
        """Whether the vectors of ``encoder`` were already computed in this analysis."""
        return self._has(("space", encoder.name)) or (
            self._has("space") and self._has("encoder") and self._memo["encoder"].name == encoder.name
        )

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
            texts = corpus.joined_texts()
            index = BM25Index.build(
                texts,
                list(corpus.ids),
                engine=self.bm25_engine,
                cache_dir=root / "bm25",
                report=self.dataset.report,
            )
            del texts
            release_freed_memory()  # the texts' pages, before the document vectors are loaded
            return index

        return self._cached("bm25", build)

    @property
    def passages(self) -> PassageScorer | None:
        """The model's window and the documents' passages (:mod:`diagnose.failures.passages`): the encoder's own;
        with precomputed vectors the named ``model``'s, and None (unknown window) when no model is named."""

        def build() -> PassageScorer | None:
            from diagnose import embed
            from diagnose.failures.passages import PassageScorer, model_window

            if self._embeddings is not None and self._encoder_given is None:
                if self.model is None:
                    return None
                encoder = embed.load_encoder(self.model, precision=self.precision)
            else:
                encoder = self.encoder
            window = model_window(encoder)
            if window is None:
                return None
            return PassageScorer(
                self.dataset, encoder, window, cache_dir=self.cache_dir, progress=self._reporter
            )

        return self._cached("passages", build)

    @property
    def thresholds(self) -> Thresholds:
        from diagnose.failures import Thresholds

        return self._thresholds or Thresholds()

    def with_qrels(self, qrels: Qrels, report: ValidationReport | None = None) -> Self:
        """The same analysis over another golden set: the same data otherwise, the same runs as computed (live
        retrievers are not run again, so a query that only now has a relevant document scores 0 for them), the same
        baselines (recomputed over the new golden queries), model or encoder, precision, vectors, k, cutoffs,
        metrics, failure definition, depth, BM25 engine, thresholds and reporter. ``report``: the new data set's
        validation report (default: this one's). This analysis is not changed; the BM25 index and the loaded model,
        which depend only on the corpus and the model, are shared."""
        if not isinstance(qrels, Qrels):
            raise param_error(
                "qrels",
                f"qrels must be a Qrels (e.g. diagnose.io.convert.as_qrels(...)), got {given(qrels)}.",
            )
        dataset = replace(
            self.dataset, qrels=qrels, report=report if report is not None else self.dataset.report
        )
        after = type(self)(
            dataset,
            self.user_runs(),
            k=self.k,
            model=self.model,
            failure=self.failure,
            baselines=dict(self._baselines),
            cache_dir=self.cache_dir,
            ks=self.ks,
            metrics=self._metric_names,
            depth=self.depth,
            bm25_engine=self.bm25_engine,
            thresholds=self._thresholds,
            encoder=self._encoder_given,
            embeddings=self._embeddings,
            precision=self.precision,
            progress=self._reporter,
            retriever_timeout=self.retriever_timeout,
            ignore_identical_ids=self.ignore_identical_ids,
            passage_candidates=self.passage_candidates,
        )
        for key in ("bm25", "encoder"):
            if self._has(key):
                after._memo[key] = self._memo[key]
        return after
