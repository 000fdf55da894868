"""The whole-collection map in a real browser: 100,000 points through ``st.pydeck_chart`` in headless Chromium on
software WebGL (SwiftShader, no GPU).

Runs ``tests/browser_map_app.py`` (the :func:`diagnose.charts.deck.embedding_deck` chart of generated points: no UMAP, so
this measures the browser) on a free port and checks that the canvas draws (pixels other than the background in a
screenshot), that a zoom with the mouse wheel and a pan with a drag keep drawing, and that no request leaves
127.0.0.1 (the map has no basemap, no tiles, no fonts from a CDN). It prints the time to the first drawn frame and the
median ``requestAnimationFrame`` interval while zooming and panning; numbers are reported, never asserted (2 shared
cores). Screenshots go to a temporary folder (``DIAGNOSE_SHOTS_DIR`` to keep them). ``bench/bench_map_deck.py`` uses
the same functions. The module's tests share one server and one Chromium (each test its own tab, the size in the
URL): a server start and a Chromium launch fewer, and the second test draws in a GPU process that has drawn the map
before (34 -> 23 s for it on the loaded machine).

Skipped cleanly when ``/usr/bin/chromium`` or the ``playwright`` package is missing (never runs ``playwright
install``).
"""

from __future__ import annotations

import io
import os
import statistics
import time
from pathlib import Path

import pytest
from browser import chromium, is_local, require_browser, running_app

pytestmark = pytest.mark.browser

APP = Path(__file__).with_name("browser_map_app.py")
CHART = '[data-testid="stDeckGlJsonChart"]'
N_POINTS = 100_000
# The test's zoom and pan: 1 wheel notch and a 2-move drag (the bench's 6 and 20 measure frame times). Here each
# input event is a software-WebGL pass over the 100,000 points (a redraw, or a picking pass on hover and on the
# button press): SwiftShader draws an instanced layer one instance at a time, ~4 s of wall and ~5 CPU-s per pass on
# 2 shared cores (WebGL draw calls counted in the page: 10 passes with 2 notches and 4 moves, 7 with 1 and 2; the
# GPU process 48 -> 34 CPU-s). One notch zooms and two moves pan: the zoomed screenshot is drawn after both. No
# pause before the first screenshot.
TEST_GESTURES = {"wheel_notches": 1, "drag_steps": 2, "settle_ms": 0}


def deck_env(n_points: int) -> dict[str, str]:
    """The environment in which ``tests/browser_map_app.py`` draws ``n_points`` points."""
    return dict(os.environ, DIAGNOSE_DECK_POINTS=str(n_points))


def drawn_pixels(png: bytes) -> int:
    """Pixels that differ (by more than 40 in some channel) from the most common colour, the background.

    The colours are counted as 24-bit integers (``r << 16 | g << 8 | b``, whose order is ``np.unique``'s row order,
    so a tie picks the same background): ``np.unique(axis=0)`` sorted every pixel's row, ~2 CPU-s per screenshot of
    the 100k-point chart, which the first-frame wait takes several times."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int32)
    flat = img.reshape(-1, 3)
    code = np.bincount((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]).argmax()
    bg = np.array([code >> 16, (code >> 8) & 255, code & 255])
    return int((np.abs(flat - bg).max(axis=1) > 40).sum())


FRAMES_JS = """() => { window.__frames = []; window.__stop = false;
  const tick = (t) => { window.__frames.push(t); if (!window.__stop) requestAnimationFrame(tick); };
  requestAnimationFrame(tick); }"""


def measure(
    page,
    url: str,
    shots: Path,
    *,
    timeout_s: float = 600,
    wheel_notches: int = 6,
    drag_steps: int = 20,
    settle_ms: int = 1500,
) -> dict[str, float]:
    """Open the page, wait for the first drawn frame, zoom with ``wheel_notches`` notches of the mouse wheel and pan
    with a drag of ``drag_steps`` moves; returns the timings and pixel counts. The defaults are the bench's
    (``bench/bench_map_deck.py``); ``settle_ms`` is the pause before the first screenshot is saved."""
    out: dict[str, float] = {}
    t0 = time.monotonic()
    page.goto(url)
    page.locator(f"{CHART} canvas").first.wait_for(timeout=int(timeout_s * 1000))
    chart = page.locator(CHART).first
    deadline = t0 + timeout_s
    while True:
        png = chart.screenshot()
        n = drawn_pixels(png)
        if n > 5000 or time.monotonic() > deadline:
            break
        page.wait_for_timeout(200)
    out["first_frame_s"] = time.monotonic() - t0
    out["drawn_pixels"] = n
    if settle_ms:
        page.wait_for_timeout(settle_ms)
        png = chart.screenshot()
    (shots / "deck_map.png").write_bytes(png)
    box = page.locator(f"{CHART} canvas").first.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.evaluate(FRAMES_JS)
    t1 = time.monotonic()
    for _ in range(wheel_notches):  # zoom in
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(120)
    page.mouse.down()  # pan: 200 x 100 pixels in all
    for i in range(1, drag_steps + 1):
        page.mouse.move(cx + 200 * i / drag_steps, cy + 100 * i / drag_steps)
        page.wait_for_timeout(40)
    page.mouse.up()
    page.wait_for_timeout(800)
    out["interaction_s"] = time.monotonic() - t1
    frames = page.evaluate("() => { window.__stop = true; return window.__frames; }")
    gaps = [b - a for a, b in zip(frames, frames[1:], strict=False)]
    out["frames"] = len(frames)
    out["median_frame_ms"] = statistics.median(gaps) if gaps else float("nan")
    out["p95_frame_ms"] = sorted(gaps)[int(0.95 * (len(gaps) - 1))] if gaps else float("nan")
    png = chart.screenshot(path=str(shots / "deck_map_zoomed.png"))
    out["drawn_pixels_zoomed"] = drawn_pixels(png)
    return out


@pytest.fixture(scope="module")
def deck_app(tmp_path_factory):
    """One server of ``tests/browser_map_app.py`` and one headless Chromium for the module's tests (each test opens
    its own tab, its size and data in the URL); yields ``(url, browser)``."""
    sync_api = require_browser()
    log = tmp_path_factory.mktemp("deck_app") / "streamlit.log"
    with running_app(APP, log, deck_env(N_POINTS)) as url, chromium(sync_api) as browser:
        yield url, browser


def test_deck_map_of_100k_points_draws_and_stays_interactive(tmp_path, deck_app):
    url, browser = deck_app
    shots = Path(os.environ.get("DIAGNOSE_SHOTS_DIR") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.on("request", lambda r: requests.append(r.url))
        page.set_default_timeout(600_000)
        result = measure(page, f"{url}/?points={N_POINTS}", shots, **TEST_GESTURES)
        title = page.locator("h1").first.inner_text()
    finally:
        page.close()
    print(f"\ndeck map, {N_POINTS:,} points: {result} (screenshots in {shots})")
    assert f"{N_POINTS:,} points" in title
    assert result["drawn_pixels"] > 5000, "the deck.gl canvas stayed blank"
    assert result["drawn_pixels_zoomed"] > 5000, "the canvas went blank after zooming and panning"
    assert result["frames"] >= 2
    outside = sorted({u for u in requests if not is_local(u)})
    assert requests and not outside, f"the page made requests outside 127.0.0.1: {outside[:10]}"


def test_ids_and_texts_that_look_like_deck_expressions_do_not_break_the_map(deck_app):
    """Before: an id or snippet starting with ``@@=`` or ``@@#`` was evaluated by deck.gl's JSON converter and the
    whole map failed with a JavaScript error (no canvas drawn). 2,000 points, five of each kind hostile."""
    url, browser = deck_app
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.set_default_timeout(300_000)
        page.goto(f"{url}/?points=2000&hostile=1")
        page.locator("h1", has_text="2,000 points").first.wait_for()
        chart = page.locator(CHART).first
        chart.wait_for(timeout=120_000)  # before: never visible, the converter threw
        n = 0
        for _ in range(150):  # up to ~30 s for the first frame
            n = drawn_pixels(chart.screenshot())
            if n > 500:
                break
            page.wait_for_timeout(200)
    finally:
        page.close()
    assert n > 500, f"the deck.gl canvas stayed blank; errors: {errors[:5]}"
    assert not [e for e in errors if "@@" in e or "expression" in e.lower() or "undefined" in e.lower()], (
        errors[:5]
    )
