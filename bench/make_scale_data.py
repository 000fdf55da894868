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
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

VOCAB = 50_000
TYPES = ("hit", "near", "index", "vocab", "semantic", "dup")
TYPE_P = (0.40, 0.15, 0.15, 0.15, 0.13, 0.02)
COSINE = {
    "hit": (0.35, 0.6),
    "near": (0.3, 0.5),
    "index": (0.4, 0.6),
    "vocab": (0.05, 0.15),
    "semantic": (0.05, 0.15),
    "dup": (0.3, 0.5),
}
STOP = {"into", "such", "that", "their", "then", "there", "these", "they", "this", "will", "with"}
CHUNK = 100_000
COMMON = np.arange(200)  # the most frequent words


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


class Corpus(NamedTuple):
    """The documents' ids, the vocabulary, and every document's words as rows of one token array."""

    doc_ids: np.ndarray
    vocab: np.ndarray
    tokens: np.ndarray
    starts: np.ndarray

    def words_of(self, i: int) -> np.ndarray:
        return self.tokens[self.starts[i] : self.starts[i + 1]]


@dataclass
class Plan:
    """What the queries plant: their texts, judgements and run lines, the (relevant rows, cosine) of each query's
    vector, and the documents whose text copies another document's (doc -> the doc whose text it copies)."""

    rel_docs: np.ndarray
    queries: list[dict[str, str]] = field(default_factory=list)
    qrels: list[str] = field(default_factory=list)
    run_lines: list[str] = field(default_factory=list)
    query_mix: list[tuple[np.ndarray, float]] = field(default_factory=list)
    text_copy: dict[int, int] = field(default_factory=dict)


class Unused:
    """The documents given no role yet, in a random order; ``take(k)`` hands out the next ``k``."""

    def __init__(self, order: np.ndarray) -> None:
        self.order, self.at = order, 0

    def take(self, k: int) -> np.ndarray:
        got = self.order[self.at : self.at + k]
        self.at += k
        return got


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--docs", type=int, required=True)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depth", type=int, default=100)
    return ap.parse_args()


def make_corpus(rng: np.random.Generator, n: int) -> Corpus:
    """n documents of 10-30 Zipfian words, ids ``d`` + the row number zero-padded."""
    width = len(str(n - 1))
    doc_ids = np.char.add("d", np.char.zfill(np.arange(n).astype(str), width)).astype(object)
    vocab = make_vocab(rng, VOCAB)
    p = 1.0 / (np.arange(VOCAB) + 2.0) ** 1.05
    cdf = np.cumsum(p / p.sum())
    lengths = rng.integers(10, 31, size=n)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    tokens = np.minimum(np.searchsorted(cdf, rng.random(int(starts[-1]))), VOCAB - 1).astype(np.int32)
    return Corpus(doc_ids, vocab, tokens, starts)


def plan_queries(rng: np.random.Generator, corpus: Corpus, nq: int, depth: int) -> Plan:
    """The queries, qrels and the planted structure (see the module's table), then the exact duplicates among the
    other documents (0.2% of the corpus)."""
    n = len(corpus.doc_ids)
    qtype = rng.choice(len(TYPES), size=nq, p=TYPE_P)
    n_rel = rng.integers(1, 4, size=nq)
    rel_docs = rng.choice(n, size=int(n_rel.sum()), replace=False)
    rel_of = np.split(rel_docs, np.cumsum(n_rel)[:-1])
    taken = set(rel_docs.tolist())
    plan = Plan(rel_docs)
    free = rng.permutation(n)
    unused = Unused(free[~np.isin(free, rel_docs)])
    for qi in range(nq):
        t = TYPES[qtype[qi]]
        rels = rel_of[qi]
        lo, hi = COSINE[t]
        cos = float(rng.uniform(lo, hi))
        plan.query_mix.append((rels, cos))
        qw = query_words(rng, t, corpus.words_of(int(rels[0])))
        qid = f"q{qi:05d}"
        plan.queries.append({"_id": qid, "text": " ".join(corpus.vocab[qw])})
        for j, d in enumerate(rels):
            plan.qrels.append(f"{qid}\t{corpus.doc_ids[d]}\t{2 if j == 0 else 1}")
        # the run: depth lines, relevant documents at planted ranks, random documents elsewhere
        ranked = [int(d) for d in rng.choice(n, size=min(n, 2 * depth), replace=False)]
        slots = planted_slots(rng, t, rels, depth, unused, plan.text_copy)
        rest = iter(d for d in ranked if d not in taken and d not in plan.text_copy)
        final = [slots[r] if r in slots else next(rest) for r in range(1, depth + 1)]
        for r, d in enumerate(final, start=1):
            plan.run_lines.append(f"{qid} Q0 {corpus.doc_ids[d]} {r} {1.0 - r / (2 * depth):.4f} synthetic")
    n_dup = n // 500
    for a, b in zip(unused.take(n_dup), unused.take(n_dup), strict=True):
        plan.text_copy[int(a)] = int(b)
    return plan


def query_words(rng: np.random.Generator, t: str, target: np.ndarray) -> np.ndarray:
    """The word rows of a query of type ``t`` whose first relevant document has the words ``target``."""
    if t == "semantic":
        # one of its own words among common words it lacks: some overlap, but BM25 ranks it low
        return np.concatenate(
            [rng.choice(target, size=1), rng.choice(np.setdiff1d(COMMON, target), size=3, replace=False)]
        )
    own = np.unique(target)
    own = own[np.argsort(-own)][: max(3, len(own) // 2)]  # the document's rarer words
    qw = rng.choice(own, size=min(len(own), int(rng.integers(3, 6))), replace=False)
    return np.concatenate([qw, rng.choice(COMMON, size=int(rng.integers(0, 3)))])


def planted_slots(
    rng: np.random.Generator, t: str, rels: np.ndarray, depth: int, unused: Unused, text_copy: dict[int, int]
) -> dict[int, int]:
    """Run rank -> document for the relevant documents (or, for ``dup``, a new copy of one) a query of type ``t``
    plants in its run."""
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
        copy = int(unused.take(1)[0])
        text_copy[copy] = int(rels[0])
        slots[int(rng.integers(1, 11))] = copy
    return slots


def write_texts(out: Path, corpus: Corpus, plan: Plan) -> None:
    """corpus.jsonl (a copied text written under the copy's id), queries.jsonl, qrels/test.tsv, run.trec and the
    two id files."""
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i in range(len(corpus.doc_ids)):
            src = plan.text_copy.get(i, i)
            text = " ".join(corpus.vocab[corpus.words_of(src)])
            f.write(f'{{"_id": "{corpus.doc_ids[i]}", "title": "", "text": "{text}"}}\n')
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in plan.queries:
            f.write(json.dumps(q) + "\n")
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(plan.qrels) + "\n")
    (out / "run.trec").write_text("\n".join(plan.run_lines) + "\n")
    (out / "doc_ids.txt").write_text("\n".join(corpus.doc_ids) + "\n")
    (out / "query_ids.txt").write_text("\n".join(q["_id"] for q in plan.queries) + "\n")


def unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def chunk_vecs(seed: int, c: int, n: int, dim: int) -> np.ndarray:
    """The random unit document vectors of chunk ``c`` (rows ``c * CHUNK`` on), from their own generator."""
    g = np.random.default_rng([seed, 1, c])
    return unit(g.standard_normal((min(CHUNK, n - c * CHUNK), dim), dtype=np.float32))


def source_vectors(seed: int, n: int, dim: int, plan: Plan) -> dict[int, np.ndarray]:
    """The random vectors of the relevant documents and of the documents whose text is copied, one chunk at a
    time."""
    need = sorted({*plan.rel_docs.tolist(), *plan.text_copy.values()})
    by_chunk: dict[int, list[int]] = {}
    for i in need:
        by_chunk.setdefault(i // CHUNK, []).append(i)
    src_vec = {}
    for c, rows in by_chunk.items():
        m = chunk_vecs(seed, c, n, dim)
        for i in rows:
            src_vec[i] = m[i % CHUNK]
    return src_vec


def write_doc_vectors(out: Path, seed: int, dim: int, doc_ids: np.ndarray, plan: Plan, src_vec: dict) -> None:
    """docs.npy and docs.parquet, in chunks: random unit rows; a copied text gets (almost) its source's vector."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(doc_ids)
    npy = np.lib.format.open_memmap(out / "docs.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    schema = pa.schema([("doc_id", pa.string()), ("embedding", pa.list_(pa.float32()))])
    with pq.ParquetWriter(out / "docs.parquet", schema, compression="snappy") as w:
        for c in range((n + CHUNK - 1) // CHUNK):
            m = chunk_vecs(seed, c, n, dim)
            base = c * CHUNK
            for i, src in plan.text_copy.items():
                if base <= i < base + len(m):
                    g = np.random.default_rng([seed, 2, i])
                    m[i - base] = unit((src_vec[src] + 0.05 * g.standard_normal(dim) / np.sqrt(dim))[None])[0]
            npy[base : base + len(m)] = m
            offsets = pa.array(np.arange(0, (len(m) + 1) * dim, dim, dtype=np.int32))
            emb = pa.ListArray.from_arrays(offsets, pa.array(m.reshape(-1)))
            w.write_table(
                pa.table({"doc_id": pa.array(list(doc_ids[base : base + len(m)])), "embedding": emb})
            )
    npy.flush()
    del npy


def write_query_vectors(out: Path, rng: np.random.Generator, dim: int, plan: Plan, src_vec: dict) -> None:
    """queries.npy and queries.parquet: ``c * mean(relevant vectors) + sqrt(1 - c^2) * noise`` per query."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    nq = len(plan.queries)
    qv = np.empty((nq, dim), dtype=np.float32)
    for qi, (rels, cos) in enumerate(plan.query_mix):
        mean = unit(np.mean([src_vec[int(d)] for d in rels], axis=0)[None])[0]
        noise = rng.standard_normal(dim)
        noise -= (noise @ mean) * mean
        noise /= np.linalg.norm(noise)
        qv[qi] = unit((cos * mean + np.sqrt(1 - cos**2) * noise)[None])[0]
    np.save(out / "queries.npy", qv)
    offsets = pa.array(np.arange(0, (nq + 1) * dim, dim, dtype=np.int32))
    qids = [q["_id"] for q in plan.queries]
    pq.write_table(
        pa.table(
            {"query_id": qids, "embedding": pa.ListArray.from_arrays(offsets, pa.array(qv.reshape(-1)))}
        ),
        out / "queries.parquet",
    )


def main() -> None:
    args = parse_args()
    t0 = time.perf_counter()
    out: Path = args.out
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    corpus = make_corpus(rng, args.docs)
    plan = plan_queries(rng, corpus, args.queries, args.depth)
    write_texts(out, corpus, plan)
    t_text = time.perf_counter() - t0
    src_vec = source_vectors(args.seed, args.docs, args.dim, plan)
    write_doc_vectors(out, args.seed, args.dim, corpus.doc_ids, plan, src_vec)
    write_query_vectors(out, rng, args.dim, plan, src_vec)
    print(
        f"{out}: {args.docs:,} documents, {len(plan.queries):,} queries, {len(plan.qrels):,} judgements; texts "
        f"{t_text:.1f} s, total {time.perf_counter() - t0:.1f} s"
    )


if __name__ == "__main__":
    main()
