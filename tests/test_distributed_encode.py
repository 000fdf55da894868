"""examples/encode_with_ray.py: Ray Data + sentence-transformers writes the Parquet vectors diagnose reads.

Runs the example as a user would (a fresh process, Ray started locally) on the first 50 demo documents, then checks
that :func:`diagnose.embed.load_precomputed` reads the file and that every vector equals, to cosine >= 0.9999, the
vector diagnose's own default encoder gives the same text (``document_text(title, text)``). Skipped when Ray is not
installed (``pip install -e ".[distributed]"``); it loads the bundled model twice and starts Ray: ~30-60 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[distributed]'")
pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install -e '.[distributed]'")
pytest.importorskip("sentence_transformers")

pytestmark = pytest.mark.real_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "encode_with_ray.py"


def test_ray_example_writes_vectors_diagnose_reads(tmp_path: Path) -> None:
    from diagnose.data import document_text
    from diagnose.embed import load_encoder, load_precomputed
    from diagnose.io import read_corpus, read_queries

    lines = (ROOT / "demo_corpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:50]
    sample = tmp_path / "corpus.jsonl"
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join((ROOT / "demo_corpus" / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:5])
        + "\n",
        encoding="utf-8",
    )
    docs_out, queries_out = tmp_path / "doc_vectors.parquet", tmp_path / "query_vectors.parquet"
    for src, out, kind in ((sample, docs_out, "doc"), (queries, queries_out, "query")):
        cmd = [sys.executable, str(EXAMPLE), str(src), str(out), "--kind", kind, "--workers", "1"]
        done = subprocess.run(
            [*cmd, "--threads", "1"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert out.is_file() and not out.with_name(out.name + ".parts").exists()

    pre = load_precomputed(docs_out, queries_out)
    corpus, qs = read_corpus(sample), read_queries(queries)
    assert sorted(pre.doc_ids) == sorted(corpus.ids.tolist())  # every document once, under its own id
    assert sorted(pre.query_ids) == sorted(qs.ids.tolist())
    assert pre.dim == 384

    # diagnose's default: the bundled all-MiniLM-L6-v2 (the fast bf16 path where the CPU has it)
    encoder = load_encoder(None)
    doc_ids = list(corpus.ids)
    texts = [document_text(t, x) for t, x in zip(corpus.df["title"], corpus.df["text"], strict=True)]
    ours = encoder.encode(texts)
    theirs = pre.doc_matrix(doc_ids)
    cos = np.einsum("ij,ij->i", ours.astype(np.float64), theirs.astype(np.float64))
    assert cos.min() >= 0.9999, (cos.min(), doc_ids[int(cos.argmin())])

    q_text = qs.text_of()
    q_ids = list(qs.ids)
    cos_q = np.einsum(
        "ij,ij->i",
        encoder.encode([q_text[q] for q in q_ids]).astype(np.float64),
        pre.query_matrix(q_ids).astype(np.float64),
    )
    assert cos_q.min() >= 0.9999
