"""BM25 baseline: quality against Anserini's published NFCorpus numbers, and speed of bm25s vs rank-bm25.

Usage (from the repository root; needs ../shared/data/nfcorpus):

    python bench/bench_bm25.py                       # quality + NFCorpus speed + 50k-doc scale run
    python bench/bench_bm25.py --scale-docs 0        # skip the scale run

What is measured, with the same tokenizer (diagnose.lexical.tokenize) for both engines:
- quality: nDCG@10, R@100, R@1000 on the 323 NFCorpus test queries (pytrec_eval), depth 1000;
- NFCorpus speed (median of --repeats): tokenizing the corpus (shared by both engines), each engine indexing the
  tokens (``BM25Index.build`` = tokenize + index), ``BM25Index.search`` of the 323 test queries for the top 100
  (tokenize queries + score every document + top-k), and, for reference, bm25s' own ``retrieve`` on the same
  tokens (numpy backend, one thread);
- scale: the corpus replicated to >= --scale-docs documents (ids suffixed "#i"), same queries. rank-bm25 scores
  every document of the corpus in Python per query, so only its first --rank-bm25-queries queries are timed and
  the time for all 323 is extrapolated linearly (per-query mean x 323).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import cpu_name  # noqa: E402

from diagnose.io import read_corpus, read_qrels, read_queries  # noqa: E402
from diagnose.lexical import BM25Index, tokenize  # noqa: E402
from diagnose.lexical.terms import tokenize_ids  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "nfcorpus"
ANSERINI = {"ndcg_cut_10": 0.3218, "recall_100": 0.2457, "recall_1000": 0.3704}


def load(root: Path):
    """The corpus texts (title and text, as diagnose.data.document_text) and ids, the judged test queries in the
    qrels file's order with their texts, and the qrels, read by diagnose's readers."""
    corpus = read_corpus(root / "corpus.jsonl")
    qrels = read_qrels(root / "qrels" / "test.tsv").as_dict()
    qids = list(qrels)
    text_of = read_queries(root / "queries.jsonl").text_of()
    return corpus.texts(), list(corpus.ids), qids, [text_of[q] for q in qids], qrels


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median wall time over ``repeats`` calls, and the last result."""
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def quality(texts, ids, qids, qtexts, qrels) -> dict[str, dict[str, float]]:
    import pytrec_eval

    out = {}
    for engine in ("bm25s", "rank_bm25"):
        idx = BM25Index.build(texts, ids, engine=engine)
        res = idx.search(qtexts, 1000)
        run = {q: dict(r) for q, r in zip(qids, res, strict=True)}
        per_q = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recall.1000"})
        per_q = per_q.evaluate(run)
        # queries without any retrieved document count 0 (pytrec_eval only reports queries present in the run)
        out[engine] = {m: sum(v[m] for v in per_q.values()) / len(qrels) for m in ANSERINI}
    return out


def speed(texts, ids, qtexts, repeats: int, *, rank_bm25_queries: int | None = None) -> dict[str, float]:
    import bm25s
    import numpy as np

    from diagnose.lexical import Bm25sImpl, RankBm25Impl

    r: dict[str, float] = {"docs": len(texts), "queries": len(qtexts)}
    r["tokenize"], tokens = timed(lambda: tokenize(texts), repeats)
    ids_arr = np.asarray(ids, dtype=object)
    terms, flat, lens = tokenize_ids(texts)  # the form bm25s' index is built from (same tokens)
    impls = {
        "bm25s": lambda: Bm25sImpl(terms, flat, lens, 0.9, 0.4, "lucene"),
        "rank_bm25": lambda: RankBm25Impl(tokens, 0.9, 0.4),
    }
    for engine, make in impls.items():
        capped = engine == "rank_bm25" and rank_bm25_queries is not None
        reps = 1 if capped else repeats
        # engine-only indexing of the already tokenized corpus (BM25Index.build = tokenize + this)
        r[f"{engine}.index"], impl = timed(make, reps)
        idx = BM25Index(ids=ids_arr, engine=engine, method="", k1=0.9, b=0.4, impl=impl)
        sample = qtexts[:rank_bm25_queries] if capped else qtexts
        t, _ = timed(lambda i=idx, s=sample: i.search(s, 100), reps)
        r[f"{engine}.search_timed_queries"] = len(sample)
        r[f"{engine}.search"] = t * len(qtexts) / len(sample)
        del idx, impl
        gc.collect()
    # bm25s' own retrieve on the same tokens (reference for our sparse-product search)
    qtok = tokenize(qtexts)
    ret = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    ret.index(tokens, show_progress=False)
    r["bm25s_native.retrieve"], _ = timed(
        lambda: ret.retrieve(qtok, k=100, show_progress=False, n_threads=0), repeats
    )
    return r


def machine() -> str:
    from importlib.metadata import version

    return (
        f"{os.cpu_count()} cores ({cpu_name() or platform.processor()}), Python {platform.python_version()}, "
        f"bm25s {version('bm25s')}, rank-bm25 {version('rank-bm25')}, PyStemmer {version('PyStemmer')}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scale-docs", type=int, default=50_000, help="0 to skip the scale run")
    ap.add_argument("--rank-bm25-queries", type=int, default=50, help="queries timed for rank-bm25 at scale")
    args = ap.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        sys.exit(f"NFCorpus not found at {args.data}; pass --data DIR (BEIR layout).")
    texts, ids, qids, qtexts, qrels = load(args.data)
    print(f"machine: {machine()}; load average at start {os.getloadavg()[0]:.1f}")
    print(f"NFCorpus: {len(texts)} docs, {len(qids)} test queries\n")

    print("## quality (depth 1000, pytrec_eval, all 323 queries)")
    q = quality(texts, ids, qids, qtexts, qrels)
    print("| engine | nDCG@10 | R@100 | R@1000 |\n|---|---|---|---|")
    print(
        f"| Anserini BM25 flat (published) | {ANSERINI['ndcg_cut_10']:.4f} | {ANSERINI['recall_100']:.4f} | "
        f"{ANSERINI['recall_1000']:.4f} |"
    )
    for engine, m in q.items():
        print(f"| {engine} | {m['ndcg_cut_10']:.4f} | {m['recall_100']:.4f} | {m['recall_1000']:.4f} |")

    rows = [("NFCorpus", speed(texts, ids, qtexts, args.repeats))]
    if args.scale_docs:
        copies = -(-args.scale_docs // len(texts))
        big_texts = texts * copies
        big_ids = [f"{d}#{i}" for i in range(copies) for d in ids]
        rows.append(
            (
                f"NFCorpus x{copies}",
                speed(big_texts, big_ids, qtexts, args.repeats, rank_bm25_queries=args.rank_bm25_queries),
            )
        )
    print(f"\n## speed (seconds, median of {args.repeats}; search = 323 queries, top 100)")
    print(
        "| corpus | docs | tokenize corpus (shared) | bm25s index | rank-bm25 index | bm25s search | "
        "rank-bm25 search | index ratio | search ratio | total ratio (tokenize + index + search) | "
        "bm25s' own retrieve |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        b_tot = r["tokenize"] + r["bm25s.index"] + r["bm25s.search"]
        k_tot = r["tokenize"] + r["rank_bm25.index"] + r["rank_bm25.search"]
        capped = r["rank_bm25.search_timed_queries"] != r["queries"]
        note = (
            f" (1 run; search extrapolated from {r['rank_bm25.search_timed_queries']:.0f} queries)"
            if capped
            else ""
        )
        print(
            f"| {name} | {r['docs']:.0f} | {r['tokenize']:.2f} | {r['bm25s.index']:.2f} | "
            f"{r['rank_bm25.index']:.2f} | {r['bm25s.search']:.3f} | {r['rank_bm25.search']:.2f}{note} | "
            f"{r['rank_bm25.index'] / r['bm25s.index']:.2f}x | {r['rank_bm25.search'] / r['bm25s.search']:.0f}x | "
            f"{k_tot / b_tot:.1f}x | {r['bm25s_native.retrieve']:.3f} |"
        )

    print(
        f"\nload average at end {os.getloadavg()[0]:.1f} (the machine is shared: absolute times vary, ratios less)"
    )


if __name__ == "__main__":
    main()
