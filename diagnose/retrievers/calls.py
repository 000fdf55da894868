"""Calling a retriever on every query: ``concurrency`` daemon worker threads, a per-query timeout, Ctrl-C, and the
progress bar (see the package docstring).

Every kind goes through the same workers (but for ``concurrency=1`` with no timeout, which calls one query after
the other in the calling thread, for a retriever bound to it, e.g. an ``sqlite3`` connection): a callable is called, a LlamaIndex retriever's ``retrieve`` and a
LangChain retriever's ``invoke`` (what LangChain's own ``batch`` maps over its thread pool) are called, one query per
call, each call timed with ``time.perf_counter`` and run in a copy of the caller's ``contextvars`` context (as
LangChain's executor does). The calling thread only waits, hands out nothing and draws the progress bar:

- **Timeout.** A call still running ``timeout`` seconds after it started is abandoned: its query gets a
  :class:`RetrieverTimeout` outcome (it retrieved nothing), its worker is replaced so ``concurrency`` calls stay in
  flight, and whatever the call returns later is ignored. Python cannot kill a thread, so an abandoned call keeps
  running in the background until it returns or the process exits. When :func:`hung_limit` abandoned calls are
  still running at once, the retriever is taken for down: the queries not started yet are not run (each gets a
  :class:`RetrieverDown` outcome, reported like an error) rather than one more thread each.
- **Threads never block exit.** Workers are daemon threads (not ``ThreadPoolExecutor``'s, which the interpreter
  joins at exit): a call that never returns cannot keep the process alive.
- **Ctrl-C.** Only the calling thread receives it, while it waits: the workers stop taking queries and
  :class:`Interrupted` carries the outcomes so far (``run_retriever`` turns them into a partial run).
- **User code is contained.** Whatever a call raises, ``BaseException`` included (``SystemExit``, a
  ``KeyboardInterrupt`` raised by the retriever itself), is that query's outcome: it cannot end the run.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from diagnose.runtime.progress import Progress, reporter

Outcome = tuple[Any, float | None]  # (results, or the exception raised; latency in ms, or None)

#: Seconds a query may take before it is abandoned and counted as timed out (``run_retriever(timeout=...)``,
#: ``Analysis(retriever_timeout=...)``, ``--retriever-timeout``).
DEFAULT_TIMEOUT = 60.0

_POLL = 0.25  # longest wait of the calling thread between two looks at the clock (seconds)


class RetrieverTimeout(TimeoutError):
    """The outcome of a query whose call gave no answer within the timeout (it counts as retrieving nothing)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s (the call was abandoned)")
        self.seconds = seconds


class RetrieverDown(RuntimeError):
    """The outcome of a query not started because too many earlier calls were hung (see the module docstring)."""

    def __init__(self, hung: int) -> None:
        super().__init__(f"not run: {hung} calls of the retriever were hung past the timeout at once")


def hung_limit(concurrency: int) -> int:
    """How many abandoned calls may still be running before the remaining queries are not started."""
    return max(32, 4 * concurrency)


class Interrupted(Exception):
    """Ctrl-C while waiting: the outcomes so far (None where a query was not answered) and the queries in flight."""

    def __init__(self, outcomes: list[Outcome | None], in_flight: list[int]) -> None:
        super().__init__("interrupted")
        self.outcomes = outcomes
        self.in_flight = in_flight


def _ticker(progress: Progress, total: int, run_name: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """``(tick, finish)``: ``tick()`` per finished query and ``finish()`` at the end, driving the
    :mod:`diagnose.runtime.progress` bar of ``progress`` (``True``: tqdm on stderr, on a terminal or in a notebook). Both are
    called from the calling thread only (a reporter may draw on a page only that thread may touch: Streamlit)."""
    update = reporter(progress).bar(f"Retriever {run_name}")
    done = [0]
    update(0, total)

    def tick() -> None:
        done[0] += 1
        update(done[0], total)

    def finish() -> None:
        update(total, total)

    return tick, finish


def _materialise(out: Any) -> Any:
    """A lazy iterable (generator) is listed inside the timed call; strings and sequences stay as they are."""
    if isinstance(out, str | bytes | Sequence) or not isinstance(out, Iterable):
        return out
    return list(out)


class _Pool:
    """Daemon workers calling ``fn`` on ``texts``, watched by the calling thread (see the module docstring)."""

    def __init__(self, fn: Callable[[str], Any], texts: list[str], timeout: float | None) -> None:
        self.fn, self.texts, self.timeout = fn, texts, timeout
        self.todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(len(texts)):
            self.todo.put(i)
        self.answers: queue.SimpleQueue[tuple[int, Outcome]] = queue.SimpleQueue()
        self.started: dict[int, float] = {}  # query index -> perf_counter at the start of its call
        self.abandoned: set[int] = set()
        self.returned: set[int] = set()  # abandoned calls that returned since
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.context = contextvars.copy_context()

    def spawn(self) -> None:
        threading.Thread(target=self.work, name="diagnose-retriever", daemon=True).start()

    def work(self) -> None:
        while not self.stop.is_set():
            try:
                i = self.todo.get_nowait()
            except queue.Empty:
                return
            start = time.perf_counter()
            with self.lock:
                self.started[i] = start
            try:
                out = self.context.copy().run(self.call, self.texts[i])
                outcome: Outcome = (out, (time.perf_counter() - start) * 1000.0)
            except BaseException as e:  # noqa: BLE001 - user code: even SystemExit only fails this query
                outcome = (e, None)
            self.answers.put((i, outcome))
            with self.lock:
                if i in self.abandoned:
                    self.returned.add(i)
                    return  # a replacement took this worker's place: do not exceed the concurrency
        return

    def call(self, text: str) -> Any:
        return _materialise(self.fn(text))

    def late(self) -> list[int]:
        """The queries in flight for longer than the timeout, now abandoned (their workers exit when they return)."""
        if self.timeout is None:
            return []
        now = time.perf_counter()
        with self.lock:
            out = [i for i, s in self.started.items() if now - s >= self.timeout]
            for i in out:
                del self.started[i]
                self.abandoned.add(i)
        return out

    def hung(self) -> int:
        """How many abandoned calls are still running."""
        with self.lock:
            return len(self.abandoned) - len(self.returned)

    def give_up(self) -> list[int]:
        """Stop the workers taking queries; the queries not started yet."""
        self.stop.set()
        out = []
        while True:
            try:
                out.append(self.todo.get_nowait())
            except queue.Empty:
                return out

    def collect(self, results: list[Outcome | None]) -> None:
        """Ctrl-C: the answers already queued but not yet read go into ``results`` (those queries were answered,
        not in flight), so the partial run has every query that returned before the interrupt."""
        while True:
            try:
                i, outcome = self.answers.get_nowait()
            except queue.Empty:
                return
            with self.lock:
                self.started.pop(i, None)
            if results[i] is None:
                results[i] = outcome

    def wait(self) -> float:
        """How long the calling thread may wait for an answer before looking at the clock again."""
        if self.timeout is None:
            return _POLL
        with self.lock:
            first = min(self.started.values(), default=None)
        if first is None:
            return _POLL
        return min(_POLL, max(0.001, first + self.timeout - time.perf_counter()))


def _call_here(fn: Callable[[str], Any], texts: list[str], tick: Callable[[], None]) -> list[Outcome]:
    """One query after the other in the calling thread (``concurrency=1`` without a timeout): for a retriever
    bound to the thread that made it (an ``sqlite3`` connection). Ctrl-C there interrupts the call itself."""
    results: list[Outcome | None] = [None] * len(texts)
    for i, text in enumerate(texts):
        start = time.perf_counter()
        try:
            results[i] = (_materialise(fn(text)), (time.perf_counter() - start) * 1000.0)
        except KeyboardInterrupt:  # Ctrl-C, or the retriever's own: indistinguishable in this thread, so stop
            raise Interrupted(results, [i]) from None
        except BaseException as e:  # noqa: BLE001 - user code: even SystemExit only fails this query
            results[i] = (e, None)
        tick()
    return results  # type: ignore[return-value]


def _call_pool(
    fn: Callable[[str], Any],
    texts: list[str],
    concurrency: int,
    timeout: float | None,
    tick: Callable[[], None],
) -> list[Outcome]:
    """Every query's :data:`Outcome` in input order (see the module docstring)."""
    pool = _Pool(fn, texts, timeout)
    results: list[Outcome | None] = [None] * len(texts)
    left = len(texts)
    try:  # the workers start inside: a Ctrl-C while they start (and answer) is caught like any other
        for _ in range(min(concurrency, len(texts))):
            pool.spawn()
        while left:
            for i in pool.late():
                results[i] = (RetrieverTimeout(float(timeout or 0)), None)
                left -= 1
                tick()
                if pool.hung() < hung_limit(concurrency):
                    pool.spawn()
                else:
                    for j in pool.give_up():
                        results[j] = (RetrieverDown(pool.hung()), None)
                        left -= 1
                        tick()
            if not left:
                break
            try:
                i, outcome = pool.answers.get(timeout=pool.wait())
            except queue.Empty:
                continue
            with pool.lock:
                pool.started.pop(i, None)
            if results[i] is None:  # else a late answer of an abandoned call: ignored
                results[i] = outcome
                left -= 1
                tick()
    except KeyboardInterrupt:
        pool.stop.set()
        pool.collect(results)
        with pool.lock:
            in_flight = sorted(pool.started)
        raise Interrupted(results, in_flight) from None
    return results  # type: ignore[return-value]


def call_retriever(
    retriever: Any,
    kind: str,
    texts: list[str],
    concurrency: int,
    timeout: float | None,
    progress: Progress,
    run_name: str,
) -> list[Outcome]:
    """Every query's :data:`Outcome`, in input order: ``invoke`` of a LangChain retriever, ``retrieve`` of a
    LlamaIndex one, or the callable, on ``concurrency`` daemon workers with ``timeout`` seconds per query; the
    progress bar of ``progress`` ticks per query. Raises :class:`Interrupted` on Ctrl-C."""
    tick, finish = _ticker(progress, len(texts), run_name)
    fn = {
        "langchain": getattr(retriever, "invoke", None),
        "llamaindex": getattr(retriever, "retrieve", None),
    }.get(kind, retriever)
    if concurrency == 1 and timeout is None:
        outcomes = _call_here(fn, texts, tick)
    else:
        outcomes = _call_pool(fn, texts, concurrency, timeout, tick)
    finish()
    return outcomes
