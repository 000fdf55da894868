"""Calling a retriever on every query: a thread pool of ``concurrency`` workers for callables and LlamaIndex,
LangChain's own ``batch`` with a callback timing each query's root run, and the progress bar (see the package
docstring)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import lru_cache
from typing import Any

from diagnose.data import DataError
from diagnose.progress import Progress, reporter

Outcome = tuple[Any, float | None]  # (results, or the exception raised; latency in ms, or None)


def _ticker(
    progress: Progress, total: int, run_name: str
) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(tick, finish)``: a thread-safe ``tick()`` per finished query and ``finish()`` at the end, driving the
    :mod:`diagnose.progress` bar of ``progress`` (``True``: tqdm on stderr, on a terminal or in a notebook)."""
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


def _call(
    retriever: Any,
    kind: str,
    texts: list[str],
    concurrency: int,
    progress: Progress,
    run_name: str,
) -> list[Outcome]:
    """Every query's :data:`Outcome`, in input order: LangChain through its ``batch``, the others (a LlamaIndex
    ``retrieve``, a callable) through the thread pool; the progress bar of ``progress`` ticks per query."""
    tick, finish = _ticker(progress, len(texts), run_name)
    if kind == "langchain":
        outcomes = _call_langchain(retriever, texts, concurrency, tick)
    else:
        fn = retriever.retrieve if kind == "llamaindex" else retriever
        outcomes = _call_pool(fn, texts, concurrency, tick)
    finish()
    return outcomes
