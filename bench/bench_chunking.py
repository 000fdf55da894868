"""A 3-configuration chunking sweep (`diagnose chunking --sizes 128,256,512 --overlaps 0`) of a 5,000-document
collection, cold (an empty cache: every chunk encoded) then warm (the same command again), with the default model.

The collection: NFCorpus (3,633 documents, its 323 judged test queries and qrels) plus the first 1,367 CACM
documents (ids prefixed ``cacm-``, no judgements: distractors from another field), written to a temporary BEIR
folder. Usage: ``python bench/bench_chunking.py [--shared ../shared/data]``; prints the cold and warm wall times, the
CPU seconds (user + system of the command: on a machine shared with other work, wall time grows with the load, CPU
time much less), the load average around them and the JSON of the warm run.
"""

from __future__ import annotations

import argparse
import json
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
    args = ap.parse_args()
    if not (args.shared / "nfcorpus" / "corpus.jsonl").exists():
        sys.exit(f"no NFCorpus under {args.shared}")
    with tempfile.TemporaryDirectory(prefix="bench-chunking-") as tmp:
        data, cache = Path(tmp) / "data", Path(tmp) / "cache"
        build_collection(args.shared, data)
        cmd = [sys.executable, "-m", "diagnose", "chunking", "--data", str(data), "--sizes", args.sizes,
               "--overlaps", args.overlaps, "--cache-dir", str(cache), "--format", "json"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for label in ("cold", "warm"):
            load = os.getloadavg()[0]
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            wall = time.perf_counter() - t0
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
            print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (load average before: {load:.1f}, after: "
                  f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)", flush=True)  # fmt: skip
        print(out)


if __name__ == "__main__":
    main()
