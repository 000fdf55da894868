"""UMAP map of an NFCorpus-sized input (3,633 docs + 323 queries, 384-d): what a user waits for, and why.

Usage (from the repository root):

    python bench/bench_projection.py                    # synthetic clustered vectors, prints a markdown table
    python bench/bench_projection.py --vectors nfcorpus # real MiniLM vectors of NFCorpus (needs ../shared/data;
                                                        # slow the first time unless the embedding cache has them)
    python bench/bench_projection.py --skip-umap-default  # leave out umap-learn's own small-data path (~1 min)

Every scenario runs in a fresh child process (``--worker``), so numba compilation is part of what is measured:

- **cold process**: ``NUMBA_CACHE_DIR`` is a new empty folder: ``import umap`` compiles pynndescent's ``cache=True``
  functions, the first fit compiles umap's own functions. What the very first map on a new machine costs.
- **new process, numba disk cache warm**: same ``NUMBA_CACHE_DIR`` again, with :func:`diagnose.projection.
  enable_numba_cache` (the default): umap's functions load from disk too.
- **new process, umap functions not cached** (``DIAGNOSE_NUMBA_CACHE=0``): only pynndescent's cache helps; what a
  new process costs without our ``enable_caching`` call.
- **warm process**: further fits in the same process (median of ``--repeats``), seed=42 (single-threaded) and
  seed=None (parallel, ``n_jobs=-1``).
- **cache hit**: ``project()`` on the same vectors with the coordinate cache (load + key hashing).
- **umap-learn default path**: ``umap.UMAP(metric="cosine")`` on the raw vectors in a warm process, i.e. its own
  exact small-data path (sklearn ``pairwise_distances`` with a numba callable), which ``project`` replaces by an
  exact blocked k-NN (``precomputed_knn``). One run (it is slow).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_DOCS, N_QUERIES, DIM = 3633, 323, 384
DATA = ROOT.parent / "shared" / "data" / "nfcorpus"


def synthetic(seed: int = 0):
    """Topic-like clusters: 40 centres, anisotropic Gaussian noise, L2-normalised rows (docs then queries)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = N_DOCS + N_QUERIES
    centres = rng.normal(size=(40, DIM))
    labels = rng.integers(0, 40, n)
    scale = np.geomspace(1.2, 0.2, DIM)
    x = centres[labels] + rng.normal(size=(n, DIM)) * scale
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def nfcorpus_vectors():
    """MiniLM vectors of the NFCorpus corpus + its 323 test queries, through the project's embedding cache."""
    import numpy as np

    from diagnose.embed import EmbeddingCache, embed_texts, load_encoder

    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    queries = {o["_id"]: o["text"] for o in map(json.loads, (DATA / "queries.jsonl").open())}
    qids = list(
        dict.fromkeys(
            line.split("\t")[0] for line in (DATA / "qrels" / "test.tsv").read_text().splitlines()[1:]
        )
    )
    enc = load_encoder(None)
    cache = EmbeddingCache()
    d = embed_texts(enc, [f"{o['title']} {o['text']}".strip() for o in docs], cache=cache)
    q = embed_texts(enc, [queries[i] for i in qids], cache=cache)
    return np.concatenate([d, q]).astype(np.float32)


def vectors(kind: str):
    import numpy as np

    if kind == "synthetic":
        return synthetic()
    path = Path(tempfile.gettempdir()) / "diagnose-bench-nfcorpus-vectors.npy"
    if path.exists():
        return np.load(path, allow_pickle=False)
    x = nfcorpus_vectors()
    np.save(path, x, allow_pickle=False)
    return x


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> list[float]:
    """[wall seconds, CPU seconds of this process (all threads)] since ``t``."""
    return [time.perf_counter() - t[0], time.process_time() - t[1]]


def worker(args: argparse.Namespace) -> None:
    """One fresh process: import, first fit, warm fits, seed=None fits, cache hit. Prints one JSON line.

    Every timing is ``[wall, cpu]``: on a shared machine the CPU time is the steadier number, the wall time is what
    a user waits; the parallel (seed=None) fit is the one where they differ by design.
    """
    x = vectors(args.vectors)
    out: dict[str, object] = {"n": int(len(x)), "dim": int(x.shape[1]), "loadavg_start": os.getloadavg()[0]}
    t = _clock()
    import umap  # noqa: F401  (pynndescent compiles or loads its cache=True functions here)

    from diagnose.projection import project

    out["import_s"] = _since(t)
    if args.mode == "umap-default":
        import warnings

        import umap as umap_mod

        warnings.filterwarnings("ignore")
        umap_mod.UMAP(metric="cosine", random_state=42).fit_transform(x[:300])  # compile outside the timing
        t = _clock()
        umap_mod.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine", random_state=42).fit_transform(x)
        out["umap_default_s"] = _since(t)
        print(json.dumps(out))
        return
    t = _clock()
    p = project(x, use_cache=False)
    out["first_fit_s"] = _since(t)
    out["trustworthiness"] = p.trustworthiness
    if args.mode == "full":
        warm = []
        for _ in range(args.repeats):
            t = _clock()
            project(x, use_cache=False)
            warm.append(_since(t))
        out["warm_fit_s"] = warm
        par = []
        for _ in range(args.repeats):
            t = _clock()
            q = project(x, use_cache=False, seed=None)
            par.append(_since(t))
        out["parallel_fit_s"] = par
        out["parallel_trustworthiness"] = q.trustworthiness
        with tempfile.TemporaryDirectory() as d:
            project(x, cache_dir=d)
            hits = []
            for _ in range(args.repeats):
                t = _clock()
                h = project(x, cache_dir=d)
                hits.append(_since(t))
                assert h.cached
        out["cache_hit_s"] = hits
    out["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(out))


def child(args: argparse.Namespace, mode: str, env_extra: dict[str, str]) -> dict:
    env = {**os.environ, **env_extra}
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--mode",
        mode,
        "--vectors",
        args.vectors,
        "--repeats",
        str(args.repeats),
    ]
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"worker {mode} failed:\n{res.stderr[-3000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = wall
    return out


def med(v) -> tuple[float, float]:
    """Median wall and median CPU of one ``[wall, cpu]`` pair or a list of them."""
    pairs = v if isinstance(v[0], list) else [v]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"{a[0] / b[0]:.2f}x wall, {a[1] / b[1]:.2f}x CPU"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vectors", choices=["synthetic", "nfcorpus"], default="synthetic")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-umap-default", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    return ap.parse_args()


def scenarios(args: argparse.Namespace) -> tuple[dict, list[dict], list[dict], dict | None]:
    """The child processes on one numba cache folder: cold, warm disk cache (a full one and a first-fit one), umap
    functions not cached (two), and umap-learn's own path (None with --skip-umap-default)."""
    with tempfile.TemporaryDirectory() as nb:
        cold = child(args, "first", {"NUMBA_CACHE_DIR": nb, "DIAGNOSE_NUMBA_CACHE": "1"})
        warm_disk = [child(args, "full", {"NUMBA_CACHE_DIR": nb, "DIAGNOSE_NUMBA_CACHE": "1"})]
        warm_disk.append(child(args, "first", {"NUMBA_CACHE_DIR": nb, "DIAGNOSE_NUMBA_CACHE": "1"}))
        no_umap_cache = [
            child(args, "first", {"NUMBA_CACHE_DIR": nb, "DIAGNOSE_NUMBA_CACHE": "0"}) for _ in range(2)
        ]
        default = None if args.skip_umap_default else child(args, "umap-default", {"NUMBA_CACHE_DIR": nb})
    return cold, warm_disk, no_umap_cache, default


def scenario_rows(
    cold: dict, warm_disk: list[dict], no_umap_cache: list[dict], default: dict | None
) -> list[tuple[str, tuple[float, float]]]:
    """(scenario, (median wall, median CPU)) per row of the table."""
    full = warm_disk[0]
    rows = [
        ("cold process (empty numba cache): import umap", med(cold["import_s"])),
        ("cold process: first project()", med(cold["first_fit_s"])),
        ("new process, numba disk cache warm: import umap", med([r["import_s"] for r in warm_disk])),
        ("new process, numba disk cache warm: first project()", med([r["first_fit_s"] for r in warm_disk])),
        (
            "new process, umap functions not cached (DIAGNOSE_NUMBA_CACHE=0): first project()",
            med([r["first_fit_s"] for r in no_umap_cache]),
        ),
        ("warm process: project(), seed=42 (single-threaded, deterministic)", med(full["warm_fit_s"])),
        ("warm process: project(), seed=None (parallel, n_jobs=-1)", med(full["parallel_fit_s"])),
        ("coordinate cache hit: project()", med(full["cache_hit_s"])),
    ]
    if default:
        rows.append(
            (
                "warm process: umap-learn's own small-data path, UMAP(metric='cosine'), 1 run",
                med(default["umap_default_s"]),
            )
        )
    return rows


def print_header(args: argparse.Namespace, loads: list[float], full: dict) -> None:
    import numba

    from diagnose.projection import umap_version

    print(f"## umap\n\nCommand: `python bench/bench_projection.py --vectors {args.vectors}`  ")
    print(
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, umap-learn {umap_version()}, "
        f"numba {numba.__version__}; 1-min load average during the run {min(loads):.1f}-{max(loads):.1f} (the machine "
        f"is shared: wall times include waiting for a core, CPU times do not). Input: {full['n']:,} x {full['dim']} "
        f"({args.vectors}), cosine, n_neighbors=15, min_dist=0.1. Process rows: cold 1 run, warm-disk and not-cached "
        f"2 runs each (median); in-process rows: median of {args.repeats}.\n"
    )


def print_ratios(cold: dict, warm_disk: list[dict], no_umap_cache: list[dict], default: dict | None) -> None:
    full = warm_disk[0]
    first_warm_disk = med([r["first_fit_s"] for r in warm_disk])
    base = med(full["warm_fit_s"])
    print(
        f"\nRatios (same run): first project() in a new process with vs without the numba disk cache (cold): "
        f"{ratio(first_warm_disk, med(cold['first_fit_s']))}; with vs without umap's functions cached: "
        f"{ratio(first_warm_disk, med([r['first_fit_s'] for r in no_umap_cache]))}; parallel vs seeded warm fit: "
        f"{ratio(med(full['parallel_fit_s']), base)}; cache hit vs warm fit: {ratio(med(full['cache_hit_s']), base)}"
        + (
            f"; umap-learn's own path vs project(): {ratio(med(default['umap_default_s']), base)}"
            if default
            else ""
        )
        + f". Trustworthiness (k=5, 1,000-point sample): seed=42 {full['trustworthiness']:.3f}, seed=None "
        f"{full['parallel_trustworthiness']:.3f}."
    )


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(args)
        return
    vectors(args.vectors)  # build (and for nfcorpus, store) the input once, outside the timings
    import numba  # noqa: F401
    import umap  # noqa: F401

    cold, warm_disk, no_umap_cache, default = scenarios(args)
    loads = [r.get(k) for r in (cold, *warm_disk, *no_umap_cache) for k in ("loadavg_start", "loadavg_end")]
    loads = [x for x in loads if x is not None]
    print_header(args, loads, warm_disk[0])
    print("| scenario | wall s | CPU s |\n|---|---:|---:|")
    for name, (wall, cpu) in scenario_rows(cold, warm_disk, no_umap_cache, default):
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")
    print_ratios(cold, warm_disk, no_umap_cache, default)
    print(
        "\nRaw:",
        json.dumps(
            {"cold": cold, "warm_disk": warm_disk, "no_umap_cache": no_umap_cache, "default": default}
        ),
    )


if __name__ == "__main__":
    main()
