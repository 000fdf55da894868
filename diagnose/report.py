"""What an analysis says, in one schema, rendered as JSON, CSV, Markdown or a text table.

Every face uses these functions: ``diagnose evaluate/failures --format ...`` prints them, the app's download
buttons serve them, and ``Analysis.to_dict()`` returns the JSON dict. So the CLI's JSON, the app's JSON download
and the notebook's dict are the same document.

- :class:`EvaluationReport`: the metrics of every run (aggregate and per query), the paired comparisons with the
  reference, the queries each run fixes and breaks, the metric slices, the CI gate and the validation report.
  ``to_dict()`` is the ``diagnose evaluate --format json`` contract (keys: ``runs``, ``metrics``, ``k``,
  ``no_relevant_queries``, ``reference``, ``comparisons``, ``query_changes``, ``gate``, ``warnings``,
  ``validation``, and ``slices`` when asked).
- :func:`failures_dict`: the ``diagnose failures --format json`` contract (the diagnosis, ``label_noise``,
  ``hubness``, ``warnings``).
- :func:`markdown_report`: the Markdown report of the app.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from diagnose.data import ValidationReport, json_default
from diagnose.failures import CLASS_LABELS, CLASSES, Diagnosis, recommendation, sort_worst
from diagnose.metrics import Evaluation, parse_metric, quality_band

# --------------------------------------------------------------------------------------------- cells and tables


def cell(v: Any) -> str:
    """A value as table text: floats with 4 decimals, NaN and None as an en dash."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned text table (numbers right-aligned)."""
    cells = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    numeric = _numeric(rows, columns)

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(list(columns)), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)


def markdown_table(
    rows: Sequence[Mapping[str, Any]] | pd.DataFrame, columns: Sequence[str] | None = None
) -> str:
    """A GitHub Markdown table (numbers right-aligned; ``|`` and newlines in cells escaped)."""
    if isinstance(rows, pd.DataFrame):
        columns = list(columns or rows.columns)
        rows = rows[columns].to_dict(orient="records")
    columns = list(columns or (rows[0].keys() if rows else []))
    if not rows:
        return "_(none)_"
    numeric = _numeric(rows, columns)
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for r in rows:
        out.append(
            "| "
            + " | ".join(cell(r.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in columns)
            + " |"
        )
    return "\n".join(out)


def _numeric(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[bool]:
    """Per column: every row holds a number there (not a bool), so the column is right-aligned; False with no rows."""
    return [
        bool(rows) and all(isinstance(r.get(c), int | float) and not isinstance(r.get(c), bool) for r in rows)
        for c in columns
    ]


def band_of(metric: str, value: float) -> str | None:
    """The quality band of a metric value, None for metrics whose record leaves it out of tables
    (``band_in_tables``: precision, f1, bounded by R/k, README "Quality bands")."""
    try:
        name = parse_metric(metric)
    except Exception:  # noqa: BLE001 - not a registered metric (e.g. a latency column): no band
        return None
    return quality_band(name, value) if name.metric.band_in_tables else None


def per_query_frame(
    evaluations: Mapping[str, Evaluation], metrics: Sequence[str] | None = None
) -> pd.DataFrame:
    """Long table: one row per (run, golden query), columns ``run, query_id`` and the metrics (all, or those
    named)."""
    frames = []
    for name, ev in evaluations.items():
        cols = [c for c in (metrics or ev.per_query.columns) if c in ev.per_query.columns]
        df = ev.per_query[cols].reset_index()
        df = df.rename(columns={df.columns[0]: "query_id"})
        df.insert(0, "run", name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run", "query_id"])


# --------------------------------------------------------------------------------------------- evaluate


@dataclass
class EvaluationReport:
    """Everything ``diagnose evaluate`` reports. Built by ``Analysis.evaluation_report``."""

    metrics: list[str]
    ks: list[int]
    evaluations: dict[str, Evaluation]
    reference: str
    comparisons: list[Any] = field(default_factory=list)  # diagnose.stats.Comparison
    query_changes: dict[str, dict[str, Any]] = field(default_factory=dict)
    gate: list[str] = field(default_factory=list)
    slices: pd.DataFrame | None = None
    slice_field: str | None = None
    validation: ValidationReport = field(default_factory=ValidationReport)
    extra_columns: dict[str, dict[str, float]] = field(
        default_factory=dict
    )  # run -> {column: value} (latency)
    latency_detail: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # run -> slowest, timed_out, per query
    ties: dict[str, Any] = field(default_factory=dict)  # run -> diagnose.ties.TieAudit
    tukey: pd.DataFrame | None = None  # randomised Tukey HSD over every pair (three or more runs)
    queries_needed: pd.DataFrame | None = None  # topic-set size per (metric, run), when asked
    bounds: pd.DataFrame | None = (
        None  # per (run, metric): lower (as reported), upper (unjudged at best), gap
    )
    coverage: pd.DataFrame | None = None  # per run: judged@k and hole@k

    @property
    def passed(self) -> bool:
        return not self.gate

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """The ``diagnose evaluate --format json`` document."""
        runs: dict[str, Any] = {}
        for name, ev in self.evaluations.items():
            entry: dict[str, Any] = {
                "aggregate": {m: float(v) for m, v in ev.aggregate.items()},
                "quality": {m: quality_band(m, v) for m, v in ev.aggregate.items()},
                "n_queries": int(len(ev.per_query)),
                "missing_queries": list(ev.missing_queries),
            }
            if name in self.extra_columns:
                entry["latency"] = {c: _finite(v) for c, v in self.extra_columns[name].items()}
            if name in self.latency_detail:
                detail = self.latency_detail[name]
                entry.setdefault("latency", {}).update(
                    slowest=detail["slowest"], timed_out=detail["timed_out"]
                )
                if per_query:
                    entry["latency"]["per_query_ms"] = detail["per_query_ms"]
            if per_query:
                entry["per_query"] = {
                    str(q): {m: float(v) for m, v in row.items()} for q, row in ev.per_query.iterrows()
                }
            runs[name] = entry
        first = next(iter(self.evaluations.values()))
        payload: dict[str, Any] = {
            "runs": runs,
            "metrics": list(self.metrics),
            "k": list(self.ks),
            "no_relevant_queries": list(first.no_relevant_queries),
            "reference": self.reference,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "query_changes": self.query_changes,
        }
        if self.slices is not None:
            payload["slices"] = self.slices.to_dict(orient="records")
        if self.ties:
            payload["ties"] = {name: audit.to_dict(per_query=per_query) for name, audit in self.ties.items()}
        if self.tukey is not None and len(self.tukey):
            payload["tukey_hsd"] = {
                "metric": self.comparisons[0].metric if self.comparisons else None,
                "pairs": self.tukey.to_dict(orient="records"),
            }
        if self.queries_needed is not None:
            payload["queries_needed"] = self.queries_needed.to_dict(orient="records")
        if self.bounds is not None:
            payload["bounds"] = self.bounds.to_dict(orient="records")
        if self.coverage is not None:
            payload["coverage"] = {
                run: {m: float(v) for m, v in row.items()} for run, row in self.coverage.iterrows()
            }
        payload["gate"] = {"passed": self.passed, "failures": list(self.gate)}
        payload["warnings"] = [p.to_dict() for p in self.validation.warnings]
        payload["validation"] = self.validation.to_dict()
        return payload

    def to_json(self, *, per_query: bool = False) -> str:
        return dumps(self.to_dict(per_query=per_query))

    def to_csv(self, *, per_query: bool = False) -> str:
        """Aggregates (``query_id`` = ``all``) or per-query values, one row per (run, query)."""
        if per_query:
            df = per_query_frame(self.evaluations, self.metrics)
        else:
            df = pd.DataFrame(
                [{"run": n, "query_id": "all", **ev.aggregate} for n, ev in self.evaluations.items()]
            )
        return df.to_csv(index=False, float_format="%.6f")

    def rows(self) -> list[dict[str, Any]]:
        return [
            {"run": n, **ev.aggregate, **self.extra_columns.get(n, {})} for n, ev in self.evaluations.items()
        ]

    def to_markdown(self, *, per_query: bool = False) -> str:
        """A compact report for a pull request or a CI summary (issue 23): the headline metrics per run (with their
        band), the comparisons with the reference and their significance, the gate; every metric in a collapsed
        ``<details>`` table (metrics as rows)."""
        n = len(next(iter(self.evaluations.values())).per_query)
        out = [
            f"**diagnose evaluate**: {n} golden queries (with at least one relevant document), "
            f"k = {','.join(map(str, self.ks))}.",
            "",
        ]
        heads = self.headline_metrics()
        out.append(
            markdown_table(
                [
                    {
                        "run": r["run"],
                        **{m: _banded(m, r.get(m)) for m in heads},
                        **{c: r.get(c) for c in self._extra_names()},
                    }
                    for r in self.rows()
                ],
                ["run", *heads, *self._extra_names()],
            )
        )
        out += self._markdown_comparisons()
        out += ["", "**CI gate**: " + ("failed" if self.gate else "passed (no bound given was crossed)")]
        out += [f"- {msg}" for msg in self.gate]
        every = [{"metric": m, **{r["run"]: _banded(m, r.get(m)) for r in self.rows()}} for m in self.metrics]
        out += [
            "",
            f"<details><summary>All {len(self.metrics)} metrics</summary>",
            "",
            markdown_table(every, ["metric", *self.evaluations]),
            "",
            "</details>",
        ]
        if per_query:
            for name, ev in self.evaluations.items():
                table = markdown_table(_query_rows(ev), ["query_id", *self.metrics])
                out += ["", f"per query: {name}", "", table]
        return "\n".join(out)

    def headline_metrics(self) -> list[str]:
        """The metrics a compact report shows per run: those compared, then ndcg, recall and hit rate at the largest
        k, mrr and map, as far as they were computed (all of them when none of these was asked)."""
        k = max(self.ks)
        wanted = [
            *(c.metric for c in self.comparisons),
            f"ndcg@{k}",
            f"recall@{k}",
            f"hit_rate@{k}",
            "mrr",
            "map",
        ]
        heads = [m for m in dict.fromkeys(wanted) if m in self.metrics]
        return heads or list(self.metrics)

    def _markdown_comparisons(self) -> list[str]:
        if not self.comparisons:
            return []
        n_tests = len(self.comparisons)
        family = "one test" if n_tests == 1 else f"Holm over {n_tests} tests"
        rows = [
            {
                "run": c.run,
                "metric": c.metric,
                "difference": f"{c.mean_diff:+.4f}",
                "95% CI": f"{c.ci_low:+.4f} to {c.ci_high:+.4f}",
                "p (Holm)": f"{c.p_holm:.3g}",
                "significant": "yes" if c.significant else "no",
                "wins / ties / losses": f"{c.wins} / {c.ties} / {c.losses}",
            }
            for c in self.comparisons
        ]
        out = [
            "",
            f"**Compared with `{self.reference}`** (paired; 95% bootstrap CI; {family}):",
            "",
            markdown_table(rows, list(rows[0])),
            "",
        ]
        for name, ch in self.query_changes.items():
            out.append(
                f"- {name} fixes {len(ch['fixed'])} {_queries(len(ch['fixed']))} and breaks "
                f"{len(ch['broken'])} at {ch['metric']} (`diagnose failures` tells why each one fails)."
            )
        return out

    def to_text(self, *, per_query: bool = False) -> str:
        """The human-readable table: metrics as rows, runs as columns, each value with its quality band."""
        n = len(next(iter(self.evaluations.values())).per_query)
        lines = [
            f"{n} golden queries with at least one relevant document; k = {','.join(map(str, self.ks))}",
            "",
        ]
        table = []
        rows = self.rows()
        for m in [*self.metrics, *self._extra_names()]:
            row: dict[str, Any] = {"metric": m}
            for r in rows:
                v = r.get(m, float("nan"))
                band = band_of(m, v)
                row[r["run"]] = cell(v) + (f" ({band})" if band else "")
            table.append(row)
        lines.append(text_table(table, ["metric", *self.evaluations]))
        if per_query:
            for name, ev in self.evaluations.items():
                lines += ["", f"per query: {name}", text_table(_query_rows(ev), ["query_id", *self.metrics])]
        if self.slices is not None:
            lines += [
                "",
                f"per {self.slice_field}:",
                text_table(self.slices.to_dict(orient="records"), list(self.slices.columns)),
            ]
        if self.coverage is not None:
            cov = self.coverage.reset_index()
            lines += [
                "",
                "judged share of the top k (judged@k) and documents judged for no query (hole@k):",
                text_table(cov.to_dict(orient="records"), list(cov.columns)),
            ]
        if self.bounds is not None:
            lines += [
                "",
                "metric bounds: unjudged documents counted non-relevant (lower, as reported) and at best "
                "(upper):",
                text_table(self.bounds.to_dict(orient="records"), list(self.bounds.columns)),
            ]
        if self.comparisons:
            n_tests = len(self.comparisons)
            family = "one test" if n_tests == 1 else f"Holm over {n_tests} tests"
            lines += ["", f"comparisons with {self.reference!r} (paired; 95% bootstrap CI; {family}):"]
            lines += [f"- {c.verdict()}" for c in self.comparisons]
            if self.tukey is not None and len(self.tukey):
                sig = self.tukey[self.tukey["significant"]]
                lines.append(
                    f"- randomised Tukey HSD over all {len(self.tukey)} pairs on {self.comparisons[0].metric}: "
                    + (
                        ", ".join(
                            f"{r.run} vs {r.reference} ({r.mean_diff:+.3f}, p={r.p_tukey:.3g})"
                            for r in sig.itertuples()
                        )
                        + " differ"
                        if len(sig)
                        else "no pair differs"
                    )
                    + " (family-wise error controlled over every pair)."
                )
            if self.queries_needed is not None:
                lines += [
                    f"- to detect a difference of {r.difference:g} on {r.metric} between {r.run} and {r.reference} "
                    f"(paired t-test, alpha 0.05, power 0.8, sd of the differences {r.sd_of_differences:.3f}): "
                    f"{r.queries_needed} queries; the golden set has {r.queries}."
                    for r in self.queries_needed.itertuples()
                ]
            for name, ch in self.query_changes.items():
                lines.append(
                    f"- {name} vs {self.reference} at k={ch['metric'].split('@')[1]}: fixes {len(ch['fixed'])} "
                    f"{_queries(len(ch['fixed']))} ({', '.join(ch['fixed'][:8]) or '-'}), breaks "
                    f"{len(ch['broken'])} ({', '.join(ch['broken'][:8]) or '-'}); `diagnose failures` tells why "
                    "each one fails."
                )
        return "\n".join(lines)

    def _extra_names(self) -> list[str]:
        return list(dict.fromkeys(c for cols in self.extra_columns.values() for c in cols))


def _banded(metric: str, value: Any) -> str:
    """A metric's value as the text report prints it: 4 decimals and its quality band, "—" when missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    band = band_of(metric, value)
    return cell(value) + (f" ({band})" if band else "")


def _query_rows(ev: Evaluation) -> list[dict[str, Any]]:
    """One row per golden query: ``query_id`` and the metrics."""
    return [{"query_id": q, **row} for q, row in ev.per_query.iterrows()]


def _queries(n: int) -> str:
    return "query" if n == 1 else "queries"


def _finite(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


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
) -> str:
    """The human-readable report of ``diagnose failures``: every failure worst first, counts, recommendations."""
    d, cal = diagnosis, diagnosis.calibration
    lines = [
        f"run {d.run!r}: {d.counts_sentence()}; every missed pair analysed.",
        f"run kind: {d.run_kind.sentence()}.",
        f"model {model}: calibrated cosine threshold {cal.calibrated:.3f} ({cal.to_dict()['method']}, "
        f"{cal.n_pairs} pairs); seed threshold {cal.seed:.2f}.",
        "",
    ]
    for f in sort_worst(d.failures):
        lines.append(f"[{f.cls}] query {f.query_id}: {f.query_text}")
        lines.append(f"  target {f.doc_id} (grade {f.grade}): {f.evidence}")
        if f.missing_terms:
            lines.append(f"  query terms missing from the target: {', '.join(f.missing_terms)}")
        if f.top_retrieved:
            beat = "; ".join(
                f"#{c.rank} {c.doc_id} (cos q {cell(c.cosine_query)}, cos target {cell(c.cosine_target)})"
                for c in f.top_retrieved[:3]
            )
            lines.append(f"  beaten by: {beat}")
        lines += [f"  seed rule: {f.seed_verdict}; calibrated rule: {f.calibrated_verdict}", ""]
    lines.append("counts per class (a failed query whose missed pairs fall in two classes counts in both):")
    counts = [
        {"class": c, "label": CLASS_LABELS[c], "missed pairs": n, "failed queries": d.class_failed_queries[c]}
        for c, n in d.class_counts.items()
    ]
    lines.append(text_table(counts, ["class", "label", "missed pairs", "failed queries"]))
    present = [c for c, n in d.class_counts.items() if n]
    if present:
        lines += ["", "recommendations:"] + [f"- {c}: {recommendation(c, d.run_kind.kind)}" for c in present]
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
    if label_noise is not None and (
        len(label_noise.unjudged_duplicates) or len(label_noise.conflicting_queries)
    ):
        lines += [
            "",
            f"label noise: {len(label_noise.unjudged_duplicates)} unjudged near-duplicates of relevant documents in "
            f"top {d.k}; {len(label_noise.duplicate_documents)} duplicate documents in the corpus; "
            f"{len(label_noise.conflicting_queries)} identical queries with conflicting judgements.",
        ]
    if hubness is not None and len(hubness.hubs):
        lines += ["", f"hubs (k-occurrence skewness {hubness.skewness:.2f}):"]
        lines.append(text_table(hubness.hubs.to_dict(orient="records"), ["doc_id", "occurrences", "share"]))
    return "\n".join(lines)


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
        f"{d.counts_sentence()}; every missed pair analysed. Run kind: {d.run_kind.sentence()}.",
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
        lines += [f"- **{CLASS_LABELS[c]}**: {recommendation(c, d.run_kind.kind)}" for c in present]
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


def dumps(payload: Any) -> str:
    """JSON text of a report dict: numpy values converted, and NaN or infinite numbers (an undefined AUC, a
    feature a run has no value for) written as ``null``, so the output is always valid JSON."""
    try:
        return json.dumps(payload, indent=2, allow_nan=False, default=json_default)
    except ValueError:
        return json.dumps(_finite_or_none(payload), indent=2, allow_nan=False, default=json_default)


def _finite_or_none(o: Any) -> Any:
    if isinstance(o, float | np.floating):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, Mapping):
        return {k: _finite_or_none(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite_or_none(v) for v in o]
    if isinstance(o, np.ndarray):
        return _finite_or_none(o.tolist())
    return o
