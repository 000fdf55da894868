"""The remedies, each declared once: one :class:`RemedySpec` per remedy id in :data:`REMEDIES`.

A failure class names its remedy by id (:attr:`diagnose.failures.FailureClass.remedy`, with the class's words for it
and, where the run's kind changes it, ``by_kind``); the record here holds what the id means:

- ``needs``: the inputs its run is built from (fields of :class:`RemedyInputs`, the arguments of
  :func:`diagnose.whatif.remedies.prove_remedies`); when one is missing the remedy is reported as not tried, with
- ``missing``: why it cannot run, the note of its row (``RemedyResult.note``) and of the remedy matrix's legend;
- ``build``: how its remedied run is built from the inputs (None: nothing runs offline, or another command measures
  it: ``finetune``);
- ``cost``: what applying it in production takes, one tier of :data:`COSTS`: ``"configuration"`` (a setting of the
  retriever: a rerank, fusion of indexes already there, a filter), ``"re-index"`` (an index to build or rebuild),
  ``"re-chunk"`` (the documents cut again), ``"training"`` (a model to fine-tune), ``"judging"`` (people judge
  documents), ``"none"`` (no remedy: fix the data).

Open this file to add a remedy: its record here (and its builder when it runs), its id in the class's record
(:mod:`diagnose.failures.classes`), and its input as an argument of ``prove_remedies`` and a field of
:class:`RemedyInputs` when it needs a new one. ``tests/test_remedies.py`` checks that every id a class names is here and
that each record's ``missing`` is the note when its input is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from typing import Literal

from diagnose import defaults
from diagnose.data import Run
from diagnose.search.fusion import rrf
from diagnose.search.rerank import cosine_rerank
from diagnose.search.space import VectorSpace

Cost = Literal["configuration", "re-index", "re-chunk", "training", "judging", "none"]
#: The cost tiers, cheapest first.
COSTS: tuple[str, ...] = ("configuration", "re-index", "re-chunk", "training", "judging", "none")


@dataclass(frozen=True)
class RemedyInputs:
    """What the remedies' runs are built from: the run, the near-miss depth (the rerank's depth:
    :meth:`~diagnose.failures.Thresholds.near_miss_depth`) and the runs and vectors the caller gave (None: not given).

    ``passage_run`` builds its run when called (encoding passages is not free); every other input is the run itself.
    """

    run: Run
    depth: int
    space: VectorSpace | None = None
    bm25_run: Run | None = None
    dense_run: Run | None = None
    cross_encoder_run: Run | None = None
    hybrid_run: Run | None = None
    unfiltered_run: Run | None = None
    merged_run: Run | None = None
    passage_run: Callable[[], Run] | None = None


INPUTS: tuple[str, ...] = tuple(f.name for f in fields(RemedyInputs))


@dataclass(frozen=True)
class RemedySpec:
    """One remedy id and every fact about it (module docstring)."""

    id: str
    cost: Cost
    needs: tuple[str, ...] = ()
    build: Callable[[RemedyInputs], Run] | None = None
    missing: str = ""

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in INPUTS]
        if unknown or self.cost not in COSTS:
            raise ValueError(f"remedy {self.id!r}: unknown input {unknown} or cost {self.cost!r}")

    @property
    def runs(self) -> bool:
        """Whether ``prove_remedies`` builds and measures a run for it (False for ``judge``, ``none``, ``finetune``)."""
        return self.build is not None

    def lacking(self, inputs: RemedyInputs) -> list[str]:
        """The inputs it needs that ``inputs`` does not hold."""
        return [n for n in self.needs if getattr(inputs, n) is None]

    def builder(self, inputs: RemedyInputs) -> Callable[[], Run] | None:
        """What builds its remedied run from ``inputs``; None when it runs nothing or an input is missing."""
        if self.build is None or self.lacking(inputs):
            return None
        return partial(self.build, inputs)


def _hybrid(i: RemedyInputs) -> Run:
    return rrf([i.run, i.bm25_run], k=defaults.RRF_K, name=f"{i.run.name}+bm25 (RRF)")


_SPECS = (
    RemedySpec(
        "crossencoder",
        "configuration",
        ("cross_encoder_run",),
        lambda i: i.cross_encoder_run,
        "pass a cross-encoder",
    ),
    RemedySpec("hybrid", "re-index", ("bm25_run",), _hybrid, "pass bm25_run"),
    RemedySpec("dense", "re-index", ("dense_run",), lambda i: i.dense_run, "pass dense_run"),
    RemedySpec("bm25", "re-index", ("bm25_run",), lambda i: i.bm25_run, "pass bm25_run"),
    RemedySpec("hybrid_baseline", "re-index", ("hybrid_run",), lambda i: i.hybrid_run, "pass hybrid_run"),
    RemedySpec(
        "rerank", "configuration", ("space",), lambda i: cosine_rerank(i.run, i.space, i.depth), "pass space"
    ),
    RemedySpec(
        "unfiltered",
        "configuration",
        ("unfiltered_run",),
        lambda i: i.unfiltered_run,
        "no metadata filter given",
    ),
    RemedySpec(
        "merge",
        "re-chunk",
        ("merged_run",),
        lambda i: i.merged_run,
        "needs a chunk corpus with offsets: --parent-field / parent_field=, offsets in the chunks' metadata",
    ),
    RemedySpec(
        "passages",
        "re-chunk",
        ("passage_run",),
        lambda i: i.passage_run(),
        "the model's window is unknown (precomputed vectors without a model), or pass passage_run",
    ),
    RemedySpec(
        "finetune", "training", missing="run diagnose finetune (Analysis.finetune) and give its result"
    ),
    RemedySpec("judge", "judging"),
    RemedySpec("none", "none"),
)

#: remedy id -> its record.
REMEDIES: dict[str, RemedySpec] = {r.id: r for r in _SPECS}
#: The ids that build no run here (nothing runs offline, or another command measures it): never a column of the
#: remedy matrix of its own.
NOT_RUN: tuple[str, ...] = tuple(r.id for r in _SPECS if not r.runs)
