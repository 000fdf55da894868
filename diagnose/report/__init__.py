"""What an analysis says, in one schema, rendered as JSON, CSV, Markdown or a text table.

Every face uses these functions: ``diagnose evaluate/failures --format ...`` prints them, the app's download
buttons serve them, and ``Analysis.to_dict()`` returns the JSON dict. So the CLI's JSON, the app's JSON download
and the notebook's dict are the same document.

- :class:`EvaluationReport`: the metrics of every run (aggregate and per query), the paired comparisons with the
  reference, the queries each run fixes and breaks, the metric slices, the CI gate and the validation report.
  ``to_dict()`` is the ``diagnose evaluate --format json`` contract (keys: ``runs``, ``metrics``, ``k``,
  ``no_relevant_queries``, ``reference``, ``comparisons``, ``query_changes``, ``gate``, ``warnings``,
  ``validation``, and ``slices`` when asked; ``context`` when the golden set has spans,
  :mod:`diagnose.report.context`).
- :func:`failures_dict`, :func:`failures_text`, :func:`markdown_report`: the failures report and the app's
  Markdown report, which live in :mod:`diagnose.report.failures` (imported from there when first asked of this
  module: it reads the failure taxonomy, which ``diagnose evaluate`` does not load).
- :func:`cell`, :func:`text_table`, :func:`markdown_table`: the tables every report prints, which live in
  :mod:`diagnose.report.tables` (imported here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose.data import ValidationReport, json_default
from diagnose.metrics import Evaluation, headline_metrics, parse_metric, quality_band
from diagnose.report.tables import cell, markdown_table, text_table
from diagnose.runtime.lazy import pandas as pd

if TYPE_CHECKING:
    from diagnose.report.failures import failures_dict, failures_text, markdown_report

__all__ = [
    "EvaluationReport",
    "band_of",
    "cell",
    "dumps",
    "failures_dict",
    "failures_text",
    "markdown_report",
    "markdown_table",
    "per_query_frame",
    "text_table",
]

_FAILURES_REPORT = ("failures_dict", "failures_text", "markdown_report")  # in diagnose.report.failures


def __getattr__(name: str) -> Any:
    if name in _FAILURES_REPORT:
        from diagnose.report import failures as report_failures

        return getattr(report_failures, name)
    raise AttributeError(f"module 'diagnose.report' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FAILURES_REPORT})


def band_of(metric: str, value: float) -> str | None:
    """The quality band of a metric value, None for metrics whose record leaves it out of tables
    (``band_in_tables``: precision, f1, bounded by R/k, docs/metrics.md "Quality bands")."""
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
    # a chunk corpus: the runs at the document level (a document at the rank of its best chunk); None otherwise
    document_level: dict[str, Evaluation] | None = None
    # spans: run -> ContextScores at each k, and what is sent ("document" or "chunk"); None without spans
    context: dict[str, list[Any]] | None = None
    context_level: str = "document"

    @property
    def passed(self) -> bool:
        return not self.gate

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """The ``diagnose evaluate --format json`` document."""
        runs: dict[str, Any] = {}
        for name, ev in self.evaluations.items():
            entry = _level_entry(ev, per_query=False)
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
        if self.document_level is not None:
            payload["level"] = "chunk"
            payload["document_level"] = {
                "level": "document",
                "runs": {name: _level_entry(ev, per_query) for name, ev in self.document_level.items()},
            }
        if self.context:
            # only with spans: the path without them imports nothing more
            from diagnose.report.context import context_dict

            payload["context"] = context_dict(self.context, self.context_level, per_query=per_query)
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
        n = next(iter(self.evaluations.values())).n_queries
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
        """The metrics a compact report shows per run: those compared, then the headline metrics
        (:data:`~diagnose.metrics.HEADLINE`: ndcg, recall and hit rate at the largest k, mrr) and map, as far as
        they were computed (all of them when none of these was asked)."""
        wanted = [*(c.metric for c in self.comparisons), *headline_metrics(max(self.ks)), "map"]
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
        n = next(iter(self.evaluations.values())).n_queries
        lines = [
            f"{n} golden queries with at least one relevant document; k = {','.join(map(str, self.ks))}",
            "",
        ]
        if self.document_level is not None:
            lines.append("Chunk level (the corpus' ids):")
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
        lines += self._document_level_text()
        if self.context:
            from diagnose.report.context import context_text  # only with spans

            lines += context_text(self.context, self.context_level, per_query=per_query)
        if per_query:
            for name, ev in self.evaluations.items():
                lines += ["", f"per query: {name}", text_table(_query_rows(ev), ["query_id", *self.metrics])]
        lines += self._tables_text()
        if self.comparisons:
            lines += self._comparisons_text()
        return "\n".join(lines)

    def _document_level_text(self) -> list[str]:
        """A chunk corpus: the table above is at the chunk level; the same metrics at the document level."""
        if self.document_level is None:
            return []
        table = [
            {
                "metric": m,
                **{n: cell(ev.aggregate.get(m, float("nan"))) for n, ev in self.document_level.items()},
            }
            for m in self.metrics
        ]
        return [
            "",
            "Document level (a document at the rank of its best chunk, judged by its best chunk):",
            text_table(table, ["metric", *self.document_level]),
        ]

    def _tables_text(self) -> list[str]:
        """The text report's optional tables: the metric slices, judged coverage and the metric bounds."""
        lines: list[str] = []
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
        return lines

    def _comparisons_text(self) -> list[str]:
        """The text report's comparisons with the reference: verdicts, Tukey HSD, queries needed, query changes."""
        n_tests = len(self.comparisons)
        family = "one test" if n_tests == 1 else f"Holm over {n_tests} tests"
        lines = ["", f"comparisons with {self.reference!r} (paired; 95% bootstrap CI; {family}):"]
        lines += [f"- {c.verdict()}" for c in self.comparisons]
        if self.tukey is not None and len(self.tukey):
            lines.append(self._tukey_sentence())
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
        return lines

    def _tukey_sentence(self) -> str:
        """The randomised Tukey HSD over every pair of runs, as one line of the text report."""
        sig = self.tukey[self.tukey["significant"]]
        return (
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


def _level_entry(ev: Evaluation, per_query: bool) -> dict[str, Any]:
    """One run's entry of the JSON's ``document_level`` block: ``aggregate``, ``quality``, ``n_queries``,
    ``missing_queries`` (and ``per_query``), like the entries of ``runs``."""
    entry: dict[str, Any] = {
        "aggregate": {m: float(v) for m, v in ev.aggregate.items()},
        "quality": {m: quality_band(m, v) for m, v in ev.aggregate.items()},
        "n_queries": int(ev.n_queries),
        "missing_queries": list(ev.missing_queries),
    }
    if per_query:
        entry["per_query"] = {
            str(q): {m: float(v) for m, v in row.items()} for q, row in ev.per_query.iterrows()
        }
    return entry
