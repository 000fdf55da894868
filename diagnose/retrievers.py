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

- **How many results.** You configure ``k`` on your retriever (LangChain ``search_kwargs={"k": ...}``, LlamaIndex
  ``similarity_top_k=...``; ask for more than ``depth`` when chunks collapse). One exception: a LangChain
  retriever with a ``search_kwargs`` dict that has no ``"k"`` (LangChain's default is 4) is copied with
  ``k=depth`` (your object is not changed). Queries that come back with fewer than ``depth`` documents are
  counted (``retriever_short_lists``: a warning when that is more than half of them, else info).

- **Concurrency and latency.** ``concurrency`` queries run at once. LangChain retrievers go through their own
  ``batch(texts, config={"max_concurrency": concurrency, ...}, return_exceptions=True)``; each query's latency is
  timed by a callback handler from the start to the end of that query's own run (``on_retriever_start`` /
  ``on_chain_start`` of the root run to its end), so it is the time of that query alone, not a share of the batch
  time (a ``batch`` overridden to skip per-query runs leaves those latencies unmeasured, counted as info).
  Callables and LlamaIndex retrievers are called from a thread pool of ``concurrency`` workers, each call timed
  with ``time.perf_counter``; ``concurrency=1`` calls them one by one in the calling thread (use it for a
  retriever that is not thread-safe). Latencies are wall-clock milliseconds under that concurrency (queries
  share the CPU), recorded for every query that returned, in ``Run.latency_ms``.

- **Errors.** A query on which the retriever raises is not dropped silently: it is counted in ``report`` (code
  ``retriever_error``, examples ``query_id: ExceptionType: message``) and listed in ``Run.errors``; it has no rows,
  so the metrics score it 0 (like ``trec_eval -c``). The other queries still run. Only when every query fails does
  :func:`run_retriever` raise :class:`~diagnose.data.DataError`. Results of an unexpected shape (a Document
  without id, a missing ``id_key``) are a setup mistake and raise ``DataError`` at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.data import DataError, Dataset, Queries, Run, ValidationReport
from diagnose.progress import Callback, Reporter, reporter

ChunkToDoc = str | Callable[[str], Any] | None

_LANGCHAIN_RETRIEVER_MODULE = "langchain_core.retrievers"
_LANGCHAIN_RUNNABLE_MODULE = "langchain_core.runnables.base"
_LLAMAINDEX_RETRIEVER_MODULE = "llama_index.core.base.base_retriever"

_FORMS = (
    "a callable str -> [doc_id, ...] or [(doc_id, score), ...], a LangChain retriever (langchain_core "
    "BaseRetriever) or a LlamaIndex retriever (llama_index.core BaseRetriever)"
)


# ============================================================================================== public API


def run_retriever(
    retriever: Any,
    queries: Mapping[str, str] | Queries | Dataset,
    *,
    depth: int = 100,
    id_key: str | None = None,
    chunk_to_doc: ChunkToDoc = "max",
    name: str | None = None,
    concurrency: int = 4,
    report: ValidationReport | None = None,
    progress: bool | Reporter | Callback | None = False,
) -> Run:
    """Call ``retriever`` on every query and return its results as a :class:`~diagnose.data.Run`.

    ``queries``: ``{query_id: text}``, a :class:`~diagnose.data.Queries`, or a :class:`~diagnose.data.Dataset`
    (then its golden queries, ``ds.qrels.queries_with_relevant()``, in that order; those without a text are left
    out and counted in ``report`` as ``retriever_query_without_text``). The run lists queries in input order.

    ``depth``: at most this many documents per query, after ``chunk_to_doc`` collapsing. ``id_key``: read the
    document id from ``metadata[id_key]`` of LangChain Documents / LlamaIndex nodes instead of their own id.
    ``chunk_to_doc``: ``"max"``, ``None``/``"none"`` or a callable ``chunk_id -> doc_id`` (see the module
    docstring). ``name``: the run name (default: the retriever's ``name``, class or function name).
    ``concurrency``: queries in flight at once. ``report``: where retriever errors, duplicates, short lists and
    score adjustments are counted. ``progress``: ``True`` for a tqdm bar on stderr (only when stderr is a terminal), or a
    :mod:`diagnose.progress` reporter or ``callback(done, total)``.

    Scores: the retriever's own when it gives them, lowered where needed so that they strictly decrease (as
    float32) in the retriever's order; ``-rank`` when it gives none. So ``rank`` is always the retriever's order
    and the run reads back identically from :func:`diagnose.io.write_trec_run`. ``Run.latency_ms`` holds each
    returned query's wall-clock time, ``Run.errors`` each failed query's ``"ExceptionType: message"``.

    Raises :class:`~diagnose.data.DataError` when there is no query to run, the retriever is of no known kind,
    a result has no usable id, or the retriever raised on every query (the message quotes the first error).
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}.")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}.")
    report = report if report is not None else ValidationReport()
    mapper, collapse = _chunk_mapper(chunk_to_doc)
    kind = _kind(retriever)
    if kind is None:
        raise DataError(_not_a_retriever(retriever, "retriever"))
    run_name = name or _default_name(retriever)
    qids, texts = _golden(queries, report, run_name)

    if kind == "langchain":
        retriever = _with_k(retriever, depth, report, run_name)
    tick, finish = _ticker(progress, len(qids), run_name)
    if kind == "langchain":
        outcomes = _call_langchain(retriever, texts, concurrency, tick)
    else:
        fn = retriever.retrieve if kind == "llamaindex" else retriever
        outcomes = _call_pool(fn, texts, concurrency, tick)
    finish()

    lists: dict[str, list[tuple[str, float]]] = {}
    latency: dict[str, float] = {}
    errors: dict[str, str] = {}
    tally = _Tally()
    for qid, (result, ms) in zip(qids, outcomes, strict=True):
        if isinstance(result, BaseException):
            errors[qid] = f"{type(result).__name__}: {result}"
            continue
        items = [_item(x, id_key, qid, run_name) for x in _as_list(result, qid, run_name)]
        items = _collapse(items, mapper, collapse, qid, tally)
        lists[qid] = _scored(items[:depth], qid, tally)
        tally.short(qid, len(lists[qid]), depth)
        if ms is not None:
            latency[qid] = ms
        else:
            tally.unmeasured.append(qid)

    _record(report, run_name, len(qids), errors, tally, depth, collapse, latency)
    if not lists:
        first = next(iter(errors))
        raise DataError(
            f"The retriever {run_name!r} raised on every one of the {len(qids)} queries; the first error (query "
            f"{first!r}) was {errors[first]}. Fix: call the retriever by hand on one query text to see the "
            "traceback, then run again."
        )
    run = Run.from_ranked_lists(run_name, lists, source=f"live retriever {_type_name(retriever)}")
    return replace(run, latency_ms=latency, errors=errors)


def load_retriever(spec: str) -> Any:
    """The retriever named by ``spec`` = ``"module:attr"`` (for the CLI's ``--retriever NAME=module:attr``).

    ``module`` is imported with the current directory on ``sys.path`` (so ``my_rag.py`` next to you works), or is
    a path to a ``.py`` file (``path/to/my_rag.py:attr``). ``attr`` (dots allowed: ``module:obj.retriever``) is
    either a retriever (see :func:`run_retriever`) or a factory: a function or class callable with no argument,
    which is called once and must return a retriever. A function needing exactly one argument is taken as a
    plain ``str -> results`` retriever itself.

    Raises :class:`~diagnose.data.DataError` naming the spec, what went wrong and the fix when the module or the
    attribute is missing, the import or the factory raises, or the object is no retriever.
    """
    module_name, sep, attr = spec.strip().partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not sep or not module_name or not attr:
        raise DataError(
            f"retriever spec {spec!r}: expected 'module:attr' (e.g. 'my_rag:retriever' for the object `retriever` "
            "in my_rag.py, or 'path/to/my_rag.py:make_retriever' for a zero-argument factory)."
        )
    module = _import(module_name, spec)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(module) if not n.startswith("_"))
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            raise DataError(
                f"retriever spec {spec!r}: {getattr(module, '__file__', module_name)} has no attribute {attr!r} "
                f"(it defines: {shown or 'nothing public'}). Fix: name the variable holding your retriever, or a "
                "function with no arguments that returns it."
            )
        obj = getattr(obj, part)
    if _kind(obj) is not None and not _is_factory(obj):
        return obj
    if not _is_factory(obj):
        raise DataError(f"retriever spec {spec!r}: " + _not_a_retriever(obj, attr))
    try:
        made = obj()
    except Exception as e:
        raise DataError(
            f"retriever spec {spec!r}: calling the factory {attr}() raised {type(e).__name__}: {e}. Fix: make "
            f"{attr}() work on its own (try python -c 'import {module_name.removesuffix('.py')}' and call it)."
        ) from e
    if _kind(made) is None:
        raise DataError(
            f"retriever spec {spec!r}: the factory {attr}() returned {_describe(made)}, not a retriever. "
            + _fix_for(made)
        )
    return made


# ============================================================================================== kinds


def _kind(obj: Any) -> str | None:
    """``"langchain"``, ``"llamaindex"``, ``"callable"`` or None; isinstance against already-imported packages,
    then duck typing. Nothing is imported here."""
    lc = sys.modules.get(_LANGCHAIN_RETRIEVER_MODULE)
    if lc is not None and isinstance(obj, lc.BaseRetriever):
        return "langchain"
    li = sys.modules.get(_LLAMAINDEX_RETRIEVER_MODULE)
    if li is not None and isinstance(obj, li.BaseRetriever):
        return "llamaindex"
    if inspect.isclass(obj):
        return None
    lr = sys.modules.get(_LANGCHAIN_RUNNABLE_MODULE)
    if lr is not None and isinstance(obj, lr.Runnable):
        return "langchain"
    if callable(getattr(obj, "invoke", None)) and callable(getattr(obj, "batch", None)):
        return "langchain"
    if callable(getattr(obj, "retrieve", None)):
        return "llamaindex"
    if callable(getattr(obj, "as_retriever", None)):
        return None  # a vector store or an index: _not_a_retriever says what to do
    if callable(obj):
        return "callable"
    return None


def _not_a_retriever(obj: Any, what: str) -> str:
    return f"{what} is {_describe(obj)}, not a retriever. {_fix_for(obj)}"


def _fix_for(obj: Any) -> str:
    if callable(getattr(obj, "as_retriever", None)):
        return (
            "It looks like a vector store or an index: pass obj.as_retriever(search_kwargs={'k': 100}) "
            "(LangChain) or index.as_retriever(similarity_top_k=100) (LlamaIndex) instead."
        )
    return f"Fix: pass {_FORMS}, or a function with no arguments returning one."


def _is_factory(obj: Any) -> bool:
    """A class, or a function that can be called with no argument (but not a LangChain/LlamaIndex object)."""
    if inspect.isclass(obj):
        return True
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    required = [
        p
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return not required


def _describe(obj: Any) -> str:
    if inspect.isclass(obj):
        return f"the class {obj.__qualname__}"
    name = _type_name(obj)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _type_name(obj: Any) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _default_name(retriever: Any) -> str:
    own = getattr(retriever, "name", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    fn_name = getattr(retriever, "__name__", None)
    if isinstance(fn_name, str) and fn_name and fn_name != "<lambda>":
        return fn_name
    return type(retriever).__name__ if not inspect.isfunction(retriever) else "retriever"


def _with_k(retriever: Any, depth: int, report: ValidationReport, run_name: str) -> Any:
    """A copy of a LangChain retriever with ``search_kwargs["k"] = depth`` when it has search_kwargs without k."""
    kwargs = getattr(retriever, "search_kwargs", None)
    copy = getattr(retriever, "model_copy", None)
    if not isinstance(kwargs, dict) or "k" in kwargs or not callable(copy):
        return retriever
    try:
        new = copy(update={"search_kwargs": {**kwargs, "k": depth}})
    except Exception:  # not a pydantic model after all: leave it as the user made it
        return retriever
    report.add(
        "retriever_k_set",
        f"retriever {run_name!r}: its search_kwargs had no 'k' (LangChain's default is 4), so it was asked for "
        f"k={depth} (= depth). Set search_kwargs={{'k': ...}} yourself to choose.",
        severity="info",
    )
    return new


# ============================================================================================== inputs


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
        pairs = [(str(q), t) for q, t in queries.text_of().items()]
    elif isinstance(queries, Mapping):
        pairs = [(str(q), t) for q, t in queries.items()]
    else:
        raise DataError(
            f"queries must be a dict {{query_id: text}}, a diagnose Queries or a Dataset; got {_type_name(queries)}."
        )
    seen: dict[str, str] = {}
    for q, t in pairs:
        if not isinstance(t, str):
            raise DataError(
                f"queries: query {q!r} has text {t!r} ({type(t).__name__}), not a string. Fix: give every query a "
                "text."
            )
        seen.setdefault(q, t)
    if not seen:
        raise DataError("queries: there is no query to run (the golden set or the queries given are empty).")
    return list(seen), list(seen.values())


def _chunk_mapper(chunk_to_doc: ChunkToDoc) -> tuple[Callable[[str], Any] | None, bool]:
    """``(id mapping or None, collapse repeated ids?)``."""
    if chunk_to_doc is None or (isinstance(chunk_to_doc, str) and chunk_to_doc.lower() == "none"):
        return None, False
    if isinstance(chunk_to_doc, str) and chunk_to_doc.lower() == "max":
        return None, True
    if callable(chunk_to_doc):
        return chunk_to_doc, True
    raise ValueError(
        f"chunk_to_doc must be 'max', None/'none' or a callable chunk_id -> doc_id; got {chunk_to_doc!r}."
    )


# ============================================================================================== calling


Outcome = tuple[Any, float | None]  # (results, or the exception raised; latency in ms, or None)


def _ticker(
    progress: bool | Reporter | Callback | None, total: int, run_name: str
) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(tick, finish)``: a thread-safe ``tick()`` per finished query and ``finish()`` at the end, driving the
    :mod:`diagnose.progress` bar of ``progress`` (``True``: tqdm on stderr, only when stderr is a terminal)."""
    update = reporter(progress).bar(f"Retriever {run_name}")
    lock = threading.Lock()
    done = [0]
    owner = threading.current_thread()
    update(0, total)

    def tick() -> None:
        # A reporter may draw on a page that only the calling thread may touch (Streamlit): worker threads (the
        # callbacks of LangChain's batch) only count; the calling thread draws, and draws the total at the end.
        with lock:
            done[0] += 1
            if threading.current_thread() is owner:
                update(done[0], total)

    def finish() -> None:
        update(total, total)

    return tick, finish


def _materialise(out: Any) -> Any:
    """A lazy iterable (generator) is listed inside the timed call; strings and sequences stay as they are."""
    if isinstance(out, str | bytes | Sequence) or not isinstance(out, Iterable):
        return out
    return list(out)


def _call_pool(
    fn: Callable[[str], Any], texts: list[str], concurrency: int, tick: Callable[[], None]
) -> list[Outcome]:
    def one(text: str) -> Outcome:
        start = time.perf_counter()
        try:
            out = _materialise(fn(text))
        except Exception as e:
            return e, None
        return out, (time.perf_counter() - start) * 1000.0

    if concurrency == 1 or len(texts) == 1:
        outcomes = []
        for t in texts:
            outcomes.append(one(t))
            tick()
        return outcomes
    with ThreadPoolExecutor(max_workers=min(concurrency, len(texts))) as pool:
        futures = {pool.submit(one, t): i for i, t in enumerate(texts)}
        results: list[Outcome | None] = [None] * len(texts)
        for future in as_completed(futures):  # progress is reported from the calling thread
            results[futures[future]] = future.result()
            tick()
    return results  # type: ignore[return-value]


@lru_cache(maxsize=1)
def _timer_class() -> type:
    """A LangChain callback handler timing the root run of one query (built on first use: needs langchain_core)."""
    from langchain_core.callbacks import BaseCallbackHandler

    class _QueryTimer(BaseCallbackHandler):
        def __init__(self, tick: Callable[[], None]) -> None:
            self.tick = tick
            self.root: Any = None
            self.start = 0.0
            self.ms: float | None = None

        def _begin(self, run_id: Any, parent_run_id: Any) -> None:
            if parent_run_id is None and self.root is None:
                self.root = run_id
                self.start = time.perf_counter()

        def _finish(self, run_id: Any, ok: bool) -> None:
            if run_id is not None and run_id == self.root and self.ms is None:
                if ok:
                    self.ms = (time.perf_counter() - self.start) * 1000.0
                self.tick()

        def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs):
            self._begin(run_id, parent_run_id)

        def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
            self._begin(run_id, parent_run_id)

        def on_retriever_end(self, documents, *, run_id, parent_run_id=None, **kwargs):
            self._finish(run_id, True)

        def on_chain_end(self, outputs, *, run_id, parent_run_id=None, **kwargs):
            self._finish(run_id, True)

        def on_retriever_error(self, error, *, run_id, parent_run_id=None, **kwargs):
            self._finish(run_id, False)

        def on_chain_error(self, error, *, run_id, parent_run_id=None, **kwargs):
            self._finish(run_id, False)

    return _QueryTimer


def _call_langchain(
    retriever: Any, texts: list[str], concurrency: int, tick: Callable[[], None]
) -> list[Outcome]:
    """``retriever.batch`` with one config per query carrying its own timer (see the module docstring)."""
    timers = [_timer_class()(tick) for _ in texts]
    configs = [{"max_concurrency": concurrency, "callbacks": [t]} for t in timers]
    results = retriever.batch(texts, config=configs, return_exceptions=True)
    if len(results) != len(texts):
        raise DataError(
            f"the LangChain retriever's batch() returned {len(results)} results for {len(texts)} queries. Fix: "
            "batch() must return one result per input, in input order."
        )
    return [(r, None if isinstance(r, BaseException) else t.ms) for r, t in zip(results, timers, strict=True)]


# ============================================================================================== results


class _Tally:
    """What happened to the results, for the report."""

    def __init__(self) -> None:
        self.collapsed = 0
        self.duplicates: list[str] = []
        self.adjusted: list[str] = []
        self.replaced: list[str] = []
        self.short_lists: list[str] = []
        self.unmeasured: list[str] = []

    def short(self, qid: str, n: int, depth: int) -> None:
        if n < depth:
            self.short_lists.append(f"{qid}: {n} of {depth}")


def _as_list(result: Any, qid: str, run_name: str) -> list[Any]:
    if result is None or isinstance(result, str | bytes | Mapping) or not isinstance(result, Iterable):
        raise DataError(
            f"retriever {run_name!r} returned {_describe(result)} for query {qid!r}; expected a list of doc ids, "
            "of (doc_id, score) pairs, of LangChain Documents or of LlamaIndex NodeWithScore."
        )
    return list(result)


def _item(x: Any, id_key: str | None, qid: str, run_name: str) -> tuple[str, float | None]:
    """``(doc_id, score or None)`` of one result, whatever its form."""
    score: Any = None
    if hasattr(x, "page_content") and hasattr(x, "metadata"):  # LangChain Document
        if id_key is not None:
            raw = _from_metadata(x.metadata, id_key, qid, run_name, "Document")
        else:
            raw = getattr(x, "id", None)
            if raw is None:
                raise DataError(
                    f"retriever {run_name!r}, query {qid!r}: a LangChain Document has no id (Document.id is None; "
                    f"metadata keys: {', '.join(map(str, x.metadata)) or 'none'}). Fix: give ids when indexing "
                    "(add_documents(docs, ids=...) or Document(id=...)), or pass id_key='<the metadata key "
                    "holding the document id>'."
                )
    elif hasattr(x, "node") and hasattr(x, "score"):  # LlamaIndex NodeWithScore
        node = x.node
        if id_key is not None:
            raw = _from_metadata(node.metadata, id_key, qid, run_name, "node")
        else:
            raw = getattr(node, "ref_doc_id", None) or node.node_id
        score = x.score
    elif isinstance(x, tuple | list):
        if len(x) != 2:
            raise DataError(
                f"retriever {run_name!r}, query {qid!r}: the result {x!r} has {len(x)} fields; expected a doc id "
                "or a (doc_id, score) pair."
            )
        raw, score = x
    else:
        raw = x
    if raw is None or isinstance(raw, bytes | float | Mapping | list | tuple):
        raise DataError(
            f"retriever {run_name!r}, query {qid!r}: {raw!r} is not a document id; expected a string (or an int). "
            "Fix: return doc ids, (doc_id, score) pairs, Documents or NodeWithScore."
        )
    doc = str(raw).strip()
    if not doc:
        raise DataError(f"retriever {run_name!r}, query {qid!r}: a result has an empty document id.")
    if score is not None:
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise DataError(
                f"retriever {run_name!r}, query {qid!r}: the score {score!r} of {doc!r} is not a number."
            ) from None
    return doc, score


def _from_metadata(metadata: Mapping[str, Any], id_key: str, qid: str, run_name: str, what: str) -> Any:
    if id_key not in metadata or metadata[id_key] is None:
        raise DataError(
            f"retriever {run_name!r}, query {qid!r}: a {what} has no metadata[{id_key!r}] (its metadata keys: "
            f"{', '.join(map(str, metadata)) or 'none'}). Fix: store the document id under {id_key!r} when "
            "indexing, or pass the right id_key."
        )
    return metadata[id_key]


def _collapse(
    items: list[tuple[str, float | None]],
    mapper: Callable[[str], Any] | None,
    collapse: bool,
    qid: str,
    tally: _Tally,
) -> list[tuple[str, float | None]]:
    """Repeated ids -> one entry at the first rank: best score (``collapse``) or first occurrence's score."""
    out: dict[str, float | None] = {}
    repeats = 0
    for chunk, score in items:
        doc = chunk
        if mapper is not None:
            try:
                mapped = mapper(chunk)
            except Exception as e:
                raise DataError(
                    f"chunk_to_doc raised {type(e).__name__}: {e} on the id {chunk!r} (query {qid!r}). Fix the "
                    "mapping so that it accepts every id the retriever returns."
                ) from e
            doc = str(mapped).strip() if mapped is not None else ""
            if not doc:
                raise DataError(
                    f"chunk_to_doc mapped the id {chunk!r} (query {qid!r}) to an empty document id."
                )
        if doc not in out:
            out[doc] = score
            continue
        repeats += 1
        if collapse:
            best = out[doc]
            out[doc] = None if best is None or score is None else max(best, score)
    if repeats:
        if collapse:
            tally.collapsed += repeats
        else:
            tally.duplicates.append(f"{qid}: {repeats}")
    return list(out.items())


def _scored(items: list[tuple[str, float | None]], qid: str, tally: _Tally) -> list[tuple[str, float]]:
    """Scores strictly decreasing as float32 along the list (see the module docstring)."""
    if not items:
        return []
    scores = [s for _, s in items]
    with np.errstate(over="ignore", invalid="ignore"):
        usable = all(s is not None and math.isfinite(float(np.float32(s))) for s in scores)
    if not usable:
        if any(s is not None for s in scores):
            tally.replaced.append(qid)
        return [(doc, -float(rank)) for rank, (doc, _) in enumerate(items, start=1)]
    out: list[tuple[str, float]] = []
    prev: np.float32 | None = None
    changed = False
    down = np.float32(-np.inf)
    with np.errstate(over="ignore"):
        for doc, s in items:
            assert s is not None
            f = np.float32(s)
            if prev is not None and not f < prev:
                f = np.nextafter(prev, down)
                s = float(f)
                changed = True
            out.append((doc, float(s)))
            prev = f
    if changed:
        tally.adjusted.append(qid)
    return out


def _record(
    report: ValidationReport,
    run_name: str,
    n_queries: int,
    errors: dict[str, str],
    tally: _Tally,
    depth: int,
    collapse: bool,
    latency: dict[str, float],
) -> None:
    label = f"retriever {run_name!r}"
    report.add(
        "retriever_error",
        f"{label} raised on {len(errors)} of {n_queries} queries; they have no results and score 0 (see "
        "Run.errors for every message). Fix the retriever and run again.",
        severity="error",
        count=len(errors),
        examples=[f"{q}: {msg}" for q, msg in errors.items()],
    )
    report.add(
        "retriever_duplicate_ids",
        f"{label} returned the same id more than once for {len(tally.duplicates)} queries; the first occurrence "
        "is kept (chunk_to_doc=None). Pass chunk_to_doc='max' if these are chunks of one document.",
        count=len(tally.duplicates),
        examples=tally.duplicates,
    )
    if collapse:
        report.add(
            "retriever_chunks_collapsed",
            f"{label}: {tally.collapsed} results were further chunks of a document already listed, merged into it "
            "(first rank, best score; chunk_to_doc='max').",
            severity="info",
            count=tally.collapsed,
        )
    report.add(
        "retriever_scores_adjusted",
        f"{label} gave tied or out-of-order scores for {len(tally.adjusted)} queries; those scores were lowered to "
        "the next float32 below the previous one so that trec_eval's score order keeps the retriever's order.",
        severity="info",
        count=len(tally.adjusted),
        examples=tally.adjusted,
    )
    report.add(
        "retriever_scores_replaced",
        f"{label} gave some missing or non-finite scores for {len(tally.replaced)} queries; their scores are -rank "
        "instead.",
        severity="info",
        count=len(tally.replaced),
        examples=tally.replaced,
    )
    ran = n_queries - len(errors)
    many = len(tally.short_lists) * 2 > ran
    report.add(
        "retriever_short_lists",
        f"{label} returned fewer than depth={depth} documents for {len(tally.short_lists)} of {ran} queries "
        "(after merging chunks). If the corpus is larger than that, ask your retriever for more (LangChain "
        "search_kwargs={'k': ...}, LlamaIndex similarity_top_k=...); recall at depth is capped by it.",
        severity="warning" if many else "info",
        count=len(tally.short_lists),
        examples=tally.short_lists,
    )
    report.add(
        "retriever_latency_unmeasured",
        f"{label}: no per-query latency for {len(tally.unmeasured)} queries (its batch() reported no per-query "
        "run to time).",
        severity="info",
        count=len(tally.unmeasured),
        examples=tally.unmeasured,
    )
    report.stats[f"{label} queries"] = n_queries
    report.stats[f"{label} errors"] = len(errors)
    if latency:
        values = np.fromiter(latency.values(), dtype=np.float64)
        report.stats[f"{label} latency_ms p50"] = round(float(np.percentile(values, 50)), 3)
        report.stats[f"{label} latency_ms p95"] = round(float(np.percentile(values, 95)), 3)


# ============================================================================================== loading


def _import(module_name: str, spec: str) -> Any:
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise DataError(
                f"retriever spec {spec!r}: there is no file {path.resolve()}. Fix: give the path of the .py file "
                "that defines your retriever, or a module name importable from here."
            )
        mod_name = f"_diagnose_retriever_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise DataError(f"retriever spec {spec!r}: cannot load {path} as a Python module.")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as e:
            sys.modules.pop(mod_name, None)
            raise _import_failed(spec, str(path), e) from e
        return module
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise DataError(
                f"retriever spec {spec!r}: no module named {e.name!r} in the current directory ({cwd}) or the "
                f"installed packages. Fix: run from the folder holding {module_name.replace('.', '/')}.py, install "
                "its package, or give a file path like path/to/my_rag.py:retriever."
            ) from e
        raise _import_failed(spec, module_name, e) from e
    except Exception as e:
        raise _import_failed(spec, module_name, e) from e


def _import_failed(spec: str, where: str, e: BaseException) -> DataError:
    return DataError(
        f"retriever spec {spec!r}: importing {where} raised {type(e).__name__}: {e}. Fix the module (import it "
        "in Python to see the traceback) or install what it needs."
    )
