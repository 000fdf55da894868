"""The ``split`` class against its remedy (issue 19): does the class predict that merging neighbouring chunks fixes it?

NFCorpus cut into chunks by LangChain's ``RecursiveCharacterTextSplitter`` (500 characters, no overlap,
``add_start_index=True``, ids ``DOC#N``, the title on every chunk), and a golden set of reference contexts: for the
first 150 test queries, up to two relevant documents (grade 2 first), two consecutive sentences from the middle of
each (more than 40 characters). The dense baseline (bundled model) at k=10, hit: every missed pair with its class,
whether it is a split target (:func:`diagnose.failures.split.split_targets`), its split window cosine, the best cosine
of both of its windows, its rank under the merge remedy's scoring and its chunk's dense rank, and whether the merge
remedy recovers its query. Each rule variant is then counted on those rows: its split failed queries and how many
the merge recovers, against the other failed queries. The remedy matrix is measured twice, with the rule of the
code and with the rule before (every split target ``split``: its window cosine set to 1).

    PYTHONPATH=$PWD python bench/bench_split.py /work/shared/data/nfcorpus [--work DIR]

The passages remedy (``truncated``/``diluted``) is left out (``Analysis.passages`` returns None): 500-character
chunks fit the model's window, and its max-sim run would encode every chunk's sentence windows.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import diagnose
from diagnose import embed
from diagnose.analysis import Analysis
from diagnose.failures.split import neighbour_windows, split_targets

K = 10


def build(root: Path, work: Path) -> tuple[Path, Path]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    sp = RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=0, add_start_index=True)
    docs = {}
    with (work / "corpus.jsonl").open("w") as f:
        for line in (root / "corpus.jsonl").open():
            d = json.loads(line)
            docs[d["_id"]] = d
            for i, c in enumerate(sp.create_documents([d["text"]])):
                row = {"_id": f"{d['_id']}#{i}", "title": d["title"], "text": c.page_content}
                f.write(json.dumps(row | {"metadata": {"start_index": c.metadata["start_index"]}}) + "\n")
    rel: dict[str, list[tuple[int, str]]] = {}
    for line in list((root / "qrels" / "test.tsv").open())[1:]:
        q, d, g = line.split("\t")
        rel.setdefault(q, []).append((-int(g), d))
    queries = {r["_id"]: r["text"] for r in map(json.loads, (root / "queries.jsonl").open())}
    with (work / "golden.jsonl").open("w") as f:
        for q in list(rel)[:150]:
            refs = []
            for _, d in sorted(rel[q])[:2]:
                sents = re.split(r"(?<=[.!?])\s+", docs[d]["text"])
                pair = " ".join(sents[len(sents) // 2 : len(sents) // 2 + 2]).strip()
                if len(pair) > 40:
                    refs.append(pair)
            if refs:
                f.write(json.dumps({"query_id": q, "query": queries[q], "reference_contexts": refs}) + "\n")
    return work / "corpus.jsonl", work / "golden.jsonl"


def analyse(ds: diagnose.Dataset, cache: Path, old: bool) -> tuple[Analysis, object, dict]:
    a = Analysis(ds, baselines=["dense"], cache_dir=cache, k=K)
    if old:  # the rule before: every split target is split
        a._memo["split_cosines"] = dict.fromkeys(split_targets(ds.qrels, ds.corpus), 1.0)
    diag = a.diagnosis("dense", k=K)
    rm = a.remedy_matrix("dense", k=K)
    return a, diag, {c: {r: cell.text() for r, cell in row.items()} for c, row in rm.cells.items()}


def rows_of(a: Analysis, ds: diagnose.Dataset, diag) -> list[dict]:
    sp = a.space
    windows, pairs = neighbour_windows(ds.corpus, ds.corpus.chunks)
    wv = embed.embed_texts(a.encoder, windows, cache=embed.EmbeddingCache(a.cache_dir / "embeddings"))
    win_of: dict[str, list[int]] = {}
    for i, (x, y) in enumerate(pairs):
        win_of.setdefault(x, []).append(i)
        win_of.setdefault(y, []).append(i)
    targets, rel = split_targets(ds.qrels, ds.corpus), ds.qrels.as_dict()
    merged = a.remedies("dense", k=K).runs["merge"].ranked_lists()
    rows = []
    for f in diag.failures:
        q, d = f.query_id, f.doc_id
        ws = [float(wv[i] @ sp.query_vecs[sp.query_row[q]]) for i in win_of.get(d, [])]
        ml = merged.get(q, [])
        rows.append(
            dict(q=q, d=d, cls=f.cls, split=(q, d) in targets, spc=f.split_cosine, cos=f.cosine, kth=f.kth_cosine,
                 win=max(ws) if ws else None, mrank=ml.index(d) + 1 if d in ml else None, dense=f.dense_rank,
                 recovered=any((rel[q].get(x) or 0) > 0 for x in ml[:K]))
        )  # fmt: skip
    return rows


def variants(cal: float) -> dict:
    def has(r):
        return r["spc"] is not None

    return {
        "any split target (the rule before)": lambda r: True,
        "A: span window cosine >= calibrated threshold (the rule now)": lambda r: has(r) and r["spc"] >= cal,
        "B: best window of the target >= calibrated": lambda r: r["win"] is not None and r["win"] >= cal,
        "C: A, and the window above the chunk alone": lambda r: (
            has(r) and r["spc"] >= cal and r["spc"] > r["cos"]
        ),
        "D: span window cosine >= the run's k-th cosine": lambda r: has(r) and r["spc"] >= (r["kth"] or 2.0),
        "E: rank under the merged scoring <= k": lambda r: (r["mrank"] or 10**9) <= K,
        "F: rank under the merged scoring <= 3k": lambda r: (r["mrank"] or 10**9) <= 3 * K,
    }


def table(rows: list[dict], cal: float) -> None:
    rec = {r["q"]: r["recovered"] for r in rows}

    def pct(x: int, n: int) -> str:
        return f"{x}/{n} ({100 * x / n:.0f}%)" if n else "0/0"

    print(
        "| rule for `split` | split failed queries | merge recovers | the other failed queries | merge recovers |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, keep in variants(cal).items():
        sq = {r["q"] for r in rows if r["split"] and keep(r)}
        oq = set(rec) - sq
        a, b = sum(rec[q] for q in sq), sum(rec[q] for q in oq)
        print(f"| {name} | {len(sq)} | {pct(a, len(sq))} | {len(oq)} | {pct(b, len(oq))} |")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("nfcorpus", type=Path)
    p.add_argument("--work", type=Path, default=Path("/tmp/bench_split"))
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for cls in Analysis.__mro__:  # the passages remedy left out (module docstring)
        if "passages" in cls.__dict__:
            cls.passages = property(lambda self: None)  # type: ignore[method-assign]
            break
    corpus, golden = build(args.nfcorpus, args.work)
    t0 = time.perf_counter()
    ds = diagnose.load(corpus=corpus, qrels=golden, parent_field="DOC#N")
    a, diag, matrix = analyse(ds, args.work / "cache", old=False)
    rows = rows_of(a, ds, diag)
    _, diag_old, matrix_old = analyse(ds, args.work / "cache", old=True)
    cal = diag.calibration.calibrated
    print(f"{len(diag.failed_queries)} failed queries of {diag.n_queries} at k={K}, calibrated threshold {cal:.4f}; "
          f"{sum(r['split'] for r in rows)} of {len(rows)} missed pairs are split targets; "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
    table(rows, cal)
    print("classes before:", diag_old.class_failed_queries)
    print("classes now:   ", diag.class_failed_queries)
    print("remedy matrix before:", matrix_old)
    print("remedy matrix now:   ", matrix)
    now = [r for r in rows if r["cls"] == "split"]
    print(
        "split now: merged ranks",
        sorted(r["mrank"] or 0 for r in now),
        "dense ranks",
        sorted(r["dense"] for r in now),
    )
    (args.work / "rows.json").write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
