"""Recommendations proven on the data: apply each failure class's offline remedy and count what it recovers and breaks.

:mod:`diagnose.failures` says *why* each failed query failed and what usually helps. This module tries the remedies
that can run without a new model or new judgements, on the same golden set, and reports for each failure class:

- ``failed_queries`` and ``missed_pairs``: the class's failed queries (distinct query ids among its missed pairs: a
  query with two missed targets of one class counts once, a query whose targets fall in two classes counts in both;
  :attr:`diagnose.failures.Diagnosis.class_failed_queries`) and missed (query, target) pairs
  (:attr:`diagnose.failures.Diagnosis.class_counts`).
- ``failures``: the unit the remedy is measured in (:attr:`Remedies.unit`): with ``mode="hit"`` the failed
  queries, with ``mode="recall"`` the missed pairs.
- ``recovered``: how many of them the remedied run fixes at k: with ``mode="hit"`` the query gets a relevant
  document (grade > 0) in its top k; with ``mode="recall"`` the missed target enters the top k.
- ``lost_hits``: over **all** golden queries, how many were hits at k in the run (a relevant document in the top k,
  ``hit_rate@k = 1``) and are not in the remedied run: what the remedy breaks, whatever the class.
- ``mean_diff`` and ``p_value``: the mean per-query difference ``metric(remedied) - metric(run)`` over all golden
  queries (``metric`` defaults to ``hit_rate@k``) and the two-sided paired randomization test of it
  (:func:`diagnose.stats.randomization_test`, 10,000 sign flips, seeded; exact when few queries differ). Golden
  queries are those with a relevant document in the qrels (:func:`diagnose.metrics.evaluate`'s convention: a query
  missing from a run scores 0).

Each class names its remedy in its record (:attr:`diagnose.failures.FailureClass.remedy`: an id, the text of the
table, the advice when nothing runs offline); the record of each remedy id (what it needs, how its run is built, why it
cannot run, what it costs) is in :data:`diagnose.whatif.registry.REMEDIES`; what each id runs:

================  ==================================================================================================
``hybrid``        reciprocal rank fusion (k=60, :func:`diagnose.search.fusion.rrf`) of the run and BM25
``dense``         exact dense search with the embedding model (the dense baseline run replaces the run)
``rerank``        the run's top ``near_miss_depth(k)`` (the diagnosis's :class:`~diagnose.failures.Thresholds`: the
                  depth of the near-miss rule) reranked by exact cosine (:func:`diagnose.search.rerank.cosine_rerank`):
                  for ``near_miss``, and for ``ranking_failure`` (the target is findable; the rerank tests whether
                  the model would put it higher than the run did)
``unfiltered``    the unfiltered search, for ``filtered_out``: exact dense search over the whole corpus, without
                  the metadata filter (``unfiltered_run``, the dense baseline; this tool's BM25 for a lexical run);
                  measured only when a filter is given
``merge``         a chunk corpus with offsets: every chunk scored by the best cosine of itself and of the windows
                  of it and a neighbouring chunk (exact dense search, :func:`diagnose.failures.split.merged_run`):
                  for ``split``, whose answer is whole in the window around the boundary
``passages``      the documents' passages that fit the model's window (sentence windows,
                  :mod:`diagnose.failures.passages`) encoded, each document scored by its best passage's cosine
                  (max-sim) over the whole corpus (up to :data:`~diagnose.defaults.MAXSIM_MAX_DOCS` documents; above,
                  or on request, a bounded candidate set per query: the top
                  :data:`~diagnose.defaults.PASSAGE_CANDIDATES` of the run, dense search and BM25, and the failed
                  targets): for ``truncated`` and ``diluted``
``judge``         not a retrieval remedy: judge the near-duplicate the run found (``recovered`` is None)
``none``          no offline remedy (``semantic_gap``: fine-tuning on in-domain pairs or enriching the documents
                  needs work; ``missing_document``: the data is wrong)
================  ==================================================================================================

The run's kind (:mod:`diagnose.failures.kind`) changes two remedies (the records' ``by_kind``, :func:`remedy_for`): a **lexical** run's
``vocabulary_mismatch`` is remedied by dense retrieval (exact dense search replaces the run; fusing a BM25 run with
BM25 adds nothing), its ``index_gap`` by this tool's BM25 (the BM25 baseline replaces the run); a **hybrid** run's
``index_gap`` by the hybrid baseline (RRF of BM25 and exact dense search) replacing the run. Not RRF of the lexical
run and dense search: the class's targets are, by its rule, missing from the run's list or deep in it, and RRF
ranks a document found by one list below the documents both lists hold (on the demo's LangChain BM25 run it
recovered 0 of 11 failed queries with a vocabulary mismatch, dense search 7).

A remedy is a whole-run change: hybrid or the rerank also reorders the queries that did not fail, which is what
``lost_hits`` and the paired test measure. The cosine rerank is exact search's ordering restricted to what the run
retrieved; with the same embedding model as the run it mostly undoes the approximate index's reordering, with
another model it is a cheap bi-encoder reranker (a cross-encoder would do better; it is not offline-free).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from diagnose import defaults
from diagnose.data import DataError, Dataset, Run, fields_dict
from diagnose.failures import CLASS_BY_ID, FAILURE_CLASSES, Diagnosis, FailureMode, Remedy
from diagnose.metrics import evaluate, expand_metrics
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.space import VectorSpace
from diagnose.whatif.gain import Gain, Unit, failure_units, measure_gain, right_units, unit_ids
from diagnose.whatif.registry import REMEDIES, RemedyInputs


def remedy_for(cls: str, kind: str = "unknown") -> Remedy:
    """The remedy of class ``cls`` for a run of ``kind``: the record's (:meth:`FailureClass.remedy_for`)."""
    return CLASS_BY_ID[cls].remedy_for(kind)


#: The second ``near_miss`` remedy, measured when the user gives a CrossEncoder (not a class's own remedy).
CROSS_ENCODER = Remedy("crossencoder", "cross-encoder rerank of the top {depth}")

#: Columns of :meth:`Remedies.table`.
TABLE_COLUMNS = (
    "class",
    "failures",
    "failed_queries",
    "missed_pairs",
    "remedy",
    "recovered",
    "lost_hits",
    "mean_diff",
    "p_value",
)


@dataclass(frozen=True)
class RemedyResult:
    """One failure class and its remedy, measured (see the module docstring for every definition).

    ``remedy_id``: "hybrid", "dense", "rerank", "judge" or "none" (for some run kinds "bm25" or "hybrid_baseline":
    ``FailureClass.by_kind``). For "judge" and "none", and for a remedy whose
    input was not given (``available`` False, ``note`` says which), ``recovered``, ``lost_hits``, ``mean_diff`` and
    ``p_value`` are None. ``recovered_ids``: the recovered failures (query ids in hit mode, "query_id/doc_id" in
    recall mode); ``lost_ids``: the golden queries the remedy turns from hit to miss.
    """

    cls: str
    failures: int
    remedy_id: str
    remedy: str
    recovered: int | None
    lost_hits: int | None
    mean_diff: float | None
    p_value: float | None
    metric: str
    advice: str = ""
    available: bool = True
    note: str = ""
    recovered_ids: tuple[str, ...] = ()
    lost_ids: tuple[str, ...] = ()
    failed_queries: int = 0
    missed_pairs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, rename={"cls": "class"}),
            "recovered_ids": list(self.recovered_ids),
            "lost_ids": list(self.lost_ids),
        }

    def sentence(self, k: int, unit: str = "failed queries") -> str:
        """One line for a person: what the remedy would do, with its evidence. ``unit``: what ``failures`` counts
        (:attr:`Remedies.unit`); in "failed queries" the missed pairs are said too."""
        c = CLASS_BY_ID[self.cls].phrase
        pairs = f" ({self.missed_pairs} missed pair{'s' if self.missed_pairs != 1 else ''})"
        word = _SINGULAR.get(unit, unit) if self.failures == 1 else unit
        of = f"{self.failures} {word} of class {c}{pairs if unit == 'failed queries' else ''}"
        spec = REMEDIES[self.remedy_id]
        if spec.cost == "judging":
            return f"{of}: judge it ({self.advice}; the golden set is probably incomplete)."
        if not spec.runs:
            return f"{of}: no offline remedy ({self.advice})."
        if not self.available:
            return f"{of}: {self.remedy} not tried ({self.note})."
        direction = f"{self.mean_diff:+.3f}" if self.mean_diff is not None else "n/a"
        return (
            f"{self.remedy} would recover {self.recovered} of the {of} and lose "
            f"{self.lost_hits} hit{'s' if self.lost_hits != 1 else ''} (mean {self.metric} difference {direction}, "
            f"paired randomization test on {self.metric}: p = {fmt_p(self.p_value)})."
        )


_SINGULAR = {"failed queries": "failed query", "missed pairs": "missed pair"}


def fmt_p(p: float | None) -> str:
    """A p value as the remedies print it: 3 significant digits, 1 below 0.001 ("0.0215", "0.0001")."""
    if p is None:
        return "n/a"
    return f"{p:.3g}" if p >= 0.001 else f"{p:.1g}"


@dataclass(frozen=True)
class Remedies:
    """Every failure class of one run with its remedy measured: ``rows`` in taxonomy order (:data:`FAILURE_CLASSES`).

    ``hits``: golden queries the run hits at k (the ceiling of ``lost_hits``); ``n_queries``: golden queries;
    ``runs``: the remedied runs by remedy id ("hybrid", "dense", "rerank"), for a closer look.
    """

    run: str
    k: int
    mode: FailureMode
    metric: str
    n_queries: int
    hits: int
    rows: tuple[RemedyResult, ...]
    runs: Mapping[str, Run] = field(default_factory=dict, repr=False, compare=False)

    @property
    def unit(self) -> str:
        """What ``failures`` and ``recovered`` count: "failed queries" (``mode="hit"``) or "missed pairs"."""
        return "failed queries" if self.mode == "hit" else "missed pairs"

    def row(self, cls: str) -> RemedyResult:
        for r in self.rows:
            if r.cls == cls:
                return r
        raise KeyError(cls)

    def table(self) -> pd.DataFrame:
        """One row per failure class: :data:`TABLE_COLUMNS` (``failures`` and ``recovered`` in :attr:`unit`)."""
        data = [{c: r.to_dict()[c] for c in TABLE_COLUMNS} for r in self.rows]
        table = pd.DataFrame(data, columns=list(TABLE_COLUMNS))
        # None stays a missing value (<NA>) in integer columns rather than turning them into floats
        return table.astype(
            {"recovered": "Int64", "lost_hits": "Int64", "mean_diff": "Float64", "p_value": "Float64"}
        )

    def sentences(self, *, include_empty: bool = False) -> list[str]:
        """One sentence per class that has failures (every class with ``include_empty``), e.g. "hybrid (RRF k=60 of
        the run and BM25) would recover 14 of the 23 failed queries of class vocabulary_mismatch (31 missed pairs)
        and lose 3 hits (...: p = 0.012)"."""
        return [r.sentence(self.k, self.unit) for r in self.rows if include_empty or r.failures > 0]

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, "run", "k", "mode", "metric", "n_queries", "hits"),
            "unit": self.unit,
            "remedies": [r.to_dict() for r in self.rows],
            "sentences": self.sentences(),
        }


# ------------------------------------------------------------------------------------------ proving


class _Measured(NamedTuple):
    """A remedied run measured against the run: ``gain`` over every golden query in queries (its ``broken``: the
    hits the remedy loses; its mean difference and paired test on the metric) and ``of_failures``, the gain in the
    diagnosis's unit whose ``recovered`` holds the diagnosis's failures the remedied run gets right (``gain``
    itself with ``mode="hit"``)."""

    gain: Gain
    of_failures: Gain


@dataclass
class _Trials:
    """The remedied runs, each built (by its builder) and measured once, on first need."""

    ds: Dataset
    base: pd.DataFrame  # the run's per-query metrics over the golden queries
    names: list[str]
    hit_name: str
    metric_name: str
    k: int
    builders: dict[str, Callable[[], Run] | None]
    n_resamples: int
    seed: int
    remedied: dict[str, Run] = field(default_factory=dict)
    measured: dict[str, _Measured] = field(default_factory=dict)
    mode: FailureMode = "hit"
    failures: tuple[Unit, ...] = ()  # every failure unit of the diagnosis
    right: Collection[Unit] = ()  # mode="recall": the (query, document) pairs of the run's top k

    def measure(self, rid: str) -> _Measured:

        if rid not in self.measured:
            r = self.builders[rid]()
            self.remedied[rid] = r
            pq = evaluate(self.ds.qrels, r, self.names).per_query
            hit = self.mode == "hit"
            gain = measure_gain(
                self.k,
                "hit",
                base_per_query=self.base,
                candidate_per_query=pq,
                metric=self.metric_name,
                failures=self.failures if hit else None,
                n_resamples=self.n_resamples,
                seed=self.seed,
            )
            of_failures = (
                gain
                if hit
                else measure_gain(
                    self.k,
                    "recall",
                    qrels=self.ds.qrels,
                    candidate=r,
                    failures=self.failures,
                    base_right=self.right,
                )
            )
            self.measured[rid] = _Measured(gain, of_failures)
        return self.measured[rid]


def _check_inputs(
    run: Run, diagnosis: Diagnosis, k: int | None, mode: FailureMode | None
) -> tuple[int, FailureMode]:
    """``k`` and ``mode`` (defaulting to the diagnosis's), after checking that the inputs agree."""
    k = diagnosis.k if k is None else k
    mode = diagnosis.mode if mode is None else mode
    if k != diagnosis.k or mode != diagnosis.mode:
        raise DataError(
            f"The diagnosis was made at k={diagnosis.k}, mode {diagnosis.mode!r}; the remedies were asked at k={k}, "
            f"mode {mode!r}. Diagnose the run at the same k and mode.",
            param="k" if k != diagnosis.k else "failure",
        )
    if diagnosis.run != run.name:
        raise DataError(f"The diagnosis is of run {diagnosis.run!r}, not of {run.name!r}.", param="run")
    return k, mode


_NOT_MEASURED = dict(recovered=None, lost_hits=None, mean_diff=None, p_value=None)


def _result(
    trials: _Trials,
    mode: FailureMode,
    cls: str,
    remedy: Remedy,
    pairs: list[tuple[str, str]],
    depth: int,
) -> RemedyResult:
    """One class's row: its remedy measured on its failures (``pairs``), or why it was not."""
    rid, text, advice = remedy.id, remedy.text, remedy.advice
    units = failure_units(pairs, mode)
    common = dict(
        cls=cls,
        failures=len(units),
        failed_queries=len(dict.fromkeys(q for q, _ in pairs)),
        missed_pairs=len(dict.fromkeys(pairs)),
        remedy_id=rid,
        remedy=text.format(depth=depth, rrf_k=defaults.RRF_K),
        metric=trials.metric_name,
        advice=advice,
    )
    spec = REMEDIES[rid]
    if not spec.runs:
        return RemedyResult(**_NOT_MEASURED, **common)
    if trials.builders[rid] is None:
        return RemedyResult(**_NOT_MEASURED, available=False, note=spec.missing, **common)
    m = trials.measure(rid)
    rec = unit_ids(m.of_failures.among(units))
    return RemedyResult(
        recovered=len(rec),
        lost_hits=len(m.gain.broken),
        mean_diff=m.gain.mean_diff,
        p_value=m.gain.p_value,
        recovered_ids=rec,
        lost_ids=unit_ids(m.gain.broken),
        **common,
    )


def prove_remedies(
    ds: Dataset,
    run: Run,
    diagnosis: Diagnosis,
    *,
    space: VectorSpace | None = None,
    bm25_run: Run | None = None,
    dense_run: Run | None = None,
    k: int | None = None,
    mode: FailureMode | None = None,
    metric: str | None = None,
    cross_encoder_run: Run | None = None,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
    kind: str | None = None,
    hybrid_run: Run | None = None,
    unfiltered_run: Run | None = None,
    merged_run: Run | None = None,
    passage_run: Callable[[], Run] | None = None,
) -> Remedies:
    """Apply each failure class's offline remedy to ``run`` and measure it (module docstring: every definition).

    ``diagnosis``: :func:`diagnose.failures.diagnose_run` of this run; ``k`` and ``mode`` default to its own and
    must match it when given. ``bm25_run`` (the BM25 baseline over the golden queries), ``dense_run`` (exact dense
    search) and ``space`` (for the cosine rerank) are optional: a remedy whose input is missing is reported as not
    tried, not silently skipped. ``metric``: the metric of the paired test (default ``hit_rate@k``; any name of
    :mod:`diagnose.metrics`, e.g. ``"ndcg@10"``). The rerank depth is the near-miss depth,
    ``diagnosis.thresholds.near_miss_depth(k)``. ``cross_encoder_run``: the run's top ``near_miss_depth(k)``
    reranked by a CrossEncoder (:func:`diagnose.whatif.compare.rerank_cross_encoder`), when the user gives one: measured as
    a second ``near_miss`` row (remedy id ``"crossencoder"``) after the taxonomy's rows (one a class). Pure: nothing
    is encoded or indexed here. ``kind``: the run's kind (default: the diagnosis's), which picks each
    class's remedy for that kind (``FailureClass.by_kind``); ``hybrid_run`` (the hybrid baseline) is read for a hybrid
    run's index gaps. ``unfiltered_run``: the search without the metadata filter (exact dense search over the
    whole corpus), for ``filtered_out``, when a filter was given (:mod:`diagnose.io.filters`); ``merged_run`` (a chunk
    corpus: :func:`diagnose.failures.split.merged_run`) for ``split``.
    ``passage_run``: builds the passage max-sim run (:func:`diagnose.failures.passages.maxsim_run`)
    of the ``truncated`` and ``diluted`` classes, called only when it is measured (encoding passages is not free).
    """

    k, mode = _check_inputs(run, diagnosis, k, mode)
    hit_name = f"hit_rate@{k}"
    metric_name = expand_metrics([metric], [k])[0] if metric else hit_name
    names = list(dict.fromkeys([hit_name, metric_name]))
    base = evaluate(ds.qrels, run, names).per_query
    depth = diagnosis.thresholds.near_miss_depth(k)
    inputs = RemedyInputs(
        run,
        depth,
        space=space,
        bm25_run=bm25_run,
        dense_run=dense_run,
        cross_encoder_run=cross_encoder_run,
        hybrid_run=hybrid_run,
        unfiltered_run=unfiltered_run,
        merged_run=merged_run,
        passage_run=passage_run,
    )
    builders = {rid: spec.builder(inputs) for rid, spec in REMEDIES.items()}
    failures = failure_units(((f.query_id, f.doc_id) for f in diagnosis.failures), mode)
    trials = _Trials(
        ds,
        base,
        names,
        hit_name,
        metric_name,
        k,
        builders,
        n_resamples,
        seed,
        mode=mode,
        failures=failures,
        right=right_units(k, mode, run=run) if mode == "recall" else (),
    )

    by_class: dict[str, list[tuple[str, str]]] = {c.id: [] for c in FAILURE_CLASSES}
    for f in diagnosis.failures:
        by_class[f.cls].append((f.query_id, f.doc_id))
    kind = diagnosis.run_kind.kind if kind is None else kind
    plan = [(c.id, c.remedy_for(kind)) for c in FAILURE_CLASSES]
    if cross_encoder_run is not None:
        plan.append(("near_miss", CROSS_ENCODER))
    rows = [_result(trials, mode, cls, remedy, by_class[cls], depth) for cls, remedy in plan]
    return Remedies(
        run=run.name,
        k=k,
        mode=mode,
        metric=metric_name,
        n_queries=len(base.index),
        hits=int((base[hit_name] > 0).sum()),
        rows=tuple(rows),
        runs=dict(trials.remedied),
    )
