"""The split cache: the chunks of a list of texts at one ``(size, overlap)``, kept on disk so that a sweep whose
points must be measured again (another golden set, another ``k``) does not split again, nor load the model for its
tokenizer.

Each split is one checked file of :class:`~diagnose.cache.ArrayCache` (``CACHE_DIR/chunking/splits/``) holding the
``(document index, start, end)`` arrays of :func:`~diagnose.whatif.chunking.splitter.split_documents` and each chunk's
:func:`~diagnose.whatif.chunking.splitter.reads_as_document` flag, keyed by the
BLAKE2b of :data:`SPLIT_FORMAT`, the tokenizer's identity, ``size``, ``overlap``, every text and every title. The tokenizer's
identity is the model's cache identity without its precision (``encoder.exact_name`` of a fast encoder: the bf16
and fp32 models share one tokenizer), or ``word tokens`` for an encoder without a tokenizer. The tokenizer itself is
asked for (and the model loaded for it) only on a miss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache import ArrayCache
from diagnose.whatif.chunking.splitter import DocumentTokens, reads_as_document, split_documents

#: Version of the cached split's layout (part of its key: another version splits again).
SPLIT_FORMAT = 3
_NAMES = ("doc", "start", "end", "whole")


def _consistent(arrays: dict[str, np.ndarray], _meta: dict[str, Any]) -> str | None:
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1:
        return f"arrays of shapes {sorted(shapes)}, expected {len(_NAMES)} of one length"
    return None


class SplitCache:
    """Splits of texts by ``(size, overlap)``, read from ``directory`` when there, else split and written."""

    def __init__(self, directory: Path, encoder: Any, tokenizer: Callable[[], Any]) -> None:
        self.cache = ArrayCache(Path(directory))
        self.encoder = encoder
        self.tokenizer = tokenizer
        model = getattr(encoder, "exact_name", None) or encoder.name
        self.identity = f"model:{model}" if hasattr(encoder, "loaded") else "word tokens"
        self._texts_key: dict[int, tuple[Sequence[str], str]] = {}
        self._tokens: DocumentTokens | None = None  # of the last texts split: shared by their configurations
        self._tokens_of: tuple[Sequence[str] | None, Sequence[str] | None] = (None, None)

    def _digest(self, texts: Sequence[str]) -> str:
        known = self._texts_key.get(id(texts))
        if known is None or known[0] is not texts:  # hashed once per list (a sweep splits one list 3+ times)
            h = hashlib.blake2b(digest_size=16)
            for t in texts:
                h.update((t if isinstance(t, str) else "").encode("utf-8", "surrogatepass"))
                h.update(b"\x00")
            known = (texts, h.hexdigest())
            self._texts_key[id(texts)] = known
        return known[1]

    def _key(self, texts: Sequence[str], size: int, overlap: int, titles: Sequence[str] | None) -> str:
        titled = self._digest(titles) if titles is not None else None
        return json.dumps(
            [SPLIT_FORMAT, self.identity, size, overlap, len(texts), self._digest(texts), titled]
        )

    def split(
        self, texts: Sequence[str], size: int, overlap: int, titles: Sequence[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:func:`split_documents` of ``texts`` (its ``(document index, start, end)`` int64 arrays) and
        :func:`~diagnose.whatif.chunking.splitter.reads_as_document` of each chunk (bool), cached; the ``titles`` (a
        title-only document gets a chunk; the title is in front of every chunk) are part of the key."""
        key = self._key(texts, size, overlap, titles)
        got = self.cache.get_arrays(key, _NAMES, check=_consistent)
        if got is not None:
            return (
                *(np.asarray(got[n], dtype=np.int64) for n in _NAMES[:3]),
                np.asarray(got["whole"], dtype=bool),
            )
        tokens = self.document_tokens(texts, titles)
        docs, starts, ends = split_documents(
            texts, size, overlap, tokens.tokenizer, titles, lengths=tokens.lengths()
        )
        whole = reads_as_document(
            self.encoder, tokens.tokenizer, texts, tokens.titles, docs, starts, ends, tokens
        )
        if len(docs):  # no chunk at all (every text empty) costs nothing to split again
            self.cache.put_arrays(
                key, dict(zip(_NAMES, (docs, starts, ends, whole.astype(np.int8)), strict=True))
            )
        return docs, starts, ends, whole

    def document_tokens(self, texts: Sequence[str], titles: Sequence[str] | None) -> DocumentTokens:
        """The :class:`DocumentTokens` of ``texts`` (the same list object, with the same titles, keeps the same
        one: every configuration of a sweep tokenises each document once); the tokenizer is asked for here."""
        if self._tokens is None or self._tokens_of[0] is not texts or self._tokens_of[1] is not titles:
            heads = titles if titles is not None else [""] * len(texts)
            self._tokens = DocumentTokens(self.tokenizer(), texts, heads)
            self._tokens_of = (texts, titles)
        return self._tokens
