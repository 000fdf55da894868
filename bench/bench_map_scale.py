"""Does the embedding map stay responsive on a large corpus? The sampling cap bounds the UMAP input.

In one process (numba already compiled by a warm-up map, as in a running Streamlit server), for corpora of growing
size: build the map (sample, project, tabulate) with an empty coordinate cache, then again from the cache, then
build the Altair chart and serialise its spec (what the page sends to the browser). Vectors are random unit vectors
(384-d, seeded); 300 failed queries each keep 1 target and their top 10 on the map, as a real run's failures would.

    python bench/bench_map_scale.py [--sizes 4000,20000,100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

from diagnose import charts, projection


def unit(rng: np.random.Generator, n: int, dim: int = 384) -> np.ndarray:
    v = rng.standard_normal((n, dim), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def inputs(n_docs: int, n_queries: int = 1000, n_failed: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    doc_ids = [f"d{i}" for i in range(n_docs)]
    query_ids = [f"q{i}" for i in range(n_queries)]
    failed = [
        projection.FailedQuery(
            query_ids[i],
            "vocabulary_mismatch",
            (doc_ids[int(rng.integers(n_docs))],),
            tuple(doc_ids[j] for j in rng.choice(n_docs, 10, replace=False)),
        )
        for i in range(n_failed)
    ]
    return {
        "doc_ids": doc_ids,
        "doc_texts": [f"document {i} text" for i in range(n_docs)],
        "doc_vecs": unit(rng, n_docs),
        "query_ids": query_ids,
        "query_texts": [f"query {i}" for i in range(n_queries)],
        "query_vecs": unit(rng, n_queries),
        "failed": failed,
    }


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4000,20000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        projection.build_map(**inputs(2000), cache_dir=f"{tmp}/warmup")  # compile numba once, like a server
        print(
            "| documents | points on the map | map, empty cache (s) | map, cached (s) | chart spec (s) | spec MB |"
        )
        print("|---:|---:|---:|---:|---:|---:|")
        for n in sizes:
            data = inputs(n)
            cold, warm, spec = [], [], []
            for r in range(args.repeats):
                cache = f"{tmp}/n{n}_r{r}"
                t, emap = timed(lambda d=data, c=cache: projection.build_map(**d, cache_dir=c))
                cold.append(t)
                t, emap = timed(lambda d=data, c=cache: projection.build_map(**d, cache_dir=c))
                warm.append(t)
                assert emap.projection.cached
                t, payload = timed(
                    lambda e=emap: json.dumps(charts.embedding_map(e.points, e.edges).to_dict(), default=str)
                )
                spec.append(t)
            print(
                f"| {n:,} | {emap.sample.n_points:,} | {statistics.median(cold):.2f} | {statistics.median(warm):.2f} "
                f"| {statistics.median(spec):.2f} | {len(payload) / 1e6:.1f} |"
            )


if __name__ == "__main__":
    main()
