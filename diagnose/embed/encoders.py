"""Encoders: the :class:`Encoder` protocol, :class:`KeywordEncoder` (a deterministic fake) and
:class:`SentenceTransformerEncoder`, and the row normalisation every encoder's output goes through."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from diagnose.checks import positive_int
from diagnose.embed.tokenizer import folder_tokenizer
from diagnose.runtime.progress import Progress, reporter


@runtime_checkable
class Encoder(Protocol):
    """What :func:`embed_texts` needs from a model.

    ``name`` is the cache identity (same name => same vectors), ``dim`` the vector length, and ``encode`` returns
    float32 ``[len(texts), dim]`` with L2-normalised rows (zero rows allowed). ``progress``
    (:data:`diagnose.runtime.progress.Progress`): ``True`` shows the model's own tqdm bar on stderr, a reporter or a
    ``callback(done, total)`` gets a bar of texts done.
    """

    name: str
    dim: int

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False
    ) -> np.ndarray: ...


def _l2_normalise(mat: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm; rows of norm 0 stay 0 (no NaN). Returns float32."""
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)


def renormalise(mat: np.ndarray) -> np.ndarray:
    """Like :func:`_l2_normalise`, but rows already within 1e-5 of unit norm are kept bit for bit."""
    mat = np.array(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1)
    off = np.flatnonzero((np.abs(norms - 1.0) > 1e-5) & (norms > 0))
    mat[off] /= norms[off, None]
    return mat


_TOKEN_RE = re.compile(r"[^\W_]+")


class KeywordEncoder:
    """Deterministic fake encoder: a hashed bag of words, for tests and for running without a model.

    ``vector(text)[b] = count of tokens t with bucket(t) == b``, then L2-normalised, where tokens are the maximal
    runs of letters/digits of ``text.lower()`` (Unicode-aware; ``_`` and punctuation separate), each mapped once
    through ``synonyms`` (keys and values lowercased; ``{"automobile": "car"}`` makes both words one dimension),
    and ``bucket(t) = int.from_bytes(blake2b(t.encode("utf-8"), digest_size=8).digest(), "little") % dim``.
    blake2b is unsalted, so vectors are identical across processes and machines (Python's ``hash`` is not).
    Different words can collide in a bucket (probability ~1/dim per pair). A text without tokens gets the zero
    vector. So the cosine of two texts is the cosine of their (hashed) term-count vectors: shared words only.

    ``name`` is ``keyword-hash-<dim>`` plus ``-syn<8 hex>`` of the synonym map when there is one, so two
    configurations never share a cache entry.
    """

    def __init__(self, dim: int = 256, synonyms: dict[str, str] | None = None, *, delay: float = 0.0) -> None:
        self.dim = positive_int(dim, "dim")
        self.delay = float(delay)  # seconds per text: stands in for a slow model in tests of progress
        self.synonyms = {k.lower(): v.lower() for k, v in (synonyms or {}).items()}
        self.name = f"keyword-hash-{self.dim}"
        if self.synonyms:
            blob = json.dumps(sorted(self.synonyms.items()), ensure_ascii=False).encode("utf-8")
            self.name += "-syn" + hashlib.blake2b(blob, digest_size=4).hexdigest()

    def tokens(self, text: str) -> list[str]:
        return [self.synonyms.get(t, t) for t in _TOKEN_RE.findall(text.lower())]

    def bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in self.tokens(text):
                out[i, self.bucket(tok)] += 1.0
        if self.delay:
            time.sleep(self.delay * len(texts))
        if not isinstance(progress, bool) and progress is not None:
            reporter(progress).bar(f"Encoding {len(texts):,} texts")(len(texts), len(texts))
        return _l2_normalise(out)

    def __repr__(self) -> str:
        return f"KeywordEncoder(dim={self.dim}, synonyms={len(self.synonyms)})"


class SentenceTransformerEncoder:
    """A sentence-transformers model (see :func:`load_encoder`).

    ``name`` is the cache identity, ``label`` what to show a person, ``source`` where the weights came from.
    Given ``loader`` instead of ``model``, the model is loaded on first use (``.model``, ``.dim`` or ``encode``):
    a run whose vectors all come from the cache never imports torch. ``dim`` may be given up front (the cache
    remembers it) to keep it that way.
    """

    def __init__(
        self,
        model: Any = None,
        *,
        name: str,
        label: str,
        source: str,
        loader: Callable[[], Any] | None = None,
        dim: int | None = None,
    ) -> None:
        if model is None and loader is None:
            raise ValueError("SentenceTransformerEncoder needs a model or a loader")
        self._model = model
        self._loader = loader
        self.name = name
        self.label = label
        self.source = source
        self._dim = int(dim) if dim is not None else None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        if self._model is None:
            assert self._loader is not None
            self._model = self._loader()
        return self._model

    def tokenizer_and_length(self) -> tuple[Any, int | None]:
        """The model's tokenizer and ``max_seq_length``. While the weights are not loaded, read from the model
        folder's files when they allow it (:func:`diagnose.embed.tokenizer.folder_tokenizer`): a run whose vectors
        all come from the cache then learns the model's window without loading the model."""
        if self._model is None and self.source:
            found = folder_tokenizer(self.source)
            if found is not None:
                return found
        model = self.model
        return getattr(model, "tokenizer", None), getattr(model, "max_seq_length", None)

    @property
    def dim(self) -> int:
        if self._dim is None:
            model = self.model
            get_dim = (
                getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            )
            dim = get_dim()
            if dim is None:  # some custom stacks do not declare it: ask the model once
                dim = int(np.asarray(model.encode(["dimension probe"], convert_to_numpy=True)).shape[1])
            self._dim = int(dim)
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = int(value)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress = False) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if isinstance(progress, bool) or progress is None:  # True: sentence-transformers' own bar
            vecs = self.model.encode(
                texts,
                batch_size=batch_size,
                show_progress_bar=bool(progress),
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
            return renormalise(vecs)
        update = reporter(progress).bar(f"Encoding {len(texts):,} texts")
        parts = []
        step = batch_size * 4
        for start in range(0, len(texts), step):
            parts.append(self.encode(texts[start : start + step], batch_size=batch_size))
            update(min(start + step, len(texts)), len(texts))
        return np.concatenate(parts)

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder({self.label!r}, name={self.name!r}, dim={self.dim})"
