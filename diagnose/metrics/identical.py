"""Queries that are documents: the field's convention of dropping a retrieved document whose id is the query's.

In BEIR's argument and duplicate-question collections (ArguAna, Touche, CQADupStack, Quora) every query is itself a
document of the corpus, under the same id, and any retriever finds it first. The published figures are computed with
those documents removed from each query's results before scoring: MTEB's ``ignore_identical_ids`` pops them from
the results dict, Pyserini's ``--remove-query`` drops them from the run. trec_eval (pytrec_eval) ranks what remains
by score, so **the next documents move up**: the document after a removed one takes its rank, and a cutoff at k then
counts k documents that are not the query. :func:`drop_identical_ids` does the same to a :class:`~diagnose.data.Run`
(the rows with ``doc_id == query_id`` removed, each query's ranks numbered again 1..n in the same order, so the rank
column and trec_eval's score order agree); ids are compared as the exact strings, after nothing is stripped.

:func:`warn_self_retrieval` is the notice when the option is off: when at least :data:`SELF_RETRIEVAL_SHARE` (10%)
of the golden queries retrieve their own id in a run, the validation report says how many and how to follow the
convention.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from diagnose.data import Run, ValidationReport
from diagnose.runtime.arrays import arrow_of, numpy_of
from diagnose.runtime.frames import held

#: The share of golden queries that retrieve their own id (anywhere in their list) from which a run is reported.
SELF_RETRIEVAL_SHARE = 0.10
#: The :class:`~diagnose.data.Problem` code of that notice.
SELF_RETRIEVAL_CODE = "run_retrieves_query_ids"


def _identical(run: Run) -> np.ndarray:
    """A bool per row: ``doc_id == query_id`` (exact strings)."""
    import pyarrow.compute as pc

    same = pc.equal(run.strings("query_id"), run.strings("doc_id"))
    return numpy_of(same).astype(bool, copy=False)  # from the buffers: no pandas (runtime/arrays.py)


def drop_identical_ids(run: Run, *, depth: int | None = None) -> Run:
    """``run`` without the rows whose document id equals the query id, each query's remaining documents ranked
    again 1..n in their order (the next document moves up, as MTEB's ``ignore_identical_ids`` and Pyserini's
    ``--remove-query`` give it); ``depth``: each list then cut at that many documents (a baseline searched one
    deeper keeps its depth). The same run object when nothing is removed or cut. Other columns, the name, the
    source, latency and errors are kept."""
    same = _identical(run)
    rank = run.numbers("rank", np.int64)
    cut = depth is not None and len(rank) > 0 and int(rank.max()) > depth
    if not same.any() and not cut:
        return run
    codes, _ = run.codes("query_id")
    # each query holds its own id at most once (a repeated (query, doc) pair is refused by the readers): the rows
    # ranked after it move up by one
    removed_rank = np.full(int(codes.max()) + 1 if len(codes) else 0, np.iinfo(np.int64).max, dtype=np.int64)
    removed_rank[codes[same]] = rank[same]
    new_rank = rank - (removed_rank[codes] < rank)
    keep = ~same
    if depth is not None:
        keep &= new_rank <= depth
    if run.is_arrow():
        table = held(run, "df").filter(arrow_of(keep))
        position = table.column_names.index("rank")
        ranks = arrow_of(new_rank[keep], table.schema.field("rank").type)
        table = table.set_column(position, "rank", ranks)
        return replace(run, df=table)
    frame = run.df[keep].copy()
    frame["rank"] = new_rank[keep].astype(frame["rank"].dtype, copy=False)
    return replace(run, df=frame.reset_index(drop=True))


def self_retrieving_queries(run: Run, queries: Iterable[str]) -> list[str]:
    """The ``queries`` (e.g. the golden ones) whose ranked list in ``run`` holds a document with the query's own
    id, at any rank; in the order given."""
    same = _identical(run)
    if not same.any():
        return []
    import pyarrow.compute as pc

    found = set(pc.filter(run.strings("query_id"), arrow_of(same)).to_pylist())
    return [q for q in queries if q in found]


def warn_self_retrieval(report: ValidationReport, run: Run, golden: Iterable[str]) -> None:
    """Add to ``report`` (once per run and count) that N of the M ``golden`` queries retrieve themselves in
    ``run``, when N >= :data:`SELF_RETRIEVAL_SHARE` x M; nothing otherwise."""
    golden = list(golden)
    hits = self_retrieving_queries(run, golden)
    if not golden or len(hits) < SELF_RETRIEVAL_SHARE * len(golden):
        return
    message = (
        f"{len(hits):,} of {len(golden):,} golden queries retrieve themselves (doc id = query id) in the run "
        f"{run.name!r}: in collections whose queries are documents (BEIR's ArguAna, Touche, CQADupStack, Quora) "
        "that document fills a slot of every list; BEIR's convention drops them: --ignore-identical-ids "
        "(ignore_identical_ids=True in Python)"
    )
    if any(p.code == SELF_RETRIEVAL_CODE and p.message == message for p in report.problems):
        return
    report.add(SELF_RETRIEVAL_CODE, message, count=len(hits), examples=hits)
