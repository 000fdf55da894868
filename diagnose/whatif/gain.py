"""What a change recovers and breaks: one measure of a candidate run against a base run at k.

Every "what would fix it" answer (the remedies, the remedy matrix, the ANN frontier, the chunking sweep, fine-tuning,
rerank and fusion reports, the report's ``query_changes``) counts the same two things, in one of two units, the
**failure unit** of the failure mode (:func:`failure_unit`):

- ``mode="hit"``, unit ``"query"``: a golden query (one with a relevant document, grade > 0, in the qrels) is
  *right* at k when ``hit_rate@k > 0`` (:func:`diagnose.metrics.evaluate`: a relevant document, grade > 0, in its
  top k), *failed* otherwise. A query missing from a run scores 0 (it is failed).
- ``mode="recall"``, unit ``"pair"``: a relevant (query, document) pair (grade > 0) is *right* when it is one of the
  (query, document) pairs of the run's top k (``rank <= k``), *failed* (missed) otherwise.

Both read the run's ``rank`` column, as the metrics do: documents tied in score are in the order the run ranked them.

A :class:`Gain` of a candidate over a base run holds:

- ``recovered``: the failures of the base (by default every failed unit of the base; a caller may name them, e.g.
  the failures of a diagnosis) that the candidate gets right, in the failures' order;
- ``broken``: the units the base gets right and the candidate does not (golden queries in index order; relevant
  pairs in the qrels' order);
- ``mean_diff`` and ``p_value`` when a ``metric`` is given: the mean per-query difference
  ``metric(candidate) - metric(base)`` over the base's golden queries and the two-sided paired randomization test of
  it (:func:`diagnose.stats.randomization_test` with ``n_resamples`` sign flips and ``seed``; exact when few queries
  differ); with no golden query, 0.0 and 1.0. Without a metric both are None.

Words: *recovered* and *broken* in the code that measures. Outputs and records that existed before keep their
names, as contracts: ``lost_hits`` and ``lost_ids`` of the remedies and of the ANN frontier (the ``broken`` of the
query unit, in either mode: what a remedy breaks, whatever the class), ``introduced`` of the rerank report,
``recovers_X`` / ``loses_X`` of what-if fusion, ``recovers`` / ``breaks`` of the chunking sweep, ``fixed`` /
``broken`` of ``query_changes``, ``recovered`` / ``broken`` of fine-tuning (:func:`diagnosis_gain`, per class).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from diagnose import defaults
from diagnose.checks import one_of
from diagnose.data import Qrels, Run
from diagnose.metrics import evaluate
from diagnose.runtime.lazy import pandas as pd
from diagnose.stats import randomization_test

if TYPE_CHECKING:
    from diagnose.failures import Diagnosis, FailureMode

#: A failure unit: a query id (``mode="hit"``) or a (query id, document id) pair (``mode="recall"``).
Unit = str | tuple[str, str]

#: The failure mode -> the name of its unit (:attr:`Gain.unit`).
UNITS: Mapping[str, str] = {"hit": "query", "recall": "pair"}


# ------------------------------------------------------------------------------------------ the failure unit


def failure_unit(query_id: str, doc_id: str, mode: FailureMode) -> Unit:
    """The unit a missed (query, document) pair counts in: the query under ``mode="hit"``, the pair under
    ``"recall"``."""
    return query_id if mode == "hit" else (query_id, doc_id)


def failure_units(pairs: Iterable[tuple[str, str]], mode: FailureMode) -> tuple[Unit, ...]:
    """The distinct units of missed ``(query, document)`` pairs, in first-seen order (a query with two missed
    documents is one unit under ``mode="hit"``)."""
    return tuple(dict.fromkeys(failure_unit(q, d, mode) for q, d in pairs))


def class_units(diagnosis: Diagnosis) -> dict[str, tuple[Unit, ...]]:
    """Failure class -> its failures in the diagnosis's unit (first-seen order), the classes with failures in
    taxonomy order. A failed query whose missed pairs fall in two classes is a unit of both."""
    from diagnose.failures import CLASSES

    pairs: dict[str, list[tuple[str, str]]] = {}
    for f in diagnosis.failures:
        pairs.setdefault(f.cls, []).append((f.query_id, f.doc_id))
    return {c: failure_units(pairs[c], diagnosis.mode) for c in CLASSES if c in pairs}


def unit_classes(diagnosis: Diagnosis) -> dict[Unit, set[str]]:
    """Failure unit -> the classes of its missed pairs, units in first-seen order."""
    out: dict[Unit, set[str]] = {}
    for f in diagnosis.failures:
        out.setdefault(failure_unit(f.query_id, f.doc_id, diagnosis.mode), set()).add(f.cls)
    return out


def unit_id(unit: Unit) -> str:
    """A unit as one string: the query id, or ``"query_id/doc_id"`` for a pair."""
    return unit if isinstance(unit, str) else f"{unit[0]}/{unit[1]}"


def unit_ids(units: Iterable[Unit]) -> tuple[str, ...]:
    """:func:`unit_id` of each unit."""
    return tuple(unit_id(u) for u in units)


def right_units(
    k: int,
    mode: FailureMode,
    *,
    run: Run | None = None,
    qrels: Qrels | None = None,
    per_query: pd.DataFrame | None = None,
) -> set[Unit]:
    """What a run gets right at k (module docstring): under ``mode="hit"`` the query ids with ``hit_rate@k > 0`` in
    ``per_query`` (default: ``evaluate(qrels, run)``'s), under ``"recall"`` the (query, document) pairs of ``run``'s
    top k (relevant or not: intersect with the failures)."""
    if mode == "hit":
        hit = f"hit_rate@{k}"
        if per_query is None:
            per_query = evaluate(qrels, run, [hit]).per_query
        return {str(q) for q, v in per_query[hit].items() if v > 0}
    top = run.top(k)
    return set(zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True))


# ------------------------------------------------------------------------------------------ the record


@dataclass(frozen=True)
class Gain:
    """What a candidate run recovers and breaks against a base run at ``k`` (module docstring: every definition).

    ``unit``: ``"query"`` (``recovered`` and ``broken`` hold query ids) or ``"pair"`` ((query id, document id)
    tuples). ``metric``: the metric of ``mean_diff`` and ``p_value`` (None: not tested)."""

    recovered: tuple[Unit, ...]
    broken: tuple[Unit, ...]
    mean_diff: float | None
    p_value: float | None
    metric: str | None
    unit: str
    k: int

    def among(self, failures: Iterable[Unit]) -> tuple[Unit, ...]:
        """The ``failures`` that are recovered, in their order (e.g. one failure class's units)."""
        have = set(self.recovered)
        return tuple(u for u in failures if u in have)


def measure_gain(
    k: int,
    mode: FailureMode = "hit",
    *,
    qrels: Qrels | None = None,
    base: Run | None = None,
    candidate: Run | None = None,
    base_per_query: pd.DataFrame | None = None,
    candidate_per_query: pd.DataFrame | None = None,
    metric: str | None = None,
    failures: Iterable[Unit] | None = None,
    base_right: Collection[Unit] | None = None,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
) -> Gain:
    """The :class:`Gain` of ``candidate`` over ``base`` at ``k`` in the unit of ``mode`` (module docstring).

    Per-query metrics: ``base_per_query`` and ``candidate_per_query`` when the caller has them (golden queries as
    the index; ``hit_rate@k`` under ``mode="hit"`` and ``metric`` when given), else ``evaluate(qrels, run)`` once
    per run. The base's index is the golden set; the candidate's frame is aligned to it, a missing query scoring 0.
    ``mode="recall"`` reads the runs' top k (``base`` and ``candidate``) and the relevant pairs of ``qrels``.
    ``failures``: the base failures ``recovered`` is taken from (default: every unit the base gets wrong).
    ``base_right``: what the base gets right (:func:`right_units` of it), when the caller measures several
    candidates against one base (then ``base`` is not read). ``metric``: a full metric name (``"ndcg@10"``) to
    test; None, no test.
    """
    one_of(mode, "failure", tuple(UNITS))
    hit = f"hit_rate@{k}"
    names = list(dict.fromkeys([*([hit] if mode == "hit" else []), *([metric] if metric else [])]))
    b = c = None
    if names:
        b = base_per_query if base_per_query is not None else evaluate(qrels, base, names).per_query
        c = (
            candidate_per_query
            if candidate_per_query is not None
            else evaluate(qrels, candidate, names).per_query
        )
        c = c.reindex(b.index, fill_value=0.0)
    units: tuple[Unit, ...]  # the golden queries, or the relevant pairs
    if mode == "hit":
        units = tuple(str(q) for q in b.index)
        before = right_units(k, mode, per_query=b) if base_right is None else base_right
        right = right_units(k, mode, per_query=c)
    else:
        relevant = qrels.relevant()
        units = tuple(
            dict.fromkeys(zip(relevant["query_id"].tolist(), relevant["doc_id"].tolist(), strict=True))
        )
        before = right_units(k, mode, run=base) if base_right is None else base_right
        right = right_units(k, mode, run=candidate)
    if failures is None:
        failures = (u for u in units if u not in before)
    broken = tuple(u for u in units if u in before and u not in right)
    recovered = tuple(u for u in failures if u in right)
    mean_diff = p_value = None
    if metric:
        if len(b.index):
            mean_diff = float((c[metric] - b[metric]).mean())
            p_value = randomization_test(b[metric], c[metric], n_resamples=n_resamples, seed=seed)
        else:
            mean_diff, p_value = 0.0, 1.0
    return Gain(recovered, broken, mean_diff, p_value, metric, UNITS[mode], k)


def diagnosis_gain(base: Diagnosis, candidate: Diagnosis) -> Gain:
    """The :class:`Gain` between two diagnoses of the same golden set at the same k and mode: ``recovered``, the
    base's failure units the candidate does not fail; ``broken``, the candidate's failure units the base did not
    fail (each in its diagnosis's first-seen order). No metric, so no test."""
    if base.mode != candidate.mode or base.k != candidate.k:
        raise ValueError(
            f"diagnoses at k={base.k} ({base.mode}) and k={candidate.k} ({candidate.mode}) cannot be compared"
        )
    before = dict.fromkeys(failure_unit(f.query_id, f.doc_id, base.mode) for f in base.failures)
    after = dict.fromkeys(failure_unit(f.query_id, f.doc_id, base.mode) for f in candidate.failures)
    return Gain(
        tuple(u for u in before if u not in after),
        tuple(u for u in after if u not in before),
        None,
        None,
        None,
        UNITS[base.mode],
        base.k,
    )
