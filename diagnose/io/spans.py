"""Span-based relevance: :func:`locate_references` finds each reference context of a golden set in the corpus and
gives its :class:`~diagnose.data.Span` s; the documents they lie in are the query's relevant documents (grade 1).

Matching, in this order, over each document's ``text`` field (offsets are into it; the title is not searched):

1. **exact**: the context (leading/trailing whitespace stripped) is a substring of the text;
2. **normalised**: equal after Unicode NFKC, case folding and collapsing every run of whitespace to one space
   (offsets mapped back to the original text);
3. **approximate**: a context of at least :data:`MIN_APPROX_WORDS` words whose best-aligned window of the
   normalised text has a similarity >= :data:`APPROX_THRESHOLD` (``rapidfuzz.fuzz.partial_ratio``, 0-100: an
   Indel-distance ratio of the context against the text window of its length) and spans at least
   :data:`APPROX_COVERAGE` of the context's length (partial_ratio aligns the shorter string inside the longer: a
   short document equal to the context's start would otherwise score 100). Candidates are the
   :data:`APPROX_CANDIDATES` documents sharing the most rare words with it. Needs rapidfuzz (extra ``[rag]``).

A context found in several documents (at the first stage that finds it; for approximate matches: every document at
the best score) is **ambiguous**: all count, and they are listed in the validation report. A context found nowhere
is **unmatched**: never dropped, its query keeps a relevant judgement of the placeholder document
``unmatched:QUERY_ID:N`` (N: the context's position), which no run retrieves, so that query stays a golden query
that can only fail, and the report says why.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from diagnose.data import DataError, Span, ValidationReport, fields_dict
from diagnose.io.messages import plural_of, snip
from diagnose.runtime.extras import needs

#: the lowest rapidfuzz ``partial_ratio`` (0-100) accepted as an approximate match
APPROX_THRESHOLD = 90.0
#: contexts shorter than this (in words) are matched exactly or normalised only: short strings match by chance
MIN_APPROX_WORDS = 5
#: the least share of the (normalised) context's length the aligned document window must span for an approximate match
APPROX_COVERAGE = 0.9
#: how many candidate documents (most shared rare words) the approximate stage compares with a context
APPROX_CANDIDATES = 10
#: prefix of the placeholder document id of an unmatched reference context
UNMATCHED_PREFIX = "unmatched:"

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\S+")
MATCH_KINDS = ("exact", "normalised", "approximate", "unmatched")


def normalise_with_offsets(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` NFKC-normalised, case-folded, whitespace runs collapsed to one space, with the original
    ``(start, end)`` of each character of the result (a token whose length normalisation changed maps every
    character to the whole token)."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    prev_end = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        norm = tok.lower() if tok.isascii() else unicodedata.normalize("NFKC", tok).casefold()
        if out:
            out.append(" ")
            starts.append(prev_end)
            ends.append(m.start())
        out.append(norm)
        if len(norm) == len(tok):
            starts.extend(range(m.start(), m.end()))
            ends.extend(range(m.start() + 1, m.end() + 1))
        else:
            starts.extend([m.start()] * len(norm))
            ends.extend([m.end()] * len(norm))
        prev_end = m.end()
    return "".join(out), starts, ends


def normalise(text: str) -> str:
    """The normalised text of :func:`normalise_with_offsets` (without the offsets)."""
    return " ".join(
        t.lower() if t.isascii() else unicodedata.normalize("NFKC", t).casefold() for t in text.split()
    )


class _Index:
    """The corpus texts, their words (normalised) -> documents, and normalised texts computed on demand."""

    def __init__(self, doc_ids: Sequence[str], texts: Sequence[str]) -> None:
        self.doc_ids = list(doc_ids)
        self.texts = [t if isinstance(t, str) else "" for t in texts]
        self.postings: dict[str, list[int]] = {}
        for i, t in enumerate(self.texts):
            for w in set(_WORD.findall(normalise(t))):
                self.postings.setdefault(w, []).append(i)
        self._norm: dict[int, tuple[str, list[int], list[int]]] = {}

    def norm(self, i: int) -> tuple[str, list[int], list[int]]:
        if i not in self._norm:
            self._norm[i] = normalise_with_offsets(self.texts[i])
        return self._norm[i]

    def containing_all(self, words: list[str]) -> list[int] | None:
        """Documents holding every word (the 4 rarest decide), [] when one is nowhere, None without words."""
        if not words:
            return None
        lists = sorted((self.postings.get(w, []) for w in set(words)), key=len)[:4]
        found = set(lists[0])
        for other in lists[1:]:
            found &= set(other)
        return sorted(found)

    def sharing_most(self, words: list[str], n: int) -> list[int]:
        """The ``n`` documents sharing the most inverse-document-frequency weight of ``words``."""
        total = len(self.texts) + 1
        score: Counter[int] = Counter()
        for w in set(words):
            post = self.postings.get(w, [])
            if post and len(post) < total / 2:
                weight = math.log(total / len(post))
                for i in post:
                    score[i] += weight
        return [i for i, _ in score.most_common(n)]


def _interior_words(norm_ref: str) -> list[str]:
    """The words of a context except the first and last (a context cut mid-word has partial words there)."""
    words = _WORD.findall(norm_ref)
    return words[1:-1] if len(words) > 2 else []


def _exact(index: _Index, ref: str, candidates: list[int] | None) -> list[tuple[int, int, int]]:
    docs = range(len(index.texts)) if candidates is None else candidates
    out = []
    for i in docs:
        pos = index.texts[i].find(ref)
        if pos >= 0:
            out.append((i, pos, pos + len(ref)))
    return out


def _normalised(index: _Index, norm_ref: str, candidates: list[int] | None) -> list[tuple[int, int, int]]:
    docs = range(len(index.texts)) if candidates is None else candidates
    out = []
    for i in docs:
        norm, starts, ends = index.norm(i)
        pos = norm.find(norm_ref)
        if pos >= 0 and norm_ref:
            out.append((i, starts[pos], ends[pos + len(norm_ref) - 1]))
    return out


def _approximate(index: _Index, norm_ref: str) -> tuple[list[tuple[int, int, int]], float]:
    """The documents at the best partial_ratio >= the threshold, their aligned offsets, and that score."""
    with needs("Approximate matching of reference contexts"):
        from rapidfuzz import fuzz
    best: list[tuple[int, int, int]] = []
    best_score = 0.0
    for i in index.sharing_most(_WORD.findall(norm_ref), APPROX_CANDIDATES):
        norm, starts, ends = index.norm(i)
        if not norm:
            continue
        al = fuzz.partial_ratio_alignment(norm_ref, norm, score_cutoff=APPROX_THRESHOLD)
        if (
            al is None
            or al.score < best_score
            or al.dest_end - al.dest_start < APPROX_COVERAGE * len(norm_ref)
        ):
            continue  # a document shorter than the context aligns inside it: a part is no match of the whole
        hit = (i, starts[al.dest_start], ends[max(al.dest_end - 1, al.dest_start)])
        if al.score > best_score:
            best, best_score = [hit], al.score
        else:
            best.append(hit)
    return best, best_score


def _locate_one(index: _Index, qid: str, n: int, text: str) -> list[Span]:
    ref = text.strip()
    norm_ref = normalise(ref)
    candidates = index.containing_all(_interior_words(norm_ref))
    stages = (
        ("exact", lambda: _exact(index, ref, candidates)),
        ("normalised", lambda: _normalised(index, norm_ref, candidates)),
    )
    for kind, find in stages:
        hits = find()
        if hits:
            return [Span(qid, n, index.doc_ids[i], s, e, kind) for i, s, e in hits]
    if len(_WORD.findall(norm_ref)) >= MIN_APPROX_WORDS:
        hits, score = _approximate(index, norm_ref)
        if hits:
            return [Span(qid, n, index.doc_ids[i], s, e, "approximate", round(score, 1)) for i, s, e in hits]
    return [Span(qid, n, None, None, None, "unmatched", 0.0)]


def locate_references(
    references: Sequence[tuple[str, int, str]],
    doc_ids: Sequence[str],
    texts: Sequence[str],
    *,
    report: ValidationReport | None = None,
    file: str | None = None,
) -> list[Span]:
    """The :class:`~diagnose.data.Span` s of ``references`` ``(query_id, position, text)`` in the documents
    ``doc_ids`` / ``texts`` (see the module docstring), counted in ``report``."""
    index = _Index(doc_ids, texts)
    spans: list[Span] = []
    for qid, n, text in references:
        spans.extend(_locate_one(index, qid, n, text))
    if report is not None:
        _report_spans(spans, {(q, n): t for q, n, t in references}, report, file)
    return spans


def _report_spans(
    spans: list[Span], texts: dict[tuple[str, int], str], report: ValidationReport, file: str | None
) -> None:
    """The counts of each kind of match (per reference context), ambiguous ones, examples of each."""
    by_ref: dict[tuple[str, int], list[Span]] = {}
    for s in spans:
        by_ref.setdefault((s.query_id, s.reference), []).append(s)
    counts = Counter(v[0].match for v in by_ref.values())
    ambiguous = {k: v for k, v in by_ref.items() if len(v) > 1}
    for kind in MATCH_KINDS:
        report.stats[f"references_{kind}"] = counts.get(kind, 0)
    report.stats["references_ambiguous"] = len(ambiguous)
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in MATCH_KINDS)
    report.add(
        "reference_matching",
        f"{plural_of(len(by_ref), 'reference context')} located in the corpus: {summary}; {len(ambiguous)} ambiguous "
        f"(normalised: NFKC, case, whitespace; approximate: rapidfuzz partial_ratio >= {APPROX_THRESHOLD:g})",
        severity="info",
        file=file,
        examples=[],
    )
    approx = [v[0] for v in by_ref.values() if v[0].match == "approximate"]
    report.add(
        "approximate_reference",
        f"{plural_of(len(approx), 'reference context')} matched only approximately (check them)",
        severity="info",
        file=file,
        count=len(approx),
        examples=[
            f"{s.query_id}#{s.reference} -> {s.doc_id}[{s.start}:{s.end}] (similarity {s.score:g})"
            for s in approx
        ],
    )
    report.add(
        "ambiguous_reference",
        f"{plural_of(len(ambiguous), 'reference context')} found in several documents: every one counts as relevant",
        file=file,
        count=len(ambiguous),
        examples=[f"{q}#{n} in {', '.join(str(s.doc_id) for s in v)}" for (q, n), v in ambiguous.items()],
    )
    unmatched = [k for k, v in by_ref.items() if v[0].match == "unmatched"]
    report.add(
        "unmatched_reference",
        f"{plural_of(len(unmatched), 'reference context')} found in no document (not even approximately): each stays "
        f"judged relevant as the placeholder document '{UNMATCHED_PREFIX}QUERY_ID:N' that no run retrieves, so its "
        "query can only fail there; fix the context or add its document to the corpus",
        file=file,
        count=len(unmatched),
        examples=[f"{q}#{n}: {snip(texts[(q, n)], 60)}" for q, n in unmatched],
    )


def spans_path_for(qrels_path: str | Path) -> Path:
    """Where ``--write-qrels F`` writes the spans: beside ``F``, its suffix replaced: ``qrels.tsv`` ->
    ``qrels.spans.jsonl``."""
    p = Path(qrels_path)
    return p.with_name(p.name.removesuffix(".gz").rsplit(".", 1)[0] + ".spans.jsonl")


def write_spans(spans: Sequence[Span], path: str | Path) -> None:
    """Write ``spans`` as JSONL, one object per span: ``{"query_id", "reference", "doc_id", "start", "end",
    "match", "score"}`` (an unmatched reference: ``doc_id``/``start``/``end`` null)."""
    lines = [json.dumps(fields_dict(s), ensure_ascii=False) + "\n" for s in spans]
    try:
        Path(path).write_text("".join(lines), encoding="utf-8")
    except OSError as e:
        raise DataError(
            f"{path}: cannot write the spans ({e.strerror or e}). Fix: pick a writable path."
        ) from None
