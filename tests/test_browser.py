"""The app in a real browser: `streamlit run app.py` on a free port, driven by headless Chromium (Playwright).

Visits every page through the sidebar navigation, checks that it rendered without an exception (and that the
overview shows its metrics table and charts; that the Overview and Worst queries open with the findings and fit a
1,400 px page), records every request the page makes (none may leave 127.0.0.1: the
app runs offline), and saves a screenshot of each page into a temporary folder; with
``DIAGNOSE_REFRESH_SCREENSHOTS=1`` into ``docs/screenshots/<page>.png`` (the README's pictures), so the test run never
modifies tracked files unless asked.

Encoder: the fake keyword encoder in a test run, so the first load takes seconds instead of the real model's cold
analysis (this, with the fixed paint pauses below, took the test from 254 to 163 s and from 90 to 64 s of CPU,
measured one after the other on the loaded 2-core machine). The server still loads and runs a real
sentence-transformers model: the locally built second model that the Model choice page compares (the bundled
model's own pages are checked by the AppTest tests, tests/test_app_models.py and tests/test_app_pages.py). With
``DIAGNOSE_REFRESH_SCREENSHOTS=1`` (or ``DIAGNOSE_BROWSER_ENCODER=real``) the sidebar model is the real bundled one,
so the README's pictures show what a user sees, and every page gets 1.5 s to finish painting before its screenshot;
a test run waits for what it checks instead. Caches (embeddings, UMAP coordinates) go to a temporary folder, so the
run is self-contained (numba's compiled-code cache is left where it is: it only makes the first UMAP faster).

The Judge page driven by the keyboard is the file's second test, on the same server and browser (one Streamlit
server and one Chromium for both; each opens its own tab, so its own Streamlit session): each grade key must append
its line to the journal (in a temporary folder), for the pair the page showed. It runs after the visit of every page,
which presses no grade key, so the journal is empty when it starts.

Skipped cleanly when ``/usr/bin/chromium`` or the ``playwright`` package is missing. Never runs ``playwright
install``: it uses the system Chromium.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from browser import DOCS_SHOTS, READY, REFRESH_ENV, ROOT, chromium, is_local, require_browser, running_app

pytestmark = pytest.mark.browser

# (file name, sidebar link text, page title, has charts)
PAGES = [
    ("overview", "Overview", "Overview", True),
    ("worst", "Worst queries", "Worst queries", False),
    ("inspector", "Query inspector", "Query inspector", False),
    ("map", "Embedding map", "Embedding map", True),
    ("similarity", "Similarity", "Similarity", True),
    ("compare", "Compare runs", "Compare runs", True),
    ("models", "Model choice", "Model choice", True),
    ("golden", "Golden set", "Golden set", False),
    ("judge", "Judge", "Judge", False),
    ("data", "Data", "Data", False),
]
FIRST_LOAD_S = 600
PAGE_LOAD_S = 300
REFRESHING = os.environ.get(REFRESH_ENV) == "1"
REAL_MODEL = REFRESHING or os.environ.get("DIAGNOSE_BROWSER_ENCODER") == "real"
# The README's pictures at 1400 x 1000; a test run at 1000 x 700, half the pixels to paint for the same pages, tables
# and charts (Chromium paints in software here: 53.4 -> 51.8 and 54.0 -> 51.4 CPU-s for the file, side by side)
VIEWPORT = {"width": 1400, "height": 1000} if REFRESHING else {"width": 1000, "height": 700}
PAINT_MS = 1500 if REFRESHING else 0  # Vega and the data grids finish painting before a README screenshot


def _wait_page(page, title: str, charts: bool, timeout_s: float) -> None:
    ms = int(timeout_s * 1000)
    # the page's title, or an exception box (then fail with its message rather than time out)
    page.locator(f'h1:has-text("{title}"), [data-testid="stException"]').first.wait_for(timeout=ms)
    _assert_no_exception(page, title)
    page.wait_for_selector(READY, timeout=ms)
    if charts:
        page.locator(
            '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'
        ).first.wait_for(timeout=ms)
    page.wait_for_selector(READY, timeout=ms)
    page.wait_for_timeout(PAINT_MS)


def _count_when_drawn(page, locator, timeout_s: float = 30) -> int:
    """How many elements ``locator`` finds, polled for up to ``timeout_s`` until there is one: Vega's marks and the
    data grid's cells are drawn in the browser after the script run has ended."""
    deadline = time.monotonic() + timeout_s
    while (n := locator.count()) == 0 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    return n


# Issue 36: at 1,400 px, the Overview and Worst queries open with the findings, and no table is wider than the page
FIRST_SCREEN = {"width": 1400, "height": 900}
FINDINGS_TITLES = {"overview": "What to fix first", "worst": "What to do about them"}
LAYOUT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const top = (e) => e.getBoundingClientRect().top + window.scrollY;
  const tables = [...main.querySelectorAll('[data-testid="stDataFrame"]')].map((e) => {
    const grid = e.querySelector('.dvn-scroller');
    return {right: e.getBoundingClientRect().right, top: top(e),
            scroll: grid ? grid.scrollWidth : -1, client: grid ? grid.clientWidth : -1};
  });
  const heading = main.querySelector('h2, h3');
  const list = main.querySelector('ol');
  return {width: document.documentElement.clientWidth, tables,
          heading: heading ? heading.innerText.trim() : null, list: list ? top(list) : null};
}"""


def _first_screen_fits(page, name: str) -> None:
    """At 1,400 px wide: the first heading under the title is the findings' and their numbered list comes before
    every table; every table of the page (its expanders opened) fits the page, its columns not scrolled sideways
    (a grid draws its columns in a scroller: wider columns than the grid give ``scrollWidth > clientWidth``)."""
    page.set_viewport_size(FIRST_SCREEN)
    closed = page.locator('[data-testid="stMain"] [data-testid="stExpander"] details:not([open]) summary')
    while closed.count():
        closed.first.click()
    page.wait_for_selector(READY)
    grids = page.locator('[data-testid="stMain"] [data-testid="stDataFrame"] .dvn-scroller')
    _count_when_drawn(page, grids)
    page.wait_for_timeout(300)  # the grids lay their columns out again at the new width
    info = page.evaluate(LAYOUT_JS)
    assert info["heading"] == FINDINGS_TITLES[name], f"{name}: the first block is {info['heading']!r}"
    assert info["tables"] and all(t["scroll"] > 0 for t in info["tables"]), f"{name}: a table was not drawn"
    assert info["list"] is not None and info["list"] < min(t["top"] for t in info["tables"]), name
    wide = [t for t in info["tables"] if t["scroll"] > t["client"] + 1 or t["right"] > info["width"]]
    assert not wide, f"{name}: tables wider than the page at 1,400 px: {wide}"
    page.set_viewport_size(VIEWPORT)


def _assert_no_exception(page, name: str) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, f"{name}: exception shown: {exc.first.inner_text()[:2000]}"
    err = page.locator('[data-testid="stAlertContentError"]')
    assert err.count() == 0, f"{name}: error shown: {err.first.inner_text()[:2000]}"


def _check_report_download(page) -> None:
    """The sidebar's Markdown report downloads (its content is generated on click) and names every demo run."""
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Downloads").click()
    button = page.locator(
        '[data-testid="stSidebar"] [data-testid="stDownloadButton"] button', has_text="Markdown"
    )
    with page.expect_download(timeout=60_000) as info:
        button.first.click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    assert text.startswith("# diagnose report")
    for run in sorted(p.name.split(".")[0] for p in (ROOT / "demo_corpus" / "runs").glob("*.trec")):
        assert f"| {run} |" in text, f"run {run} missing from the report"
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary', has_text="Downloads").click()


def _click_a_failed_query(page) -> None:
    """Clicking a failed query (a triangle) on the map opens the inspector; then come back to the map."""
    marks = page.locator('[data-testid="stVegaLiteChart"] path[aria-label*="Role: failed query"]')
    assert _count_when_drawn(page, marks) > 0, "no failed query on the map"
    marks.first.click(force=True)
    _wait_page(page, "Query inspector", False, PAGE_LOAD_S)
    _assert_no_exception(page, "inspector (from the map)")
    page.locator('[data-testid="stSidebarNavLink"]', has_text="Embedding map").first.click()
    _wait_page(page, "Embedding map", True, PAGE_LOAD_S)


def _compare_two_models(page, model_folder: Path) -> None:
    """On the Model choice page, add the locally built second model and wait for the two-row table."""
    page.get_by_label("Other models, one per line").fill(str(model_folder))
    page.get_by_role("button", name="Compare").click()
    # the verdict sentence exists only once two models are compared
    page.get_by_text(
        re.compile("significantly better than every other model|Statistically tied")
    ).first.wait_for(timeout=PAGE_LOAD_S * 1000)
    _wait_page(page, "Model choice", True, PAGE_LOAD_S)
    _assert_no_exception(page, "models (two models)")


def _visit_every_page(
    browser, url: str, second_model: Path, step: list[str], shots: Path, requests: list
) -> None:
    """Open the app in a new tab, visit every page through the sidebar, check it and save its screenshot.

    ``step[0]`` names what is being done, for the error message; every request URL is appended to ``requests``."""
    page = browser.new_page(viewport=VIEWPORT)
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url, wait_until="domcontentloaded")
    _wait_page(page, "Overview", True, FIRST_LOAD_S)
    for name, link, title, charts in PAGES:
        step[0] = name
        if name != "overview":
            page.locator('[data-testid="stSidebarNavLink"]', has_text=link).first.click()
            _wait_page(page, title, charts, PAGE_LOAD_S)
        _assert_no_exception(page, name)
        if name == "overview":
            assert page.locator('[data-testid="stDataFrame"]').count() >= 1, "no metrics table"
            assert page.locator('[data-testid="stVegaLiteChart"]').count() >= 3, "missing charts"
            run = page.get_by_text("ann_minilm")
            assert _count_when_drawn(page, run) >= 1, "the demo run is not in the page"
        if name == "models":
            step[0] = "models: comparing two models"
            _compare_two_models(page, second_model)
        if name in ("worst", "inspector"):
            assert page.locator('[data-testid="stDataFrame"]').count() >= 1, f"{name}: no table"
        page.screenshot(path=str(shots / f"{name}.png"))
        if name in FINDINGS_TITLES:
            step[0] = f"{name}: the first screen at 1,400 px"
            _first_screen_fits(page, name)
        if name == "overview":
            step[0] = "overview: downloading the report"
            _check_report_download(page)
        if name == "map":
            step[0] = "map: clicking a failed query"
            _click_a_failed_query(page)
    page.close()


@pytest.fixture(scope="module")
def app_server(tmp_path_factory, second_model):
    """One ``streamlit run app.py`` and one headless Chromium for this file's tests (a server, its first analysis of
    the demo and a browser start were paid twice when the Judge test had a file of its own). Caches and the judging
    journal in a temporary folder."""
    sync_api = require_browser()
    tmp = tmp_path_factory.mktemp("app")
    env = dict(os.environ)
    env["DIAGNOSE_CACHE_DIR"] = str(tmp / "cache")
    env["DIAGNOSE_JOURNAL"] = str(tmp / "journal" / "judgements.jsonl")
    # every page drawn whole (the progressive start has an AppTest)
    env["DIAGNOSE_FOREGROUND_SECONDS"] = "600"
    env.pop("DIAGNOSE_ENCODER", None)
    # the second model's folder is typed on the Model choice page: a typed model folder is read only under the data
    # root (the demo corpus is the app's own, read wherever the root is)
    env["DIAGNOSE_DATA_ROOT"] = str(Path(second_model).parent)
    if not REAL_MODEL:
        env["DIAGNOSE_ENCODER"] = "keyword"
    log = tmp / "streamlit.log"
    with running_app("app.py", log, env) as url, chromium(sync_api) as browser:
        yield SimpleNamespace(
            url=url, log=log, browser=browser, sync_api=sync_api, journal=Path(env["DIAGNOSE_JOURNAL"])
        )


def test_every_page_in_chromium(tmp_path, second_model, app_server):
    sync_api, browser, url, log = app_server.sync_api, app_server.browser, app_server.url, app_server.log
    shots = DOCS_SHOTS if REFRESHING else tmp_path / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    # A browser-automation error (a timeout, a detached element) on this shared 2-core machine gets one more
    # attempt on a fresh tab, with the first error printed; an assertion about the app (an exception or an error box
    # on a page, a missing table or chart) fails at once.
    for attempt in (1, 2):
        step = ["start"]
        try:
            _visit_every_page(browser, url, second_model, step, shots, requests)
            break
        except sync_api.Error as e:
            shot = tmp_path / f"failure_{attempt}.png"
            with contextlib.suppress(sync_api.Error):
                browser.contexts[-1].pages[-1].screenshot(path=str(shot))
            message = f"attempt {attempt}, step {step[0]}: {e}\nscreenshot: {shot}"
            if attempt == 2:
                raise AssertionError(message + "\n" + log.read_text(errors="replace")[-3000:]) from e
            print(f"browser test, retrying once after: {message}", file=sys.stderr)
    outside = sorted({u for u in requests if not is_local(u)})
    assert requests and not outside, f"the page made requests outside 127.0.0.1: {outside[:10]}"


# ------------------------------------------------------------------------------ the Judge page, by the keyboard

JUDGE_LOAD_S = 300


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
    page.wait_for_selector(READY, timeout=JUDGE_LOAD_S * 1000)
    page.wait_for_timeout(500)


def test_judge_page_grades_with_the_keyboard(tmp_path, app_server):
    """Headless Chromium opens the Judge page and presses the grade keys; each key press appends its line to the
    journal, for the pair the page showed. The screenshot goes to the test's temporary folder; with
    ``DIAGNOSE_REFRESH_SCREENSHOTS=1`` also to ``docs/screenshots/judge.png``."""
    journal = app_server.journal
    assert _lines(journal) == []  # the visit of every page pressed no grade key
    page = app_server.browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_server.url + "/judge", wait_until="domcontentloaded")
    page.locator('h1:has-text("Judge"), [data-testid="stException"]').first.wait_for(
        timeout=JUDGE_LOAD_S * 1000
    )
    assert page.locator('[data-testid="stException"]').count() == 0, page.inner_text("body")[:2000]
    page.get_by_role("button", name=re.compile("2 · relevant")).wait_for(timeout=JUDGE_LOAD_S * 1000)
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
    page.close()
