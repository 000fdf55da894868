"""Metric names: ``family`` or ``family@k`` (``"ndcg@10"``, ``"mrr"``), parsed once into a :class:`MetricName`,
expanded from families and cutoffs, and checked, with a suggestion for the trec_eval / ir_measures spellings people
type (``P_10``, ``recip_rank``); the default cutoffs :data:`DEFAULT_KS`.

A name is parsed where it enters (the CLI, ``Analysis``, :func:`~diagnose.metrics.evaluate`) and passed inward as
a :class:`MetricName`: every function here accepts one and returns it as it is, so nothing is parsed twice.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import NamedTuple

from diagnose.checks import is_int
from diagnose.data import DataError
from diagnose.metrics.definitions import REGISTRY, Metric

__all__ = [
    "DEFAULT_FAMILIES",
    "DEFAULT_KS",
    "HEADLINE",
    "MetricName",
    "expand_metrics",
    "expand_names",
    "headline_metrics",
    "metric_family",
    "parse_metric",
]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
"""The cutoffs when none are given: ``diagnose evaluate --k``, ``Analysis(ks=...)``, ``diagnose.evaluate(k=...)``."""

DEFAULT_FAMILIES = tuple(m.name for m in REGISTRY.values() if m.by_default and m.cutoff != "none")
"""Families taken at every k by :func:`expand_metrics` when no metric is given (those whose record says
``by_default``: precision, recall, hit_rate, mrr, ndcg, map; then mrr, map, r_precision without cutoff)."""

HEADLINE = ("ndcg", "recall", "hit_rate", "mrr")
"""The headline metric families, in the order reports show them: nDCG, recall and hit rate at the one cutoff k of
the failures (``defaults.K`` unless given), and MRR over the whole ranking (no cutoff: 1 / the rank of the first
relevant document wherever it is). The compact report (with map), the bounds, the fusion table, the model choice
and the app's "Rank by" read them through :func:`headline_metrics`; a place that shows fewer or another order says
why beside its own list."""


def headline_metrics(k: int) -> list[str]:
    """:data:`HEADLINE` at the cutoff ``k``: ``["ndcg@k", "recall@k", "hit_rate@k", "mrr"]`` (a family whose cutoff
    is required takes ``@k``; mrr, whose cutoff is optional, none)."""
    return [f"{f}@{k}" if REGISTRY[f].cutoff == "required" else f for f in HEADLINE]


_NAME = re.compile(r"^([a-z0-9_]+)(?:@(.*))?$")
# trec_eval / ir_measures spellings people type (each record's ``aliases``), to suggest the right name
_ALIASES = {alias: m.name for m in REGISTRY.values() for alias in m.aliases}


def _valid_names() -> str:
    parts = []
    for m in REGISTRY.values():
        if m.cutoff == "required":
            parts.append(f"{m.name}@k")
        elif m.cutoff == "optional":
            parts.append(f"{m.name}, {m.name}@k")
        else:
            parts.append(m.name)
    return ", ".join(parts) + " (k a positive integer, e.g. ndcg@10)"


def _unknown(name: str, family: str, k: str | None) -> DataError:
    guess = _ALIASES.get(re.sub(r"[._]?\d+$", "", family)) or next(
        iter(difflib.get_close_matches(family, list(REGISTRY), n=1)), None
    )
    cut = (
        k
        if k is not None
        else (re.search(r"(\d+)$", family).group(1) if re.search(r"\d+$", family) else None)
    )
    hint = ""
    if guess:
        suggestion = f"{guess}@{cut}" if cut and REGISTRY[guess].cutoff != "none" else guess
        hint = f" Did you mean {suggestion!r}?"
    return DataError(f"Unknown metric {name!r}.{hint} Valid metrics: {_valid_names()}.")


class MetricName(NamedTuple):
    """A parsed metric name: ``family`` (a key of :data:`~diagnose.metrics.REGISTRY`) and its cutoff ``k`` (None:
    no cutoff). ``str()`` gives the canonical name (``"ndcg@10"``, ``"mrr"``), the column name of every table.
    Build it from text with :func:`parse_metric`, which checks it."""

    family: str
    k: int | None = None

    def __str__(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    @property
    def metric(self) -> Metric:
        """The family's :class:`~diagnose.metrics.Metric` record."""
        return REGISTRY[self.family]


def parse_metric(name: str | MetricName) -> MetricName:
    """``"ndcg@10" -> MetricName("ndcg", 10)``, ``"mrr" -> MetricName("mrr", None)`` (a tuple: ``family, k =
    parse_metric(name)``). Case and surrounding spaces are ignored; a :class:`MetricName` is returned as it is.

    Raises :class:`DataError` (listing the valid names) for an unknown family, a missing or non-positive ``k``,
    or a ``k`` on ``r_precision``.
    """
    if isinstance(name, MetricName):
        return name
    text = str(name).strip().lower()
    match = _NAME.match(text)
    if not match:
        raise _unknown(str(name), text, None)
    family, k_text = match.group(1), match.group(2)
    if family not in REGISTRY:
        raise _unknown(str(name), family, k_text)
    spec = REGISTRY[family]
    if k_text is None:
        if spec.cutoff == "required":
            raise DataError(
                f"Metric {name!r} needs a cutoff, e.g. {family}@10. Valid metrics: {_valid_names()}."
            )
        return MetricName(family, None)
    if spec.cutoff == "none":
        raise DataError(f"Metric {name!r}: {family} takes no cutoff (its cutoff is R). Use {family!r}.")
    if not re.fullmatch(r"\d+", k_text) or int(k_text) < 1:
        raise DataError(f"Metric {name!r}: the cutoff after @ must be a positive integer, e.g. {family}@10.")
    return MetricName(family, int(k_text))


def metric_family(name: str | MetricName) -> str:
    """``"ndcg@10" -> "ndcg"``."""
    return parse_metric(name).family


def expand_metrics(metrics: Sequence[str | MetricName] | None, ks: Sequence[int]) -> list[str]:
    """Turn user metric names into full names, in order, without duplicates (the names of
    :func:`expand_names`)."""
    return [str(n) for n in expand_names(metrics, ks)]


def expand_names(metrics: Sequence[str | MetricName] | None, ks: Sequence[int]) -> list[MetricName]:
    """Turn user metric names into :class:`MetricName` records, in order, without duplicates.

    - ``None``: ``precision, recall, hit_rate, mrr, ndcg, map`` at every k, then ``mrr``, ``map``, ``r_precision``.
    - a name with ``@`` is kept as is (``ndcg@10`` stays even if 10 is not in ``ks``);
    - a family that needs a cutoff (``precision recall hit_rate ndcg f1 judged hole``) is taken at every k:
      ``"ndcg"`` with ks ``[1, 10]`` -> ``ndcg@1, ndcg@10``;
    - ``mrr`` and ``map`` without ``@`` mean the metric without cutoff (``recip_rank``, ``map``); write ``mrr@10``
      for the cut version; ``r_precision`` has no cutoff.

    Unknown names raise :class:`DataError` listing the valid ones.
    """
    ks = list(ks)
    for k in ks:
        if not is_int(k) or k < 1:
            raise DataError(f"Cutoffs must be positive integers, got {k!r} in {ks!r}.")
    if metrics is None:
        names = [MetricName(f, int(k)) for f in DEFAULT_FAMILIES for k in ks]
        names += [MetricName(m.name) for m in REGISTRY.values() if m.by_default and m.cutoff != "required"]
        return list(dict.fromkeys(names))
    out: list[MetricName] = []
    for raw in metrics:
        if isinstance(raw, MetricName):
            out.append(raw)
            continue
        text = str(raw).strip().lower()
        if not text:
            continue
        if "@" in text:
            out.append(parse_metric(text))
            continue
        family = text
        if family not in REGISTRY:
            raise _unknown(str(raw), family, None)
        if REGISTRY[family].cutoff == "required":
            if not ks:
                raise DataError(
                    f"Metric {raw!r} needs a cutoff: give cutoffs (k) or write {family}@10.", param="k"
                )
            out.extend(MetricName(family, int(k)) for k in ks)
        else:
            out.append(MetricName(family))
    if not out:
        raise DataError(f"No metric given. Valid metrics: {_valid_names()}.")
    return list(dict.fromkeys(out))


def parse_all(metrics: Sequence[str | MetricName] | str) -> list[MetricName]:
    """Each name parsed once, duplicates dropped, order kept; :class:`DataError` when there is none."""
    if isinstance(metrics, str):
        metrics = [metrics]
    parsed = list(dict.fromkeys(parse_metric(m) for m in metrics))
    if not parsed:
        raise DataError(f"No metric given. Valid metrics: {_valid_names()}.")
    return parsed
