"""Whole-process `diagnose failures` and `diagnose evaluate` at 10k / 100k / 1M documents, with precomputed vectors.

    python bench/bench_scale.py [--sizes 10k,100k,1m] [--repeats 3] [--formats parquet,npy] [--work /tmp/scale]

Data: `bench/make_scale_data.py` (generated once per size under ``--work``, never in the repository): Zipfian
short documents, 1,000 queries with 1-3 planted relevant documents each, a depth-100 TREC run, 384-d float32
vectors as Parquet and as .npy + id files. Each measured process is a fresh interpreter:

- ``failures cold``: ``diagnose failures --data DIR --run run.trec --doc-embeddings ... --query-embeddings ...
  --cache-dir EMPTY --format json`` (BM25 index built; remedies on, the default);
- ``failures warm``: the same with the BM25 index in its disk cache (precomputed vectors never use a cache);
- ``evaluate``: ``diagnose evaluate --data DIR --run run.trec --format json`` (metrics only).

Wall time and the child's own peak RSS (``os.wait4``), CPU time (user + sys); medians over ``--repeats``. The
machine is shared: the load average before and after each size is printed, and CPU time is the steadier number.
Checks that every process of a vector format prints the same JSON. At 1M the vectors take 3.4 GB of disk per format pair and the
generator ~40 s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}


def run_child(cmd: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, sha1 of stdout) of one fresh process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage (peak RSS, CPU)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}")
        out.seek(0)
        digest = hashlib.sha1(out.read()).hexdigest()
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, digest


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--formats", default="parquet,npy")
    ap.add_argument("--work", type=Path, default=Path("/tmp/scale"))
    ap.add_argument("--no-warm", action="store_true", help="skip the warm (BM25 cached) processes")
    return ap.parse_args()


def vector_args(fmt: str) -> list[str]:
    """The precomputed-vector options of ``diagnose failures`` for the vector format ``fmt``."""
    return (
        ["--doc-embeddings", "docs.parquet", "--query-embeddings", "queries.parquet"]
        if fmt == "parquet"
        else [
            "--doc-embeddings",
            "docs.npy",
            "--doc-ids",
            "doc_ids.txt",
            "--query-embeddings",
            "queries.npy",
            "--query-ids",
            "query_ids.txt",
        ]
    )


def measure_size(args: argparse.Namespace, data: Path) -> dict[str, list[tuple[float, float, float, str]]]:
    """Process name -> (wall, CPU, peak RSS, stdout digest) of each of its processes on the data folder ``data``."""
    diagnose = [sys.executable, "-m", "diagnose"]
    procs: dict[str, list[tuple[float, float, float, str]]] = {}
    for fmt in args.formats.split(","):
        vec = vector_args(fmt)
        for _ in range(args.repeats):
            cache = Path(tempfile.mkdtemp(prefix="scale_cache_", dir=args.work))
            cmd = [
                *diagnose,
                "failures",
                "--data",
                ".",
                "--run",
                "run.trec",
                *vec,
                "--cache-dir",
                str(cache),
                "--format",
                "json",
            ]
            procs.setdefault(f"failures cold ({fmt})", []).append(run_child(cmd, data))
            if not args.no_warm:
                procs.setdefault(f"failures warm ({fmt})", []).append(run_child(cmd, data))
            shutil.rmtree(cache, ignore_errors=True)
    for _ in range(args.repeats):
        cmd = [*diagnose, "evaluate", "--data", ".", "--run", "run.trec", "--format", "json"]
        procs.setdefault("evaluate", []).append(run_child(cmd, data))
    return procs


def size_rows(args: argparse.Namespace, size: str) -> list[tuple]:
    """The table rows of one size (its data generated first when missing); says on stderr whether every process of
    a vector format printed the same JSON."""
    n = SIZES[size.lower()]
    data = args.work / size.lower()
    if not (data / "docs.npy").exists():
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_scale_data.py"), str(data), "--docs", str(n)],
            check=True,
        )
    load_before = os.getloadavg()[0]
    procs = measure_size(args, data)
    load_after = os.getloadavg()[0]
    # one JSON per vector format (the model label names the file: "precomputed:docs.npy")
    same = all(
        len({p[3] for name, ps in procs.items() if name.endswith(f"({fmt})") for p in ps}) == 1
        for fmt in args.formats.split(",")
    )
    rows = [
        (
            f"{n:,}",
            name,
            statistics.median(p[0] for p in ps),
            statistics.median(p[1] for p in ps),
            max(p[2] for p in ps),
            len(ps),
            f"{load_before:.1f} / {load_after:.1f}",
            [round(p[0], 1) for p in ps],
        )
        for name, ps in procs.items()
    ]
    print(
        f"{size}: same failures JSON in every process of a format (cold and warm): {same}",
        file=sys.stderr,
    )
    return rows


def main() -> None:
    args = parse_args()
    rows = [row for size in args.sizes.split(",") for row in size_rows(args, size)]
    print(
        "| documents | process | wall s (median) | CPU s (median) | peak RSS MB (max) | n | load avg before / after "
        "| wall s, each |"
    )
    print("|---:|---|---:|---:|---:|---:|---|---|")
    for docs, name, wall, cpu, rss, k, load, each in rows:
        print(f"| {docs} | {name} | {wall:.1f} | {cpu:.1f} | {rss:,.0f} | {k} | {load} | {each} |")


if __name__ == "__main__":
    main()
