"""What the runs score: metrics per query and overall, latency of live retrievers, the tie audit and the bounds
over unjudged documents, paired comparisons (Holm, Benjamini-Hochberg, Tukey HSD, topic-set size), the queries
each run fixes and breaks, the CI gate, slices, what-if fusion, and the report of ``diagnose evaluate``."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose import checks, defaults
from diagnose.data import ChunkMap, DataError, Run
from diagnose.io.chunks import document_qrels
from diagnose.metrics import MetricName, expand_names, headline_metrics
from diagnose.report import EvaluationReport
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.threads import available_cpus, beside
from diagnose.search.documents import document_run

if TYPE_CHECKING:
    from diagnose.metrics import Evaluation
    from diagnose.stats import Comparison
    from diagnose.ties import TieAudit, TieWork

from diagnose.analysis.params import check_metrics
from diagnose.analysis.pipeline import Pipeline
from diagnose.checks import finite_number, given, mapping, param_error, positive_int
from diagnose.metrics import evaluate_many, metric_bounds
from diagnose.retrievers import RetrieverTimeout
from diagnose.retrievers.results import slowest
from diagnose.stats import compare_all, randomised_tukey_hsd, topic_set_size
from diagnose.ties import add_to_report, audit_from_work, tie_work
from diagnose.whatif.compare import fusion_whatif, per_query_deltas, slice_metrics
from diagnose.whatif.gain import measure_gain


class Scores(Pipeline):
    """See :class:`diagnose.analysis.Analysis`."""

    def metric_names(self, metrics: Sequence[str | MetricName] | None = None) -> list[str]:
        """Full metric names: ``metrics`` (or the analysis' own, or the CLI's default set) expanded at ``ks``."""
        return [str(n) for n in self._names(metrics)]

    def _names(self, metrics: Sequence[str | MetricName] | None = None) -> tuple[MetricName, ...]:
        """:meth:`metric_names` as :class:`~diagnose.metrics.MetricName` records, the form passed inward: text is
        parsed here once (records pass through), the analysis' own set once per analysis."""
        if metrics is None:
            return self._cached(("metric_names",), lambda: tuple(expand_names(self._metric_names, self.ks)))
        return tuple(expand_names(check_metrics(metrics), self.ks))

    def _headline(self) -> tuple[MetricName, MetricName, MetricName]:
        """The default metrics of comparisons and reports: nDCG and recall at k, and MRR (the headline,
        :data:`~diagnose.metrics.HEADLINE`, without hit rate: the paired comparisons, the topic-set sizes
        (``--detect``) and the report's compared metrics are these three in today's outputs and JSON, kept)."""
        return MetricName("ndcg", self.k), MetricName("recall", self.k), MetricName("mrr")

    def evaluations(
        self, metrics: Sequence[str | MetricName] | None = None, *, runs: Sequence[str] | None = None
    ) -> dict[str, Evaluation]:
        """Run name -> :class:`~diagnose.metrics.Evaluation` (per query and aggregate), of every run and baseline
        (or of the runs named: the app scores the runs it has while the vectors are still being computed)."""
        names = self._names(metrics)
        chosen = tuple(self._run_names(runs)) if runs is not None else None

        def build() -> dict[str, Evaluation]:

            pool = self.runs if chosen is None else self.ready_runs()
            return evaluate_many(self.dataset.qrels, {n: pool[n] for n in (chosen or pool)}, list(names))

        return self._cached(("evaluations", names, chosen), build)

    @property
    def chunks(self) -> ChunkMap | None:
        """The chunk map of a chunk corpus (:mod:`diagnose.io.chunks`), None for a corpus of documents."""
        return self.dataset.corpus.chunks if self.dataset.corpus is not None else None

    def document_evaluations(
        self, metrics: Sequence[str | MetricName] | None = None, *, runs: Sequence[str] | None = None
    ) -> dict[str, Evaluation]:
        """For a chunk corpus, :meth:`evaluations` at the document level: the judgements mapped to documents (a
        document's grade the best of its chunks') and each run's documents at the rank of their best chunk
        (:func:`diagnose.io.chunks.document_qrels`, :func:`~diagnose.search.documents.document_run`). For a corpus of documents,
        :meth:`evaluations` itself."""
        cmap = self.chunks
        if cmap is None:
            return self.evaluations(metrics, runs=runs)
        names = self._names(metrics)
        chosen = tuple(self._run_names(runs)) if runs is not None else None

        def build() -> dict[str, Evaluation]:
            pool = self.runs if chosen is None else self.ready_runs()
            qrels = document_qrels(self.dataset.qrels, cmap)
            return evaluate_many(
                qrels, {n: document_run(pool[n], cmap) for n in (chosen or pool)}, list(names)
            )

        return self._cached(("document_evaluations", names, chosen), build)

    def latency(self, k: int | None = None) -> dict[str, dict[str, float]]:
        """For runs with recorded latency (live retrievers): ``latency_p50_ms``, ``latency_p95_ms`` (over the
        queries that returned) and ``recall@k_per_ms`` (recall@k divided by the median latency: recall bought per
        millisecond of a query)."""
        out: dict[str, dict[str, float]] = {}
        with_latency = {n: r for n, r in self.user_runs().items() if getattr(r, "latency_ms", None)}
        if not with_latency:
            return out
        recall = MetricName("recall", self._k(k))
        evs = self.evaluations([recall], runs=list(with_latency))
        for name, r in with_latency.items():
            ms = np.asarray(list(r.latency_ms.values()), dtype=np.float64)
            p50 = float(np.percentile(ms, 50))
            out[name] = {
                "latency_p50_ms": p50,
                "latency_p95_ms": float(np.percentile(ms, 95)),
                f"{recall}_per_ms": evs[name].aggregate[str(recall)] / p50 if p50 > 0 else float("nan"),
            }
        return out

    def latency_detail(self, n: int = 5) -> dict[str, dict[str, Any]]:
        """For runs of live retrievers: ``slowest`` (the ``n`` slowest queries, ``{"query_id", "ms"}``, slowest
        first), ``timed_out`` (the ids of the queries abandoned after the timeout) and ``per_query_ms`` (every
        returned query's latency)."""

        timeout = f"{RetrieverTimeout.__name__}:"
        return {
            name: {
                "slowest": [{"query_id": q, "ms": ms} for q, ms in slowest(r.latency_ms or {}, n)],
                "timed_out": [q for q, msg in (r.errors or {}).items() if msg.startswith(timeout)],
                "per_query_ms": dict(r.latency_ms or {}),
            }
            for name, r in self.user_runs().items()
            if r.latency_ms is not None
        }

    def metrics(self, metrics: Sequence[str] | None = None, *, level: str = "chunk") -> pd.DataFrame:
        """Mean metrics: one row per run (index: run names, baselines included), one column per metric (the
        CLI's names, e.g. ``ndcg@10``); live retrievers add ``latency_p50_ms``, ``latency_p95_ms`` and
        ``recall@k_per_ms``. ``level="document"``: over a chunk corpus, at the document level
        (:meth:`document_evaluations`); ``"chunk"`` (default): in the corpus' id space (for a corpus of documents
        both are the same)."""
        names = self._names(metrics)
        level = checks.one_of(level, "level", ("chunk", "document"))
        evs = self.document_evaluations(names) if level == "document" else self.evaluations(names)
        table = pd.DataFrame(
            [evs[n].aggregate for n in evs],
            index=pd.Index(list(evs), name="run"),
            columns=[str(m) for m in names],
        )
        lat = self.latency()
        if lat:
            extra = pd.DataFrame.from_dict(lat, orient="index")
            table = table.join(extra)
        return table

    def per_query(self, run: str | None = None, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Per-query metrics of one run (index: golden query ids; missing queries score 0)."""
        return self.evaluations(metrics)[self._run_name(run)].per_query.copy()

    def ties(self, run: str | None = None, *, k: int | None = None) -> TieAudit:
        """The tie audit of a run: queries whose score ties in the top k (or across rank k) make the metrics depend
        on how documents are named, with each metric's exact range over tie orders. Computed once per run; a run
        whose metrics depend on tie order gets a ``score_ties`` warning in the data set's report."""

        name = self._run_name(run)
        k = self._k(k)

        def build() -> TieAudit:
            names = self.metric_names()
            run_ = self.runs[name]
            work = self._tie_work(name, run_, names, k)
            audit = audit_from_work(self.dataset.qrels, run_, work, base=self._evaluated(name))
            self._memo.pop(("tie_work", name, k), None)  # the audit holds what it needs of it
            add_to_report(audit, self.dataset.report)
            return audit

        return self._cached(("ties", name, k), build)

    def _tie_work(self, name: str, run: Run, names: list[str], k: int) -> TieWork:
        """:func:`~diagnose.ties.tie_work` of a run, once (:meth:`_ties_beside` may be computing it already). It
        leaves two re-ordered copies (one sort key's) to :meth:`ties`, which evaluates them side by side: beside the
        evaluations, the thread computes the tie layout and keys while the run is evaluated (a 1M-line run: ~55 ms
        each), then both copies are evaluated at once, instead of one after the other in that thread."""
        return self._cached(
            ("tie_work", name, k), lambda: tie_work(self.dataset.qrels, run, names, k=k, leave=2)
        )

    @contextlib.contextmanager
    def _ties_beside(self) -> Iterator[None]:
        """Inside, the part of the runs' tie audits that needs no evaluation (:func:`~diagnose.ties.tie_work`) is
        computed in a thread, beside the evaluations (numpy leaves the GIL in both): :meth:`ties` finds it done, or
        waits for it. Only for the runs given (the baselines are built by the evaluations), with two CPUs or more.
        An error in the thread is left there: :meth:`ties` computes the work again and raises it in its place."""
        k = self._k(None)
        runs = {n: r for n, r in self.user_runs().items() if not self._has(("ties", n, k))}
        if not runs or available_cpus() < 2:
            yield
            return
        names = self.metric_names()

        def work() -> None:
            for name, run in runs.items():
                try:
                    self._tie_work(name, run, names, k)
                except Exception:  # noqa: BLE001, S112 - raised again by ties(), in the caller's thread
                    continue

        with beside(work, name="diagnose-ties"):  # no thread started: ties() computes it all itself
            yield

    def _evaluated(self, run: str) -> Evaluation | None:
        """The run's evaluation over every run already computed by :meth:`evaluations` (any metrics: the audit
        scores the run itself when they are not enough), so that the tie audit does not score the run twice."""
        for key, evs in list(self._memo.items()):
            if isinstance(key, tuple) and key[0] == "evaluations" and key[2] is None and run in evs:
                return evs[run]
        return None

    def bounds(
        self, metrics: Sequence[str] | None = None, *, runs: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """How far the unjudged documents could move each metric: per run (all, or those named) and metric,
        ``lower`` (unjudged = non-relevant, today's value), ``upper`` (unjudged judged at best) and ``gap``."""

        names = self._names(metrics or headline_metrics(self.k))
        chosen = tuple(self._run_names(runs)) if runs is not None else None

        def build() -> pd.DataFrame:
            frames = []
            pool = self.runs if chosen is None else self.ready_runs()
            for name in chosen or pool:
                run = pool[name]
                agg = metric_bounds(self.dataset.qrels, run, names).aggregate.reset_index()
                agg.insert(0, "run", name)
                frames.append(agg)
            return pd.concat(frames, ignore_index=True)

        return self._cached(("bounds", names, chosen), build).copy()

    def comparisons(
        self,
        reference: str | None = None,
        metrics: Sequence[str | MetricName] | None = None,
        *,
        n_resamples: int = defaults.RESAMPLES,
        seed: int = defaults.SEED,
        level: str = "chunk",
    ) -> list[Comparison]:
        """Paired comparisons (:class:`diagnose.stats.Comparison`) of every run with ``reference`` (default: the
        first run) on ``metrics`` (default: nDCG and recall at k, and MRR), Holm-corrected as one family.
        ``level="document"``: a chunk corpus' document level (:meth:`document_evaluations`)."""
        ref = self._run_name(reference)
        names = self._names(metrics or self._headline())
        scored = self._scored(level)

        def build() -> list[Comparison]:

            if len(self.runs) < 2:
                return []
            evs = scored([*self._names(), *names])
            per_query = {n: ev.per_query for n, ev in evs.items()}
            return compare_all(per_query, ref, [str(m) for m in names], n_resamples=n_resamples, seed=seed)

        return self._cached(("comparisons", ref, names, n_resamples, seed, level), build)

    def _scored(self, level: str) -> Callable[..., dict[str, Evaluation]]:
        """:meth:`evaluations`, or :meth:`document_evaluations` for ``level="document"``."""
        level = checks.one_of(level, "level", ("chunk", "document"))
        return self.document_evaluations if level == "document" else self.evaluations

    def tukey(
        self,
        metric: str | MetricName | None = None,
        *,
        n_resamples: int = defaults.RESAMPLES,
        seed: int = defaults.SEED,
        level: str = "chunk",
    ) -> pd.DataFrame:
        """Every pair of runs at once (three or more runs): the randomised Tukey HSD test on ``metric`` (default
        nDCG@k), which controls the family-wise error over all pairs; one row per pair with ``mean_diff``,
        ``effect_size``, ``p_tukey``, ``significant``. Empty with fewer than three runs. ``level``: as
        :meth:`comparisons`."""

        m = self._names([metric or MetricName("ndcg", self.k)])[0]
        scored = self._scored(level)

        def build() -> pd.DataFrame:
            if len(self.runs) < 3:
                return pd.DataFrame(
                    columns=["reference", "run", "mean_diff", "effect_size", "p_tukey", "significant"]
                )
            evs = scored([*self._names(), m])
            return randomised_tukey_hsd(
                {n: ev.per_query for n, ev in evs.items()}, str(m), n_resamples=n_resamples, seed=seed
            )

        return self._cached(("tukey", m, n_resamples, seed, level), build).copy()

    def compare(
        self,
        reference: str | None = None,
        metrics: Sequence[str] | None = None,
        *,
        n_resamples: int = defaults.RESAMPLES,
        seed: int = defaults.SEED,
    ) -> pd.DataFrame:
        """:meth:`comparisons` as a table: one row per (metric, run), the columns of the CLI's ``comparisons``
        (``metric, run, reference, mean_diff, ci_low, ci_high, p_ttest, p_randomization, p_wilcoxon, p_holm, wins,
        ties, losses, n_queries, mdd, significant``)."""
        rows = [c.to_dict() for c in self.comparisons(reference, metrics, n_resamples=n_resamples, seed=seed)]
        return pd.DataFrame(rows)

    def queries_needed(
        self,
        difference: float,
        reference: str | None = None,
        metrics: Sequence[str] | None = None,
        *,
        level: str = "chunk",
    ) -> pd.DataFrame:
        """Topic-set size (Sakai): per run and metric, the number of golden queries a paired t-test (alpha 0.05,
        power 0.8) needs to detect a mean difference of ``difference`` from the reference, given the standard
        deviation of the per-query differences observed here; beside the number of queries there are. ``level``:
        as :meth:`comparisons`."""

        finite_number(
            difference,
            "difference",
            low=0,
            open_low=True,
            message="difference must be a positive number, got {value!r}.",
        )
        ref = self._run_name(reference)
        parsed = self._names(metrics or self._headline())
        evs = self._scored(level)([*self._names(), *parsed])
        rows = []
        for m in map(str, parsed):
            base = evs[ref].per_query[m]
            for name, ev in evs.items():
                if name == ref:
                    continue
                d = (ev.per_query[m].reindex(base.index).fillna(0.0) - base).to_numpy()
                sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
                need = topic_set_size(difference, sd) if math.isfinite(sd) else None
                rows.append(
                    {
                        "metric": m,
                        "run": name,
                        "reference": ref,
                        "difference": float(difference),
                        "sd_of_differences": sd,
                        "queries_needed": need,
                        "queries": len(d),
                    }
                )
        return pd.DataFrame(rows)

    def query_deltas(
        self, run: str, reference: str | None = None, metric: str | None = None, *, level: str = "chunk"
    ) -> pd.DataFrame:
        """One row per golden query: ``metric`` (default ``hit_rate@k``) of the ``reference`` run (default: the
        first) and of ``run``, ``delta`` (run minus reference) and ``change``: "fixed" (the reference scored 0, the
        run more), "broken" (the reverse), "better", "worse" or "same"; sorted by delta
        (:func:`diagnose.whatif.compare.per_query_deltas`). ``level``: as :meth:`comparisons`."""

        ref, name = self._run_name(reference), self._run_name(run)
        names = self.metric_names([metric or f"hit_rate@{self.k}"])
        if len(names) != 1:
            raise param_error(
                "metric", f"metric must be one metric at one cutoff, e.g. {names[-1]}; got {metric!r}."
            )
        evs = self._scored(level)([*self.metric_names(), *names])
        return per_query_deltas(evs[ref], evs[name], names[0])

    def query_changes(
        self, reference: str | None = None, *, k: int | None = None
    ) -> dict[str, dict[str, Any]]:
        """Per run: the golden queries it fixes (the reference has no relevant document in its top k, the run
        has) and breaks (the reverse), by ``hit_rate@k``: a :class:`~diagnose.whatif.gain.Gain` of the run over the
        reference, its ``recovered`` under the key ``fixed``."""
        ref = self._run_name(reference)
        metric = MetricName("hit_rate", self._k(k))
        out: dict[str, dict[str, Any]] = {}
        evs = self.evaluations([*self.metric_names(), metric])
        for name, ev in evs.items():
            if name == ref:
                continue
            gain = measure_gain(
                metric.k, "hit", base_per_query=evs[ref].per_query, candidate_per_query=ev.per_query
            )
            out[name] = {"metric": str(metric), "fixed": list(gain.recovered), "broken": list(gain.broken)}
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
        fail_under, max_drop = (
            dict(mapping(bounds or {}, param, expected="a dict {metric: value}, e.g. {'ndcg@10': 0.6}"))
            for param, bounds in (("fail_under", fail_under), ("max_drop", max_drop))
        )
        for param, bounds in (("fail_under", fail_under), ("max_drop", max_drop)):
            for metric, bound in bounds.items():
                finite_number(
                    bound, param, message=f"{param}[{metric!r}] must be a finite number, got {{value!r}}."
                )
                finite_number(
                    bound,
                    param,
                    low=0 if param == "max_drop" else None,
                    message=f"{param}[{metric!r}] must be >= 0, got {{value!r}}.",
                )
        if max_drop and len(self.runs) < 2:
            raise param_error(
                "max_drop", "max_drop needs a reference run to compare with: give a second run."
            )
        ref = self._run_name(reference)
        gated = {metric: self._names([metric]) for metric in [*fail_under, *max_drop]}
        evs = self.evaluations([*self._names(), *(n for names in gated.values() for n in names)])
        out = []
        for name, ev in evs.items():
            if name == ref and skip_reference:
                continue
            for metric, bound in fail_under.items():
                value = ev.aggregate[str(gated[metric][0])]
                if value < bound:
                    out.append(
                        f"run {name!r}: {metric} = {value:.4f} is below the bound {bound:g} (fail_under)"
                    )
            for metric, drop in max_drop.items():
                m = str(gated[metric][0])
                value, refv = ev.aggregate[m], evs[ref].aggregate[m]
                if refv - value > drop:
                    out.append(
                        f"run {name!r}: {metric} = {value:.4f} dropped {refv - value:.4f} below the reference "
                        f"{ref!r} ({refv:.4f}); the allowed drop is {drop:g} (max_drop)"
                    )
        return out

    def slices(self, field: str, metrics: Sequence[str | MetricName] | None = None) -> pd.DataFrame:
        """Mean metrics per run and per value of the query metadata ``field``."""

        if not isinstance(field, str):
            raise param_error(
                "slice_by", f"field must be a query metadata field name (a str), got {given(field)}."
            )
        if self.dataset.queries is None:
            raise param_error("slice_by", "Slicing needs the queries file with its metadata (queries=...).")
        try:
            return slice_metrics(self.evaluations(metrics), self.dataset.queries, field)
        except DataError as e:
            raise DataError(str(e), param="slice_by") from None

    def fusion(self, a: str, b: str, *, k: int | None = None, rrf_k: int = defaults.RRF_K) -> pd.DataFrame:
        """What if runs ``a`` and ``b`` were fused (RRF and weighted): metrics and failures recovered or lost."""

        k = self._k(k)
        rrf_k = positive_int(rrf_k, "rrf_k")
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
        n_resamples: int = defaults.RESAMPLES,
        seed: int = defaults.SEED,
    ) -> EvaluationReport:
        """Everything ``diagnose evaluate`` reports, in one object (``to_dict``, ``to_csv``, ``to_text``, ...)."""
        if not self.runs:
            raise param_error(
                "runs",
                "No run to evaluate: give runs={name: path or run} or baselines=('bm25', 'dense', 'hybrid').",
            )
        names = self._names()
        extra = (
            [m for m in self._names([*(fail_under or {}), *(max_drop or {})]) if m not in names]
            if (fail_under or max_drop)
            else []
        )
        names = (*names, *extra)
        ref = self._run_name(reference)
        with self._ties_beside():
            evs = self.evaluations(names)
            heads = self._names([*(headline or self._headline()), *(max_drop or {})])
            comparisons = (
                self.comparisons(ref, heads, n_resamples=n_resamples, seed=seed) if len(evs) > 1 else []
            )
            changes = self.query_changes(ref, k=max(self.ks)) if len(evs) > 1 else {}
            gate = self.gate(fail_under, max_drop, reference=ref, skip_reference=skip_reference)
            ties = {name: self.ties(name) for name in evs}
        tukey = self.tukey(heads[0], n_resamples=n_resamples, seed=seed) if len(evs) >= 3 else None
        slices = self.slices(slice_by, names) if slice_by else None
        rep = EvaluationReport(
            metrics=[str(n) for n in names],
            ks=list(self.ks),
            evaluations=evs,
            reference=ref,
            comparisons=comparisons,
            query_changes=changes,
            gate=gate,
            slices=slices,
            slice_field=slice_by,
            validation=self.dataset.report,
            extra_columns=self.latency(),
            ties=ties,
            tukey=tukey,
            latency_detail=self.latency_detail(),
            document_level=self.document_evaluations(names) if self.chunks is not None else None,
        )
        self._report_context(rep)
        return rep

    def _report_context(self, rep: EvaluationReport) -> None:
        """The report's context precision and recall: none at this layer (they need the corpus texts, read by
        :class:`~diagnose.analysis.chunked.Chunked`, which fills them in)."""
