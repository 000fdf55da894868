"""Findings: what to change first, ranked, read from the measurements of the remedies and of the remedy matrix.

The remedies (:func:`diagnose.whatif.remedies.prove_remedies`) and the remedy matrix
(:func:`diagnose.whatif.matrix.remedy_matrix`) measure each change on the data. :func:`findings` reads them, never
measures again, and turns them into a short ranked list of :class:`Action` records:

- One action per remedied run (remedy id), over the classes it is the **measured recommendation** of
  (:func:`diagnose.whatif.advice.class_advice`: the rule's remedy unless the matrix shows another recovers
  significantly more of the class, or the rule's recovers none of it; a class with nothing recommended has no
  action): a remedy recommended for two classes (the passages of ``truncated`` and ``diluted``, hybrid for
  ``vocabulary_mismatch`` and a dense run's ``near_miss``) is one change, one action.
- ``recovered``: the failures of the action's classes it recovers: the union of the ``recovered_ids`` of its classes'
  rows (of a class advised another remedy than its rule's, the matrix's cell of that remedy; the unit of the
  diagnosis: failed queries with ``mode="hit"``, missed pairs with ``mode="recall"``; a failed query in two of its
  classes counts once). ``failures``: the failures of those classes (the same union, from the diagnosis).
  ``cells``: the matrix's cells of the classes under the action's remedy, ``(class, recovered, failures)``, as the
  matrix counts them; without a query in two of the classes, ``recovered`` is the sum of the cells' ``recovered``.
- ``lost_hits``, ``mean_diff``, ``p_value``: the remedy's row (one remedied run, so every row of one remedy id holds
  the same three); ``net = recovered - lost_hits`` (with ``mode="recall"`` recovered missed pairs less lost hit
  queries: the two units the remedies report).
- An action that recovers nothing is not advice: left out. A remedy not tried (its input missing) is left out too.
- An action that breaks at least as many hits as it recovers (``net <= 0``) is not advice either: it is kept apart,
  in :attr:`Findings.rejected` (``rank`` 0), and said once after the ranked list ("Not advised: ...").
- Ranked by ``net`` (descending), then ``mean_diff`` (descending), then ``p_value`` (ascending), then remedy id.
- ``finetune`` (a column of the matrix once ``diagnose finetune`` / ``Analysis.finetune`` has run): its cells are
  read from the matrix; its lost hits and paired test are not measured here (None), so it ranks after the measured
  actions.
- ``judge`` (``label_gap``): the pairs to judge (query, the unjudged near-duplicate the run retrieved), no measured
  gain (``recovered`` None): ranked last, after every measured action.

``total``: every failure of the diagnosis in its unit (the "of 50 failed queries" of a sentence).

Two more sources, when they have been measured for the analysis (``ann``, ``chunking`` of :func:`findings`), each
one more action ranked with the others by the same rule:

- ``ann`` (:func:`ann_action`): the ANN frontier's setting that recovers the run's ``index_gap`` failures
  (:attr:`diagnose.whatif.ann.AnnFrontier.recovers_index_gap`: the cheapest recovering them all, else the most):
  its ``recovered`` (index_gap failures, the diagnosis' unit), ``lost_hits``, ``mean_diff`` and ``p_value`` (the paired
  test of ``hit_rate@k`` against the run), as the frontier measured them; its p50 latency in the change's words.
  Used only when the frontier's index_gap failures are the diagnosis' (same run, k and failure definition). The
  cost: a configuration change when only ``efSearch`` (``nprobe``) differs from the collection's own setting, else
  a re-index.
- ``chunking`` (:func:`chunking_action`, ``failure="hit"`` only: a sweep measures queries, not pairs): of the
  sweep's configurations, the one with the highest net over the run: ``recovered``, the run's failed queries of the
  classes whose own remedy re-chunks (``cost == "re-chunk"`` in :data:`diagnose.whatif.registry.REMEDIES`:
  truncated, diluted, split) that the configuration hits at k; ``lost_hits``, the golden queries the run hits and it
  misses; ``mean_diff``/``p_value``, the paired test of ``hit_rate@k`` (configuration minus run) over the golden
  queries, :func:`diagnose.whatif.gain.measure_gain` on the sweep's per-query hits (nothing is searched again).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from diagnose import defaults
from diagnose.data import fields_dict
from diagnose.failures import CLASS_BY_ID, Diagnosis
from diagnose.runtime.lazy import pandas as pd
from diagnose.whatif.advice import Advice, class_advice
from diagnose.whatif.gain import measure_gain
from diagnose.whatif.matrix import RemedyMatrix
from diagnose.whatif.registry import REMEDIES
from diagnose.whatif.remedies import Remedies, RemedyResult, fmt_p

if TYPE_CHECKING:
    from diagnose.whatif.ann import AnnFrontier
    from diagnose.whatif.chunking import ChunkingSweep

#: Cost tiers, cheapest first.
COSTS = ("configuration change", "re-index", "re-chunking", "training", "judging")

#: remedy id -> (what to change, in the user's words; its cost tier).
CHANGES: dict[str, tuple[str, str]] = {
    "dense": ("Fix the ANN index: exact search finds these", "re-index"),
    "hybrid": ("Add BM25 (hybrid RRF)", "re-index"),
    "bm25": ("Add a BM25 index that finds these", "re-index"),
    "hybrid_baseline": ("Use hybrid search (BM25 + exact dense, RRF)", "re-index"),
    "rerank": ("Rerank the top results by exact cosine", "configuration change"),
    "crossencoder": ("Rerank the top results with the cross-encoder", "configuration change"),
    "unfiltered": ("Fix the metadata filter or the documents' metadata", "configuration change"),
    "merge": ("Re-chunk: keep the answer in one chunk (merge neighbours)", "re-chunking"),
    "passages": ("Re-chunk: index passages that fit the model's window", "re-chunking"),
    "finetune": ("Fine-tune the model", "training"),
    "judge": ("Judge these pairs", "judging"),
}
#: (remedy id, class) -> what to change, where the class changes the words (a lexical run's vocabulary mismatch).
CHANGES_BY_CLASS: dict[tuple[str, str], str] = {
    ("dense", "vocabulary_mismatch"): "Add dense retrieval: exact dense search finds these",
}


@dataclass(frozen=True)
class Action:
    """One change to make, with its evidence (module docstring: every definition).

    ``change``: what to change, in the user's words; ``remedy_id``: the remedy measured (``judge`` for a label gap);
    ``classes``: the failure classes it addresses (taxonomy order); ``unit``: what ``recovered``, ``failures`` and
    ``total`` count ("failed queries" or "missed pairs"); ``recovered_ids``: the recovered failures (query ids, or
    "query_id/doc_id"); ``lost_ids``: the golden queries it turns from hit to miss; ``cells``: the matrix's own cells
    ``(class, recovered, failures)``; ``pairs``: for ``judge``, the (query id, document id) pairs to judge;
    ``cost``: one of :data:`COSTS`. ``recovered``, ``lost_hits``, ``net``, ``mean_diff``, ``p_value``: None when not
    measured (``judge``; the paired test of ``finetune``).
    """

    rank: int
    change: str
    remedy_id: str
    remedy: str
    classes: tuple[str, ...]
    unit: str
    failures: int
    total: int
    recovered: int | None
    lost_hits: int | None
    net: int | None
    mean_diff: float | None
    p_value: float | None
    metric: str
    cost: str
    recovered_ids: tuple[str, ...] = ()
    lost_ids: tuple[str, ...] = ()
    cells: tuple[tuple[str, int, int], ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()

    @property
    def measured(self) -> bool:
        """Whether the change was measured on the data (``recovered`` known)."""
        return self.recovered is not None

    def sentence(self) -> str:
        """One short line, e.g. "Fix the ANN index: exact search finds these. Recovers 21 of 50 failed queries,
        breaks 2 hits, p = 0.0001. [index_gap; re-index]"; a judge action says how many pairs to judge."""
        tags = f"[{', '.join(self.classes)}; {self.cost}]"
        if self.net is not None and self.net <= 0:
            return (
                f"Not advised: {self.change[0].lower()}{self.change[1:]}. Recovers {self.recovered}, breaks "
                f"{self.lost_hits} hit{'s' if self.lost_hits != 1 else ''}, p = {fmt_p(self.p_value)}. {tags}"
            )
        if self.remedy_id == "judge":
            n = len(self.pairs)
            return f"{self.change}: {n} pair{'s' if n != 1 else ''} the run found, nobody judged. No measured gain. {tags}"
        broke = (
            f", breaks {self.lost_hits} hit{'s' if self.lost_hits != 1 else ''}, p = {fmt_p(self.p_value)}"
            if self.lost_hits is not None
            else "; hits broken not measured here"
        )
        return f"{self.change}. Recovers {self.recovered} of {self.total} {self.unit}{broke}. {tags}"

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self),
            "classes": list(self.classes),
            "recovered_ids": list(self.recovered_ids),
            "lost_ids": list(self.lost_ids),
            "cells": [{"class": c, "recovered": r, "failures": n} for c, r, n in self.cells],
            "pairs": [{"query_id": q, "doc_id": d} for q, d in self.pairs],
            "sentence": self.sentence(),
        }


class Findings(tuple):
    """The ranked actions (a tuple of :class:`Action`), with ``run``, ``k``, ``mode``, ``unit``, ``total`` and
    ``rejected`` (the measured changes that break at least as many hits as they recover); shows itself as a numbered
    list (``lines``, Markdown, HTML in a notebook)."""

    run: str
    k: int
    mode: str
    unit: str
    total: int
    rejected: tuple[Action, ...]

    def __new__(
        cls,
        actions: Any = (),
        *,
        run: str = "",
        k: int = 0,
        mode: str = "hit",
        unit: str = "",
        total: int = 0,
        rejected: tuple[Action, ...] = (),
    ):
        self = super().__new__(cls, actions)
        self.run, self.k, self.mode, self.unit, self.total = run, k, mode, unit, total
        self.rejected = tuple(rejected)
        return self

    def head(self) -> str:
        """The list's title line."""
        if not self.total:
            return f"What to fix first in {self.run!r} (k={self.k}): nothing, no query fails."
        return (
            f"What to fix first in {self.run!r} (k={self.k}, {self.total} {self.unit}), ranked by net gain:"
        )

    def lines(self) -> list[str]:
        """The title, then one numbered sentence per action; a line when no change recovers anything."""
        out = [self.head()]
        out += [f"{a.rank}. {a.sentence()}" for a in self]
        if self.total and not self:
            out.append("No change measured here recovers more failures than it breaks hits.")
        return out + [a.sentence() for a in self.rejected]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "k": self.k,
            "mode": self.mode,
            "unit": self.unit,
            "total": self.total,
            "actions": [a.to_dict() for a in self],
            "rejected": [a.to_dict() for a in self.rejected],
        }

    def _repr_markdown_(self) -> str:
        head, *rest = self.lines()
        return "\n".join([f"**{head}**", "", *rest])

    def _repr_html_(self) -> str:
        head, *_ = self.lines()
        items = "".join(f"<li>{html.escape(a.sentence())}</li>" for a in self)
        rest = [x for x in self.lines()[1:] if not x[:1].isdigit()]
        tail = "".join(f"<p>{html.escape(x)}</p>" for x in rest)
        return f"<div><p><b>{html.escape(head)}</b></p><ol>{items}</ol>{tail}</div>"


def _unit_ids(diagnosis: Diagnosis, classes: set[str]) -> list[str]:
    """The failures of ``classes`` in the diagnosis' unit, as the remedies name them (query id, "query/doc")."""
    ids = (
        f.query_id if diagnosis.mode == "hit" else f"{f.query_id}/{f.doc_id}"
        for f in diagnosis.failures
        if f.cls in classes
    )
    return list(dict.fromkeys(ids))


def _change(rid: str, classes: tuple[str, ...]) -> tuple[str, str]:
    text, cost = CHANGES.get(rid, (f"Apply {rid}", "configuration change"))
    for c in classes:
        text = CHANGES_BY_CLASS.get((rid, c), text)
    return text, cost


def _measured(
    rid: str, rows: list[RemedyResult], diagnosis: Diagnosis, matrix: RemedyMatrix, total: int, unit: str
) -> Action | None:
    """The action of remedy ``rid`` from its classes' rows, or None when it recovers nothing."""
    classes = tuple(r.cls for r in rows)
    recovered = tuple(dict.fromkeys(i for r in rows for i in r.recovered_ids))
    if not recovered:
        return None
    first = rows[0]
    change, cost = _change(rid, classes)
    return Action(
        rank=0,
        change=change,
        remedy_id=rid,
        remedy=first.remedy,
        classes=classes,
        unit=unit,
        failures=len(_unit_ids(diagnosis, set(classes))),
        total=total,
        recovered=len(recovered),
        lost_hits=first.lost_hits,
        net=len(recovered) - first.lost_hits,
        mean_diff=first.mean_diff,
        p_value=first.p_value,
        metric=first.metric,
        cost=cost,
        recovered_ids=recovered,
        lost_ids=first.lost_ids,
        cells=tuple(_cell(matrix, c, rid) for c in classes),
    )


def _cell(matrix: RemedyMatrix, cls: str, rid: str) -> tuple[str, int, int]:
    c = matrix.cell(cls, rid)
    return (cls, c.recovered, c.failures)


def _finetune(
    diagnosis: Diagnosis, matrix: RemedyMatrix, total: int, unit: str, tuned: set[str]
) -> Action | None:
    """The fine-tuning column of the matrix (when it has run) on the classes it is advised for (``tuned``)."""
    rid = "finetune"
    classes = tuple(c for c in matrix.classes if rid in matrix.remedy_ids and c in tuned)
    cells = tuple(_cell(matrix, c, rid) for c in classes)
    recovered = sum(r for _, r, _ in cells)
    if not recovered:
        return None
    change, cost = _change(rid, classes)
    return Action(
        rank=0, change=change, remedy_id=rid, remedy=matrix.remedy_texts[rid], classes=classes, unit=unit,
        failures=len(_unit_ids(diagnosis, set(classes))), total=total, recovered=recovered, lost_hits=None,
        net=None, mean_diff=None, p_value=None, metric="", cost=cost, cells=cells,
    )  # fmt: skip


def _judge(rows: list[RemedyResult], diagnosis: Diagnosis, total: int, unit: str) -> Action | None:
    """The pairs to judge: each label-gap failure's query and the unjudged near-duplicate the run retrieved."""
    classes = tuple(r.cls for r in rows)
    pairs = tuple(
        dict.fromkeys(
            (f.query_id, f.duplicate_doc_id or f.doc_id) for f in diagnosis.failures if f.cls in classes
        )
    )
    if not pairs:
        return None
    change, cost = _change("judge", classes)
    return Action(
        rank=0, change=change, remedy_id="judge", remedy=rows[0].remedy, classes=classes, unit=unit,
        failures=len(_unit_ids(diagnosis, set(classes))), total=total, recovered=None, lost_hits=None, net=None,
        mean_diff=None, p_value=None, metric=rows[0].metric, cost=cost, pairs=pairs,
    )  # fmt: skip


def ann_action(frontier: AnnFrontier, diagnosis: Diagnosis, total: int, unit: str) -> Action | None:
    """The ANN frontier's setting that recovers the run's index_gap failures as an action (module docstring), or
    None: no setting recovers any, or the frontier's failures are not this diagnosis' (another run, k or mode)."""
    rec = frontier.recovers_index_gap
    mine = _unit_ids(diagnosis, {"index_gap"})
    if rec.setting is None or not rec.recovered or rec.run != diagnosis.run or set(rec.failures) != set(mine):
        return None
    if frontier.k != diagnosis.k or rec.lost_hits is None:
        return None
    s, now = rec.setting, frontier.current
    search = {"hnsw": "efSearch", "ivf_flat": "nprobe"}[s.index]
    same_build = (
        now is not None
        and now.index == s.index
        and all(now.params.get(p) == v for p, v in s.params.items() if p != search)
    )
    ms = f"{rec.latency_p50_ms:.2g} ms a query at p50" if rec.latency_p50_ms is not None else ""
    if same_build:
        change, cost = f"Raise the ANN index's {search} to {s.params[search]} ({ms})", "configuration change"
    else:
        change, cost = f"Rebuild the ANN index as {s.label()} ({ms})", "re-index"
    return Action(
        rank=0, change=change, remedy_id="ann", remedy=f"the ANN setting {s.label()}", classes=("index_gap",),
        unit=unit, failures=len(mine), total=total, recovered=len(rec.recovered), lost_hits=rec.lost_hits,
        net=len(rec.recovered) - rec.lost_hits, mean_diff=rec.mean_diff, p_value=rec.p_value, metric=rec.metric,
        cost=cost, recovered_ids=tuple(rec.recovered),
    )  # fmt: skip


def rechunk_classes() -> tuple[str, ...]:
    """The failure classes whose own remedy re-chunks the documents (registry cost ``"re-chunk"``), taxonomy order."""
    return tuple(
        c for c, rec in CLASS_BY_ID.items()
        if rec.remedy is not None and getattr(REMEDIES.get(rec.remedy.id), "cost", None) == "re-chunk"
    )  # fmt: skip


def chunking_action(
    sweep: ChunkingSweep,
    diagnosis: Diagnosis,
    total: int,
    unit: str,
    *,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
) -> Action | None:
    """The chunking sweep's best configuration over the run as an action (module docstring), or None: another k, a
    ``recall`` diagnosis, no failure of a re-chunk class, or no configuration recovering one."""
    if diagnosis.mode != "hit" or sweep.k != diagnosis.k or not sweep.configurations:
        return None
    classes = tuple(c for c in rechunk_classes() if diagnosis.class_counts.get(c))
    failures = _unit_ids(diagnosis, set(classes))
    if not failures:
        return None
    hit = f"hit_rate@{diagnosis.k}"
    golden = sweep.current.per_query.index
    failed = set(diagnosis.failed_queries)
    base = pd.DataFrame({hit: [0.0 if str(q) in failed else 1.0 for q in golden]}, index=golden)
    best: tuple[tuple, Any, Any] | None = None
    for point in sweep.configurations:
        g = measure_gain(
            diagnosis.k, "hit", base_per_query=base, candidate_per_query=point.per_query, metric=hit,
            failures=failures, n_resamples=n_resamples, seed=seed,
        )  # fmt: skip
        key = (
            -(len(g.recovered) - len(g.broken)),
            -(g.mean_diff or 0.0),
            g.p_value,
            point.size,
            point.overlap,
        )
        if g.recovered and (best is None or key < best[0]):
            best = (key, point, g)
    if best is None:
        return None
    _, point, g = best
    return Action(
        rank=0, change=f"Re-chunk to {point.size} tokens, overlap {point.overlap} (exact dense search over the chunks)",
        remedy_id="chunking", remedy=f"chunks of {point.size} tokens, overlap {point.overlap}, documents by their best "
        "chunk", classes=classes, unit=unit, failures=len(failures), total=total, recovered=len(g.recovered),
        lost_hits=len(g.broken), net=len(g.recovered) - len(g.broken), mean_diff=g.mean_diff, p_value=g.p_value,
        metric=hit, cost="re-chunking", recovered_ids=tuple(map(str, g.recovered)), lost_ids=tuple(map(str, g.broken)),
    )  # fmt: skip


def _routed(remedies: Remedies, matrix: RemedyMatrix, advice: Advice) -> tuple[list[RemedyResult], set[str]]:
    """The remedies' rows, each class's first row (its rule's) turned to its measured recommendation
    (:mod:`diagnose.whatif.advice`): the row of the recommended remedy on that class, its numbers the matrix's cell
    (the lost hits and paired test: that remedy's own row); a class with nothing recommended keeps no row, a class
    advised ``finetune`` (measured by the matrix only) is returned apart. A second row of a class (the cross-encoder
    of ``near_miss``) stays its own action unless it is the class's recommendation."""
    measured = {r.remedy_id: r for r in remedies.rows if r.available and r.recovered is not None}
    rows: list[RemedyResult] = []
    tuned: set[str] = set()
    seen: set[str] = set()
    for r in remedies.rows:
        first = r.cls not in seen
        seen.add(r.cls)
        if r.cls not in matrix.classes:  # no failures: no action either way
            rows.append(r)
            continue
        rid = advice.of(r.cls).recommended_remedy
        if not first:
            if rid != r.remedy_id:
                rows.append(r)
        elif rid == "finetune":
            tuned.add(r.cls)
        elif rid == r.remedy_id:
            rows.append(r)
        elif rid is not None:
            cell = matrix.cell(r.cls, rid)
            rows.append(
                replace(measured[rid], cls=r.cls, failures=r.failures, failed_queries=r.failed_queries,
                        missed_pairs=r.missed_pairs, recovered=cell.recovered, recovered_ids=cell.ids)
            )  # fmt: skip
    return rows, tuned


def _order(a: Action) -> tuple:
    tier = 0 if a.net is not None else (1 if a.measured else 2)
    return (
        tier,
        -(a.net or 0),
        -(a.mean_diff or 0.0),
        a.p_value if a.p_value is not None else 1.0,
        a.remedy_id,
    )


def _best(actions: list[Action | None]) -> list[Action]:
    """The first in rank order of ``actions`` (one per frontier or sweep measured), as a list (empty: none)."""
    kept = sorted((a for a in actions if a is not None), key=_order)
    return kept[:1]


def findings(
    diagnosis: Diagnosis,
    remedies: Remedies,
    matrix: RemedyMatrix,
    *,
    ann: Sequence[AnnFrontier] = (),
    chunking: Sequence[ChunkingSweep] = (),
    advice: Advice | None = None,
) -> Findings:
    """The ranked actions of one run (module docstring: every definition and the order). ``remedies`` and
    ``matrix``: :func:`~diagnose.whatif.remedies.prove_remedies` and :func:`~diagnose.whatif.matrix.remedy_matrix`
    of the run of ``diagnosis``, at its k and mode; read, never measured again. ``ann``, ``chunking``: ANN frontiers
    and chunking sweeps measured for the same data (the best action of each kind is added, :func:`ann_action`,
    :func:`chunking_action`). ``advice``: :func:`~diagnose.whatif.advice.class_advice` of ``remedies`` and
    ``matrix`` when the caller has it already (computed here otherwise)."""
    if (remedies.run, remedies.k, remedies.mode) != (diagnosis.run, diagnosis.k, diagnosis.mode) or (
        matrix.run,
        matrix.k,
        matrix.mode,
    ) != (diagnosis.run, diagnosis.k, diagnosis.mode):
        raise ValueError(
            f"the remedies and the matrix must be of the diagnosis' run {diagnosis.run!r} at k={diagnosis.k} "
            f"({diagnosis.mode})"
        )
    unit = remedies.unit
    total = len(_unit_ids(diagnosis, set(CLASS_BY_ID)))
    rows, tuned = _routed(remedies, matrix, advice if advice is not None else class_advice(remedies, matrix))
    by_remedy: dict[str, list[RemedyResult]] = {}
    for r in rows:
        if r.failures and (r.remedy_id == "judge" or (r.available and r.recovered is not None)):
            by_remedy.setdefault(r.remedy_id, []).append(r)
    actions = [
        _judge(rows, diagnosis, total, unit)
        if rid == "judge"
        else _measured(rid, rows, diagnosis, matrix, total, unit)
        for rid, rows in by_remedy.items()
    ]
    actions.append(_finetune(diagnosis, matrix, total, unit, tuned))
    actions += _best([ann_action(f, diagnosis, total, unit) for f in ann])
    actions += _best([chunking_action(s, diagnosis, total, unit) for s in chunking])
    kept = [a for a in actions if a is not None]
    rejected = sorted((a for a in kept if a.net is not None and a.net <= 0), key=_order)
    ranked = sorted((a for a in kept if a.net is None or a.net > 0), key=_order)
    out = [Action(**{**fields_dict(a), "rank": i}) for i, a in enumerate(ranked, 1)]
    return Findings(
        out,
        run=diagnosis.run,
        k=diagnosis.k,
        mode=diagnosis.mode,
        unit=unit,
        total=total,
        rejected=tuple(rejected),
    )
