"""Modules imported on first use: ``from diagnose.runtime.lazy import pandas as pd`` gives a stand-in that imports pandas
the first time one of its attributes is read (``pd.DataFrame``), and forwards every read to it after that;
``pyarrow_compute`` does the same for ``pyarrow.compute``.

``import pyarrow.compute`` builds a Python wrapper with a generated docstring and signature for each of ~300 compute
functions: ~50 ms, pure Python. Imported at the command line's start, it held the only busy core while the other
waited; imported on first use, it runs in the main thread reading the golden set while the runs' thread parses
its file (:func:`diagnose.io.load_dataset`).

pandas alone is 0.25-0.3 s of a process' start on a quiet machine (600 modules, ~0.5 s under load); ``diagnose
evaluate`` on TREC files never builds a frame (runs, qrels and scores are Arrow and numpy arrays,
:mod:`diagnose.runtime.frames`), so it never pays for it. Annotations
(``-> pd.DataFrame``) are strings under ``from __future__ import annotations`` and read nothing. Unlike a lazy
module put into ``sys.modules``, the stand-in changes nothing for other code in the process, and the first read
from several threads at once is safe: it is a plain import, under Python's import lock.
"""

from __future__ import annotations

import dis
import importlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType
from typing import Any

__all__ = ["LazyModule", "pandas", "pyarrow_compute", "pyarrow_without_pandas"]


class LazyModule:
    """The module ``name``, imported when an attribute is first read."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def module(self) -> ModuleType:
        """The module itself, imported now if it is not yet. While another thread imports it, this waits for that
        import to finish (``sys.modules`` already holds the module half-initialised then)."""
        return importlib.import_module(self._name)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.module(), attr)

    def __repr__(self) -> str:
        return f"<{self._name}, imported on first use>"


pandas: Any = LazyModule("pandas")
pyarrow_compute: Any = LazyModule("pyarrow.compute")


@contextmanager
def pyarrow_without_pandas() -> Iterator[None]:
    """Inside, pyarrow does not import pandas on its own; Python code that imports pandas gets it as always.

    pyarrow imports pandas (when installed) the first time it converts anything, only to learn whether its input
    is a DataFrame or a pandas missing value (its Cython shim asks once; its C++ layer asks at each conversion until
    it gets it): 0.25-0.3 s of a ``diagnose evaluate`` process that never builds a frame. Inside this context those
    questions are answered "pandas is not installed", which is true in the sense that matters (no pandas object
    exists before pandas is imported). An ``import pandas`` statement, or ``importlib.import_module`` (what
    :class:`LazyModule` does), imports it as usual, and pyarrow is told before the import returns, so from then
    on it handles DataFrames exactly as before. Nothing changes when pandas is already imported, or when pyarrow
    has no such shim (another release).

    Code inside that wants pyarrow to build a DataFrame (``Table.to_pandas``) imports pandas first
    (:func:`diagnose.runtime.frames.arrow_to_pandas` does): pyarrow's own import of it is refused too. So the context is
    for code that is all diagnose's: ``diagnose evaluate`` on files (:mod:`diagnose.cli.evaluate`), not a run of a
    user's retriever or a vector database reader."""
    finder = _PandasForPythonOnly.install()
    try:
        yield
    finally:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)


class _PandasForPythonOnly:
    """A meta path finder: ``pandas`` is missing for pyarrow's own probes, and imported for Python code (an import
    statement, or :mod:`importlib`), after which pyarrow is told and the finder removes itself."""

    def __init__(self, api: Any) -> None:
        self.api = api

    @classmethod
    def install(cls) -> _PandasForPythonOnly | None:
        if "pandas" in sys.modules:
            return None
        try:
            import pyarrow.lib

            api = pyarrow.lib._pandas_api
        except (ImportError, AttributeError):  # no pyarrow, or one without the shim
            return None
        finder = cls(api)
        sys.meta_path.insert(0, finder)
        return finder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        if not _asked_by_python_code(sys._getframe(1)):
            raise ModuleNotFoundError("No module named 'pandas'", name="pandas")
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("pandas")
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenTell(spec.loader, self.api)
        return spec


_IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def _asked_by_python_code(frame: FrameType | None) -> bool:
    """Whether the import being resolved comes from an ``import`` statement or :mod:`importlib` (not from a
    function of a compiled extension, such as pyarrow's probes, whose caller is a plain call)."""
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    if frame is None:
        return True
    if frame.f_code.co_filename.endswith(("importlib/__init__.py", "importlib\\__init__.py")):
        return True
    return frame.f_code.co_code[frame.f_lasti] == _IMPORT_NAME


class _ThenTell:
    """pandas' own loader, then pyarrow told (its shim imports the now loaded pandas and records its types);
    everything else is the loader's."""

    def __init__(self, loader: Any, api: Any) -> None:
        self._loader, self._api = loader, api

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._api.pd  # noqa: B018

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._loader, attr)
