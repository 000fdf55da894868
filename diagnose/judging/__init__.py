"""Judge the golden set where it is broken: which (query, document) pairs to judge first, a crash-safe journal of
the judgements, exports, and the metrics recomputed with them.

Most golden sets are sparse or missing; a metric over unjudged documents counts every one of them as non-relevant.
This module closes the holes that matter first:

- :func:`judge_queue`: the unjudged documents in the top k of every run, ordered by how likely each is a missed
  relevant document (label-gap near-duplicates first, then a documented agreement score). Works with no golden set
  at all: the candidates then come from BM25, dense and hybrid search over every query with a text.
- :class:`Journal`: one JSON line per judgement, appended and fsynced at once, never rewritten; a crash loses at
  most the line being written, and reading ignores such a torn line (counted), wherever it is.
- :func:`merge`, :func:`write_trec_qrels`, :func:`write_beir_qrels`: the golden set with the new judgements.
- :func:`with_judgements`, :func:`judgement_effect`: the same analysis over the merged golden set, and what changed
  ("nDCG@10 0.612 -> 0.655 after 40 judgements, 6 failures were label gaps").

Grades are integers 0-3 (0 = not relevant, > 0 = relevant, trec_eval's relevance level 1), or ``"skip"`` (the judge
could not tell: the pair leaves the queue and the golden set does not change).

Where things are
----------------
One question a file; this package re-exports the public names and holds :func:`load_for_judging`.

``queue``
    :func:`judge_queue` (the candidates pooled from the runs and BM25 / dense / hybrid probes, their signals and
    order), :func:`pending`, :func:`with_texts`.
``journal``
    :class:`Journal` (append, fsync), :func:`default_journal_path`.
``reading``
    the one reader of journals and graded queue TSVs (torn lines, hostile lines, ASCII grades, conflicting
    grades), the grades, and :func:`write_queue_tsv`, the queue's TSV writer.
``merge``
    :func:`merge`, :func:`merge_counts`, :func:`read_judgements` (journal, graded queue TSV or qrels), the TREC and
    BEIR exports.
``effect``
    :func:`with_judgements` (the same analysis over the merged golden set) and :func:`judgement_effect`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from diagnose import defaults
from diagnose.data import DataError, Dataset
from diagnose.io.load import load
from diagnose.io.qrels_writers import write_beir_qrels, write_trec_qrels
from diagnose.judging.effect import RunEffect, iter_effect_lines, judgement_effect, with_judgements
from diagnose.judging.journal import JOURNAL_ENV, JOURNAL_NAME, Journal, PathLike, default_journal_path
from diagnose.judging.merge import (
    MergeCounts,
    merge,
    merge_counts,
    read_judgements,
)
from diagnose.judging.queue import QUEUE_COLUMNS, judge_queue, pending, with_texts
from diagnose.judging.reading import GRADES, QUEUE_TSV_COLUMNS, SKIP, Entry, write_queue_tsv

__all__ = [
    "GRADES",
    "JOURNAL_ENV",
    "JOURNAL_NAME",
    "QUEUE_COLUMNS",
    "QUEUE_TSV_COLUMNS",
    "SKIP",
    "Entry",
    "Journal",
    "MergeCounts",
    "PathLike",
    "RunEffect",
    "default_journal_path",
    "iter_effect_lines",
    "judge_queue",
    "judgement_effect",
    "load_for_judging",
    "merge",
    "merge_counts",
    "pending",
    "read_judgements",
    "with_judgements",
    "with_texts",
    "write_beir_qrels",
    "write_queue_tsv",
    "write_trec_qrels",
]


def load_for_judging(
    data: PathLike | None = None,
    *,
    corpus: PathLike | None = None,
    queries: PathLike | None = None,
    qrels: PathLike | None = None,
    split: str = defaults.SPLIT,
    runs: Sequence[str | Path | tuple[str | None, PathLike]] = (),
) -> Dataset:
    """:func:`diagnose.load` where the golden set is optional: a BEIR folder without ``qrels/<split>.tsv``, or a
    corpus and a queries file (a production query log) alone get empty qrels. Evaluating such a data set stays an
    error (no query has a relevant document); :func:`judge_queue` and :func:`with_judgements` work."""
    if data is None and (corpus is None or queries is None):
        raise DataError("Judging needs a corpus and queries: pass a BEIR folder, or corpus= and queries=.")
    return load(
        data, corpus=corpus, queries=queries, qrels=qrels, split=split, runs=runs, require_qrels=False
    )
