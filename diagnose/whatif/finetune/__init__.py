"""Fine-tuning the embedding model on the golden set, measured on queries it never saw.

``triplets``
    the training triplets (positives, hard negatives mined from the dense and BM25 runs) and the folds of
    cross-fitting (by query and by relevant document), with the check that no model saw what it scores.
``train``
    one model trained with sentence-transformers' trainer and MultipleNegativesRankingLoss; the settings, the
    device, bf16 where it trains correctly, the measured cost of a step; determinism.
``result``
    :class:`FinetuneResult` (the ``diagnose finetune --format json`` dict), :class:`Cost`, the failures recovered
    and broken per class.

The pipeline (base run, tuned runs, comparisons, the saved model) is :meth:`diagnose.analysis.Analysis.finetune`
(:mod:`diagnose.analysis.finetuning`). Needs the ``[embed]`` and ``[finetune]`` extras (datasets, accelerate).
"""

from __future__ import annotations

from diagnose.whatif.finetune.result import Cost, FinetuneResult, class_changes
from diagnose.whatif.finetune.train import TrainSettings
from diagnose.whatif.finetune.triplets import (
    Fold,
    Triplet,
    assign_folds,
    check_folds,
    mine_triplets,
    query_key,
    same_text,
    scored_by,
)

__all__ = [
    "Cost",
    "FinetuneResult",
    "Fold",
    "TrainSettings",
    "Triplet",
    "assign_folds",
    "check_folds",
    "class_changes",
    "mine_triplets",
    "query_key",
    "same_text",
    "scored_by",
]
