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
stemmer (0.3200) or dropping "'s" (0.3202) moves nDCG@10 by less than 0.001 (see bench/RESULTS.md).

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
float32 rounding, which can reorder near-ties). Terms with df > N/2 break this: bm25s robertson gives them idf 0, BM25Okapi ``0.25 * mean idf``.
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
- :meth:`BM25Index.rank_of` gives the rank among *all* documents, ``1 + #documents with a strictly higher score``
  (the best rank a tie allows; a tied document can sit lower in :meth:`~BM25Index.search`'s list).
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from diagnose.cache import ArrayCache
from diagnose.data import DataError, Run, ValidationReport

#: bm25s.stopwords.STOPWORDS_EN == Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (33 words).
#: Copied so that importing this module does not import bm25s; tests check they stay equal.
# fmt: off
STOPWORDS_EN: frozenset[str] = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
})
# fmt: on

#: Query-side stop words: words that shape a question rather than say what it is about. They are left out of the
#: term-overlap evidence (:func:`term_overlap`: present/missing terms and the overlap share the failure taxonomy
#: uses), never out of BM25, which keeps Lucene's 33 stopwords above ("how do I reset my password" is still scored
#: on "how", "do", "i" and "my"). Taken from NLTK's English stop-word list (``nltk.corpus.stopwords``, the list of
#: the Snowball project): its interrogatives (what which who whom when where why how), personal and possessive
#: pronouns, forms of be/have/do, the modals it has (can will should) and the fragments its tokenizer-less list
#: keeps for contractions ("don't" -> "don", "t"; "what's" -> "what", "s"; "I'm" -> "i", "m"), which our tokenizer
#: produces too. Added: "whose", the modals NLTK lacks (could would shall may might must) and "please". Left out on
#: purpose: "us" (the country), "no"/"not"/"nor" (negation carries meaning), prepositions and determiners.
# fmt: off
QUERY_STOPWORDS: frozenset[str] = frozenset({
    # interrogatives
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    # personal, possessive and reflexive pronouns
    "i", "me", "my", "mine", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself",
    "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they",
    "them", "their", "theirs", "themselves",
    # auxiliaries: be, have, do
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did",
    "doing",
    # modals
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
    # contraction fragments
    "s", "t", "d", "ll", "m", "re", "ve", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven",
    "hadn", "won", "wouldn", "couldn", "shouldn", "mightn", "mustn", "needn", "shan", "ain",
    # politeness
    "please",
})
# fmt: on

_TOKEN_RE = re.compile(r"[^\W_]+")
# PyStemmer's Stemmer objects are not thread-safe, and Streamlit runs pages in threads: one stemmer per thread.
_local = threading.local()

ENGINES = ("bm25s", "rank_bm25")
BM25S_METHODS = ("lucene", "robertson", "atire")
_BLOCK_CELLS = 4_000_000  # query x document score cells per dense block (32 MB of float64)


def _stemmer() -> Any:
    st = getattr(_local, "stemmer", None)
    if st is None:
        import Stemmer

        st = Stemmer.Stemmer("english")
        _local.stemmer = st
    return st


def _stem_all(words: list[list[str]]) -> list[list[str]]:
    """Drop stopwords and stem, stemming each distinct word once."""
    uniq = list(set().union(*words)) if words else []
    stem_of: dict[str, str | None] = dict(zip(uniq, _stemmer().stemWords(uniq), strict=True))
    for w in STOPWORDS_EN:
        stem_of[w] = None
    return [[s for s in map(stem_of.__getitem__, ws) if s is not None] for ws in words]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Tokenize texts into stems: lowercase, split on non-alphanumerics, drop stopwords, Snowball-stem.

    See the module docstring for the exact rules. ``None`` or an empty text gives ``[]``.
    Pass a list of texts; a single string is refused (iterating it would tokenize its characters).

    >>> tokenize(["The statins reduced Breast-cancer deaths"])
    [['statin', 'reduc', 'breast', 'cancer', 'death']]
    """
    if isinstance(texts, str):
        raise TypeError("tokenize() takes a sequence of texts, not one string: use tokenize([text]).")
    return _stem_all([_TOKEN_RE.findall(t.lower()) if t else [] for t in texts])


@functools.lru_cache(maxsize=4096)
def _analyze(text: str) -> tuple[tuple[str, str, int, int], ...]:
    """(lowercased word, stem, start, end) for every non-stopword token of ``text``; spans index ``text``.

    Cached (a query is analysed once per failure it has; the stemmer is the slow part).

    Same tokens as :func:`tokenize`. ``str.lower()`` can lengthen a text ("İ" -> "i̇"); then offsets in the
    lowercased text are mapped back to the original characters.
    """
    if not text:
        return ()
    low = text.lower()
    matches = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(low)]
    if len(low) != len(text):
        orig = np.repeat(np.arange(len(text)), [len(c.lower()) for c in text])
        matches = [(w, int(orig[a]), int(orig[b - 1]) + 1) for w, a, b in matches]
    matches = [m for m in matches if m[0] not in STOPWORDS_EN]
    stems = _stem_all([[w for w, _, _ in matches]])[0]
    return tuple((w, st, a, b) for (w, a, b), st in zip(matches, stems, strict=True))


# ----------------------------------------------------------------------------------------------------------------
# Term overlap


@dataclass(frozen=True)
class TermOverlap:
    """Which query terms a document contains, as evidence for a lexical-mismatch diagnosis.

    A *term* is a distinct stem of the query (stopwords excluded). ``stems[i]`` is shown as ``query_terms[i]``:
    the distinct lowercased surface words of the query with that stem, in order of appearance, joined by "/"
    (e.g. "statins/statin"). Query stop words (:data:`QUERY_STOPWORDS` by default: "what", "how", "do", "i",
    "my", ...) are not terms: they are listed in ``ignored`` (display forms) / ``ignored_stems``. A stem is
    ignored only when every surface word of the query with that stem is a query stop word.
    ``present``/``missing`` (display forms) and ``stems_present``/``stems_missing`` keep query order.
    ``overlap_ratio = len(present) / len(query_terms)``; 0.0 when the query has no terms.
    ``bm25_overlap_ratio``: the same share over every term BM25 scores (the ignored ones too); it differs from
    ``overlap_ratio`` only when something was ignored.
    """

    query_terms: tuple[str, ...]
    stems: tuple[str, ...]
    present: tuple[str, ...]
    missing: tuple[str, ...]
    stems_present: tuple[str, ...]
    stems_missing: tuple[str, ...]
    overlap_ratio: float
    ignored: tuple[str, ...] = ()
    ignored_stems: tuple[str, ...] = ()
    bm25_overlap_ratio: float = 0.0


def term_overlap(
    query: str,
    doc: str,
    *,
    doc_stems: Set[str] | None = None,
    query_stopwords: Set[str] = QUERY_STOPWORDS,
) -> TermOverlap:
    """Split the query's terms into those found in ``doc`` and those missing, with :func:`tokenize`'s rules,
    leaving out the query stop words.

    ``doc_stems``: the document's stems when already known (``set(tokenize([doc])[0])``, e.g. computed for many
    documents in one :func:`tokenize` call); ``doc`` is then not read. ``query_stopwords``: lowercased surface
    words to leave out of the terms (default :data:`QUERY_STOPWORDS`; ``frozenset()`` gives BM25's own view,
    where every query token BM25 scores is a term).

    >>> t = term_overlap("How do statins reduce breast cancer?", "Statin use and breast-cancer survival")
    >>> t.present, t.missing, t.overlap_ratio, t.ignored
    (('statins', 'breast', 'cancer'), ('reduce',), 0.75, ('how', 'do'))
    >>> t.bm25_overlap_ratio  # 3 of the 6 terms BM25 scores: how, do, statin, reduc, breast, cancer
    0.5
    """
    forms: dict[str, list[str]] = {}
    for word, stem, _, _ in _analyze(query):
        seen = forms.setdefault(stem, [])
        if word not in seen:
            seen.append(word)
    if doc_stems is None:
        doc_stems = set(tokenize([doc])[0])
    all_stems = tuple(forms)
    ignored = tuple(s for s in all_stems if all(w in query_stopwords for w in forms[s]))
    stems = tuple(s for s in all_stems if s not in ignored)
    display = {s: "/".join(forms[s]) for s in all_stems}
    s_present = tuple(s for s in stems if s in doc_stems)
    s_missing = tuple(s for s in stems if s not in doc_stems)
    n_bm25_present = len(s_present) + sum(1 for s in ignored if s in doc_stems)
    return TermOverlap(
        query_terms=tuple(display[s] for s in stems),
        stems=stems,
        present=tuple(display[s] for s in s_present),
        missing=tuple(display[s] for s in s_missing),
        stems_present=s_present,
        stems_missing=s_missing,
        overlap_ratio=len(s_present) / len(stems) if stems else 0.0,
        ignored=tuple(display[s] for s in ignored),
        ignored_stems=ignored,
        bm25_overlap_ratio=n_bm25_present / len(all_stems) if all_stems else 0.0,
    )


def highlight_spans(doc_text: str, stems: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` (``doc_text[start:end]`` is the word) of the tokens whose stem is in ``stems``.

    Spans are in text order and never overlap; stopwords are never highlighted. Use with
    ``TermOverlap.stems_present`` to mark the query terms a document matched.

    >>> highlight_spans("Statin use; statins work", {"statin"})
    [(0, 6), (12, 19)]
    """
    wanted = set(stems)
    if not wanted:
        return []
    return [(a, b) for _, stem, a, b in _analyze(doc_text) if stem in wanted]


# ----------------------------------------------------------------------------------------------------------------
# BM25 index


class BM25Index:
    """A BM25 index over a corpus; build it with :meth:`BM25Index.build`.

    Attributes: ``ids`` (doc ids in corpus order, numpy object array), ``engine``, ``method``, ``k1``, ``b``.
    """

    def __init__(self, *, ids: np.ndarray, engine: str, method: str, k1: float, b: float, impl: Any) -> None:
        self.ids = ids
        self.engine = engine
        self.method = method
        self.k1 = k1
        self.b = b
        self._impl = impl
        self._row = {d: i for i, d in enumerate(ids)}
        # tie-break key: position of each doc id in descending string order (0 = largest id)
        order = np.argsort(ids.astype(str))[::-1]
        self._tie = np.empty(len(ids), dtype=np.int64)
        self._tie[order] = np.arange(len(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"BM25Index({len(self)} docs, engine={self.engine!r}, method={self.method!r}, k1={self.k1}, b={self.b})"

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        ids: Sequence[str],
        *,
        engine: str = "bm25s",
        k1: float = 0.9,
        b: float = 0.4,
        method: str | None = None,
        cache_dir: str | Path | None = None,
        report: ValidationReport | None = None,
    ) -> BM25Index:
        """Index ``texts`` (one per document, e.g. ``Corpus.texts()`` = title + text) under ``ids``.

        ``engine``: "bm25s" (default) or "rank_bm25" (see the module docstring for the formulas).
        ``method`` (bm25s only): "lucene" (default, Anserini's BM25), "robertson" or "atire"; rank_bm25 always
        uses BM25Okapi ("okapi"). Defaults k1=0.9, b=0.4 are Anserini's BEIR settings.
        ``cache_dir`` (bm25s only): keep the term x document score matrix on disk, keyed by the SHA-1 of every
        (id, text) and the parameters, so the next build of the same corpus skips tokenising and indexing.
        Raises DataError for duplicate ids, mismatched lengths, or a corpus without any indexable token.
        """
        engine = engine.replace("-", "_")
        if engine not in ENGINES:
            raise ValueError(f"Unknown BM25 engine {engine!r}; choose one of {', '.join(ENGINES)}.")
        if engine == "bm25s":
            method = method or "lucene"
            if method not in BM25S_METHODS:
                raise ValueError(
                    f"Unknown bm25s method {method!r}; choose one of {', '.join(BM25S_METHODS)}."
                )
        else:
            method = method or "okapi"
            if method != "okapi":
                raise ValueError(
                    f"engine 'rank_bm25' only implements BM25Okapi (method 'okapi'), not {method!r}."
                )
        ids_arr = np.asarray([str(i) for i in ids], dtype=object)
        if len(ids_arr) != len(texts):
            raise DataError(f"BM25 index: {len(texts)} texts but {len(ids_arr)} ids; give one id per text.")
        if len(ids_arr) == 0:
            raise DataError("BM25 index: the corpus is empty; there is nothing to index.")
        dup = pd.Series(ids_arr).duplicated()
        if dup.any():
            ex = ", ".join(repr(x) for x in pd.unique(ids_arr[dup.to_numpy()])[:5])
            raise DataError(
                f"BM25 index: {int(dup.sum())} duplicate document ids (e.g. {ex}); ids must be unique."
            )
        cache = (
            ArrayCache(Path(cache_dir), report=report)
            if cache_dir is not None and engine == "bm25s"
            else None
        )
        key = _index_key(ids_arr, texts, method, k1, b) if cache is not None else ""
        if cache is not None:
            impl = _Bm25sImpl.from_cache(cache, key, len(ids_arr))
            if impl is not None:
                return cls(ids=ids_arr, engine=engine, method=method, k1=float(k1), b=float(b), impl=impl)
        tokens = tokenize(list(texts))
        if not any(tokens):
            raise DataError(
                "BM25 index: no document has a single indexable word (all texts are empty, punctuation or "
                "stopwords). Check the corpus text field."
            )
        impl = _Bm25sImpl(tokens, k1, b, method) if engine == "bm25s" else _RankBm25Impl(tokens, k1, b)
        if cache is not None:
            impl.to_cache(cache, key)
        return cls(ids=ids_arr, engine=engine, method=method, k1=float(k1), b=float(b), impl=impl)

    # -- scoring -------------------------------------------------------------------------------------------------

    def _score_block(self, tokens: list[list[str]]) -> np.ndarray:
        return self._impl.score_block(tokens).astype(np.float32).astype(np.float64)

    def scores(self, query_text: str) -> np.ndarray:
        """BM25 score of every document for one query, in corpus order (float64 array of float32 values)."""
        return self._score_block(tokenize([query_text]))[0]

    def score_matrix(self, query_texts: Sequence[str]) -> np.ndarray:
        """Scores of every document for several queries: array ``[len(query_texts), len(self)]``."""
        return self._score_block(tokenize(list(query_texts)))

    def rank_of(self, query_text: str, doc_ids: Sequence[str]) -> list[tuple[int | None, float]]:
        """``(rank, score)`` per doc id: rank = 1 + number of documents with a strictly higher score (1-based,
        among all documents). Unknown doc id -> ``(None, nan)``."""
        s = self.scores(query_text)
        sorted_s = np.sort(s)
        out: list[tuple[int | None, float]] = []
        for d in doc_ids:
            i = self._row.get(str(d))
            if i is None:
                out.append((None, float("nan")))
            else:
                higher = len(s) - int(np.searchsorted(sorted_s, s[i], side="right"))
                out.append((1 + higher, float(s[i])))
        return out

    def _search_arrays(
        self, query_texts: Sequence[str], k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Top-k of every query as flat arrays (query row, doc row, score, 1-based rank), in rank order."""
        if isinstance(query_texts, str):
            raise TypeError("Pass a sequence of query texts, not one string: use [query].")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}.")
        n = len(self)
        k = min(int(k), n)
        tokens = tokenize(list(query_texts))
        block = max(1, _BLOCK_CELLS // n)
        parts = []
        for start in range(0, len(tokens), block):
            s = self._score_block(tokens[start : start + block])
            q, d, sc, r = _topk_rows(s, k, self._tie)
            parts.append((q + start, d, sc, r))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0), empty
        return tuple(np.concatenate(x) for x in zip(*parts, strict=True))  # type: ignore[return-value]

    def search(self, query_texts: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """Top ``k`` ``(doc_id, score)`` per query: score > 0 only, score descending, ties by doc id descending."""
        q, d, sc, _ = self._search_arrays(query_texts, k)
        out: list[list[tuple[str, float]]] = [[] for _ in range(len(query_texts))]
        ids = self.ids[d]
        for qi, doc, score in zip(q.tolist(), ids.tolist(), sc.tolist(), strict=True):
            out[qi].append((doc, score))
        return out

    def to_run(
        self, query_ids: Sequence[str], query_texts: Sequence[str], depth: int = 100, name: str = "bm25"
    ) -> Run:
        """Search every query and return a :class:`~diagnose.data.Run` (same order and ties as :meth:`search`).

        A query that matches no document has no rows (evaluation counts it as a miss)."""
        qids = np.asarray([str(x) for x in query_ids], dtype=object)
        if len(qids) != len(query_texts):
            raise DataError(f"BM25 run: {len(query_texts)} query texts but {len(qids)} query ids.")
        dup = pd.Series(qids).duplicated()
        if dup.any():
            ex = ", ".join(repr(x) for x in pd.unique(qids[dup.to_numpy()])[:5])
            raise DataError(f"BM25 run: duplicate query ids (e.g. {ex}); each query must appear once.")
        q, d, sc, r = self._search_arrays(query_texts, depth)
        df = pd.DataFrame(
            {
                "query_id": pd.Series(qids[q], dtype=object),
                "doc_id": pd.Series(self.ids[d], dtype=object),
                "score": sc.astype(np.float64),
                "rank": r.astype(np.int64),
            }
        )
        return Run(name, df, source=f"BM25 ({self.engine}, {self.method}, k1={self.k1}, b={self.b})")


def _topk_rows(
    s: np.ndarray, k: int, tie: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Top-k of each row of ``s`` with score > 0, ordered by score desc then ``tie`` asc; flat arrays."""
    # only positive scores can be returned, so the k-th largest is looked for among them (most of a large corpus
    # scores 0 for a query, and partitioning those rows whole cost ~30 ms per query at 1M documents)
    rows, cols = np.nonzero(s > 0)
    vals = s[rows, cols]
    bounds = np.searchsorted(rows, np.arange(s.shape[0] + 1))
    keep_parts = []
    for r in range(s.shape[0]):
        lo, hi = bounds[r], bounds[r + 1]
        if hi - lo > k:
            seg = vals[lo:hi]
            kth = np.partition(seg, len(seg) - k)[len(seg) - k]  # k-th largest positive score of the row
            keep_parts.append(lo + np.flatnonzero(seg >= kth))
        else:
            keep_parts.append(np.arange(lo, hi))
    sel = np.concatenate(keep_parts) if keep_parts else np.zeros(0, dtype=np.int64)
    rows, cols, vals = rows[sel], cols[sel], vals[sel]
    order = np.lexsort((tie[cols], -vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    # position within each row's group
    starts = np.searchsorted(rows, rows, side="left")
    pos = np.arange(len(rows)) - starts
    keep = pos < k
    return (
        rows[keep].astype(np.int64),
        cols[keep].astype(np.int64),
        vals[keep],
        pos[keep].astype(np.int64) + 1,
    )


#: Bumped whenever :func:`tokenize` or the scoring changes, so cached indexes of the old rules are not reused.
INDEX_VERSION = 1


def _index_key(ids: np.ndarray, texts: Sequence[str], method: str, k1: float, b: float) -> str:
    h = hashlib.sha1(f"bm25s/{INDEX_VERSION}/{method}/{k1!r}/{b!r}/{len(ids)}".encode())
    for d, t in zip(ids, texts, strict=True):
        h.update(f"{d}\0{t}\0".encode("utf-8", "surrogatepass"))
    return "bm25-" + h.hexdigest()


def _bm25s_scores_vectorised(retriever: Any, tokens: list[list[str]], vocab: dict[str, int]) -> dict | None:
    """What ``retriever.index((token_ids, vocab))`` stores in ``retriever.scores``, bit for bit, computed with whole-
    corpus numpy operations instead of bm25s' loop over documents (a ``Counter`` and a dozen small numpy calls per
    document: ~25 s of the ~40 s index build at 1M documents).

    The same arrays in the same order: per document, its distinct terms in first-occurrence order (the order of
    bm25s' ``Counter``) with their counts; document frequencies, average length, idf array (bm25s' own function),
    term-frequency part (bm25s' own function, given per-entry arrays: every operation is the same IEEE operation on
    the same float32/float64 operands as bm25s' per-document call under numpy >= 2's promotion rules), the float64
    product rounded into the float32 score array, and bm25s' own CSC builder. Returns None (the caller lets bm25s
    index) for methods with a non-occurrence term (bm25l, bm25+) and under numpy < 2, whose value-based casting
    would compute the per-document call in float32."""
    from bm25s import scoring

    if retriever.method in getattr(retriever, "methods_requiring_nonoccurrence", ("bm25l", "bm25+")):
        return None
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        return None
    n_docs, n_vocab = len(tokens), len(vocab)
    lens = np.fromiter(map(len, tokens), dtype=np.int64, count=n_docs)
    flat = np.fromiter(map(vocab.__getitem__, chain.from_iterable(tokens)), dtype=np.int64, count=int(lens.sum()))
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lens)
    keys, first, counts = np.unique(doc_of * n_vocab + flat, return_index=True, return_counts=True)
    del flat
    order = np.argsort(first, kind="stable")  # documents in order, terms by first occurrence (Counter's order)
    keys, counts = keys[order], counts[order]
    doc_idx, voc_idx = np.divmod(keys, n_vocab)
    del keys, order, first
    df = np.bincount(voc_idx, minlength=n_vocab)
    doc_frequencies = dict(zip(range(n_vocab), df.tolist(), strict=True))
    avg_doc_len = lens.mean()  # bm25s: np.array([len(doc_ids) for doc_ids in corpus_token_ids]).mean()
    idf_array = scoring._build_idf_array(
        doc_frequencies=doc_frequencies,
        n_docs=n_docs,
        compute_idf_fn=scoring._select_idf_scorer(retriever.idf_method),
        dtype=retriever.dtype,
    )
    tf_array = counts.astype(retriever.dtype)
    tfc = scoring._select_tfc_scorer(retriever.method)(
        tf_array=tf_array, l_d=lens[doc_idx], l_avg=avg_doc_len, k1=retriever.k1, b=retriever.b,
        delta=retriever.delta,
    )  # fmt: skip
    scores_flat = np.empty(len(tf_array), dtype=retriever.dtype)
    scores_flat[:] = idf_array[voc_idx] * tfc
    doc_idx = doc_idx.astype(retriever.int_dtype)
    voc_idx = voc_idx.astype(retriever.int_dtype)
    if retriever.csc_backend == "scipy":
        import scipy.sparse as sp

        m = sp.csc_matrix((scores_flat, (doc_idx, voc_idx)), shape=(n_docs, n_vocab), dtype=retriever.dtype)
        data, indices, indptr = m.data, m.indices, m.indptr
    else:
        data, indices, indptr = retriever._np_csc(
            data=scores_flat, rows=doc_idx, cols=voc_idx, shape=(n_docs, n_vocab)
        )
        data = data.astype(retriever.dtype)
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}


class _Bm25sImpl:
    """bm25s builds the (document x term) score matrix; we score query blocks with one sparse product."""

    def __init__(self, tokens: list[list[str]], k1: float, b: float, method: str) -> None:
        import bm25s
        import scipy.sparse as sp

        # term ids in first-seen order (dict.fromkeys keeps it), assigned in C rather than per token in Python
        vocab: dict[str, int] = {t: j for j, t in enumerate(dict.fromkeys(chain.from_iterable(tokens)))}
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        sc = _bm25s_scores_vectorised(retriever, tokens, vocab)
        if sc is None:  # what the fast path does not replicate: let bm25s index, one document at a time
            token_ids = [list(map(vocab.__getitem__, doc)) for doc in tokens]
            retriever.index((token_ids, vocab), create_empty_token=False, show_progress=False)
            sc = retriever.scores
        else:
            retriever.vocab_dict = vocab
        n_docs, n_vocab = sc["num_docs"], len(sc["indptr"]) - 1
        # CSC over (docs x terms) == CSR over (terms x docs): row t lists the documents containing term t
        self.matrix = sp.csr_matrix(
            (sc["data"].astype(np.float64), sc["indices"], sc["indptr"]), shape=(n_vocab, n_docs)
        )
        self.vocab: dict[str, int] = retriever.vocab_dict
        self.n_docs = n_docs

    _PARTS = ("data", "indices", "indptr", "terms")

    def to_cache(self, cache: ArrayCache, key: str) -> None:
        """Store the index under ``key`` as ONE checked file (see :mod:`diagnose.cache`): its digest covers every
        array and the metadata, which records ``key`` (the SHA-1 of every id, text and parameter) and the number of
        documents, so a damaged, truncated or misplaced index does not verify and is rebuilt."""
        terms = np.empty(len(self.vocab), dtype=object)
        for t, j in self.vocab.items():
            terms[j] = t
        m = self.matrix
        arrays = {"data": m.data, "indices": m.indices, "indptr": m.indptr, "terms": terms.astype(str)}
        if cache.put_arrays(key, arrays):
            for part in self._PARTS:  # the four files of a cache written before indexes were checked
                cache.path_for(f"{key}/{part}").unlink(missing_ok=True)

    @classmethod
    def from_cache(cls, cache: ArrayCache, key: str, n_docs: int) -> _Bm25sImpl | None:
        """The cached index, or None on a miss or a file that does not verify (reported, deleted; then the index
        is rebuilt and rewritten)."""
        import scipy.sparse as sp

        def consistent(parts: dict[str, np.ndarray], _meta: dict) -> str | None:
            terms, indptr, indices = parts["terms"], parts["indptr"], parts["indices"]
            if indptr.ndim != 1 or len(indptr) != len(terms) + 1 or len(parts["data"]) != len(indices):
                return "index arrays of inconsistent lengths"
            if len(indices) and int(indices.max()) >= n_docs:
                return f"document numbers beyond the {n_docs} documents"
            return None

        parts = cache.get_arrays(key, cls._PARTS, check=consistent)
        if parts is None:
            return None
        self = cls.__new__(cls)
        self.matrix = sp.csr_matrix(
            (parts["data"], parts["indices"], parts["indptr"]), shape=(len(parts["terms"]), n_docs)
        )
        self.vocab = {str(t): j for j, t in enumerate(parts["terms"])}
        self.n_docs = n_docs
        return self

    def score_block(self, queries: list[list[str]]) -> np.ndarray:
        import scipy.sparse as sp

        rows, cols = [], []
        for i, toks in enumerate(queries):
            for t in toks:
                j = self.vocab.get(t)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        # duplicate (row, col) entries are summed: a repeated query token counts again, as in bm25s
        q = sp.csr_matrix(
            (np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(len(queries), self.matrix.shape[0]),
        )
        return np.asarray((q @ self.matrix).toarray(), dtype=np.float64)


class _RankBm25Impl:
    """rank_bm25.BM25Okapi, called exactly as LangChain's BM25Retriever calls it (``get_scores`` per query)."""

    def __init__(self, tokens: list[list[str]], k1: float, b: float) -> None:
        from rank_bm25 import BM25Okapi

        self.okapi = BM25Okapi(tokens, k1=k1, b=b, epsilon=0.25)
        self.n_docs = len(tokens)

    def score_block(self, queries: list[list[str]]) -> np.ndarray:
        out = np.zeros((len(queries), self.n_docs), dtype=np.float64)
        for i, toks in enumerate(queries):
            if toks:
                out[i] = self.okapi.get_scores(toks)
        return out
