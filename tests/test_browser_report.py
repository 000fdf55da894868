"""The shared report in a real browser: the HTML file of the demo opened offline (file://, the network off) in the
system's headless Chromium (tests/browser.py): no console error, no request outside the file, every chart drawn."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import ROOT, chromium, require_browser

pytestmark = pytest.mark.browser

DEMO = ROOT / "demo_corpus"


def test_the_report_opens_offline_with_every_chart_drawn(tmp_path):
    sync_api = require_browser()
    from diagnose.analysis import Analysis
    from diagnose.api import load
    from diagnose.embed import KeywordEncoder
    from diagnose.report.html import to_html

    a = Analysis(
        load(str(DEMO)),
        {"ann_minilm": str(DEMO / "runs" / "ann_minilm.trec")},
        encoder=KeywordEncoder(),
        baselines=("bm25", "dense", "hybrid"),
        cache_dir=tmp_path / "cache",
    )
    path = tmp_path / "report.html"
    path.write_text(to_html(a.shareable_report()), encoding="utf-8")
    errors: list[str] = []
    requests: list[str] = []
    with chromium(sync_api) as browser:
        context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        # every chart drawn: an <svg> with a size and marks (Vega draws each mark as a path, rect, line or text)
        sizes = page.eval_on_selector_all(
            "figure svg",
            "els => els.map(e => [e.getBoundingClientRect().width, e.getBoundingClientRect().height,"
            " e.querySelectorAll('path, rect, line, text').length])",
        )
        first = page.inner_text("section#findings")
        shot = Path(tmp_path / "report.png")
        page.screenshot(path=str(shot))
        page.screenshot(path=str(tmp_path / "report_full.png"), full_page=True)
        context.close()
    assert errors == []
    assert requests == [path.as_uri()]  # the file itself, nothing else
    assert len(sizes) == 3 and all(w > 100 and h > 100 and marks > 10 for w, h, marks in sizes), sizes
    assert first.startswith("What to fix first") and "1. " not in first.splitlines()[0]
    assert shot.stat().st_size > 10_000
