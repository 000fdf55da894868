"""Training one model: sentence-transformers' own trainer (:class:`SentenceTransformerTrainer`) with
:class:`MultipleNegativesRankingLoss` over a ``datasets.Dataset`` of ``(anchor, positive, negative)`` texts, and the
cost estimate printed before any training starts.

**Determinism**: ``transformers.set_seed(seed)`` plus the trainer's ``seed`` and ``data_seed`` fix the order of the
triplets and the dropout, and the triplets are mined in qrels order (never a set's, whose order changes with each
process's string hash seed). Two NFCorpus trainings (dev -> test, bf16 autocast, two processes at once) gave
byte-identical ``model.safetensors`` and the same metrics (bench/RESULTS.md); an earlier pair differed because the
positives of equal grade were picked from a set. Training runs on a GPU when torch sees one (``cuda``), else the
CPU; ``bf16`` autocast is used on a CPU or GPU that supports it when ``precision="fast"`` (the trainer's mixed
precision: master weights stay fp32), fp32 with ``precision="exact"``.

The sequence length is cut to ``max_seq_length`` for training only (attention cost grows with it); the saved model
keeps the base model's own length, so it encodes documents as the base model does.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from diagnose import defaults
from diagnose.checks import positive_int
from diagnose.data import DataError


@dataclass(frozen=True)
class TrainSettings:
    """The knobs of training (the defaults, :mod:`diagnose.defaults`, finish in minutes on 2 CPU cores for
    all-MiniLM-L6-v2 and a few hundred training queries: bench/RESULTS.md)."""

    epochs: int = defaults.TRAIN_EPOCHS
    batch_size: int = defaults.TRAIN_BATCH_SIZE
    max_seq_length: int = defaults.TRAIN_MAX_SEQ_LENGTH
    learning_rate: float = defaults.TRAIN_LEARNING_RATE
    warmup: float = 0.1
    pairs_per_query: int = defaults.TRAIN_PAIRS_PER_QUERY
    seed: int = defaults.SEED
    precision: str = "fast"

    def checked(self) -> TrainSettings:
        for name in ("epochs", "batch_size", "max_seq_length", "pairs_per_query"):
            positive_int(getattr(self, name), name)
        if not (self.learning_rate > 0 and math.isfinite(self.learning_rate)):
            raise DataError(
                f"learning_rate must be a positive number, got {self.learning_rate}.", param="learning_rate"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def use_bf16(precision: str) -> bool:
    """bf16 mixed precision where it trains correctly: a CUDA GPU with bf16, or a CPU with AVX-512 bf16 / AMX."""
    if precision != "fast":
        return False
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def steps(n_pairs: int, settings: TrainSettings) -> int:
    """Optimizer steps of one model: ``ceil(pairs / batch_size) * epochs``."""
    return math.ceil(n_pairs / settings.batch_size) * settings.epochs


def seconds_per_step(model: Any, texts: Sequence[str], settings: TrainSettings) -> float:
    """A measured guess of one training step: the forward pass of one batch of anchors, positives and negatives
    (``3 * batch_size`` texts at the training length), times 3 (backward ~ twice the forward)."""
    import torch

    batch = (list(texts) * (3 * settings.batch_size))[: 3 * settings.batch_size] or ["empty"]
    saved = model.max_seq_length
    model.max_seq_length = settings.max_seq_length
    try:
        with torch.no_grad():
            model.encode(batch[:4], batch_size=4)
            t0 = time.perf_counter()
            model.encode(batch, batch_size=len(batch))
            return 3 * (time.perf_counter() - t0)
    finally:
        model.max_seq_length = saved


def train(
    base: Any,
    anchors: Sequence[str],
    positives: Sequence[str],
    negatives: Sequence[str],
    out: Path,
    settings: TrainSettings,
    *,
    progress: bool = False,
) -> Path:
    """Fine-tune a copy of ``base`` (a loaded SentenceTransformer, left unchanged) on the triplets and save it to
    ``out`` (a sentence-transformers folder that ``load_encoder`` / ``--model`` loads). Returns ``out``."""
    from datasets import Dataset as HFDataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from transformers import set_seed

    set_seed(settings.seed)
    model = copy.deepcopy(base).to(device())
    keep = model.max_seq_length
    model.max_seq_length = settings.max_seq_length
    data = HFDataset.from_dict(
        {"anchor": list(anchors), "positive": list(positives), "negative": list(negatives)}
    )
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="diagnose-finetune-") as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch,
            num_train_epochs=settings.epochs,
            per_device_train_batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            warmup_steps=settings.warmup,
            seed=settings.seed,
            data_seed=settings.seed,
            bf16=use_bf16(settings.precision),
            batch_sampler=BatchSamplers.NO_DUPLICATES,
            save_strategy="no",
            report_to="none",
            logging_steps=max(steps(len(data), settings), 1),
            disable_tqdm=not progress,
            use_cpu=device() == "cpu",
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=data, loss=MultipleNegativesRankingLoss(model)
        )
        with contextlib.redirect_stdout(
            sys.stderr
        ):  # the trainer prints its logs: keep stdout for the result
            trainer.train()
    model.max_seq_length = keep
    model.save(str(out))
    return out
