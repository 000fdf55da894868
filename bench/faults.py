"""Injected faults: known causes put into a real collection, so the taxonomy is measured against the truth.

:func:`inject` takes a BEIR folder and a healthy run of one kind (``dense``: exact dense search with the model;
``lexical``: this tool's BM25), picks golden queries the run answers (a relevant document in its top k), keeps one
target per picked query (the best-ranked relevant document; the query's other judgements are dropped, so the query
fails exactly when its target leaves the top k) and breaks each picked query by one cause:

================== ==========================================================================================
class              the fault
================== ==========================================================================================
index_gap          the target is dropped from the run (an ANN index that lost it); the corpus is intact
near_miss          dense: a share of the target's words (the smallest of 10%, 20%, ... 90% that works) is replaced by
                   words of other documents until the model ranks it in (k, 2k] (every passage alike: no passage
                   is better than the whole); lexical: the run moves the target to a rank in (k, 2k] (a lexical
                   engine that weighs the terms otherwise than this tool's BM25)
missing_document   the target is deleted from the corpus (and from the run)
label_gap          an unjudged copy of the target (same text, new id) takes its rank; the target leaves the run
truncated          ~300 words of another document are put before the target's text (the answer is beyond the
                   model's window); the run is the run kind's search over the changed corpus
diluted            the target keeps its first three sentences (one passage, defaults.PASSAGE_SENTENCES), followed by
                   ~200 words of sentences of other documents; the run is searched again over the changed corpus
vocabulary_mismatch dense: the query becomes a code that only the target holds (BM25 finds it, the model cannot);
                   lexical: every word of the target whose stem is a query term is deleted (BM25 cannot find
                   it; the rest of its meaning is kept for the model)
filtered_out       the query's metadata filter excludes the target (``filters.json``: ``{"doc_id": {"$nin":
                   [target]}}``) and the run, a filtered search, does not return it
split              a collection of its own (``classes=("split",)``): a chunk corpus (every document one chunk, with
                   its offsets under ``metadata``) and a golden set of reference spans (``golden.jsonl``); the target's
                   text is cut into two chunks ``<id>#0`` and ``<id>#1`` at a sentence boundary, the last sentences in
                   ``#1`` (for a dense run the fewest that the model ranks beyond k alone; for a lexical run the last
                   one), and the query's reference span runs from the middle of ``#1``'s length before the cut to the
                   end: ``#1`` holds two thirds of it (the target), ``#0`` a third, less than half of itself (not
                   relevant); merged, the two are the document the healthy run found. The other healthy queries keep
                   their target's whole text as their span (hits, for the calibration)
================== ==========================================================================================

The changed collection is written as a BEIR folder with the run beside it (``run.trec``), the metadata filters
(``filters.json``) and the truth (``injected.json``), so the diagnosis reads it as a user's data (the split collection:
``corpus.jsonl`` of chunks and ``golden.jsonl``, :func:`load_injected`). :func:`score` reads a diagnosis and the remedied runs
and gives, per injected class, the precision and recall of the classification (over the injected pairs) and the share
of its injected failures that the class's own remedy recovers (hit at k).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import diagnose
from diagnose.defaults import PASSAGE_SENTENCES
from diagnose.lexical import TOKEN_RE, tokenize

CLASSES = (
    "index_gap",
    "near_miss",
    "missing_document",
    "label_gap",
    "truncated",
    "diluted",
    "vocabulary_mismatch",
    "filtered_out",
    "split",
)
# which classes each run kind can be given: truncated and diluted are causes of a single-vector (dense) run; split
# is injected in a collection of its own (a chunk corpus), so it is not among the classes of one collection
KIND_CLASSES = {
    "dense": tuple(c for c in CLASSES if c != "split"),
    "lexical": (
        "index_gap",
        "near_miss",
        "missing_document",
        "label_gap",
        "vocabulary_mismatch",
        "filtered_out",
    ),
}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Injected:
    """One injected fault: the query, its target (the document it should find) and the class injected."""

    query_id: str
    doc_id: str
    cls: str


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _ranked(run: Any) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in zip(run.df["query_id"], run.df["doc_id"], run.df["score"], strict=True):
        out.setdefault(str(q), []).append((str(d), float(s)))
    return out


def _healthy(ds: Any, kind: str, k: int, encoder: Any, cache_dir: Path | None, depth: int) -> tuple[Any, Any]:
    """``(analysis, run)``: the run kind's search over ``ds`` (exact dense search or this tool's BM25)."""
    base = "dense" if kind == "dense" else "bm25"
    a = diagnose.Analysis(ds, {}, k=k, baselines=(base,), encoder=encoder, cache_dir=cache_dir, depth=depth)
    return a, a.baseline_runs()[base]


def _pushed_below(
    a: Any, query_id: str, doc_id: str, text: str, k: int, rng: random.Random, words: list[str]
) -> str | None:
    """``text`` with the smallest share of its words replaced (10%, 20%, ... 90%) that makes the model rank the
    document in (k, 2k] for the query; None when no share does."""
    space = a.space
    qv = space.query_vec(query_id)
    others = space.doc_vecs @ qv
    others = np.delete(others, space.doc_row[doc_id])
    toks = text.split()
    order = list(range(len(toks)))
    rng.shuffle(order)
    for share in [i / 10 for i in range(1, 10)]:
        changed = list(toks)
        for i in order[: int(share * len(toks))]:
            changed[i] = rng.choice(words)
        new = " ".join(changed)
        cos = float(a.encoder.encode([new])[0] @ qv)
        rank = 1 + int((others > cos).sum())
        if k < rank <= 2 * k:
            return new
        if rank > 2 * k:
            return None
    return None


def _filler(docs: Mapping[str, str], avoid: set[str], rng: random.Random, words: int) -> str:
    """About ``words`` words of sentences from documents not in ``avoid``."""
    out: list[str] = []
    ids = sorted(set(docs) - avoid)
    while len(" ".join(out).split()) < words:
        text = docs[rng.choice(ids)]
        out.extend(s for s in _SENTENCE.split(text) if s.strip())
    return " ".join(" ".join(out).split()[:words])


def inject(
    data: Path,
    out: Path,
    *,
    kind: str = "dense",
    k: int = 10,
    per_class: int = 10,
    seed: int = 0,
    encoder: Any = None,
    cache_dir: Path | None = None,
    split: str = "test",
    depth: int = 100,
    classes: Sequence[str] | None = None,
) -> list[Injected]:
    """Write the collection of ``data`` with faults injected into ``out`` (a BEIR folder with ``run.trec``,
    ``filters.json`` and ``injected.json``; with ``classes=("split",)`` a chunk corpus and ``golden.jsonl``);
    returns the truth. ``encoder``: the model (None: the bundled default)."""
    rng = random.Random(seed)
    classes = tuple(classes or KIND_CLASSES[kind])
    chunked = "split" in classes
    if chunked and classes != ("split",):
        raise ValueError("split is injected in a collection of its own: classes=('split',)")
    ds = diagnose.load(data, split=split)
    a0, run0 = _healthy(ds, kind, k, encoder, cache_dir, depth)
    healthy = _ranked(run0)
    qrels = ds.qrels.df
    rel = qrels[qrels["relevance"] > 0]
    relevant: dict[str, set[str]] = {}
    for q, d in zip(rel["query_id"], rel["doc_id"], strict=True):
        relevant.setdefault(str(q), set()).add(str(d))
    # a healthy query: its best-ranked relevant document is in the top k; the target is that document
    pool = []
    for q in sorted(relevant):
        top = [d for d, _ in healthy.get(q, [])[:k]]
        hits = [d for d in top if d in relevant[q]]
        if hits:
            pool.append((q, hits[0]))
    rng.shuffle(pool)
    # one target per document: a document changed for one query must not be another picked query's target
    picked: list[tuple[str, str]] = []
    used: set[str] = set()
    for q, d in pool:
        if d not in used:
            picked.append((q, d))
            used.add(d)
    need = per_class * len(classes)
    if len(picked) < need:
        per_class = len(picked) // len(classes)
    truth = [
        Injected(q, d, cls)
        for i, cls in enumerate(classes)
        for q, d in picked[i * per_class : (i + 1) * per_class]
    ]
    docs = {str(r["_id"]): r for r in _read_jsonl(Path(data) / "corpus.jsonl")}
    texts = {i: (r.get("title", "") + " " + r.get("text", "")).strip() for i, r in docs.items()}
    queries = {str(r["_id"]): r for r in _read_jsonl(Path(data) / "queries.jsonl")}
    targets = {t.doc_id for t in truth}
    vocabulary = sorted({w for t in texts.values() for w in t.split()})
    # the split collection's golden set: a reference span per query (the other healthy queries: the whole text)
    contexts = {q: docs[d].get("text", "") for q, d in picked if d not in targets} if chunked else {}
    for t in list(truth):
        if t.cls == "near_miss" and kind == "dense":
            r = docs[t.doc_id]
            new = _pushed_below(a0, t.query_id, t.doc_id, texts[t.doc_id], k, rng, vocabulary)
            if new is None:  # no share of replaced words lands it in (k, 2k]: not injected
                truth.remove(t)
                continue
            docs[t.doc_id] = {**r, "title": "", "text": new}
        elif t.cls == "missing_document":
            docs.pop(t.doc_id)
        elif t.cls == "label_gap":
            docs[f"{t.doc_id}~copy"] = {**docs[t.doc_id], "_id": f"{t.doc_id}~copy"}
        elif t.cls == "truncated":
            pre = _filler(texts, targets | relevant[t.query_id], rng, 300)
            docs[t.doc_id] = {**docs[t.doc_id], "title": "", "text": f"{pre} {texts[t.doc_id]}"}
        elif t.cls == "diluted":
            keep = " ".join(_SENTENCE.split(texts[t.doc_id])[:PASSAGE_SENTENCES])
            pad = _filler(texts, targets | relevant[t.query_id], rng, 200)
            docs[t.doc_id] = {**docs[t.doc_id], "title": "", "text": f"{keep.rstrip('.')}. {pad}"}
        elif t.cls == "split":
            cut = _split_cut(a0, t, docs[t.doc_id].get("text", ""), k, kind)
            if cut is None:  # too few sentences, or no tail the model misses alone: not injected
                truth.remove(t)
                continue
            text = docs.pop(t.doc_id).get("text", "")
            for part, (lo, hi) in enumerate(((0, cut), (cut, len(text)))):
                cid = f"{t.doc_id}#{part}"
                docs[cid] = {
                    "_id": cid,
                    "title": "",
                    "text": text[lo:hi],
                    "metadata": _offsets(t.doc_id, lo, hi),
                }
            truth[truth.index(t)] = Injected(t.query_id, f"{t.doc_id}#1", "split")
            contexts[t.query_id] = text[cut - (len(text) - cut) // 2 :]
        elif t.cls == "vocabulary_mismatch" and kind == "dense":
            code = f"zq{rng.randrange(10**6):06d}x"
            docs[t.doc_id] = {**docs[t.doc_id], "text": f"{docs[t.doc_id].get('text', '')} {code}"}
            queries[t.query_id] = {**queries[t.query_id], "text": code}
        elif t.cls == "vocabulary_mismatch":
            r = docs[t.doc_id]
            stems = set(tokenize([queries[t.query_id]["text"]])[0])
            docs[t.doc_id] = {
                **r,
                "title": _without_stems(r.get("title", ""), stems),
                "text": _without_stems(r.get("text", ""), stems),
            }
    out = Path(out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    if chunked:  # every other document one chunk of itself
        for i, r in docs.items():
            if "#" not in i or "metadata" not in r:
                docs[i] = {**r, "metadata": _offsets(i, 0, len(r.get("text", "")))}
        _write_jsonl(
            out / "golden.jsonl",
            [
                {"query_id": q, "query": queries[q]["text"], "reference_contexts": [c]}
                for q, c in contexts.items()
                if c.strip()
            ],
        )
    _write_jsonl(out / "corpus.jsonl", list(docs.values()))
    _write_jsonl(out / "queries.jsonl", list(queries.values()))
    # the metadata filter of each filtered_out query: every document but its target
    (out / "filters.json").write_text(
        json.dumps({t.query_id: {"doc_id": {"$nin": [t.doc_id]}} for t in truth if t.cls == "filtered_out"}),
        encoding="utf-8",
    )
    target_of = {t.query_id: t.doc_id for t in truth}
    lines = ["query-id\tcorpus-id\tscore\n"]
    for q, d, g in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True):
        q, d = str(q), str(d)
        if q in target_of and d != target_of[q]:
            continue  # the picked query keeps its target only (a deleted target stays judged: missing_document)
        lines.append(f"{q}\t{d}\t{int(g)}\n")
    (out / "qrels" / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    # the run: the kind's search over the changed collection (a changed text or query changes its ranking),
    # then the faults that live in the run
    changed = load_injected(out, split=split)
    lists = _ranked(_healthy(changed, kind, k, encoder, cache_dir, depth)[1])
    for t in truth:
        ranked = [(d, s) for d, s in lists.get(t.query_id, []) if d != t.doc_id or t.cls not in _LEAVES]
        if t.cls == "near_miss" and kind != "dense":
            score = dict(lists.get(t.query_id, [])).get(t.doc_id, 0.0)
            ranked = [(d, s) for d, s in ranked if d != t.doc_id]
            ranked.insert(rng.randrange(k, 2 * k), (t.doc_id, score))
        elif t.cls == "label_gap":
            copy = f"{t.doc_id}~copy"
            ranked = [(d, s) for d, s in ranked if d != copy]
            ranked.insert(0, (copy, 0.0))
        lists[t.query_id] = _rescored(ranked)
    with open(out / "run.trec", "w", encoding="utf-8") as f:
        for q, ranked in lists.items():
            for r, (d, s) in enumerate(ranked, 1):
                f.write(f"{q} Q0 {d} {r} {s:.6f} injected\n")
    (out / "injected.json").write_text(
        json.dumps({"kind": kind, "k": k, "seed": seed, "faults": [asdict(t) for t in truth]}, indent=1),
        encoding="utf-8",
    )
    return truth


_LEAVES = {"index_gap", "missing_document", "label_gap", "filtered_out"}  # the target leaves the run


def load_injected(out: Path, *, split: str = "test", runs: Sequence[Any] = ()) -> Any:
    """The injected collection in ``out`` as a :class:`diagnose.Dataset`: a BEIR folder, or the split collection's
    chunk corpus with its golden set of spans."""
    out = Path(out)
    if (out / "golden.jsonl").is_file():
        return diagnose.load(
            corpus=out / "corpus.jsonl", qrels=out / "golden.jsonl", parent_field="parent", runs=runs
        )
    return diagnose.load(out, split=split, runs=runs)


def _offsets(parent: str, start: int, end: int) -> dict[str, Any]:
    """A chunk's metadata: its document and its character offsets in the document's text."""
    return {"parent": parent, "start": start, "end": end}


def _split_cut(a: Any, t: Injected, text: str, k: int, kind: str) -> int | None:
    """Where to cut the target's text for the split fault (module docstring): the start of its last sentence(s),
    the tail shorter than the head; None when none works."""
    starts = [m.end() for m in _SENTENCE.finditer(text)]
    if len(starts) < 2:
        return None
    cuts = [
        c for c in reversed(starts) if len(text) - c < c
    ]  # the last sentence, the last two, ... (tail < head)
    if kind != "dense":
        return cuts[0] if cuts else None
    space = a.space
    qv = space.query_vec(t.query_id)
    others = np.delete(space.doc_vecs @ qv, space.doc_row[t.doc_id])
    for c in cuts:
        cos = float(a.encoder.encode([text[c:]])[0] @ qv)
        if 1 + int((others > cos).sum()) > k:
            return c
    return None


def _without_stems(text: str, stems: set[str]) -> str:
    """``text`` without every word whose stem (this tool's tokenizer: BM25's) is in ``stems``: "statin" goes with
    "statins", so BM25 finds none of the query's terms in it."""
    return TOKEN_RE.sub(lambda m: "" if set(tokenize([m.group()])[0]) & stems else m.group(), text)


def _rescored(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Strictly decreasing scores in list order (a run file's order is its scores')."""
    n = len(ranked)
    return [(d, float(n - i)) for i, (d, _) in enumerate(ranked)]


@dataclass(frozen=True)
class ClassScore:
    """One injected class: how many were injected, classified as it (of them), precision and recall over the
    injected pairs, and how many of its injected failures its own remedy recovers (hit at k)."""

    cls: str
    injected: int
    failed: int
    precision: float | None
    recall: float | None
    remedy: str
    recovered: int | None
    confusion: dict[str, int]

    @property
    def recovered_share(self) -> float | None:
        return None if self.recovered is None or not self.failed else self.recovered / self.failed


def score(truth: Sequence[Injected], analysis: Any, run: str, k: int) -> list[ClassScore]:
    """Per injected class: the classification of its (query, target) pairs and its remedy's recovery."""
    diag = analysis.diagnosis(run, k=k)
    cls_of = {(f.query_id, f.doc_id): f.cls for f in diag.failures}
    predicted = {(t.query_id, t.doc_id): cls_of.get((t.query_id, t.doc_id), "not failed") for t in truth}
    remedies = analysis.remedies(run, k=k)
    kind = analysis.run_kind(run, k=k).kind
    from diagnose.whatif.remedies import remedy_for

    out = []
    for c in sorted({t.cls for t in truth}, key=CLASSES.index):
        mine = [t for t in truth if t.cls == c]
        said = [p for p, v in predicted.items() if v == c]
        right = sum(predicted[(t.query_id, t.doc_id)] == c for t in mine)
        confusion: dict[str, int] = {}
        for t in mine:
            v = predicted[(t.query_id, t.doc_id)]
            confusion[v] = confusion.get(v, 0) + 1
        failed = [t for t in mine if predicted[(t.query_id, t.doc_id)] != "not failed"]
        rid = remedy_for(c, kind).id
        fixed = remedies.runs.get(rid)
        recovered = None
        if fixed is not None:
            top = _ranked(fixed)
            recovered = sum(t.doc_id in [d for d, _ in top.get(t.query_id, [])[:k]] for t in failed)
        out.append(
            ClassScore(
                c,
                len(mine),
                len(failed),
                right / len(said) if said else None,
                right / len(mine) if mine else None,
                rid,
                recovered,
                confusion,
            )
        )
    return out


def table(scores: Sequence[ClassScore]) -> str:
    """A Markdown table of the scores."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    rows = [
        "| class | injected | failed | precision | recall | remedy | recovered | classified as |",
        "|---" * 8 + "|",
    ]
    for s in scores:
        rec = "n/a" if s.recovered is None else f"{s.recovered}/{s.failed} ({pct(s.recovered_share)})"
        conf = ", ".join(f"{c} {n}" for c, n in sorted(s.confusion.items(), key=lambda kv: -kv[1]))
        rows.append(
            f"| {s.cls} | {s.injected} | {s.failed} | {pct(s.precision)} | {pct(s.recall)} | {s.remedy} | {rec} | "
            f"{conf} |"
        )
    return "\n".join(rows)
