"""bm25s' private scoring helpers, behind one door: the only module that calls them, and only with the bm25s
releases they were tested with.

:func:`diagnose.lexical.engines.Bm25sImpl` builds bm25s' score matrix in whole-corpus numpy operations instead of
``BM25.index``'s loop over documents (~25 s of a ~40 s index build at 1M documents), and stays bit for bit equal to
it by calling bm25s' own formulas: ``scoring._build_idf_array``, ``scoring._select_idf_scorer``,
``scoring._select_tfc_scorer`` and the matrix builder ``BM25._np_csc``. Being private, a bm25s release may rename
them or change what they compute without notice, so :func:`bm25s_internals` gives them only when
``bm25s.__version__`` is one of :data:`TESTED_BM25S` and every one of them exists; otherwise it returns None and the
index is built by ``BM25.index`` (public; slower at scale, the same arrays). ``tests/test_bm25_index_arrays.py``
builds indexes both ways and compares them bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: bm25s releases the private helpers were tested with (``bm25s.__version__``).
TESTED_BM25S = ("0.3.16",)
_SCORING = ("_build_idf_array", "_select_idf_scorer", "_select_tfc_scorer")


def is_tested(bm25s_version: str) -> bool:
    """Whether ``bm25s_version`` (``bm25s.__version__``) is a release the private helpers were tested with."""
    return bm25s_version in TESTED_BM25S


@dataclass(frozen=True)
class Bm25sInternals:
    """bm25s' own formulas, given whole-corpus arrays (see the module docstring)."""

    scoring: Any  # the module bm25s.scoring

    def idf_array(self, retriever: Any, doc_frequencies: dict[int, int], n_docs: int) -> np.ndarray:
        """The idf of every term id (bm25s' ``_build_idf_array`` with ``retriever``'s idf formula and dtype)."""
        return self.scoring._build_idf_array(
            doc_frequencies=doc_frequencies,
            n_docs=n_docs,
            compute_idf_fn=self.scoring._select_idf_scorer(retriever.idf_method),
            dtype=retriever.dtype,
        )

    def tfc(self, retriever: Any, tf_array: np.ndarray, l_d: np.ndarray, l_avg: float) -> np.ndarray:
        """The term-frequency part of each entry (bm25s' per-document formula of ``retriever.method``, given
        per-entry arrays)."""
        return self.scoring._select_tfc_scorer(retriever.method)(
            tf_array=tf_array, l_d=l_d, l_avg=l_avg, k1=retriever.k1, b=retriever.b, delta=retriever.delta
        )

    def csc(
        self, retriever: Any, data: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """bm25s' numpy CSC builder: ``(data, indices, indptr)`` of the (document x term) matrix."""
        return retriever._np_csc(data=data, rows=rows, cols=cols, shape=shape)


def bm25s_internals() -> Bm25sInternals | None:
    """bm25s' private helpers when this bm25s is a tested release and has every one of them; else None."""
    import bm25s
    from bm25s import scoring

    if not is_tested(getattr(bm25s, "__version__", "")):
        return None
    if not all(hasattr(scoring, name) for name in _SCORING) or not hasattr(bm25s.BM25, "_np_csc"):
        return None
    return Bm25sInternals(scoring)
