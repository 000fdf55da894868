"""Embedding map: UMAP projection quality and determinism, the coordinate cache and its keys, bad inputs.

Only two real UMAP fits in this file (module-scoped fixture + one determinism check): the first fit in a process
compiles numba code. Every other test replaces the fit with a fake that counts its calls.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from diagnose import projection as pj
from diagnose.cache import CacheWarning
from diagnose.data import DataError, ValidationReport


def _clusters(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """3 well-separated Gaussian clusters of 100 points in 50-D.

    Centres ~ N(0, 3^2) per coordinate (pairwise distance ~ 3*sqrt(100) = 30); noise with standard deviations
    decaying from 1 to 0.05 across dimensions, i.e. most within-cluster variance in a few directions. (With isotropic
    50-D noise the neighbourhoods inside a cluster are nearly random and trustworthiness sits at ~0.905 for any
    method: nothing to preserve.)
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 50)) * 3
    scale = np.geomspace(1.0, 0.05, 50)
    x = np.concatenate([centres[i] + rng.normal(size=(100, 50)) * scale for i in range(3)])
    return x.astype(np.float32), np.repeat([0, 1, 2], 100)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    x, labels = _clusters()
    cache_dir = tmp_path_factory.mktemp("projections")
    proj = pj.project(x, cache_dir=cache_dir)  # real UMAP fit no. 1
    return SimpleNamespace(x=x, labels=labels, proj=proj, cache_dir=cache_dir)


def test_projection_keeps_clusters_and_neighbourhoods(fitted):
    from sklearn.metrics import silhouette_score

    p = fitted.proj
    assert p.coords.dtype == np.float32 and p.coords.shape == (300, 2) and np.isfinite(p.coords).all()
    assert p.method == "umap" and not p.cached
    assert p.trustworthiness >= 0.9
    assert (p.trust_points, p.trust_neighbors) == (300, 5)
    assert silhouette_score(p.coords, fitted.labels) >= 0.7
    # every point's 5 nearest 2-D neighbours come from its own cluster
    d = np.linalg.norm(p.coords[:, None] - p.coords[None], axis=2)
    np.fill_diagonal(d, np.inf)
    nn = np.argsort(d, axis=1)[:, :5]
    assert (fitted.labels[nn] == fitted.labels[:, None]).mean() >= 0.99
    assert "Trustworthiness" in p.describe()


def test_projection_is_deterministic_with_a_seed(fitted):
    again = pj.project(fitted.x, use_cache=False)  # real UMAP fit no. 2
    assert np.array_equal(again.coords, fitted.proj.coords)


def test_second_call_loads_from_the_cache(fitted, fake_fit):
    p = pj.project(fitted.x, cache_dir=fitted.cache_dir)
    assert fake_fit == []  # no fit: read from disk
    assert p.cached and np.array_equal(p.coords, fitted.proj.coords)
    assert p.trustworthiness == fitted.proj.trustworthiness


def test_parameters_and_bytes_change_the_key(fitted):
    x = fitted.x
    base = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    assert base == pj.cache_key(x.copy(), n_neighbors=15, min_dist=0.1, seed=42)
    others = {
        pj.cache_key(x, n_neighbors=10, min_dist=0.1, seed=42),
        pj.cache_key(x, n_neighbors=15, min_dist=0.2, seed=42),
        pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=None),
        pj.cache_key(x.astype(np.float64), n_neighbors=15, min_dist=0.1, seed=42),
        pj.cache_key(x.reshape(600, 25), n_neighbors=15, min_dist=0.1, seed=42),  # same bytes, other shape
        pj.cache_key(np.roll(x, 1, axis=0), n_neighbors=15, min_dist=0.1, seed=42),
    }
    assert base not in others and len(others) == 6


def test_corrupt_cache_file_warns_and_recomputes(tmp_path, fake_fit):
    x, _ = _clusters(1)
    pj.project(x, cache_dir=tmp_path)
    assert fake_fit == [300]
    key = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    path = tmp_path / pj.ArrayCache(tmp_path).path_for(key).name
    path.write_bytes(b"\x93NUMPY garbage")
    with pytest.warns(CacheWarning, match="unreadable"):
        p = pj.project(x, cache_dir=tmp_path)
    assert fake_fit == [300, 300] and not p.cached
    assert np.array_equal(np.load(path, allow_pickle=False), p.coords)  # rewritten
    # NaN coordinates in a well-formed file: same treatment, reported in the ValidationReport when given one
    np.save(path, np.full((300, 2), np.nan, dtype=np.float32))
    report = ValidationReport()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = pj.project(x, cache_dir=tmp_path, report=report)
    assert fake_fit == [300, 300, 300] and not p.cached
    assert [pr.code for pr in report] == ["cache_corrupt"]


def test_use_cache_false_and_the_env_override(tmp_path, monkeypatch, fake_fit):
    x, _ = _clusters(2)
    pj.project(x, cache_dir=tmp_path, use_cache=False)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "root"))
    assert pj.default_projection_dir() == tmp_path / "root" / "projections"
    pj.project(x)
    assert len(list((tmp_path / "root" / "projections").glob("*.npy"))) == 2  # coordinates + trustworthiness


def test_tiny_and_bad_inputs(tmp_path, fake_fit):
    empty = pj.project(np.zeros((0, 4), dtype=np.float32), cache_dir=tmp_path)
    assert empty.coords.shape == (0, 2) and np.isnan(empty.trustworthiness)
    one = pj.project(np.ones((1, 4), dtype=np.float32), cache_dir=tmp_path)
    assert one.coords.shape == (1, 2) and one.method == "pca" and np.isnan(one.trustworthiness)
    few = pj.project(np.eye(5, dtype=np.float32), cache_dir=tmp_path)
    assert few.method == "pca" and few.coords.shape == (5, 2)
    assert fake_fit == []  # below MIN_UMAP_POINTS no UMAP
    bad = np.ones((4, 3), dtype=np.float32)
    bad[2, 1] = np.nan
    with pytest.raises(DataError, match=r"rows 2"):
        pj.project(bad, cache_dir=tmp_path)
    with pytest.raises(DataError, match="2-D"):
        pj.project(np.ones(5), cache_dir=tmp_path)


def test_numba_cache_switch_respects_the_env(monkeypatch):
    monkeypatch.setattr(pj.layout, "_NUMBA_CACHE_DONE", False)
    monkeypatch.setenv(pj.NUMBA_CACHE_ENV, "0")
    assert pj.enable_numba_cache() == 0


def test_numba_cache_covers_pynndescent_but_not_its_functions_that_take_the_metric(monkeypatch):
    from numba.core.caching import NullCache
    from pynndescent import kernels, pynndescent_, utils

    monkeypatch.setattr(pj.layout, "_NUMBA_CACHE_DONE", False)
    monkeypatch.delenv(pj.NUMBA_CACHE_ENV, raising=False)
    pj.enable_numba_cache()
    # the NN-descent join and candidate building (no metric argument) are cached on disk from now on
    assert not isinstance(kernels.generate_graph_update_array_batched._cache, NullCache)
    assert not isinstance(utils.build_candidates_owner._cache, NullCache)
    # nn_descent takes the metric (``dist``): numba would key its cache by that function's identity in this process
    assert isinstance(pynndescent_.nn_descent._cache, NullCache)
