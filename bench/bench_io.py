"""Load times of the readers at scale, against the readers of the peers, measured in the same run.

    python bench/bench_io.py [--repeats 5] [--dir /tmp/diagnose-bench-io]

Generates (once, seed 0) a 1,000,000-line TREC run (1,000 queries x 1,000 docs, 4-decimal scores so ties are
common, tab-separated), a 100,000-document BEIR corpus.jsonl (150 words + a metadata object each) and a 50,000-row
TREC qrels, then times, as medians over ``--repeats``:

- ``diagnose.io.read_run`` (parse + validate + trec_eval ordering + duplicate check) vs ``pytrec_eval.parse_run``
  (parse only, no ordering), ``ranx.Run.from_file`` (parse) and ``pandas.read_csv(sep=r"\\s+")`` (parse only);
- ``pytrec_eval`` end to end (``parse_run`` + ``RelevanceEvaluator.evaluate``) on the 1M run, the number that
  ``diagnose evaluate`` has to beat;
- ``diagnose.io.read_corpus`` vs ``json.loads`` per line into a DataFrame, and ``read_qrels``.

Prints a markdown table; wall time and process CPU time (all threads) are both shown because the machine is
shared (CPU time is the steadier number under load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd


def make_files(root: Path) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = {"run": root / "run1m.trec", "corpus": root / "corpus100k.jsonl", "qrels": root / "qrels50k.trec"}
    rng = np.random.default_rng(0)
    if not paths["run"].exists():
        with open(paths["run"], "w") as f:
            for q in range(1000):
                docs = rng.choice(200_000, 1000, replace=False)
                scores = np.sort(rng.random(1000).round(4))[::-1]
                f.write(
                    "".join(
                        f"q{q}\tQ0\tdoc{d}\t{r + 1}\t{s:.4f}\tbm25\n"
                        for r, (d, s) in enumerate(zip(docs, scores, strict=True))
                    )
                )
    if not paths["corpus"].exists():
        words = np.array(
            ["alpha", "beta", "gamma", "delta", "retrieval", "query", "document", "neural", "sparse", "dense"]
        )
        with open(paths["corpus"], "w") as f:
            for i in range(100_000):
                text = " ".join(rng.choice(words, 150))
                meta = {"area": "x", "year": 2000 + i % 20}
                f.write(
                    json.dumps({"_id": f"doc{i}", "title": f"Title {i}", "text": text, "metadata": meta})
                    + "\n"
                )
    if not paths["qrels"].exists():
        with open(paths["qrels"], "w") as f:
            for q in range(1000):
                for d in rng.choice(200_000, 50, replace=False):
                    f.write(f"q{q} 0 doc{d} {int(rng.integers(0, 3))}\n")
    return paths


def timed(fn, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/diagnose-bench-io")
    args = ap.parse_args()
    paths = make_files(Path(args.dir))

    from diagnose import io as dio

    rows: list[tuple[str, float, float]] = []

    def add(label: str, fn, repeats: int = args.repeats) -> None:
        wall, cpu = timed(fn, repeats)
        rows.append((label, wall, cpu))
        print(f"{label}: {wall:.3f}s wall, {cpu:.3f}s cpu", flush=True)

    add("diagnose.io.read_run (1M-line TREC run)", lambda: dio.read_run(paths["run"]))
    add(
        "pandas.read_csv sep=\\s+ (parse only)",
        lambda: pd.read_csv(paths["run"], sep=r"\s+", header=None, dtype={0: str, 2: str}),
    )
    try:
        import pytrec_eval

        def parse_run() -> dict:
            with open(paths["run"]) as f:
                return pytrec_eval.parse_run(f)

        add("pytrec_eval.parse_run (parse only)", parse_run)
        with open(paths["qrels"]) as f:
            qrels = pytrec_eval.parse_qrel(f)

        def pytrec_end_to_end() -> None:
            run = parse_run()
            pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}).evaluate(run)

        add("pytrec_eval parse_run + evaluate (ndcg_cut.10, recall.100, recip_rank)", pytrec_end_to_end, 3)
    except ImportError:
        pass
    try:
        from ranx import Run as RanxRun

        add("ranx.Run.from_file (parse)", lambda: RanxRun.from_file(str(paths["run"]), kind="trec"), 3)
    except ImportError:
        pass
    add("diagnose.io.read_qrels (50k-line TREC qrels)", lambda: dio.read_qrels(paths["qrels"]))
    add("diagnose.io.read_corpus (100k-doc BEIR corpus.jsonl)", lambda: dio.read_corpus(paths["corpus"]))

    def json_per_line() -> None:
        with open(paths["corpus"], "rb") as f:
            pd.DataFrame([json.loads(line) for line in f if line.strip()])

    add("json.loads per line -> DataFrame (peer)", json_per_line, 3)

    print()
    print(f"machine: {os.cpu_count()} cores (shared); load average at end: {os.getloadavg()[0]:.2f}")
    print("| what | wall (median) | CPU (median) |")
    print("|---|---:|---:|")
    for label, wall, cpu in rows:
        print(f"| {label} | {wall:.3f} s | {cpu:.3f} s |")


if __name__ == "__main__":
    main()
