"""The Markdown report of what the app shows, and the CSV/JSON exports. No Streamlit import (testable as is).

The report is a snapshot of the current state: the data, the model, k, the failure definition, the metrics of
every run with their quality bands, the failure classes of the run under study with the calibrated threshold, the
worst failures with their evidence and recommendation, and the validation problems.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from diagnose.data import ValidationReport, json_default
from diagnose.failures import CLASS_LABELS, CLASSES, RECOMMENDATIONS, Diagnosis, sort_worst


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.4f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table (numbers right-aligned)."""
    cols = list(columns or df.columns)
    if not len(df):
        return "_(none)_"
    num = [pd.api.types.is_numeric_dtype(df[c]) for c in cols]
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if n else "---" for n in num) + "|"]
    for row in df[cols].itertuples(index=False):
        out.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(out)


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
) -> str:
    """The report as Markdown. ``metrics``: one row per run (``run``, ``kind``, metric columns, ``band:<metric>``)."""
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
            table[c] = [f"{v:.4f} ({b})" for v, b in zip(table[c], table[band], strict=True)]
    lines.append(md_table(table, ["run", "kind", "queries", *metric_cols]))
    if diagnosis is not None:
        d = diagnosis
        cal = d.calibration
        lines += [
            "",
            f"## Failures of run `{d.run}`",
            "",
            f"{len(d.failed_queries)} of {d.n_queries} golden queries fail at k={d.k} ({d.mode}); "
            f"{len(d.failures)} missed relevant documents analysed.",
            "",
            f"Cosine threshold of {cal.model}: calibrated {cal.calibrated:.3f} ({cal.to_dict()['method']}, "
            f"{cal.n_pairs} pairs); seed {cal.seed:.2f}.",
            "",
        ]
        counts = pd.DataFrame(
            [{"class": CLASS_LABELS[c], "id": c, "failures": n} for c, n in d.class_counts.items() if n]
        )
        lines.append(md_table(counts) if len(counts) else "No failures.")
        present = [c for c in CLASSES if d.class_counts.get(c)]
        if present:
            lines += ["", "### Recommendations", ""]
            lines += [f"- **{CLASS_LABELS[c]}**: {RECOMMENDATIONS[c]}" for c in present]
        shown = sort_worst(d.failures)
        if query_id:
            shown = [f for f in shown if f.query_id == query_id] + [
                f for f in shown if f.query_id != query_id
            ]
        if shown:
            lines += ["", f"### Worst failures (first {min(worst, len(shown))} of {len(shown)})", ""]
            for f in shown[:worst]:
                lines.append(f"- **{CLASS_LABELS[f.cls]}**: query `{f.query_id}` ({f.query_text!r}), target "
                             f"`{f.doc_id}`. {f.evidence} Seed rule: {f.seed_verdict}; calibrated rule: "
                             f"{f.calibrated_verdict}.")  # fmt: skip
    lines += ["", "## Validation", ""]
    if len(validation):
        lines += [
            f"- [{p.severity}] {(p.file + ': ') if p.file else ''}{p.message} ({p.count}x)"
            for p in validation
        ]
    else:
        lines.append("No problems found in the input.")
    return "\n".join(lines) + "\n"


def per_query_frame(evaluations: Mapping[str, Any], k: int) -> pd.DataFrame:
    """Long table: one row per (run, golden query) with every metric at ``k``."""
    frames = []
    for name, ev in evaluations.items():
        cols = [c for c in ev.per_query.columns if c.endswith(f"@{k}")]
        df = ev.per_query[cols].reset_index()
        df = df.rename(columns={df.columns[0]: "query_id"})
        df.insert(0, "run", name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def per_query_json(evaluations: Mapping[str, Any], k: int) -> str:
    """``{"k": k, "runs": {run: {"aggregate": {...}, "per_query": {query_id: {metric: value}}}}}``."""
    out: dict[str, Any] = {"k": k, "runs": {}}
    for name, ev in evaluations.items():
        cols = [c for c in ev.per_query.columns if c.endswith(f"@{k}")]
        out["runs"][name] = {
            "aggregate": {c: float(ev.aggregate[c]) for c in cols},
            "per_query": {
                str(q): {c: float(v) for c, v in row.items()} for q, row in ev.per_query[cols].iterrows()
            },
        }
    return json.dumps(out, indent=2)


def diagnosis_json(diagnosis: Diagnosis) -> str:
    return json.dumps(diagnosis.to_dict(), indent=2, default=json_default)
