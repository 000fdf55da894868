"""A golden set of reference contexts built from the demo corpus and its qrels (for the golden-set tests and
``tests/fixtures/golden/make_golden.py``): one sentence of each relevant document per judgement, every 5th one
edited so that only approximate matching finds it (two typos), every 7th one changed in case and spacing
(normalised matching), and two questions whose contexts are in no document (unmatched)."""

from __future__ import annotations

import json
import re
from pathlib import Path

DEMO = Path(__file__).resolve().parent.parent / "demo_corpus"
ABSENT = [
    (
        "qx1",
        "Who feeds the office goldfish?",
        "The office goldfish are fed by the facilities team every Tuesday at dawn.",
    ),
    (
        "qx2",
        "Where is the bicycle cellar?",
        "Bicycles are parked in the cellar beneath the canteen in the Reykjavik office.",
    ),
]


def demo_texts() -> dict[str, str]:
    rows = (json.loads(line) for line in (DEMO / "corpus.jsonl").read_text().splitlines() if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def demo_queries() -> dict[str, str]:
    rows = (json.loads(line) for line in (DEMO / "queries.jsonl").read_text().splitlines() if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def demo_pairs() -> list[tuple[str, str]]:
    lines = (DEMO / "qrels" / "test.tsv").read_text().splitlines()[1:]
    return [(p[0], p[1]) for p in (line.split("\t") for line in lines if line.strip()) if int(p[2]) > 0]


def _sentence(doc: str, texts: dict[str, str]) -> tuple[str, list[str]]:
    """The longest sentence of ``doc`` (>= 6 words) that occurs in no other document, else its longest sentence
    (the demo plants duplicate documents), and the documents holding it."""
    sentences = [
        s
        for s in sorted(re.split(r"(?<=[.!?])\s+", texts[doc]), key=len, reverse=True)
        if len(s.split()) >= 6
    ]
    holders = [[d for d, t in texts.items() if s in t] for s in sentences]
    for s, docs in zip(sentences, holders, strict=True):
        if docs == [doc]:
            return s, docs
    return sentences[0], holders[0]


def _typos(s: str) -> str:
    """``s`` with two typos (the middle letters of its two longest words swapped), so neither the exact nor the
    normalised search finds it."""
    words = s.split(" ")
    for i in sorted(range(len(words)), key=lambda j: -len(words[j]))[:2]:
        w, m = words[i], len(words[i]) // 2
        words[i] = w[: m - 1] + w[m] + w[m - 1] + w[m + 1 :]
    return " ".join(words)


def golden_examples() -> tuple[list[dict], dict[str, str], set[tuple[str, str]]]:
    """``[{"query_id", "query", "reference_contexts", "reference_answer"}]``, the kind of match expected of each
    context (keyed ``"QUERY_ID#N"``; a sentence held by several documents is left exact, kind ``ambiguous``) and
    the (query, document) pairs the contexts should map to."""
    texts, queries = demo_texts(), demo_queries()
    by_query: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    expected: set[tuple[str, str]] = set()
    for n, (q, d) in enumerate(demo_pairs()):
        s, holders = _sentence(d, texts)
        expected.update((q, h) for h in holders)
        kind = "approximate" if n % 5 == 4 else "normalised" if n % 7 == 6 else "exact"
        kind = kind if len(holders) == 1 else "ambiguous"
        if kind == "approximate":
            s = _typos(s)
        elif kind == "normalised":
            s = "  ".join(s.upper().split(" "))
        kinds[f"{q}#{len(by_query.setdefault(q, []))}"] = kind
        by_query[q].append(s)
    examples = [
        {"query_id": q, "query": queries[q], "reference_contexts": refs, "reference_answer": refs[0]}
        for q, refs in by_query.items()
    ]
    for q, text, ctx in ABSENT:
        examples.append({"query_id": q, "query": text, "reference_contexts": [ctx], "reference_answer": ctx})
        kinds[f"{q}#0"] = "unmatched"
    return examples, kinds, expected
