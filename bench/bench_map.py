"""Time until the embedding map of NFCorpus (test) is ready, whole process, cold and warm, beside a bare encode.

The measured process does what the app does before it draws the map page: load the data and a run, embed the
corpus and the judged queries (bundled model, disk cache), build BM25, diagnose the run's failures, sample and
project with UMAP, tabulate the points and edges. Cold: empty embedding/BM25/projection caches and numba's compile
on the first UMAP fit. Warm: the same again with every cache filled. Bare: a process that loads the same model and
encodes the same texts. The three alternate in one run.

    python bench/bench_map.py [--data ../shared/data/nfcorpus] [--repeats 1]

(Needs ../shared/data/nfcorpus.) The Streamlit server itself is left out: it adds its own start-up, the same for
any page, and nothing here would change it.
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
sys.path.insert(0, str(ROOT / "bench"))
from bench_failures import BARE  # noqa: E402 - the same bare-encode script as the failures benchmark

MAP = r"""
import sys, time
from diagnose.io import load_dataset
from diagnose.space import VectorSpace
from diagnose.lexical import BM25Index
from diagnose.failures import diagnose_run
from diagnose import projection
data, run, cache = sys.argv[1], sys.argv[2], sys.argv[3]
ds = load_dataset(data_dir=data, runs=[("run", run)])
golden = ds.qrels.queries_with_relevant()
space = VectorSpace.build(ds, golden, cache_dir=cache)
bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids), cache_dir=cache + "/bm25")
diag = diagnose_run(ds, ds.runs["run"], space, bm25, k=10)
failed = projection.failed_queries_from(diag.failures, ds.runs["run"].ranked_lists(), 10)
q_text = ds.queries.text_of()
m = projection.build_map(
    doc_ids=list(space.doc_ids), doc_texts=ds.corpus.texts(), doc_vecs=space.doc_vecs,
    query_ids=list(space.query_ids), query_texts=[q_text[q] for q in space.query_ids],
    query_vecs=space.query_vecs, failed=failed, cache_dir=cache + "/projections",
)
print(len(m.points), m.projection.cached, round(m.projection.trustworthiness, 3))
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, env=env, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus at {data}")
    work = Path(tempfile.mkdtemp(prefix="bench_map_"))
    numba_cache = work / "numba"  # a fresh numba cache: the cold run pays the compile, like a new install
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NUMBA_CACHE_DIR": str(numba_cache)}
    subprocess.run(
        [sys.executable, "-m", "diagnose", "evaluate", "--data", str(data), "--baseline", "bm25",
         "--write-runs", str(work), "--format", "json"],
        check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    run = work / "bm25.trec"
    cold, warm, bare, info = [], [], [], ""
    for _ in range(args.repeats):
        cache = work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(numba_cache, ignore_errors=True)
        cmd = [sys.executable, "-c", MAP, str(data), str(run), str(cache)]
        bare.append(timed([sys.executable, "-c", BARE, str(data)], env)[0])
        t, info = timed(cmd, env)
        cold.append(t)
        t, info_warm = timed(cmd, env)
        warm.append(t)
    b, c, w = statistics.median(bare), statistics.median(cold), statistics.median(warm)
    print(f"repeats: {args.repeats}; map points, cached, trustworthiness: cold {info} / warm {info_warm}")
    print(f"bare model.encode process: median {b:.1f} s  {[round(x, 1) for x in bare]}")
    print(
        f"map ready, cold:           median {c:.1f} s  {[round(x, 1) for x in cold]}  = bare + {c - b:.1f} s"
    )
    print(f"map ready, warm:           median {w:.1f} s  {[round(x, 1) for x in warm]}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
