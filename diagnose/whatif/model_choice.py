"""Which embedding model for this golden set?

For each model: exact dense retrieval over the whole corpus, the golden set's metrics with 95% bootstrap confidence
intervals, a paired randomization test against the best model (Holm-corrected; models the data cannot tell apart
from the best share rank 1), encoding throughput on this machine, vector size, index memory, the calibrated
similarity threshold, failure-class counts, hubness (skewness of the k-occurrence of the model's dense run), and
recall per millisecond of search.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from diagnose import defaults
from diagnose.data import DataError, Dataset
from diagnose.failures import CLASSES, Diagnosis, EvidenceSources, diagnose_run, hubness
from diagnose.metrics import Evaluation, evaluate, headline_metrics
from diagnose.metrics.identical import drop_identical_ids
from diagnose.runtime.lazy import pandas as pd
from diagnose.search import baselines
from diagnose.search.space import VectorSpace
from diagnose.stats import bootstrap_ci, rank_with_ties

THROUGHPUT_SAMPLE = 64


@dataclass
class ModelResult:
    name: str
    model_id: str
    dim: int
    docs_per_second: float
    index_mb: float
    ms_per_query: float
    evaluation: Evaluation
    ci: dict[str, tuple[float, float]]
    diagnosis: Diagnosis
    hub_skewness: float = 0.0

    def row(self, metric: str, k: int) -> dict:
        recall = self.evaluation.aggregate[f"recall@{k}"]
        row = {
            "model": self.name,
            metric: self.evaluation.aggregate[metric],
            "ci_low": self.ci[metric][0],
            "ci_high": self.ci[metric][1],
            f"recall@{k}": recall,
            "dim": self.dim,
            "docs_per_s": self.docs_per_second,
            "index_mb": self.index_mb,
            "ms_per_query": self.ms_per_query,
            f"recall@{k}_per_ms": recall / self.ms_per_query if self.ms_per_query > 0 else float("nan"),
            "calibrated_threshold": self.diagnosis.calibration.calibrated,
            f"hubness_skew@{k}": self.hub_skewness,
        }
        row.update({f"n_{c}": n for c, n in self.diagnosis.class_counts.items()})
        return row


@dataclass
class ModelComparison:
    metric: str
    k: int
    results: list[ModelResult]
    ranking: list = field(default_factory=list)  # stats.RankedModel rows

    def table(self) -> pd.DataFrame:
        by_name = {r.name: r for r in self.results}
        rows = []
        for rm in self.ranking:
            row = {
                "rank": rm.rank,
                "tied_with_best": rm.tied_with_best,
                **by_name[rm.name].row(self.metric, self.k),
            }
            rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        t = self.table()
        return {
            "metric": self.metric,
            "k": self.k,
            "models": t.replace({np.nan: None}).to_dict(orient="records"),
            "class_ids": list(CLASSES),
        }


def _time_encode(encoder, texts: Sequence[str]) -> float:
    """Documents per second of a bare ``encoder.encode`` on a fixed sample (after one warm-up batch)."""
    sample = list(texts[:THROUGHPUT_SAMPLE]) or ["empty"]
    encoder.encode(sample[:4])
    t0 = time.perf_counter()
    encoder.encode(sample)
    dt = time.perf_counter() - t0
    return len(sample) / dt if dt > 0 else float("inf")


def _model_result(
    ds: Dataset,
    golden: Sequence[str],
    name: str,
    encoder,
    space: VectorSpace,
    texts: Sequence[str],
    *,
    bm25,
    k: int,
    metrics: list[str],
    depth: int,
    n_resamples: int,
    seed: int,
    ignore_identical_ids: bool = False,
) -> ModelResult:
    """One model: its exact dense run timed, evaluated with bootstrap CIs, diagnosed, its throughput and hubness."""

    t0 = time.perf_counter()
    run = baselines.dense_run(
        space.doc_vecs,
        space.query_vecs,
        space.doc_ids,
        space.query_ids,
        depth=depth + 1 if ignore_identical_ids else depth,
        name=name,
    )
    if ignore_identical_ids:
        run = drop_identical_ids(run, depth=depth)
    ms = (time.perf_counter() - t0) * 1000 / max(len(golden), 1)
    ev = evaluate(ds.qrels, run, metrics)
    ci = {m: bootstrap_ci(ev.per_query[m].to_numpy(), n_resamples=n_resamples, seed=seed) for m in metrics}
    diag = diagnose_run(
        ds, run, space, bm25, k=k, sources=EvidenceSources(without_query_doc=ignore_identical_ids)
    )
    return ModelResult(
        name=name,
        model_id=space.model,
        dim=space.dim,
        docs_per_second=_time_encode(encoder, texts),
        index_mb=space.doc_vecs.shape[0] * space.dim * 4 / 1e6,
        ms_per_query=ms,
        evaluation=ev,
        ci=ci,
        diagnosis=diag,
        hub_skewness=hubness(run, k=k, n_docs=len(ds.corpus)).skewness,
    )


def compare_models(
    ds: Dataset,
    golden: Sequence[str],
    encoders: Sequence,
    spaces: Sequence[VectorSpace],
    *,
    bm25,
    k: int = defaults.K,
    metric: str | None = None,
    depth: int = defaults.DEPTH,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
    ignore_identical_ids: bool = False,
) -> ModelComparison:
    """Evaluate each encoder's exact dense run on the golden set and rank the models.

    ``encoders`` (objects with ``name``/``encode``, optionally ``label``) and their ``spaces`` (the corpus and the
    ``golden`` queries embedded by each, e.g. ``Analysis.space_for(encoder)``) come from the caller, as does
    ``bm25`` (the BM25 index of the corpus, for the failure classes): this function only scores. A model is called
    by its ``label`` (else its ``name``). Throughput is measured on a fixed sample of the corpus with a bare
    ``encode`` (no cache), so it is comparable between models even when the vectors came from the cache.
    ``ignore_identical_ids``: each run searched one deeper, without the document whose id is the query's
    (:func:`~diagnose.metrics.identical.drop_identical_ids`), and diagnosed so.
    """

    if ds.corpus is None or ds.queries is None:
        raise DataError("Comparing models needs the corpus and the queries.", param="corpus")
    if len(spaces) != len(encoders):
        raise ValueError(f"{len(spaces)} vector spaces for {len(encoders)} models")
    metric = metric or f"ndcg@{k}"
    metrics = list(dict.fromkeys([metric, *headline_metrics(k)]))
    names = [str(getattr(e, "label", "") or e.name) for e in encoders]
    if len(set(names)) != len(names):
        raise DataError(f"The same model is given twice: {names}.", param="models")
    texts = ds.corpus.texts()
    results = [
        _model_result(
            ds,
            golden,
            name,
            enc,
            space,
            texts,
            bm25=bm25,
            k=k,
            metrics=metrics,
            depth=depth,
            n_resamples=n_resamples,
            seed=seed,
            ignore_identical_ids=ignore_identical_ids,
        )
        for name, enc, space in zip(names, encoders, spaces, strict=True)
    ]
    ranking = rank_with_ties(
        {r.name: r.evaluation.per_query for r in results}, metric, n_resamples=n_resamples, seed=seed
    )
    return ModelComparison(metric, k, results, ranking)
