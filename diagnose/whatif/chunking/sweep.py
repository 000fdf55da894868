"""Measuring each chunking of the grid against the documents as they are (the module docstring of
:mod:`diagnose.whatif.chunking` defines every number)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from diagnose import defaults
from diagnose.cache import atomic_write_bytes, default_cache_root, text_key
from diagnose.data import Dataset, Run, Span, document_text
from diagnose.embed import EmbeddingCache, dense_search, embed_texts
from diagnose.metrics import evaluate
from diagnose.metrics.context import Piece, context_scores, document_spans, whole_documents
from diagnose.retrievers.results import document_list
from diagnose.runtime.lazy import pandas as pd
from diagnose.runtime.progress import Reporter
from diagnose.whatif.chunking.grid import ChunkingConfig
from diagnose.whatif.chunking.splits import SplitCache
from diagnose.whatif.chunking.splitter import encoded_texts, model_tokenizer
from diagnose.whatif.gain import measure_gain

#: Version of the cached measurement's layout (part of its key: another version is measured again).
CACHE_FORMAT = 1


@dataclass(frozen=True)
class ChunkingPoint:
    """One chunking measured (``size``/``overlap`` None: the documents as they are). ``metrics``: ``recall@K``,
    ``ndcg@K``, ``hit_rate@K``, ``context_precision@K``, ``context_recall@K``, ``tokens@K``; ``per_query``: those
    per golden query."""

    size: int | None
    overlap: int | None
    chunks: int
    metrics: dict[str, float]
    encode_s: float
    index_mb: float
    per_query: pd.DataFrame = field(repr=False, compare=False)
    recovers: tuple[str, ...] = ()
    breaks: tuple[str, ...] = ()
    ndcg_diff: float = 0.0
    p_value: float = 1.0
    pareto: bool = False
    cached: bool = False

    @property
    def label(self) -> str:
        return "as they are" if self.size is None else f"{self.size}/{self.overlap}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size, "overlap": self.overlap, "chunks": self.chunks, **self.metrics,
            "encode_s": self.encode_s, "index_mb": self.index_mb, "recovers": len(self.recovers),
            "breaks": len(self.breaks), "recovered_queries": list(self.recovers), "broken_queries": list(self.breaks),
            "ndcg_diff": self.ndcg_diff, "p_value": self.p_value, "pareto": self.pareto, "cached": self.cached,
        }  # fmt: skip


@dataclass(frozen=True)
class ChunkingSweep:
    """The documents as they are (``current``) and every configuration measured, at cutoff ``k``."""

    k: int
    current: ChunkingPoint
    configurations: tuple[ChunkingPoint, ...]
    lengths: str = "model tokens"  # what size and overlap count
    reference: str = "spans"  # "spans" (the golden set's reference contexts) or "documents"

    def to_dict(self) -> dict[str, Any]:
        """``{"k", "lengths", "reference", "current": {...}, "configurations": [{...}]}`` (``diagnose chunking
        --format json``)."""
        return {
            "k": self.k, "lengths": self.lengths, "reference": self.reference,
            "current": self.current.to_dict(), "configurations": [p.to_dict() for p in self.configurations],
        }  # fmt: skip

    def front(self, metric: str) -> dict[str, bool]:
        """Point label -> on the Pareto front of ``metric`` (any of the metrics) against tokens at k."""
        return {p.label: p.pareto for p in with_pareto([self.current, *self.configurations], self.k, metric)}

    def table(self) -> pd.DataFrame:
        """One row per point, the documents as they are first."""
        rows = [p.to_dict() | {"chunking": p.label} for p in (self.current, *self.configurations)]
        df = pd.DataFrame(rows).drop(columns=["recovered_queries", "broken_queries"])
        return df[["chunking", *[c for c in df.columns if c != "chunking"]]]


# ------------------------------------------------------------------------------------------ the inputs, once


@dataclass
class SweepInputs:
    """What every configuration reads: the texts, the golden set and its references, the query vectors (lazily:
    a sweep served from the cache needs no model), the current run, and the cache key of all of it."""

    dataset: Dataset
    encoder: Any
    k: int
    query_ids: list[str]
    query_vecs: Callable[[], np.ndarray]
    current_run: Callable[[], Run]
    cache_dir: Path | None = None
    reporter: Reporter | None = None
    n_resamples: int = defaults.RESAMPLES
    seed: int = defaults.SEED
    # BEIR's convention (diagnose.metrics.identical): a query's own document (and its chunks) left out of its lists
    ignore_identical_ids: bool = False

    def __post_init__(self) -> None:
        corpus = self.dataset.corpus
        self.doc_ids = [str(d) for d in corpus.ids]
        self.texts = [t if isinstance(t, str) else "" for t in corpus.df["text"].tolist()]
        self.titles = [t if isinstance(t, str) else "" for t in corpus.df["title"].tolist()]
        self.text_of = dict(zip(self.doc_ids, self.texts, strict=True))
        qrels = self.dataset.qrels
        self.spans: list[Span] = list(qrels.spans) or document_spans(
            qrels, {d: len(t) for d, t in self.text_of.items()}
        )
        self.reference = "spans" if qrels.spans else "documents"
        self._tokenizer: list[Any] = []
        self.key = self._fingerprint()
        self.splits = SplitCache(self._root() / "chunking" / "splits", self.encoder, lambda: self.tokenizer)

    def _fingerprint(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        for part in (
            json.dumps([CACHE_FORMAT, self.encoder.name, self.k, self.query_ids, self._query_texts()])
            + (" ignore_identical_ids" if self.ignore_identical_ids else ""),  # the key of a sweep without is kept
            *self.doc_ids, *self.texts, *self.titles,
            self.dataset.qrels.df[["query_id", "doc_id", "relevance"]].to_csv(index=False),
            json.dumps([[s.query_id, s.reference, s.doc_id, s.start, s.end] for s in self.spans]),
        ):  # fmt: skip
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()

    def _query_texts(self) -> list[str]:
        text_of = self.dataset.queries.text_of()
        return [str(text_of.get(q, "")) for q in self.query_ids]

    @property
    def tokenizer(self) -> Any:
        if not self._tokenizer:
            self._tokenizer.append(model_tokenizer(self.encoder))
        return self._tokenizer[0]

    def _root(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else default_cache_root()

    def cache_path(self, config: ChunkingConfig | None) -> Path:
        what = "current" if config is None else f"size{config.size}-overlap{config.overlap}"
        return self._root() / "chunking" / f"{self.key}-{what}.json"


# ------------------------------------------------------------------------------------------ one point


def _scores(inp: SweepInputs, run: Run, pieces: dict[str, list[Piece]]) -> pd.DataFrame:
    """Per golden query: recall, nDCG and hit rate at k (trec_eval conventions) and the span-based context
    measures of ``pieces``."""
    k = inp.k
    # the headline families (metrics.HEADLINE) without mrr, which takes no cutoff while the sweep compares
    # configurations at one k; in the order of the sweep's columns
    ev = evaluate(inp.dataset.qrels, run, [f"recall@{k}", f"ndcg@{k}", f"hit_rate@{k}"]).per_query
    ctx = context_scores(pieces, inp.spans, inp.text_of, k).per_query
    return ev.join(ctx.reindex(ev.index, fill_value=0.0))


def _chunk_lists(
    inp: SweepInputs,
    chunk_doc: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    idx: np.ndarray,
    sc: np.ndarray,
) -> tuple[Run, dict[str, list[Piece]]]:
    """The document run (each document at the rank of its best chunk: :func:`document_list`, as
    ``chunk_to_doc="max"`` does) and the top k chunks of each query as pieces."""
    k = inp.k
    rows: list[tuple[str, str, float, int]] = []
    pieces: dict[str, list[Piece]] = {}
    starts, ends = bounds
    for i, qid in enumerate(inp.query_ids):
        hits, scores = idx[i], sc[i]
        if inp.ignore_identical_ids:  # the chunks of the query's own document left out
            keep = np.array([inp.doc_ids[chunk_doc[j]] != qid for j in hits], dtype=bool)
            hits, scores = hits[keep], scores[keep]
        docs = [inp.doc_ids[chunk_doc[j]] for j in hits]
        seen: set[str] = set()
        cut = len(docs)
        for n, d in enumerate(docs):
            seen.add(d)
            if len(seen) > k:
                cut = n
                break
        items = list(zip(docs[:cut], scores[:cut].astype(float).tolist(), strict=True))
        ranked = document_list(items, None, qid)
        rows.extend((qid, d, s, r) for r, (d, s) in enumerate(ranked, start=1))
        pieces[qid] = [(docs[n], int(starts[j]), int(ends[j])) for n, j in enumerate(hits[:k])]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"])
    return Run("chunks", df, source="diagnose chunking"), pieces


@dataclass(frozen=True)
class ConfigurationChunks:
    """One configuration's chunks (:func:`split_configuration`): document index, ``[start, end)`` in its ``text``
    (int64 arrays), and what is encoded for each (``texts``)."""

    doc: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    texts: list[str]


def split_configuration(inp: SweepInputs, config: ChunkingConfig) -> ConfigurationChunks:
    """The configuration's chunks (the split cache; the documents' tokenisation shared by every configuration) and
    their encoded texts: the title in front, or the whole document's text for a first chunk the model reads as its
    document (its vector, from the embedding cache)."""
    chunk_doc, starts, ends, whole = inp.splits.split(inp.texts, config.size, config.overlap, inp.titles)
    chunk_texts = encoded_texts(inp.texts, inp.titles, chunk_doc, starts, ends)  # the title in front
    for i in np.flatnonzero(whole):
        chunk_texts[i] = document_text(inp.titles[chunk_doc[i]], inp.texts[chunk_doc[i]])
    return ConfigurationChunks(chunk_doc, starts, ends, chunk_texts)


def _encode(
    inp: SweepInputs, configs: Sequence[ChunkingConfig], chunks: Sequence[ConfigurationChunks]
) -> tuple[list[np.ndarray], list[float]]:
    """The vectors of every configuration's chunks, and each configuration's wall seconds of encoding.

    Each distinct chunk text is encoded once whatever the number of configurations holding it: configuration by
    configuration in grid order, the texts no earlier configuration held go to :func:`embed_texts` (which reads its
    on-disk cache, keyed by the text and the model and verified on read, first: what an earlier sweep or the dense
    baseline encoded is not encoded again; and sorts the rest longest first). Grouping by configuration keeps each
    forward pass's batch what it was when configurations were measured one by one, so the vectors are bit for bit
    those (a model in bfloat16 gives a text's vector a last-bit dependence on its batch's padding), and
    ``encode_s`` is still the configuration's own. One bar counts every text to encode, with the time left."""
    cache = EmbeddingCache(Path(inp.cache_dir) / "embeddings" if inp.cache_dir else None)
    known: dict[str, int] = {}  # text -> its row among the vectors of every call
    news: list[list[str]] = []
    for c in chunks:
        new = [t for t in dict.fromkeys(c.texts) if t not in known]
        known.update(zip(new, range(len(known), len(known) + len(new)), strict=True))
        news.append(new)
    bar = _encode_bar(inp, cache, configs, chunks, [t for new in news for t in new])
    rows: list[np.ndarray] = []
    seconds = []
    for new in news:
        t0 = time.perf_counter()
        rows.append(embed_texts(inp.encoder, new, cache=cache, progress=bar.next_call()))
        seconds.append(time.perf_counter() - t0)
    every = np.concatenate(rows)
    return [every[[known[t] for t in c.texts]] for c in chunks], seconds


class _Bar:
    """One ``callback(done, total)`` over the successive :func:`embed_texts` calls of :func:`_encode`: each call's
    ``done`` shifted by what the calls before it encoded, out of the texts to encode in all of them."""

    def __init__(self, update: Any, total: int) -> None:
        self.update, self.total, self.encoded = update, total, 0

    def next_call(self) -> Any:
        """The callback of the next call (False without a reporter: embed_texts draws nothing)."""
        if self.update is None:
            return False
        before = self.encoded

        def call(done: int, total: int) -> None:
            self.encoded = before + total
            self.update(min(before + done, self.total), self.total)

        return call


def _encode_bar(
    inp: SweepInputs,
    cache: EmbeddingCache,
    configs: Sequence[ChunkingConfig],
    chunks: Sequence[ConfigurationChunks],
    distinct: list[str],
) -> _Bar:
    """The bar of :func:`_encode`, out of the distinct texts its cache does not hold (without a reporter: nothing
    drawn, nothing looked up)."""
    rep = inp.reporter
    if rep is None or not distinct:
        return _Bar(None, 0)
    inp.query_vecs()  # the vector space first: the encoder's vector size is then known, without loading the model
    found, _ = cache.store(inp.encoder).get([text_key(t) for t in distinct])
    todo = int((~found).sum())
    n = sum(len(c.texts) for c in chunks)
    label = (
        f"Encoding the chunks of {len(configs)} configuration{'s' if len(configs) != 1 else ''} ({n:,} chunks, "
        f"{len(distinct):,} distinct texts, {todo:,} not cached)"
    )
    return _Bar(rep.bar(label), todo)


def _measure(
    inp: SweepInputs, config: ChunkingConfig, chunks: ConfigurationChunks, vecs: np.ndarray, encode_s: float
) -> ChunkingPoint:
    """Search the chunks' vectors exactly, rank documents by their best chunk, score."""
    chunk_doc, starts, ends = chunks.doc, chunks.starts, chunks.ends
    # deep enough for k distinct documents whatever the order: the k largest chunk counts
    deep = inp.k + 1 if inp.ignore_identical_ids else inp.k  # the query's own document may take k's chunks
    depth = max(1, int(np.sort(np.bincount(chunk_doc))[-deep:].sum()) if len(chunk_doc) else 1)
    if len(chunks.texts):
        idx, sc = dense_search(inp.query_vecs(), vecs, depth)
    else:
        idx, sc = (
            np.zeros((len(inp.query_ids), 0), dtype=np.int64),
            np.zeros((len(inp.query_ids), 0), np.float32),
        )
    run, pieces = _chunk_lists(inp, chunk_doc, (starts, ends), idx, sc)
    per_query = _scores(inp, run, pieces)
    index_mb = vecs.nbytes / 2**20
    return _point(config.size, config.overlap, len(chunks.texts), per_query, encode_s, index_mb)


def _measure_all(inp: SweepInputs, configs: Sequence[ChunkingConfig]) -> list[ChunkingPoint]:
    """Split every configuration (time left from the ones split), encode their chunks, each distinct text once
    (:func:`_encode`), then search and score each."""
    rep = inp.reporter
    chunks = []
    started = time.perf_counter()
    for n, config in enumerate(configs):
        if rep is not None:
            rep.step(
                f"Chunking the {len(inp.texts):,} documents, configuration {n + 1} of {len(configs)}: "
                f"{config.label()}" + _time_left(started, n, len(configs))
            )
        chunks.append(split_configuration(inp, config))
    vecs, seconds = _encode(inp, configs, chunks)
    points = []
    for n, (config, c, v, s) in enumerate(zip(configs, chunks, vecs, seconds, strict=True)):
        if rep is not None:
            rep.step(f"Searching and scoring configuration {n + 1} of {len(configs)}: {config.label()}")
        points.append(_measure(inp, config, c, v, s))
    return points


def _measure_current(inp: SweepInputs) -> ChunkingPoint:
    """The documents as they are: the dense run of whole documents (the analysis' own vectors)."""
    run = inp.current_run()
    per_query = _scores(inp, run, whole_documents(run.top(inp.k), inp.text_of))
    dim = int(inp.query_vecs().shape[1]) if len(inp.query_ids) else 0
    return _point(None, None, len(inp.doc_ids), per_query, 0.0, len(inp.doc_ids) * dim * 4 / 2**20)


def _point(
    size: int | None,
    overlap: int | None,
    chunks: int,
    per_query: pd.DataFrame,
    encode_s: float,
    index_mb: float,
) -> ChunkingPoint:
    metrics = {c: float(per_query[c].mean()) if len(per_query) else 0.0 for c in per_query.columns}
    return ChunkingPoint(size, overlap, chunks, metrics, round(encode_s, 3), round(index_mb, 3), per_query)


# ------------------------------------------------------------------------------------------ the cache


_FIELDS = ("size", "overlap", "chunks", "metrics", "encode_s", "index_mb")


def _read(inp: SweepInputs, config: ChunkingConfig | None) -> ChunkingPoint | None:
    """The point from its cache file (keyed by the inputs' content + the configuration), or None: no file, or an
    unreadable or foreign one (measured again and rewritten)."""
    try:
        raw = json.loads(inp.cache_path(config).read_text(encoding="utf-8"))
        if raw.get("key") == inp.key:
            per_query = pd.DataFrame(raw["per_query"]["data"], columns=raw["per_query"]["columns"])
            per_query.index = pd.Index(
                [str(q) for q in raw["per_query"]["index"]], name="query_id", dtype=object
            )
            return ChunkingPoint(**{f: raw[f] for f in _FIELDS}, per_query=per_query, cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _write(inp: SweepInputs, config: ChunkingConfig | None, point: ChunkingPoint) -> None:
    body = {f: getattr(point, f) for f in _FIELDS}
    pq = point.per_query
    # exact floats (Python's repr): pandas' to_json keeps 10 digits, and a warm ndcg_diff moved in its 11th
    pq = {"columns": list(pq.columns), "index": [str(q) for q in pq.index],
          "data": pq.to_numpy(dtype=object).tolist()}  # fmt: skip
    with contextlib.suppress(OSError):  # an unwritable cache costs the next run the time again, nothing else
        atomic_write_bytes(
            inp.cache_path(config), json.dumps(body | {"key": inp.key, "per_query": pq}).encode("utf-8")
        )


def _cached(
    inp: SweepInputs, config: ChunkingConfig | None, measure: Callable[[], ChunkingPoint]
) -> ChunkingPoint:
    """The point from its cache file, else measured and written there."""
    point = _read(inp, config)
    if point is None:
        point = measure()
        _write(inp, config, point)
    return point


# ------------------------------------------------------------------------------------------ the sweep


def _against(current: ChunkingPoint, p: ChunkingPoint, k: int, n_resamples: int, seed: int) -> ChunkingPoint:
    """``p`` with the queries it recovers / breaks (hit at k) and the paired test of nDCG@k against ``current``."""
    g = measure_gain(
        k,
        "hit",
        base_per_query=current.per_query,
        candidate_per_query=p.per_query,
        metric=f"ndcg@{k}",
        n_resamples=n_resamples,
        seed=seed,
    )
    return replace(p, recovers=g.recovered, breaks=g.broken, ndcg_diff=g.mean_diff, p_value=g.p_value)


def with_pareto(points: Sequence[ChunkingPoint], k: int, metric: str | None = None) -> list[ChunkingPoint]:
    """``points`` with ``pareto`` set: no other point sends fewer tokens at k with a higher ``metric`` (default
    nDCG@k)."""
    q, tok = metric or f"ndcg@{k}", f"tokens@{k}"
    return [
        replace(
            p, pareto=not any(o.metrics[tok] < p.metrics[tok] and o.metrics[q] > p.metrics[q] for o in points)
        )
        for p in points
    ]


def _time_left(started: float, done: int, total: int) -> str:
    if not done:
        return ""
    left = (time.perf_counter() - started) / done * (total - done)
    return f" (about {left / 60:.1f} min left)" if left >= 60 else f" (about {left:.0f} s left)"


def run_sweep(inp: SweepInputs, configs: Sequence[ChunkingConfig]) -> ChunkingSweep:
    """The documents as they are, then every configuration (each from its cache file when there; the others split
    first, then encoded and measured: :func:`_measure_all`), compared."""
    current = _cached(inp, None, lambda: _measure_current(inp))
    found = {config: _read(inp, config) for config in configs}
    todo = [config for config in configs if found[config] is None]
    for config, point in zip(todo, _measure_all(inp, todo) if todo else (), strict=True):
        _write(inp, config, point)
        found[config] = point
    points = [_against(current, found[c], inp.k, inp.n_resamples, inp.seed) for c in configs]  # type: ignore[arg-type]
    current, *points = with_pareto([current, *points], inp.k)
    lengths = "model tokens" if hasattr(inp.encoder, "loaded") else "word tokens"
    return ChunkingSweep(inp.k, current, tuple(points), lengths, inp.reference)
