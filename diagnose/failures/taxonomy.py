"""The failure classes: their ids, labels, recommendations, thresholds and the rules that choose one. Open this file
to add a failure class (its id in :data:`CLASSES`, a label, a recommendation, its rule in :func:`classify`, its
sentence in :func:`_evidence`).

Classes (stable ids; the first rule that matches wins; thresholds in :class:`Thresholds`):

1. ``missing_document`` — the target id is not in the corpus.
2. ``label_gap`` — a top-k document that is not judged relevant is a near-duplicate of the target (cosine >=
   ``duplicate_cosine`` = 0.95, or the same normalised text): the golden set is probably incomplete.
3. ``near_miss`` — the run has the target at rank k+1 .. ``near_miss_factor`` x k (3k).
4. ``index_gap`` — exact dense search ranks the target within k, but the run does not have it in its top 3k.
5. ``vocabulary_mismatch`` — the model scores the target low (cosine below the calibrated threshold and dense rank >
   k) while BM25 ranks it within k, or the query shares almost no terms with it (overlap < ``min_overlap``).
6. ``semantic_gap`` — neither dense nor BM25 ranks it within k.
7. ``ranking_failure`` — everything else.

Beside the class, every failure carries the seed rule (cosine < 0.75 -> "vocabulary mismatch", else "ranking issue")
and the same rule with the model's calibrated threshold (:func:`_rule`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from diagnose import defaults
from diagnose.checks import finite_number, positive_int

CLASSES: tuple[str, ...] = (
    "missing_document",
    "label_gap",
    "near_miss",
    "index_gap",
    "vocabulary_mismatch",
    "semantic_gap",
    "ranking_failure",
)

CLASS_LABELS: dict[str, str] = {
    "missing_document": "Missing document",
    "label_gap": "Label gap",
    "near_miss": "Near miss",
    "index_gap": "Index gap",
    "vocabulary_mismatch": "Vocabulary mismatch",
    "semantic_gap": "Semantic gap",
    "ranking_failure": "Ranking failure",
}

RECOMMENDATIONS: dict[str, str] = {
    "missing_document": (
        "The golden set points at a document id that is not in the corpus. Fix the data before judging the "
        "retriever: the document was deleted, renamed or never ingested, or the qrels use another id scheme "
        "(chunk ids vs document ids). Re-ingest it or correct the golden set."
    ),
    "label_gap": (
        "The run retrieved a near-duplicate of the target that nobody judged. The golden set is probably "
        "incomplete rather than the retriever wrong: review the duplicate and add it to the qrels, and "
        "deduplicate the corpus (archived copies, old versions) so that the index holds one version."
    ),
    "near_miss": (
        "The run found the target but ranked it just below k: a ranking problem, not a recall problem. A "
        "cross-encoder reranker over the top 3k candidates, or a larger k passed to the generator, will "
        "likely recover it. Check what the documents that beat it have in common (boilerplate, hub documents)."
    ),
    "index_gap": (
        "Exact search with this embedding model ranks the target within k, but the production run did not "
        "retrieve it. The retriever differs from exact search: approximate-index recall (raise nprobe/ef_search), "
        "metadata filters, a stale index missing the document, or chunking that cut the relevant passage. "
        "Compare the index's settings with an exact search on this query."
    ),
    "vocabulary_mismatch": (
        "The query and the target use different words for the same thing (user words vs document jargon, "
        "or exact identifiers the embedding model does not understand). Add a lexical signal (hybrid BM25 + "
        "dense with reciprocal rank fusion), expand queries with synonyms or an LLM rewrite, or fine-tune the "
        "embedding model on pairs from your domain."
    ),
    "semantic_gap": (
        "Neither dense nor lexical search finds the target within k: the model does not know this domain and the "
        "words do not overlap. Fine-tune the embedding model on in-domain (query, document) pairs, enrich the "
        "documents (titles, summaries, hypothetical questions), or check whether the judgement is right."
    ),
    "ranking_failure": (
        "The target is findable but other documents outrank it. Look at the documents that beat it: if they are "
        "generic hubs, down-weight or remove them; otherwise add a reranker or tune the fusion weights."
    ),
}

FailureMode = Literal["hit", "recall"]


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the taxonomy, with the defaults documented in the README."""

    duplicate_cosine: float = defaults.DUPLICATE_COSINE
    near_miss_factor: int = 3
    seed_cosine: float = defaults.SEED_COSINE
    calibration_percentile: float = 10.0
    min_calibration_pairs: int = 5
    min_overlap: float = 0.2
    top_shown: int = 10

    def __post_init__(self) -> None:
        """Refuse values that would make the taxonomy meaningless (a NaN threshold, a negative cosine for a
        near-duplicate), naming the parameter."""
        ranges = {
            "duplicate_cosine": (0.0, 1.0, False),  # (low, high, low included)
            "seed_cosine": (-1.0, 1.0, True),
            "calibration_percentile": (0.0, 100.0, True),
            "min_overlap": (0.0, 1.0, True),
        }
        for name, (low, high, low_ok) in ranges.items():
            bracket = "[" if low_ok else "("
            finite_number(getattr(self, name), name, low=low, high=high, open_low=not low_ok,
                          message=f"{name} must be a number in {bracket}{low:g}, {high:g}], got {{value!r}}.")  # fmt: skip
        for name in ("near_miss_factor", "min_calibration_pairs", "top_shown"):
            positive_int(getattr(self, name), name)


def classify(
    *,
    in_corpus: bool,
    duplicate: bool,
    run_rank: int | None,
    dense_rank: int | None,
    bm25_rank: int | None,
    cosine: float | None,
    overlap: float | None,
    k: int,
    calibrated: float,
    thresholds: Thresholds = Thresholds(),
) -> str:
    """The taxonomy's rules in order; the first that matches wins (see the module docstring)."""
    if not in_corpus:
        return "missing_document"
    if duplicate:
        return "label_gap"
    near_hi = thresholds.near_miss_factor * k
    if run_rank is not None and k < run_rank <= near_hi:
        return "near_miss"
    if dense_rank is not None and dense_rank <= k and (run_rank is None or run_rank > near_hi):
        return "index_gap"
    dense_low = (cosine is not None and cosine < calibrated) and (dense_rank is None or dense_rank > k)
    lexical = (bm25_rank is not None and bm25_rank <= k) or (
        overlap is not None and overlap < thresholds.min_overlap
    )
    if dense_low and lexical:
        return "vocabulary_mismatch"
    if (dense_rank is None or dense_rank > k) and (bm25_rank is None or bm25_rank > k):
        return "semantic_gap"
    return "ranking_failure"


def _rule(cosine: float | None, threshold: float) -> str:
    if cosine is None:
        return "n/a"
    return "vocabulary mismatch" if cosine < threshold else "ranking issue"


def _rank_text(rank: int | None, depth: int | None = None) -> str:
    if rank is None:
        return f"not retrieved (run depth {depth})" if depth is not None else "n/a"
    return f"#{rank}"


class _PairEvidence(NamedTuple):
    """What the rules (:func:`classify`, through the pair's evidence) and the sentence of one pair read."""

    doc_id: str
    k: int
    near_hi: int  # near_miss_factor x k
    run_rank: int | None
    run_depth: int
    dense_rank: int | None
    bm25_rank: int | None
    cosine: float | None
    calibrated: float
    overlap: float | None
    duplicate_doc_id: str | None
    duplicate_cosine: float | None


def _index_gap(e: _PairEvidence, base: str) -> str:
    found = "did not retrieve it" if e.run_rank is None else f"ranked it #{e.run_rank}"
    return f"Exact dense search ranks the target #{e.dense_rank} (within k={e.k}) but the run {found}; {base}."


# class -> its sentence, from the pair's evidence, the ranks and cosine (``base``) and the term overlap (``ov``)
_SENTENCES: dict[str, Callable[[_PairEvidence, str, str], str]] = {
    "missing_document": lambda e, base, ov: f"Document {e.doc_id!r} is judged relevant but is not in the corpus.",
    "label_gap": lambda e, base, ov: (
        f"The run's top {e.k} holds {e.duplicate_doc_id!r}, a near-duplicate of the target (cosine "
        f"{e.duplicate_cosine:.3f}), which the golden set does not judge relevant."
    ),
    "near_miss": lambda e, base, ov: (
        f"The run ranked the target #{e.run_rank}, just below k={e.k} (within {e.near_hi}); {base}."
    ),
    "index_gap": lambda e, base, ov: _index_gap(e, base),
    "vocabulary_mismatch": lambda e, base, ov: (
        f"The embedding model scores the target low while the words tell: {base}; {ov}."
    ),
    "semantic_gap": lambda e, base, ov: f"Neither dense nor BM25 ranks the target within k={e.k}: {base}; {ov}.",
    "ranking_failure": lambda e, base, ov: f"The target is findable but outranked: {base}.",
}


def _evidence(cls: str, e: _PairEvidence) -> str:
    """The sentence that says why the pair is in class ``cls``."""
    cos = f"{e.cosine:.3f}" if e.cosine is not None else "n/a"
    base = (
        f"run rank {_rank_text(e.run_rank, e.run_depth)}, exact dense rank {_rank_text(e.dense_rank)}, "
        f"BM25 rank {_rank_text(e.bm25_rank)}, cosine {cos} (calibrated threshold {e.calibrated:.3f})"
    )
    ov = f"{e.overlap:.0%} of the query terms occur in the target" if e.overlap is not None else ""
    return _SENTENCES.get(cls, _SENTENCES["ranking_failure"])(e, base, ov)
