"""Exact dense search over L2-normalised vectors: :func:`dense_search` (top-k per query) and
:func:`dense_rank_range` (the ranks of one document's tie group among all; :func:`dense_rank_of` its best), both in
blocks of bounded memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from diagnose.checks import is_int
from diagnose.data import DataError

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
    q = _as_matrix(query_vecs, "query_vecs")
    d = _as_matrix(doc_vecs, "doc_vecs")
    if q.shape[1] != d.shape[1]:
        raise DataError(
            f"query vectors have {q.shape[1]} dimensions, doc vectors {d.shape[1]}", param="query_vecs"
        )
    if not is_int(k) or k < 1:
        raise DataError("k must be >= 1", param="k")
    nq, nd = q.shape[0], d.shape[0]
    kk = min(k, nd)
    out_idx = np.zeros((nq, kk), dtype=np.int64)
    out_sc = np.zeros((nq, kk), dtype=np.float32)
    if nq == 0 or kk == 0:
        return out_idx, out_sc
    block_size = max(1, int(block_size))
    q_block = max(1, BLOCK_ELEMENTS // min(block_size, nd))
    for qs in range(0, nq, q_block):
        qb = q[qs : qs + q_block]
        best_idx = np.zeros((len(qb), 0), dtype=np.int64)
        best_sc = np.zeros((len(qb), 0), dtype=np.float32)
        for ds in range(0, nd, block_size):
            s = qb @ d[ds : ds + block_size].T
            cand = _top_k_block(s, min(kk, s.shape[1]))
            idx = np.concatenate([best_idx, cand + ds], axis=1)
            sc = np.concatenate([best_sc, np.take_along_axis(s, cand, axis=1)], axis=1)
            order = np.lexsort((idx, -sc), axis=1)[:, :kk]
            best_idx = np.take_along_axis(idx, order, axis=1)
            best_sc = np.take_along_axis(sc, order, axis=1)
        out_idx[qs : qs + len(qb)] = best_idx
        out_sc[qs : qs + len(qb)] = best_sc
    return out_idx, out_sc


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
    q = _as_matrix(query_vecs, "query_vecs", np.float64)
    d = np.asarray(doc_vecs)
    if d.ndim != 2 or d.shape[1] != q.shape[1]:
        raise ValueError(f"doc_vecs must be 2-D with {q.shape[1]} columns, got shape {d.shape}")
    qr = np.asarray(query_rows, dtype=np.int64)
    dr = np.asarray(doc_rows, dtype=np.int64)
    if qr.shape != dr.shape or qr.ndim != 1:
        raise ValueError("query_rows and doc_rows must be 1-D and of equal length")
    if len(qr) and (qr.min() < 0 or qr.max() >= len(q) or dr.min() < 0 or dr.max() >= len(d)):
        raise IndexError("query_rows/doc_rows out of range")
    qp = q[qr]
    target = np.einsum("ij,ij->i", qp, np.asarray(d[dr], dtype=np.float64)).astype(np.float32)
    block_size = max(1, int(block_size))
    if np.asarray(query_vecs).dtype == np.float32 and d.dtype == np.float32 and len(qr) and len(d):
        above, at_least = _dense_rank_screened(np.asarray(query_vecs), d, qr, qp, target, block_size)
    else:
        above = np.zeros(len(qr), dtype=np.int64)
        at_least = np.zeros(len(qr), dtype=np.int64)
        p_block = max(1, BLOCK_ELEMENTS // block_size)
        for ds in range(0, len(d), block_size):
            db = np.asarray(d[ds : ds + block_size], dtype=np.float64)
            for ps in range(0, len(qr), p_block):
                s = (qp[ps : ps + p_block] @ db.T).astype(np.float32)
                t = target[ps : ps + p_block, None]
                above[ps : ps + p_block] += (s > t).sum(axis=1)
                at_least[ps : ps + p_block] += (s >= t).sum(axis=1)
    # the target is in its own tie group even if its score, summed in another order, rounded the other way
    return above + 1, np.maximum(at_least, above + 1)


def _dense_rank_screened(
    q32: np.ndarray, d: np.ndarray, qr: np.ndarray, qp: np.ndarray, target: np.ndarray, block_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dense_rank_range`'s counts (documents above the float32 ``target``, and at or above it) for float32
    vectors (the :class:`~diagnose.space.VectorSpace` case), at about half the cost: each distinct query is scored
    once per document block by a float32 matrix product, which decides every document whose float32 score is
    farther from the target's float32 neighbours than the float32 rounding error can reach; only the documents
    within that margin are rescored in float64, rounded to float32 and compared exactly as the float64 path does.

    The margin is a rigorous bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1): a computed dot
    product of length n differs from the exact one by at most ``gamma_n * sum|q_i d_i| <= gamma_n * |q| * |d|``
    with ``gamma_n = n u / (1 - n u)``, in any summation order (BLAS blocking, FMA); float32 (``u = 2^-24``) and
    float64 (``u = 2^-53``) errors are added, then doubled. A float64 score above the float32 just above the target
    rounds above it, one below the float32 just below rounds below it. For unit vectors of 384 dimensions the
    margin is ~5e-5, so a few hundred of 1M documents per pair are rescored. A rescored score is one float64 dot
    product, which may sum in another order than the float64 matrix product: the results differ by ~1e-16, which
    changes a float32 rounding only at a rounding boundary."""
    n_dim = q32.shape[1]

    def gamma(u: float) -> float:
        return n_dim * u / (1 - n_dim * u)

    q_norm = np.linalg.norm(qp, axis=1)
    # pairs sorted by query: a block of pairs holds whole groups, each query scored once
    order = np.argsort(qr, kind="stable")
    qr_s, target_s, qnorm_s = qr[order], target[order], q_norm[order]
    up = np.nextafter(target_s, np.float32(np.inf)).astype(np.float64)
    down = np.nextafter(target_s, np.float32(-np.inf)).astype(np.float64)
    above_s = np.zeros(len(qr), dtype=np.int64)
    at_least_s = np.zeros(len(qr), dtype=np.int64)
    p_block = max(1, BLOCK_ELEMENTS // block_size)
    chunks = []
    for ps in range(0, len(qr_s), p_block):
        uq, inv = np.unique(qr_s[ps : ps + p_block], return_inverse=True)
        chunks.append((ps, inv.reshape(-1), q32[uq]))
    for ds in range(0, len(d), block_size):
        db = d[ds : ds + block_size]
        d_max = float(np.sqrt(np.einsum("ij,ij->i", db, db, dtype=np.float64).max()))
        for ps, inv, qu in chunks:
            sl = slice(ps, ps + len(inv))
            margin = 2.0 * (gamma(2.0**-24) + gamma(2.0**-53)) * qnorm_s[sl] * d_max
            s = (qu @ db.T)[inv]
            # float32 bounds rounded outwards (comparing float32 with float32 is ~3x faster than with float64)
            hi = np.nextafter((up[sl] + margin).astype(np.float32), np.float32(np.inf))[:, None]
            lo = np.nextafter((down[sl] - margin).astype(np.float32), np.float32(-np.inf))[:, None]
            sure = np.count_nonzero(s > hi, axis=1)
            above_s[sl] += sure
            at_least_s[sl] += sure
            pi, cj = np.nonzero((s <= hi) & (s >= lo))
            if len(pi):
                exact = np.einsum(
                    "ij,ij->i", qp[order[ps + pi]], np.asarray(db[cj], dtype=np.float64)
                ).astype(np.float32)
                t = target_s[ps + pi]
                above_s[sl] += np.bincount(pi, weights=exact > t, minlength=len(inv)).astype(np.int64)
                at_least_s[sl] += np.bincount(pi, weights=exact >= t, minlength=len(inv)).astype(np.int64)
    above, at_least = np.empty_like(above_s), np.empty_like(at_least_s)
    above[order], at_least[order] = above_s, at_least_s
    return above, at_least
