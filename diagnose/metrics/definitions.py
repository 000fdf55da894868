"""The metrics: each one's formula, its convention, its kernel, and the :data:`REGISTRY` of families.

Metric names (ranx style, ``k`` any positive integer), with their trec_eval equivalents:

- ``precision@k`` = rel(k) / k  (``P_k``)
- ``recall@k`` = rel(k) / R  (``recall_k``)
- ``hit_rate@k`` = 1 if rel(k) > 0 else 0  (``success_k``)
- ``mrr`` = 1 / r1, and 0 when no relevant document is retrieved  (``recip_rank``)
- ``mrr@k`` = 1 / r1 if r1 <= k else 0  (no trec_eval measure; ranx ``mrr@k``)
- ``ndcg@k`` = DCG@k / IDCG@k, DCG@k = sum over ranks i <= k of g_i / log2(i + 1)  (``ndcg_cut_k``)
- ``map`` = (1 / R) * sum over the relevant retrieved documents d of P(rank(d))  (``map``)
- ``map@k`` = (1 / R) * sum over the relevant d with rank(d) <= k of P(rank(d))  (``map_cut_k``)
- ``r_precision`` = rel(R) / R  (``Rprec``)
- ``f1@k`` = 2 P R / (P + R), P = precision@k, R = recall@k; 0 when both are 0  (ranx ``f1@k``)
- ``judged@k`` = judged(k) / min(k, n)  (ir_measures ``Judged@k``)
- ``hole@k`` = (documents in the top k judged for no query) / k  (BEIR ``Hole@k``)

where ``rel(k)`` is the number of relevant documents at ranks ``1..k``, ``R`` the number of relevant documents
of the query in the qrels (retrieved or not), ``r1`` the rank of the first relevant document and ``P(r)`` the
precision at rank ``r``; ``judged(k)`` the number of documents in the top ``k`` with a qrels row for the query
(any grade: 0 and negative grades count as judged) and ``n`` the number of results of the query.

Coverage metrics (how far the qrels cover the run, not how good it is; no quality band):

- **judged@k** follows ir_measures 0.4.3 (``providers/judged_provider.py``): its denominator is ``min(k, n)``, so
  a run with 3 results, 2 of them judged, has judged@10 = 2/3. Judged means judged *for this query*.
- **hole@k** follows BEIR 2.2.0 (``beir/retrieval/custom_metrics.py``, ``hole``): a document is a hole when it
  appears in the qrels of *no* query (BEIR's "annotated corpus"), so a document judged only for another query is
  neither judged for this one nor a hole: ``judged@k + hole@k`` can be below 1. The denominator is ``k`` even when
  the run lists fewer. BEIR's own average sums over the run's queries and divides by the number of qrels queries;
  here, like every metric, it is the mean over the scored queries.
- A query missing from the run scores 0 on both (nothing retrieved: nothing judged, no hole).
- :func:`metric_bounds` gives every metric with the unjudged documents counted non-relevant (today's value) and
  at best (upper bound).

Conventions (the numbers equal trec_eval 9.0.x ``-c`` to floating point; checked in
``tests/test_metrics_reference.py`` against pytrec_eval, ranx and trec_eval's own test outputs):

- **Relevant** means grade ``>= relevance_level`` (default 1, i.e. grade > 0 on integer grades; trec_eval ``-l``).
  Grade 0 and negative grades are non-relevant. trec_eval reads a negative grade as "in the pool but not
  judged"; no metric here distinguishes that from non-relevant.
- **nDCG**: gain = grade (linear, Järvelin & Kekäläinen, like trec_eval; *not* ``2^grade - 1``) for every
  grade > 0, whatever ``relevance_level``; negative grades gain 0. Discount ``log2(rank + 1)``. The ideal DCG
  sorts *all* judged grades of the query (retrieved or not) in decreasing order and cuts at ``k``
  (``ndcg_cut``). trec_eval does not divide the gain at rank 1; that is the same number, ``log2(2) = 1``.
- **precision@k** divides by ``k`` even when the run has fewer than ``k`` results (``P_k``).
- **map@k** divides by ``R``, not by ``min(k, R)`` (trec_eval ``map_cut``; sentence-transformers'
  ``MAP@k`` divides by ``min(k, R)`` and gives larger numbers).
- **mrr** has no cutoff (``recip_rank``); ``mrr@k`` is 0 when the first relevant document is below rank ``k``.
- **Order**: the run is already in its final order; metrics read the ``rank`` column (1-based) and ignore
  ``score``. :mod:`diagnose.io` orders TREC files like trec_eval (score descending, ties by doc id descending,
  scores compared as C ``float`` like the trec_eval inside pytrec-eval-terrier; see its docstring).
- **Which queries count**: the aggregate is the mean over the *golden queries* (in the qrels) with at least one
  relevant document. Those missing from the run score 0 on every metric and are listed in
  ``Evaluation.missing_queries`` (trec_eval ``-c``; without ``-c`` trec_eval averages only over queries present
  in both files). Judged queries without any relevant document are listed in ``no_relevant_queries`` and not
  averaged (trec_eval would average their zeros). Run queries absent from the qrels are ignored and listed in
  ``unjudged_queries``.
- **Duplicates**: readers remove a document repeated within one query's results. If one slips through, it is
  counted once, at its best rank (so no metric exceeds 1), while its other rows still occupy their ranks;
  trec_eval refuses such a file. A (query, doc) pair judged twice in the qrels keeps the last grade.

The kernels below read the tables of :mod:`diagnose.metrics.join` (the qrels x run hash join, one row per
retrieved document with a positive grade). **Adding a metric** is its kernel here, its upper bound in
:mod:`diagnose.metrics.upper` (or None when it does not depend on the grades), and one :class:`Metric` record in
:data:`REGISTRY` holding every fact the other modules read (name forms and their formulas, quality band, tie key,
coverage); docs/metrics.md's metric table is :func:`diagnose.metrics.markdown_table` (``tests/test_metrics_docs.py``
fails until it is pasted), and the tests derive their family sets from :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import numpy as np

from diagnose.metrics.join import RunTables, safe_div
from diagnose.metrics.upper import (
    upper_f1,
    upper_hit_rate,
    upper_map,
    upper_mrr,
    upper_ndcg,
    upper_precision,
    upper_r_precision,
    upper_recall,
)

__all__ = ["REGISTRY", "Form", "Metric"]

Kernel = Callable[[RunTables, int | None], np.ndarray]
"""``kernel(tables, k)``: the per-query values of every scored query (``k`` None for a metric without cutoff)."""


class Form(NamedTuple):
    """One way to write a family's name, with its formula: a row of docs/metrics.md's metric table."""

    name: str  # "map@k", "map"
    formula: str  # Markdown
    trec_eval: str = ""  # the trec_eval measure ("map_cut_k"); "" when trec_eval has none
    source: str = ""  # where the definition comes from when trec_eval has none ("ranx", "BEIR `Hole@k`")


class Metric(NamedTuple):
    """One metric family and every fact the other modules read about it (see :data:`REGISTRY`).

    - ``kernel``: its per-query values; ``upper``: the same at best once the unjudged documents are judged
      (:func:`~diagnose.metrics.metric_bounds`), None when the metric does not depend on the grades.
    - ``cutoff``: ``family@k`` is ``"required"`` (``ndcg@10``), ``"optional"`` (``mrr``, ``mrr@10``) or
      ``"none"`` (``r_precision``). ``definition``: a short description. ``forms``: the table's rows.
    - ``band``: the quality band limits ``(a, b, c)``, read as ``poor < a <= acceptable < b <= good < c <=
      excellent`` (:func:`~diagnose.metrics.quality_band`); None for a coverage metric. ``band_in_tables``: False
      when tables (CLI, app) leave the band out because it would call every run poor (precision, f1: bounded by
      R/k; the JSON still carries it).
    - ``tie_key``: the per-document key of :mod:`diagnose.ties` whose order inside tie groups gives the metric's
      exact maximum and minimum (``"gain"``, ``"judged"``, ``"unannotated"``); None: tie orders are sampled.
      ``top_k_only``: ``family@k`` reads only ranks <= k.
    - ``coverage``: it measures how far the qrels cover the run, not the run's quality (judged@k, hole@k).
    - ``by_default``: among the metrics :func:`~diagnose.metrics.expand_metrics` gives when none is named (at every
      k, and without cutoff when it may go without). ``aliases``: the trec_eval / ir_measures spellings people
      type (``"p"``, ``"recip_rank"``), to suggest the right name in the error.
    """

    name: str
    kernel: Kernel
    cutoff: Literal["required", "optional", "none"]
    definition: str
    forms: tuple[Form, ...]
    upper: Kernel | None
    band: tuple[float, float, float] | None
    tie_key: Literal["gain", "judged", "unannotated"] | None
    top_k_only: bool = True
    band_in_tables: bool = True
    coverage: bool = False
    by_default: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def trec_eval(self) -> str:
        """The trec_eval measures of its forms (``"map_cut_k / map"``), ``"-"`` when trec_eval has none."""
        return " / ".join(f.trec_eval for f in self.forms if f.trec_eval) or "-"


# --------------------------------------------------------------------------------------------- kernels


def _precision(t: RunTables, k: int | None) -> np.ndarray:
    """``precision@k = rel(k) / k``; divides by ``k`` even if fewer than ``k`` results (trec_eval ``P_k``)."""
    return t.rel_at(k) / k


def _recall(t: RunTables, k: int | None) -> np.ndarray:
    """``recall@k = rel(k) / R``, R = relevant documents of the query in the qrels (trec_eval ``recall_k``)."""
    return t.rel_at(k) / t.n_rel


def _hit_rate(t: RunTables, k: int | None) -> np.ndarray:
    """``hit_rate@k = 1`` if a relevant document is in the top ``k`` else 0 (trec_eval ``success_k``)."""
    return (t.first_rank <= k).astype(np.float64)


def _mrr(t: RunTables, k: int | None) -> np.ndarray:
    """``mrr = 1 / rank of the first relevant document`` (0 if none: trec_eval ``recip_rank``).

    ``mrr@k`` is 0 when that rank is above ``k`` (ranx ``mrr@k``).
    """
    rr = 1.0 / t.first_rank  # 1/inf = 0
    if k is not None:
        rr = np.where(t.first_rank <= k, rr, 0.0)
    return rr


def _ndcg(t: RunTables, k: int | None) -> np.ndarray:
    """``ndcg@k = DCG@k / IDCG@k`` with ``DCG@k = sum_{rank<=k} grade / log2(rank + 1)`` over grades > 0.

    IDCG@k is the DCG of all judged grades of the query sorted decreasingly, cut at ``k`` (trec_eval ``ndcg_cut_k``;
    linear gains, unlike the ``2^grade - 1`` of Burges et al.).
    """
    m = t.gain_rank <= k
    dcg = t.count(t.gain_q, m, t.gain / np.log2(t.gain_rank + 1.0))
    p = t.prep
    im = p.ideal_rank <= k
    idcg = t.count(p.ideal_q, im, p.ideal_gain / np.log2(p.ideal_rank + 1.0))
    return safe_div(dcg, idcg)


def _average_precision(t: RunTables, k: int | None) -> np.ndarray:
    """``map = (1/R) sum_{relevant retrieved d} P(rank(d))``; ``map@k`` keeps ``rank(d) <= k`` and still divides
    by R (trec_eval ``map`` / ``map_cut_k``; sentence-transformers divides MAP@k by ``min(k, R)``)."""
    prec = t.rel_pos / t.rel_rank
    m = None if k is None else t.rel_rank <= k
    return t.count(t.rel_q, m, prec) / t.n_rel


def _r_precision(t: RunTables, k: int | None) -> np.ndarray:
    """``r_precision = rel(R) / R``: precision at rank R, the number of relevant documents (trec_eval ``Rprec``)."""
    m = t.rel_rank <= t.n_rel[t.rel_q]
    return t.count(t.rel_q, m) / t.n_rel


def _f1(t: RunTables, k: int | None) -> np.ndarray:
    """``f1@k = 2 P R / (P + R)`` with ``P = precision@k`` and ``R = recall@k``; 0 when both are 0."""
    p, r = _precision(t, k), _recall(t, k)
    return safe_div(2.0 * p * r, p + r)


def _judged(t: RunTables, k: int | None) -> np.ndarray:
    """``judged@k`` = (documents in the top ``k`` with a qrels row for this query, any grade, even 0 or negative)
    / (documents in the top ``k``): ir_measures' ``Judged@k`` (0.4.3), whose denominator is ``min(k, number of
    results)``, not ``k``. A query missing from the run scores 0 (nothing retrieved, so nothing judged)."""
    lst = t.listed()
    top = lst.rank <= k
    return safe_div(t.count(lst.q, top & lst.judged), t.count(lst.q, top))


def _hole(t: RunTables, k: int | None) -> np.ndarray:
    """``hole@k`` = (documents in the top ``k`` that appear nowhere in the qrels) / ``k``: BEIR's ``Hole@k``
    (``beir.retrieval.custom_metrics.hole``, 2.2.0). A document judged for *another* query is not a hole, and
    the denominator is ``k`` even when the run lists fewer results. A query missing from the run scores 0."""
    lst = t.listed()
    return t.count(lst.q, (lst.rank <= k) & ~lst.in_qrels) / k


# Quality bands are rules of thumb for a RAG retriever on its own golden set, not laws; the reasoning:
# - ndcg: BM25 averages ~0.43 nDCG@10 over the 18 BEIR datasets (Thakur et al. 2021) and strong dense or
#   re-ranked systems reach ~0.50-0.55; NFCorpus BM25 is 0.32. So < 0.3 is poor, 0.5 good, 0.7 excellent.
# - mrr: 0.5 means the first relevant passage is at rank ~2 on average; below 0.3 the answer usually sits
#   below rank 3, where a generator with few passages in context misses it.
# - recall / hit_rate: the share of questions whose evidence reaches the context. Missing it for half of the
#   questions is poor; 0.9 is what production RAG teams usually target for recall@k at their context size.
# - map / r_precision: ranking quality over all relevant documents, lower than nDCG on the same run (TREC ad
#   hoc BM25 runs score ~0.2-0.3 MAP); 0.2 / 0.4 / 0.6.
# - precision / f1: loose bands. Their ceiling is min(1, R/k), so with one or two relevant documents per question
#   precision@10 cannot exceed 0.1-0.2; read them next to recall (and tables leave their band out).
# Tie keys: the argument that each key gives the exact extremes is in diagnose/ties/__init__.py.
REGISTRY: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "precision",
            _precision,
            "required",
            "relevant in top k / k",
            (Form("precision@k", "Σ_{i≤k} rel(i) / k (divides by k even when fewer results exist)", "P_k"),),
            upper=upper_precision,
            band=(0.1, 0.2, 0.4),
            band_in_tables=False,
            tie_key="gain",
            aliases=("p", "prec"),
        ),
        Metric(
            "recall",
            _recall,
            "required",
            "relevant in top k / relevant judged",
            (Form("recall@k", "Σ_{i≤k} rel(i) / R", "recall_k"),),
            upper=upper_recall,
            band=(0.5, 0.7, 0.9),
            tie_key="gain",
            aliases=("r",),
        ),
        Metric(
            "hit_rate",
            _hit_rate,
            "required",
            "1 if a relevant document is in the top k",
            (Form("hit_rate@k", "1 if Σ_{i≤k} rel(i) > 0 else 0", "success_k"),),
            upper=upper_hit_rate,
            band=(0.5, 0.7, 0.9),
            tie_key="gain",
            aliases=("success", "hits", "hitrate"),
        ),
        Metric(
            "mrr",
            _mrr,
            "optional",
            "1 / rank of the first relevant document",
            (
                Form("mrr", "1 / rank of the first relevant document (0 if none)", "recip_rank"),
                Form("mrr@k", "as `mrr`, 0 when the first relevant is below k", source="ranx"),
            ),
            upper=upper_mrr,
            band=(0.3, 0.5, 0.7),
            tie_key="gain",
            aliases=("recip_rank", "rr"),
        ),
        Metric(
            "ndcg",
            _ndcg,
            "required",
            "DCG@k / ideal DCG@k, linear gains, log2(rank+1)",
            (
                Form(
                    "ndcg@k",
                    "DCG@k / IDCG@k, DCG = Σ_{i≤k} g(i) / log2(i+1), linear gains; IDCG from all judged documents "
                    "sorted by grade, cut at k",
                    "ndcg_cut_k",
                ),
            ),
            upper=upper_ndcg,
            band=(0.3, 0.5, 0.7),
            tie_key="gain",
            aliases=("ndcg_cut",),
        ),
        Metric(
            "map",
            _average_precision,
            "optional",
            "mean precision at relevant ranks, / R",
            (
                Form("map@k", "Σ_{i≤k} rel(i)·precision@i / R (divides by R, not min(k, R))", "map_cut_k"),
                Form("map", "as `map@k` over the whole list", "map"),
            ),
            upper=upper_map,
            band=(0.2, 0.4, 0.6),
            tie_key="gain",
            aliases=("map_cut", "ap"),
        ),
        Metric(
            "r_precision",
            _r_precision,
            "none",
            "relevant in top R / R",
            (Form("r_precision", "Σ_{i≤R} rel(i) / R", "Rprec"),),
            upper=upper_r_precision,
            band=(0.2, 0.4, 0.6),
            tie_key="gain",
            top_k_only=False,
            aliases=("rprec", "r-precision"),
        ),
        Metric(
            "f1",
            _f1,
            "required",
            "harmonic mean of precision@k and recall@k",
            (Form("f1@k", "2·P·R / (P + R) with P = precision@k, R = recall@k (0 when both are 0)"),),
            upper=upper_f1,
            band=(0.1, 0.2, 0.4),
            band_in_tables=False,
            tie_key="gain",
            aliases=("f",),
            by_default=False,
        ),
        Metric(
            "judged",
            _judged,
            "required",
            "share of the top k judged for the query (ir_measures Judged)",
            (
                Form(
                    "judged@k",
                    "share of the top k that has a judgement for this query, any grade; divides by min(k, results)",
                    source="ir_measures `Judged@k`",
                ),
            ),
            upper=None,
            band=None,
            tie_key="judged",
            coverage=True,
            by_default=False,
        ),
        Metric(
            "hole",
            _hole,
            "required",
            "share of the top k judged for no query, / k (BEIR Hole)",
            (Form("hole@k", "top-k documents judged for *no* query, divided by k", source="BEIR `Hole@k`"),),
            upper=None,
            band=None,
            tie_key="unannotated",
            coverage=True,
            by_default=False,
        ),
    )
}
"""Metric family -> :class:`Metric`. A metric *name* is ``family`` or ``family@k`` (see :func:`parse_metric`)."""
