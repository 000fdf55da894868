"""Why runs fail: the diagnosis per missed (query, relevant document), the golden set's own evidence (label
noise, hubs, risk), each remedy measured on the data, one query inspected, and which embedding model to choose."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    from diagnose.data import Qrels
    from diagnose.failures import Diagnosis, Hubness, LabelNoise, RunKind
    from diagnose.failures.evidence import KnownRanks
    from diagnose.failures.inspection import Inspection
    from diagnose.failures.risk import RiskValidation
    from diagnose.whatif.advice import Advice
    from diagnose.whatif.ann import AnnFrontier, AnnSetting
    from diagnose.whatif.compare import RerankReport
    from diagnose.whatif.filter_recall import FilterRecall
    from diagnose.whatif.findings import Findings
    from diagnose.whatif.finetune import Cost, FinetuneResult, TrainSettings
    from diagnose.whatif.matrix import RemedyMatrix
    from diagnose.whatif.model_choice import ModelComparison
    from diagnose.whatif.remedies import Remedies

from diagnose import defaults
from diagnose.analysis.chunked import Chunked
from diagnose.analysis.params import check_models
from diagnose.checks import param_error, positive_int
from diagnose.data import Run
from diagnose.runtime.extras import needs
from diagnose.whatif.compare import rerank_cross_encoder, rerank_report


class Evidence(Chunked):
    """See :class:`diagnose.analysis.Analysis`."""

    def diagnosis(
        self, run: str | None = None, *, k: int | None = None, failure: str | None = None
    ) -> Diagnosis:
        """The :class:`~diagnose.failures.Diagnosis` of a run: every failed (query, relevant document) pair with
        its evidence, class and recommendation."""
        from diagnose.failures import EvidenceSources, diagnose_run

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)

        def build() -> Diagnosis:

            self._need_texts("The failure analysis")
            run_obj = self.runs[name]
            known = self._baselines_with_ranks(name, k, mode)
            space, bm25, kind = self.space, self.bm25, self.run_kind(name, k=k)
            self._reporter.step(f"Diagnosing the failures of {name} at k={k}")
            return diagnose_run(
                self.dataset,
                run_obj,
                space,
                bm25,
                k=k,
                mode=mode,
                thresholds=self.thresholds,
                sources=EvidenceSources(
                    kind=kind,
                    filters=self.filters,
                    known=known,
                    passages=self.passages,
                    split_cosines=self._split_cosines(),
                    split_ranks=self._split_ranks(),
                    without_query_doc=self.ignore_identical_ids,
                ),
            )

        return self._cached(("diagnosis", name, k, mode), build)

    def _baselines_with_ranks(self, name: str, k: int, mode: str) -> KnownRanks | None:
        """When the run's kind is to be inferred (which needs the dense and BM25 baselines, and so do the remedies):
        each baseline not computed yet is computed in the same pass as the dense or BM25 ranks of the run's failed
        (query, target) pairs, which the diagnosis then reads instead of scoring those queries over the corpus a
        second time (:class:`~diagnose.failures.evidence.KnownRanks`). Otherwise None: nothing changes."""
        from diagnose.failures import failed_pairs
        from diagnose.failures.evidence import KnownRanks
        from diagnose.search import baselines as bl

        if name in self._run_kinds or name in self._baselines:
            return None
        # the BM25 index before the vectors: its build's transient arrays (~1 GB at 1M documents) are freed before
        # the document vectors (1.5 GB at 1M x 384) are loaded, instead of stacking on them
        self._same_text_rows_in_background()
        bm25_index = self.bm25
        ds, sp = self.dataset, self.space
        corpus_row = ds.corpus.index_of()
        pairs = [(q, d) for q, d, _ in failed_pairs(ds, self.runs[name], k, mode)[0] if d in corpus_row]
        if self.ignore_identical_ids:  # the query's own document's BM25 score, to leave it out of the ranks
            pairs += [(q, q) for q in dict.fromkeys(q for q, _ in pairs) if q in corpus_row]
        dense = bm25 = None
        if not self._has(("baseline", "bm25")):
            self._reporter.step(f"Computing the BM25 baseline (depth {self.depth})")
            run, bm25 = bl.bm25_run_ranked(
                ds.corpus,
                ds.queries,
                self.golden,
                pairs,
                depth=self.search_depth,
                index=bm25_index,
                report=ds.report,
            )
            self._cached(("baseline", "bm25"), lambda: run)
        if not self._has(("baseline", "dense")) and sp.doc_vecs.dtype == sp.query_vecs.dtype == np.float32:
            ok = [(q, d) for q, d in pairs if q in sp.query_row and d in sp.doc_row]
            qr = np.array([sp.query_row[q] for q, _ in ok], dtype=np.int64)
            dr = np.array([sp.doc_row[d] for _, d in ok], dtype=np.int64)
            self._reporter.step(f"Computing the dense baseline (exact search, depth {self.depth})")
            run_d, (best, worst) = bl.dense_run_ranked(
                sp.doc_vecs, sp.query_vecs, sp.doc_ids, sp.query_ids, qr, dr, depth=self.search_depth
            )
            self._cached(("baseline", "dense"), lambda: run_d)
            dense = {p: (int(b), int(w)) for p, b, w in zip(ok, best, worst, strict=True)}
        return KnownRanks(dense, bm25)

    def run_kind(self, run: str | None = None, *, k: int | None = None) -> RunKind:
        """The run's kind (:mod:`diagnose.failures.kind`): as given in ``kinds``, the baseline's own, or inferred
        from the run's top-``k`` overlap with the BM25 and dense baselines (which this computes)."""
        from diagnose.failures.kind import BASELINE_KINDS, RunKind, infer_run_kind

        name = self._run_name(run)
        k = self._k(k)
        if name in self._run_kinds:
            return RunKind(self._run_kinds[name], "given")
        if name in self._baselines:
            return RunKind(BASELINE_KINDS[self._baselines[name]], "baseline")

        def build() -> RunKind:
            self._need_texts("Inferring the run's kind")
            return infer_run_kind(
                self.runs[name], self._baseline("bm25"), self._baseline("dense"), self.golden, k
            )

        return self._cached(("run_kind", name, k), build)

    def failures(
        self, run: str | None = None, *, k: int | None = None, failure: str | None = None
    ) -> pd.DataFrame:
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
        from diagnose.failures import find_label_noise

        name = self._run_name(run)
        k = self._k(k)

        def build() -> LabelNoise:

            self._need_texts("The label-noise finder")
            return find_label_noise(
                self.dataset,
                self.runs[name],
                self.space,
                k=k,
                duplicate_cosine=self.thresholds.duplicate_cosine,
                same_text=self._same_text_rows(),
            )

        return self._cached(("label_noise", name, k), build)

    def _same_text_rows(self) -> list[tuple[int, int]]:
        """The corpus' documents with the same normalised text (:func:`~diagnose.failures.same_text_rows`), once."""
        from diagnose.failures.golden import same_text_rows

        return self._cached(("same_text_rows",), lambda: same_text_rows(self.dataset.corpus))

    def _same_text_rows_in_background(self) -> None:
        """Start :meth:`_same_text_rows` in a daemon thread: normalising every text (~2 CPU-s at 1M documents,
        numpy on the bytes) and the BM25 index build that follows (mostly numpy and Arrow on one core) share the two
        cores; the label-noise finder then reads the result (waiting for it if need be). An error is left to that
        finder, which builds the rows again and raises it."""
        if self._has(("same_text_rows",)) or self.dataset.corpus is None:
            return

        def build() -> None:
            with contextlib.suppress(Exception):  # raised again where the rows are read
                self._same_text_rows()

        threading.Thread(target=build, name="diagnose-same-text", daemon=True).start()

    def hubness(self, run: str | None = None, *, k: int | None = None) -> Hubness:
        """Documents in the top k of unusually many queries (k-occurrence skewness)."""
        from diagnose.failures import hubness

        name = self._run_name(run)
        k = self._k(k)
        n_docs = len(self.dataset.corpus) if self.dataset.corpus is not None else None
        return hubness(self.runs[name], k=k, n_docs=n_docs)

    def remedies(
        self,
        run: str | None = None,
        *,
        k: int | None = None,
        failure: str | None = None,
        cross_encoder: str | None = None,
    ) -> Remedies:
        """Each failure class's remedy applied to this run and measured: hybrid RRF with BM25 for
        vocabulary_mismatch (exact dense search for a lexical run), exact dense search for index_gap (this tool's BM25
        for a lexical run, the hybrid baseline for a hybrid run), the top 3k (``thresholds.near_miss_factor`` x k)
        reranked by exact cosine for near_miss and ranking_failure; what each recovers and what hits it loses, with
        a paired randomization test. ``cross_encoder``: a sentence-transformers CrossEncoder (a local folder, or a
        hub name when online): the top 3k reranked by it is measured too, as a second near_miss remedy."""
        from diagnose.whatif.remedies import prove_remedies

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)

        def build() -> Remedies:
            sp = self.space
            diag = self.diagnosis(name, k=k, failure=mode)
            # the hybrid baseline is a remedy of a hybrid run's index gap and of a lexical run's ranking failure
            hybrid = diag.run_kind.kind in ("hybrid", "lexical")
            depth = self.thresholds.near_miss_depth(k)  # the rerank depth of prove_remedies too
            return prove_remedies(
                self.dataset,
                self.runs[name],
                diag,
                space=sp,
                bm25_run=self._baseline("bm25"),
                dense_run=self._baseline("dense"),
                cross_encoder_run=self._cross_encoded(name, cross_encoder, depth) if cross_encoder else None,
                hybrid_run=self._baseline("hybrid") if hybrid else None,
                # the unfiltered search of the run's kind: a lexical run's filtered-out target is BM25's to find
                unfiltered_run=(
                    self._baseline("bm25" if diag.run_kind.kind == "lexical" else "dense")
                    if self.filters is not None
                    else None
                ),
                merged_run=self._merged_neighbours(),
                passage_run=self._passage_run(name, k, mode) if self.passages is not None else None,
            )

        return self._cached(("remedies", name, k, mode, cross_encoder), build)

    def filter_recall(self, run: str | None = None, *, k: int | None = None) -> FilterRecall:
        """recall@k with and without the metadata filter (``filter_field`` / ``filters``), per golden query and
        overall, for the run (as given, and with the filter applied to its lists) and for exact dense search
        (without the filter, and over the documents it lets through): :mod:`diagnose.whatif.filter_recall`."""
        from diagnose.whatif.filter_recall import filter_recall, filtered_dense_run

        if self.filters is None:
            raise param_error("filters", "No metadata filter given: pass filter_field= or filters=.")
        name = self._run_name(run)
        k = self._k(k)

        def build() -> FilterRecall:
            self._need_texts("Recall with and without the metadata filter")
            sp, qf = self.space, self.filters
            self._reporter.step(f"Exact dense search under the metadata filter ({qf.source})")
            dense_filtered = self._cached(
                ("dense_filtered",),
                lambda: self._identical_ids(
                    filtered_dense_run(sp, qf, self.golden, depth=self.search_depth), depth=self.depth
                ),
            )
            return filter_recall(
                self.dataset.qrels, qf, k, run=self.runs[name], dense=self._baseline("dense"),
                dense_filtered=dense_filtered,
            )  # fmt: skip

        return self._cached(("filter_recall", name, k), build)

    def remedy_matrix(
        self,
        run: str | None = None,
        *,
        k: int | None = None,
        failure: str | None = None,
        cross_encoder: str | None = None,
        finetune: FinetuneResult | None = None,
    ) -> RemedyMatrix:
        """Every offline remedy of :meth:`remedies` (the same remedied runs, reused) applied to the failures of every
        class (:mod:`diagnose.whatif.matrix`): per class and remedy, how many of the class's failed queries (missed
        pairs with ``failure="recall"``) it recovers at k. Its diagonal is :meth:`remedies`' ``recovered``.

        ``finetune``: a result of :meth:`finetune` on this analysis; its tuned run is one more column, ``finetune``,
        the own remedy of the classes whose record names it (semantic_gap). The matrix depends on its arguments only:
        without ``finetune`` it has no such column, whatever ran before. Memoised by its arguments; with ``finetune``
        it is built on each call (from the memoised remedies and diagnosis: the tuned run's hits only)."""
        from diagnose.whatif.matrix import remedy_matrix

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)
        if finetune is not None and getattr(finetune, "run", None) is None:
            raise param_error(
                "finetune",
                "finetune must be the result of Analysis.finetune (it holds the tuned run it measured).",
            )

        def build() -> RemedyMatrix:
            rem = self.remedies(name, k=k, failure=mode, cross_encoder=cross_encoder)
            tuned = (
                {"finetune": (f"the fine-tuned model ({finetune.mode})", finetune.run)} if finetune else None
            )
            return remedy_matrix(self.dataset.qrels, self.diagnosis(name, k=k, failure=mode), rem, tuned)

        if finetune is not None:
            return build()
        return self._cached(("remedy_matrix", name, k, mode, cross_encoder), build)

    def advice(
        self,
        run: str | None = None,
        *,
        k: int | None = None,
        failure: str | None = None,
        cross_encoder: str | None = None,
    ) -> Advice:
        """The measured recommendation of each class beside its rule's (:mod:`diagnose.whatif.advice`): read from
        :meth:`remedies` and :meth:`remedy_matrix` (nothing is run again); each remedy tried is paired-tested against
        the rule's on the class's failures (exact McNemar, Holm over the remedies tried)."""
        from diagnose.whatif.advice import class_advice

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)

        def build() -> Advice:
            return class_advice(
                self.remedies(name, k=k, failure=mode, cross_encoder=cross_encoder),
                self.remedy_matrix(name, k=k, failure=mode, cross_encoder=cross_encoder),
            )

        return self._cached(("advice", name, k, mode, cross_encoder), build)

    def findings(
        self,
        run: str | None = None,
        *,
        k: int | None = None,
        failure: str | None = None,
        cross_encoder: str | None = None,
    ) -> Findings:
        """What to fix first: the ranked actions read from :meth:`remedies` and :meth:`remedy_matrix`
        (:mod:`diagnose.whatif.findings`): each change with the failures it recovers, the hits it breaks, the paired
        test and its cost; ranked by net gain, the pairs to judge last; each class under the remedy :meth:`advice`
        recommends for it. Shows itself as a list in a notebook.

        When :meth:`ann_frontier` (of this run at k) or :meth:`chunking` (at k) has run on this analysis, their
        measured action is one more (the best of each), ranked with the others; the findings are measured again
        once one of them has run."""
        from diagnose.whatif.findings import findings

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)
        # the frontiers of this run and the sweeps at k already measured: ("ann", run, k, settings),
        # ("chunking", configurations, k)
        ran = tuple(
            key
            for key in list(self._memo)
            if isinstance(key, tuple)
            and ((key[:3] == ("ann", name, k)) or (key[0] == "chunking" and len(key) == 3 and key[2] == k))
        )

        def build() -> Findings:
            return findings(
                self.diagnosis(name, k=k, failure=mode),
                self.remedies(name, k=k, failure=mode, cross_encoder=cross_encoder),
                self.remedy_matrix(name, k=k, failure=mode, cross_encoder=cross_encoder),
                ann=[self._memo[key] for key in ran if key[0] == "ann"],
                chunking=[self._memo[key] for key in ran if key[0] == "chunking"],
                advice=self.advice(name, k=k, failure=mode, cross_encoder=cross_encoder),
            )

        key = ("findings", name, k, mode, cross_encoder, self._has(("finetune", "last")), ran)
        return self._cached(key, build)

    def ann_frontier(
        self, run: str | None = None, k: int | None = None, settings: Sequence[AnnSetting] | None = None
    ) -> AnnFrontier:
        """Approximate indexes (faiss HNSW and IVF-Flat over ``settings``, default
        :func:`diagnose.whatif.ann.default_settings`) over this analysis' vectors, each against exact search (the dense
        baseline) and the golden set: recall against exact, hit rate / recall / nDCG at k, single-thread latency
        p50/p95, build time, memory, the Pareto front; with ``run``, the cheapest setting recovering its
        ``index_gap`` failures, paired-tested against it (:mod:`diagnose.whatif.ann`). A collection's own HNSW setting
        (Chroma, Qdrant, a LanceDB HNSW-type index: :meth:`~diagnose.io.vectordb.CollectionCorpus.index_setting`), when
        readable, is measured as ``current``. Needs the ``[ann]`` extra."""
        from diagnose.whatif.ann import AnnSetting, ann_frontier, check_settings

        k = self._k(k)
        settings = check_settings(settings)  # before the memo key reads them
        name = self._run_name(run) if run is not None else None
        key = (
            "ann",
            name,
            k,
            tuple((s.index, tuple(s.params.items())) for s in settings) if settings else None,
        )

        def build() -> AnnFrontier:
            diag = self.diagnosis(name, k=k) if name is not None else None
            setting = getattr(self.dataset.corpus, "index_setting", None)  # a collection's own HNSW setting
            served = setting(k) if setting is not None else None
            return ann_frontier(
                self.dataset.qrels, self.space, k=k, exact_run=self._baseline("dense"), settings=settings,
                run=self.runs[name] if name is not None else None, diagnosis=diag,
                current=AnnSetting("hnsw", dict(served)) if served else None, progress=self._reporter,
                ignore_identical_ids=self.ignore_identical_ids,
            )  # fmt: skip

        return self._cached(key, build)

    def _passage_run(self, name: str, k: int, mode: str):  # noqa: ANN202 - a builder: () -> Run
        """What builds the passage remedy of run ``name`` (:func:`diagnose.failures.passages.maxsim_run`,
        memoised), top ``depth`` over the golden queries: each query's bounded candidate set
        (:func:`~diagnose.failures.passages.remedy_candidates`: the top ``passage_candidates`` (at least ``k``, so the
        run's hits are always re-scored) of the run, of the dense and BM25 baselines, and the query's failed targets
        at ``k``), or every document with ``passage_candidates=None``; ``"auto"``: every document up to
        :data:`~diagnose.defaults.MAXSIM_MAX_DOCS` documents, the bound :data:`~diagnose.defaults.PASSAGE_CANDIDATES`
        above."""
        from diagnose.failures.passages import maxsim_run, remedy_candidates

        n = self.passage_candidates
        if n == "auto":
            n = None if len(self.dataset.corpus) <= defaults.MAXSIM_MAX_DOCS else defaults.PASSAGE_CANDIDATES

        def build() -> Run:
            where = "every document" if n is None else f"candidates: the top {n} of the run, dense and BM25"
            self._reporter.step(
                f"Ranking documents by their best passage (the passage remedy of {name}; {where})"
            )
            candidates = None
            if n is not None:
                targets = [(f.query_id, f.doc_id) for f in self.diagnosis(name, k=k, failure=mode).failures]
                runs = [self.runs[name], self._baseline("dense"), self._baseline("bm25")]
                candidates = remedy_candidates(self.golden, runs, max(n, k), targets)
            return maxsim_run(
                self.passages, self.runs[name], self.golden, depth=self.depth, candidates=candidates
            )

        key = (
            ("passage_run", name, self.depth) if n is None else ("passage_run", name, self.depth, n, k, mode)
        )
        return lambda: self._cached(key, build)

    def _cross_encoded(self, name: str, model: str, depth: int) -> Run:
        """The run's top ``depth`` reranked live by the CrossEncoder ``model`` (memoised)."""

        def build() -> Run:
            self._need_texts("A cross-encoder rerank")
            self._reporter.step(f"Reranking the top {depth} of {name} with the cross-encoder {model}")
            return self._cross_encode(self.runs[name], model, depth)

        return self._cached(("cross_encoded", name, model, depth), build)

    def _cross_encode(self, run: Run, model: str, depth: int, *, progress: bool = False) -> Run:
        """``run``'s top ``depth`` reranked live by the CrossEncoder ``model`` (``progress``: its own bar)."""

        self._need_texts("A cross-encoder rerank")
        ds = self.dataset
        doc_text = dict(zip(ds.corpus.ids, ds.corpus.texts(), strict=True))
        return rerank_cross_encoder(
            run, ds.queries.text_of(), doc_text, model, depth=depth, progress=progress
        )

    def rerank(
        self,
        candidates: str | Run,
        reranked: str | Run | None = None,
        *,
        cross_encoder: str | None = None,
        k: int | None = None,
        depth: int | None = None,
        progress: bool = False,
    ) -> RerankReport:
        """What a reranker changes over its candidates (:func:`diagnose.whatif.compare.rerank_report`): the recall at
        ``depth`` of the candidates (the ceiling no reranking of them can beat), nDCG, MRR, hit rate and recall at
        k before and after, the failed queries it recovers and those it introduces. ``candidates`` and
        ``reranked``: a run of this analysis (by name) or a :class:`~diagnose.data.Run`; or, instead of
        ``reranked``, ``cross_encoder`` (a sentence-transformers CrossEncoder folder, or a hub name when online)
        reranks the candidates' top ``depth`` live (``progress``: its progress bar on stderr). ``depth``: default
        the analysis' own."""

        if (reranked is None) == (cross_encoder is None):
            raise param_error(
                "reranked",
                "Give either reranked= (the reranked run) or cross_encoder= (a CrossEncoder), one of them.",
            )
        k = self._k(k)
        depth = self.depth if depth is None else positive_int(depth, "depth")
        before = self._identical_ids(candidates) if isinstance(candidates, Run) else self.run(candidates)
        if reranked is not None:
            after = self._identical_ids(reranked) if isinstance(reranked, Run) else self.run(reranked)
        else:
            after = self._cross_encode(before, cross_encoder, depth, progress=progress)
        return rerank_report(self.dataset.qrels, before, after, k=k, depth=depth)

    def risk(self, run: str | None = None, *, k: int | None = None) -> pd.DataFrame:
        """Every query of the run (judged or not) ranked by how likely it fails, from its top-k scores alone
        (:func:`diagnose.failures.risk.failure_risk`): which unlabelled queries to judge first."""
        from diagnose.failures.risk import failure_risk

        name = self._run_name(run)
        k = self._k(k)
        return self._cached(("risk", name, k), lambda: failure_risk(self.runs[name], k=k)).copy()

    def risk_validation(self, run: str | None = None, *, k: int | None = None) -> RiskValidation:
        """How well :meth:`risk` finds the golden queries that fail at k (ROC AUC, per feature too)."""
        from diagnose.failures.risk import validate_risk

        name = self._run_name(run)
        k = self._k(k)
        return validate_risk(self.risk(name, k=k), self.dataset.qrels, self.runs[name], k)

    def inspect(
        self, query_id: str, run: str | None = None, *, k: int | None = None, failure: str | None = None
    ) -> Inspection:
        """One query in one run: its missed targets with their evidence (terms present and missing marked), class
        and recommendation, and what the run retrieved instead. Shows itself as HTML in a notebook."""
        from diagnose.failures.inspection import inspect_query

        name = self._run_name(run)
        qid = str(query_id)
        if self.dataset.queries is not None and qid not in self.dataset.queries.text_of():
            raise param_error("query_id", f"No query {qid!r} in the queries file.")
        diag = self.diagnosis(name, k=k, failure=failure)
        return inspect_query(self.dataset, self.runs[name], diag, self.space, self.bm25, qid)

    def finetune(
        self,
        out: str | Path,
        *,
        train_qrels: Qrels | None = None,
        folds: int | None = None,
        settings: TrainSettings | None = None,
        max_documents: int = defaults.FINETUNE_MAX_DOCUMENTS,
        announce: Callable[[Cost], None] | None = None,
    ) -> FinetuneResult:
        """Fine-tune the model on the golden set and measure it on queries it never saw
        (:mod:`diagnose.analysis.finetuning`): with ``train_qrels`` (another split) one model trained on it and measured
        on this analysis' golden queries; else ``folds`` (default 5) cross-fitted models, each query scored by the one
        that never saw it. The model trained on every training query is saved to ``out``. ``settings``: epochs, batch
        size, training length, pairs per query, seed (:class:`diagnose.whatif.finetune.TrainSettings`); the cost is reported
        (and given to ``announce``) before training; more than ``max_documents`` documents to re-encode refuses."""
        from diagnose.analysis.finetuning import finetune

        with needs("Fine-tuning"):
            return finetune(
                self,
                out=out,
                train_qrels=train_qrels,
                folds=folds,
                settings=settings,
                max_documents=max_documents,
                progress=bool(getattr(self._reporter, "enabled", False)),
                announce=announce,
            )

    def models(
        self,
        models: Sequence[Any],
        *,
        metric: str | None = None,
        k: int | None = None,
        n_resamples: int = defaults.RESAMPLES,
        seed: int = defaults.SEED,
    ) -> ModelComparison:
        """Which embedding model for this golden set: each model (a name, a folder, ``"default"``, or an encoder
        object) searches the corpus exactly; metrics with CIs, ties with the best, speed, memory, failure classes.
        Vectors are the analysis' own (memoised and cached on disk)."""
        from diagnose import embed
        from diagnose.whatif.model_choice import compare_models

        k = self._k(k)
        self._need_texts("Comparing models")
        encoders = []
        for m in check_models(models):
            if isinstance(m, str | Path) or m is None:
                name = None if m in (None, "", "default") else str(m)
                enc = (
                    self.encoder
                    if name == self.model and self._encoder_given is None
                    else embed.load_encoder(name, precision=self.precision)
                )
            else:
                enc = m
            encoders.append(enc)
        spaces = [self.space if e is self.encoder else self.space_for(e) for e in encoders]
        key = ("models", tuple(e.name for e in encoders), metric, k, n_resamples, seed)
        return self._cached(
            key,
            lambda: compare_models(
                self.dataset,
                self.golden,
                encoders,
                spaces,
                bm25=self.bm25,
                k=k,
                metric=metric,
                depth=self.depth,
                n_resamples=n_resamples,
                seed=seed,
                ignore_identical_ids=self.ignore_identical_ids,
            ),
        )
