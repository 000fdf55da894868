"""The evidence of one (query, target) pair: the :class:`Failure` and :class:`Competitor` records and how each field
is computed.

``cosine`` = cos(query, target) under the chosen model; ``run_rank`` = the target's rank in the run (``None`` when the
run did not retrieve it; ``run_depth`` says how deep the run went for that query); ``dense_rank`` and
``dense_rank_worst`` = the first and last rank of the target's tie group among all corpus documents by cosine to the
query, compared as float32 (:func:`diagnose.embed.dense_rank_range`: exact search over the whole corpus);
``bm25_rank`` and ``bm25_rank_worst`` likewise by BM25 score (:func:`diagnose.lexical.bm25_rank_range`), both
``None`` when ``bm25_score`` is 0 (no query term in the target: BM25 does not retrieve it); the query terms present
in / missing from the target (BM25's tokenizer, query stop words such as "how", "do", "my" left out:
:data:`diagnose.lexical.QUERY_STOPWORDS`) and the share present
(``overlap``), with the stop words left out listed (``ignored_terms``) and the share over every term BM25 scores
(``bm25_overlap``); the run's top documents with their cosine to the query and to the target; ``margin`` =
cos(query, k-th retrieved) - cosine.

:func:`lookups` gathers once per run what every pair reads; :func:`build_failure` computes one pair's evidence, asks
:func:`~diagnose.failures.taxonomy.classify` for its class and returns the :class:`Failure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from diagnose.data import Corpus, Dataset, Run
from diagnose.embed import dense_rank_range
from diagnose.failures.classes import CLASS_LABELS
from diagnose.failures.golden import normalise_text
from diagnose.failures.kind import RunKind
from diagnose.failures.passages import PassageMatch, PassageScorer
from diagnose.failures.split import split_targets
from diagnose.failures.taxonomy import (
    EVIDENCE_FIELDS,
    PairEvidence,
    Thresholds,
    classify,
    evidence_sentence,
    recommendation,
    seed_rule,
)
from diagnose.lexical import bm25_rank_range, term_overlap, tokenize
from diagnose.search.space import VectorSpace

if TYPE_CHECKING:
    from diagnose.io.filters import QueryFilters


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
    Both ``None``/empty when the target is not in the corpus. ``dense_rank``/``bm25_rank`` are the best rank of the
    target's tie group, ``dense_rank_worst``/``bm25_rank_worst`` the worst (equal without ties); the BM25 pair is
    ``None`` when ``bm25_score`` is 0 (module docstring). ``window_tokens`` (the model's ``max_seq_length``,
    special tokens included), ``target_tokens`` (the target's tokens, special tokens left out), ``passage_offset``,
    ``passage_cosine`` and ``passage_text`` (the best-matching passage: its first token's offset, cosine to the query,
    text), ``passage_char`` (its character offset in ``title + " " + text``) and ``window_char`` (where the window
    ends in that text, None when the target fits): :mod:`diagnose.failures.passages`; all None when the model's
    window is unknown (precomputed vectors without a model). ``split_cosine``: for a split target (a chunk holding
    the largest part of a reference span no chunk holds whole), the query's cosine with the window of it and its
    neighbour(s) holding the rest (:func:`diagnose.failures.split.split_window_cosines`), and ``split_rank`` its
    rank with every chunk scored with its neighbours merged (:func:`diagnose.failures.split.merged_ranks`); None
    otherwise. ``weight_share``: the share of the query's BM25 weight the target holds (every term BM25 scores, each
    weighed by its idf: :func:`diagnose.lexical.term_overlap`), and ``weight_share_threshold`` the run's calibrated
    share (the 10th percentile over the relevant documents it found:
    :func:`~diagnose.failures.diagnosis.calibrate_words`) that the vocabulary_mismatch rule compares it with; None
    when the target is not in the corpus.
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
    dense_rank_worst: int | None = None
    bm25_rank_worst: int | None = None
    window_tokens: int | None = None
    target_tokens: int | None = None
    passage_offset: int | None = None
    passage_cosine: float | None = None
    passage_text: str | None = None
    passage_char: int | None = None
    window_char: int | None = None
    split_cosine: float | None = None
    split_rank: int | None = None
    weight_share: float | None = None
    weight_share_threshold: float | None = None

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


def sort_worst(failures: Sequence[Failure]) -> list[Failure]:
    """Worst first: missed deepest (not retrieved, then by run rank descending), then lowest cosine."""

    def key(f: Failure):
        rank = f.run_rank if f.run_rank is not None else 10**9
        return (-rank, f.cosine if f.cosine is not None else -2.0)

    return sorted(failures, key=key)


def worst_queries(failures: Sequence[Failure]) -> list[str]:
    """The failed queries, worst first: in the order of their worst missed pair (:func:`sort_worst`, the order of the
    app's Worst queries page and Query inspector)."""
    return list(dict.fromkeys(f.query_id for f in sort_worst(failures)))


def _dense_ranks(space: VectorSpace, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, int]]:
    """The (best, worst) rank of each target's tie group among all corpus documents by cosine
    (:func:`diagnose.embed.dense_rank_range`)."""

    ok = [(q, d) for q, d in pairs if q in space.query_row and d in space.doc_row]
    if not ok:
        return {}
    qr = np.array([space.query_row[q] for q, _ in ok])
    dr = np.array([space.doc_row[d] for _, d in ok])
    best, worst = dense_rank_range(space.query_vecs, space.doc_vecs, qr, dr)
    return {p: (int(b), int(w)) for p, b, w in zip(ok, best, worst, strict=True)}


class KnownRanks(NamedTuple):
    """Ranks of the failed pairs computed in the baselines' passes (:mod:`diagnose.search.baselines`), so that the
    diagnosis does not score their queries over the corpus again: ``dense`` = (query, doc) -> the
    :func:`~diagnose.embed.dense_rank_range` (best, worst) of every pair with vectors, ``bm25`` = (query, doc) ->
    (best, worst, score) as :func:`~diagnose.lexical.bm25_rank_range` and the score give them. ``None``: not
    known, computed by the diagnosis."""

    dense: dict[tuple[str, str], tuple[int, int]] | None = None
    bm25: dict[tuple[str, str], tuple[int | None, int | None, float]] | None = None


class EvidenceSources(NamedTuple):
    """What the failed pairs' evidence is read from beside the data, the vectors and BM25
    (:func:`diagnose.failures.diagnose_run`). Each is optional: unknown, the rules that read it are not used. A rule
    that needs a new kind of input adds it here, its field in :class:`~diagnose.failures.taxonomy.PairEvidence`
    (computed in :func:`build_failure` from it) and the rule; nothing in between is written again.

    - ``kind``: the run's kind (:class:`~diagnose.failures.kind.RunKind`; unknown is read as dense), which the rules,
      sentences and recommendations follow.
    - ``filters``: the per-query metadata filters (:mod:`diagnose.io.filters`): a target its query's filter excludes
      is ``filtered_out``.
    - ``known``: the failed pairs' dense and BM25 ranks when computed with the baselines (:class:`KnownRanks`).
    - ``passages``: the model's window and each target's passages
      (:class:`~diagnose.failures.passages.PassageScorer`; None: the window is unknown, the window fields stay None,
      the truncated and diluted rules are not used).
    - ``split_cosines``: a chunk corpus' split targets' window cosines
      (:func:`diagnose.failures.split.split_window_cosines`), reported; ``split_ranks``: their ranks in the merge
      remedy's run (:func:`diagnose.failures.split.merged_ranks`), which the split rule reads; None: the rule is not
      used.
    - ``without_query_doc``: the run was scored without the documents whose id is the query's
      (``ignore_identical_ids``, :mod:`diagnose.metrics.identical`), so the dense and BM25 ranks over the corpus leave
      out the query's own document too.
    """

    kind: RunKind = RunKind()
    filters: QueryFilters | None = None
    known: KnownRanks | None = None
    passages: PassageScorer | None = None
    split_cosines: Mapping[tuple[str, str], float] | None = None
    split_ranks: Mapping[tuple[str, str], int] | None = None
    without_query_doc: bool = False


@dataclass
class _Lookups:
    """What every pair of one run reads, computed once per run (:func:`lookups`)."""

    space: VectorSpace
    q_text: dict[str, str]
    corpus_row: dict[str, int]
    corpus: Corpus
    grades: dict[str, dict[str, int]]
    lists: dict[str, list[str]]
    dense: dict[tuple[str, str], tuple[int, int]]
    target_stems: dict[str, set[str]]
    norm_cache: dict[str, str] = field(default_factory=dict)
    sources: EvidenceSources = (
        EvidenceSources()
    )  # the run's kind, the filters, the passages, the split windows
    split: dict[tuple[str, str], float] = field(
        default_factory=dict
    )  # split targets (diagnose.failures.split)
    # (best, worst, score) of pairs scored with the BM25 baseline, in the same pass (BM25Index.to_run_ranked)
    bm25_known: dict[tuple[str, str], tuple[int | None, int | None, float]] = field(default_factory=dict)
    # the ranks over the corpus leave out the query's own document (ignore_identical_ids)
    without_query_doc: bool = False

    def norm(self, doc: str) -> str:
        if doc not in self.norm_cache:
            self.norm_cache[doc] = normalise_text(self.corpus.texts_at([self.corpus_row[doc]])[0])
        return self.norm_cache[doc]


def lookups(
    ds: Dataset,
    run: Run,
    space: VectorSpace,
    pairs: list[tuple[str, str, int]],
    sources: EvidenceSources = EvidenceSources(),  # noqa: B008 - immutable
) -> _Lookups:
    """What every pair reads; ``sources``: the run's kind, the filters, the ranks already computed with the
    baselines, the split windows (:class:`EvidenceSources`)."""
    known = sources.known
    corpus_row = ds.corpus.index_of()
    targets = list(dict.fromkeys(d for _, d, _ in pairs if d in corpus_row))
    # one tokenize() call for every target: each distinct word is stemmed once; only the targets' texts are built
    target_texts = ds.corpus.texts_at([corpus_row[d] for d in targets])
    target_stems = dict(zip(targets, map(set, tokenize(target_texts)), strict=True))
    dense = (
        known.dense
        if known is not None and known.dense is not None
        else _dense_ranks(space, [(q, d) for q, d, _ in pairs if d in corpus_row])
    )
    if sources.without_query_doc:
        dense = _dense_without_query_doc(space, dense)
    return _Lookups(
        space=space,
        q_text=ds.queries.text_of(),
        corpus_row=corpus_row,
        corpus=ds.corpus,
        grades=ds.qrels.as_dict(),
        lists=run.ranked_lists(),
        dense=dense,
        target_stems=target_stems,
        sources=sources,
        split=split_targets(ds.qrels, ds.corpus),
        bm25_known=known.bm25 if known is not None and known.bm25 is not None else {},
        without_query_doc=sources.without_query_doc,
    )


def _one_rank_less(best: int, worst: int, own: float, target: float) -> tuple[int, int]:
    """A tie range ``(best, worst)`` without one document scoring ``own`` against the target's ``target`` (both as
    the ranks compare them): above the target it moved both ends down one, tied it only the last."""
    if own > target:
        return best - 1, worst - 1
    return (best, worst - 1) if own == target else (best, worst)


def _dense_without_query_doc(
    space: VectorSpace, dense: dict[tuple[str, str], tuple[int, int]]
) -> dict[tuple[str, str], tuple[int, int]]:
    """The dense tie ranges without the document whose id is the query's, when the corpus has one: its cosine and
    the target's computed as :func:`~diagnose.embed.dense_rank_range` compares them (float64 dot, as float32)."""
    out = {}
    for (q, d), (best, worst) in dense.items():
        if q != d and q in space.doc_row and q in space.query_row and d in space.doc_row:
            qv = np.asarray(space.query_vecs[space.query_row[q]], dtype=np.float64)
            own = np.float32(qv @ np.asarray(space.doc_vecs[space.doc_row[q]], dtype=np.float64))
            target = np.float32(qv @ np.asarray(space.doc_vecs[space.doc_row[d]], dtype=np.float64))
            best, worst = _one_rank_less(best, worst, float(own), float(target))
        out[(q, d)] = (best, worst)
    return out


class Bm25Scores:
    """BM25 scores of the current query only: one float64 per corpus document (8 MB at 1M documents), and a pair's
    query is usually the previous pair's; keeping every query's scores held GBs on large corpora."""

    def __init__(self, bm25) -> None:
        self.bm25 = bm25
        self.query: str | None = None
        self.scores = np.zeros(0)
        self._weights_query: str | None = None
        self._weights: dict[str, float] = {}

    def of(self, q: str, text: str) -> np.ndarray:
        if q != self.query:
            self.query, self.scores = q, self.bm25.scores(text)
        return self.scores

    def weights(self, q: str, text: str) -> dict[str, float]:
        """The BM25 weight of each of the query's terms (:meth:`~diagnose.lexical.BM25Index.term_weights`), kept
        for the current query like its scores."""
        if q != self._weights_query:
            self._weights_query, self._weights = q, self.bm25.term_weights(set(tokenize([text])[0]))
        return self._weights


class _Lexical(NamedTuple):
    """The BM25 and term-overlap evidence of a target in the corpus (all ``None``/empty otherwise), named as the
    :class:`Failure` fields they fill."""

    bm25_rank: int | None = None
    bm25_score: float | None = None
    present_terms: tuple[str, ...] = ()
    missing_terms: tuple[str, ...] = ()
    overlap: float | None = None
    ignored_terms: tuple[str, ...] = ()
    bm25_overlap: float | None = None
    bm25_rank_worst: int | None = None
    weight_share: float | None = None


def _lexical(look: _Lookups, bm25: Bm25Scores, q: str, d: str, text: str) -> _Lexical:

    if (q, d) in look.bm25_known:  # scored with the BM25 baseline, in the same pass
        best, worst, score = look.bm25_known[(q, d)]
    else:
        scores = bm25.of(q, text)
        row = look.corpus_row[d]
        best, worst = bm25_rank_range(scores, row)
        score = float(scores[row])
    own_row = look.corpus_row.get(q) if look.without_query_doc and q != d else None
    if own_row is not None and best is not None:
        own = look.bm25_known[(q, q)][2] if (q, q) in look.bm25_known else float(bm25.of(q, text)[own_row])
        best, worst = _one_rank_less(best, worst, own, score)
    ov = term_overlap(text, "", doc_stems=look.target_stems[d], weights=bm25.weights(q, text))
    return _Lexical(
        best,
        score,
        tuple(ov.present),
        tuple(ov.missing),
        float(ov.overlap_ratio),
        tuple(ov.ignored),
        float(ov.bm25_overlap_ratio),
        worst,
        ov.weight_share,
    )


def _competitors(
    space: VectorSpace, q: str, d: str, ranked: list[str], qg: dict[str, int], has_vec: bool, shown: int
) -> list[Competitor]:
    """The run's top ``shown`` documents with their cosine to the query and to the target."""
    competitors = []
    for r, doc in enumerate(ranked[:shown], start=1):
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
    return competitors


def _duplicate(
    look: _Lookups, top_k: Sequence[Competitor], d: str, qg: dict[str, int], duplicate_cosine: float
) -> tuple[str | None, float | None]:
    """The closest near-duplicate of the target among the top k that is not judged relevant, and its strength
    (1.0 for the same normalised text)."""
    dup_id, dup_cos = None, None
    for c in top_k:
        if (qg.get(c.doc_id) or 0) > 0 or c.doc_id == d or c.doc_id not in look.corpus_row:
            continue
        same_text = look.norm(c.doc_id) == look.norm(d)
        close = c.cosine_target is not None and c.cosine_target >= duplicate_cosine
        strength = 1.0 if same_text else c.cosine_target
        if (same_text or close) and (dup_cos is None or strength > dup_cos):
            dup_id, dup_cos = c.doc_id, strength
    return dup_id, dup_cos


def _pair(
    look: _Lookups,
    bm25: Bm25Scores,
    q: str,
    d: str,
    *,
    k: int,
    thresholds: Thresholds,
    calibrated: float,
    weight_share: float | None = None,
    passage: PassageMatch | None = None,
) -> tuple[PairEvidence, _Lexical, list[Competitor]]:
    """The evidence of the (query ``q``, target ``d``) pair: what the rules read, the lexical evidence, and the
    run's top documents."""
    space = look.space
    text = look.q_text.get(q, "")
    ranked = look.lists.get(q, [])
    qg = look.grades.get(q, {})
    in_corpus = d in look.corpus_row
    has_vec = in_corpus and q in space.query_row
    cosine = space.cosine(q, d) if has_vec else None
    competitors = _competitors(space, q, d, ranked, qg, has_vec, max(k, thresholds.top_shown))
    dup_id, dup_cos = None, None
    lex = _Lexical()
    if in_corpus:
        dup_id, dup_cos = _duplicate(look, competitors[:k], d, qg, thresholds.duplicate_cosine)
        lex = _lexical(look, bm25, q, d, text)
    dense_best, dense_worst = look.dense.get((q, d), (None, None))
    src = look.sources
    filtered = in_corpus and src.filters is not None and src.filters.excludes(q, d)
    ev = PairEvidence(
        doc_id=d,
        k=k,
        in_corpus=in_corpus,
        run_rank=ranked.index(d) + 1 if d in ranked else None,
        run_depth=len(ranked),
        dense_rank=dense_best,
        bm25_rank=lex.bm25_rank,
        cosine=cosine,
        calibrated=calibrated,
        overlap=lex.overlap,
        bm25_overlap=lex.bm25_overlap,
        weight_share=lex.weight_share,
        weight_share_threshold=weight_share,
        duplicate_doc_id=dup_id,
        duplicate_cosine=dup_cos,
        dense_rank_worst=dense_worst,
        bm25_rank_worst=lex.bm25_rank_worst,
        bm25_score=lex.bm25_score,
        kind=src.kind.kind,
        filtered_out=filtered,
        filter_why=src.filters.why(q, d) if filtered else "",
        split_share=look.split.get((q, d)),
        passage=passage,
        split_cosine=(src.split_cosines or {}).get((q, d)) if (q, d) in look.split else None,
        split_rank=(src.split_ranks or {}).get((q, d)) if (q, d) in look.split else None,
        kth_cosine=competitors[k - 1].cosine_query if len(competitors) >= k else None,
    )
    return ev, lex, competitors


# the Failure fields the pair's evidence holds under the same name, copied as they are (the lexical ones, which the
# evidence holds too, come with the terms from _Lexical)
_FROM_EVIDENCE = tuple(n for n in _FAILURE_FIELDS if n in EVIDENCE_FIELDS and n not in _Lexical._fields)


def build_failure(
    look: _Lookups,
    bm25: Bm25Scores,
    q: str,
    d: str,
    g: int,
    *,
    k: int,
    thresholds: Thresholds,
    calibrated: float,
    weight_share: float | None = None,
    passage: PassageMatch | None = None,
) -> Failure:
    """One failed (query ``q``, target ``d`` of grade ``g``) pair: its evidence, class, verdicts and sentence.
    ``weight_share``: the run's calibrated share of the query's BM25 weight
    (:func:`~diagnose.failures.diagnosis.calibrate_words`; None: ``thresholds.min_overlap``). ``passage``: the
    target's window and best passage (:mod:`diagnose.failures.passages`), when the window is known."""
    ev, lex, competitors = _pair(
        look,
        bm25,
        q,
        d,
        k=k,
        thresholds=thresholds,
        calibrated=calibrated,
        weight_share=weight_share,
        passage=passage,
    )
    cls = classify(ev, thresholds)
    kth = ev.kth_cosine
    return Failure(
        query_id=q,
        query_text=look.q_text.get(q, ""),
        grade=g,
        cls=cls,
        margin=(kth - ev.cosine) if kth is not None and ev.cosine is not None else None,
        seed_verdict=seed_rule(ev.cosine, thresholds.seed_cosine),
        calibrated_verdict=seed_rule(ev.cosine, calibrated),
        evidence=evidence_sentence(cls, ev, thresholds),
        recommendation=recommendation(cls, look.sources.kind.kind, thresholds),
        top_retrieved=tuple(competitors),
        **{f: getattr(ev, f) for f in _FROM_EVIDENCE},
        **lex._asdict(),
        **_passage_fields(passage),
    )


def _passage_fields(p: PassageMatch | None) -> dict:
    """The :class:`Failure` fields of the target's window and best passage (None without a known window)."""
    names = ("window_tokens", "target_tokens", "passage_offset", "passage_cosine", "passage_text")
    return {n: getattr(p, n) for n in (*names, "passage_char", "window_char")} if p is not None else {}
