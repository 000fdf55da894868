"""What the bounded passage remedy loses against the whole-corpus one (issue 37 part 1), on NFCorpus's test queries.

For each bound N (``Analysis(passage_candidates=N)``; None = every document's passages), the ``passages`` remedy of
our BM25 run (``--run bm25``, written by ``diagnose evaluate --write-runs``) or of exact dense search (``--run dense``,
the dense baseline) at k=10: the documents whose passages it encodes (the union of the candidate sets), and per failure
class how many of the class's failed queries it recovers (the remedy matrix's ``passages`` column: the same run
measured on every class), with its lost hits and mean difference in hit_rate@10. One process, one embedding cache
(give a warm one with ``--cache-dir`` to skip the encode); the recovered counts do not depend on the machine.

    python bench/bench_passage_bound.py [--data ../shared/data/nfcorpus] [--run bm25|dense] [--bounds none,5,10,20]
        [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from common import ROOT, bm25_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nfcorpus"))
    ap.add_argument("--bounds", default="none,5,10,20")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--run", choices=["bm25", "dense"], default="bm25")
    args = ap.parse_args()
    import diagnose
    from diagnose.failures.passages import remedy_candidates

    data = Path(args.data)
    work = Path(tempfile.mkdtemp(prefix="bench_passage_bound_"))
    if args.run == "bm25":
        run_file = bm25_run(data, work, {**os.environ, "HF_HUB_OFFLINE": "1"})
        ds, runs, baselines = diagnose.load(data, runs=[f"bm25={run_file}"]), None, ()
    else:
        ds, runs, baselines = diagnose.load(data), {}, {"dense": "dense"}
    name = args.run
    cache = args.cache_dir or str(work / "cache")
    encoder = None
    print(f"{data.name}: {len(ds.corpus):,} documents; the passages remedy of the {name} run at k=10")
    for raw in args.bounds.split(","):
        n = None if raw.strip().lower() == "none" else int(raw)
        a = diagnose.Analysis(
            ds, runs, baselines=baselines, k=10, cache_dir=cache, passage_candidates=n, encoder=encoder
        )
        encoder = a.encoder
        t0 = time.process_time()
        matrix = a.remedy_matrix(name)
        rem = a.remedies(name)
        cpu = time.process_time() - t0
        if n is None:
            docs = len(ds.corpus)
        else:
            targets = [(f.query_id, f.doc_id) for f in a.diagnosis(name).failures]
            runs_read = [a.runs[name], a._baseline("dense"), a._baseline("bm25")]
            cand = remedy_candidates(a.golden, runs_read, n, targets)
            docs = len(set().union(*map(set, cand.values())))
        cells = {c: matrix.cells[c]["passages"] for c in matrix.classes if "passages" in matrix.cells[c]}
        own = {r.cls: r for r in rem.rows if r.remedy_id == "passages"}
        print(
            f"\nbound {n if n is not None else 'whole corpus'}: passages of {docs:,} documents; CPU {cpu:.1f} s"
        )
        print(
            "  recovered / failed queries, per class: "
            + ", ".join(f"{c} {v.text()}" for c, v in cells.items())
        )
        for cls, r in own.items():
            diff = "n/a" if r.mean_diff is None else f"{r.mean_diff:+.4f}"
            print(f"  {cls}: recovered {r.recovered}/{r.failures}, lost hits {r.lost_hits}, mean diff {diff}")


if __name__ == "__main__":
    main()
