"""Write synthetic TREC qrels and runs for benchmarks (shared by every `bench/bench_*.py`).

Usage:
    python bench/make_synthetic.py OUT_DIR [--shapes 1000x1000,10000x100] [--seed 0]

For each shape ``NQxDEPTH`` it writes ``OUT_DIR/NQxDEPTH.qrels`` (TREC 4 columns) and ``OUT_DIR/NQxDEPTH.run``
(TREC 6 columns, ``NQ * DEPTH`` lines). What the files contain, on purpose:

- graded judgements 0/1/2 (about 50% / 35% / 15%), 10-80 judged documents per query (up to 20 not retrieved);
- scores rounded to 2 decimals, so many ties: the lines of a tie are written in random order and the rank
  column follows the line order, so a reader must re-order ties the trec_eval way (score desc, doc id desc);
- every query of the qrels has results and every run query is judged, so the aggregates of tools that average
  differently over missing queries (trec_eval without ``-c``, pytrec_eval, ranx) are still comparable;
- scores are exact in float32 too (2 decimals, below 100), so trec_eval builds that read scores as C ``float``
  (pytrec_eval-terrier 0.5.x) and those that read ``double`` rank the same way.

The generator is deterministic for a given seed and needs only numpy (no ``diagnose`` import), so it can run before
the readers exist. Existing files are kept unless ``--force`` is given.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_SHAPES = "1000x1000,10000x100"
GRADES = np.array([0, 1, 2])
GRADE_P = np.array([0.50, 0.35, 0.15])


def make_collection(
    n_queries: int, depth: int, *, seed: int = 0, n_docs: int | None = None
) -> tuple[list[str], list[str]]:
    """Return ``(qrels_lines, run_lines)`` without trailing newlines.

    Each query retrieves ``depth`` distinct documents out of ``n_docs`` (default ``max(100_000, 20 * depth)``).
    A retrieved document's latent score is ``N(0, 1) + 1.2 * grade`` (unjudged documents have grade 0), so
    relevant documents tend to rank high; the written score is ``round(latent + 5, 2)``.
    """
    rng = np.random.default_rng(seed)
    n_docs = n_docs or max(100_000, 20 * depth)
    width = len(str(n_docs))
    qrels_lines: list[str] = []
    run_lines: list[str] = []
    for qi in range(n_queries):
        qid = f"q{qi}"
        n_judged_ret = int(rng.integers(10, min(60, depth) + 1))
        n_judged_unret = int(rng.integers(0, 21))
        docs = rng.choice(n_docs, size=depth + n_judged_unret, replace=False)
        doc_ids = np.char.add("d", np.char.zfill(docs.astype(str), width))
        ret_ids = doc_ids[:depth]
        judged_pos = rng.choice(depth, size=n_judged_ret, replace=False)
        grade_ret = np.zeros(depth, dtype=np.int64)
        grade_ret[judged_pos] = rng.choice(GRADES, size=n_judged_ret, p=GRADE_P)
        grade_unret = rng.choice(GRADES, size=n_judged_unret, p=GRADE_P)
        # qrels: judged retrieved docs then judged unretrieved docs, in random order
        judged_ids = np.concatenate([ret_ids[judged_pos], doc_ids[depth:]])
        judged_grades = np.concatenate([grade_ret[judged_pos], grade_unret])
        order = rng.permutation(len(judged_ids))
        qrels_lines.extend(
            f"{qid} 0 {d} {g}" for d, g in zip(judged_ids[order], judged_grades[order], strict=True)
        )
        # run: rounded scores (ties), lines sorted by score desc with ties in random order
        scores = np.round(rng.normal(0.0, 1.0, depth) + 1.2 * grade_ret + 5.0, 2)
        line_order = np.lexsort((rng.random(depth), -scores))
        run_lines.extend(
            f"{qid} Q0 {d} {r} {s:.2f} synthetic"
            for r, (d, s) in enumerate(zip(ret_ids[line_order], scores[line_order], strict=True), start=1)
        )
    return qrels_lines, run_lines


def write_shape(
    out_dir: Path, n_queries: int, depth: int, *, seed: int = 0, force: bool = False
) -> tuple[Path, Path]:
    """Write ``NQxDEPTH.qrels`` and ``NQxDEPTH.run`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{n_queries}x{depth}"
    qrels_path, run_path = out_dir / f"{stem}.qrels", out_dir / f"{stem}.run"
    if qrels_path.exists() and run_path.exists() and not force:
        return qrels_path, run_path
    qrels_lines, run_lines = make_collection(n_queries, depth, seed=seed)
    qrels_path.write_text("\n".join(qrels_lines) + "\n")
    run_path.write_text("\n".join(run_lines) + "\n")
    return qrels_path, run_path


def parse_shapes(text: str) -> list[tuple[int, int]]:
    shapes = []
    for part in text.split(","):
        nq, _, depth = part.strip().partition("x")
        shapes.append((int(nq), int(depth)))
    return shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"NQxDEPTH,... (default: {DEFAULT_SHAPES})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="rewrite existing files")
    args = parser.parse_args(argv)
    for nq, depth in parse_shapes(args.shapes):
        t0 = time.perf_counter()
        q, r = write_shape(args.out_dir, nq, depth, seed=args.seed, force=args.force)
        print(f"{q} {r} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
