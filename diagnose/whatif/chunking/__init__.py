"""Which chunking? Re-chunk the documents at a grid of sizes and overlaps, encode, search, and compare each
chunking with the documents as they are, on the golden set.

For each :class:`ChunkingConfig` (``size`` and ``overlap`` in the model's tokens; :func:`check_grid`):

1. the documents' ``text`` fields are split by :func:`~diagnose.whatif.chunking.splitter.split_documents`
   (semantic-text-splitter, the model's tokenizer for lengths; a chunk is a character range of its document's
   ``text``, the coordinates of reference spans);
2. the chunks, each with its document's title in front (:func:`~diagnose.whatif.chunking.splitter.encoded_texts`), are
   encoded by the analysis' model after every configuration to measure is split: each distinct chunk text once
   whatever the number of configurations holding it, and none that the on-disk embedding cache holds (keyed by the
   text and the model, verified on read; shared with the dense baseline), through
   :func:`diagnose.embed.embed_texts` (longest first), configuration by configuration so that each forward pass
   batches what a configuration measured alone would (the vectors bit for bit those); then searched exactly
   (:func:`diagnose.embed.dense_search`, cosine, the queries' vectors of the analysis, encoded once);
3. documents are ranked by their best chunk (:func:`diagnose.retrievers.results.document_list`, what
   ``run_retriever(chunk_to_doc="max")`` does: a document at its first rank with its best score).

Reported per configuration (``to_dict`` keys; ``K`` is the cutoff):

- ``chunks``: how many chunks; ``encode_s``: wall seconds of encoding those no configuration before it in the grid
  holds (about 0 when the embedding cache held them); ``index_mb``: the float32 vectors of an exact (flat) index,
  chunks x dim x 4 bytes, in MiB;
- ``recall@K``, ``ndcg@K``, ``hit_rate@K``: document level, :func:`diagnose.metrics.evaluate` (trec_eval exact) of
  the best-chunk document run;
- ``context_precision@K``, ``context_recall@K``, ``tokens@K``: :mod:`diagnose.metrics.context` over the top K
  *chunks* (what a generator is sent), against the golden set's reference spans; without spans (id-based qrels) the
  relevant documents' whole texts are the references (``reference: "documents"``). ``tokens@K`` counts word tokens
  (``\\w+``), the unit of those two measures, not the generator's sub-words;
- ``recovers`` / ``breaks``: the golden queries a configuration gets right (a relevant document in the top K) that
  the documents as they are miss, and the reverse (ids in ``recovered_queries`` / ``broken_queries``);
  ``ndcg_diff``: mean per-query nDCG@K difference against them and ``p_value``: the two-sided paired randomization
  test of it (:func:`diagnose.stats.randomization_test`);
- ``pareto``: no other point (the documents as they are included) sends fewer tokens at K and has a higher nDCG@K;
- ``cached``: read from the sweep's cache.

The documents as they are (``current``) are the analysis' dense baseline: whole documents (title + text) encoded
once, the pieces sent being their whole ``text``. Chunks are cut from the ``text`` field and encoded with the
document's title in front, as the documents are (:func:`~diagnose.data.document_text`; a document with a title and no
text gets one chunk, its title: :mod:`diagnose.whatif.chunking.splitter`); their offsets, and so the pieces sent, are in
``text`` coordinates, as the spans are. A model truncates its input (all-MiniLM-L6-v2: 256 tokens), so a chunk larger
than that is embedded from its beginning only while all of it counts as sent.

**Cache.** Each point is stored as JSON under ``CACHE_DIR/chunking/`` keyed by the BLAKE2b of the content (document
ids and texts, golden queries, qrels, spans), the model's name, ``k`` and the configuration: a second sweep reads
it and loads no model; any change in the data measures again. The splits are cached apart
(:mod:`diagnose.whatif.chunking.splits`, ``CACHE_DIR/chunking/splits/``, keyed by the texts, the tokenizer and the
configuration), and so are the vectors (the embedding cache, shared with the dense baseline: a chunk text seen in
another configuration or as a whole document is encoded once): a sweep measured again for another ``k`` or golden
set splits nothing and, with every vector cached, loads no model either. The tokenisation the configurations share is
done once per document (:class:`~diagnose.whatif.chunking.splitter.DocumentTokens`: each text's length, each whole
document's ids); the splitter's own (semantic-text-splitter's search for the largest unit that fits) is per
configuration. Progress: a step per configuration split with the time left (from the configurations split), one
bar for the encode of every configuration (distinct texts done / to encode, with the time left: tqdm on a terminal, the app's status
box), and a step per configuration searched and scored.
"""

from __future__ import annotations

from diagnose.whatif.chunking.grid import ChunkingConfig, check_grid
from diagnose.whatif.chunking.sweep import ChunkingPoint, ChunkingSweep, SweepInputs, run_sweep, with_pareto

__all__ = [
    "ChunkingConfig",
    "ChunkingPoint",
    "ChunkingSweep",
    "SweepInputs",
    "check_grid",
    "run_sweep",
    "with_pareto",
]
