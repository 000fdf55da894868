"""The ANN frontier's cost at scale: :func:`diagnose.whatif.ann.ann_frontier` over N random unit vectors (the default grid:
4 HNSW builds x 5 efSearch, IVF-Flat at round(4 sqrt(N)) lists x 4 nprobe), one query per search, one thread.

Random vectors have no neighbourhood structure, so recall against exact is a pessimistic case for HNSW and IVF; each
query's one relevant document is its exact nearest neighbour, so hit_rate@10 equals recall@10 against the top 1. The
point is the cost: the wall time of the whole frontier and each build.

    python bench/bench_ann.py --docs 100000 --queries 200 --dim 384
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from diagnose.data import Qrels
from diagnose.search.space import VectorSpace
from diagnose.whatif.ann import ann_frontier


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(args.docs, args.dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    d_ids = [f"d{i}" for i in range(args.docs)]
    q_ids = [f"q{i}" for i in range(args.queries)]
    nearest = (queries @ docs.T).argmax(axis=1)
    qrels = Qrels(pd.DataFrame({"query_id": q_ids, "doc_id": [d_ids[j] for j in nearest], "relevance": 1}))
    space = VectorSpace.from_arrays("random", d_ids, docs, q_ids, queries)
    t0 = time.perf_counter()
    f = ann_frontier(qrels, space, k=args.k)
    total = time.perf_counter() - t0
    table = f.table()
    cols = ["index", "params", "recall_vs_exact", f"hit_rate@{args.k}", "latency_p50_ms", "latency_p95_ms", "build_s",
            "memory_mb", "pareto"]  # fmt: skip
    print(
        f"{args.docs} docs x {args.dim} dims, {args.queries} queries, k={args.k}: frontier in {total:.1f} s"
    )
    print(table[cols].to_markdown(index=False, floatfmt=".4f"))


if __name__ == "__main__":
    main()
