"""docs/metrics.md's metric tables, generated from :data:`~diagnose.metrics.REGISTRY` (``tests/test_metrics_docs.py``
fails when the page's copy differs; ``python -m diagnose.docs`` rewrites it): :func:`markdown_table` (every name
form with its formula and trec_eval measure) and :func:`bands_markdown_table` (the quality bands)."""

from __future__ import annotations

from diagnose.metrics.definitions import REGISTRY, Form

__all__ = ["bands_markdown_table", "markdown_table"]


def markdown_table() -> str:
    """The metric table of docs/metrics.md: one row per name form of every family, in
    :data:`REGISTRY` order; the last column is the trec_eval measure, or in parentheses the definition followed
    when trec_eval has none, or a dash."""
    lines = ["| metric | formula | trec_eval |", "|---|---|---|"]
    lines += [f"| `{f.name}` | {f.formula} | {_equivalent(f)} |" for m in REGISTRY.values() for f in m.forms]
    return "\n".join(lines)


def bands_markdown_table() -> str:
    """The quality-band table of docs/metrics.md: one row per distinct ``band`` (families sharing it together, in
    :data:`REGISTRY` order); coverage metrics have none."""
    families: dict[tuple[float, float, float], list[str]] = {}
    for m in REGISTRY.values():
        if m.band is not None:
            families.setdefault(m.band, []).append(f"`{m.name}`")
    lines = ["| metric family | a | b | c |", "|---|---|---|---|"]
    lines += [f"| {', '.join(names)} | {a:g} | {b:g} | {c:g} |" for (a, b, c), names in families.items()]
    return "\n".join(lines)


def _equivalent(form: Form) -> str:
    if form.trec_eval:
        return f"`{form.trec_eval}`"
    return f"({form.source})" if form.source else "—"
