"""Is run B really better than run A on *these* queries? Paired tests, bootstrap CIs, Holm and BH corrections,
effect sizes, randomised Tukey HSD for many runs, topic set size.

Every function takes per-query scores of two runs on the same golden queries, one value per query:

- ``a`` is the **reference** (the run you compare against), ``b`` the **run** under study;
- every signed quantity is ``b - a``: a positive mean difference, a positive t statistic and a "win" all mean
  that ``b`` scores higher;
- inputs are 1-D arrays / lists (aligned by position) or ``pd.Series`` indexed by query id (as in
  ``diagnose.metrics.evaluate(...).per_query[metric]``). Two Series are aligned on their index; if the two
  sets of query ids differ, or an id repeats, or a score is NaN / infinite, :class:`~diagnose.data.DataError`
  says which ids — nothing is dropped silently;
- per-query differences with ``|b - a| <= ZERO_TOL`` (1e-12) are float rounding noise (two code paths computing
  the same nDCG can differ in the last bit) and are set to exactly 0 before any test. Without this, a run compared
  with a bitwise-different copy of itself could come out "significant" with a difference of 1e-17.

Choices (and why):

- **Significance = Holm-corrected paired randomization test.** The randomization (sign-flip permutation) test makes
  no distributional assumption, which matters for IR metrics: bounded, skewed, and often discrete (hit rate is
  0/1, reciprocal rank takes values 1/k). Smucker, Allan & Carterette (CIKM 2007) found it the test to use for IR;
  the t-test and Wilcoxon p-values are reported beside it for comparison but do not decide ``significant``.
- **Holm family** (:func:`compare_all`): all (run vs reference, metric) comparisons made in one call. Holm controls
  the family-wise error rate under any dependence between the tests (the same queries, correlated metrics).
- **Benjamini-Hochberg beside Holm**: ``compare_all`` also gives ``p_bh`` (false discovery rate) over the same
  family, for screening many runs; ``significant`` stays on Holm.
- **Effect size beside every p-value**: paired Cohen's ``d_z = mean(d) / sd(d)``. A p-value says whether the data
  can tell the runs apart; ``d_z`` says how large the difference is against its per-query spread.
- **Many runs at once**: :func:`randomised_tukey_hsd` compares all pairs of three or more runs with the
  randomised Tukey HSD (Carterette 2012, Sakai 2014), which controls the family-wise error over all pairs.
- **Planning**: :func:`topic_set_size` (Sakai) is the number of queries needed to detect a given difference,
  :func:`min_detectable_difference` the difference the present queries can detect.
- **Bootstrap CI**: percentile bootstrap over queries by default (``method="bca"`` available); 95%. CIs are
  per comparison and **not** multiplicity-adjusted, so a CI may exclude 0 while ``p_holm`` is not significant.
- Everything is seeded with ``np.random.default_rng(seed)``: the same inputs and seed give the same numbers.
  ``compare_all`` uses the same seed for every comparison, so a comparison gives the same p-value alone or in a
  family.

One file per question a contributor brings:

- :mod:`~diagnose.stats.scores`: per-query scores in: alignment on query id, the checks, ``ZERO_TOL``.
- :mod:`~diagnose.stats.bootstrap`: :func:`bootstrap_ci`, :func:`paired_bootstrap_ci`.
- :mod:`~diagnose.stats.paired`: the paired tests (:func:`paired_ttest`, :func:`randomization_test`,
  :func:`wilcoxon_test`; :func:`mcnemar_exact` for paired right/wrong outcomes), :func:`effect_size`,
  :func:`win_tie_loss`. Start here to add a test.
- :mod:`~diagnose.stats.corrections`: :func:`holm`, :func:`benjamini_hochberg`.
- :mod:`~diagnose.stats.power`: :func:`topic_set_size`, :func:`min_detectable_difference`.
- :mod:`~diagnose.stats.comparison`: :class:`Comparison`, :func:`compare`, :func:`compare_all`,
  :func:`rank_with_ties`.
- :mod:`~diagnose.stats.tukey`: :func:`randomised_tukey_hsd`.

Every name below is importable from ``diagnose.stats`` itself::

    from diagnose.stats import compare_all
    compare_all({"bm25": ev_a.per_query, "dense": ev_b.per_query}, "bm25", ["ndcg@10"])
"""

from __future__ import annotations

from diagnose.stats.bootstrap import BootstrapMethod as BootstrapMethod
from diagnose.stats.bootstrap import bootstrap_ci, paired_bootstrap_ci
from diagnose.stats.comparison import CI_LEVEL, Comparison, RankedModel, compare, compare_all, rank_with_ties
from diagnose.stats.corrections import benjamini_hochberg, holm
from diagnose.stats.paired import (
    effect_size,
    mcnemar_exact,
    paired_ttest,
    randomization_test,
    wilcoxon_test,
    win_tie_loss,
)
from diagnose.stats.power import min_detectable_difference, topic_set_size
from diagnose.stats.scores import ZERO_TOL
from diagnose.stats.scores import Scores as Scores
from diagnose.stats.tukey import randomised_tukey_hsd

__all__ = [
    "CI_LEVEL",
    "ZERO_TOL",
    "Comparison",
    "RankedModel",
    "benjamini_hochberg",
    "bootstrap_ci",
    "compare",
    "compare_all",
    "effect_size",
    "holm",
    "mcnemar_exact",
    "min_detectable_difference",
    "paired_bootstrap_ci",
    "paired_ttest",
    "randomised_tukey_hsd",
    "randomization_test",
    "rank_with_ties",
    "topic_set_size",
    "wilcoxon_test",
    "win_tie_loss",
]
