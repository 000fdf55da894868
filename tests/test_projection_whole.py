"""Embedding map of the whole collection: the large recipe (PCA first) and its cache key, stages reported,
corrupt caches recomputed, every point drawn.
"""

from __future__ import annotations

import numpy as np
import pytest

from diagnose import projection as pj
from diagnose.cache import ArrayCache
from diagnose.data import DataError, ValidationReport


class _Recorder:
    def __init__(self):
        self.steps, self.bars = [], []

    def step(self, label):
        self.steps.append(label)

    def bar(self, label):
        self.steps.append(label)
        return lambda done, total: self.bars.append((done, total))


def _blobs(n, dim=32, k=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim)) * 4
    lab = rng.integers(k, size=n)
    return (centres[lab] + rng.standard_normal((n, dim))).astype(np.float32), lab


def test_recipe_switches_to_the_large_recipe_at_large_n():
    assert pj.recipe_for(19_999).is_exact_default
    big = pj.recipe_for(20_000)
    assert (big.knn, big.pca_dims, big.n_epochs) == ("nndescent", pj.LARGE_PCA_DIMS, pj.LARGE_EPOCHS)
    with pytest.raises(DataError, match="knn"):
        pj.LayoutRecipe(knn="annoy")


def test_large_recipe_changes_the_key_and_the_default_keeps_old_keys():
    x, _ = _blobs(50)
    old = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    assert pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42, recipe=pj.LayoutRecipe()) == old
    assert pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42, recipe=pj.recipe_for(10**6)) != old


def test_pca_keeps_the_distances_of_data_in_a_low_dimensional_subspace():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((200, 5)) @ rng.standard_normal((5, 40))).astype(np.float32)  # rank 5 in 40-d
    y = pj.pca(x, 5)
    d_x = np.linalg.norm(x[:, None] - x[None], axis=2)
    d_y = np.linalg.norm(y[:, None] - y[None], axis=2)
    assert y.shape == (200, 5) and np.allclose(d_x, d_y, atol=1e-3 * d_x.max())


def test_whole_collection_projection_with_the_large_recipe_reports_stages_and_is_cached(tmp_path):
    # 3,000 points with large_n=1,000: PCA to 50 -> 32 dims is a no-op here, so use pca_dims=8 via the recipe
    x, lab = _blobs(3000)
    docs, queries = x[:2900], x[2900:]
    rec = _Recorder()
    recipe = pj.LayoutRecipe(knn="nndescent", pca_dims=8, n_epochs=60)
    p = pj.project_collection(docs, queries, cache_dir=tmp_path, progress=rec, recipe=recipe)
    assert p.coords.shape == (3000, 2) and not p.cached
    text = " | ".join(rec.steps)
    for stage in ("PCA", "neighbour graph", "Optimising the layout", "trustworthiness"):
        assert stage in text, text
    assert rec.bars and rec.bars[-1][1] == 60  # the epochs bar: done / 60
    assert p.trustworthiness >= 0.9  # blobs 4 sd apart: neighbourhoods are kept
    assert "NN-descent" in p.recipe
    again = pj.project_collection(docs, queries, cache_dir=tmp_path, recipe=recipe)
    assert again.cached and np.array_equal(again.coords, p.coords)


def test_a_corrupt_whole_collection_cache_is_reported_and_recomputed(tmp_path, fake_fit):
    x, _ = _blobs(400)
    recipe = pj.LayoutRecipe(knn="exact", pca_dims=None, n_epochs=None)  # the default: patched fit, fast
    p = pj.project_collection(x[:300], x[300:], cache_dir=tmp_path, recipe=recipe)
    path = ArrayCache(tmp_path).path_for(p.key)
    raw = bytearray(path.read_bytes())
    raw[200] ^= 0xFF  # one flipped byte in the coordinates
    path.write_bytes(bytes(raw))
    report = ValidationReport()
    again = pj.project_collection(x[:300], x[300:], cache_dir=tmp_path, recipe=recipe, report=report)
    assert not again.cached and np.array_equal(again.coords, p.coords)
    assert len(report.by_code("cache_corrupt")) == 1


def test_build_whole_map_draws_every_point_with_a_given_projection():
    x, _ = _blobs(60)
    doc_ids = [f"d{i}" for i in range(50)]
    query_ids = [f"q{i}" for i in range(10)]
    failed = [pj.FailedQuery("q3", "near_miss", ("d7",), ("d1", "d2"))]
    proj = pj.project_collection(x[:50], x[50:], use_cache=False)
    emap = pj.build_whole_map(
        doc_ids=doc_ids,
        doc_texts=["t"] * 50,
        doc_vecs=x[:50],
        query_ids=query_ids,
        query_texts=["q"] * 10,
        query_vecs=x[50:],
        failed=failed,
        projected=proj,
    )
    assert len(emap.points) == 60 and not emap.sample.sampled
    assert emap.edges["edge"].tolist() == ["target", "top retrieved"]
    with pytest.raises(ValueError, match="expected 61"):
        pj.build_whole_map(
            doc_ids=[*doc_ids, "extra"],
            doc_texts=["t"] * 51,
            doc_vecs=x[:51],
            query_ids=query_ids,
            query_texts=["q"] * 10,
            query_vecs=x[50:],
            projected=proj,
        )
