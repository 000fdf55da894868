"""BM25 baseline and term-overlap evidence.

One tokenizer (:func:`tokenize`) feeds both BM25 engines and the term-overlap evidence, so a query term shown as
"missing from the document" is exactly a term BM25 could not match. The evidence leaves out the query stop words
(:data:`QUERY_STOPWORDS`: "what", "how", "do", "i", "my", ...), which BM25 still scores.

Tokenizer
---------
1. **Lowercase** the text with ``str.lower()``.
2. **Split**: tokens are the maximal runs of Unicode letters and digits (regex ``[^\\W_]+``): every other character,
   including ``_``, apostrophes, hyphens and punctuation, separates tokens ("covid-19" -> "covid", "19";
   "patient's" -> "patient", "s").
3. **Stopwords**: drop the 33 English stopwords of bm25s (``bm25s.stopwords.STOPWORDS_EN``), which is the same list
   as Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` used by Anserini: a an and are as at be but by for if in
   into is it no not of on or such that the their then there these they this to was will with.
4. **Stem** with the Snowball English stemmer ("Porter2", PyStemmer ``Stemmer.Stemmer("english")``).

Differences from Anserini (whose BM25 numbers are the published BEIR baselines): Lucene's StandardTokenizer keeps
"3.5" and "don't" together and its possessive filter drops "'s"; Anserini stems with the original Porter algorithm,
not Porter2; Lucene stores document lengths lossily (one byte per document). On NFCorpus (test) the default
engine gives nDCG@10 0.3204 against Anserini's 0.3218, R@100 0.2461 against 0.2457; swapping in the Porter
stemmer (0.3200) or dropping "'s" (0.3202) moves nDCG@10 by less than 0.001 (``git log -p bench/RESULTS.md``, "bm25").

BM25 engines
------------
Both engines score ``score(q, d) = sum over query tokens t (repeated tokens count again) of idf(t) * tf_part(t, d)``
with ``tf_part = tf * F / (tf + k1 * (1 - b + b * |d| / avgdl))``, ``|d|`` the number of tokens of d after stopword
removal and ``avgdl`` its corpus mean. Query tokens that are not in the corpus add 0.

- ``engine="bm25s"`` (default): the bm25s package. ``method="lucene"`` (default) is Lucene's BM25 as used by
  Anserini: ``F = 1`` and ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, which is always > 0. ``method="robertson"``:
  ``F = 1`` and ``idf = max(0, log((N - df + 0.5) / (df + 0.5)))`` (bm25s clamps the inner ratio at 1, so terms in
  half or more of the documents get idf 0). ``method="atire"``: ``F = k1 + 1`` and ``idf = log(N / df)``.
  bm25s stores per-(term, document) scores as float32; we sum them in float64, then round to float32.
- ``engine="rank_bm25"``: ``rank_bm25.BM25Okapi``, the class behind LangChain's ``BM25Retriever``, with the same
  k1 and b (the package's own defaults are k1=1.5, b=0.75, which LangChain keeps; pass them to reproduce such a
  pipeline, whose default tokenizer is ``str.split`` rather than ours). ``F = k1 + 1`` and
  ``idf = log((N - df + 0.5) / (df + 0.5))``, except that every term whose idf is < 0 (df > N/2) gets
  ``0.25 * mean idf`` instead, the mean being over every corpus term's unfloored idf (``epsilon=0.25``).

Exact relation between the engines: where no query term is in more than half of the documents, bm25s
``method="robertson"`` scores equal BM25Okapi scores divided by ``k1 + 1`` (so the same ranking; equal up to
float32 rounding, which can reorder near-ties). Terms with df > N/2 break this: bm25s robertson gives them idf 0,
BM25Okapi ``0.25 * mean idf``.
bm25s ``method="lucene"`` has a different idf for every term (``log(1 + x)`` instead of ``log(x)``), so its
rankings differ from BM25Okapi's in general, most for common terms.

Ranking conventions
-------------------
- Every score this module returns is rounded to float32 precision (stored as float64): bm25s keeps float32
  scores anyway, and trec_eval compares scores as C floats, so the ties we see are the ties trec_eval sees.
- :meth:`BM25Index.search` returns, per query, the k highest-scoring documents among those with a score > 0
  (a document that shares no weighted term with the query is not retrieved, as in Lucene), so a list can be
  shorter than k. Ties are broken by doc id descending, the order trec_eval sorts a run in (so a run evaluates
  the same in memory, through pytrec_eval, and after a round trip through a TREC file).
- :func:`bm25_rank_range` gives a document's ranks among *all* documents as a tie range: ``1 + #documents with a
  strictly higher score`` (the best rank a tie allows; a tied document can sit lower in
  :meth:`~BM25Index.search`'s list) and ``#documents with a higher or equal score`` (the worst); none for a score
  of 0, which :meth:`~BM25Index.search` never returns. :meth:`BM25Index.rank_of` gives the best.

One file per question:

- :mod:`~diagnose.lexical.terms`: the stopword lists, :func:`tokenize`, and the term evidence
  (:class:`TermOverlap`, :func:`term_overlap`, :func:`highlight_spans`). Start here to change the analyzer.
- :mod:`~diagnose.lexical.bm25`: :class:`BM25Index` (build, score, search, to_run), :func:`bm25_rank_range`,
  :data:`ENGINES`, :data:`BM25S_METHODS`.
- :mod:`~diagnose.lexical.engines`: the bm25s and rank_bm25 engines behind the index, the index cache's key and
  file (:data:`INDEX_VERSION`).

Every name below is importable from ``diagnose.lexical`` itself.
"""

from __future__ import annotations

from diagnose.lexical.bm25 import BM25S_METHODS, ENGINES, BM25Index, bm25_rank_range
from diagnose.lexical.engines import INDEX_VERSION
from diagnose.lexical.engines import Bm25sImpl as Bm25sImpl
from diagnose.lexical.engines import RankBm25Impl as RankBm25Impl
from diagnose.lexical.terms import (
    QUERY_STOPWORDS,
    STOPWORDS_EN,
    TermOverlap,
    highlight_spans,
    term_overlap,
    tokenize,
)
from diagnose.lexical.terms import TOKEN_RE as TOKEN_RE

__all__ = [
    "BM25Index",
    "BM25S_METHODS",
    "ENGINES",
    "INDEX_VERSION",
    "QUERY_STOPWORDS",
    "STOPWORDS_EN",
    "TermOverlap",
    "bm25_rank_range",
    "highlight_spans",
    "term_overlap",
    "tokenize",
]
