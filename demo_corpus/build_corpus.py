"""Write the demo data set (corpus.jsonl, queries.jsonl, qrels/test.tsv, planted.json) from ``source/``.

Run from the repository root:  python demo_corpus/build_corpus.py

The texts live in ``demo_corpus/source/*.py`` (written for this project, CC0). This script only assembles them:
it derives the near-duplicate pages (archived / copied versions of a page, used to plant the "label gap"
situation), checks the invariants the demo relies on (unique ids, 60-200 words per document, 60-400 for the long
pages of ``source/docs_long.py``, every judged
document exists, near-duplicates keep >= 90% of their words) and writes the BEIR files. No model is needed;
``make_runs.py`` then produces the runs and ``check_situations.py`` measures what actually happened.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from source import docs_api, docs_bill, docs_gen, docs_hr, docs_it, docs_long, docs_sec  # noqa: E402
from source.queries import QUERIES  # noqa: E402

# Near-duplicates: (new id, id of the page it copies, new title, moved, substitutions).
# The duplicate is the same page in another layout: the last `moved` sentences of the judged page (the part that
# answers the query) stand first. Otherwise the sentences are identical, except for the listed substitutions.
DUPLICATES: list[tuple[str, str, str, int, list[tuple[str, str]]]] = [
    (
        "hr-0034",
        "hr-0002",
        "Harbor self-service basics (archived 2023)",
        2,
        [("Payslips appear in Harbor on the 23rd", "Payslips appear in Harbor on the 25th")],
    ),
    ("api-0034", "api-0006", "API client best practices (v2 docs, archived)", 2, []),
    (
        "it-0038",
        "it-0037",
        "SRE team handbook (archived 2023)",
        2,
        [("We plan in two-week cycles", "We plan in three-week cycles")],
    ),
    ("hr-0036", "hr-0035", "Working from home: practical guide (copy in Engineering space)", 1, []),
    ("bill-0034", "bill-0033", "Support agent handbook (copy in Billing space)", 2, []),
]

# The page templates of the HR and Security wiki spaces open every page with a header line. It is realistic, and it
# is what makes chunk truncation bite: the first 60 words of these pages contain the header, so details further down
# are never indexed by the "production" run.
SPACE_HEADERS = {
    "hr": "Applies to: all employees of Quaystone Labs in every country, unless a local page says otherwise. "
    "Owner: People team, reviewed every January.",
    "sec": "Security policy page. Applies to: all employees, contractors and company systems. Owner: Security team; "
    "questions go to #sec-help.",
}

AREAS = {
    "it": "IT operations",
    "hr": "HR policy",
    "sec": "Security",
    "api": "Relay public REST API",
    "bill": "Billing, finance and customer support",
    "gen": "Company-wide (hub pages)",
}


def _sentences(text: str) -> list[str]:
    """Split after '.', '!' or '?' followed by a space and a capital letter; good enough for our own texts."""
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if s]


def word_overlap(a: str, b: str) -> float:
    """Share of words kept, in order: matching words (difflib on word lists) / words of the longer text."""
    wa, wb = a.split(), b.split()
    sm = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    return sum(block.size for block in sm.get_matching_blocks()) / max(len(wa), len(wb))


def bag_overlap(a: str, b: str) -> float:
    """Share of words kept, ignoring order: size of the multiset intersection / words of the longer text."""
    ca, cb = Counter(a.split()), Counter(b.split())
    return sum((ca & cb).values()) / max(sum(ca.values()), sum(cb.values()))


def build_docs() -> list[dict[str, str]]:
    docs = []
    for module in (docs_it, docs_hr, docs_sec, docs_api, docs_bill, docs_gen, docs_long):
        for doc_id, title, text in module.DOCS:
            header = SPACE_HEADERS.get(doc_id.split("-")[0])
            docs.append({"_id": doc_id, "title": title, "text": f"{header} {text}" if header else text})
    by_id = {d["_id"]: d for d in docs}
    for new_id, base_id, title, moved, subs in DUPLICATES:
        sentences = _sentences(by_id[base_id]["text"])
        text = " ".join([*sentences[-moved:], *sentences[:-moved]])
        for old, new in subs:
            if old not in text:
                raise SystemExit(f"duplicate {new_id}: substitution {old!r} not found in {base_id}")
            text = text.replace(old, new)
        docs.append({"_id": new_id, "title": title, "text": text})
    docs.sort(key=lambda d: (list(AREAS).index(d["_id"].split("-")[0]), d["_id"]))
    return docs


def check(docs: list[dict[str, str]]) -> None:
    ids = [d["_id"] for d in docs]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate document ids")
    long_pages = {doc_id for doc_id, _, _ in docs_long.DOCS}
    for d in docs:
        n = len(d["text"].split())
        low, high = (60, 400) if d["_id"] in long_pages else (60, 200)
        if not low <= n <= high:
            raise SystemExit(f"{d['_id']}: {n} words, expected {low}-{high}")
    known = set(ids)
    qids = [q[0] for q in QUERIES]
    if len(qids) != len(set(qids)):
        raise SystemExit("duplicate query ids")
    for qid, _text, _area, style, rels, _tags in QUERIES:
        if style not in ("user-words", "jargon"):
            raise SystemExit(f"{qid}: bad style {style}")
        for doc_id, rel in rels.items():
            if doc_id not in known or rel not in (1, 2):
                raise SystemExit(f"{qid}: bad judgement {doc_id}={rel}")
    by_id = {d["_id"]: d for d in docs}
    for new_id, base_id, *_ in DUPLICATES:
        ov = bag_overlap(by_id[base_id]["text"], by_id[new_id]["text"])
        if ov < 0.90:
            raise SystemExit(f"{new_id} keeps only {ov:.1%} of the words of {base_id}")


def main() -> None:
    docs = build_docs()
    check(docs)
    with open(HERE / "corpus.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(HERE / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text, area, style, _rels, _tags in QUERIES:
            f.write(json.dumps({"_id": qid, "text": text, "metadata": {"area": area, "style": style}}) + "\n")
    (HERE / "qrels").mkdir(exist_ok=True)
    with open(HERE / "qrels" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, _text, _area, _style, rels, _tags in QUERIES:
            for doc_id, rel in rels.items():
                f.write(f"{qid}\t{doc_id}\t{rel}\n")
    by_id = {d["_id"]: d for d in docs}
    planted: dict[str, list] = {}
    for qid, _text, _area, _style, rels, tags in QUERIES:
        for tag in tags:
            planted.setdefault(tag, []).append({"query_id": qid, "relevant": sorted(rels)})
    planted["near-duplicates"] = [
        {
            "duplicate": new_id,
            "of": base_id,
            "words_kept_in_order": round(word_overlap(by_id[base_id]["text"], by_id[new_id]["text"]), 3),
            "words_kept_any_order": round(bag_overlap(by_id[base_id]["text"], by_id[new_id]["text"]), 3),
        }
        for new_id, base_id, *_ in DUPLICATES
    ]
    planted["hubs"] = ["gen-0001", "gen-0002"]
    (HERE / "planted.json").write_text(json.dumps(planted, indent=1) + "\n", encoding="utf-8")
    n_rel = sum(len(q[4]) for q in QUERIES)
    print(f"{len(docs)} documents, {len(QUERIES)} queries, {n_rel} judgements")


if __name__ == "__main__":
    main()
