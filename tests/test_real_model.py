"""The real bundled all-MiniLM-L6-v2 on a tiny corpus (slow: imports torch and sentence-transformers)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from diagnose.embed import (
    DEFAULT_MODEL,
    EmbeddingCache,
    default_model_path,
    embed_texts,
    load_encoder,
    model_fingerprint,
)

pytestmark = pytest.mark.real_model

QUESTION = "How do I reset my password?"
PARAPHRASE = "Steps to recover a forgotten login credential"
UNRELATED = "The cafeteria serves lunch at noon"


class Counting:
    def __init__(self, inner):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls = 0

    def encode(self, texts, *, batch_size=64, progress=False):
        self.calls += 1
        return self.inner.encode(texts, batch_size=batch_size)


@pytest.fixture(scope="module")
def encoder():
    return load_encoder(None, precision="exact")


def test_bundled_model_vectors_and_semantics(encoder, tmp_path):
    assert encoder.dim == 384 and encoder.label == DEFAULT_MODEL
    assert encoder.name.startswith("st-sha256:")
    enc = Counting(encoder)
    texts = [QUESTION, PARAPHRASE, UNRELATED]
    v = embed_texts(enc, texts, cache=EmbeddingCache(tmp_path))
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])  # paraphrase closer than the unrelated sentence
    assert enc.calls == 1

    again = Counting(encoder)
    v2 = embed_texts(again, texts, cache=EmbeddingCache(tmp_path))
    assert again.calls == 0  # every vector came from the cache
    np.testing.assert_array_equal(v, v2)


def test_a_cache_hit_never_loads_the_model(encoder, tmp_path):
    # first run: encodes (and so loads the weights); a fresh encoder on the same cache serves every vector from
    # disk without loading the weights or importing anything heavy for them
    texts = [QUESTION, UNRELATED]
    v = embed_texts(encoder, texts, cache=EmbeddingCache(tmp_path))
    fresh = load_encoder(None, precision="exact")
    assert not fresh.loaded
    v2 = embed_texts(fresh, texts, cache=EmbeddingCache(tmp_path))
    assert not fresh.loaded and fresh.dim == 384
    np.testing.assert_array_equal(v, v2)
    # a text the cache lacks loads the model on demand
    embed_texts(fresh, [PARAPHRASE], cache=EmbeddingCache(tmp_path))
    assert fresh.loaded


def test_hub_name_alias_and_copied_folder_share_the_bundled_identity(encoder, tmp_path):
    assert load_encoder("sentence-transformers/all-MiniLM-L6-v2", precision="exact").name == encoder.name
    copy = tmp_path / "minilm-copy"
    shutil.copytree(default_model_path(), copy)
    assert model_fingerprint(copy) == model_fingerprint(default_model_path())
    with open(copy / "config.json", "a") as f:  # one more byte in a config: a different model
        f.write(" ")
    assert model_fingerprint(copy) != model_fingerprint(default_model_path())


def test_hub_id_loads_from_local_hf_cache_without_network(monkeypatch, tmp_path):
    # A Hugging Face cache laid out by hand: models--org--name/{refs/main, snapshots/<commit>/...}
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--minilm"
    shutil.copytree(default_model_path(), repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = load_encoder("acme/minilm", precision="exact")
    assert enc.name == f"hub:acme/minilm@{commit}" and enc.dim == 384
