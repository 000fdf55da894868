"""What the real-browser tests share (and ``bench/bench_map_deck.py``): a Streamlit script served on a free port of
127.0.0.1, the system's headless Chromium through Playwright, and the check that a request stayed local.

Never runs ``playwright install``: the tests use ``/usr/bin/chromium`` and skip cleanly when it, the ``playwright``
package or the ``streamlit`` command is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
DOCS_SHOTS = ROOT / "docs" / "screenshots"
REFRESH_ENV = "DIAGNOSE_REFRESH_SCREENSHOTS"
READY = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def require_browser() -> ModuleType:
    """``playwright.sync_api``; skips the calling test when Chromium, Playwright or the streamlit command is missing."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    if shutil.which("streamlit") is None and not (Path(sys.executable).parent / "streamlit").exists():
        pytest.skip("the streamlit command is not installed")
    return sync_api


def is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in LOCAL_HOSTS


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"streamlit exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"streamlit did not answer on {url} within {timeout:.0f} s")


def start_app(script: str | Path, log: Path, env: Mapping[str, str]) -> tuple[subprocess.Popen, str]:
    """``streamlit run SCRIPT`` (relative to the repository) with ``env``, its output in ``log``; once it answers,
    the process and its URL. A server that exits or does not answer within 120 s is stopped and fails the test.

    The server does not watch files (``--server.fileWatcherType none``): a test never edits a source, and the
    watcher polled every file the app imports and rescanned ``sys.modules`` after each run (about a third of the
    server's busy samples in a py-spy profile of tests/test_browser.py), and runs no full garbage collection after
    each script run (``--runner.postScriptGC false``: Streamlit's guard against memory building up in a long-lived
    server; ``gc.collect(2)`` took 0.3 CPU-s a run in a server that holds torch and sentence-transformers)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--runner.postScriptGC",
        "false",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_healthy(url, proc, log)
    except BaseException:
        stop_app(proc)
        raise
    return proc, url


def stop_app(proc: subprocess.Popen) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL after 20 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


@contextlib.contextmanager
def running_app(script: str | Path, log: Path, env: Mapping[str, str]) -> Iterator[str]:
    """:func:`start_app` for the length of a ``with`` block; yields the URL and stops the server at the end."""
    proc, url = start_app(script, log, env)
    try:
        yield url
    finally:
        stop_app(proc)


@contextlib.contextmanager
def chromium(sync_api: ModuleType) -> Iterator[Any]:
    """The system's headless Chromium through Playwright for the length of a ``with`` block."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
