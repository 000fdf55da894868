"""The report a team can share (diagnose/report/html.py): one self-contained HTML file and its Markdown twin."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

from test_findings import world

from diagnose.charts import metrics_bar
from diagnose.charts.svg import to_svg
from diagnose.data import Problem, ValidationReport
from diagnose.report.html import CHART_METRICS, ShareableReport, to_html, to_markdown
from diagnose.runtime.lazy import pandas as pd
from diagnose.whatif.findings import findings

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
SCRIPT = "<script>alert('x')</script>"
#: a reference to something outside the file: a tag's src= or href= with a scheme or a protocol-relative //
TAG_REFERENCE = re.compile(
    r"""<[^<>]*\s(?:src|href|xlink:href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", re.I
)
#: ... or a CSS url( in a <style> block or a style attribute
CSS_URL = re.compile(r"""url\(\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)""", re.I)
STYLES = re.compile(r"""<style>(.*?)</style>|\sstyle\s*=\s*["']([^"']*)""", re.I | re.S)


def outside_references(page: str) -> list[str]:
    css = " ".join(a or b for a, b in STYLES.findall(page))
    return TAG_REFERENCE.findall(page) + CSS_URL.findall(css)


def small_report(charts: bool = True) -> ShareableReport:
    """test_findings.world's run (6 failed queries, k=1), a query and a document text holding a <script>."""
    diag, rem, m = world()
    fs = [
        dataclasses.replace(f, query_text=SCRIPT, top_retrieved=()) if f.query_id == "q2" else f
        for f in diag.failures
    ]
    diag = dataclasses.replace(diag, failures=fs)
    metrics = pd.DataFrame(
        [
            {
                "run": "run", "kind": "your run", "queries": 6, "ndcg@1": 0.0, "band:ndcg@1": "poor",
                "ci_low:ndcg@1": 0.0, "ci_high:ndcg@1": 0.0,
            }
        ]
    )  # fmt: skip
    bars = pd.DataFrame([{"run": "run", "metric": "ndcg@1", "value": 0.0, "ci_low": 0.0, "ci_high": 0.0}])
    validation = ValidationReport([Problem("odd", "warning", f"a line holds {SCRIPT}", file="q<1>.tsv")])
    return ShareableReport(
        data_label="demo <b>set</b>",
        data_lines=("run: run.trec",),
        model="fake",
        run="run",
        k=1,
        mode="hit",
        findings=findings(diag, rem, m),
        metrics=metrics,
        metric_names=("ndcg@1",),
        diagnosis=diag,
        matrix=m,
        validation=validation,
        charts=((CHART_METRICS, to_svg(metrics_bar(bars, k=1))),) if charts else (),
        documents={"t2": SCRIPT},
    )


def test_the_html_escapes_every_data_text_and_holds_no_script_and_no_url():
    page = to_html(small_report())
    assert "<script" not in page.lower()
    # the query text, the document text and the validation message, each escaped where it is shown
    assert page.count(html.escape(SCRIPT)) >= 3
    assert "demo &lt;b&gt;set&lt;/b&gt;" in page
    assert outside_references(page) == []
    assert "http" not in page  # not even the SVG namespace: an inline <svg> needs none
    assert page.count("<svg") == 1 and page.count("<figure>") == 1


def test_the_findings_are_the_first_section_in_order():
    r = small_report(charts=False)
    page = to_html(r)
    first = re.search(r"<section id='(\w+)'>", page)
    assert first and first.group(1) == "findings"
    findings_html = page.split("<section id='findings'>", 1)[1].split("</section>", 1)[0]
    items = re.findall(r"<li>(.*?)</li>", findings_html)
    # world(): dense, hybrid, rerank, then the pair to judge (test_findings)
    assert items == [html.escape(a.sentence()) for a in r.findings]
    assert items[0].startswith("Fix the ANN index") and len(items) == 4
    assert "<svg" not in page


def test_the_markdown_has_the_same_sections_and_escapes_html():
    r = small_report(charts=False)
    text = to_markdown(r)
    heads = [x for x in text.splitlines() if x.startswith("## ")]
    assert heads[:2] == ["## What to fix first", "## Metrics at k=1"]
    assert heads[-1] == "## Validation"
    numbered = [x for x in text.splitlines() if re.match(r"\d+\. ", x)]
    assert len(numbered) == len(r.findings) == 4
    assert "<script" not in text and "&lt;script&gt;" in text


def test_the_outside_check_catches_references():
    # the check above must be able to fail: a reference of each kind is caught, a text that mentions one is not
    assert outside_references("<img src='https://x/y.png'>") and outside_references('<a href="http://x">')
    assert outside_references("<link rel=stylesheet href=//cdn/x.css>")
    assert outside_references("<style>a{background:url(//x/y)}</style>")
    assert outside_references("<p style='background: url(https://x)'>")
    assert not outside_references(
        "<p>" + html.escape("see https://example.org, <img src=//x>, url(//y)") + "</p>"
    )


def test_the_command_refuses_a_bad_worst_and_a_missing_folder_before_any_work(tmp_path, capsys):
    from diagnose.cli import main

    run = str(DEMO / "runs" / "ann_minilm.trec")
    assert (
        main(["report", "--data", str(DEMO), "--run", run, "--out", str(tmp_path / "r.html"), "--worst", "0"])
        == 2
    )
    assert "--worst" in capsys.readouterr().err
    assert main(["report", "--data", str(DEMO), "--run", run, "--out", str(tmp_path / "no" / "r.html")]) == 2
    assert "No folder" in capsys.readouterr().err and not (tmp_path / "no").exists()
