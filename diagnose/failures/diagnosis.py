"""A run's diagnosis: which (query, target) pairs failed, the model's calibrated threshold, and every failure.

A golden query *fails at k* when none of its relevant documents (grade > 0) is in the run's top k
(``hit_rate@k = 0``). With ``mode="recall"`` every relevant document missing from the top k is a (partial) failure,
even when another relevant document was found. Each (failed query, missed relevant document) pair — the *target* — is
analysed on its own (:mod:`diagnose.failures.evidence`).

Two units, never mixed: a **failed query** (a golden query that fails at k) and a **missed pair** (a failed query
and one relevant document missing from its top k; each missed pair gets a class). A query with 36 missed relevant
documents is one failed query and 36 missed pairs. Per class, :attr:`Diagnosis.class_counts` counts missed pairs
and :attr:`Diagnosis.class_failed_queries` the failed queries with at least one missed pair of the class (a query
whose pairs fall in two classes counts in both, so these do not add up to the failed queries).

The calibrated threshold (:func:`calibrate`): a low percentile (default the 10th) of cosine(query, relevant
document) over the relevant documents the run found in the top k. 0.75 means different things for different models.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from diagnose import defaults
from diagnose.checks import rank_cutoff
from diagnose.data import DataError, Dataset, Run, fields_dict
from diagnose.failures.classes import CLASSES
from diagnose.failures.evidence import Bm25Scores, EvidenceSources, Failure, build_failure, lookups
from diagnose.failures.kind import RunKind
from diagnose.failures.taxonomy import FailureMode, Thresholds, recommendation
from diagnose.io.messages import plural_of
from diagnose.lexical import term_overlap, tokenize
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.space import VectorSpace


@dataclass(frozen=True)
class Calibration:
    model: str
    seed: float
    calibrated: float
    percentile: float
    n_pairs: int
    fallback: bool
    model_fingerprint: str = (
        ""  # the vectors' identity (``st-sha256:...+bf16``); ``model`` is the human label
    )
    #: the same percentile of the share of the query's BM25 weight the found documents hold (:func:`calibrate_words`;
    #: ``Thresholds.min_overlap`` with too few pairs); None: not computed yet
    weight_share: float | None = None
    weight_share_fallback: bool = False

    def to_dict(self) -> dict:
        return {
            **fields_dict(self, "model", "model_fingerprint", "seed", "calibrated", "percentile", "n_pairs"),
            "method": (
                f"{self.percentile:g}th percentile of cosine(query, relevant) over relevant documents the run "
                "found in the top k"
                if not self.fallback
                else "too few successful pairs to calibrate; the seed threshold is used"
            ),
            "weight_share": self.weight_share,
            "weight_share_method": (
                f"{self.percentile:g}th percentile of the share of the query's BM25 weight the relevant document "
                "holds, over the relevant documents the run found in the top k"
                if not self.weight_share_fallback
                else "too few successful pairs to calibrate; min_overlap is used"
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
    run_kind: RunKind = field(default_factory=RunKind)
    window: dict | None = None  # the model's window (ModelWindow.to_dict()), None when unknown

    def window_note(self) -> str:
        """The model's window in one sentence, or why it is unknown (said once in a report)."""
        if self.window is None:
            return (
                "The model's window is unknown (precomputed vectors without --model / model=): window_tokens, "
                "target_tokens and the passage fields are null and the classes truncated and diluted are not used."
            )
        w = self.window
        return (
            f"The model's window: {w['window_tokens']} tokens of {w['model']} ({w['special_tokens']} special tokens "
            f"included), so it reads the first {w['window_tokens'] - w['special_tokens']} tokens of a document."
        )

    @property
    def class_counts(self) -> dict[str, int]:
        """Missed pairs per class (taxonomy order): they add up to :attr:`n_missed_pairs`."""
        c = Counter(f.cls for f in self.failures)
        return {k: int(c.get(k, 0)) for k in CLASSES}

    @property
    def class_failed_queries(self) -> dict[str, int]:
        """Failed queries per class: those with at least one missed pair of the class (module docstring)."""
        c = Counter(cls for _, cls in {(f.query_id, f.cls) for f in self.failures})
        return {k: int(c.get(k, 0)) for k in CLASSES}

    @property
    def n_missed_pairs(self) -> int:
        """Missed (failed query, relevant document) pairs: one per failure record."""
        return len(self.failures)

    def counts_sentence(self) -> str:
        """The two counts in words, e.g. "47 failed queries of 106 golden queries at k=10 (hit): 51 missed pairs
        (failed query, relevant document missing from its top k)"."""
        nq, npairs = len(self.failed_queries), self.n_missed_pairs
        return (
            f"{plural_of(nq, 'failed query', 'failed queries')} of {self.n_queries} golden queries at k={self.k} "
            f"({self.mode}): {plural_of(npairs, 'missed pair')} (failed query, relevant document "
            "missing from its top k)"
        )

    def frame(self) -> pd.DataFrame:
        """One row per failure: the table the CLI and the app show."""
        cols = [
            "query_id",
            "doc_id",
            "class",
            "cosine",
            "run_rank",
            "dense_rank",
            "bm25_rank",
            "bm25_score",
            "margin",
            "overlap",
            "missing_terms",
            "seed_verdict",
            "calibrated_verdict",
            "query_text",
            "grade",
            "dense_rank_worst",
            "bm25_rank_worst",
            "window_tokens",
            "target_tokens",
            "passage_offset",
            "passage_cosine",
            "passage_text",
        ]
        rows = []
        for f in self.failures:
            d = f.to_dict()
            d["missing_terms"] = " ".join(f.missing_terms)
            rows.append({c: d[c] for c in cols})
        ranks = ["run_rank", "dense_rank", "bm25_rank", "dense_rank_worst", "bm25_rank_worst"]
        ranks += ["window_tokens", "target_tokens", "passage_offset"]
        # nullable integers: a missing rank (not retrieved, BM25 score 0) stays empty instead of turning ranks to floats
        return pd.DataFrame(rows, columns=cols).astype(dict.fromkeys(ranks, "Int64"))

    def to_dict(self) -> dict:
        return {
            **fields_dict(self, "run", "k", "mode", "n_queries"),
            "n_failed_queries": len(self.failed_queries),
            "n_missed_pairs": self.n_missed_pairs,
            "failures": [f.to_dict() for f in self.failures],
            "class_counts": self.class_counts,
            "missed_pairs_per_class": self.class_counts,
            "failed_queries_per_class": self.class_failed_queries,
            "threshold": self.calibration.to_dict(),
            "thresholds": asdict(self.thresholds),
            "recommendations": {c: recommendation(c, self.run_kind.kind, self.thresholds) for c in CLASSES},
            "run_kind": self.run_kind.kind,
            "run_kind_evidence": self.run_kind.to_dict(),
            "window": self.window,
            "window_note": self.window_note(),
        }


def calibrate(
    ds: Dataset,
    run: Run,
    space: VectorSpace,
    k: int,
    thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen
) -> Calibration:
    """The calibrated cosine threshold of a model on this golden set.

    Pairs: (query, relevant document) where the run has the document in its top k — the successes. The threshold
    is their ``calibration_percentile``-th percentile of cosine: 90% of the relevant documents this model and run
    found score above it. Fewer than ``min_calibration_pairs`` pairs -> the seed threshold, flagged as fallback.
    """
    top = run.top(k)
    rel = ds.qrels.relevant()
    hits = space.with_vectors(top.merge(rel[["query_id", "doc_id"]], on=["query_id", "doc_id"], how="inner"))
    if len(hits) < thresholds.min_calibration_pairs:
        return Calibration(
            space.model_label,
            thresholds.seed_cosine,
            thresholds.seed_cosine,
            thresholds.calibration_percentile,
            len(hits),
            True,
            space.model,
        )
    value = float(np.percentile(space.pair_cosines(hits), thresholds.calibration_percentile))
    return Calibration(
        space.model_label,
        thresholds.seed_cosine,
        value,
        thresholds.calibration_percentile,
        len(hits),
        False,
        space.model,
    )


def calibrate_words(
    ds: Dataset,
    run: Run,
    bm25,
    k: int,
    calibration: Calibration,
    thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen
) -> Calibration:
    """``calibration`` with the run's threshold of the share of the query's BM25 weight a target holds
    (:func:`~diagnose.lexical.term_overlap`'s ``weight_share``), which the vocabulary_mismatch rule reads: the
    ``calibration_percentile``-th percentile of that share over the relevant documents the run found in its top k,
    the pairs of the cosine's calibration. Relative, like the cosine's: with long queries every document holds a
    small share of the query's terms, the ones the run finds too, so an absolute share ("< 20% of the terms") would
    call half of what the run finds a mismatch (issue 35). Fewer than ``min_calibration_pairs`` pairs ->
    ``thresholds.min_overlap``, flagged. ``bm25``: the :class:`~diagnose.lexical.BM25Index` of the diagnosis."""
    top = run.top(k)
    rel = ds.qrels.relevant()
    hits = top.merge(rel[["query_id", "doc_id"]], on=["query_id", "doc_id"], how="inner")
    q_text = ds.queries.text_of()
    corpus_row = ds.corpus.index_of()
    pairs = [(q, d) for q, d in zip(hits["query_id"], hits["doc_id"], strict=True) if d in corpus_row]
    if len(pairs) < thresholds.min_calibration_pairs:
        return replace(calibration, weight_share=thresholds.min_overlap, weight_share_fallback=True)
    docs = list(dict.fromkeys(d for _, d in pairs))
    stems = dict(
        zip(docs, map(set, tokenize(ds.corpus.texts_at([corpus_row[d] for d in docs]))), strict=True)
    )
    queries = list(dict.fromkeys(q for q, _ in pairs))
    weights = bm25.term_weights({s for t in tokenize([q_text.get(q, "") for q in queries]) for s in t})
    shares = [
        term_overlap(q_text.get(q, ""), "", doc_stems=stems[d], weights=weights).weight_share
        for q, d in pairs
    ]
    value = float(np.percentile(shares, thresholds.calibration_percentile))
    return replace(calibration, weight_share=value, weight_share_fallback=False)


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
    k: int = defaults.K,
    mode: FailureMode = "hit",
    thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen, as in classify()
    calibration: Calibration | None = None,
    progress=None,
    sources: EvidenceSources = EvidenceSources(),  # noqa: B008 - immutable
) -> Diagnosis:
    """Analyse every failed (query, target) pair of ``run`` at ``k``.

    ``bm25`` is a :class:`diagnose.lexical.BM25Index` over the same corpus. ``calibration`` defaults to
    :func:`calibrate` on this run. ``sources``: what else the evidence is read from, each optional
    (:class:`~diagnose.failures.evidence.EvidenceSources`: the run's kind, default unknown, read as dense; the
    metadata filters; the ranks known from the baselines; the model's window and the targets' passages; a chunk
    corpus' split windows); a rule whose input is not given is not used.
    """
    if ds.corpus is None or ds.queries is None:
        raise DataError("The diagnosis needs the corpus and the queries.", param="corpus")
    k = rank_cutoff(k)
    calibration = calibration or calibrate(ds, run, space, k, thresholds)
    if calibration.weight_share is None:
        calibration = calibrate_words(ds, run, bm25, k, calibration, thresholds)
    pairs, n_golden = failed_pairs(ds, run, k, mode)
    look = lookups(ds, run, space, pairs, sources)
    scores = Bm25Scores(bm25)
    passages = sources.passages
    matched = passages.match([(q, d) for q, d, _ in pairs], calibration.calibrated) if passages else {}
    failures: list[Failure] = []
    for i, (q, d, g) in enumerate(pairs):
        if progress is not None:
            progress(i, len(pairs))
        failures.append(
            build_failure(
                look,
                scores,
                q,
                d,
                g,
                k=k,
                thresholds=thresholds,
                calibrated=calibration.calibrated,
                # too few hits to calibrate: None, and the rule reads min_overlap (and says so)
                weight_share=None if calibration.weight_share_fallback else calibration.weight_share,
                passage=matched.get((q, d)),
            )
        )
    failed_queries = list(dict.fromkeys(f.query_id for f in failures))
    window = passages.window.to_dict() if passages else None
    return Diagnosis(
        run.name, k, mode, failures, calibration, n_golden, failed_queries, thresholds, sources.kind, window
    )
