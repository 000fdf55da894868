"""The ``split`` failure class's evidence and its remedy's run.

**Split** (:func:`split_targets`): a reference span (:class:`~diagnose.data.Span`, located in a document of a chunk
corpus with offsets) crosses chunk boundaries: two or more chunks hold part of it and none holds it whole. The
chunk(s) holding its largest part are the span's *split targets*. Each target's **split window cosine**
(:func:`split_window_cosines`): the best cosine of the query with the windows (below) that join the target with a
neighbour holding another part of the same span (for a span over one boundary, the window that holds it whole).
Each target's **merged rank** (:func:`merged_ranks`): its rank in the merge remedy's run (below), every chunk
scored with its neighbours merged. When the run missed a split target, exact dense search does not rank the chunk
alone within k *and* its merged rank is within k, the taxonomy calls the failure ``split``
(:func:`diagnose.failures.taxonomy.classify`): the split is why it failed, since the answer put back together is
found, and the remedy recovers it. A split target that merging leaves beyond k would not be found merged either,
and falls to the next rules (issue 35: a rule on the window's cosine alone, at the calibrated threshold, called
targets whose merged ranks were 11 to 41, and its remedy recovered 1-4 of ~100). The window cosine is reported
beside it. Without spans, offsets or a model to encode the windows, the class is never used.

**Merge remedy** (:func:`merged_run`, remedy id ``merge``): re-chunking without re-indexing. Every pair of
neighbouring chunks of a document (consecutive by start offset) is one *window*: the document's text from the first
chunk's start to the second's end (the title in front, as for a chunk: :func:`~diagnose.data.document_text`),
encoded with the model. A chunk's score for a query is the best cosine among the chunk itself and the (at most two)
windows it belongs to; every chunk of the corpus is ranked by that score (exact search, ties by chunk id descending
like the dense baseline). It measures what an overlap of one chunk, or chunks twice as large served by their
members, would recover: the split answer is whole in the window around the boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from diagnose.data import ChunkMap, Corpus, Qrels, Run, document_text
from diagnose.io.chunks.corpus import chunks_by_document, document_texts
from diagnose.io.chunks.relevance import held
from diagnose.search.baselines import topk_run

#: queries scored at once by :func:`merged_run` (a block holds queries x chunks float32 scores)
QUERY_BLOCK = 256


def _split_spans(qrels: Qrels, corpus: Corpus | None) -> list[tuple[str, list[tuple[int, str]], int]]:
    """``(query_id, [(characters held, chunk_id), ...], span length)`` of every span of ``qrels`` that no chunk
    holds whole (two or more chunks hold part of it); empty without spans or offsets."""
    cmap = corpus.chunks if corpus is not None else None
    if not qrels.spans or cmap is None or not cmap.has_offsets:
        return []
    by_doc = chunks_by_document(cmap)
    out = []
    for s in qrels.spans:
        if s.doc_id is None or s.start is None or s.end is None or s.end <= s.start:
            continue
        parts = [(held(s.start, s.end, a, b), c) for a, b, c in by_doc.get(s.doc_id, [])]
        parts = [(h, c) for h, c in parts if h > 0]
        length = s.end - s.start
        if len(parts) >= 2 and all(h < length for h, _ in parts):
            out.append((s.query_id, parts, length))
    return out


def _largest(parts: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The ``(characters held, chunk_id)`` of the chunks holding a split span's largest part: its split targets."""
    most = max(h for h, _ in parts)
    return [(h, c) for h, c in parts if h == most]


def split_targets(qrels: Qrels, corpus: Corpus | None) -> dict[tuple[str, str], float]:
    """``{(query_id, chunk_id): share of the span it holds}`` for every span of ``qrels`` that no chunk holds whole
    and the chunks holding its largest part (module docstring); empty without spans or offsets."""
    out: dict[tuple[str, str], float] = {}
    for q, parts, length in _split_spans(qrels, corpus):
        for h, c in _largest(parts):
            out[(q, c)] = max(out.get((q, c), 0.0), h / length)
    return out


def split_windows(
    qrels: Qrels, corpus: Corpus | None, pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], list[int]]:
    """``{(query_id, target chunk): [i, ...]}``: for each split target (:func:`split_targets`), the indexes in
    ``pairs`` (:func:`neighbour_windows`' ``(first, second)``) of the windows joining it with a neighbour that holds
    another part of the same span."""
    window_of = {pair: i for i, pair in enumerate(pairs)}
    out: dict[tuple[str, str], list[int]] = {}
    for q, parts, _ in _split_spans(qrels, corpus):
        for _, c in _largest(parts):
            found = out.setdefault((q, c), [])
            # the other parts in the document's order, not a set's (which varies per process)
            for o in (o for _, o in parts if o != c):
                i = window_of.get((c, o), window_of.get((o, c)))
                if i is not None and i not in found:
                    found.append(i)
    return out


def split_window_cosines(
    qrels: Qrels,
    corpus: Corpus | None,
    query_vec: Callable[[str], np.ndarray | None],
    encode: Callable[[list[str]], np.ndarray],
) -> dict[tuple[str, str], float]:
    """``{(query_id, target chunk): cosine}``: the best cosine of the query with the windows of :func:`split_windows`
    (module docstring), for every split target with such a window and a query vector (``query_vec`` returns None
    without one). ``encode``: L2-normalised vectors of window texts (the model of the query vectors); only the split
    targets' windows are encoded."""
    if corpus is None or corpus.chunks is None or not corpus.chunks.has_offsets or not qrels.spans:
        return {}
    texts, pairs = neighbour_windows(corpus, corpus.chunks)
    wanted = {key: idx for key, idx in split_windows(qrels, corpus, pairs).items() if idx}
    rows = sorted({i for idx in wanted.values() for i in idx})
    if not rows:
        return {}
    vecs = np.asarray(encode([texts[i] for i in rows]), dtype=np.float32)
    row_of = {i: n for n, i in enumerate(rows)}
    out = {}
    for (q, c), idx in wanted.items():
        qv = query_vec(q)
        if qv is not None:
            out[(q, c)] = float(max(vecs[row_of[i]] @ np.asarray(qv, dtype=np.float32) for i in idx))
    return out


def merged_ranks(merged: Run, targets: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """``{(query_id, chunk_id): rank}``: each target's rank in ``merged`` (:func:`merged_run`), for the targets it
    holds (a target beyond its depth is left out: not findable merged)."""
    lists = merged.ranked_lists()
    out = {}
    for q, c in targets:
        ranked = lists.get(q, [])
        if c in ranked:
            out[(q, c)] = ranked.index(c) + 1
    return out


def neighbour_windows(corpus: Corpus, cmap: ChunkMap) -> tuple[list[str], list[tuple[str, str]]]:
    """The texts of the windows of neighbouring chunks (module docstring) and each window's ``(first, second)``
    chunk ids, document by document."""
    texts = document_texts(corpus, cmap)
    title_of = dict(zip(corpus.df["doc_id"].tolist(), corpus.df["title"].tolist(), strict=True))
    windows: list[str] = []
    pairs: list[tuple[str, str]] = []
    for doc, chunks in chunks_by_document(cmap).items():
        for (a, _, first), (_, b, second) in zip(chunks, chunks[1:], strict=False):
            windows.append(document_text(str(title_of.get(first) or ""), texts[doc][a:b]))
            pairs.append((first, second))
    return windows, pairs


def merged_run(
    query_ids: Sequence[str],
    query_vecs: np.ndarray,
    chunk_ids: Sequence[str],
    chunk_vecs: np.ndarray,
    window_vecs: np.ndarray,
    pairs: Sequence[tuple[str, str]],
    *,
    depth: int,
    name: str = "merged neighbours",
) -> Run:
    """Each query's top ``depth`` chunks by the best cosine of the chunk and of its windows (module docstring).
    Rows are L2-normalised vectors; ``window_vecs[i]`` is the window ``pairs[i]``."""
    row: Mapping[str, int] = {c: i for i, c in enumerate(chunk_ids)}
    first = np.fromiter((row[a] for a, _ in pairs), dtype=np.int64, count=len(pairs))
    second = np.fromiter((row[b] for _, b in pairs), dtype=np.int64, count=len(pairs))
    k = min(depth, len(chunk_ids))
    q = np.asarray(query_vecs, dtype=np.float32)
    idx = np.zeros((len(q), k), dtype=np.int64)
    top = np.zeros((len(q), k), dtype=np.float32)
    for lo in range(0, len(q), QUERY_BLOCK):
        qb = q[lo : lo + QUERY_BLOCK]
        s = qb @ np.asarray(chunk_vecs, dtype=np.float32).T
        if len(pairs):
            w = qb @ np.asarray(window_vecs, dtype=np.float32).T
            # a chunk is the first member of at most one window and the second of at most one
            s[:, first] = np.maximum(s[:, first], w)
            s[:, second] = np.maximum(s[:, second], w)
        part = (
            np.argpartition(-s, k - 1, axis=1)[:, :k]
            if k < s.shape[1]
            else np.tile(np.arange(k), (len(qb), 1))
        )
        sc = np.take_along_axis(s, part, axis=1)
        order = np.lexsort((part, -sc), axis=1)
        idx[lo : lo + len(qb)] = np.take_along_axis(part, order, axis=1)
        top[lo : lo + len(qb)] = np.take_along_axis(sc, order, axis=1)
    return topk_run(
        name,
        idx,
        top,
        np.asarray(chunk_ids, dtype=object),
        np.asarray(query_ids, dtype=object),
        source="exact dense search, each chunk scored with its neighbours merged",
    )
