"""Whole-process time of the light Python API: `import diagnose; diagnose.evaluate(qrels, run)` on the demo corpus,
beside `python -c "import pytrec_eval"` doing the same evaluation (the peer), medians over repeats in one run.

    python bench/bench_api_evaluate.py --repeats 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QRELS = ROOT / "demo_corpus" / "qrels" / "test.tsv"
RUN = ROOT / "demo_corpus" / "runs" / "ann_minilm.trec"

OURS = f"""
import diagnose
t = diagnose.evaluate({str(QRELS)!r}, {str(RUN)!r}, k=[1, 3, 5, 10])
assert len(t.columns) > 10
"""
PEER = f"""
import pytrec_eval
qrels, run = {{}}, {{}}
for i, line in enumerate(open({str(QRELS)!r})):
    if i:
        q, d, g = line.split()
        qrels.setdefault(q, {{}})[d] = int(g)
for line in open({str(RUN)!r}):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {{}})[d] = float(s)
ev = pytrec_eval.RelevanceEvaluator(qrels, {{"P_1", "P_3", "P_5", "P_10", "recall_10", "ndcg_cut_10", "recip_rank", "map"}})
assert ev.evaluate(run)
"""
HEAVY = "import sys, diagnose; diagnose.evaluate({q!r}, {r!r}); print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in ('torch', 'streamlit', 'umap', 'sentence_transformers')))"


def timed(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    ours, peer, bare = [], [], []
    for _ in range(args.repeats):  # interleaved, so machine noise hits all three alike
        ours.append(timed(OURS))
        peer.append(timed(PEER))
        bare.append(timed("pass"))
    heavy = subprocess.run(
        [sys.executable, "-c", HEAVY.format(q=str(QRELS), r=str(RUN))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.strip()
    med = statistics.median
    print(f"python -c pass:                     median {med(bare):.3f} s")
    print(
        f"import diagnose; diagnose.evaluate: median {med(ours):.3f} s (min {min(ours):.3f}, max {max(ours):.3f})"
    )
    print(
        f"pytrec_eval, same metrics:          median {med(peer):.3f} s (min {min(peer):.3f}, max {max(peer):.3f})"
    )
    print(f"ratio ours / pytrec_eval: {med(ours) / med(peer):.2f}; heavy modules imported: {heavy}")


if __name__ == "__main__":
    main()
