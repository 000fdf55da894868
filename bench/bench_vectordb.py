"""``diagnose failures --corpus chroma:PATH#COLLECTION`` (issue 20): a collection opened and diagnosed, cold and warm,
against the same data read from files (which encodes the documents).

The collection is built once, before any timing, from the BEIR folder ``--data`` (default ``demo_corpus``) with
the bundled model's vectors (cosine). Then per round: the caches emptied, ``diagnose failures`` over the collection
cold (the model loads to encode the golden queries; the BM25 index is built) and warm (every cache hit), and the
same command over the files cold (the documents encoded too). Also the read alone (open + read every document and
vector, in process). Run: ``python bench/bench_vectordb.py [--data DIR] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, bm25_run, cpu_name, timed


def build(data: Path, folder: Path) -> str:
    """A Chroma collection of the corpus of ``data`` with the bundled model's vectors; its spec."""
    import chromadb
    import numpy as np
    from chromadb.config import Settings

    from diagnose.embed import load_encoder
    from diagnose.io import load_dataset

    ds = load_dataset(data_dir=data)
    vecs = np.asarray(load_encoder(None).encode(ds.corpus.texts()), dtype=np.float32)
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(
        "docs", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    df = ds.corpus.df
    for i in range(0, len(df), 1000):
        part = df.iloc[i : i + 1000]
        col.add(
            ids=list(part["doc_id"]),
            documents=list(part["text"]),
            metadatas=[{"title": t} for t in part["title"]],
            embeddings=vecs[i : i + 1000],
        )
    return f"chroma:{folder}#docs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "demo_corpus"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    data = Path(args.data).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-vectordb-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        spec = build(data, work / "chroma")
        run = bm25_run(data, work, env)
        cache = work / "cache"
        common = ["failures", "--run", f"bm25={run}", "--cache-dir", str(cache), "--format", "json"]
        db = [
            sys.executable,
            "-m",
            "diagnose",
            *common,
            "--corpus",
            spec,
            "--queries",
            str(data / "queries.jsonl"),
            "--qrels",
            str(data / "qrels" / "test.tsv"),
        ]
        files = [sys.executable, "-m", "diagnose", *common, "--data", str(data)]
        read, cold, warm, files_cold = [], [], [], []
        for _ in range(args.repeats):
            read.append(_read_time(spec))
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(db, env)[0])
            warm.append(timed(db, env)[0])
            shutil.rmtree(cache, ignore_errors=True)
            files_cold.append(timed(files, env)[0])
        print(f"{data.name}: {spec}  cpu: {cpu_name('?')}")
        for label, times in (
            ("read_collection (in process)", read),
            ("failures --corpus chroma, cold", cold),
            ("failures --corpus chroma, warm", warm),
            ("failures --data (files), cold", files_cold),
        ):
            print(f"{label:<34} median {statistics.median(times):.2f} s  {[round(x, 2) for x in times]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _read_time(spec: str) -> float:
    from diagnose.io.vectordb import read_collection

    t0 = time.perf_counter()
    read_collection(spec)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
