"""What must be on the map, and the seeded sample around it: :class:`FailedQuery`, :func:`failed_queries_from`,
:func:`must_keep`, :class:`MapSample`, :func:`sample_for_map`, :func:`stack_vectors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from diagnose.checks import integer_at_least
from diagnose.data import DataError

DEFAULT_CAP = 4000
#: Altair's default ``MaxRowsError`` limit; we sample below it rather than lifting it.
ALTAIR_MAX_ROWS = 5000


# ---------------------------------------------------------------------------------------------------------------
# What must be on the map
# ---------------------------------------------------------------------------------------------------------------


class FailedQuery(NamedTuple):
    """A failed query and the documents the map must show and link to it.

    ``targets`` are the relevant documents it missed (in the order given), ``retrieved`` the run's top-k in rank
    order (``retrieved[0]`` gets the "top retrieved" edge), ``failure_class`` one class id for the query as a whole.
    """

    query_id: str
    failure_class: str
    targets: tuple[str, ...]
    retrieved: tuple[str, ...]


def failed_queries_from(
    failures: Iterable[Any], run_lists: Mapping[str, Sequence[str]], k: int
) -> list[FailedQuery]:
    """Group per-(query, target) failures into one :class:`FailedQuery` per query.

    ``failures``: objects with ``query_id``, ``doc_id`` (the missed target) and ``cls`` (the class id), such as
    :class:`diagnose.failures.Failure`. ``run_lists``: ``{query_id: [doc_id, ...]}`` in rank order
    (``Run.ranked_lists()``); the first ``k`` become ``retrieved``.

    A query with several targets of different classes gets its most frequent class; a tie goes to the class of its
    first failure in the order given (the taxonomy's rule order when the failures come from ``diagnose_run``).
    """
    by_query: dict[str, list[Any]] = {}
    for f in failures:
        by_query.setdefault(str(f.query_id), []).append(f)
    out: list[FailedQuery] = []
    for qid, fs in by_query.items():
        counts: dict[str, int] = {}
        for f in fs:
            counts[str(f.cls)] = counts.get(str(f.cls), 0) + 1
        best = max(counts.values())
        cls = next(str(f.cls) for f in fs if counts[str(f.cls)] == best)
        targets = tuple(dict.fromkeys(str(f.doc_id) for f in fs))
        retrieved = tuple(str(d) for d in list(run_lists.get(qid, ()))[: max(k, 0)])
        out.append(FailedQuery(qid, cls, targets, retrieved))
    return out


def must_keep(failed: Iterable[FailedQuery]) -> tuple[set[str], set[str]]:
    """``(must_docs, must_queries)``: every failed query, its targets and its top-k retrieved documents."""
    docs: set[str] = set()
    queries: set[str] = set()
    for f in failed:
        queries.add(f.query_id)
        docs.update(f.targets)
        docs.update(f.retrieved)
    return docs, queries


# ---------------------------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MapSample:
    """Rows chosen for the map. Unpacks as ``doc_rows, query_rows = sample``.

    ``doc_rows`` / ``query_rows``: int64 positions into the ``doc_ids`` / ``query_ids`` given, ascending.
    ``n_docs`` / ``n_queries``: how many there were in all. ``n_must_docs`` / ``n_must_queries``: how many were kept
    because they had to be. ``unplaced_docs`` / ``unplaced_queries``: must-keep ids that are not among the ids given
    (e.g. a target missing from the corpus, the ``missing_document`` class): they cannot be drawn and are listed here
    rather than dropped silently. When the must-keep rows alone exceed ``cap`` they are all kept anyway
    (``over_cap``), and the caller decides (a smaller k, fewer failed queries).
    """

    doc_rows: np.ndarray
    query_rows: np.ndarray
    n_docs: int
    n_queries: int
    n_must_docs: int
    n_must_queries: int
    cap: int
    seed: int
    unplaced_docs: tuple[str, ...] = ()
    unplaced_queries: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self.doc_rows
        yield self.query_rows

    @property
    def n_points(self) -> int:
        return len(self.doc_rows) + len(self.query_rows)

    @property
    def over_cap(self) -> bool:
        return self.n_points > self.cap

    @property
    def sampled(self) -> bool:
        """True when some rows were left out."""
        return len(self.doc_rows) < self.n_docs or len(self.query_rows) < self.n_queries

    def caption(self) -> str:
        """E.g. ``"Showing 3,677 of 50,000 documents and 323 of 323 queries (...)"``."""
        text = (
            f"Showing {len(self.doc_rows):,} of {self.n_docs:,} documents and "
            f"{len(self.query_rows):,} of {self.n_queries:,} queries"
        )
        if self.sampled:
            text += (
                f" (every failed query, its targets and its top-k retrieved documents are shown: "
                f"{self.n_must_queries:,} queries and {self.n_must_docs:,} documents; the others are a random "
                f"sample, seed {self.seed}, up to {self.cap:,} points)"
            )
        if self.unplaced_docs:
            text += f"; {len(self.unplaced_docs):,} target/retrieved ids are not in the corpus and cannot be drawn"
        return text + "."


def _allocate(budget: int, rest_docs: int, rest_queries: int) -> tuple[int, int]:
    """Split ``budget`` between the two pools in proportion to their sizes (largest remainder, docs first)."""
    total = rest_docs + rest_queries
    if budget >= total:
        return rest_docs, rest_queries
    if budget <= 0 or total == 0:
        return 0, 0
    nq = int(budget * rest_queries // total)
    nd = int(budget * rest_docs // total)
    left = budget - nq - nd  # 0 or 1
    if left:
        if budget * rest_docs % total >= budget * rest_queries % total and nd < rest_docs:
            nd += left
        else:
            nq += left
    return min(nd, rest_docs), min(nq, rest_queries)


def sample_for_map(
    doc_ids: Sequence[str],
    query_ids: Sequence[str],
    *,
    must_docs: Iterable[str] = (),
    must_queries: Iterable[str] = (),
    cap: int = DEFAULT_CAP,
    seed: int = 0,
) -> MapSample:
    """Choose at most ``cap`` points (documents + queries) for the map, always keeping the must-keep ids.

    The must-keep rows come first; the remaining budget ``cap - must`` is split between the other documents and
    the other queries in proportion to how many there are (so the sample keeps the corpus's mix), and each pool is
    sampled uniformly without replacement with ``numpy.random.default_rng(seed)``. Same inputs and seed => same rows.
    An id listed in ``doc_ids`` several times is kept or dropped as a whole. Returns a :class:`MapSample` (which
    unpacks as ``(doc_rows, query_rows)``).
    """
    cap = integer_at_least(cap, "cap", 0)
    d_ids = np.asarray(list(doc_ids), dtype=object)
    q_ids = np.asarray(list(query_ids), dtype=object)
    must_d = {str(x) for x in must_docs}
    must_q = {str(x) for x in must_queries}
    d_mask = np.fromiter((d in must_d for d in d_ids), dtype=bool, count=len(d_ids))
    q_mask = np.fromiter((q in must_q for q in q_ids), dtype=bool, count=len(q_ids))
    unplaced_d = tuple(sorted(must_d - set(d_ids.tolist())))
    unplaced_q = tuple(sorted(must_q - set(q_ids.tolist())))

    must_rows_d = np.flatnonzero(d_mask)
    must_rows_q = np.flatnonzero(q_mask)
    rest_d = np.flatnonzero(~d_mask)
    rest_q = np.flatnonzero(~q_mask)
    budget = cap - len(must_rows_d) - len(must_rows_q)
    nd, nq = _allocate(budget, len(rest_d), len(rest_q))
    rng = np.random.default_rng(seed)
    pick_d = rng.choice(rest_d, size=nd, replace=False) if nd < len(rest_d) else rest_d
    pick_q = rng.choice(rest_q, size=nq, replace=False) if nq < len(rest_q) else rest_q
    return MapSample(
        doc_rows=np.sort(np.concatenate([must_rows_d, pick_d]).astype(np.int64)),
        query_rows=np.sort(np.concatenate([must_rows_q, pick_q]).astype(np.int64)),
        n_docs=len(d_ids),
        n_queries=len(q_ids),
        n_must_docs=len(must_rows_d),
        n_must_queries=len(must_rows_q),
        cap=int(cap),
        seed=int(seed),
        unplaced_docs=unplaced_d,
        unplaced_queries=unplaced_q,
    )


def stack_vectors(sample: MapSample, doc_vecs: np.ndarray, query_vecs: np.ndarray) -> np.ndarray:
    """The matrix :func:`project` expects for ``sample``: sampled document rows first, then sampled query rows."""
    d = np.asarray(doc_vecs)[sample.doc_rows]
    q = np.asarray(query_vecs)[sample.query_rows]
    if d.shape[1:] != q.shape[1:]:
        raise DataError(
            f"Document vectors have {d.shape[1:]} dimensions and query vectors {q.shape[1:]}: they must come from the "
            "same model (same --model, or precomputed files from the same index)."
        )
    return np.concatenate([d, q]).astype(np.float32, copy=False)
