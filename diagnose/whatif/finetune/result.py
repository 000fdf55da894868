"""The result of ``diagnose finetune``: base vs tuned metrics, the paired comparisons, the failures recovered and
broken per class, the cost, where the model is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from diagnose.data import Run
from diagnose.stats import Comparison
from diagnose.whatif.finetune.triplets import Fold
from diagnose.whatif.gain import diagnosis_gain, unit_classes

if TYPE_CHECKING:
    from diagnose.failures import Diagnosis


@dataclass(frozen=True)
class Cost:
    """The cost announced before training: pairs, optimizer steps (all models), the estimated seconds and the
    documents to re-encode (the corpus once per model that is evaluated)."""

    models: int
    pairs: int
    steps: int
    seconds: float
    documents_to_encode: int
    device: str
    bf16: bool

    def sentence(self) -> str:
        return (
            f"Fine-tuning: {self.models} model{'s' if self.models > 1 else ''}, {self.pairs:,} training pairs, "
            f"{self.steps:,} steps, {self.documents_to_encode:,} documents to re-encode, about "
            f"{_duration(self.seconds)} on {self.device}{' (bf16)' if self.bf16 else ''}"
        )


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "an unknown time"
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def class_changes(base: Diagnosis, tuned: Diagnosis) -> tuple[dict[str, int], dict[str, int]]:
    """``(recovered, broken)`` per failure class, in the diagnosis' unit (failed queries with ``mode="hit"``,
    missed (query, document) pairs with ``"recall"``; :func:`diagnose.whatif.gain.diagnosis_gain`): a base failure
    the tuned run no longer has counts under its base class; a tuned failure the base run did not have counts under
    its tuned class. A query with missed pairs in
    two classes counts in both."""
    # the taxonomy, imported here: the CLI's parser reads TrainSettings from this package for every command
    from diagnose.failures import CLASSES

    gain = diagnosis_gain(base, tuned)
    b, t = unit_classes(base), unit_classes(tuned)
    recovered = {c: sum(c in b[u] for u in gain.recovered) for c in CLASSES}
    broken = {c: sum(c in t[u] for u in gain.broken) for c in CLASSES}
    return {c: n for c, n in recovered.items() if n}, {c: n for c, n in broken.items() if n}


@dataclass
class FinetuneResult:
    """What fine-tuning did (:func:`diagnose.analysis.finetuning.finetune`): ``base`` and ``tuned`` metrics on the
    evaluation queries (``tuned``: one model with a training split, out-of-fold scores with folds),
    ``comparisons`` (tuned vs base, Holm over the family), ``p_value`` (the Holm-adjusted paired randomization test
    of the first headline metric, nDCG@k), ``recovered``/``broken`` per failure class, ``model_path`` (trained on
    every training query: the split's, or every golden query with folds), ``train_pairs`` (of that model),
    ``seconds`` (the whole run), ``folds`` (cross-fitting) and the ``cost`` announced before. ``run``: the tuned
    model's exact dense run that was measured (out-of-fold with folds), the remedy matrix's ``finetune`` column when
    the result is given to it (:meth:`diagnose.analysis.Analysis.remedy_matrix`); not in :meth:`to_dict`.
    ``excluded_queries``: training-split queries left out because an evaluation query has their id;
    ``excluded_by_text``: training queries left out because an evaluated query has their text under another id
    (``"TRAIN_ID = EVAL_ID"``; with folds, per fold, :func:`~diagnose.whatif.finetune.triplets.same_text`)."""

    base: dict[str, float]
    tuned: dict[str, float]
    comparisons: list[Comparison]
    p_value: float | None
    model_path: str
    train_pairs: int
    seconds: float
    recovered: dict[str, int]
    broken: dict[str, int]
    mode: str
    evaluated_queries: int
    cost: Cost
    settings: dict[str, Any] = field(default_factory=dict)
    folds: Sequence[Fold] = ()
    excluded_queries: int = 0
    run: Run | None = field(default=None, repr=False, compare=False)
    excluded_by_text: tuple[str, ...] = ()  # "TRAIN_ID = EVAL_ID": training queries left out, same text

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "tuned": self.tuned,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "p_value": self.p_value,
            "model_path": self.model_path,
            "train_pairs": self.train_pairs,
            "seconds": round(self.seconds, 1),
            "recovered": self.recovered,
            "broken": self.broken,
            "mode": self.mode,
            "evaluated_queries": self.evaluated_queries,
            "excluded_queries": self.excluded_queries,
            "excluded_by_text": list(self.excluded_by_text),
            "folds": [f.to_dict() for f in self.folds],
            "settings": self.settings,
        }

    def headline(self) -> str:
        """One sentence: the verdict of the first comparison, the failures recovered and broken."""
        if not self.comparisons:
            return "No comparison."
        rec, brk = sum(self.recovered.values()), sum(self.broken.values())
        return f"{self.comparisons[0].verdict()} Failures recovered: {rec}, broken: {brk}."
