"""diagnose: tells a RAG team *why* its retriever fails.

The library (this package) never imports Streamlit; ``diagnose.ui`` and ``app.py`` are a thin face over it, and
``diagnose.cli`` a thin command line.
"""

from __future__ import annotations

__version__ = "0.1.0"

from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Run, ValidationReport

__all__ = ["Corpus", "DataError", "Dataset", "Qrels", "Queries", "Run", "ValidationReport", "__version__"]
