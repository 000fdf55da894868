"""Modules imported on first use: ``from diagnose.runtime.lazy import pandas as pd`` gives a stand-in that imports pandas
the first time one of its attributes is read (``pd.DataFrame``), and forwards every read to it after that;
``pyarrow_compute`` does the same for ``pyarrow.compute``.

``import pyarrow.compute`` builds a Python wrapper with a generated docstring and signature for each of ~300 compute
functions: ~50 ms, pure Python. Imported at the command line's start, it held the only busy core while the other
waited; imported on first use, it runs in the main thread reading the golden set while the runs' thread parses
its file (:func:`diagnose.io.load_dataset`).

pandas alone is 0.25-0.3 s of a process' start on a quiet machine (600 modules, ~0.5 s under load); ``diagnose
evaluate`` on TREC files never builds a frame (runs, qrels and scores are Arrow and numpy arrays,
:mod:`diagnose.runtime.frames`), so it never pays for it. pyarrow would import pandas on its own the first time it
converts anything (``to_numpy``, ``pa.array``): the columns go through :mod:`diagnose.runtime.arrays` instead, which
reads and builds Arrow buffers with public APIs that never ask for pandas. No import hook, no patching: pandas is
imported as soon as any code asks for it. Annotations
(``-> pd.DataFrame``) are strings under ``from __future__ import annotations`` and read nothing. Unlike a lazy
module put into ``sys.modules``, the stand-in changes nothing for other code in the process, and the first read
from several threads at once is safe: it is a plain import, under Python's import lock.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "pandas", "pyarrow_compute"]


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
