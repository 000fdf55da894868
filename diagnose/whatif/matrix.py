"""The remedy matrix: every offline remedy applied to the failures of every class, so the taxonomy proves itself.

:func:`diagnose.whatif.remedies.prove_remedies` measures each class's own remedy on its own class. The matrix asks the
question a taxonomy must answer: does the class predict the fix? For every failure class with failures (rows, taxonomy
order) and every remedied run :func:`~diagnose.whatif.remedies.prove_remedies` built (columns: each distinct remedy id that
runs offline for this run's kind, e.g. ``rerank``, ``dense``, ``hybrid``; ``bm25`` and ``hybrid_baseline`` for
lexical and hybrid runs; ``crossencoder`` when a CrossEncoder was given; never ``judge`` or ``none``), a cell
``{"failures": n, "recovered": m}``:

- ``failures``: the class's failures in the unit of the remedies (:attr:`diagnose.whatif.remedies.Remedies.unit`): with
  ``mode="hit"`` (the default) its **failed queries** (distinct query ids among its missed pairs; a query whose
  missed pairs fall in two classes counts in both), with ``mode="recall"`` its missed (query, target) pairs.
- ``recovered``: how many of them the remedied run fixes at k, the definition of ``prove_remedies``' ``recovered``:
  with ``mode="hit"`` a failed query is recovered when the remedied run has a relevant document (grade > 0) in its
  top k; with ``mode="recall"`` a missed pair when its target enters the top k (:mod:`diagnose.whatif.gain`: the
  failure unit, :func:`~diagnose.whatif.gain.class_units`, and what a run gets right,
  :func:`~diagnose.whatif.gain.right_units`).

The remedied runs are the ones ``prove_remedies`` built (:attr:`~diagnose.whatif.remedies.Remedies.runs`), reused, never
built again; so the cell of a class and its own remedy (the diagonal, outlined in the app) equals that class's
``recovered`` in the remedy table. A well-separated matrix has each class's own remedy recovering far more of its
class than of the other classes: the class predicts the fix. :meth:`RemedyMatrix.sentence` says it per class,
"hybrid recovers 55% of vocabulary mismatch and 8% of the other failed queries" (the class by its label), where *the other* pools the cells of
every other class (sums of ``recovered`` and ``failures``; a failed query in two classes counts in both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from diagnose.data import Qrels, Run
from diagnose.failures import CLASS_BY_ID, CLASSES, Diagnosis, FailureMode
from diagnose.runtime.lazy import pandas as pd
from diagnose.whatif.gain import class_units, right_units, unit_ids
from diagnose.whatif.registry import REMEDIES
from diagnose.whatif.remedies import Remedies


@dataclass(frozen=True)
class MatrixCell:
    """One class under one remedy: ``recovered`` of its ``failures`` (module docstring: the unit); ``ids``: the
    recovered failures, named as the remedies name them (query ids, or "query_id/doc_id"), in the class's order
    (the paired comparisons of :mod:`diagnose.whatif.advice` read them)."""

    failures: int
    recovered: int
    ids: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def share(self) -> float | None:
        """``recovered / failures`` (None when the class has no failures)."""
        return self.recovered / self.failures if self.failures else None

    def to_dict(self) -> dict[str, int]:
        return {"failures": self.failures, "recovered": self.recovered}

    def text(self) -> str:
        """``"m/n (p%)"``."""
        return f"{self.recovered}/{self.failures} ({pct(self.share)})"


def pct(share: float | None) -> str:
    """A share as a whole percentage ("41%"), "n/a" for None: how the matrix and the advice print a share."""
    return "n/a" if share is None else f"{100 * share:.0f}%"


@dataclass(frozen=True)
class RemedyMatrix:
    """Every offline remedy applied to the failures of every class (module docstring: every definition).

    ``classes``: the classes with failures (taxonomy order); ``remedy_ids``: the columns, in the order the remedy
    table meets them; ``remedy_texts``: remedy id -> its text ("cosine rerank of the top 30"); ``own``: class -> the id
    of its own remedy for this run's kind (``judge`` or ``none`` when nothing runs offline; ``near_miss`` also owns
    ``crossencoder`` when it is measured); ``missing``: remedy id -> why it was not tried (its input not given), for the remedies of classes with failures;
    ``cells``: class -> remedy id -> :class:`MatrixCell`.
    """

    run: str
    k: int
    mode: FailureMode
    unit: str
    classes: tuple[str, ...]
    remedy_ids: tuple[str, ...]
    remedy_texts: Mapping[str, str]
    own: Mapping[str, str]
    missing: Mapping[str, str]
    cells: Mapping[str, Mapping[str, MatrixCell]]

    def cell(self, cls: str, remedy_id: str) -> MatrixCell:
        return self.cells[cls][remedy_id]

    def is_own(self, cls: str, remedy_id: str) -> bool:
        """Whether ``remedy_id`` is ``cls``'s own remedy (the diagonal)."""
        return self.own.get(cls) == remedy_id or (cls == "near_miss" and remedy_id == "crossencoder")

    def others(self, cls: str, remedy_id: str) -> MatrixCell:
        """``remedy_id`` on every class but ``cls``, pooled: the sums of their cells."""
        rest = [self.cells[c][remedy_id] for c in self.classes if c != cls]
        return MatrixCell(sum(c.failures for c in rest), sum(c.recovered for c in rest))

    def sentence(self, cls: str) -> str:
        """One line per class: its own remedy on its own class against the same remedy on every other class pooled,
        e.g. "hybrid recovers 55% of vocabulary mismatch (6 of 11 failed queries) and 8% of the other failed queries
        (3 of 40)"; for a class without an offline remedy, which remedy recovers most of it."""
        rid, n = self.own.get(cls, "none"), self.cells[cls]
        unit, label = self.unit, CLASS_BY_ID[cls].label
        if rid in self.remedy_ids:
            mine, rest = n[rid], self.others(cls, rid)
            tail = (
                f"{pct(rest.share)} of the other {unit} ({rest.recovered} of {rest.failures})"
                if rest.failures
                else f"there are no other {unit} to compare with"
            )
            of = f"{CLASS_BY_ID[cls].phrase} ({mine.recovered} of {mine.failures} {unit})"
            return f"{rid} recovers {pct(mine.share)} of {of} and {tail}."
        if rid in self.missing:
            why = f"its own remedy, {rid}, was not tried ({self.missing[rid]})"
        else:
            judging = REMEDIES[rid].cost == "judging"
            why = "it has no offline remedy of its own" + (" (judge it)" if judging else "")
        if not self.remedy_ids:
            return f"{label}: {why}."
        best = max(self.remedy_ids, key=lambda r: n[r].recovered)
        c = n[best]
        if not c.recovered:
            return f"{label}: {why}; no remedy recovers any of its {c.failures} {unit}."
        return f"{label}: {why}; {best} recovers {pct(c.share)} of it ({c.recovered} of {c.failures} {unit}), the most."

    def sentences(self) -> list[str]:
        return [self.sentence(c) for c in self.classes]

    def frame(self) -> pd.DataFrame:
        """One row per cell: ``class``, ``remedy`` (id), ``failures``, ``recovered``, ``share``, ``own`` (bool)."""
        rows = [
            {
                "class": c,
                "remedy": r,
                **self.cells[c][r].to_dict(),
                "share": self.cells[c][r].share,
                "own": self.is_own(c, r),
            }
            for c in self.classes
            for r in self.remedy_ids
        ]
        return pd.DataFrame(rows, columns=["class", "remedy", "failures", "recovered", "share", "own"])

    def rows(self) -> list[dict[str, str]]:
        """The matrix as printed: one dict per class, ``class`` then one ``"m/n (p%)"`` per remedy id, the class's
        own remedy marked ``*``."""
        return [
            {
                "class": c,
                **{r: self.cells[c][r].text() + ("*" if self.is_own(c, r) else "") for r in self.remedy_ids},
            }
            for c in self.classes
        ]

    def legend(self) -> list[str]:
        """What the printed matrix's columns and marks mean, one line each."""
        lines = [f"{r}: {self.remedy_texts[r]}" for r in self.remedy_ids]
        lines.append(f"cells: recovered/{self.unit} of the class (share); *: the class's own remedy")
        lines += [f"{r}: not tried ({why})" for r, why in self.missing.items()]
        return lines

    def to_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{class: {remedy_id: {"failures": n, "recovered": m}}}``, classes with failures only."""
        return {c: {r: self.cells[c][r].to_dict() for r in self.remedy_ids} for c in self.classes}


def _cell(units: tuple, right: set) -> MatrixCell:
    got = unit_ids(u for u in units if u in right)
    return MatrixCell(len(units), len(got), got)


def remedy_matrix(
    qrels: Qrels, diagnosis: Diagnosis, remedies: Remedies, extra: Mapping[str, tuple[str, Run]] | None = None
) -> RemedyMatrix:
    """Every remedied run of ``remedies`` (:func:`~diagnose.whatif.remedies.prove_remedies` of the run of ``diagnosis``)
    applied to the failures of every class of ``diagnosis`` (module docstring: every definition). Pure: the remedied
    runs are reused, nothing is built, encoded or indexed here. ``extra``: more columns, remedy id -> (text, run)
    measured elsewhere (``finetune``: the out-of-fold or held-out run of ``diagnose finetune``); a class whose record
    names that id (``Remedy.measured_by``) owns the column."""
    if remedies.run != diagnosis.run or remedies.k != diagnosis.k or remedies.mode != diagnosis.mode:
        raise ValueError(
            f"remedies of {remedies.run!r} at k={remedies.k} ({remedies.mode}) do not match the diagnosis of "
            f"{diagnosis.run!r} at k={diagnosis.k} ({diagnosis.mode})"
        )
    own: dict[str, str] = {}
    ids: dict[str, str] = {}
    missing: dict[str, str] = {}
    for row in remedies.rows:
        own.setdefault(row.cls, row.remedy_id)
        if not REMEDIES[row.remedy_id].runs:  # judge, none: nothing retrieves
            continue
        if not row.available:
            # a remedy with nothing to try it on (no filter given, split over documents) is no news
            if row.failures:
                missing[row.remedy_id] = row.note
        elif row.remedy_id in remedies.runs:
            ids.setdefault(row.remedy_id, row.remedy)
    runs = dict(remedies.runs)
    for rid, (text, run) in (extra or {}).items():
        ids[rid], runs[rid] = text, run
        for cls in CLASSES:
            if CLASS_BY_ID[cls].remedy.measured_by == rid and own.get(cls, "none") not in ids:
                own[cls] = rid
    units = class_units(diagnosis)
    right = {r: right_units(diagnosis.k, diagnosis.mode, run=runs[r], qrels=qrels) for r in ids}
    cells = {c: {r: _cell(us, right[r]) for r in ids} for c, us in units.items()}
    return RemedyMatrix(
        run=diagnosis.run,
        k=diagnosis.k,
        mode=diagnosis.mode,
        unit=remedies.unit,
        classes=tuple(units),
        remedy_ids=tuple(ids),
        remedy_texts=ids,
        own=own,
        missing=missing,
        cells=cells,
    )
