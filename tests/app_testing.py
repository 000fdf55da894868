"""What the AppTest tests of the app share (tests/test_app.py, tests/test_app_map.py): where the app and its pages
are, starting it, opening a page, and the check that a page drew without an exception or an error box. The fake
keyword encoder comes from the ``keyword_encoder`` fixture (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
PAGES = "diagnose/ui/pages/{}.py"


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
