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

Where things are (one class, built in layers, each a file): :mod:`.base` (parameters, the memo, progress),
:mod:`.params` (the parameters checked at the door), :mod:`.pipeline` (golden queries, runs, baselines, vectors,
BM25), :mod:`.scores` (metrics, comparisons, the CI gate, ties, bounds), :mod:`.chunked` (context precision and recall,
the chunking sweep, the split class' inputs), :mod:`.evidence` (failures, remedies, risk,
inspection, model choice), :mod:`.pictures` (maps, similarity); :class:`Analysis` (here) adds the outputs:
``to_dict``, the summary and the notebook display.

Each layer imports at its top what the metrics need (the data, the metrics, the statistics, the tie audit, the
report); the domain module of any other step (the failure taxonomy, the vector space, BM25, the remedies, the maps,
the chunking sweep, ...) is imported in the step that uses it, so ``diagnose evaluate`` loads none of them
(``tests/test_pandas_free.py`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from diagnose import defaults
from diagnose.analysis.base import (
    BASELINE,
    DEFAULT_KS,
    LIVE,
    YOUR_RUN,
)
from diagnose.analysis.pictures import Pictures
from diagnose.checks import positive_int
from diagnose.data import DataError
from diagnose.defaults import BASELINES, FAILURE_MODES
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    from diagnose.report.html import ShareableReport

__all__ = [
    "Analysis",
    "BASELINE",
    "BASELINES",
    "DEFAULT_KS",
    "FAILURE_MODES",
    "LIVE",
    "YOUR_RUN",
]


class Analysis(Pictures):
    """A retriever analysis over one data set.

    ``dataset``: a :class:`~diagnose.data.Dataset` (``diagnose.load(...)``). ``runs``: ``{name: run}`` where a run
    is a file path, a :class:`~diagnose.data.Run`, a dict ``{query_id: {doc_id: score}}``, or a live retriever (a
    callable ``str -> list[doc_id | (doc_id, score)]``, a LangChain or LlamaIndex retriever; run over the golden
    queries by :func:`diagnose.retrievers.run_retriever` the first time it is needed, latency recorded, each query
    given ``retriever_timeout`` seconds, default 60, ``None``: no limit); default:
    the runs loaded with the data set. ``k``: the cutoff of the failures and of the headline metrics; ``ks``: the
    cutoffs of the metric table (``k`` is always added). ``model``: a sentence-transformers model name or folder
    (``"default"``: the bundled all-MiniLM-L6-v2, offline); ``precision``: ``"fast"`` (bf16 transformer where the CPU supports it, vectors
    within cosine 0.9999 of fp32) or ``"exact"`` (fp32, as sentence-transformers encodes); ``encoder``: an encoder
    object instead (``name`` +
    ``encode``, e.g. :class:`diagnose.embed.KeywordEncoder` in tests); ``embeddings``: precomputed vectors instead,
    ``{"doc": path, "query": path}`` (optional ``"doc_ids"``, ``"query_ids"`` files for ``.npy``) or a
    :class:`~diagnose.search.space.VectorSpace`. ``failure``: ``"hit"`` (a query fails when no relevant document is in its
    top k) or ``"recall"`` (any relevant document missing). ``baselines``: any of ``"bm25"``, ``"dense"``,
    ``"hybrid"`` (names as given), or a mapping ``{run name: kind}``. ``cache_dir``: where vectors and the BM25
    index are cached (default: the user cache folder, ``DIAGNOSE_CACHE_DIR``). ``progress``: ``True`` (tqdm and
    stage labels on a terminal or in a notebook), ``False``, or a reporter (:mod:`diagnose.runtime.progress`). ``kinds``:
    ``{run name: "dense" | "lexical" | "hybrid" | "unknown"}``, the retrieval kind of a run, which the failure
    taxonomy follows; a run not named is inferred (:meth:`run_kind`, :mod:`diagnose.failures.kind`).
    ``filter_field`` (``"FIELD"`` or ``"QUERY_FIELD=DOC_FIELD"``) and/or ``filters`` (a JSON file or a mapping
    ``{query_id: {field: value | {"$in": [...]}}}``): each query's metadata filter (:mod:`diagnose.io.filters`), which
    makes the ``filtered_out`` class and :meth:`filter_recall`. ``ignore_identical_ids``: BEIR's convention for
    collections whose queries are documents (ArguAna, Touche, CQADupStack, Quora; MTEB's ``ignore_identical_ids``,
    Pyserini's ``--remove-query``): every run scored here (the runs given, live retrievers, every baseline, and so
    the failures and the remedies built from them; the model comparison, the ANN frontier, the chunking sweep,
    fine-tuning's tuned run, the judge queue's probes) has its rows with ``doc_id == query_id`` removed before the
    metrics and the diagnosis, each query's later documents moving up one rank; the searches made here go one deeper
    so that ``depth`` documents remain, and the failures' dense and BM25 ranks over the corpus leave the query's
    own document out too (:mod:`diagnose.metrics.identical`). Off (default), the validation report says
    when >= 10% of the golden queries retrieve their own id in a run. ``passage_candidates``: the bound of the
    ``passages`` remedy: an int N, each golden query re-scores by its best passage only the top N (at least ``k``) of
    the run, of exact dense search and of BM25, and its failed targets
    (:func:`diagnose.failures.passages.remedy_candidates`), so only those documents' passages are encoded (it can
    overstate the whole corpus' figures: :data:`~diagnose.defaults.PASSAGE_CANDIDATES`); ``None``: every document's
    passages (``diagnose failures --passage-remedy-corpus``); ``"auto"`` (default): every document up to
    :data:`~diagnose.defaults.MAXSIM_MAX_DOCS` documents, N = :data:`~diagnose.defaults.PASSAGE_CANDIDATES` above.
    """

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """The same dict as ``diagnose evaluate --format json``, plus ``failures`` (run -> the ``diagnose
        failures --format json`` dict) for every diagnosis computed so far."""
        payload = self.evaluation_report().to_dict(per_query=per_query)
        diagnosed = [key for key in list(self._memo) if isinstance(key, tuple) and key[0] == "diagnosis"]
        if diagnosed:
            from diagnose.report.failures import failures_dict

            payload["failures"] = {
                f"{name}@{k}:{mode}" if (k, mode) != (self.k, self.failure) else name: failures_dict(
                    self._memo[key]
                )
                for key in diagnosed
                for _, name, k, mode in [key]
            }
        return payload

    def summary(self) -> pd.DataFrame:
        """The headline table: per run, nDCG, recall and hit rate at k, MRR, and (when the texts are loaded)
        the number of failed queries, of missed pairs, and the missed pairs per failure class."""
        k = self.k
        cols = [f"ndcg@{k}", f"recall@{k}", f"hit_rate@{k}", "mrr"]
        table = self.metrics(cols)
        if self.dataset.corpus is not None and self.dataset.queries is not None:
            table["failed queries"] = [len(self.diagnosis(n).failed_queries) for n in table.index]
            table["missed pairs"] = [self.diagnosis(n).n_missed_pairs for n in table.index]
            counts = self.class_counts()
            table = table.join(counts.loc[:, counts.sum() > 0])
        return table

    def shareable_report(
        self,
        run: str | None = None,
        *,
        k: int | None = None,
        failure: str | None = None,
        data_label: str | None = None,
        data_lines: Sequence[str] = (),
        worst: int = 10,
        charts: bool = True,
    ) -> ShareableReport:
        """What the report a team can share shows (:mod:`diagnose.report.html`: ``to_html``, ``to_markdown``), read
        from this analysis: the findings of ``run`` (:meth:`findings`), the metrics at k of every run and baseline
        with quality bands and 95% bootstrap CIs of the mean over the golden queries (percentile, seeded), the
        diagnosis, the remedy matrix, the ``worst`` deepest missed pairs and the validation report. ``charts``: the
        metrics, the failure classes and the remedy matrix drawn as inline SVG (the ``[report]`` extra)."""
        from diagnose.failures import CLASS_LABELS, sort_worst
        from diagnose.metrics import quality_band
        from diagnose.report.html import CHART_CLASSES, CHART_MATRIX, CHART_METRICS, ShareableReport
        from diagnose.stats import bootstrap_ci

        name = self._run_name(run)
        k = self._k(k)
        mode = self._mode(failure)
        worst = positive_int(worst, "worst")
        found = self.findings(name, k=k, failure=mode)
        diag = self.diagnosis(name, k=k, failure=mode)
        matrix = self.remedy_matrix(name, k=k, failure=mode)
        names = (f"ndcg@{k}", f"recall@{k}", f"hit_rate@{k}", f"mrr@{k}")
        evs = self.evaluations(names)
        order = [name, *(n for n in evs if n != name)]
        rows = []
        for n in order:
            ev, row = evs[n], {"run": n, "kind": self.kinds.get(n, ""), "queries": evs[n].n_queries}
            for m in names:
                row[m] = float(ev.aggregate[m])
                row[f"band:{m}"] = quality_band(m, row[m])
                low, high = bootstrap_ci(ev.per_query[m].to_numpy(), seed=defaults.SEED)
                row[f"ci_low:{m}"], row[f"ci_high:{m}"] = low, high
            rows.append(row)
        metrics = pd.DataFrame(rows)
        shown = sort_worst(diag.failures)[:worst]
        ids = {f.doc_id for f in shown} | {c.doc_id for f in shown for c in f.top_retrieved[:3]}
        documents = {}
        for doc_id in ids:
            doc = self.document(doc_id)
            if doc is not None:
                text = " ".join(" ".join(doc).split())
                documents[doc_id] = text[:160] + ("…" if len(text) > 160 else "")
        pictures: tuple[tuple[str, str], ...] = ()
        if charts:
            from diagnose import charts as ch
            from diagnose.charts.svg import to_svg

            bars = pd.DataFrame(
                [
                    {
                        "run": r["run"], "kind": "baseline" if r["kind"] == BASELINE else "run", "metric": m,
                        "value": r[m], "ci_low": r[f"ci_low:{m}"], "ci_high": r[f"ci_high:{m}"],
                    }
                    for m in names[:2]
                    for r in rows
                ]
            )  # fmt: skip
            classes = pd.DataFrame(
                [
                    {"run": name, "class": c, "label": CLASS_LABELS[c], "count": n}
                    for c, n in diag.class_counts.items()
                    if n
                ],
                columns=["run", "class", "label", "count"],
            )
            pictures = ((CHART_METRICS, to_svg(ch.metrics_bar(bars, k=k))),)
            if len(classes):
                pictures += ((CHART_CLASSES, to_svg(ch.failure_breakdown(classes))),)
            if matrix.classes and matrix.remedy_ids:
                heat = ch.remedy_matrix_heatmap(matrix.frame(), unit=matrix.unit)
                pictures += ((CHART_MATRIX, to_svg(heat)),)
        return ShareableReport(
            data_label=data_label or self.dataset.name,
            data_lines=tuple(data_lines),
            model=self.model_label,
            run=name,
            k=k,
            mode=mode,
            findings=found,
            metrics=metrics,
            metric_names=names,
            diagnosis=diag,
            matrix=matrix,
            validation=self.dataset.report,
            charts=pictures,
            documents=documents,
            worst=worst,
        )

    def __repr__(self) -> str:
        ds = self.dataset
        parts = [
            f"{len(ds.corpus):,} documents" if ds.corpus is not None else "no corpus",
            f"{len(ds.qrels.queries_with_relevant()):,} golden queries",
            f"runs: {', '.join(self.run_names) or 'none'}",
            f"k={self.k}",
            f"failure={self.failure!r}",
            f"model={self.model or 'default'!r}",
        ]
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
