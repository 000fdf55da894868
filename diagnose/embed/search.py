"""Exact dense search over L2-normalised vectors: :func:`dense_search` (top-k per query) and
:func:`dense_rank_range` (the ranks of one document's tie group among all; :func:`dense_rank_of` its best), both in
blocks of bounded memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from diagnose.checks import positive_int
from diagnose.data import DataError
from diagnose.runtime.threads import in_threads, nonzero_2d

#: Scores held in memory at once by the blocked searches (float32: 4M x 4 B = 16 MiB, plus masks of that size).
BLOCK_ELEMENTS = 1 << 22


def _as_matrix(x: np.ndarray, what: str, dtype: type = np.float32) -> np.ndarray:
    arr = np.asarray(x, dtype=dtype)
    if arr.ndim != 2:
        raise DataError(f"{what} must be a 2-D array, got shape {arr.shape}", param=what)
    return arr


def _top_k_block(s: np.ndarray, kk: int) -> np.ndarray:
    """Column indices of the ``kk`` largest values per row; among equal values the lower column wins."""
    n = s.shape[1]
    if kk >= n:
        return np.broadcast_to(np.arange(n), (s.shape[0], n)).copy()
    cand = np.argpartition(s, n - kk, axis=1)[:, n - kk :]
    kth = np.take_along_axis(s, cand, axis=1).min(axis=1)
    n_ge = (s >= kth[:, None]).sum(axis=1)
    fix = np.flatnonzero(n_ge > kk)  # ties straddle the cut: argpartition chose among them arbitrarily
    if len(fix):
        r, t = s[fix], kth[fix, None]
        gt = r > t
        eq = r == t
        need = kk - gt.sum(axis=1)
        take = eq & (np.cumsum(eq, axis=1) <= need[:, None])
        cand[fix] = np.nonzero(gt | take)[1].reshape(len(fix), kk)
    return cand


def dense_search(
    query_vecs: np.ndarray, doc_vecs: np.ndarray, k: int, *, block_size: int = 8192
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` documents per query by dot product (= cosine for normalised rows).

    Returns ``(idx, scores)``: int64 and float32 arrays ``[n_queries, min(k, n_docs)]``, row i sorted by score
    descending, ties broken by the lower document index (the order of ``np.argsort(-s, kind="stable")``).
    ``k`` larger than the corpus returns every document. Scores are float32 matrix products; inputs are not
    re-normalised. Memory: documents are scanned in blocks of ``block_size`` rows and queries in blocks such that
    at most :data:`BLOCK_ELEMENTS` scores exist at once, keeping a running top-k per query.
    """
    idx, scores, _ = dense_search_ranked(query_vecs, doc_vecs, k, [], [], block_size=block_size)
    return idx, scores


def dense_search_ranked(
    query_vecs: np.ndarray,
    doc_vecs: np.ndarray,
    k: int,
    query_rows: Sequence[int] | np.ndarray,
    doc_rows: Sequence[int] | np.ndarray,
    *,
    block_size: int = 8192,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """:func:`dense_search` and :func:`dense_rank_range` of the pairs ``(query_rows[i], doc_rows[i])`` in ONE pass
    over the documents: every block of float32 scores feeds the running top-k and the tie-range counts of the
    pairs whose query is in the block (:class:`_RankScreen`). Returns ``(idx, scores, (best, worst))``, each what
    the two functions return on their own: the screen's error bound holds for any blocking of the product, so the
    ranks are the same integers. Pairs need float32 vectors (the screen's case); without pairs any dtype."""
    q = _as_matrix(query_vecs, "query_vecs")
    d = _as_matrix(doc_vecs, "doc_vecs")
    if q.shape[1] != d.shape[1]:
        raise DataError(
            f"query vectors have {q.shape[1]} dimensions, doc vectors {d.shape[1]}", param="query_vecs"
        )
    k = positive_int(k, "k")
    screen = _RankScreen(query_vecs, doc_vecs, query_rows, doc_rows)
    if len(screen.qr) and not (np.asarray(query_vecs).dtype == np.asarray(doc_vecs).dtype == np.float32):
        raise ValueError("dense_search_ranked ranks pairs of float32 vectors only (use dense_rank_range)")
    nq, nd = q.shape[0], d.shape[0]
    kk = min(k, nd)
    out_idx = np.zeros((nq, kk), dtype=np.int64)
    out_sc = np.zeros((nq, kk), dtype=np.float32)
    if nq == 0 or kk == 0:
        return out_idx, out_sc, screen.ranks()
    block_size = max(1, int(block_size))
    q_block = max(1, BLOCK_ELEMENTS // min(block_size, nd))

    # the screen's document norms once per block, not once per block of queries
    starts = range(0, nd, block_size) if len(screen.qr) else range(0)
    norms = in_threads(lambda ds: _RankScreen.norm_max(d[ds : ds + block_size]), starts)

    def search(qs: int) -> None:
        qb = q[qs : qs + q_block]
        out_idx[qs : qs + len(qb)], out_sc[qs : qs + len(qb)] = _search_query_block(
            qb, d, kk, block_size, screen, screen.pairs_in(qs, qs + len(qb)), qs, norms
        )

    in_threads(search, range(0, nq, q_block))
    return out_idx, out_sc, screen.ranks()


def _search_query_block(
    qb: np.ndarray,
    d: np.ndarray,
    kk: int,
    block_size: int,
    screen: _RankScreen,
    pairs: np.ndarray,
    qs: int,
    norms: list[float],
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``kk`` (indices, scores) of the queries ``qb`` (rows ``qs...`` of the query matrix) over every
    document of ``d``, scanned ``block_size`` rows at a time, and the screen's counts of ``pairs`` (the pairs of
    these queries; ``norms``: each document block's :meth:`_RankScreen.norm_max`). Touches only these queries' rows
    of the screen's counts, so that query blocks can run in threads."""
    best_idx = np.zeros((len(qb), 0), dtype=np.int64)
    best_sc = np.zeros((len(qb), 0), dtype=np.float32)
    p_block = max(1, BLOCK_ELEMENTS // 2 // block_size)
    for ds in range(0, len(d), block_size):
        s = qb @ d[ds : ds + block_size].T
        # the pairs' rows of scores a few hundred at a time: a gathered copy of ~650 rows was 21 MB per thread
        for ps in range(0, len(pairs), p_block):
            some = pairs[ps : ps + p_block]
            screen.count(some, s[screen.qr[some] - qs], d[ds : ds + block_size], norms[ds // block_size])
        if best_idx.shape[1] == kk and _merge_above_kth(best_idx, best_sc, s, ds):
            continue
        cand = _top_k_block(s, min(kk, s.shape[1]))
        best_idx, best_sc = _merge(best_idx, best_sc, cand + ds, np.take_along_axis(s, cand, axis=1), kk)
    return best_idx, best_sc


def _merge(
    best_idx: np.ndarray, best_sc: np.ndarray, idx: np.ndarray, sc: np.ndarray, kk: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first ``kk`` of the running top-k and the candidates, by score descending then index."""
    idx = np.concatenate([best_idx, idx], axis=1)
    sc = np.concatenate([best_sc, sc], axis=1)
    order = np.lexsort((idx, -sc), axis=1)[:, :kk]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(sc, order, axis=1)


def _merge_above_kth(best_idx: np.ndarray, best_sc: np.ndarray, s: np.ndarray, ds: int) -> bool:
    """Merge the block's scores ``s`` (documents ``ds...``) into a FULL running top-k in place, or return False
    when some row has more than k candidates (the caller then partitions the block). Only a score above a row's
    k-th best can enter it: at an equal score the running one wins, its index being lower than the block's. After
    the first blocks a row has a few such scores, so one comparison replaces partitioning the whole block."""
    kk = best_idx.shape[1]
    rows, cols = nonzero_2d(s > best_sc[:, -1:])
    if not len(rows):
        return True
    n_hit = np.bincount(rows, minlength=len(s))
    width = int(n_hit.max())
    if width > kk:
        return False
    sub = np.flatnonzero(n_hit)  # the rows that change
    at = np.searchsorted(sub, rows)
    pos = np.arange(len(rows)) - np.searchsorted(rows, rows)  # rank of each hit within its row
    c_idx = np.full((len(sub), width), np.iinfo(np.int64).max, dtype=np.int64)
    c_sc = np.full((len(sub), width), -np.inf, dtype=best_sc.dtype)  # the padding sorts after every score
    c_idx[at, pos] = cols + ds
    c_sc[at, pos] = s[rows, cols]
    best_idx[sub], best_sc[sub] = _merge(best_idx[sub], best_sc[sub], c_idx, c_sc, kk)
    return True


def dense_rank_of(
    query_vecs: np.ndarray,
    doc_vecs: np.ndarray,
    query_rows: Sequence[int] | np.ndarray,
    doc_rows: Sequence[int] | np.ndarray,
    *,
    block_size: int = 8192,
) -> np.ndarray:
    """1-based rank of document ``doc_rows[i]`` for query ``query_rows[i]`` among ALL documents: the best rank of
    its tie group, ``1 + #{j : float32(cos(q, d_j)) > float32(cos(q, d_target))}`` (:func:`dense_rank_range` gives
    the worst too). Returns int64 ``[len(query_rows)]``."""
    return dense_rank_range(query_vecs, doc_vecs, query_rows, doc_rows, block_size=block_size)[0]


def dense_rank_range(
    query_vecs: np.ndarray,
    doc_vecs: np.ndarray,
    query_rows: Sequence[int] | np.ndarray,
    doc_rows: Sequence[int] | np.ndarray,
    *,
    block_size: int = 8192,
) -> tuple[np.ndarray, np.ndarray]:
    """The ranks of document ``doc_rows[i]`` for query ``query_rows[i]`` among ALL documents, as a tie range.

    Each cosine is computed in float64 and compared as a float32, the precision trec_eval compares a run's scores
    at (:mod:`diagnose.io`): documents whose float32 cosines are equal form a tie group, which any tie order may
    arrange. ``best_i = 1 + #{j : c_j > c_t}`` and ``worst_i = #{j : c_j >= c_t}`` (the target counted), with
    ``c = float32(float64 dot product)`` and ``t`` the target: the first and the last position of the target's tie
    group. A document identical to the target always ties with it; without ties ``best == worst``. "Exact search
    ranks it within k" holds for every tie order only when ``worst <= k``. Returns two int64 arrays
    ``[len(query_rows)]``; float32 vectors are screened by :func:`_dense_rank_screened` (same counts).
    """
    screen = _RankScreen(query_vecs, doc_vecs, query_rows, doc_rows)
    qr, qp, target, d = screen.qr, screen.qp, screen.target, np.asarray(doc_vecs)
    block_size = max(1, int(block_size))
    if np.asarray(query_vecs).dtype == np.float32 and d.dtype == np.float32 and len(qr) and len(d):
        _dense_rank_screened(np.asarray(query_vecs), d, screen, block_size)
        return screen.ranks()
    p_block = max(1, BLOCK_ELEMENTS // block_size)
    for ds in range(0, len(d), block_size):
        db = np.asarray(d[ds : ds + block_size], dtype=np.float64)
        for ps in range(0, len(qr), p_block):
            s = (qp[ps : ps + p_block] @ db.T).astype(np.float32)
            t = target[ps : ps + p_block, None]
            screen.above[ps : ps + p_block] += (s > t).sum(axis=1)
            screen.at_least[ps : ps + p_block] += (s >= t).sum(axis=1)
    return screen.ranks()


def _dense_rank_screened(q32: np.ndarray, d: np.ndarray, screen: _RankScreen, block_size: int) -> None:
    """:func:`dense_rank_range`'s counts for float32 vectors (the :class:`~diagnose.search.space.VectorSpace` case), at
    about half the cost of float64 products: each distinct query is scored once per document block by a float32
    matrix product, and :class:`_RankScreen` counts."""
    # pairs sorted by query: a block of pairs holds whole groups, each query scored once
    order = np.argsort(screen.qr, kind="stable")
    p_block = max(1, BLOCK_ELEMENTS // block_size)
    chunks = []
    for ps in range(0, len(order), p_block):
        uq, inv = np.unique(screen.qr[order[ps : ps + p_block]], return_inverse=True)
        chunks.append((order[ps : ps + p_block], inv.reshape(-1), q32[uq]))
    for ds in range(0, len(d), block_size):
        db = d[ds : ds + block_size]
        for pairs, inv, qu in chunks:
            screen.count(pairs, (qu @ db.T)[inv], db)


class _RankScreen:
    """The tie-range counts of (query row, document row) pairs among all documents (:func:`dense_rank_range`):
    ``above`` = documents whose float32 cosine is above the target's, ``at_least`` = at or above it, fed block by
    block with float32 scores (:meth:`count`), from whatever product made them.

    A float32 score decides every document farther from the target's float32 neighbours than the float32 rounding
    error can reach; only the documents within that margin are rescored in float64, rounded to float32 and
    compared exactly as the float64 path does. The margin is a rigorous bound (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 3.1): a computed dot product of length n differs from the exact one by at most
    ``gamma_n * sum|q_i d_i| <= gamma_n * |q| * |d|`` with ``gamma_n = n u / (1 - n u)``, in any summation order
    (BLAS blocking, FMA); float32 (``u = 2^-24``) and float64 (``u = 2^-53``) errors are added, then doubled. A
    float64 score above the float32 just above the target rounds above it, one below the float32 just below rounds
    below it. For unit vectors of 384 dimensions the margin is ~5e-5, so a few hundred of 1M documents per pair are
    rescored. A rescored score is one float64 dot product, which may sum in another order than the float64 matrix
    product: the results differ by ~1e-16, which changes a float32 rounding only at a rounding boundary."""

    def __init__(
        self,
        query_vecs: np.ndarray,
        doc_vecs: np.ndarray,
        query_rows: Sequence[int] | np.ndarray,
        doc_rows: Sequence[int] | np.ndarray,
    ) -> None:
        q = np.asarray(query_vecs)  # only the pairs' rows in float64: dense_search screens no pair
        if q.ndim != 2:
            raise DataError(f"query_vecs must be a 2-D array, got shape {q.shape}", param="query_vecs")
        d = np.asarray(doc_vecs)
        if d.ndim != 2 or d.shape[1] != q.shape[1]:
            raise ValueError(f"doc_vecs must be 2-D with {q.shape[1]} columns, got shape {d.shape}")
        qr = np.asarray(query_rows, dtype=np.int64)
        dr = np.asarray(doc_rows, dtype=np.int64)
        if qr.shape != dr.shape or qr.ndim != 1:
            raise ValueError("query_rows and doc_rows must be 1-D and of equal length")
        if len(qr) and (qr.min() < 0 or qr.max() >= len(q) or dr.min() < 0 or dr.max() >= len(d)):
            raise IndexError("query_rows/doc_rows out of range")
        self.qr, self.qp = qr, np.asarray(q[qr], dtype=np.float64)
        self.target = np.einsum("ij,ij->i", self.qp, np.asarray(d[dr], dtype=np.float64)).astype(np.float32)
        n_dim = q.shape[1]
        gamma = [n_dim * u / (1 - n_dim * u) for u in (2.0**-24, 2.0**-53)]
        self.q_margin = 2.0 * sum(gamma) * np.linalg.norm(self.qp, axis=1)
        self.up = np.nextafter(self.target, np.float32(np.inf)).astype(np.float64)
        self.down = np.nextafter(self.target, np.float32(-np.inf)).astype(np.float64)
        self.above = np.zeros(len(qr), dtype=np.int64)
        self.at_least = np.zeros(len(qr), dtype=np.int64)
        self._by_query = np.argsort(qr, kind="stable")

    def pairs_in(self, start: int, stop: int) -> np.ndarray:
        """The pairs whose query row is in ``[start, stop)``."""
        qs = self.qr[self._by_query]
        return self._by_query[np.searchsorted(qs, start) : np.searchsorted(qs, stop)]

    @staticmethod
    def norm_max(db: np.ndarray) -> float:
        """The largest norm of the documents ``db`` (float64 sums), which the margin of :meth:`count` scales by."""
        return float(np.sqrt(np.einsum("ij,ij->i", db, db, dtype=np.float64).max()))

    def count(self, pairs: np.ndarray, s: np.ndarray, db: np.ndarray, d_max: float | None = None) -> None:
        """Count one document block ``db``: ``s[i]`` = the float32 scores of pair ``pairs[i]``'s query against it;
        ``d_max``: :meth:`norm_max` of ``db`` when already known."""
        margin = self.q_margin[pairs] * (self.norm_max(db) if d_max is None else d_max)
        # float32 bounds rounded outwards (comparing float32 with float32 is ~3x faster than with float64)
        hi = np.nextafter((self.up[pairs] + margin).astype(np.float32), np.float32(np.inf))[:, None]
        lo = np.nextafter((self.down[pairs] - margin).astype(np.float32), np.float32(-np.inf))[:, None]
        sure = np.count_nonzero(s > hi, axis=1)
        self.above[pairs] += sure
        self.at_least[pairs] += sure
        pi, cj = nonzero_2d((s <= hi) & (s >= lo))
        if len(pi):
            docs = np.asarray(db[cj], dtype=np.float64)
            exact = np.einsum("ij,ij->i", self.qp[pairs[pi]], docs).astype(np.float32)
            t = self.target[pairs[pi]]
            self.above[pairs] += np.bincount(pi, weights=exact > t, minlength=len(pairs)).astype(np.int64)
            self.at_least[pairs] += np.bincount(pi, weights=exact >= t, minlength=len(pairs)).astype(np.int64)

    def ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """``(best, worst)``: the target is in its own tie group even if its score, summed in another order,
        rounded the other way."""
        return self.above + 1, np.maximum(self.at_least, self.above + 1)
