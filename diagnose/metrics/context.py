"""Context precision and context recall at k from reference spans, without an LLM.

What a RAG generator reads is the text of the top k retrieved pieces (chunks, or whole documents). Given where the
reference contexts lie in the corpus (:class:`~diagnose.data.Span`, mapped by :mod:`diagnose.io.spans`):

- ``context_precision@k`` = (tokens of the top k pieces that lie in a reference span) / (tokens of the top k
  pieces): how much of what the generator reads is answer text. A token read twice (two overlapping chunks)
  counts twice, on both sides: it was sent twice.
- ``context_recall@k`` = (tokens of the reference contexts covered by the top k pieces) / (tokens of the reference
  contexts): how much of the answer text the generator gets. Each reference context counts once: one found in
  several documents (ambiguous) counts at its best-covered location (ties: the first), so a duplicated passage
  need not be retrieved twice; the precision side counts every location.

**Tokens** are the word tokens of :data:`TOKEN` (runs of Unicode word characters, ``\\w+``: punctuation and
whitespace are not tokens), not a model's sub-words: the numbers need no model, and a chunking measured in the
model's tokens is compared in one unit across sizes. A token lies in a range when it shares at least one character
with it (a span that starts mid-word takes the whole word). Offsets are into the document's ``text`` field (the
title is not part of any span, see :mod:`diagnose.io.spans`); a whole document retrieved is the piece
``(doc_id, 0, len(text))`` (:func:`whole_documents`); over a chunk corpus with offsets, where the spans lie in the
documents rebuilt from the chunks, a chunk retrieved is the piece ``(its document, start, end)``
(:func:`chunk_pieces`): what the generator is sent is the chunks, measured where they lie in their documents.

Edge cases: a query with no piece scores 0 on both; a query whose references were all unmatched (found in no
document: nothing to cover) scores 0 on both, so it can only fail, as it does in the id-based metrics, and
``unmatched`` counts them. Without spans, :func:`document_spans` makes each relevant document's whole text the
reference (grade > 0), so the metrics become the share of retrieved text that comes from relevant documents and
the share of the relevant documents' text retrieved. Per query, then the mean over the queries that have
references (the golden queries), like every metric here.

**Beside RAGAS.** RAGAS' ``context_precision`` and ``context_recall`` carry the same names but ask an LLM judge:
its precision is a rank-weighted mean of per-chunk verdicts "was this chunk useful for the reference answer?"
(a chunk is all or nothing, position matters, like average precision), its recall is the share of the reference
answer's *claims* the judge can attribute to the retrieved contexts. Here both are token shares of text that is
located, deterministic and free: a chunk that holds half an answer counts half; rank inside the top k does not
matter; text the judge would find relevant but that no reference context marks counts as noise; and a paraphrase
of the answer in another passage is not credited. Use these to compare chunkings and retrievers on one golden set
(they are reproducible to the token); use an LLM judge when references are sparse or answers are synthesised from
text the references do not hold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from diagnose.checks import positive_int
from diagnose.data import ChunkMap, Qrels, Span
from diagnose.runtime.lazy import pandas as pd

#: The word tokenizer of the token counts: runs of Unicode word characters.
TOKEN = re.compile(r"\w+")

Piece = tuple[str, int, int]  # (doc_id, start, end): character offsets into the document's text


def token_bounds(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``(starts, ends)`` character offsets of the :data:`TOKEN` s of ``text`` (int64 arrays)."""
    pos = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    arr = np.asarray(pos, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def count_tokens(text: str) -> int:
    """How many :data:`TOKEN` s ``text`` holds."""
    return sum(1 for _ in TOKEN.finditer(text))


def _token_range(bounds: tuple[np.ndarray, np.ndarray], start: int, end: int) -> tuple[int, int]:
    """The tokens ``[i, j)`` sharing a character with ``[start, end)``."""
    starts, ends = bounds
    return int(np.searchsorted(ends, start, side="right")), int(np.searchsorted(starts, end, side="left"))


def document_spans(qrels: Qrels, lengths: Mapping[str, int]) -> list[Span]:
    """Each relevant document (grade > 0) of ``qrels`` as one reference span over its whole text (``lengths``:
    doc id -> length of its text); a relevant document not in ``lengths`` is an unmatched reference."""
    rel = qrels.df[qrels.df["relevance"] > 0]
    out = []
    for n, (q, d) in enumerate(zip(rel["query_id"].astype(str), rel["doc_id"].astype(str), strict=True)):
        size = lengths.get(d)
        out.append(
            Span(q, n, d, 0, size, "exact") if size is not None else Span(q, n, None, None, None, "unmatched")
        )
    return out


@dataclass(frozen=True)
class ContextScores:
    """``per_query``: index ``query_id`` (the queries with references), columns ``context_precision@k``,
    ``context_recall@k``, ``tokens@k`` (tokens of the top k pieces). ``aggregate``: their means.
    ``unmatched``: queries whose references were all unmatched (scored 0)."""

    k: int
    per_query: pd.DataFrame
    aggregate: dict[str, float]
    unmatched: tuple[str, ...] = ()


class _Docs:
    """Token bounds of the documents' texts, computed once per document (a document not in ``texts``: none)."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = texts
        self._bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def bounds(self, doc_id: str) -> tuple[np.ndarray, np.ndarray]:
        if doc_id not in self._bounds:
            self._bounds[doc_id] = token_bounds(self.texts.get(doc_id, ""))
        return self._bounds[doc_id]


def _one_query(docs: _Docs, pieces: Sequence[Piece], spans: Sequence[Span]) -> tuple[float, float, int]:
    """``(precision, recall, tokens)`` of one query's top-k ``pieces`` against its matched ``spans``."""
    in_ref: dict[str, np.ndarray] = {}
    for s in spans:
        b = docs.bounds(s.doc_id)
        mask = in_ref.setdefault(s.doc_id, np.zeros(len(b[0]), dtype=bool))
        i, j = _token_range(b, s.start, s.end)
        mask[i:j] = True
    covered: dict[str, np.ndarray] = {}
    sent = inside = 0
    for doc, start, end in pieces:
        b = docs.bounds(doc)
        i, j = _token_range(b, start, end)
        sent += j - i
        if doc in in_ref:
            inside += int(in_ref[doc][i:j].sum())
        covered.setdefault(doc, np.zeros(len(b[0]), dtype=bool))[i:j] = True
    best: dict[
        int, tuple[int, int]
    ] = {}  # reference -> (covered tokens, tokens) at its best-covered location
    for s in spans:
        i, j = _token_range(docs.bounds(s.doc_id), s.start, s.end)
        hit = int(covered[s.doc_id][i:j].sum()) if s.doc_id in covered else 0
        prev = best.get(s.reference)
        if prev is None or hit * max(prev[1], 1) > prev[0] * max(j - i, 1):
            best[s.reference] = (hit, j - i)
    ref_tokens = sum(t for _, t in best.values())
    precision = inside / sent if sent else 0.0
    recall = sum(h for h, _ in best.values()) / ref_tokens if ref_tokens else 0.0
    return precision, recall, sent


def context_scores(
    pieces: Mapping[str, Sequence[Piece]],
    spans: Sequence[Span],
    texts: Mapping[str, str],
    k: int,
) -> ContextScores:
    """Context precision and recall at ``k`` (module docstring) of ``pieces`` (query id -> its retrieved
    ``(doc_id, start, end)`` in rank order; the first ``k`` are read) against ``spans`` (the golden set's
    :attr:`Qrels.spans`, or :func:`document_spans`), with ``texts`` (doc id -> the document's text field)."""
    k = positive_int(k, "k")
    by_query: dict[str, list[Span]] = {}
    for s in spans:
        by_query.setdefault(str(s.query_id), [])
        if s.doc_id is not None:
            by_query[str(s.query_id)].append(s)
    docs = _Docs(texts)
    rows = []
    for qid, matched in by_query.items():
        top = list(pieces.get(qid, ()))[:k]
        rows.append((qid, *_one_query(docs, top, matched)))
    cols = [f"context_precision@{k}", f"context_recall@{k}", f"tokens@{k}"]
    per_query = pd.DataFrame(rows, columns=["query_id", *cols]).set_index("query_id")
    aggregate = {c: float(per_query[c].mean()) if len(per_query) else 0.0 for c in cols}
    unmatched = tuple(q for q, m in by_query.items() if not m)
    return ContextScores(k, per_query, aggregate, unmatched)


def whole_documents(run_top: pd.DataFrame, texts: Mapping[str, str]) -> dict[str, list[Piece]]:
    """A document run's ranked lists (``query_id``, ``doc_id``, ``rank`` rows) as whole-document pieces
    ``(doc_id, 0, len(text))``; a document missing from ``texts`` is a piece without tokens."""
    out: dict[str, list[Piece]] = {}
    ranked = run_top.sort_values(["query_id", "rank"], kind="mergesort")
    for q, d in zip(ranked["query_id"].astype(str), ranked["doc_id"].astype(str), strict=True):
        out.setdefault(q, []).append((d, 0, len(texts.get(d, ""))))
    return out


def chunk_pieces(run_top: pd.DataFrame, cmap: ChunkMap) -> dict[str, list[Piece]]:
    """A chunk run's ranked lists (``query_id``, ``doc_id``, ``rank`` rows) as pieces of the documents rebuilt from
    the chunks (``cmap`` with offsets): ``(document, start, end)``; an id that is no chunk is a piece without
    tokens."""
    assert cmap.start is not None and cmap.end is not None
    out: dict[str, list[Piece]] = {}
    ranked = run_top.sort_values(["query_id", "rank"], kind="mergesort")
    for q, c in zip(ranked["query_id"].astype(str), ranked["doc_id"].astype(str), strict=True):
        piece = (cmap.parent[c], cmap.start[c], cmap.end[c]) if c in cmap.parent else (c, 0, 0)
        out.setdefault(q, []).append(piece)
    return out
