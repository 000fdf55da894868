"""The report a team can share: one run's answer, evidence and data in one self-contained HTML file, or Markdown.

:class:`ShareableReport` holds what :meth:`diagnose.analysis.Analysis.shareable_report` gathered (nothing is
computed here); :func:`to_html` renders one HTML file that opens without a server or the network: inline CSS, the
charts as inline SVG (rendered beforehand, :func:`diagnose.charts.svg.to_svg`), no script, no font, no URL. Every
text that comes from the data (ids, query and document texts, evidence, file names) is HTML-escaped.
:func:`to_markdown` renders the same sections for a pull request (no charts; Markdown punctuation in data texts
backslash-escaped, ``<`` and ``>`` as entities).

The sections, in order: the header (data set, model, run, k, failure definition), **what to fix first** (the
findings, :mod:`diagnose.whatif.findings`), the metrics at k of the run and the baselines (quality band, 95%
bootstrap CI of the mean over the golden queries), the failure classes (missed pairs and failed queries per class),
the remedy matrix, the worst missed pairs with their evidence and the documents that beat them, the validation report.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diagnose.data import ValidationReport
from diagnose.failures import CLASS_LABELS, Diagnosis, Failure, sort_worst
from diagnose.report.tables import cell, markdown_table
from diagnose.runtime.lazy import pandas as pd

#: The report's sections: (id, title), in order.
SECTIONS = (
    ("findings", "What to fix first"),
    ("metrics", "Metrics"),
    ("classes", "Failure classes"),
    ("matrix", "Remedy matrix"),
    ("worst", "Worst missed pairs"),
    ("validation", "Validation"),
)
TITLES = dict(SECTIONS)


@dataclass(frozen=True, eq=False)
class ShareableReport:
    """Everything the shared report shows, gathered by :meth:`diagnose.analysis.Analysis.shareable_report`.

    ``metrics``: one row per run (the run first, then the baselines): ``run``, ``kind``, ``queries``, and per metric
    ``m`` of ``metric_names`` the columns ``m``, ``band:m``, ``ci_low:m``, ``ci_high:m``. ``findings``: a
    :class:`~diagnose.whatif.findings.Findings`; ``matrix``: a :class:`~diagnose.whatif.matrix.RemedyMatrix`.
    ``charts``: ``(title, svg)`` pairs, each one ``<svg>`` element (empty when charts were not asked for).
    ``documents``: doc id -> a short text of each document shown (targets and the documents that beat them).
    ``worst``: how many missed pairs the worst section shows.
    """

    data_label: str
    data_lines: tuple[str, ...]
    model: str
    run: str
    k: int
    mode: str
    findings: Any
    metrics: pd.DataFrame
    metric_names: tuple[str, ...]
    diagnosis: Diagnosis
    matrix: Any
    validation: ValidationReport
    charts: tuple[tuple[str, str], ...] = ()
    documents: Mapping[str, str] | None = None
    worst: int = 10

    def failure_definition(self) -> str:
        return (
            "no relevant document in the top k"
            if self.mode == "hit"
            else "a relevant document missing from the top k"
        )

    def worst_failures(self) -> list[Failure]:
        return sort_worst(self.diagnosis.failures)[: self.worst]

    def class_rows(self) -> list[dict[str, Any]]:
        d = self.diagnosis
        return [
            {
                "class": c,
                "label": CLASS_LABELS[c],
                "missed pairs": n,
                "failed queries": d.class_failed_queries[c],
            }
            for c, n in d.class_counts.items()
            if n
        ]

    def metric_rows(self) -> list[dict[str, Any]]:
        """One dict per run: run, kind, queries, and per metric "value (band) [low, high]"."""
        rows = []
        for r in self.metrics.to_dict(orient="records"):
            row = {"run": r["run"], "kind": r["kind"], "queries": r["queries"]}
            for m in self.metric_names:
                row[m] = f"{r[m]:.3f} ({r[f'band:{m}']}) [{r[f'ci_low:{m}']:.3f}, {r[f'ci_high:{m}']:.3f}]"
            rows.append(row)
        return rows


# ------------------------------------------------------------------------------------------------- HTML

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;
padding:16px;color:#1f1f1f}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
#findings ol{font-size:1.1em;padding-left:1.6em}#findings li{margin:.3em 0}
.meta{color:#555}.note{color:#555;font-size:.9em}figure{margin:1em 0}svg{max-width:100%;height:auto}
figcaption{font-size:.9em;color:#555}.failure{margin:.8em 0;padding:.5em .8em;border-left:4px solid #ccc;
background:#fafafa}code{font-size:.95em}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "<p class='note'>(none)</p>"
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for r in rows:
        tds = []
        for c in columns:
            v = r.get(c, "")
            num = isinstance(v, int | float) and not isinstance(v, bool)
            tds.append(f"<td class='n'>{_e(cell(v))}</td>" if num else f"<td>{_e(cell(v))}</td>")
        body.append(f"<tr>{''.join(tds)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _section(sid: str, body: str) -> str:
    return f"<section id='{sid}'><h2>{_e(TITLES[sid])}</h2>{body}</section>"


def _charts(report: ShareableReport, titles: tuple[str, ...]) -> str:
    return "".join(
        f"<figure>{svg}<figcaption>{_e(t)}</figcaption></figure>" for t, svg in report.charts if t in titles
    )


def _doc(report: ShareableReport, doc_id: str) -> str:
    text = (report.documents or {}).get(doc_id, "")
    return f"<code>{_e(doc_id)}</code>" + (f" <span class='meta'>{_e(text)}</span>" if text else "")


def _failure_html(report: ShareableReport, f: Failure) -> str:
    beat = "".join(
        f"<li>#{c.rank} {_doc(report, c.doc_id)} (cosine to the query {_e(cell(c.cosine_query))})</li>"
        for c in f.top_retrieved[:3]
    )
    missing = (
        f"<br>Query terms missing from the target: {_e(', '.join(f.missing_terms))}"
        if f.missing_terms
        else ""
    )
    return (
        f"<div class='failure'><b>{_e(CLASS_LABELS[f.cls])}</b>: query <code>{_e(f.query_id)}</code> "
        f"{_e(f.query_text)}<br>Target {_doc(report, f.doc_id)} (grade {_e(f.grade)}).<br>{_e(f.evidence)}"
        f"{missing}" + (f"<br>Beaten by:<ul>{beat}</ul>" if beat else "") + "</div>"
    )


def _findings_html(report: ShareableReport) -> str:
    f = report.findings
    head, *_ = f.lines()
    items = "".join(f"<li>{_e(a.sentence())}</li>" for a in f)
    # after the ranked list: "no change helps" or the changes measured and not advised
    empty = "".join(f"<p>{_e(x)}</p>" for x in f.lines()[1 + len(f) :])
    note = (
        "Each change was applied to this run and measured on this golden set. Recovered: failures of the listed "
        "classes it fixes at k. Breaks: queries hit today and missed after it. p: paired randomization test. "
        "Tags: the classes and the cost."
    )
    return _section(
        "findings", f"<p><b>{_e(head)}</b></p><ol>{items}</ol>{empty}<p class='note'>{_e(note)}</p>"
    )


def to_html(report: ShareableReport) -> str:
    """The report as one self-contained HTML document (module docstring: the sections; no URL, no script)."""
    r, d = report, report.diagnosis
    header = (
        f"<h1>diagnose report: {_e(r.run)}</h1><p class='meta'>Data: {_e(r.data_label)}"
        + "".join(f"<br>{_e(x)}" for x in r.data_lines)
        + f"<br>Embedding model: {_e(r.model)}<br>k = {r.k}; a query fails with {_e(r.failure_definition())} "
        f"({_e(r.mode)}).<br>{_e(d.counts_sentence())}</p>"
    )
    metrics = _table(r.metric_rows(), ["run", "kind", "queries", *r.metric_names])
    metrics_note = "Each cell: mean over the golden queries (quality band) [95% bootstrap CI]."
    classes = _table(r.class_rows(), ["class", "label", "missed pairs", "failed queries"])
    m = r.matrix
    if m.classes:
        matrix = _table(m.rows(), ["class", *m.remedy_ids]) + "".join(
            f"<p class='note'>{_e(x)}</p>" for x in m.legend()
        )
    else:
        matrix = "<p>No failures, no remedy to try.</p>"
    worst = r.worst_failures()
    worst_body = (
        f"<p class='note'>The first {len(worst)} of {d.n_missed_pairs} missed pairs, deepest first.</p>"
        + "".join(_failure_html(r, f) for f in worst)
        if worst
        else "<p>No missed pair.</p>"
    )
    problems = list(r.validation)
    validation = (
        "<ul>" + "".join(f"<li>{_e(p.format().splitlines()[0])}</li>" for p in problems) + "</ul>"
        if problems
        else "<p>No problems found in the input.</p>"
    )
    body = "".join(
        [
            header,
            _findings_html(r),
            _section(
                "metrics",
                metrics + f"<p class='note'>{_e(metrics_note)}</p>" + _charts(r, (CHART_METRICS,)),
            ),
            _section("classes", classes + _charts(r, (CHART_CLASSES,))),
            _section("matrix", matrix + _charts(r, (CHART_MATRIX,))),
            _section("worst", worst_body),
            _section("validation", validation),
        ]
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>diagnose report: {_e(r.run)}</title><style>{_CSS}</style></head><body>{body}"
        "<p class='note'>Made by diagnose. One file: no script, no font, no link outside it.</p></body></html>\n"
    )


#: The titles of the report's charts (the ``charts`` pairs' first element).
CHART_METRICS = "Metrics at k of the run and the baselines, with 95% bootstrap CIs"
CHART_CLASSES = "Missed pairs per failure class"
CHART_MATRIX = (
    "Remedy matrix: the share of each class each remedy recovers (outlined: the class's own remedy)"
)


# ------------------------------------------------------------------------------------------------- Markdown

_MD_PUNCT = re.compile(r"([\\`*_\[\]~|])")
_MD_PUNCT_CELL = re.compile(r"([\\`*_\[\]~])")  # a table cell: markdown_table escapes "|" itself


def md(text: Any, *, in_table: bool = False) -> str:
    """A data text for Markdown: whitespace folded, Markdown punctuation backslash-escaped, ``<``/``>``/``&`` as
    entities (GitHub would render raw HTML); ``#`` is left as it is (a heading only at a line's start, where no data
    text is written). ``in_table``: for :func:`markdown_table`, which escapes ``|`` itself."""
    folded = " ".join(str(text).split())
    return (_MD_PUNCT_CELL if in_table else _MD_PUNCT).sub(r"\\\1", html.escape(folded, quote=False))


def code(text: Any) -> str:
    """An id as Markdown code: backticks inside become quotes (a code span shows backslashes as they are)."""
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def to_markdown(report: ShareableReport) -> str:
    """The same report as Markdown, for a pull request (no charts)."""
    r, d, f = report, report.diagnosis, report.findings
    lines = [f"# diagnose report: {md(r.run)}", ""]
    lines.append(f"- **Data**: {md(r.data_label)}")
    lines += [f"  - {md(x)}" for x in r.data_lines]
    lines += [
        f"- **Embedding model**: {md(r.model)}",
        f"- **k**: {r.k}; a query fails with {r.failure_definition()} ({r.mode})",
        f"- {md(d.counts_sentence())}",
        "",
        f"## {TITLES['findings']}",
        "",
        f"**{md(f.lines()[0])}**",
        "",
    ]
    lines += [f"{a.rank}. {md(a.sentence())}" for a in f]
    for x in f.lines()[1 + len(f) :]:  # "no change helps", or the changes measured and not advised
        lines += ["", md(x)]
    lines += ["", f"## {TITLES['metrics']} at k={r.k}", ""]
    lines.append(_md_table(r.metric_rows(), ["run", "kind", "queries", *r.metric_names]))
    lines += ["", "Each cell: mean over the golden queries (quality band) [95% bootstrap CI].", ""]
    lines += [
        f"## {TITLES['classes']}",
        "",
        _md_table(r.class_rows(), ["class", "label", "missed pairs", "failed queries"]),
    ]
    lines += ["", f"## {TITLES['matrix']}", ""]
    m = r.matrix
    if m.classes:
        lines += [_md_table(m.rows(), ["class", *m.remedy_ids]), "", *[f"- {md(x)}" for x in m.legend()]]
    else:
        lines.append("No failures, no remedy to try.")
    lines += ["", f"## {TITLES['worst']}", ""]
    for fl in r.worst_failures():
        beat = "; ".join(f"#{c.rank} {code(c.doc_id)}" for c in fl.top_retrieved[:3])
        lines.append(
            f"- **{CLASS_LABELS[fl.cls]}**: query {code(fl.query_id)} {md(fl.query_text)}; target {code(fl.doc_id)}. "
            f"{md(fl.evidence)}" + (f" Beaten by: {beat}." if beat else "")
        )
    if not d.failures:
        lines.append("No missed pair.")
    lines += ["", f"## {TITLES['validation']}", ""]
    lines += [f"- {md(p.format().splitlines()[0])}" for p in r.validation] or [
        "No problems found in the input."
    ]
    return "\n".join(lines) + "\n"


def _md_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    return markdown_table(
        [{c: md(v, in_table=True) if isinstance(v, str) else v for c, v in row.items()} for row in rows],
        columns,
    )
