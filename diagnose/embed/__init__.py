"""Embeddings: encoder loading, the on-disk embedding cache, exact dense search, precomputed vectors.

Conventions used everywhere in this package:

- Vectors are float32 rows, L2-normalised, so **cosine = dot product**. A text whose vector has norm 0 (e.g. an
  empty text under :class:`KeywordEncoder`) keeps the zero vector: its cosine with everything is 0 (no NaN).
- An encoder's ``name`` is its *identity* for the cache: two encoders with the same name must give the same
  vectors. See :func:`load_encoder` for how it is derived (content hash for a folder, ``repo@commit`` for the Hub).
- Heavy imports (torch, sentence_transformers, huggingface_hub, tqdm, pyarrow) happen inside functions.

Where things live
-----------------
``encoders``
    the :class:`Encoder` protocol, :class:`KeywordEncoder`, :class:`SentenceTransformerEncoder`, row normalisation.
``loading``
    :func:`load_encoder`: the bundled default, a folder (:func:`model_fingerprint`), a Hub id (:func:`hub_offline`,
    :func:`hub_reachable`), :class:`ModelLoadError` and the alternatives it names.
``fast``
    the bf16 encoder ``precision="fast"`` returns.
``store``
    :class:`EmbeddingCache` (``encoder.json``) and :func:`embed_texts`.
``search``
    exact :func:`dense_search`, :func:`dense_rank_of` and :func:`dense_rank_range`, in blocks of
    :data:`BLOCK_ELEMENTS` scores (to change it, set ``diagnose.embed.search.BLOCK_ELEMENTS``: that is where the
    searches read it).
``precomputed``
    :func:`load_precomputed` (``.npy`` + ids, parquet streamed) and :class:`PrecomputedEmbeddings`.
"""

# ruff: noqa: F401 - this file re-exports: the public API (``__all__``) and the other public names of the
# single-file diagnose/embed.py (Progress, the tunables and formats)
from diagnose.embed.encoders import Encoder, KeywordEncoder, Progress, SentenceTransformerEncoder
from diagnose.embed.loading import (
    DEFAULT_ALIASES,
    DEFAULT_MODEL,
    HUB_CHECK_TIMEOUT_S,
    ModelLoadError,
    default_model_path,
    hub_offline,
    hub_reachable,
    load_encoder,
    model_fingerprint,
)
from diagnose.embed.search import BLOCK_ELEMENTS, dense_rank_of, dense_rank_range, dense_search
from diagnose.embed.store import CACHE_FLUSH_ROWS, ENCODER_META_FORMAT, EmbeddingCache, embed_texts
from diagnose.io.vectors import PrecomputedEmbeddings, load_precomputed

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_ALIASES",
    "Encoder",
    "EmbeddingCache",
    "KeywordEncoder",
    "ModelLoadError",
    "PrecomputedEmbeddings",
    "SentenceTransformerEncoder",
    "default_model_path",
    "dense_rank_of",
    "dense_rank_range",
    "dense_search",
    "embed_texts",
    "hub_offline",
    "hub_reachable",
    "load_encoder",
    "load_precomputed",
    "model_fingerprint",
]
