"""The Judge page in a real browser, driven by the keyboard: `streamlit run app.py` on a free port (fake keyword
encoder, journal and caches in a temporary folder), headless Chromium (Playwright) opens the Judge page and presses
the grade keys; each key press must append its line to the journal, for the pair the page showed.

Skipped cleanly when ``/usr/bin/chromium`` or the ``playwright`` package is missing (never runs ``playwright
install``). The screenshot goes to the test's temporary folder; with ``DIAGNOSE_REFRESH_SCREENSHOTS=1`` also to
``docs/screenshots/judge.png``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from browser import DOCS_SHOTS, READY, REFRESH_ENV, chromium, require_browser, running_app

pytestmark = pytest.mark.browser

LOAD_S = 300


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _wait_lines(path: Path, n: int, timeout_s: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = _lines(path)
        if len(got) >= n:
            return got
        time.sleep(0.2)
    raise AssertionError(f"the journal has {len(_lines(path))} lines, expected {n}")


def _current_pair(page) -> tuple[str, str]:
    query = (
        page.locator("h5", has_text=re.compile(r"^Query ")).first.inner_text().removeprefix("Query ").strip()
    )
    doc = (
        page.locator("h5", has_text=re.compile(r"^Document "))
        .first.inner_text()
        .removeprefix("Document ")
        .strip()
    )
    return query, doc


def _wait_ready(page) -> None:
    page.wait_for_selector(READY, timeout=LOAD_S * 1000)
    page.wait_for_timeout(500)


def test_judge_page_grades_with_the_keyboard(tmp_path):
    sync_api = require_browser()
    journal = tmp_path / "journal" / "judgements.jsonl"
    env = {
        **os.environ,
        "DIAGNOSE_ENCODER": "keyword",
        "DIAGNOSE_CACHE_DIR": str(tmp_path / "cache"),
        "DIAGNOSE_JOURNAL": str(journal),
        "DIAGNOSE_FOREGROUND_SECONDS": "120",
    }
    with running_app("app.py", tmp_path / "streamlit.log", env) as url, chromium(sync_api) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url + "/judge", wait_until="domcontentloaded")
        page.locator('h1:has-text("Judge"), [data-testid="stException"]').first.wait_for(
            timeout=LOAD_S * 1000
        )
        assert page.locator('[data-testid="stException"]').count() == 0, page.inner_text("body")[:2000]
        page.get_by_role("button", name=re.compile("2 · relevant")).wait_for(timeout=LOAD_S * 1000)
        _wait_ready(page)
        page.screenshot(path=str(tmp_path / "judge.png"), full_page=True)
        if os.environ.get(REFRESH_ENV) == "1":
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / "judge.png", DOCS_SHOTS / "judge.png")

        expected: list[tuple[str, str, int | str]] = []
        for key, grade in (("2", 2), ("s", "skip"), ("0", 0), ("3", 3)):
            pair = _current_pair(page)
            page.locator("h1", has_text="Judge").first.click()  # the focus on the page, not a text field
            page.keyboard.press(key)
            expected.append((*pair, grade))
            _wait_lines(journal, len(expected))
            deadline = time.monotonic() + 60
            while _current_pair(page) == pair:  # the page moves on to the next pair
                assert time.monotonic() < deadline, f"the page still shows {pair} after key {key!r}"
                page.wait_for_timeout(200)
            _wait_ready(page)
        got = [(x["query_id"], x["doc_id"], x["grade"]) for x in _lines(journal)]
        assert got == expected
        assert len({(q, d) for q, d, _ in got}) == 4  # each key judged the next pair
        assert page.locator('[data-testid="stException"]').count() == 0
        # three grades (the skip is not one): the page says what they changed, per run
        effect = page.get_by_text(re.compile(r"after 3 judgements")).first
        effect.wait_for(timeout=60_000)
        effect.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "judge_effect.png"))
