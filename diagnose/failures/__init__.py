"""Why each failed query failed: evidence -> failure class -> recommendation.

A golden query *fails at k* when none of its relevant documents is in the run's top k (``mode="hit"``), or, with
``mode="recall"``, for every relevant document missing from the top k. Each (failed query, missed relevant document)
pair, the *target*, is analysed on its own: its evidence (cosine, run / exact dense / BM25 ranks, term overlap, the
documents that beat it), the first class whose rule matches (:data:`FAILURE_CLASSES`, in rule order), a sentence
saying why, and the class's recommendation.

Where things are
----------------
One question a file:

- :mod:`~diagnose.failures.classes`: one :class:`FailureClass` record per class (label, legend, colour, rule and
  advice in words, recommendation, remedy, evidence sentence) in :data:`FAILURE_CLASSES`, and the views
  :data:`CLASSES`, :data:`CLASS_LABELS`. Open it to add a failure class.
- :mod:`~diagnose.failures.taxonomy`: :class:`Thresholds` (the near-miss depth too), :class:`PairEvidence` (what the
  rules read), :func:`classify` (the rules, in the records' order), each failure's evidence sentence, the
  recommendations (:data:`RECOMMENDATIONS`, :func:`recommendation`), :func:`class_table` (docs/taxonomy.md's table).
- :mod:`~diagnose.failures.evidence`: one (query, target) pair: the :class:`Failure` and :class:`Competitor`
  records, what the evidence is read from (:class:`EvidenceSources`), how each piece of evidence is computed, :func:`sort_worst`, :func:`worst_queries`.
- :mod:`~diagnose.failures.kind`: the run's kind (dense, lexical, hybrid, unknown), given or inferred
  (:class:`RunKind`, :func:`infer_run_kind`), which the rules, sentences, recommendations and remedies follow.
- :mod:`~diagnose.failures.passages`: the model's window and each target's passages (:class:`ModelWindow`,
  :func:`model_window`, :class:`PassageScorer`, :class:`PassageMatch`), read by the ``truncated`` and ``diluted``
  rules, and the passage max-sim remedy (:func:`maxsim_run`).
- :mod:`~diagnose.failures.diagnosis`: a whole run: :func:`failed_pairs`, :func:`calibrate` (:class:`Calibration`),
  :func:`diagnose_run` -> :class:`Diagnosis`.
- :mod:`diagnose.failures.golden` (it asks whether the golden set is wrong, not the retriever):
  :func:`find_label_noise`, :func:`normalise_text`, :func:`hubness`; re-exported here.

Every name below is importable from ``diagnose.failures`` itself::

    from diagnose.failures import diagnose_run
    diagnose_run(ds, run, space, bm25, k=10).class_counts
"""

from __future__ import annotations

from diagnose.failures.classes import (
    CLASS_BY_ID,
    CLASS_LABELS,
    CLASSES,
    FAILURE_CLASSES,
    FailureClass,
    ForKind,
    Remedy,
)
from diagnose.failures.diagnosis import Calibration, Diagnosis, calibrate, diagnose_run, failed_pairs
from diagnose.failures.evidence import Competitor, EvidenceSources, Failure, sort_worst, worst_queries
from diagnose.failures.golden import Hubness, LabelNoise, find_label_noise, hubness, normalise_text
from diagnose.failures.kind import RUN_KINDS, RunKind, infer_run_kind
from diagnose.failures.taxonomy import (
    RECOMMENDATIONS,
    FailureMode,
    PairEvidence,
    Thresholds,
    class_table,
    classify,
    rank_range_text,
    recommendation,
    within,
)

__all__ = [
    "RUN_KINDS",
    "CLASSES",
    "CLASS_BY_ID",
    "CLASS_LABELS",
    "FAILURE_CLASSES",
    "RECOMMENDATIONS",
    "Calibration",
    "Competitor",
    "Diagnosis",
    "EvidenceSources",
    "Failure",
    "FailureClass",
    "ForKind",
    "FailureMode",
    "Hubness",
    "LabelNoise",
    "PairEvidence",
    "RunKind",
    "Remedy",
    "Thresholds",
    "calibrate",
    "class_table",
    "classify",
    "diagnose_run",
    "failed_pairs",
    "find_label_noise",
    "hubness",
    "infer_run_kind",
    "normalise_text",
    "rank_range_text",
    "recommendation",
    "sort_worst",
    "worst_queries",
    "within",
]
