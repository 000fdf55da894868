"""Cold start of the app on a BEIR folder (issue 11): time until the Overview shows the metrics of the user's runs,
and until the diagnosis (the failure classes) is drawn, against the bare encode of the same texts measured in the
same session.

    python bench/bench_app_cold.py --data /tmp/nfc     # a BEIR folder with runs/ (NFCorpus + a BM25 run here)

Each measurement starts `streamlit run app.py` on 127.0.0.1 with an empty cache folder and opens it in headless
Chromium (Debian's /usr/bin/chromium, Playwright); `bare encode` is `load_encoder(None).encode(texts)` of the corpus
and the golden queries in a fresh process (the fast precision, the app's default).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY = '[data-testid="stApp"][data-test-script-state="notRunning"]'

BARE = """
import sys, time
import diagnose
from diagnose.embed import load_encoder
ds = diagnose.load(sys.argv[1])
texts = ds.corpus.texts()
q = ds.queries.text_of()
texts += [q[i] for i in ds.qrels.queries_with_relevant() if i in q]
enc = load_encoder(None)
enc.encode(texts[:8])  # load the weights outside the timing, as the app loads them before its bar starts
t0 = time.perf_counter()
enc.encode(texts)
print(time.perf_counter() - t0)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_cold(data: Path) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    cache = tempfile.mkdtemp(prefix="diagnose-cold-")
    env = {
        **os.environ,
        "DIAGNOSE_CACHE_DIR": cache,
        "DIAGNOSE_DATA_ROOT": str(data.parent),
        "DIAGNOSE_FOREGROUND_SECONDS": "3",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            b = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_selector(READY, timeout=300_000)
            page.get_by_label("Source").click()
            page.get_by_text("BEIR folder", exact=True).click()
            page.wait_for_selector(READY, timeout=300_000)
            box = page.get_by_label("BEIR folder")
            box.fill(str(data))
            t0 = time.perf_counter()
            box.press("Enter")
            # the metrics of the user's run: its name appears in the Overview's metrics table
            page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=600_000)
            page.get_by_text("prod_bm25").first.wait_for(timeout=600_000)
            metrics = time.perf_counter() - t0
            page.get_by_text("Why relevant documents were missed").first.wait_for(timeout=1_800_000)
            diagnosis = time.perf_counter() - t0
            b.close()
        return metrics, diagnosis
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, required=True)
    args = ap.parse_args()
    bare = float(
        subprocess.run(
            [sys.executable, "-c", BARE, str(args.data)], capture_output=True, text=True, check=True, cwd=ROOT
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    metrics, diagnosis = app_cold(args.data)
    print(f"bare encode (corpus + golden queries): {bare:.1f} s")
    print(
        f"app, cold: metrics of the user's run after {metrics:.1f} s; the diagnosis after {diagnosis:.1f} s "
        f"({diagnosis / bare:.2f}x the bare encode)"
    )


if __name__ == "__main__":
    main()
