"""Re-chunking documents with a maintained splitter: semantic-text-splitter (the Rust ``text-splitter`` crate),
lengths counted with the model's own tokenizer.

Why this splitter (measured on 500 NFCorpus abstracts, CPU seconds, size 128, overlap 32, the bundled model's
tokenizer): semantic-text-splitter 2.6 s, semchunk 2.0 s (but its ``overlap`` makes more, smaller chunks: 2,616
against 1,812), langchain-text-splitters' ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` about 20 times
slower (114 s wall for 2,000 documents where semchunk took 24 s). semantic-text-splitter gives character offsets
directly (``chunk_all_indices``), counts ``size`` and ``overlap`` in the tokenizer's tokens, and splits at the
largest semantic unit that fits (paragraphs, then sentences, then words): chunks hold at most ``size`` tokens.

A document whose whole text fits in ``size`` tokens is one chunk (its text stripped of surrounding whitespace),
without a call to the splitter, as the splitter would return it. Without a model tokenizer (an encoder such as
:class:`~diagnose.embed.KeywordEncoder`), lengths are counted in word tokens (:data:`diagnose.metrics.context.TOKEN`).

**Titles.** Chunks are cut from the document's ``text``, and their offsets are offsets into that ``text`` (the
coordinates of reference spans, :class:`~diagnose.data.Span`). What is *encoded* for a chunk is its document's title
in front of the chunk's text, :func:`~diagnose.data.document_text` (``title + " " + chunk``, the convention of the
whole documents and of a chunk corpus' chunks and windows, :mod:`diagnose.io.chunks`): :func:`encoded_texts`. So every
chunk of a titled document carries its title (``size`` counts the text's tokens: the encoded chunk is the title's
tokens longer), and a document with a title and no text (CACM has many) gets one chunk, the empty range ``[0, 0)`` of
its text, encoded as its title: it can be retrieved, and sends no text to the span-based context measures (which,
like the documents as they are, read ``text`` only).

**A first chunk longer than the window** (:func:`reads_as_document`): the model reads the first ``capacity`` token
ids of what it encodes, so a chunk that starts its document and is longer than that gives the model the same ids
as the whole document (title in front of both): it is encoded as the document's text, and the embedding cache
serves the documents-as-they-are vector instead of encoding it again (the ids are compared, not assumed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from diagnose.data import document_text
from diagnose.metrics.context import count_tokens
from diagnose.runtime.extras import needs


def model_tokenizer(encoder: Any) -> Any | None:
    """The encoder's Hugging Face ``tokenizers.Tokenizer`` with truncation and padding off (a copy), or None when
    it has none (then lengths are word tokens)."""
    model = getattr(encoder, "model", None) if hasattr(encoder, "loaded") else None
    hf = getattr(model, "tokenizer", None)
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(backend.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


def _lengths(tokenizer: Any | None) -> Callable[[Sequence[str]], list[int]]:
    if tokenizer is None:
        return lambda texts: [count_tokens(t) for t in texts]
    return lambda texts: [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def split_documents(
    texts: Sequence[str],
    size: int,
    overlap: int,
    tokenizer: Any | None,
    titles: Sequence[str] | None = None,
    lengths: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks of ``texts`` as ``(document index, start, end)`` int64 arrays (character offsets into each text,
    in document then position order): at most ``size`` tokens each, neighbours sharing up to ``overlap``. With
    ``titles``, a document without text but with a title gets one chunk ``[0, 0)`` (module docstring). ``lengths``:
    each text's length in ``tokenizer``'s tokens when already known (:meth:`DocumentTokens.lengths`, shared by the
    configurations of a sweep), else counted here."""
    with needs("Re-chunking the documents (diagnose chunking)"):
        from semantic_text_splitter import TextSplitter
    if tokenizer is None:
        splitter = TextSplitter.from_callback(count_tokens, size, overlap=overlap, trim=True)
    else:
        splitter = TextSplitter.from_huggingface_tokenizer(tokenizer, size, overlap=overlap, trim=True)
    texts = [t if isinstance(t, str) else "" for t in texts]
    fits = [n <= size for n in (lengths if lengths is not None else _lengths(tokenizer)(texts))]
    long = [i for i, f in enumerate(fits) if not f]
    split = dict(zip(long, splitter.chunk_all_indices([texts[i] for i in long]), strict=True)) if long else {}
    docs, starts, ends = [], [], []
    for i, text in enumerate(texts):
        if i in split:
            pieces = [(s, s + len(c)) for s, c in split[i]]
        else:
            stripped = text.strip()
            pieces = [(text.index(stripped), text.index(stripped) + len(stripped))] if stripped else []
            if not pieces and titles is not None and isinstance(titles[i], str) and titles[i].strip():
                pieces = [(0, 0)]  # a title-only document: its title is the chunk's encoded text
        for s, e in pieces:
            docs.append(i)
            starts.append(s)
            ends.append(e)
    return tuple(np.asarray(x, dtype=np.int64) for x in (docs, starts, ends))  # type: ignore[return-value]


def encoded_texts(
    texts: Sequence[str], titles: Sequence[str], docs: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> list[str]:
    """What is encoded for each chunk ``(docs[i], starts[i], ends[i])`` of :func:`split_documents`: its document's
    title in front of its text (:func:`~diagnose.data.document_text`, module docstring)."""
    return [
        document_text(titles[d] if isinstance(titles[d], str) else "", texts[d][s:e])
        for d, s, e in zip(docs, starts, ends, strict=True)
    ]


def reads_as_document(
    encoder: Any,
    tokenizer: Any | None,
    texts: Sequence[str],
    titles: Sequence[str],
    docs: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    tokens: DocumentTokens | None = None,
) -> np.ndarray:
    """For each chunk of :func:`split_documents`, whether the model reads exactly what it reads from the chunk's
    whole document (title + text, what the dense baseline encodes): a chunk that starts its document and is longer
    than the model's window is cut by the model to its first ``capacity`` token ids, the same as the document's
    (the ids of the two texts compared), so its vector is the document's and the embedding cache serves it instead
    of encoding the chunk again. All False without a tokenizer or a known window. ``tokens``: the documents' ids
    when a sweep already holds them (:class:`DocumentTokens`, tokenised once for every configuration)."""
    from diagnose.failures.passages import model_window

    out = np.zeros(len(docs), dtype=bool)
    window = model_window(encoder) if tokenizer is not None and len(docs) else None
    if window is None:
        return out
    cap = window.capacity
    first = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])  # only a document's first chunk can qualify
    heads = encoded_texts(texts, titles, docs[first], starts[first], ends[first])
    ends_of = np.fromiter((len(texts[d]) for d in docs[first]), dtype=np.int64, count=len(first))
    wholes = encoded_texts(texts, titles, docs[first], np.zeros_like(ends_of), ends_of)  # title + whole text
    cand = [n for n in range(len(first)) if heads[n] != wholes[n]]
    if not cand:
        return out
    mine = [e.ids for e in tokenizer.encode_batch([heads[n] for n in cand], add_special_tokens=False)]
    if tokens is None:
        tokens = DocumentTokens(tokenizer, texts, titles)
    theirs = tokens.whole_ids([int(docs[first[n]]) for n in cand])
    for a, b, n in zip(mine, theirs, cand, strict=True):
        out[first[n]] = len(a) >= cap and a[:cap] == b[:cap]
    return out


class DocumentTokens:
    """The tokenisation every configuration of a sweep shares, done once per document and kept: each ``text``'s
    length in tokens (:meth:`lengths`: does the document fit a chunk size?) and the token ids of each whole
    document, title in front (:meth:`whole_ids`: what :func:`reads_as_document` compares a first chunk with). Ids
    are without special tokens; a ``tokenizer`` of None counts word tokens and has no ids."""

    def __init__(self, tokenizer: Any | None, texts: Sequence[str], titles: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.texts = texts
        self.titles = titles
        self._lengths: list[int] | None = None
        self._whole: dict[int, list[int]] = {}

    def lengths(self) -> list[int]:
        """Each text's length (without its title) in the tokenizer's tokens, counted on first use."""
        if self._lengths is None:
            self._lengths = _lengths(self.tokenizer)([t if isinstance(t, str) else "" for t in self.texts])
        return self._lengths

    def whole_ids(self, docs: Sequence[int]) -> list[list[int]]:
        """The ids of ``title + " " + text`` (:func:`~diagnose.data.document_text`) of each document index in
        ``docs``; each document is encoded by the tokenizer once, whatever the number of calls."""
        todo = list(dict.fromkeys(d for d in docs if d not in self._whole))
        if todo:
            whole = [
                document_text(self.titles[d] if isinstance(self.titles[d], str) else "", self.texts[d])
                for d in todo
            ]
            for d, e in zip(todo, self.tokenizer.encode_batch(whole, add_special_tokens=False), strict=True):
                self._whole[d] = e.ids
        return [self._whole[d] for d in docs]
