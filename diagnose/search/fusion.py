"""Fusing ranked runs: reciprocal rank fusion and weighted score fusion.

Conventions shared by both functions:

- Input runs are :class:`~diagnose.data.Run` objects; a run's ``rank`` column (1-based) is its ranking, its
  ``score`` column its scores. Each (query, doc) pair may appear at most once per run.
- A query is fused when at least one run has it; queries come out in order of first appearance
  (first run first).
- Fused scores are rounded to float32 precision (stored as float64), the precision trec_eval compares scores
  at. Output rows are ordered by fused score descending, ties by doc id descending (the order trec_eval sorts a
  run in, so the fused run evaluates the same in memory and after a round trip through a TREC file), and ranked
  1..n per query. ``depth`` keeps the first ``depth`` rows per query (``None``: all).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from diagnose import defaults
from diagnose.checks import finite_number, one_of, positive_int
from diagnose.data import DataError, Run
from diagnose.runtime.lazy import pandas as pd

NORMS = ("minmax", "zscore", "none")


def _stack(runs: Sequence[Run], columns: list[str]) -> pd.DataFrame:
    """All runs' rows with a ``run`` column (position in ``runs``); refuses duplicate (query, doc) pairs."""
    if isinstance(runs, Run):
        raise DataError("Pass a sequence of runs, e.g. [run_a, run_b].", param="runs")
    if len(runs) == 0:
        raise DataError("Fusion needs at least one run.", param="runs")
    frames = []
    for i, run in enumerate(runs):
        df = run.df[["query_id", "doc_id", *columns]]
        dup = df.duplicated(["query_id", "doc_id"])
        if dup.any():
            q, d = df.loc[dup, ["query_id", "doc_id"]].iloc[0]
            raise DataError(
                f"Run {run.name!r} lists document {d!r} more than once for query {q!r} "
                f"({int(dup.sum())} repeated pairs); each document may appear once per query."
            )
        frames.append(df.assign(run=i))
    return pd.concat(frames, ignore_index=True)


def _finish(fused: pd.DataFrame, query_order: np.ndarray, name: str, depth: int | None, source: str) -> Run:
    """Sort (query order, score desc, doc id desc), rank, cut at depth."""
    if depth is not None:
        positive_int(depth, "depth", note=" or None")
    # float32 precision, as trec_eval compares; "+ 0.0" turns -0.0 into 0.0
    score = fused["score"].to_numpy(dtype=np.float64).astype(np.float32).astype(np.float64) + 0.0
    fused = fused.assign(
        score=score, _q=pd.Categorical(fused["query_id"], categories=query_order, ordered=True)
    )
    fused = fused.sort_values(["_q", "score", "doc_id"], ascending=[True, False, False], kind="mergesort")
    rank = fused.groupby("_q", observed=True).cumcount().to_numpy() + 1
    fused = fused.assign(rank=rank.astype(np.int64))
    if depth is not None:
        fused = fused[fused["rank"] <= depth]
    df = pd.DataFrame(
        {
            "query_id": pd.Series(fused["query_id"].to_numpy(), dtype=object),
            "doc_id": pd.Series(fused["doc_id"].to_numpy(), dtype=object),
            "score": fused["score"].to_numpy(dtype=np.float64),
            "rank": fused["rank"].to_numpy(dtype=np.int64),
        }
    )
    return Run(name, df, source=source)


def rrf(
    runs: Sequence[Run], *, k: int = defaults.RRF_K, name: str = "hybrid", depth: int | None = None
) -> Run:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

    ``score(q, d) = sum over the runs r that retrieved d for q of 1 / (k + rank_r(q, d))``, with ``rank_r`` the
    run's 1-based ``rank`` column (scores are ignored) and ``k = 60`` as in the paper. A document missing from a
    run adds nothing for that run. Documents with the same ranks in a different order of runs tie (the float32
    rounding absorbs the float64 summation order), and then the doc id decides.
    """
    finite_number(k, "k", low=0, message="RRF k must be >= 0, got {value}.")
    stacked = _stack(runs, ["rank"])
    stacked["score"] = 1.0 / (k + stacked["rank"].to_numpy(dtype=np.float64))
    fused = stacked.groupby(["query_id", "doc_id"], sort=False, as_index=False)["score"].sum()
    names = "+".join(r.name for r in runs)
    return _finish(fused, pd.unique(stacked["query_id"]), name, depth, f"RRF(k={k}) of {names}")


def weighted_fusion(
    runs: Sequence[Run],
    weights: Sequence[float],
    *,
    norm: str = "minmax",
    name: str = "fused",
    depth: int | None = None,
) -> Run:
    """Weighted sum of per-query normalised scores (CombSUM with weights).

    ``score(q, d) = sum over runs r of weights[r] * norm_r(q, d)``, where ``norm_r(q, d)`` is d's score in run r
    normalised over run r's list for q, and 0 when r did not retrieve d for q. ``norm``:

    - ``"minmax"``: ``(s - min) / (max - min)``: the list's best document gets 1, its worst 0 (the same as a missing
      document). A list whose scores are all equal gets 0 everywhere (as ranx's ``min-max``).
    - ``"zscore"``: ``(s - mean) / std`` with the population std (ddof=0); a missing document's 0 then sits at the
      list's mean. A list whose scores are all equal gets 0 everywhere (as ranx's ``zmuv``).
    - ``"none"``: raw scores (only meaningful when the runs' scores share a scale).
    """
    one_of(norm, "norm", NORMS, message="Unknown norm {value!r}; choose one of " + ", ".join(NORMS) + ".")
    if isinstance(runs, Run):
        raise DataError("Pass a sequence of runs, e.g. [run_a, run_b].", param="runs")
    w = np.asarray(list(weights), dtype=np.float64)
    if len(w) != len(runs):
        raise DataError(
            f"weighted_fusion needs one weight per run: {len(w)} weights for {len(runs)} runs.",
            param="weights",
        )
    stacked = _stack(runs, ["score"])
    s = stacked["score"].to_numpy(dtype=np.float64)
    if norm != "none":
        g = stacked.groupby(["run", "query_id"], sort=False)["score"]
        lo = g.transform("min").to_numpy()
        span = g.transform("max").to_numpy() - lo  # exactly 0 for a constant list (a float std might not be)
        with np.errstate(invalid="ignore", divide="ignore"):
            if norm == "minmax":
                s = np.where(span > 0, (s - lo) / span, 0.0)
            else:
                mean = g.transform("mean").to_numpy()
                std = g.transform("std", ddof=0).to_numpy()  # population std
                s = np.where(span > 0, (s - mean) / std, 0.0)
    stacked["score"] = s * w[stacked["run"].to_numpy()]
    fused = stacked.groupby(["query_id", "doc_id"], sort=False, as_index=False)["score"].sum()
    names = "+".join(f"{wi:g}*{r.name}" for wi, r in zip(w, runs, strict=True))
    return _finish(fused, pd.unique(stacked["query_id"]), name, depth, f"weighted {norm} fusion of {names}")
