"""The defaults of the parameters a user can set, and the choices of those that take one of a few, each written
once: the library's signatures, the CLI's flags (and their ``--help`` texts) and the app's widgets read them here.

The failure taxonomy's thresholds (seed cosine, near-duplicate cosine) are here too and are the defaults of
:class:`diagnose.failures.Thresholds`. The metric cutoffs of the metric table live with the metrics.
"""

from __future__ import annotations

K = 10
"""The rank cutoff of the failures, the headline metrics and the other one-cutoff commands."""

DEPTH = 100
"""How deep the baseline runs (BM25, dense, hybrid), live retrievers and rerank candidates go."""

RRF_K = 60
"""The constant of reciprocal rank fusion, ``1 / (RRF_K + rank)`` (Cormack et al. 2009)."""

SEED_COSINE = 0.75
"""The seed rule of the taxonomy: a missed target below this cosine to its query is a vocabulary mismatch."""

DUPLICATE_COSINE = 0.95
"""Two documents at or above this cosine are near-duplicates (the label_gap class)."""

RESAMPLES = 10_000
"""Bootstrap and randomization-test resamples."""

SEED = 0
"""The random seed of the bootstrap and randomization tests (and of fine-tuning's folds and training)."""

SPLIT = "test"
"""The qrels split read from a BEIR folder (``qrels/<split>.tsv``)."""

BASELINES = ("bm25", "dense", "hybrid")
"""The baseline runs computed beside the user's: Lucene BM25, exact dense search with the model, and their RRF."""

FAILURE_MODES = ("hit", "recall")
FAILURE = "hit"
"""The failure definition: ``"hit"`` (no relevant document in the top k) or ``"recall"`` (any missing)."""

BM25_ENGINES = ("bm25s", "rank_bm25")
BM25_ENGINE = "bm25s"
"""The BM25 engine (see :mod:`diagnose.lexical`)."""

PRECISIONS = ("fast", "exact")
PRECISION = "fast"
"""The encoder precision: ``"fast"`` (bf16 where the CPU has it) or ``"exact"`` (fp32)."""

CONCURRENCY = 4
"""Queries in flight at once for a live retriever."""

MAP_COLORINGS = ("role", "failure_class")
MAP_COLOR_BY = "role"
"""What colours the points of the embedding map: their role (target, retrieved, query...) or failure class."""

INSPECT_OPEN = 3
"""The Query inspector opens the worst few missed targets of a query as cards; the others are listed, per class, in a
compact table (a toggle opens them all)."""

MAP_WORST_LINES = 5
"""The embedding map draws the lines (query to missed targets and to its top retrieved document) of the selected query
and of this many worst failed queries; a toggle draws every failed query's."""

PASSAGE_SENTENCES = 3
"""A passage of a target (:mod:`diagnose.failures.passages`): up to this many consecutive sentences, cut to the
model's window."""

PASSAGE_TOKENS = 128
"""A passage of a target (:mod:`diagnose.failures.passages`) holds at most this many of the model's tokens (or its
window, when smaller): a sentence longer than that is cut into pieces of this many tokens overlapping by half."""

DILUTED_MARGIN = 0.15
"""The diluted class: a passage within the model's window beats the whole target's cosine by at least this much."""

PASSAGE_CANDIDATES = 20
"""The passage remedy's bound when it is bounded (:func:`diagnose.failures.passages.remedy_candidates`): each golden
query re-scores by max-sim the top this-many documents (at least k) of the run, of exact dense search and of BM25,
and its failed targets; only their passages are encoded. The targets compete only with those lists, so the bounded
remedy can overstate what the whole-corpus one recovers: on NFCorpus (our BM25 run, k=10) the whole corpus recovers
truncated 7/22, diluted 3/5, semantic_gap 21/100 failed queries (mean hit_rate@10 difference +0.006, 20 lost hits);
bound 20 (3,296 of the 3,633 documents' passages) 10/22, 4/5, 28/100 (+0.040, 16 lost hits); bound 10 (2,804)
14/22, 4/5, 38/100 (+0.077, 14). On the demo (exact dense search) bound 20 gave the whole corpus' figures, bound 10
near_miss 10/14 against 7/14. Hence the default, ``"auto"``: the whole corpus up to :data:`MAXSIM_MAX_DOCS`
documents, this bound above."""

MAXSIM_MAX_DOCS = 20_000
"""``Analysis(passage_candidates="auto")`` (the default): the passage remedy searches every document's passages up
to this many documents, and the bounded candidate set (:data:`PASSAGE_CANDIDATES`) above."""

CHUNK_SIZES = (128, 256, 512)
CHUNK_OVERLAPS = (0,)
"""The grid of a chunking sweep (:mod:`diagnose.whatif.chunking`): chunk sizes and overlaps in the model's tokens."""

TRAIN_EPOCHS = 1
TRAIN_BATCH_SIZE = 32
TRAIN_MAX_SEQ_LENGTH = 128
TRAIN_LEARNING_RATE = 2e-5
TRAIN_PAIRS_PER_QUERY = 2
"""Fine-tuning's knobs (:class:`diagnose.whatif.finetune.TrainSettings`, ``diagnose finetune``): epochs, batch size, tokens
per text in training, learning rate, relevant documents per training query (each with one hard negative). They
finish in minutes on 2 CPU cores for all-MiniLM-L6-v2 and a few hundred training queries (bench/RESULTS.md)."""

FINETUNE_MAX_DOCUMENTS = 100_000
"""Re-encoded documents (corpus size x evaluated models) above which fine-tuning refuses to start without a sample
(:mod:`diagnose.analysis.finetuning`)."""
