"""Injected faults (bench/faults.py): the taxonomy's precision and recall per class, and the share of each class's
injected failures that its own remedy recovers, for a dense and a lexical run, on real collections.

    python bench/bench_faults.py [--data ../shared/data/nfcorpus] [--kind dense|lexical|both] [--per-class 10]
                                 [--seed 0] [--k 10]

The collection is copied with the faults injected into a temporary folder; the diagnosis reads it as a user's data
(`diagnose.Analysis` with the run file and the run's kind), with the BM25 and dense baselines its remedies need. The
model is the bundled default (its vectors cached under DIAGNOSE_CACHE_DIR, so a second run encodes only what changed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from faults import inject, load_injected, score, table  # noqa: E402

import diagnose  # noqa: E402


def measure(data: Path, kind: str, k: int, per_class: int, seed: int, split: str, classes=None) -> list:
    """Inject ``classes`` (default: every class of one collection for the kind) and score the diagnosis."""
    work = Path(tempfile.mkdtemp(prefix=f"faults_{kind}_"))
    truth = inject(data, work, kind=kind, k=k, per_class=per_class, seed=seed, split=split, classes=classes)
    ds = load_injected(work, split=split, runs=[("injected", work / "run.trec")])
    a = diagnose.Analysis(
        ds, k=k, baselines=("bm25", "dense"), kinds={"injected": kind}, filters=work / "filters.json"
    )
    return score(truth, a, "injected", k)


def run_one(data: Path, kind: str, k: int, per_class: int, seed: int, split: str) -> str:
    t0 = time.perf_counter()
    scores = measure(data, kind, k, per_class, seed, split)
    # split: a chunk corpus of its own (bench/faults.py)
    scores += measure(data, kind, k, per_class, seed, split, classes=("split",))
    took = time.perf_counter() - t0
    return f"### {data.name}, {kind} run (k={k}, seed {seed}, {took:.0f} s)\n\n{table(scores)}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/nfcorpus")
    ap.add_argument("--split", default="test")
    ap.add_argument("--kind", choices=["dense", "lexical", "both"], default="both")
    ap.add_argument("--per-class", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        sys.exit(f"no corpus.jsonl in {args.data}")
    for kind in ("dense", "lexical") if args.kind == "both" else (args.kind,):
        print(run_one(args.data, kind, args.k, args.per_class, args.seed, args.split), flush=True)


if __name__ == "__main__":
    main()
