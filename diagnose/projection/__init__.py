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

Choices and their reasons (measured in ``bench/RESULTS.md`` under ``umap``; the tables in its git history):

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
  are *not* ``cache=True``, so every new process pays their compilation again; so are most of pynndescent's
  NN-descent functions (the large recipe's neighbour graph). :func:`enable_numba_cache` switches numba's caching on
  for those functions (``Dispatcher.enable_caching()``; not for pynndescent's functions that take the metric as an
  argument, which numba cannot reuse across processes); :func:`project` calls it unless
  ``DIAGNOSE_NUMBA_CACHE=0``. Any failure to enable it is ignored (the fit just compiles as usual).
- **Trustworthiness** (``sklearn.manifold.trustworthiness``, cosine distances in the original space, Euclidean in
  2-D, ``k=5``): 1.0 means every 2-D neighbour is also a neighbour in the original space; random placement gives
  about 0.5. On more than 1,000 points it is computed on a seeded sample of 1,000 points (:data:`TRUST_SAMPLE`):
  neighbours are then looked up within the sample, so it measures the same property at a coarser scale.

One file per step:

- :mod:`~diagnose.projection.sampling`: what must be on the map (:class:`FailedQuery`, :func:`failed_queries_from`,
  :func:`must_keep`) and the seeded sample around it (:class:`MapSample`, :func:`sample_for_map`,
  :func:`stack_vectors`).
- :mod:`~diagnose.projection.knn`: unit rows, exact cosine / Euclidean k-NN, PCA.
- :mod:`~diagnose.projection.layout`: :class:`Projection`, :class:`LayoutRecipe` and :func:`recipe_for`, the
  coordinate cache key, the numba cache switch, the UMAP fits, trustworthiness, :func:`project`.
- :mod:`~diagnose.projection.frames`: :func:`snippet`, :func:`map_frame`, :func:`map_edges`, :func:`map_lines` (the chart's tables).
- :mod:`~diagnose.projection.maps`: :class:`EmbeddingMap`, :func:`build_map`, :func:`project_collection`,
  :func:`build_whole_map`.

Every name below is importable from ``diagnose.projection`` itself.
"""

from __future__ import annotations

from diagnose.cache import ArrayCache as ArrayCache  # the coordinate cache's store, read by the tests
from diagnose.projection.frames import (
    DOC_ROLES,
    EDGE_COLUMNS,
    EDGE_KINDS,
    MAP_COLUMNS,
    QUERY_ROLES,
    ROLES,
    SNIPPET_CHARS,
    MapLines,
    map_edges,
    map_frame,
    map_lines,
    snippet,
)
from diagnose.projection.knn import exact_cosine_knn, pca
from diagnose.projection.layout import (
    LARGE_EPOCHS,
    LARGE_N,
    LARGE_PCA_DIMS,
    MIN_UMAP_POINTS,
    NUMBA_CACHE_ENV,
    TRUST_NEIGHBORS,
    TRUST_SAMPLE,
    LayoutRecipe,
    Progress,
    Projection,
    cache_key,
    default_projection_dir,
    enable_numba_cache,
    project,
    recipe_for,
)
from diagnose.projection.layout import umap_version as umap_version
from diagnose.projection.maps import EmbeddingMap, build_map, build_whole_map, project_collection
from diagnose.projection.sampling import (
    ALTAIR_MAX_ROWS,
    DEFAULT_CAP,
    FailedQuery,
    MapSample,
    failed_queries_from,
    must_keep,
    sample_for_map,
    stack_vectors,
)

__all__ = [
    "ALTAIR_MAX_ROWS",
    "DEFAULT_CAP",
    "DOC_ROLES",
    "EDGE_COLUMNS",
    "EDGE_KINDS",
    "EmbeddingMap",
    "FailedQuery",
    "LARGE_EPOCHS",
    "LARGE_N",
    "LARGE_PCA_DIMS",
    "LayoutRecipe",
    "MAP_COLUMNS",
    "MIN_UMAP_POINTS",
    "MapLines",
    "MapSample",
    "NUMBA_CACHE_ENV",
    "Progress",
    "Projection",
    "QUERY_ROLES",
    "ROLES",
    "SNIPPET_CHARS",
    "TRUST_NEIGHBORS",
    "TRUST_SAMPLE",
    "build_map",
    "build_whole_map",
    "cache_key",
    "default_projection_dir",
    "enable_numba_cache",
    "exact_cosine_knn",
    "failed_queries_from",
    "map_edges",
    "map_frame",
    "map_lines",
    "must_keep",
    "pca",
    "project",
    "project_collection",
    "recipe_for",
    "sample_for_map",
    "snippet",
    "stack_vectors",
]
