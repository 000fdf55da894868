"""The failure classes: their ids, labels, recommendations, thresholds and the rules that choose one. Open this file
to add a failure class (its id in :data:`CLASSES`, a label, a recommendation, its rule in :func:`classify`, its
sentence in :func:`_evidence`).

Classes (stable ids; the first rule that matches wins; thresholds in :class:`Thresholds`). A rank is a tie range
(best, worst): "ranks it within k" means the whole tie group does, ``worst <= k`` (:func:`within`); a target with
BM25 score 0 has no BM25 rank (no query term in it), so BM25 never ranks it within k.

1. ``missing_document`` — the target id is not in the corpus.
2. ``label_gap`` — a top-k document that is not judged relevant is a near-duplicate of the target (cosine >=
   ``duplicate_cosine`` = 0.95, or the same normalised text): the golden set is probably incomplete.
3. ``near_miss`` — the run has the target at rank k+1 .. ``near_miss_factor`` x k (3k).
4. ``index_gap`` — exact search of the run's kind ranks the target within k, but the run does not have it in its top
   3k: exact dense search for a dense (or unknown) run, this tool's BM25 for a lexical run, either for a hybrid run.
5. ``vocabulary_mismatch`` — dense, hybrid and unknown runs: the model scores the target low (cosine below the
   calibrated threshold and exact dense search does not rank it within k) while BM25 ranks it within k, or the query
   shares almost no terms with it (overlap < ``min_overlap``). Lexical runs, the mirror image: BM25 does not rank it
   within k and the query shares almost no terms with it (overlap < ``min_overlap``; a BM25 score of 0 has overlap
   0), while exact dense search ranks it within 3k (``near_miss_factor`` x k): the words differ, which no lexical run
   overcomes and a dense signal does. (Not the calibrated cosine: calibrated on a lexical run's hits, it is low.)
6. ``semantic_gap`` — neither dense nor BM25 ranks it within k.
7. ``ranking_failure`` — everything else.

The run's kind (:mod:`~diagnose.failures.kind`) also picks the sentence and the recommendation
(:func:`recommendation`: :data:`KIND_RECOMMENDATIONS` over :data:`RECOMMENDATIONS`).

Beside the class, every failure carries the seed rule (cosine < 0.75 -> "vocabulary mismatch", else "ranking issue")
and the same rule with the model's calibrated threshold (:func:`_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from diagnose.data import DataError

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

#: (run kind, class) -> the recommendation where the run's kind changes it (:func:`recommendation`).
KIND_RECOMMENDATIONS: dict[tuple[str, str], str] = {
    ("lexical", "vocabulary_mismatch"): (
        "The query and the target use different words for the same thing, and a lexical run only matches words "
        "while the embedding model sees the match. Add a dense signal: dense retrieval, or a hybrid that lets a "
        "document found by dense search alone reach the top k (a weighted fusion, or dense candidates added before "
        "a reranker; plain reciprocal rank fusion favours documents both lists hold); or expand the queries "
        "(synonyms, an LLM rewrite) or the documents (doc2query)."
    ),
    ("lexical", "index_gap"): (
        "This tool's BM25 ranks the target within k, but the run did not retrieve it in its top 3k: the run's "
        "lexical index differs from BM25 over title + text. Check the analyzer (tokenizer, stop words, stemming), "
        "the fields indexed (title, body, boosts), the BM25 parameters, and whether the document is in the index."
    ),
    ("hybrid", "index_gap"): (
        "Exact dense search or BM25 ranks the target within k, but the hybrid run did not retrieve it in its top "
        "3k: one of its indexes misses it (approximate-index recall, a stale index, filters, analyzer or field "
        "differences) or its fusion drops it. Compare each component's list with the exact search on this query."
    ),
}


def recommendation(cls: str, kind: str = "unknown") -> str:
    """The recommendation of class ``cls`` for a run of ``kind``."""
    return KIND_RECOMMENDATIONS.get((kind, cls), RECOMMENDATIONS[cls])


FailureMode = Literal["hit", "recall"]


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the taxonomy, with the defaults documented in the README."""

    duplicate_cosine: float = 0.95
    near_miss_factor: int = 3
    seed_cosine: float = 0.75
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
            v = getattr(self, name)
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            ok = ok and (low <= v if low_ok else low < v) and v <= high
            if not ok:
                bracket = "[" if low_ok else "("
                raise DataError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {v!r}.", param=name)
        for name in ("near_miss_factor", "min_calibration_pairs", "top_shown"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DataError(f"{name} must be a positive integer, got {v!r}.", param=name)


def within(best: int | None, worst: int | None, k: int) -> bool:
    """Whether a rank given as a tie range (``best``, ``worst``) is within ``k`` whatever the order of the tie
    group: ``worst <= k``. ``worst`` None with a ``best`` means no tie (``worst = best``); both None means no rank
    (a BM25 score of 0, no vector)."""
    worst = best if worst is None else worst
    return worst is not None and worst <= k


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
    dense_rank_worst: int | None = None,
    bm25_rank_worst: int | None = None,
    kind: str = "unknown",
) -> str:
    """The taxonomy's rules in order; the first that matches wins (see the module docstring). ``dense_rank`` /
    ``bm25_rank`` are the best ranks of the target's tie groups, ``*_worst`` their worst (None: no tie); a rule
    that asks whether a rank is within k reads :func:`within`. ``kind``: the run's kind (rules 4 and 5)."""
    if not in_corpus:
        return "missing_document"
    if duplicate:
        return "label_gap"
    near_hi = thresholds.near_miss_factor * k
    if run_rank is not None and k < run_rank <= near_hi:
        return "near_miss"
    dense_in = within(dense_rank, dense_rank_worst, k)
    bm25_in = within(bm25_rank, bm25_rank_worst, k)
    own_in = {"lexical": bm25_in, "hybrid": dense_in or bm25_in}.get(kind, dense_in)
    if own_in and (run_rank is None or run_rank > near_hi):
        return "index_gap"
    few_words = overlap is not None and overlap < thresholds.min_overlap
    dense_low = (cosine is not None and cosine < calibrated) and not dense_in
    if kind == "lexical":
        mismatch = not bm25_in and few_words and within(dense_rank, dense_rank_worst, near_hi)
    else:
        mismatch = dense_low and (bm25_in or few_words)
    if mismatch:
        return "vocabulary_mismatch"
    if not dense_in and not bm25_in:
        return "semantic_gap"
    return "ranking_failure"


def _rule(cosine: float | None, threshold: float) -> str:
    if cosine is None:
        return "n/a"
    return "vocabulary mismatch" if cosine < threshold else "ranking issue"


def rank_range_text(best: int | None, worst: int | None = None, *, none: str = "n/a") -> str:
    """A rank for a person: "#7", or "#7–12" for a tie group spanning ranks 7 to 12; ``none`` without a rank."""
    if best is None:
        return none
    return f"#{best}" if worst is None or worst == best else f"#{best}–{worst}"


def _rank_text(rank: int | None, depth: int | None = None) -> str:
    if rank is None:
        return f"not retrieved (run depth {depth})" if depth is not None else "n/a"
    return f"#{rank}"


def _bm25_text(e: _PairEvidence) -> str:
    """The BM25 part of the sentence: the rank range, or why there is none."""
    if e.bm25_rank is not None:
        return f"BM25 rank {rank_range_text(e.bm25_rank, e.bm25_rank_worst)}"
    if e.bm25_score is None:
        return "BM25 rank n/a"
    if e.overlap:
        return "no BM25 rank (score 0: the query terms in the target carry no BM25 weight)"
    return "no BM25 rank (score 0: no query term in the target)"


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
    dense_rank_worst: int | None = None
    bm25_rank_worst: int | None = None
    bm25_score: float | None = None
    kind: str = "unknown"


def _index_gap(e: _PairEvidence, base: str) -> str:
    found = "did not retrieve it" if e.run_rank is None else f"ranked it #{e.run_rank}"
    if e.kind == "lexical":
        bm25 = rank_range_text(e.bm25_rank, e.bm25_rank_worst)
        return f"This tool's BM25 ranks the target {bm25} (within k={e.k}) but the lexical run {found}; {base}."
    if e.kind == "hybrid":
        return f"Exact dense search or BM25 ranks the target within k={e.k} but the hybrid run {found}; {base}."
    dense = rank_range_text(e.dense_rank, e.dense_rank_worst)
    return f"Exact dense search ranks the target {dense} (within k={e.k}) but the run {found}; {base}."


def _vocabulary(e: _PairEvidence, base: str, ov: str) -> str:
    if e.kind == "lexical":
        return (
            f"The query and the target share almost no words, which a lexical run needs, while exact dense search "
            f"ranks it within {e.near_hi}: {base}; {ov}."
        )
    return f"The embedding model scores the target low while the words tell: {base}; {ov}."


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
    "vocabulary_mismatch": lambda e, base, ov: _vocabulary(e, base, ov),
    "semantic_gap": lambda e, base, ov: f"Neither dense nor BM25 ranks the target within k={e.k}: {base}; {ov}.",
    "ranking_failure": lambda e, base, ov: f"The target is findable but outranked: {base}.",
}


def _evidence(cls: str, e: _PairEvidence) -> str:
    """The sentence that says why the pair is in class ``cls``."""
    cos = f"{e.cosine:.3f}" if e.cosine is not None else "n/a"
    base = (
        f"run rank {_rank_text(e.run_rank, e.run_depth)}, exact dense rank "
        f"{rank_range_text(e.dense_rank, e.dense_rank_worst)}, {_bm25_text(e)}, cosine {cos} (calibrated threshold "
        f"{e.calibrated:.3f})"
    )
    ov = f"{e.overlap:.0%} of the query terms occur in the target" if e.overlap is not None else ""
    return _SENTENCES.get(cls, _SENTENCES["ranking_failure"])(e, base, ov)
