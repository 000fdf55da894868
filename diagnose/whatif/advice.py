"""The recommendation follows the measurement: per failure class, the remedy the user's data supports beside the rule's.

Each class names an a-priori remedy (its record's, for the run's kind: :attr:`RemedyMatrix.own`, *the rule's
remedy*). The remedy matrix (:mod:`diagnose.whatif.matrix`) has applied every remedied run to every class's
failures, so the data can overrule the rule. :func:`class_advice` reads the matrix (and the remedies' rows for the
rule's words), never runs a remedy again, and gives one :class:`ClassAdvice` per class with failures:

- ``rule_remedy``: the rule's remedy id (``judge`` or ``none`` when nothing runs offline; a remedy whose input was
  not given is *not measured*: ``rule_measured`` False).
- ``remedy_evidence``: one :class:`RemedyEvidence` per remedy tried (the matrix's columns, in its order): what it
  recovers of the class (``recovered`` of ``failures``, the class's units as the matrix counts them) and of every
  other class pooled (``others_recovered`` of ``others_failures``: :meth:`RemedyMatrix.others`), and, for every
  remedy but the rule's, the **paired test against the rule's remedy on the class's failures**: ``wins`` (failures
  it recovers and the rule's does not), ``losses`` (the reverse), ``p_value`` the exact two-sided McNemar test of
  them (:func:`diagnose.stats.mcnemar_exact`: a sign test of the discordant failures), ``p_adjusted`` the Holm
  adjustment over the remedies tried on the class (:func:`diagnose.stats.holm`; the family is the class's
  alternatives, ``m`` = the number of remedies tried less the rule's). A rule's remedy that is not measured recovers
  nothing in these comparisons (its column is empty).
- ``recommended_remedy`` and ``status``, decided in this order (``alpha`` 0.05, ``min_share`` 0.2):

  ================== ==============================================================================================
  ``judging``        the rule is to judge (``label_gap``): kept. A run that moves the judged document up does not
                     make the unjudged near-duplicate the run found any less worth judging
  ``nothing``        no remedy tried recovers any of the class: nothing measured is recommended (None); the rule's
                     remedy stays the hypothesis to try
  ``better``         another remedy recovers more of the class than the rule's (``wins > losses``) with a Holm-adjusted
                     ``p <= alpha``: the best such remedy (most recovered, then the cheaper cost tier of
                     :data:`~diagnose.whatif.registry.COSTS`, then the matrix's order)
  ``rule_empty``     the rule's remedy recovers none of the class (or is not measured) while the best remedy tried
                     recovers ``>= min_share`` of it: that remedy, significant or not (its p is said). A remedy that
                     recovers nothing is never recommended over one that recovers a fifth
  ``unsupported``    the rule's remedy recovers none (or is not measured) and no remedy recovers ``min_share`` or
                     significantly more: nothing recommended (None), the rule's stays the hypothesis
  ``more_specific``  the rule's remedy recovers the class but no more of it than of the other classes (the class
                     does not predict its fix); another remedy recovers at least as many of the class *and* more of
                     it than of the others: that remedy
  ``not_specific``   as above without such an alternative: the rule's remedy is kept (it is the best for these
                     failures), flagged: the class does not predict the fix
  ``confirmed``      the rule's remedy recovers more of its class than of the others and nothing recovers
                     significantly more: the rule's remedy
  ================== ==============================================================================================

  "More of its class than of the others": ``recovered / failures > others_recovered / others_failures`` (True when
  there is no other class).

**Choosing the best of several remedies flatters the winner**, since every remedy is tried on the same failures.
The correction used here is **Holm** over the remedies tried per class (``method="holm"``): a remedy overrules the
rule only when its paired test against the rule survives Holm at ``alpha``, which bounds the chance that *any*
alternative is wrongly called better than the rule by ``alpha``, under any dependence between the remedies (they
share the failures). Holm was chosen over cross-fitting (choose on one half of the failures, report the other half)
because every failure then counts in the decision and in its evidence, where halving the failures of a class of
tens (most classes on the collections measured) halves the power of the test, and because a split would make the
advice depend on which half a query fell in. What Holm does not undo: the recovered share printed for the winner is
its in-sample share (the maximum of several estimates is biased upward); it is claimed *better* only with the test.
The ``rule_empty`` switch needs no test by design: the rule's remedy recovered nothing, so any remedy that recovers a
fifth is better advice even on a handful of failures, and its p is printed beside it for the reader to weigh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diagnose.data import fields_dict
from diagnose.failures import CLASS_BY_ID
from diagnose.stats import holm, mcnemar_exact
from diagnose.whatif.matrix import MatrixCell, RemedyMatrix, pct
from diagnose.whatif.registry import COSTS, REMEDIES
from diagnose.whatif.remedies import Remedies, fmt_p

#: The significance level of the Holm-adjusted paired test.
ALPHA = 0.05
#: The share of its class a remedy must recover to overrule a rule's remedy that recovers nothing.
MIN_SHARE = 0.2
#: The correction for choosing the best of several remedies (module docstring).
METHOD = "holm"
#: The statuses, in the order they are decided (module docstring).
STATUSES = (
    "judging",
    "nothing",
    "better",
    "rule_empty",
    "unsupported",
    "more_specific",
    "not_specific",
    "confirmed",
)


@dataclass(frozen=True)
class RemedyEvidence:
    """One remedy tried on one class (module docstring: every definition). ``rule``: it is the rule's remedy (then
    ``wins``, ``losses``, ``p_value`` and ``p_adjusted`` are None)."""

    remedy_id: str
    remedy: str
    rule: bool
    failures: int
    recovered: int
    others_failures: int
    others_recovered: int
    wins: int | None
    losses: int | None
    p_value: float | None
    p_adjusted: float | None

    @property
    def share(self) -> float | None:
        return self.recovered / self.failures if self.failures else None

    @property
    def others_share(self) -> float | None:
        return self.others_recovered / self.others_failures if self.others_failures else None

    @property
    def specific(self) -> bool:
        """It recovers more of the class than of the other classes (True when there is no other class)."""
        if self.others_share is None:
            return True
        return (self.share or 0.0) > self.others_share

    def to_dict(self) -> dict[str, Any]:
        return {**fields_dict(self), "share": self.share, "others_share": self.others_share}


@dataclass(frozen=True)
class ClassAdvice:
    """The measured recommendation of one class beside its rule's (module docstring: every definition).

    ``recommended_remedy``: None when nothing measured is recommended (``nothing``, ``unsupported``). ``unit``: what
    ``failures`` counts ("failed queries" or "missed pairs")."""

    cls: str
    failures: int
    unit: str
    rule_remedy: str
    rule_text: str
    rule_measured: bool
    recommended_remedy: str | None
    status: str
    method: str
    alpha: float
    remedy_evidence: tuple[RemedyEvidence, ...]

    @property
    def differs(self) -> bool:
        """Whether the measurement says something the rule does not: another remedy, none, or a flag on the rule's."""
        return self.status not in ("confirmed", "judging")

    def evidence(self, remedy_id: str) -> RemedyEvidence | None:
        return next((e for e in self.remedy_evidence if e.remedy_id == remedy_id), None)

    def _rule_words(self) -> str:
        rule = self.evidence(self.rule_remedy)
        if rule is None:
            why = "no offline remedy" if not REMEDIES[self.rule_remedy].runs else "not tried"
            return f"rule: {self.rule_remedy} ({why})"
        return f"rule: {self.rule_remedy} recovers {pct(rule.share)} ({rule.recovered}/{rule.failures})"

    def sentence(self) -> str:
        """One short line, e.g. "near_miss: rule: rerank recovers 0% (0/199); measured: hybrid recovers 41% of near
        miss (82/199) vs 3% of the others (Holm p = 0.001)"."""
        phrase, head = CLASS_BY_ID[self.cls].phrase, f"{self.cls}: {self._rule_words()}"
        rec = self.evidence(self.recommended_remedy) if self.recommended_remedy else None
        if self.status == "nothing":
            return (
                f"{head}; measured: no remedy tried recovers any of its {self.failures} {self.unit}, nothing "
                f"recommended ({self.rule_remedy} stays a hypothesis to try)."
            )
        if self.status == "judging":
            return f"{head}; kept: judging is not a retrieval remedy."
        if self.status == "unsupported":
            best = self._best_other()
            return (
                f"{head}; measured: nothing recovers much (best {best.remedy_id} {pct(best.share)}, "
                f"{best.recovered}/{best.failures}, {self.method.capitalize()} p = {fmt_p(best.p_adjusted)}), "
                f"nothing recommended ({self.rule_remedy} stays a hypothesis to try)."
            )
        if rec is None:  # pragma: no cover - every other status recommends a measured remedy
            return head
        vs = f"vs {pct(rec.others_share)} of the others" if rec.others_failures else "(no other class)"
        said = f"{rec.remedy_id} recovers {pct(rec.share)} of {phrase} ({rec.recovered}/{rec.failures}) {vs}"
        if self.status in ("confirmed", "not_specific"):
            tail = "; the class does not predict the fix" if self.status == "not_specific" else ""
            return f"{self.cls}: rule kept: {said}{tail}."
        p = f" ({self.method.capitalize()} p = {fmt_p(rec.p_adjusted)})" if rec.p_adjusted is not None else ""
        why = {"more_specific": "; the rule's recovers as much of the other classes"}.get(self.status, "")
        if not rec.specific:
            why += "; the class does not predict the fix"
        return f"{head}; measured: {said}{p}{why}."

    def _best_other(self) -> RemedyEvidence:
        return _best([e for e in self.remedy_evidence if not e.rule] or list(self.remedy_evidence))

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, rename={"cls": "class"}),
            "remedy_evidence": [e.to_dict() for e in self.remedy_evidence],
            "sentence": self.sentence(),
        }


@dataclass(frozen=True)
class Advice:
    """Every class with failures advised (:class:`ClassAdvice`, taxonomy order), one run at k."""

    run: str
    k: int
    mode: str
    unit: str
    method: str
    alpha: float
    min_share: float
    classes: tuple[ClassAdvice, ...]

    def of(self, cls: str) -> ClassAdvice:
        for a in self.classes:
            if a.cls == cls:
                return a
        raise KeyError(cls)

    def recommended(self) -> dict[str, str | None]:
        """class -> its recommended remedy id (None: nothing measured recommended)."""
        return {a.cls: a.recommended_remedy for a in self.classes}

    def head(self) -> str:
        return (
            f"measured advice (per class, each remedy tried paired-tested against the rule's on the class's "
            f"{self.unit}, exact McNemar, {self.method.capitalize()} over the remedies tried, alpha {self.alpha:g}):"
        )

    def lines(self) -> list[str]:
        """One line per class whose measured advice differs from its rule (:attr:`ClassAdvice.differs`)."""
        return [a.sentence() for a in self.classes if a.differs]

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, "method", "alpha", "min_share", "unit"),
            "classes": {a.cls: a.to_dict() for a in self.classes},
        }


def _best(evidence: list[RemedyEvidence]) -> RemedyEvidence:
    """Most recovered, then the cheaper cost tier, then the first (the matrix's order)."""
    return min(
        enumerate(evidence),
        key=lambda ie: (-ie[1].recovered, COSTS.index(REMEDIES[ie[1].remedy_id].cost), ie[0]),
    )[1]


def _evidence(matrix: RemedyMatrix, cls: str, rule: str) -> list[RemedyEvidence]:
    """Every remedy of the matrix on ``cls``, each alternative paired-tested against ``rule`` and Holm-adjusted."""
    cells: Mapping[str, MatrixCell] = matrix.cells[cls]
    base = set(cells[rule].ids) if rule in cells else set()
    rows = []
    for rid in matrix.remedy_ids:
        c, o, got = cells[rid], matrix.others(cls, rid), set(cells[rid].ids)
        wins = losses = p = None
        if rid != rule:
            wins, losses = len(got - base), len(base - got)
            p = mcnemar_exact(wins, losses)
        rows.append((rid, c, o, wins, losses, p))
    alts = [r for r in rows if r[5] is not None]
    adjusted = dict(zip((r[0] for r in alts), holm([r[5] for r in alts]).tolist(), strict=True))
    return [
        RemedyEvidence(
            remedy_id=rid,
            remedy=matrix.remedy_texts[rid],
            rule=rid == rule,
            failures=c.failures,
            recovered=c.recovered,
            others_failures=o.failures,
            others_recovered=o.recovered,
            wins=wins,
            losses=losses,
            p_value=p,
            p_adjusted=adjusted.get(rid),
        )
        for rid, c, o, wins, losses, p in rows
    ]


def _decide(
    rule: str, evidence: list[RemedyEvidence], alpha: float, min_share: float
) -> tuple[str | None, str]:
    """(recommended remedy id, status), in the order of the module docstring."""
    if REMEDIES[rule].cost == "judging":
        return rule, "judging"
    if not any(e.recovered for e in evidence):
        return None, "nothing"
    alts = [e for e in evidence if not e.rule]
    better = [e for e in alts if e.wins > e.losses and e.p_adjusted <= alpha]
    if better:
        return _best(better).remedy_id, "better"
    own = next((e for e in evidence if e.rule), None)
    if own is None or not own.recovered:
        best = _best(alts)
        if best.share is not None and best.share >= min_share:
            return best.remedy_id, "rule_empty"
        return None, "unsupported"
    if own.specific:
        return rule, "confirmed"
    specific = [e for e in alts if e.specific and e.recovered >= own.recovered]
    if specific:
        return _best(specific).remedy_id, "more_specific"
    return rule, "not_specific"


def class_advice(
    remedies: Remedies, matrix: RemedyMatrix, *, alpha: float = ALPHA, min_share: float = MIN_SHARE
) -> Advice:
    """The measured recommendation of every class of ``matrix`` (module docstring: every definition and the order of
    the decision). ``remedies``: the :func:`~diagnose.whatif.remedies.prove_remedies` the matrix was built from (the
    rule's words when its remedy was not measured); read, never measured again."""
    if (remedies.run, remedies.k, remedies.mode) != (matrix.run, matrix.k, matrix.mode):
        raise ValueError(
            f"the remedies of {remedies.run!r} at k={remedies.k} ({remedies.mode}) are not the matrix's "
            f"({matrix.run!r} at k={matrix.k}, {matrix.mode})"
        )
    out = []
    for cls in matrix.classes:
        rule = matrix.own.get(cls, "none")
        evidence = _evidence(matrix, cls, rule)
        recommended, status = _decide(rule, evidence, alpha, min_share)
        row = remedies.row(cls)  # the class's first row: its rule's remedy
        out.append(
            ClassAdvice(
                cls=cls,
                failures=row.failures,
                unit=matrix.unit,
                rule_remedy=rule,
                rule_text=matrix.remedy_texts.get(rule, row.remedy),
                rule_measured=rule in matrix.remedy_ids,
                recommended_remedy=recommended,
                status=status,
                method=METHOD,
                alpha=alpha,
                remedy_evidence=tuple(evidence),
            )
        )
    return Advice(
        run=matrix.run,
        k=matrix.k,
        mode=matrix.mode,
        unit=matrix.unit,
        method=METHOD,
        alpha=alpha,
        min_share=min_share,
        classes=tuple(out),
    )
