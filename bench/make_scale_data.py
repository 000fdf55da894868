"""Generate a synthetic BEIR folder at any corpus size, with a run and precomputed vectors, for `bench_scale.py`.

Usage:
    python bench/make_scale_data.py OUT_DIR --docs 1000000 [--queries 1000] [--dim 384] [--seed 0]

Writes (nothing in the repository; put OUT_DIR under /tmp):

- ``corpus.jsonl`` (BEIR: ``_id``, ``title``, ``text``): every document is 10-30 words drawn from a 50,000-word
  vocabulary of made-up words with Zipfian frequencies (p(rank r) ~ 1 / (r + 2)^1.05), so a few words are in most
  documents and most words are rare: BM25's idf is meaningful. 0.2% of the documents are exact copies of another
  document's text (exact duplicates for the label-noise finder), and a few copy a relevant document's text and
  appear in that query's top 10 (label gaps).
- ``queries.jsonl`` and ``qrels/test.tsv``: ``--queries`` queries with 1-3 relevant documents each (grade 1 or 2).
- ``run.trec``: a TREC run, depth 100, with relevant documents planted per query type (below); the other lines are
  random documents, scores decreasing with rank (4 decimals, no ties).
- ``docs.npy`` + ``doc_ids.txt``, ``queries.npy`` + ``query_ids.txt``, and ``docs.parquet`` / ``queries.parquet``
  (``doc_id``/``query_id`` + ``embedding`` list<float32>): 384-d float32 L2-normalised vectors, the formats
  :func:`diagnose.embed.load_precomputed` reads. Document vectors are random unit vectors (written in chunks, so
  1M x 384 needs ~0.3 GB of memory beyond the output); a query vector is ``c * mean(its relevant vectors) +
  sqrt(1 - c^2) * noise``, with the cosine ``c`` set by the query's type, so dense ranks mean something (the
  largest cosine of a random unit vector with 1M random ones is ~0.27 in 384-d).

Query types (fractions of the queries), planted so that every failure class shows up:

========  =====  ==============================================================================================
type      share  relevant documents: run rank, cosine with the query, query words
========  =====  ==============================================================================================
hit       40%    one at run rank 1-10, the others anywhere; cosine 0.35-0.6; words from the document
near      15%    run rank 11-30; cosine 0.3-0.5; words from the document
index     15%    not in the run; cosine 0.4-0.6 (exact dense search finds it); words from the document
vocab     15%    not in the run; cosine 0.05-0.15; words from the document (BM25 finds it)
semantic  13%    run rank 50-100 or absent; cosine 0.05-0.15; one of its words + 3 common words it lacks
dup       2%     not in the run; a copy of its text at run rank 1-10 (label gap)
========  =====  ==============================================================================================

Deterministic for a given seed; needs numpy and pyarrow only (no ``diagnose`` import). Peak memory at 1M documents
is ~3 GB (the token array and the texts), time ~1-2 minutes plus writing ~3.4 GB of vectors.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

VOCAB = 50_000
TYPES = ("hit", "near", "index", "vocab", "semantic", "dup")
TYPE_P = (0.40, 0.15, 0.15, 0.15, 0.13, 0.02)
COSINE = {"hit": (0.35, 0.6), "near": (0.3, 0.5), "index": (0.4, 0.6), "vocab": (0.05, 0.15),
          "semantic": (0.05, 0.15), "dup": (0.3, 0.5)}  # fmt: skip
STOP = {"into", "such", "that", "their", "then", "there", "these", "they", "this", "will", "with"}
CHUNK = 100_000


def make_vocab(rng: np.random.Generator, n: int) -> np.ndarray:
    """n distinct made-up words (consonant-vowel syllables, 2-4 of them), none a stopword."""
    cons, vows = list("bcdfghjklmnpqrstvwz"), list("aeiou")
    syll = np.array([c + v for c in cons for v in vows])
    words: dict[str, None] = {}
    while len(words) < n:
        k = rng.integers(2, 5, size=n)
        picks = rng.integers(0, len(syll), size=(n, 4))
        for row, kk in zip(picks, k, strict=True):
            w = "".join(syll[row[:kk]])
            if w not in STOP:
                words[w] = None
            if len(words) == n:
                break
    return np.array(list(words), dtype=object)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--docs", type=int, required=True)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depth", type=int, default=100)
    args = ap.parse_args()
    t0 = time.perf_counter()
    out: Path = args.out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    n, nq, dim, depth = args.docs, args.queries, args.dim, args.depth
    width = len(str(n - 1))
    doc_ids = np.char.add("d", np.char.zfill(np.arange(n).astype(str), width)).astype(object)

    # ---- corpus: Zipfian words
    vocab = make_vocab(rng, VOCAB)
    p = 1.0 / (np.arange(VOCAB) + 2.0) ** 1.05
    cdf = np.cumsum(p / p.sum())
    lengths = rng.integers(10, 31, size=n)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    tokens = np.minimum(np.searchsorted(cdf, rng.random(int(starts[-1]))), VOCAB - 1).astype(np.int32)

    def words_of(i: int) -> np.ndarray:
        return tokens[starts[i] : starts[i + 1]]

    # ---- queries, qrels and the planted structure
    qtype = rng.choice(len(TYPES), size=nq, p=TYPE_P)
    n_rel = rng.integers(1, 4, size=nq)
    rel_docs = rng.choice(n, size=int(n_rel.sum()), replace=False)
    rel_of = np.split(rel_docs, np.cumsum(n_rel)[:-1])
    taken = set(rel_docs.tolist())
    text_copy: dict[int, int] = {}  # doc -> the doc whose text it copies
    free = rng.permutation(n)
    free = free[~np.isin(free, rel_docs)]
    fi = 0

    def fresh(k: int) -> np.ndarray:
        nonlocal fi
        got = free[fi : fi + k]
        fi += k
        return got

    queries, qrels, run_lines = [], [], []
    query_mix: list[tuple[np.ndarray, float]] = []  # (relevant rows, cosine) per query
    common = np.arange(200)  # the most frequent words
    for qi in range(nq):
        t = TYPES[qtype[qi]]
        rels = rel_of[qi]
        lo, hi = COSINE[t]
        cos = float(rng.uniform(lo, hi))
        query_mix.append((rels, cos))
        target = words_of(int(rels[0]))
        if t == "semantic":
            # one of its own words among common words it lacks: some overlap, but BM25 ranks it low
            qw = np.concatenate(
                [rng.choice(target, size=1), rng.choice(np.setdiff1d(common, target), size=3, replace=False)]
            )
        else:
            own = np.unique(target)
            own = own[np.argsort(-own)][: max(3, len(own) // 2)]  # the document's rarer words
            qw = rng.choice(own, size=min(len(own), int(rng.integers(3, 6))), replace=False)
            qw = np.concatenate([qw, rng.choice(common, size=int(rng.integers(0, 3)))])
        qid = f"q{qi:05d}"
        queries.append({"_id": qid, "text": " ".join(vocab[qw])})
        for j, d in enumerate(rels):
            qrels.append(f"{qid}\t{doc_ids[d]}\t{2 if j == 0 else 1}")
        # the run: depth lines, relevant documents at planted ranks, random documents elsewhere
        ranked = [int(d) for d in rng.choice(n, size=min(n, 2 * depth), replace=False)]
        slots: dict[int, int] = {}
        if t == "hit":
            slots[int(rng.integers(1, 11))] = int(rels[0])
            for d in rels[1:]:
                if rng.random() < 0.5:
                    slots.setdefault(int(rng.integers(1, depth + 1)), int(d))
        elif t == "near":
            slots[int(rng.integers(11, 31))] = int(rels[0])
        elif t == "semantic" and rng.random() < 0.5:
            slots[int(rng.integers(50, depth + 1))] = int(rels[0])
        elif t == "dup":
            copy = int(fresh(1)[0])
            text_copy[copy] = int(rels[0])
            slots[int(rng.integers(1, 11))] = copy
        rest = iter(d for d in ranked if d not in taken and d not in text_copy)
        final = [slots[r] if r in slots else next(rest) for r in range(1, depth + 1)]
        for r, d in enumerate(final, start=1):
            run_lines.append(f"{qid} Q0 {doc_ids[d]} {r} {1.0 - r / (2 * depth):.4f} synthetic")
    # exact duplicates among the other documents (0.2% of the corpus)
    n_dup = n // 500
    for a, b in zip(fresh(n_dup), fresh(n_dup), strict=True):
        text_copy[int(a)] = int(b)

    # ---- write the texts
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            src = text_copy.get(i, i)
            f.write(f'{{"_id": "{doc_ids[i]}", "title": "", "text": "{" ".join(vocab[words_of(src)])}"}}\n')
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n")
    (out / "run.trec").write_text("\n".join(run_lines) + "\n")
    (out / "doc_ids.txt").write_text("\n".join(doc_ids) + "\n")
    qids = [q["_id"] for q in queries]
    (out / "query_ids.txt").write_text("\n".join(qids) + "\n")
    t_text = time.perf_counter() - t0

    # ---- vectors, in chunks: random unit rows; a copied text gets (almost) its source's vector
    import pyarrow as pa
    import pyarrow.parquet as pq

    def unit(m: np.ndarray) -> np.ndarray:
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    def chunk_vecs(c: int) -> np.ndarray:
        g = np.random.default_rng([args.seed, 1, c])
        return unit(g.standard_normal((min(CHUNK, n - c * CHUNK), dim), dtype=np.float32))

    def vec_of(i: int) -> np.ndarray:  # regenerates the chunk: only used for a few thousand rows
        return chunk_vecs(i // CHUNK)[i % CHUNK]

    need = sorted({*rel_docs.tolist(), *text_copy.values()})
    by_chunk: dict[int, list[int]] = {}
    for i in need:
        by_chunk.setdefault(i // CHUNK, []).append(i)
    src_vec = {}
    for c, rows in by_chunk.items():
        m = chunk_vecs(c)
        for i in rows:
            src_vec[i] = m[i % CHUNK]
    npy = np.lib.format.open_memmap(out / "docs.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    schema = pa.schema([("doc_id", pa.string()), ("embedding", pa.list_(pa.float32()))])
    with pq.ParquetWriter(out / "docs.parquet", schema, compression="snappy") as w:
        for c in range((n + CHUNK - 1) // CHUNK):
            m = chunk_vecs(c)
            base = c * CHUNK
            for i, src in text_copy.items():
                if base <= i < base + len(m):
                    g = np.random.default_rng([args.seed, 2, i])
                    m[i - base] = unit((src_vec[src] + 0.05 * g.standard_normal(dim) / np.sqrt(dim))[None])[0]
            npy[base : base + len(m)] = m
            offsets = pa.array(np.arange(0, (len(m) + 1) * dim, dim, dtype=np.int32))
            emb = pa.ListArray.from_arrays(offsets, pa.array(m.reshape(-1)))
            w.write_table(
                pa.table({"doc_id": pa.array(list(doc_ids[base : base + len(m)])), "embedding": emb})
            )
    npy.flush()
    del npy
    qv = np.empty((nq, dim), dtype=np.float32)
    for qi, (rels, cos) in enumerate(query_mix):
        mean = unit(np.mean([src_vec[int(d)] for d in rels], axis=0)[None])[0]
        noise = rng.standard_normal(dim)
        noise -= (noise @ mean) * mean
        noise /= np.linalg.norm(noise)
        qv[qi] = unit((cos * mean + np.sqrt(1 - cos**2) * noise)[None])[0]
    np.save(out / "queries.npy", qv)
    offsets = pa.array(np.arange(0, (nq + 1) * dim, dim, dtype=np.int32))
    pq.write_table(
        pa.table(
            {"query_id": qids, "embedding": pa.ListArray.from_arrays(offsets, pa.array(qv.reshape(-1)))}
        ),
        out / "queries.parquet",
    )
    print(f"{out}: {n:,} documents, {nq:,} queries, {len(qrels):,} judgements; texts {t_text:.1f} s, "
          f"total {time.perf_counter() - t0:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
