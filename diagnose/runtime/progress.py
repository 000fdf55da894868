"""How long work tells the user where it is: one protocol for the library, the CLI, notebooks and the app.

A *reporter* has two methods: ``step(label)`` announces a stage ("Building the BM25 index"), and ``bar(label)``
returns a ``callback(done, total)`` for a stage with a known size (encoding documents). The library only ever
talks to a reporter; each face brings its own:

- :class:`Silent`: nothing (the default of the library).
- :class:`Terminal`: stage labels on stderr and a tqdm bar, but only on a terminal or in a Jupyter notebook, so CI
  logs never fill with escape codes (``progress=True`` everywhere in the library means this).
- the app passes an object drawing into ``st.status`` (``diagnose.ui``).

:func:`reporter` turns what a user may pass (``True``, ``False``, ``None``, a reporter, a ``callback(done, total)``)
into a reporter.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from diagnose.errors import DataError
from diagnose.runtime.terminal import terminal_safe

# bm25s, transformers, huggingface_hub and sentence-transformers import tqdm.autonotebook, which prints "TqdmWarning:
# IProgress not found" into a Jupyter cell when ipywidgets is not installed (and then draws text bars, which is
# fine). It warns once, on its first import, and only in a Jupyter kernel: there that import happens here, quietly,
# before any of theirs. Elsewhere (a terminal, CI) tqdm is imported when a bar is first drawn (~20 ms less start).
if "ipykernel" in sys.modules:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.autonotebook  # noqa: F401

Callback = Callable[[int, int], Any]


@runtime_checkable
class Reporter(Protocol):
    def step(self, label: str) -> None: ...

    def bar(self, label: str) -> Callback: ...


#: What a ``progress`` argument of the library takes (:func:`reporter` reads it): ``True`` (:class:`Terminal`),
#: ``False`` or ``None`` (:class:`Silent`), a :class:`Reporter`, or a bare ``callback(done, total)`` for the bars.
Progress = bool | Reporter | Callback | None


def _ignore(done: int, total: int) -> None:
    return None


class Silent:
    """Reports nothing."""

    def step(self, label: str) -> None:
        return None

    def bar(self, label: str) -> Callback:
        return _ignore


class Terminal:
    """Stage labels and tqdm bars on stderr, only where someone watches them: a terminal or a Jupyter notebook
    (:func:`shows_progress`; ``force=True``: always)."""

    def __init__(self, *, force: bool = False) -> None:
        self.enabled = force or shows_progress()

    def step(self, label: str) -> None:
        if self.enabled:
            print(f"{terminal_safe(label)} ...", file=sys.stderr, flush=True)

    def bar(self, label: str) -> Callback:
        if not self.enabled:
            return _ignore
        tqdm = _tqdm_class()

        state: dict[str, Any] = {}

        def update(done: int, total: int) -> None:
            t = state.get("bar")
            if t is None:
                t = state["bar"] = tqdm(
                    total=total, desc=terminal_safe(label), unit="text", file=sys.stderr, leave=False
                )
            t.update(max(done - t.n, 0))
            if done >= total:
                t.close()

        return update


def _tqdm_class() -> Any:
    """tqdm's notebook bar in a Jupyter kernel that has ipywidgets (the ``[notebook]`` extra), else the text bar:
    tqdm.auto without ipywidgets prints "TqdmWarning: IProgress not found" into the notebook and draws text anyway."""
    if in_notebook():
        import importlib.util

        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.notebook import tqdm

            return tqdm
    from tqdm.std import tqdm

    return tqdm


class _CallbackOnly:
    """A bare ``callback(done, total)`` given where a reporter is expected: bars call it, steps are silent."""

    def __init__(self, callback: Callback) -> None:
        self.callback = callback

    def step(self, label: str) -> None:
        return None

    def bar(self, label: str) -> Callback:
        return self.callback


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (bars are drawn only then: elsewhere they are escape codes in a log)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's kernel app), where tqdm.auto draws a notebook bar."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # noqa: BLE001 - an IPython without a shell or a config: not a notebook
        return False


def shows_progress() -> bool:
    """Whether bars are drawn: on a terminal or in a notebook; not in a log or a CI job, where they would be escape
    codes."""
    return stderr_is_terminal() or in_notebook()


def reporter(progress: Progress) -> Reporter:
    """The reporter for a ``progress`` argument: ``True`` -> :class:`Terminal`, ``False``/``None`` ->
    :class:`Silent`, a reporter as is, a ``callback(done, total)`` -> bars call it."""
    if progress is None or progress is False:
        return Silent()
    if progress is True:
        return Terminal()
    if isinstance(progress, Reporter):
        return progress
    if callable(progress):
        return _CallbackOnly(progress)
    raise DataError(
        f"progress must be a bool, a reporter (step/bar) or a callback(done, total), got {progress!r}",
        param="progress",
    )
