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
a lexical run's vocabulary_mismatch is the mirror image: BM25 misses it, dense search ranks it within 3k), and some
records' sentences, recommendations and remedies (``FailureClass.by_kind``; :func:`recommendation`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

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
    filtered_out: bool = False,
    split: bool = False,
    passage: PassageMatch | None = None,
    split_cosine: float | None = None,
) -> str:
    """The taxonomy's rules in order; the first that matches wins (see the module docstring). ``dense_rank`` /
    ``bm25_rank`` are the best ranks of the target's tie groups, ``*_worst`` their worst (None: no tie); a rule
    that asks whether a rank is within k reads :func:`within`. ``kind``: the run's kind (the index_gap and
    vocabulary_mismatch rules). ``filtered_out``: the query's metadata filter excludes the target
    (:mod:`diagnose.io.filters`).
    ``split``: the target holds the largest part of a reference span that no chunk
    holds whole (:func:`diagnose.failures.split.split_targets`); ``split_cosine``: the query's best cosine with the
    windows joining it to the neighbours holding the span's other parts
    (:func:`diagnose.failures.split.split_window_cosines`; None when unknown: the split rule then never matches).
    ``passage``: the target's window and best passage
    (:class:`~diagnose.failures.passages.PassageMatch`); None when the model's window is unknown, and then the
    truncated and diluted rules never match."""
    if not in_corpus:
        return "missing_document"
    if filtered_out:
        return "filtered_out"
    if duplicate:
        return "label_gap"
    if split and split_cosine is not None and split_cosine >= calibrated:
        return "split"
    if passage is not None:
        cap, good = passage.capacity, passage.first_good_offset
        beyond = passage.passage_offset >= cap or (good is not None and good >= cap)
        if beyond and passage.target_cosine < calibrated <= passage.passage_cosine:
            return "truncated"
        gain = passage.passage_cosine - passage.target_cosine
        low = passage.target_cosine < calibrated
        if low and passage.passage_cosine >= calibrated and gain >= thresholds.diluted_margin:
            return "diluted"
    near_hi = thresholds.near_miss_depth(k)
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


def _bm25_text(e: PairEvidence) -> str:
    """The BM25 part of the sentence: the rank range, or why there is none."""
    if e.bm25_rank is not None:
        return f"BM25 rank {rank_range_text(e.bm25_rank, e.bm25_rank_worst)}"
    if e.bm25_score is None:
        return "BM25 rank n/a"
    if e.overlap:
        return "no BM25 rank (score 0: the query terms in the target carry no BM25 weight)"
    return "no BM25 rank (score 0: no query term in the target)"


class PairEvidence(NamedTuple):
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
    filtered_out: bool = False
    filter_why: str = ""  # the failing conditions with the document's values (QueryFilters.why)
    split_share: float | None = (
        None  # the share of a split reference span the target holds (split targets only)
    )
    passage: PassageMatch | None = None
    split_cosine: float | None = (
        None  # the query's cosine with the split target's window (split targets only)
    )


def evidence_sentence(cls: str, e: PairEvidence) -> str:
    """The sentence that says why the pair is in class ``cls``."""
    cos = f"{e.cosine:.3f}" if e.cosine is not None else "n/a"
    base = (
        f"run rank {_rank_text(e.run_rank, e.run_depth)}, exact dense rank "
        f"{rank_range_text(e.dense_rank, e.dense_rank_worst)}, {_bm25_text(e)}, cosine {cos} (calibrated threshold "
        f"{e.calibrated:.3f})"
    )
    ov = f"{e.overlap:.0%} of the query terms occur in the target" if e.overlap is not None else ""
    found = "did not retrieve it" if e.run_rank is None else f"ranked it #{e.run_rank}"
    dense, bm25 = (
        rank_range_text(e.dense_rank, e.dense_rank_worst),
        rank_range_text(e.bm25_rank, e.bm25_rank_worst),
    )
    template = CLASS_BY_ID[cls].evidence_for(e.kind)
    split = f"{e.split_share:.0%} of it" if e.split_share is not None else "n/a"
    split_window = f"{e.split_cosine:.3f}" if e.split_cosine is not None else "n/a"
    passage = e.passage._asdict() if e.passage is not None else {}
    return template.format(
        **e._asdict(),
        **passage,
        base=base,
        ov=ov,
        found=found,
        dense=dense,
        bm25=bm25,
        split=split,
        split_window=split_window,
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
