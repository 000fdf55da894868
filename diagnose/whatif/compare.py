"""Choosing between retrievers: per-query deltas, slices, reranking and what-if fusion.

Statistics (confidence intervals, paired tests, Holm) live in :mod:`diagnose.stats`; this module prepares what they
compare and answers the questions around them: which queries does B fix and which does it break, how do the runs
do per query group, how much did a reranker gain over its candidates' ceiling, and would fusing two runs recover
failures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from diagnose import defaults
from diagnose.checks import positive_int
from diagnose.data import DataError, Qrels, Queries, Run, fields_dict
from diagnose.metrics import Evaluation, evaluate, headline_metrics
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.fusion import rrf, weighted_fusion
from diagnose.whatif.gain import measure_gain


def per_query_deltas(
    reference: Evaluation, other: Evaluation, metric: str, *, tol: float = 1e-9
) -> pd.DataFrame:
    """One row per golden query: ``reference``, ``other``, ``delta = other - reference`` and ``change``
    ("fixed": the reference scored 0 and the other > 0; "broken": the reverse; "better"/"worse"/"same")."""
    a = reference.per_query[metric]
    b = other.per_query[metric].reindex(a.index).fillna(0.0)
    df = pd.DataFrame({"query_id": a.index, "reference": a.to_numpy(), "other": b.to_numpy()})
    df["delta"] = df["other"] - df["reference"]
    change = pd.Series("same", index=df.index)
    change[df["delta"] > tol] = "better"
    change[df["delta"] < -tol] = "worse"
    change[(df["reference"] <= tol) & (df["other"] > tol)] = "fixed"
    change[(df["reference"] > tol) & (df["other"] <= tol)] = "broken"
    df["change"] = change
    return df.sort_values("delta", kind="stable").reset_index(drop=True)


def slice_metrics(evaluations: Mapping[str, Evaluation], queries: Queries, field: str) -> pd.DataFrame:
    """Mean of every metric per run and per value of the query metadata ``field`` (e.g. topic or type).

    Queries without a value for the field fall in the group ``"(none)"``; the ``n`` column says how many golden
    queries each group holds, so a mean over three queries is read as such.
    """
    group = _field_values(queries, field).astype("string").fillna("(none)")
    frames = []
    for name, ev in evaluations.items():
        pq = ev.per_query.copy()
        pq["group"] = group.reindex(pq.index).fillna("(none)").to_numpy()
        agg = pq.groupby("group", sort=True).mean(numeric_only=True)
        agg.insert(0, "n", pq.groupby("group", sort=True).size())
        agg.insert(0, "run", name)
        frames.append(agg.reset_index().rename(columns={"group": field}))
    return pd.concat(frames, ignore_index=True)


def _field_values(queries: Queries, field: str) -> pd.Series:
    """Query id -> the value of a metadata field: a column, or ``column.key`` inside an object the reader kept as
    JSON text because it has too many fields (``diagnose.io.MAX_OBJECT_FIELDS``)."""
    df = queries.df.set_index("query_id")
    if field in df.columns:
        return df[field]
    column, _, key = field.partition(".")
    if key and column in df.columns:
        import json

        def pick(text: object) -> object:
            if not isinstance(text, str):
                return None
            value: object = json.loads(text)
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return json.dumps(value) if isinstance(value, dict | list) else value

        return df[column].map(pick)
    fields = [c for c in df.columns if c != "text"]
    raise DataError(
        f"The queries have no metadata field {field!r}. Available: {', '.join(fields) or 'none'} (a field inside "
        'an object kept whole: OBJECT.KEY). Add it to the queries file (BEIR: "metadata": {...}).',
        param="slice_by",
    )


@dataclass(frozen=True)
class RerankReport:
    """A reranker judged against its candidates."""

    k: int
    depth: int
    ceiling: float  # recall@depth of the candidates: no reranker of them can do better
    before: dict[str, float]
    after: dict[str, float]
    recovered: list[str]  # queries that fail at k before and succeed after (a Gain's recovered)
    introduced: list[str]  # queries that succeed before and fail after (a Gain's broken)

    def to_dict(self) -> dict:
        return fields_dict(self, rename={"ceiling": "ceiling_recall"})


def rerank_report(
    qrels: Qrels, candidates: Run, reranked: Run, *, k: int = defaults.K, depth: int = defaults.DEPTH
) -> RerankReport:
    """Recall@depth of the candidates (the ceiling), nDCG@k and MRR before and after, failures recovered/introduced."""
    # the ceiling (recall at the depth reranked), then the headline metrics in the order of the rerank report's
    # before/after rows and JSON keys since its first release (mrr second: what a reranker moves most), kept
    metrics = [f"recall@{depth}", f"ndcg@{k}", "mrr", f"hit_rate@{k}", f"recall@{k}"]
    before = evaluate(qrels, candidates, metrics)
    after = evaluate(qrels, reranked, metrics)
    gain = measure_gain(k, "hit", base_per_query=before.per_query, candidate_per_query=after.per_query)
    return RerankReport(
        k=k,
        depth=depth,
        ceiling=float(before.aggregate[f"recall@{depth}"]),
        before={m: float(before.aggregate[m]) for m in metrics[1:]},
        after={m: float(after.aggregate[m]) for m in metrics[1:]},
        recovered=list(gain.recovered),
        introduced=list(gain.broken),
    )


def rerank_cross_encoder(
    run: Run,
    query_text: Mapping[str, str],
    doc_text: Mapping[str, str],
    model: str,
    *,
    depth: int = defaults.DEPTH,
    batch_size: int = 32,
    progress: bool = False,
) -> Run:
    """Rerank the top ``depth`` of ``run`` live with a sentence-transformers CrossEncoder (name or local folder);
    ``depth`` and ``batch_size`` positive integers (``DataError`` naming them otherwise)."""
    from pathlib import Path

    depth = positive_int(depth, "depth")
    batch_size = positive_int(batch_size, "batch_size", note=" (pairs per forward pass)")
    from diagnose.embed import hub_offline, hub_reachable

    hint = "Pass a local folder with a sentence-transformers CrossEncoder, or a hub name when the machine is online."
    local = Path(model).expanduser().is_dir()
    if not local and (hub_offline() or not hub_reachable()):
        # without this check sentence-transformers retries an unreachable hub for about 70 s before failing
        raise DataError(
            f"Could not load the cross-encoder {model!r}: no such folder, and the hub is unreachable. {hint}"
        )
    try:
        from sentence_transformers import CrossEncoder

        ce = CrossEncoder(model, device="cpu", local_files_only=local)
    except Exception as e:  # noqa: BLE001 - any loading failure is the user's model choice
        raise DataError(
            f"Could not load the cross-encoder {model!r}: {type(e).__name__}: {e}. {hint}"
        ) from None
    top = run.top(depth)
    pairs = [
        (query_text.get(q, ""), doc_text.get(d, ""))
        for q, d in zip(top["query_id"], top["doc_id"], strict=True)
    ]
    scores = ce.predict(pairs, batch_size=batch_size, show_progress_bar=progress)
    df = top[["query_id", "doc_id"]].copy()
    df["score"] = pd.Series(scores, index=df.index).astype("float64")
    lists: dict[str, list[tuple[str, float]]] = {}
    for q, g in df.groupby("query_id", sort=False):
        g = g.sort_values(["score", "doc_id"], ascending=[False, False], kind="stable")
        lists[q] = list(zip(g["doc_id"], g["score"], strict=True))
    return Run.from_ranked_lists(f"{run.name}+rerank", lists)


def fusion_whatif(
    qrels: Qrels,
    runs: Sequence[Run],
    *,
    k: int = defaults.K,
    weights: Sequence[float] = (0.3, 0.5, 0.7),
    rrf_k: int = defaults.RRF_K,
) -> pd.DataFrame:
    """What if two runs were fused? RRF and weighted min-max score fusion at several weights, each with its
    metrics and how many of each input's failures at k it would recover (and how many successes it would lose)."""
    if len(runs) != 2:
        raise DataError("What-if fusion takes exactly two runs.")
    a, b = runs
    metrics = headline_metrics(k)
    base = {r.name: evaluate(qrels, r, metrics) for r in runs}
    candidates: list[tuple[str, Run]] = [(f"rrf(k={rrf_k})", rrf([a, b], k=rrf_k, name="rrf"))]
    for w in weights:
        candidates.append(
            (
                f"weighted {a.name}={1 - w:.1f} {b.name}={w:.1f}",
                weighted_fusion([a, b], [1 - w, w], norm="minmax"),
            )
        )
    rows = []
    for label, fused in candidates:
        ev = evaluate(qrels, fused, metrics)
        row = {"fusion": label, **{m: float(ev.aggregate[m]) for m in metrics}}
        for r in runs:
            gain = measure_gain(
                k, "hit", base_per_query=base[r.name].per_query, candidate_per_query=ev.per_query
            )
            row[f"recovers_{r.name}"] = len(gain.recovered)
            row[f"loses_{r.name}"] = len(gain.broken)
        rows.append(row)
    return pd.DataFrame(rows)
