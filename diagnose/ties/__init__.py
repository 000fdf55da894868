"""Score ties: how much a run's metrics depend on the order of documents that have the same score.

trec_eval breaks score ties by doc id (descending, see :mod:`diagnose.io`), so when a retriever gives several
documents the same score, its metrics depend on how the documents happen to be *named*. MTEB issue 5092: a model
that gave every candidate the same score reached MRR@10 = 1.0, because the doc-id order put the relevant document
first. :func:`tie_audit` measures that dependence per query and for the mean.

Definitions
-----------
- **Tie group**: a maximal block of >= 2 *consecutive* documents of one query's ranking (rows ordered by the
  ``rank`` column, the order every metric reads) whose scores are equal as 32-bit floats, the way trec_eval
  (pytrec-eval-terrier) compares them (``-0.0 == 0.0``; NaN ties with nothing). For a run read from a TREC file,
  equal scores are always consecutive; in a ranked list (JSONL, CSV with ranks) two equal scores separated by a
  different one are not a tie: the list's order is taken as the retriever's decision.
- **Tie order**: any permutation of the documents *inside* each tie group. The positions (rank values) a group
  occupies never change, only which document sits where. The run as given is one tie order: trec_eval's doc-id
  order for TREC files (``TieAudit.trec_order`` says whether every group is in descending doc-id order).
- A query has **ties in the top k** when a tie group starts at rank <= k, and ties **crossing the cutoff** when a
  group starts at rank <= k and ends below rank k (it straddles rank k).
- A query's metric **depends on the order** when its maximum over tie orders exceeds its minimum (by > 1e-12).
- Only golden queries (>= 1 relevant document, the queries :func:`diagnose.metrics.evaluate` averages) count;
  a golden query missing from the run has no ties and value = min = max = 0.

How min and max are computed
----------------------------
Exactly, without enumerating orders: each metric family has a *sort key* per document such that, inside every
tie group, putting the documents with the larger key first gives the maximum of the metric and putting them last
gives the minimum. :func:`tie_audit` builds these two re-ordered copies of the run (ranks unchanged, documents
moved inside their groups, scores replaced by ``-rank`` so the copy's order is explicit and strictly decreasing)
and scores them with :func:`diagnose.metrics.evaluate`: no metric is computed twice in two places.

Why the keys are right (every family of :data:`diagnose.metrics.REGISTRY`; ``tests/test_ties.py`` checks each
one against all permutations of the tie groups of small random runs):

- key ``gain`` = the document's grade for the query, clipped at 0 (0 when unjudged). Relevant (grade >=
  ``relevance_level``) documents have a larger key than non-relevant ones, and nDCG's gains grow with the key.
  Moving a document with a larger key above one with a smaller key inside a group never lowers:

  * ``precision@k``, ``recall@k``, ``hit_rate@k``, ``f1@k``, ``r_precision``: increasing functions of the number
    of relevant documents at ranks <= c (c = k, or R), which can only grow; R and k do not depend on the order.
  * ``mrr``, ``mrr@k``: the first relevant rank can only move up.
  * ``map``, ``map@k``: AP = (1/R) sum_m m / p_m over the sorted ranks p_1 < p_2 < ... of the relevant documents
    (those <= k for map@k). Moving one relevant document to a smaller free rank makes the sorted vector elementwise
    smaller, so every term grows and none drops out of the cutoff.
  * ``ndcg@k``: DCG = sum of gain x discount(rank) with a non-increasing discount (0 below k); by the
    rearrangement inequality, gains sorted decreasingly over the group's fixed positions maximise it and
    increasingly minimise it. The ideal DCG does not depend on the order.

  One key serves all these families at once, so one best-case and one worst-case copy give every maximum and
  minimum, for every query independently: the mean of the per-query maxima is the largest mean any tie order
  can reach (and likewise for the minimum).
- key ``judged`` (1 when the qrels have a row for this query and document, any grade): ``judged@k`` counts judged
  documents in the top k over ``min(k, n)``, n fixed. The grade key would be wrong here (a grade-0 judgement and
  an unjudged document share gain 0), hence its own key and its own two copies.
- key ``unannotated`` (1 when the document appears in no qrels row): ``hole@k`` counts those in the top k over k.

A family whose record has no ``tie_key`` (``REGISTRY[family].tie_key`` None) falls back to sampling:
the value is evaluated on ``n_orders`` random tie orders (``seed``) plus the run's own order and the ``gain``
best and worst orders, and min / max are taken over those. That range is a lower bound on the true one
(``TieRange.exact`` is False, and :meth:`TieAudit.message` says "at least").

Both copies are scored and the per-query min and max taken over them and the run's own order, so the result does
not rest on which of the two orders is the best one, only on the pair containing both extremes.

Cost: three calls of :func:`~diagnose.metrics.evaluate` (two more per extra key when ``judged@k`` / ``hole@k`` are
asked, on copies cut at rank k since those read nothing deeper), an Arrow hash lookup of the tied rows in the
qrels, and a few sorts. Measured once on 1,000 queries x 1,000 documents (1M rows, 3 judgements per query, shared
2-core machine): all scores tied 0.5-0.9 s with the 9 default metrics at k = 10 (``evaluate`` alone 0.2 s), 1.3 s
with ``judged@10`` and ``hole@10`` added; no ties 0.2 s.

One file per question:

- :mod:`~diagnose.ties.records`: what an audit reports, :class:`TieRange` and :class:`TieAudit`.
- :mod:`~diagnose.ties.orders`: the tie-order machinery (tie groups, the keys named by each family's
  ``tie_key`` in :data:`diagnose.metrics.REGISTRY`, the re-ordered copies). Start here when a new metric family
  needs a new key.
- :mod:`~diagnose.ties.audit`: :func:`tie_audit` (= :func:`tie_work`, its part that needs no evaluation of the
  run and can run beside that evaluation, then :func:`audit_from_work`) and :func:`add_to_report`.

Every name below is importable from ``diagnose.ties`` itself.
"""

from __future__ import annotations

from diagnose.ties.audit import TieWork, add_to_report, audit_from_work, tie_audit, tie_work
from diagnose.ties.records import TieAudit, TieRange

__all__ = [
    "TieAudit",
    "TieWork",
    "TieRange",
    "add_to_report",
    "audit_from_work",
    "tie_audit",
    "tie_work",
]
