"""Why each failed query failed: evidence -> failure class -> recommendation.

A golden query *fails at k* when none of its relevant documents (grade > 0) is in the run's top k
(``hit_rate@k = 0``). With ``mode="recall"`` every relevant document missing from the top k is a (partial) failure,
even when another relevant document was found. Each (failed query, missed relevant document) pair — the *target* — is
analysed on its own.

Evidence per pair (all of it returned, nothing summarised away):
``cosine`` = cos(query, target) under the chosen model; ``run_rank`` = the target's rank in the run (``None`` when the
run did not retrieve it; ``run_depth`` says how deep the run went for that query); ``dense_rank`` = 1 + the number of
corpus documents with a strictly higher cosine to the query (exact search over the whole corpus); ``bm25_rank`` and
``bm25_score`` likewise for BM25; the query terms present in / missing from the target (BM25's tokenizer, query stop
words such as "how", "do", "my" left out: :data:`diagnose.lexical.QUERY_STOPWORDS`) and the share present
(``overlap``), with the stop words left out listed (``ignored_terms``) and the share over every term BM25 scores
(``bm25_overlap``); the run's top documents with their cosine to the query and to the target; ``margin`` =
cos(query, k-th retrieved) - cosine.

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
and the same rule with the model's calibrated threshold: a low percentile (default the 10th) of cosine(query, relevant
document) over the relevant documents the run found in the top k. 0.75 means different things for different models.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

from diagnose.data import DataError, Dataset, Run
from diagnose.space import VectorSpace

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


class Competitor(NamedTuple):
    """A document the run ranked above the target."""

    doc_id: str
    rank: int
    cosine_query: float | None
    cosine_target: float | None
    grade: int | None


@dataclass(frozen=True)
class Failure:
    """One missed (query, relevant document) pair with its evidence, class and recommendation.

    ``present_terms``/``missing_terms``/``overlap``: the query's terms found in / missing from the target and the
    share found, query stop words left out (:func:`diagnose.lexical.term_overlap`); ``overlap`` is what the
    taxonomy's ``min_overlap`` rule reads. ``ignored_terms``: the query stop words left out; ``bm25_overlap``: the
    share over every term BM25 scores, stop words included (equal to ``overlap`` when nothing was ignored).
    Both ``None``/empty when the target is not in the corpus.
    """

    query_id: str
    query_text: str
    doc_id: str
    grade: int
    cls: str
    cosine: float | None
    run_rank: int | None
    run_depth: int
    dense_rank: int | None
    bm25_rank: int | None
    bm25_score: float | None
    present_terms: tuple[str, ...]
    missing_terms: tuple[str, ...]
    overlap: float | None
    kth_cosine: float | None
    margin: float | None
    duplicate_doc_id: str | None
    duplicate_cosine: float | None
    seed_verdict: str
    calibrated_verdict: str
    evidence: str
    recommendation: str
    top_retrieved: tuple[Competitor, ...] = ()
    ignored_terms: tuple[str, ...] = ()
    bm25_overlap: float | None = None

    def to_dict(self) -> dict:
        """The JSON record of ``diagnose failures --format json``: every field (``cls`` as ``class``) plus
        ``label``. A contract: keys are added, never renamed or removed."""
        # shallow on purpose: dataclasses.asdict deep-copies every field and dominated `--format json` time
        d = {f: getattr(self, f) for f in _FAILURE_FIELDS}
        d["class"] = d.pop("cls")
        d["label"] = CLASS_LABELS[self.cls]
        d["present_terms"] = list(self.present_terms)
        d["missing_terms"] = list(self.missing_terms)
        d["top_retrieved"] = [c._asdict() for c in self.top_retrieved]
        d["ignored_terms"] = list(self.ignored_terms)
        return d


_FAILURE_FIELDS = tuple(f.name for f in fields(Failure))


@dataclass(frozen=True)
class Calibration:
    model: str
    seed: float
    calibrated: float
    percentile: float
    n_pairs: int
    fallback: bool

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "seed": self.seed,
            "calibrated": self.calibrated,
            "percentile": self.percentile,
            "n_pairs": self.n_pairs,
            "method": (
                f"{self.percentile:g}th percentile of cosine(query, relevant) over relevant documents the run "
                "found in the top k"
                if not self.fallback
                else "too few successful pairs to calibrate; the seed threshold is used"
            ),
        }


@dataclass
class Diagnosis:
    run: str
    k: int
    mode: FailureMode
    failures: list[Failure]
    calibration: Calibration
    n_queries: int
    failed_queries: list[str]
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def class_counts(self) -> dict[str, int]:
        c = Counter(f.cls for f in self.failures)
        return {k: int(c.get(k, 0)) for k in CLASSES}

    def frame(self) -> pd.DataFrame:
        """One row per failure: the table the CLI and the app show."""
        cols = [
            "query_id", "doc_id", "class", "cosine", "run_rank", "dense_rank", "bm25_rank", "bm25_score",
            "margin", "overlap", "missing_terms", "seed_verdict", "calibrated_verdict", "query_text", "grade",
        ]  # fmt: skip
        rows = []
        for f in self.failures:
            d = f.to_dict()
            d["missing_terms"] = " ".join(f.missing_terms)
            rows.append({c: d[c] for c in cols})
        return pd.DataFrame(rows, columns=cols)

    def to_dict(self) -> dict:
        return {
            "run": self.run,
            "k": self.k,
            "mode": self.mode,
            "n_queries": self.n_queries,
            "n_failed_queries": len(self.failed_queries),
            "failures": [f.to_dict() for f in self.failures],
            "class_counts": self.class_counts,
            "threshold": self.calibration.to_dict(),
            "thresholds": asdict(self.thresholds),
            "recommendations": {c: RECOMMENDATIONS[c] for c in CLASSES},
        }


_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


# what [^\w\s] matches among ASCII characters: punctuation except "_", and control characters that are not spaces
_ASCII_PUNCT = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_" or chr(c).isspace())}
)


def normalise_text(text: str) -> str:
    """Lowercase, NFKC, punctuation removed, whitespace folded: what "the same text" means for duplicates."""
    text = text or ""
    if text.isascii():  # the same result without NFKC (identity on ASCII) and without regexes: ~10x faster
        return " ".join(text.lower().translate(_ASCII_PUNCT).split())
    t = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub(" ", _PUNCT.sub(" ", t)).strip()


def calibrate(
    ds: Dataset, run: Run, space: VectorSpace, k: int, thresholds: Thresholds = Thresholds()
) -> Calibration:
    """The calibrated cosine threshold of a model on this golden set.

    Pairs: (query, relevant document) where the run has the document in its top k — the successes. The threshold
    is their ``calibration_percentile``-th percentile of cosine: 90% of the relevant documents this model and run
    found score above it. Fewer than ``min_calibration_pairs`` pairs -> the seed threshold, flagged as fallback.
    """
    top = run.top(k)
    rel = ds.qrels.relevant()
    hits = top.merge(rel[["query_id", "doc_id"]], on=["query_id", "doc_id"], how="inner")
    # membership tested pair by pair: Series.isin(dict) converts every key (1M documents: ~4 s)
    known = [
        q in space.query_row and d in space.doc_row
        for q, d in zip(hits["query_id"], hits["doc_id"], strict=True)
    ]
    hits = hits[np.asarray(known, dtype=bool)]
    if len(hits) < thresholds.min_calibration_pairs:
        return Calibration(space.model, thresholds.seed_cosine, thresholds.seed_cosine,
                           thresholds.calibration_percentile, len(hits), True)  # fmt: skip
    qi = hits["query_id"].map(space.query_row).to_numpy()
    di = hits["doc_id"].map(space.doc_row).to_numpy()
    cos = np.einsum("ij,ij->i", space.query_vecs[qi], space.doc_vecs[di])
    value = float(np.percentile(cos, thresholds.calibration_percentile))
    return Calibration(
        space.model, thresholds.seed_cosine, value, thresholds.calibration_percentile, len(hits), False
    )


def _dense_ranks(
    space: VectorSpace, pairs: list[tuple[str, str]], block: int = 256
) -> dict[tuple[str, str], int]:
    """Rank of each target among all corpus documents: 1 + number with a strictly higher cosine."""
    from diagnose.embed import dense_rank_of

    ok = [(q, d) for q, d in pairs if q in space.query_row and d in space.doc_row]
    if not ok:
        return {}
    qr = np.array([space.query_row[q] for q, _ in ok])
    dr = np.array([space.doc_row[d] for _, d in ok])
    ranks = dense_rank_of(space.query_vecs, space.doc_vecs, qr, dr)
    return {p: int(r) for p, r in zip(ok, ranks, strict=True)}


def failed_pairs(
    ds: Dataset, run: Run, k: int, mode: FailureMode = "hit"
) -> tuple[list[tuple[str, str, int]], int]:
    """The (query, target, grade) pairs to analyse, and the number of golden queries considered."""
    rel = ds.qrels.relevant()
    golden = list(pd.unique(rel["query_id"]))
    found = rel.merge(
        run.top(k)[["query_id", "doc_id"]], on=["query_id", "doc_id"], how="left", indicator=True
    )
    found["hit"] = found["_merge"] == "both"
    if mode == "hit":
        hit_q = set(found.loc[found["hit"], "query_id"])
        missed = found[~found["query_id"].isin(hit_q)]
    elif mode == "recall":
        missed = found[~found["hit"]]
    else:
        raise DataError(f"Unknown failure definition {mode!r}: use 'hit' or 'recall'.")
    pairs = [
        (q, d, int(g))
        for q, d, g in zip(missed["query_id"], missed["doc_id"], missed["relevance"], strict=True)
    ]
    return pairs, len(golden)


def diagnose_run(
    ds: Dataset,
    run: Run,
    space: VectorSpace,
    bm25,
    *,
    k: int = 10,
    mode: FailureMode = "hit",
    thresholds: Thresholds = Thresholds(),
    calibration: Calibration | None = None,
    progress=None,
) -> Diagnosis:
    """Analyse every failed (query, target) pair of ``run`` at ``k``.

    ``bm25`` is a :class:`diagnose.lexical.BM25Index` over the same corpus. ``calibration`` defaults to
    :func:`calibrate` on this run.
    """
    from diagnose.lexical import term_overlap, tokenize

    if ds.corpus is None or ds.queries is None:
        raise DataError("The diagnosis needs the corpus and the queries.", param="corpus")
    if k < 1:
        raise DataError(f"k must be at least 1 (got {k}).")
    calibration = calibration or calibrate(ds, run, space, k, thresholds)
    pairs, n_golden = failed_pairs(ds, run, k, mode)
    q_text = ds.queries.text_of()
    corpus_row = ds.corpus.index_of()
    doc_texts = ds.corpus.texts()
    norm_cache: dict[str, str] = {}

    def norm(doc: str) -> str:
        if doc not in norm_cache:
            norm_cache[doc] = normalise_text(doc_texts[corpus_row[doc]])
        return norm_cache[doc]

    targets = list(dict.fromkeys(d for _, d, _ in pairs if d in corpus_row))
    # one tokenize() call for every target: each distinct word is stemmed once
    target_stems = dict(
        zip(targets, map(set, tokenize([doc_texts[corpus_row[d]] for d in targets])), strict=True)
    )
    grades = ds.qrels.as_dict()
    lists = run.ranked_lists()
    dense = _dense_ranks(space, [(q, d) for q, d, _ in pairs if d in corpus_row])
    near_hi = thresholds.near_miss_factor * k

    failures: list[Failure] = []
    # BM25 scores of the current query only: one float64 per corpus document (8 MB at 1M documents), and a pair's
    # query is usually the previous pair's; keeping every query's scores held GBs on large corpora
    bm25_q: str | None = None
    scores = np.zeros(0)
    for i, (q, d, g) in enumerate(pairs):
        if progress is not None:
            progress(i, len(pairs))
        text = q_text.get(q, "")
        ranked = lists.get(q, [])
        run_rank = ranked.index(d) + 1 if d in ranked else None
        qg = grades.get(q, {})
        in_corpus = d in corpus_row
        has_vec = in_corpus and q in space.query_row
        cosine = space.cosine(q, d) if has_vec else None
        top = ranked[: max(k, thresholds.top_shown)]
        competitors = []
        for r, doc in enumerate(top, start=1):
            known = doc in space.doc_row and q in space.query_row
            competitors.append(
                Competitor(
                    doc,
                    r,
                    space.cosine(q, doc) if known else None,
                    float(space.doc_vec(doc) @ space.doc_vec(d)) if known and has_vec else None,
                    qg.get(doc),
                )
            )
        kth = competitors[k - 1].cosine_query if len(competitors) >= k else None
        margin = (kth - cosine) if kth is not None and cosine is not None else None
        # near-duplicates of the target among the top k that are not judged relevant
        dup_id, dup_cos = None, None
        if in_corpus:
            for c in competitors[:k]:
                if (qg.get(c.doc_id) or 0) > 0 or c.doc_id == d or c.doc_id not in corpus_row:
                    continue
                same_text = norm(c.doc_id) == norm(d)
                close = c.cosine_target is not None and c.cosine_target >= thresholds.duplicate_cosine
                strength = 1.0 if same_text else c.cosine_target
                if (same_text or close) and (dup_cos is None or strength > dup_cos):
                    dup_id, dup_cos = c.doc_id, strength
        bm25_rank = bm25_score = None
        overlap = bm25_overlap = None
        present: tuple[str, ...] = ()
        missing: tuple[str, ...] = ()
        ignored: tuple[str, ...] = ()
        if in_corpus:
            if q != bm25_q:
                bm25_q, scores = q, bm25.scores(text)
            s = float(scores[corpus_row[d]])
            bm25_score = s
            bm25_rank = int(np.count_nonzero(scores > s)) + 1
            ov = term_overlap(text, "", doc_stems=target_stems[d])
            present, missing, overlap = tuple(ov.present), tuple(ov.missing), float(ov.overlap_ratio)
            ignored, bm25_overlap = tuple(ov.ignored), float(ov.bm25_overlap_ratio)
        dense_rank = dense.get((q, d))
        cls = classify(
            in_corpus=in_corpus,
            duplicate=dup_id is not None,
            run_rank=run_rank,
            dense_rank=dense_rank,
            bm25_rank=bm25_rank,
            cosine=cosine,
            overlap=overlap,
            k=k,
            calibrated=calibration.calibrated,
            thresholds=thresholds,
        )
        seed = _rule(cosine, thresholds.seed_cosine)
        calibrated = _rule(cosine, calibration.calibrated)
        failures.append(
            Failure(
                query_id=q,
                query_text=text,
                doc_id=d,
                grade=g,
                cls=cls,
                cosine=cosine,
                run_rank=run_rank,
                run_depth=len(ranked),
                dense_rank=dense_rank,
                bm25_rank=bm25_rank,
                bm25_score=bm25_score,
                present_terms=present,
                missing_terms=missing,
                overlap=overlap,
                kth_cosine=kth,
                margin=margin,
                duplicate_doc_id=dup_id,
                duplicate_cosine=dup_cos,
                seed_verdict=seed,
                calibrated_verdict=calibrated,
                evidence=_evidence(
                    cls,
                    k,
                    near_hi,
                    run_rank,
                    len(ranked),
                    dense_rank,
                    bm25_rank,
                    cosine,
                    calibration.calibrated,
                    overlap,
                    dup_id,
                    dup_cos,
                    d,
                ),  # fmt: skip
                recommendation=RECOMMENDATIONS[cls],
                top_retrieved=tuple(competitors),
                ignored_terms=ignored,
                bm25_overlap=bm25_overlap,
            )
        )
    failed_queries = list(dict.fromkeys(f.query_id for f in failures))
    return Diagnosis(run.name, k, mode, failures, calibration, n_golden, failed_queries, thresholds)


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


def _evidence(
    cls, k, near_hi, run_rank, depth, dense_rank, bm25_rank, cosine, calibrated, overlap, dup_id, dup_cos, d
):
    cos = f"{cosine:.3f}" if cosine is not None else "n/a"
    if cls == "missing_document":
        return f"Document {d!r} is judged relevant but is not in the corpus."
    if cls == "label_gap":
        return (
            f"The run's top {k} holds {dup_id!r}, a near-duplicate of the target (cosine {dup_cos:.3f}), "
            "which the golden set does not judge relevant."
        )
    base = (
        f"run rank {_rank_text(run_rank, depth)}, exact dense rank {_rank_text(dense_rank)}, "
        f"BM25 rank {_rank_text(bm25_rank)}, cosine {cos} (calibrated threshold {calibrated:.3f})"
    )
    ov = f"{overlap:.0%} of the query terms occur in the target" if overlap is not None else ""
    if cls == "near_miss":
        return f"The run ranked the target #{run_rank}, just below k={k} (within {near_hi}); {base}."
    if cls == "index_gap":
        return (
            f"Exact dense search ranks the target #{dense_rank} (within k={k}) but the run "
            f"{'did not retrieve it' if run_rank is None else f'ranked it #{run_rank}'}; {base}."
        )
    if cls == "vocabulary_mismatch":
        return f"The embedding model scores the target low while the words tell: {base}; {ov}."
    if cls == "semantic_gap":
        return f"Neither dense nor BM25 ranks the target within k={k}: {base}; {ov}."
    return f"The target is findable but outranked: {base}."


# ------------------------------------------------------------------------------------------ beyond failures


@dataclass(frozen=True)
class LabelNoise:
    """Signs that the golden set, not the retriever, is wrong."""

    unjudged_duplicates: (
        pd.DataFrame
    )  # query_id, doc_id (unjudged, in top k), duplicate_of (judged relevant), cosine
    duplicate_documents: pd.DataFrame  # doc_id, duplicate_of, cosine, same_text
    conflicting_queries: pd.DataFrame  # query_ids (same text), text, judgements differ
    near_duplicate_search: str  # "exact" or why it was limited

    def to_dict(self) -> dict:
        return {
            "unjudged_duplicates": self.unjudged_duplicates.to_dict(orient="records"),
            "duplicate_documents": self.duplicate_documents.to_dict(orient="records"),
            "conflicting_queries": self.conflicting_queries.to_dict(orient="records"),
            "near_duplicate_search": self.near_duplicate_search,
        }


def find_label_noise(
    ds: Dataset,
    run: Run,
    space: VectorSpace,
    *,
    k: int = 10,
    duplicate_cosine: float = 0.95,
    max_docs_for_near_duplicates: int = 50_000,
) -> LabelNoise:
    """Unjudged near-duplicates of judged relevant documents in the top k, duplicate documents in the corpus (exact
    normalised text always; near-duplicates by exact nearest-neighbour search when the corpus has at most
    ``max_docs_for_near_duplicates`` documents), and identical queries with conflicting judgements."""
    from diagnose.embed import dense_search

    if ds.corpus is None or ds.queries is None:
        raise DataError("The label-noise finder needs the corpus and the queries.")
    qrels = ds.qrels.as_dict()
    rows = []
    for q, docs in run.ranked_lists().items():
        judged = qrels.get(q)
        if not judged or q not in space.query_row:
            continue
        rel = [d for d, g in judged.items() if g > 0 and d in space.doc_row]
        if not rel:
            continue
        rel_vecs = space.doc_vecs[[space.doc_row[d] for d in rel]]
        for doc in docs[:k]:
            if doc in judged or doc not in space.doc_row:
                continue
            sims = rel_vecs @ space.doc_vec(doc)
            j = int(np.argmax(sims))
            if sims[j] >= duplicate_cosine:
                rows.append({"query_id": q, "doc_id": doc, "duplicate_of": rel[j], "cosine": float(sims[j])})
    unjudged = pd.DataFrame(rows, columns=["query_id", "doc_id", "duplicate_of", "cosine"])

    ids = list(ds.corpus.ids)
    normed = [normalise_text(t) for t in ds.corpus.texts()]
    first: dict[str, str] = {}
    dup_rows = []
    for doc, t in zip(ids, normed, strict=True):
        if t and t in first:
            dup_rows.append({"doc_id": doc, "duplicate_of": first[t], "cosine": 1.0, "same_text": True})
        else:
            first.setdefault(t, doc)
    exact_pairs = {(r["doc_id"], r["duplicate_of"]) for r in dup_rows}
    if len(ids) <= max_docs_for_near_duplicates and len(ids) > 1:
        idx, sc = dense_search(space.doc_vecs, space.doc_vecs, 2)
        how = "exact"
        for i in range(len(ids)):
            for j, s in zip(idx[i], sc[i], strict=True):
                if j == i or s < duplicate_cosine:
                    continue
                a, b = ids[i], ids[int(j)]
                if a > b or (a, b) in exact_pairs or (b, a) in exact_pairs:
                    continue  # report each pair once, from its smaller id
                dup_rows.append({"doc_id": b, "duplicate_of": a, "cosine": float(s), "same_text": False})
    else:
        how = f"exact text only: the corpus has more than {max_docs_for_near_duplicates} documents"
    dups = pd.DataFrame(dup_rows, columns=["doc_id", "duplicate_of", "cosine", "same_text"])

    qdf = ds.queries.df.assign(_norm=ds.queries.df["text"].map(normalise_text))
    conflicts = []
    for t, group in qdf.groupby("_norm", sort=False):
        if len(group) < 2 or not t:
            continue
        qids = list(group["query_id"])
        judged_sets = {q: tuple(sorted((d, g) for d, g in qrels.get(q, {}).items() if g > 0)) for q in qids}
        judged_only = {q: v for q, v in judged_sets.items() if q in qrels}
        if len(judged_only) >= 2 and len(set(judged_only.values())) > 1:
            conflicts.append(
                {
                    "query_ids": ", ".join(qids),
                    "text": group["text"].iloc[0],
                    "judgements": "; ".join(
                        f"{q}: {', '.join(d for d, _ in v) or '-'}" for q, v in judged_only.items()
                    ),
                }
            )
    conf = pd.DataFrame(conflicts, columns=["query_ids", "text", "judgements"])
    return LabelNoise(unjudged, dups, conf, how)


@dataclass(frozen=True)
class Hubness:
    """k-occurrence: how many queries' top k each document appears in (Radovanović et al., 2010)."""

    name: str
    k: int
    n_queries: int
    skewness: float
    hubs: pd.DataFrame  # doc_id, occurrences, share

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "k": self.k,
            "n_queries": self.n_queries,
            "skewness": self.skewness,
            "hubs": self.hubs.to_dict(orient="records"),
        }


def hubness(
    run: Run, *, k: int = 10, n_docs: int | None = None, top: int = 10, min_share: float = 0.1
) -> Hubness:
    """Documents in the top k of unusually many queries.

    ``skewness`` is the skewness of the k-occurrence distribution over the corpus (``n_docs`` documents; documents
    never retrieved count as 0); > 1 signals hubs. ``hubs`` lists the ``top`` documents with the most occurrences whose
    share of queries is at least ``min_share``.
    """
    topk = run.top(k)
    counts = topk["doc_id"].value_counts()
    nq = int(topk["query_id"].nunique())
    n = max(int(n_docs or 0), len(counts))
    occ = np.zeros(n, dtype=np.float64)
    occ[: len(counts)] = counts.to_numpy()
    sd = occ.std()
    skew = float(((occ - occ.mean()) ** 3).mean() / sd**3) if sd > 0 else 0.0
    hubs = pd.DataFrame({"doc_id": counts.index, "occurrences": counts.to_numpy()})
    hubs["share"] = hubs["occurrences"] / max(nq, 1)
    hubs = hubs[hubs["share"] >= min_share].head(top).reset_index(drop=True)
    return Hubness(run.name, k, nq, skew, hubs)


def sort_worst(failures: Sequence[Failure]) -> list[Failure]:
    """Worst first: missed deepest (not retrieved, then by run rank descending), then lowest cosine."""

    def key(f: Failure):
        rank = f.run_rank if f.run_rank is not None else 10**9
        return (-rank, f.cosine if f.cosine is not None else -2.0)

    return sorted(failures, key=key)
