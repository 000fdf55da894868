"""examples/encode_with_ray.py: Ray Data + sentence-transformers writes the Parquet vectors diagnose reads.

Runs the example's command line (its ``main``, with the arguments a user types) in a fresh process with Ray
started locally, on the first 50 demo documents and then on 5 queries, then checks that
:func:`diagnose.embed.load_precomputed` reads the files and that every vector equals, to cosine >= 0.9999, the vector
diagnose's own default encoder gives the same text (``document_text(title, text)``). Both commands run in the one
process, so Ray starts once (``encode`` reuses a running Ray, as a second command in a Ray job would): Ray's
start-up was half of this test's time. Skipped when Ray is not installed (``pip install -e ".[distributed]"``); it
loads the bundled model three times (two encoding actors, then diagnose) and starts Ray once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.real_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "encode_with_ray.py"
# the example's main() once per argument list (argv[2], JSON), in this one process: one Ray start for all of them
RUN_MAINS = """import json, runpy, sys
main = runpy.run_path(sys.argv[1], run_name="encode_with_ray")["main"]
for argv in json.loads(sys.argv[2]):
    assert main(argv) == 0, argv
"""


def test_ray_example_writes_vectors_diagnose_reads(tmp_path: Path) -> None:
    # skipped here, not at the module's import: importing these at collection cost every xdist worker ~10 CPU-s
    # (sentence_transformers imports torch, transformers and scikit-learn), whether or not it runs this test
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[distributed]'")
    pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install -e '.[distributed]'")
    pytest.importorskip("sentence_transformers")
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
    argvs = [
        [str(src), str(out), "--kind", kind, "--workers", "1", "--threads", "1"]
        for src, out, kind in ((sample, docs_out, "doc"), (queries, queries_out, "query"))
    ]
    done = subprocess.run(
        [sys.executable, "-c", RUN_MAINS, str(EXAMPLE), json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for out in (docs_out, queries_out):
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
