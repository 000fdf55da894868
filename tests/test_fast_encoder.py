"""The fast (bf16) encoder path against the exact fp32 one, on the real bundled model (slow: imports torch)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from diagnose.data import DataError, document_text
from diagnose.embed import EmbeddingCache, SentenceTransformerEncoder, embed_texts, load_encoder, onednn
from diagnose.embed import fast as fast_encoder

pytestmark = pytest.mark.real_model

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus" / "corpus.jsonl"
needs_bf16 = pytest.mark.skipif(
    not fast_encoder.fast_supported("cpu")[0], reason=fast_encoder.fast_supported("cpu")[1] or "bf16 CPU"
)


@pytest.fixture(scope="module")
def demo_texts() -> list[str]:
    """20 demo documents (title + " " + text, what the product embeds), the longest first so some are cut."""
    rows = [json.loads(line) for line in DEMO.open()]
    texts = [document_text(r.get("title", ""), r.get("text", "")) for r in rows]
    return sorted(texts, key=len, reverse=True)[:10] + texts[:10]


@pytest.fixture(scope="module")
def exact() -> SentenceTransformerEncoder:
    return load_encoder(None, precision="exact")


@pytest.fixture(scope="module")
def fast() -> SentenceTransformerEncoder:
    return load_encoder(None)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)  # rows are unit vectors: the dot product is the cosine


@needs_bf16
def test_fast_vectors_match_exact_ones(exact, fast, demo_texts):
    assert isinstance(fast, fast_encoder.FastEncoder)
    ve = exact.encode(demo_texts)
    vf = fast.encode(demo_texts, batch_size=8)
    assert fast.precision == "bf16" and sum(fast.fused.values()) > 0  # the fused oneDNN layers are in use
    assert vf.shape == ve.shape == (20, 384) and vf.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vf, axis=1), 1.0, atol=1e-5)
    cos = cosines(ve, vf)
    assert cos.mean() >= 0.99 and cos.min() >= 0.97, (cos.mean(), cos.min())
    assert not np.array_equal(ve, vf)  # it really is another computation
    assert fast.encode([]).shape == (0, 384)


def test_name_and_label_differ_by_precision(exact, fast, tmp_path):
    if not isinstance(fast, fast_encoder.FastEncoder):
        pytest.skip("fast path not available on this machine")
    # cache identity: exact name + "+bf16", so the two precisions never share cached vectors
    assert fast.name == exact.name + "+bf16" and exact.name.startswith("st-sha256:")
    assert fast.label == exact.label + ", bf16"
    cache = EmbeddingCache(tmp_path)
    assert cache.store_dir(fast.name) != cache.store_dir(exact.name)
    with pytest.raises(DataError, match="precision"):
        load_encoder(None, precision="int8")


@needs_bf16
def test_fast_vectors_are_cached_under_their_own_name_and_served_without_loading(demo_texts, tmp_path):
    # bf16 needs no exported file: the "export" is a cast at load time, so what is cached on disk is the vectors
    first = load_encoder(None)
    v = embed_texts(first, demo_texts[:5], cache=EmbeddingCache(tmp_path))
    assert first.loaded
    again = load_encoder(None)
    v2 = embed_texts(again, demo_texts[:5], cache=EmbeddingCache(tmp_path))
    assert not again.loaded  # every vector came from the cache: no weights loaded, nothing converted
    np.testing.assert_array_equal(v, v2)
    exact = load_encoder(None, precision="exact")
    embed_texts(exact, demo_texts[:1], cache=EmbeddingCache(tmp_path))
    assert exact.loaded  # the exact encoder found nothing of the fast one's and encoded


def test_fallback_when_the_fast_path_does_not_apply(monkeypatch, exact, demo_texts):
    monkeypatch.setattr(fast_encoder, "fast_supported", lambda device="cpu": (False, "forced by the test"))
    with pytest.warns(fast_encoder.FastPathWarning, match="forced by the test"):
        enc = load_encoder(None)
    assert type(enc) is SentenceTransformerEncoder and enc.name == exact.name
    np.testing.assert_array_equal(enc.encode(demo_texts[:4]), exact.encode(demo_texts[:4]))


@needs_bf16
def test_fallback_when_the_conversion_fails(monkeypatch, exact, demo_texts):
    def broken(model, fuse=True):
        raise RuntimeError("no bf16 today")

    monkeypatch.setattr(fast_encoder, "to_bf16", broken)
    enc = load_encoder(None)  # cheap checks pass; the conversion happens (and fails) on first use
    with pytest.warns(fast_encoder.FastPathWarning, match="no bf16 today"):
        v = enc.encode(demo_texts[:4])
    assert enc.precision == "fp32"
    np.testing.assert_allclose(v, exact.encode(demo_texts[:4]), atol=1e-6)  # the exact model's vectors


def test_no_fast_path_without_bf16_instructions_or_off_cpu(monkeypatch):
    monkeypatch.setattr(fast_encoder, "_cpu_flags", lambda: frozenset({"avx512f", "avx512_vnni"}))
    ok, reason = fast_encoder.fast_supported("cpu")
    assert not ok and "bf16" in reason
    monkeypatch.setattr(fast_encoder, "_cpu_flags", lambda: frozenset({"avx512f", "amx_bf16"}))
    assert fast_encoder.fast_supported("cpu")[0] == fast_encoder.sys.platform.startswith("linux")
    assert not fast_encoder.fast_supported("cuda:0")[0]


@needs_bf16
def test_another_model_folder_takes_the_fast_path_too(second_model, demo_texts):
    # the bundled transformer + a 384->64 dense projection: the transformer runs in bf16, the projection in fp32
    exact = load_encoder(str(second_model), precision="exact")
    fast = load_encoder(str(second_model))
    assert isinstance(fast, fast_encoder.FastEncoder) and fast.name == exact.name + "+bf16"
    ve, vf = exact.encode(demo_texts), fast.encode(demo_texts)
    assert vf.shape == (20, 64) and vf.dtype == np.float32
    cos = cosines(ve, vf)
    assert cos.mean() >= 0.99 and cos.min() >= 0.97, (cos.mean(), cos.min())


def test_fused_kernels_agree_with_plain_torch():
    # the load-time probe: fused linear (+gelu, +residual add) within 5% of the fp32 reference, or not used at all
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernels = onednn.fused_kernels()
    if fast_encoder.fast_supported("cpu")[0] and onednn.is_tested(torch.__version__):
        assert isinstance(kernels, onednn.FusedKernels)
    # the pin: a release the private ops were not tested with never gets them (the local "+cpu" part aside)
    assert onednn.is_tested(onednn.TESTED_TORCH[0] + "+cpu")
    assert not onednn.is_tested("2.99.0") and not onednn.is_tested("1.13.0")


@needs_bf16
def test_fused_and_public_layers_give_the_same_vectors(exact, fast, demo_texts):
    """Both paths of the bf16 encoder: torch's private fused kernels (when this torch is a tested release) and its
    public layers only (``fuse=False``, what any other release gets). Both bf16, so equal within bf16 rounding."""
    plain = fast_encoder.FastEncoder(exact, fuse=False)
    vp, vf = plain.encode(demo_texts, batch_size=8), fast.encode(demo_texts, batch_size=8)
    assert plain.precision == "bf16" and sum(plain.fused.values()) == 0  # no fused layer
    assert vp.shape == vf.shape == (20, 384)
    cos = cosines(vp, vf)
    assert cos.mean() >= 0.999 and cos.min() >= 0.995, (cos.mean(), cos.min())
    cos_exact = cosines(vp, exact.encode(demo_texts))
    assert cos_exact.mean() >= 0.99 and cos_exact.min() >= 0.97, (cos_exact.mean(), cos_exact.min())
