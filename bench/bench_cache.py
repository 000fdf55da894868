"""Cost of the cache integrity checks: warm `diagnose failures` on NFCorpus, old code vs new code, interleaved.

Every cache file now carries a BLAKE2b digest of its bytes and metadata that is verified on read (see
``diagnose/cache.py``). This measures what that costs where it matters: a whole warm process (every vector and the
BM25 index served from disk) of

    diagnose failures --data NFCORPUS --run BM25_RUN --cache-dir CACHE --format json

run from two source trees that differ only in the cache code (``--old-tree``: a checkout before the change, e.g.
``git worktree add --detach /tmp/old_tree <rev>``; ``--new-tree``: the change). Each tree has its own cache folder
holding the same vectors (the two file formats differ): ``--old-cache`` is a warm cache written by the old tree
(its embeddings cost minutes to compute once); the new tree's cache is made from it by rewriting each shard in the
checked format (same keys, same float32 rows), and one warm-up run per tree fills the BM25 cache. The measured
processes then alternate old/new/new/old (ABBA) so that load from other users of the shared CPU falls on both
sides; wall time and child CPU time (user + sys) are reported, medians over ``--repeats`` per side. The two trees'
JSON outputs are compared (they must be identical). A second, in-process measurement times just the cache reads
(``VectorSpace.build`` + ``BM25Index.build``) the same way. ``--store-rows N`` adds the scale case of
``bench_encode.py`` in both trees: ``RowStore.get`` of N random 384-d rows (one shard) from a new store object.

    python bench/bench_cache.py --old-tree /tmp/old_tree --new-tree /tmp/new_tree \\
        --old-cache /tmp/nfc_cache --run /tmp/nfc_runs/bm25.trec --repeats 7 [--store-rows 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONVERT = r"""
import json, sys
from pathlib import Path
import numpy as np
from diagnose.embed import EmbeddingCache
root = Path(sys.argv[1])
for d in sorted(p for p in root.iterdir() if p.is_dir()):
    meta = json.loads((d / "encoder.json").read_text())
    shards = sorted(d.glob("shard-*.npy"))
    recs = [np.load(s) for s in shards]
    for s in shards:
        s.unlink()
    (d / "encoder.json").unlink()
    enc = type("Identity", (), {"name": meta["name"], "dim": int(meta["dim"])})()
    store = EmbeddingCache(root).store(enc)
    for r in recs:
        store.put([k.decode() for k in r["key"]], r["row"])
"""

READS = r"""
import sys, time
t0 = time.perf_counter()
from diagnose.io import load_dataset
from diagnose.search.space import VectorSpace
from diagnose.lexical import BM25Index
ds = load_dataset(data_dir=sys.argv[1])
golden = ds.qrels.queries_with_relevant()
t1 = time.perf_counter()
space = VectorSpace.build(ds, [q for q in golden if q in ds.queries.text_of()], cache_dir=sys.argv[2])
t2 = time.perf_counter()
bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids), cache_dir=sys.argv[2] + "/bm25", report=ds.report)
t3 = time.perf_counter()
assert not ds.report.by_code("cache_corrupt"), [p.message for p in ds.report]
print(t2 - t1, t3 - t2)
"""

STORE = r"""
import statistics, sys, tempfile, time
from pathlib import Path
import numpy as np
from diagnose.cache import RowStore, text_key
n = int(sys.argv[1])
rows = np.random.default_rng(0).normal(size=(n, 384)).astype(np.float32)
keys = [text_key(str(i)) for i in range(n)]
with tempfile.TemporaryDirectory() as tmp:
    RowStore(Path(tmp), width=384).put(keys, rows)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        found, _ = RowStore(Path(tmp), width=384).get(keys)
        times.append(time.perf_counter() - t0)
        assert found.all()
print(statistics.median(times))
"""


def run(cmd: list[str], tree: Path) -> tuple[float, float, str]:
    """(wall s, child CPU s, stdout) of one process importing ``diagnose`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument(
        "--run", required=True, help="a TREC run, e.g. from diagnose evaluate --baseline bm25 --write-runs"
    )
    ap.add_argument("--old-tree", required=True, type=Path)
    ap.add_argument("--new-tree", default=ROOT, type=Path)
    ap.add_argument("--old-cache", required=True, type=Path, help="warm cache written by the old tree")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--store-rows", type=int, default=0, help="also time RowStore.get of this many rows")
    return ap.parse_args()


def check_trees(*trees: Path) -> None:
    """Exits unless python imports ``diagnose`` from each tree."""
    for tree in trees:
        probe = run([sys.executable, "-c", "import diagnose; print(diagnose.__file__)"], tree)[2].strip()
        if not probe.startswith(str(tree.resolve())):
            sys.exit(f"{tree}: python imports diagnose from {probe}, not from the tree")


def failures(args: argparse.Namespace, side: str, caches: dict[str, Path], trees: dict[str, Path]):
    """One warm ``diagnose failures`` process of the ``side`` ("old" or "new") tree on its own cache."""
    cmd = [
        sys.executable,
        "-m",
        "diagnose",
        "failures",
        "--data",
        args.data,
        "--run",
        args.run,
        "--cache-dir",
        str(caches[side]),
        "--format",
        "json",
    ]
    return run(cmd, trees[side])


def print_processes(repeats: int, wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    """Each side's wall and CPU times (median and each), then the new side's overhead."""
    print(f"warm `diagnose failures` processes, {repeats} per side, ABBA order; load {os.getloadavg()}")
    for side in ("old", "new"):
        print(
            f"  {side}: wall median {statistics.median(wall[side]):.3f} s {[round(x, 2) for x in wall[side]]}; "
            f"CPU median {statistics.median(cpu[side]):.3f} s {[round(x, 2) for x in cpu[side]]}"
        )
    for name, d in (("wall", wall), ("CPU", cpu)):
        o, n = statistics.median(d["old"]), statistics.median(d["new"])
        print(f"  {name} overhead: {n - o:+.3f} s ({(n / o - 1) * 100:+.1f}%)")


def print_reads(reads: dict[str, list[tuple[float, float]]]) -> None:
    print(
        "cache reads in one process (vectors from the embedding cache; BM25 index from its cache), medians:"
    )
    for side in ("old", "new"):
        v = statistics.median(x[0] for x in reads[side])
        b = statistics.median(x[1] for x in reads[side])
        print(f"  {side}: vectors {v * 1000:.0f} ms, BM25 index {b * 1000:.0f} ms")


def main() -> None:
    args = parse_args()
    check_trees(args.old_tree, args.new_tree)
    work = Path(tempfile.mkdtemp(prefix="bench_cache_"))
    caches = {"old": args.old_cache, "new": work / "cache"}
    shutil.copytree(args.old_cache / "embeddings", caches["new"] / "embeddings")
    run([sys.executable, "-c", CONVERT, str(caches["new"] / "embeddings")], args.new_tree)
    trees = {"old": args.old_tree, "new": args.new_tree}

    # warm-up: fills the BM25 caches
    outputs = {side: failures(args, side, caches, trees)[2] for side in ("old", "new")}
    outputs = {side: failures(args, side, caches, trees)[2] for side in ("old", "new")}
    same = json.loads(outputs["old"]) == json.loads(outputs["new"])
    print(f"old and new JSON outputs identical: {same}")
    order = [s for i in range(args.repeats) for s in (("old", "new") if i % 2 == 0 else ("new", "old"))]
    wall: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    reads: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    for side in order:
        w, c, _ = failures(args, side, caches, trees)
        wall[side].append(w)
        cpu[side].append(c)
    for side in order:
        out = run([sys.executable, "-c", READS, args.data, str(caches[side])], trees[side])[2]
        v, b = map(float, out.split())
        reads[side].append((v, b))
    print_processes(args.repeats, wall, cpu)
    print_reads(reads)
    if args.store_rows:
        print(f"RowStore.get of {args.store_rows:,} x 384 rows from a new store object, median of 5:")
        for side in ("old", "new", "old", "new"):
            out = run([sys.executable, "-c", STORE, str(args.store_rows)], trees[side])[2]
            print(f"  {side}: {float(out) * 1000:.0f} ms")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
