"""Measure whether the planted situations of the demo data set really occur with the real models.

Run from the repository root after make_runs.py:  python demo_corpus/check_situations.py [--all] [--write]

--all prints every judged (query, document) pair, not only those of missed queries; --write stores the measured
situations and ranks in demo_corpus/situations.json.

For every relevant document of every query that the ann run misses in its top 10, it prints:
  run   rank in runs/ann_minilm.trec ("-" = not retrieved at all)
  flat  rank under an exact search over the same 60-word chunks (no IVF): separates index misses from chunking
  dense rank under exact cosine over full documents (title + text), all documents, same MiniLM model
  bm25  rank under bm25s (method "lucene", k1=0.9, b=0.4, English stopwords, PyStemmer English stemmer)
  cos   cosine(query, full document)
Ranks are 1 + the number of documents with a strictly higher score. Then it checks each situation against the
thresholds in the README and exits 1 if one of them is not met, so the data set cannot silently drift.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_runs  # noqa: E402  (sets HF_HUB_OFFLINE before any model import)

LOW_COSINE = 0.40  # "the embedding model sees little in common" for the vocabulary-mismatch check


def read_trec(path: Path) -> dict[str, list[str]]:
    run: dict[str, list[tuple[int, str]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, _q0, did, rank, _score, _tag = line.split()
            run.setdefault(qid, []).append((int(rank), did))
    return {q: [d for _r, d in sorted(rows)] for q, rows in run.items()}


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """[nq, nd] scores -> 1-based ranks: 1 + number of documents with a strictly higher score."""
    return 1 + (scores[:, None, :] > scores[:, :, None]).sum(axis=2)


def bm25s_scores(docs: list[dict[str, str]], queries: list[dict]) -> np.ndarray:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        [make_runs.doc_text(d) for d in docs], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(corpus_tokens, show_progress=False)
    out = np.zeros((len(queries), len(docs)), dtype=np.float64)
    for i, q in enumerate(queries):
        tokens = bm25s.tokenize(
            [q["text"]], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )[0]
        out[i] = retriever.get_scores(tokens)
    return out


@dataclass(frozen=True)
class Demo:
    """The demo data set as the checks read it: documents, queries, qrels, planted.json and the two runs."""

    docs: list[dict[str, str]]
    queries: list[dict]
    qrels: dict[str, dict[str, int]]
    planted: dict
    ann: dict[str, list[str]]
    bm25_run: dict[str, list[str]]
    row: dict[str, int]  # document id -> row
    qids: list[str]
    judged: list[str]  # the queries with at least one judgement


class Ranks(NamedTuple):
    """Full-document vectors, cosine(query, full document), and the dense, flat-chunk and bm25s ranks [nq, nd]."""

    full: np.ndarray
    cos: np.ndarray
    dense: np.ndarray
    flat: np.ndarray
    bm25: np.ndarray


def load_demo() -> Demo:
    docs, queries, qrels = make_runs.load_corpus(), make_runs.load_queries(), make_runs.load_qrels()
    qids = [q["_id"] for q in queries]
    return Demo(
        docs=docs,
        queries=queries,
        qrels=qrels,
        planted=json.loads((HERE / "planted.json").read_text(encoding="utf-8")),
        ann=read_trec(HERE / "runs" / "ann_minilm.trec"),
        bm25_run=read_trec(HERE / "runs" / "bm25_langchain.trec"),
        row={d["_id"]: i for i, d in enumerate(docs)},
        qids=qids,
        judged=[q for q in qids if qrels.get(q)],
    )


def measure_ranks(docs: list[dict[str, str]], queries: list[dict]) -> Ranks:
    """Every query against every document: MiniLM over full documents and over 60-word chunks, and bm25s."""
    model = make_runs.load_model()
    full = make_runs.encode(model, [make_runs.doc_text(d) for d in docs])
    chunks = make_runs.encode(model, [make_runs.chunk(make_runs.doc_text(d)) for d in docs])
    qv = make_runs.encode(model, [q["text"] for q in queries])
    cos = qv @ full.T
    dense_rank = ranks_from_scores(cos)
    flat_rank = ranks_from_scores(qv @ chunks.T)
    return Ranks(full, cos, dense_rank, flat_rank, ranks_from_scores(bm25s_scores(docs, queries)))


def run_rank(run: dict[str, list[str]], qid: str, did: str) -> int | None:
    lst = run.get(qid, [])
    return lst.index(did) + 1 if did in lst else None


def hit10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]], qid: str) -> bool:
    return any(d in qrels.get(qid, {}) for d in run.get(qid, [])[:10])


def print_summary(demo: Demo, ann_hits: list[str], bm25_hits: list[str]) -> None:
    """The sizes of the data set, the hit@10 of both runs, the ann run's list lengths."""
    judged, qrels = demo.judged, demo.qrels
    print(
        f"documents {len(demo.docs)}, queries {len(demo.qids)}, judged queries {len(judged)}, "
        f"judgements {sum(len(v) for v in qrels.values())}, "
        f"queries with 2-3 relevant {sum(1 for q in judged if 2 <= len(qrels[q]) <= 3)}"
    )
    print(
        f"hit@10 ann_minilm {len(ann_hits)}/{len(judged)} = {len(ann_hits) / len(judged):.1%}; "
        f"bm25_langchain {len(bm25_hits)}/{len(judged)} = {len(bm25_hits) / len(judged):.1%}"
    )
    sizes = Counter(len(v) for v in demo.ann.values())
    print(f"ann run list lengths: min {min(sizes)}, max {max(sizes)}")


def planted_tags(planted: dict) -> dict[str, list[str]]:
    """Query id -> the planted.json sections that name it."""
    qtags: dict[str, list[str]] = {}
    for tag, items in planted.items():
        if isinstance(items, list):
            for it in items:
                if isinstance(it, dict) and "query_id" in it:
                    qtags.setdefault(it["query_id"], []).append(tag)
    return qtags


def relevant_documents(
    demo: Demo, ranks: Ranks, ann_hits: list[str], show_all: bool
) -> tuple[dict[str, list[str]], list[str], list[dict]]:
    """Prints the table of the relevant documents (of the queries ann misses, or all); returns the situations they
    show (query/doc per kind), the pairs dense finds and BM25 misses, and one record per judged pair."""
    qtags = planted_tags(demo.planted)
    print("\nper relevant document of the queries (missed by ann in the top 10, or all with --all):")
    print(f"{'query':6} {'doc':10} rel {'run':>4} {'flat':>4} {'dense':>5} {'bm25':>4} {'cos':>5}  planted")
    found: dict[str, list[str]] = {k: [] for k in ("near-miss", "index-gap", "vocab-lexical", "semantic-gap")}
    dense_wins: list[str] = []
    rows_out: list[dict] = []
    for qi, qid in enumerate(demo.qids):
        hit = qid in ann_hits
        for did, rel in sorted(demo.qrels.get(qid, {}).items(), key=lambda t: -t[1]):
            dj = demo.row[did]
            rr = run_rank(demo.ann, qid, did)
            dr, fr, br, c = (
                int(ranks.dense[qi, dj]),
                int(ranks.flat[qi, dj]),
                int(ranks.bm25[qi, dj]),
                float(ranks.cos[qi, dj]),
            )
            rows_out.append(
                {
                    "query_id": qid,
                    "doc_id": did,
                    "relevance": rel,
                    "ann_hit10": hit,
                    "run_rank": rr,
                    "flat_chunk_rank": fr,
                    "dense_rank": dr,
                    "bm25_rank": br,
                    "cosine": round(c, 4),
                }
            )
            if br > 10 and dr <= 10:
                dense_wins.append(f"{qid}/{did}" + ("" if hit else "(ann miss)"))
            if show_all or not hit:
                print(
                    f"{qid:6} {did:10} {rel:3} {rr if rr else '-':>4} {fr:>4} {dr:>5} {br:>4} {c:5.2f}  "
                    f"{','.join(qtags.get(qid, []))}{'  HIT' if hit else ''}"
                )
            if not hit:
                classify_miss(found, f"{qid}/{did}", rr, fr, dr, br, c)
    return found, dense_wins, rows_out


def classify_miss(
    found: dict[str, list[str]], case: str, rr: int | None, fr: int, dr: int, br: int, c: float
) -> None:
    """Adds the case (a relevant document of a query ann misses) to every situation its ranks show."""
    if rr is not None and 11 <= rr <= 30:
        found["near-miss"].append(case)
    if dr <= 10 and (rr is None or rr > 30):
        found["index-gap"].append(case + ("" if fr <= 10 else " (chunking)"))
    if br <= 10 and dr > 10 and c < LOW_COSINE:
        found["vocab-lexical"].append(case)
    if br > 10 and dr > 10:
        found["semantic-gap"].append(case)


def label_gaps(demo: Demo, full: np.ndarray) -> list[str]:
    """Prints every planted near-duplicate's judged query; returns those where it is a label gap."""
    print(
        "\nlabel gaps (judged page missed in the top 10, its unjudged near-duplicate retrieved in the top 10):"
    )
    gaps = []
    for pair in demo.planted["near-duplicates"]:
        dup, orig = pair["duplicate"], pair["of"]
        c = float(full[demo.row[dup]] @ full[demo.row[orig]])
        for qid in demo.judged:
            if orig in demo.qrels[qid] and dup not in demo.qrels[qid]:
                ro, rd = run_rank(demo.ann, qid, orig), run_rank(demo.ann, qid, dup)
                ok = rd is not None and rd <= 10 and (ro is None or ro > 10)
                print(
                    f"  {qid} judged {orig} run rank {ro or '-'}; duplicate {dup} run rank {rd or '-'}; "
                    f"cos(doc, duplicate) {c:.3f}; words kept {pair['words_kept_any_order']:.1%} (in order {pair['words_kept_in_order']:.1%}) {'OK' if ok else 'no'}"
                )
                if ok and c >= 0.95:
                    gaps.append(f"{qid}/{orig}~{dup}")
    return gaps


def top10_hubs(demo: Demo) -> list[str]:
    """Prints the documents in the most ann top-10 lists; returns those in at least 15% of them."""
    qids = demo.qids
    top10 = Counter(d for q in qids for d in demo.ann.get(q, [])[:10])
    print("\ndocuments in the most ann top-10 lists:")
    for did, n in top10.most_common(5):
        print(f"  {did}: {n}/{len(qids)} = {n / len(qids):.0%}")
    return [d for d, n in top10.items() if n >= 0.15 * len(qids)]


def write_situations(situations: dict[str, list[str]], rate: dict[str, float], rows_out: list[dict]) -> None:
    """demo_corpus/situations.json: the hit@10 of both runs, the situations found, one record per judged pair."""
    out = {
        "note": "written by check_situations.py --write; measured with all-MiniLM-L6-v2 and bm25s (see README)",
        "hit_at_10": rate,
        "situations": situations,
        "relevant_documents": rows_out,
    }
    (HERE / "situations.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


def check(rate: float, found: dict[str, list[str]], gaps: list[str], hubs: list[str]) -> int:
    """Prints each README threshold as ok or FAIL; 0 when all are met, else 1."""
    checks = {
        "hit@10 of ann run in 40-60%": 0.40 <= rate <= 0.60,
        "label gaps >= 3": len(gaps) >= 3,
        "near-misses >= 3": len(found["near-miss"]) >= 3,
        "index gaps >= 2": len([c for c in found["index-gap"] if "chunking" not in c]) >= 2,
        "vocabulary mismatch (lexical wins) >= 3": len(found["vocab-lexical"]) >= 3,
        "semantic gaps >= 2": len(found["semantic-gap"]) >= 2,
        "hub in >= 15% of top 10s": bool(hubs),
    }
    print()
    for name, ok in checks.items():
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    return 0 if all(checks.values()) else 1


def main(argv: list[str]) -> int:
    demo = load_demo()
    ranks = measure_ranks(demo.docs, demo.queries)
    ann_hits = [q for q in demo.judged if hit10(demo.ann, demo.qrels, q)]
    bm25_hits = [q for q in demo.judged if hit10(demo.bm25_run, demo.qrels, q)]
    print_summary(demo, ann_hits, bm25_hits)
    found, dense_wins, rows_out = relevant_documents(demo, ranks, ann_hits, show_all="--all" in argv)
    gaps = label_gaps(demo, ranks.full)
    hubs = top10_hubs(demo)

    print("\nsituations found (query/doc):")
    for k, v in found.items():
        print(f"  {k} ({len(v)}): {' '.join(v)}")
    print(f"  label-gap ({len(gaps)}): {' '.join(gaps)}")
    print(f"  vocab-user, dense finds what BM25 misses ({len(dense_wins)}): {' '.join(dense_wins)}")
    print(f"  hubs in >=15% of top-10s: {hubs}")

    if "--write" in argv:
        rate = {
            "ann_minilm": round(len(ann_hits) / len(demo.judged), 4),
            "bm25_langchain": round(len(bm25_hits) / len(demo.judged), 4),
        }
        situations = {**found, "label-gap": gaps, "vocab-user": dense_wins, "hubs": hubs}
        write_situations(situations, rate, rows_out)
    return check(len(ann_hits) / len(demo.judged), found, gaps, hubs)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
