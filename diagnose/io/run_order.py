"""How the rows of a run become ranked lists: trec_eval's order (:func:`trec_order`), later duplicates of a
(query, doc) pair dropped, ranks 1..n per query, a disagreeing rank column counted. The convention is in
:mod:`diagnose.io` ("Run order")."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from diagnose.data import Run, ValidationReport
from diagnose.io.messages import pair_text, plural_of, verb
from diagnose.runtime.arrays import arrow_of, numpy_of, strings_of
from diagnose.runtime.frames import arrow_strings, first_seen_codes
from diagnose.runtime.ids import fingerprints, pair_keys, remember_fingerprints
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.lazy import pyarrow_compute as pc
from diagnose.runtime.threads import in_threads


def empty_run_df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": pd.Series([], dtype="str"),
            "doc_id": pd.Series([], dtype="str"),
            "score": np.array([], dtype=np.float64),
            "rank": np.array([], dtype=np.int64),
        }
    )


def empty_run(name: str, file: str, report: ValidationReport, what: str) -> Run:
    """The empty run of a file with no rows (counted: every golden query scores 0); ``what`` names the rows."""
    report.add("empty_file", f"run {name!r} has no {what}: every golden query scores 0", file=file)
    return Run(name, empty_run_df(), file)


def run_from_lists(
    name: str,
    file: str,
    rows: tuple[list[str], list[str], list[float]],
    report: ValidationReport,
    *,
    what: str,
    order: np.ndarray | None = None,
    file_ranks: np.ndarray | None = None,
) -> Run:
    """:func:`build_run` over rows read line by line (query ids, doc ids, scores); no rows: :func:`empty_run`."""
    qs, ds, ss = rows
    if not qs:
        return empty_run(name, file, report, what)
    q, d = strings_of(qs, pa.string()), strings_of(ds, pa.string())
    scores = np.asarray(ss, dtype=np.float64)
    return build_run(name, file, q, d, scores, report, order=order, file_ranks=file_ranks)


def score32(scores: np.ndarray) -> np.ndarray:
    """Scores as trec_eval (pytrec-eval-terrier) compares them: C float, -0.0 == 0.0."""
    with np.errstate(over="ignore", invalid="ignore"):
        return scores.astype(np.float32) + np.float32(0.0)


def trec_order(
    query_ids: Sequence[str] | pa.Array, doc_ids: Sequence[str] | pa.Array, scores: np.ndarray
) -> np.ndarray:
    """Row permutation that orders a run like trec_eval.

    Queries in first-seen order; within a query by ``float32(score)`` descending, ties by doc id descending
    (byte order of the UTF-8 ids = ``strcmp``, which trec_eval's ``comp_sim_docno`` uses with its arguments
    swapped). Scores must be finite (NaN has no order). Vectorised: one pyarrow multi-key sort.
    """
    q = (
        pa.array(query_ids, type=pa.string())
        if not isinstance(query_ids, pa.Array | pa.ChunkedArray)
        else query_ids
    )
    d = (
        pa.array(doc_ids, type=pa.string())
        if not isinstance(doc_ids, pa.Array | pa.ChunkedArray)
        else doc_ids
    )
    return _sorted_rows(first_seen_codes(q)[0], np.asarray(scores, dtype=np.float64), d)


def _sorted_rows(q_codes: np.ndarray, scores: np.ndarray, d: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The rows in trec_eval's order (see :func:`trec_order`), from the query codes in first-seen order."""
    table = pa.table({"q": arrow_of(q_codes), "s": arrow_of(score32(scores)), "d": d})
    return numpy_of(
        pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    )


def _group_ranks(codes_in_order: np.ndarray) -> np.ndarray:
    """1-based position within each run of equal consecutive codes."""
    n = len(codes_in_order)
    if n == 0:
        return np.array([], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, codes_in_order[1:] != codes_in_order[:-1]])
    sizes = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, sizes) + 1


def _repeated_rows(q_codes: np.ndarray, doc_fps: np.ndarray) -> np.ndarray:
    """The rows (ascending) whose (query, doc) key (:mod:`diagnose.runtime.ids`) another row shares: every duplicate of a
    (query, doc) pair, plus astronomically rare collisions. Needs no row order: it runs beside the sort."""
    if len(q_codes) < 2:
        return np.zeros(0, dtype=np.int64)
    key = pair_keys(doc_fps, q_codes)
    sorted_keys = np.sort(key)
    repeated = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]
    if not len(repeated):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.isin(key, repeated))


def _duplicate_mask(
    q_codes: np.ndarray, d: pa.ChunkedArray | pa.Array, order: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Boolean mask over the original rows: True for a (query, doc) row that is not the first one in ``order``.

    Only ``rows`` (:func:`_repeated_rows`: the rows sharing a key) can be duplicates; they are compared as strings.
    """
    n = len(q_codes)
    mask = np.zeros(n, dtype=bool)
    if not len(rows):
        return mask
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)
    rows = rows[np.argsort(position[rows], kind="stable")]
    docs = d.take(arrow_of(rows)).to_pylist()
    first: set[tuple[int, str]] = set()
    for row, doc in zip(rows.tolist(), docs, strict=True):
        pair = (int(q_codes[row]), doc)
        if pair in first:
            mask[row] = True
        else:
            first.add(pair)
    return mask


def build_run(
    name: str,
    file: str,
    q: pa.ChunkedArray | pa.Array,
    d: pa.ChunkedArray | pa.Array,
    scores: np.ndarray,
    report: ValidationReport,
    *,
    order: np.ndarray | None = None,
    file_ranks: np.ndarray | None = None,
) -> Run:
    """The Run for rows ``(q, d, scores)``: trec_eval order (``order`` None) or the given row order.

    Removes later duplicates of a (query, doc) pair (warning), numbers ranks 1..n per query, and, with
    ``file_ranks``, counts queries whose rank column disagrees with the final order (info).
    """
    n = len(scores)
    if n == 0:
        return Run(name, empty_run_df(), file)
    q_codes, q_values = first_seen_codes(q)
    sorted_here = order is None

    def keyed() -> tuple[np.ndarray, np.ndarray]:  # the doc ids' fingerprints and the duplicate candidates
        doc_fps = fingerprints(d)
        return doc_fps, _repeated_rows(q_codes, doc_fps)

    if sorted_here:  # the sort (pyarrow) beside the hashing and the key sort (numpy): one per core
        steps = [lambda: _sorted_rows(q_codes, scores, d), keyed]
        order, (doc_fps, repeated) = in_threads(lambda step: step(), steps, blas=False)
    else:
        doc_fps, repeated = keyed()
    codes = q_codes[order]
    ranks = _group_ranks(codes)  # the ranks by score, before any duplicate is dropped

    def columns() -> tuple[pa.Array, pa.Array, np.ndarray]:  # the ids and their fingerprints in this order
        return *_id_columns(q_values, codes, d, order), doc_fps[order]

    def checks() -> tuple[np.ndarray, np.ndarray]:  # and the scores in this order
        if file_ranks is not None:
            _check_rank_column(file, q, d, codes, order, file_ranks, ranks, report)
        return _duplicate_mask(q_codes, d, order, repeated), scores[order]

    # the columns in this order (Arrow takes, numpy gathers) beside the checks: outside the GIL, one per core
    (q_taken, docs, fps_taken), (dup, scores_taken) = in_threads(
        lambda step: step(), [columns, checks], blas=False
    )
    if dup.any():
        order = _drop_duplicates(name, file, q, d, order, dup, report)
        codes = q_codes[order]
        ranks = _group_ranks(codes)
        q_taken, docs = _id_columns(q_values, codes, d, order)
        scores_taken, fps_taken = scores[order], doc_fps[order]
    table = pa.table(
        {
            "query_id": q_taken,
            "doc_id": docs,
            "score": arrow_of(scores_taken, pa.float64()),
            "rank": arrow_of(ranks, pa.int64()),
        }
    )
    run = Run(name, table, file)
    run.keep_strings("doc_id", docs)
    if sorted_here:  # sorted by (query code, score, doc id): the codes carry over, the order is trec_eval's
        run.keep_codes("query_id", codes, q_values)
        run.keep_trec_order()
    elif (np.diff(codes) >= 0).all():  # queries in first-seen order: the codes carry over
        run.keep_codes("query_id", codes, q_values)
    remember_fingerprints(docs, fps_taken)  # the metrics and the tie audit do not hash the ids again
    return run


def _id_columns(
    q_values: pa.Array, codes: np.ndarray, d: pa.ChunkedArray | pa.Array, order: np.ndarray
) -> tuple[pa.Array, pa.Array]:
    """The id columns in ``order``: the query ids from their distinct values and ``codes`` (the query codes already
    in ``order``), the doc ids as one contiguous array (:func:`arrow_strings`)."""
    return q_values.take(arrow_of(codes)), arrow_strings(d.take(arrow_of(order)))


def _drop_duplicates(
    name: str,
    file: str,
    q: pa.ChunkedArray | pa.Array,
    d: pa.ChunkedArray | pa.Array,
    order: np.ndarray,
    dup: np.ndarray,
    report: ValidationReport,
) -> np.ndarray:
    """``order`` without the rows of ``dup`` (later duplicates of a (query, doc) pair), with a warning."""
    dropped = order[dup[order]]  # in final order
    sample = arrow_of(dropped[:5])
    examples = [
        pair_text(a, b) for a, b in zip(q.take(sample).to_pylist(), d.take(sample).to_pylist(), strict=True)
    ]
    report.add(
        "duplicate_doc_in_run",
        f"run {name!r}: {plural_of(len(dropped), 'document')} {verb(len(dropped), 'is', 'are')} listed more than "
        "once for the same query; the best-ranked occurrence is kept and the later ones are dropped (trec_eval "
        "refuses such files)",
        file=file,
        count=len(dropped),
        examples=examples,
    )
    return order[~dup[order]]


def _check_rank_column(
    file: str,
    q: pa.ChunkedArray | pa.Array,
    d: pa.ChunkedArray | pa.Array,
    codes: np.ndarray,
    order: np.ndarray,
    file_ranks: np.ndarray,
    derived: np.ndarray,
    report: ValidationReport,
) -> None:
    """Count the queries whose rank column (``file_ranks``, per row) disagrees with ``derived`` (the ranks by
    score, per position of ``order``; ``codes``: the query codes per position)."""
    wrong = file_ranks[order] != derived  # NaN (not an integer) never equals
    if not wrong.any():
        return
    n_queries = int(np.count_nonzero(np.bincount(codes[wrong])))
    first = np.flatnonzero(wrong)[:5]
    rows = arrow_of(order[first])
    examples = [
        f"{pair_text(qq, dd)}: rank {_fmt_rank(file_ranks[order[i]])} in the file, {derived[i]} by score"
        for qq, dd, i in zip(q.take(rows).to_pylist(), d.take(rows).to_pylist(), first, strict=True)
    ]
    report.add(
        "rank_column_ignored",
        f"the rank column of {plural_of(n_queries, 'query', 'queries')} disagrees with the score order; the ranks "
        "are re-derived from the scores like trec_eval does (score descending, ties by doc id descending)",
        severity="info",
        file=file,
        count=n_queries,
        examples=examples,
    )


def _fmt_rank(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) else "(not an integer)"
