"""A 3-configuration chunking sweep (`diagnose chunking --sizes 128,256,512 --overlaps 0`) of a 5,000-document
collection, cold (an empty cache: every chunk encoded) then warm (the same command again), with the default model.

The collection: NFCorpus (3,633 documents, its 323 judged test queries and qrels) plus the first 1,367 CACM
documents (ids prefixed ``cacm-``, no judgements: distractors from another field), written to a temporary BEIR
folder. Usage: ``python bench/bench_chunking.py [--shared ../shared/data] [--docs N] [--code CHECKOUT] [--save
PREFIX]``; prints the cold and warm wall times, the CPU seconds (user + system of the command: on a machine
shared with other work, wall time grows with the load, CPU time much less), the load average around them,
whether the warm results equal the cold ones (every field but ``cached`` and ``encode_s``) and the JSON of the warm
run. ``--docs`` below 5,000 keeps the mix
(NFCorpus : CACM = 3,633 : 1,367); ``--code`` runs another checkout's diagnose on the same data (A/B runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_DOCS = 5000


def build_collection(shared: Path, out: Path, n_docs: int = N_DOCS) -> None:
    """NFCorpus + CACM documents up to ``n_docs`` (below :data:`N_DOCS`: the same mix, 3,633 : 1,367, in
    proportion), NFCorpus' queries and test qrels, in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    nf = (shared / "nfcorpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if n_docs < N_DOCS:
        nf = nf[: round(n_docs * len(nf) / N_DOCS)]
    cacm = []
    for line in (
        (shared / "cacm" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[: n_docs - len(nf)]
    ):
        d = json.loads(line)
        d["_id"] = f"cacm-{d['_id']}"
        cacm.append(json.dumps(d))
    (out / "corpus.jsonl").write_text("\n".join(nf + cacm) + "\n", encoding="utf-8")
    shutil.copy(shared / "nfcorpus" / "queries.jsonl", out / "queries.jsonl")
    (out / "qrels").mkdir(exist_ok=True)
    shutil.copy(shared / "nfcorpus" / "qrels" / "test.tsv", out / "qrels" / "test.tsv")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sizes", default="128,256,512")
    ap.add_argument("--overlaps", default="0")
    ap.add_argument("--docs", type=int, default=N_DOCS, help="documents (default 5,000; fewer keep the mix)")
    ap.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose diagnose runs (default: this one)"
    )
    ap.add_argument("--save", help="write the cold and warm JSON to PREFIX-cold.json and PREFIX-warm.json")
    args = ap.parse_args()
    if not (args.shared / "nfcorpus" / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus under {args.shared}")
    with tempfile.TemporaryDirectory(prefix="bench-chunking-") as tmp:
        data, cache = Path(tmp) / "data", Path(tmp) / "cache"
        build_collection(args.shared, data, args.docs)
        cmd = [sys.executable, "-m", "diagnose", "chunking", "--data", str(data), "--sizes", args.sizes,
               "--overlaps", args.overlaps, "--cache-dir", str(cache), "--format", "json"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
        outs = {}
        for label in ("cold", "warm"):
            load = os.getloadavg()[0]
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = outs[label] = subprocess.run(
                cmd, env=env, capture_output=True, text=True, check=True
            ).stdout
            wall = time.perf_counter() - t0
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
            print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (load average before: {load:.1f}, after: "
                  f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)", flush=True)  # fmt: skip
        for label, text in outs.items() if args.save else ():
            Path(f"{args.save}-{label}.json").write_text(text, encoding="utf-8")
        print(f"warm results equal the cold ones: {same_results(outs['cold'], outs['warm'])}")
        print(out)


def _results(out: str) -> list[dict]:
    """The points of a ``--format json`` output without what may differ between two runs of the same data
    (``cached``, ``encode_s``)."""
    sweep = json.loads(out)
    drop = {"cached", "encode_s"}
    return [
        {k: v for k, v in p.items() if k not in drop} for p in (sweep["current"], *sweep["configurations"])
    ]


def same_results(a: str, b: str) -> bool:
    """Two ``--format json`` outputs agree: every field but ``cached`` and ``encode_s`` equal, floats within 1e-9
    relative (a mean of per-query values read back from the cache's JSON differs in the last bits: ``ndcg_diff``
    by ~1e-12)."""
    ra, rb = _results(a), _results(b)
    return len(ra) == len(rb) and all(
        p.keys() == q.keys()
        and all(
            math.isclose(p[k], q[k], rel_tol=1e-9, abs_tol=1e-12) if isinstance(p[k], float) else p[k] == q[k]
            for k in p
        )
        for p, q in zip(ra, rb, strict=True)
    )


if __name__ == "__main__":
    main()
