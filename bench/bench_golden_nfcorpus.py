"""A LabelledRagDataset over NFCorpus (issue 19): built from the test qrels and a sample of relevant documents (one
sentence per document as a reference context, every 5th with two typos, every 7th upper-cased with doubled
spaces, 20 contexts in no document), read back by ``diagnose.load(corpus=..., qrels=...)``: the match counts, the
time, and whether the mapped pairs are the ones it was built from.

    PYTHONPATH=$PWD python bench/bench_golden_nfcorpus.py /work/shared/data/nfcorpus [--per-query 3]

Written with LlamaIndex's ``LabelledRagDataset.save_json`` when it is importable (llama-index-core 0.12), else in
the same layout.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import diagnose
from diagnose.io.spans import UNMATCHED_PREFIX


def _typos(s: str) -> str:
    words = s.split(" ")
    for i in sorted(range(len(words)), key=lambda j: -len(words[j]))[:2]:
        w, m = words[i], len(words[i]) // 2
        words[i] = w[: m - 1] + w[m] + w[m - 1] + w[m + 1 :]
    return " ".join(words)


def build(root: Path, per_query: int, seed: int = 0):
    rng = random.Random(seed)
    texts = {r["_id"]: r["text"] for r in map(json.loads, (root / "corpus.jsonl").open())}
    queries = {r["_id"]: r["text"] for r in map(json.loads, (root / "queries.jsonl").open())}
    rel: dict[str, list[str]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, g = line.split("\t")
        if int(g) > 0:
            rel.setdefault(q, []).append(d)
    examples, expected, kinds, n = [], set(), Counter(), 0
    for q, docs in rel.items():
        contexts = []
        for d in rng.sample(docs, min(per_query, len(docs))):
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", texts[d]) if len(s.split()) >= 8]
            if not sentences:
                continue
            s = rng.choice(sentences)
            holders = [h for h, t in texts.items() if s in t]
            expected.update((q, h) for h in holders)
            kind = "approximate" if n % 5 == 4 else "normalised" if n % 7 == 6 else "exact"
            s = (
                _typos(s)
                if kind == "approximate"
                else "  ".join(s.upper().split(" "))
                if kind == "normalised"
                else s
            )
            kinds[kind] += 1
            kinds["ambiguous (built)"] += len(holders) > 1
            contexts.append(s)
            n += 1
        if contexts:
            examples.append((q, queries[q], contexts))
    for i in range(20):
        examples.append(
            (
                f"absent{i}",
                f"absent question {i}",
                [f"Zebra migration number {i} across the Qwerty plateau was counted by drones in 2031."],
            )
        )
        kinds["unmatched"] += 1
    return examples, expected, kinds


def save(examples, path: Path) -> str:
    try:
        from llama_index.core.llama_dataset import LabelledRagDataExample, LabelledRagDataset

        LabelledRagDataset(
            examples=[
                LabelledRagDataExample(query=t, reference_contexts=c, reference_answer=c[0])
                for _, t, c in examples
            ]
        ).save_json(str(path))
        return "llama_index.core.llama_dataset.LabelledRagDataset.save_json"
    except ImportError:
        ex = [{"query": t, "reference_contexts": c, "reference_answer": c[0]} for _, t, c in examples]
        path.write_text(json.dumps({"examples": ex}, indent=4))
        return "the same layout written by json.dump (llama-index-core 0.12 not importable)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--per-query", type=int, default=3)
    args = ap.parse_args()
    examples, expected, kinds = build(args.root, args.per_query)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nfcorpus_rag.json"
        how = save(examples, path)
        t0 = time.perf_counter()
        ds = diagnose.load(corpus=args.root / "corpus.jsonl", qrels=path)
        took = time.perf_counter() - t0
    rename = {q: f"q{i}" for i, (q, _, _) in enumerate(examples, start=1)}
    want = {(rename[q], d) for q, d in expected}
    rel = ds.qrels.relevant()
    got = {
        (q, d)
        for q, d in zip(rel["query_id"], rel["doc_id"], strict=True)
        if not d.startswith(UNMATCHED_PREFIX)
    }
    print(f"written with {how}")
    print(
        f"{len(examples)} questions, {sum(len(c) for _, _, c in examples)} reference contexts; built: {dict(kinds)}"
    )
    print("found:", {k: v for k, v in ds.report.stats.items() if k.startswith("references_")})
    print(
        f"mapped pairs: {len(got)}; built from: {len(want)}; missing {len(want - got)}, extra {len(got - want)}"
    )
    print(f"diagnose.load (read corpus + locate the contexts): {took:.1f} s")
    return 0 if got >= want else 1


if __name__ == "__main__":
    sys.exit(main())
