"""Readers and validation for corpus, queries, qrels and runs (BEIR, TREC, JSONL, CSV/TSV, Parquet, folders).

Every reader returns one of the records of :mod:`diagnose.data` and counts what it had to tolerate in a
:class:`~diagnose.data.ValidationReport`. A problem that makes going on impossible raises
:class:`~diagnose.data.DataError` with a one-paragraph message::

    <file>:<line>: what is wrong (what was seen). Expected <format>. Fix: <how>.

Fatal (``DataError``): a missing or unreadable file, a file that matches no format, a malformed line in qrels or
a run (wrong number of fields, invalid JSON, missing keys), a NaN or infinite score, a non-integer relevance
grade, empty qrels, two runs with the same name. Everything else is a counted warning (or info) and the data is
kept or the line skipped, never silently.

Formats
-------
Corpus
    BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``; the ``metadata`` object is flattened into columns,
    ``metadata.year`` -> column ``year``); CSV / TSV / Parquet with configurable id / text / title columns
    (auto-detected: id ``_id|id|doc_id|docid``, text ``text|body|content|contents``, title ``title``); or a
    folder of ``.txt`` / ``.md`` files (id = path relative to the folder with forward slashes; title = the first
    markdown heading of a ``.md`` file, removed from the text when it is the first non-blank line; else empty).
Queries
    BEIR ``queries.jsonl`` (metadata kept as columns, ``metadata.area`` -> ``area``); TSV ``id<TAB>text``
    (optional header); CSV / Parquet with id ``_id|id|query_id|qid`` and text ``text|query|question``.
Qrels
    BEIR TSV with header ``query-id corpus-id score``; TREC qrels ``qid iter docid rel`` (whitespace separated);
    JSONL ``{"query_id": .., "relevant": {"doc": grade, ..}}`` or ``"relevant": [ids]`` (grade 1). Grades are
    kept as integers (``1.0`` is read as 1 and counted as info); a document is relevant when its grade is > 0.
Runs
    TREC run files ``qid Q0 docid rank score tag`` (whitespace separated, also ``.gz``; fields after the tag are
    ignored like trec_eval does); JSONL ranked lists ``{"query_id": .., "results": [{"doc_id": .., "score": ..},
    ..]}`` or ``{"query_id": .., "doc_ids": [..]}``; CSV/TSV long format with a header
    ``query_id,doc_id,score[,rank]``.

Run order (the convention that decides every metric)
----------------------------------------------------
A TREC run file, and a CSV run without a rank column, are ordered exactly as trec_eval orders them: per query by
score descending, ties broken by doc id *descending* (``strcmp`` on the UTF-8 bytes, the same order as Python
``str`` comparison on code points). The rank column of the file is ignored for ordering (trec_eval ignores it
too); files whose rank column disagrees with that order get one ``info`` item. Scores are compared as 32-bit
floats: ``TEXT_RESULTS.sim`` is a C ``float`` in the trec_eval vendored by pytrec-eval-terrier 0.5.11, which
converts the Python float it is given, so two scores closer than float32 resolution tie there (verified: ``1.0``
and ``1.0 + 1e-9`` tie in pytrec_eval and the doc id decides; ``1e39`` and ``1e40`` both become +inf and tie).
The current usnistgov/trec_eval source declares ``double sim`` (parsed with ``atof``) and would keep such scores
apart: the two differ only for scores within ~6e-8 relative of each other (e.g. BM25 scores ``20.123401`` and
``20.123402`` are one float32). We follow pytrec-eval-terrier, the reference the metrics are tested against; the
``score`` column keeps the full float64 value read.

Ranked-list formats (JSONL, CSV with a rank column) keep their list order. A document listed twice for one query
keeps its first occurrence in final order (the best ranked one) and the rest are counted as a warning. Ranks are
then ``1..n`` per query with no gaps. Queries appear in the order they are first seen in the file.

Ids are strings, stripped of surrounding whitespace.

Where things are
----------------
One question a file (``diagnose/io/<name>.py``); this package re-exports the public names.

``runs``
    :func:`read_run` and its formats, :func:`parse_run_arg`, :func:`write_trec_run` (add a run format here).
``runs_jsonl``
    the JSONL ranked lists of :func:`read_run` (``results`` with scores, or ``doc_ids`` in rank order).
``run_order``
    :func:`trec_order` and the ranked lists built from a run's rows (the run order above, duplicates, ranks).
``qrels``
    :func:`read_qrels` and its formats, ``empty_qrels``.
``corpus`` / ``queries``
    :func:`read_corpus` (and the folder of ``.txt`` / ``.md`` files), :func:`read_queries`.
``records``
    the JSONL / CSV / TSV / Parquet record files shared by corpus and queries, and their id / text columns.
``dataset``
    :func:`load_dataset` and the checks of the files against each other.
``formats``
    what each reader accepts: the format descriptions quoted in messages, the id / text column names.
``files``
    reading an input file safely: path checks, the size limit (:func:`max_input_bytes`), gzip, the folders reads
    are confined to (:func:`confine_reads`); a large plain run file is memory-mapped and parsed in place
    (:func:`~diagnose.io.files.read_mapped`).
``nesting``
    how deep a JSON line may nest (checked before pyarrow or json parse it).
``decoding``
    UTF-8 decoding, and ids that differ only in bytes that are not UTF-8.
``text`` / ``tables``
    lines, numbers and grades, JSONL lines; the pyarrow fast paths for whitespace-separated and CSV/TSV files.
``messages``
    how a problem is worded (the ``DataError`` format above).
"""

# ruff: noqa: F401 - this file re-exports: the public API (``__all__``) and the other names that were importable
# from the single-file diagnose/io.py (``cross_checks``: diagnose.analysis; the field names, grades, formats)
from diagnose.io.corpus import read_corpus
from diagnose.io.dataset import check_run_matches_qrels, cross_checks, load_dataset
from diagnose.io.files import (
    DEFAULT_MAX_INPUT_BYTES,
    MAX_INPUT_BYTES_ENV,
    PathLike,
    check_input_files,
    check_input_path,
    confine_reads,
    max_input_bytes,
)
from diagnose.io.formats import (
    BEIR_QRELS,
    CORPUS_FORMATS,
    CORPUS_ID_FIELDS,
    CORPUS_TEXT_FIELDS,
    CORPUS_TITLE_FIELDS,
    QRELS_FORMATS,
    QUERIES_FORMATS,
    QUERY_ID_FIELDS,
    QUERY_TEXT_FIELDS,
    RUN_FORMATS,
    TREC_QRELS,
    TREC_RUN,
)
from diagnose.io.qrels import empty_qrels, read_qrels
from diagnose.io.queries import read_queries
from diagnose.io.records import MAX_OBJECT_FIELDS
from diagnose.io.run_order import trec_order
from diagnose.io.runs import parse_run_arg, read_run, write_trec_run
from diagnose.io.text import GRADE_MAX, GRADE_MIN, GRADE_RANGE

__all__ = [
    "CORPUS_FORMATS",
    "DEFAULT_MAX_INPUT_BYTES",
    "MAX_INPUT_BYTES_ENV",
    "QRELS_FORMATS",
    "QUERIES_FORMATS",
    "RUN_FORMATS",
    "check_input_files",
    "check_input_path",
    "check_run_matches_qrels",
    "confine_reads",
    "load_dataset",
    "max_input_bytes",
    "parse_run_arg",
    "read_corpus",
    "read_qrels",
    "read_queries",
    "read_run",
    "trec_order",
    "write_trec_run",
]

# Fast paths (pyarrow) can be switched off to check they agree with the line-by-line paths (tests do). Read here at
# each call (:func:`diagnose.io.tables.fast_paths`), so setting ``diagnose.io._FAST`` takes effect.
_FAST = True
