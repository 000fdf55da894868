"""Is the golden set itself wrong? Signs that the judgements, not the retriever, are at fault.

- :func:`find_label_noise` -> :class:`LabelNoise`: unjudged near-duplicates of judged relevant documents in a run's
  top k, duplicate documents in the corpus, identical queries with conflicting judgements, and copies of a query's
  own text in its top k (a collection whose queries are documents).
- :func:`normalise_text`: what "the same text" means for duplicates (also read by the ``label_gap`` rule of
  :mod:`diagnose.failures`).
- :func:`hubness` -> :class:`Hubness`: documents in the top k of unusually many queries.

Also importable from :mod:`diagnose.failures`, where they lived first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from diagnose import defaults
from diagnose.data import Corpus, DataError, Dataset, Run, fields_dict
from diagnose.embed import dense_search
from diagnose.runtime.ids import fingerprints, string_bytes
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.space import VectorSpace

_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


# what [^\w\s] matches among ASCII characters: punctuation except "_", and control characters that are not spaces
_ASCII_PUNCT = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_" or chr(c).isspace())}
)


def normalise_text(text: str) -> str:
    """Lowercase, NFKC, punctuation removed, whitespace folded: what "the same text" means for duplicates."""
    text = text or ""
    if text.isascii():  # the same result without NFKC (identity on ASCII) and without regexes: ~10x faster
        return " ".join(text.lower().translate(_ASCII_PUNCT).split())
    t = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub(" ", _PUNCT.sub(" ", t)).strip()


@dataclass(frozen=True)
class LabelNoise:
    """Signs that the golden set, not the retriever, is wrong."""

    unjudged_duplicates: (
        pd.DataFrame
    )  # query_id, doc_id (unjudged, in top k), duplicate_of (judged relevant), cosine
    duplicate_documents: pd.DataFrame  # doc_id, duplicate_of, cosine, same_text
    conflicting_queries: pd.DataFrame  # query_ids (same text), text, judgements differ
    near_duplicate_search: str  # "exact" or why it was limited
    # query_id, doc_id, rank, cosine (None without vectors), same_text: a copy of the query's text in its top k
    query_copies: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=QUERY_COPY_COLUMNS))

    @property
    def n_queries_with_copies(self) -> int:
        """How many golden queries have a copy of their own text in their top k (:func:`query_copies`)."""
        return int(self.query_copies["query_id"].nunique())

    def to_dict(self) -> dict:
        """The ``label_noise`` object of ``diagnose failures --format json``; ``query_copies`` (the rows) and
        ``queries_with_copies`` (their count of distinct queries) are added only when a copy was found, so a
        report without any is the same as before they were looked for."""
        out = {
            "unjudged_duplicates": self.unjudged_duplicates.to_dict(orient="records"),
            "duplicate_documents": self.duplicate_documents.to_dict(orient="records"),
            "conflicting_queries": self.conflicting_queries.to_dict(orient="records"),
            "near_duplicate_search": self.near_duplicate_search,
        }
        if len(self.query_copies):
            out["query_copies"] = self.query_copies.to_dict(orient="records")
            out["queries_with_copies"] = self.n_queries_with_copies
        return out


QUERY_COPY_COLUMNS = ["query_id", "doc_id", "rank", "cosine", "same_text"]


def find_label_noise(
    ds: Dataset,
    run: Run,
    space: VectorSpace,
    *,
    k: int = defaults.K,
    duplicate_cosine: float = defaults.DUPLICATE_COSINE,
    max_docs_for_near_duplicates: int = 50_000,
    same_text: Sequence[tuple[int, int]] | None = None,
) -> LabelNoise:
    """Unjudged near-duplicates of judged relevant documents in the top k, duplicate documents in the corpus (exact
    normalised text always; near-duplicates by exact nearest-neighbour search when the corpus has at most
    ``max_docs_for_near_duplicates`` documents), identical queries with conflicting judgements, and the copies of
    each golden query's text in its top k (:func:`query_copies`, at ``duplicate_cosine``).
    ``same_text``: :func:`same_text_rows` of ``ds.corpus`` when already computed."""
    if ds.corpus is None or ds.queries is None:
        raise DataError("The label-noise finder needs the corpus and the queries.")
    qrels = ds.qrels.as_dict()
    unjudged = _unjudged_duplicates(qrels, run, space, k, duplicate_cosine)
    if same_text is None:
        same_text = same_text_rows(ds.corpus)
    dups, how = _duplicate_documents(ds, space, duplicate_cosine, max_docs_for_near_duplicates, same_text)
    conf = _conflicting_queries(ds, qrels)
    copies = query_copies(ds, run, space, k=k, cosine=duplicate_cosine)
    return LabelNoise(unjudged, dups, conf, how, copies)


def query_copies(
    ds: Dataset, run: Run, space: VectorSpace | None, *, k: int, cosine: float = defaults.DUPLICATE_COSINE
) -> pd.DataFrame:
    """The documents in a golden query's top k whose text is a copy of the query's: cosine (query vector against
    document vector, both from ``space``) >= ``cosine``, or the same :func:`normalise_text` (the test when either
    has no vector). A document whose id *is* the query's is left out: that is the identical-ids convention
    (:mod:`diagnose.metrics.identical`), warned about on its own. Ranks are the run's. Columns
    :data:`QUERY_COPY_COLUMNS` (``cosine`` None without vectors), in run order."""
    q_text = ds.queries.text_of()
    corpus_row = ds.corpus.index_of()
    golden = set(ds.qrels.queries_with_relevant())
    candidates = [
        (q, rank, d)
        for q, docs in run.ranked_lists().items()
        if q in golden and str(q_text.get(q, "")).strip()
        for rank, d in enumerate(docs[:k], start=1)
        if d != q and d in corpus_row
    ]
    if not candidates:
        return pd.DataFrame(columns=QUERY_COPY_COLUMNS)
    texts = ds.corpus.texts_at([corpus_row[d] for _, _, d in candidates])
    out = []
    for (q, rank, d), text in zip(candidates, texts, strict=True):
        cos = None
        if space is not None and q in space.query_row and d in space.doc_row:
            cos = float(space.query_vecs[space.query_row[q]] @ space.doc_vec(d))
        same = normalise_text(q_text[q]) == normalise_text(text)
        if same or (cos is not None and cos >= cosine):
            out.append({"query_id": q, "doc_id": d, "rank": rank, "cosine": cos, "same_text": same})
    return pd.DataFrame(out, columns=QUERY_COPY_COLUMNS)


def _unjudged_duplicates(
    qrels: dict[str, dict[str, int]], run: Run, space: VectorSpace, k: int, duplicate_cosine: float
) -> pd.DataFrame:
    """Top-k documents nobody judged that are near-duplicates of a judged relevant document of the same query."""
    rows = []
    for q, docs in run.ranked_lists().items():
        judged = qrels.get(q)
        if not judged or q not in space.query_row:
            continue
        rel = [d for d, g in judged.items() if g > 0 and d in space.doc_row]
        if not rel:
            continue
        rel_vecs = space.doc_vecs[[space.doc_row[d] for d in rel]]
        for doc in docs[:k]:
            if doc in judged or doc not in space.doc_row:
                continue
            sims = rel_vecs @ space.doc_vec(doc)
            j = int(np.argmax(sims))
            if sims[j] >= duplicate_cosine:
                rows.append({"query_id": q, "doc_id": doc, "duplicate_of": rel[j], "cosine": float(sims[j])})
    unjudged = pd.DataFrame(rows, columns=["query_id", "doc_id", "duplicate_of", "cosine"])
    return unjudged


#: documents normalised at a time by :func:`same_text_rows`
TEXT_BLOCK = 65_536


def same_text_rows(corpus: Corpus) -> list[tuple[int, int]]:
    """``(row, first row)`` of every document whose normalised text (:func:`normalise_text`, not empty) an earlier
    document of the corpus has, in corpus order, with the first such document's row.

    The corpus is read :data:`TEXT_BLOCK` documents at a time and only a 64-bit fingerprint of each normalised text
    is kept (the list of a million texts is GBs; :func:`_normalised_fingerprints`); the documents whose fingerprint
    is not unique are then compared by their texts, so a collision never makes two different texts duplicates."""
    n = len(corpus)
    digest = np.zeros(n, dtype=np.uint64)
    empty = np.zeros(n, dtype=bool)
    for lo in range(0, n, TEXT_BLOCK):
        digest[lo : lo + TEXT_BLOCK], empty[lo : lo + TEXT_BLOCK] = _normalised_fingerprints(
            corpus, slice(lo, lo + TEXT_BLOCK)
        )
    order = np.argsort(digest, kind="stable")
    same = digest[order[1:]] == digest[order[:-1]]
    shared = np.zeros(n, dtype=bool)
    shared[order[1:][same]] = True
    shared[order[:-1][same]] = True
    rows = np.flatnonzero(shared & ~empty)
    first: dict[str, int] = {}
    out: list[tuple[int, int]] = []
    for row, text in zip(rows.tolist(), corpus.texts_at(rows), strict=True):
        norm = normalise_text(text)
        if norm in first:
            out.append((row, first[norm]))
        else:
            first[norm] = row
    return out


#: byte -> what :func:`normalise_text` makes of it in an ASCII text (``lower()``, then :data:`_ASCII_PUNCT`, then
#: whitespace splits words): letters lowercased, digits and "_" kept, anything else a separator (32); bytes >= 128
#: never reach it (such texts take the Python path)
_ASCII_FOLD = np.array(
    [32 if (t := chr(c).lower().translate(_ASCII_PUNCT)).isspace() else ord(t) for c in range(128)]
    + [32] * 128,
    dtype=np.uint8,
)


def _normalised_fingerprints(corpus: Corpus, rows: slice) -> tuple[np.ndarray, np.ndarray]:
    """Per document of ``rows``: the :func:`~diagnose.runtime.ids.fingerprints` of its :func:`normalise_text` (of
    :func:`~diagnose.data.document_text`), and whether that is empty.

    ASCII texts are normalised on their bytes with numpy, mostly outside the GIL (the Python loop held it ~8 s at
    1M documents while the BM25 index was built beside it): each byte is lowercased or made a separator, a run of
    separators becomes one space, none is left at either end. The other texts go through :func:`normalise_text`
    itself (NFKC). Both give the same string, hence the same fingerprint."""
    joined = corpus.joined_texts(rows)  # "title text": separators fold, ends are trimmed
    data, starts, lens = string_bytes(joined)
    folded = _ASCII_FOLD[data]
    word = folded != 32
    # a byte is kept when it is a word byte or the first separator after one (a text's start counts as a separator)
    after_word = np.zeros(len(data) + 1, dtype=bool)
    after_word[1:] = word
    after_word[starts] = False
    keep = word | after_word[:-1]
    kept = folded[keep]
    lengths = np.add.reduceat(np.append(keep, False), starts, dtype=np.int64) if len(starts) else starts
    lengths[lens == 0] = 0  # reduceat gives an empty text the next text's first byte
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # at most one separator is left at a text's end (after its last word): drop it
    trailing = np.flatnonzero(lengths > 0)
    trailing = trailing[kept[offsets[1:][trailing] - 1] == 32]
    if len(trailing):
        drop = np.ones(len(kept), dtype=bool)
        drop[offsets[1:][trailing] - 1] = False
        kept = kept[drop]
        lengths[trailing] -= 1
        np.cumsum(lengths, out=offsets[1:])
    normalised = pa.LargeStringArray.from_buffers(len(lens), pa.py_buffer(offsets), pa.py_buffer(kept))
    digest = fingerprints(normalised).copy()
    empty = lengths == 0
    wide = np.flatnonzero(~pc.string_is_ascii(joined).to_numpy(zero_copy_only=False))
    if len(wide):
        texts = [normalise_text(t) for t in corpus.texts_at((wide + rows.start).tolist())]
        digest[wide] = fingerprints(pa.array(texts, type=pa.large_string()))
        empty[wide] = [not t for t in texts]
    return digest, empty


def _duplicate_documents(
    ds: Dataset,
    space: VectorSpace,
    duplicate_cosine: float,
    max_docs_for_near_duplicates: int,
    same_text: Sequence[tuple[int, int]],
) -> tuple[pd.DataFrame, str]:
    """Corpus documents with the same normalised text (``same_text``: :func:`same_text_rows`), then near-duplicates
    by exact search (small corpora), and how the near-duplicates were searched."""

    n_docs = len(ds.corpus)
    near = 1 < n_docs <= max_docs_for_near_duplicates
    if near:
        ids: list[str] | dict[int, str] = list(ds.corpus.ids)
    else:  # a large corpus' ids only at the duplicates' rows: its whole list is 1M Python strings at the peak
        rows = sorted({r for pair in same_text for r in pair})
        ids = dict(zip(rows, ds.corpus.df["doc_id"].iloc[rows].tolist(), strict=True))
    dup_rows = [
        {"doc_id": ids[row], "duplicate_of": ids[first], "cosine": 1.0, "same_text": True}
        for row, first in same_text
    ]
    exact_pairs = {(r["doc_id"], r["duplicate_of"]) for r in dup_rows}
    if near:
        idx, sc = dense_search(space.doc_vecs, space.doc_vecs, 2)
        how = "exact"
        for i in range(len(ids)):
            for j, s in zip(idx[i], sc[i], strict=True):
                if j == i or s < duplicate_cosine:
                    continue
                a, b = ids[i], ids[int(j)]
                if a > b or (a, b) in exact_pairs or (b, a) in exact_pairs:
                    continue  # report each pair once, from its smaller id
                dup_rows.append({"doc_id": b, "duplicate_of": a, "cosine": float(s), "same_text": False})
    else:
        how = f"exact text only: the corpus has more than {max_docs_for_near_duplicates} documents"
    dups = pd.DataFrame(dup_rows, columns=["doc_id", "duplicate_of", "cosine", "same_text"])
    return dups, how


def _conflicting_queries(ds: Dataset, qrels: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Queries with the same normalised text whose relevant documents differ."""
    qdf = ds.queries.df.assign(_norm=ds.queries.df["text"].map(normalise_text))
    conflicts = []
    for t, group in qdf.groupby("_norm", sort=False):
        if len(group) < 2 or not t:
            continue
        qids = list(group["query_id"])
        judged_sets = {q: tuple(sorted((d, g) for d, g in qrels.get(q, {}).items() if g > 0)) for q in qids}
        judged_only = {q: v for q, v in judged_sets.items() if q in qrels}
        if len(judged_only) >= 2 and len(set(judged_only.values())) > 1:
            conflicts.append(
                {
                    "query_ids": ", ".join(qids),
                    "text": group["text"].iloc[0],
                    "judgements": "; ".join(
                        f"{q}: {', '.join(d for d, _ in v) or '-'}" for q, v in judged_only.items()
                    ),
                }
            )
    conf = pd.DataFrame(conflicts, columns=["query_ids", "text", "judgements"])
    return conf


@dataclass(frozen=True)
class Hubness:
    """k-occurrence: how many queries' top k each document appears in (Radovanović et al., 2010)."""

    name: str
    k: int
    n_queries: int
    skewness: float
    hubs: pd.DataFrame  # doc_id, occurrences, share

    def to_dict(self) -> dict:
        return {**fields_dict(self), "hubs": self.hubs.to_dict(orient="records")}


def hubness(
    run: Run, *, k: int = defaults.K, n_docs: int | None = None, top: int = 10, min_share: float = 0.1
) -> Hubness:
    """Documents in the top k of unusually many queries.

    ``skewness`` is the skewness of the k-occurrence distribution over the corpus (``n_docs`` documents; documents
    never retrieved count as 0); > 1 signals hubs. ``hubs`` lists the ``top`` documents with the most occurrences whose
    share of queries is at least ``min_share``.
    """
    topk = run.top(k)
    counts = topk["doc_id"].value_counts()
    nq = int(topk["query_id"].nunique())
    n = max(int(n_docs or 0), len(counts))
    occ = np.zeros(n, dtype=np.float64)
    occ[: len(counts)] = counts.to_numpy()
    sd = occ.std()
    skew = float(((occ - occ.mean()) ** 3).mean() / sd**3) if sd > 0 else 0.0
    hubs = pd.DataFrame({"doc_id": counts.index, "occurrences": counts.to_numpy()})
    hubs["share"] = hubs["occurrences"] / max(nq, 1)
    hubs = hubs[hubs["share"] >= min_share].head(top).reset_index(drop=True)
    return Hubness(run.name, k, nq, skew, hubs)
