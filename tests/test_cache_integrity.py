"""Cache integrity: every cache file that was damaged on disk is reported once, deleted, recomputed exactly, and
replaced by a good file.

Each test writes a cache, damages the file the way disks, copies and people do (a flipped bit in the values, two
rows swapped, a truncated file, an edited header, a file from another key or model), runs again and checks:
(1) exactly one ``cache_corrupt`` report naming the file, (2) the result equals a cold computation bit for bit,
(3) a third run is served from the cache with no report (so the bad file was replaced by one that verifies).

The damage is located by searching the file for the bytes of known values, so the tests do not depend on the
file layout (they run unchanged against the plain ``.npy`` caches of before, and fail there: see each comment).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from diagnose import projection as pj
from diagnose.cache import RowStore, text_key
from diagnose.data import ValidationReport
from diagnose.embed import EmbeddingCache, KeywordEncoder, SentenceTransformerEncoder, embed_texts
from diagnose.io import load_dataset
from diagnose.lexical import BM25Index

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


# -- helpers -----------------------------------------------------------------------------------------------------


def _find(raw: bytes | bytearray, needle: bytes) -> int:
    """Offset of the only occurrence of ``needle`` in ``raw``."""
    at = raw.find(needle)
    assert at >= 0 and raw.find(needle, at + 1) < 0, "the value must occur exactly once in the file"
    return at


def _flip_bit(path: Path, needle: bytes, byte: int, bit: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[_find(raw, needle) + byte] ^= 1 << bit
    path.write_bytes(bytes(raw))


def _swap(path: Path, a: bytes, b: bytes) -> None:
    assert len(a) == len(b) and a != b
    raw = bytearray(path.read_bytes())
    i, j = _find(raw, a), _find(raw, b)
    raw[i : i + len(a)], raw[j : j + len(b)] = b, a
    path.write_bytes(bytes(raw))


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 40])


def _edit_shape(path: Path, n: int) -> None:
    """Change the row count in the first ``.npy`` header that states it: ``(n,`` -> ``(n - 1,`` padded to the same
    length (the header is padded with spaces anyway)."""
    raw = path.read_bytes()
    old = f"'shape': ({n},".encode()
    new = f"'shape': ({n - 1},".encode().ljust(len(old))
    at = raw.find(old)
    assert at >= 0
    path.write_bytes(raw[:at] + new + raw[at + len(old) :])


def _one_corrupt_report(report: ValidationReport, path: Path) -> None:
    problems = report.by_code("cache_corrupt")
    assert [p.file for p in problems] == [str(path)], [p.message for p in report]
    assert len(report) == 1


class CountingEncoder:
    """Wraps an encoder and records every text it is asked to encode."""

    def __init__(self, inner: KeywordEncoder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.encoded: list[str] = []

    def encode(self, texts, *, batch_size=64, progress=False):
        self.encoded.extend(texts)
        return self.inner.encode(texts, batch_size=batch_size)


# -- embedding rows ----------------------------------------------------------------------------------------------

TEXTS = [
    "one fish two fish",
    "red fish blue fish",
    "the cat sat",
    "a dog barked",
    "fish and chips",
    "blue whale",
]


def _the_shard(folder: Path) -> Path:
    (shard,) = sorted(folder.rglob("shard-*.npy"))
    return shard


@pytest.mark.parametrize("damage", ["flip", "swap", "truncate", "header", "other_model"])
def test_damaged_embedding_rows_are_reported_once_recomputed_and_replaced(tmp_path, damage):
    enc = KeywordEncoder(dim=32)
    cold = embed_texts(enc, TEXTS)  # no cache at all
    embed_texts(enc, TEXTS, cache=EmbeddingCache(tmp_path))
    shard = _the_shard(tmp_path)
    if damage == "flip":
        # lowest mantissa bit of the first non-zero coordinate of text 0: the norm stays 1 within 1e-3, so the old
        # row validation (finite, unit norm) let the changed vector through
        j = int(np.flatnonzero(cold[0])[0])
        _flip_bit(shard, cold[0].tobytes(), byte=4 * j, bit=0)
    elif damage == "swap":
        # rows of texts 0 and 1 exchanged, keys left in place: before, text 0 silently got text 1's vector
        _swap(shard, cold[0].tobytes(), cold[1].tobytes())
    elif damage == "truncate":
        _truncate(shard)  # (also caught before, by np.load: a regression guard)
    elif damage == "header":
        # the header claims one row fewer: before, the last row was silently dropped and re-encoded, unreported
        _edit_shape(shard, len(TEXTS))
    else:
        # a shard of another model (same texts, same width) copied into this model's folder: before, its vectors
        # were silently served as this model's
        other = KeywordEncoder(dim=32, synonyms={"fish": "cat"})
        embed_texts(other, TEXTS, cache=EmbeddingCache(tmp_path / "other"))
        shutil.copyfile(_the_shard(tmp_path / "other"), shard)
        shutil.rmtree(tmp_path / "other")
    report = ValidationReport()
    again = embed_texts(CountingEncoder(enc), TEXTS, cache=EmbeddingCache(tmp_path), report=report)
    np.testing.assert_array_equal(again, cold)
    _one_corrupt_report(report, shard)
    # the recomputed rows were written again, in a file that verifies: a third run encodes nothing, reports nothing
    third, report3 = CountingEncoder(enc), ValidationReport()
    np.testing.assert_array_equal(
        embed_texts(third, TEXTS, cache=EmbeddingCache(tmp_path), report=report3), cold
    )
    assert third.encoded == [] and len(report3) == 0


def test_rows_that_were_wrong_when_written_fail_validation(tmp_path):
    # A shard that verifies (written through put) but holds a NaN row: the validate hook still condemns it.
    def finite(rows):
        return np.isfinite(rows).all(axis=1)

    keys = [text_key("a"), text_key("b")]
    RowStore(tmp_path, width=2, validate=finite).put(keys, np.array([[1, 0], [np.nan, 0]], dtype=np.float32))
    report = ValidationReport()
    found, _ = RowStore(tmp_path, width=2, validate=finite, report=report).get(keys)
    assert not found.any()
    (problem,) = report.by_code("cache_corrupt")
    assert "failed validation" in problem.message and not list(tmp_path.glob("shard-*.npy"))


# -- encoder.json --------------------------------------------------------------------------------------------------


class FakeSentenceModel:
    """Stands in for a sentence-transformers model: KeywordEncoder vectors of size 32."""

    def __init__(self) -> None:
        self.inner = KeywordEncoder(dim=32)
        self.encoded: list[str] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 32

    def encode(self, texts, **kwargs):
        self.encoded.extend(texts)
        return self.inner.encode(texts)


def _lazy_encoder(models: list[FakeSentenceModel]) -> SentenceTransformerEncoder:
    """An encoder that loads its (fake) model only when needed, and records each load in ``models``."""

    def load() -> FakeSentenceModel:
        models.append(FakeSentenceModel())
        return models[-1]

    return SentenceTransformerEncoder(name="fake-st-32", label="fake", source="test", loader=load)


@pytest.mark.parametrize("damage", ["wrong_dim", "empty_list", "garbage", "truncated", "other_name"])
def test_bad_encoder_json_is_reported_once_and_rewritten(tmp_path, damage):
    cold = KeywordEncoder(dim=32).encode(TEXTS)
    embed_texts(_lazy_encoder([]), TEXTS, cache=EmbeddingCache(tmp_path))
    (meta,) = tmp_path.rglob("encoder.json")
    good = json.loads(meta.read_text())
    bad = {
        # before: the model was skipped, the store opened with width 48, every shard deleted as corrupt, then the
        # model's 32-d vectors crashed the run with "returned shape (6, 32), expected (6, 48)" -- on every run
        "wrong_dim": json.dumps({**good, "dim": 48}),
        "empty_list": "[]",  # before: AttributeError 'list' object has no attribute 'get', on every run
        "garbage": "\x00\xffnot json",  # before: silently ignored and never rewritten
        "truncated": meta.read_text()[:10],  # before: silently ignored and never rewritten
        "other_name": json.dumps({**good, "name": "some-other-model"}),  # before: ignored, never rewritten
    }[damage]
    meta.write_text(bad)
    models: list[FakeSentenceModel] = []
    report = ValidationReport()
    again = embed_texts(_lazy_encoder(models), TEXTS, cache=EmbeddingCache(tmp_path), report=report)
    np.testing.assert_array_equal(again, cold)
    _one_corrupt_report(report, meta)
    # the model was loaded for its size only: the cached rows (which verify) were kept, nothing was encoded
    assert len(models) == 1 and models[0].encoded == []
    # rewritten: the next run trusts it and never loads the model
    models3: list[FakeSentenceModel] = []
    report3 = ValidationReport()
    third = embed_texts(_lazy_encoder(models3), TEXTS, cache=EmbeddingCache(tmp_path), report=report3)
    np.testing.assert_array_equal(third, cold)
    assert models3 == [] and len(report3) == 0


# -- BM25 index ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo():
    ds = load_dataset(data_dir=DEMO)
    texts, ids = ds.corpus.texts(), list(ds.corpus.ids)
    queries = list(ds.queries.text_of().values())
    cold = BM25Index.build(texts, ids)  # no cache at all
    return texts, ids, queries, cold


def _file_holding(folder: Path, needle: bytes) -> Path:
    (path,) = [p for p in folder.glob("*.npy") if needle in p.read_bytes()]
    return path


def _assert_same_index(index: BM25Index, cold: BM25Index, queries: list[str]) -> None:
    a, b = index._impl.matrix, cold._impl.matrix
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    np.testing.assert_array_equal(index.score_matrix(queries), cold.score_matrix(queries))


@pytest.mark.parametrize("damage", ["flip", "swap", "truncate", "header"])
def test_damaged_bm25_index_is_reported_once_rebuilt_and_replaced(tmp_path, demo, damage, monkeypatch):
    import diagnose.lexical as lexical

    texts, ids, queries, cold = demo
    BM25Index.build(texts, ids, cache_dir=tmp_path)
    data = cold._impl.matrix.data
    values, counts = np.unique(data, return_counts=True)
    once = values[counts == 1]  # scores that occur once: their bytes locate them in the file
    path = _file_holding(tmp_path, once[-1].tobytes())
    if damage == "flip":
        # top mantissa bit of the largest unique score (changes it by up to 50%): before, the changed index was
        # used silently, and with it every score, rank and evidence field that depends on that term
        _flip_bit(path, once[-1].tobytes(), byte=6, bit=3)
    elif damage == "swap":
        _swap(path, once[-1].tobytes(), once[0].tobytes())  # two postings' scores exchanged: before, silent
    elif damage == "truncate":
        _truncate(path)  # (also caught before, by np.load: a regression guard)
    else:
        # the header of the score array claims one entry fewer: before, the inconsistent index was rebuilt
        # without a word, so the damage went unreported
        _edit_shape(path, len(data))
    report = ValidationReport()
    again = BM25Index.build(texts, ids, cache_dir=tmp_path, report=report)
    _assert_same_index(again, cold, queries)
    _one_corrupt_report(report, path)
    # rewritten: the third build reads it back without tokenising and without a report
    calls: list[int] = []
    real, real_ids = lexical.tokenize, lexical.terms.tokenize_ids
    monkeypatch.setattr(lexical.bm25, "tokenize", lambda t: calls.append(len(t)) or real(t))
    monkeypatch.setattr(lexical.bm25, "tokenize_ids", lambda t: calls.append(len(t)) or real_ids(t))
    report3 = ValidationReport()
    third = BM25Index.build(texts, ids, cache_dir=tmp_path, report=report3)
    assert calls == [] and len(report3) == 0
    _assert_same_index(third, cold, queries)


# -- projection coordinates ----------------------------------------------------------------------------------------


@pytest.fixture
def fake_fit(monkeypatch):
    """UMAP replaced by a deterministic stand-in whose coordinates depend on the seed; records each fit."""
    calls: list[int | None] = []

    def fit(x, n_neighbors, min_dist, seed):
        calls.append(seed)
        return (np.asarray(x)[:, :2] * 10 + (seed or 0)).astype(np.float32)

    monkeypatch.setattr(pj.layout, "_fit_umap", fit)
    return calls


def _points() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.normal(size=(120, 16)).astype(np.float32)


@pytest.mark.parametrize("damage", ["flip", "swap", "truncate", "other_key", "trust_flip"])
def test_damaged_projection_cache_is_reported_once_recomputed_and_replaced(tmp_path, fake_fit, damage):
    x = _points()
    cold = pj.project(x, use_cache=False)
    pj.project(x, cache_dir=tmp_path)
    key = pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=42)
    path = pj.ArrayCache(tmp_path).path_for(key)
    if damage == "flip":
        # a low mantissa bit of point 0's x: before, the moved point was served silently
        _flip_bit(path, cold.coords[0].tobytes(), byte=0, bit=4)
    elif damage == "swap":
        _swap(
            path, cold.coords[0].tobytes(), cold.coords[1].tobytes()
        )  # points 0 and 1 exchanged: before, silent
    elif damage == "truncate":
        _truncate(path)  # (also caught before, by np.load: a regression guard)
    elif damage == "other_key":
        # the coordinates of another seed saved under this key (same shape): before, served silently
        pj.project(x, cache_dir=tmp_path / "other", seed=7)
        other = pj.ArrayCache(tmp_path / "other").path_for(
            pj.cache_key(x, n_neighbors=15, min_dist=0.1, seed=7)
        )
        shutil.copyfile(other, path)
    else:
        # the trustworthiness file: before, a changed score was shown silently
        path = pj.ArrayCache(tmp_path).path_for(key + "/trust")
        _flip_bit(path, np.float64(cold.trustworthiness).tobytes(), byte=6, bit=3)
    fits_before = len(fake_fit)
    report = ValidationReport()
    again = pj.project(x, cache_dir=tmp_path, report=report)
    np.testing.assert_array_equal(again.coords, cold.coords)
    assert again.trustworthiness == cold.trustworthiness
    _one_corrupt_report(report, path)
    # coordinates refitted unless only the trustworthiness file was bad (then it alone is recomputed)
    assert len(fake_fit) == fits_before + (0 if damage == "trust_flip" else 1)
    report3 = ValidationReport()
    third = pj.project(x, cache_dir=tmp_path, report=report3)
    assert third.cached and len(report3) == 0 and len(fake_fit) == fits_before + (damage != "trust_flip")
    np.testing.assert_array_equal(third.coords, cold.coords)
    assert third.trustworthiness == cold.trustworthiness


# -- atomic writes -------------------------------------------------------------------------------------------------

WRITER = r"""
import sys
import numpy as np
from diagnose.cache import ArrayCache
cache = ArrayCache(sys.argv[1])
print("ready", flush=True)
i = 0
while True:  # rewrite the same key forever, alternating two 8 MB values, until killed
    cache.put("k", np.full(1 << 20, float(i % 2), dtype=np.float64))
    i += 1
"""


def test_a_writer_killed_mid_write_never_leaves_a_file_that_verifies_but_is_wrong(tmp_path):
    # (a regression guard: the tmp file + os.replace protocol was already atomic before the checksums)
    import subprocess
    import sys
    import time

    from diagnose.cache import ArrayCache

    for delay in (0.3, 0.55, 0.8):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)  # somewhere inside a write (each takes tens of ms)
        proc.kill()  # SIGKILL: no cleanup
        proc.wait()
        proc.stdout.close()
        report = ValidationReport()
        got = ArrayCache(tmp_path, report=report).get("k", dtype=np.float64, shape=(1 << 20,))
        assert len(report) == 0  # the file in place is a whole one: the old or the new value, never a mix
        if got is not None:
            assert got[0] in (0.0, 1.0) and (got == got[0]).all()
        assert all(
            p.name.startswith(".tmp-") for p in tmp_path.iterdir() if p != ArrayCache(tmp_path).path_for("k")
        )


def test_readers_during_concurrent_writes_see_a_whole_value(tmp_path):
    # Two threads rewrite one key while a third reads it: every read verifies and is one of the written values.
    import threading

    from diagnose.cache import ArrayCache

    values = [np.full((256, 64), v, dtype=np.float32) for v in (1.0, 2.0)]
    ArrayCache(tmp_path).put("k", values[0])
    stop = threading.Event()

    def write(v: np.ndarray) -> None:
        cache = ArrayCache(tmp_path)
        while not stop.is_set():
            cache.put("k", v)

    writers = [threading.Thread(target=write, args=(v,)) for v in values]
    for t in writers:
        t.start()
    report = ValidationReport()
    reader = ArrayCache(tmp_path, report=report)
    try:
        for _ in range(200):
            got = reader.get("k", dtype=np.float32, shape=(256, 64))
            assert got is not None and any(np.array_equal(got, v) for v in values)
    finally:
        stop.set()
        for t in writers:
            t.join()
    assert len(report) == 0


# -- files that are not regular files ------------------------------------------------------------------------------

_FIFO_SCRIPT = """
import os, sys
import numpy as np
from pathlib import Path
from diagnose.data import ValidationReport
from diagnose.embed import EmbeddingCache, KeywordEncoder, embed_texts

folder, which = Path(sys.argv[1]), sys.argv[2]
texts = ["one fish two fish", "red fish blue fish", "the cat sat"]
enc = KeywordEncoder(dim=32)
cold = embed_texts(enc, texts)
embed_texts(enc, texts, cache=EmbeddingCache(folder))
(target,) = sorted(folder.rglob("shard-*.npy" if which == "shard" else "encoder.json"))
target.unlink()
os.mkfifo(target)  # nobody ever writes to it: a plain open() for reading waits forever
report = ValidationReport()
again = embed_texts(enc, texts, cache=EmbeddingCache(folder), report=report)
assert np.array_equal(again, cold)
print(";".join(f"{p.code}|{p.file}" for p in report))
"""


@pytest.mark.parametrize("which", ["shard", "encoder.json"])
def test_a_fifo_named_like_a_cache_file_is_reported_not_waited_on(tmp_path, which):
    """Before: the read of the FIFO blocked forever (the subprocess hit its timeout). Now it is a cache_corrupt
    report naming it (not a regular file), the values are recomputed, and the FIFO is deleted."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FIFO_SCRIPT, str(tmp_path), which],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (code, file) = done.stdout.strip().split("|")  # exactly one report
    assert code == "cache_corrupt"
    assert Path(file).name.startswith("shard-") if which == "shard" else Path(file).name == "encoder.json"
    assert not Path(file).exists() or Path(file).is_file()  # the FIFO was deleted (and maybe written again)
