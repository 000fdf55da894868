"""The failure taxonomy's rules: :class:`Thresholds` and :func:`classify` (the rules, in order; the first that
matches wins), the seed rule beside it (:func:`seed_rule`) and each failure's evidence sentence (:func:`evidence_sentence`). Open
this file and :mod:`diagnose.failures.classes` to add a failure class: its record there (id, label, legend, colour,
rule and advice in words, recommendation, remedy, sentence), its rule here at the same place in the order.

The classes, in rule order, with their rules in words: :data:`~diagnose.failures.classes.FAILURE_CLASSES`, and the
docs/taxonomy.md's table generated from them (:func:`class_table`). Beside the class, every failure carries the seed rule
(cosine < 0.75 -> "vocabulary mismatch", else "ranking issue") and the same rule with the model's calibrated
threshold (:func:`seed_rule`).

A rank is a tie range (best, worst): "ranks it within k" means the whole tie group does, ``worst <= k``
(:func:`within`); a target with BM25 score 0 has no BM25 rank (no query term in it), so BM25 never ranks it within k.
The run's kind (:mod:`~diagnose.failures.kind`) changes some rules here (index_gap: exact search *of the run's kind*;
a lexical run's vocabulary_mismatch is the mirror image: BM25 misses it and the target holds few of the query's
words), and some
records' sentences, recommendations and remedies (``FailureClass.by_kind``; :func:`recommendation`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from diagnose import defaults
from diagnose.checks import finite_number, positive_int
from diagnose.failures.classes import CLASS_BY_ID, FAILURE_CLASSES

if TYPE_CHECKING:
    from diagnose.failures.passages import PassageMatch


FailureMode = Literal["hit", "recall"]


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the taxonomy, with the defaults documented in docs/taxonomy.md."""

    duplicate_cosine: float = defaults.DUPLICATE_COSINE
    near_miss_factor: int = 3
    seed_cosine: float = defaults.SEED_COSINE
    calibration_percentile: float = 10.0
    min_calibration_pairs: int = 5
    min_overlap: float = 0.2
    top_shown: int = 10
    diluted_margin: float = defaults.DILUTED_MARGIN

    def __post_init__(self) -> None:
        """Refuse values that would make the taxonomy meaningless (a NaN threshold, a negative cosine for a
        near-duplicate), naming the parameter."""
        ranges = {
            "duplicate_cosine": (0.0, 1.0, False),  # (low, high, low included)
            "seed_cosine": (-1.0, 1.0, True),
            "calibration_percentile": (0.0, 100.0, True),
            "min_overlap": (0.0, 1.0, True),
            "diluted_margin": (0.0, 2.0, True),
        }
        for name, (low, high, low_ok) in ranges.items():
            bracket = "[" if low_ok else "("
            finite_number(
                getattr(self, name),
                name,
                low=low,
                high=high,
                open_low=not low_ok,
                message=f"{name} must be a number in {bracket}{low:g}, {high:g}], got {{value!r}}.",
            )
        for name in ("near_miss_factor", "min_calibration_pairs", "top_shown"):
            positive_int(getattr(self, name), name)

    def near_miss_depth(self, k: int) -> int:
        """The near-miss depth at cutoff ``k``: ``near_miss_factor * k`` (30 at k=10 by default). A target the run
        ranks at k+1 .. this depth is a near miss; the cosine rerank and the cross-encoder rerank reorder the run's
        top this many; the index_gap rule asks whether the run had the target in its top this many. The record texts
        say it as ``{near_miss_factor}k`` ("top 3k")."""
        return self.near_miss_factor * k

    def values(self) -> dict[str, Any]:
        """The thresholds by name, as the records' texts read them (``{near_miss_factor}``, ``{min_overlap:g}``)."""
        return asdict(self)


def recommendation(cls: str, kind: str = "unknown", thresholds: Thresholds = Thresholds()) -> str:  # noqa: B008
    """The recommendation of class ``cls`` for a run of ``kind`` (its record's, :meth:`FailureClass.recommendation_for`),
    with the numbers of ``thresholds`` (the near-miss depth: "top 3k" by default)."""
    return CLASS_BY_ID[cls].recommendation_for(kind).format(**thresholds.values())


#: id -> the recommendation paragraph, with the default thresholds.
RECOMMENDATIONS: dict[str, str] = {c.id: recommendation(c.id) for c in FAILURE_CLASSES}


def within(best: int | None, worst: int | None, k: int) -> bool:
    """Whether a rank given as a tie range (``best``, ``worst``) is within ``k`` whatever the order of the tie
    group: ``worst <= k``. ``worst`` None with a ``best`` means no tie (``worst = best``); both None means no rank
    (a BM25 score of 0, no vector)."""
    worst = best if worst is None else worst
    return worst is not None and worst <= k


@dataclass(frozen=True, kw_only=True)
class PairEvidence:
    """The evidence of one (query, target) pair: everything the rules (:func:`classify`) and the pair's sentence
    (:func:`evidence_sentence`) read, computed once per pair (:func:`diagnose.failures.evidence.build_failure`; the
    definitions of each field: :mod:`diagnose.failures.evidence`). A new class adds its input here and its rule in
    :func:`classify`. Built by keyword; only ``k`` and ``calibrated`` have no default (a hand-built record states
    what its case needs).

    - ``doc_id``: the target; ``k``: the cutoff; ``calibrated``: the model's calibrated cosine threshold.
    - ``in_corpus``: the target is in the corpus (False: ``missing_document``).
    - ``run_rank``: its rank in the run (None: not retrieved; ``run_depth``: how deep the run went for the query).
    - ``dense_rank`` / ``bm25_rank``: the best rank of its tie group by exact cosine / BM25, ``*_worst`` the worst
      (None: no tie); ``bm25_rank`` None when ``bm25_score`` is 0 (None: unknown).
    - ``cosine``: cos(query, target); ``kth_cosine``: cos(query, the run's k-th document) (None: the run
      returned fewer than k, or no vector); ``overlap``: the share of the query's terms in the target (stop words out);
      ``bm25_overlap``: the share over every term BM25 scores, stop words included (the same tokenizer);
      ``weight_share``: the share of the query's BM25 weight in the target (each term BM25 scores weighed by its
      idf), and ``weight_share_threshold`` the run's calibrated share (the 10th percentile over the relevant
      documents the run found; None: ``Thresholds.min_overlap``), which the vocabulary_mismatch rule compares.
    - ``duplicate_doc_id`` / ``duplicate_cosine``: an unjudged near-duplicate of the target in the top k and its
      strength (1.0: the same normalised text); None: none.
    - ``kind``: the run's kind (:mod:`diagnose.failures.kind`).
    - ``filtered_out``: the query's metadata filter excludes the target (:mod:`diagnose.io.filters`), ``filter_why``
      the failing conditions with the document's values.
    - ``split_share``: for a target holding the largest part of a reference span no chunk holds whole
      (:func:`diagnose.failures.split.split_targets`), the share it holds (None: not a split target);
      ``split_cosine``: the query's best cosine with the windows joining it to the neighbours holding the rest
      (:func:`diagnose.failures.split.split_window_cosines`); ``split_rank``: the target's rank when every chunk is
      scored with its neighbours merged (the merge remedy's run, :func:`diagnose.failures.split.merged_run`; None
      beyond its depth or when unknown: the split rule never matches).
    - ``passage``: the target's window and best passage (:class:`~diagnose.failures.passages.PassageMatch`); None
      when the model's window is unknown, and then the truncated and diluted rules never match.
    """

    doc_id: str = ""
    k: int
    calibrated: float
    in_corpus: bool = True
    run_rank: int | None = None
    run_depth: int = 0
    dense_rank: int | None = None
    dense_rank_worst: int | None = None
    bm25_rank: int | None = None
    bm25_rank_worst: int | None = None
    bm25_score: float | None = None
    cosine: float | None = None
    kth_cosine: float | None = None
    overlap: float | None = None
    bm25_overlap: float | None = None
    weight_share: float | None = None
    weight_share_threshold: float | None = None
    duplicate_doc_id: str | None = None
    duplicate_cosine: float | None = None
    kind: str = "unknown"
    filtered_out: bool = False
    filter_why: str = ""
    split_share: float | None = None
    split_cosine: float | None = None
    split_rank: int | None = None
    passage: PassageMatch | None = None

    @property
    def duplicate(self) -> bool:
        """An unjudged near-duplicate of the target is in the top k."""
        return self.duplicate_doc_id is not None

    @property
    def split(self) -> bool:
        """The target holds the largest part of a reference span that no chunk holds whole."""
        return self.split_share is not None

    def values(self) -> dict[str, Any]:
        """The fields by name (shallow), as the sentences' templates read them."""
        return {n: getattr(self, n) for n in EVIDENCE_FIELDS}


#: The fields of :class:`PairEvidence`.
EVIDENCE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(PairEvidence))


def classify(e: PairEvidence, thresholds: Thresholds = Thresholds()) -> str:  # noqa: B008 - frozen
    """The taxonomy's rules in order, on one pair's evidence; the first that matches wins (see the module docstring).
    A rule that asks whether a rank is within k reads the tie range (:func:`within`); ``e.kind``, the run's kind,
    changes the index_gap and vocabulary_mismatch rules; ``thresholds``: the near-miss depth, ``min_overlap`` and
    ``diluted_margin``."""
    k, calibrated, run_rank, passage = e.k, e.calibrated, e.run_rank, e.passage
    if not e.in_corpus:
        return "missing_document"
    if e.filtered_out:
        return "filtered_out"
    if e.duplicate:
        return "label_gap"
    # split only where merging makes it findable (its remedy's run ranks it within k) and the chunk alone is not:
    # a split target that merging leaves beyond k was not missed because of the split (issue 35: the earlier rule,
    # the window's cosine at the calibrated threshold, called targets whose merged ranks were 11 to 41)
    if e.split and within(e.split_rank, None, k) and not within(e.dense_rank, e.dense_rank_worst, k):
        return "split"
    if passage is not None:
        cap, good = passage.capacity, passage.first_good_offset
        beyond = passage.passage_offset >= cap or (good is not None and good >= cap)
        if beyond and passage.target_cosine < calibrated <= passage.passage_cosine:
            return "truncated"
        # diluted: the whole target is not found (exact dense search ranks it beyond k) while its best passage alone
        # would be, scoring at least the run's k-th document (the calibrated threshold without a k-th), and beats
        # the whole by the margin. Relative to the query's own competition: a passage under the calibrated
        # threshold still outranks the k-th document of a query whose answers all score low (issue 35: injected
        # dilution was read as another class 8 times in 10 under the calibrated threshold)
        gain = passage.passage_cosine - passage.target_cosine
        bar = e.kth_cosine if e.kth_cosine is not None else calibrated
        whole_lost = not within(e.dense_rank, e.dense_rank_worst, k)
        if whole_lost and passage.passage_cosine >= bar and gain >= thresholds.diluted_margin:
            return "diluted"
    near_hi = thresholds.near_miss_depth(k)
    if run_rank is not None and k < run_rank <= near_hi:
        return "near_miss"
    dense_in = within(e.dense_rank, e.dense_rank_worst, k)
    bm25_in = within(e.bm25_rank, e.bm25_rank_worst, k)
    own_in = {"lexical": bm25_in, "hybrid": dense_in or bm25_in}.get(e.kind, dense_in)
    if own_in and (run_rank is None or run_rank > near_hi):
        return "index_gap"
    few_words = e.weight_share is not None and e.weight_share < few_words_threshold(e, thresholds)
    dense_low = (e.cosine is not None and e.cosine < calibrated) and not dense_in
    # a lexical run's rule is the mirror image: its own signal (BM25) misses it and the words differ
    mismatch = (not bm25_in and few_words) if e.kind == "lexical" else dense_low and (bm25_in or few_words)
    if mismatch:
        return "vocabulary_mismatch"
    if not dense_in and not bm25_in:
        return "semantic_gap"
    return "ranking_failure"


def few_words_threshold(e: PairEvidence, thresholds: Thresholds = Thresholds()) -> float:  # noqa: B008
    """The share of the query's BM25 weight below which the target "shares few of the query's terms": the run's
    calibrated share (``e.weight_share_threshold``), else ``thresholds.min_overlap``."""
    return e.weight_share_threshold if e.weight_share_threshold is not None else thresholds.min_overlap


def seed_rule(cosine: float | None, threshold: float) -> str:
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


def compared(value: float, against: float, fmt: str = ".3f") -> tuple[str, str]:
    """``value`` and ``against`` as a sentence prints them, side by side: with ``fmt``'s digits, or more when those
    would print two different numbers alike (a cosine of 0.49996 beside a threshold of 0.5 reads "0.500" and
    "0.500" at 3 decimals, as if equal: 0.49996 and 0.50000 at 5), so the printed numbers compare as the numbers
    do. ``fmt``: ``".3f"`` or ``".0%"``-like (the digits are raised up to 9: float32 cosines differ from 1e-7)."""
    kind, digits = fmt[-1], int(fmt[1:-1])
    for d in range(digits, 10):
        a, b = format(value, f".{d}{kind}"), format(against, f".{d}{kind}")
        if a != b or value == against:
            return a, b
    return a, b


def share_text(x: float) -> str:
    """A share as a percentage that never reads 0% or 100% unless it is: "<1%" for a share in (0, 0.005), ">99%"
    in [0.995, 1)."""
    if 0 < x < 0.005:
        return "<1%"
    if 0.995 <= x < 1:
        return ">99%"
    return f"{x:.0%}"


def _bm25_text(e: PairEvidence) -> str:
    """The BM25 part of the sentence: the rank range, or why there is none."""
    if e.bm25_rank is not None:
        return f"BM25 rank {rank_range_text(e.bm25_rank, e.bm25_rank_worst)}"
    if e.bm25_score is None:
        return "BM25 rank n/a"
    if e.bm25_score != 0:  # a score without a rank: not a record build_failure makes; say the number, not "0"
        return f"BM25 rank n/a (score {e.bm25_score:.3g})"
    if e.overlap or e.bm25_overlap:
        return "no BM25 rank (score 0: the query terms in the target carry no BM25 weight)"
    return "no BM25 rank (score 0: no query term in the target)"


def _overlap_text(e: PairEvidence) -> str:
    """The term overlap: the share of the query's terms in the target, and what BM25 sees beside it."""
    if e.overlap is None:
        return "the term overlap is unknown"
    ov = f"{share_text(e.overlap)} of the query terms occur in the target"
    if e.bm25_overlap is not None and e.bm25_overlap > e.overlap:
        # the overlap leaves the query's stop words out, BM25 scores them: say so beside a BM25 score the stop words
        # alone may give (issue: "0% of the query terms" beside a BM25 score of 0.68)
        ov += f" (stop words left out; {share_text(e.bm25_overlap)} of every term BM25 scores)"
    elif e.overlap == 0 and e.bm25_score and e.bm25_overlap is None:
        ov += " (stop words left out, which BM25 scores)"
    if e.weight_share is not None:
        ov += f", {share_text(e.weight_share)} of the query's BM25 weight"
    return ov


def _few_words_text(e: PairEvidence, thresholds: Thresholds) -> str:
    """The few-words branch of the vocabulary_mismatch rule in words: the target's share of the query's BM25 weight
    against the run's calibrated share (or ``min_overlap``), printed so the two compare as the numbers do."""
    threshold = few_words_threshold(e, thresholds)
    if e.weight_share is None:
        return "the share of the query's BM25 weight in the target is unknown"
    share, thr = compared(e.weight_share, threshold, ".0%")
    below = "less than" if e.weight_share < threshold else "not less than"
    if e.weight_share_threshold is None:
        return f"the target holds {share} of the query's BM25 weight, {below} min_overlap ({thr})"
    return (
        f"the target holds {share} of the query's BM25 weight, {below} the {thr} that "
        f"{100 - thresholds.calibration_percentile:g}% of the relevant documents the run found hold"
    )


def _beyond_text(p: PassageMatch) -> str:
    """Where the truncated target's match starts against the tokens the model reads (``capacity``: the window less
    its special tokens), in numbers that say "beyond" only where the offset is."""
    reads = f"the {p.capacity} tokens the model reads (its window of {p.window_tokens} less special tokens)"
    if p.passage_offset >= p.capacity:
        return f"starts at token {p.passage_offset} of {p.target_tokens}, beyond {reads}"
    where = f"starts at token {p.passage_offset} of {p.target_tokens}, within {reads}"
    good = p.first_good_offset
    if good is not None and good >= p.capacity:
        return f"{where}, while every passage at or above the calibrated threshold starts at token {good} or later"
    return where


def evidence_sentence(cls: str, e: PairEvidence, thresholds: Thresholds = Thresholds()) -> str:  # noqa: B008
    """The sentence that says why the pair is in class ``cls``: the class's template (:attr:`FailureClass.evidence`)
    formatted with the evidence's fields, ``{near_hi}`` (the near-miss depth of ``thresholds``) and the phrases below.
    Its numbers cannot contradict its words: a cosine beside its threshold, and a share beside its threshold, are
    printed with the digits that keep their order (:func:`compared`); a share is 0% or 100% only when it is
    (:func:`share_text`); "beyond the window" only for an offset at or past the tokens the model reads; "the words
    tell" only beside a BM25 rank within k (``tests/test_failures.py`` checks each class at the rules' boundaries)."""
    if e.cosine is not None:
        cos, cal = compared(e.cosine, e.calibrated)
    else:
        cos, cal = "n/a", f"{e.calibrated:.3f}"
    base = (
        f"run rank {_rank_text(e.run_rank, e.run_depth)}, exact dense rank "
        f"{rank_range_text(e.dense_rank, e.dense_rank_worst)}, {_bm25_text(e)}, cosine {cos} (calibrated threshold "
        f"{cal})"
    )
    found = "did not retrieve it" if e.run_rank is None else f"ranked it #{e.run_rank}"
    dense, bm25 = (
        rank_range_text(e.dense_rank, e.dense_rank_worst),
        rank_range_text(e.bm25_rank, e.bm25_rank_worst),
    )
    template = CLASS_BY_ID[cls].evidence_for(e.kind)
    # the vocabulary_mismatch rule has two branches: say the one that fired, never "the words tell" beside a BM25
    # rank beyond k
    words = (
        "while the words tell (BM25 ranks it within k)"
        if within(e.bm25_rank, e.bm25_rank_worst, e.k)
        else f"and {_few_words_text(e, thresholds)}"
    )
    split = f"{e.split_share:.0%} of it" if e.split_share is not None else "n/a"
    if e.split_cosine is not None:
        split_window, _ = compared(e.split_cosine, e.calibrated)
    else:
        split_window = "n/a"
    split_rank = _rank_text(e.split_rank)
    passage = e.passage._asdict() if e.passage is not None else {}
    return template.format(
        **e.values(),
        **passage,
        near_hi=thresholds.near_miss_depth(e.k),
        base=base,
        ov=_overlap_text(e),
        found=found,
        dense=dense,
        bm25=bm25,
        split=split,
        split_window=split_window,
        split_rank_text=split_rank,
        words=words,
        few_words=_few_words_text(e, thresholds),
        beyond=_beyond_text(e.passage) if e.passage is not None else "n/a",
    )


def class_table(thresholds: Thresholds = Thresholds()) -> str:  # noqa: B008 - frozen, as in classify()
    """The table of the failure classes in docs/taxonomy.md (Markdown), from the records in rule order: number, id,
    rule and advice, with the numbers of ``thresholds`` in the rules. ``python -m diagnose.docs`` writes it into the
    page and ``tests/test_docs.py`` checks the page holds it."""
    values = thresholds.values()
    lines = ["| # | class id | rule | what to do |", "|---|---|---|---|"]
    for n, c in enumerate(FAILURE_CLASSES, start=1):
        lines.append(f"| {n} | `{c.id}` | {c.rule.format(**values)} | {c.what_to_do.format(**values)} |")
    return "\n".join(lines) + "\n"
