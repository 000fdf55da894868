""":func:`tie_audit` (the ranges of every metric over tie orders, per query and for the mean) and
:func:`add_to_report` (the ``score_ties`` entry of a validation report).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from diagnose import defaults
from diagnose.checks import positive_int
from diagnose.data import MAX_EXAMPLES, Qrels, Run, ValidationReport
from diagnose.metrics import Evaluation, evaluate, expand_metrics, parse_metric
from diagnose.metrics.evaluation import prepare_inputs
from diagnose.runtime.frames import ColumnsFrame
from diagnose.runtime.threads import in_threads
from diagnose.ties.orders import (
    Layout,
    deepest_rank,
    in_trec_order,
    reordered,
    reordered_nonzero,
    tie_key_of,
    tie_keys,
    tie_layout,
    varies_in_groups,
    widen,
)
from diagnose.ties.records import PRINTED_DIGITS, TOL, TieAudit, TieRange

# --------------------------------------------------------------------------------------------- audit


class TieWork(NamedTuple):
    """What an audit computes without the run's own evaluation (:func:`tie_work`): the metric names (as
    :func:`~diagnose.metrics.evaluate` writes them), the golden queries, the tie layout and counts, and each
    metric's lowest and highest value per golden query over the re-ordered copies (``lo`` +inf and ``hi`` -inf where
    no copy covers a query), but for the copies left ``pending`` (:func:`tie_work`'s ``leave``).
    :func:`audit_from_work` evaluates those and widens the ranges with the run's own values."""

    k: int
    names: list[str]
    relevance_level: int
    golden: np.ndarray
    lay: Layout
    counts: _TieCounts
    exact: dict[str, bool]
    lo: np.ndarray
    hi: np.ndarray
    sampled: int
    scope: _Scope
    pending: tuple[_Copy, ...]


def tie_work(
    qrels: Qrels,
    run: Run,
    metrics: Sequence[str] | None = None,
    *,
    k: int = defaults.K,
    n_orders: int = 20,
    seed: int = defaults.SEED,
    relevance_level: int = 1,
    leave: int = 0,
) -> TieWork:
    """The part of :func:`tie_audit` that needs no evaluation of ``run`` itself (same arguments), so that it can run
    beside that evaluation (:meth:`diagnose.analysis.Analysis.evaluation_report` does); :func:`audit_from_work`
    finishes the audit. ``leave``: how many of the re-ordered copies (two per sort key that matters) to leave to
    :func:`audit_from_work`, which evaluates them side by side (:func:`~diagnose.runtime.threads.in_threads`) once the run's
    own evaluation is done."""
    k = _checked_k(k, n_orders)
    names = _canonical(expand_metrics(None, [k]) if metrics is None else list(metrics))
    prep = prepare_inputs(qrels, names, relevance_level)[1]  # DataError: no relevant document, unknown metric
    golden = np.asarray(prep.eval_ids, dtype=object)  # the golden queries, as every evaluation lists them
    lay = tie_layout(run)
    groups = np.flatnonzero(lay.g_size > 1)
    counts = _tie_counts(lay, groups, golden, k)
    scope = _scope(lay, counts)
    exact = {m: tie_key_of(m) is not None for m in names}
    lo = np.full((len(golden), len(names)), np.inf)
    hi = np.full((len(golden), len(names)), -np.inf)
    copies, sampled = [], 0
    if len(groups):
        copies = _copies(qrels, run, lay, scope, names, exact)
        sampled = _widen_over_random_orders(
            qrels, run, lay, names, exact, lo, hi, n_orders, seed, relevance_level
        )
    cut = max(len(copies) - max(int(leave), 0), 0)  # the copies evaluated here; the rest are left pending
    _widen_with_copies(qrels, run, lay, scope, copies[:cut], lo, hi, relevance_level, workers=1)
    return TieWork(
        k, names, relevance_level, golden, lay, counts, exact, lo, hi, sampled, scope, tuple(copies[cut:])
    )


def tie_audit(
    qrels: Qrels,
    run: Run,
    metrics: Sequence[str] | None = None,
    *,
    k: int = defaults.K,
    n_orders: int = 20,
    seed: int = defaults.SEED,
    relevance_level: int = 1,
    base: Evaluation | None = None,
) -> TieAudit:
    """Audit ``run`` for score ties that make its metrics depend on document naming (see the module docstring).

    ``metrics``: full names as for :func:`~diagnose.metrics.evaluate` (``["ndcg@10", "mrr"]``); None means
    :func:`~diagnose.metrics.expand_metrics` of None at cutoff ``k``. ``k``: the cutoff whose crossing is counted
    (it does not change the metrics asked). ``n_orders`` and ``seed``: random tie orders for metric families without
    an exact key (none today). ``relevance_level``: as for :func:`~diagnose.metrics.evaluate`.

    ``base``: the run's :class:`~diagnose.metrics.Evaluation` when the caller already has it (same qrels and
    ``relevance_level``, at least the metrics asked), so the run is not scored twice; None scores it here.

    Raises :class:`~diagnose.data.DataError` for a bad ``k`` / ``n_orders``, an unknown metric, or qrels without
    any relevant document.
    """
    work = tie_work(qrels, run, metrics, k=k, n_orders=n_orders, seed=seed, relevance_level=relevance_level)
    return audit_from_work(qrels, run, work, base=base)


def audit_from_work(qrels: Qrels, run: Run, work: TieWork, *, base: Evaluation | None = None) -> TieAudit:
    """:func:`tie_audit` from its :func:`tie_work` (of these ``qrels`` and ``run``): the copies' ranges, with the
    copies it left pending evaluated here (in threads, with two CPUs), widened with the run's own values, ``base``
    when it holds them (as for :func:`tie_audit`), else the run scored here. ``work`` is not changed."""
    names, golden, lay, counts, exact = work.names, work.golden, work.lay, work.counts, work.exact
    lo, hi = work.lo.copy(), work.hi.copy()
    _widen_with_copies(qrels, run, lay, work.scope, work.pending, lo, hi, work.relevance_level)
    if not _holds(base, names, golden):
        base = evaluate(qrels, run, names, relevance_level=work.relevance_level)
    value = base.values(names)
    lo, hi = np.minimum(value, lo), np.maximum(value, hi)
    depends = (hi - lo > TOL).any(axis=1) if len(names) else np.zeros(len(golden), dtype=bool)
    ties_top = counts.per_golden(counts.in_top, False)
    cross = counts.per_golden(counts.crossing, False)
    n_groups = counts.per_golden(counts.n_groups.astype(np.int64), 0)
    per_query = _per_query_table(golden, names, value, lo, hi, n_groups, ties_top, cross, depends)
    present = counts.at >= 0
    return TieAudit(
        run=run.name,
        k=work.k,
        metrics=tuple(names),
        n_queries=len(golden),
        n_queries_with_ties=int(ties_top.sum()),
        n_queries_crossing_cutoff=int(cross.sum()),
        n_queries_metric_depends_on_order=int(depends.sum()),
        examples=_examples(golden, len(names), lo, hi, depends, ties_top),
        per_query=per_query,
        aggregate=_aggregate(names, value, lo, hi, exact),
        trec_order=in_trec_order(run, lay, np.isin(np.arange(len(lay.qids)), counts.at[present])),
        sampled_orders=work.sampled,
        source=run.source,
    )


def _holds(base: Evaluation | None, names: list[str], golden: np.ndarray) -> bool:
    """Whether ``base`` can be the audit's starting point: every metric asked, the same golden queries."""
    if base is None or not names or not set(names) <= set(base.metrics):
        return False
    return bool(np.array_equal(np.asarray(base.query_ids, dtype=object), golden))


def _canonical(names: Sequence[str]) -> list[str]:
    """The metric names as :func:`~diagnose.metrics.evaluate` writes them (``family@k``), duplicates dropped."""
    parsed = [parse_metric(m) for m in names]
    return list(dict.fromkeys(f if c is None else f"{f}@{c}" for f, c in parsed))


def _checked_k(k: int, n_orders: int) -> int:
    """``k`` as an int; :class:`DataError` for a ``k`` or ``n_orders`` that is not a positive integer."""
    positive_int(n_orders, "n_orders")
    return positive_int(k, "k")


class _TieCounts(NamedTuple):
    """Per run query (code): tie groups, ties in the top k, a group crossing k; ``at``: each golden query's run
    query code, -1 when the run does not list it."""

    n_groups: np.ndarray
    in_top: np.ndarray
    crossing: np.ndarray
    at: np.ndarray

    def per_golden(self, values: np.ndarray, fill: Any) -> np.ndarray:
        """``values`` (one per run query) for each golden query, ``fill`` for those the run does not list."""
        present = self.at >= 0
        out = np.full(len(self.at), fill, dtype=values.dtype)
        out[present] = values[self.at[present]]
        return out


def _tie_counts(lay: Layout, groups: np.ndarray, golden: np.ndarray, k: int) -> _TieCounts:
    """Per run query: tie groups, ties in the top k, crossing k (``groups``: the tie groups of >= 2 documents)."""
    gq = lay.qcode[lay.g_start[groups]]
    g_first = lay.rank[lay.g_start[groups]]
    g_last = lay.rank[lay.g_start[groups] + lay.g_size[groups] - 1]
    n_run_q = len(lay.qids)
    n_groups = np.bincount(gq, minlength=n_run_q)
    in_top = np.bincount(gq, weights=g_first <= k, minlength=n_run_q) > 0
    crossing = np.bincount(gq, weights=(g_first <= k) & (g_last > k), minlength=n_run_q) > 0
    code_of = {q: i for i, q in enumerate(lay.qids)}
    at = np.fromiter((code_of.get(q, -1) for q in golden), dtype=np.int64, count=len(golden))
    return _TieCounts(n_groups, in_top, crossing, at)


class _Scope(NamedTuple):
    """The part of the run a re-ordered copy needs: ``positions`` (bool per layout position) of the run queries that
    have a tie group, and ``golden`` (bool per golden query) the golden queries among them. Outside it every tie
    order is the run's own order, so the copies leave those queries out and the widening skips them."""

    positions: np.ndarray
    golden: np.ndarray


def _scope(lay: Layout, counts: _TieCounts) -> _Scope:
    has_ties = counts.n_groups > 0
    return _Scope(has_ties[lay.qcode], counts.per_golden(has_ties, False))


class _Copy(NamedTuple):
    """One re-ordered copy of the run to evaluate: its tie order puts ``key`` (signed) first in every tie group;
    ``cols``: the metrics it widens (``names``: their names), those whose value depends on that key only."""

    key_name: str
    key: np.ndarray
    cols: list[int]
    names: list[str]


def _copies(
    qrels: Qrels, run: Run, lay: Layout, scope: _Scope, names: list[str], exact: dict[str, bool]
) -> list[_Copy]:
    """The best- and worst-case orders of each sort key needed (:func:`~diagnose.ties.orders.tie_key_of`) that
    varies inside a tie group: every metric of that key takes its lowest and highest value over tie orders in one of
    the two copies."""
    needed = {tie_key_of(m) for m in names if exact[m]}
    if not all(exact.values()):
        needed.add("gain")
    keys = tie_keys(qrels, run, lay, needed, scope.positions)
    out = []
    for key_name in sorted(needed):
        cols = [j for j, m in enumerate(names) if (tie_key_of(m) or "gain") == key_name]
        key = keys[key_name]
        if cols and varies_in_groups(key, lay):
            out += [_Copy(key_name, sign * key, cols, [names[j] for j in cols]) for sign in (-1.0, 1.0)]
    return out


def _widen_with_copies(
    qrels: Qrels,
    run: Run,
    lay: Layout,
    scope: _Scope,
    copies: Sequence[_Copy],
    lo: np.ndarray,
    hi: np.ndarray,
    relevance_level: int,
    *,
    workers: int | None = None,
) -> None:
    """Widen ``lo`` / ``hi`` (per query x metric, in place) with the values of ``copies``, evaluated side by side in
    up to ``workers`` threads (:func:`~diagnose.runtime.threads.in_threads`; 1: in this thread)."""
    scored = in_threads(
        lambda c: _scored(qrels, run, lay, scope, c, relevance_level), copies, workers=workers, blas=False
    )
    for copy, e in zip(copies, scored, strict=True):
        widen(lo, hi, copy.cols, e, scope.golden)


def _scored(
    qrels: Qrels, run: Run, lay: Layout, scope: _Scope, copy: _Copy, relevance_level: int
) -> Evaluation:
    """The evaluation of ``copy`` (its metrics only).

    The ``gain`` copies keep only the documents with a positive grade: every family of that key reads nothing else
    (the ranks stay explicit in the copy), so the two copies are as small as the judged part of the run."""
    if copy.key_name == "gain":  # the gain key is 0 exactly for the documents without a positive grade
        run_copy = reordered_nonzero(run, lay, copy.key, deepest_rank(copy.names))
    else:
        run_copy = reordered(run, lay, copy.key, deepest_rank(copy.names), scope.positions)
    return evaluate(qrels, run_copy, copy.names, relevance_level=relevance_level)


def _widen_over_random_orders(
    qrels: Qrels,
    run: Run,
    lay: Layout,
    names: list[str],
    exact: dict[str, bool],
    lo: np.ndarray,
    hi: np.ndarray,
    n_orders: int,
    seed: int,
    relevance_level: int,
) -> int:
    """Widen ``lo`` / ``hi`` with ``n_orders`` random orders for the metrics without an exact key; returns how many
    were sampled (0 when every metric has one)."""
    inexact = [j for j, m in enumerate(names) if not exact[m]]
    if not inexact:
        return 0
    rng = np.random.default_rng(seed)
    sub = [names[j] for j in inexact]
    for _ in range(n_orders):
        e = evaluate(
            qrels,
            reordered(run, lay, rng.random(len(lay.order)), deepest_rank(sub)),
            sub,
            relevance_level=relevance_level,
        )
        widen(lo, hi, inexact, e)
    return n_orders


def _per_query_table(
    golden: np.ndarray,
    names: list[str],
    value: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    n_groups: np.ndarray,
    ties_top: np.ndarray,
    cross: np.ndarray,
    depends: np.ndarray,
) -> ColumnsFrame:
    """:attr:`TieAudit.per_query`: the counts per golden query, then each metric's value, min and max."""
    columns: dict[str, np.ndarray] = {
        "query_id": np.asarray(golden, dtype=object),
        "tie_groups": n_groups,
        "ties_in_top_k": ties_top,
        "crossing_cutoff": cross,
        "depends_on_order": depends,
    }
    for j, m in enumerate(names):  # built in one go: inserting 3 columns per metric fragments the frame
        columns.update({m: value[:, j], f"{m}_min": lo[:, j], f"{m}_max": hi[:, j]})
    return ColumnsFrame(columns)


def _aggregate(
    names: list[str], value: np.ndarray, lo: np.ndarray, hi: np.ndarray, exact: dict[str, bool]
) -> dict[str, TieRange]:
    """:attr:`TieAudit.aggregate`: each metric's value, min and max averaged over the golden queries (NaN for none)."""
    n = len(value)
    return {
        m: TieRange(
            float(value[:, j].mean()) if n else math.nan,
            float(lo[:, j].mean()) if n else math.nan,
            float(hi[:, j].mean()) if n else math.nan,
            exact[m],
        )
        for j, m in enumerate(names)
    }


def _examples(
    golden: np.ndarray,
    n_metrics: int,
    lo: np.ndarray,
    hi: np.ndarray,
    depends: np.ndarray,
    ties_top: np.ndarray,
) -> tuple[str, ...]:
    """Queries whose metrics depend on the order, widest range of the first varying metric first (else the queries
    with ties in the top k); at most :data:`~diagnose.data.MAX_EXAMPLES`, as many as a report keeps."""
    varying = [j for j in range(n_metrics) if (hi[:, j] - lo[:, j] > TOL).any()]
    if varying:
        width = hi[:, varying[0]] - lo[:, varying[0]]
        idx = np.flatnonzero(depends)
        idx = idx[np.argsort(-width[idx], kind="stable")]
    else:
        idx = np.flatnonzero(ties_top)
    return tuple(str(golden[i]) for i in idx[:MAX_EXAMPLES])


def add_to_report(audit: TieAudit, report: ValidationReport) -> None:
    """Add the audit to ``report`` under code ``score_ties``: one warning (count = queries whose metrics depend on
    the tie order, examples = those queries with their range) when any metric depends on the order; one info
    (count = queries with ties in the top k) when ties exist but change none of the metrics asked; nothing else."""
    file = audit.source or None
    if audit.depends_on_order:
        report.add(
            "score_ties",
            audit.message() or "",
            severity="info"
            if audit.tool_made
            else "warning",  # the tool's own runs: nothing for the user to fix
            file=file,
            count=audit.n_queries_metric_depends_on_order,
            examples=audit.query_examples(),
        )
    elif audit.n_queries_with_ties:
        report.add(
            "score_ties",
            f"run {audit.run!r}: {audit.n_queries_with_ties} of {audit.n_queries} queries have tied scores in the "
            f"top {audit.k}, but none of the metrics ({', '.join(audit.metrics)}) changes with the order of the "
            f"tied documents at the printed precision ({PRINTED_DIGITS} decimals)",
            severity="info",
            file=file,
            count=audit.n_queries_with_ties,
            examples=audit.examples,
        )
