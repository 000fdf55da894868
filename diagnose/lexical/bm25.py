""":class:`BM25Index`: build (or read from the cache), score, search, and a run of the top k."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache import ArrayCache
from diagnose.checks import one_of, positive_int
from diagnose.data import DataError, Run, ValidationReport
from diagnose.defaults import BM25_ENGINE, BM25_ENGINES, DEPTH
from diagnose.lexical.engines import Bm25sImpl, RankBm25Impl, index_key
from diagnose.lexical.terms import tokenize, tokenize_ids
from diagnose.runtime.frames import is_arrow_array
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.threads import available_cpus, in_threads, nonzero_2d

ENGINES = BM25_ENGINES
BM25S_METHODS = ("lucene", "robertson", "atire")
_BLOCK_CELLS = 4_000_000  # query x document score cells per dense block (32 MB of float64)


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
        texts: Sequence[str] | Any,
        ids: Sequence[str],
        *,
        engine: str = BM25_ENGINE,
        k1: float = 0.9,
        b: float = 0.4,
        method: str | None = None,
        cache_dir: str | Path | None = None,
        report: ValidationReport | None = None,
    ) -> BM25Index:
        """Index ``texts`` (one per document, e.g. ``Corpus.texts()`` = title + text, or the same as an Arrow string
        array, ``Corpus.joined_texts()``, which needs no Python string per document) under ``ids``.

        ``engine``: "bm25s" (default) or "rank_bm25" (see the module docstring for the formulas).
        ``method`` (bm25s only): "lucene" (default, Anserini's BM25), "robertson" or "atire"; rank_bm25 always
        uses BM25Okapi ("okapi"). Defaults k1=0.9, b=0.4 are Anserini's BEIR settings.
        ``cache_dir`` (bm25s only): keep the term x document score matrix on disk, keyed by the SHA-1 of every
        (id, text) and the parameters, so the next build of the same corpus skips tokenising and indexing.
        Raises DataError for duplicate ids, mismatched lengths, or a corpus without any indexable token.
        """
        engine, method = _engine_and_method(engine, method)
        if not is_arrow_array(texts):
            texts = list(texts)
        ids_arr = _checked_ids(texts, ids)
        cache = (
            ArrayCache(Path(cache_dir), report=report)
            if cache_dir is not None and engine == "bm25s"
            else None
        )
        key = index_key(ids_arr, texts, method, k1, b) if cache is not None else ""
        if cache is not None:
            impl = Bm25sImpl.from_cache(cache, key, len(ids_arr))
            if impl is not None:
                return cls(ids=ids_arr, engine=engine, method=method, k1=float(k1), b=float(b), impl=impl)
        if engine == "bm25s":  # the corpus as term-id arrays, without a list of stems per document
            terms, flat, lens = tokenize_ids(texts)
            empty = not len(flat)
        else:
            tokens = tokenize(texts.to_pylist() if is_arrow_array(texts) else texts)
            empty = not any(tokens)
        if empty:
            raise DataError(
                "BM25 index: no document has a single indexable word (all texts are empty, punctuation or "
                "stopwords). Check the corpus text field."
            )
        impl = (
            Bm25sImpl(terms, flat, lens, k1, b, method) if engine == "bm25s" else RankBm25Impl(tokens, k1, b)
        )
        if cache is not None:
            impl.to_cache(cache, key)
        return cls(ids=ids_arr, engine=engine, method=method, k1=float(k1), b=float(b), impl=impl)

    # -- scoring -------------------------------------------------------------------------------------------------

    def _score_block(self, tokens: list[list[str]]) -> np.ndarray:
        return self._score_block32(tokens).astype(np.float64)

    def _score_block32(self, tokens: list[list[str]]) -> np.ndarray:
        """The scores as float32, the values :meth:`scores` gives (in float64, exactly): what the searches rank,
        at half the memory traffic of float64 copies."""
        return self._impl.score_block(tokens).astype(np.float32)

    def scores(self, query_text: str) -> np.ndarray:
        """BM25 score of every document for one query, in corpus order (float64 array of float32 values)."""
        return self._score_block(tokenize([query_text]))[0]

    def score_matrix(self, query_texts: Sequence[str]) -> np.ndarray:
        """Scores of every document for several queries: array ``[len(query_texts), len(self)]``."""
        return self._score_block(tokenize(list(query_texts)))

    def term_weights(self, stems: Iterable[str]) -> dict[str, float]:
        """Each stem's weight: Lucene's BM25 idf, ``log(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the documents
        and ``df`` those holding the stem, whatever the engine (rank_bm25's own idf can be negative); 0 for a stem
        no document holds, which BM25 cannot score. The weights of the share of a query a document holds
        (:func:`~diagnose.lexical.terms.term_overlap`'s ``weight_share``)."""
        n = len(self)
        return {
            s: math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else 0.0
            for s, df in self._impl.document_frequencies(stems).items()
        }

    def rank_of(self, query_text: str, doc_ids: Sequence[str]) -> list[tuple[int | None, float]]:
        """``(rank, score)`` per doc id: rank = 1 + number of documents with a strictly higher score (1-based,
        among all documents: the best rank of its tie group, :func:`bm25_rank_range`), ``None`` when the score
        is 0 (no weighted query term in the document: BM25 does not retrieve it). Unknown doc id ->
        ``(None, nan)``."""
        s = self.scores(query_text)
        out: list[tuple[int | None, float]] = []
        for d in doc_ids:
            i = self._row.get(str(d))
            if i is None:
                out.append((None, float("nan")))
            else:
                out.append((bm25_rank_range(s, i)[0], float(s[i])))
        return out

    def _search_arrays(
        self, query_texts: Sequence[str], k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Top-k of every query as flat arrays (query row, doc row, score, 1-based rank), in rank order."""
        none = np.zeros(0, dtype=np.int64)
        return self._search_ranked(query_texts, k, none, none)[0]

    def _search_ranked(
        self, query_texts: Sequence[str], k: int, query_rows: np.ndarray, doc_rows: np.ndarray
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """:meth:`_search_arrays`, and from the same score blocks :func:`bm25_rank_range` and the score of each
        pair (``query_texts[query_rows[i]]``, document row ``doc_rows[i]``): ``(arrays, known)`` with ``known[i] =
        (best, worst, score)`` (best and worst -1 where the score is 0: no rank)."""
        if isinstance(query_texts, str):
            raise DataError(
                "Pass a sequence of query texts, not one string: use [query].", param="query_texts"
            )
        positive_int(k, "k")
        n = len(self)
        k = min(int(k), n)
        tokens = tokenize(list(query_texts))
        block = max(
            1, _BLOCK_CELLS // n // available_cpus()
        )  # the blocks in flight hold _BLOCK_CELLS together
        known = np.zeros((len(query_rows), 3))

        def search(start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            # a block of queries writes only its own pairs' rows of known: blocks run in threads
            s = self._score_block32(tokens[start : start + block])
            q, d, sc, r = _topk_rows(s, k, self._tie)
            for i in np.flatnonzero((query_rows >= start) & (query_rows < start + len(s))):
                best, worst = bm25_rank_range(s[query_rows[i] - start], doc_rows[i])
                known[i] = (best or -1, worst or -1, s[query_rows[i] - start, doc_rows[i]])
            return q + start, d, sc.astype(np.float64), r

        parts = in_threads(search, range(0, len(tokens), block))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return (empty, empty, np.zeros(0), empty), known
        return tuple(np.concatenate(x) for x in zip(*parts, strict=True)), known  # type: ignore[return-value]

    def search(self, query_texts: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """Top ``k`` ``(doc_id, score)`` per query: score > 0 only, score descending, ties by doc id descending."""
        q, d, sc, _ = self._search_arrays(query_texts, k)
        out: list[list[tuple[str, float]]] = [[] for _ in range(len(query_texts))]
        ids = self.ids[d]
        for qi, doc, score in zip(q.tolist(), ids.tolist(), sc.tolist(), strict=True):
            out[qi].append((doc, score))
        return out

    def to_run(
        self, query_ids: Sequence[str], query_texts: Sequence[str], depth: int = DEPTH, name: str = "bm25"
    ) -> Run:
        """Search every query and return a :class:`~diagnose.data.Run` (same order and ties as :meth:`search`).

        A query that matches no document has no rows (evaluation counts it as a miss)."""
        return self.to_run_ranked(query_ids, query_texts, [], depth=depth, name=name)[0]

    def to_run_ranked(
        self,
        query_ids: Sequence[str],
        query_texts: Sequence[str],
        pairs: Sequence[tuple[str, str]],
        *,
        depth: int = DEPTH,
        name: str = "bm25",
    ) -> tuple[Run, dict[tuple[str, str], tuple[int | None, int | None, float]]]:
        """:meth:`to_run`, and from the same scores the ``(best, worst, score)`` of each (query id, doc id) of
        ``pairs`` whose query is searched and whose document is indexed (the others are left out of the dict):
        :func:`bm25_rank_range` of the document (``None`` ranks at score 0) and its score, as :meth:`scores`
        gives them, so that a query is scored once for its run and its evidence."""
        qids = np.asarray([str(x) for x in query_ids], dtype=object)
        if len(qids) != len(query_texts):
            raise DataError(f"BM25 run: {len(query_texts)} query texts but {len(qids)} query ids.")
        dup = pd.Series(qids).duplicated()
        if dup.any():
            ex = ", ".join(repr(x) for x in pd.unique(qids[dup.to_numpy()])[:5])
            raise DataError(f"BM25 run: duplicate query ids (e.g. {ex}); each query must appear once.")
        q_at = {q: i for i, q in enumerate(qids.tolist())}
        found = [(p, q_at[p[0]], self._row[p[1]]) for p in pairs if p[0] in q_at and p[1] in self._row]
        qr = np.asarray([i for _, i, _ in found], dtype=np.int64)
        dr = np.asarray([j for _, _, j in found], dtype=np.int64)
        (q, d, sc, r), known = self._search_ranked(query_texts, depth, qr, dr)
        df = pd.DataFrame(
            {
                "query_id": pd.Series(qids[q], dtype=object),
                "doc_id": pd.Series(self.ids[d], dtype=object),
                "score": sc.astype(np.float64),
                "rank": r.astype(np.int64),
            }
        )
        run = Run(name, df, source=f"BM25 ({self.engine}, {self.method}, k1={self.k1}, b={self.b})")
        ranks = {
            p: (int(b) if b > 0 else None, int(w) if w > 0 else None, float(s))
            for (p, _, _), (b, w, s) in zip(found, known.tolist(), strict=True)
        }
        return run, ranks


def bm25_rank_range(scores: np.ndarray, row: int) -> tuple[int | None, int | None]:
    """The ranks of document ``row`` among all documents by one query's BM25 ``scores`` (corpus order, as
    :meth:`BM25Index.scores` gives them: float32 values, so equal means equal as trec_eval compares), as a tie
    range: ``(1 + #documents scoring higher, #documents scoring higher or equal)``, the first and the last position
    of its tie group (equal without ties). ``(None, None)`` when its score is 0 or below: no weighted query term
    occurs in the document, BM25 does not retrieve it at any depth (:meth:`BM25Index.search` keeps scores > 0), and
    a "rank" among the zero-scored documents would only be the order of their ids."""
    s = scores[row]
    if not s > 0:
        return None, None
    above = int(np.count_nonzero(scores > s))
    return above + 1, above + int(np.count_nonzero(scores == s))


def _topk_rows(
    s: np.ndarray, k: int, tie: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Top-k of each row of ``s`` with score > 0, ordered by score desc then ``tie`` asc; flat arrays."""
    # only positive scores can be returned, so the k-th largest is looked for among them (most of a large corpus
    # scores 0 for a query, and partitioning those rows whole cost ~30 ms per query at 1M documents)
    rows, cols = nonzero_2d(s > 0)
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


def _engine_and_method(engine: str, method: str | None) -> tuple[str, str]:
    """``(engine, method)`` with ``-`` read as ``_`` and the engine's default method; DataError for an unknown one."""
    engine = engine.replace("-", "_") if isinstance(engine, str) else engine
    one_of(
        engine,
        "engine",
        ENGINES,
        message="Unknown BM25 engine {value!r}; choose one of " + ", ".join(ENGINES) + ".",
    )
    if engine == "bm25s":
        method = method or "lucene"
        if method not in BM25S_METHODS:
            raise DataError(
                f"Unknown bm25s method {method!r}; choose one of {', '.join(BM25S_METHODS)}.", param="method"
            )
    else:
        method = method or "okapi"
        if method != "okapi":
            raise DataError(
                f"engine 'rank_bm25' only implements BM25Okapi (method 'okapi'), not {method!r}.",
                param="method",
            )
    return engine, method


def _checked_ids(texts: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """``ids`` as strings in a numpy object array; DataError when they are not one per text, none, or repeated."""
    ids_arr = np.asarray([str(i) for i in ids], dtype=object)
    if len(ids_arr) != len(texts):
        raise DataError(f"BM25 index: {len(texts)} texts but {len(ids_arr)} ids; give one id per text.")
    if len(ids_arr) == 0:
        raise DataError("BM25 index: the corpus is empty; there is nothing to index.")
    if len(set(ids_arr.tolist())) == len(ids_arr):  # a set: ~10x cheaper than pandas' duplicated at 1M ids
        return ids_arr
    dup = pd.Series(ids_arr).duplicated()
    if dup.any():
        ex = ", ".join(repr(x) for x in pd.unique(ids_arr[dup.to_numpy()])[:5])
        raise DataError(
            f"BM25 index: {int(dup.sum())} duplicate document ids (e.g. {ex}); ids must be unique."
        )
    return ids_arr
