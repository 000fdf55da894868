"""The embedding map: documents and queries projected together to 2-D with UMAP, sampled on purpose, cached.

Pipeline (each step is a public function, :func:`build_map` chains them):

1. :func:`sample_for_map` chooses the rows to draw. Every failed query, its targets and its top-k retrieved
   documents are always kept (the ``must_*`` sets, see :func:`must_keep`); the rest is a seeded random sample, so the
   map holds at most ``cap`` points (default 4,000). Altair refuses data sets above 5,000 rows by default and we keep
   that limit: a scatter of 100k points is unreadable anyway. :meth:`MapSample.caption` gives the
   "showing N of M documents" line for the UI.
2. :func:`project` fits UMAP on the sampled document *and* query vectors together (one space, so distances between a
   query and a document mean something), cosine metric, ``n_neighbors=15``, ``min_dist=0.1``, fixed seed. It returns
   float32 coordinates and the *trustworthiness* of the 2-D neighbourhoods (how far to trust what looks close).
   Coordinates are cached on disk, keyed by the vectors' bytes and every parameter.
3. :func:`map_frame` and :func:`map_edges` turn coordinates into the tidy tables that
   :func:`diagnose.charts.embedding_map` draws.

Choices and their reasons (measured in ``bench/RESULTS.md`` under ``## umap``):

- **Exact k-NN computed here, then handed to UMAP** (``precomputed_knn``). For fewer than 4,096 points umap-learn
  0.5 computes the full distance matrix through ``sklearn.pairwise_distances`` with its numba cosine function as a
  *Python callable*: one Python call per pair, ~37 CPU s for 3,956 points on our 2-core machine. A blocked
  ``X @ X.T`` over L2-normalised rows gives the same exact neighbours in well under a second; the whole
  ``project()`` then takes ~8 CPU s (4.6x less). ``DEFAULT_CAP`` keeps maps below 4,096 points, so always exact.
- **Deterministic by default** (``seed=42``). With a ``random_state`` umap-learn runs the layout single-threaded;
  ``seed=None`` runs it in parallel (``n_jobs=-1``) but every fit differs. On 2 cores the parallel layout saves a
  few seconds at most (measured: -18% wall time, same CPU time), and a map that moves between two sessions (or
  between a screenshot and the app) is worse than a few seconds, so the default is the seed. The cache key
  includes the seed, ``None`` included.
- **numba's on-disk cache.** pynndescent (imported by umap) compiles its functions with ``cache=True``, so
  ``NUMBA_CACHE_DIR`` (or numba's default ``__pycache__`` location) makes ``import umap`` fast from the second
  process on. umap's own hot functions (``smooth_knn_dist``, ``compute_membership_strengths``, the layout epoch)
  are *not* ``cache=True``, so every new process pays their compilation again. :func:`enable_numba_cache` switches
  numba's caching on for those functions (``Dispatcher.enable_caching()``); :func:`project` calls it unless
  ``DIAGNOSE_NUMBA_CACHE=0``. Any failure to enable it is ignored (the fit just compiles as usual).
- **Trustworthiness** (``sklearn.manifold.trustworthiness``, cosine distances in the original space, Euclidean in
  2-D, ``k=5``): 1.0 means every 2-D neighbour is also a neighbour in the original space; random placement gives
  about 0.5. On more than 1,000 points it is computed on a seeded sample of 1,000 points (:data:`TRUST_SAMPLE`):
  neighbours are then looked up within the sample, so it measures the same property at a coarser scale.
"""

from __future__ import annotations

import hashlib
import html
import logging
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from diagnose.cache import ArrayCache, default_cache_root, report_corrupt
from diagnose.data import DataError, ValidationReport

log = logging.getLogger(__name__)

Progress = Callable[[str], Any]

DEFAULT_CAP = 4000
#: Altair's default ``MaxRowsError`` limit; we sample below it rather than lifting it.
ALTAIR_MAX_ROWS = 5000
TRUST_SAMPLE = 1000
TRUST_NEIGHBORS = 5
SNIPPET_CHARS = 140
#: Below this many points UMAP has no neighbourhood graph worth the name; :func:`project` uses PCA instead.
MIN_UMAP_POINTS = 8
_CACHE_FORMAT = "diagnose-projection-v1"
#: From this many points on, :func:`recipe_for` switches to the large-collection recipe (see :class:`LayoutRecipe`).
LARGE_N = 20_000
#: The large recipe first reduces the unit rows to this many principal components.
LARGE_PCA_DIMS = 50
#: Layout epochs of the large recipe (umap-learn's own default for more than 10,000 points is 200).
LARGE_EPOCHS = 200
NUMBA_CACHE_ENV = "DIAGNOSE_NUMBA_CACHE"

DOC_ROLES = ("target", "retrieved", "document")
QUERY_ROLES = ("failed query", "query")
ROLES = ("failed query", "query", "target", "retrieved", "document")
EDGE_KINDS = ("target", "top retrieved")


# ---------------------------------------------------------------------------------------------------------------
# What must be on the map
# ---------------------------------------------------------------------------------------------------------------


class FailedQuery(NamedTuple):
    """A failed query and the documents the map must show and link to it.

    ``targets`` are the relevant documents it missed (in the order given), ``retrieved`` the run's top-k in rank
    order (``retrieved[0]`` gets the "top retrieved" edge), ``failure_class`` one class id for the query as a whole.
    """

    query_id: str
    failure_class: str
    targets: tuple[str, ...]
    retrieved: tuple[str, ...]


def failed_queries_from(
    failures: Iterable[Any], run_lists: Mapping[str, Sequence[str]], k: int
) -> list[FailedQuery]:
    """Group per-(query, target) failures into one :class:`FailedQuery` per query.

    ``failures``: objects with ``query_id``, ``doc_id`` (the missed target) and ``cls`` (the class id), such as
    :class:`diagnose.failures.Failure`. ``run_lists``: ``{query_id: [doc_id, ...]}`` in rank order
    (``Run.ranked_lists()``); the first ``k`` become ``retrieved``.

    A query with several targets of different classes gets its most frequent class; a tie goes to the class of its
    first failure in the order given (the taxonomy's rule order when the failures come from ``diagnose_run``).
    """
    by_query: dict[str, list[Any]] = {}
    for f in failures:
        by_query.setdefault(str(f.query_id), []).append(f)
    out: list[FailedQuery] = []
    for qid, fs in by_query.items():
        counts: dict[str, int] = {}
        for f in fs:
            counts[str(f.cls)] = counts.get(str(f.cls), 0) + 1
        best = max(counts.values())
        cls = next(str(f.cls) for f in fs if counts[str(f.cls)] == best)
        targets = tuple(dict.fromkeys(str(f.doc_id) for f in fs))
        retrieved = tuple(str(d) for d in list(run_lists.get(qid, ()))[: max(k, 0)])
        out.append(FailedQuery(qid, cls, targets, retrieved))
    return out


def must_keep(failed: Iterable[FailedQuery]) -> tuple[set[str], set[str]]:
    """``(must_docs, must_queries)``: every failed query, its targets and its top-k retrieved documents."""
    docs: set[str] = set()
    queries: set[str] = set()
    for f in failed:
        queries.add(f.query_id)
        docs.update(f.targets)
        docs.update(f.retrieved)
    return docs, queries


# ---------------------------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MapSample:
    """Rows chosen for the map. Unpacks as ``doc_rows, query_rows = sample``.

    ``doc_rows`` / ``query_rows``: int64 positions into the ``doc_ids`` / ``query_ids`` given, ascending.
    ``n_docs`` / ``n_queries``: how many there were in all. ``n_must_docs`` / ``n_must_queries``: how many were kept
    because they had to be. ``unplaced_docs`` / ``unplaced_queries``: must-keep ids that are not among the ids given
    (e.g. a target missing from the corpus, the ``missing_document`` class): they cannot be drawn and are listed here
    rather than dropped silently. When the must-keep rows alone exceed ``cap`` they are all kept anyway
    (``over_cap``), and the caller decides (a smaller k, fewer failed queries).
    """

    doc_rows: np.ndarray
    query_rows: np.ndarray
    n_docs: int
    n_queries: int
    n_must_docs: int
    n_must_queries: int
    cap: int
    seed: int
    unplaced_docs: tuple[str, ...] = ()
    unplaced_queries: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self.doc_rows
        yield self.query_rows

    @property
    def n_points(self) -> int:
        return len(self.doc_rows) + len(self.query_rows)

    @property
    def over_cap(self) -> bool:
        return self.n_points > self.cap

    @property
    def sampled(self) -> bool:
        """True when some rows were left out."""
        return len(self.doc_rows) < self.n_docs or len(self.query_rows) < self.n_queries

    def caption(self) -> str:
        """E.g. ``"Showing 3,677 of 50,000 documents and 323 of 323 queries (...)"``."""
        text = (
            f"Showing {len(self.doc_rows):,} of {self.n_docs:,} documents and "
            f"{len(self.query_rows):,} of {self.n_queries:,} queries"
        )
        if self.sampled:
            text += (
                f" (every failed query, its targets and its top-k retrieved documents are shown: "
                f"{self.n_must_queries:,} queries and {self.n_must_docs:,} documents; the others are a random "
                f"sample, seed {self.seed}, up to {self.cap:,} points)"
            )
        if self.unplaced_docs:
            text += f"; {len(self.unplaced_docs):,} target/retrieved ids are not in the corpus and cannot be drawn"
        return text + "."


def _allocate(budget: int, rest_docs: int, rest_queries: int) -> tuple[int, int]:
    """Split ``budget`` between the two pools in proportion to their sizes (largest remainder, docs first)."""
    total = rest_docs + rest_queries
    if budget >= total:
        return rest_docs, rest_queries
    if budget <= 0 or total == 0:
        return 0, 0
    nq = int(budget * rest_queries // total)
    nd = int(budget * rest_docs // total)
    left = budget - nq - nd  # 0 or 1
    if left:
        if budget * rest_docs % total >= budget * rest_queries % total and nd < rest_docs:
            nd += left
        else:
            nq += left
    return min(nd, rest_docs), min(nq, rest_queries)


def sample_for_map(
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    *,
    must_docs: Iterable[str] = (),
    must_queries: Iterable[str] = (),
    cap: int = DEFAULT_CAP,
    seed: int = 0,
) -> MapSample:
    """Choose at most ``cap`` points (documents + queries) for the map, always keeping the must-keep ids.

    The must-keep rows come first; the remaining budget ``cap - must`` is split between the other documents and
    the other queries in proportion to how many there are (so the sample keeps the corpus's mix), and each pool is
    sampled uniformly without replacement with ``numpy.random.default_rng(seed)``. Same inputs and seed => same rows.
    An id listed in ``doc_ids`` several times is kept or dropped as a whole. Returns a :class:`MapSample` (which
    unpacks as ``(doc_rows, query_rows)``).
    """
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    d_ids = np.asarray(list(doc_ids), dtype=object)
    q_ids = np.asarray(list(query_ids), dtype=object)
    must_d = {str(x) for x in must_docs}
    must_q = {str(x) for x in must_queries}
    d_mask = np.fromiter((d in must_d for d in d_ids), dtype=bool, count=len(d_ids))
    q_mask = np.fromiter((q in must_q for q in q_ids), dtype=bool, count=len(q_ids))
    unplaced_d = tuple(sorted(must_d - set(d_ids.tolist())))
    unplaced_q = tuple(sorted(must_q - set(q_ids.tolist())))

    must_rows_d = np.flatnonzero(d_mask)
    must_rows_q = np.flatnonzero(q_mask)
    rest_d = np.flatnonzero(~d_mask)
    rest_q = np.flatnonzero(~q_mask)
    budget = cap - len(must_rows_d) - len(must_rows_q)
    nd, nq = _allocate(budget, len(rest_d), len(rest_q))
    rng = np.random.default_rng(seed)
    pick_d = rng.choice(rest_d, size=nd, replace=False) if nd < len(rest_d) else rest_d
    pick_q = rng.choice(rest_q, size=nq, replace=False) if nq < len(rest_q) else rest_q
    return MapSample(
        doc_rows=np.sort(np.concatenate([must_rows_d, pick_d]).astype(np.int64)),
        query_rows=np.sort(np.concatenate([must_rows_q, pick_q]).astype(np.int64)),
        n_docs=len(d_ids),
        n_queries=len(q_ids),
        n_must_docs=len(must_rows_d),
        n_must_queries=len(must_rows_q),
        cap=int(cap),
        seed=int(seed),
        unplaced_docs=unplaced_d,
        unplaced_queries=unplaced_q,
    )


def stack_vectors(sample: MapSample, doc_vecs: np.ndarray, query_vecs: np.ndarray) -> np.ndarray:
    """The matrix :func:`project` expects for ``sample``: sampled document rows first, then sampled query rows."""
    d = np.asarray(doc_vecs)[sample.doc_rows]
    q = np.asarray(query_vecs)[sample.query_rows]
    if d.shape[1:] != q.shape[1:]:
        raise DataError(
            f"Document vectors have {d.shape[1:]} dimensions and query vectors {q.shape[1:]}: they must come from the "
            "same model (same --model, or precomputed files from the same index)."
        )
    return np.concatenate([d, q]).astype(np.float32, copy=False)


# ---------------------------------------------------------------------------------------------------------------
# Projection
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """2-D coordinates of the rows given to :func:`project`, and how far to trust them.

    ``coords``: float32 ``(n, 2)``, same row order as the input. ``trustworthiness``: in [0, 1], NaN when there are
    too few points to measure it; computed on ``trust_points`` points (all of them up to :data:`TRUST_SAMPLE`) with
    ``trust_neighbors`` neighbours. ``method``: ``"umap"``, or ``"pca"`` for fewer than :data:`MIN_UMAP_POINTS`
    points. ``cached``: loaded from disk. ``seconds``: wall time of this call.
    """

    coords: np.ndarray
    trustworthiness: float
    trust_points: int
    trust_neighbors: int
    n_neighbors: int
    min_dist: float
    seed: int | None
    method: str
    cached: bool
    seconds: float
    key: str
    recipe: str = ""

    def describe(self) -> str:
        """One line for the UI, e.g. ``"Trustworthiness 0.93 (k=5, on 1,000 of 3,956 points): ..."``."""
        n = len(self.coords)
        if np.isnan(self.trustworthiness):
            return "Too few points to measure how well the 2-D map keeps neighbourhoods."
        on = f"on {self.trust_points:,} of {n:,} points" if self.trust_points < n else f"on all {n:,} points"
        return (
            f"Trustworthiness {self.trustworthiness:.2f} (k={self.trust_neighbors}, {on}): the share of 2-D "
            "neighbourhoods that are real neighbourhoods in the embedding space (1 = all, ~0.5 = random). "
            "Read closeness on the map as a hint, and check cosines in the query inspector."
        )


@dataclass(frozen=True)
class LayoutRecipe:
    """How :func:`project` builds the neighbour graph and the layout.

    ``knn``: ``"exact"`` (:func:`exact_cosine_knn`, a blocked ``X @ X.T``: O(n^2), right for the sampled map) or
    ``"nndescent"`` (pynndescent's approximate graph, ``low_memory=True``: O(n log n)-ish, for whole collections).
    ``pca_dims``: reduce the unit rows to this many principal components first (None: keep every dimension). On
    unit rows Euclidean distance is a monotone function of cosine (``|a-b|^2 = 2 - 2 cos``), and PCA is an
    orthogonal projection, so Euclidean neighbours after PCA approximate cosine neighbours before it.
    ``n_epochs``: layout epochs (None: umap-learn's default, 500 below 10,000 points, else 200).
    Trustworthiness is always measured against cosine in the original space, so a cheaper recipe cannot hide
    a worse map.
    """

    knn: str = "exact"
    pca_dims: int | None = None
    n_epochs: int | None = None

    def __post_init__(self) -> None:
        if self.knn not in ("exact", "nndescent"):
            raise ValueError(f"knn must be 'exact' or 'nndescent', got {self.knn!r}")
        if self.pca_dims is not None and self.pca_dims < 2:
            raise ValueError(f"pca_dims must be >= 2 or None, got {self.pca_dims}")
        if self.n_epochs is not None and self.n_epochs < 1:
            raise ValueError(f"n_epochs must be >= 1 or None, got {self.n_epochs}")

    @property
    def is_exact_default(self) -> bool:
        return self == LayoutRecipe()

    def tag(self) -> str:
        return f"knn={self.knn},pca={self.pca_dims},epochs={self.n_epochs}"

    def describe(self) -> str:
        """E.g. ``"PCA to 50 dimensions, approximate neighbours (NN-descent), 200 epochs"``."""
        parts = []
        if self.pca_dims:
            parts.append(f"PCA to {self.pca_dims} dimensions")
        parts.append(
            "exact cosine neighbours" if self.knn == "exact" else "approximate neighbours (NN-descent)"
        )
        parts.append(f"{self.n_epochs} epochs" if self.n_epochs else "umap-learn's default epochs")
        return ", ".join(parts)


def recipe_for(n: int, *, large_n: int = LARGE_N) -> LayoutRecipe:
    """The recipe :func:`project` uses for ``n`` points: exact below ``large_n``, else PCA to
    :data:`LARGE_PCA_DIMS` + NN-descent + :data:`LARGE_EPOCHS` epochs (measured in ``bench/RESULTS.md``,
    "map: the whole collection")."""
    if n < large_n:
        return LayoutRecipe()
    return LayoutRecipe(knn="nndescent", pca_dims=LARGE_PCA_DIMS, n_epochs=LARGE_EPOCHS)


def _as_vectors(vectors: np.ndarray) -> np.ndarray:
    arr = np.asarray(vectors)
    if arr.ndim != 2:
        raise DataError(
            f"Vectors to project must be a 2-D matrix (rows x dimensions), got shape {arr.shape}."
        )
    if arr.dtype.kind not in "fiu":
        raise DataError(f"Vectors to project must be numbers, got dtype {arr.dtype}.")
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1)) if arr.size else np.array([], dtype=np.int64)
    if len(bad):
        rows = ", ".join(str(int(r)) for r in bad[:5])
        raise DataError(
            f"{len(bad)} vector row(s) contain NaN or infinity (rows {rows}); re-embed those texts or fix the "
            "precomputed embedding file."
        )
    return arr


def cache_key(
    vectors: np.ndarray,
    *,
    n_neighbors: int,
    min_dist: float,
    seed: int | None,
    recipe: LayoutRecipe | None = None,
) -> str:
    """Hex SHA-256 of the vectors' bytes, shape and dtype, the parameters, the umap-learn version and (when it is
    not the exact default) the :class:`LayoutRecipe`; keys of maps made with the default recipe are unchanged."""
    arr = np.ascontiguousarray(vectors)
    h = hashlib.sha256()
    h.update(_CACHE_FORMAT.encode())
    h.update(f"|shape={arr.shape}|dtype={arr.dtype.str}|".encode())
    h.update(memoryview(arr).cast("B") if arr.size else b"")
    h.update(
        f"|n_neighbors={int(n_neighbors)}|min_dist={float(min_dist)!r}|seed={seed}|umap={_umap_version()}"
        f"|trust={TRUST_SAMPLE},{TRUST_NEIGHBORS}".encode()
    )
    if recipe is not None and not recipe.is_exact_default:
        h.update(f"|recipe={recipe.tag()}".encode())
    return h.hexdigest()


def _umap_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("umap-learn")
    except PackageNotFoundError:  # pragma: no cover - umap-learn is a hard dependency
        return "absent"


def default_projection_dir() -> Path:
    """``$DIAGNOSE_CACHE_DIR/projections``, else ``platformdirs.user_cache_dir("diagnose")/projections``."""
    return default_cache_root() / "projections"


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def exact_cosine_knn(vectors: np.ndarray, k: int, *, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours under cosine distance, in umap-learn's ``precomputed_knn`` layout.

    Returns ``(indices int64 [n, k], distances float32 [n, k])``; column 0 is the point itself at distance 0 (umap's
    convention), then neighbours by increasing distance ``1 - cos`` (clipped to [0, 2]), ties by lower row index.
    A zero vector has cosine 0 with everything (distance 1). Memory: ``block x n`` floats at a time.
    """
    x = _unit_rows(vectors)
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


_NUMBA_CACHE_DONE = False


def enable_numba_cache() -> int:
    """Switch numba's on-disk cache on for umap-learn's jitted functions; returns how many were switched.

    umap-learn declares its functions without ``cache=True``, so each new process recompiles them (tens of seconds on
    2 cores). ``Dispatcher.enable_caching()`` is what ``cache=True`` does at decoration time; the cache goes where
    numba puts every cache (``NUMBA_CACHE_DIR`` if set, else a ``__pycache__`` next to umap's sources when writable,
    else the user cache dir) and is invalidated by numba when umap's source files change. Idempotent; does nothing
    when ``DIAGNOSE_NUMBA_CACHE=0``; never raises.
    """
    global _NUMBA_CACHE_DONE
    if _NUMBA_CACHE_DONE or os.environ.get(NUMBA_CACHE_ENV, "1").strip() in ("0", "false", "no"):
        return 0
    _NUMBA_CACHE_DONE = True
    count = 0
    try:
        import umap.distances
        import umap.layouts
        import umap.umap_
        import umap.utils
        from numba.core.registry import CPUDispatcher

        for mod in (umap.umap_, umap.layouts, umap.utils, umap.distances):
            for obj in list(vars(mod).values()):
                if isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__:
                    try:
                        obj.enable_caching()
                        count += 1
                    except Exception as e:  # no writable cache location, or an old numba
                        log.debug("numba caching not enabled for %s: %s", obj, e)
    except Exception as e:  # pragma: no cover - defensive: caching is an optimisation only
        log.debug("numba caching not enabled: %s", e)
    return count


def _trustworthiness(x: np.ndarray, coords: np.ndarray, seed: int | None) -> tuple[float, int, int]:
    from sklearn.manifold import trustworthiness

    n = len(x)
    if n > TRUST_SAMPLE:
        rows = np.sort(
            np.random.default_rng(0 if seed is None else seed).choice(n, TRUST_SAMPLE, replace=False)
        )
        x, coords = x[rows], coords[rows]
    m = len(x)
    k = min(TRUST_NEIGHBORS, (m - 1) // 2)  # sklearn requires k < m / 2
    if k < 1:
        return float("nan"), m, 0
    t = trustworthiness(x.astype(np.float64), coords.astype(np.float64), n_neighbors=k, metric="cosine")
    return float(t), m, k


def _pca_2d(x: np.ndarray) -> np.ndarray:
    out = np.zeros((len(x), 2), dtype=np.float32)
    if len(x) < 2:
        return out
    c = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    comp = c @ vt[:2].T
    out[:, : comp.shape[1]] = comp
    return out


def _fit_umap(x: np.ndarray, n_neighbors: int, min_dist: float, seed: int | None) -> np.ndarray:
    """One UMAP fit on unit rows ``x`` with exact cosine k-NN (see module docstring). Patched in tests."""
    enable_numba_cache()
    import umap

    k = min(n_neighbors, len(x) - 1)
    knn_idx, knn_dist = exact_cosine_knn(x, k)
    with warnings.catch_warnings():
        # "precomputed_knn[2] is not an NNDescent object: transform unavailable": we never call transform.
        warnings.filterwarnings("ignore", message=".*knn_search_index.*")
        warnings.filterwarnings("ignore", message=".*n_jobs value.*")
        reducer = umap.UMAP(
            n_neighbors=k,
            min_dist=min_dist,
            metric="cosine",
            random_state=seed,
            n_jobs=1 if seed is not None else -1,
            precomputed_knn=(knn_idx, knn_dist, None),
            verbose=False,
        )
        coords = reducer.fit_transform(x)
    return np.asarray(coords, dtype=np.float32)


class _StepsOnly:
    """A reporter over a plain ``callable(message)`` (or nothing): stages are passed on, bars ignored."""

    def __init__(self, say: Progress | None) -> None:
        self.say = say

    def step(self, label: str) -> None:
        if self.say is not None:
            self.say(label)

    def bar(self, label: str) -> Callable[[int, int], Any]:
        self.step(label)
        return lambda _done, _total: None


class _EpochFile:
    """What umap's epoch bar (tqdm, ``bar_format="{n}/{total}"``) writes to: each refresh becomes a
    ``callback(done, total)`` of the reporter's "Optimising the layout" bar, opened at the first epoch."""

    _DONE = re.compile(r"(\d+)/(\d+)")

    def __init__(self, reporter: Any, label: str) -> None:
        self.reporter, self.label = reporter, label
        self.update: Callable[[int, int], Any] | None = None

    def write(self, text: str) -> int:
        found = self._DONE.findall(text)
        if found:
            if self.update is None:
                self.update = self.reporter.bar(self.label)
            self.update(int(found[-1][0]), int(found[-1][1]))
        return len(text)

    def flush(self) -> None:
        return None


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


def _fit_umap_large(
    x: np.ndarray, n_neighbors: int, min_dist: float, seed: int | None, recipe: LayoutRecipe, reporter: Any
) -> np.ndarray:
    """UMAP of unit rows ``x`` with a non-default :class:`LayoutRecipe`, each stage announced to ``reporter``."""
    enable_numba_cache()
    import umap

    n = len(x)
    k = min(n_neighbors, n - 1)
    y = x
    if recipe.pca_dims and recipe.pca_dims < x.shape[1]:
        reporter.step(f"Reducing {n:,} vectors to {recipe.pca_dims} dimensions (PCA)")
        y = pca(x, recipe.pca_dims)
    if recipe.knn == "exact":
        reporter.step(f"Building the neighbour graph (exact, {k} neighbours of {n:,} points)")
        knn_idx, knn_dist = exact_cosine_knn(y, k) if y is x else _exact_euclidean_knn(y, k)
        metric = "cosine" if y is x else "euclidean"
    else:
        from pynndescent import NNDescent

        reporter.step(f"Building the neighbour graph (NN-descent, {k} neighbours of {n:,} points)")
        metric = "cosine" if y is x else "euclidean"
        index = NNDescent(
            y, metric=metric, n_neighbors=k, random_state=seed, low_memory=True,
            n_jobs=1 if seed is not None else -1, verbose=False, compressed=True,
        )  # fmt: skip
        knn_idx, knn_dist = index.neighbor_graph
        del index
    reporter.step("Optimising the layout: fuzzy graph and spectral start")
    epochs = _EpochFile(reporter, "Optimising the layout (epochs)")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*knn_search_index.*")
        warnings.filterwarnings("ignore", message=".*n_jobs value.*")
        reducer = umap.UMAP(
            n_neighbors=k, min_dist=min_dist, metric=metric, random_state=seed,
            n_jobs=1 if seed is not None else -1, precomputed_knn=(knn_idx, knn_dist, None),
            n_epochs=recipe.n_epochs, low_memory=True, verbose=False,
            tqdm_kwds={"disable": False, "file": epochs, "bar_format": "{n}/{total}", "mininterval": 0.5},
        )  # fmt: skip
        coords = reducer.fit_transform(y)
    return np.asarray(coords, dtype=np.float32)


def _exact_euclidean_knn(y: np.ndarray, k: int, *, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
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


def project(
    vectors: np.ndarray,
    *,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    seed: int | None = 42,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: Progress | Any | None = None,
    report: ValidationReport | None = None,
    recipe: LayoutRecipe | None = None,
) -> Projection:
    """UMAP of ``vectors`` (rows = points) to 2-D, cosine metric, with trustworthiness; cached on disk.

    ``recipe``: how the neighbour graph and layout are built (default :func:`recipe_for` the number of points:
    exact below :data:`LARGE_N`). ``progress``: a ``callable(message)`` or a :class:`diagnose.progress.Reporter`
    (then the large recipe also reports its stages and the layout's epochs as a bar).

    ``seed``: an int makes the map deterministic (umap-learn then runs single-threaded); ``None`` runs in parallel
    and every fit differs. ``cache_dir``: folder of the coordinate cache (default :func:`default_projection_dir`);
    ``use_cache=False`` neither reads nor writes it. The key is :func:`cache_key`: same bytes, shape, dtype,
    parameters and umap-learn version => same file. Each file (coordinates, trustworthiness) carries a checksum of
    its values and its full key (:class:`diagnose.cache.ArrayCache`); one that does not verify, or holds NaN, is
    reported (``cache_corrupt`` in ``report``, else a :class:`diagnose.cache.CacheWarning`), deleted and recomputed. ``progress(message)`` is called
    before each slow step.

    Edge cases: 0 points -> empty coordinates; fewer than :data:`MIN_UMAP_POINTS` points -> the first two principal
    components (UMAP needs a neighbourhood graph); ``n_neighbors`` larger than ``n - 1`` is reduced to ``n - 1``.
    Rows with NaN/inf raise :class:`DataError`. Rows are L2-normalised before anything (cosine ignores length).
    """
    t0 = time.perf_counter()
    if progress is not None and hasattr(progress, "step") and hasattr(progress, "bar"):
        reporter = progress
    else:
        reporter = _StepsOnly(progress)
    say = reporter.step
    arr = _as_vectors(vectors)
    n = len(arr)
    if n_neighbors < 2:
        raise ValueError(f"n_neighbors must be >= 2, got {n_neighbors}")
    recipe = recipe or recipe_for(n)
    key = cache_key(arr, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed, recipe=recipe)
    cache = ArrayCache(Path(cache_dir) if cache_dir is not None else default_projection_dir(), report=report)

    def done(coords: np.ndarray, trust: tuple[float, int, int], method: str, cached: bool) -> Projection:
        return Projection(
            coords=coords,
            trustworthiness=trust[0],
            trust_points=trust[1],
            trust_neighbors=trust[2],
            n_neighbors=n_neighbors,
            min_dist=min_dist,
            seed=seed,
            method=method,
            cached=cached,
            seconds=time.perf_counter() - t0,
            key=key,
            recipe="" if method == "pca" else recipe.describe(),
        )

    if n == 0:
        return done(np.zeros((0, 2), dtype=np.float32), (float("nan"), 0, 0), "umap", False)
    x = _unit_rows(arr)
    method = "umap" if n >= MIN_UMAP_POINTS else "pca"
    if use_cache:
        coords = cache.get(key, dtype=np.float32, shape=(n, 2))
        meta = cache.get(key + "/trust", dtype=np.float64, shape=(3,))
        if coords is not None and not np.isfinite(coords).all():
            report_corrupt(report, cache.path_for(key), "coordinates contain NaN or infinity")
            coords = None
        if coords is not None:
            say("Loaded the map coordinates from the cache")
            if meta is not None:
                trust = (float(meta[0]), int(meta[1]), int(meta[2]))
            else:
                trust = _trustworthiness(x, coords, seed)
                cache.put(key + "/trust", np.asarray(trust, dtype=np.float64))
            return done(np.array(coords, dtype=np.float32), trust, method, True)

    if method == "pca":
        coords = _pca_2d(x)
    else:
        say(
            f"Projecting {n:,} points with UMAP (cosine, n_neighbors={min(n_neighbors, n - 1)}, min_dist={min_dist}); "
            "the first map in a new process also compiles numba code"
        )
        if recipe.is_exact_default:
            coords = _fit_umap(x, n_neighbors, min_dist, seed)
        else:
            coords = _fit_umap_large(x, n_neighbors, min_dist, seed, recipe, reporter)
    say("Measuring trustworthiness of the 2-D neighbourhoods")
    trust = _trustworthiness(x, coords, seed)
    if use_cache:
        cache.put(key, coords)
        cache.put(key + "/trust", np.asarray(trust, dtype=np.float64))
    return done(coords, trust, method, False)


# ---------------------------------------------------------------------------------------------------------------
# Tables for the chart
# ---------------------------------------------------------------------------------------------------------------

_TAG = re.compile(r"<[^>]{0,200}>")
_WS = re.compile(r"\s+")


_LONGEST_ENTITY = 33  # "&CounterClockwiseContourIntegral;"


def _clean(text: str) -> str:
    """HTML tags removed, entities decoded, whitespace collapsed."""
    return _WS.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def snippet(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    """Plain-text start of ``text``: HTML tags removed, entities decoded, whitespace collapsed, at most ``limit``
    characters, cut at a word boundary when one is in the last 40% and ended with "…" when cut."""
    if not text:
        return ""
    text = str(text)
    # Cleaning a long document whole costs more than the map's other steps: clean a prefix, and keep the result
    # only when it reaches well past the snippet, so that an entity cut at its end ("&nb" of "&nbsp;", at most 32
    # characters) cannot reach the snippet. A tag cut in half is left out of the prefix.
    head = text[: 4 * limit + 256]
    if len(head) < len(text):
        tag = head.rfind("<")
        if tag > head.rfind(">"):
            head = head[:tag]
        t = _clean(head)
        if len(t) <= limit + _LONGEST_ENTITY:  # mostly markup: clean the whole text
            t = _clean(text)
    else:
        t = _clean(text)
    if len(t) <= limit:
        return t
    cut = t[: limit - 1]
    space = cut.rfind(" ")
    if space >= int(limit * 0.6):
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


MAP_COLUMNS = ("x", "y", "kind", "id", "snippet", "role", "failure_class")
EDGE_COLUMNS = ("x", "y", "x2", "y2", "query_id", "edge")


def map_frame(
    coords: np.ndarray,
    sample: MapSample,
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    failed: Iterable[FailedQuery] = (),
) -> pd.DataFrame:
    """The tidy table the map draws, one row per point, documents first (in ``sample`` order), then queries.

    ``coords``: :attr:`Projection.coords` of ``stack_vectors(sample, ...)``. ``doc_ids/doc_texts`` and
    ``query_ids/query_texts`` are the full aligned lists the sample indexes into.

    Columns: ``x, y`` (float), ``kind`` ("document" | "query"), ``id``, ``snippet`` (first ~140 characters, plain
    text), ``role`` and ``failure_class``. A query's role is "failed query" or "query"; a document's is "target" (a
    missed relevant document of some failed query), else "retrieved" (in the top-k of some failed query), else
    "document". ``failure_class`` is the failed query's class id; "" for every other point (a document can be the
    target of several queries of different classes, so it gets none).
    """
    coords = np.asarray(coords)
    n_d, n_q = len(sample.doc_rows), len(sample.query_rows)
    if coords.shape != (n_d + n_q, 2):
        raise ValueError(
            f"coords has shape {coords.shape}, expected ({n_d + n_q}, 2) for {n_d} documents + {n_q} queries"
        )
    failed = list(failed)
    cls_of = {f.query_id: f.failure_class for f in failed}
    targets = {d for f in failed for d in f.targets}
    retrieved = {d for f in failed for d in f.retrieved}
    d_ids = [str(doc_ids[i]) for i in sample.doc_rows]
    q_ids = [str(query_ids[i]) for i in sample.query_rows]
    d_role = ["target" if d in targets else "retrieved" if d in retrieved else "document" for d in d_ids]
    q_role = ["failed query" if q in cls_of else "query" for q in q_ids]
    return pd.DataFrame(
        {
            "x": coords[:, 0].astype(np.float64),
            "y": coords[:, 1].astype(np.float64),
            "kind": ["document"] * n_d + ["query"] * n_q,
            "id": d_ids + q_ids,
            "snippet": [snippet(doc_texts[i]) for i in sample.doc_rows]
            + [snippet(query_texts[i]) for i in sample.query_rows],
            "role": d_role + q_role,
            "failure_class": [""] * n_d + [cls_of.get(q, "") for q in q_ids],
        },
        columns=list(MAP_COLUMNS),
    )


def map_edges(points: pd.DataFrame, failed: Iterable[FailedQuery]) -> pd.DataFrame:
    """Lines from each failed query on the map to each of its targets and to its top retrieved document.

    Columns ``x, y`` (the query), ``x2, y2`` (the document), ``query_id``, ``edge`` ("target" | "top retrieved").
    Documents or queries not on the map (sampled out cannot happen for must-keep ids; missing from the corpus can)
    get no line. Order: failed queries in the order given, targets before the top retrieved document.
    """
    docs = points[points["kind"] == "document"]
    queries = points[points["kind"] == "query"]
    d_xy = {i: (x, y) for i, x, y in zip(docs["id"], docs["x"], docs["y"], strict=True)}
    q_xy = {i: (x, y) for i, x, y in zip(queries["id"], queries["x"], queries["y"], strict=True)}
    rows: list[tuple[float, float, float, float, str, str]] = []
    for f in failed:
        if f.query_id not in q_xy:
            continue
        qx, qy = q_xy[f.query_id]
        for t in f.targets:
            if t in d_xy:
                rows.append((qx, qy, *d_xy[t], f.query_id, "target"))
        if f.retrieved and f.retrieved[0] in d_xy:
            rows.append((qx, qy, *d_xy[f.retrieved[0]], f.query_id, "top retrieved"))
    return pd.DataFrame(rows, columns=list(EDGE_COLUMNS)).astype(
        {"x": float, "y": float, "x2": float, "y2": float, "query_id": object, "edge": object}
    )


@dataclass(frozen=True)
class EmbeddingMap:
    """Everything the map page needs: the two tables, the sample (for the caption) and the projection."""

    points: pd.DataFrame
    edges: pd.DataFrame
    sample: MapSample
    projection: Projection


def build_map(
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    doc_vecs: np.ndarray,
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    query_vecs: np.ndarray,
    failed: Sequence[FailedQuery] = (),
    cap: int = DEFAULT_CAP,
    sample_seed: int = 0,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    seed: int | None = 42,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: Progress | Any | None = None,
    report: ValidationReport | None = None,
    recipe: LayoutRecipe | None = None,
) -> EmbeddingMap:
    """Sample, project, and tabulate in one call (see the module docstring for each step).

    The ``doc_*`` and ``query_*`` sequences are aligned (row i of ``doc_vecs`` is ``doc_ids[i]``), e.g. a
    :class:`diagnose.space.VectorSpace`'s ids and vectors with the matching texts.
    """
    if len(doc_ids) != len(doc_vecs) or len(doc_ids) != len(doc_texts):
        raise ValueError(
            f"{len(doc_ids)} doc ids, {len(doc_texts)} texts and {len(doc_vecs)} vectors: must be aligned"
        )
    if len(query_ids) != len(query_vecs) or len(query_ids) != len(query_texts):
        raise ValueError(
            f"{len(query_ids)} query ids, {len(query_texts)} texts and {len(query_vecs)} vectors: must be aligned"
        )
    must_d, must_q = must_keep(failed)
    sample = sample_for_map(
        doc_ids, query_ids, must_docs=must_d, must_queries=must_q, cap=cap, seed=sample_seed
    )
    vecs = stack_vectors(sample, doc_vecs, query_vecs)
    proj = project(
        vecs,
        n_neighbors=n_neighbors,
        min_dist=min_dist,
        seed=seed,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
        report=report,
        recipe=recipe,
    )
    points = map_frame(
        proj.coords,
        sample,
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        query_ids=query_ids,
        query_texts=query_texts,
        failed=failed,
    )
    return EmbeddingMap(points=points, edges=map_edges(points, failed), sample=sample, projection=proj)


def project_collection(
    doc_vecs: np.ndarray, query_vecs: np.ndarray, *, large_n: int = LARGE_N, **kwargs: Any
) -> Projection:
    """:func:`project` of every document and then every query (the rows :func:`build_whole_map` draws), with
    :func:`recipe_for` their number (``large_n``: where the large recipe starts). ``kwargs`` go to :func:`project`
    (``cache_dir``, ``progress``, ``report``...). Minutes for 100k points on 2 cores the first time, then read from
    the coordinate cache (same vectors, same parameters => same key, whichever run is diagnosed)."""
    d, q = np.asarray(doc_vecs), np.asarray(query_vecs)
    sample = sample_for_map(range(len(d)), range(len(q)), cap=len(d) + len(q))
    vecs = stack_vectors(sample, d, q)
    kwargs.setdefault("recipe", recipe_for(len(vecs), large_n=large_n))
    return project(vecs, **kwargs)


def build_whole_map(
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    doc_vecs: np.ndarray,
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    query_vecs: np.ndarray,
    failed: Sequence[FailedQuery] = (),
    projected: Projection | None = None,
    **kwargs: Any,
) -> EmbeddingMap:
    """The map of *every* document and query (no sampling), for the deck.gl chart
    (:func:`diagnose.deck.embedding_deck`). ``projected``: the :func:`project_collection` of these vectors when
    already computed (the app computes it once per data and model, in a background thread); else it is computed
    here with ``kwargs``. Unplaced must-keep ids (targets missing from the corpus) are listed in the sample as in
    :func:`build_map`."""
    if len(doc_ids) != len(doc_vecs) or len(doc_ids) != len(doc_texts):
        raise ValueError(
            f"{len(doc_ids)} doc ids, {len(doc_texts)} texts and {len(doc_vecs)} vectors: must be aligned"
        )
    if len(query_ids) != len(query_vecs) or len(query_ids) != len(query_texts):
        raise ValueError(
            f"{len(query_ids)} query ids, {len(query_texts)} texts and {len(query_vecs)} vectors: must be aligned"
        )
    must_d, must_q = must_keep(failed)
    n = len(doc_ids) + len(query_ids)
    sample = sample_for_map(doc_ids, query_ids, must_docs=must_d, must_queries=must_q, cap=n)
    proj = projected if projected is not None else project_collection(doc_vecs, query_vecs, **kwargs)
    if proj.coords.shape != (n, 2):
        raise ValueError(f"projected has {len(proj.coords)} points, expected {n} (every document and query)")
    points = map_frame(
        proj.coords, sample, doc_ids=doc_ids, doc_texts=doc_texts, query_ids=query_ids, query_texts=query_texts,
        failed=failed,
    )  # fmt: skip
    return EmbeddingMap(points=points, edges=map_edges(points, failed), sample=sample, projection=proj)
