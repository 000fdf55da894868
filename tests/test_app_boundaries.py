"""The app's boundaries, read from the source: the library never imports Streamlit, no page renders raw HTML."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("streamlit")
from app_testing import ROOT  # noqa: E402

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def test_the_library_never_imports_streamlit():
    """Every library module (and the UI's pure helpers) imports without pulling Streamlit in."""
    import subprocess
    import sys

    lib = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "diagnose").rglob("*.py")
        if "ui" not in p.relative_to(ROOT / "diagnose").parts[:1] and p.name != "__main__.py"
    ) + [
        "diagnose.ui.sources",
        "diagnose.ui.text",
    ]
    assert "diagnose.analysis.pipeline" in lib and "diagnose.io.runs" in lib  # the packages' modules too
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in lib)
    code += (
        "assert 'streamlit' not in sys.modules, sorted(m for m in sys.modules if m.startswith('streamlit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_page_renders_raw_html():
    for path in [ROOT / "app.py", *sorted((ROOT / "diagnose" / "ui").rglob("*.py"))]:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"unsafe_allow_html\s*=", source), path
        assert "st.html(" not in source and "components.html(" not in source, path
