"""Embedding throughput of the bundled all-MiniLM-L6-v2 on CPU, and the cost of a cache hit.

Usage (from the repository root; needs ../shared/data/nfcorpus):

    python -u bench/bench_encode.py                    # ~8 min on 2 busy cores
    python -u bench/bench_encode.py --n-docs 500       # the size first planned: ~4x longer

What is measured (wall time, one process):
- throughput: ``encoder.encode`` (sentence-transformers, normalised, no cache) of the first --n-docs NFCorpus
  documents (title + " " + text; nearly all are cut at the model's 256 word pieces) per configuration: batch sizes
  --batch-sizes with torch's default thread count, and ``torch.set_num_threads(1)`` at batch 32. Repeats are
  interleaved round-robin over the configurations (so load drift on a shared machine hits all of them alike);
  median of --repeats;
- cache hit: ``embed_texts`` of all 3,633 NFCorpus documents with a new ``EmbeddingCache`` object on a folder
  that holds their vectors under the bundled model's identity (median of 5; an encoder wrapper asserts that
  nothing is encoded). The folder is filled by a stand-in encoder with the same name and dim that returns random
  unit vectors, because a real cold encode of 3,633 documents takes ~15 min here and a hit does not depend on the
  values (hash the texts, read the shards, gather rows);
- store scale: ``RowStore.get`` of 100,000 random 384-d rows (one 150 MB shard) from a new store object.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from diagnose.cache import RowStore, text_key  # noqa: E402
from diagnose.data import document_text  # noqa: E402
from diagnose.embed import EmbeddingCache, embed_texts, load_encoder  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "nfcorpus"


class StandIn:
    """Same identity as the real encoder, random unit vectors (to fill the cache without a 15-min encode)."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim
        self.rng = np.random.default_rng(0)

    def encode(self, texts, *, batch_size=64, progress=False):
        x = self.rng.normal(size=(len(texts), self.dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


class MustNotEncode:
    def __init__(self, inner) -> None:
        self.name, self.dim = inner.name, inner.dim

    def encode(self, texts, *, batch_size=64, progress=False):
        raise AssertionError(f"cache miss: asked to encode {len(texts)} texts")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-docs", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--cache-only", action="store_true", help="skip the throughput runs")
    ap.add_argument("--threads-only", action="store_true", help="only threads 1 vs default, at batch 32")
    return ap.parse_args()


def load(n_docs: int) -> tuple[list[str], list[str], object, int]:
    """Imports torch and sentence-transformers, reads NFCorpus, loads the encoder and prints what it took and the
    sample's word pieces; -> all texts, the first ``n_docs``, the encoder (warmed up), torch's default threads."""
    t = time.perf_counter()
    import torch
    from sentence_transformers import SentenceTransformer  # noqa: F401

    import_s = time.perf_counter() - t
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    texts = [document_text(d.get("title", ""), d.get("text", "")) for d in docs]
    sample = texts[:n_docs]
    t = time.perf_counter()
    enc = load_encoder(None)
    load_s = time.perf_counter() - t
    default_threads = torch.get_num_threads()
    n_tok = [len(enc.model.tokenizer(x, truncation=False)["input_ids"]) for x in sample]
    print(
        f"machine: {platform.machine()}, os.cpu_count()={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, "
        f"torch {torch.__version__} default threads={default_threads}"
    )
    print(f"import torch+sentence_transformers {import_s:.1f} s; load_encoder() {load_s:.2f} s; {enc.name}")
    print(
        f"sample: {len(sample)} docs, word pieces median {statistics.median(n_tok):.0f}, "
        f"{sum(n > 256 for n in n_tok)} of {len(sample)} cut at 256"
    )
    enc.encode(sample[:16], batch_size=16)  # warm-up
    return texts, sample, enc, default_threads


def throughput(args: argparse.Namespace, enc, sample: list[str], default_threads: int) -> None:
    """Encodes the sample per (threads, batch) configuration, round-robin over --repeats; prints the table."""
    import torch

    configs = [(default_threads, bs) for bs in args.batch_sizes] + [(1, 32)]
    if args.threads_only:
        configs = [(default_threads, 32), (1, 32)]
    if args.cache_only:
        configs = []
    times: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    cpu: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    for _ in range(args.repeats):
        for threads, bs in configs:
            torch.set_num_threads(threads)
            gc.collect()
            t, c = time.perf_counter(), time.process_time()
            enc.encode(sample, batch_size=bs)
            times[(threads, bs)].append(time.perf_counter() - t)
            cpu[(threads, bs)].append(time.process_time() - c)
            print(f"  threads={threads} batch={bs}: {times[(threads, bs)][-1]:.1f} s", flush=True)
    torch.set_num_threads(default_threads)
    if configs:
        print(
            f"\n| torch threads | batch | wall s (median of {args.repeats}) | passages/s (wall) "
            "| CPU s, all threads | passages per CPU-s |\n|---|---|---|---|---|---|"
        )
    for (threads, bs), ts in times.items():
        m, mc = statistics.median(ts), statistics.median(cpu[(threads, bs)])
        print(f"| {threads} | {bs} | {m:.1f} | {len(sample) / m:.1f} | {mc:.1f} | {len(sample) / mc:.1f} |")


def cache_hit(enc, texts: list[str], tmp: str) -> None:
    """Fills the cache in ``tmp`` with stand-in vectors, then times five hits from a new cache object."""
    embed_texts(StandIn(enc.name, enc.dim), texts, cache=EmbeddingCache(tmp))
    hits = []
    for _ in range(5):
        gc.collect()
        t = time.perf_counter()
        embed_texts(MustNotEncode(enc), texts, cache=EmbeddingCache(tmp))
        hits.append(time.perf_counter() - t)
    print(
        f"\ncache hit, {len(texts)} docs, new EmbeddingCache object, median of 5: {statistics.median(hits) * 1000:.0f} ms"
    )


def store_scale(tmp: str) -> None:
    """Times ``RowStore.get`` of 100,000 random rows from a new store object, three times."""
    rng = np.random.default_rng(0)
    n = 100_000
    rows = rng.normal(size=(n, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    keys = [text_key(f"doc {i}") for i in range(n)]
    RowStore(Path(tmp) / "big", width=384).put(keys, rows)
    big = []
    for _ in range(3):
        t = time.perf_counter()
        found, got = RowStore(Path(tmp) / "big", width=384).get(keys)
        big.append(time.perf_counter() - t)
    assert found.all() and np.array_equal(got, rows)
    print(
        f"RowStore.get of {n} x 384 from a new store object, median of 3: {statistics.median(big) * 1000:.0f} ms"
    )


def main() -> None:
    args = parse_args()
    texts, sample, enc, default_threads = load(args.n_docs)
    throughput(args, enc, sample, default_threads)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    if args.threads_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache_hit(enc, texts, tmp)
        store_scale(tmp)


if __name__ == "__main__":
    main()
