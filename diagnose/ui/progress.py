"""Progress in the app: an ``st.status`` box for work done in the script run (:class:`StatusReporter`), and work
done in a thread of its own that outlives script runs (:class:`Background`: the vectors; :class:`ProjectionBackground`:
the whole-collection map), which pages poll with :func:`diagnose.ui.state.wait_for_vectors`. All are
:class:`diagnose.runtime.progress.Reporter` objects."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from diagnose.analysis import Analysis


class StatusProgress:
    """A :class:`diagnose.runtime.progress.Reporter` drawing into an ``st.status`` box, created only when something
    actually has to be computed. Bars show documents done, the rate and the time left."""

    def __init__(self) -> None:
        self.box: Any = None

    def step(self, label: str) -> None:
        self._box(label)

    def _box(self, label: str) -> Any:
        if self.box is None:
            self.box = st.status("Preparing the analysis ...", expanded=True)
        self.box.update(label=label + " ...", expanded=True)
        self.box.write(label)
        return self.box

    def bar(self, label: str) -> Callable[[int, int], None]:
        box = self._box(label)
        bar = box.progress(0.0, text=label)
        start = time.monotonic()

        def update(done: int, total: int) -> None:
            frac = min(max(done / total, 0.0), 1.0) if total else 1.0
            elapsed = time.monotonic() - start
            rate = done / elapsed if elapsed > 0 and done else 0.0
            eta = f", about {(total - done) / rate:,.0f} s left" if rate and done < total else ""
            speed = f" ({rate:,.0f}/s{eta})" if rate else ""
            bar.progress(frac, text=f"{label}: {done:,} / {total:,}{speed}")

        return update

    def done(self, label: str) -> None:
        if self.box is not None:
            self.box.update(label=label, state="complete", expanded=False)

    def fail(self, label: str) -> None:
        if self.box is not None:
            self.box.update(label=label, state="error", expanded=False)


class Background:
    """The vectors of one analysis, computed in a thread of their own (not tied to a script run: switching pages
    never restarts it), with the progress the pages poll: a :class:`diagnose.runtime.progress.Reporter` that records the
    current stage, documents done / total and the start time instead of drawing."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.label = "Waiting to start"
        self.done = 0
        self.total = 0
        self.started = self.stage_started = time.monotonic()
        self.error: BaseException | None = None

    def step(self, label: str) -> None:
        with self.lock:
            self.label, self.done, self.total = label, 0, 0
            self.stage_started = time.monotonic()

    def bar(self, label: str) -> Callable[[int, int], None]:
        self.step(label)

        def update(done: int, total: int) -> None:
            with self.lock:
                self.done, self.total = done, total

        return update

    def start(self, analysis: Analysis) -> None:
        """Compute the analysis' vectors (and what needs them) in the thread, once."""
        self._launch(lambda: analysis.prepare(progress=self), "diagnose-vectors")

    def _launch(self, work: Callable[[], None], name: str) -> None:
        """Run ``work`` in a daemon thread unless one was started already; its exception is kept for the page."""
        with self.lock:
            if self.thread is not None:
                return
            self.started = self.stage_started = time.monotonic()

            def run() -> None:
                try:
                    work()
                except BaseException as e:  # noqa: BLE001 - shown on the page, never lost in a thread
                    with self.lock:
                        self.error = e

            context = (
                contextvars.copy_context()
            )  # the script run's confinement of reads (confine_reads) holds here
            self.thread = threading.Thread(target=context.run, args=(run,), name=name, daemon=True)
            self.thread.start()

    def wait(self, seconds: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout=max(seconds, 0.0))

    def status(self) -> str:
        with self.lock:
            label, done, total, stage = self.label, self.done, self.total, self.stage_started
        text = label
        if total:
            elapsed = time.monotonic() - stage  # the rate of this stage (loading the model is not encoding)
            rate = done / elapsed if elapsed > 0 and done else 0.0
            text += f": {done:,} / {total:,}"
            if rate:
                text += f" ({rate:,.0f}/s, about {(total - done) / rate:,.0f} s left)"
        return text

    def fraction(self) -> float:
        with self.lock:
            return min(self.done / self.total, 1.0) if self.total else 0.0


class ProjectionBackground(Background):
    """The whole-collection projection of one data set and model (:meth:`Analysis.whole_projection`, then the map
    of the run asked for first), in a thread of its own, with the stage, the layout's epochs and the elapsed time
    the map page polls. Started by :func:`whole_map_background`."""

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def start_map(self, analysis: Analysis, run: str, k: int, failure: str) -> None:
        self._launch(lambda: self._run_map(analysis, run, k, failure), "diagnose-whole-map")

    def _run_map(self, analysis: Analysis, run: str, k: int, failure: str) -> None:
        with analysis.reporting(self):
            analysis.whole_projection()
            self.step("Placing the failed queries of the run")
            analysis.whole_embedding_map(run, k=k, failure=failure)
        with self.lock:
            self.finished = True

    def status(self) -> str:
        with self.lock:
            label, done, total = self.label, self.done, self.total
            started, stage = self.started, self.stage_started
        now = time.monotonic()
        text = label
        if total:
            rate = done / (now - stage) if now > stage and done else 0.0
            text += f": {done:,} / {total:,}"
            if rate and done < total:
                text += f", about {(total - done) / rate:,.0f} s left"
        return f"{text} ({now - started:,.0f} s elapsed)"
