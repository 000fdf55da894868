"""The run's kind: dense, lexical, hybrid or unknown, given by the user or inferred from the run itself.

The taxonomy's rules, sentences, recommendations and remedies read the kind (:mod:`~diagnose.failures.taxonomy`,
:mod:`diagnose.whatif.remedies`): a lexical run's vocabulary mismatch is remedied by dense retrieval, not by BM25, and its
index gap is about its own (lexical) index. ``unknown`` behaves as ``dense`` did before kinds existed.

Where the kind comes from (:attr:`RunKind.source`):

- ``"given"``: ``Analysis(..., kinds={"mine": "lexical"})`` or ``diagnose failures --run-kind mine=lexical``;
- ``"baseline"``: the baselines are what they are (``bm25`` lexical, ``dense`` dense, ``hybrid`` hybrid);
- ``"inferred"``: :func:`infer_run_kind`, from how much the run's top k agrees with the BM25 and the dense
  baselines (:data:`INFERENCE`), over the golden queries.

Inference. For each golden query with a non-empty top k in both lists, the overlap is ``|top_k(run) ∩
top_k(baseline)| / min(|top_k(run)|, |top_k(baseline)|)``; ``overlap_bm25`` and ``overlap_dense`` are their means.
With ``gap = overlap_bm25 - overlap_dense``: **lexical** when ``overlap_bm25 >= 0.4`` and ``gap >= 0.15``;
**dense** when ``overlap_dense >= 0.4`` and ``gap <= -0.15``; **hybrid** when both overlaps are ``>= 0.4`` and
``|gap| < 0.15``; otherwise **unknown** (the run agrees with neither baseline: another model, a reranker, a
filter). On the demo at k=10: the LangChain BM25 run (its own tokenizer) 0.585 vs 0.303 -> lexical; the ANN
MiniLM run 0.277 vs 0.586 -> dense; the hybrid baseline 0.635 vs 0.565 -> hybrid (the two baselines overlap 0.346
with each other).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnose.data import DataError, Run

#: The kinds a run can have; ``unknown`` reads the taxonomy as for a dense run.
RUN_KINDS: tuple[str, ...] = ("dense", "lexical", "hybrid", "unknown")

#: The kind of each baseline run.
BASELINE_KINDS: dict[str, str] = {"bm25": "lexical", "dense": "dense", "hybrid": "hybrid"}

#: Thresholds of :func:`infer_run_kind` (module docstring): the least overlap with a baseline to resemble it, and
#: the least difference between the two overlaps to prefer one.
INFERENCE: dict[str, float] = {"min_overlap": 0.4, "min_gap": 0.15}


@dataclass(frozen=True)
class RunKind:
    """A run's kind and where it comes from; for an inferred kind, the overlaps it was inferred from."""

    kind: str = "unknown"
    source: str = "unknown"  # "given", "baseline", "inferred", or "unknown" (nothing to infer from)
    k: int | None = None
    overlap_bm25: float | None = None
    overlap_dense: float | None = None
    n_queries: int = 0

    def sentence(self) -> str:
        """Why the run has this kind, for a person."""
        if self.source == "given":
            return f"{self.kind}, as given"
        if self.source == "baseline":
            return f"{self.kind}: a baseline run of that kind"
        if self.source == "unknown" or self.overlap_bm25 is None or self.overlap_dense is None:
            return "unknown: not given and nothing to infer it from (read as dense)"
        t = INFERENCE
        return (
            f"{self.kind}, inferred: its top {self.k} shares {self.overlap_bm25:.0%} of its documents with the BM25 "
            f"baseline's and {self.overlap_dense:.0%} with exact dense search's (mean over {self.n_queries} golden "
            f"queries; lexical or dense when one overlap is >= {t['min_overlap']:.0%} and exceeds the other by >= "
            f"{t['min_gap']:.0%}, hybrid when both are >= {t['min_overlap']:.0%} and closer"
            f"{'; unknown is read as dense' if self.kind == 'unknown' else ''})"
        )

    def to_dict(self) -> dict[str, Any]:
        """``run_kind_evidence`` in ``diagnose failures --format json``."""
        return {
            "kind": self.kind,
            "source": self.source,
            "k": self.k,
            "overlap_bm25": self.overlap_bm25,
            "overlap_dense": self.overlap_dense,
            "n_queries": self.n_queries,
            "thresholds": dict(INFERENCE),
            "sentence": self.sentence(),
        }


def check_kind(kind: Any, param: str = "kinds") -> str:
    """``kind`` if it is one of :data:`RUN_KINDS`; a :class:`DataError` naming ``param`` otherwise."""
    if kind not in RUN_KINDS:
        raise DataError(f"Unknown run kind {kind!r}: use one of {', '.join(RUN_KINDS)}.", param=param)
    return str(kind)


def parse_kind_arg(text: str) -> tuple[str, str]:
    """``NAME=KIND`` (the CLI's ``--run-kind``) -> ``(name, kind)``."""
    name, sep, kind = text.rpartition("=")
    if not sep or not name:
        raise DataError(
            f"--run-kind takes NAME=KIND (KIND one of {', '.join(RUN_KINDS)}), got {text!r}.",
            param="run_kind",
        )
    return name, check_kind(kind.strip(), "run_kind")


def _tops(run: Run, k: int) -> dict[str, set[str]]:
    top = run.top(k)
    out: dict[str, set[str]] = {}
    for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True):
        out.setdefault(q, set()).add(d)
    return out


def _mean_overlap(
    a: dict[str, set[str]], b: dict[str, set[str]], queries: list[str]
) -> tuple[float | None, int]:
    vals = [len(a[q] & b[q]) / min(len(a[q]), len(b[q])) for q in queries if a.get(q) and b.get(q)]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def infer_run_kind(run: Run, bm25_run: Run, dense_run: Run, queries: list[str], k: int) -> RunKind:
    """The kind of ``run`` from its top-``k`` overlap with the BM25 and dense baselines over ``queries`` (the
    golden queries); the rule and thresholds are in the module docstring."""
    mine = _tops(run, k)
    ob, n = _mean_overlap(mine, _tops(bm25_run, k), queries)
    od, n_dense = _mean_overlap(mine, _tops(dense_run, k), queries)
    if ob is None or od is None:
        return RunKind("unknown", "unknown", k, ob, od, min(n, n_dense))
    t, gap = INFERENCE, ob - od
    if ob >= t["min_overlap"] and gap >= t["min_gap"]:
        kind = "lexical"
    elif od >= t["min_overlap"] and -gap >= t["min_gap"]:
        kind = "dense"
    elif ob >= t["min_overlap"] and od >= t["min_overlap"]:
        kind = "hybrid"
    else:
        kind = "unknown"
    return RunKind(kind, "inferred", k, ob, od, min(n, n_dense))
