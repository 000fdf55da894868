"""The vocabulary_mismatch rule's "few words" condition on a run's hits and misses (issue 35 part 3): how often an
absolute share (the query terms' share, or the share of the query's BM25 weight, below 0.2) and the calibrated share
(the target's share of the query's BM25 weight below the 10th percentile over the run's hits) hold for the relevant
documents the run found in its top k (every firing there is a false alarm) and for its missed pairs, for the BM25 and
the dense baselines, with the classes of the misses.

    PYTHONPATH=$PWD python bench/bench_few_words.py ../shared/data/cacm [../shared/data/nfcorpus ...] [--k 10]

The model is the bundled default (its vectors cached under DIAGNOSE_CACHE_DIR).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

import diagnose
from diagnose.lexical import term_overlap, tokenize


def one(data: Path, k: int) -> str:
    ds = diagnose.load(data, split="test")
    a = diagnose.Analysis(ds, {}, k=k, baselines=("bm25", "dense"))
    corpus_row, texts, q_text = ds.corpus.index_of(), ds.corpus.texts(), ds.queries.text_of()
    rel = ds.qrels.relevant()
    relevant: dict[str, set[str]] = {}
    for q, d in zip(rel["query_id"], rel["doc_id"], strict=True):
        relevant.setdefault(q, set()).add(d)
    terms = np.mean([len(set(tokenize([q_text[q]])[0])) for q in relevant if q in q_text])
    out = [
        f"## {data.name}: {len(relevant)} judged queries, {terms:.1f} distinct BM25 terms per query, k={k}"
    ]
    for name in ("bm25", "dense"):
        lists = a.baseline_runs()[name].ranked_lists()
        diag = a.diagnosis(name, k=k)
        missed = [(f.query_id, f.doc_id) for f in diag.failures if f.overlap is not None]
        hits = [(q, d) for q in relevant for d in lists.get(q, [])[:k] if d in relevant[q]]

        def shares(pairs: list[tuple[str, str]]) -> np.ndarray:
            rows = []
            for q, d in pairs:
                weights = a.bm25.term_weights(set(tokenize([q_text[q]])[0]))
                stems = set(tokenize([texts[corpus_row[d]]])[0])
                ov = term_overlap(q_text[q], "", doc_stems=stems, weights=weights)
                rows.append((ov.overlap_ratio, ov.weight_share))
            return np.array(rows).reshape(-1, 2)

        h, m = shares(hits), shares(missed)
        p10 = np.percentile(h[:, 1], diag.thresholds.calibration_percentile)
        classes = Counter(f.cls for f in diag.failures).most_common()
        out.append(f"{name}: {len(hits)} hits, {len(missed)} missed pairs; classes {classes}")
        for label, col, thr in (
            ("overlap < 0.2", 0, 0.2),
            ("weight share < 0.2", 1, 0.2),
            (f"weight share < the hits' percentile ({p10:.3f})", 1, p10),
        ):
            out.append(
                f"  {label}: hits {np.mean(h[:, col] < thr):.1%}, missed {np.mean(m[:, col] < thr):.1%}"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, nargs="+")
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    for data in args.data:
        print(one(data, args.k), flush=True)


if __name__ == "__main__":
    main()
