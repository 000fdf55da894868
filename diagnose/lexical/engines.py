"""The two BM25 engines behind :class:`~diagnose.lexical.bm25.BM25Index` (bm25s, rank_bm25) and the index cache's
key and file.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from diagnose.cache import ArrayCache
from diagnose.lexical.bm25s_internals import Bm25sInternals, bm25s_internals
from diagnose.runtime.frames import arrow_strings
from diagnose.runtime.ids import string_bytes

#: Bumped whenever :func:`tokenize` or the scoring changes, so cached indexes of the old rules are not reused.
INDEX_VERSION = 1


def index_key(ids: np.ndarray, texts: Sequence[str] | Any, method: str, k1: float, b: float) -> str:
    """The cache key of an index: SHA-1 of the parameters and every (id, text). ``texts``: strings, or an Arrow
    string array (its bytes and lengths are hashed as they lie, without a Python string per document)."""
    import pyarrow as pa

    h = hashlib.sha1(f"bm25s/{INDEX_VERSION}/{method}/{k1!r}/{b!r}/{len(ids)}".encode())
    if isinstance(texts, pa.Array | pa.ChunkedArray):
        h.update(b"arrow")
        for arr in (pa.array(ids, type=pa.large_string()), arrow_strings(texts)):
            data, _, lens = string_bytes(arr)
            h.update(lens.tobytes())
            h.update(data)
        return "bm25-" + h.hexdigest()
    for d, t in zip(ids, texts, strict=True):
        h.update(f"{d}\0{t}\0".encode("utf-8", "surrogatepass"))
    return "bm25-" + h.hexdigest()


def _bm25s_scores_vectorised(
    retriever: Any, flat: np.ndarray, lens: np.ndarray, n_vocab: int, internals: Bm25sInternals | None
) -> dict | None:
    """What ``retriever.index((token_ids, vocab))`` stores in ``retriever.scores``, bit for bit, computed with whole-
    corpus numpy operations instead of bm25s' loop over documents (a ``Counter`` and a dozen small numpy calls per
    document: ~25 s of the ~40 s index build at 1M documents).

    The same arrays in the same order: per document, its distinct terms in first-occurrence order (the order of
    bm25s' ``Counter``) with their counts; document frequencies, average length, idf array (bm25s' own function),
    term-frequency part (bm25s' own function, given per-entry arrays: every operation is the same IEEE operation on
    the same float32/float64 operands as bm25s' per-document call under numpy >= 2's promotion rules), the float64
    product rounded into the float32 score array, and bm25s' own CSC builder. bm25s' functions are private, reached
    through ``internals`` (:mod:`diagnose.lexical.bm25s_internals`: only with a tested bm25s release). Returns None
    (the caller lets bm25s index) without ``internals``, for methods with a non-occurrence term (bm25l, bm25+) and
    under numpy < 2, whose value-based casting would compute the per-document call in float32.

    ``flat``: every document's term ids, one document after the other; ``lens``: the number of terms of each."""
    if internals is None:
        return None
    if retriever.method in getattr(retriever, "methods_requiring_nonoccurrence", ("bm25l", "bm25+")):
        return None
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        return None
    n_docs = len(lens)
    # bm25s' own CSC builder sorts the entries by (term, document); sorted that way from the start, they need no
    # second sort (with scipy's builder, which may choose other index types, bm25s' order and builder are kept)
    by_term = retriever.csc_backend != "scipy" and n_vocab * n_docs < 1 << 62
    doc_idx, voc_idx, counts = (_term_counts_by_term if by_term else _term_counts)(flat, lens, n_vocab)
    df = np.bincount(voc_idx, minlength=n_vocab)
    doc_frequencies = dict(zip(range(n_vocab), df.tolist(), strict=True))
    avg_doc_len = lens.mean()  # bm25s: np.array([len(doc_ids) for doc_ids in corpus_token_ids]).mean()
    idf_array = internals.idf_array(retriever, doc_frequencies, n_docs)
    tf_array = counts.astype(retriever.dtype)
    tfc = internals.tfc(retriever, tf_array, lens[doc_idx], avg_doc_len)
    scores_flat = np.empty(len(tf_array), dtype=retriever.dtype)
    scores_flat[:] = idf_array[voc_idx] * tfc
    if by_term:  # what bm25s' numpy CSC builder returns: scores and documents in that order, column pointers
        data, indices = scores_flat, doc_idx.astype(retriever.int_dtype)  # the scores are in retriever.dtype
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
    else:
        data, indices, indptr = _csc(retriever, internals, scores_flat, doc_idx, voc_idx, (n_docs, n_vocab))
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}


def _term_counts(
    flat: np.ndarray, lens: np.ndarray, n_vocab: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per (document, distinct term): document index, term index and count, documents in order and each
    document's terms by first occurrence (the order of bm25s' ``Counter``)."""
    doc_of = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    keys, first, counts = np.unique(doc_of * n_vocab + flat, return_index=True, return_counts=True)
    del doc_of
    # documents in order, terms by first occurrence (Counter's order)
    order = np.argsort(first, kind="stable")
    keys, counts = keys[order], counts[order]
    doc_idx, voc_idx = np.divmod(keys, n_vocab)
    return doc_idx, voc_idx, counts


def _term_counts_by_term(
    flat: np.ndarray, lens: np.ndarray, n_vocab: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_term_counts`' entries in the order of the CSC matrix instead: by term, then document. One plain sort
    of ``term * n_docs + document`` per token (numpy's SIMD sort of int64: ~0.5 s for 20M tokens, where the stable
    argsorts of :func:`_term_counts` and of the CSC builder took ~6 s); every score is computed entry by entry, so
    the order changes no value."""
    n_docs = len(lens)
    key = flat.astype(np.int64) * n_docs + np.repeat(np.arange(n_docs, dtype=np.int64), lens)
    key.sort()
    heads = (
        np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.zeros(0, np.int64)
    )
    counts = np.diff(heads, append=len(key))
    voc_idx, doc_idx = np.divmod(key[heads], n_docs)
    return doc_idx, voc_idx, counts


def _csc(
    retriever: Any,
    internals: Bm25sInternals,
    scores_flat: np.ndarray,
    doc_idx: np.ndarray,
    voc_idx: np.ndarray,
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (document x term) score matrix in CSC form (data, indices, indptr), built as bm25s builds it."""
    doc_idx = doc_idx.astype(retriever.int_dtype)
    voc_idx = voc_idx.astype(retriever.int_dtype)
    if retriever.csc_backend == "scipy":
        import scipy.sparse as sp

        m = sp.csc_matrix((scores_flat, (doc_idx, voc_idx)), shape=shape, dtype=retriever.dtype)
        return m.data, m.indices, m.indptr
    data, indices, indptr = internals.csc(retriever, scores_flat, doc_idx, voc_idx, shape)
    return data.astype(retriever.dtype), indices, indptr


class Bm25sImpl:
    """bm25s builds the (document x term) score matrix; we score query blocks with one sparse product."""

    def __init__(
        self,
        terms: list[str],
        flat: np.ndarray,
        lens: np.ndarray,
        k1: float,
        b: float,
        method: str,
        *,
        vectorised: bool = True,
    ) -> None:
        """``terms``: the vocabulary in first-seen order; ``flat`` / ``lens``: the documents' term ids and counts,
        as :func:`~diagnose.lexical.terms.tokenize_ids` gives them. ``vectorised=False``: bm25s' public
        ``BM25.index`` builds the matrix (what another bm25s release gets), the same arrays, slower at scale."""
        import bm25s
        import scipy.sparse as sp

        vocab: dict[str, int] = {t: j for j, t in enumerate(terms)}
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        internals = bm25s_internals() if vectorised else None
        sc = _bm25s_scores_vectorised(retriever, flat, lens, len(vocab), internals)
        if sc is None:  # what the fast path does not replicate: let bm25s index, one document at a time
            token_ids = [ids.tolist() for ids in np.split(flat, np.cumsum(lens)[:-1])] if len(lens) else []
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
    def from_cache(cls, cache: ArrayCache, key: str, n_docs: int) -> Bm25sImpl | None:
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

    def document_frequencies(self, stems: Iterable[str]) -> dict[str, int]:
        """The number of documents holding each stem (0: not in the index): the nonzero scores of its row."""
        indptr = self.matrix.indptr
        return {
            s: int(indptr[j + 1] - indptr[j]) if (j := self.vocab.get(s)) is not None else 0 for s in stems
        }

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


class RankBm25Impl:
    """rank_bm25.BM25Okapi, called exactly as LangChain's BM25Retriever calls it (``get_scores`` per query)."""

    def __init__(self, tokens: list[list[str]], k1: float, b: float) -> None:
        from rank_bm25 import BM25Okapi

        self.okapi = BM25Okapi(tokens, k1=k1, b=b, epsilon=0.25)
        self.n_docs = len(tokens)
        self._df: Counter[str] | None = None

    def document_frequencies(self, stems: Iterable[str]) -> dict[str, int]:
        """The number of documents holding each stem (0: not in the index), counted once from rank_bm25's
        per-document term frequencies."""
        if self._df is None:
            self._df = Counter(t for freqs in self.okapi.doc_freqs for t in freqs)
        return {s: self._df.get(s, 0) for s in stems}

    def score_block(self, queries: list[list[str]]) -> np.ndarray:
        out = np.zeros((len(queries), self.n_docs), dtype=np.float64)
        for i, toks in enumerate(queries):
            if toks:
                out[i] = self.okapi.get_scores(toks)
        return out
