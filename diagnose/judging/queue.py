"""Which (query, document) pairs to judge first: the unjudged documents pooled from the top k of every run and of
BM25, dense and hybrid probes, ordered by how likely each is a missed relevant document; the queue without what is
judged already, and with the texts for judging elsewhere."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from diagnose import defaults, embed
from diagnose.checks import param_error, positive_int, rank_cutoff
from diagnose.data import DataError, Dataset, Run
from diagnose.io.messages import plural_of, verb
from diagnose.judging.journal import Journal
from diagnose.metrics.identical import drop_identical_ids
from diagnose.runtime.lazy import pandas as pd
from diagnose.search import baselines as bl
from diagnose.search.space import VectorSpace

if TYPE_CHECKING:
    from diagnose.analysis import Analysis
    from diagnose.search.space import VectorSpace

QUEUE_COLUMNS = [
    "priority",
    "query_id",
    "doc_id",
    "reason",
    "score",
    "near_duplicate",
    "runs",
    "retrieved_by",
    "bm25_rank",
    "dense_rank",
    "max_cos_to_relevant",
    "closest_relevant",
]


def _discount(rank: Any) -> float:
    """nDCG's position discount ``1 / log2(1 + rank)`` (rank 1 -> 1, 2 -> 0.63, 10 -> 0.29, 100 -> 0.15); no rank -> 0."""
    if rank is None or (isinstance(rank, float) and math.isnan(rank)) or pd.isna(rank):
        return 0.0
    return 1.0 / math.log2(1.0 + float(rank))


def _golden_or_empty(analysis: Analysis) -> list[str]:
    try:
        return list(analysis.golden)
    except DataError:
        return []


def _queries_to_judge(analysis: Analysis, user_runs: Mapping[str, Run], golden: list[str]) -> list[str]:
    """Which queries the queue is about (see :func:`judge_queue`), restricted to queries with a text."""
    ds = analysis.dataset
    texts = ds.queries.text_of()
    if len(ds.qrels.df):
        wanted = list(
            dict.fromkeys(
                [*golden, *ds.qrels.query_ids(), *(q for r in user_runs.values() for q in r.query_ids())]
            )
        )
    else:
        wanted = list(texts)
    with_text = [q for q in wanted if str(texts.get(q, "")).strip()]
    kept = set(with_text)
    left_out = [q for q in wanted if q not in kept]
    if left_out:
        ds.report.add(
            "judge_query_without_text",
            f"{plural_of(len(left_out), 'query', 'queries')} to judge {verb(len(left_out), 'has', 'have')}"
            " no text in the queries file, so a judge cannot read them; left out of the judging queue",
            count=len(left_out),
            examples=left_out,
        )
    return with_text


def _query_space(analysis: Analysis, qids: list[str], golden: list[str]) -> VectorSpace:
    """Document vectors of the whole corpus and query vectors for ``qids`` (as many as can be had).

    With a golden set the analysis' own space is reused (its golden query vectors, so the dense ranks here equal its
    dense baseline's); the other queries are encoded with the analysis' encoder (embedding cache on disk), except
    with precomputed vectors, where queries without a vector get no dense rank."""

    ds = analysis.dataset
    emb = analysis.given_embeddings  # precomputed vectors, None when encoded here
    if golden:
        space = analysis.space
        extra = [q for q in qids if q not in space.query_row]
        if not extra:
            return space
        if emb is not None:
            ds.report.add(
                "judge_query_without_vector",
                f"{len(extra)} queries to judge have no precomputed vector: they get no dense rank in the queue",
                severity="info",
                count=len(extra),
                examples=extra,
            )
            return space
        texts = ds.queries.text_of()
        cache = embed.EmbeddingCache(Path(analysis.cache_dir) / "embeddings" if analysis.cache_dir else None)
        vecs = embed.embed_texts(analysis.encoder, [texts[q] for q in extra], cache=cache, report=ds.report)
        return VectorSpace.from_arrays(
            space.model,
            list(space.doc_ids),
            space.doc_vecs,
            [*space.query_ids, *extra],
            np.vstack([space.query_vecs, vecs]),
            label=space.label,
        )
    if isinstance(emb, Mapping):
        return VectorSpace.build(
            ds,
            qids,
            doc_embeddings=emb.get("doc"),
            query_embeddings=emb.get("query"),
            doc_ids=emb.get("doc_ids"),
            query_ids_file=emb.get("query_ids"),
            encoder=None if emb.get("query") else analysis.encoder,  # document vectors alone: queries encoded
            cache_dir=analysis.cache_dir,
            report=ds.report,
        )
    if emb is not None:  # a VectorSpace given whole
        return emb
    return VectorSpace.build(
        ds, qids, encoder=analysis.encoder, cache_dir=analysis.cache_dir, report=ds.report
    )


def _probe_runs(analysis: Analysis, qids: list[str], space: VectorSpace) -> dict[str, Run]:
    """BM25, exact dense and hybrid (RRF k=60) top-``depth`` runs over ``qids``, like the analysis' baselines (with
    its ``ignore_identical_ids``: searched one deeper, without the query's own document)."""

    ds = analysis.dataset
    depth, deeper = analysis.depth, analysis.search_depth
    bm25 = bl.bm25_run(ds.corpus, ds.queries, qids, depth=deeper, index=analysis.bm25, report=ds.report)
    with_vec = [q for q in qids if q in space.query_row]
    rows = [space.query_row[q] for q in with_vec]
    dense = bl.dense_run(space.doc_vecs, space.query_vecs[rows], space.doc_ids, with_vec, depth=deeper)
    if analysis.ignore_identical_ids:
        bm25, dense = drop_identical_ids(bm25, depth=depth), drop_identical_ids(dense, depth=depth)
    hybrid = bl.hybrid_run(bm25, dense, depth=depth)
    return {"bm25": bm25, "dense": dense, "hybrid": hybrid}


def _ranks(run: Run) -> dict[tuple[str, str], int]:
    df = run.df
    return dict(
        zip(
            zip(df["query_id"].tolist(), df["doc_id"].tolist(), strict=True), df["rank"].tolist(), strict=True
        )
    )


def judge_queue(
    analysis: Analysis, *, k: int = defaults.K, runs: Sequence[str] | None = None, limit: int | None = None
) -> pd.DataFrame:
    """The (query, unjudged document) pairs to judge, most likely missed relevant documents first.

    **Candidates** (pooling, as TREC builds its qrels): every document in the top ``k`` of a pooled run that the
    golden set does not judge for that query (any grade, 0 included, counts as judged). The pooled runs are the
    analysis' own runs (``analysis.user_runs()``) and a BM25, an exact dense and a hybrid (RRF) run computed here
    over the queries to judge, named like the analysis' baselines (over the golden queries they are exactly its
    baselines: same index, vectors and depth). ``runs`` keeps only those names.

    **Queries to judge**: with a golden set, its judged queries and the queries of the analysis' runs; with no
    golden set (empty qrels, :func:`load_for_judging`), every query with a text. Queries without a text are left out
    and counted in the data set's report (``judge_query_without_text``); so are documents not in the corpus.

    **Order.** First the label-gap near-duplicates: candidates whose cosine to one of the query's judged relevant
    documents (document vectors of the analysis' model) is >= ``analysis.thresholds.duplicate_cosine`` (0.95), the
    rule of :meth:`Analysis.label_noise`, by that cosine. Then by ``score``, the mean of the signals available:

    - ``runs / runs covering the query`` (pool depth: the share of pooled runs that returned the document in their
      top k, over the runs with results for the query),
    - ``1 / log2(1 + bm25_rank)`` and ``1 / log2(1 + dense_rank)`` (nDCG's discount; the rank in the BM25 / dense run
      of depth ``analysis.depth``, 0 when deeper or when BM25 finds no query term),
    - ``max(0, max_cos_to_relevant)`` (the largest cosine between the document and a judged relevant document of
      the query), only for queries with a judged relevant document.

    Ties: query id, then doc id. ``limit`` keeps the first rows.

    Columns: ``priority`` (1 = judge first), ``query_id``, ``doc_id``, ``reason`` (plain words: "near-duplicate of
    relevant d12 (cos 0.97)", "in the top 10 of 4 runs; BM25 #2, dense #1"), ``score``, ``near_duplicate``,
    ``runs`` (how many pooled runs have it in their top k), ``retrieved_by`` (their names), ``bm25_rank``,
    ``dense_rank`` (nullable integers), ``max_cos_to_relevant``, ``closest_relevant`` (NaN / None without a judged
    relevant document).
    """

    k = rank_cutoff(k)
    if limit is not None:
        limit = positive_int(limit, "limit")
    ds = analysis.dataset
    if ds.corpus is None or ds.queries is None:
        raise param_error(
            "corpus" if ds.corpus is None else "queries",
            "Judging needs the texts of the corpus and the queries: load a BEIR folder or give corpus= and queries=.",
        )
    golden = _golden_or_empty(analysis)
    user_runs = analysis.user_runs()
    qids = _queries_to_judge(analysis, user_runs, golden)
    if not qids:
        raise param_error("queries", "No query to judge: no query of the data has a text.")
    space = _query_space(analysis, qids, golden)
    probes = _probe_runs(analysis, qids, space)
    pool = _pool(analysis, user_runs, probes, runs)
    covering, found = _candidates(ds, pool, qids, k, space.doc_row)
    table = _ordered(_rows(analysis, found, covering, probes, space, k), limit)
    table.attrs["pooled_runs"] = list(pool)
    return table


def _pool(
    analysis: Analysis, user_runs: Mapping[str, Run], probes: dict[str, Run], runs: Sequence[str] | None
) -> dict[str, Run]:
    """The pooled runs: the analysis' own runs, then the probes named like its baselines (a name a run already
    has gets ``" (baseline)"`` appended); only those named in ``runs`` when given."""
    names = {kind: kind for kind in probes}
    for name, kind in analysis.baseline_kinds.items():  # the constructor's baselines= (name -> kind)
        names[kind] = name
    for kind, name in list(names.items()):
        while name in user_runs:
            name = f"{name} (baseline)"
        names[kind] = name
    pool = {**user_runs, **{names[kind]: run for kind, run in probes.items()}}
    if runs is not None:
        unknown = [r for r in runs if r not in pool]
        if unknown:
            raise param_error(
                "runs", f"No run named {unknown[0]!r} to pool; the runs are: {', '.join(pool)}."
            )
        pool = {r: pool[r] for r in runs}
    return pool


def _candidates(
    ds: Dataset, pool: Mapping[str, Run], qids: list[str], k: int, in_corpus: Mapping[str, int]
) -> tuple[dict[str, int], dict[tuple[str, str], list[str]]]:
    """``(covering, found)``: per query to judge, how many pooled runs have results for it; per unjudged (query,
    document) pair in a pooled top ``k``, the runs that retrieved it. Documents not in the corpus are left out and
    counted in the data set's report (``judge_doc_not_in_corpus``)."""
    judged = set(zip(ds.qrels.df["query_id"].tolist(), ds.qrels.df["doc_id"].tolist(), strict=True))
    wanted = set(qids)
    covering: dict[str, int] = {}
    found: dict[tuple[str, str], list[str]] = {}
    not_in_corpus: list[str] = []
    for name, run in pool.items():
        top = run.top(k)
        for q in pd.unique(top["query_id"]):
            if q in wanted:
                covering[q] = covering.get(q, 0) + 1
        for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True):
            if q not in wanted or (q, d) in judged:
                continue
            if d not in in_corpus:
                not_in_corpus.append(f"{q} {d}")
                continue
            found.setdefault((q, d), []).append(name)
    if not_in_corpus:
        ds.report.add(
            "judge_doc_not_in_corpus",
            f"{len(not_in_corpus)} retrieved documents to judge are not in the corpus (no text to show a judge); "
            "left out of the judging queue",
            count=len(not_in_corpus),
            examples=not_in_corpus,
        )
    return covering, found


def _relevant_in_corpus(ds: Dataset, in_corpus: Mapping[str, int]) -> dict[str, list[str]]:
    """Each query's judged relevant documents that are in the corpus (those have a vector)."""
    relevant = ds.qrels.relevant()
    rel_of: dict[str, list[str]] = {}
    for q, d in zip(relevant["query_id"].tolist(), relevant["doc_id"].tolist(), strict=True):
        if d in in_corpus:
            rel_of.setdefault(q, []).append(d)
    return rel_of


def _rows(
    analysis: Analysis,
    found: Mapping[tuple[str, str], list[str]],
    covering: Mapping[str, int],
    probes: Mapping[str, Run],
    space: VectorSpace,
    k: int,
) -> list[dict[str, Any]]:
    """One row per candidate: its signals and their mean ``score``, the near-duplicate rule and the ``reason`` in
    words (see :func:`judge_queue`)."""
    ds = analysis.dataset
    in_corpus = space.doc_row
    bm25_rank, dense_rank = _ranks(probes["bm25"]), _ranks(probes["dense"])
    rel_of = _relevant_in_corpus(ds, in_corpus)
    dup_cos = analysis.thresholds.duplicate_cosine

    rows = []
    for (q, d), by in found.items():
        b, dn = bm25_rank.get((q, d)), dense_rank.get((q, d))
        signals = [len(by) / covering[q], _discount(b), _discount(dn)]
        max_cos, closest = float("nan"), None
        rels = rel_of.get(q)
        if rels:
            sims = space.doc_vecs[[in_corpus[r] for r in rels]] @ space.doc_vecs[in_corpus[d]]
            j = int(np.argmax(sims))
            max_cos, closest = float(sims[j]), rels[j]
            signals.append(max(0.0, max_cos))
        near = bool(rels) and max_cos >= dup_cos
        where = f"in the top {k} of {len(by)} run{'s' if len(by) != 1 else ''}"
        ranks = (
            (f"BM25 #{b}" if b else f"BM25 beyond #{analysis.depth}")
            + ", "
            + (f"dense #{dn}" if dn else f"dense beyond #{analysis.depth}")
        )
        sim = f"; cos {max_cos:.2f} to relevant {closest}" if rels and not near else ""
        reason = f"{where}; {ranks}{sim}"
        if near:
            reason = f"near-duplicate of relevant {closest} (cos {max_cos:.3f}); " + reason
        rows.append(
            {
                "query_id": q,
                "doc_id": d,
                "reason": reason,
                "score": float(np.mean(signals)),
                "near_duplicate": near,
                "runs": len(by),
                "retrieved_by": ", ".join(by),
                "bm25_rank": b,
                "dense_rank": dn,
                "max_cos_to_relevant": max_cos,
                "closest_relevant": closest,
            }
        )
    return rows


def _ordered(rows: list[dict[str, Any]], limit: int | None) -> pd.DataFrame:
    """The queue as a table: near-duplicates first (by cosine), then by ``score``, ties by query id then doc id;
    typed columns, ``priority`` 1..n, the first ``limit`` rows."""
    table = pd.DataFrame(rows, columns=[c for c in QUEUE_COLUMNS if c != "priority"])
    if len(table):
        table["_dup"] = np.where(table["near_duplicate"], table["max_cos_to_relevant"], -np.inf)
        table = table.sort_values(
            ["near_duplicate", "_dup", "score", "query_id", "doc_id"],
            ascending=[False, False, False, True, True],
            kind="mergesort",
        ).drop(columns="_dup")
    table = table.reset_index(drop=True)
    for col in ("bm25_rank", "dense_rank"):
        table[col] = table[col].astype("Int64")
    table["near_duplicate"] = table["near_duplicate"].astype(bool)
    table["runs"] = table["runs"].astype(np.int64)
    table.insert(0, "priority", np.arange(1, len(table) + 1, dtype=np.int64))
    if limit is not None:
        table = table.head(limit)
    return table


def pending(
    queue: pd.DataFrame, judged: Journal | Mapping[tuple[str, str], Any] | Iterable[tuple[str, str]]
) -> pd.DataFrame:
    """The rows of ``queue`` not judged yet (a pair judged or skipped in ``judged`` leaves the queue); order kept."""
    pairs = judged.judgements() if isinstance(judged, Journal) else judged
    done = set(pairs)
    if not done or queue.empty:
        return queue
    keep = [
        (q, d) not in done for q, d in zip(queue["query_id"].tolist(), queue["doc_id"].tolist(), strict=True)
    ]
    return queue[keep]


def with_texts(queue: pd.DataFrame, dataset: Dataset, *, snippet: int = 300) -> pd.DataFrame:
    """``queue`` with ``query_text`` and ``doc_text`` (title + text, whitespace folded, cut at ``snippet`` characters
    with an ellipsis) after the ids, for judging elsewhere."""
    texts = dataset.queries.text_of() if dataset.queries is not None else {}
    corpus = dataset.corpus
    docs = dict(zip(corpus.ids.tolist(), corpus.texts(), strict=True)) if corpus is not None else {}

    def cut(t: str) -> str:
        t = " ".join(str(t).split())
        return t if len(t) <= snippet else t[: snippet - 1].rstrip() + "…"

    out = queue.copy()
    out.insert(
        out.columns.get_loc("query_id") + 1, "query_text", [cut(texts.get(q, "")) for q in out["query_id"]]
    )
    out.insert(out.columns.get_loc("doc_id") + 1, "doc_text", [cut(docs.get(d, "")) for d in out["doc_id"]])
    return out
