"""The failures report and the app's Markdown report, rendered from a :class:`~diagnose.failures.Diagnosis`.

- :func:`failures_dict`: the ``diagnose failures --format json`` contract (the diagnosis, ``label_noise``,
  ``hubness``, ``warnings``; the command adds ``remedies``, ``remedy_matrix``, ``advice`` and ``findings``).
- :func:`failures_text`: the human-readable report of ``diagnose failures``.
- :func:`markdown_report`: the Markdown report of the app (the metrics, then the diagnosis).

Importable from :mod:`diagnose.report` too, beside the evaluation report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from diagnose.data import ValidationReport
from diagnose.failures import CLASS_LABELS, CLASSES, Diagnosis, Failure, recommendation, sort_worst
from diagnose.report.tables import cell, markdown_table, text_table
from diagnose.runtime.lazy import pandas as pd

# --------------------------------------------------------------------------------------------- failures


def failures_dict(
    diagnosis: Diagnosis,
    *,
    label_noise: Any = None,
    hubness: Any = None,
    validation: ValidationReport | None = None,
) -> dict[str, Any]:
    """The ``diagnose failures --format json`` document: the diagnosis with ``label_noise``, ``hubness`` and
    ``warnings`` (when given)."""
    payload = diagnosis.to_dict()
    if label_noise is not None:
        payload["label_noise"] = label_noise.to_dict()
    if hubness is not None:
        payload["hubness"] = hubness.to_dict()
    if validation is not None:
        payload["warnings"] = [p.to_dict() for p in validation.warnings]
    return payload


def failures_text(
    diagnosis: Diagnosis,
    *,
    model: str,
    label_noise: Any = None,
    hubness: Any = None,
    remedies: Any = None,
    remedy_matrix: Any = None,
    findings: Any = None,
    advice: Any = None,
) -> str:
    """The human-readable report of ``diagnose failures``: the findings first (what to fix, ranked:
    :mod:`diagnose.whatif.findings`, when given), then every failure worst first, counts, recommendations, the
    remedies and their matrix, and one line per class whose measured advice differs from its rule (``advice``:
    :mod:`diagnose.whatif.advice`)."""
    d, cal = diagnosis, diagnosis.calibration
    lines = [*findings.lines(), ""] if findings is not None else []
    lines += [
        f"run {d.run!r}: {d.counts_sentence()}; every missed pair analysed.",
        f"run kind: {d.run_kind.sentence()}.",
        f"model {model}: calibrated cosine threshold {cal.calibrated:.3f} ({cal.to_dict()['method']}, "
        f"{cal.n_pairs} pairs); seed threshold {cal.seed:.2f}.",
        d.window_note(),
        "",
    ]
    for f in sort_worst(d.failures):
        lines += _failure_text(f)
    lines += _counts_text(d)
    lines += _remedies_text(remedies, remedy_matrix)
    if advice is not None and advice.lines():
        lines += ["", advice.head(), *[f"- {x}" for x in advice.lines()]]
    lines += _label_noise_text(label_noise, k=d.k)
    if hubness is not None and len(hubness.hubs):
        lines += ["", f"hubs (k-occurrence skewness {hubness.skewness:.2f}):"]
        lines.append(text_table(hubness.hubs.to_dict(orient="records"), ["doc_id", "occurrences", "share"]))
    return "\n".join(lines)


def _failure_text(f: Failure) -> list[str]:
    """One missed pair of the text report: its class, query, target, evidence, what beat it and both verdicts."""
    lines = [
        f"[{f.cls}] query {f.query_id}: {f.query_text}",
        f"  target {f.doc_id} (grade {f.grade}): {f.evidence}",
    ]
    if f.missing_terms:
        lines.append(f"  query terms missing from the target: {', '.join(f.missing_terms)}")
    if f.top_retrieved:
        beat = "; ".join(
            f"#{c.rank} {c.doc_id} (cos q {cell(c.cosine_query)}, cos target {cell(c.cosine_target)})"
            for c in f.top_retrieved[:3]
        )
        lines.append(f"  beaten by: {beat}")
    return [*lines, f"  seed rule: {f.seed_verdict}; calibrated rule: {f.calibrated_verdict}", ""]


def _counts_text(d: Diagnosis) -> list[str]:
    """The text report's counts per class and the recommendation of every class present."""
    lines = ["counts per class (a failed query whose missed pairs fall in two classes counts in both):"]
    counts = [
        {"class": c, "label": CLASS_LABELS[c], "missed pairs": n, "failed queries": d.class_failed_queries[c]}
        for c, n in d.class_counts.items()
    ]
    lines.append(text_table(counts, ["class", "label", "missed pairs", "failed queries"]))
    present = [c for c, n in d.class_counts.items() if n]
    if present:
        lines += ["", "recommendations:"] + [
            f"- {c}: {recommendation(c, d.run_kind.kind, d.thresholds)}" for c in present
        ]
    return lines


def _remedies_text(remedies: Any, remedy_matrix: Any) -> list[str]:
    """The text report's remedies measured on this run and the remedy matrix (nothing when absent or empty)."""
    lines: list[str] = []
    if remedies is not None and remedies.sentences():
        lines += ["", "remedies, applied to this run and measured:"] + [
            f"- {x}" for x in remedies.sentences()
        ]
    if remedy_matrix is not None and remedy_matrix.classes:
        m = remedy_matrix
        lines += [
            "",
            f"remedy matrix: every remedy applied to every class's {m.unit} (recovered at k={m.k}):",
        ]
        lines += [
            text_table(m.rows(), ["class", *m.remedy_ids]),
            *m.legend(),
            *[f"- {x}" for x in m.sentences()],
        ]
    return lines


def _label_noise_text(label_noise: Any, *, k: int) -> list[str]:
    """The text report's label-noise sentence and query-copies sentence (each only when there is something to
    report)."""
    if label_noise is None:
        return []
    lines = []
    if len(label_noise.unjudged_duplicates) or len(label_noise.conflicting_queries):
        lines += [
            "",
            f"label noise: {len(label_noise.unjudged_duplicates)} unjudged near-duplicates of relevant documents "
            f"in top {k}; {len(label_noise.duplicate_documents)} duplicate documents in the corpus; "
            f"{len(label_noise.conflicting_queries)} identical queries with conflicting judgements.",
        ]
    copies = getattr(label_noise, "query_copies", None)
    if copies is not None and len(copies):
        lines += [
            "",
            f"query copies: {label_noise.n_queries_with_copies} golden queries have a copy of their own text in "
            f"their top {k} ({len(copies)} documents, cosine >= the duplicate threshold or the same text; a "
            "document whose id is the query's is not counted): in a collection whose queries are documents, "
            "such a copy is the query itself under another id, and a judge would not call it an answer.",
        ]
    return lines


# --------------------------------------------------------------------------------------------- markdown report


def markdown_report(
    *,
    data_label: str,
    data_lines: Sequence[str],
    model: str,
    k: int,
    mode: str,
    metrics: pd.DataFrame,
    diagnosis: Diagnosis | None,
    validation: ValidationReport,
    page: str = "",
    query_id: str | None = None,
    worst: int = 10,
    remedies: Any = None,
    remedy_matrix: Any = None,
    advice: Any = None,
) -> str:
    """The report as Markdown. ``metrics``: one row per run (``run``, ``kind``, metric columns, ``band:<metric>``);
    ``advice``: :class:`~diagnose.whatif.advice.Advice`, its lines after the matrix (where the data overrules a
    class's rule)."""
    lines = ["# diagnose report", ""]
    lines.append(f"- **Data**: {data_label}")
    lines += [f"  - {x}" for x in data_lines]
    lines.append(f"- **Embedding model**: {model}")
    lines.append(f"- **k**: {k}; **failure definition**: {mode}")
    if page:
        lines.append(f"- **Page**: {page}" + (f"; **query**: {query_id}" if query_id else ""))
    lines += ["", f"## Metrics at k={k}", ""]
    metric_cols = [c for c in metrics.columns if "@" in c and not c.startswith("band:")]
    table = metrics.copy()
    for c in metric_cols:
        band = f"band:{c}"
        if band in table:
            table[c] = [
                f"{v:.4f} ({b})" if b else f"{v:.4f}" for v, b in zip(table[c], table[band], strict=True)
            ]
    lines.append(markdown_table(table, ["run", "kind", "queries", *metric_cols]))
    if diagnosis is not None:
        lines += ["", *_diagnosis_markdown(diagnosis, query_id=query_id, worst=worst)]
    if remedies is not None and remedies.sentences():
        lines += ["", "### Remedies, applied to this run and measured", ""]
        lines += [f"- {x}" for x in remedies.sentences()]
    if remedy_matrix is not None and remedy_matrix.classes:
        m = remedy_matrix
        lines += ["", f"### Remedy matrix: every remedy applied to every class's {m.unit}", ""]
        lines += [markdown_table(m.rows(), ["class", *m.remedy_ids]), "", *[f"- {x}" for x in m.legend()]]
        lines += ["", *[f"- {x}" for x in m.sentences()]]
    if advice is not None and advice.lines():
        lines += [
            "",
            f"### Measured advice: where the data overrules a class's rule ({advice.method} correction)",
            "",
        ]
        lines += [f"- {x}" for x in advice.lines()]
    lines += ["", "## Validation", ""]
    if len(validation):
        lines += [f"- {p.format().splitlines()[0]}" for p in validation]
    else:
        lines.append("No problems found in the input.")
    return "\n".join(lines) + "\n"


def _diagnosis_markdown(d: Diagnosis, *, query_id: str | None, worst: int) -> list[str]:
    cal = d.calibration
    lines = [
        f"## Failures of run `{d.run}`",
        "",
        f"{d.counts_sentence()}; every missed pair analysed. Run kind: {d.run_kind.sentence()}. {d.window_note()}",
        "",
        f"Cosine threshold of {cal.model}: calibrated {cal.calibrated:.3f} ({cal.to_dict()['method']}, "
        f"{cal.n_pairs} pairs); seed {cal.seed:.2f}.",
        "",
    ]
    counts = [
        {"class": CLASS_LABELS[c], "id": c, "missed pairs": n, "failed queries": d.class_failed_queries[c]}
        for c, n in d.class_counts.items()
        if n
    ]
    lines.append(markdown_table(counts) if counts else "No failures.")
    present = [c for c in CLASSES if d.class_counts.get(c)]
    if present:
        lines += ["", "### Recommendations", ""]
        lines += [
            f"- **{CLASS_LABELS[c]}**: {recommendation(c, d.run_kind.kind, d.thresholds)}" for c in present
        ]
    shown = sort_worst(d.failures)
    if query_id:
        shown = [f for f in shown if f.query_id == query_id] + [f for f in shown if f.query_id != query_id]
    if shown:
        lines += ["", f"### Worst missed pairs (first {min(worst, len(shown))} of {len(shown)})", ""]
        for f in shown[:worst]:
            lines.append(
                f"- **{CLASS_LABELS[f.cls]}**: query `{f.query_id}` ({f.query_text!r}), target "
                f"`{f.doc_id}`. {f.evidence} Seed rule: {f.seed_verdict}; calibrated rule: "
                f"{f.calibrated_verdict}."
            )
    return lines
