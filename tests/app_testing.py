"""What the AppTest tests of the app share (tests/test_app_*.py): where the app, its pages and the demo are, starting
it, opening a page, the check that a page drew without an exception or an error box, and reading what a page shows
(tables, charts, escaped markdown). The fake keyword encoder comes from the ``keyword_encoder`` fixture
(tests/conftest.py).

``DIAGNOSE_ENCODER=keyword`` makes the app use :class:`diagnose.embed.KeywordEncoder` instead of the bundled model
(see diagnose/ui/state.py), so each page renders in about a second. Expected values come from the demo files
themselves (run files on disk, lines of corpus.jsonl), never from the app's own output.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")  # a test module that imports this one is skipped without Streamlit
from streamlit.testing.v1 import AppTest  # noqa: E402


def _scan_components_once() -> None:
    """Streamlit's scan of the installed packages for components, once per process instead of once per AppTest.

    Each new AppTest's first run reads the metadata of every installed distribution (``scan_component_manifests``,
    from ``BidiComponentManager.discover_and_register_components``): 16 % of tests/test_app_pages.py's profiled
    CPU. The installed packages do not change during a test run, so the answer is kept. Another Streamlit without
    that scanner: nothing to do."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # pragma: no cover - another Streamlit
        return
    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=None)(scan)


_scan_components_once()

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
PAGES = "diagnose/ui/pages/{}.py"
DEMO = ROOT / "demo_corpus"
APP_TIMEOUT = 120
DEMO_RUNS = sorted(p.name.split(".")[0] for p in (DEMO / "runs").iterdir() if p.suffix == ".trec")
BASELINES = ["bm25", "dense", "hybrid"]


def start_app(timeout: float) -> AppTest:
    """The app after its first run (the Overview), each later run allowed ``timeout`` seconds."""
    return AppTest.from_file(str(APP), default_timeout=timeout).run()


def open_page(at: AppTest, page: str) -> AppTest:
    """``at`` switched to ``diagnose/ui/pages/<page>.py`` and run, checked clean."""
    at.switch_page(PAGES.format(page)).run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def unescaped(markdown: str) -> str:
    """What a reader sees of escaped markdown: user text in messages is backslash-escaped (never rendered)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def demo_app() -> AppTest:
    return start_app(APP_TIMEOUT)


def open_demo(page: str, at: AppTest | None = None) -> AppTest:
    """``at`` (or a new app on the demo) on ``page``, checked clean. A new app's first run is the page itself, as
    when a user opens the page's URL: it used to run the Overview first and then the page, an Overview run
    (~0.2-0.3 CPU-s) that every such test paid and none checked (the Overview's tests open it themselves; every
    page reached through the sidebar is tests/test_browser.py's)."""
    return open_page(at or AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT), page)


def charts(at: AppTest) -> list:
    return list(at.get("arrow_vega_lite_chart")) + list(at.get("vega_lite_chart"))


def frame_with(at: AppTest, column: str):
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, f"no table with a {column!r} column"
    return frames[0]


def numbers(column):
    """A table column drawn as text (a column with holes: "—", "computing…"; counts with thousands commas) read
    back as numbers, the holes as NaN."""
    import pandas as pd

    return pd.to_numeric(column.astype(str).str.replace(",", ""), errors="coerce")
