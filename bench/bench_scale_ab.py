"""Two source trees side by side on one `bench_scale` data set: whole-process `diagnose failures` cold, interleaved.

    python bench/bench_scale_ab.py DIR --a /tmp/main-tree --b . [--repeats 2] [--format npy]

``DIR``: a folder made by ``bench/make_scale_data.py``. Each repeat runs tree A then tree B (B then A on odd
repeats, so neither always runs first), each a fresh ``PYTHONPATH=TREE python -m diagnose failures --data DIR
--run run.trec --doc-embeddings ... --query-embeddings ... --cache-dir EMPTY --format json`` (remedies on, the BM25
index built: cold). Prints wall, CPU (user + sys) and the child's peak RSS per process, the medians, B/A ratios,
the load average before and after, and whether every process printed the same JSON (sha1 of stdout). On a shared
machine read the CPU ratio: wall time is mostly the other processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import run_child  # noqa: E402


def command(tree: Path, data: Path, cache: Path, fmt: str) -> list[str]:
    vectors = (
        ["--doc-embeddings", "docs.npy", "--doc-ids", "doc_ids.txt"]
        + ["--query-embeddings", "queries.npy", "--query-ids", "query_ids.txt"]
        if fmt == "npy"
        else ["--doc-embeddings", "docs.parquet", "--query-embeddings", "queries.parquet"]
    )
    return [
        "env", f"PYTHONPATH={tree}", sys.executable, "-m", "diagnose", "failures", "--data", str(data),
        "--run", str(data / "run.trec"), *vectors, "--cache-dir", str(cache), "--format", "json",
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--a", type=Path, required=True, help="tree A (e.g. an export of main)")
    ap.add_argument(
        "--b", type=Path, default=Path(__file__).resolve().parents[1], help="tree B (this checkout)"
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--format", choices=("npy", "parquet"), default="npy")
    args = ap.parse_args()
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    rows: dict[str, list[tuple[float, float, float, str]]] = {"A": [], "B": []}
    load_before = os.getloadavg()[0]
    for r in range(args.repeats):
        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
            with tempfile.TemporaryDirectory() as cache:
                cmd = command(trees[name], args.data.resolve(), Path(cache), args.format)
                rows[name].append(run_child(cmd, cwd=args.data))
            wall, cpu, rss, digest = rows[name][-1]
            print(
                f"repeat {r} {name}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:,.0f} MB, {digest[:12]}"
            )
    print(f"load average before {load_before:.1f}, after {os.getloadavg()[0]:.1f}")
    med = {n: [statistics.median(x[i] for x in rows[n]) for i in range(3)] for n in rows}
    for n in rows:
        print(
            f"{n} ({trees[n]}): median wall {med[n][0]:.1f} s, CPU {med[n][1]:.1f} s, peak RSS {med[n][2]:,.0f} MB"
        )
    print(
        f"B/A: wall {med['B'][0] / med['A'][0]:.2f}, CPU {med['B'][1] / med['A'][1]:.2f}, "
        f"peak RSS {med['B'][2] / med['A'][2]:.2f}"
    )
    digests = {x[3] for n in rows for x in rows[n]}
    print(
        "every process printed the same JSON"
        if len(digests) == 1
        else f"JSON DIFFERS: {len(digests)} outputs"
    )


if __name__ == "__main__":
    main()
