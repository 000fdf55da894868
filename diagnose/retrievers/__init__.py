"""Run a live retriever over the golden queries and get a :class:`~diagnose.data.Run`, as if it were a run file.

:func:`run_retriever` accepts three kinds of retriever, recognised without importing their packages (a LangChain or
LlamaIndex object can only exist if its package is already imported, so the checks look in ``sys.modules``):

- a plain callable ``query_text -> [doc_id, ...]`` or ``-> [(doc_id, score), ...]`` (any iterable; ids that are
  not strings, e.g. ints, go through ``str()``). It may also return LangChain ``Document`` or LlamaIndex
  ``NodeWithScore`` objects, read as below;
- a LangChain retriever (``langchain_core.retrievers.BaseRetriever``, or any ``Runnable`` with ``invoke`` and
  ``batch`` returning ``Document`` objects): the id is ``Document.id``, or ``Document.metadata[id_key]``;
  LangChain retrievers return no scores;
- a LlamaIndex retriever (``llama_index.core`` ``BaseRetriever``, anything with ``retrieve(str)``) returning
  ``NodeWithScore``: the id is ``node.ref_doc_id`` (the document the chunk was cut from), or the node's own
  ``node_id`` when it has no source document, or ``node.metadata[id_key]``; the score is ``NodeWithScore.score``.

Conventions (they decide every metric):

- **Order.** The run's ``rank`` column is the retriever's order (the ranked-list convention of the JSONL reader).
  Scores are made consistent with it so that writing the run with :func:`diagnose.io.write_trec_run` and reading
  it back with :func:`diagnose.io.read_run` (trec_eval's order: ``float32(score)`` descending, ties by doc id
  descending) gives the same ranked lists and the same metrics:

  - no scores (LangChain; plain ids; a list where any score is missing or not finite as a float32): the score is
    ``-rank`` (``-1.0, -2.0, ...``);
  - scores: kept as given while they strictly decrease (compared as float32, like trec_eval) along the
    retriever's order. A score that ties with, or is above, the previous one (after that one's own adjustment)
    is lowered to the next float32 below it: ties become 1-ulp steps and an out-of-order score is pulled down.
    Each query so adjusted is counted in the report (``retriever_scores_adjusted``).

- **Chunks** (``chunk_to_doc``). Golden sets judge documents, RAG retrievers return chunks.

  - ``"max"`` (default): results whose ids are equal (after ``id_key``/``ref_doc_id``) are one document, placed
    at its *first* rank with its *best* (max) score. Counted as info (``retriever_chunks_collapsed``).
  - a callable ``chunk_id -> doc_id``: applied to every id first, then collapsed as with ``"max"``.
  - ``None`` or ``"none"``: ids kept as returned; a repeated id keeps its first occurrence (as the run readers do)
    and the repeats are counted as a warning (``retriever_duplicate_ids``).

  ``depth`` cuts each list *after* collapsing. Ids are stripped of surrounding whitespace, like the readers do.

- **Query ids** are text: a dict's keys go through ``str()`` and are stripped, like the readers' ids. Two keys
  that become the same text (``1`` and ``"1"``) are refused (:class:`~diagnose.data.DataError` naming both): one
  of the queries would silently not run.

- **How many results.** You configure ``k`` on your retriever (LangChain ``search_kwargs={"k": ...}``, LlamaIndex
  ``similarity_top_k=...``; ask for more than ``depth`` when chunks collapse). One exception: a LangChain
  retriever with a ``search_kwargs`` dict that has no ``"k"`` (LangChain's default is 4) is copied with
  ``k=depth`` (your object is not changed). Queries that come back with fewer than ``depth`` documents are
  counted (``retriever_short_lists``: a warning when that is more than half of them, else info).

- **Concurrency and latency.** ``concurrency`` queries run at once, one call per query on daemon worker threads
  (:mod:`.calls`): a callable is called, a LlamaIndex retriever's ``retrieve(text)`` and a LangChain retriever's
  ``invoke(text)`` (what LangChain's own ``batch`` does per input) are called. ``concurrency=1`` calls them one at a
  time (use it for a retriever that is not thread-safe; after a timeout, the abandoned call may still be running
  beside the next one); ``concurrency=1, timeout=None`` calls them in the calling thread (for a retriever bound to
  the thread that made it, e.g. an ``sqlite3`` connection; no timeout is possible there). Each call is timed with ``time.perf_counter``: wall-clock milliseconds under that
  concurrency (queries share the CPU), recorded for every query that returned, in ``Run.latency_ms``. The slowest
  queries are named in the report (``retriever_slowest_queries``: a warning when the slowest took at least 1 s and
  over 10 times the median, since p95 hides such a query).

- **Timeout.** A query with no answer ``timeout`` seconds (default :data:`DEFAULT_TIMEOUT`, 60 s; ``None``: no
  limit) after its call started is abandoned: it counts as retrieving nothing (no rows, scores 0), is listed in
  ``Run.errors`` as ``"RetrieverTimeout: no answer within 60 s ..."`` and counted by id in the report
  (``retriever_timeout``). Python cannot stop a thread: the abandoned call runs on in the background, its answer
  is ignored, and it never keeps the process from exiting. When ``max(32, 4 * concurrency)`` abandoned calls are
  still running at once, the retriever is taken for down: the queries not started yet are not run (``RetrieverDown``
  in ``Run.errors``, counted as ``retriever_error``) instead of each holding one more thread.

- **Ctrl-C** (a ``KeyboardInterrupt`` in the calling thread) stops the run: no new query starts and
  :class:`RetrieverInterrupted` (a ``KeyboardInterrupt``) is raised with the partial run of the queries answered so
  far (``.run``, None when none was) and the ids of those still running (``.in_flight``).

- **Errors.** A query on which the retriever raises (any ``BaseException``: a ``SystemExit`` or a
  ``KeyboardInterrupt`` raised by the retriever's own code fails that query, it cannot end the run) is not dropped
  silently: it is counted in ``report`` (code
  ``retriever_error``, examples ``query_id: ExceptionType: message``) and listed in ``Run.errors``; it has no rows,
  so the metrics score it 0 (like ``trec_eval -c``). The other queries still run. Only when every query fails (or
  times out) does
  :func:`run_retriever` raise :class:`~diagnose.data.DataError`. Results of an unexpected shape (a Document
  without id, a missing ``id_key``) are a setup mistake and raise ``DataError`` at once.

Where things are
----------------
One question a file; this package holds :func:`run_retriever` (and what it accepts as ``queries``) and re-exports
:func:`load_retriever`.

``kinds``
    recognising a retriever (callable, LangChain, LlamaIndex) without importing their packages; its name; the
    LangChain ``k`` default; what to say when an object is no retriever.
``calls``
    calling it on every query: daemon workers, the per-query timeout, Ctrl-C, the progress bar.
``results``
    what it returned, as ranked lists: ids, chunks collapsed into documents, scores made strictly decreasing;
    what is counted in the report.
``loading``
    :func:`parse_retriever_spec`: ``NAME=module:attr`` into a name and a target; :func:`load_retriever`:
    ``module:attr`` or ``path/to/file.py:attr``, objects and factories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from diagnose import defaults
from diagnose.checks import finite_number, positive_int, text
from diagnose.data import DataError, Dataset, Queries, Run, ValidationReport
from diagnose.retrievers.calls import (
    DEFAULT_TIMEOUT,
    Interrupted,
    Outcome,
    RetrieverDown,
    RetrieverTimeout,
    call_retriever,
)
from diagnose.retrievers.kinds import default_name, not_a_retriever, retriever_kind, type_name, with_k
from diagnose.retrievers.loading import load_retriever, parse_retriever_spec
from diagnose.retrievers.results import ChunkToDoc, chunk_mapper, ranked_lists, record
from diagnose.runtime.progress import Progress

__all__ = [
    "DEFAULT_TIMEOUT",
    "ChunkToDoc",
    "RetrieverDown",
    "RetrieverInterrupted",
    "RetrieverTimeout",
    "check_timeout",
    "load_retriever",
    "parse_retriever_spec",
    "run_retriever",
]


class RetrieverInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_retriever`: ``run`` is the partial run of the queries answered before it (None when
    none was; failed and timed-out queries are in ``run.errors``), ``in_flight`` the ids of the queries still
    running, ``not_started`` how many never started, ``total`` how many there were. It is a ``KeyboardInterrupt``,
    so it still stops whatever called :func:`run_retriever`."""

    def __init__(
        self,
        run_name: str,
        run: Run | None,
        answered: int,
        in_flight: list[str],
        not_started: int,
        total: int,
    ) -> None:
        self.run_name, self.run, self.answered = run_name, run, answered
        self.in_flight, self.not_started, self.total = in_flight, not_started, total
        still = (
            f"; still running: {', '.join(in_flight[:10])}{' ...' if len(in_flight) > 10 else ''}"
            if (in_flight)
            else ""
        )
        super().__init__(
            f"retriever {run_name!r} interrupted (Ctrl-C) after {answered} of {total} queries{still}; "
            f"{not_started} not started"
        )


def check_timeout(timeout: Any, param: str = "timeout") -> float | None:
    """``timeout`` as seconds: a positive finite number, or None (no limit); else DataError naming ``param``."""
    if timeout is None:
        return None
    return finite_number(
        timeout,
        param,
        low=0,
        open_low=True,
        message=f"{param} must be a positive number of seconds (or None for no limit), got {{value!r}}.",
    )


def run_retriever(
    retriever: Any,
    queries: Mapping[str, str] | Queries | Dataset,
    *,
    depth: int = defaults.DEPTH,
    id_key: str | None = None,
    chunk_to_doc: ChunkToDoc = "max",
    name: str | None = None,
    concurrency: int = defaults.CONCURRENCY,
    timeout: float | None = DEFAULT_TIMEOUT,
    report: ValidationReport | None = None,
    progress: Progress = False,
) -> Run:
    """Call ``retriever`` on every query and return its results as a :class:`~diagnose.data.Run`.

    ``queries``: ``{query_id: text}``, a :class:`~diagnose.data.Queries`, or a :class:`~diagnose.data.Dataset`
    (then its golden queries, ``ds.qrels.queries_with_relevant()``, in that order; those without a text are left
    out and counted in ``report`` as ``retriever_query_without_text``). The run lists queries in input order.

    ``depth``: at most this many documents per query, after ``chunk_to_doc`` collapsing. ``id_key``: read the
    document id from ``metadata[id_key]`` of LangChain Documents / LlamaIndex nodes instead of their own id.
    ``chunk_to_doc``: ``"max"``, ``None``/``"none"`` or a callable ``chunk_id -> doc_id`` (see the module
    docstring). ``name``: the run name (default: the retriever's ``name``, class or function name).
    ``concurrency``: queries in flight at once. ``timeout``: seconds a query may take (default 60, ``None``: no
    limit); a slower query is abandoned and counts as retrieving nothing. ``report``: where retriever errors,
    timeouts, the slowest queries, duplicates, short lists and score adjustments are counted. ``progress``:
    ``True`` for a tqdm bar on stderr (on a terminal or in a notebook), or a :mod:`diagnose.runtime.progress` reporter or
    ``callback(done, total)``.

    Scores: the retriever's own when it gives them, lowered where needed so that they strictly decrease (as
    float32) in the retriever's order; ``-rank`` when it gives none. So ``rank`` is always the retriever's order
    and the run reads back identically from :func:`diagnose.io.write_trec_run`. ``Run.latency_ms`` holds each
    returned query's wall-clock time, ``Run.errors`` each failed or timed-out query's ``"ExceptionType: message"``.

    Raises :class:`~diagnose.data.DataError` when there is no query to run, two query ids are the same text, the
    retriever is of no known kind, a result has no usable id, or the retriever raised (or timed out) on every query
    (the message quotes the first error); :class:`RetrieverInterrupted` on Ctrl-C.
    """
    depth, concurrency, timeout = _checked_options(depth, concurrency, timeout, id_key, name)
    report = report if report is not None else ValidationReport()
    mapper, collapse = chunk_mapper(chunk_to_doc)
    kind = retriever_kind(retriever)
    if kind is None:
        raise DataError(not_a_retriever(retriever, "retriever"), param="retriever")
    run_name = name or default_name(retriever)
    qids, texts = _golden(queries, report, run_name)

    if kind == "langchain":
        retriever = with_k(retriever, depth, report, run_name)
    source = f"live retriever {type_name(retriever)}"
    try:
        outcomes = call_retriever(retriever, kind, texts, concurrency, timeout, progress, run_name)
    except Interrupted as stop:
        raise _interrupted(stop, qids, (id_key, mapper, collapse, depth), run_name, source, report) from None
    run = _as_run(qids, outcomes, (id_key, mapper, collapse, depth), run_name, source, report)
    if run is None:
        raise _raised_on_every_query(run_name, len(qids), dict(_errors(qids, outcomes)))
    return run


def _checked_options(
    depth: Any, concurrency: Any, timeout: Any, id_key: Any, name: Any
) -> tuple[int, int, float | None]:
    """:func:`run_retriever`'s ``depth``, ``concurrency`` and ``timeout`` checked and normalised; ``id_key`` and
    ``name`` checked (a str or None)."""
    depth = positive_int(depth, "depth")
    concurrency = positive_int(concurrency, "concurrency")
    timeout = check_timeout(timeout)
    if id_key is not None:
        text(id_key, "id_key", what="a metadata key (a str) or None", empty_ok=True)
    if name is not None:
        text(name, "name", what="a run name (a str) or None", empty_ok=True)
    return depth, concurrency, timeout


def _as_run(
    qids: list[str],
    outcomes: list[Outcome],
    reading: tuple,
    run_name: str,
    source: str,
    report: ValidationReport,
) -> Run | None:
    """The run of the queries' outcomes (``reading``: id_key, mapper, collapse, depth), counted in ``report``;
    None when no query returned."""
    id_key, mapper, collapse, depth = reading
    lists, latency, errors, tally = ranked_lists(qids, outcomes, id_key, mapper, collapse, depth, run_name)
    record(report, run_name, len(qids), errors, tally, depth, collapse, latency)
    if not lists:
        return None
    run = Run.from_ranked_lists(run_name, lists, source=source)
    return replace(run, latency_ms=latency, errors=errors)


def _interrupted(
    stop: Interrupted, qids: list[str], reading: tuple, run_name: str, source: str, report: ValidationReport
) -> RetrieverInterrupted:
    """Ctrl-C: the partial run of the queries answered (counted in ``report``) and who was still running."""
    done = [i for i, o in enumerate(stop.outcomes) if o is not None]
    partial = (
        _as_run(
            [qids[i] for i in done],
            [stop.outcomes[i] for i in done],
            reading,
            run_name,
            source + " (interrupted)",
            report,
        )
        if done
        else None
    )
    in_flight = [qids[i] for i in stop.in_flight]
    return RetrieverInterrupted(
        run_name, partial, len(done), in_flight, len(qids) - len(done) - len(in_flight), len(qids)
    )


def _errors(qids: list[str], outcomes: list[Outcome]) -> list[tuple[str, str]]:
    return [
        (q, f"{type(r).__name__}: {r}")
        for q, (r, _) in zip(qids, outcomes, strict=True)
        if isinstance(r, BaseException)
    ]


def _golden(
    queries: Mapping[str, str] | Queries | Dataset, report: ValidationReport, run_name: str
) -> tuple[list[str], list[str]]:
    if isinstance(queries, Dataset):
        if queries.queries is None:
            raise DataError(
                "queries: the dataset has no queries file, so there is no text to send to the retriever. Fix: load "
                "the dataset with its queries (a BEIR folder with queries.jsonl, or queries=...)."
            )
        text_of = queries.queries.text_of()
        golden = [str(q) for q in queries.qrels.queries_with_relevant()]
        missing = [q for q in golden if q not in text_of]
        report.add(
            "retriever_query_without_text",
            f"{len(missing)} golden queries have no text in the queries file, so retriever {run_name!r} was not "
            "run on them (they score 0 if evaluated). Fix: add them to the queries file.",
            count=len(missing),
            examples=missing,
        )
        pairs = [(q, text_of[q]) for q in golden if q in text_of]
    elif isinstance(queries, Queries):
        pairs = list(queries.text_of().items())
    elif isinstance(queries, Mapping):
        pairs = list(queries.items())
    else:
        raise DataError(
            f"queries must be a dict {{query_id: text}}, a diagnose Queries or a Dataset; got {type_name(queries)}.",
            param="queries",
        )
    seen: dict[str, str] = {}
    given: dict[str, Any] = {}
    for raw, t in pairs:
        q = str(raw).strip()
        if not q:
            raise DataError(
                f"queries: the query id {raw!r} is empty. Fix: give every query an id.", param="queries"
            )
        if q in given:
            raise DataError(
                f"queries: the query ids {given[q]!r} ({type(given[q]).__name__}) and {raw!r} "
                f"({type(raw).__name__}) are both {q!r} as text, so one of them would not run. Fix: give each "
                "query a distinct id.",
                param="queries",
            )
        given[q] = raw
        if not isinstance(t, str):
            raise DataError(
                f"queries: query {q!r} has text {t!r} ({type(t).__name__}), not a string. Fix: give every query a "
                "text."
            )
        seen[q] = t
    if not seen:
        raise DataError("queries: there is no query to run (the golden set or the queries given are empty).")
    return list(seen), list(seen.values())


def _raised_on_every_query(run_name: str, n_queries: int, errors: dict[str, str]) -> DataError:
    """The error when no query returned: it quotes the first one's exception."""
    first = next(iter(errors))
    return DataError(
        f"The retriever {run_name!r} raised or timed out on every one of the {n_queries} queries; the first error "
        f"(query {first!r}) was {errors[first]}. Fix: call the retriever by hand on one query text to see the "
        "traceback (or raise the timeout if it is only slow), then run again."
    )
