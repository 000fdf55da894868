"""Sample, project and tabulate in one call: :class:`EmbeddingMap`, :func:`build_map` (the sampled map),
:func:`project_collection` and :func:`build_whole_map` (every document and query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from diagnose.projection.frames import map_edges, map_frame
from diagnose.projection.layout import LARGE_N, Projection, project, recipe_for
from diagnose.projection.sampling import (
    DEFAULT_CAP,
    FailedQuery,
    MapSample,
    must_keep,
    sample_for_map,
    stack_vectors,
)
from diagnose.runtime.lazy import pandas as pd


@dataclass(frozen=True)
class EmbeddingMap:
    """Everything the map page needs: the two tables, the sample (for the caption) and the projection."""

    points: pd.DataFrame
    edges: pd.DataFrame
    sample: MapSample
    projection: Projection


def _check_aligned(what: str, ids: Sequence[str], texts: Sequence[str], vecs: np.ndarray) -> None:
    """``ValueError`` unless there are as many ``ids`` as ``texts`` and rows of ``vecs`` (``what``: doc, query)."""
    if len(ids) != len(vecs) or len(ids) != len(texts):
        raise ValueError(
            f"{len(ids)} {what} ids, {len(texts)} texts and {len(vecs)} vectors: must be aligned"
        )


def build_map(
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    doc_vecs: np.ndarray,
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    query_vecs: np.ndarray,
    failed: Sequence[FailedQuery] = (),
    cap: int = DEFAULT_CAP,
    sample_seed: int = 0,
    **layout: Any,
) -> EmbeddingMap:
    """Sample, project, and tabulate in one call (see the module docstring for each step).

    The ``doc_*`` and ``query_*`` sequences are aligned (row i of ``doc_vecs`` is ``doc_ids[i]``), e.g. a
    :class:`diagnose.search.space.VectorSpace`'s ids and vectors with the matching texts. ``layout`` goes to
    :func:`project` as in :func:`project_collection` (``n_neighbors``, ``min_dist``, ``seed``, ``cache_dir``,
    ``use_cache``, ``progress``, ``report``, ``recipe``; the same defaults).
    """
    _check_aligned("doc", doc_ids, doc_texts, doc_vecs)
    _check_aligned("query", query_ids, query_texts, query_vecs)
    must_d, must_q = must_keep(failed)
    sample = sample_for_map(
        doc_ids, query_ids, must_docs=must_d, must_queries=must_q, cap=cap, seed=sample_seed
    )
    vecs = stack_vectors(sample, doc_vecs, query_vecs)
    proj = project(vecs, **layout)
    points = map_frame(
        proj.coords,
        sample,
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        query_ids=query_ids,
        query_texts=query_texts,
        failed=failed,
    )
    return EmbeddingMap(points=points, edges=map_edges(points, failed), sample=sample, projection=proj)


def project_collection(
    doc_vecs: np.ndarray, query_vecs: np.ndarray, *, large_n: int = LARGE_N, **kwargs: Any
) -> Projection:
    """:func:`project` of every document and then every query (the rows :func:`build_whole_map` draws), with
    :func:`recipe_for` their number (``large_n``: where the large recipe starts). ``kwargs`` go to :func:`project`
    (``cache_dir``, ``progress``, ``report``...). Minutes for 100k points on 2 cores the first time, then read from
    the coordinate cache (same vectors, same parameters => same key, whichever run is diagnosed)."""
    d, q = np.asarray(doc_vecs), np.asarray(query_vecs)
    sample = sample_for_map(range(len(d)), range(len(q)), cap=len(d) + len(q))
    vecs = stack_vectors(sample, d, q)
    kwargs.setdefault("recipe", recipe_for(len(vecs), large_n=large_n))
    return project(vecs, **kwargs)


def build_whole_map(
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    doc_vecs: np.ndarray,
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    query_vecs: np.ndarray,
    failed: Sequence[FailedQuery] = (),
    projected: Projection | None = None,
    **kwargs: Any,
) -> EmbeddingMap:
    """The map of *every* document and query (no sampling), for the deck.gl chart
    (:func:`diagnose.charts.deck.embedding_deck`). ``projected``: the :func:`project_collection` of these vectors when
    already computed (the app computes it once per data and model, in a background thread); else it is computed
    here with ``kwargs``. Unplaced must-keep ids (targets missing from the corpus) are listed in the sample as in
    :func:`build_map`."""
    _check_aligned("doc", doc_ids, doc_texts, doc_vecs)
    _check_aligned("query", query_ids, query_texts, query_vecs)
    must_d, must_q = must_keep(failed)
    n = len(doc_ids) + len(query_ids)
    sample = sample_for_map(doc_ids, query_ids, must_docs=must_d, must_queries=must_q, cap=n)
    proj = projected if projected is not None else project_collection(doc_vecs, query_vecs, **kwargs)
    if proj.coords.shape != (n, 2):
        raise ValueError(f"projected has {len(proj.coords)} points, expected {n} (every document and query)")
    points = map_frame(
        proj.coords,
        sample,
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        query_ids=query_ids,
        query_texts=query_texts,
        failed=failed,
    )
    return EmbeddingMap(points=points, edges=map_edges(points, failed), sample=sample, projection=proj)
