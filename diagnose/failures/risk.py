"""Label-free failure risk: which unjudged production queries to judge first, from the run's scores alone.

A retriever that is unsure spreads its scores flat: the best document barely beats the next ones. For every query
of a run (judged or not), :func:`failure_risk` reads the scores of its top k and ranks the queries from riskiest to
safest; :func:`validate_risk` measures on the golden queries how well that ranking finds the queries that fail at k,
so a team knows how far to trust it before spending judgement time.

Features (per query, from the run's top ``k`` rows in rank order, ``s_1 >= s_2 >= ...``):

- ``top1``: ``z(s_1)``; ``gap12``: ``z(s_1) - z(s_2)`` (NaN when the run returned one document);
  ``spread``: the population standard deviation of ``z(s_1..s_k)`` (0 for one document); ``mean_k``: their mean.
  ``z`` normalises per run: ``z(s) = (s - m) / sd`` with ``m`` and ``sd`` (population) the mean and standard
  deviation of every top-k score of the run, pooled over its queries (``sd = 1`` when all scores are equal).
  Scores of different runs live on different scales (BM25 10-30, cosine 0.2-0.9); in ``sd`` units the features of
  two runs can be put side by side. The rank-average below is unchanged by this (ranks ignore affine maps).
- ``confidence`` (dense runs only, NaN otherwise): the softmax weight of the first document among the top k at
  temperature ``tau = 0.05``, ``1 / sum_i exp((s_i - s_1) / tau)``, on the raw cosines. BEIR reports no such number;
  this is the usual contrastive-training temperature of dense retrievers (SimCSE, Contriever use 0.05), so the
  weight is the probability the model itself would give its top-1 among its top k. A run is taken as dense when
  every score lies in [-1, 1] (``dense=`` overrides).

Risk score (the documented combination): every available feature is oriented so that **low = risky** (a low top
score, a small gap, a flat list, a low mean, a low confidence), turned into its percentile rank among the run's
queries (``pandas.Series.rank(pct=True)``, ties averaged), and ``risk = 1 - mean of the percentile ranks`` of the
query's available features (a feature that is NaN for a query is left out of its mean). ``risk`` is in (0, 1];
``risk_rank`` 1 is the riskiest query (ties by query id). Nothing is fitted, so no label leaks into the score and
the AUC of :func:`validate_risk` is honest on the golden queries without cross-validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnose import defaults
from diagnose.checks import rank_cutoff
from diagnose.data import DataError, Qrels, Run
from diagnose.metrics import evaluate
from diagnose.runtime.lazy import pandas as pd

FEATURES = ("top1", "gap12", "spread", "mean_k", "confidence")
TAU = 0.05
RISK_COLUMNS = ("query_id", *FEATURES, "n_scores", "risk", "risk_rank")


def failure_risk(run: Run, *, k: int = defaults.K, dense: bool | None = None) -> pd.DataFrame:
    """Every query of ``run`` with its score features, risk score and risk rank (module docstring: definitions).

    Columns: ``query_id, top1, gap12, spread, mean_k, confidence, n_scores, risk, risk_rank``; one row per query
    with at least one row in the run, sorted by ``risk_rank`` (1 = riskiest). A query the run returned nothing for
    has no scores and no row (it fails for sure). ``dense``: force the ``confidence`` feature on or off (default:
    on when every score is in [-1, 1]). Raises DataError for a run without rows or a non-finite score.
    """
    k = rank_cutoff(k)
    top = run.top(k).sort_values(["rank"], kind="mergesort")
    if top.empty:
        raise DataError(
            f"Run {run.name!r} has no rows: there are no scores to read a risk from.", param="run"
        )
    s = top["score"].to_numpy(dtype=np.float64)
    if not np.isfinite(s).all():
        bad = top.loc[~np.isfinite(s), "query_id"].iloc[0]
        raise DataError(f"Run {run.name!r} has a non-finite score (query {bad!r}); scores must be numbers.")
    if dense is None:
        dense = bool(((s >= -1.0) & (s <= 1.0)).all())
    m, sd = float(s.mean()), float(s.std())
    sd = sd if sd > 0 else 1.0
    z = (s - m) / sd
    q = pd.Categorical(top["query_id"].to_numpy(dtype=object), categories=pd.unique(top["query_id"]))
    frame = pd.DataFrame({"q": q, "z": z, "s": s})
    g = frame.groupby("q", observed=True, sort=False)
    pos = g.cumcount().to_numpy()
    first = frame[pos == 0].set_index("q")["z"]
    second = frame[pos == 1].set_index("q")["z"].reindex(first.index)  # NaN for a one-document list
    n = g.size().reindex(first.index).to_numpy()
    out = pd.DataFrame({"query_id": pd.Series(first.index.astype(object), dtype=object)})
    out["top1"] = first.to_numpy()
    out["gap12"] = (first - second).to_numpy()
    out["spread"] = g["z"].std(ddof=0).reindex(first.index).to_numpy()
    out["mean_k"] = g["z"].mean().reindex(first.index).to_numpy()
    if dense:
        s1 = g["s"].transform("first").to_numpy()
        w = frame.assign(w=np.exp((s - s1) / TAU)).groupby("q", observed=True, sort=False)["w"].sum()
        out["confidence"] = 1.0 / w.reindex(first.index).to_numpy()
    else:
        out["confidence"] = np.nan
    out["n_scores"] = n.astype(np.int64)
    pct = out[list(FEATURES)].rank(pct=True, method="average")  # NaN stays NaN
    out["risk"] = 1.0 - pct.mean(axis=1, skipna=True)
    out = out.sort_values(["risk", "query_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )
    out["risk_rank"] = np.arange(1, len(out) + 1, dtype=np.int64)
    return out[list(RISK_COLUMNS)]


@dataclass(frozen=True)
class RiskValidation:
    """How well the risk ranking finds the golden queries that fail at k.

    ``auc``: ROC AUC of ``risk`` against "fails at k" (``hit_rate@k = 0``) over the golden queries the run scored
    (the value of ``sklearn.metrics.roc_auc_score``: the probability that a random failing query is ranked riskier than a random
    succeeding one, ties counted half; 0.5 = no better than chance; NaN when all scored queries fail or none does).
    ``feature_auc``: the same for each feature alone, oriented as in the risk (low = risky), so below 0.5 means the
    feature points the other way on this golden set. ``failure_rate_top``: the share of failing queries among the
    riskiest ``top_fraction`` of them, to set against ``failure_rate`` overall. ``n_unscored``: golden queries the
    run returned nothing for (they fail; with no scores they are left out of the AUC).
    """

    run: str
    k: int
    auc: float
    feature_auc: dict[str, float]
    n_queries: int
    n_failed: int
    n_unscored: int
    failure_rate: float
    failure_rate_top: float
    top_fraction: float = 0.2
    per_query: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "k": self.k,
            "auc": self.auc,
            "feature_auc": dict(self.feature_auc),
            "n_queries": self.n_queries,
            "n_failed": self.n_failed,
            "n_unscored": self.n_unscored,
            "failure_rate": self.failure_rate,
            "failure_rate_top": self.failure_rate_top,
            "top_fraction": self.top_fraction,
        }

    def sentence(self) -> str:
        top = f"{self.top_fraction:.0%}"
        return (
            f"Risk ranking of {self.run!r} at k={self.k}: ROC AUC {self.auc:.2f} on {self.n_queries} golden queries "
            f"({self.n_failed} fail); {self.failure_rate_top:.0%} of the riskiest {top} fail, against "
            f"{self.failure_rate:.0%} overall."
        )


def _auc(y: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC of ``score`` for the binary labels ``y`` (1 = positive), ties counted half: the Mann-Whitney U of the
    positives over ``n_pos * n_neg`` with average ranks, the value ``sklearn.metrics.roc_auc_score`` gives (the test
    checks it), without needing scikit-learn in the core install."""
    from scipy.stats import rankdata

    ok = ~np.isnan(score)
    y, score = np.asarray(y)[ok], np.asarray(score, dtype=np.float64)[ok]
    n_pos = int((y == 1).sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(score)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def validate_risk(
    risk: pd.DataFrame, qrels: Qrels, run: Run, k: int = defaults.K, *, top_fraction: float = 0.2
) -> RiskValidation:
    """ROC AUC of :func:`failure_risk`'s ``risk`` (and of each feature) against "the golden query fails at k".

    ``risk``: the frame :func:`failure_risk` returned for ``run``; ``qrels``: the judgements (golden queries = those
    with a relevant document, grade > 0); fails at k = ``hit_rate@k == 0`` by :func:`diagnose.metrics.evaluate`.
    Unjudged queries in ``risk`` are ignored here (that is where the ranking is used).
    """

    k = rank_cutoff(k)
    if not 0.0 < top_fraction <= 1.0:
        raise DataError(f"top_fraction must be in (0, 1], got {top_fraction!r}.", param="top_fraction")
    missing_cols = [c for c in RISK_COLUMNS if c not in risk.columns]
    if missing_cols:
        raise DataError(
            f"risk lacks the columns {missing_cols}: pass the frame failure_risk(run) returned.", param="risk"
        )
    hit = evaluate(qrels, run, [f"hit_rate@{k}"]).per_query[f"hit_rate@{k}"]
    fails = (hit == 0).astype(np.int64).rename("fails")
    scored = risk.set_index("query_id").join(fails, how="inner")
    n_unscored = int(len(fails) - len(scored))
    y = scored["fails"].to_numpy()
    feature_auc = {f: _auc(y, -scored[f].to_numpy(dtype=np.float64)) for f in FEATURES}
    ordered = scored.sort_values("risk_rank")
    n_top = max(1, int(round(top_fraction * len(ordered))))
    return RiskValidation(
        run=run.name,
        k=k,
        auc=_auc(y, scored["risk"].to_numpy(dtype=np.float64)),
        feature_auc=feature_auc,
        n_queries=len(scored),
        n_failed=int(y.sum()),
        n_unscored=n_unscored,
        failure_rate=float(y.mean()) if len(y) else float("nan"),
        failure_rate_top=float(ordered["fails"].iloc[:n_top].mean()) if len(y) else float("nan"),
        top_fraction=float(top_fraction),
        per_query=scored.reset_index(),
    )
