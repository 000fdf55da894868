"""The UI's pure helpers, without AppTest: markdown escaping and highlighting, uploads written once per content."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from diagnose.ui import sources, text  # noqa: E402

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def test_escape_md_leaves_no_markdown_html_or_latex_active():
    raw = "**bold** <b>x</b> $x^2$ :red[y] [link](http://e.x) `code` # h"
    out = text.escape_md(raw)
    # every ASCII punctuation character is preceded by a backslash
    for i, ch in enumerate(out):
        if ch in "*<>$:[]()`#" and (i == 0 or out[i - 1] != "\\"):
            raise AssertionError(f"unescaped {ch!r} at {i} in {out!r}")
    assert out.replace("\\", "") == raw


def test_highlight_md_bolds_exactly_the_spans():
    # "Statin use; statins work": spans (0, 6) "Statin" and (12, 19) "statins"
    out = text.highlight_md("Statin use; statins work", [(0, 6), (12, 19)])
    assert out == "**Statin** use\\; **statins** work"


def test_upload_spec_writes_once_per_content(tmp_path):
    a = sources.Upload("corpus.jsonl", b'{"_id": "d1", "text": "x"}\n')
    q = sources.Upload("queries.jsonl", b'{"_id": "q1", "text": "x"}\n')
    r = sources.Upload("qrels.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    s1 = sources.upload_spec(a, q, r, [], root=tmp_path)
    s2 = sources.upload_spec(a, q, r, [], root=tmp_path)
    assert s1 == s2 and Path(s1.corpus).read_bytes() == a.data
    assert len(list(tmp_path.iterdir())) == 1
    s3 = sources.upload_spec(a, q, sources.Upload("qrels.tsv", r.data + b"q1\td2\t0\n"), [], root=tmp_path)
    assert s3.qrels != s1.qrels and s3.fingerprint() != s1.fingerprint()
