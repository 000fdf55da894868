"""The 2-D layout: :class:`Projection`, the :class:`LayoutRecipe` and :func:`recipe_for`, the coordinate cache's
:func:`cache_key`, the numba cache switch (:func:`enable_numba_cache`), the UMAP fits, trustworthiness and
:func:`project`, which chains them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache import ArrayCache, default_cache_root, report_corrupt
from diagnose.checks import integer_at_least, one_of, positive_int
from diagnose.data import DataError, ValidationReport
from diagnose.projection.knn import exact_cosine_knn, exact_euclidean_knn, pca, pca_2d, unit_rows
from diagnose.runtime.progress import Progress, Reporter, reporter

log = logging.getLogger(__name__)

TRUST_SAMPLE = 1000
TRUST_NEIGHBORS = 5


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
        one_of(self.knn, "knn", ("exact", "nndescent"))
        if self.pca_dims is not None:
            integer_at_least(self.pca_dims, "pca_dims", 2, note=" or None")
        if self.n_epochs is not None:
            positive_int(self.n_epochs, "n_epochs", note=" or None")

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
        f"|n_neighbors={int(n_neighbors)}|min_dist={float(min_dist)!r}|seed={seed}|umap={umap_version()}"
        f"|trust={TRUST_SAMPLE},{TRUST_NEIGHBORS}".encode()
    )
    if recipe is not None and not recipe.is_exact_default:
        h.update(f"|recipe={recipe.tag()}".encode())
    return h.hexdigest()


def umap_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("umap-learn")
    except PackageNotFoundError:  # pragma: no cover - umap-learn is a hard dependency
        return "absent"


def default_projection_dir() -> Path:
    """``$DIAGNOSE_CACHE_DIR/projections``, else ``platformdirs.user_cache_dir("diagnose")/projections``."""
    return default_cache_root() / "projections"


_UMAP_MODULES = ("umap.umap_", "umap.layouts", "umap.utils", "umap.distances")
# the modules whose jitted functions enable_numba_cache switches; one an installed version lacks is skipped
_PYNNDESCENT_MODULES = (
    "pynndescent.pynndescent_",
    "pynndescent.utils",
    "pynndescent.kernels",
    "pynndescent.rp_trees",
)

_NUMBA_CACHE_DONE = False


def enable_numba_cache() -> int:
    """Switch numba's on-disk cache on for umap-learn's and pynndescent's jitted functions; returns how many were
    switched.

    umap-learn declares its functions without ``cache=True``, so each new process recompiles them (tens of seconds on
    2 cores); so does pynndescent for most of its NN-descent functions (the large recipe's neighbour graph: ~50 CPU s
    of compilation in a new process). ``Dispatcher.enable_caching()`` is what ``cache=True`` does at decoration time;
    the cache goes where numba puts every cache (``NUMBA_CACHE_DIR`` if set, else a ``__pycache__`` next to the
    library's sources when writable, else the user cache dir) and is invalidated by numba when the library's source
    files change. pynndescent's functions that take the metric as an argument (``dist``, ``metric``) are left alone:
    numba keys their cache by the metric function's identity in the process, so every process would miss and write
    another copy. Idempotent; does nothing when ``DIAGNOSE_NUMBA_CACHE=0``; never raises.
    """
    global _NUMBA_CACHE_DONE
    if _NUMBA_CACHE_DONE or os.environ.get(NUMBA_CACHE_ENV, "1").strip() in ("0", "false", "no"):
        return 0
    _NUMBA_CACHE_DONE = True
    try:
        return _cache_dispatchers(_UMAP_MODULES, skip=set()) + _cache_dispatchers(
            _PYNNDESCENT_MODULES, skip={"dist", "metric"}
        )
    except Exception as e:  # pragma: no cover - defensive: caching is an optimisation only
        log.debug("numba caching not enabled: %s", e)
        return 0


def _cache_dispatchers(module_names: tuple[str, ...], *, skip: set[str]) -> int:
    """``enable_caching()`` on the jitted functions defined in the modules ``module_names`` (those installed) that
    take no parameter named in ``skip`` and are not cached yet; returns how many were switched."""
    import importlib
    import inspect

    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    count = 0
    for name in module_names:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        for obj in list(vars(mod).values()):
            if not isinstance(obj, CPUDispatcher) or obj.__module__ != mod.__name__:
                continue
            if not isinstance(obj._cache, NullCache) or skip & set(inspect.signature(obj.py_func).parameters):
                continue
            try:
                obj.enable_caching()
                count += 1
            except Exception as e:  # no writable cache location, or an old numba
                log.debug("numba caching not enabled for %s: %s", obj, e)
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


class _EpochFile:
    """What umap's epoch bar (tqdm, ``bar_format="{n}/{total}"``) writes to: each refresh becomes a
    ``callback(done, total)`` of the reporter's "Optimising the layout" bar, opened at the first epoch."""

    _DONE = re.compile(r"(\d+)/(\d+)")

    def __init__(self, reporter: Reporter, label: str) -> None:
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


def _fit_umap_large(
    x: np.ndarray,
    n_neighbors: int,
    min_dist: float,
    seed: int | None,
    recipe: LayoutRecipe,
    reporter: Reporter,
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
    metric = "cosine" if y is x else "euclidean"  # on unit rows; Euclidean after PCA (see LayoutRecipe)
    if recipe.knn == "exact":
        reporter.step(f"Building the neighbour graph (exact, {k} neighbours of {n:,} points)")
        knn_idx, knn_dist = exact_cosine_knn(y, k) if y is x else exact_euclidean_knn(y, k)
    else:
        from pynndescent import NNDescent

        reporter.step(f"Building the neighbour graph (NN-descent, {k} neighbours of {n:,} points)")
        index = NNDescent(
            y,
            metric=metric,
            n_neighbors=k,
            random_state=seed,
            low_memory=True,
            n_jobs=1 if seed is not None else -1,
            verbose=False,
            compressed=True,
        )
        knn_idx, knn_dist = index.neighbor_graph
        del index
    reporter.step("Optimising the layout: fuzzy graph and spectral start")
    epochs = _EpochFile(reporter, "Optimising the layout (epochs)")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*knn_search_index.*")
        warnings.filterwarnings("ignore", message=".*n_jobs value.*")
        reducer = umap.UMAP(
            n_neighbors=k,
            min_dist=min_dist,
            metric=metric,
            random_state=seed,
            n_jobs=1 if seed is not None else -1,
            precomputed_knn=(knn_idx, knn_dist, None),
            n_epochs=recipe.n_epochs,
            low_memory=True,
            verbose=False,
            tqdm_kwds={"disable": False, "file": epochs, "bar_format": "{n}/{total}", "mininterval": 0.5},
        )
        coords = reducer.fit_transform(y)
    return np.asarray(coords, dtype=np.float32)


def _cached_layout(
    cache: ArrayCache,
    key: str,
    x: np.ndarray,
    seed: int | None,
    report: ValidationReport | None,
    say: Callable[[str], Any],
) -> tuple[np.ndarray, tuple[float, int, int]] | None:
    """``(coords, trust)`` read from the coordinate cache, or ``None`` when absent or not finite (reported). A
    missing trustworthiness entry is measured again and written back."""
    n = len(x)
    coords = cache.get(key, dtype=np.float32, shape=(n, 2))
    meta = cache.get(key + "/trust", dtype=np.float64, shape=(3,))
    if coords is not None and not np.isfinite(coords).all():
        report_corrupt(report, cache.path_for(key), "coordinates contain NaN or infinity")
        coords = None
    if coords is None:
        return None
    say("Loaded the map coordinates from the cache")
    if meta is not None:
        trust = (float(meta[0]), int(meta[1]), int(meta[2]))
    else:
        trust = _trustworthiness(x, coords, seed)
        cache.put(key + "/trust", np.asarray(trust, dtype=np.float64))
    return np.array(coords, dtype=np.float32), trust


def _fit_layout(
    x: np.ndarray,
    method: str,
    n_neighbors: int,
    min_dist: float,
    seed: int | None,
    recipe: LayoutRecipe,
    reporter: Reporter,
) -> np.ndarray:
    """Coordinates of unit rows ``x``: the 2-D PCA for ``method == "pca"``, else the UMAP fit of ``recipe``."""
    if method == "pca":
        return pca_2d(x)
    n = len(x)
    reporter.step(
        f"Projecting {n:,} points with UMAP (cosine, n_neighbors={min(n_neighbors, n - 1)}, min_dist={min_dist}); "
        "the first map in a new process also compiles numba code"
    )
    if recipe.is_exact_default:
        return _fit_umap(x, n_neighbors, min_dist, seed)
    return _fit_umap_large(x, n_neighbors, min_dist, seed, recipe, reporter)


def project(
    vectors: np.ndarray,
    *,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    seed: int | None = 42,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    progress: Progress = None,
    report: ValidationReport | None = None,
    recipe: LayoutRecipe | None = None,
) -> Projection:
    """UMAP of ``vectors`` (rows = points) to 2-D, cosine metric, with trustworthiness; cached on disk.

    ``recipe``: how the neighbour graph and layout are built (default :func:`recipe_for` the number of points:
    exact below :data:`LARGE_N`). ``progress`` (:data:`diagnose.runtime.progress.Progress`): each slow step is announced
    as a stage before it runs; the large recipe also reports the layout's epochs as a bar.

    ``seed``: an int makes the map deterministic (umap-learn then runs single-threaded); ``None`` runs in parallel
    and every fit differs. ``cache_dir``: folder of the coordinate cache (default :func:`default_projection_dir`);
    ``use_cache=False`` neither reads nor writes it. The key is :func:`cache_key`: same bytes, shape, dtype,
    parameters and umap-learn version => same file. Each file (coordinates, trustworthiness) carries a checksum of
    its values and its full key (:class:`diagnose.cache.ArrayCache`); one that does not verify, or holds NaN, is
    reported (``cache_corrupt`` in ``report``, else a :class:`diagnose.cache.CacheWarning`), deleted and recomputed.

    Edge cases: 0 points -> empty coordinates; fewer than :data:`MIN_UMAP_POINTS` points -> the first two principal
    components (UMAP needs a neighbourhood graph); ``n_neighbors`` larger than ``n - 1`` is reduced to ``n - 1``.
    Rows with NaN/inf raise :class:`DataError`. Rows are L2-normalised before anything (cosine ignores length).
    """
    t0 = time.perf_counter()
    steps = reporter(progress)
    arr = _as_vectors(vectors)
    integer_at_least(n_neighbors, "n_neighbors", 2)
    recipe = recipe or recipe_for(len(arr))
    key = cache_key(arr, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed, recipe=recipe)
    cache = ArrayCache(Path(cache_dir) if cache_dir is not None else default_projection_dir(), report=report)
    coords, trust, method, cached = _layout(
        arr, n_neighbors, min_dist, seed, recipe, cache if use_cache else None, key, report, steps
    )
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


def _layout(
    arr: np.ndarray,
    n_neighbors: int,
    min_dist: float,
    seed: int | None,
    recipe: LayoutRecipe,
    cache: ArrayCache | None,
    key: str,
    report: ValidationReport | None,
    steps: Reporter,
) -> tuple[np.ndarray, tuple[float, int, int], str, bool]:
    """``(coords, trust, method, cached)`` of the :func:`project` of ``arr``: read from ``cache`` under ``key`` when
    there (``cache=None``: neither read nor written), else fitted, measured and written."""
    n = len(arr)
    if n == 0:
        return np.zeros((0, 2), dtype=np.float32), (float("nan"), 0, 0), "umap", False
    x = unit_rows(arr)
    method = "umap" if n >= MIN_UMAP_POINTS else "pca"
    if cache is not None:
        hit = _cached_layout(cache, key, x, seed, report, steps.step)
        if hit is not None:
            return hit[0], hit[1], method, True
    coords = _fit_layout(x, method, n_neighbors, min_dist, seed, recipe, steps)
    steps.step("Measuring trustworthiness of the 2-D neighbourhoods")
    trust = _trustworthiness(x, coords, seed)
    if cache is not None:
        cache.put(key, coords)
        cache.put(key + "/trust", np.asarray(trust, dtype=np.float64))
    return coords, trust, method, False
