"""The pictures of an analysis: the embedding maps (a sample, or the whole collection) and the similarity
histogram, as Altair charts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnose.defaults import MAP_COLOR_BY, MAP_COLORINGS
from diagnose.runtime.extras import needs
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    import altair as alt

    from diagnose.failures import Calibration
    from diagnose.projection import EmbeddingMap, Projection
    from diagnose.search.space import VectorSpace

from diagnose.analysis.evidence import Evidence
from diagnose.checks import one_of, positive_int


class Pictures(Evidence):
    """See :class:`diagnose.analysis.Analysis`."""

    def embedding_map(
        self, run: str | None = None, *, cap: int = 4000, k: int | None = None, failure: str | None = None
    ) -> EmbeddingMap:
        """Documents and queries in one UMAP projection (at most ``cap`` points; every failed query, its targets
        and top k kept), with the failed queries linked to their targets (cached on disk)."""
        from diagnose import projection

        name = self._run_name(run)
        k = self._k(k)
        cap = positive_int(cap, "cap")
        mode = self._mode(failure)

        def build() -> EmbeddingMap:
            return projection.build_map(
                **self._map_inputs(name, k, mode),
                cap=cap,
                report=self.dataset.report,
                progress=self._reporter,
            )

        return self._cached(("map", name, k, mode, cap), build)

    def _map_inputs(self, name: str, k: int, mode: str) -> dict[str, Any]:
        """What both maps draw: every document and golden query (ids, texts, vectors) and the run's failed queries."""
        from diagnose import projection

        diag = self.diagnosis(name, k=k, failure=mode)
        sp, ds = self.space, self.dataset
        q_text = ds.queries.text_of()
        return {
            "doc_ids": list(sp.doc_ids),
            "doc_texts": ds.corpus.texts(),
            "doc_vecs": sp.doc_vecs,
            "query_ids": list(sp.query_ids),
            "query_texts": [q_text.get(q, "") for q in sp.query_ids],
            "query_vecs": sp.query_vecs,
            "failed": projection.failed_queries_from(diag.failures, self.runs[name].ranked_lists(), k),
        }

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

    def whole_embedding_map(
        self, run: str | None = None, *, k: int | None = None, failure: str | None = None
    ) -> EmbeddingMap:
        """:meth:`embedding_map` of every document and query (for the deck.gl map): the failed queries of
        ``run`` on :meth:`whole_projection`."""
        from diagnose import projection

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)

        def build() -> EmbeddingMap:
            proj = self.whole_projection()
            return projection.build_whole_map(**self._map_inputs(name, k, mode), projected=proj)

        return self._cached(("whole_map", name, k, mode), build)

    def map(self, run: str | None = None, *, cap: int = 4000, color_by: str = MAP_COLOR_BY) -> alt.LayerChart:
        """The embedding map as an Altair chart (``color_by``: ``"role"`` or ``"failure_class"``)."""
        with needs("The embedding map"):
            from diagnose import charts

        color_by = one_of(color_by, "color_by", MAP_COLORINGS)
        emap = self.embedding_map(run, cap=cap)
        return charts.embedding_map(emap.points, emap.edges, color_by=color_by, selectable=False)

    def similarity_frame(
        self, run: str | None = None, *, k: int | None = None, spaces: Mapping[str, VectorSpace] | None = None
    ) -> pd.DataFrame:
        """cos(query, relevant document) of every golden pair, with ``outcome`` "hit" (in the run's top k) or
        "miss", per model (``spaces``: label -> vector space; default: the analysis' model)."""
        from diagnose.search.space import relevant_pair_cosines

        name = self._run_name(run)
        k = self._k(k)
        spaces = spaces or {self.model_label: self.space}
        frames = [
            relevant_pair_cosines(self.dataset.qrels, self.runs[name], sp, k).assign(model=label)
            for label, sp in spaces.items()
        ]
        return pd.concat(frames, ignore_index=True)

    def calibration(
        self, run: str | None = None, *, k: int | None = None, space: VectorSpace | None = None
    ) -> Calibration:
        """The calibrated cosine threshold of the analysis' model (or of ``space``, another model's vectors of the
        same data) on the run's hits at k, with the analysis' thresholds, and the run's threshold of the share of
        the query's BM25 weight (model-free): the calibration its diagnosis uses (:func:`diagnose.failures.calibrate`,
        :func:`diagnose.failures.diagnosis.calibrate_words`)."""
        from diagnose.failures import calibrate
        from diagnose.failures.diagnosis import calibrate_words

        name = self._run_name(run)
        k = self._k(k)
        run_ = self.runs[name]
        cosine = calibrate(self.dataset, run_, space or self.space, k, self.thresholds)
        return calibrate_words(self.dataset, run_, self.bm25, k, cosine, self.thresholds)

    def similarity(self, run: str | None = None, *, k: int | None = None) -> alt.Chart:
        """Histogram of cos(query, relevant document), hits vs misses, with the seed and calibrated thresholds."""
        with needs("The similarity chart"):
            from diagnose import charts

        d = self.diagnosis(run, k=k)
        return charts.similarity_histogram(
            self.similarity_frame(run, k=k),
            seed_threshold=d.calibration.seed,
            calibrated_threshold=d.calibration.calibrated,
        )

    @property
    def model_label(self) -> str:
        """How the model is called (the app shows it): its label (a name or path), else its identity; with
        precomputed vectors, ``precomputed vectors (<doc file>, <query file>)``."""
        emb = self._embeddings
        if emb is not None:
            files = [
                Path(str(emb[key])).name
                for key in ("doc", "query")
                if isinstance(emb, Mapping) and emb.get(key)
            ]
            return "precomputed vectors" + (f" ({', '.join(files)})" if files else "")
        enc = self.encoder
        return str(getattr(enc, "label", "") or enc.name)
