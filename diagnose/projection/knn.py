"""The linear algebra under the layout: unit rows, exact cosine and Euclidean k-NN in umap-learn's
``precomputed_knn`` layout, PCA (:func:`pca`, and the 2-D PCA used below
:data:`~diagnose.projection.layout.MIN_UMAP_POINTS`).
"""

from __future__ import annotations

import numpy as np


def unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def exact_cosine_knn(vectors: np.ndarray, k: int, *, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours under cosine distance, in umap-learn's ``precomputed_knn`` layout.

    Returns ``(indices int64 [n, k], distances float32 [n, k])``; column 0 is the point itself at distance 0 (umap's
    convention), then neighbours by increasing distance ``1 - cos`` (clipped to [0, 2]), ties by lower row index.
    A zero vector has cosine 0 with everything (distance 1). Memory: ``block x n`` floats at a time.
    """
    x = unit_rows(vectors)
    n = len(x)
    k = min(k, n)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, block):
        stop = min(start + block, n)
        sims = x[start:stop] @ x.T
        rows = np.arange(stop - start)
        sims[rows, rows + start] = np.inf  # self first, whatever duplicates exist
        if k < n:
            part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(n), (stop - start, n)).copy()
        top = np.take_along_axis(sims, part, axis=1)
        order = np.lexsort((part, -top), axis=1)  # by similarity desc, then row index asc
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        d = 1.0 - np.take_along_axis(top, order, axis=1)
        d[:, 0] = 0.0
        dist[start:stop] = np.clip(d, 0.0, 2.0)
    return idx, dist


def pca_2d(x: np.ndarray) -> np.ndarray:
    out = np.zeros((len(x), 2), dtype=np.float32)
    if len(x) < 2:
        return out
    c = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    comp = c @ vt[:2].T
    out[:, : comp.shape[1]] = comp
    return out


def pca(x: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` principal components of the rows of ``x`` (float32), from the eigenvectors of the
    ``d x d`` scatter matrix (cheap for n >> d). ``dims >= d`` returns the centred rows rotated, all kept."""
    x = np.asarray(x, dtype=np.float32)
    c = x - x.mean(axis=0, dtype=np.float64).astype(np.float32)
    if dims >= x.shape[1]:
        dims = x.shape[1]
    scatter = (
        (c.T.astype(np.float64) @ c.astype(np.float64)) if len(c) < 4096 else (c.T @ c).astype(np.float64)
    )
    _, vecs = np.linalg.eigh(scatter)  # ascending eigenvalues
    top = vecs[:, ::-1][:, :dims].astype(np.float32)
    return c @ top


def exact_euclidean_knn(y: np.ndarray, k: int, *, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact Euclidean k-NN (self first), in :func:`exact_cosine_knn`'s layout; for PCA-reduced rows."""
    y = np.asarray(y, dtype=np.float32)
    n = len(y)
    sq = (y * y).sum(axis=1)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, block):
        stop = min(start + block, n)
        d2 = sq[start:stop, None] + sq[None, :] - 2.0 * (y[start:stop] @ y.T)
        rows = np.arange(stop - start)
        d2[rows, rows + start] = -np.inf
        part = (
            np.argpartition(d2, k - 1, axis=1)[:, :k] if k < n else np.tile(np.arange(n), (stop - start, 1))
        )
        top = np.take_along_axis(d2, part, axis=1)
        order = np.lexsort((part, top), axis=1)
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        d = np.sqrt(np.clip(np.take_along_axis(top, order, axis=1), 0.0, None))
        d[:, 0] = 0.0
        dist[start:stop] = d
    return idx, dist
