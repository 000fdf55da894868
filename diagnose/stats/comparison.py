"""One run against a reference: the :class:`Comparison` record and its verdict, :func:`compare` (every test on one
metric), :func:`compare_all` (a Holm / BH family of runs x metrics) and :func:`rank_with_ties` (the model-choice
table: who is tied with the best)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from diagnose import defaults
from diagnose.data import DataError
from diagnose.io.messages import plural_of
from diagnose.stats.bootstrap import BootstrapMethod, bootstrap_ci
from diagnose.stats.corrections import benjamini_hochberg, holm
from diagnose.stats.paired import effect_size, paired_ttest, randomization_test, wilcoxon_test, win_tie_loss
from diagnose.stats.power import min_detectable_difference
from diagnose.stats.scores import Scores, check_fraction, diffs, metric_scores, paired_scores, score_values

CI_LEVEL = 0.95
"""Confidence level of the CIs in :class:`Comparison` (the verdict says "95% CI")."""


def _fmt_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"={p:.3f}"


def _fmt_diffs(*xs: float) -> list[str]:
    """Three decimals, unless every value is below 0.001 in size (then scientific, so 4e-05 does not read 0)."""
    if all(abs(x) < 0.001 for x in xs) and any(x != 0 for x in xs):
        return [f"{x:.1e}" for x in xs]
    return [f"{x:.3f}" for x in xs]


def _json_number(x: Any) -> Any:
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer | np.bool_):
        return x.item()
    return x


@dataclass(frozen=True)
class Comparison:
    """``run`` vs ``reference`` on one metric; every difference is ``run - reference``.

    ``ci_low, ci_high``: 95% paired bootstrap CI of ``mean_diff``. ``p_ttest``: paired t-test;
    ``p_randomization``: paired sign-flip randomization test; ``p_wilcoxon``: Wilcoxon signed-rank (zero
    differences dropped). ``p_holm``: ``p_randomization`` Holm-adjusted over the family of :func:`compare_all`
    (equal to ``p_randomization`` from :func:`compare` alone). ``significant``: ``p_holm < alpha``.
    ``wins/ties/losses``: queries where the run scores higher / the same (within 1e-9) / lower.
    ``mdd``: :func:`min_detectable_difference` at ``alpha`` and 80% power (``inf`` with < 2 queries).
    ``effect_size``: paired Cohen's ``d_z = mean_diff / sd(differences)`` (:func:`effect_size`; NaN with one
    query, ``+-inf`` for a constant non-zero difference). ``p_bh``: ``p_randomization`` Benjamini-Hochberg-adjusted
    over the same family as ``p_holm`` (a false-discovery-rate view; ``significant`` still follows ``p_holm``).
    """

    metric: str
    run: str
    reference: str
    mean_diff: float
    ci_low: float
    ci_high: float
    p_ttest: float
    p_randomization: float
    p_wilcoxon: float
    p_holm: float
    wins: int
    ties: int
    losses: int
    n_queries: int
    mdd: float
    significant: bool
    effect_size: float
    p_bh: float

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe dict of all fields (non-finite floats, e.g. ``mdd`` with one query, become None)."""
        return {f.name: _json_number(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def verdict(self) -> str:
        """One plain sentence, e.g. ``"bm25 is 0.042 higher than ann on ndcg@10 (95% CI 0.010 to 0.071,
        p_holm=0.012): significant."``"""
        queries = plural_of(self.n_queries, "query", "queries")
        if self.wins == 0 and self.losses == 0 and self.mean_diff == 0:
            return f"{self.run} and {self.reference} score the same on {self.metric} on all {queries}: no difference."
        diff, low, high = _fmt_diffs(abs(self.mean_diff), self.ci_low, self.ci_high)
        if self.mean_diff == 0:
            head = f"{self.run} scores the same as {self.reference} on average on {self.metric}"
        else:
            direction = "higher" if self.mean_diff > 0 else "lower"
            head = f"{self.run} is {diff} {direction} than {self.reference} on {self.metric}"
        effect = f", effect size d_z {self.effect_size:.2f}" if math.isfinite(self.effect_size) else ""
        detail = (
            f" ({round(CI_LEVEL * 100)}% CI {low} to {high}, p_holm{_fmt_p(self.p_holm)}{effect}, {queries})"
        )
        if self.significant:
            return f"{head}{detail}: significant."
        if math.isfinite(self.mdd) and self.mdd > 0:
            why = f"the smallest difference this many queries can detect is ~{self.mdd:.2g}"
        elif self.n_queries < 2:
            why = "one query cannot show a difference"
        else:
            why = f"{self.n_queries} queries are too few for the randomization test"
        return f"{head}{detail}: not significant: the data cannot tell them apart ({why})."


def compare(
    a: Scores,
    b: Scores,
    *,
    metric: str,
    run: str,
    reference: str,
    alpha: float = 0.05,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
    bootstrap_method: BootstrapMethod = "percentile",
) -> Comparison:
    """Compare run ``b`` (named ``run``) with reference ``a`` (named ``reference``) on one metric.

    Runs every test above on the same per-query differences ``b - a``; the CI is the 95% paired bootstrap CI
    (``bootstrap_method``), the randomization test and the bootstrap use ``n_resamples`` and ``seed``.
    Alone, ``p_holm = p_bh = p_randomization`` (a family of one); :func:`compare_all` fills them for a family.
    """
    alpha = check_fraction(alpha, "alpha")
    what = f"{metric}: {run} vs {reference}"
    av, bv = paired_scores(a, b, what)
    d = diffs(av, bv, what)
    lo, hi = bootstrap_ci(d, n_resamples=n_resamples, confidence=CI_LEVEL, seed=seed, method=bootstrap_method)
    p_rand = randomization_test(av, bv, n_resamples=n_resamples, seed=seed)
    wins, ties, losses = win_tie_loss(av, bv)
    return Comparison(
        metric=metric,
        run=run,
        reference=reference,
        mean_diff=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        p_ttest=paired_ttest(av, bv)[1],
        p_randomization=p_rand,
        p_wilcoxon=wilcoxon_test(av, bv),
        p_holm=p_rand,
        wins=wins,
        ties=ties,
        losses=losses,
        n_queries=int(d.size),
        mdd=min_detectable_difference(d, alpha=alpha),
        significant=bool(p_rand < alpha),
        effect_size=effect_size(d),
        p_bh=p_rand,
    )


def compare_all(
    per_query: Mapping[str, Any],
    reference: str,
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
    bootstrap_method: BootstrapMethod = "percentile",
) -> list[Comparison]:
    """Every run vs ``reference`` on every metric, Holm-corrected as one family.

    ``per_query``: run name -> that run's per-query scores: a DataFrame indexed by query id with one column per
    metric (``Evaluation.per_query``), a mapping metric -> Series, or an ``Evaluation``. Runs are aligned on
    query id (a mismatch raises :class:`DataError` naming the ids).

    **Family**: all ``len(metrics) * (number of runs - 1)`` comparisons of this call. ``p_holm`` is
    :func:`holm` applied to their ``p_randomization`` values, and ``significant = p_holm < alpha``. Since the
    randomization p-value is at least ``1 / (n_resamples + 1)``, nothing can be significant unless
    ``family size / (n_resamples + 1) < alpha``: raise ``n_resamples`` for very large families.

    ``p_bh`` is :func:`benjamini_hochberg` over the same family: read it when a share of false discoveries
    is acceptable (screening many runs); ``significant`` stays on Holm.

    Order: metric by metric (in ``metrics`` order), runs in ``per_query`` order, the reference skipped.
    """
    if reference not in per_query:
        raise DataError(f"reference run {reference!r} is not among the runs {list(per_query)}.")
    alpha = check_fraction(alpha, "alpha")
    # the settings every comparison of the family shares
    one = functools.partial(
        compare, alpha=alpha, n_resamples=n_resamples, seed=seed, bootstrap_method=bootstrap_method
    )
    results = [
        one(
            metric_scores(per_query[reference], metric, reference),
            metric_scores(table, metric, name),
            metric=metric,
            run=name,
            reference=reference,
        )
        for metric in metrics
        for name, table in per_query.items()
        if name != reference
    ]
    raw = [c.p_randomization for c in results]
    return [
        dataclasses.replace(c, p_holm=float(p), significant=bool(p < alpha), p_bh=float(q))
        for c, p, q in zip(results, holm(raw), benjamini_hochberg(raw), strict=True)
    ]


class RankedModel(NamedTuple):
    """A row of the model-choice table. ``tied_with_best``: not significantly different from the best."""

    rank: int
    name: str
    mean: float
    tied_with_best: bool


def rank_with_ties(
    per_query: Mapping[str, Any],
    metric: str,
    *,
    alpha: float = 0.05,
    n_resamples: int = defaults.RESAMPLES,
    seed: int = defaults.SEED,
) -> list[RankedModel]:
    """Rank models by mean ``metric`` (higher is better), sharing rank 1 among those statistically tied with
    the best.

    The best is the highest mean (first in ``per_query`` order on an exact tie). Every other model is compared
    with it by the paired randomization test; the ``k - 1`` p-values are Holm-corrected as one family; a model
    with ``p_holm >= alpha`` is **tied with the best** and gets rank 1. The rows list the tied group first, then
    the others by decreasing mean, ranked by competition ranking (``1, 1, 1, 4, 5``; equal means share a rank).
    "Tied" means "the data cannot tell them apart", not "equal".

    ``per_query``: model name -> per-query scores (a Series for ``metric``, or a table as in :func:`compare_all`).
    """
    alpha = check_fraction(alpha, "alpha")
    if not per_query:
        return []
    scores = {name: metric_scores(table, metric, name) for name, table in per_query.items()}
    means = {name: float(score_values(s, f"{metric}: {name}").mean()) for name, s in scores.items()}
    best = max(means, key=lambda name: means[name])  # first of equal maxima, in mapping order
    others = [name for name in scores if name != best]
    pvals = [
        randomization_test(scores[best], scores[name], n_resamples=n_resamples, seed=seed) for name in others
    ]
    tied = {best} | {name for name, p in zip(others, holm(pvals), strict=True) if p >= alpha}
    order = sorted(scores, key=lambda name: (name not in tied, -means[name]))
    rows: list[RankedModel] = []
    for i, name in enumerate(order):
        if name in tied:
            rank = 1
        elif i > 0 and order[i - 1] not in tied and means[order[i - 1]] == means[name]:
            rank = rows[-1].rank
        else:
            rank = i + 1
        rows.append(RankedModel(rank, name, means[name], name in tied))
    return rows
