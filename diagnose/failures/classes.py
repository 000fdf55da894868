"""The failure classes, each declared once: one :class:`FailureClass` record per class in :data:`FAILURE_CLASSES`,
in the order of the taxonomy's rules, holding every fact the other modules read (label, legend, colour, the rule and
the advice in words, the recommendation, the remedy, the evidence sentence).

Open this file to add a failure class: write its record here, at its place in the rule order, and its rule in
:func:`diagnose.failures.taxonomy.classify` at the same place (the n-th rule of ``classify`` returns the n-th
record's id; ``tests/test_failures.py`` checks the two orders agree); a new input of the rule is a field of the
evidence record it reads (:class:`diagnose.failures.taxonomy.PairEvidence`, computed in
:mod:`diagnose.failures.evidence`). Its remedy, when it has a new one, is a record of
:data:`diagnose.whatif.registry.REMEDIES` under the record's ``remedy.id``. Everything else follows from the record: the ids, labels
and recommendations (:data:`CLASSES`, :data:`CLASS_LABELS`, :data:`~diagnose.failures.taxonomy.RECOMMENDATIONS`), the charts' colours and
legends (:mod:`diagnose.charts.palette`), the remedy table (:mod:`diagnose.whatif.remedies`), the evidence sentence
(:func:`diagnose.failures.taxonomy.evidence_sentence`) and the class table of docs/taxonomy.md
(:func:`diagnose.failures.taxonomy.class_table`, checked by ``tests/test_docs.py``).

The rules stay as code in ``classify`` (not as a predicate on the record) so the rules read top to bottom in one
function, with one signature for every rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Remedy:
    """A failure class's offline remedy, as :func:`diagnose.whatif.remedies.prove_remedies` runs and reports it.

    ``id``: an id of the remedy registry, :data:`diagnose.whatif.registry.REMEDIES`, which says what the id needs, how
    its run is built, why it cannot run and what it costs (``"judge"`` and ``"none"`` run nothing; ``advice`` says what
    to do instead). ``text``: the remedy as the remedy table shows it, in the class's words (``{depth}`` = the
    near-miss depth, :meth:`~diagnose.failures.taxonomy.Thresholds.near_miss_depth`; ``{rrf_k}`` = the RRF constant).
    ``measured_by``: the id of a remedy another command measures on the data (``"finetune"``: ``diagnose
    finetune``); when its result is given to the remedy matrix, the matrix's column of that id is the class's own
    remedy and its sentence cites the result.
    """

    id: str
    text: str
    advice: str = ""
    measured_by: str = ""


@dataclass(frozen=True)
class ForKind:
    """What changes in a class when the run is of a given kind (:mod:`diagnose.failures.kind`): ``None`` keeps the
    class's own text. ``evidence`` is a template like :attr:`FailureClass.evidence`."""

    recommendation: str | None = None
    remedy: Remedy | None = None
    evidence: str | None = None


@dataclass(frozen=True)
class FailureClass:
    """One failure class and every fact about it.

    - ``id``: the stable id of the JSON, the CSV and the API (``Failure.cls``).
    - ``label``: the class in a table or a heading ("Near miss").
    - ``legend``: the label with, in brackets, what it means: the charts' and the map's legends.
    - ``color``: its colour on every chart and map (Okabe-Ito, colour-blind-safe).
    - ``rule``: its rule in words, as the class table states it (``{field}`` = a field of
      :class:`~diagnose.failures.Thresholds`, ``{near_miss_factor}k`` the near-miss depth).
    - ``what_to_do``: the advice in a few words (the class table).
    - ``recommendation``: the paragraph every failure of the class carries, a template like ``rule``
      (``{near_miss_factor}k``: the near-miss depth), formatted by :func:`diagnose.failures.taxonomy.recommendation`.
    - ``remedy``: its offline remedy (:class:`Remedy`): an id of the remedy registry
      (:data:`diagnose.whatif.registry.REMEDIES`) and the class's words for it.
    - ``evidence``: the template of the sentence saying why a pair is in the class, formatted with the fields of the
      pair's evidence (``doc_id``, ``k``, ``near_hi``, ``run_rank``, ``dense_rank``, ``duplicate_doc_id``,
      ``duplicate_cosine``, ...) and ``{base}`` (the ranks and the cosine), ``{ov}`` (the term overlap), ``{found}``
      (what the run did with the target), ``{dense}`` / ``{bm25}`` (the exact dense / BM25 rank as a tie range,
      "#3" or "#3–5"): :func:`diagnose.failures.taxonomy.evidence_sentence`.
    - ``by_kind``: run kind (``"lexical"``, ``"hybrid"``, ...) -> :class:`ForKind`, where the run's kind changes the
      recommendation, the remedy or the sentence (a lexical run's vocabulary mismatch is not remedied by fusing it
      with BM25). Read through :meth:`recommendation_for`, :meth:`remedy_for`, :meth:`evidence_for`.
    """

    id: str
    label: str
    legend: str
    color: str
    rule: str
    what_to_do: str
    recommendation: str
    remedy: Remedy
    evidence: str
    by_kind: Mapping[str, ForKind] = field(default_factory=dict)

    @property
    def phrase(self) -> str:
        """The label inside a sentence: its first letter in lower case ("vocabulary mismatch"), unless it starts
        with an acronym."""
        return self.label if self.label[:2].isupper() else self.label[:1].lower() + self.label[1:]

    def recommendation_for(self, kind: str = "unknown") -> str:
        """The recommendation's template for a run of ``kind`` (``{near_miss_factor}`` unformatted)."""
        return _pick(self.by_kind.get(kind), "recommendation") or self.recommendation

    def remedy_for(self, kind: str = "unknown") -> Remedy:
        """The offline remedy for a run of ``kind``."""
        return _pick(self.by_kind.get(kind), "remedy") or self.remedy

    def evidence_for(self, kind: str = "unknown") -> str:
        """The evidence sentence's template for a run of ``kind``."""
        return _pick(self.by_kind.get(kind), "evidence") or self.evidence


def _pick(variant: ForKind | None, name: str):  # noqa: ANN202 - str or Remedy
    return None if variant is None else getattr(variant, name)


_NO_OFFLINE_REMEDY = "no offline remedy"
_RERANK = Remedy("rerank", "cosine rerank of the top {depth}")
#: BM25 fused with the run: the lexical signal a dense run lacks.
_HYBRID = Remedy("hybrid", "hybrid (RRF k={rrf_k} of the run and BM25)")

#: The failure classes in rule order: the first whose rule matches wins.
FAILURE_CLASSES: tuple[FailureClass, ...] = (
    FailureClass(
        id="missing_document",
        label="Missing document",
        legend="Missing document (not in the corpus)",
        color="#000000",
        rule="the target id is not in the corpus",
        what_to_do="fix the data: re-ingest the document or correct the golden set",
        recommendation=(
            "The golden set points at a document id that is not in the corpus. Fix the data before judging the "
            "retriever: the document was deleted, renamed or never ingested, or the qrels use another id scheme "
            "(chunk ids vs document ids). Re-ingest it or correct the golden set."
        ),
        remedy=Remedy(
            "none", _NO_OFFLINE_REMEDY, "fix the data: re-ingest the document or correct the qrels"
        ),
        evidence="Document {doc_id!r} is judged relevant but is not in the corpus.",
    ),
    FailureClass(
        id="filtered_out",
        label="Filtered out",
        legend="Filtered out (the query's metadata filter excludes it)",
        color="#882255",  # Paul Tol's wine: Okabe-Ito has no colour left that reads on white
        rule="the query's metadata filter (--filter-field, --filters) excludes the target",
        what_to_do="fix the metadata or the filter: the search never sees the document",
        recommendation=(
            "The query's metadata filter excludes the target, so no retriever behind that filter can return it, "
            "whatever the model or the index. Check the document's metadata (a wrong or missing tenant, date, "
            "language, access group) and the filter the application builds for this query (too narrow, the wrong "
            "field); compare recall@k with and without the filter."
        ),
        remedy=Remedy(
            "unfiltered",
            "the unfiltered search (exact dense search without the metadata filter)",
            "fix the document's metadata or relax the filter",
        ),
        evidence="The query's metadata filter excludes the target {doc_id!r}: {filter_why}; {base}.",
        by_kind={
            # the search the run does, without the filter: a dense search cannot stand in for a lexical engine
            # (injected faults: it recovered 1 of 3 a lexical run's filter excluded on the demo)
            "lexical": ForKind(
                remedy=Remedy(
                    "unfiltered",
                    "the unfiltered search (this tool's BM25 without the metadata filter)",
                    "fix the document's metadata or relax the filter",
                )
            ),
        },
    ),
    FailureClass(
        id="label_gap",
        label="Label gap",
        legend="Label gap (unjudged near-duplicate retrieved)",
        color="#CC79A7",
        rule=(
            "a top-k document not judged relevant is a near-duplicate of the target (cosine ≥ {duplicate_cosine:g}, "
            "or the same normalised text)"
        ),
        what_to_do="the golden set is incomplete: judge the duplicate, deduplicate the corpus",
        recommendation=(
            "The run retrieved a near-duplicate of the target that nobody judged. The golden set is probably "
            "incomplete rather than the retriever wrong: review the duplicate and add it to the qrels, and "
            "deduplicate the corpus (archived copies, old versions) so that the index holds one version."
        ),
        remedy=Remedy(
            "judge", "judge it", "not retrieval failures: judge the near-duplicates the run retrieved"
        ),
        evidence=(
            "The run's top {k} holds {duplicate_doc_id!r}, a near-duplicate of the target (cosine "
            "{duplicate_cosine:.3f}), which the golden set does not judge relevant."
        ),
    ),
    FailureClass(
        id="split",
        label="Split answer",
        legend="Split answer (the reference crosses a chunk boundary)",
        color="#AA4499",  # Paul Tol's purple: Okabe-Ito has no colour left that reads on white
        rule=(
            "the query's reference span crosses chunk boundaries (no chunk holds it whole), the target is the chunk "
            "holding its largest part, exact dense search does not rank the chunk alone within k, and with every "
            "chunk scored with its neighbours merged (the merge remedy) it is ranked within k: merged, the answer "
            "is found (needs reference spans, chunk offsets and the model)"
        ),
        what_to_do="re-chunk with overlap or larger chunks, or retrieve each chunk with its neighbours",
        recommendation=(
            "The chunker cut the answer: no chunk holds the reference passage whole, and the chunk holding most of "
            "it was missed; with part of the answer, its embedding and its words match the question less, while the "
            "two chunks put back together match it as well as the answers this model does find. Re-chunk "
            "with an overlap about as long as your answers, split on sentence or paragraph boundaries, use larger "
            "chunks, or retrieve each chunk with its neighbours (a parent-document or sentence-window retriever)."
        ),
        remedy=Remedy("merge", "each chunk scored with its neighbours merged (exact dense search)"),
        evidence=(
            "The reference span crosses a chunk boundary and no chunk holds it whole; the target holds its largest "
            "part ({split}) and the run {found}, while with every chunk scored with its neighbours merged it ranks "
            "{split_rank_text}, within k={k} (the window of it and its neighbour, which holds the span whole, has "
            "cosine {split_window}); {base}."
        ),
    ),
    FailureClass(
        id="truncated",
        label="Truncated",
        legend="Truncated (the match lies beyond the model's window)",
        color="#332288",  # Paul Tol's indigo: Okabe-Ito has no colour left that reads on white
        rule=(
            "the whole target's cosine is below the calibrated threshold, its best-matching passage reaches it, and "
            "that passage, or every passage at or above the threshold, starts beyond the model's window (token "
            "offset ≥ window − special tokens)"
        ),
        what_to_do="chunk the documents into passages that fit the window, or use a model with a longer window",
        recommendation=(
            "The part of the target that answers the query lies beyond the embedding model's window: the model "
            "never read it, so the target's vector does not hold it. Chunk the documents into passages that fit the "
            "window (and rank documents by their best passage), or use a model with a longer window; a reranker or "
            "fine-tuning cannot recover text the model never reads."
        ),
        remedy=Remedy("passages", "max-sim over passages that fit the model's window"),
        evidence=("The best-matching passage (cosine {passage_cosine:.3f}) {beyond}; {base}."),
    ),
    FailureClass(
        id="diluted",
        label="Diluted",
        legend="Diluted (one passage matches, the whole document does not)",
        color="#999933",  # Paul Tol's olive: Okabe-Ito has no colour left that reads on white
        rule=(
            "exact dense search does not rank the whole target within k, and a passage within the model's window "
            "has cosine ≥ that of the run's k-th document (the calibrated threshold when the run has fewer) and ≥ "
            "the whole target's cosine + {diluted_margin:g}"
        ),
        what_to_do="split long documents into passages (chunking), rank documents by their best passage",
        recommendation=(
            "One passage of the target matches the query well, but the rest of the document is about other things "
            "and dilutes the whole document's vector. Index smaller passages (chunk by section or a few sentences) "
            "and rank documents by their best passage, or split the page by topic."
        ),
        remedy=Remedy("passages", "max-sim over passages that fit the model's window"),
        evidence=(
            "A passage at token {passage_offset} matches the query at cosine {passage_cosine:.3f}, the whole target "
            "at {target_cosine:.3f}: the rest of the document dilutes it; {base}."
        ),
    ),
    FailureClass(
        id="near_miss",
        label="Near miss",
        legend="Near miss (ranked just below k)",
        color="#E69F00",
        rule="the run ranked the target at k+1 … {near_miss_factor}k",
        what_to_do="a ranking problem: rerank the top {near_miss_factor}k or raise k",
        recommendation=(
            "The run found the target but ranked it just below k: a ranking problem, not a recall problem. A "
            "cross-encoder reranker over the top {near_miss_factor}k candidates, or a larger k passed to the generator, will "
            "likely recover it. Check what the documents that beat it have in common (boilerplate, hub documents)."
        ),
        remedy=_RERANK,
        evidence="The run ranked the target #{run_rank}, just below k={k} (within {near_hi}); {base}.",
        by_kind={
            "dense": ForKind(
                recommendation=(
                    "The run found the target but ranked it just below k: a ranking problem, not a recall problem. "
                    "A dense run is already ordered by the model's cosine, so ordering its candidates again by it "
                    "cannot move the target: add a signal the run lacks, BM25 fused with the run (hybrid, "
                    "reciprocal rank fusion) or a cross-encoder reranker over the top {near_miss_factor}k, or pass "
                    "a larger k to the generator."
                ),
                remedy=_HYBRID,
            ),
        },
    ),
    FailureClass(
        id="index_gap",
        label="Index gap",
        legend="Index gap (exact search finds it, the run does not)",
        color="#56B4E9",
        rule=(
            "exact search of the run's kind (dense; BM25 for a lexical run; either for a hybrid run) ranks the target "
            "within k, the run did not have it in its top {near_miss_factor}k"
        ),
        what_to_do=(
            "the production index differs from exact search: ANN recall, filters, stale index, chunking; for a "
            "lexical run analyzer, stemming, fields, or the document missing from the index"
        ),
        recommendation=(
            "Exact search with this embedding model ranks the target within k, but the production run did not "
            "retrieve it. The retriever differs from exact search: approximate-index recall (raise "
            "nprobe/ef_search), metadata filters, a stale index missing the document, or chunking that cut the "
            "relevant passage. Compare the index's settings with an exact search on this query."
        ),
        remedy=Remedy("dense", "exact dense search"),
        evidence="Exact dense search ranks the target {dense} (within k={k}) but the run {found}; {base}.",
        by_kind={
            "lexical": ForKind(
                recommendation=(
                    "This tool's BM25 ranks the target within k, but the run did not retrieve it in its top {near_miss_factor}k: the "
                    "run's lexical index differs from BM25 over title + text. Check the analyzer (tokenizer, stop "
                    "words, stemming), the fields indexed (title, body, boosts), the BM25 parameters, and whether the "
                    "document is in the index."
                ),
                remedy=Remedy("bm25", "this tool's BM25 (the BM25 baseline replaces the run)"),
                evidence="This tool's BM25 ranks the target {bm25} (within k={k}) but the lexical run {found}; {base}.",
            ),
            "hybrid": ForKind(
                recommendation=(
                    "Exact dense search or BM25 ranks the target within k, but the hybrid run did not retrieve it in "
                    "its top {near_miss_factor}k: one of its indexes misses it (approximate-index recall, a stale index, filters, "
                    "analyzer or field differences) or its fusion drops it. Compare each component's list with the "
                    "exact search on this query."
                ),
                remedy=Remedy("hybrid_baseline", "the hybrid baseline (RRF of BM25 and exact dense search)"),
                evidence=(
                    "Exact dense search or BM25 ranks the target within k={k} but the hybrid run {found}; {base}."
                ),
            ),
        },
    ),
    FailureClass(
        id="vocabulary_mismatch",
        label="Vocabulary mismatch",
        legend="Vocabulary mismatch (different words)",
        color="#009E73",
        rule=(
            "cosine below the calibrated threshold and dense search not ranking it within k, while BM25 ranks it "
            "within k or the target holds few of the query's words: a share of the query's BM25 weight (its terms "
            "weighed by idf) below the {calibration_percentile:g}th percentile of that share over the relevant "
            "documents the run found (min_overlap = {min_overlap:g} with too few of them); for a lexical run the "
            "mirror image: BM25 not ranking it within k and the target holding few of the query's words"
        ),
        what_to_do="hybrid retrieval (BM25 + dense, RRF), query expansion, fine-tuning; for a lexical run dense retrieval",
        recommendation=(
            "The query and the target use different words for the same thing (user words vs document jargon, "
            "or exact identifiers the embedding model does not understand). Add a lexical signal (hybrid BM25 + "
            "dense with reciprocal rank fusion), expand queries with synonyms or an LLM rewrite, or fine-tune the "
            "embedding model on pairs from your domain."
        ),
        remedy=_HYBRID,
        evidence="The embedding model scores the target low {words}: {base}; {ov}.",
        by_kind={
            "lexical": ForKind(
                recommendation=(
                    "The query and the target use different words for the same thing, and a lexical run only "
                    "matches words while the embedding model sees the match. Add a dense signal: dense retrieval, or "
                    "a hybrid that lets a document found by dense search alone reach the top k (a weighted fusion, or "
                    "dense candidates added before a reranker; plain reciprocal rank fusion favours documents both "
                    "lists hold); or expand the queries (synonyms, an LLM rewrite) or the documents (doc2query)."
                ),
                remedy=Remedy("dense", "dense retrieval (exact dense search replaces the run)"),
                evidence="BM25 does not rank the target within k={k}: {few_words}; {base}; {ov}.",
            ),
        },
    ),
    FailureClass(
        id="semantic_gap",
        label="Semantic gap",
        legend="Semantic gap (neither dense nor BM25 finds it)",
        color="#0072B2",
        rule="neither dense nor BM25 ranks it within k",
        what_to_do="fine-tune the embedding model on in-domain pairs, enrich documents",
        recommendation=(
            "Neither dense nor lexical search finds the target within k: the model does not know this domain and "
            "the words do not overlap. Fine-tune the embedding model on in-domain (query, document) pairs, enrich "
            "the documents (titles, summaries, hypothetical questions), or check whether the judgement is right."
        ),
        remedy=Remedy(
            "none",
            _NO_OFFLINE_REMEDY,
            "fine-tune the embedding model or enrich the documents",
            measured_by="finetune",
        ),
        evidence="Neither dense nor BM25 ranks the target within k={k}: {base}; {ov}.",
    ),
    FailureClass(
        id="ranking_failure",
        label="Ranking failure",
        legend="Ranking failure (findable but outranked)",
        color="#D55E00",
        rule="everything else: findable, but outranked",
        what_to_do="look at the documents that beat it (hubs?), rerank, tune fusion",
        recommendation=(
            "The target is findable but other documents outrank it. Look at the documents that beat it: if they "
            "are generic hubs, down-weight or remove them; otherwise add a reranker or tune the fusion weights."
        ),
        remedy=_RERANK,
        evidence="The target is findable but outranked: {base}.",
        by_kind={
            "lexical": ForKind(
                recommendation=(
                    "The target is findable but other documents outrank it, beyond the run's top "
                    "{near_miss_factor}k, while exact dense search ranks it within k: a rerank of the run's "
                    "candidates cannot reach it. Add the dense signal: the hybrid of BM25 and dense search, or "
                    "dense retrieval."
                ),
                remedy=Remedy("hybrid_baseline", "the hybrid baseline (RRF of BM25 and exact dense search)"),
            ),
            "dense": ForKind(
                recommendation=(
                    "The target is findable but other documents outrank it, beyond the run's top "
                    "{near_miss_factor}k, while BM25 finds it: a dense run's candidates ordered again by the same "
                    "cosine cannot reach it. Fuse BM25 with the run (hybrid); look at the documents that beat it: "
                    "if they are generic hubs, down-weight or remove them."
                ),
                remedy=_HYBRID,
            ),
        },
    ),
)

#: id -> record.
CLASS_BY_ID: dict[str, FailureClass] = {c.id: c for c in FAILURE_CLASSES}

# Views of the records, by the names the rest of the package and the API have always used.
#: The stable class ids, in rule order.
CLASSES: tuple[str, ...] = tuple(CLASS_BY_ID)
#: id -> label ("Near miss").
CLASS_LABELS: dict[str, str] = {c.id: c.label for c in FAILURE_CLASSES}
