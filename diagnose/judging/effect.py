"""What the new judgements change: the same analysis over the merged golden set, and per run the metric before and
after, the failures, and the failures that were label gaps."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from diagnose.checks import rank_cutoff
from diagnose.data import DataError, Qrels, ValidationReport
from diagnose.judging.journal import Journal
from diagnose.judging.merge import merge

if TYPE_CHECKING:
    from diagnose.analysis import Analysis


def with_judgements(analysis: Analysis, journal: Journal | Qrels) -> Analysis:
    """A new :class:`~diagnose.analysis.Analysis` over the same data with the golden set merged with ``journal``
    (:func:`merge`; what the merge did is noted in a copy of the validation report): see
    :meth:`~diagnose.analysis.Analysis.with_qrels` for what is kept and shared. ``analysis`` is not changed."""
    ds = analysis.dataset
    report = ValidationReport(list(ds.report.problems), dict(ds.report.stats))
    return analysis.with_qrels(merge(ds.qrels, journal, report=report), report=report)


@dataclass(frozen=True)
class RunEffect:
    """One run before and after the new judgements, at k: the mean ``metric`` (None when the golden set was empty),
    the failed golden queries (no relevant document in the top k), and ``label_gaps``: former failures that are now
    hits because a newly judged relevant document is in the run's top k (the run was right, the golden set had a
    hole)."""

    run: str
    metric: str
    before: float | None
    after: float
    failures_before: int
    failures_after: int
    label_gaps: list[str]
    queries_before: int
    queries_after: int

    def sentence(self, n_judgements: int) -> str:
        before = f"{self.before:.3f}" if self.before is not None else "–"
        gaps = len(self.label_gaps)
        return (
            f"{self.metric.replace('ndcg', 'nDCG')} {before} -> {self.after:.3f} after {n_judgements} judgement"
            f"{'s' if n_judgements != 1 else ''}, {gaps} failure{'s were label gaps' if gaps != 1 else ' was a label gap'}"
            f" (failures {self.failures_before} -> {self.failures_after}; golden queries "
            f"{self.queries_before} -> {self.queries_after})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "metric": self.metric,
            "before": self.before,
            "after": self.after,
            "failures_before": self.failures_before,
            "failures_after": self.failures_after,
            "label_gaps": len(self.label_gaps),
            "label_gap_queries": list(self.label_gaps),
            "queries_before": self.queries_before,
            "queries_after": self.queries_after,
        }


def _changed_pairs(before: Qrels, after: Qrels) -> tuple[int, set[tuple[str, str]]]:
    """(pairs whose grade is new or different, pairs relevant after but not before)."""
    old, new = before.as_dict(), after.as_dict()
    changed = sum(1 for q, docs in new.items() for d, g in docs.items() if old.get(q, {}).get(d) != g)
    newly = {
        (q, d) for q, docs in new.items() for d, g in docs.items() if g > 0 and old.get(q, {}).get(d, 0) <= 0
    }
    return changed, newly


def judgement_effect(before: Analysis, after: Analysis, k: int | None = None) -> dict[str, Any]:
    """What the new judgements changed, per run: ``{"k", "metric", "n_judgements", "runs": {name: RunEffect.to_dict()},
    "sentences": {name: "nDCG@10 0.612 -> 0.655 after 40 judgements, 6 failures were label gaps (...)"}}``.

    ``metric`` is ``ndcg@k``; failures are golden queries with ``hit_rate@k`` = 0. Means are over each side's golden
    queries (queries that only now have a relevant document join the mean after). ``n_judgements``: pairs whose
    grade is new or different. A run absent from ``before`` (or a ``before`` with no golden set) has ``before`` None.
    """

    k = after.k if k is None else rank_cutoff(k)
    metric, hit = f"ndcg@{k}", f"hit_rate@{k}"
    n_judged, newly = _changed_pairs(before.dataset.qrels, after.dataset.qrels)
    try:
        evs_before = before.evaluations([metric, hit])
    except DataError:
        evs_before = {}
    evs_after = after.evaluations([metric, hit])
    out: dict[str, Any] = {"k": k, "metric": metric, "n_judgements": n_judged, "runs": {}, "sentences": {}}
    for name, ev in evs_after.items():
        b = evs_before.get(name)
        failed_before = set(b.per_query.index[b.per_query[hit] == 0]) if b is not None else set()
        hits_after = set(ev.per_query.index[ev.per_query[hit] > 0])
        top = after.runs[name].top(k)
        retrieved_new = {
            q
            for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True)
            if (q, d) in newly
        }
        gaps = [
            q
            for q in (b.per_query.index if b is not None else [])
            if q in failed_before and q in hits_after and q in retrieved_new
        ]
        effect = RunEffect(
            run=name,
            metric=metric,
            before=float(b.aggregate[metric]) if b is not None else None,
            after=float(ev.aggregate[metric]),
            failures_before=len(failed_before),
            failures_after=int((ev.per_query[hit] == 0).sum()),
            label_gaps=[str(q) for q in gaps],
            queries_before=b.n_queries if b is not None else 0,
            queries_after=ev.n_queries,
        )
        out["runs"][name] = effect.to_dict()
        out["sentences"][name] = effect.sentence(n_judged)
    return out


def iter_effect_lines(effect: Mapping[str, Any]) -> Iterator[str]:
    """The sentences of :func:`judgement_effect`, one per run, prefixed by the run name."""
    for name, sentence in effect["sentences"].items():
        yield f"{name}: {sentence}"
