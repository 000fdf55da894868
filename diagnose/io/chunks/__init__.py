"""Chunk corpora: a corpus whose records are chunks of documents (what a RAG retriever indexes and returns).

- :mod:`.corpus`: which document each chunk belongs to (a metadata key, ``--parent-field KEY``, or the id pattern
  ``DOCUMENT#N``) and its character offsets in it (:class:`~diagnose.data.ChunkMap` on ``Corpus.chunks``); the
  documents' texts rebuilt from the chunks, where reference contexts are located.
- :mod:`.relevance`: relevance at the chunk level (from the spans each chunk holds, or inherited from document
  judgements) and at the document level (a document judged by its best chunk).

A run of chunks read at the document level is :mod:`diagnose.search.documents`; the ``split`` failure class's
evidence (a reference span no chunk holds whole) and its remedy's run are :mod:`diagnose.failures.split`.
"""

from __future__ import annotations

from diagnose.io.chunks.corpus import OFFSET_KEYS, PATTERN, chunk_map, document_texts, with_chunks
from diagnose.io.chunks.relevance import (
    CHUNK_SHARE,
    chunk_level_qrels,
    chunk_qrels_from_spans,
    document_qrels,
)

__all__ = [
    "CHUNK_SHARE",
    "OFFSET_KEYS",
    "PATTERN",
    "chunk_level_qrels",
    "chunk_map",
    "chunk_qrels_from_spans",
    "document_qrels",
    "document_texts",
    "with_chunks",
]
