"""diagnose: tells a RAG team *why* its retriever fails.

The Python API, verbs first (README, section "Python"; in full: docs/python.md)::

    import diagnose

    ds = diagnose.load("demo_corpus")                                  # a BEIR folder, or corpus=/queries=/qrels=
    diagnose.evaluate(ds, "demo_corpus/runs/ann_minilm.trec")          # metrics only: no model, no torch
    a = diagnose.Analysis(ds, {"ann": "demo_corpus/runs/ann_minilm.trec"}, baselines=("bm25", "hybrid"))
    a.metrics(); a.failures("ann"); a.inspect("q017", "ann"); a.compare(); a.map("ann")
    run = diagnose.run_retriever(my_langchain_retriever, ds)           # a live retriever -> a Run

The library (this package) never imports Streamlit; ``diagnose.ui`` and ``app.py`` are a thin face over it, and
``diagnose.cli`` a thin command line. Every name loads on first use, so ``import diagnose`` imports nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from diagnose.analysis import Analysis
    from diagnose.api import evaluate, load, write_qrels
    from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Run, Span, ValidationReport
    from diagnose.retrievers import run_retriever

__all__ = [
    "load",
    "evaluate",
    "Analysis",
    "run_retriever",
    "write_qrels",
    "Dataset",
    "Corpus",
    "Queries",
    "Qrels",
    "Span",
    "Run",
    "DataError",
    "ValidationReport",
    "__version__",
]

# nothing is imported with the package itself (not even numpy): the command line sets up its process first
# (diagnose.cli.process)
_LAZY = {
    **dict.fromkeys(
        ["Corpus", "DataError", "Dataset", "Qrels", "Queries", "Run", "Span", "ValidationReport"],
        "diagnose.data",
    ),
    "Analysis": "diagnose.analysis",
    "run_retriever": "diagnose.retrievers",
    "load": "diagnose.api",
    "evaluate": "diagnose.api",
    "write_qrels": "diagnose.api",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'diagnose' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
