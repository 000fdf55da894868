"""Chunks and reference contexts: context precision and recall of a run against the golden set's spans, the
chunking sweep, and what the ``split`` class and its remedy read on a chunk corpus (the split targets' window
cosines, the run with neighbouring chunks merged). A layer of :class:`~diagnose.analysis.Analysis` between the scores
and the evidence, which reads the last two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from diagnose import defaults
from diagnose.analysis.scores import Scores
from diagnose.data import Run
from diagnose.io.chunks import document_texts

if TYPE_CHECKING:
    from diagnose.metrics.context import ContextScores
    from diagnose.report import EvaluationReport
    from diagnose.whatif.chunking import ChunkingSweep


class Chunked(Scores):
    def _split_cosines(self) -> dict[tuple[str, str], float] | None:
        """The split targets' window cosines (:func:`diagnose.failures.split.split_window_cosines`, which the split rule
        reads), the windows encoded by the model (cached on disk, shared with the merge remedy); None without a
        model for the vectors (precomputed vectors and no ``model``: the windows would be in another space)."""
        from diagnose import embed
        from diagnose.failures.split import split_window_cosines

        if self._embeddings is not None and self._encoder_given is None and self.model is None:
            return None

        def build() -> dict[tuple[str, str], float]:
            sp = self.space
            cache = embed.EmbeddingCache(self.cache_dir / "embeddings" if self.cache_dir else None)
            return split_window_cosines(
                self.dataset.qrels,
                self.dataset.corpus,
                lambda q: sp.query_vec(q) if q in sp.query_row else None,
                lambda texts: embed.embed_texts(self.encoder, texts, cache=cache, report=self.dataset.report),
            )

        return self._cached("split_cosines", build)

    def _split_ranks(self) -> dict[tuple[str, str], int] | None:
        """The split targets' ranks in the merge remedy's run (:func:`diagnose.failures.split.merged_ranks`, which
        the split rule reads); None without a model for the windows (as :meth:`_split_cosines`) or a chunk corpus
        with offsets. The merged run (every window encoded) is computed only when the golden set has split
        targets."""
        from diagnose.failures.split import merged_ranks, split_targets

        if self._split_cosines() is None:
            return None

        def build() -> dict[tuple[str, str], int] | None:
            targets = split_targets(self.dataset.qrels, self.dataset.corpus)
            if not targets:
                return {}
            merged = self._merged_neighbours()
            return merged_ranks(merged, targets) if merged is not None else None

        return self._cached("split_ranks", build)

    def _merged_neighbours(self) -> Run | None:
        """A chunk corpus with offsets: the golden queries' top ``depth`` chunks, each scored with its neighbours
        merged (:func:`diagnose.failures.split.merged_run`, the ``split`` remedy; the windows encoded once, cached on
        disk like the corpus); None for any other corpus."""
        from diagnose import embed
        from diagnose.failures.split import merged_run, neighbour_windows

        corpus = self.dataset.corpus
        if corpus is None or corpus.chunks is None or not corpus.chunks.has_offsets:
            return None

        def build() -> Run:
            sp = self.space
            windows, pairs = neighbour_windows(corpus, corpus.chunks)
            self._reporter.step(
                f"Encoding {len(windows):,} windows of neighbouring chunks (the split remedy)"
            )
            cache = embed.EmbeddingCache(self.cache_dir / "embeddings" if self.cache_dir else None)
            vecs = embed.embed_texts(self.encoder, windows, cache=cache, report=self.dataset.report)
            return merged_run(
                list(sp.query_ids),
                sp.query_vecs,
                list(sp.doc_ids),
                sp.doc_vecs,
                vecs,
                pairs,
                depth=self.depth,
            )

        return self._cached("merged_neighbours", build)

    def _report_context(self, rep: EvaluationReport) -> None:
        """With located reference contexts, each run's context precision and recall at each k in ``rep``."""
        if self.dataset.qrels.spans:
            rep.context = {name: [self.context(name, k) for k in self.ks] for name in rep.evaluations}
            rep.context_level = "chunk" if self.chunks is not None else "document"

    def context(self, run: str | None = None, k: int | None = None) -> ContextScores:
        """Span-based context precision and recall at ``k`` of a run (each retrieved document sent whole; over a
        chunk corpus with offsets, each retrieved chunk where it lies in its document), against the golden set's
        reference spans, or the relevant documents' whole texts without spans (:mod:`diagnose.metrics.context`)."""
        from diagnose.metrics.context import chunk_pieces, context_scores, document_spans, whole_documents

        k, name = self._k(k), self._run_name(run)
        self._need_texts("Context precision and recall")

        def build() -> ContextScores:
            corpus, qrels, cmap = self.dataset.corpus, self.dataset.qrels, self.chunks
            ready = self.ready_runs()  # a run given or BM25 needs no vectors (the app asks while they encode)
            top = (ready[name] if name in ready else self.runs[name]).top(k)
            if qrels.spans and cmap is not None and cmap.has_offsets:  # spans lie in the rebuilt documents
                texts = self._cached(("document_texts",), lambda: document_texts(corpus, cmap))
                return context_scores(chunk_pieces(top, cmap), list(qrels.spans), texts, k)
            text_of = dict(zip(map(str, corpus.ids), corpus.df["text"].fillna("").astype(str), strict=True))
            spans = list(qrels.spans) or document_spans(qrels, {d: len(t) for d, t in text_of.items()})
            return context_scores(whole_documents(top, text_of), spans, text_of, k)

        return self._cached(("context", name, k), build)

    def chunking(
        self,
        sizes: Sequence[int] | str = defaults.CHUNK_SIZES,
        overlaps: Sequence[int] | str = defaults.CHUNK_OVERLAPS,
        *,
        k: int | None = None,
    ) -> ChunkingSweep:
        """Which chunking: the documents re-chunked at every ``sizes`` x ``overlaps`` (the model's tokens), each
        encoded by this analysis' model, searched exactly, documents ranked by their best chunk, against the
        documents as they are (the dense baseline): chunks, encode time, index size, recall / nDCG / hit rate at k,
        span-based context precision and recall, tokens sent at k, the queries each recovers or breaks with a
        paired test, the Pareto front of nDCG against tokens (:mod:`diagnose.whatif.chunking`). Every point is cached on
        disk. Needs the ``[chunking]`` extra."""
        from diagnose.whatif.chunking import SweepInputs, check_grid, run_sweep

        k, configs = self._k(k), check_grid(sizes, overlaps)
        self._need_texts("A chunking sweep")

        def build() -> ChunkingSweep:
            inputs = SweepInputs(
                self.dataset, self.encoder, k, list(self.golden), lambda: self.space.query_vecs,
                lambda: self._baseline("dense"), self.cache_dir, self._reporter,
                ignore_identical_ids=self.ignore_identical_ids,
            )  # fmt: skip
            return run_sweep(inputs, configs)

        return self._cached(("chunking", tuple((c.size, c.overlap) for c in configs), k), build)
