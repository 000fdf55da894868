"""Embedding layer without a real model: fake encoder, on-disk cache, exact dense search, precomputed vectors."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pandas as pd
import pytest

from diagnose import cache as cache_mod
from diagnose import embed
from diagnose.cache import ArrayCache, CacheWarning, RowStore, text_key
from diagnose.data import DataError, ValidationReport
from diagnose.embed import (
    EmbeddingCache,
    Encoder,
    KeywordEncoder,
    ModelLoadError,
    dense_rank_of,
    dense_rank_range,
    dense_search,
    embed_texts,
    load_encoder,
    load_precomputed,
)


class CountingEncoder:
    """Wraps an encoder and records every text it is asked to encode."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.calls: list[list[str]] = []

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def encode(self, texts, *, batch_size=64, progress=False):
        self.calls.append(list(texts))
        return self.inner.encode(texts, batch_size=batch_size)


def _bucket(token: str, dim: int) -> int:
    # The formula of the KeywordEncoder docstring, written out independently.
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little") % dim


# -- KeywordEncoder -------------------------------------------------------------------------------------------


def test_keyword_encoder_is_a_normalised_hashed_bag_of_words():
    enc = KeywordEncoder(dim=64)
    assert isinstance(enc, Encoder)
    v = enc.encode(["Cat, dog: CAT!"])[0]
    # tokens cat, dog, cat -> counts cat=2, dog=1 -> norm sqrt(2^2 + 1^2) = sqrt(5)
    expected = np.zeros(64, dtype=np.float32)
    expected[_bucket("cat", 64)] += 2
    expected[_bucket("dog", 64)] += 1
    expected /= np.sqrt(5.0)
    np.testing.assert_allclose(v, expected, rtol=1e-6)
    assert v.dtype == np.float32


def test_keyword_encoder_is_deterministic_across_instances():
    texts = ["the quick brown fox", "Café au lait", "état 42"]
    a = KeywordEncoder(dim=128).encode(texts)
    b = KeywordEncoder(dim=128).encode(texts)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)


def test_keyword_encoder_empty_text_is_zero_vector_not_nan():
    v = KeywordEncoder(dim=16).encode(["", "  ,;!  ", "___"])
    assert np.isfinite(v).all()
    np.testing.assert_array_equal(v, np.zeros((3, 16), dtype=np.float32))


def test_keyword_encoder_synonyms_map_onto_canonical_word():
    plain = KeywordEncoder(dim=256)
    syn = KeywordEncoder(dim=256, synonyms={"Automobile": "car", "quick": "fast"})
    a, b = syn.encode(["fast car", "Quick AUTOMOBILE"])
    assert float(a @ b) == pytest.approx(1.0)  # same tokens after mapping: cosine 1
    a0, b0 = plain.encode(["fast car", "Quick AUTOMOBILE"])
    assert float(a0 @ b0) < 0.5  # without the map no word is shared (cosine 0 unless two buckets collide)
    assert syn.name != plain.name  # different vectors -> different cache identity
    assert KeywordEncoder(dim=128).name != plain.name


# -- embed_texts + cache --------------------------------------------------------------------------------------


def test_embed_texts_dedupes_restores_order_and_reports_progress(tmp_path):
    enc = CountingEncoder(KeywordEncoder(dim=32))
    texts = ["a much longer text here", "b", "a much longer text here", "c c", "d", "e e e e", "f"]
    seen = []
    vecs = embed_texts(
        enc, texts, cache=EmbeddingCache(tmp_path), batch_size=1, progress=lambda d, t: seen.append((d, t))
    )
    assert sorted(enc.encoded) == sorted(set(texts))  # 6 distinct texts, each encoded once
    np.testing.assert_array_equal(vecs, enc.inner.encode(texts))  # row i is text i
    # longest first: the chunk of 4 * batch_size = 4 texts starts with the longest text
    assert enc.calls[0][0] == "a much longer text here"
    assert seen[0] == (0, 6) and seen[-1] == (6, 6)


def test_cache_hit_does_no_encoding(tmp_path):
    texts = ["alpha beta", "gamma", "delta epsilon", ""]
    first = CountingEncoder(KeywordEncoder(dim=32))
    v1 = embed_texts(first, texts, cache=EmbeddingCache(tmp_path))
    assert len(first.encoded) == 4
    second = CountingEncoder(KeywordEncoder(dim=32))  # new process, new cache object, same folder
    report = ValidationReport()
    seen = []
    v2 = embed_texts(
        second, texts, cache=EmbeddingCache(tmp_path), report=report, progress=lambda d, t: seen.append(d)
    )
    assert second.calls == [] and seen == []
    np.testing.assert_array_equal(v1, v2)
    assert len(report) == 0


def test_cache_encodes_only_new_texts(tmp_path):
    docs = [f"document number {i}" for i in range(20)]
    embed_texts(KeywordEncoder(dim=32), docs, cache=EmbeddingCache(tmp_path))
    new = [f"new document {i}" for i in range(5)]
    enc = CountingEncoder(KeywordEncoder(dim=32))
    v = embed_texts(enc, docs + new, cache=EmbeddingCache(tmp_path))
    assert sorted(enc.encoded) == sorted(new)
    np.testing.assert_array_equal(v, KeywordEncoder(dim=32).encode(docs + new))


def test_cache_is_keyed_by_encoder_identity(tmp_path):
    cache = EmbeddingCache(tmp_path)
    embed_texts(KeywordEncoder(dim=32), ["x y"], cache=cache)
    other = CountingEncoder(KeywordEncoder(dim=32, synonyms={"x": "z"}))
    embed_texts(other, ["x y"], cache=cache)
    assert other.encoded == ["x y"]  # a different name never reads the first encoder's vectors


def _shards(tmp_path):
    return sorted(tmp_path.rglob("shard-*.npy"))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_cache_file_is_reported_deleted_and_recomputed(tmp_path, damage):
    texts = ["one fish", "two fish", "red fish", "blue fish"]
    clean = embed_texts(KeywordEncoder(dim=32), texts, cache=EmbeddingCache(tmp_path))
    (shard,) = _shards(tmp_path)
    raw = shard.read_bytes()
    shard.write_bytes(
        {"truncate": raw[: len(raw) // 2], "garbage": b"\x93NUMPY garbage" * 50, "empty": b""}[damage]
    )
    enc = CountingEncoder(KeywordEncoder(dim=32))
    report = ValidationReport()
    again = embed_texts(enc, texts, cache=EmbeddingCache(tmp_path), report=report)
    np.testing.assert_array_equal(again, clean)
    assert sorted(enc.encoded) == sorted(texts)
    (problem,) = report.by_code("cache_corrupt")
    assert problem.severity == "warning" and problem.file == str(shard)
    assert not shard.exists()
    # the recomputed vectors were stored again: a third run encodes nothing
    third = CountingEncoder(KeywordEncoder(dim=32))
    embed_texts(third, texts, cache=EmbeddingCache(tmp_path))
    assert third.calls == []


def test_damaged_bytes_inside_a_well_formed_file_are_caught_by_the_checksum(tmp_path):
    texts = ["one fish", "two fish"]
    clean = embed_texts(KeywordEncoder(dim=32), texts, cache=EmbeddingCache(tmp_path))
    (shard,) = _shards(tmp_path)
    records = np.load(shard, mmap_mode="r")
    end = records.offset + records.nbytes  # where the records end (the checksum trailer follows)
    del records
    raw = bytearray(shard.read_bytes())
    raw[end - 64 : end] = b"\xff" * 64  # same size, so np.load succeeds; the last row's floats become NaN
    shard.write_bytes(bytes(raw))
    enc = CountingEncoder(KeywordEncoder(dim=32))
    with pytest.warns(CacheWarning, match="checksum mismatch"):  # no report passed: a Python warning
        again = embed_texts(enc, texts, cache=EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(again, clean)
    assert sorted(enc.encoded) == sorted(texts)


def test_unwritable_cache_warns_and_still_returns_vectors(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    report = ValidationReport()
    v = embed_texts(KeywordEncoder(dim=8), ["a", "b"], cache=EmbeddingCache(blocker), report=report)
    np.testing.assert_array_equal(v, KeywordEncoder(dim=8).encode(["a", "b"]))
    assert report.by_code("cache_write_failed")


def test_cache_dir_env_var(monkeypatch, tmp_path):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "c"))
    assert EmbeddingCache().directory == tmp_path / "c" / "embeddings"
    monkeypatch.delenv("DIAGNOSE_CACHE_DIR")
    assert EmbeddingCache().directory.name == "embeddings"
    assert EmbeddingCache(tmp_path / "x").directory == tmp_path / "x"


def test_embed_texts_rejects_nan_from_encoder():
    class Broken:
        name, dim = "broken", 2

        def encode(self, texts, *, batch_size=64, progress=False):
            return np.full((len(texts), 2), np.nan, dtype=np.float32)

    with pytest.raises(RuntimeError, match="non-finite"):
        embed_texts(Broken(), ["x"])


def test_embed_texts_empty_input():
    v = embed_texts(KeywordEncoder(dim=8), [])
    assert v.shape == (0, 8) and v.dtype == np.float32


# -- generic cache ---------------------------------------------------------------------------------------------


def test_row_store_two_writers_both_persist_and_compaction_keeps_everything(tmp_path):
    a = RowStore(tmp_path, width=2, max_shards=3)
    b = RowStore(tmp_path, width=2, max_shards=3)
    keys = [text_key(str(i)) for i in range(5)]
    rows = np.arange(10, dtype=np.float32).reshape(5, 2)
    for i in range(5):  # 5 single-row shards from alternating writers; compaction kicks in above 3 shards
        (a if i % 2 else b).put([keys[i]], rows[i : i + 1])
    assert len(list(tmp_path.glob("shard-*.npy"))) <= 3
    assert not list(tmp_path.glob(".tmp-*"))  # no temp file left behind
    found, got = RowStore(tmp_path, width=2).get(keys + [text_key("absent")])
    assert found.tolist() == [True] * 5 + [False]
    np.testing.assert_array_equal(got[:5], rows)


def test_compaction_drops_a_damaged_shard_and_keeps_the_others(tmp_path):
    def finite(rows):
        return np.isfinite(rows).all(axis=1)

    keys = [text_key(str(i)) for i in range(3)]
    for i in range(3):
        RowStore(tmp_path, width=2, validate=finite).put([keys[i]], np.full((1, 2), i, dtype=np.float32))
    damaged = sorted(tmp_path.glob("shard-*.npy"))[1]  # holds key 1
    raw = bytearray(damaged.read_bytes())
    raw[-8:] = b"\xff" * 8  # the row's two float32 become NaN
    damaged.write_bytes(bytes(raw))
    report = ValidationReport()
    store = RowStore(tmp_path, width=2, validate=finite, report=report)
    store.compact()
    assert len(list(tmp_path.glob("shard-*.npy"))) == 1 and len(report.by_code("cache_corrupt")) == 1
    found, rows = RowStore(tmp_path, width=2, validate=finite).get(keys)
    assert found.tolist() == [True, False, True]
    assert rows[:, 0].tolist() == [0.0, 0.0, 2.0]


def test_row_store_rejects_wrong_width_file(tmp_path):
    RowStore(tmp_path, width=3).put([text_key("a")], np.ones((1, 3), dtype=np.float32))
    report = ValidationReport()
    found, _ = RowStore(tmp_path, width=4, report=report).get([text_key("a")])
    assert not found.any()
    assert report.by_code("cache_corrupt")


def test_array_cache_round_trip_and_corruption(tmp_path):
    report = ValidationReport()
    c = ArrayCache(tmp_path, report=report)
    arr = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert c.get("umap|model|n=3") is None
    assert c.put("umap|model|n=3", arr)
    np.testing.assert_array_equal(c.get("umap|model|n=3", shape=(None, 2)), arr)
    assert c.get("umap|model|n=3", shape=(None, 3)) is None  # wrong shape: reported and deleted
    assert report.by_code("cache_corrupt") and not c.path_for("umap|model|n=3").exists()
    with pytest.raises(ValueError, match="pickle"):
        c.put("objects", np.array([object()], dtype=object))


def test_atomic_save_leaves_old_file_when_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "a.npy"
    cache_mod.atomic_save(path, np.ones(3))

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(cache_mod.files.os, "fsync", boom)
    with pytest.raises(OSError):
        cache_mod.atomic_save(path, np.zeros(3))
    np.testing.assert_array_equal(np.load(path), np.ones(3))
    assert [p.name for p in tmp_path.iterdir()] == ["a.npy"]


# -- dense search ----------------------------------------------------------------------------------------------


def _unit(rng, n, dim):
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("block_size", [1, 7, 99, 100, 101, 4096])
@pytest.mark.parametrize("k", [1, 10, 100, 150])
def test_dense_search_equals_brute_force(block_size, k):
    rng = np.random.default_rng(7)
    q, d = _unit(rng, 13, 16), _unit(rng, 100, 16)
    idx, sc = dense_search(q, d, k, block_size=block_size)
    s = q @ d.T
    ref = np.argsort(-s, axis=1, kind="stable")[:, : min(k, 100)]  # k > n returns all 100 docs
    assert idx.shape == sc.shape == (13, min(k, 100))
    assert idx.dtype == np.int64 and sc.dtype == np.float32
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_allclose(sc, np.take_along_axis(s, ref, axis=1), rtol=1e-5, atol=1e-6)


def test_dense_search_query_blocks(monkeypatch):
    monkeypatch.setattr(embed.search, "BLOCK_ELEMENTS", 30)  # 30 // block 10 = 3 queries per block
    rng = np.random.default_rng(3)
    q, d = _unit(rng, 8, 4), _unit(rng, 25, 4)
    idx, _ = dense_search(q, d, 5, block_size=10)
    np.testing.assert_array_equal(idx, np.argsort(-(q @ d.T), axis=1, kind="stable")[:, :5])


def test_dense_search_ties_go_to_the_lower_index_across_blocks():
    # docs 1, 2 and 4 are the same vector as the query (cosine 1); doc 0, 3 are orthogonal (cosine 0)
    d = np.array([[0, 1], [1, 0], [1, 0], [0, 1], [1, 0]], dtype=np.float32)
    q = np.array([[1, 0]], dtype=np.float32)
    for block_size in (1, 2, 3, 5):
        idx, sc = dense_search(q, d, 2, block_size=block_size)
        assert idx.tolist() == [[1, 2]] and sc.tolist() == [[1.0, 1.0]]
        idx, _ = dense_search(q, d, 4, block_size=block_size)
        assert idx.tolist() == [[1, 2, 4, 0]]


def test_dense_search_edge_shapes():
    d = np.eye(3, dtype=np.float32)
    idx, sc = dense_search(np.zeros((0, 3), dtype=np.float32), d, 5)
    assert idx.shape == (0, 3)
    with pytest.raises(DataError, match="dimensions"):
        dense_search(np.ones((1, 2), dtype=np.float32), d, 1)
    with pytest.raises(DataError, match="k must be a positive integer, got 0"):
        dense_search(d, d, 0)


def test_dense_rank_of_hand_made():
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    d = np.array([[1, 0], [0.6, 0.8], [0.6, -0.8], [0, 1], [-1, 0]], dtype=np.float32)
    # cosines with q: d0 = 1, d1 = 0.6, d2 = 0.6, d3 = 0, d4 = -1
    # rank = 1 + #strictly higher: d0 -> 1; d1 -> 1 + 1 = 2; d2 -> 2 (tie with d1 does not count);
    # d3 -> 1 + 3 = 4; d4 -> 1 + 4 = 5
    ranks = dense_rank_of(q, d, [0, 0, 0, 0, 0], [0, 1, 2, 3, 4], block_size=2)
    assert ranks.tolist() == [1, 2, 2, 4, 5]


def test_dense_rank_of_matches_brute_force_and_duplicates_tie():
    rng = np.random.default_rng(11)
    q, d = _unit(rng, 6, 8), _unit(rng, 50, 8)
    d[49] = d[10]  # exact duplicate of doc 10
    qr = np.array([0, 1, 2, 3, 4, 5, 0, 0])
    dr = np.array([3, 7, 10, 20, 49, 0, 10, 49])
    ranks = dense_rank_of(q, d, qr, dr, block_size=16)
    best, worst = dense_rank_range(q, d, qr, dr, block_size=16)
    # reference: float64 cosines compared as float32, over the whole matrix at once
    s = (q.astype(np.float64) @ d.astype(np.float64).T).astype(np.float32)
    ref = [1 + int((s[i] > s[i, j]).sum()) for i, j in zip(qr, dr, strict=True)]
    ref_worst = [int((s[i] >= s[i, j]).sum()) for i, j in zip(qr, dr, strict=True)]
    assert ranks.tolist() == best.tolist() == ref
    assert worst.tolist() == ref_worst
    # doc 10 and its duplicate 49 share a range for query 0: a tie group of two, so worst = best + 1
    assert (best[6], worst[6]) == (best[7], worst[7]) and worst[6] == best[6] + 1
    # float64 vectors take the unscreened path and give the same ranges
    b64, w64 = dense_rank_range(q.astype(np.float64), d.astype(np.float64), qr, dr, block_size=16)
    assert b64.tolist() == ref and w64.tolist() == ref_worst


def test_dense_rank_range_hand_made_ties():
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    d = np.array([[1, 0], [0.6, 0.8], [0.6, -0.8], [0.6, 0.8], [0, 1], [1, 0]], dtype=np.float32)
    # cosines with q: d0 = 1, d1 = d2 = d3 = 0.6, d4 = 0, d5 = 1 (a duplicate of d0)
    # d0, d5: tie group at ranks 1..2 -> (1, 2); d1, d2, d3: 2 above, group of 3 -> (3, 5); d4: 5 above -> (6, 6)
    best, worst = dense_rank_range(q, d, [0] * 6, [0, 1, 2, 3, 4, 5], block_size=2)
    assert best.tolist() == [1, 3, 3, 3, 6, 1]
    assert worst.tolist() == [2, 5, 5, 5, 6, 2]


@pytest.mark.parametrize("block_size", [1, 7, 16, 64])
def test_dense_search_ranked_is_search_and_rank_range_in_one_pass(monkeypatch, block_size):
    monkeypatch.setattr(embed.search, "BLOCK_ELEMENTS", 48)  # several query blocks: 48 // 16 = 3 queries each
    rng = np.random.default_rng(5)
    q, d = _unit(rng, 10, 8), _unit(rng, 60, 8)
    d[59] = d[12]  # a duplicate ties with its original: its tie range spans two ranks
    qr = np.array([9, 0, 4, 4, 7, 0, 3])  # unsorted, a query twice, pairs in several query blocks
    dr = np.array([12, 59, 0, 30, 12, 12, 59])
    products = []
    real_top_k = embed.search._top_k_block
    monkeypatch.setattr(
        embed.search, "_top_k_block", lambda s, kk: products.append(s.shape) or real_top_k(s, kk)
    )
    idx, sc, (best, worst) = embed.search.dense_search_ranked(q, d, 5, qr, dr, block_size=block_size)
    n_blocks = len(products)
    ref_idx, ref_sc = dense_search(q, d, 5, block_size=block_size)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(sc, ref_sc)
    ref_best, ref_worst = dense_rank_range(q, d, qr, dr, block_size=block_size)
    assert best.tolist() == ref_best.tolist() and worst.tolist() == ref_worst.tolist()
    assert worst[0] == best[0] + 1  # doc 12 and its duplicate 59: a tie group of two
    assert n_blocks == len(products) // 2  # one pass over the blocks: dense_search alone made as many
    with pytest.raises(IndexError):
        embed.search.dense_search_ranked(q, d, 5, [10], [0])


# -- precomputed vectors ---------------------------------------------------------------------------------------


def _write_npy(tmp_path, name, mat, ids):
    np.save(tmp_path / f"{name}.npy", np.asarray(mat, dtype=np.float32))
    (tmp_path / f"{name}.txt").write_text("\n".join(ids) + "\n")
    return tmp_path / f"{name}.npy", tmp_path / f"{name}.txt"


def test_precomputed_npy_rows_in_asked_order_normalised(tmp_path):
    dv, di = _write_npy(tmp_path, "docs", [[3, 4], [0, 2], [1, 0]], ["d1", "d2", "d3"])
    qv, qi = _write_npy(tmp_path, "queries", [[0, 5]], ["q1"])
    pre = load_precomputed(dv, qv, di, qi)
    # [3, 4] / 5 = [0.6, 0.8]; [0, 2] / 2 = [0, 1]
    np.testing.assert_allclose(pre.doc_matrix(["d2", "d1"]), [[0, 1], [0.6, 0.8]])
    np.testing.assert_allclose(pre.query_matrix(["q1"]), [[0, 1]])
    assert pre.dim == 2


def test_an_npy_header_larger_than_its_file_is_refused_before_allocating(tmp_path):
    """Before: np.load asked for 80,000,000 x 80,000 x 4 bytes = 25.6 TB (6.4e12 floats) and the run ended in an
    internal MemoryError. Now the header is checked against the file size: 16 bytes of data, 25.6e12 claimed."""
    path = tmp_path / "docs.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (80_000_000, 80_000)}
        )
        f.write(b"\0" * 16)
    _, qv_ids = _write_npy(tmp_path, "docs_ids", [[1, 0]], ["d1"])
    qv, qi = _write_npy(tmp_path, "queries", [[1, 0]], ["q1"])
    with pytest.raises(
        DataError,
        match=r"docs\.npy: its header says 80,000,000 x 80,000 float32 values "
        r"\(25,600,000,000,000 bytes\), but the file holds 16 bytes",
    ):
        load_precomputed(path, qv, qv_ids, qi)


def test_a_complex_matrix_is_refused_for_its_dtype(tmp_path):
    """Before: "expected a 2-D numeric matrix ..., got shape (2, 2)": the shape was right, the dtype was not."""
    path = tmp_path / "docs.npy"
    np.save(path, np.array([[1 + 2j, 0], [0, 1]], dtype=np.complex64))
    (tmp_path / "docs.txt").write_text("d1\nd2\n")
    qv, qi = _write_npy(tmp_path, "queries", [[1, 0]], ["q1"])
    with pytest.raises(
        DataError, match=r"docs\.npy: holds complex64 values \(complex numbers\); expected real"
    ) as e:
        load_precomputed(path, qv, tmp_path / "docs.txt", qi)
    assert "shape" not in str(e.value)


def test_precomputed_parquet(tmp_path):
    pd.DataFrame({"doc_id": ["a", "b"], "embedding": [[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]}).to_parquet(
        tmp_path / "d.parquet"
    )
    pd.DataFrame({"query_id": [7], "vec": [[0.0, 3.0, 0.0]]}).to_parquet(tmp_path / "q.parquet")  # int ids
    pre = load_precomputed(tmp_path / "d.parquet", tmp_path / "q.parquet")
    np.testing.assert_allclose(pre.doc_matrix(["b", "a"]), [[0, 0, 1], [1, 0, 0]])
    np.testing.assert_allclose(pre.query_matrix(["7"]), [[0, 1, 0]])


def test_precomputed_missing_ids_named(tmp_path):
    dv, di = _write_npy(tmp_path, "docs", [[1, 0], [0, 1]], ["d1", "d2"])
    qv, qi = _write_npy(tmp_path, "queries", [[1, 1]], ["q1"])
    pre = load_precomputed(dv, qv, di, qi)
    with pytest.raises(DataError, match=r"1 of 3 document ids have no precomputed vector.*e\.g\. d9"):
        pre.doc_matrix(["d1", "d9", "d2"])
    with pytest.raises(DataError, match="q2"):
        pre.query_matrix(["q2"])


def test_precomputed_errors(tmp_path):
    dv, di = _write_npy(tmp_path, "docs", [[1, 0], [0, 1]], ["d1", "d2"])
    qv, qi = _write_npy(tmp_path, "queries", [[1, 1, 1]], ["q1"])
    with pytest.raises(DataError, match="dimensions"):
        load_precomputed(dv, qv, di, qi)
    _, short = _write_npy(tmp_path, "short", [[1, 0]], ["d1"])
    with pytest.raises(DataError, match="1 ids but .* 2 rows"):
        load_precomputed(dv, qv, short, qi)
    with pytest.raises(DataError, match="--doc-ids"):
        load_precomputed(dv, qv, None, qi)
    _, dup = _write_npy(tmp_path, "dup", [[1, 0], [0, 1]], ["d1", "d1"])
    with pytest.raises(DataError, match="several vectors.*d1"):
        load_precomputed(dv, qv, dup, qi)
    nan_v, nan_i = _write_npy(tmp_path, "nan", [[np.nan, 0]], ["q1"])
    with pytest.raises(DataError, match="NaN"):
        load_precomputed(dv, nan_v, di, nan_i)


# -- model loading errors (no model is loaded) -----------------------------------------------------------------


def test_nonexistent_local_path_raises_model_load_error(tmp_path):
    missing = tmp_path / "models" / "my-model"
    with pytest.raises(ModelLoadError) as exc:
        load_encoder(str(missing))
    msg = str(exc.value)
    assert str(missing) in msg
    assert "bundled" in msg and "--doc-embeddings" in msg and "folder" in msg
    assert isinstance(exc.value, DataError)


def test_unknown_name_offline_raises_model_load_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "empty-hf-cache"))
    monkeypatch.chdir(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError) as exc:
        load_encoder("no-such-org/no-such-model")
    print(f"ModelLoadError after {time.perf_counter() - t0:.3f} s")  # measured, not asserted
    msg = str(exc.value)
    assert "'no-such-org/no-such-model'" in msg
    assert "HF_HUB_OFFLINE" in msg and "bundled" in msg and "--doc-embeddings" in msg
