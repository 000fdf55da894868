"""What a metadata filter costs: recall@k with and without it, side by side, per query and overall.

Four runs, each scored by :func:`diagnose.metrics.evaluate`'s ``recall@k`` (relevant documents of grade > 0 in the
top k / relevant documents; a golden query missing from a run scores 0; the mean over golden queries):

- ``run``: the run as given (when the production search already applied the filter, the run *with* it);
- ``run_filtered``: the run's lists with the documents the query's filter excludes taken out (:func:`apply_filter`;
  equal to ``run`` when the run was filtered already);
- ``dense``: exact dense search over the whole corpus, without the filter (the dense baseline);
- ``dense_filtered``: exact dense search over the documents the filter lets through (:func:`filtered_dense_run`:
  pre-filtering, exact, so k documents whenever k pass the filter).

Per query also ``n_relevant`` (grade > 0) and ``n_filtered_out`` (relevant documents the filter excludes): the
filter's ceiling is ``1 - n_filtered_out / n_relevant``, whatever the retriever. ``relevant_allowed``: the share of
the golden set's relevant (query, document) pairs the filter lets through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from diagnose.data import Qrels, Run, fields_dict
from diagnose.embed.search import dense_search
from diagnose.io.filters.conditions import QueryFilters
from diagnose.io.messages import plural_of
from diagnose.metrics import evaluate
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.baselines import topk_run
from diagnose.search.space import VectorSpace

#: The runs of :class:`FilterRecall`, in the order of its tables.
RUNS = ("run", "run_filtered", "dense", "dense_filtered")


def apply_filter(run: Run, filters: QueryFilters, *, name: str | None = None) -> Run:
    """``run`` with each filtered query's excluded documents taken out and the rest re-ranked 1..n in order
    (scores kept); unfiltered queries keep their lists. ``name`` defaults to ``"<run> (filtered)"``."""
    df = run.df
    keep = np.fromiter(
        (
            not filters.excludes(q, d)
            for q, d in zip(df["query_id"].tolist(), df["doc_id"].tolist(), strict=True)
        ),
        dtype=bool,
        count=len(df),
    )
    out = df[keep].copy()
    out["rank"] = out.groupby("query_id", sort=False).cumcount().to_numpy(dtype=np.int64) + 1
    return Run(
        name or f"{run.name} (filtered)", out.reset_index(drop=True), source=f"{run.name}, {filters.source}"
    )


def filtered_dense_run(
    space: VectorSpace,
    filters: QueryFilters,
    query_ids: Sequence[str],
    *,
    depth: int,
    name: str = "dense (filtered)",
) -> Run:
    """Exact dense search of ``query_ids`` (those with a vector) over the documents each query's filter lets
    through (all documents for a query without a filter): the top ``depth`` by cosine, ties by doc id descending
    (:func:`~diagnose.search.baselines.topk_run`). Queries sharing a filter are searched together; a query whose filter
    lets fewer than ``depth`` documents through gets them all."""
    qids = [q for q in query_ids if q in space.query_row]
    groups: dict[Any, list[str]] = {}
    for q in qids:
        groups.setdefault(filters.conditions.get(q) or None, []).append(q)
    runs = []
    for conds, members in groups.items():
        rows = np.arange(len(space.doc_ids)) if conds is None else _doc_rows(space, filters, members[0])
        qv = space.query_vecs[[space.query_row[q] for q in members]]
        if len(rows) == 0:
            continue
        idx, scores = dense_search(qv, space.doc_vecs[rows], depth)
        runs.append(
            topk_run(name, rows[idx], scores, space.doc_ids, np.asarray(members, dtype=object), source="")
        )
    order = {q: i for i, q in enumerate(qids)}
    df = pd.concat([r.df for r in runs], ignore_index=True) if runs else Run.from_ranked_lists(name, {}).df
    df = df.sort_values("query_id", key=lambda s: s.map(order), kind="mergesort").reset_index(drop=True)
    return Run(name, df, source=f"exact dense search, {filters.source}")


def _doc_rows(space: VectorSpace, filters: QueryFilters, query_id: str) -> np.ndarray:
    """The space's document rows the query's filter lets through."""
    mask = filters.mask(query_id)
    allowed = [d for d, row in filters.doc_row.items() if mask[row]]
    return np.array(sorted(space.doc_row[d] for d in allowed if d in space.doc_row), dtype=np.int64)


@dataclass(frozen=True)
class FilterRecall:
    """recall@k with and without the filter (module docstring): ``per_query`` (one row per golden query:
    ``query_id``, ``filter``, ``n_relevant``, ``n_filtered_out`` and one column per run of :data:`RUNS`),
    ``overall`` (run -> mean recall@k), ``relevant_allowed``."""

    k: int
    run: str
    source: str
    per_query: pd.DataFrame
    overall: dict[str, float]
    relevant_allowed: float
    n_filtered_queries: int

    def sentence(self) -> str:
        o = self.overall
        return (
            f"Metadata filter ({self.source}) on "
            f"{plural_of(self.n_filtered_queries, 'golden query', 'golden queries')}: it lets {self.relevant_allowed:.1%} of the relevant "
            f"documents through. recall@{self.k}: {self.run} {o['run']:.4f}, with the filter applied "
            f"{o['run_filtered']:.4f}; exact dense search without the filter {o['dense']:.4f}, with it "
            f"{o['dense_filtered']:.4f}."
        )

    def changed(self) -> pd.DataFrame:
        """The golden queries the filter changes (a relevant document filtered out, or a recall that differs with
        the filter), with the columns a report shows: ``query_id``, ``n_relevant``, ``n_filtered_out``, one per run
        of :data:`RUNS`, ``filter``."""
        pq = self.per_query
        changed = pq[
            (pq["n_filtered_out"] > 0)
            | (pq["run"] != pq["run_filtered"])
            | (pq["dense"] != pq["dense_filtered"])
        ]
        return changed[["query_id", "n_relevant", "n_filtered_out", *RUNS, "filter"]]

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, "k", "run", "source", "relevant_allowed", "n_filtered_queries"),
            "metric": f"recall@{self.k}",
            "overall": dict(self.overall),
            "per_query": self.per_query.to_dict(orient="records"),
            "sentence": self.sentence(),
        }


def filter_recall(
    qrels: Qrels, filters: QueryFilters, k: int, *, run: Run, dense: Run, dense_filtered: Run
) -> FilterRecall:
    """:class:`FilterRecall` of ``run`` (``dense``: exact dense search without the filter, ``dense_filtered``: with
    it, :func:`filtered_dense_run`)."""
    metric = f"recall@{k}"
    rel = qrels.relevant()
    golden = list(pd.unique(rel["query_id"]))
    runs = {
        "run": run,
        "run_filtered": apply_filter(run, filters),
        "dense": dense,
        "dense_filtered": dense_filtered,
    }
    scores = {
        key: evaluate(qrels, r, [metric]).per_query[metric].reindex(golden, fill_value=0.0)
        for key, r in runs.items()
    }
    out = np.fromiter(
        (
            filters.excludes(q, d)
            for q, d in zip(rel["query_id"].tolist(), rel["doc_id"].tolist(), strict=True)
        ),
        dtype=bool,
        count=len(rel),
    )
    per_query = pd.DataFrame(
        {
            "query_id": golden,
            "filter": [filters.text(q) for q in golden],
            "n_relevant": rel.groupby("query_id").size().reindex(golden).to_numpy(dtype=np.int64),
            "n_filtered_out": pd.Series(out, index=rel["query_id"])
            .groupby(level=0)
            .sum()
            .reindex(golden)
            .to_numpy(),
            **{key: s.to_numpy(dtype=float) for key, s in scores.items()},
        }
    )
    return FilterRecall(
        k=k,
        run=run.name,
        source=filters.source,
        per_query=per_query,
        overall={key: float(s.mean()) for key, s in scores.items()},
        relevant_allowed=float(1 - out.mean()) if len(out) else 1.0,
        n_filtered_queries=sum(1 for q in golden if filters.text(q)),
    )
